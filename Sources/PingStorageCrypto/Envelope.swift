#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import Gcrypt

/// The versioned binary format of an encrypted item: AES-256-GCM ciphertext with everything needed
/// to open it except the key.
///
/// ## Byte layout, version 1
///
/// All offsets in bytes; multi-byte fields are raw bytes (no integers, so no endianness).
///
/// | Offset      | Length | Field       | Contents                                                       |
/// |-------------|--------|-------------|----------------------------------------------------------------|
/// | 0           | 4      | magic       | `89 50 53 45` (`0x89`, then ASCII `PSE`, "Ping Storage Envelope") |
/// | 4           | 1      | version     | `01`                                                           |
/// | 5           | 16     | key ID      | ``KeyID`` of the key that sealed it, chosen when the key was made |
/// | 21          | 12     | nonce       | 96-bit GCM nonce, fresh from libgcrypt's CSPRNG for every seal   |
/// | 33          | n      | ciphertext  | AES-256-GCM ciphertext, as long as the plaintext (n ≥ 0)        |
/// | 33 + n      | 16     | tag         | 128-bit GCM authentication tag                                  |
///
/// Bytes 0..<33 are the *header* (``headerByteCount``); an envelope is always
/// ``overheadByteCount`` (49) bytes longer than its plaintext, so the shortest one (empty plaintext)
/// is 49 bytes and the longest accepted is ``maximumEnvelopeByteCount``
/// (49 + ``maximumPlaintextByteCount`` = 64 MiB + 49).
///
/// The GCM additional authenticated data is the 33 header bytes followed by the caller's associated
/// data (for KeychainStorage: the item's service and account). Every byte of the envelope is
/// therefore authenticated: changing the magic, version, key ID, nonce, ciphertext or tag, cutting
/// or extending it, or opening it under different associated data fails with
/// ``EnvelopeError/authenticationFailed`` (or an earlier format error). The associated data itself
/// is not stored; the reader must supply the same bytes.
///
/// The first magic byte, `0x89`, cannot start a UTF-8 text, so data stored before encryption was
/// enabled (JSON) is never mistaken for an envelope: see ``isEnvelope(_:)``.
///
/// ## Checks on input, in order
/// 1. Shorter than the magic and a prefix of it, or shorter than magic + version:
///    ``EnvelopeError/truncated(length:minimum:)``. Not starting with the magic:
///    ``EnvelopeError/wrongMagic``.
/// 2. Version other than 1: ``EnvelopeError/unsupportedVersion(_:)``.
/// 3. Shorter than 49 bytes: ``EnvelopeError/truncated(length:minimum:)``; longer than
///    ``maximumEnvelopeByteCount``: ``EnvelopeError/oversized(length:maximum:)``.
/// 4. Tag does not verify: ``EnvelopeError/authenticationFailed``. (A cut that leaves at least 49
///    bytes is only detectable here, since the ciphertext length is not stored.)
///
/// No input can make these functions crash or read outside the given bytes.
///
/// Thread-safety: all functions are pure and may be called from any thread concurrently.
public enum Envelope {
    /// The four bytes every envelope starts with: `0x89 'P' 'S' 'E'`.
    public static let magic = Data([0x89, 0x50, 0x53, 0x45])
    /// The format version ``seal(_:key:keyID:associatedData:)`` writes, and the only one ``open(_:key:associatedData:)`` reads.
    public static let currentVersion: UInt8 = 1
    /// Length of the version-1 header (magic, version, key ID, nonce): 33 bytes.
    public static let headerByteCount = magicByteCount + 1 + KeyID.byteCount + AESGCM.nonceByteCount
    /// How much longer an envelope is than its plaintext: header + tag = 49 bytes.
    public static let overheadByteCount = headerByteCount + AESGCM.tagByteCount
    /// The largest plaintext accepted: 64 MiB. Keychain items are tokens of a few KiB; the limit
    /// exists so corrupt or hostile input cannot make a reader allocate without bound.
    public static let maximumPlaintextByteCount = 64 * 1024 * 1024
    /// The largest envelope accepted: ``maximumPlaintextByteCount`` + ``overheadByteCount``.
    public static let maximumEnvelopeByteCount = maximumPlaintextByteCount + overheadByteCount

    private static let magicByteCount = 4
    private static let magicBytes: [UInt8] = [0x89, 0x50, 0x53, 0x45]
    private static let versionOffset = 4
    private static let keyIDRange = 5..<21
    private static let nonceRange = 21..<33

    // MARK: Public API

    /// Whether `data` starts with ``magic``, i.e. claims to be an envelope (of any version, intact
    /// or not). Use it to tell encrypted items from ones stored in clear; ``header(of:)`` and
    /// ``open(_:key:associatedData:)`` then say precisely what is wrong, if anything.
    public static func isEnvelope(_ data: Data) -> Bool {
        data.count >= magicByteCount && data.prefix(magicByteCount).elementsEqual(magicBytes)
    }

    /// Reads and validates the header of `envelope` without decrypting anything: the format version
    /// and the identifier of the key that sealed it (so the caller can find that key).
    ///
    /// The header is not authenticated until ``open(_:key:associatedData:)`` succeeds; use the key
    /// ID to choose a key, not to trust anything.
    ///
    /// - Throws: ``EnvelopeError/wrongMagic``, ``EnvelopeError/unsupportedVersion(_:)``,
    ///   ``EnvelopeError/truncated(length:minimum:)`` or ``EnvelopeError/oversized(length:maximum:)``.
    public static func header(of envelope: Data) throws -> EnvelopeHeader {
        try envelope.withUnsafeBytes { parse($0) }.get().header
    }

    /// Encrypts `plaintext` under `key` into a new version-1 envelope with a fresh random nonce.
    ///
    /// - Parameters:
    ///   - plaintext: the bytes to protect, at most ``maximumPlaintextByteCount``. Not copied.
    ///   - key: the AES-256 key.
    ///   - keyID: the identifier stored with `key`; written into the envelope so a reader can find
    ///     the key again.
    ///   - associatedData: bytes the envelope is bound to but that are not stored in it (the item's
    ///     service and account); ``open(_:key:associatedData:)`` needs the same bytes.
    /// - Returns: the envelope, ``overheadByteCount`` bytes longer than `plaintext`.
    /// - Throws: ``EnvelopeError/plaintextTooLarge(length:maximum:)``,
    ///   ``EnvelopeError/cryptoUnavailable``, or ``EnvelopeError/libraryFailure(operation:code:message:)``.
    public static func seal(_ plaintext: Data, key: SymmetricKey, keyID: KeyID, associatedData: Data) throws -> Data {
        try CryptoLibrary.requireAvailable()
        var nonce = Data(count: AESGCM.nonceByteCount)
        nonce.withUnsafeMutableBytes { Random.fill($0, level: .strong) }
        return try seal(plaintext, key: key, keyID: keyID, associatedData: associatedData, nonce: nonce)
    }

    /// Verifies and decrypts `envelope`.
    ///
    /// Nothing is returned unless the whole envelope and `associatedData` authenticate; the
    /// decrypted bytes of a failed attempt are zeroed before the error is thrown.
    ///
    /// - Parameters:
    ///   - envelope: bytes produced by ``seal(_:key:keyID:associatedData:)``; any input is safe.
    ///   - key: the key whose ID is in the envelope's header (see ``header(of:)``).
    ///   - associatedData: the same bytes that were given when sealing.
    /// - Returns: the plaintext.
    /// - Throws: the format errors listed under ``header(of:)``; ``EnvelopeError/authenticationFailed``
    ///   when the envelope was modified, `key` is not the sealing key, or `associatedData` differs;
    ///   ``EnvelopeError/cryptoUnavailable``; ``EnvelopeError/libraryFailure(operation:code:message:)``.
    public static func open(_ envelope: Data, key: SymmetricKey, associatedData: Data) throws -> Data {
        try CryptoLibrary.requireAvailable()
        return try envelope.withUnsafeBytes { bytes -> Result<Data, EnvelopeError> in
            parse(bytes).flatMap { parsed in
                let header = UnsafeRawBufferPointer(rebasing: bytes[0..<headerByteCount])
                let ciphertext = UnsafeRawBufferPointer(rebasing: bytes[headerByteCount..<parsed.tagOffset])
                let tag = UnsafeRawBufferPointer(rebasing: bytes[parsed.tagOffset...])
                let nonce = UnsafeRawBufferPointer(rebasing: bytes[nonceRange])
                let aad = authenticatedData(header: header, associatedData: associatedData)
                var plaintext = Data(count: ciphertext.count)
                let result = aad.withUnsafeBytes { aad in
                    plaintext.withUnsafeMutableBytes { out in
                        AESGCM.open(key: key.aesKey, nonce: nonce, aad: aad, ciphertext: ciphertext, tag: tag, plaintext: out)
                    }
                }
                // AESGCM.open has already zeroed `plaintext` on failure.
                return result.map { plaintext }
            }
        }.get()
    }

    // MARK: Internals

    /// Seals with a caller-chosen nonce. Tests only (a repeated nonce under one key breaks GCM);
    /// production code uses ``seal(_:key:keyID:associatedData:)``.
    package static func seal(
        _ plaintext: Data, key: SymmetricKey, keyID: KeyID, associatedData: Data, nonce: Data
    ) throws -> Data {
        try CryptoLibrary.requireAvailable()
        guard plaintext.count <= maximumPlaintextByteCount else {
            throw EnvelopeError.plaintextTooLarge(length: plaintext.count, maximum: maximumPlaintextByteCount)
        }
        precondition(nonce.count == AESGCM.nonceByteCount, "a GCM nonce is 12 bytes")

        var header = [UInt8](repeating: 0, count: headerByteCount)
        header.withUnsafeMutableBytes { header in
            header.copyBytes(from: magicBytes)
            header[versionOffset] = currentVersion
            keyID.write(to: UnsafeMutableRawBufferPointer(rebasing: header[keyIDRange]))
            nonce.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: header[nonceRange]).copyMemory(from: $0) }
        }

        var envelope = Data(count: plaintext.count + overheadByteCount)
        let tagOffset = headerByteCount + plaintext.count
        let result = header.withUnsafeBytes { header in
            let aad = authenticatedData(header: header, associatedData: associatedData)
            return aad.withUnsafeBytes { aad in
                plaintext.withUnsafeBytes { plaintext in
                    envelope.withUnsafeMutableBytes { out in
                        UnsafeMutableRawBufferPointer(rebasing: out[0..<headerByteCount]).copyMemory(from: header)
                        return AESGCM.seal(
                            key: key.aesKey, nonce: UnsafeRawBufferPointer(rebasing: header[nonceRange]), aad: aad,
                            plaintext: plaintext,
                            ciphertext: UnsafeMutableRawBufferPointer(rebasing: out[headerByteCount..<tagOffset]),
                            tag: UnsafeMutableRawBufferPointer(rebasing: out[tagOffset...]))
                    }
                }
            }
        }
        try result.get()
        return envelope
    }

    /// A validated envelope: its header and where its tag starts.
    private struct Parsed {
        var header: EnvelopeHeader
        var tagOffset: Int
    }

    /// Validates framing in the documented order. Every index used later is checked here.
    private static func parse(_ bytes: UnsafeRawBufferPointer) -> Result<Parsed, EnvelopeError> {
        let length = bytes.count
        let minimum = overheadByteCount
        // 1. Magic.
        let available = min(length, magicByteCount)
        guard bytes[0..<available].elementsEqual(magicBytes[0..<available]) else { return .failure(.wrongMagic) }
        guard length > versionOffset else { return .failure(.truncated(length: length, minimum: minimum)) }
        // 2. Version.
        let version = bytes[versionOffset]
        guard version == currentVersion else { return .failure(.unsupportedVersion(version)) }
        // 3. Length bounds of version 1.
        guard length >= minimum else { return .failure(.truncated(length: length, minimum: minimum)) }
        guard length <= maximumEnvelopeByteCount else {
            return .failure(.oversized(length: length, maximum: maximumEnvelopeByteCount))
        }
        let keyID = KeyID(bytes: UnsafeRawBufferPointer(rebasing: bytes[keyIDRange]))
        return .success(Parsed(
            header: EnvelopeHeader(version: version, keyID: keyID),
            tagOffset: length - AESGCM.tagByteCount))
    }

    /// The GCM additional authenticated data: the header, then the caller's associated data. The
    /// header has a fixed length per version, so the concatenation is unambiguous.
    private static func authenticatedData(header: UnsafeRawBufferPointer, associatedData: Data) -> [UInt8] {
        var aad = [UInt8]()
        aad.reserveCapacity(header.count + associatedData.count)
        aad.append(contentsOf: header)
        aad.append(contentsOf: associatedData)
        return aad
    }
}

/// What ``Envelope/header(of:)`` reads from an envelope without decrypting it.
public struct EnvelopeHeader: Hashable, Sendable {
    /// The format version (currently always ``Envelope/currentVersion``).
    public let version: UInt8
    /// The identifier of the key that sealed the envelope.
    public let keyID: KeyID
}
