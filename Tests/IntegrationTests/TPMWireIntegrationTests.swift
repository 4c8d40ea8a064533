import Foundation
@testable import PingStorage
import Testing
import TPM

extension Integration {
    /// What crosses the TPM's bus, read from swtpm's wire log (``TPMWireLog``), and the pinned
    /// parent (issue 36). The integration tests run one at a time, so what the log holds after a
    /// test's ``TPMWireLog/mark()`` is that test's own traffic.
    @Suite("The TPM's bus (swtpm's wire log) and the pinned parent",
           .enabled(if: ProcessInfo.processInfo.environment["DBUS_TEST_TPM"] == "1", "needs the software TPM of `dbus-test/run --tpm`"))
    struct TPMBus {
        static func offPool<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value { await TPMKeys.offPool(body) }

        /// `body`, which may throw, on a thread of its own.
        static func offPool<Value: Sendable>(throwing body: @escaping @Sendable () throws -> Value) async throws -> Value {
            try await TPMKeys.offPool { Result { try body() } }.get()
        }
        static let securedKeyService = "com.pingidentity.PingStorage.SecuredKey.TPM"

        static func exchanges(since mark: UInt64, _ code: UInt32) throws -> [TPMWireLog.Exchange] {
            try TPMWireLog.exchanges(since: mark).filter { $0.code == code }
        }

        @Test func everyZGenRunsInAnEncryptingSessionAndItsResultCrossesAsCiphertext() async throws {
            let mark = TPMWireLog.mark()
            // SecuredKey's decryption, and a bound key's first unwrap in a fresh process.
            let tag = uniqueAccount(), plaintext = Data("over the bus".utf8)
            let opened = await TPMKeys.offPool { () -> Data? in
                SecuredKey(applicationTag: tag).flatMap { key in key.encrypt(data: plaintext).flatMap { key.decrypt(data: $0) } }
            }
            #expect(opened == plaintext)
            let app = "org.example.Wire\(UInt32.random(in: 0...UInt32.max))", account = uniqueAccount()
            defer { try? SecretTool.clear(["account": account, AppIdentity.attribute: app]) }
            let saved = try TPMBoundKeys.probe(app, ["save", account, "sniffed?"])
            #expect(saved.status == 0, "\(saved.stderr)")
            let read = try TPMBoundKeys.probe(app, ["get", account])
            #expect(read.status == 0 && read.output == "sniffed?\n", "\(read.stderr)")

            let exchanges = try TPMWireLog.exchanges(since: mark)
            let zgens = exchanges.filter { $0.code == TPMWireLog.zgen }
            #expect(zgens.count >= 2, "SecuredKey's decryption and the bound key's unwrap: \(zgens.count)")
            for zgen in zgens {
                let sessions = try #require(TPMBytes.sessions(of: zgen.command, handles: 1), "\(zgen.command)")
                // One HMAC session (0x02…), not the password session TPM_RS_PW (0x40000009).
                #expect(sessions.count == 1 && sessions.allSatisfy { $0.handle >> 24 == 0x02 }, "\(sessions)")
                #expect(sessions.allSatisfy { $0.attributes & 0x60 == 0x60 }, "decrypt and encrypt set: \(sessions)")
                let response = try #require(zgen.response)
                #expect(TPMBytes.parameters(of: response, handles: 0) != nil, "the ZGen succeeded")
                // Decoded as the point it would be in the clear, it is none on P-256: ciphertext, not Z.
                #expect(TPMBytes.zgenPoint(response).map(TPMBytes.isOnP256) != true)
            }
            // The control: a point that does cross in the clear (the primary's public key) is found.
            let primaries = exchanges.filter { $0.code == TPMWireLog.createPrimary }.compactMap { $0.response.flatMap(TPMBytes.createPrimaryPoint) }
            #expect(!primaries.isEmpty && primaries.allSatisfy(TPMBytes.isOnP256), "\(primaries.count) primary keys")
        }

        @Test func aPrimaryOfAnotherNameThanThePinnedOneIsRefusedBeforeTheKeyIsUsed() async throws {
            let tag = uniqueAccount()
            let sealed = await Self.offPool { SecuredKey(applicationTag: tag)?.encrypt(data: Data("pinned".utf8)) }
            #expect(sealed != nil)
            let item = SecuredKeyItem(tag: tag)
            let blob = try #require(try await Self.offPool(throwing: { try item.read() }))
            let name = try #require(blob.parentName, "a new key is pinned")
            #expect(name.count == 34 && name.starts(with: [0x00, 0x0b]), "a SHA-256 name")
            var other = name
            other[other.count - 1] ^= 0x01
            let tampered = blob.pinned(to: other)

            // The TPM layer: the same blobs load under the pinned name, and not under another one.
            let mark = TPMWireLog.mark()
            let refused = await Self.offPool { TPM.publicPoint(of: tampered) }
            guard case .failure(let error) = refused else { Issue.record("a primary of another name was used"); return }
            #expect(error.kind == TPMError.Kind.foreignKey && error.message.contains("name pinned with the key"), "\(error)")
            #expect(try Self.exchanges(since: mark, TPMWireLog.load).isEmpty, "nothing was loaded under it")
            let loaded = await Self.offPool { TPM.publicPoint(of: blob) }
            #expect((try? loaded.get().parentName) == name, "the control: the pinned name loads")

            // SecuredKey: an item whose pin differs gives nil, uses no key and is left as it is.
            try await Self.offPool(throwing: { try item.write(tampered) })
            let attributes = ["service": Self.securedKeyService, "account": tag]
            let stored = try SecretTool.lookup(attributes)
            let again = TPMWireLog.mark()
            #expect(await Self.offPool { SecuredKey(applicationTag: tag) == nil })
            #expect(try Self.exchanges(since: again, TPMWireLog.load).isEmpty && Self.exchanges(since: again, TPMWireLog.zgen).isEmpty)
            #expect(try SecretTool.lookup(attributes) == stored, "the item was left unchanged")
        }

        @Test func aSecuredKeyOf200OpensAndIsPinnedAtItsFirstUse() async throws {
            let tag = uniqueAccount(), plaintext = Data("made by 2.0.0".utf8)
            let sealed = try #require(await Self.offPool { SecuredKey(applicationTag: tag)?.encrypt(data: plaintext) })
            let item = SecuredKeyItem(tag: tag)
            let pinned = try #require(try await Self.offPool(throwing: { try item.read() }))
            // The item as 2.0.0 wrote it: PSTPM1, no name.
            let old = TPMKeyBlob(publicArea: pinned.publicArea, privateArea: pinned.privateArea)
            try await Self.offPool(throwing: { try item.write(old) })
            let attributes = ["service": Self.securedKeyService, "account": tag]
            #expect(try SecretTool.lookup(attributes)?.starts(with: Data("PSTPM1".utf8)) == true)

            let opened = await Self.offPool { SecuredKey(applicationTag: tag)?.decrypt(data: sealed) }
            #expect(opened == plaintext, "a 2.0.0 key opens")
            #expect(try SecretTool.lookup(attributes) == Data(SecuredKeyItem.encode(pinned)), "and is pinned to the same name")
        }

        @Test func aBoundKeyOf200OpensAndIsPinnedAtItsFirstUse() async throws {
            let app = "org.example.Pin\(UInt32.random(in: 0...UInt32.max))", account = uniqueAccount()
            defer { try? SecretTool.clear(["account": account, AppIdentity.attribute: app]) }
            let saved = try await Self.offPool(throwing: { try TPMBoundKeys.probe(app, ["save", account, "bound by 2.0.0"]) })
            #expect(saved.status == 0, "\(saved.stderr)")
            let key = try #require(try TPMBoundKeys.keys(of: app).first)
            let keyItem = ["xdg:schema": TPMBoundKeys.keySchema, "key-id": key.storedAttributes["key-id"] ?? "?"]
            let pinnedBytes = try #require(try SecretTool.lookup(keyItem))
            let (blob, wrapped) = try #require(BoundKey.decode([UInt8](pinnedBytes)))
            #expect(pinnedBytes.starts(with: Data("PSBND2".utf8)) && blob.parentName != nil)

            // The key item as 2.0.0 wrote it (PSBND1, no name), with its attributes as they were.
            let old = Data(BoundKey.encode(TPMKeyBlob(publicArea: blob.publicArea, privateArea: blob.privateArea)) + wrapped)
            try await SecretTool.storeBinary(label: KeyVault.label, attributes: key.storedAttributes, secret: old)
            #expect(try SecretTool.lookup(keyItem) == old)

            let read = try await Self.offPool(throwing: { try TPMBoundKeys.probe(app, ["get", account]) })
            #expect(read.status == 0 && read.output == "bound by 2.0.0\n", "a 2.0.0 key opens: \(read.stderr)")
            #expect(try SecretTool.lookup(keyItem) == pinnedBytes, "and is pinned to the same name, in place")
            #expect(try TPMBoundKeys.keys(of: app).count == 1, "no second key")
        }

        @Test func anOwnerHierarchyPasswordLeavesKeysUnboundWithTheDocumentedError() async throws {
            let tcti = ProcessInfo.processInfo.environment["PINGSTORAGE_TPM_TCTI"] ?? "tabrmd:bus_type=session"
            let set = try await run("tpm2_changeauth", ["-T", tcti, "-c", "owner", "pingstorage-owner"])
            try #require(set.status == 0, "\(set.stderr)")
            defer { _ = try? run("tpm2_changeauth", ["-T", tcti, "-c", "owner", "-p", "pingstorage-owner"]) }

            let problem = try #require(await KeyBindingInspection.tpmProblem(timeout: .seconds(10)))
            #expect(problem.hasPrefix(KeyBindingInspection.ownerPassword) && problem.contains("tpm2_changeauth -c owner"), "\(problem)")
            // A fresh process's encryptor saves and reads back with an unbound key.
            let app = "org.example.Owner\(UInt32.random(in: 0...UInt32.max))", account = uniqueAccount()
            defer { try? SecretTool.clear(["account": account, AppIdentity.attribute: app]) }
            let probe = Harness.binaryDirectory.appendingPathComponent("tpm-probe").path
            let result = try await run(probe, ["--encryptor", account],
                                 environment: ProcessInfo.processInfo.environment.merging(["TPM_PROBE_APP": app]) { $1 })
            #expect(result.output == "roundtrip=true\ntss-mapped=true\n", "\(result.stderr)")
            let key = try #require(try TPMBoundKeys.keys(of: app).first)
            #expect(key.storedAttributes["key-binding"] == nil, "the key stays unbound")
            // SecuredKey makes no key, and the doctor says why.
            #expect(await Self.offPool { SecuredKey(applicationTag: uniqueAccount()) == nil })
            let doctor = try await runPingKeyring(["doctor"])
            let line = try #require(doctor.output.split(separator: "\n").first { $0.contains("key binding ") }, "\(doctor.output)")
            #expect(line.contains("owner hierarchy has a password"), "\(line)")
        }
    }
}
