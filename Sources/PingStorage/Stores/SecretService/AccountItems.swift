#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import SecretService

extension ItemAge {
    /// A Secret Service item's age; its number is the last element of its object path.
    init(_ info: SecretItemInfo) {
        self.init(modified: info.modified, created: info.created,
                  number: Int(info.path.objectPath.lastElement) ?? -1, path: info.path.rawValue)
    }
}

/// One account's items in the Secret Service, through calls that end by one operation's deadline:
/// the searches, the choice among duplicates, the create race and the remembered item of
/// ``SecretServiceStore``.
struct AccountItems: Sendable {
    let rules: AccountRules
    let calls: any SecretServiceCalls

    /// The account's items as a search found them, with the token of that answer.
    struct FoundItems: Sendable {
        /// The app's own items of the account.
        var own: [ItemPath]
        /// The account's items no app owns; nil when they were not looked at (the app has items of
        /// its own, and the caller did not ask: reads and saves never use them then).
        var unowned: [ItemPath]?
        /// Metadata already read during the search (items found past the app's own), by path.
        var known: [ItemPath: SecretItemInfo]
        var token: ChangeToken?

        /// The items a read chooses among (``AccountRules/readable(_:)``): the app's own, else those
        /// no app owns.
        var readable: [ItemPath] { own.isEmpty ? unowned ?? [] : own }
    }

    // MARK: Finding the account's items

    /// The account's items in the configured collection, unlocked (possibly none).
    ///
    /// Three searches go out at once (one round trip): the app's own items (`service`, `account`
    /// and the app), and every item with `service` + `account` (secret-tool's, PingStorage 1.x's,
    /// other apps') or `service` + `username` (Python keyring and go-keyring write `username` and
    /// no `account`). Items found only by the last two are read to tell the account's items no app
    /// owns from other apps' (``AccountRules/ownership(of:)``): only when the app has no item of its
    /// own, or when `lookingPastOwn` (a delete removes them too). When the answers do not describe
    /// the same moment (their tokens differ, or the wider searches found an item of the app's own
    /// that the first did not), they are asked again, three times at most; answers that still
    /// disagree carry no token, so nothing is remembered from them.
    func accountItems(lookingPastOwn: Bool = false) async throws(SecretServiceError) -> FoundItems {
        var attempt = 0
        while true {
            attempt += 1
            let (byAccount, byUsername) = (rules.lookupAttributes, rules.usernameAttributes)
            let collection = CollectionReference(rules.collection)
            let backend = calls
            async let accountSearch = Self.result { () async throws(SecretServiceError) in
                try await backend.searchItems(matching: byAccount, in: collection)
            }
            async let usernameSearch = Self.result { () async throws(SecretServiceError) in
                try await backend.searchItems(matching: byUsername, in: collection)
            }
            let ours = try await backend.findItems(matching: rules.ownAttributes, in: collection)
            let (others, theirs) = (try await accountSearch.get(), try await usernameSearch.get())
            let sameMoment = others.changeToken.isUnchanged(since: ours.changeToken)
                && theirs.changeToken.isUnchanged(since: ours.changeToken)
            if !sameMoment && attempt < 3 { continue }
            let own = ours.all
            // Each item once: another app's item carries `account` and `username`, so both searches
            // find it, and reading it twice would cost a round trip more per search.
            var candidates: [ItemPath] = []
            for path in others.all + theirs.all where !own.contains(path) && !candidates.contains(path) {
                candidates.append(path)
            }
            let token = sameMoment ? ours.changeToken : nil
            guard own.isEmpty || lookingPastOwn || candidates.isEmpty else {
                return FoundItems(own: own, unowned: nil, known: [:], token: token)
            }
            var unowned: [ItemPath] = []
            var known: [ItemPath: SecretItemInfo] = [:]
            var ownFoundPast: [ItemPath] = []
            for path in candidates {
                let info = try await backend.itemInfo(path)
                switch rules.ownership(of: info.attributes) {
                case .unowned:
                    known[path] = info
                    unowned.append(path)
                case .own:
                    ownFoundPast.append(path)
                case nil:
                    continue
                }
            }
            // An item of the app's own that only the wider searches found: the answers were not of
            // one moment, whatever the tokens say (a provider's announcement of the creation may
            // come after its answers). Taken for the app's own on the last attempt.
            if !ownFoundPast.isEmpty {
                if attempt < 3 { continue }
                return FoundItems(own: own + ownFoundPast, unowned: unowned, known: known, token: nil)
            }
            // Items taken that were locked: unlock them the way findItems unlocked ours.
            if others.locked.contains(where: { known[$0] != nil }) {
                _ = try await backend.findItems(matching: byAccount, in: collection)
            }
            if theirs.locked.contains(where: { known[$0] != nil }) {
                _ = try await backend.findItems(matching: byUsername, in: collection)
            }
            return FoundItems(own: own, unowned: unowned, known: known, token: token)
        }
    }

    private static func result<Value>(_ body: () async throws(SecretServiceError) -> Value) async -> Result<Value, SecretServiceError> {
        do throws(SecretServiceError) { return .success(try await body()) } catch { return .failure(error) }
    }

    /// The item to use among `paths` (duplicates of one ownership), for `choice`. Deterministic
    /// whoever asks.
    func chosen(_ paths: [ItemPath], of found: FoundItems, for choice: DuplicateChoice) async throws(SecretServiceError) -> SecretItemInfo {
        var infos: [SecretItemInfo] = []
        for path in paths {
            if let known = found.known[path] { infos.append(known) } else { infos.append(try await calls.itemInfo(path)) }
        }
        return rules.chosen(infos, for: choice, age: ItemAge.init)!
    }

    /// ``chosen(_:of:for:)`` and its secret. When there is one item, its metadata and its secret are
    /// asked for at once: one round trip.
    func chosenWithSecret(_ paths: [ItemPath], of found: FoundItems,
                          for choice: DuplicateChoice) async throws(SecretServiceError) -> (SecretItemInfo, SecretRead) {
        guard paths.count == 1, found.known[paths[0]] == nil else {
            let target = try await chosen(paths, of: found, for: choice)
            return (target, try await calls.secret(of: target.path))
        }
        let path = paths[0], backend = calls
        async let info: Result<SecretItemInfo, SecretServiceError> = { () async -> Result<SecretItemInfo, SecretServiceError> in
            do throws(SecretServiceError) { return .success(try await backend.itemInfo(path)) } catch { return .failure(error) }
        }()
        let read: SecretRead
        do throws(SecretServiceError) {
            read = try await backend.secret(of: path)
        } catch {
            _ = await info
            throw error
        }
        return (try await info.get(), read)
    }

    // MARK: Creating and completing

    /// Creates the app's own item of the account (`found`, the search that found none), then makes
    /// sure it is the app's only one. Items no app owns are left as they are.
    ///
    /// Not `CreateItem(replace: true)`: two processes creating the same account at once would
    /// each replace the other's item, and on some providers a replace of an item another client
    /// created waits on an access dialog (SecretService's ProviderQuirks). So the item is created
    /// without replace; when anything else was created or deleted since the search that found
    /// nothing, the account is searched again and duplicates that a concurrent creator of the same
    /// app left are collapsed onto the one every process picks alike (``DuplicateChoice/toKeep``),
    /// so racing processes converge on one item instead of each deleting the other's.
    func create(_ value: SecretValue, after found: FoundItems) async throws(SecretServiceError) {
        let created = try await calls.createItem(in: CollectionReference(rules.collection), label: rules.label, attributes: rules.itemAttributes,
                                                 secret: value, replacing: false)
        calls.rememberedItems.recordOwnItem(created.path)
        // GNOME Keyring announces our ItemCreated, alone, before its answer to CreateItem: one
        // change since the search means nothing else happened in between, so the item is the
        // app's only one. (KWallet announces the creation four times, KeePassXC after answering:
        // there the account is searched again.) A process creating the account after us sees our
        // ItemCreated, and collapses the two.
        if let searchToken = found.token, created.changeToken.changes(since: searchToken) == 1 {
            calls.rememberedItems[rules.lockKey] = .init(path: created.path, token: created.changeToken,
                                                         isComplete: true, unowned: found.unowned,
                                                         digest: RememberedItems.digest(value.bytes))
            return
        }
        let again = try await accountItems()
        guard again.own != [created.path], !again.own.isEmpty else { return }
        let target = try await chosen(again.own, of: again, for: .toKeep)
        for duplicate in again.own where duplicate != target.path {
            Log.info("Account '\(rules.account)': another process of the app created it at the same time; removing \(duplicate), "
                + "keeping \(target.path)")
            _ = try await calls.deleteItem(duplicate)
        }
    }

    /// Whether the item carries all our attributes and our label.
    func isComplete(_ item: SecretItemInfo) -> Bool { rules.isComplete(label: item.label, attributes: item.attributes) }

    /// Gives an item of the app's own that lacks them our label and attributes (keeping the item's
    /// others), best effort: the item is found by its service, account and app either way, and a
    /// provider that still refuses (after the client's own retry without the attributes a provider
    /// computes itself) keeps what it has.
    func complete(_ item: SecretItemInfo) async throws(SecretServiceError) {
        let (label, wanted) = (rules.label, item.attributes.merging(rules.itemAttributes) { $1 })
        do {
            try await calls.updateItem(item.path, label: item.label == label ? nil : label,
                                       attributes: wanted == item.attributes ? nil : wanted)
        } catch where error.code == .providerError {
            if item.label != label { try? await calls.updateItem(item.path, label: label, attributes: nil) }
        }
    }

    // MARK: The remembered item

    /// The remembered item, if nothing was created or deleted since it was found.
    func rememberedItem() -> RememberedItems.Entry? {
        guard let known = calls.rememberedItems[rules.lockKey], let now = calls.currentChangeToken,
              now.isUnchanged(since: known.token) else { return nil }
        return known
    }

    /// Remembers `item`, the one a read takes, when it is the app's own, it was the only one to
    /// choose from, and nothing changed between the search and `answer` (with duplicates, or after
    /// a change, the next call searches again). An item no app owns is never remembered: the app's
    /// own item may appear through an attribute change that a provider does not announce (KWallet
    /// announces none for `Attributes` set), and from then on the item no app owns must not be read.
    func remember(_ item: SecretItemInfo, found: FoundItems, answeredAt answer: ChangeToken, holding bytes: Data) {
        guard found.own == [item.path], let token = found.token, answer.isUnchanged(since: token) else {
            forget()
            return
        }
        calls.rememberedItems[rules.lockKey] = .init(path: item.path, token: token, isComplete: isComplete(item),
                                                     unowned: found.unowned, digest: RememberedItems.digest(bytes))
    }

    func forget() { calls.rememberedItems[rules.lockKey] = nil }

    /// Keeps the remembered item valid after this process's own write into it (`path`), answered
    /// at `answer`: when all that was announced since it was found is about that item (our own
    /// SetSecret's ItemChanged, which KWallet sends twice before answering), it is re-stamped at
    /// `answer`, so the write does not cost the next call a search. (KeePassXC announces after
    /// answering: its ItemChanged then moves the token, and the next call searches.) Another
    /// client changing that same item within the write's round trip is not told apart from ours.
    func keepRemembered(afterWritingTo path: ItemPath, answeredAt answer: ChangeToken) {
        guard var known = calls.rememberedItems[rules.lockKey], known.path == path,
              let heard = calls.announcements(between: known.token, and: answer),
              heard.allSatisfy({ $0.kind == .changed && $0.item == path }) else { return }
        known.token = answer
        calls.rememberedItems[rules.lockKey] = known
    }

    // MARK: Reading and writing

    /// Reads the remembered item; nil when it turned out stale (then the caller searches).
    func readRemembered(_ known: RememberedItems.Entry) async throws(SecretServiceError) -> SecretValue? {
        do {
            let read = try await calls.secret(of: known.path)
            // An item created or deleted while we read (its signal precedes our answer) may be a
            // newer duplicate: the value is then not trusted.
            guard read.changeToken.isUnchanged(since: known.token) else { return nil }
            calls.rememberedItems.saw(read.value.bytes, at: known.path, for: rules.lockKey)
            return read.value
        } catch where error.code == .itemNotFound {
            forget()
            return nil
        }
    }

    /// Writes through the remembered item, the app's own (``RememberedItems/Entry/path``): whether
    /// it wrote (false: the item held the value already, by `holds`), or nil when the remembered
    /// item turned out stale.
    func writeRemembered(_ known: RememberedItems.Entry, _ value: SecretValue,
                         _ holds: (Data) -> Bool) async throws(SecretServiceError) -> Bool? {
        do {
            var current = try await calls.secret(of: known.path)
            defer { current.value.bytes.wipe() }
            guard current.changeToken.isUnchanged(since: known.token) else { return nil }
            // Bytes only: a provider may report every secret as text/plain, so comparing content
            // types would rewrite unchanged binary values every time.
            if holds(current.value.bytes) {
                calls.rememberedItems.saw(current.value.bytes, at: known.path, for: rules.lockKey)
                return false
            }
            let written = try await calls.setSecret(value, of: known.path)
            calls.rememberedItems.saw(value.bytes, at: known.path, for: rules.lockKey)
            keepRemembered(afterWritingTo: known.path, answeredAt: written)
            return true
        } catch where error.code == .itemNotFound {
            forget()
            return nil
        }
    }

    /// Another client may delete or replace the item between our search and our next call; start
    /// over from the search when that happens (a few times: other processes may keep doing it).
    func retryingVanishedItem<Value>(_ body: () async throws(SecretServiceError) -> Value) async throws(SecretServiceError) -> Value {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch where error.code == .itemNotFound && attempt < 4 {
                forget()
                attempt += 1
            }
        }
    }
}
