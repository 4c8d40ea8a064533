import Foundation
import PingStorage
import Testing
@testable import PingKeyringCore

/// The doctor's key binding line (DoctorTPM.swift): bound, not bound (and why), keys a TPM cannot
/// reach or no longer opens; and the encryption key line takes a bound key's bytes for a key.
@Suite("Doctor: whether SecuredKeyEncryptor's keys are bound to the TPM")
struct DoctorTPMTests {
    private static let old = "0123456789abcdef0123456789abcdef", new = "fedcba9876543210fedcba9876543210"

    private func key(_ id: String, created: TimeInterval, _ binding: KeyItemBinding = .unbound) -> EncryptionKeyItem {
        EncryptionKeyItem(path: "/org/freedesktop/secrets/collection/login/\(created)", keyID: id,
                          byteCount: binding == .unbound ? 32 : 339, created: Date(timeIntervalSince1970: created), binding: binding)
    }

    @Test func boundWhenTheTPMOpensTheKey() {
        let check = Doctor.keyBindingCheck(keys: [key(Self.old, created: 1), key(Self.new, created: 2, .bound(wellFormed: true, tpmOpens: true))],
                                           tpmProblem: nil)
        #expect(check.status == .pass)
        #expect(check.detail == "bound: key \(Self.new) is bound to this machine's TPM, which opens it; 1 unbound key kept "
                + "(the items saved with it move to a bound key on their next save)")
    }

    @Test func notBoundYetWhenATPMAnswersAndNotBoundWithoutOne() {
        let yet = Doctor.keyBindingCheck(keys: [key(Self.old, created: 1)], tpmProblem: nil)
        #expect(yet.status == .pass && yet.detail.hasPrefix("not bound yet: a TPM answers"))
        let none = Doctor.keyBindingCheck(keys: [key(Self.old, created: 1)], tpmProblem: "no TPM: /dev/tpmrm0 cannot be opened")
        #expect(none.status == .pass)
        #expect(none.detail == "not bound: no TPM: /dev/tpmrm0 cannot be opened. Keys are kept in the keyring as they are: "
                + "a copy of the keyring opens them")
    }

    @Test func boundKeysWithoutAReachableTPMFail() {
        let check = Doctor.keyBindingCheck(keys: [key(Self.new, created: 2, .bound(wellFormed: true, tpmOpens: nil))],
                                           tpmProblem: "no TPM: PINGSTORAGE_TPM_TCTI=none")
        #expect(check.status == .fail && check.errorKind == "tpmUnavailable")
        #expect(check.detail.contains("cannot be decrypted here") && check.fix == Doctor.TPMFix.unreachable)
    }

    /// An owner hierarchy password (issue 36): keys stay unbound and the line says why; bound keys
    /// fail with the fix that removes the password, not the one that reaches the TPM.
    @Test func anOwnerPasswordIsExplainedWithItsOwnFix() {
        let problem = KeyBindingInspection.ownerPassword + ", and keys are bound under its storage primary key"
        let unbound = Doctor.keyBindingCheck(keys: [key(Self.old, created: 1)], tpmProblem: problem)
        #expect(unbound.status == .pass && unbound.detail.hasPrefix("not bound: the TPM's owner hierarchy has a password"))
        let bound = Doctor.keyBindingCheck(keys: [key(Self.new, created: 2, .bound(wellFormed: true, tpmOpens: nil))], tpmProblem: problem)
        #expect(bound.status == .fail && bound.fix == Doctor.TPMFix.ownerPassword)
    }

    @Test func keysTheTPMNoLongerOpensFailWithTheirIdsAndTheFix() {
        let check = Doctor.keyBindingCheck(keys: [key(Self.old, created: 1, .bound(wellFormed: true, tpmOpens: false)),
                                                  key(Self.new, created: 2, .bound(wellFormed: true, tpmOpens: true))], tpmProblem: nil)
        #expect(check.status == .fail && check.errorKind == "tpmCleared" && check.exitStatus == .corrupt)
        #expect(check.detail.hasPrefix("key \(Self.old) is bound to a TPM that cannot open it: this machine's TPM was cleared"))
        #expect(check.fix == Doctor.TPMFix.cleared([Self.old]))
    }

    /// A bound key item holds its TPM blobs and the wrapped key, not 32 bytes: sound, unless its
    /// bytes are not a bound key's.
    @Test func theEncryptionKeyLineTakesABoundKeyForAKey() {
        let sound = Doctor.encryptionKeyCheck(.success([key(Self.new, created: 2, .bound(wellFormed: true, tpmOpens: true))]))
        #expect(sound.status == .pass)
        let damaged = Doctor.encryptionKeyCheck(.success([key(Self.new, created: 2, .bound(wellFormed: false, tpmOpens: nil))]))
        #expect(damaged.status == .fail && damaged.errorKind == "unsupportedFormat")
    }
}
