internal import TPM

/// How a TPM key's two blobs are kept in a keyring item: a magic that says whose item it is, then
/// the public and the private area, each after its length (2 bytes, big-endian, at least 1). One
/// format for SecuredKey's items and for bound keys (``BoundKey``), which differ in their magic
/// and in what follows the blobs.
extension TPMKeyBlob {
    /// `magic`, then the two areas with their lengths.
    func encoded(magic: [UInt8]) -> [UInt8] {
        func length(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)] }
        return magic + length(publicArea) + publicArea + length(privateArea) + privateArea
    }

    /// The blob at the start of `bytes` and the bytes after it, read with bounds; nil when `bytes`
    /// do not start with `magic` and two non-empty areas that fit.
    static func decode(_ bytes: [UInt8], magic: [UInt8]) -> (blob: TPMKeyBlob, rest: ArraySlice<UInt8>)? {
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
        guard take(magic.count) == magic, let publicArea = part(), let privateArea = part() else { return nil }
        return (TPMKeyBlob(publicArea: publicArea, privateArea: privateArea), bytes[offset...])
    }
}
