internal import TPM

/// How a TPM key's two blobs are kept in a keyring item: a magic that says whose item it is and
/// which version, then, in the pinned version, the parent's name (``TPMKeyBlob/parentName``), then
/// the public and the private area; each of the three after its length (2 bytes, big-endian, at
/// least 1). One format for SecuredKey's items and for bound keys (``BoundKey``), which differ in
/// their magics and in what follows the blobs.
///
/// Why the pin travels in the key's own bytes, under a new magic, rather than in an attribute or
/// an item of its own: a key and its pin are then written together, once, when the key is made,
/// and read together, so no reader ever sees one without the other, and a copy of the item (a
/// backup, a move into a sandbox's file keyring) carries both. Items of the first version (2.0.0:
/// no pin) still read; their pin is added when they are first used (``TPMKeyBlobMagic``).
struct TPMKeyBlobMagic: Sendable {
    /// The first version's magic: no pin (2.0.0).
    let unpinned: [UInt8]
    /// The pinned version's magic.
    let pinned: [UInt8]

    /// Whether `bytes` start with either magic.
    func starts(_ bytes: some Collection<UInt8>) -> Bool { bytes.starts(with: unpinned) || bytes.starts(with: pinned) }
}

extension TPMKeyBlob {
    /// The pinned magic, the name and the two areas with their lengths; the first version's
    /// layout (no name) for a blob without a pin.
    func encoded(_ magic: TPMKeyBlobMagic) -> [UInt8] {
        func length(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)] }
        let pin = parentName.map { length($0) + $0 } ?? []
        return (parentName == nil ? magic.unpinned : magic.pinned) + pin + length(publicArea) + publicArea + length(privateArea) + privateArea
    }

    /// The blob at the start of `bytes` (pinned or not, as its magic says) and the bytes after it,
    /// read with bounds; nil when `bytes` do not start with a magic and the parts it names, non-empty
    /// and fitting.
    static func decode(_ bytes: [UInt8], _ magic: TPMKeyBlobMagic) -> (blob: TPMKeyBlob, rest: ArraySlice<UInt8>)? {
        var offset = 0
        func take(_ count: Int) -> [UInt8]? {
            guard count >= 0, bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return Array(bytes[offset..<(offset + count)])
        }
        func part() -> [UInt8]? {
            guard let size = take(2) else { return nil }
            let count = Int(size[0]) << 8 | Int(size[1])
            return count > 0 ? take(count) : nil
        }
        let parentName: [UInt8]?
        if bytes.starts(with: magic.pinned) {
            offset = magic.pinned.count
            guard let name = part() else { return nil }
            parentName = name
        } else {
            guard take(magic.unpinned.count) == magic.unpinned else { return nil }
            parentName = nil
        }
        guard let publicArea = part(), let privateArea = part() else { return nil }
        return (TPMKeyBlob(publicArea: publicArea, privateArea: privateArea, parentName: parentName), bytes[offset...])
    }
}
