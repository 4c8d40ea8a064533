internal import CLibSecret
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A transport session with one provider process, negotiated by libsecret: the one thing
/// SecretService asks libsecret to do. OpenSession (with libsecret's DH key exchange) goes out on
/// the client's own connection, through a proxy of CLibSecret's `clibsecret_session_open`; after
/// that, secrets are encrypted and decrypted with libsecret's
/// `secret_service_encode_dbus_secret` / `secret_service_decode_dbus_secret`.
///
/// Threads: the session is opened, and its `SecretService` released, on the loop thread. Encoding
/// and decoding run on the caller's thread: both only read the session (its key and algorithm,
/// fixed once it is open) after taking the service's own mutex (`_secret_service_get_session`),
/// and each uses a libgcrypt cipher handle of its own.
final class SessionCrypto: Sendable {
    private let service: GObjectOwner
    /// `plain`, or `dh-ietf1024-sha256-aes128-cbc-pkcs7`.
    let algorithm: String
    /// The session's object path on the provider.
    let path: ObjectPath

    private init(service: GObjectOwner, algorithm: String, path: ObjectPath) {
        self.service = service
        self.algorithm = algorithm
        self.path = path
    }

    var isPlain: Bool { algorithm == "plain" }

    /// Opens a session with `owner` over `bus`: one OpenSession round trip.
    /// - Throws: the provider's refusal, `.timedOut`, `.cancelled`, `.disconnected`.
    static func open(on bus: BusConnection, owner: String, deadline: Deadline) async throws(SecretServiceError) -> SessionCrypto {
        let operation = "open a session with the keyring"
        let cancellable = GObjectOwner(adopting: g_cancellable_new())
        let opened = OneShot<SessionCrypto>(operation: operation, deadline: deadline)
        // Deadline and cancellation end the wait on the loop thread; libsecret's own cancel
        // handlers then run there too.
        opened.onEnd { result in
            if case .failure = result { g_cancellable_cancel(cancellable.typed(GCancellable.self)) }
        }
        let connection = LoopBound(bus.gdbus)
        return try await opened.value { opened in
            LoopThread.shared.perform {
                clibsecret_session_open(connection.value.opaque, owner, cancellable.typed(GCancellable.self), AsyncCallback.trampoline,
                                        AsyncCallback.userData { result in
                    var error: UnsafeMutablePointer<GError>?
                    guard let service = clibsecret_session_open_finish(result, &error) else {
                        let captured = error.map(takeGError)
                            ?? CapturedError(domain: .other, code: 0, message: "no session and no error", remoteName: nil, domainName: "")
                        opened.finish(.failure(.translating(captured, operation: operation, phase: .openingSession)))
                        return
                    }
                    let owner = GObjectOwner(adopting: service)
                    let algorithm = secret_service_get_session_algorithms(service).map { String(cString: $0) } ?? "plain"
                    guard let rawPath = secret_service_get_session_dbus_path(service),
                          let path = try? ObjectPath(String(cString: rawPath)) else {
                        opened.finish(.failure(.protocolError(operation, detail: "the session has no valid object path")))
                        return
                    }
                    opened.finish(.success(SessionCrypto(service: owner, algorithm: algorithm, path: path)))
                })
            }
        }
    }

    /// The `(oayays)` structure that carries `value` in this session (encrypted unless plain).
    /// From any thread.
    func encode(_ value: SecretValue) -> Variant {
        let secret = value.bytes.withUnsafeBytes { buffer in
            // secret_value_new copies into libsecret's non-pageable memory, wiped when freed.
            let base = buffer.baseAddress?.assumingMemoryBound(to: gchar.self)
            return "".withCString { empty in secret_value_new(base ?? empty, gssize(buffer.count), value.contentType)! }
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(secret)) }
        return Variant(retaining: secret_service_encode_dbus_secret(service.typed(SecretService.self), secret))
    }

    /// The secret carried by a `(oayays)` structure, or nil when it cannot be decrypted with this
    /// session's key. From any thread.
    func decode(_ structure: Variant) -> SecretValue? {
        guard let decoded = secret_service_decode_dbus_secret(service.typed(SecretService.self), structure.pointer) else {
            return nil
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(decoded)) }
        var length: gsize = 0
        let bytes = secret_value_get(decoded, &length)
        let contentType = secret_value_get_content_type(decoded).map { String(cString: $0) } ?? ""
        return SecretValue(bytes: bytes.map { Data(bytes: $0, count: Int(length)) } ?? Data(), contentType: contentType)
    }
}
