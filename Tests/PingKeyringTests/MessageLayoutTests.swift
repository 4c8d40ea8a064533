import Foundation
import PingStorage
import SecretService
import Testing
@testable import PingKeyringCore

/// The message the library gives for a missing collection (SecretServiceClient's
/// collectionNotFound, through KeychainError), with two collections.
private let notFound = ToolError.from(SecretServiceError(
    .collectionNotFound, operation: "find collection alias 'nosuch'",
    message: "the Secret Service has no collection for alias 'nosuch'. Pass one of the collections below, or "
        + "create the alias in your keyring manager. Collections: /org/freedesktop/secrets/collection/login "
        + "(Login), /org/freedesktop/secrets/collection/session (a, b)."))

@Suite("Messages: a list the message promises below is below")
struct MessageLayoutTests {
    @Test func theCollectionListGoesOnLinesOfItsOwn() {
        let outcome = PingKeyring.failure(notFound, json: false)
        #expect(outcome.standardError == """
            ping-keyring: error: collectionNotFound: find collection alias 'nosuch': the Secret Service has no \
            collection for alias 'nosuch'. Pass one of the collections below, or create the alias in your keyring manager.
            Collections:
              /org/freedesktop/secrets/collection/login (Login)
              /org/freedesktop/secrets/collection/session (a, b)

            """)
        #expect(outcome.status == 3)
    }

    @Test func jsonKeepsTheMessageAsItIs() throws {
        let outcome = PingKeyring.failure(notFound, json: true)
        let json = try parseJSON(String(decoding: outcome.standardOutput, as: UTF8.self))
        #expect((json["error"] as? [String: Any])?["message"] as? String == notFound.message)
    }

    @Test func noCollectionsAtAll() {
        let text = MessageLayout.terminalText("the Secret Service has no collection for alias 'x'. Collections: none.")
        #expect(text == "the Secret Service has no collection for alias 'x'.\nCollections:\n  (none)")
    }

    @Test func otherMessagesAreUnchanged() {
        for message in ["the keyring is locked; unlock it.", "Collections: /a (A).",
                        "x. Collections: not a path, /b (B).", "x. Collections: /a (A)"] {
            #expect(MessageLayout.terminalText(message) == message, "\(message)")
        }
    }

    @Test func theDoctorIndentsTheListUnderTheDetail() throws {
        let report = DoctorReport(
            checks: [.pass("sessionBus", "session bus", "unix:path=/x"),
                     .fail("collection", "collection", notFound, fix: Doctor.Fix.collection)],
            busAddress: "unix:path=/x", collection: "alias 'nosuch'", provider: nil)
        let lines = report.human.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        try #require(lines.count == 9, "\(report.human)")
        #expect(lines[2].hasPrefix("FAIL  collection   find collection alias 'nosuch': "))
        #expect(lines[2].hasSuffix("create the alias in your keyring manager."))
        #expect(lines[3] == "                   Collections:")
        #expect(lines[4] == "                     /org/freedesktop/secrets/collection/login (Login)")
        #expect(lines[5] == "                     /org/freedesktop/secrets/collection/session (a, b)")
        #expect(lines[6].hasPrefix("                   fix: pass --collection with one of the collections listed"))
    }
}
