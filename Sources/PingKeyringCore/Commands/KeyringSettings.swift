import PingStorage

/// Where and how the commands reach the keyring, from the global options.
struct KeyringSettings: Sendable, Equatable {
    /// `--collection`; nil: the library's default (`$PINGSTORAGE_COLLECTION`, else `default`).
    var collection: KeychainConfiguration.Collection?
    /// `--timeout`; nil: the library's default.
    var timeout: Duration?
    /// `--prompt-timeout`; nil: the library's default.
    var promptTimeout: Duration?
    /// False with `--no-prompt`.
    var allowsPrompts: Bool
    /// `--backend`; nil when not given (then ``KeychainConfiguration/Backend/automatic``).
    var backend: KeychainConfiguration.Backend?
    /// The app the commands act as and `list` shows: `--app`, else a Flatpak's or snap's own id;
    /// nil outside a sandbox without `--app`. ping-keyring's own identity there would be its
    /// executable's path, which no app's items carry, so nil means "no app chosen": `list` shows
    /// every app's items and the item commands find the app (``AppChoice``).
    var scopedApp: String?
    /// Whether human output says which backend and why (`backend: …`, on stderr): with
    /// `--verbose`, and inside a Flatpak or snap, where it may not be the Secret Service.
    var showsBackend: Bool

    /// The settings the global options give; `detected` is the identity a program run here gets
    /// without `AppIdentity.set` (``AppIdentity/detected``; tests give another).
    init(_ options: GlobalOptions, detected: AppIdentity = .detected) {
        collection = options.collection
        timeout = options.timeout
        promptTimeout = options.promptTimeout
        allowsPrompts = !options.noPrompt
        backend = options.backend
        scopedApp = options.app ?? (detected.source == .executable ? nil : detected.id)
        showsBackend = options.verbose || detected.source == .flatpak || detected.source == .snap
    }

    /// The configuration an app with these settings would use (collection, timeout and backend
    /// defaults are the library's), as the app `app` (default ``scopedApp``; nil: ping-keyring's
    /// own identity, which owns no app's items, for calls that write no item).
    func configuration(service: String = KeychainConfiguration.defaultService,
                       app: String? = nil) -> KeychainConfiguration {
        var configuration = KeychainConfiguration(service: service, collection: collection, allowsPrompts: allowsPrompts,
                                                  backend: backend ?? .automatic, app: app ?? scopedApp)
        if let timeout { configuration.timeout = timeout }
        if let promptTimeout { configuration.promptTimeout = promptTimeout }
        return configuration
    }

    /// The keyring where `configuration`'s items are, opened as ``KeychainStorage`` opens it (once
    /// per process; in a sandbox, asking the Secret portal): what every command works on, without
    /// telling the backends apart itself.
    /// - Throws: ``ToolError`` (`noSecretService` in a sandbox without the portal's secret,
    ///   `invalidArgument` for a bad `PINGSTORAGE_BACKEND`, …).
    func inventory(_ configuration: KeychainConfiguration) async throws(ToolError) -> KeyringInventory {
        do {
            return try await KeyringInventory.open(for: configuration)
        } catch {
            throw ToolError.from(error)
        }
    }

    /// Where an inventory's items are and why (``KeyringInventory/backend``); a backend named by
    /// `--backend` is reported as set by it.
    func backend(of inventory: KeyringInventory) -> KeychainBackendChoice {
        attributed(inventory.backend)
    }

    /// What ``backendInUse(_:)`` aims at before any I/O (in a sandbox, the file keyring before the
    /// portal was asked), for the doctor to name when the choice fails.
    func plannedBackend(_ configuration: KeychainConfiguration) throws(ToolError) -> KeychainBackendChoice {
        do {
            return attributed(try configuration.plannedBackend())
        } catch {
            throw ToolError.from(error)
        }
    }

    /// The library says "set in KeychainConfiguration"; here the setting is the option.
    private func attributed(_ choice: KeychainBackendChoice) -> KeychainBackendChoice {
        guard let backend, backend != .automatic else { return choice }
        var choice = choice
        choice.reason = "set by --backend \(backend)"
        return choice
    }
}

extension KeychainBackendChoice {
    /// The file keyring's path; nil for the Secret Service.
    var filePath: String? {
        if case .fileKeyring(let path) = kind { return path }
        return nil
    }

    /// `Secret Service (REASON)` or `file keyring PATH (REASON)`.
    var summary: String {
        switch kind {
        case .secretService: "Secret Service (\(reason))"
        case .fileKeyring(let path): "file keyring \(path) (\(reason))"
        }
    }

    /// `backend: …` and a newline: what the item commands print on stderr with `--verbose` or in a
    /// sandbox (``KeyringSettings/showsBackend``); never on stdout, which is the result alone.
    var humanLine: String { "backend: \(summary)\n" }

    /// `{"kind": "secretService" | "fileKeyring", "path": PATH | null, "reason": …}`.
    var json: JSONValue {
        .object([
            ("kind", .string(filePath == nil ? "secretService" : "fileKeyring")),
            ("path", .string(filePath)),
            ("reason", .string(reason)),
        ])
    }
}
