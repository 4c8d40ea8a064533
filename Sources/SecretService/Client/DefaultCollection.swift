import Waiting
import DBusTransport

// The first run: a keyring service with no default collection (a freshly activated gnome-keyring
// has only its in-memory `session` collection) gets one, created through the provider, as libsecret
// and oo7 do; the one place that creates a collection.

extension SecretServiceClient {
    /// The label of the default collection this client creates.
    static let defaultCollectionLabel = "Default keyring"

    /// Creates the default collection when prompts are allowed (creating one asks the person for
    /// its password); returns its path. Called by ``resolve(_:_:_:)`` inside the one shared read of
    /// the `default` alias, so concurrent first calls create one collection, not several.
    /// - Throws: `.collectionNotFound` ("no default keyring exists yet", with how to create one on
    ///   this provider's desktop, and why none was created in `detail`) when prompts are turned
    ///   off, the prompt was dismissed or could not be shown, or the provider refuses to create
    ///   collections; connection errors, `.timedOut` (the prompt's limit included), `.cancelled`.
    func createDefaultCollection(_ session: ProviderSession, _ deadline: Deadline,
                                 findOperation: String) async throws(SecretServiceError) -> ObjectPath {
        func notFound(_ why: SecretServiceError.NoDefaultCollection) async throws(SecretServiceError) -> SecretServiceError {
            .collectionNotFound(findOperation, .default, known: try await listCollections(session, deadline),
                                provider: session.kind, why: why)
        }
        guard options.allowsPrompts else {
            throw try await notFound(.promptsOff)
        }
        let operation = "create the default keyring"
        SecretServiceDiagnostics.report(.info, "The keyring service has no default collection: creating '\(Self.defaultCollectionLabel)'")
        let reply: Variant
        do throws(SecretServiceError) {
            reply = try await session.call(.service, "org.freedesktop.Secret.Service", "CreateCollection",
                                           .tuple([.properties(["org.freedesktop.Secret.Collection.Label": .string(Self.defaultCollectionLabel)]),
                                                   .string("default")]),
                                           operation: operation, deadline: deadline).body("(oo)", in: operation)
        } catch where error.code == .providerError || error.code == .itemNotFound {
            throw try await notFound(.refused(error.detail ?? error.message))
        }
        var created = ObjectPath(trusted: reply.child(0).string)
        let prompt = ObjectPath(trusted: reply.child(1).string)
        if prompt != .none {
            switch try await Prompts.show(prompt, .createCollection, resultType: "o", in: session, operation: operation,
                                          limit: options.promptTimeout, pauses: promptPauses, deadline: deadline) {
            case .answered(let result): created = ObjectPath(trusted: result?.string ?? "/")
            case .dismissed: throw try await notFound(.promptDismissed)
            case .notShown(let reason, _): throw try await notFound(.promptNotShown(reason))
            }
        }
        guard created != .none else {
            throw try await notFound(.promptDismissed)
        }
        // The alias was asked for in CreateCollection; a provider that ignored it is told again.
        let alias = try await session.call(.service, "org.freedesktop.Secret.Service", "ReadAlias", .tuple([.string("default")]),
                                           operation: operation, deadline: deadline).body("(o)", in: operation)
        if ObjectPath(trusted: alias.child(0).string) != created {
            _ = try await session.call(.service, "org.freedesktop.Secret.Service", "SetAlias",
                                       .tuple([.string("default"), .objectPath(created)]), operation: operation, deadline: deadline)
        }
        SecretServiceDiagnostics.report(.info, "Created the default collection \(created)")
        return created
    }
}
