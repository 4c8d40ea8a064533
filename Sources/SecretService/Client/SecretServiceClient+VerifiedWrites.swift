#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Waiting
import DBusTransport

// Writes that are read back where a provider can store something else than what was sent
// (ProviderQuirks.verifiesWrites): the one place that checks them and writes them again, with
// the CreateItem they start from and the removal of an item created that never read back.

extension SecretServiceClient {
    /// A write of `value` to one item, made by `write` through `crypto` (the session's transport);
    /// on a provider whose writes a mis-keyed session corrupts (``ProviderQuirks/verifiesWrites(_:)``)
    /// read back through the same transport and compared in constant time. A write that does not
    /// read back, or that the provider refused for its session while it is still the same provider
    /// process, is made again after that transport is discarded (closed, another negotiated), up
    /// to ``ProviderQuirks/verifiedWriteAttempts`` in all, within `deadline`.
    ///
    /// Elsewhere (GNOME Keyring, KeePassXC) this is `write(crypto, nil)` and nothing more.
    /// - Parameter write: writes with the transport given; `written` is the item an earlier attempt
    ///   wrote (nil at first), so that once an item exists its secret is written again rather than
    ///   a second item created. Returns the item written and the change token of the answer.
    /// - Throws: `.writeNotVerified` when no attempt read back; what `write` and the read-back
    ///   throw otherwise.
    func writeVerified(_ value: SecretValue, starting crypto: SessionCrypto, _ session: ProviderSession, _ deadline: Deadline,
                       operation: String,
                       _ write: (SessionCrypto, _ written: ItemPath?) async throws(SecretServiceError) -> (path: ItemPath, token: ChangeToken)
    ) async throws(SecretServiceError) -> (path: ItemPath, token: ChangeToken) {
        guard ProviderQuirks.verifiesWrites(session.kind) else { return try await write(crypto, nil) }
        let attempts = ProviderQuirks.verifiedWriteAttempts
        var crypto = crypto
        var written: ItemPath?
        for attempt in 1...attempts {
            do throws(SecretServiceError) {
                if attempt > 1 { crypto = try await transport(session, deadline, operation: operation) }
                let result = try await write(crypto, written)
                written = result.path
                if try await readsBack(value, from: result.path, crypto, session, deadline, operation: operation) { return result }
                SecretServiceDiagnostics.report(.warning, "\(operation): \(result.path) did not read back what was written (as when the "
                    + "provider's session key is not ours: a KWallet quirk); attempt \(attempt) of \(attempts), writing again on a new session")
            } catch where error.code == .disconnected && session.isCurrent {
                // KWallet refuses a write it cannot decrypt as "Can't find session" while the
                // session lives on (a refused CreateItem leaves an item with an empty secret
                // behind, whose path it does not tell: it is left alone).
                SecretServiceDiagnostics.report(.warning, "\(operation): the provider refused the write for its session (\(error.detail ?? error.message)); "
                    + "attempt \(attempt) of \(attempts), writing again on a new session"
                    + (written == nil ? " (KWallet may have left an item with an empty secret)" : ""))
            }
            session.discardTransport(crypto)
        }
        throw .writeNotVerified(operation, path: written, attempts: attempts)
    }

    /// Deletes the item this call created whose secret never read back (it holds garbage, or
    /// nothing): best effort, the caller throws `.writeNotVerified` either way. A prompt is not
    /// run (dismissed): the error stands.
    func deleteUnverified(_ item: ItemPath, _ session: ProviderSession, _ deadline: Deadline, operation: String) async {
        do throws(SecretServiceError) {
            let reply = try await session.call(item.objectPath, "org.freedesktop.Secret.Item", "Delete",
                                               operation: operation, deadline: deadline)
            let prompt = ObjectPath(trusted: try reply.body("(o)", in: operation).child(0).string)
            if prompt != .none { Prompts.dismiss(prompt, .other, in: session) }
            SecretServiceDiagnostics.report(.warning, "\(operation): deleted \(item), which this call created and whose secret never read back")
        } catch {
            SecretServiceDiagnostics.report(.warning, "\(operation): could not delete \(item), which this call created and whose secret "
                + "never read back: \(error.code) (\(error.message))")
        }
    }

    /// One CreateItem (and its prompt, if the provider shows one): the item created and the
    /// change token of the answer.
    func createOnce(in collectionPath: ObjectPath, _ properties: [String: Argument], _ secret: SecretValue,
                            _ crypto: SessionCrypto, replacing: Bool, _ session: ProviderSession, _ deadline: Deadline,
                            operation: String) async throws(SecretServiceError) -> (path: ItemPath, token: ChangeToken) {
        let reply = try await session.call(
            collectionPath, "org.freedesktop.Secret.Collection", "CreateItem",
            .tuple([.properties(properties), try crypto.encode(secret), .boolean(replacing)]),
            operation: operation, deadline: deadline)
        let body = try reply.body("(oo)", in: operation)
        var itemPath = body.child(0).string
        var token = reply.token
        let prompt = ObjectPath(trusted: body.child(1).string)
        if prompt != .none {
            itemPath = try await promptIfAllowed(prompt, resultType: "o", session, deadline, operation: operation, refusal:
                .locked(operation, promptsAllowed: false, detail: "creating an item in \(collectionPath) needs a prompt"))?.string ?? "/"
            token = session.bus.token
        }
        guard let created = try? ItemPath(itemPath) else {
            throw .protocolError(operation, detail: "CreateItem returned \(itemPath)")
        }
        return (created, token)
    }

    /// Whether `path` holds `value`'s bytes, read through `crypto`.
    ///
    /// Another process may write the item between our write and the read (last writer wins):
    /// then the answer decrypts, under our key, to its value. Through a mis-keyed session the
    /// answer is encrypted under the provider's other key and decrypts (unpads) 1 time in 256, to
    /// garbage. So an answer that decrypts to another value is asked for once more (a fresh IV):
    /// when that decrypts too, the key is shared (1 in 65,536 otherwise), our write was stored
    /// and then replaced, and it is not written again over the newer value. Copies read are wiped.
    private func readsBack(_ value: SecretValue, from path: ItemPath, _ crypto: SessionCrypto, _ session: ProviderSession,
                           _ deadline: Deadline, operation: String) async throws(SecretServiceError) -> Bool {
        func read() async throws(SecretServiceError) -> Bool? {
            let reply = try await session.call(path.objectPath, "org.freedesktop.Secret.Item", "GetSecret",
                                               .tuple([.objectPath(crypto.path)]), operation: operation, deadline: deadline)
            guard var stored = crypto.decode(try reply.body("((oayays))", in: operation).child(0)) else { return nil }
            defer { stored.bytes.resetBytes(in: stored.bytes.startIndex..<stored.bytes.endIndex) }
            return Self.constantTimeEquals(stored.bytes, value.bytes)
        }
        switch try await read() {
        case true?: return true
        case nil: return false
        case false?:
            guard try await read() != nil else { return false }
            SecretServiceDiagnostics.report(.info, "\(operation): \(path) was written over by another client right after this write "
                + "(read back through this session: another value); not written again")
            return true
        }
    }

    /// Whether `a` and `b` hold the same bytes, in a time that depends only on their lengths (no
    /// early exit at the first difference).
    static func constantTimeEquals(_ a: Data, _ b: Data) -> Bool {
        guard a.count == b.count else { return false }
        let difference = a.withUnsafeBytes { (left: UnsafeRawBufferPointer) -> UInt8 in
            b.withUnsafeBytes { (right: UnsafeRawBufferPointer) -> UInt8 in
                var difference: UInt8 = 0
                for index in 0..<left.count { difference |= left[index] ^ right[index] }
                return difference
            }
        }
        return difference == 0
    }
}

extension SecretServiceError {
    /// A written secret did not read back as written, `attempts` times, each on a new session.
    static func writeNotVerified(_ operation: String, path: ItemPath?, attempts: Int) -> SecretServiceError {
        SecretServiceError(.writeNotVerified, operation: operation,
                           message: "The keyring did not store the secret as it was sent: it stored something else, or refused it, "
                               + "\(attempts) times in a row, each through a new session.",
                           recovery: "Try again; if it keeps failing, restart the keyring service (for KWallet, kwalletd).",
                           detail: path.map { "\($0) did not read back what was written, or the write was refused for its session" }
                               ?? "every write was refused for its session")
    }
}
