internal import CGcrypt
import Locking

// libgcrypt is process-global: the application, or a library it loads (libsecret, when the app
// uses it itself), may use it in the same process. This package's users of it (SecretService's
// transport session, FileKeyring, this module) go through one process-wide once in C
// (`cgcrypt_initialize`, CGcrypt). Whoever gets there first initialises libgcrypt completely, on
// one thread, under one lock; a libsecret the app loads later finds the library finished and
// leaves it as it is (its egg_libgcrypt_initialize only initialises when
// GCRYCTL_INITIALIZATION_FINISHED_P is false).
//
// When the application (or another library) initialised libgcrypt before us, we use it as they
// configured it. When they started without finishing (between their gcry_check_version and their
// GCRYCTL_INITIALIZATION_FINISHED), we do not finish on their behalf, and nothing is recorded:
// the next call looks again, so a transient state never becomes "unavailable for the process".
//
// Memory: PingStorageCrypto never asks libgcrypt for memory that outlives a call (keys live in our
// own `SecureBytes`; cipher handles are opened and closed inside one call).

/// What is known about libgcrypt in this process.
private struct LibraryState: Sendable {
    var isAvailable: Bool
    var initializedHere: Bool
    var version: String?
    var unavailabilityReason: String?
}

/// The settled state, once it is final (nil before, and while someone else's initialisation is
/// unfinished).
private let settledState = Locked<LibraryState?>(nil)

private func libraryState() -> LibraryState {
    if let settled = settledState.withLock({ $0 }) { return settled }
    var versionPointer: UnsafePointer<CChar>?
    let role = cgcrypt_initialize(&versionPointer)
    let version = versionPointer.map { String(cString: $0) }
    var state = LibraryState(isAvailable: true, initializedHere: role == CGCRYPT_INITIALIZED_HERE,
                             version: version, unavailabilityReason: nil)
    if cgcrypt_version_at_least(CryptoLibrary.minimumVersion) == 0 {
        state.isAvailable = false
        state.unavailabilityReason = "libgcrypt \(version ?? "unknown") is older than the required \(CryptoLibrary.minimumVersion)"
    } else if let failure = AESGCM.selfTest() {
        // A known answer (McGrew–Viega GCM test case 16) through the same code path as every seal
        // and open: fails if the library is broken or refuses caller-chosen nonces (some FIPS
        // configurations).
        state.isAvailable = false
        state.unavailabilityReason = "self-test failed: \(failure)"
    }
    if role != CGCRYPT_STARTED_ELSEWHERE {
        settledState.withLock { $0 = state }
    }
    return state
}

/// The cryptographic library behind PingStorageCrypto (libgcrypt), initialised on first use.
///
/// Initialisation happens once per process, on whichever thread first touches any member or any
/// operation of this module or opens a Secret Service connection, and is safe to race: both go
/// through one process-wide once, so nothing else of this package (nor a libsecret the app loads,
/// which finds it finished) initialises it at the same time. Thread-safe.
public enum CryptoLibrary {
    /// The oldest libgcrypt accepted. GCM and built-in thread safety arrived in 1.6; 1.8 is the
    /// oldest release series a supported distribution shipped (Debian 10 has 1.8.4).
    public static let minimumVersion = "1.8.0"

    /// Initialises libgcrypt now, if nobody has, and tells whether AES-256-GCM can be used.
    ///
    /// PingStorage initialises libgcrypt by itself on first use; call this only when your
    /// application has other libgcrypt users that may start on other threads (another library,
    /// your own code): call it first, before those start, and they will find libgcrypt finished.
    /// If your application initialises libgcrypt itself, do that before the first PingStorage call
    /// instead; PingStorage then uses libgcrypt as you configured it. Thread-safe; idempotent.
    /// - Returns: ``isAvailable``.
    @discardableResult
    public static func initialize() -> Bool { libraryState().isAvailable }

    /// Whether AES-256-GCM can be used: libgcrypt is present, at least ``minimumVersion``,
    /// initialised, and passed a known-answer self-test.
    ///
    /// When false, ``Envelope`` operations throw ``EnvelopeError/cryptoUnavailable`` and an
    /// encryptor's failable initialiser should return nil. Thread-safe.
    public static var isAvailable: Bool { libraryState().isAvailable }

    /// The running libgcrypt version (e.g. `"1.10.1"`), for diagnostics.
    public static var version: String? { libraryState().version }

    /// Why ``isAvailable`` is false, for a person; nil when it is true.
    public static var unavailabilityReason: String? { libraryState().unavailabilityReason }

    /// Whether libgcrypt was initialised by this package (true) or found already finished by
    /// someone else, such as the application (false). For tests and diagnostics.
    package static var didInitializeLibrary: Bool { libraryState().initializedHere }

    /// Throws ``EnvelopeError/cryptoUnavailable`` unless ``isAvailable``.
    static func requireAvailable() throws(EnvelopeError) {
        guard isAvailable else { throw .cryptoUnavailable }
    }
}
