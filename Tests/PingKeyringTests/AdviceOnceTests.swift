import Foundation
@testable import PingStorage
import SecretService
import Testing
@testable import PingKeyringCore

/// Advice appears once wherever an app or the command line shows an error: Foundation's roles
/// (`localizedDescription` says what happened, `recoverySuggestion` what to do, as an alert built
/// from an error shows them), the one-line forms, `ping-keyring`'s error line and JSON, the doctor.
@Suite("Errors: advice once in every rendering")
struct AdviceOnceTests {
    private static let advice = "Unlock the test keyring and try again."

    private func count(_ text: String) -> Int { text.components(separatedBy: Self.advice).count - 1 }

    /// Errors with advice, as the Secret Service client and KeychainStorage throw them.
    private var clientErrors: [SecretServiceError] {
        [SecretServiceError(.locked, operation: "read secret", message: "The keyring is locked.", recovery: Self.advice,
                            detail: "/org/freedesktop/secrets/collection/login"),
         SecretServiceError(.providerError, operation: "write secret", message: "The keyring service refused the request.",
                            recovery: Self.advice, dbusErrorName: "org.example.Error")]
    }

    /// What an app shows: an alert from the error (description and recovery suggestion), its
    /// one-line forms, and the same for KeychainError.
    @Test func anAppShowsTheAdviceOnce() {
        for error in clientErrors {
            let alert = error.localizedDescription + "\n" + (error.recoverySuggestion ?? "")
            #expect(count(alert) == 1, "\(alert)")
            #expect(count(error.description) == 1 && count(error.debugDescription) == 1)
            #expect(error.localizedDescription == error.message)

            let keychain = KeychainError(error)
            let keychainAlert = keychain.localizedDescription + "\n" + (keychain.recoverySuggestion ?? "")
            #expect(count(keychainAlert) == 1, "\(keychainAlert)")
            #expect(count(keychain.errorMessage) == 1, "\(keychain.errorMessage)")
            #expect(keychain.localizedDescription == error.message)
        }
    }

    /// What ping-keyring prints: the error line (and the JSON document) once each.
    @Test func theCommandLineShowsTheAdviceOnce() throws {
        for error in clientErrors {
            let tool = ToolError.from(KeychainError(error))
            let line = PingKeyring.failure(tool, json: false)
            #expect(count(line.standardError) == 1, "\(line.standardError)")
            let json = PingKeyring.failure(tool, json: true)
            #expect(count(String(decoding: json.standardOutput, as: UTF8.self)) == 1)
        }
    }

    /// The doctor: what happened, then one fix: its own where it has one, else the library's.
    @Test func theDoctorShowsOneFix() async throws {
        for (error, ownFix) in zip(clientErrors, [Doctor.Fix.unlocked, nil]) {
            var environment = FakeDoctorEnvironment()
            environment.keysResult = .failure(ToolError.from(KeychainError(error)))
            let report = await Doctor.run(environment)
            let check = try #require(report.checks.last)
            #expect(check.status == .fail)
            #expect(check.detail == "cannot search the keyring for encryption keys: \(error.message)")
            if let ownFix {
                #expect(check.fix == ownFix)
                #expect(count(report.human) == 0, "the doctor's own fix instead of the library's: \(report.human)")
            } else {
                #expect(check.fix == Self.advice, "the library's advice where the doctor has none of its own")
                #expect(count(report.human) == 1, "\(report.human)")
                #expect(count(report.json.document) == 1)
            }
        }
    }
}
