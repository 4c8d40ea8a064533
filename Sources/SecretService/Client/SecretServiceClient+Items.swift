#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Waiting
import DBusTransport

extension SecretServiceClient {
    /// Finds items whose attributes include all of `attributes`, whatever their `xdg:schema` (so
    /// items written by `secret-tool` or other libraries are found too). Unlocks nothing.
    /// - Parameter collection: only items of this collection; nil searches all.
    /// - Throws: `.invalidArgument` for empty attributes, `.collectionNotFound`, connection errors.
    public func searchItems(matching attributes: [String: String],
                            in collection: CollectionReference? = nil) async throws(SecretServiceError) -> SecretSearchResult {
        try Self.checkSearch(attributes)
        return try await perform("search items") { session, deadline throws(SecretServiceError) in
            try await search(attributes, in: collection, session, deadline)
        }
    }

    /// Finds items whose attributes include all of `attributes` and makes them readable: the
    /// search-and-unlock of the unlock policy. Every path returned is unlocked.
    /// - Throws: `.locked` (prompts not allowed), `.promptDismissed`, and what ``searchItems(matching:in:)`` throws.
    public func findItems(matching attributes: [String: String],
                          in collection: CollectionReference) async throws(SecretServiceError) -> SecretSearchResult {
        try Self.checkSearch(attributes)
        return try await perform("find items") { session, deadline throws(SecretServiceError) in
            let operation = "find items"
            var found = try await search(attributes, in: collection, session, deadline)
            if found.all.isEmpty {
                // Some providers hide a locked collection's items from searches.
                let path = try await resolve(collection, session, deadline)
                var locked = session.knownLockState(of: path)
                if locked == nil { locked = try await collectionInfo(at: path, session, deadline).isLocked }
                guard locked == true else { return found }
                try await unlock([path], session, deadline, operation: operation)
                found = try await search(attributes, in: collection, session, deadline)
            }
            try await unlock(found.locked.map(\.objectPath), session, deadline, operation: operation)
            return SecretSearchResult(unlocked: found.all, locked: [], changeToken: found.changeToken)
        }
    }

    /// The one item whose attributes include `attributes`, unlocked; nil when there is none.
    /// - Throws: `.ambiguous` when several match (the detail gives their paths), and what
    ///   ``findItems(matching:in:)`` throws.
    public func uniqueItem(matching attributes: [String: String],
                           in collection: CollectionReference) async throws(SecretServiceError) -> ItemPath? {
        let found = try await findItems(matching: attributes, in: collection)
        guard found.all.count <= 1 else {
            throw .ambiguous("find the item", count: found.all.count, detail: found.all.map(\.rawValue).joined(separator: ", "))
        }
        return found.all.first
    }

    /// Metadata of one item, read fresh from the provider (one round trip). Never the secret.
    /// - Throws: `.itemNotFound` when the item is gone, connection errors.
    public func itemInfo(_ path: ItemPath) async throws(SecretServiceError) -> SecretItemInfo {
        try await perform("read item") { session, deadline throws(SecretServiceError) in
            try await itemInfo(path, session, deadline)
        }
    }

    /// The secret of an item: one GetSecret round trip when the item is unlocked.
    /// - Throws: `.itemNotFound`, `.locked`, `.promptDismissed`, connection errors.
    public func secret(of path: ItemPath) async throws(SecretServiceError) -> SecretRead {
        try await perform("read secret") { session, deadline throws(SecretServiceError) in
            let operation = "read secret"
            let read = try await unlockingOnce(path.objectPath, session, deadline, operation: operation) { () async throws(SecretServiceError) in
                try await getSecret(path, session, deadline)
            }
            guard ProviderQuirks.needsLockCheck(decoded: read.value) else {
                return SecretRead(value: read.value!, changeToken: read.token)
            }
            // Empty or undecodable: locked (KWallet says so this way), or the session's key is
            // not the provider's. See ProviderQuirks.needsLockCheck.
            let (item, collection) = try await concurrently(
                { () async throws(SecretServiceError) in try await self.itemInfo(path, session, deadline) },
                { () async throws(SecretServiceError) in try await self.collectionInfo(at: path.collection, session, deadline) })
            let locked = [item.isLocked ? path.objectPath : nil, collection.isLocked ? path.collection : nil].compactMap { $0 }
            SecretServiceDiagnostics.report(.info, "\(operation): \(path) answered with \(read.value == nil ? "an undecodable" : "an empty") secret "
                + "(a KWallet quirk); it is \(locked.isEmpty ? "unlocked" : "locked")")
            if locked.isEmpty {
                guard let value = read.value else {
                    throw .disconnected(operation, detail: "the secret of \(path) could not be decrypted with this session's key")
                }
                guard let pause = ProviderQuirks.pauseBeforeRereadingEmptySecret(session.kind) else {
                    return SecretRead(value: value, changeToken: read.token)
                }
                do { try await Task.sleep(for: pause) } catch { throw .cancelled(operation) }
                let again = try await getSecret(path, session, deadline)
                return SecretRead(value: again.value ?? value, changeToken: again.token)
            }
            try await unlock(locked, session, deadline, operation: operation)
            let again = try await getSecret(path, session, deadline)
            guard let value = again.value else {
                throw .disconnected(operation, detail: "the secret of \(path) could not be decrypted with this session's key")
            }
            return SecretRead(value: value, changeToken: again.token)
        }
    }

    /// Replaces an item's secret in place: one SetSecret round trip; on KWallet and providers not
    /// known, the secret is then read back and compared (one more), and written again through a
    /// new session when it differs (``ProviderQuirks/verifiesWrites(_:)``).
    /// - Returns: the change token when the provider answered.
    /// - Throws: `.itemNotFound`, `.locked`, `.promptDismissed`, `.writeNotVerified`, connection errors.
    @discardableResult
    public func setSecret(_ value: SecretValue, of path: ItemPath) async throws(SecretServiceError) -> ChangeToken {
        try await perform("write secret") { session, deadline throws(SecretServiceError) in
            let operation = "write secret"
            let crypto = try await transport(session, deadline, operation: operation)
            return try await unlockingOnce(path.objectPath, session, deadline, operation: operation, writing: true) { () async throws(SecretServiceError) in
                try await writeVerified(value, starting: crypto, session, deadline, operation: operation) { crypto, _ throws(SecretServiceError) in
                    (path, try await session.call(path.objectPath, "org.freedesktop.Secret.Item", "SetSecret",
                                                  .tuple([try crypto.encode(value)]),
                                                  operation: operation, deadline: deadline).token)
                }.token
            }
        }
    }

    /// Replaces an item's label and/or attributes; nil leaves that part as it is.
    /// - Throws: `.itemNotFound`, `.locked`, `.promptDismissed`, connection errors; `.providerError`
    ///   when the provider refuses them.
    public func updateItem(_ path: ItemPath, label: String? = nil,
                           attributes: [String: String]? = nil) async throws(SecretServiceError) {
        try await perform("update item") { session, deadline throws(SecretServiceError) in
            let operation = "update item"
            func set(_ property: String, _ value: Argument) async throws(SecretServiceError) {
                _ = try await unlockingOnce(path.objectPath, session, deadline, operation: operation, writing: true) { () async throws(SecretServiceError) in
                    try await session.call(path.objectPath, "org.freedesktop.DBus.Properties", "Set",
                                           .tuple([.string("org.freedesktop.Secret.Item"), .string(property), .variant(value)]),
                                           operation: operation, deadline: deadline)
                }
            }
            if let attributes {
                do throws(SecretServiceError) {
                    try await set("Attributes", .attributes(attributes))
                } catch {
                    guard let fewer = ProviderQuirks.attributesAfterRefusal(attributes, error) else { throw error }
                    try await set("Attributes", .attributes(fewer))
                }
            }
            if let label { try await set("Label", .string(label)) }
        }
    }

    /// Creates an item in `collection`. With `replacing`, an item with exactly the same attributes
    /// is replaced instead of a second one added. Unlocks the collection first when needed.
    ///
    /// On KWallet and providers not known, the secret is read back and compared (one more round
    /// trip); when it differs, the secret of the item created is written again through a new
    /// session (``ProviderQuirks/verifiesWrites(_:)``), and when it never reads back, that item
    /// (whose path came back from this call's CreateItem) is deleted before `.writeNotVerified`
    /// is thrown: an item holding a wrong secret is never left to be read as a value.
    /// - Throws: `.collectionNotFound`, `.locked`, `.promptDismissed`, `.writeNotVerified`, connection errors.
    public func createItem(in collection: CollectionReference, label: String, attributes: [String: String],
                           secret: SecretValue, replacing: Bool = true) async throws(SecretServiceError) -> CreatedItem {
        try await perform("create item") { session, deadline throws(SecretServiceError) in
            let operation = "create item"
            let collectionPath = try await resolve(collection, session, deadline)
            let crypto = try await transport(session, deadline, operation: operation)
            if replacing, ProviderQuirks.emulatesReplace(session.kind) {
                SecretServiceDiagnostics.report(.debug, "create item: replacing emulated (a KeePassXC quirk)")
                let found = try await search(attributes, in: collection, session, deadline).all
                if let existing = found.first(where: { _ in true }), found.count == 1 {
                    try await unlockingOnce(existing.objectPath, session, deadline, operation: operation) { () async throws(SecretServiceError) in
                        _ = try await session.call(existing.objectPath, "org.freedesktop.Secret.Item", "SetSecret",
                                                   .tuple([try crypto.encode(secret)]),
                                                   operation: operation, deadline: deadline)
                    }
                    return CreatedItem(path: existing, changeToken: session.bus.token)
                }
            }
            try await ensureUnlocked(collection: collectionPath, session, deadline, operation: operation)
            let properties: [String: Argument] = ["org.freedesktop.Secret.Item.Label": .string(label),
                                                  "org.freedesktop.Secret.Item.Attributes":
                                                      .attributes(ProviderQuirks.attributesToCreate(attributes, session.kind))]
            var created: ItemPath?  // the path our CreateItem returned: the only item this call may delete
            do throws(SecretServiceError) {
                let (path, token) = try await writeVerified(secret, starting: crypto, session, deadline, operation: operation) { crypto, written throws(SecretServiceError) in
                    if let written {
                        // An earlier attempt created it: write its secret again, never a second item.
                        return (written, try await session.call(written.objectPath, "org.freedesktop.Secret.Item", "SetSecret",
                                                                .tuple([try crypto.encode(secret)]),
                                                                operation: operation, deadline: deadline).token)
                    }
                    let result = try await createOnce(in: collectionPath, properties, secret, crypto, replacing: replacing,
                                                      session, deadline, operation: operation)
                    created = result.path
                    return result
                }
                return CreatedItem(path: path, changeToken: token)
            } catch where error.code == .writeNotVerified {
                if let created { await deleteUnverified(created, session, deadline, operation: operation) }
                throw error
            }
        }
    }

    /// Deletes an item. Deleting an item that no longer exists succeeds (idempotent).
    /// - Returns: the change token when the provider answered.
    /// - Throws: `.locked`, `.promptDismissed`, connection errors.
    @discardableResult
    public func deleteItem(_ path: ItemPath) async throws(SecretServiceError) -> ChangeToken {
        try await perform("delete item") { session, deadline throws(SecretServiceError) in
            let operation = "delete item"
            do throws(SecretServiceError) {
                return try await unlockingOnce(path.objectPath, session, deadline, operation: operation, writing: true) { () async throws(SecretServiceError) in
                    let reply = try await session.call(path.objectPath, "org.freedesktop.Secret.Item", "Delete",
                                                       operation: operation, deadline: deadline)
                    let prompt = ObjectPath(trusted: try reply.body("(o)", in: operation).child(0).string)
                    guard prompt != .none else { return reply.token }
                    _ = try await promptIfAllowed(prompt, resultType: "*", session, deadline, operation: operation, refusal:
                        .locked(operation, promptsAllowed: false, detail: "deleting \(path) needs a prompt"))
                    return session.bus.token
                }
            } catch where error.code == .itemNotFound {
                return session.bus.token
            }
        }
    }

    // MARK: - Internals

    static func checkSearch(_ attributes: [String: String]) throws(SecretServiceError) {
        guard !attributes.isEmpty else {
            throw .invalidArgument("search items", "At least one attribute is needed: an empty search would match every item.")
        }
    }

    func search(_ attributes: [String: String], in collection: CollectionReference?, _ session: ProviderSession,
                _ deadline: Deadline) async throws(SecretServiceError) -> SecretSearchResult {
        let operation = "search items"
        var prefix: String?
        if let collection { prefix = try await resolve(collection, session, deadline).rawValue + "/" }
        let reply = try await session.call(.service, "org.freedesktop.Secret.Service", "SearchItems",
                                           .tuple([.attributes(attributes)]), operation: operation, deadline: deadline)
        let body = try reply.body("(aoao)", in: operation)
        func paths(_ index: Int) -> [ItemPath] {
            body.child(index).strings.filter { prefix == nil || $0.hasPrefix(prefix!) }.compactMap { try? ItemPath($0) }
        }
        return SecretSearchResult(unlocked: paths(0), locked: paths(1), changeToken: reply.token)
    }

    func itemInfo(_ path: ItemPath, _ session: ProviderSession, _ deadline: Deadline) async throws(SecretServiceError) -> SecretItemInfo {
        let operation = "read item"
        let properties = try await session.call(path.objectPath, "org.freedesktop.DBus.Properties", "GetAll",
                                                .tuple([.string("org.freedesktop.Secret.Item")]),
                                                operation: operation, deadline: deadline)
            .body("(a{sv})", in: operation).child(0)
        func date(_ key: String) -> Date {
            Date(timeIntervalSince1970: TimeInterval(properties.lookup(key, "t")?.uint64 ?? 0))
        }
        return SecretItemInfo(path: path, label: properties.lookup("Label", "s")?.string ?? "",
                              attributes: properties.lookup("Attributes", "a{ss}")?.stringDictionary ?? [:],
                              created: date("Created"), modified: date("Modified"),
                              isLocked: properties.lookup("Locked", "b")?.boolean ?? false)
    }

    /// Runs `a` and `b` at once (their D-Bus calls go out together) and returns both results.
    func concurrently<A: Sendable, B: Sendable>(
        _ a: @escaping @Sendable () async throws(SecretServiceError) -> A,
        _ b: @escaping @Sendable () async throws(SecretServiceError) -> B
    ) async throws(SecretServiceError) -> (A, B) {
        async let first: Result<A, SecretServiceError> = { () async -> Result<A, SecretServiceError> in
            do throws(SecretServiceError) { return .success(try await a()) } catch { return .failure(error) }
        }()
        let second: Result<B, SecretServiceError>
        do throws(SecretServiceError) { second = .success(try await b()) } catch { second = .failure(error) }
        return (try await first.get(), try second.get())
    }

    /// One GetSecret: the decoded value (nil when undecodable) and the token of the answer.
    func getSecret(_ path: ItemPath, _ session: ProviderSession,
                   _ deadline: Deadline) async throws(SecretServiceError) -> (value: SecretValue?, token: ChangeToken) {
        let operation = "read secret"
        let crypto = try await transport(session, deadline, operation: operation)
        let reply = try await session.call(path.objectPath, "org.freedesktop.Secret.Item", "GetSecret",
                                           .tuple([.objectPath(crypto.path)]), operation: operation, deadline: deadline)
        let structure = try reply.body("((oayays))", in: operation).child(0)
        return (crypto.decode(structure), reply.token)
    }
}
