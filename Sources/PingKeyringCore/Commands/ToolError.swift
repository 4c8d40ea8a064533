#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage

/// The exit statuses of `ping-keyring`, documented in its help and README section.
enum ExitCode: Int32, Sendable, CaseIterable {
    /// Success (for `doctor`: every check passed or was skipped).
    case ok = 0
    /// `get`: the account has no item; `search`, `lookup`: nothing matches.
    case notFound = 1
    /// Bad command line or bad input (unknown option, missing `--account`, stdin not JSON, empty
    /// account).
    case usage = 2
    /// The keyring cannot be used: no session bus, no provider, no such collection, locked, prompt
    /// dismissed, timed out, unencrypted transport refused.
    case keyringUnavailable = 3
    /// The stored value is corrupt or cannot be decrypted: tampered with or copied from another
    /// item (`failedToDecrypt`), its encryption key is missing (`keyNotFound`) or bound to a TPM
    /// that cannot open it (`tpmCleared`), or an envelope format this build cannot read
    /// (`unsupportedFormat`).
    case corrupt = 4
    /// Anything else: a provider error, encryption unavailable (libgcrypt), a failed probe.
    case other = 5

    /// The status for a ``KeychainError/kind`` (and the kinds this tool adds).
    static func forKind(_ kind: String) -> ExitCode {
        switch kind {
        case "notFound": .notFound
        case "usage", "invalidInput", "invalidArgument": .usage
        case "noSessionBus", "noSecretService", "collectionNotFound", "locked", "promptDismissed", "timedOut",
             "insecureTransport":
            .keyringUnavailable
        case "corruptItem", "failedToDecrypt", "keyNotFound", "tpmCleared", "unsupportedFormat": .corrupt
        default: .other
        }
    }
}

/// Why a command failed: a stable one-word ``kind`` (``KeychainError/kind`` for the library's
/// errors), a message for a person with what to do, and the exit status.
struct ToolError: Error, Equatable, Sendable {
    /// `notFound`, `usage`, `invalidInput`, `probeMismatch`, `failedToDecrypt`, `failedToEncrypt`,
    /// `keyNotFound`, `tpmCleared`, `unsupportedFormat`, `encryptionUnavailable`, `cancelled`, `other`, or a
    /// ``KeychainError/kind``.
    var kind: String
    /// What happened and what to do. Never contains secret bytes.
    var message: String
    /// The process exit status.
    var status: ExitCode
    /// For developers and administrators: object paths, D-Bus error names, the provider's own
    /// text (the library's ``KeychainError/detail``). Shown under the message.
    var detail: String?
    /// The library's advice (its `recoverySuggestion`), which ``message`` ends with: kept apart so
    /// that a report with advice of its own (the doctor's fix) shows advice once.
    var recovery: String?

    /// ``message`` without the library's advice: what happened.
    var happened: String {
        guard let recovery, let range = message.firstRange(of: " " + recovery) else { return message }
        var text = message
        text.removeSubrange(range)
        return text
    }

    init(kind: String, message: String, status: ExitCode? = nil, detail: String? = nil) {
        self.kind = kind
        self.message = message
        self.status = status ?? ExitCode.forKind(kind)
        self.detail = detail
    }

    /// A command-line error; `command` names the command whose `--help` to point at.
    static func usage(_ message: String, command: String? = nil) -> ToolError {
        let help = command.map { "ping-keyring \($0) --help" } ?? "ping-keyring --help"
        return ToolError(kind: "usage", message: "\(message) (see '\(help)')")
    }

    /// The one mapping from the errors commands meet to kinds, messages and exit statuses.
    static func from(_ error: any Error) -> ToolError {
        switch error {
        case let error as ToolError:
            return error
        case let error as KeychainError:
            var failure = ToolError(kind: error.kind, message: error.errorMessage, detail: error.detail)
            failure.recovery = error.recoverySuggestion
            if error.isAPromptThatCouldNotBeShown {
                failure.addAdvice(unlockFromTheDesktop)
            }
            return failure
        case let error as EncryptorError:
            return ToolError(kind: error.kind, message: error.errorMessage)
        case is CancellationError:
            return ToolError(kind: "cancelled", message: "the operation was cancelled.")
        default:
            return ToolError(kind: "other", message: "\(error)")
        }
    }

    /// This tool's way out when the keyring's prompt could not be shown here (over SSH, on a
    /// server): the prompt of `ping-keyring unlock` run in the desktop session shows there.
    static let unlockFromTheDesktop = "From a terminal: run `ping-keyring unlock` in the desktop session, where its prompt "
        + "is shown, then run this again; scripts that run where no one answers prompts take --no-prompt."

    /// Adds `advice` to the message and to the advice kept apart (``recovery``).
    mutating func addAdvice(_ advice: String) {
        message += " " + advice
        recovery = recovery.map { $0 + " " + advice } ?? advice
    }

    /// `{"error": {"kind", "message", "detail", "exitCode"}}`.
    var json: JSONValue {
        .object([("error", .object([
            ("kind", .string(kind)),
            ("message", .string(message)),
            ("detail", .string(detail)),
            ("exitCode", .int(Int(status.rawValue))),
        ]))])
    }
}
