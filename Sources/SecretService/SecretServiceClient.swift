import Foundation

/// Which collection to use: an alias the provider resolves, or an object path.
public enum CollectionReference: Sendable, Hashable, CustomStringConvertible {
    /// The user's default collection (the `default` alias; `login` on GNOME). Persistent.
    case `default`
    /// The in-memory `session` alias: gone when the user logs out. gnome-keyring only.
    case session
    /// Any other alias.
    case alias(String)
    /// A collection object path, e.g. `/org/freedesktop/secrets/collection/login`.
    case path(String)

    public var description: String {
        switch self {
        case .default: "alias 'default'"
        case .session: "alias 'session'"
        case .alias(let alias): "alias '\(alias)'"
        case .path(let path): path
        }
    }

    var aliasName: String? {
        switch self {
        case .default: "default"
        case .session: "session"
        case .alias(let alias): alias
        case .path: nil
        }
    }
}

/// A secret's bytes and MIME content type.
public struct SecretValue: Sendable, Hashable {
    /// The secret. Any bytes, NUL included.
    public var bytes: Data
    /// `text/plain` for text, `application/octet-stream` (or another type) for binary data.
    public var contentType: String

    /// Creates a value. `contentType` defaults to `text/plain` when `bytes` is UTF-8 text without
    /// NUL bytes, and `application/octet-stream` otherwise.
    public init(bytes: Data, contentType: String? = nil) {
        self.bytes = bytes
        self.contentType = contentType ?? SecretValue.contentType(for: bytes)
    }

    /// `text/plain` when `bytes` is UTF-8 without NUL bytes, else `application/octet-stream`.
    public static func contentType(for bytes: Data) -> String {
        if !bytes.contains(0), String(data: bytes, encoding: .utf8) != nil { return "text/plain" }
        return "application/octet-stream"
    }
}

/// What the provider says about an item. Never includes the secret.
public struct SecretItemInfo: Sendable, Hashable {
    /// The item's D-Bus object path; stable for the item's life.
    public var path: String
    /// The collection's object path (the item path's parent).
    public var collectionPath: String
    /// The human-readable label shown in Seahorse, KeePassXC or KWallet.
    public var label: String
    /// The lookup attributes (stored unencrypted by every provider).
    public var attributes: [String: String]
    /// When the item was created.
    public var created: Date
    /// When the item (its secret, label or attributes) last changed. Providers keep whole seconds.
    public var modified: Date
    /// Whether the item is locked.
    public var isLocked: Bool

    /// Creates item metadata (for alternative backends and tests).
    public init(path: String, collectionPath: String, label: String, attributes: [String: String],
                created: Date, modified: Date, isLocked: Bool) {
        self.path = path
        self.collectionPath = collectionPath
        self.label = label
        self.attributes = attributes
        self.created = created
        self.modified = modified
        self.isLocked = isLocked
    }
}

/// What the provider says about a collection.
public struct SecretCollectionInfo: Sendable, Hashable {
    /// The collection's D-Bus object path.
    public var path: String
    /// Its label, e.g. "Login".
    public var label: String
    /// Whether it is locked.
    public var isLocked: Bool

    /// Creates collection metadata (for alternative backends and tests).
    public init(path: String, label: String, isLocked: Bool) {
        self.path = path
        self.label = label
        self.isLocked = isLocked
    }
}

/// The program behind `org.freedesktop.secrets`.
public struct SecretServiceProvider: Sendable, Hashable {
    /// Its unique bus name, e.g. `:1.7`.
    public var uniqueName: String?
    /// Its process ID.
    public var processID: UInt32
    /// Its executable's name from `/proc`, e.g. `gnome-keyring-d` (the kernel keeps 15 characters),
    /// `keepassxc`, `kwalletd5`; nil when the process is not visible (another PID namespace).
    public var executable: String?
    /// The negotiated transport: `plain` or `dh-ietf1024-sha256-aes128-cbc-pkcs7`.
    public var transportAlgorithm: String
}

/// The paths of the items a search found, split by lock state.
public struct SecretSearchResult: Sendable, Hashable {
    /// Items whose secrets can be read now.
    public var unlocked: [String]
    /// Items that must be unlocked first.
    public var locked: [String]
    /// Every item found.
    public var all: [String] { unlocked + locked }

    /// Creates a search result (for alternative backends and tests).
    public init(unlocked: [String], locked: [String]) {
        self.unlocked = unlocked
        self.locked = locked
    }
}

/// An asynchronous client of the freedesktop Secret Service (`org.freedesktop.secrets`): GNOME
/// Keyring, KeePassXC, KWallet.
///
/// All clients in a process share one D-Bus connection and one transport session, opened on first
/// use and reopened by itself after the provider restarts (a call that meets a stale connection is
/// retried on a new one, twice at most). libsecret runs on a thread the library owns: no call blocks Swift's
/// cooperative thread pool, and every call ends by ``Options/timeout`` — prompts included — with a
/// result, a ``SecretServiceError``, or `CancellationError` when its Task is cancelled.
///
/// Thread-safety: a value type of options; use it from any task concurrently.
public struct SecretServiceClient: Sendable {
    /// How calls behave.
    public struct Options: Sendable, Hashable {
        /// How long a whole call may take, connection, retry and prompts included. Default 25 s.
        public var timeout: Duration
        /// Whether a locked collection or item may be unlocked through the provider's prompt. When
        /// false, calls on locked objects throw `.locked` at once and no prompt is ever shown.
        public var allowsPrompts: Bool
        /// Whether a `plain` transport session (secrets cross the bus unencrypted) is acceptable.
        /// Default false: such a session makes every call throw `.insecureTransport`.
        public var allowsPlainTransport: Bool

        /// Creates options; the defaults suit a desktop app.
        public init(timeout: Duration = .seconds(25), allowsPrompts: Bool = true, allowsPlainTransport: Bool = false) {
            self.timeout = timeout
            self.allowsPrompts = allowsPrompts
            self.allowsPlainTransport = allowsPlainTransport
        }
    }

    /// The options every call of this client uses.
    public var options: Options

    /// Creates a client. Cheap: nothing is sent until the first call.
    public init(options: Options = Options()) {
        self.options = options
    }

    // MARK: Connection

    /// The transport algorithm negotiated with the provider (`plain` or
    /// `dh-ietf1024-sha256-aes128-cbc-pkcs7`). Connects if needed.
    /// - Throws: ``SecretServiceError`` (`.noSessionBus`, `.noSecretService`, `.timedOut`).
    public func transportAlgorithm() async throws -> String {
        try await perform("open a Secret Service session", checkTransport: false) { connection, _ in
            connection.transportAlgorithm
        }
    }

    /// Which program provides the Secret Service: its unique bus name, process ID and executable
    /// name (e.g. `gnome-keyring-daemon`, `keepassxc`, `kwalletd5`). Connects if needed.
    /// - Throws: the connection errors.
    public func provider() async throws -> SecretServiceProvider {
        try await perform("identify the provider", checkTransport: false) { connection, deadline in
            let owner = connection.owner ?? "org.freedesktop.secrets"
            let pid = try await LibSecret.processID(connection.service, owning: owner, deadline: deadline)
            let executable = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return SecretServiceProvider(uniqueName: connection.owner, processID: pid, executable: executable,
                                         transportAlgorithm: connection.transportAlgorithm)
        }
    }

    /// Drops the shared connection; the next call of any client opens a new one.
    public static func resetConnection() {
        ConnectionManager.shared.reset()
    }

    // MARK: Collections

    /// Resolves a collection reference to its object path.
    /// - Throws: `.collectionNotFound` when the alias is not set or the path does not exist (the
    ///   message names the collections that do exist), and the connection errors.
    public func collectionPath(_ collection: CollectionReference) async throws -> String {
        try await perform("find collection \(collection)") { connection, deadline in
            try await resolve(collection, connection, deadline)
        }
    }

    /// Label and lock state of a collection, read fresh from the provider.
    /// - Throws: `.collectionNotFound` and the connection errors.
    public func collectionInfo(_ collection: CollectionReference) async throws -> SecretCollectionInfo {
        try await perform("read collection \(collection)") { connection, deadline in
            let path = try await resolve(collection, connection, deadline)
            let properties = try await LibSecret.properties(
                connection.service, path: path, interface: "org.freedesktop.Secret.Collection", deadline: deadline)
            return SecretCollectionInfo(path: path, label: properties.label ?? "", isLocked: properties.locked ?? false)
        }
    }

    /// Every collection the provider publishes.
    /// - Throws: the connection errors.
    public func collections() async throws -> [SecretCollectionInfo] {
        try await perform("list collections") { connection, deadline in
            try await listCollections(connection, deadline)
        }
    }

    // MARK: Items

    /// Finds items whose attributes include all of `attributes`, whatever their `xdg:schema` (so
    /// items written by `secret-tool` or other libraries are found too).
    /// - Parameter collection: restrict the search to this collection; nil searches all.
    /// - Throws: `.invalidArgument` for empty attributes, `.collectionNotFound`, connection errors.
    public func searchItems(
        matching attributes: [String: String], in collection: CollectionReference? = nil
    ) async throws -> SecretSearchResult {
        guard !attributes.isEmpty else {
            throw SecretServiceError(.invalidArgument, operation: "search items",
                                     message: "at least one attribute is required; an empty search would match every item.")
        }
        return try await perform("search items") { connection, deadline in
            var prefix: String?
            if let collection { prefix = try await resolve(collection, connection, deadline) + "/" }
            let found = try await LibSecret.searchPaths(connection.service, attributes: attributes, deadline: deadline)
            func keep(_ paths: [String]) -> [String] {
                guard let prefix else { return paths }
                return paths.filter { $0.hasPrefix(prefix) }
            }
            return SecretSearchResult(unlocked: keep(found.unlocked), locked: keep(found.locked))
        }
    }

    /// The one item whose attributes include `attributes`, or nil when there is none.
    /// - Throws: `.ambiguous` when several items match (the message gives their paths), `.locked`
    ///   when matches are locked (nothing is unlocked here), and the errors of ``searchItems(matching:in:)``.
    public func uniqueItem(matching attributes: [String: String], in collection: CollectionReference? = nil) async throws -> String? {
        let found = try await searchItems(matching: attributes, in: collection)
        if found.all.count > 1 {
            throw SecretServiceError(
                .ambiguous, operation: "find the item",
                message: "\(found.all.count) items match (\(found.all.joined(separator: ", "))); delete the extra ones or "
                    + "search with more attributes.")
        }
        if let path = found.locked.first {
            throw SecretServiceError.locked("find the item", what: "the item \(path)")
        }
        return found.unlocked.first
    }

    /// Metadata of one item, read fresh from the provider (one round trip). Never the secret.
    /// - Throws: `.itemNotFound` when the item is gone, connection errors.
    public func itemInfo(_ path: String) async throws -> SecretItemInfo {
        try await perform("read item") { connection, deadline in
            let properties = try await LibSecret.properties(
                connection.service, path: path, interface: "org.freedesktop.Secret.Item", deadline: deadline)
            return SecretItemInfo(
                path: path,
                collectionPath: Self.collectionPath(ofItem: path),
                label: properties.label ?? "",
                attributes: properties.attributes ?? [:],
                created: Date(timeIntervalSince1970: TimeInterval(properties.created ?? 0)),
                modified: Date(timeIntervalSince1970: TimeInterval(properties.modified ?? 0)),
                isLocked: properties.locked ?? false)
        }
    }

    /// The secret of an item: one GetSecret round trip. A locked item is unlocked first when
    /// prompts are allowed.
    /// - Throws: `.itemNotFound`, `.locked`, `.promptDismissed`, connection errors.
    public func secret(of path: String) async throws -> SecretValue {
        try await perform("read secret") { connection, deadline in
            func read() async throws -> SecretValue? {
                do {
                    return try await LibSecret.getSecretDirectly(
                        connection.service, destination: connection.owner, path: path, deadline: deadline
                    ).map { SecretValue(bytes: $0.bytes, contentType: $0.contentType) }
                } catch {
                    let mapped = SecretServiceError.from(error, operation: "read secret", phase: .call)
                    switch (mapped as? SecretServiceError)?.code {
                    case .locked?: return nil  // unlocked below
                    case .itemNotFound?:
                        connection.forgetItem(path)
                        throw mapped
                    default: throw mapped
                    }
                }
            }
            if let value = try await read() { return value }
            // Locked (gnome-keyring and KeePassXC say so; a locked KWallet answers with an empty
            // secret that cannot be decrypted), or the session's keys disagree with the
            // provider's (KWallet gets about one DH exchange in 200 wrong without noticing).
            // Tell the two apart by the item's and its collection's lock state.
            let collectionPath = Self.collectionPath(ofItem: path)
            async let item = LibSecret.properties(
                connection.service, path: path, interface: "org.freedesktop.Secret.Item", deadline: deadline)
            async let collection = LibSecret.properties(
                connection.service, path: collectionPath, interface: "org.freedesktop.Secret.Collection",
                deadline: deadline)
            let (itemLocked, collectionLocked) = try await (item.locked == true, collection.locked == true)
            let locked = [itemLocked ? path : nil, collectionLocked ? collectionPath : nil].compactMap { $0 }
            if locked.isEmpty {
                throw SecretServiceError(
                    .disconnected, operation: "read secret",
                    message: "the item \(path) is unlocked but its secret could not be decrypted with this session's key; a new session is opened.")
            }
            // Locked: unlock through the prompt if allowed, then read again.
            try await unlock(locked, connection, deadline, what: "the item \(path)")
            guard let value = try await read() else {
                throw SecretServiceError(.locked, operation: "read secret",
                                         message: "the item \(path) is still locked after unlocking it; unlock the keyring and try again.")
            }
            return value
        }
    }

    /// Replaces an item's secret in place: one SetSecret call, one write on the provider side.
    /// - Throws: `.itemNotFound`, `.locked`, connection errors.
    public func setSecret(_ value: SecretValue, of path: String) async throws {
        try await perform("write secret") { connection, deadline in
            let item = try await connection.itemProxy(path, deadline: deadline)
            do {
                try await LibSecret.setSecret(item, RawSecret(bytes: value.bytes, contentType: value.contentType),
                                              deadline: deadline)
            } catch {
                connection.forgetItem(path)
                throw error
            }
        }
    }

    /// Replaces an item's label and/or attributes; nil leaves that part unchanged.
    /// - Throws: `.itemNotFound`, `.locked`, connection errors.
    public func updateItem(_ path: String, label: String? = nil, attributes: [String: String]? = nil) async throws {
        try await perform("update item") { connection, deadline in
            let item = try await connection.itemProxy(path, deadline: deadline)
            if let attributes { try await LibSecret.setAttributes(item, attributes, deadline: deadline) }
            if let label { try await LibSecret.setLabel(item, label, deadline: deadline) }
        }
    }

    /// Creates an item in `collection` and returns its path. With `replacing`, a provider that
    /// supports it replaces an existing item with exactly the same attributes instead of adding a
    /// second one. Unlocks the collection first when it is locked and prompts are allowed.
    /// - Throws: `.collectionNotFound`, `.locked`, `.promptDismissed`, connection errors.
    public func createItem(
        in collection: CollectionReference, label: String, attributes: [String: String],
        secret: SecretValue, replacing: Bool = true
    ) async throws -> String {
        try await perform("create item") { connection, deadline in
            let collectionPath = try await resolve(collection, connection, deadline)
            let properties = try await LibSecret.properties(
                connection.service, path: collectionPath, interface: "org.freedesktop.Secret.Collection",
                deadline: deadline)
            if properties.locked == true {
                try await unlock([collectionPath], connection, deadline, what: "the collection \(collectionPath)")
            }
            return try await LibSecret.createItem(
                connection.service, collection: collectionPath, label: label, attributes: attributes,
                secret: RawSecret(bytes: secret.bytes, contentType: secret.contentType), replace: replacing,
                deadline: deadline)
        }
    }

    /// Deletes an item. Deleting an item that no longer exists succeeds (idempotent).
    /// - Throws: `.locked`, `.promptDismissed`, connection errors.
    public func deleteItem(_ path: String) async throws {
        try await perform("delete item") { connection, deadline in
            defer { connection.forgetItem(path) }
            do {
                try await LibSecret.deleteItem(connection.service, path: path, deadline: deadline)
            } catch let error as GLibError {
                let mapped = SecretServiceError.from(error, operation: "delete item", phase: .call)
                if (mapped as? SecretServiceError)?.code == .itemNotFound { return }
                throw mapped
            }
        }
    }

    /// Unlocks collections or items, through the provider's prompt if it shows one.
    /// - Throws: `.locked` when prompts are disabled, `.promptDismissed`, connection errors.
    public func unlock(_ paths: [String]) async throws {
        try await perform("unlock") { connection, deadline in
            try await unlock(paths, connection, deadline, what: paths.joined(separator: ", "))
        }
    }

    // MARK: - Internals

    /// Runs `body` with the shared connection and this client's deadline; maps errors; retries
    /// on a fresh connection (twice at most, within the same deadline) when the provider went
    /// away under us or forgot our session.
    private func perform<Value: Sendable>(
        _ operation: String, checkTransport: Bool = true,
        _ body: (ServiceConnection, Deadline) async throws -> Value
    ) async throws -> Value {
        let deadline = Deadline(timeout: options.timeout)
        var attempt = 0
        while true {
            attempt += 1
            let connection = try await ConnectionManager.shared.connection(deadline: deadline)
            if checkTransport, connection.transportAlgorithm == "plain", !options.allowsPlainTransport {
                throw SecretServiceError(
                    .insecureTransport, operation: operation,
                    message: "the provider only offered a 'plain' session, so secrets would cross the bus "
                        + "unencrypted. Use a provider with encrypted sessions (gnome-keyring, KeePassXC, "
                        + "KWallet with libqca-qt5-2-plugins) or opt in with allowsPlainTransport.")
            }
            do {
                return try await body(connection, deadline)
            } catch {
                var mapped = SecretServiceError.from(error, operation: operation, phase: .call)
                if let serviceError = mapped as? SecretServiceError, serviceError.code != .disconnected,
                   serviceError.code != .timedOut, await connection.providerChanged() {
                    mapped = SecretServiceError(
                        .disconnected, operation: operation,
                        message: "the Secret Service provider was restarted or went away (\(serviceError.message)).",
                        dbusErrorName: serviceError.dbusErrorName)
                }
                if let serviceError = mapped as? SecretServiceError, serviceError.code == .disconnected {
                    ConnectionManager.shared.invalidate(connection)
                    // Up to two new connections: a restarted provider needs one; KWallet's faulty
                    // DH exchanges occasionally spoil a fresh session too.
                    if attempt < 3 { continue }
                }
                throw mapped
            }
        }
    }

    /// The collection an item belongs to: its path's parent.
    private static func collectionPath(ofItem path: String) -> String {
        String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
    }

    private func resolve(
        _ collection: CollectionReference, _ connection: ServiceConnection, _ deadline: Deadline
    ) async throws -> String {
        guard let alias = collection.aliasName else {
            guard case .path(let path) = collection else { preconditionFailure("no alias and no path") }
            let known = try await listCollections(connection, deadline)
            guard known.contains(where: { $0.path == path }) else {
                throw collectionNotFound(collection, known)
            }
            return path
        }
        if let path = connection.cachedAlias(alias) { return path }
        guard let path = try await LibSecret.readAlias(connection.service, alias: alias, deadline: deadline) else {
            throw collectionNotFound(collection, try await listCollections(connection, deadline))
        }
        connection.rememberAlias(alias, path: path)
        return path
    }

    private func collectionNotFound(_ collection: CollectionReference, _ known: [SecretCollectionInfo]) -> SecretServiceError {
        let names = known.isEmpty ? "none" : known.map { "\($0.path) (\($0.label))" }.joined(separator: ", ")
        let fix = collection == .default
            ? "Set a default collection in your keyring manager (KeePassXC: Settings > Secret Service "
              + "Integration, expose a group; Seahorse: set a keyring as default), or pass one of the "
              + "collections below explicitly."
            : "Pass one of the collections below, or create the alias in your keyring manager."
        return SecretServiceError(
            .collectionNotFound, operation: "find collection \(collection)",
            message: "the Secret Service has no collection for \(collection). \(fix) Collections: \(names).")
    }

    private func listCollections(_ connection: ServiceConnection, _ deadline: Deadline) async throws -> [SecretCollectionInfo] {
        let service = try await LibSecret.properties(
            connection.service, path: "/org/freedesktop/secrets", interface: "org.freedesktop.Secret.Service",
            deadline: deadline)
        var collections: [SecretCollectionInfo] = []
        for path in service.collections ?? [] {
            let properties = try await LibSecret.properties(
                connection.service, path: path, interface: "org.freedesktop.Secret.Collection", deadline: deadline)
            collections.append(SecretCollectionInfo(path: path, label: properties.label ?? "", isLocked: properties.locked ?? false))
        }
        return collections
    }

    private func unlock(_ paths: [String], _ connection: ServiceConnection, _ deadline: Deadline, what: String) async throws {
        guard options.allowsPrompts else { throw SecretServiceError.locked("unlock", what: what) }
        let unlocked = try await LibSecret.unlock(connection.service, paths: paths, deadline: deadline)
        if Set(unlocked) != Set(paths) {
            throw SecretServiceError(
                .promptDismissed, operation: "unlock",
                message: "\(what) stayed locked: the unlock prompt was dismissed or could not be shown. "
                    + "Unlock the keyring yourself (Seahorse, KeePassXC) and try again.")
        }
    }
}
