internal import CGLib
import Foundation
import PingStorage
import Testing
import TPM

extension Integration {
    /// SecuredKey on a real TPM 2.0: swtpm behind tpm2-abrmd (`dbus-test/run --tpm`), its blobs in
    /// the throwaway keyring. SecuredKey's calls block their thread (as SecItem's do), so the tests
    /// make them on a thread of their own, never on Swift's pool.
    @Suite("SecuredKey on a TPM (swtpm)", .enabled(if: ProcessInfo.processInfo.environment["DBUS_TEST_TPM"] == "1",
                                                    "needs the software TPM of `dbus-test/run --tpm`"))
    struct TPMKeys {
        /// `body` on a thread of its own.
        static func offPool<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread { continuation.resume(returning: body()) }
            }
        }

        static let algorithms: [SecKeyAlgorithm] = [
            .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, .eciesEncryptionCofactorX963SHA256AESGCM,
            .eciesEncryptionStandardVariableIVX963SHA256AESGCM, .eciesEncryptionStandardX963SHA256AESGCM,
        ]

        @Test func encryptsAndDecryptsWithAKeyInTheTPM() async throws {
            let tag = uniqueAccount()
            let plaintext = Data("a refresh token".utf8)
            let outcome = await Self.offPool { () -> (Bool, [Data?], Data?, Data?) in
                guard let key = SecuredKey(applicationTag: tag) else { return (SecuredKey.isAvailable(), [], nil, nil) }
                let roundTrips = Self.algorithms.map { algorithm in
                    key.encrypt(data: plaintext, secAlgorithm: algorithm).flatMap { key.decrypt(data: $0, secAlgorithm: algorithm) }
                }
                let sealed = key.encrypt(data: plaintext)
                // Another instance of the same tag (another launch of the app) is the same key.
                let again = SecuredKey(applicationTag: tag)
                let wrongAlgorithm = sealed.flatMap { key.decrypt(data: $0, secAlgorithm: .eciesEncryptionCofactorX963SHA256AESGCM) }
                return (SecuredKey.isAvailable(), roundTrips, sealed.flatMap { again?.decrypt(data: $0) }, wrongAlgorithm)
            }
            #expect(outcome.0, "the TPM answers")
            #expect(outcome.1 == Array(repeating: plaintext, count: 4), "each of the four algorithms round-trips")
            #expect(outcome.2 == plaintext, "the tag's key is found again in the keyring")
            #expect(outcome.3 == nil, "another algorithm does not decrypt")
            // tpm2-abrmd's TCTI and the probe for it speak D-Bus through GLib: nothing of theirs may
            // land on the application's default main context (a GTK app would run it).
            #expect(g_main_context_pending(nil) == 0, "nothing waits on the default main context")
            // The key's blobs are one item of this app, under the tag.
            let items = try SecretTool.search(["service": "com.pingidentity.PingStorage.SecuredKey.TPM", "account": tag])
            #expect(items.count == 1)
            #expect(items.first?.storedAttributes[AppIdentity.attribute] == AppIdentity.current.id)
        }

        @Test func aFreshTPMCannotDecryptWhatTheFirstOneEncrypted() async throws {
            let tag = uniqueAccount()
            let plaintext = Data("bound to one TPM".utf8)
            let first = await Self.offPool { () -> (SecuredKey?, Data?) in
                let key = SecuredKey(applicationTag: tag)
                return (key, key?.encrypt(data: plaintext))
            }
            let key = try #require(first.0)
            let sealed = try #require(first.1)
            let attributes = ["service": "com.pingidentity.PingStorage.SecuredKey.TPM", "account": tag]
            let stored = try #require(try SecretTool.lookup(attributes))
            #expect(await Self.offPool { key.decrypt(data: sealed) } == plaintext)

            try Harness.ctl("tpm-reset")   // new seeds: the old primary key cannot be re-created
            let after = await Self.offPool { () -> (Bool, Bool, Data?, Data?) in
                let otherKey = SecuredKey(applicationTag: tag + "-other")
                return (SecuredKey(applicationTag: tag) == nil, otherKey != nil, key.decrypt(data: sealed), otherKey?.decrypt(data: sealed))
            }
            #expect(after.0, "the first TPM's key does not load into the fresh one")
            #expect(after.1, "the fresh TPM makes keys of its own")
            #expect(after.2 == nil, "the first key's blobs are useless to the fresh TPM")
            #expect(after.3 == nil, "another key does not decrypt")
            #expect(try SecretTool.lookup(attributes) == stored, "the unusable item was left as it was")
        }

        @Test func aTPMThatHangsGivesNilWithinTheDeadline() async throws {
            let tag = uniqueAccount()
            let made = await Self.offPool { () -> (SecuredKey?, Data?) in
                let key = SecuredKey(applicationTag: tag)
                return (key, key?.encrypt(data: Data("x".utf8)))
            }
            let key = try #require(made.0)
            let sealed = try #require(made.1)
            let saved = TPM.timeout
            TPM.timeout = .seconds(2)
            defer { TPM.timeout = saved }
            try Harness.ctl("tpm-suspend")
            let started = ContinuousClock.now
            let (hung, again) = await Self.offPool { (key.decrypt(data: sealed), key.decrypt(data: sealed)) }
            let elapsed = ContinuousClock.now - started
            try Harness.ctl("tpm-resume")
            #expect(hung == nil && again == nil)
            #expect(elapsed < .milliseconds(3500), "two calls, one deadline (2 s): the second fails at once (\(elapsed))")
            // Once the TPM answers again, so does SecuredKey (the stuck command finishes first).
            var recovered: Data?
            for _ in 0..<20 where recovered == nil {
                recovered = await Self.offPool { key.decrypt(data: sealed) }
                if recovered == nil { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(recovered == Data("x".utf8))
        }

        /// SecuredKey called from tasks, more at once than Swift's pool has threads: each call blocks
        /// its pool thread, and the keyring work it waits for runs elsewhere (BlockingBridge), so
        /// every call ends with a key instead of timing out.
        @Test func calledFromEveryPoolThreadAtOnceItStillAnswers() async throws {
            let tag = uniqueAccount()
            let callers = ProcessInfo.processInfo.activeProcessorCount * 2 + 1
            let made = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<callers {
                    group.addTask { SecuredKey(applicationTag: "\(tag)-\(index % 2)") != nil }
                }
                var made = 0
                for await ok in group where ok { made += 1 }
                return made
            }
            #expect(made == callers)
        }

        /// The positive control of TPMTests' no-TPM case: the same probe does map tpm2-tss once a
        /// TPM answers, so its `tss-mapped=false` there means something.
        @Test func theProbeSeesTpm2TssOnceATPMIsUsed() throws {
            let probe = Harness.binaryDirectory.appendingPathComponent("tpm-probe").path
            let result = try run(probe, [uniqueAccount()])
            #expect(result.output == "available=true\nkey=made\nroundtrip=true\ntss-mapped=true\n", "\(result.stderr)")
        }
    }
}
