import Waiting
import DBusTransport

/// What a prompt is for: the provider returns prompts from Unlock, CreateCollection and others.
enum PromptKind: Sendable {
    /// From `Unlock`.
    case unlock
    /// From `CreateCollection`: the new keyring's password.
    case createCollection
    /// From `Lock`, `CreateItem`, `Item.Delete`.
    case other
}

/// Runs Secret Service prompts: the one place a prompt is shown, waited for and dismissed.
///
/// A prompt is the person's time: while it is on screen the bus's ``PromptTime`` is paused, so no
/// call's deadline counts it, and it has a limit of its own (``SecretServiceClient/Options/promptTimeout``),
/// at which it is dismissed and the call fails saying so. It is dismissed too when its Task is
/// cancelled (both end on the loop thread, where the `Dismiss` is sent), unless the provider
/// cannot take a dismissal (``ProviderQuirks/dismissesPrompt(_:on:)``). A prompt that cannot be
/// shown fails at once where something tells (``PromptVisibility``).
///
/// The client listens for `Completed` before it calls `Prompt` (no race with a prompt that
/// completes at once), believes `Completed` only from the provider it talks to, and checks the
/// result's type (libsecret 0.20.5 waits forever on a wrong one).
enum Prompts {
    /// How a prompt that ran ended, short of an error.
    enum End: Sendable {
        /// The person answered; the result has the type asked for (nil: there was no prompt).
        case answered(Variant?)
        /// The person dismissed it (or the provider did, for a reason nothing tells).
        case dismissed(detail: String)
        /// No one could see it: why (for the message), and what told (for `detail`).
        case notShown(reason: String, detail: String)
    }

    /// Shows the prompt at `path` and returns its result, which must have `resultType`; `path` `/`
    /// means no prompt (returns nil). `deadline` is the call's, for what is asked around the prompt.
    /// - Throws: `.promptDismissed` (dismissed, or could not be shown: the message says which),
    ///   and what ``show(_:_:resultType:in:operation:limit:pauses:deadline:)`` throws.
    static func run(_ path: ObjectPath, _ kind: PromptKind, resultType: StaticString, in session: ProviderSession,
                    operation: String, limit: Duration, pauses: DeadlinePauses,
                    deadline: Deadline) async throws(SecretServiceError) -> Variant? {
        switch try await show(path, kind, resultType: resultType, in: session, operation: operation, limit: limit,
                              pauses: pauses, deadline: deadline) {
        case .answered(let result): return result
        case .dismissed(let detail): throw .promptDismissed(operation, detail: detail)
        case .notShown(let reason, let detail):
            throw .promptNotShown(operation, reason: reason, provider: session.kind, detail: detail)
        }
    }

    /// Shows the prompt at `path` and says how it ended; `path` `/` means no prompt (answered, nil).
    /// - Throws: `.timedOut` when no one answered within `limit` (the message says it was the
    ///   prompt), `.protocolError` for a result of another type, `.cancelled`, `.disconnected` (the
    ///   provider went away meanwhile).
    static func show(_ path: ObjectPath, _ kind: PromptKind, resultType: StaticString, in session: ProviderSession,
                     operation: String, limit: Duration, pauses: DeadlinePauses,
                     deadline: Deadline) async throws(SecretServiceError) -> End {
        guard path != .none else { return .answered(nil) }
        if let unseen = PromptVisibility.cannotShow(kind, in: session) {
            dismiss(path, kind, in: session)
            SecretServiceDiagnostics.report(.warning, "\(operation): the keyring service cannot show its prompt (\(unseen.detail))")
            return .notShown(reason: unseen.reason, detail: "\(path): \(unseen.detail)")
        }
        SecretServiceDiagnostics.report(.info, "\(operation): the keyring service shows a prompt (\(path))")
        let started = ContinuousClock.now
        let bus = session.bus
        let dismisses = ProviderQuirks.dismissesPrompt(kind, on: session.kind)
        // The waiter's own deadline is the prompt's limit; every call's deadline on this bus stands
        // still meanwhile.
        let waiter = OneShot<Variant, SecretServiceError>(operation: operation, deadline: Deadline(timeout: limit))
        let completed: Variant
        pauses.begin()
        do throws(SecretServiceError) {
            defer { pauses.end() }
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
                    if dismisses {
                        SecretServiceDiagnostics.report(.warning, "\(operation): the prompt was not answered (\(error.code)); dismissing it")
                        dismiss(path, kind, in: session)
                    } else {
                        SecretServiceDiagnostics.report(.warning, "\(operation): the prompt was not answered (\(error.code)); left on "
                            + "screen (\(SecretServiceProvider.displayName(ofExecutable: session.executable)) cannot take a dismissal)")
                    }
                }
            }
        } catch where error.code == .timedOut {
            throw .promptTimedOut(operation, limit: limit, dismissed: dismisses, provider: session.kind,
                                  detail: "waited \(elapsedMilliseconds(since: started)) for the prompt \(path) to complete; "
                                      + (dismisses ? "it was dismissed" : "it was left on screen"))
        }
        guard completed.isOfType("(bv)") else {
            throw .protocolError(operation, detail: "Completed of type \(completed.typeString)")
        }
        if completed.child(0).boolean {
            let elapsed = ContinuousClock.now - started
            if let unseen = await PromptVisibility.notShown(after: elapsed, in: session, operation: operation, deadline: deadline) {
                SecretServiceDiagnostics.report(.warning, "\(operation): the keyring service could not show its prompt (\(unseen.detail))")
                return .notShown(reason: unseen.reason, detail: "\(path): \(unseen.detail)")
            }
            SecretServiceDiagnostics.report(.info, "\(operation): the prompt was dismissed after \(elapsed.secondsText)")
            return .dismissed(detail: "prompt \(path)")
        }
        SecretServiceDiagnostics.report(.info, "\(operation): the prompt was answered after \(elapsedMilliseconds(since: started))")
        let result = completed.child(1).unboxed
        guard result.isOfType(resultType) else {
            throw .protocolError(operation, detail: "the prompt's result has type \(result.typeString), not \(resultType)")
        }
        return .answered(result)
    }

    /// Asks the provider to close the prompt at `path` (no answer awaited), unless the provider
    /// cannot take a dismissal of this kind of prompt (``ProviderQuirks/dismissesPrompt(_:on:)``).
    static func dismiss(_ path: ObjectPath, _ kind: PromptKind, in session: ProviderSession) {
        guard ProviderQuirks.dismissesPrompt(kind, on: session.kind) else { return }
        session.bus.sendWithoutReply(MethodCall(destination: session.owner, path: path,
                                                interface: "org.freedesktop.Secret.Prompt", member: "Dismiss"))
    }
}
