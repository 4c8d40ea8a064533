import Foundation

/// The person at the keyboard of `dbus-test/run --prompter` (dbus-test/person): waits for the
/// provider's prompt window on the virtual display, then answers it as told, when told.
enum Person {
    /// What the person does once the prompt is on screen.
    enum Action {
        /// Types the keyring's password and presses Return.
        case typePassword
        /// Types `text` twice (a new keyring's password and its confirmation), then Return.
        case newPassword(String)
        /// Presses Escape.
        case escape
        /// Only looks: the prompt is left on screen.
        case look

        var arguments: [String] {
            switch self {
            case .typePassword: ["type", Person.password]
            case .newPassword(let text): ["new-password", text]
            case .escape: ["escape"]
            case .look: ["look"]
            }
        }
    }

    /// One prompt the person saw, from `$DBUS_TEST_DIR/prompts.log`.
    struct Seen: Sendable {
        var seen: Date
        var acted: Date
        var windowClass: String
        var title: String
        var action: String
    }

    static var path: String { ProcessInfo.processInfo.environment["DBUS_TEST_PERSON"] ?? "dbus-test/person" }

    /// The password of the provider's keyring, as dbus-test's provider made it.
    static var password: String {
        let directory = ProcessInfo.processInfo.environment["DBUS_TEST_DIR"] ?? ""
        let file = switch Harness.provider {
        case "kwallet": directory + "/kwallet.password"
        case "keepassxc": directory + "/keepassxc/password"
        default: directory + "/gnome-keyring.password"
        }
        return ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Waits (up to `within` seconds) for a prompt window, then does `action` `after` seconds after
    /// it appeared; returns the window's title.
    /// - Throws: ``HarnessError`` when no prompt window appeared.
    @discardableResult
    static func answer(_ action: Action, after: Int = 0, within: Int = 30, windowClass: String? = nil) async throws -> String {
        let result = try await run(path, (windowClass.map { ["--class", $0] } ?? [])
                                   + ["--after", "\(after)", "--within", "\(within)"] + action.arguments,
                                   timeout: TimeInterval(after + within + 30))
        guard result.status == 0 else { throw HarnessError("dbus-test/person \(action): \(result.stderr)") }
        return result.output.trimmingCharacters(in: .newlines)
    }

    /// Whether a prompt window is on screen now (or appears within `within` seconds).
    static func seesAPrompt(within: Int = 1, windowClass: String? = nil) async throws -> Bool {
        try await run(path, (windowClass.map { ["--class", $0] } ?? []) + ["--within", "\(within)", "look"],
                      timeout: TimeInterval(within + 30)).status == 0
    }

    /// Whether no prompt window is on screen within `within` seconds.
    static func seesNoPrompt(within: Int = 3, windowClass: String? = nil) async throws -> Bool {
        try await run(path, (windowClass.map { ["--class", $0] } ?? []) + ["--within", "\(within)", "gone"],
                      timeout: TimeInterval(within + 30)).status == 0
    }

    /// Every prompt the person acted on in this dbus-test session, in order.
    static func promptsSeen() -> [Seen] {
        let file = (ProcessInfo.processInfo.environment["DBUS_TEST_DIR"] ?? "") + "/prompts.log"
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 5, let seen = Double(fields[0]), let acted = Double(fields[1]) else { return nil }
            return Seen(seen: Date(timeIntervalSince1970: seen), acted: Date(timeIntervalSince1970: acted),
                        windowClass: fields[2], title: fields[3], action: fields[4])
        }
    }
}
