// libgcrypt is process-global: it must be initialised once (gcry_check_version first, then
// GCRYCTL_INITIALIZATION_FINISHED), and libsecret, which lives in the same process, initialises it
// too. libsecret's egg_libgcrypt_initialize() (egg/egg-libgcrypt.c) runs once under g_once, and
// only if GCRYCTL_INITIALIZATION_FINISHED_P is false does it call gcry_check_version, install its
// log/out-of-core/fatal handlers and its allocation handlers (egg secure memory), then
// GCRYCTL_INITIALIZATION_FINISHED. If initialisation is already finished it leaves libgcrypt alone.
//
// So both orders work like this:
// * libsecret first: initialisation is finished when we look. We only call gcry_check_version with
//   our minimum (idempotent once initialised: it compares versions and changes nothing) and use
//   libgcrypt as libsecret configured it.
// * we first: we do what an application would — gcry_check_version, silence the secure-memory
//   warning, GCRYCTL_INITIALIZATION_FINISHED. libsecret later sees a finished library and skips its
//   own set-up; its gcry_mpi_snew/secure allocations then come from libgcrypt's own mlock'ed pool,
//   created on first use, instead of egg secure memory. Both are mlock'ed when the limit allows
//   and wiped on free.
// * someone started but did not finish (another library between its gcry_check_version and
//   GCRYCTL_INITIALIZATION_FINISHED, or an application that never finishes): we check the version
//   and do not finish on their behalf.
//
// Allocation handlers are the dangerous part: memory gcry_malloc'ed before libsecret installs its
// handlers would be freed by egg_secure_free afterwards. PingStorageCrypto therefore never asks
// libgcrypt for memory that outlives a call: keys live in our own `SecureBytes`, and cipher handles
// are opened and closed inside one call. The remaining window is two threads initialising at the
// same instant (our swift_once and libsecret's g_once are different locks); callers close it by
// touching `CryptoLibrary.isAvailable` before the first libsecret call.

/// The state of libgcrypt in this process, decided once.
private struct LibraryState: Sendable {
    enum Role: Sendable {
        /// We ran gcry_check_version and GCRYCTL_INITIALIZATION_FINISHED.
        case initializedHere
        /// Someone else (libsecret, the application) had already finished initialisation.
        case initializedElsewhere
        /// Someone else had started initialisation without finishing it; we left it that way.
        case startedElsewhere
        /// libgcrypt could not be used.
        case unavailable
    }

    var role: Role
    var version: String?
    var unavailabilityReason: String?
}

/// Initialised on first use, exactly once and thread-safely (Swift global `let`s are lazily
/// initialised under `swift_once`).
private let libraryState: LibraryState = initializeLibrary()

private func initializeLibrary() -> LibraryState {
    let minimum = CryptoLibrary.minimumVersion
    let role: LibraryState.Role
    if Gcrypt.isInitializationFinished() {
        role = .initializedElsewhere
    } else if Gcrypt.isAnyInitializationDone() {
        role = .startedElsewhere
    } else {
        role = .initializedHere
    }

    guard let version = Gcrypt.checkVersion(minimum: minimum) else {
        let running = Gcrypt.runningVersion() ?? "unknown"
        return LibraryState(
            role: .unavailable, version: running,
            unavailabilityReason: "libgcrypt \(running) is older than the required \(minimum)")
    }

    if role == .initializedHere {
        let finished = Gcrypt.disableSecureMemoryWarning().flatMap { Gcrypt.finishInitialization() }
        if case .failure(let error) = finished {
            return LibraryState(role: .unavailable, version: version, unavailabilityReason: error.description)
        }
    }

    // Power-on self-test: a known answer (McGrew–Viega GCM test case 16) through the same code path
    // as every seal and open. Fails if the library is broken or refuses caller-chosen nonces
    // (e.g. some FIPS configurations), in which case encryption is reported as unavailable.
    if let failure = AESGCM.selfTest() {
        return LibraryState(role: .unavailable, version: version, unavailabilityReason: "self-test failed: \(failure)")
    }
    return LibraryState(role: role, version: version, unavailabilityReason: nil)
}

/// The cryptographic library behind PingStorageCrypto (libgcrypt), initialised on first use.
///
/// Initialisation happens once per process, on whichever thread first touches any member or any
/// operation of this module, and is safe to race. It cooperates with libsecret, which uses the same
/// libgcrypt: whichever of the two initialises first, the other leaves the library as it is. To keep
/// the two from initialising at the same instant on different threads, read ``isAvailable`` before
/// the first libsecret call of the process (for instance when an encryptor is created).
public enum CryptoLibrary {
    /// The oldest libgcrypt accepted. GCM and built-in thread safety arrived in 1.6; 1.8 is the
    /// oldest release series a supported distribution shipped (Debian 10 has 1.8.4).
    public static let minimumVersion = "1.8.0"

    /// Whether AES-256-GCM can be used: libgcrypt is present, at least ``minimumVersion``,
    /// initialised, and passed a known-answer self-test.
    ///
    /// When false, ``Envelope`` operations throw ``EnvelopeError/cryptoUnavailable`` and an
    /// encryptor's failable initialiser should return nil. Thread-safe; the first access initialises
    /// libgcrypt and never blocks on I/O.
    public static var isAvailable: Bool { libraryState.role != .unavailable }

    /// The running libgcrypt version (e.g. `"1.10.1"`), for diagnostics.
    public static var version: String? { libraryState.version }

    /// Why ``isAvailable`` is false, for a person; nil when it is true.
    public static var unavailabilityReason: String? { libraryState.unavailabilityReason }

    /// Whether this module finished libgcrypt's initialisation itself (true) or found it already
    /// started or finished by someone else, such as libsecret (false). For tests and diagnostics.
    package static var didInitializeLibrary: Bool { libraryState.role == .initializedHere }

    /// Throws ``EnvelopeError/cryptoUnavailable`` unless ``isAvailable``.
    static func requireAvailable() throws(EnvelopeError) {
        guard isAvailable else { throw .cryptoUnavailable }
    }
}
