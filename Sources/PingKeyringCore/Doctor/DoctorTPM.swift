#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PingStorage

extension Doctor {
    /// What to do when the key binding check fails.
    enum TPMFix {
        static let unreachable = "give this user the TPM (the tss group for /dev/tpmrm0, or a running tpm2-abrmd), or "
            + "choose the connection with PINGSTORAGE_TPM_TCTI; inside a Flatpak sandbox the TPM needs --device=all."
        static let ownerPassword = "remove the owner hierarchy's password (`tpm2_changeauth -c owner -p OLD-PASSWORD`, with no new "
            + "one; it was set with tpm2_changeauth or by another tool), then run the apps again: their keys are bound again "
            + "and the bound ones open."
        static func cleared(_ ids: [String]) -> String {
            "the apps sign in again (their next saves use a key of this TPM). Once they have, delete the lost key"
                + (ids.count == 1 ? "" : "s") + ": "
                + ids.map { "`secret-tool clear xdg:schema \(KeyringCommands.keySchemaName) key-id \($0)`" }.joined(separator: ", ") + "."
        }
    }

    /// The key binding line: whether SecuredKeyEncryptor's keys are bound to this machine's TPM,
    /// whether a TPM answers, and whether it opens the bound keys. Asks the TPM (at most 10 s).
    /// None when the keys cannot be listed: the encryption key line fails then, and says why.
    static func keyBindingCheck(_ environment: any DoctorEnvironment) async -> DoctorCheck? {
        guard let keys = try? await environment.encryptionKeys() else { return nil }
        return keyBindingCheck(keys: keys, tpmProblem: await KeyBindingInspection.tpmProblem(timeout: .seconds(10)))
    }

    /// The key binding line for `keys`, with `tpmProblem` nil when a TPM answers, else why not.
    static func keyBindingCheck(keys: [EncryptionKeyItem], tpmProblem: String?) -> DoctorCheck {
        let id = "keyBinding", title = "key binding"
        let keys = keys.filter { $0.keyID != nil }.sorted { ($0.created, $0.keyID!) < ($1.created, $1.keyID!) }
        let bound = keys.filter(\.isBound), unboundCount = keys.count - bound.count
        let unboundNote = unboundCount == 0 ? "" : "; \(unboundCount) unbound key\(unboundCount == 1 ? "" : "s") kept (the items "
            + "saved with \(unboundCount == 1 ? "it" : "them") move to a bound key on their next save)"
        if let tpmProblem {
            guard bound.isEmpty else {
                return .fail(id, title, ToolError(kind: "tpmUnavailable", message: "\(bound.count) key\(bound.count == 1 ? " is" : "s are") "
                    + "bound to a TPM, but \(tpmProblem): what \(bound.count == 1 ? "it" : "they") encrypted cannot be decrypted here"),
                    fix: tpmProblem.hasPrefix(KeyBindingInspection.ownerPassword) ? TPMFix.ownerPassword : TPMFix.unreachable)
            }
            return .pass(id, title, "not bound: \(tpmProblem). Keys are kept in the keyring as they are: a copy of the keyring opens them")
        }
        let lost = bound.filter { $0.binding == .bound(wellFormed: true, tpmOpens: false) }.map { $0.keyID! }
        if !lost.isEmpty {
            return .fail(id, title, ToolError(kind: "tpmCleared", message: "\(lost.count == 1 ? "key" : "keys") \(lost.joined(separator: ", ")) "
                + "\(lost.count == 1 ? "is" : "are") bound to a TPM that cannot open \(lost.count == 1 ? "it" : "them"): this machine's TPM "
                + "was cleared or replaced, or the keyring comes from another machine. What \(lost.count == 1 ? "it" : "they") encrypted is lost"),
                fix: TPMFix.cleared(lost))
        }
        guard let current = bound.first else {
            return .pass(id, title, "not bound yet: a TPM answers, and the next encrypted save makes a key bound to it" + unboundNote)
        }
        return .pass(id, title, "bound: key \(current.keyID!) is bound to this machine's TPM, which opens it" + unboundNote)
    }
}
