import DBusTransport
#if canImport(Glibc)
import Glibc
#endif
import Waiting

/// Whether the provider's prompt can be seen by anyone: the one place that looks for a signal, so
/// that a prompt that cannot be shown fails at once, with its cause, rather than at the prompt's
/// limit. The app's own `DISPLAY` is no signal: the provider (or the prompter the bus starts for it)
/// runs in the session bus's environment, so a terminal program without a display still prompts
/// on the user's desktop. Measured (dbus-test/providers/PROVIDERS.md, "Prompts"):
///
/// - **GNOME Keyring** shows its prompts through a prompter the bus starts,
///   `org.gnome.keyring.SystemPrompter` (gcr-prompter, or GNOME Shell itself), and when none can
///   start (no display in the bus's activation environment, or none installed) it completes the
///   prompt as dismissed within 2–31 ms, without a word. gcr-prompter stays on the bus about 10 s
///   after a prompt it showed, GNOME Shell for good: a dismissal with no prompter on the bus is
///   one no one saw (``notShown(after:in:operation:deadline:)``).
/// - **KWallet, KeePassXC** draw their own dialogs. Started on Qt's `offscreen` or `minimal`
///   platform (a headless service, as in the test harness), the dialog is drawn where no one sees it
///   and the prompt never completes: the provider's environment says so before the prompt is run
///   (``cannotShow(_:in:)``). A provider that made itself undumpable (KeePassXC does) has an
///   environment its user cannot read: then nothing tells, and the prompt's limit applies.
/// - Other providers: nothing tells; the prompt's limit applies, and its error says that the
///   prompt may be waiting where no one can see it.
enum PromptVisibility {
    /// GNOME Keyring's prompter on the session bus.
    static let gnomePrompter = "org.gnome.keyring.SystemPrompter"

    /// Why the provider of `session` cannot show a prompt of `kind`, when its environment says so
    /// (a Qt provider on a platform without a screen); nil when it may, or when nothing tells.
    /// Only unlock and creation prompts open a dialog: KeePassXC answers CreateItem, Delete and
    /// Lock with prompts that complete without one.
    static func cannotShow(_ kind: PromptKind, in session: ProviderSession) -> (reason: String, detail: String)? {
        guard kind != .other, session.kind == .kwallet || session.kind == .keepassxc, let pid = session.processID,
              let platform = environment(ofProcess: pid)?["QT_QPA_PLATFORM"] else { return nil }
        let name = platform.split(separator: ":").first.map(String.init) ?? platform
        guard ["offscreen", "minimal", "minimalegl"].contains(name) else { return nil }
        return ("\(SecretServiceProvider.displayName(ofExecutable: session.executable)) runs without a screen "
                    + "(Qt's \(name) platform), so its prompt would wait where no one can see it",
                "QT_QPA_PLATFORM=\(platform) in the environment of the provider, pid \(pid)")
    }

    /// After the provider of `session` said its prompt was dismissed `elapsed` after it was asked
    /// for: why no one saw it, when GNOME Keyring had no prompter to show it with; nil when it was
    /// shown (the person dismissed it) or nothing tells.
    static func notShown(after elapsed: Duration, in session: ProviderSession, operation: String,
                         deadline: Deadline) async -> (reason: String, detail: String)? {
        guard session.kind == .gnomeKeyring else { return nil }
        let reply: Variant
        do throws(SecretServiceError) {
            reply = try await session.bus.call(.bus(member: "NameHasOwner", arguments: .tuple([.string(gnomePrompter)])),
                                               operation: operation, deadline: min(deadline, Deadline(timeout: .seconds(5))))
                .body("(b)", in: operation)
        } catch {
            return nil
        }
        guard !reply.child(0).boolean else { return nil }
        return ("GNOME Keyring could not start its prompter: this session has no display for it (as over SSH, "
                    + "or on a machine without a desktop)",
                "dismissed by the provider \(elapsed.secondsText) after Prompt, and \(gnomePrompter) has no owner "
                    + "(the bus could not start gcr-prompter, or it exited at once: no DISPLAY in the bus's activation environment)")
    }

    /// The environment of process `pid` (`/proc/PID/environ`); nil when it cannot be read.
    static func environment(ofProcess pid: UInt32) -> [String: String]? {
        let descriptor = open("/proc/\(pid)/environ", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        var environment: [String: String] = [:]
        for entry in bytes.split(separator: 0) {
            guard let equals = entry.firstIndex(of: UInt8(ascii: "=")) else { continue }
            environment[String(decoding: entry[..<equals], as: UTF8.self)] = String(decoding: entry[(equals + 1)...], as: UTF8.self)
        }
        return environment
    }
}
