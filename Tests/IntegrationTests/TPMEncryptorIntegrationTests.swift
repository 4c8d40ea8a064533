import FileKeyring
import Foundation
@testable import PingStorage
import PingStorageCrypto
import Testing
import TPM
import DBusTransport
import SecretService

extension Integration {
    /// SecuredKeyEncryptor's keys bound to a real TPM 2.0 (swtpm behind tpm2-abrmd,
    /// `dbus-test/run --tpm`), seen from processes of their own (keychain-probe: a fresh process
    /// opens its key with the TPM, as an app's next launch does) and from secret-tool.
    @Suite("SecuredKeyEncryptor bound to a TPM (swtpm)", .serialized,
           .enabled(if: ProcessInfo.processInfo.environment["DBUS_TEST_TPM"] == "1", "needs the software TPM of `dbus-test/run --tpm`"))
    struct TPMBoundKeys {
        static let keySchema = "com.pingidentity.PingStorage.SecuredKey"

        /// keychain-probe as app `app`, with SecuredKeyEncryptor (`--unbound`: keyBinding .none).
        static func probe(_ app: String, _ arguments: [String], unbound: Bool = false) throws -> ProcessResult {
            let environment = ProcessInfo.processInfo.environment.merging(["KEYCHAIN_PROBE_APP": app]) { $1 }
            return try run(Harness.probePath, ["--encrypt"] + (unbound ? ["--unbound"] : []) + arguments, environment: environment)
        }

        /// The key id an envelope names (bytes 5..<21: magic, version, key id).
        static func keyID(of envelope: Data) -> String {
            envelope.dropFirst(5).prefix(16).map { String(format: "%02x", $0) }.joined()
        }

        static func keys(of app: String) throws -> [SecretTool.Item] {
            try SecretTool.search(["xdg:schema": keySchema, AppIdentity.attribute: app])
        }

        @Test func anItemSavedBeforeMovesToTheBoundKeyOnItsNextSave() throws {
            let app = "org.example.Bound\(UInt32.random(in: 0...UInt32.max))", account = uniqueAccount()
            let item = ["account": account, AppIdentity.attribute: app]
            defer { try? SecretTool.clear(item) }

            let saved = try Self.probe(app, ["save", account, "before"], unbound: true)
            #expect(saved.status == 0, "\(saved.stderr)")
            let unbound = try #require(try Self.keys(of: app).first)
            #expect(unbound.storedAttributes["key-binding"] == nil, "keyBinding .none: a plain key")
            let sealedBefore = try #require(try SecretTool.lookup(item))
            #expect(Self.keyID(of: sealedBefore) == unbound.storedAttributes["key-id"])

            // A process that binds reads what the unbound key sealed, and leaves it as it is.
            let read = try Self.probe(app, ["get", account])
            #expect(read.status == 0 && read.output == "before\n", "\(read.stderr)")
            #expect(try SecretTool.lookup(item) == sealedBefore, "a read does not rewrite")

            // Its next save seals with a new key, bound to the TPM.
            let resaved = try Self.probe(app, ["save", account, "after"])
            #expect(resaved.status == 0, "\(resaved.stderr)")
            let keys = try Self.keys(of: app)
            #expect(keys.count == 2, "the unbound key stays: nothing deletes a key")
            let bound = try #require(keys.first { $0.storedAttributes["key-binding"] == "tpm" })
            let sealedAfter = try #require(try SecretTool.lookup(item))
            #expect(Self.keyID(of: sealedAfter) == bound.storedAttributes["key-id"], "the item moved to the bound key")
            let boundSecret = try #require(try SecretTool.lookup(["xdg:schema": Self.keySchema, "key-id": bound.storedAttributes["key-id"] ?? ""]))
            #expect(boundSecret.starts(with: Data("PSBND2".utf8)) && boundSecret.count > 32,
                    "the keyring holds the key wrapped by the TPM, not the key")

            // Fresh processes open it through the TPM, whether they bind new keys or not.
            let again = try Self.probe(app, ["get", account])
            #expect(again.status == 0 && again.output == "after\n", "\(again.stderr)")
            let byUnbound = try Self.probe(app, ["get", account], unbound: true)
            #expect(byUnbound.status == 0 && byUnbound.output == "after\n", "\(byUnbound.stderr)")
        }

        @Test func afterTheTPMIsClearedItemsFailWithTpmClearedAndSavingAgainWorks() throws {
            let app = "org.example.Cleared\(UInt32.random(in: 0...UInt32.max))", account = uniqueAccount()
            let item = ["account": account, AppIdentity.attribute: app]
            defer { try? SecretTool.clear(item) }
            let saved = try Self.probe(app, ["save", account, "token"])
            #expect(saved.status == 0, "\(saved.stderr)")
            let stored = try #require(try SecretTool.lookup(item))
            let key = try #require(try Self.keys(of: app).first)
            #expect(key.storedAttributes["key-binding"] == "tpm")
            let doctor = try pingKeyring(["doctor"])
            #expect(doctor.status == 0 && doctor.output.contains("\nok    key binding        bound: key "), "\(doctor.output)")

            try Harness.ctl("tpm-clear")   // tpm2_clear: a new storage seed

            // The doctor says which keys the TPM no longer opens, and what to do.
            let cleared = try pingKeyring(["doctor"])
            #expect(cleared.status == 4, "\(cleared.output)")
            let line = try #require(cleared.output.split(separator: "\n").first { $0.hasPrefix("FAIL  key binding ") }, "\(cleared.output)")
            #expect(line.contains(key.storedAttributes["key-id"] ?? "?") && line.contains("TPM was cleared"), "\(line)")

            let read = try Self.probe(app, ["get", account])
            #expect(read.status == 4, "an EncryptorError, not garbage and not 'no item': \(read.stderr)")
            #expect(read.stderr.hasPrefix("error: encryptor: tpmCleared: "), "\(read.stderr)")
            #expect(read.stderr.contains("TPM was cleared") && read.stderr.contains("sign in again"), "\(read.stderr)")
            #expect(try SecretTool.lookup(item) == stored, "the item was left unchanged")

            // The app signs in again: the save seals with a key of the new TPM; the old key stays.
            let resaved = try Self.probe(app, ["save", account, "new token"])
            #expect(resaved.status == 0, "\(resaved.stderr)")
            let again = try Self.probe(app, ["get", account])
            #expect(again.status == 0 && again.output == "new token\n", "\(again.stderr)")
            let keys = try Self.keys(of: app)
            #expect(keys.count == 2 && keys.allSatisfy { $0.storedAttributes["key-binding"] == "tpm" },
                    "\(keys.map { "key \($0.attributes["key-id"] ?? "?") binding \($0.attributes["key-binding"] ?? "none")" })")
        }

        /// Without a TPM (a process whose connection cannot answer, next to the harness's TPM as the
        /// positive control), the encryptor works with an unbound key and maps nothing of tpm2-tss.
        @Test(arguments: [["PINGSTORAGE_TPM_TCTI": "none"], ["PINGSTORAGE_TPM_TCTI": "device:/nonexistent/tpmrm0"], [:]])
        func withoutATPMTheKeyIsUnboundAndTpm2TssIsNotLoaded(connection: [String: String]) throws {
            let app = "org.example.NoTPM\(UInt32.random(in: 0...UInt32.max))", account = uniqueAccount()
            defer { try? SecretTool.clear(["account": account, AppIdentity.attribute: app]) }
            let probe = Harness.binaryDirectory.appendingPathComponent("tpm-probe").path
            let environment = ProcessInfo.processInfo.environment.merging(connection.merging(["TPM_PROBE_APP": app]) { $1 }) { $1 }
            let result = try run(probe, ["--encryptor", account], environment: environment)
            let hasTPM = connection.isEmpty
            #expect(result.output == "roundtrip=true\ntss-mapped=\(hasTPM)\n", "\(result.stderr)")
            let key = try #require(try Self.keys(of: app).first)
            #expect(key.storedAttributes["key-binding"] == (hasTPM ? "tpm" : nil))
        }

        /// The file keyring (a Flatpak app given the TPM with `--device=all`) keeps a bound key too,
        /// and passes over a bound key this TPM refuses: an older key whose TPM blob does not load
        /// (its private area changed, as another TPM's or a cleared one's fails: TPM_RC_INTEGRITY)
        /// is not chosen for new data, and what it sealed fails with tpmCleared.
        @Test func aFileKeyringKeepsABoundKeyAndPassesOverOneThisTPMRefuses() async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tpm-file-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let path = directory + "/keyrings/default.keyring", app = "org.example.FileBound"
            let configuration = KeychainConfiguration(service: "tpm-file", backend: .fileKeyring(path: path), app: app)
            // A process whose Secret portal gives the file's secret.
            func runtime() -> KeychainRuntime {
                KeychainRuntime { bus in
                    SecretServiceConnection(calls: ClientCalls(client: SecretServiceClient(bus: BusAddress(bus)), rememberedItems: RememberedItems()),
                                            portalSecret: { _ throws(StorageFailure) in Array(0..<64) })
                }
            }
            let process = runtime()
            let keyring = try FileKeyring(path: path, masterSecret: FileKeyringSecret(copying: Array(0..<64)))
            func storage(_ account: String, _ encryptor: any Encryptor) -> KeychainStorage<String> {
                KeychainStorage(account: account, encryptor: encryptor, cacheStrategy: .NO_CACHE, configuration: configuration, runtime: process)
            }

            try await storage("first", try #require(SecuredKeyEncryptor(configuration: configuration, runtime: process))).save(item: "first")
            let bound = try #require(try keyring.items().first { $0.attributes["xdg:schema"] == KeyVault.schema })
            #expect(bound.attributes[BoundKey.attribute] == BoundKey.tpm)
            let boundBytes = bound.secret.withUnsafeBytes { Data($0) }
            #expect(BoundKey.isBound(bytes: boundBytes))

            // An older bound key the TPM refuses, and an item it sealed.
            let (blob, wrapped) = try #require(BoundKey.decode([UInt8](boundBytes)))
            var privateArea = blob.privateArea
            privateArea[privateArea.count - 1] ^= 0x01
            let refused = Data(BoundKey.encode(TPMKeyBlob(publicArea: blob.publicArea, privateArea: privateArea)) + wrapped)
            let refusedID = String(repeating: "0f", count: 16)
            let envelope = try Envelope.seal(Data("\"lost\"".utf8), key: SymmetricKey.generate(), keyID: #require(KeyID(hexString: refusedID)),
                                             associatedData: Data())
            try keyring.modify { items in
                items.append(FileKeyringItem(label: KeyVault.label, attributes: ["xdg:schema": KeyVault.schema, "key-id": refusedID,
                                                                                 BoundKey.attribute: BoundKey.tpm, AppIdentity.attribute: app],
                                             secret: FileKeyringSecret(copying: refused), created: bound.created - 100))
                items.append(FileKeyringItem(label: "old", attributes: ["service": "tpm-file", "account": "old", "username": "old",
                                                                        "xdg:schema": "com.pingidentity.PingStorage", AppIdentity.attribute: app],
                                             secret: FileKeyringSecret(copying: envelope)))
            }

            // A fresh vault (another process) chooses again: the refused key is passed over.
            let fresh = try #require(SecuredKeyEncryptor(configuration: configuration, runtime: runtime()))
            try await storage("second", fresh).save(item: "second")
            let second = try #require(try keyring.items().first { $0.attributes["account"] == "second" })
            #expect(try second.secret.withUnsafeBytes { try Envelope.header(of: Data($0)) }.keyID.hexString == bound.attributes["key-id"],
                    "new data is sealed with the key the TPM opens")
            #expect(try keyring.items().filter { $0.attributes["xdg:schema"] == KeyVault.schema }.count == 2, "no third key")
            await #expect { try await storage("old", fresh).get() } throws: { error in
                guard let error = error as? EncryptorError, case .tpmCleared = error.reason else { return false }
                return true
            }
        }
    }
}
