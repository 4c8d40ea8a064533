internal import Gcrypt

// From records to items and back: decrypting every record of a file (setting damaged ones
// aside) and sealing a transaction's items into the records of the file it writes.
extension FileKeyring {
    /// Every record of `file` decrypted under `key`: the items, and the damaged records.
    ///
    /// A record is damaged when it cannot be trusted as an item, whatever the reason: it fails its
    /// MAC (or has a length no MAC can verify), or it passes it but has invalid padding, decrypts
    /// to an invalid item, or to attributes its hashed attributes disagree with. All of them are
    /// one record's problem, not the file's: the key is right (some record passed its MAC), the
    /// rest of the file is sound, and failing every call for one bad record (as this module did)
    /// would stop every other account of the app. None of them is used as an item either: a record
    /// whose hashed attributes disagree is found by libsecret under attributes it does not hold, so
    /// its secret may not be the one its attributes name. So each is skipped, kept byte for byte,
    /// and reported (FileKeyringDamagedRecord).
    ///
    /// Throws ``FileKeyringError/Code/decryptionFailed`` when no record passes its MAC and at least
    /// one fails it: then the master secret is wrong (the format has no other check of it), not
    /// the records damaged. Throws ``FileKeyringError/Code/cryptoFailure`` when libgcrypt fails.
    ///
    /// With `selected`, only the records it selects are decrypted and returned (the others are
    /// neither items nor damaged records here); when none of them passes its MAC, the other records
    /// are tried in order until one does, so that a wrong master secret is still told from a file
    /// without a matching item.
    func decryptAll(_ file: KeyringFile, key: KeyringKey,
                    selected: ((EncryptedRecord) throws(FileKeyringError) -> Bool)? = nil) throws(FileKeyringError) -> FileKeyringContents {
        var items: [FileKeyringItem] = []
        var damaged: [FileKeyringDamagedRecord] = []
        var (passedMAC, failedMAC) = (false, false)
        var passedOver: [EncryptedRecord] = []
        for (index, record) in file.records.enumerated() {
            if let selected, try !selected(record) {
                passedOver.append(record)
                continue
            }
            func setAside(_ damage: FileKeyringDamagedRecord.Damage, decrypted: [String: String]? = nil) {
                damaged.append(.init(index: index, damage: damage, record: record, key: key, decryptedAttributes: decrypted))
            }
            guard KeyringKey.hasPossibleLength(record.blob) else {
                setAside(.failedMAC)
                continue
            }
            let opened: SecretBytes?
            decryptions.withLock { $0 += 1 }
            do throws(FileKeyringError) {
                opened = try key.open(record.blob, path: path)
            } catch where error.code == .corruptFile {
                // The length was checked above: this is bad padding after a good MAC.
                passedMAC = true
                setAside(.invalidItem)
                continue
            }
            guard let plaintext = opened else {
                failedMAC = true
                setAside(.failedMAC)
                continue
            }
            passedMAC = true
            var item: FileKeyringItem
            do throws(MalformedGVariant) {
                item = try ItemPlaintext.deserialize(plaintext)
            } catch {
                setAside(.invalidItem)
                continue
            }
            guard try hashedAttributesAgree(record, item, key: key) else {
                setAside(.inconsistentAttributes, decrypted: item.attributes)
                continue
            }
            item.recordIndex = index
            item.origin = .init(
                key: key, record: record, label: item.label, attributes: item.attributes, secret: item.secret,
                created: item.created, modified: item.modified)
            items.append(item)
        }
        if !passedMAC, !passedOver.isEmpty {
            // The key is checked on the records passed over, until one passes its MAC.
            for record in passedOver where KeyringKey.hasPossibleLength(record.blob) {
                decryptions.withLock { $0 += 1 }
                do throws(FileKeyringError) {
                    if try key.open(record.blob, path: path) != nil { passedMAC = true; break }
                    failedMAC = true
                } catch where error.code == .corruptFile {
                    passedMAC = true
                    break
                }
            }
        }
        if failedMAC, !passedMAC {
            throw FileKeyringError(
                .decryptionFailed,
                "decryption failed: the master secret does not open this keyring (every item failed its MAC check). "
                    + "Use the secret the file was written with (in a Flatpak, the one the Secret portal returns); "
                    + "the file was left as it is",
                path: path)
        }
        return FileKeyringContents(items: items, damaged: damaged)
    }

    /// Whether `record`'s hashed attributes include every pair of at least one of `queries`, the
    /// values hashed once per call (`hashed`: each query's names with the HMACs of its values),
    /// compared in constant time, as libsecret searches. An empty query selects every record.
    static func record(_ record: EncryptedRecord, matchesAnyOf hashed: [[(name: String, mac: [UInt8])]]) -> Bool {
        hashed.contains { query in
            query.allSatisfy { pair in
                record.hashedAttributes.contains { $0.name == pair.name && constantTimeEqual($0.mac, pair.mac) }
            }
        }
    }

    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// The hashed attributes are outside the item's MAC: they must name exactly the item's
    /// attributes, each with the HMAC of its value (oo7 checks the same).
    private func hashedAttributesAgree(_ record: EncryptedRecord, _ item: FileKeyringItem, key: KeyringKey) throws(FileKeyringError) -> Bool {
        guard record.hashedAttributes.count == item.attributes.count else { return false }
        for hashed in record.hashedAttributes {
            guard let value = item.attributes[hashed.name] else { return false }
            let bytes = Array(value.utf8)
            guard try key.verifyMAC(bytes, 0..<bytes.count, expected: hashed.mac, 0..<hashed.mac.count) else { return false }
        }
        return true
    }

    /// The file's records for `items` and `damaged`: unchanged items byte for byte, changed and
    /// new ones encrypted afresh, and every damaged record byte for byte at its old position (or
    /// at the end when fewer records precede it now), so a transaction that changes nothing
    /// writes the records it read, in their order.
    func records(of items: [FileKeyringItem], keeping damaged: [FileKeyringDamagedRecord],
                 key: KeyringKey) throws(FileKeyringError) -> [EncryptedRecord] {
        var records: [EncryptedRecord] = []
        records.reserveCapacity(items.count + damaged.count)
        let now = FileKeyringItem.now()
        for (index, var item) in items.enumerated() {
            if item.isUnchanged(under: key), let origin = item.origin {
                records.append(origin.record)
                continue
            }
            // An item whose content changed and whose modification time the caller left alone was
            // modified now.
            if let origin = item.origin, !item.hasOriginalContent, item.modified == origin.modified {
                item.modified = max(now, origin.modified)
            }
            try item.validate(index: index)
            records.append(try Self.encrypt(item, key: key))
        }
        for record in damaged.sorted(by: { $0.index < $1.index }) {
            records.insert(record.record, at: min(record.index, records.count))
        }
        return records
    }

    /// The record of `item` under `key`: its hashed attributes and its sealed plaintext.
    static func encrypt(_ item: FileKeyringItem, key: KeyringKey) throws(FileKeyringError) -> EncryptedRecord {
        let names = item.attributes.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var hashed: [EncryptedRecord.HashedAttribute] = []
        for name in names { hashed.append(.init(name: name, mac: try key.hashAttribute(item.attributes[name]!))) }
        return EncryptedRecord(hashedAttributes: hashed, blob: try key.seal(ItemPlaintext.serialize(item)))
    }
}
