import Waiting
#if canImport(Glibc)
import Glibc
#endif
import DBusTransport

/// The Secret portal of a sandbox (`org.freedesktop.portal.Secret`), which hands a sandboxed app
/// the master secret of its own file keyring, the way libsecret and oo7 use it inside Flatpak.
extension SecretServiceClient {
    /// The app's master secret from the Secret portal (`RetrieveSecret`): the same bytes every time
    /// for the same app, which the portal's backend (GNOME Keyring's, for one) keeps in the user's
    /// keyring. Only meaningful inside a sandbox: the portal knows the app by its sandbox.
    ///
    /// The response is awaited before the request is made (a Response that comes at once is not
    /// lost), only from the portal process, and the secret is read from a pipe on the library's
    /// thread until the portal closes it. Wipe the bytes once used.
    /// - Throws: `.noSecretService` when there is no portal, or it has no Secret backend
    ///   (the message says so); `.promptDismissed` when the portal's request was cancelled;
    ///   `.timedOut`, `.cancelled`, `.noSessionBus`.
    public func portalSecret() async throws(SecretServiceError) -> [UInt8] {
        let operation = "get the app's secret from the Secret portal"
        let deadline = callDeadline()
        let bus = try await link.busConnection(deadline: deadline)
        let portal = try await portalOwner(bus, operation, deadline)
        let token = "secretservice_\(UInt64.random(in: 0...UInt64.max))"
        let sender = String(bus.uniqueName.dropFirst().map { $0 == "." ? "_" : $0 })
        let request = try ObjectPath(checking: "/org/freedesktop/portal/desktop/request/\(sender)/\(token)")
        // Routed to us only with a match rule; sent before the call, so it is in place first.
        bus.connection.addMatch(
            "type='signal',sender='\(portal)',interface='org.freedesktop.portal.Request',member='Response',path='\(request)'")

        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw .providerError(operation, detail: "pipe failed: errno \(errno)", dbusErrorName: nil)
        }
        // The reading end never blocks the loop; neither end leaks into a child process.
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        let secret = PipeReader(descriptor: ends[0], operation: operation, deadline: deadline)
        let response = OneShot<Variant, SecretServiceError>(operation: operation, deadline: deadline)
        _ = bus.awaitSignal("Response", of: "org.freedesktop.portal.Request", on: request, from: portal, fromProvider: false,
                            operation: operation, deliver: { response.finish($0) })
        response.onEnd { _ in bus.stopAwaiting(on: request) }
        var call = MethodCall(destination: portal, path: ObjectPath(trusted: "/org/freedesktop/portal/desktop"),
                              interface: "org.freedesktop.portal.Secret", member: "RetrieveSecret",
                              arguments: .tuple([.handle(0), .properties(["handle_token": .string(token)])]))
        call.fileDescriptors = [ends[1]]
        let reply: Reply
        do throws(SecretServiceError) {
            defer { close(ends[1]) }  // the message keeps its own copy; EOF comes when the portal closes its
            reply = try await bus.call(call, operation: operation, deadline: deadline)
        } catch {
            response.finish(.failure(error))
            secret.cancel()
            // No such method or object: the portal runs, without the Secret interface.
            throw error.code == .itemNotFound || error.code == .providerError
                ? Self.noSecretPortal(operation, detail: error.detail, portalRuns: true) : error
        }
        let handle = try reply.body("(o)", in: operation).child(0).string
        guard handle == request.rawValue else {
            secret.cancel()
            throw .protocolError(operation, detail: "the portal answered with request \(handle), not \(request)")
        }
        let answer: Variant
        do throws(SecretServiceError) {
            answer = try await response.value().checked("(ua{sv})", in: operation)
        } catch {
            secret.cancel()
            throw error
        }
        switch answer.child(0).uint32 {
        case 0:
            return try await secret.bytes()
        case 1:
            secret.cancel()
            throw .promptDismissed(operation, detail: "the portal's request was cancelled")
        default:
            secret.cancel()
            throw Self.noSecretPortal(operation, detail: "the portal ended the request without a secret (response \(answer.child(0).uint32))",
                                      portalRuns: true)
        }
    }

    /// The portal process's unique name, starting it when the bus can.
    private func portalOwner(_ bus: ProviderBus, _ operation: String, _ deadline: Deadline) async throws(SecretServiceError) -> String {
        do {
            return try await bus.owner(of: "org.freedesktop.portal.Desktop", operation: operation, deadline: deadline)
        } catch where error.code == .noSecretService {
            throw Self.noSecretPortal(operation, detail: error.detail)
        }
    }

    static func noSecretPortal(_ operation: String, detail: String?, portalRuns: Bool = false) -> SecretServiceError {
        SecretServiceError(
            .noSecretService, operation: operation,
            message: portalRuns
                ? "The sandbox's Secret portal cannot give the app a secret: no Secret backend answers it."
                : "The sandbox has no Secret portal to keep the app's secrets with.",
            recovery: "Install xdg-desktop-portal with a Secret backend (GNOME Keyring provides one), or let the app "
                + "reach the keyring directly (Flatpak: --talk-name=org.freedesktop.secrets).",
            detail: detail)
    }
}

/// Reads a pipe to its end on the loop thread, into memory that is wiped unless handed over.
final class PipeReader: Sendable {
    private let done: OneShot<[UInt8], SecretServiceError>
    private let watch: WatchHandle

    init(descriptor: Int32, operation: String, deadline: Deadline) {
        let done = OneShot<[UInt8], SecretServiceError>(operation: operation, deadline: deadline)
        let collected = LoopBound(Collected())
        watch = LoopThread.shared.watch(readable: descriptor) {
            var chunk = [UInt8](repeating: 0, count: 4096)
            defer { explicit_bzero(&chunk, chunk.count) }
            while true {
                let count = read(descriptor, &chunk, chunk.count)
                if count > 0 {
                    guard collected.value.bytes.count + count <= Collected.limit else {
                        done.finish(.failure(.protocolError(operation, detail: "the portal sent more than \(Collected.limit) bytes")))
                        return false
                    }
                    collected.value.bytes.append(contentsOf: chunk[0..<count])
                    continue
                }
                if count < 0, errno == EAGAIN { return true }
                if count < 0, errno == EINTR { continue }
                // End of the pipe (or an error): hand the bytes over, or drop them wiped.
                let bytes = collected.value.take()
                if count < 0 {
                    var dropped = bytes
                    explicit_bzero(&dropped, dropped.count)
                    done.finish(.failure(.providerError(operation, detail: "reading the secret failed: errno \(errno)", dbusErrorName: nil)))
                } else if !done.finish(.success(bytes)) {
                    var dropped = bytes
                    explicit_bzero(&dropped, dropped.count)
                }
                return false
            }
        }
        let watch = watch
        done.onEnd { _ in
            watch.cancel()
            close(descriptor)
        }
        self.done = done
    }

    /// The bytes, once the writer closed the pipe.
    func bytes() async throws(SecretServiceError) -> [UInt8] { try await done.value() }

    func cancel() { LoopThread.shared.perform { [done] in done.finish(.failure(.cancelled(done.operation))) } }

    /// What was read so far; touched on the loop thread only.
    final class Collected {
        /// A master secret is tens of bytes; the room is reserved once so that appending never
        /// leaves an unwiped copy behind in a reallocation.
        static let limit = 16 * 1024
        var bytes: [UInt8] = []
        init() { bytes.reserveCapacity(Self.limit) }
        func take() -> [UInt8] { defer { bytes = [] }; return bytes }
        deinit { explicit_bzero(&bytes, bytes.count) }
    }
}
