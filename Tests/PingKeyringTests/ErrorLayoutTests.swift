import DBusTransport
import Foundation
@testable import PingStorage
import SecretService
import Testing
@testable import PingKeyringCore

/// What the library says for a missing collection (SecretServiceClient's collectionNotFound,
/// through KeychainError): the user's words, and the object paths apart.
private let notFound = ToolError.from(KeychainError(SecretServiceError.collectionNotFound(
    "find the 'nosuch' collection", .alias("nosuch"),
    known: [SecretCollectionInfo(path: try! ObjectPath("/org/freedesktop/secrets/collection/login"), label: "Login", isLocked: false),
            SecretCollectionInfo(path: try! ObjectPath("/org/freedesktop/secrets/collection/session"), label: "", isLocked: false)])))

@Suite("Errors: the user's words first, the technical details below")
struct ErrorLayoutTests {
    @Test func messageThenDetailsOnALineOfTheirOwn() {
        let outcome = PingKeyring.failure(notFound, json: false)
        let lines = outcome.standardError.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(outcome.standardError)")
        #expect(lines[0].hasPrefix("ping-keyring: error: collectionNotFound: The keyring has no collection for the "
                                   + "'nosuch' collection; it has: Login."))
        #expect(!lines[0].contains("/org/freedesktop"), "no object paths in the message")
        #expect(!lines[0].contains("below"), "no promise of a list that is not there")
        #expect(lines[1] == "  details: collections: /org/freedesktop/secrets/collection/login, "
                + "/org/freedesktop/secrets/collection/session")
        #expect(outcome.status == 3)
    }

    @Test func jsonCarriesMessageAndDetailApart() throws {
        let outcome = PingKeyring.failure(notFound, json: true)
        let json = try parseJSON(String(decoding: outcome.standardOutput, as: UTF8.self))
        let error = try #require(json["error"] as? [String: Any])
        #expect(error["message"] as? String == notFound.message)
        #expect((error["detail"] as? String)?.contains("/org/freedesktop/secrets/collection/login") == true)
    }

    /// The keyring's prompt could not be shown here (over SSH, on a server): the tool adds its own
    /// way out, `ping-keyring unlock` in the desktop session; a prompt the person dismissed gets none.
    @Test func aPromptThatCouldNotBeShownNamesPingKeyringUnlock() {
        let unseen = ToolError.from(KeychainError(SecretServiceError(
            .promptDismissed, operation: "read secret",
            message: SecretServiceError.promptNotShownMessagePrefix + "GNOME Keyring could not start its prompter.",
            recovery: "Unlock it from the desktop session.")))
        #expect(unseen.kind == "promptDismissed" && unseen.status == .keyringUnavailable)
        #expect(unseen.message.hasSuffix("Unlock it from the desktop session. " + ToolError.unlockFromTheDesktop), "\(unseen.message)")
        #expect(unseen.message.contains("`ping-keyring unlock` in the desktop session"))
        #expect(unseen.happened == SecretServiceError.promptNotShownMessagePrefix + "GNOME Keyring could not start its prompter.",
                "the doctor's layout: what happened, the advice once")
        let dismissed = ToolError.from(KeychainError(SecretServiceError(.promptDismissed, operation: "read secret",
                                                                        message: "The keyring stayed locked: its prompt was dismissed.",
                                                                        recovery: "Unlock your keyring.")))
        #expect(!dismissed.message.contains("ping-keyring unlock"))
    }

    @Test func anErrorWithoutDetailsIsOneLine() {
        let outcome = PingKeyring.failure(ToolError(kind: "notFound", message: "no item."), json: false)
        #expect(outcome.standardError == "ping-keyring: error: notFound: no item.\n")
    }

    @Test func theDoctorPutsTheDetailsUnderTheFailure() throws {
        let report = DoctorReport(
            checks: [.pass("sessionBus", "session bus", "unix:path=/x"),
                     .fail("collection", "collection", notFound, fix: Doctor.Fix.collection)],
            busAddress: "unix:path=/x", collection: "the 'nosuch' collection", provider: nil)
        let lines = report.human.split(separator: "\n").map(String.init)
        try #require(lines.count == 6, "\(report.human)")
        #expect(lines[2].hasPrefix("FAIL  collection   The keyring has no collection"))
        #expect(lines[3] == "                   details: collections: /org/freedesktop/secrets/collection/login, "
                + "/org/freedesktop/secrets/collection/session")
        #expect(lines[4].hasPrefix("                   fix: pass --collection with one of the collections listed in the details"))
    }
}
