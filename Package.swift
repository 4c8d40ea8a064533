// swift-tools-version:6.2
// PingStorage for Linux: the storage API of Ping Identity's iOS SDK, with KeychainStorage backed by
// the freedesktop Secret Service (D-Bus through GLib's GDBus, the transport encryption on libgcrypt).
import PackageDescription

/// The library's and its programs' Swift settings: concrete generic types (a dictionary keyed by
/// a path, a waiter of a reply) are reached through the compiler's metadata accessors, which are
/// handed their conformances, instead of by mangled name, which makes the runtime look each
/// conformance up on first use by scanning every conformance record of every loaded image
/// (about 5,700 with Foundation, some 70 µs each time): 32 of a cold read's 41 lookups, about
/// 0.5–0.7 ms of it (benchmark/README.md, issue 23). SwiftPM accepts unsafe flags in a dependency
/// from 6.2 on, when the dependency's manifest says 6.2 or later: hence the tools version (a test
/// checks that a versioned dependency on the package is accepted).
let firstUseSettings: [SwiftSetting] = [
    .unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"]),
]

let package = Package(
    name: "PingStorage",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PingStorage", targets: ["PingStorage"]),
        .library(name: "SecretService", targets: ["SecretService"]),
        .library(name: "PingLogger", targets: ["PingLogger"]),
        .executable(name: "pingstorage-demo", targets: ["pingstorage-demo"]),
        .executable(name: "ping-keyring", targets: ["ping-keyring"]),
    ],
    targets: [
        // Layer 1: GLib and GIO as the one Clang module SecretService imports, with the pkg-config
        // flags it builds with (a system library: it declares nothing of its own).
        .systemLibrary(
            name: "CGLib",
            pkgConfig: "gio-unix-2.0",
            providers: [.apt(["libglib2.0-dev"])]
        ),
        // libgcrypt (Debian: libgcrypt20-dev): the one process-wide initialisation of it, the
        // Secret Service's session crypto, and the C calls Swift cannot make (variadic ones).
        // Imported by Gcrypt only.
        .target(name: "CGcrypt", linkerSettings: [.linkedLibrary("gcrypt")]),
        // The package's one lock type.
        .target(name: "Locking", swiftSettings: firstUseSettings),
        // The one Swift layer over CGcrypt (whether libgcrypt is usable, the one AES key type,
        // hashes, HMAC, PBKDF2, random bytes, the session key exchange) and the one secret-memory
        // policy (SecretBytes: locked, left out of core dumps, wiped; a non-dumpable process).
        // PingStorageCrypto, FileKeyring and SecretService all build on it.
        .target(name: "Gcrypt", dependencies: ["CGcrypt", "Locking"], swiftSettings: firstUseSettings),
        // The package's async toolkit: one waiter (OneShot), deadlines kept by one timer per
        // executor, shared work and remembered reads. Where waits end is given by its user: the
        // GLib loop thread for SecretService, a light queue for the rest. No D-Bus, no Ping names.
        .target(name: "Waiting", dependencies: ["Locking"], swiftSettings: firstUseSettings),
        // The TPM 2.0 calls SecuredKey needs, in C over tpm2-tss's headers (Debian: libtss2-dev);
        // tpm2-tss itself is loaded with dlopen only when a TPM is used, so nothing links it.
        .target(name: "CTPM"),
        // The Swift layer over CTPM: which connection (TCTI) to use, and every TPM command on a
        // thread of its own with a deadline. No key storage, no Ping names.
        .target(name: "TPM", dependencies: ["CTPM", "CGLib", "Gcrypt", "Locking", "Waiting"], swiftSettings: firstUseSettings),
        // AES-256-GCM and the versioned envelope format; no D-Bus, no key storage.
        .target(name: "PingStorageCrypto", dependencies: ["Gcrypt", "Locking"], swiftSettings: firstUseSettings),
        // Layer 2: an async Swift client of org.freedesktop.secrets. Knows nothing about Ping.
        .target(name: "SecretService", dependencies: ["CGLib", "Gcrypt", "Locking", "Waiting"], swiftSettings: firstUseSettings),
        // Layer 3: the iOS-compatible Storage API.
        // The Ping SDK's logger (PingLogger) with a systemd-journal/stderr StandardLogger.
        .target(name: "PingLogger", dependencies: ["Locking"], swiftSettings: firstUseSettings),
        .target(name: "PingStorage", dependencies: ["SecretService", "PingStorageCrypto", "FileKeyring", "Gcrypt", "Locking", "Waiting", "PingLogger", "TPM"], swiftSettings: firstUseSettings),
        .executableTarget(name: "pingstorage-demo", dependencies: ["PingStorage"], swiftSettings: firstUseSettings),
        // The command-line tool: a small library of testable pieces and a thin executable.
        .target(name: "PingKeyringCore", dependencies: ["PingStorage", "SecretService", "PingStorageCrypto", "Locking"], swiftSettings: firstUseSettings),
        .executableTarget(name: "ping-keyring", dependencies: ["PingKeyringCore"], swiftSettings: firstUseSettings),
        // The Flatpak file keyring (libsecret's and oo7's `keyrings/default.keyring`), read and
        // written with a cross-process lock. Below PingStorage: no D-Bus, no Ping names.
        .target(name: "FileKeyring", dependencies: ["Gcrypt", "Locking"], exclude: ["FORMAT.md"], swiftSettings: firstUseSettings),
        // Test support, in TestSupport/: the second processes the tests start, and the README's
        // snippet generator. Not part of the library or its programs.
        // keychain-probe: KeychainStorage as an app uses it (interop, two writers, no bus, threads).
        .executableTarget(name: "keychain-probe", dependencies: ["PingStorage"], path: "TestSupport/keychain-probe"),
        // file-keyring-probe: a second FileKeyring writer (two writers at once, a held lock).
        .executableTarget(name: "file-keyring-probe", dependencies: ["FileKeyring"], path: "TestSupport/file-keyring-probe"),
        // gcrypt-race-probe: races libgcrypt's initialisation on purpose, holding one thread inside
        // it through an access(2) interposer (CAccessGate).
        .target(name: "CAccessGate", path: "TestSupport/CAccessGate"),
        .executableTarget(
            name: "gcrypt-race-probe",
            dependencies: ["CAccessGate", "Gcrypt", "PingStorage", "PingStorageCrypto", "SecretService"],
            path: "TestSupport/gcrypt-race-probe"
        ),
        // secret-memory-probe: looks for copies of a secret in its own memory.
        .executableTarget(
            name: "secret-memory-probe",
            dependencies: ["PingStorage", "PingStorageCrypto", "SecretService"],
            path: "TestSupport/secret-memory-probe"
        ),
        // log-probe: what a real process logs through LogManager.standard, to the journal or stderr.
        .executableTarget(name: "log-probe", dependencies: ["PingLogger"], path: "TestSupport/log-probe"),
        // tpm-probe: SecuredKey as an app uses it, and whether tpm2-tss got mapped into the process.
        .executableTarget(name: "tpm-probe", dependencies: ["PingStorage"], path: "TestSupport/tpm-probe"),
        // readme-snippets: generates Tests/ReadmeSnippetTests/ReadmeSnippets.swift from README.md.
        .executableTarget(name: "readme-snippets", path: "TestSupport/readme-snippets"),

        .testTarget(name: "GcryptTests", dependencies: ["Gcrypt"]),
        .testTarget(name: "SecretServiceTests", dependencies: ["SecretService", "Gcrypt", "Waiting"]),
        .testTarget(name: "PingStorageTests", dependencies: ["PingStorage", "FileKeyring", "Locking", "Waiting", "keychain-probe"]),
        .testTarget(name: "PingStorageCryptoTests", dependencies: ["PingStorageCrypto"]),
        // SecuredKey without a TPM (tpm-probe), its ECIES format and the TPM connection choice.
        .testTarget(name: "TPMTests", dependencies: ["PingStorage", "TPM", "Gcrypt", "tpm-probe"]),
        .testTarget(name: "PingKeyringTests", dependencies: ["PingKeyringCore"]),
        .testTarget(name: "PingLoggerTests", dependencies: ["PingLogger", "log-probe"]),
        .testTarget(name: "FileKeyringTests", dependencies: ["FileKeyring", "Gcrypt", "CGLib", "file-keyring-probe"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["PingStorage", "SecretService", "FileKeyring", "CGLib", "Gcrypt", "keychain-probe", "ping-keyring", "gcrypt-race-probe", "secret-memory-probe", "TPM", "tpm-probe"]
        ),
        // The shell harness (dbus-test/install-deps, dbus-test/run) against stub package managers.
        .testTarget(name: "HarnessTests"),
        // The documentation's checks: README.md's ```swift blocks compiled (readme-snippets generates
        // Tests/ReadmeSnippetTests/ReadmeSnippets.swift from them) and checked to be current, its
        // manifests compiled, CHANGELOG.md's newest version.
        .testTarget(name: "ReadmeSnippetTests", dependencies: ["PingStorage", "readme-snippets"]),
    ],
    swiftLanguageModes: [.v6]
)
