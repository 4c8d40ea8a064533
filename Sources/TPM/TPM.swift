#if canImport(Glibc)
import Glibc
#endif
internal import DBusTransport
internal import CTPM
import Gcrypt
import Locking
import Waiting

/// A TPM key's two blobs as the TPM gave them: its public area and its private area, wrapped
/// (encrypted and integrity-protected) by the TPM under the owner hierarchy's primary key. Neither
/// holds the private key in the clear; only the TPM that made them can load them.
///
/// With them, the name of that primary key as it was when the key was made (or first used): the
/// pin. A primary's name is the digest of its public area, which depends on the TPM's owner seed,
/// so it cannot be checked against the template, only against what was seen before; every command
/// refuses a primary of another name before it salts a session to it (something answering in the
/// TPM's place would otherwise get the session key, and with it the ECDH secret).
package struct TPMKeyBlob: Sendable, Equatable {
    /// The marshalled TPM2B_PUBLIC.
    package let publicArea: [UInt8]
    /// The marshalled TPM2B_PRIVATE.
    package let privateArea: [UInt8]
    /// The parent's name (TPM2B_NAME's bytes) pinned with the key; nil for a key made by 2.0.0,
    /// which pinned none (its first use learns it: ``TPMKeyUse/parentName``).
    package let parentName: [UInt8]?

    package init(publicArea: [UInt8], privateArea: [UInt8], parentName: [UInt8]? = nil) {
        self.publicArea = publicArea
        self.privateArea = privateArea
        self.parentName = parentName
    }

    /// The same blobs with `name` pinned.
    package func pinned(to name: [UInt8]) -> TPMKeyBlob {
        TPMKeyBlob(publicArea: publicArea, privateArea: privateArea, parentName: name)
    }
}

/// What a command with a key gave, and the name of the parent the key was loaded under: the pinned
/// one, or, for a key without a pin, the one this TPM answered with (for the caller to pin).
package struct TPMKeyUse<Value: Sendable>: Sendable {
    package let value: Value
    package let parentName: [UInt8]
}

/// The TPM 2.0 operations `SecuredKey` needs, through tpm2-tss loaded at run time (CTPM) over the
/// connection ``TPMChoice`` picks. Every call runs on the TPM's own thread (``TPMThread``) and ends
/// by ``timeout``; each opens a connection and closes it afterwards, so a TPM or resource manager
/// that restarted is simply found again. Nothing of tpm2-tss is loaded until a connection was
/// chosen (its device opens, or tpm2-abrmd owns its name).
///
/// Thread-safety: any thread. The synchronous calls (SecuredKey's, whose API is synchronous as
/// iOS's is) block their caller until the TPM answers or ``timeout``; the async ones (`by:` a
/// deadline) suspend their caller instead, never blocking one of Swift's cooperative threads.
package enum TPM {
    private static let thread = TPMThread()
    private static let deadline = Locked<Duration>(.seconds(10))

    /// How long a caller waits for one TPM operation (connecting included); 10 s by default.
    package static var timeout: Duration {
        get { deadline.withLock { $0 } }
        set { deadline.withLock { $0 = newValue } }
    }

    /// The connection `PINGSTORAGE_TPM_TCTI` and this machine give (see ``TPMChoice``).
    package static func currentChoice() -> TPMChoice {
        TPMChoice.resolve(getenv(TPMChoice.environmentVariable).map { String(cString: $0) })
    }

    /// Whether a TPM answers (TPM2_GetRandom) on the chosen connection, within ``timeout``.
    package static func isAvailable() -> Bool {
        if case .success = run("reach the TPM", { _ in .success(()) }) { return true }
        return false
    }

    /// ``isAvailable()`` without blocking a thread: the caller's task waits, by `deadline` at most.
    package static func isAvailable(by deadline: Deadline) async -> Bool {
        if case .success = await reach(by: deadline) { return true }
        return false
    }

    /// Whether a TPM answers, and if not why (no connection, and which was tried; no answer).
    package static func reach(by deadline: Deadline) async -> Result<Void, TPMError> {
        await run("reach the TPM", by: deadline, { _ in .success(()) })
    }

    /// Whether keys can be bound to the TPM: it answers, and its owner hierarchy has no password
    /// (the primary key is made with the empty one). One more command than ``reach(by:)``.
    package static func bindingProblem(by deadline: Deadline) async -> TPMError? {
        let result = await run("bind a key to the TPM", by: deadline) { connection -> Result<Void, TPMError> in
            var set: Int32 = 0
            let rc = ctpm_owner_auth_set(connection, &set)
            guard rc == CTPM_OK else { return .failure(failure("bind a key to the TPM", rc)) }
            return set == 0 ? .success(()) : .failure(failure("bind a key to the TPM", CTPM_ERROR_OWNER_AUTH))
        }
        if case .failure(let error) = result { return error }
        return nil
    }

    /// Creates a P-256 decryption key in the TPM under the owner hierarchy's primary key and
    /// returns its blobs, with the primary's name pinned. The private key never leaves the TPM in
    /// the clear; the command runs in a session salted to the primary, its parameters encrypted.
    package static func createKey() -> Result<TPMKeyBlob, TPMError> {
        run("create a key in the TPM", create)
    }

    /// ``createKey()``, suspending the caller's task instead of blocking its thread.
    package static func createKey(by deadline: Deadline) async -> Result<TPMKeyBlob, TPMError> {
        await run("create a key in the TPM", by: deadline, create)
    }

    /// The uncompressed public point of the key of `blob`, after the TPM loaded it: fails
    /// (``TPMError/Kind/foreignKey``) when this TPM did not make the blob (another machine's, a
    /// cleared or replaced TPM), or when its primary key is not the one pinned with the blob
    /// (then nothing is loaded).
    package static func publicPoint(of blob: TPMKeyBlob) -> Result<TPMKeyUse<[UInt8]>, TPMError> {
        run("load the key into the TPM") { point(of: blob, $0) }
    }

    /// ``publicPoint(of:)``, suspending the caller's task instead of blocking its thread.
    package static func publicPoint(of blob: TPMKeyBlob, by deadline: Deadline) async -> Result<TPMKeyUse<[UInt8]>, TPMError> {
        await run("load the key into the TPM", by: deadline) { point(of: blob, $0) }
    }

    /// TPM2_ECDH_ZGen: the x-coordinate of `peer` (uncompressed, 65 bytes) multiplied by the
    /// private key of `blob` inside the TPM, in secret memory; it crosses the bus encrypted. Fails
    /// with ``TPMError/Kind/foreignKey`` as ``publicPoint(of:)`` does.
    package static func sharedX(_ blob: TPMKeyBlob, peer: [UInt8]) -> Result<TPMKeyUse<SecretBytes>, TPMError> {
        guard peer.count == Int(CTPM_P256_POINT_BYTES) else { return .failure(badPeer(peer)) }
        return run("compute an ECDH secret in the TPM") { zgen(blob, peer, $0) }
    }

    /// ``sharedX(_:peer:)``, suspending the caller's task instead of blocking its thread.
    package static func sharedX(_ blob: TPMKeyBlob, peer: [UInt8], by deadline: Deadline) async -> Result<TPMKeyUse<SecretBytes>, TPMError> {
        guard peer.count == Int(CTPM_P256_POINT_BYTES) else { return .failure(badPeer(peer)) }
        return await run("compute an ECDH secret in the TPM", by: deadline) { zgen(blob, peer, $0) }
    }

    // MARK: The commands, on the TPM thread

    @Sendable private static func create(_ connection: OpaquePointer) -> Result<TPMKeyBlob, TPMError> {
        var publicArea = [UInt8](repeating: 0, count: Int(CTPM_BLOB_CAPACITY))
        var privateArea = [UInt8](repeating: 0, count: Int(CTPM_BLOB_CAPACITY))
        var parent = [UInt8](repeating: 0, count: Int(CTPM_NAME_CAPACITY))
        var publicLength = 0, privateLength = 0, parentLength = 0
        let rc = ctpm_create_key(connection, &publicArea, &publicLength, &privateArea, &privateLength, &parent, &parentLength)
        guard rc == CTPM_OK else { return .failure(failure("create a key in the TPM", rc)) }
        return .success(TPMKeyBlob(publicArea: Array(publicArea[..<publicLength]), privateArea: Array(privateArea[..<privateLength]),
                                   parentName: Array(parent[..<parentLength])))
    }

    private static func point(of blob: TPMKeyBlob, _ connection: OpaquePointer) -> Result<TPMKeyUse<[UInt8]>, TPMError> {
        var point = [UInt8](repeating: 0, count: Int(CTPM_P256_POINT_BYTES))
        var parent = [UInt8](repeating: 0, count: Int(CTPM_NAME_CAPACITY))
        var parentLength = 0
        let pinned = blob.parentName ?? []
        let rc = ctpm_public_point(connection, blob.publicArea, blob.publicArea.count, blob.privateArea, blob.privateArea.count,
                                   pinned, pinned.count, &point, &parent, &parentLength)
        guard rc == CTPM_OK else { return .failure(failure("load the key into the TPM", rc)) }
        return .success(TPMKeyUse(value: point, parentName: Array(parent[..<parentLength])))
    }

    private static func zgen(_ blob: TPMKeyBlob, _ peer: [UInt8], _ connection: OpaquePointer) -> Result<TPMKeyUse<SecretBytes>, TPMError> {
        var rc = CTPM_OK
        var parent = [UInt8](repeating: 0, count: Int(CTPM_NAME_CAPACITY))
        var parentLength = 0
        let pinned = blob.parentName ?? []
        let shared = SecretBytes(count: Int(CTPM_P256_COORDINATE_BYTES)) { (buffer: UnsafeMutableRawBufferPointer) in
            rc = ctpm_ecdh_zgen(connection, blob.publicArea, blob.publicArea.count, blob.privateArea, blob.privateArea.count,
                                pinned, pinned.count, peer, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), &parent, &parentLength)
        }
        guard rc == CTPM_OK else { return .failure(failure("compute an ECDH secret in the TPM", rc)) }
        return .success(TPMKeyUse(value: shared, parentName: Array(parent[..<parentLength])))
    }

    private static func badPeer(_ peer: [UInt8]) -> TPMError {
        TPMError(.failed, "an ECDH point must be \(CTPM_P256_POINT_BYTES) bytes, not \(peer.count)")
    }

    /// Chooses the connection, loads tpm2-tss for it (once), opens it, checks that the TPM answers,
    /// runs `body` and closes the connection: all on the TPM thread, by ``timeout``.
    private static func run<Value: Sendable>(
        _ operation: String, _ body: @escaping @Sendable (OpaquePointer) -> Result<Value, TPMError>
    ) -> Result<Value, TPMError> {
        thread.run(operation, timeout: timeout) {
            BlockingBus.withPrivateMainContext { connected(operation, body) }
        }
    }

    /// ``run(_:_:)`` for a caller in Swift concurrency: its task is suspended, not its thread, until
    /// the result, `deadline` or ``timeout`` (whichever comes first), or its cancellation.
    private static func run<Value: Sendable>(
        _ operation: String, by deadline: Deadline, _ body: @escaping @Sendable (OpaquePointer) -> Result<Value, TPMError>
    ) async -> Result<Value, TPMError> {
        await thread.run(operation, deadline: min(deadline, Deadline(timeout: timeout))) {
            BlockingBus.withPrivateMainContext { connected(operation, body) }
        }
    }

    /// The body of ``run(_:_:)``, on the TPM thread.
    private static func connected<Value: Sendable>(
        _ operation: String, _ body: @Sendable (OpaquePointer) -> Result<Value, TPMError>
    ) -> Result<Value, TPMError> {
        let choice = currentChoice()
        guard let library = choice.library else {
            if case .none(let reason) = choice { return .failure(TPMError(.unavailable, "cannot \(operation): \(reason)")) }
            return .failure(TPMError(.unavailable, "cannot \(operation): no TPM"))
        }
        var message = [CChar](repeating: 0, count: 512)
        guard ctpm_load(library, &message, message.count) == CTPM_OK else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(TPMError(.unavailable, "cannot \(operation): tpm2-tss cannot be loaded (\(text)); install libtss2-esys-3.0.2-0 "
                                     + "and the TCTI library \(library)"))
        }
        var connection: OpaquePointer?
        let rc = ctpm_open(library, choice.configuration, &connection)
        guard rc == CTPM_OK, let connection else {
            return .failure(TPMError(.unavailable, "cannot \(operation): no connection to the TPM through \(library) "
                                     + "(\(choice.configuration)): \(describe(rc))"))
        }
        defer { ctpm_close(connection) }
        let ping = ctpm_ping(connection)
        guard ping == CTPM_OK else { return .failure(TPMError(.unavailable, "cannot \(operation): the TPM does not answer: \(describe(ping))")) }
        return body(connection)
    }

    private static func failure(_ operation: String, _ rc: UInt32) -> TPMError {
        switch rc {
        case CTPM_ERROR_PARENT_MISMATCH:
            return TPMError(.foreignKey, "cannot \(operation): the TPM's storage primary key is not the one the key was bound "
                            + "under (its name differs from the name pinned with the key): the TPM was cleared or replaced, the key "
                            + "comes from another machine, or something between this machine and its TPM answers in its place. "
                            + "The key was not used")
        case CTPM_ERROR_OWNER_AUTH:
            return TPMError(.unavailable, "cannot \(operation): the TPM's owner hierarchy has a password, and keys are bound under "
                            + "its storage primary key, which this library makes with the empty password, so keys stay unbound. "
                            + "To bind them, remove the password (tpm2_changeauth -c owner -p OLD-PASSWORD, with no new one); "
                            + "to stop trying, set keyBinding to none")
        default:
            return TPMError(isForeignKey(rc) ? .foreignKey : .failed, "cannot \(operation): \(describe(rc))")
        }
    }

    /// Whether `rc` is the TPM's TPM_RC_INTEGRITY (format 1, error 0x1F, whatever parameter it
    /// names), as TPM2_Load answers for a private blob its parent (this TPM's storage primary key,
    /// from the owner seed) did not wrap, or the shim's refusal of a primary of another name than
    /// the pinned one (``TPMKeyBlob/parentName``). A response code of the TPM itself has no layer byte.
    package static func isForeignKey(_ rc: UInt32) -> Bool {
        rc == CTPM_ERROR_PARENT_MISMATCH || (rc & 0xFFFF_F000 == 0 && rc & 0x80 != 0 && rc & 0x3F == 0x1F)
    }

    private static func describe(_ rc: UInt32) -> String {
        String(cString: ctpm_describe(rc))
    }
}
