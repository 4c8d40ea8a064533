import PingStorage

extension Doctor {
    /// The encryption key line's list, naming each key's app (its `pingstorage-app`): each app seals
    /// new data with its own oldest key, never another app's, and opens data with its own keys and
    /// those no app owns (PingStorage 1.x's). `keys` are oldest first and have key ids.
    static func keysPresent(_ keys: [EncryptionKeyItem]) -> String {
        let listed = keys.map { "\($0.keyID!) (\(whose($0)))" }.joined(separator: ", ")
        guard keys.count > 1 else { return "1 key present: \(listed)" }
        let sealing = keys.contains { $0.app != nil } ? "; each app seals new data with its own oldest key" : ""
        return "\(keys.count) keys present: \(listed)\(sealing)"
    }

    /// Whether `key` is the oldest of its app's keys (`keys` oldest first): encrypted saves of that
    /// app fail while it is damaged.
    static func isItsAppsOldest(_ key: EncryptionKeyItem, in keys: [EncryptionKeyItem]) -> Bool {
        keys.first { $0.app == key.app }?.keyID == key.keyID
    }

    private static func whose(_ key: EncryptionKeyItem) -> String {
        key.app.map { "app \($0)" } ?? "no app: PingStorage 1.x's, which every app opens data with"
    }
}
