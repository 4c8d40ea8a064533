#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import Gcrypt
import Waiting
import DBusTransport

/// A transport session with one provider process: how secrets travel in the `(oayays)`
/// structure. Negotiated with OpenSession on the client's own connection:
/// `dh-ietf1024-sha256-aes128-cbc-pkcs7` (the Diffie-Hellman exchange and AES-CBC of the Gcrypt module,
/// over CGcrypt's dh_session.c and aes_cbc.c), or `plain` when the provider supports nothing else (it answers
/// NotSupported).
///
/// Threads: any. The key is fixed once the session is open and each encryption or decryption opens
/// its own cipher handle, so calls may run at once.
final class SessionCrypto: Sendable {
    /// nil for a plain session.
    private let key: SessionKey?
    /// `plain`, or `dh-ietf1024-sha256-aes128-cbc-pkcs7`.
    let algorithm: String
    /// The session's object path on the provider.
    let path: ObjectPath

    static let encryptedAlgorithm = "dh-ietf1024-sha256-aes128-cbc-pkcs7"
    static let plainAlgorithm = "plain"

    private init(key: SessionKey?, path: ObjectPath) {
        self.key = key
        self.algorithm = key == nil ? Self.plainAlgorithm : Self.encryptedAlgorithm
        self.path = path
    }

    var isPlain: Bool { key == nil }

    /// Opens a session with `owner` over `bus`: one OpenSession round trip, and a plain one after
    /// it when the provider does not support encryption.
    ///
    /// One exchange in 256 yields a shared secret that starts with a zero byte, which providers
    /// encode in two ways (and then derive another key from, silently); that session is closed and
    /// another opened, so a secret is never sent under a key the provider may not share.
    /// - Throws: the provider's refusal, `.protocolError` for a malformed answer, `.timedOut`,
    ///   `.cancelled`, `.disconnected`.
    static func open(on bus: ProviderBus, owner: String, deadline: Deadline) async throws(SecretServiceError) -> SessionCrypto {
        let operation = "open a session with the keyring"
        if let reason = Libgcrypt.unavailabilityReason { throw .localCrypto(operation, detail: reason) }
        for _ in 0..<4 {
            guard let pair = DHPair() else {
                throw .localCrypto(operation, detail: "libgcrypt could not make a Diffie-Hellman key pair")
            }
            let reply: Reply
            do throws(SecretServiceError) {
                reply = try await openSession(on: bus, owner: owner, Self.encryptedAlgorithm,
                                              .variant(.bytes(pair.publicKeyData)), operation: operation, deadline: deadline)
            } catch where error.dbusErrorName == "org.freedesktop.DBus.Error.NotSupported" {
                let plain = try await openSession(on: bus, owner: owner, Self.plainAlgorithm, .variant(.string("")),
                                                  operation: operation, deadline: deadline)
                return SessionCrypto(key: nil, path: try sessionPath(try plain.body("(vo)", in: operation), operation))
            }
            let body = try reply.body("(vo)", in: operation)
            let path = try sessionPath(body, operation)
            let output = body.child(0).unboxed
            guard output.isOfType("ay") else {
                throw .protocolError(operation, detail: "OpenSession answered \(output.typeString) where the provider's public key (ay) was expected")
            }
            switch pair.derive(peerKey: output) {
            case .derived(let key):
                return SessionCrypto(key: key, path: path)
            case .ambiguous:
                SecretServiceDiagnostics.report(.debug, "The session's shared secret starts with a zero byte, which providers encode differently: opening another")
                close(path, on: bus, owner: owner)
            case .invalidPeerKey:
                throw .protocolError(operation, detail: "the provider's Diffie-Hellman public key is out of range")
            case .failed:
                throw .localCrypto(operation, detail: "libgcrypt could not derive the session key")
            }
        }
        throw .protocolError(operation, detail: "four sessions in a row had a shared secret starting with a zero byte")
    }

    private static func openSession(on bus: ProviderBus, owner: String, _ algorithm: String, _ input: Argument,
                                    operation: String, deadline: Deadline) async throws(SecretServiceError) -> Reply {
        try await bus.call(MethodCall(destination: owner, path: .service, interface: "org.freedesktop.Secret.Service",
                                      member: "OpenSession", arguments: .tuple([.string(algorithm), input])),
                           operation: operation, phase: .openingSession, deadline: deadline)
    }

    /// Closes the session on the provider (not waiting for the answer): a session the client
    /// will not use is never left open.
    func close(on bus: ProviderBus, owner: String) {
        Self.close(path, on: bus, owner: owner)
    }

    private static func close(_ path: ObjectPath, on bus: ProviderBus, owner: String) {
        bus.sendWithoutReply(MethodCall(destination: owner, path: path, interface: "org.freedesktop.Secret.Session", member: "Close"))
    }

    /// The session path of an OpenSession answer's `(vo)` body.
    private static func sessionPath(_ body: Variant, _ operation: String) throws(SecretServiceError) -> ObjectPath {
        let path = body.child(1).string
        guard let checked = try? ObjectPath(path), checked != .none else {
            throw .protocolError(operation, detail: "the session has no valid object path")
        }
        return checked
    }

    /// The `(oayays)` structure that carries `value` in this session (encrypted unless plain).
    /// - Throws: `.providerError` when libgcrypt cannot encrypt (out of secure memory).
    func encode(_ value: SecretValue) throws(SecretServiceError) -> Argument {
        guard let key else {
            return .tuple([.objectPath(path), .bytes(Data()), .bytes(value.bytes), .string(value.contentType)])
        }
        guard let (iv, ciphertext) = key.encrypt(value.bytes) else {
            throw .localCrypto("encrypt the secret for the keyring", detail: "libgcrypt could not encrypt")
        }
        return .tuple([.objectPath(path), .bytes(iv), .bytes(ciphertext), .string(value.contentType)])
    }

    /// The secret carried by a `(oayays)` structure, or nil when it was not sent in this session
    /// or cannot be decrypted with its key.
    func decode(_ structure: Variant) -> SecretValue? {
        guard structure.isOfType("(oayays)"), structure.child(0).string == path.rawValue else { return nil }
        let parameters = structure.child(1), value = structure.child(2)
        let contentType = structure.child(3).string
        guard let key else {
            return value.withBytes { SecretValue(bytes: Data($0), contentType: contentType) }
        }
        return parameters.withBytes { iv in
            value.withBytes { ciphertext in key.decrypt(ciphertext, iv: iv) }
        }.map { SecretValue(bytes: $0, contentType: contentType) }
    }
}

extension SecretServiceError {
    /// libgcrypt failed in this process (not the provider's doing).
    static func localCrypto(_ operation: String, detail: String) -> SecretServiceError {
        SecretServiceError(.providerError, operation: operation,
                           message: "The keyring session's encryption failed in this process.",
                           recovery: "Try again; if it keeps failing, check that libgcrypt works in this process.",
                           detail: detail)
    }
}
