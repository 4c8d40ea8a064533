#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Waiting

/// Which app identities have items where a configuration keeps them, and moving an old
/// identity's items to the current one: for ping-keyring's `apps` and `move`. A program's identity
/// changes when it moves (its path is its identity unless it calls ``AppIdentity/set(_:)``) or when
/// it starts setting one; its items then stay under the old identity, invisible to it, until they
/// are moved (``KeyringInventory/identities()``, ``KeyringInventory/move(from:)``). Nothing here
/// reads a secret but a key's, to copy it.
///
/// Thread-safety: stateless values and rules.
package enum KeychainIdentities {
    /// An item of a service, or a key item, with its app; never its secret.
    package struct Item: Sendable, Equatable {
        /// Its `pingstorage-app`; nil for an item no app owns.
        package var app: String?
        /// The account it is for (``ItemAccount``); nil for a key item.
        package var account: String?
        /// The key's id, for a key item of SecuredKeyEncryptor.
        package var keyID: String?

        package init(app: String?, account: String?, keyID: String?) {
            (self.app, self.account, self.keyID) = (app, account, keyID)
        }

        /// What an item with `attributes` is: a key item, an item of `service`'s accounts, or nil.
        init?(_ attributes: [String: String], service: String) {
            if attributes["xdg:schema"] == KeyVault.schema, let id = attributes["key-id"] {
                self.init(app: attributes[AppIdentity.attribute], account: nil, keyID: id)
            } else if attributes["service"] == service, let account = ItemAccount(attributes) {
                self.init(app: attributes[AppIdentity.attribute], account: account.name, keyID: nil)
            } else {
                return nil
            }
        }
    }

    /// What moving an identity's items did.
    package struct Move: Sendable, Equatable {
        /// The accounts whose items now carry the new identity.
        package var moved: [String] = []
        /// The accounts left with the old identity: the new one already has an item of them, which
        /// is never overwritten.
        package var skipped: [String] = []
        /// The old identity's keys copied to the new one (its items sealed with them open there);
        /// the old identity keeps them too.
        package var keysCopied: [String] = []

        package init(moved: [String] = [], skipped: [String] = [], keysCopied: [String] = []) {
            (self.moved, self.skipped, self.keysCopied) = (moved, skipped, keysCopied)
        }
    }

    /// The move on a store's items, the same on both: which items to give the new identity (the
    /// old one's items of accounts the new one has none of), the accounts skipped, and which of the
    /// old one's keys to copy (those whose id the new one lacks); indices into `items`.
    static func plan(_ items: [Item], from old: String, to new: String) -> (give: [Int], skip: [String], copyKeys: [Int]) {
        let newAccounts = Set(items.compactMap { $0.app == new ? $0.account : nil })
        let newKeys = Set(items.compactMap { $0.app == new ? $0.keyID : nil })
        var (give, skip, copyKeys) = ([Int](), [String](), [Int]())
        for (index, item) in items.enumerated() where item.app == old {
            if let account = item.account {
                if newAccounts.contains(account) { skip.append(account) } else { give.append(index) }
            } else if let id = item.keyID, !newKeys.contains(id) {
                copyKeys.append(index)
            }
        }
        return (give, skip, copyKeys)
    }
}
