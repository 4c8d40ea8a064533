#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import TPM
import Waiting

/// What ping-keyring's doctor asks about ``SecuredKeyEncryptor``'s binding to the TPM (``BoundKey``),
/// without the encryptor: whether a TPM answers, and whether it opens a bound key item's bytes.
/// Nothing here creates a key or writes anything. Thread-safety: stateless; any task.
package enum KeyBindingInspection {
    /// The key item attribute and value that mark a bound key (`key-binding` = `tpm`).
    package static let attribute = (name: BoundKey.attribute, value: BoundKey.tpm)

    /// What the TPM says when its owner hierarchy has a password (then no key is bound: the primary
    /// key is made with the empty one).
    package static let ownerPassword = "the TPM's owner hierarchy has a password"

    /// Whether keys can be bound to a TPM within `timeout`: nil when one answers and its owner
    /// hierarchy has no password, else why not (a sentence; for an owner password it starts with
    /// ``ownerPassword`` and says what to do).
    package static func tpmProblem(timeout: Duration) async -> String? {
        let prefix = "cannot bind a key to the TPM: "
        // "cannot bind a key to the TPM: no TPM: …": the reason alone.
        return await TPM.bindingProblem(by: Deadline(timeout: timeout)).map { error in
            error.message.hasPrefix(prefix) ? String(error.message.dropFirst(prefix.count)) : error.message
        }
    }

    /// Whether a key item (its attributes and secret) is bound to a TPM.
    package static func isBound(attributes: [String: String], bytes: Data) -> Bool {
        BoundKey.isBound(attributes) || BoundKey.isBound(bytes: bytes)
    }

    /// Whether a key item's secret has the shape of a key: 32 bytes, or a bound key's blobs and
    /// wrapped key (``BoundKey/decode(_:)``).
    package static func holdsAKey(_ bytes: Data) -> Bool {
        bytes.count == 32 || (BoundKey.isBound(bytes: bytes) && BoundKey.decode([UInt8](bytes)) != nil)
    }

    /// Whether this machine's TPM opens a bound key item's bytes: true, false when it refuses them
    /// as another TPM's (cleared, replaced, another machine), nil when it cannot be asked or the
    /// bytes are not a bound key. One TPM command.
    package static func tpmOpens(_ bytes: Data, timeout: Duration) async -> Bool? {
        switch await BoundKeys().unbind(bytes, by: Deadline(timeout: timeout)) {
        case .success: true
        case .failure(.tpm(let error)) where error.kind == .foreignKey: false
        case .failure: nil
        }
    }
}
