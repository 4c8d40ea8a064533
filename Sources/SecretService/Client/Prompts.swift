import Waiting
import DBusTransport
/// Runs Secret Service prompts: the one place a prompt is shown, waited for and dismissed.
///
/// The client listens for `Completed` before it calls `Prompt` (no race with a prompt that
/// completes at once), believes `Completed` only from the provider it talks to, checks the
/// result's type (libsecret 0.20.5 waits forever on a wrong one), and dismisses the prompt when
/// its caller gives up (deadline or Task cancellation; both end on the loop thread, where the
/// `Dismiss` is sent).
enum Prompts {
    /// Shows the prompt at `path` and returns its result, which must have `resultType`; `path` `/`
    /// means no prompt (returns nil).
    /// - Throws: `.promptDismissed`, `.protocolError` for a result of another type, `.timedOut`,
    ///   `.cancelled`, `.disconnected` (the provider went away meanwhile).
    static func run(_ path: ObjectPath, resultType: StaticString, in session: ProviderSession, operation: String,
                    deadline: Deadline) async throws(SecretServiceError) -> Variant? {
        guard path != .none else { return nil }
        SecretServiceDiagnostics.report(.info, "\(operation): the keyring service shows a prompt (\(path))")
        let started = ContinuousClock.now
        let bus = session.bus
        let waiter = OneShot<Variant, SecretServiceError>(operation: operation, deadline: deadline)
        let completed: Variant
        do throws(SecretServiceError) {
            completed = try await waiter.value { waiter in
                guard bus.awaitSignal("Completed", of: "org.freedesktop.Secret.Prompt", on: path, from: session.owner, fromProvider: true,
                                      operation: operation, deliver: { waiter.finish($0) }) else {
                    waiter.finish(.failure(.disconnected(operation, detail: "the keyring service changed before its prompt ran")))
                    return
                }
                let serial = session.bus.send(
                    MethodCall(destination: session.owner, path: path, interface: "org.freedesktop.Secret.Prompt",
                               member: "Prompt", arguments: .tuple([.string("")])),
                    operation: operation, phase: .call
                ) { reply in
                    if case .failure(let error) = reply { waiter.finish(.failure(error)) }
                }
                waiter.onEnd { result in
                    bus.stopAwaiting(on: path)
                    if let serial { bus.forget(serial: serial) }
                    guard case .failure(let error) = result, error.code == .timedOut || error.code == .cancelled else { return }
                    LoopThread.shared.assertCurrent("deadlines and cancellations end on the loop thread")
                    SecretServiceDiagnostics.report(.warning, "\(operation): the prompt was not answered (\(error.code)); dismissing it")
                    dismiss(path, in: session)
                }
            }
        } catch where error.code == .timedOut {
            throw error.with(detail: "waited \(elapsedMilliseconds(since: started)) for the prompt \(path) to complete; it was dismissed")
        }
        guard completed.isOfType("(bv)") else {
            throw .protocolError(operation, detail: "Completed of type \(completed.typeString)")
        }
        if completed.child(0).boolean {
            SecretServiceDiagnostics.report(.info, "\(operation): the prompt was dismissed after \(elapsedMilliseconds(since: started))")
            throw .promptDismissed(operation, detail: "prompt \(path)")
        }
        SecretServiceDiagnostics.report(.info, "\(operation): the prompt was answered after \(elapsedMilliseconds(since: started))")
        let result = completed.child(1).unboxed
        guard result.isOfType(resultType) else {
            throw .protocolError(operation, detail: "the prompt's result has type \(result.typeString), not \(resultType)")
        }
        return result
    }

    /// Asks the provider to close the prompt at `path` (no answer awaited).
    static func dismiss(_ path: ObjectPath, in session: ProviderSession) {
        session.bus.sendWithoutReply(MethodCall(destination: session.owner, path: path,
                                                interface: "org.freedesktop.Secret.Prompt", member: "Dismiss"))
    }
}
