import Foundation
@testable import PingStorage
import SecretService
import Testing
@testable import PingKeyringCore

@Suite("Exit statuses")
struct ExitCodeTests {
    @Test func documentedValues() {
        #expect(ExitCode.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5])
        #expect(CommandTable.exitStatuses.map(\.status) == ExitCode.allCases, "each status once, in order")
        for status in ExitCode.allCases {
            #expect(CommandTable.exitStatusHelp.contains("  \(status.rawValue)  "), "--help documents \(status.rawValue)")
        }
    }

    @Test func everyKeychainErrorMapsToItsStatus() {
        let cases: [(KeychainError, String, ExitCode)] = [
            (.unableToRetrieve(.noSessionBus(.init(message: "m"))), "noSessionBus", .keyringUnavailable),
            (.unableToRetrieve(.noSecretService(.init(message: "m"))), "noSecretService", .keyringUnavailable),
            (.unableToRetrieve(.collectionNotFound(.init(message: "m"))), "collectionNotFound", .keyringUnavailable),
            (.unableToRetrieve(.locked(.init(message: "m"))), "locked", .keyringUnavailable),
            (.unableToRetrieve(.promptDismissed(.init(message: "m"))), "promptDismissed", .keyringUnavailable),
            (.unableToRetrieve(.timedOut(.init(message: "m"))), "timedOut", .keyringUnavailable),
            (.unableToRetrieve(.insecureTransport(.init(message: "m"))), "insecureTransport", .keyringUnavailable),
            (.unableToRetrieve(.corruptItem(.init(message: "m"))), "corruptItem", .corrupt),
            (.unableToRetrieve(.invalidArgument(.init(message: "m"))), "invalidArgument", .usage),
            (.unableToRetrieve(.providerError(.init(message: "m", detail: "org.x.Failed"))), "providerError", .other),
            (.unableToSave, "unableToSave", .other),
            (.unableToRetrieve, "unableToRetrieve", .other),
            (.unableToDelete, "unableToDelete", .other),
        ]
        for (error, kind, status) in cases {
            let mapped = ToolError.from(error)
            #expect(mapped.kind == kind)
            #expect(mapped.status == status, "\(kind)")
            #expect(mapped.message == error.errorMessage, "the library's message and hint, unchanged")
        }
    }

    @Test func clientErrorsMapLikeTheLibrary() {
        let cases: [(SecretServiceError.Code, String, ExitCode)] = [
            (.noSessionBus, "noSessionBus", .keyringUnavailable),
            (.noSecretService, "noSecretService", .keyringUnavailable),
            (.disconnected, "noSecretService", .keyringUnavailable),
            (.collectionNotFound, "collectionNotFound", .keyringUnavailable),
            (.locked, "locked", .keyringUnavailable),
            (.promptDismissed, "promptDismissed", .keyringUnavailable),
            (.timedOut, "timedOut", .keyringUnavailable),
            (.insecureTransport, "insecureTransport", .keyringUnavailable),
            (.invalidArgument, "invalidArgument", .usage),
            (.ambiguous, "providerError", .other),
            (.itemNotFound, "providerError", .other),
            (.providerError, "providerError", .other),
        ]
        for (code, kind, status) in cases {
            let error = SecretServiceError(code, operation: "read secret", message: "What happened.", recovery: "What to do.",
                                           detail: "/org/x/1", dbusErrorName: "org.x.E")
            // The commands see the library's translation (KeychainError), never the client's error.
            let mapped = ToolError.from(KeychainError(error))
            #expect(mapped.kind == kind, "\(code)")
            #expect(mapped.status == status, "\(code)")
            #expect(mapped.message == "What happened. What to do.", "the client's message with its advice")
            #expect(mapped.detail == "/org/x/1 [org.x.E]", "and its developer detail apart")
        }
    }

    @Test func otherErrors() {
        #expect(ToolError.from(EncryptorError.failedToDecrypt).kind == "failedToDecrypt")
        #expect(ToolError.from(EncryptorError.failedToDecrypt).status == .corrupt)
        #expect(ToolError.from(EncryptorError.failedToEncrypt).status == .other)
        let keyNotFound = ToolError.from(EncryptorError.failedToDecrypt(.keyNotFound("the encryption key 00ff is not in the keyring")))
        #expect(keyNotFound.kind == "keyNotFound")
        #expect(keyNotFound.status == .corrupt)
        #expect(keyNotFound.message == "the encryption key 00ff is not in the keyring", "the library's message")
        let unsupported = ToolError.from(EncryptorError.failedToDecrypt(.unsupportedFormat("version 2")))
        #expect(unsupported.kind == "unsupportedFormat")
        #expect(unsupported.status == .corrupt)
        #expect(ToolError(kind: "encryptionUnavailable", message: "m").status == .other)
        #expect(ToolError.from(CancellationError()).kind == "cancelled")
        #expect(ToolError.from(CocoaError(.fileNoSuchFile)).status == .other)
        #expect(ToolError.usage("bad").status == .usage)
        #expect(ToolError(kind: "notFound", message: "m").status == .notFound)
        #expect(ToolError(kind: "invalidInput", message: "m").status == .usage)
        let already = ToolError(kind: "probeMismatch", message: "m", status: .other)
        #expect(ToolError.from(already) == already)
    }
}
