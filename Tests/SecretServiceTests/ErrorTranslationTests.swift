import DBusTransport
import Foundation
import Testing
@testable import SecretService

@Suite("Error translation: once, from the transport's words")
struct ErrorTranslationTests {
    private func code(_ error: BusError, phase: CallPhase = .call) -> SecretServiceError.Code {
        SecretServiceError.translating(error, phase: phase).code
    }
    private func remote(_ name: String, _ message: String = "message") -> BusError {
        BusError(.remote, operation: "op", remoteName: name, text: message)
    }
    private func local(_ code: BusError.Code, _ message: String = "m") -> BusError { BusError(code, operation: "op", text: message) }

    @Test func serviceUnknownMeansNoProviderWhileFindingItAndGoneLater() {
        #expect(code(remote("org.freedesktop.DBus.Error.ServiceUnknown"), phase: .findingProvider) == .noSecretService)
        #expect(code(remote("org.freedesktop.DBus.Error.NameHasNoOwner"), phase: .findingProvider) == .noSecretService)
        #expect(code(remote("org.freedesktop.DBus.Error.ServiceUnknown")) == .disconnected)
        #expect(code(remote("org.freedesktop.DBus.Error.ServiceUnknown"), phase: .openingSession) == .disconnected)
        #expect(code(remote("org.freedesktop.Secret.Error.NoSession")) == .disconnected)
    }

    @Test func aForgottenSessionIsRecognisedByItsTextWhateverItsName() {
        #expect(code(remote("org.example.Any", "The session does not exist")) == .disconnected)
        #expect(code(remote("org.example.Any", "The session wrapping the secret does not exist")) == .disconnected)
        #expect(code(remote("org.example.Any", "Can't find session")) == .disconnected)
        #expect(code(remote("org.example.Any", "The item does not exist")) == .providerError)
    }

    /// KWallet 5.103 refuses a write it cannot decrypt (a mis-keyed session) as "Can't find
    /// session", named UnknownObject for SetSecret (measured, PROVIDERS.md): a session problem, not
    /// an item that is gone, which would have the caller look for the item again or create it.
    @Test func kwalletsRefusalOfAWriteIsASessionProblemWhateverItsName() {
        let session = "/org/freedesktop/secrets/session/5"
        #expect(code(remote("org.freedesktop.DBus.Error.UnknownObject", "Can't find session \(session)")) == .disconnected)
        #expect(code(remote("org.qtproject.QtDBus.Error.InvalidObjectPath", "Can't find session \(session)")) == .disconnected)
        #expect(code(remote("org.freedesktop.DBus.Error.UnknownObject", "no object at \(session)")) == .itemNotFound)
    }

    @Test func remoteNamesMapToTheirCodes() {
        #expect(code(remote("org.freedesktop.Secret.Error.IsLocked")) == .locked)
        #expect(code(remote("org.freedesktop.Secret.Error.NoSuchObject")) == .itemNotFound)
        #expect(code(remote("org.freedesktop.DBus.Error.UnknownObject")) == .itemNotFound)
        #expect(code(remote("org.freedesktop.DBus.Error.UnknownMethod")) == .itemNotFound)
        #expect(code(remote("org.freedesktop.DBus.Error.NoReply")) == .timedOut)
        #expect(code(remote("org.freedesktop.DBus.Error.NoReply", "Message recipient disconnected from message bus without replying"))
                == .disconnected)
        #expect(code(remote("org.example.Whatever")) == .providerError)
        let translated = SecretServiceError.translating(remote("org.example.Whatever", "nope"), phase: .call)
        #expect(translated.dbusErrorName == "org.example.Whatever")
        #expect(translated.detail?.contains("nope") == true, "the provider's text is kept for developers")
        #expect(!translated.message.contains("org.example"), "and kept out of the user's message")
    }

    @Test func theTransportsCodesMapToTheirCodes() {
        #expect(code(local(.timedOut)) == .timedOut)
        #expect(code(local(.closed)) == .disconnected)
        #expect(code(local(.cancelled)) == .cancelled)
        #expect(code(local(.noBus), phase: .findingProvider) == .noSessionBus)
        #expect(code(local(.unexpectedReply)) == .protocolError)
        #expect(code(local(.failed)) == .providerError)
        let timedOut = SecretServiceError.translating(local(.timedOut, "GetSecret got no reply within 2 s"), phase: .call, timeout: .seconds(2))
        #expect(timedOut.message == "The keyring did not answer within 2 s." && timedOut.detail == "GetSecret got no reply within 2 s")
    }

    /// A provider the bus starts and that fails at once is no provider, named with why (the bus's
    /// Spawn errors, issue 38); later, the same names are a provider that went away.
    @Test func aProviderTheBusCouldNotStartIsNoneWithItsFailureNamed() {
        func translated(_ name: String, _ text: String) -> SecretServiceError {
            SecretServiceError.translating(remote(name, text), phase: .findingProvider)
        }
        let exited = translated("org.freedesktop.DBus.Error.Spawn.ChildExited", "Process org.freedesktop.secrets exited with status 3")
        #expect(exited.code == .noSecretService)
        #expect(exited.message == "The keyring service could not be started: the bus started it and it exited with status 3 "
                    + "before it answered.")
        #expect(exited.detail == "Process org.freedesktop.secrets exited with status 3 (org.freedesktop.DBus.Error.Spawn.ChildExited)")
        #expect(!exited.message.contains("org.freedesktop"), "no D-Bus names in the message")
        let signaled = translated("org.freedesktop.DBus.Error.Spawn.ChildSignaled", "Process org.freedesktop.secrets received signal 9")
        #expect(signaled.code == .noSecretService)
        #expect(signaled.message.contains("it was ended by signal 9 before it answered"))
        #expect(translated("org.freedesktop.DBus.Error.Spawn.ExecFailed", "Failed to execute program /x: No such file").message
                    .contains("the bus could not run its program"))
        #expect(translated("org.freedesktop.DBus.Error.Spawn.SomethingNew", "?").code == .noSecretService)
        #expect(code(remote("org.freedesktop.DBus.Error.Spawn.ChildExited")) == .disconnected)
    }

    @Test func userTextHasNoPathsAndDetailHasThem() {
        let error = SecretServiceError.itemNotFound("read secret", detail: "/org/freedesktop/secrets/collection/login/7")
        #expect(!error.message.contains("/org/freedesktop"))
        #expect(error.detail?.contains("/org/freedesktop/secrets/collection/login/7") == true)
        #expect(error.debugDescription.contains("/org/freedesktop/secrets/collection/login/7"))
        #expect(error.errorDescription == error.message)
        #expect(error.failureReason == error.message)
    }

    @Test func messagesNameEveryDesktopsKeyringAndNoHarness() {
        let locked = SecretServiceError.locked("read", promptsAllowed: false, detail: nil)
        for text in [locked.recovery ?? "", SecretServiceError.noSecretService("x", detail: nil).recovery ?? ""] {
            #expect(text.contains("KWallet"))
            #expect(!text.contains("dbus-test"))
            #expect(!text.contains("Ping"))
        }
        #expect(locked.recovery?.contains("Passwords and Keys") == true)
        #expect(locked.recovery?.contains("KeePassXC") == true)
    }
}

@Suite("Values, paths and tokens")
struct ValueTests {
    @Test func contentTypeFollowsTheBytesWithoutCopyingThem() {
        #expect(SecretValue(bytes: Data("{\"a\":1}".utf8)).contentType == "text/plain")
        #expect(SecretValue(bytes: Data()).contentType == "text/plain")
        #expect(SecretValue(bytes: Data("héllo €𝄞".utf8)).contentType == "text/plain")
        #expect(SecretValue(bytes: Data([0x61, 0x00, 0x62])).contentType == "application/octet-stream")
        #expect(SecretValue(bytes: Data([0xFF, 0xFE])).contentType == "application/octet-stream")
        #expect(SecretValue(bytes: Data([0xC0, 0x80])).contentType == "application/octet-stream", "overlong NUL")
        #expect(SecretValue(bytes: Data([0xED, 0xA0, 0x80])).contentType == "application/octet-stream", "surrogate")
        #expect(SecretValue(bytes: Data([0xF4, 0x90, 0x80, 0x80])).contentType == "application/octet-stream", "above U+10FFFF")
        #expect(SecretValue(bytes: Data([0xE2, 0x82])).contentType == "application/octet-stream", "cut short")
        #expect(SecretValue(bytes: Data("x".utf8), contentType: "application/json").contentType == "application/json")
    }

    @Test func utf8ValidationAgreesWithTheStandardLibraryOnRandomBytes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...8, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = !bytes.contains(0) && String(validating: bytes, as: UTF8.self) != nil
            #expect(bytes.withUnsafeBytes { SecretValue.isTextWithoutNUL($0) } == expected, "\(bytes)")
        }
    }

    @Test func malformedItemPathsAreRefusedWhenMade() {
        for bad in ["", "relative", "/trailing/", "/with space"] {
            do { _ = try ItemPath(bad) } catch { #expect(error.code == .invalidArgument) }
        }
        #expect(throws: SecretServiceError.self) { try ItemPath("/") }
        #expect(throws: SecretServiceError.self) { try ItemPath("/top") }
        #expect(throws: SecretServiceError.self) { try ItemPath("not a path") }
        let item = try? ItemPath("/org/freedesktop/secrets/collection/login/7")
        #expect(item?.collection.rawValue == "/org/freedesktop/secrets/collection/login")
    }

    @Test func collectionReferencesParseAndDescribeThemselves() throws {
        #expect(try CollectionReference(parsing: "default") == .default)
        #expect(try CollectionReference(parsing: "session") == .session)
        #expect(try CollectionReference(parsing: "kdewallet") == .alias("kdewallet"))
        #expect(try CollectionReference(parsing: "/org/freedesktop/secrets/collection/x")
                == .path(ObjectPath("/org/freedesktop/secrets/collection/x")))
        #expect(throws: SecretServiceError.self) { try CollectionReference(parsing: "/bad path") }
        #expect(throws: SecretServiceError.self) { try CollectionReference(parsing: "") }
        #expect(CollectionReference.default.description == "the default collection")
        #expect(CollectionReference.session.aliasName == "session")
    }

    @Test func changeTokensCountChangesOnOneConnectionOnly() {
        let a = ChangeToken(connection: 7, count: 3)
        #expect(ChangeToken(connection: 7, count: 5).changes(since: a) == 2)
        #expect(ChangeToken(connection: 7, count: 3).isUnchanged(since: a))
        #expect(ChangeToken(connection: 8, count: 3).changes(since: a) == nil, "another connection: anything may have changed")
        #expect(!ChangeToken(connection: 8, count: 3).isUnchanged(since: a))
    }

    @Test func durationsReadNaturally() {
        #expect(Duration.milliseconds(250).secondsText == "250 ms")
        #expect(Duration.seconds(25).secondsText == "25 s")
        #expect(Duration.milliseconds(2500).secondsText == "2.5 s")
        #expect(Duration.seconds(Int64.max).secondsText.hasSuffix("days"))
    }

    @Test func providerNamesComeFromTheExecutable() {
        func name(_ executable: String?) -> String {
            SecretServiceProvider(uniqueName: ":1.1", processID: 1, userID: 0, executable: executable,
                                  transportAlgorithm: "plain", clientName: ":1.2").displayName
        }
        #expect(name("/usr/bin/gnome-keyring-daemon") == "GNOME Keyring")
        #expect(name("/usr/bin/kwalletd5") == "KWallet")
        #expect(name("/usr/bin/keepassxc") == "KeePassXC")
        #expect(name("/opt/x/other-keyring") == "other-keyring")
        #expect(name(nil) == "unknown")
    }
}
