internal import CGcrypt
import Locking

// The one "is libgcrypt usable?" check of the package. libgcrypt is process-global: the
// application, or a library it loads (libsecret, when the app uses it too), may use it in the
// same process. Every user in this package (PingStorageCrypto, FileKeyring, SecretService) goes
// through here, and from here through one process-wide once in C (`cgcrypt_initialize`): whoever
// gets there first initialises libgcrypt completely, on one thread, under one lock; a libsecret the
// app loads later finds the library finished and leaves it as it is (its
// egg_libgcrypt_initialize only initialises when GCRYCTL_INITIALIZATION_FINISHED_P is false).
//
// When the application (or another library) initialised libgcrypt before us, we use it as they
// configured it. When they started without finishing (between their gcry_check_version and their
// GCRYCTL_INITIALIZATION_FINISHED), we do not finish on their behalf, and nothing is recorded: the
// next call looks again, so a transient state never becomes "unavailable for the process".

/// libgcrypt in this process: initialised on first use, and whether it can be used.
///
/// Thread-safe: any thread may ask, and the first question races safely with other libgcrypt
/// users of the package (and with a libsecret that finds it finished).
package enum Libgcrypt {
    /// The oldest libgcrypt accepted. GCM and built-in thread safety arrived in 1.6; 1.8 is the
    /// oldest release series a supported distribution shipped (Debian 10 has 1.8.4).
    package static let minimumVersion = "1.8.0"

    /// What is known about libgcrypt in this process.
    private struct State: Sendable {
        var version: String?
        var initializedHere: Bool
        var unavailabilityReason: String?
    }

    /// The settled state, once it is final (nil before, and while someone else's initialisation
    /// is unfinished).
    private static let settled = Locked<State?>(nil)

    private static var state: State {
        if let state = settled.withLock({ $0 }) { return state }
        var versionPointer: UnsafePointer<CChar>?
        let role = cgcrypt_initialize(&versionPointer)
        let version = versionPointer.map { String(cString: $0) }
        var state = State(version: version, initializedHere: role == CGCRYPT_INITIALIZED_HERE)
        if role == CGCRYPT_STARTED_ELSEWHERE {
            state.unavailabilityReason = "libgcrypt is being initialised by another part of the process; try again"
            return state
        }
        if version == nil {
            state.unavailabilityReason = "libgcrypt could not be initialised"
        } else if cgcrypt_version_at_least(minimumVersion) == 0 {
            state.unavailabilityReason = "libgcrypt \(version ?? "unknown") is older than the required \(minimumVersion)"
        }
        settled.withLock { $0 = state }
        return state
    }

    /// Initialises libgcrypt if nobody has; nil when it can be used, otherwise why not, for a
    /// person. Not final while another part of the process is still initialising it.
    package static var unavailabilityReason: String? { state.unavailabilityReason }

    /// The running libgcrypt version (e.g. `"1.10.1"`), for diagnostics.
    package static var version: String? { state.version }

    /// Whether this package initialised libgcrypt (true), or found it finished by someone else,
    /// such as the application (false). For tests and diagnostics.
    package static var initializedHere: Bool { state.initializedHere }

    /// Initialises libgcrypt if nobody has, before a libgcrypt call: every function of this
    /// module calls it first. A libgcrypt function called on an uninitialised library starts its
    /// initialisation without finishing it, and this process-wide check would then find it "being
    /// initialised elsewhere" for good (a key derived in a test before any keyring was opened did).
    package static func prepare() { _ = state }

    /// Throws ``GcryptError/Kind/unavailable`` unless libgcrypt can be used.
    package static func requireAvailable(to operation: String) throws(GcryptError) {
        if let reason = unavailabilityReason { throw GcryptError(.unavailable, operation: operation, message: reason) }
    }
}

/// A failure of libgcrypt, or of a check made around it, as a Swift value: what was being done,
/// and libgcrypt's own message (static text that never holds secret data). Each user maps it to
/// its own error type once.
package struct GcryptError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure.
    package enum Kind: Sendable, Equatable {
        /// libgcrypt cannot be used in this process (see ``Libgcrypt/unavailabilityReason``).
        case unavailable
        /// A tag or MAC did not verify: another key, or altered data.
        case authenticationFailed
        /// Decrypted data has wrong padding: another key, or altered data.
        case badPadding
        /// The input has an impossible shape (an IV of the wrong length, a partial block).
        case malformed
        /// libgcrypt failed (out of secure memory, a refused parameter).
        case failed
    }

    /// What kind of failure.
    package let kind: Kind
    /// What was being done, as a verb phrase ("set the AES key").
    package let operation: String
    /// libgcrypt's error code (`gcry_err_code`), 0 when the failure is not libgcrypt's own.
    package let code: UInt32
    /// Why, for a person.
    package let message: String

    /// A failure of `kind` while doing `operation`.
    package init(_ kind: Kind, operation: String, code: UInt32 = 0, message: String) {
        self.kind = kind
        self.operation = operation
        self.code = code
        self.message = message
    }

    /// The one place a `gcry_error_t` becomes a Swift error: a checksum mismatch is an
    /// authentication failure, everything else a library failure.
    ///
    /// The corresponding C functions are `gcry_err_code` and `gcry_strerror`.
    init(gcrypt error: gcry_error_t, operation: String) {
        let code = gcry_err_code(error)
        let message = gcry_strerror(error).map { String(cString: $0) } ?? "unknown libgcrypt error"
        self.init(code == GPG_ERR_CHECKSUM ? .authenticationFailed : .failed,
                  operation: operation, code: code.rawValue, message: message)
    }

    /// `libgcrypt could not <operation>: <message>`.
    package var description: String { "libgcrypt could not \(operation): \(message)" }

    /// Succeeds for 0, otherwise the error for `error`.
    static func check(_ error: gcry_error_t, _ operation: String) throws(GcryptError) {
        if error != 0 { throw GcryptError(gcrypt: error, operation: operation) }
    }
}
