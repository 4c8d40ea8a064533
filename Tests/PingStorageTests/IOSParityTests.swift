import Foundation
import Locking
@testable import PingLogger
import Testing
@testable import PingStorage

/// The iOS SDK's public API, used the way iOS code uses it (written from the API, not copied from
/// the SDK's tests): every symbol compiles here, and the errors keep the four uses iOS code makes
/// of them (an exhaustive switch, catch by case, throw, compare) while carrying Linux's reason.
@Suite("iOS parity: the shapes of iOS code")
struct IOSParityTests {
    private struct Note: Codable, Sendable, Equatable { var text: String }

    /// An exhaustive switch over iOS's three cases, with no `default`: adding a case breaks it.
    private func iOSMessage(_ error: KeychainError) -> String {
        switch error {
        case .unableToSave: "save"
        case .unableToRetrieve: "retrieve"
        case .unableToDelete: "delete"
        }
    }

    private func iOSMessage(_ error: EncryptorError) -> String {
        switch error {
        case .failedToEncrypt: "encrypt"
        case .failedToDecrypt: "decrypt"
        }
    }

    private func lockedStorage() -> (FakeSecretService, KeychainStorage<Note>) {
        let fake = FakeSecretService()
        fake.seed(attributes: ["service": "com.pingidentity.keychainService", "account": "acct"], secret: #"{"text":"kept"}"#)
        fake.state.withLock { $0.collectionLocked = true; $0.promptsUnlock = false }
        return (fake, KeychainStorage<Note>(account: "acct", encryptor: NoEncryptor(), cacheStrategy: .NO_CACHE,
                                             configuration: KeychainConfiguration(), backend: fake))
    }

    @Test func eachOperationThrowsItsIOSCaseWithTheReason() async throws {
        let (fake, storage) = lockedStorage()
        do {
            _ = try await storage.get()
            Issue.record("expected a failure")
        } catch KeychainError.unableToRetrieve(.locked(let details)) {
            #expect(details.message.contains("locked"), "\(details)")
        }
        do {
            try await storage.save(item: Note(text: "new"))
            Issue.record("expected a failure")
        } catch KeychainError.unableToSave {
            // iOS's catch, any reason
        }
        do {
            try await storage.delete()
            Issue.record("expected a failure")
        } catch let error as KeychainError {
            #expect(iOSMessage(error) == "delete")
            #expect(error == .unableToDelete && error == KeychainError.unableToDelete, "compared as iOS code does")
            #expect(error != .unableToSave)
            #expect(error.kind == "locked" && error.reason.kind == "locked")
            #expect(error.errorMessage.contains("locked") && error.localizedDescription == error.failureReason)
            #expect(error.errorMessage == [error.localizedDescription, error.recoverySuggestion].compactMap { $0 }.joined(separator: " "),
                    "errorMessage is what happened and what to do; localizedDescription leaves the advice to recoverySuggestion")
        }
        #expect(fake.writes.isEmpty)
    }

    @Test func aKeyReadDuringASaveIsASaveFailureAndOnItsOwnARetrieveFailure() async throws {
        let fake = FakeSecretService()
        fake.state.withLock { $0.collectionLocked = true; $0.promptsUnlock = false }
        let encryptor = try #require(SecuredKeyEncryptor(vault: KeyVault.on(fake)))
        let storage = KeychainStorage<Note>(account: "acct", encryptor: encryptor, cacheStrategy: .NO_CACHE,
                                           configuration: KeychainConfiguration(), backend: fake)
        await #expect(throws: KeychainError.unableToSave) { try await storage.save(item: Note(text: "x")) }
        do {
            _ = try await encryptor.encrypt(data: Data("x".utf8))
            Issue.record("expected a failure")
        } catch KeychainError.unableToRetrieve(.locked) {}
    }

    /// iOS code throws the bare cases from its own Storage and Encryptor; they pass through
    /// unchanged, with no reason.
    @Test func theBareIOSFormsAreThrownCaughtAndCompared() async throws {
        struct Refusing: Storage {
            func save(item: String) async throws { throw KeychainError.unableToSave }
            func get() async throws -> String? { throw KeychainError.unableToRetrieve }
            func delete() async throws { throw KeychainError.unableToDelete }
        }
        let storage = StorageDelegate<String>(delegate: Refusing(), cacheable: false)
        await #expect(throws: KeychainError.unableToSave) { try await storage.save(item: "x") }
        do {
            _ = try await storage.get()
        } catch KeychainError.unableToRetrieve {
        } catch {
            Issue.record("got \(error)")
        }
        do {
            try await storage.delete()
        } catch let error as KeychainError {
            #expect(error.reason == .unspecified && error.details == nil)
            #expect(error.kind == "unableToDelete")
            #expect(error.errorMessage == "Unable to delete the item from the keychain")
            #expect(Set([error, .unableToDelete(.timedOut(.init(message: "t")))]).count == 1, "hashed as compared")
        }

        struct Failing: Encryptor {
            func encrypt(data: Data) async throws -> Data { throw EncryptorError.failedToEncrypt }
            func decrypt(data: Data) async throws -> Data { throw EncryptorError.failedToDecrypt }
        }
        do {
            _ = try await Failing().encrypt(data: Data())
        } catch let error as EncryptorError {
            #expect(iOSMessage(error) == "encrypt" && error == .failedToEncrypt && error.reason == .unspecified)
        }
        do {
            _ = try await Failing().decrypt(data: Data())
        } catch EncryptorError.failedToDecrypt {}
    }

    /// SDK code logs errors with `"\(error)"`: the iOS case's name, as iOS prints it; with a
    /// reason, the reason's name after it, never the details.
    @Test func errorsPrintTheirIOSCaseNames() {
        #expect(String(describing: KeychainError.unableToSave) == "unableToSave")
        #expect(String(describing: KeychainError.unableToRetrieve) == "unableToRetrieve")
        #expect("\(KeychainError.unableToDelete)" == "unableToDelete")
        #expect(String(describing: EncryptorError.failedToEncrypt) == "failedToEncrypt")
        #expect("\(EncryptorError.failedToDecrypt)" == "failedToDecrypt")
        let locked = KeychainError.unableToRetrieve(.locked(.init(message: "The keyring is locked.", detail: "/org/x")))
        #expect("\(locked)" == "unableToRetrieve(locked)")
        #expect(locked.localizedDescription == "The keyring is locked.", "the details stay in localizedDescription")
        #expect("\(EncryptorError.failedToDecrypt(.keyNotFound("key 01 is not in the keyring")))" == "failedToDecrypt(keyNotFound)")
        #expect("\(EncryptorError.failedToEncrypt(.authenticationFailed))" == "failedToEncrypt(authenticationFailed)")
    }

    @Test func securedKeyEncryptorsFailuresAreIOSCasesWithTheirReasons() async throws {
        let fake = FakeSecretService()
        let encryptor = try #require(SecuredKeyEncryptor(vault: KeyVault.on(fake)))
        var sealed = try await encryptor.encrypt(data: Data("secret".utf8))
        sealed[sealed.count - 1] ^= 1
        do {
            _ = try await encryptor.decrypt(data: sealed)
            Issue.record("expected a failure")
        } catch EncryptorError.failedToDecrypt(.authenticationFailed) {}
        do {
            _ = try await encryptor.decrypt(data: Data("{}".utf8))
            Issue.record("expected a failure")
        } catch let error as EncryptorError {
            #expect(error == .failedToDecrypt && iOSMessage(error) == "decrypt")
            guard case .unsupportedFormat = error.reason else { Issue.record("got \(error)"); return }
            #expect(error.kind == "unsupportedFormat")
        }
    }

    @Test func securedKeyHasIOSsAPIAndTheEncryptorDoesNotNeedIt() async throws {
        // iOS code's calls compile, with iOS's default algorithm and with a named one. (What they
        // do is tested where it can be: TPMTests without a TPM, IntegrationTests' TPM suite with one.
        // They are not called here: they block their thread, and the harness may give a TPM.)
        let _: () -> Bool = SecuredKey.isAvailable
        let _: (String) -> SecuredKey? = SecuredKey.init(applicationTag:)
        let calls: (SecuredKey, Data) -> (Data?, Data?) = { key, data in
            (key.encrypt(data: data), key.decrypt(data: data, secAlgorithm: .eciesEncryptionCofactorX963SHA256AESGCM))
        }
        _ = calls
        #expect(SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM.rawValue
            == "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
        #expect(SecuredKeyEncryptor() != nil, "its key is in the keyring, not in hardware")
    }

    @Test func memoryIsAnActorStoreAndADelegate() async throws {
        let memory = Memory<Note>()
        #expect(try await memory.get() == nil)
        try await memory.save(item: Note(text: "a"))
        #expect(try await memory.get() == Note(text: "a"))
        try await memory.delete()
        try await memory.delete()
        #expect(try await memory.get() == nil)
        let delegate = StorageDelegate<Note>(delegate: Memory<Note>(), cacheable: true)
        try await delegate.save(item: Note(text: "b"))
        #expect(try await delegate.get() == Note(text: "b"))
    }

    @Test func keychainIsAnActorStoreWithKeychainStoragesRules() async throws {
        let fake = FakeSecretService()
        let keychain = Keychain<Note>(account: "acct", encryptor: NoEncryptor(), configuration: KeychainConfiguration(),
                                      backend: fake)
        try await keychain.save(item: Note(text: "a"))
        #expect(try await keychain.get() == Note(text: "a"))
        let reader = KeychainStorage<Note>(account: "acct", encryptor: NoEncryptor(), cacheStrategy: .NO_CACHE,
                                          configuration: KeychainConfiguration(), backend: fake)
        #expect(try await reader.get() == Note(text: "a"), "the same item KeychainStorage reads")
        try await keychain.delete()
        #expect(try await keychain.get() == nil)
        fake.state.withLock { $0.collectionLocked = true; $0.promptsUnlock = false }
        await #expect(throws: KeychainError.unableToRetrieve) { _ = try await keychain.get() }
        // iOS's initializer; no keyring is touched until a call.
        _ = Keychain<Note>(account: "ACCESS_TOKEN_STORAGE", encryptor: SecuredKeyEncryptor() ?? NoEncryptor())
        let asStorage: any Storage<Note> = Keychain<Note>(account: "acct")
        _ = asStorage
    }
}

/// iOS's loggers are not final: tests that import the SDK with `@testable` subclass them.
final class CountingNoneLogger: NoneLogger, @unchecked Sendable {
    let lines = Locked<[String]>([])
    override func d(_ message: String) { lines.withLock { $0.append(message) } }
    override func i(_ message: String) { lines.withLock { $0.append(message) } }
}

final class QuietWarningLogger: WarningLogger, @unchecked Sendable {
    override func w(_ message: String, error: (any Error)?) {}
}

@Suite("iOS parity: loggers")
struct IOSParityLoggerTests {
    /// PingStorage builds no message while the logger drops everything; a subclass of NoneLogger
    /// (LogManager.logger is process-wide, so this is checked on the decision, not by setting it
    /// while other suites set it too) is not such a logger.
    @Test func aSubclassOfNoneLoggerIsGivenTheLibrarysMessages() {
        #expect(Log.drops(NoneLogger()))
        #expect(Log.drops(LogManager.none))
        #expect(!Log.drops(CountingNoneLogger()), "a subclass may log")
        #expect(!Log.drops(QuietWarningLogger()))
        let counting = CountingNoneLogger()
        counting.i("seen")
        counting.d("seen too")
        #expect(counting.lines.withLock { $0 } == ["seen", "seen too"])
    }
}
