extension Doctor {
    /// The fix when no provider answered: a provider the bus starts on demand (D-Bus activation)
    /// and that fails at once (the bus's Spawn errors, named in the detail) or never takes its
    /// name (the deadline passed during StartServiceByName) is fixed where the bus starts it; a
    /// provider that runs but hangs, or none at all, as before.
    static func providerFix(_ error: ToolError) -> String {
        let detail = error.detail ?? ""
        if detail.contains("org.freedesktop.DBus.Error.Spawn.") {
            return "the bus starts a provider when asked, from its D-Bus service file (org.freedesktop.secrets.service "
                + "under /usr/share/dbus-1/services or ~/.local/share/dbus-1/services), and that provider fails at once: "
                + "run the file's Exec line by hand to see why, or fix or remove the file and start another provider."
        }
        if error.kind == "timedOut", detail.contains("StartServiceByName") {
            return "the bus started a provider from its D-Bus service file (org.freedesktop.secrets.service under "
                + "/usr/share/dbus-1/services or ~/.local/share/dbus-1/services) and it never took its name: run the "
                + "file's Exec line by hand to see what it waits for, or raise --timeout if it is only slow."
        }
        return error.kind == "timedOut" ? Fix.providerHung : Fix.provider
    }
}
