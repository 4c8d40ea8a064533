#if canImport(Glibc)
import Glibc
#endif
internal import CGLib
internal import CTPM
import Gcrypt
import Locking
import Waiting

/// A TPM key's two blobs as the TPM gave them: its public area and its private area, wrapped
/// (encrypted and integrity-protected) by the TPM under the owner hierarchy's primary key. Neither
/// holds the private key in the clear; only the TPM that made them can load them.
package struct TPMKeyBlob: Sendable, Equatable {
    /// The marshalled TPM2B_PUBLIC.
    package let publicArea: [UInt8]
    /// The marshalled TPM2B_PRIVATE.
    package let privateArea: [UInt8]

    package init(publicArea: [UInt8], privateArea: [UInt8]) {
        self.publicArea = publicArea
        self.privateArea = privateArea
    }
}

/// The TPM 2.0 operations `SecuredKey` needs, through tpm2-tss loaded at run time (CTPM) over the
/// connection ``TPMChoice`` picks. Every call runs on the TPM's own thread (``TPMThread``) and ends
/// by ``timeout``; each opens a connection and closes it afterwards, so a TPM or resource manager
/// that restarted is simply found again. Nothing of tpm2-tss is loaded until a connection was
/// chosen (its device opens, or tpm2-abrmd owns its name).
///
/// Thread-safety: any thread; every call blocks its caller until the TPM answers or ``timeout``.
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

    /// Creates a P-256 decryption key in the TPM under the owner hierarchy's primary key and
    /// returns its blobs. The private key never leaves the TPM in the clear.
    package static func createKey() -> Result<TPMKeyBlob, TPMError> {
        run("create a key in the TPM", create)
    }

    /// ``createKey()``, suspending the caller's task instead of blocking its thread.
    package static func createKey(by deadline: Deadline) async -> Result<TPMKeyBlob, TPMError> {
        await run("create a key in the TPM", by: deadline, create)
    }

    /// The uncompressed public point of the key of `blob`, after the TPM loaded it: fails
    /// (``TPMError/Kind/foreignKey``) when this TPM did not make the blob (another machine's, a
    /// cleared or replaced TPM).
    package static func publicPoint(of blob: TPMKeyBlob) -> Result<[UInt8], TPMError> {
        run("load the key into the TPM") { point(of: blob, $0) }
    }

    /// ``publicPoint(of:)``, suspending the caller's task instead of blocking its thread.
    package static func publicPoint(of blob: TPMKeyBlob, by deadline: Deadline) async -> Result<[UInt8], TPMError> {
        await run("load the key into the TPM", by: deadline) { point(of: blob, $0) }
    }

    /// TPM2_ECDH_ZGen: the x-coordinate of `peer` (uncompressed, 65 bytes) multiplied by the
    /// private key of `blob` inside the TPM, in secret memory. Fails with
    /// ``TPMError/Kind/foreignKey`` when this TPM did not make the blob.
    package static func sharedX(_ blob: TPMKeyBlob, peer: [UInt8]) -> Result<SecretBytes, TPMError> {
        guard peer.count == Int(CTPM_P256_POINT_BYTES) else { return .failure(badPeer(peer)) }
        return run("compute an ECDH secret in the TPM") { zgen(blob, peer, $0) }
    }

    /// ``sharedX(_:peer:)``, suspending the caller's task instead of blocking its thread.
    package static func sharedX(_ blob: TPMKeyBlob, peer: [UInt8], by deadline: Deadline) async -> Result<SecretBytes, TPMError> {
        guard peer.count == Int(CTPM_P256_POINT_BYTES) else { return .failure(badPeer(peer)) }
        return await run("compute an ECDH secret in the TPM", by: deadline) { zgen(blob, peer, $0) }
    }

    // MARK: The commands, on the TPM thread

    @Sendable private static func create(_ connection: OpaquePointer) -> Result<TPMKeyBlob, TPMError> {
        var publicArea = [UInt8](repeating: 0, count: Int(CTPM_BLOB_CAPACITY))
        var privateArea = [UInt8](repeating: 0, count: Int(CTPM_BLOB_CAPACITY))
        var publicLength = 0, privateLength = 0
        let rc = ctpm_create_key(connection, &publicArea, &publicLength, &privateArea, &privateLength)
        guard rc == CTPM_OK else { return .failure(failure("create a key in the TPM", rc)) }
        return .success(TPMKeyBlob(publicArea: Array(publicArea[..<publicLength]), privateArea: Array(privateArea[..<privateLength])))
    }

    private static func point(of blob: TPMKeyBlob, _ connection: OpaquePointer) -> Result<[UInt8], TPMError> {
        var point = [UInt8](repeating: 0, count: Int(CTPM_P256_POINT_BYTES))
        let rc = ctpm_public_point(connection, blob.publicArea, blob.publicArea.count, blob.privateArea, blob.privateArea.count, &point)
        guard rc == CTPM_OK else { return .failure(failure("load the key into the TPM", rc)) }
        return .success(point)
    }

    private static func zgen(_ blob: TPMKeyBlob, _ peer: [UInt8], _ connection: OpaquePointer) -> Result<SecretBytes, TPMError> {
        var rc = CTPM_OK
        let shared = SecretBytes(count: Int(CTPM_P256_COORDINATE_BYTES)) { (buffer: UnsafeMutableRawBufferPointer) in
            rc = ctpm_ecdh_zgen(connection, blob.publicArea, blob.publicArea.count, blob.privateArea, blob.privateArea.count,
                                peer, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard rc == CTPM_OK else { return .failure(failure("compute an ECDH secret in the TPM", rc)) }
        return .success(shared)
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
            withPrivateMainContext { connected(operation, body) }
        }
    }

    /// ``run(_:_:)`` for a caller in Swift concurrency: its task is suspended, not its thread, until
    /// the result, `deadline` or ``timeout`` (whichever comes first), or its cancellation.
    private static func run<Value: Sendable>(
        _ operation: String, by deadline: Deadline, _ body: @escaping @Sendable (OpaquePointer) -> Result<Value, TPMError>
    ) async -> Result<Value, TPMError> {
        await thread.run(operation, deadline: min(deadline, Deadline(timeout: timeout))) {
            withPrivateMainContext { connected(operation, body) }
        }
    }

    /// Runs `body` with a GLib main context of its own as the thread's default, then dispatches
    /// what is left on it and drops it. tpm2-abrmd's TCTI and ``TPMChoice``'s probe use GDBus,
    /// which attaches its sources (a closed connection's signal, a proxy's subscriptions) to the
    /// thread-default context when there is one, and to the application's global default context
    /// otherwise: a GTK app would then run them on its main loop.
    private static func withPrivateMainContext<Value>(_ body: () -> Value) -> Value {
        let context = g_main_context_new()
        g_main_context_push_thread_default(context)
        defer {
            while g_main_context_iteration(context, 0) != 0 {}
            g_main_context_pop_thread_default(context)
            g_main_context_unref(context)
        }
        return body()
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
        TPMError(isForeignKey(rc) ? .foreignKey : .failed, "cannot \(operation): \(describe(rc))")
    }

    /// Whether `rc` is the TPM's TPM_RC_INTEGRITY (format 1, error 0x1F, whatever parameter it
    /// names), as TPM2_Load answers for a private blob its parent (this TPM's storage primary key,
    /// from the owner seed) did not wrap. A response code of the TPM itself has no layer byte.
    package static func isForeignKey(_ rc: UInt32) -> Bool {
        rc & 0xFFFF_F000 == 0 && rc & 0x80 != 0 && rc & 0x3F == 0x1F
    }

    private static func describe(_ rc: UInt32) -> String {
        String(cString: ctpm_describe(rc))
    }
}
