extension KeychainConfiguration {
    /// Whether ``SecuredKeyEncryptor``'s AES keys are bound to this machine's TPM 2.0 (Linux only:
    /// on iOS they are always bound to the Secure Enclave).
    ///
    /// A bound key is kept in the keyring wrapped by a key that lives in the TPM: a copy of the
    /// keyring (a backup, another machine, the keyring's password known) does not open the items
    /// it encrypted. The price: a cleared TPM (`tpm2_clear`, some firmware updates, a new
    /// motherboard) or a move of the home directory to another machine loses those items, as a new
    /// phone does: decryption throws ``EncryptorError/Reason/tpmCleared(_:)`` and the app signs in
    /// again. What it protects against and what not: SECURITY.md.
    public enum KeyBinding: Sendable, Hashable, CustomStringConvertible {
        /// Bound to the TPM when one answers (`/dev/tpmrm0`, or tpm2-abrmd; `PINGSTORAGE_TPM_TCTI`
        /// chooses, `none` turns it off), asked once per process at the first encryption; unbound
        /// otherwise (no TPM, a Flatpak sandbox without the device). Items sealed with an unbound
        /// key stay readable and move to the bound key on their next save. The default.
        case tpmWhenAvailable
        /// Never bound: keys are plain AES keys in the keyring (as in PingStorage 1.x), for data
        /// that cannot be fetched again. Items sealed with a bound key stay readable (while the TPM
        /// can open it) and move to an unbound key on their next save.
        case none

        /// `tpm-when-available` or `none`.
        public var description: String {
            switch self {
            case .tpmWhenAvailable: "tpm-when-available"
            case .none: "none"
            }
        }
    }
}
