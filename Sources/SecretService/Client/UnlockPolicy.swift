#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Waiting
import DBusTransport

// The unlock policy (the table in SecretServiceClient's documentation) and the collection look-ups
// it needs: the one place that decides when something is unlocked and how.

extension SecretServiceClient {
    /// Runs the provider's `prompt` (not `/`) of `kind` when prompts are allowed, and returns its
    /// result; when they are not, dismisses it unshown (where the provider takes that,
    /// ``ProviderQuirks/dismissesPrompt(_:on:)``) and throws `refusal`. The one place that decides
    /// whether a prompt may be shown.
    func promptIfAllowed(_ prompt: ObjectPath, _ kind: PromptKind = .other, resultType: StaticString, _ session: ProviderSession,
                         _ deadline: Deadline, operation: String,
                         refusal: @autoclosure () -> SecretServiceError) async throws(SecretServiceError) -> Variant? {
        guard options.allowsPrompts else {
            Prompts.dismiss(prompt, kind, in: session)
            throw refusal()
        }
        return try await Prompts.run(prompt, kind, resultType: resultType, in: session, operation: operation,
                                     limit: options.promptTimeout, pauses: promptPauses, deadline: deadline)
    }

    /// Unlocks `paths`: at once when the provider can, through its prompt when it shows one and
    /// prompts are allowed. Concurrent calls of this process that unlock the same collection wait
    /// for one prompt (``SharedUnlocks``): its answer is theirs.
    /// - Throws: `.locked` when a prompt is needed and not allowed, `.promptDismissed` when the
    ///   prompt was dismissed, could not be shown or left something locked, `.timedOut` when no
    ///   one answered it in time.
    func unlock(_ paths: [ObjectPath], _ session: ProviderSession, _ deadline: Deadline,
                operation: String) async throws(SecretServiceError) {
        guard !paths.isEmpty else { return }
        let keys = Set(paths.map { SharedUnlocks.Key(bus: link.bus, provider: session.owner, collection: SharedUnlocks.collection(of: $0)) })
        while true {
            switch SharedUnlocks.shared.claim(keys) {
            case .another(let claim):
                SecretServiceDiagnostics.report(.info, "\(operation): waiting for the unlock another call of this process is making")
                switch try await SharedUnlocks.shared.wait(for: claim, operation: operation, deadline: deadline) {
                case .askAgain: continue
                case .failed(let error): throw error.during(operation)
                }
            case .mine(let claim):
                var outcome = SharedUnlocks.Outcome.askAgain
                defer { SharedUnlocks.shared.release(claim, outcome) }
                try await unlockOnce(paths, session, deadline, operation: operation, outcome: &outcome)
                return
            }
        }
    }

    /// One Unlock of `paths` and its prompt; `outcome` gets what calls waiting for the same
    /// collections should make of it (the person's answer, when it is a failure).
    private func unlockOnce(_ paths: [ObjectPath], _ session: ProviderSession, _ deadline: Deadline, operation: String,
                            outcome: inout SharedUnlocks.Outcome) async throws(SecretServiceError) {
        let reply = try await session.call(.service, "org.freedesktop.Secret.Service", "Unlock", .tuple([.objectPaths(paths)]),
                                           operation: operation, deadline: deadline).body("(aoo)", in: operation)
        var unlocked = Set(reply.child(0).strings)
        let prompt = ObjectPath(trusted: reply.child(1).string)
        if prompt != .none {
            let result: Variant?
            do throws(SecretServiceError) {
                result = try await promptIfAllowed(prompt, .unlock, resultType: "ao", session, deadline, operation: operation, refusal:
                    .locked(operation, promptsAllowed: false, detail: paths.map(\.rawValue).joined(separator: ", ")))
            } catch where options.allowsPrompts && (error.code == .promptDismissed || error.code == .timedOut) {
                outcome = .failed(error)
                throw error
            }
            unlocked.formUnion(result?.strings ?? [])
        }
        let stillLocked = paths.filter { !unlocked.contains($0.rawValue) }
        guard stillLocked.isEmpty else {
            let error = SecretServiceError.promptDismissed(operation, detail: "still locked: " + stillLocked.map(\.rawValue).joined(separator: ", "))
            if prompt != .none { outcome = .failed(error) }
            throw error
        }
    }

    /// Runs `body`; when it fails because `path` is locked, unlocks `path` per the policy and runs
    /// it once more. For a write to an item (`writing`), a provider that does not say IsLocked
    /// (``ProviderQuirks/checksLockBeforeWriting(_:)``) has the item's lock state read first.
    func unlockingOnce<Value>(_ path: ObjectPath, _ session: ProviderSession, _ deadline: Deadline, operation: String,
                              writing: Bool = false,
                              _ body: () async throws(SecretServiceError) -> Value) async throws(SecretServiceError) -> Value {
        if writing, ProviderQuirks.checksLockBeforeWriting(session.kind), let item = try? ItemPath(path),
           try await itemInfo(item, session, deadline).isLocked {
            try await unlock([path], session, deadline, operation: operation)
        }
        do throws(SecretServiceError) {
            return try await body()
        } catch where error.code == .locked {
            try await unlock([path], session, deadline, operation: operation)
            return try await body()
        }
    }

    /// Unlocks the collection `path` when it is locked (its lock state is read unless known).
    func ensureUnlocked(collection path: ObjectPath, _ session: ProviderSession, _ deadline: Deadline,
                        operation: String) async throws(SecretServiceError) {
        let locked: Bool
        if let known = session.knownLockState(of: path) {
            locked = known
        } else {
            locked = try await collectionInfo(at: path, session, deadline).isLocked
        }
        if locked {
            try await unlock([path], session, deadline, operation: operation)
        }
    }

    /// The object path of `collection`: aliases are read (and given paths checked) once per session,
    /// concurrent callers sharing the read. A missing `default` collection is created when prompts
    /// are allowed (``createDefaultCollection(_:_:findOperation:)``).
    /// - Throws: `.collectionNotFound`, naming the collections that exist.
    func resolve(_ collection: CollectionReference, _ session: ProviderSession,
                 _ deadline: Deadline) async throws(SecretServiceError) -> ObjectPath {
        let operation = "find \(collection)"
        let path = try await session.aliases.value(for: collection.aliasName ?? collection.description,
                                                   operation: operation, deadline: deadline) { [self] deadline throws(SecretServiceError) in
            if case .path(let given) = collection {
                // A path must name a collection the provider has: otherwise a search "in" it would
                // answer "nothing there" instead of "no such collection".
                return try await collectionPaths(session, deadline).contains(given) ? given : .none
            }
            for _ in 0..<ProviderQuirks.answersBeforeNoDefaultCollection {
                let reply = try await session.call(.service, "org.freedesktop.Secret.Service", "ReadAlias",
                                                   .tuple([.string(collection.aliasName ?? "")]),
                                                   operation: operation, deadline: deadline).body("(o)", in: operation)
                let path = ObjectPath(trusted: reply.child(0).string)
                guard path == .none, collection == .default else { return path }
            }
            return try await createDefaultCollection(session, deadline, findOperation: operation)
        }
        guard path != .none else {
            throw .collectionNotFound(operation, collection, known: try await listCollections(session, deadline))
        }
        return path
    }

    /// The collection at `path`: label and lock state (remembered until the token moves).
    func collectionInfo(at path: ObjectPath, _ session: ProviderSession,
                        _ deadline: Deadline) async throws(SecretServiceError) -> SecretCollectionInfo {
        let operation = "read the collection"
        let reply = try await session.call(path, "org.freedesktop.DBus.Properties", "GetAll",
                                           .tuple([.string("org.freedesktop.Secret.Collection")]),
                                           operation: operation, deadline: deadline)
        let properties = try reply.body("(a{sv})", in: operation).child(0)
        let info = SecretCollectionInfo(path: path, label: properties.lookup("Label", "s")?.string ?? "",
                                        isLocked: properties.lookup("Locked", "b")?.boolean ?? false)
        session.remember(locked: info.isLocked, of: path, at: reply.token)
        return info
    }

    func collectionPaths(_ session: ProviderSession, _ deadline: Deadline) async throws(SecretServiceError) -> [ObjectPath] {
        let operation = "list collections"
        let reply = try await session.call(.service, "org.freedesktop.DBus.Properties", "Get",
                                           .tuple([.string("org.freedesktop.Secret.Service"), .string("Collections")]),
                                           operation: operation, deadline: deadline).body("(v)", in: operation)
        let value = reply.child(0).unboxed
        guard value.isOfType("ao") else { throw .protocolError(operation, detail: "Collections has type \(value.typeString)") }
        return value.strings.map(ObjectPath.init(trusted:))
    }

    func listCollections(_ session: ProviderSession, _ deadline: Deadline) async throws(SecretServiceError) -> [SecretCollectionInfo] {
        var collections: [SecretCollectionInfo] = []
        for path in try await collectionPaths(session, deadline) {
            collections.append(try await collectionInfo(at: path, session, deadline))
        }
        return collections
    }
}
