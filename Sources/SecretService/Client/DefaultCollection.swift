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
    /// - Throws: `.collectionNotFound` ("no default keyring exists yet", with how to create one)
    ///   when prompts are turned off, the prompt was dismissed or could not be shown, or the
    ///   provider refuses to create collections; connection errors, `.timedOut`, `.cancelled`.
    func createDefaultCollection(_ session: ProviderSession, _ deadline: Deadline,
                                 findOperation: String) async throws(SecretServiceError) -> ObjectPath {
        func notFound(_ why: String) async throws(SecretServiceError) -> SecretServiceError {
            .collectionNotFound(findOperation, .default, known: try await listCollections(session, deadline), note: why)
        }
        guard options.allowsPrompts else {
            throw try await notFound("prompts are turned off, so none was created")
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
            throw try await notFound("the keyring service refused to create one: \(error.detail ?? error.message)")
        }
        var created = ObjectPath(trusted: reply.child(0).string)
        let prompt = ObjectPath(trusted: reply.child(1).string)
        if prompt != .none {
            do throws(SecretServiceError) {
                let result = try await Prompts.run(prompt, resultType: "o", in: session, operation: operation, deadline: deadline)
                created = ObjectPath(trusted: result?.string ?? "/")
            } catch where error.code == .promptDismissed {
                throw try await notFound("the keyring service's prompt to create one was dismissed or could not be shown")
            }
        }
        guard created != .none else {
            throw try await notFound("the keyring service's prompt to create one was dismissed or could not be shown")
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
