import Foundation

/// Runs `program` as the app of Flatpak `appID` sees itself, for identity tests: in bwrap, with a
/// `/.flatpak-info` that names the app, and everything else of the host as it is (the same bus,
/// files and processes). The root is bwrap's own tmpfs with the host's top-level entries bound one
/// by one, so the `/.flatpak-info` mount point is made there, never on the host's root (where it
/// would make every libsecret program of the machine believe it is sandboxed). Only the identity
/// is a Flatpak's: the backend is what `PINGSTORAGE_BACKEND` says (`dbus-test/run --sandbox` is the
/// whole simulated sandbox).
func runAsFlatpak(_ appID: String, _ program: String, _ arguments: [String], environment: [String: String],
                  timeout: TimeInterval = 60) throws -> ProcessResult {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flatpak-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let info = directory.appendingPathComponent("flatpak-info").path
    try "[Application]\nname=\(appID)\n\n[Instance]\ninstance-id=1\n".write(toFile: info, atomically: true, encoding: .utf8)
    var bwrap = ["--die-with-parent", "--proc", "/proc", "--dev-bind", "/dev", "/dev"]
    for name in try FileManager.default.contentsOfDirectory(atPath: "/").sorted() where !["proc", "dev"].contains(name) {
        let entry = "/" + name
        if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: entry) {
            bwrap += ["--symlink", target, entry]
        } else {
            bwrap += ["--bind", entry, entry]
        }
    }
    bwrap += ["--ro-bind", info, "/.flatpak-info", "--", program]
    return try run("bwrap", bwrap + arguments, environment: environment, timeout: timeout)
}
