import Foundation
import Testing

extension Integration {
/// libgcrypt is initialised once per process, by one process-wide once that both libsecret's side
/// (SecretService) and PingStorageCrypto go through. Each test runs gcrypt-race-probe, a fresh
/// process, because who initialises libgcrypt is decided once per process.
@Suite("libgcrypt: one initialisation per process, whatever races it")
struct GcryptInitialization {
    static var probe: String { Harness.binaryDirectory.appendingPathComponent("gcrypt-race-probe").path }

    func probe(_ arguments: [String]) async throws -> ProcessResult {
        return try await run(Self.probe, arguments, timeout: 60)
    }

    @Test("our initialisation, held inside libgcrypt's FIPS check, while a session opens: no abort, crypto available")
    func ourInitializationHeldWhileASessionOpens() async throws {
        let result = try await probe(["our-init-held"])
        #expect(result.status == 0, "\(result.output)\(result.stderr)")
        #expect(result.output.contains("session: ok"))
        #expect(result.output.contains("crypto available: true"))
    }

    @Test("the session's initialisation, held inside libgcrypt's FIPS check, while SecuredKeyEncryptor() is created: never nil")
    func sessionInitializationHeldWhileTheEncryptorStarts() async throws {
        let result = try await probe(["session-init-held"])
        #expect(result.status == 0, "\(result.output)\(result.stderr)")
        #expect(result.output.contains("encryptor: created"))
    }

    /// libgcrypt begins initialising itself, without finishing, at any first call: a key derived
    /// before anything else in the process must not leave the one initialisation finding it
    /// "being initialised elsewhere" for good (every keyring and session would then fail).
    @Test("a key derivation as the process's first libgcrypt call: crypto still available, a session opens")
    func aDerivationFirstLeavesCryptoAvailable() async throws {
        let result = try await probe(["derive-first"])
        #expect(result.status == 0, "\(result.output)\(result.stderr)")
    }

    @Test("a session first: libgcrypt was still initialised by this package, before libsecret could")
    func sessionFirstStillInitialisedHere() async throws {
        let result = try await probe(["session-first"])
        #expect(result.status == 0, "\(result.output)\(result.stderr)")
        #expect(result.output.contains("initialised by this package: true"))
    }

    /// Against the project's fake Secret Service, not the session's provider: what races here is
    /// libgcrypt inside each fresh process. Providers do not survive clients that start this fast:
    /// KeePassXC 2.7.4 crashes, and GNOME Keyring 42 aborts now and then when it handles a new
    /// client's OpenSession before it has registered the client (its own bug, Providers.md), which
    /// failed this test once in 30 runs here and once in CI, for no fault of the processes raced.
    @Test("200 fresh processes whose first get races their first SecuredKeyEncryptor(): no crash, never unavailable")
    func firstGetRacingFirstEncryptor() async throws {
        let fake = try await FakeSecretServiceInstance()
        let account = uniqueAccount()
        var crashes = 0, unavailable = 0, failures: [String] = []
        // Four at a time, like an app started several times at once.
        for _ in 0..<50 {
            let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
                for _ in 0..<4 { group.addTask { try run(Self.probe, ["race", account], environment: fake.environment, timeout: 60) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for result in results where result.status != 0 {
                if result.status > 128 { crashes += 1 }
                if result.output.contains("encryptor: nil") { unavailable += 1 }
                failures.append("status \(result.status): \(result.output.prefix(300))\(result.stderr.prefix(300))")
            }
        }
        #expect(crashes == 0)
        #expect(unavailable == 0)
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(try fake.calls("SearchItems") >= 200, "every process searched the fake")
    }
}
}
