internal import Gcrypt
import Locking

// Whether libgcrypt can be used is decided once for the package, in the Gcrypt module
// (`Libgcrypt`), which also initialises it. This module adds one check of its own on top: an
// AES-256-GCM known answer, since a library that is present and recent enough may still refuse
// caller-chosen GCM nonces (some FIPS configurations), which the envelopes need.
//
// Memory: keys live in the package's secret memory (`SecureBytes`, the Gcrypt module's
// `SecretBytes`); cipher handles are opened and closed inside one call.

/// The answer of the GCM self-test, once libgcrypt's own answer is final (nil before).
private let settledSelfTest = Locked<String??>(nil)

/// Why AES-256-GCM cannot be used, or nil.
private func unavailability() -> String? {
    if let reason = Libgcrypt.unavailabilityReason { return reason }
    if let settled = settledSelfTest.withLock({ $0 }) { return settled }
    // A known answer (McGrew–Viega GCM test case 16) through the same code path as every seal and
    // open: fails if the library is broken or refuses caller-chosen nonces.
    let reason = AESGCM.selfTest().map { "self-test failed: \($0)" }
    settledSelfTest.withLock { $0 = .some(reason) }
    return reason
}

/// The cryptographic library behind PingStorageCrypto (libgcrypt), initialised on first use.
///
/// Initialisation happens once per process, on whichever thread first touches any member or any
/// operation of this module, opens a file keyring or a Secret Service connection, and is safe to
/// race: all go through one process-wide once, so nothing else of this package (nor a libsecret
/// the app loads, which finds it finished) initialises it at the same time. Thread-safe.
public enum CryptoLibrary {
    /// The oldest libgcrypt accepted. GCM and built-in thread safety arrived in 1.6; 1.8 is the
    /// oldest release series a supported distribution shipped (Debian 10 has 1.8.4).
    public static let minimumVersion = Libgcrypt.minimumVersion

    /// Initialises libgcrypt now, if nobody has, and tells whether AES-256-GCM can be used.
    ///
    /// PingStorage initialises libgcrypt by itself on first use; call this only when your
    /// application has other libgcrypt users that may start on other threads (another library,
    /// your own code): call it first, before those start, and they will find libgcrypt finished.
    /// If your application initialises libgcrypt itself, do that before the first PingStorage call
    /// instead; PingStorage then uses libgcrypt as you configured it. Thread-safe; idempotent.
    /// - Returns: ``isAvailable``.
    @discardableResult
    public static func initialize() -> Bool { isAvailable }

    /// Whether AES-256-GCM can be used: libgcrypt is present, at least ``minimumVersion``,
    /// initialised, and passed a known-answer self-test.
    ///
    /// When false, ``Envelope`` operations throw ``EnvelopeError/cryptoUnavailable`` and an
    /// encryptor's failable initialiser should return nil. Thread-safe.
    public static var isAvailable: Bool { unavailability() == nil }

    /// The running libgcrypt version (e.g. `"1.10.1"`), for diagnostics.
    public static var version: String? { Libgcrypt.version }

    /// Why ``isAvailable`` is false, for a person; nil when it is true.
    public static var unavailabilityReason: String? { unavailability() }

    /// Whether libgcrypt was initialised by this package (true) or found already finished by
    /// someone else, such as the application (false). For tests and diagnostics.
    package static var didInitializeLibrary: Bool { Libgcrypt.initializedHere }

    /// Throws ``EnvelopeError/cryptoUnavailable`` unless ``isAvailable``.
    static func requireAvailable() throws(EnvelopeError) {
        guard isAvailable else { throw .cryptoUnavailable }
    }
}

extension EnvelopeError {
    /// The one place a libgcrypt failure becomes an envelope error: a tag mismatch is an
    /// authentication failure; everything else is reported with libgcrypt's own (static,
    /// secret-free) message.
    init(gcrypt error: GcryptError) {
        switch error.kind {
        case .authenticationFailed: self = .authenticationFailed
        case .unavailable: self = .cryptoUnavailable
        default: self = .libraryFailure(operation: error.operation, code: error.code, message: error.message)
        }
    }
}
