// swift-tools-version:6.2
// PingStorage for Linux: the storage API of Ping Identity's iOS SDK, with KeychainStorage backed by
// the freedesktop Secret Service (D-Bus through GLib's GDBus, the transport encryption on libgcrypt).
import PackageDescription

let package = Package(
    name: "PingStorage",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PingStorage", targets: ["PingStorage"]),
        .library(name: "SecretService", targets: ["SecretService"]),
        // The D-Bus values SecretService's API names (ObjectPath, BusAddress).
        .library(name: "DBusTransport", targets: ["DBusTransport"]),
        .library(name: "PingLogger", targets: ["PingLogger"]),
        .executable(name: "pingstorage-demo", targets: ["pingstorage-demo"]),
        .executable(name: "ping-keyring", targets: ["ping-keyring"]),
    ],
    targets: [
        // Layer 1: GLib and GIO as the one Clang module DBusTransport imports, with the pkg-config
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
        .target(name: "Locking"),
        // The one Swift layer over CGcrypt (whether libgcrypt is usable, the one AES key type,
        // hashes, HMAC, PBKDF2, random bytes, the session key exchange) and the one secret-memory
        // policy (SecretBytes: locked, left out of core dumps, wiped; a non-dumpable process).
        // PingStorageCrypto, FileKeyring and SecretService all build on it.
        .target(name: "Gcrypt", dependencies: ["CGcrypt", "Locking"]),
        // The package's async toolkit: one waiter (OneShot), deadlines kept by one timer per
        // executor, shared work and remembered reads. Where waits end is given by its user: the
        // GLib loop thread for SecretService, a light queue for the rest. No D-Bus, no Ping names.
        .target(name: "Waiting", dependencies: ["Locking"]),
        // The TPM 2.0 calls SecuredKey needs, in C over tpm2-tss's headers (Debian: libtss2-dev);
        // tpm2-tss itself is loaded with dlopen only when a TPM is used, so nothing links it.
        .target(name: "CTPM"),
        // The Swift layer over CTPM: which connection (TCTI) to use, and every TPM command on a
        // thread of its own with a deadline. No key storage, no Ping names.
        .target(name: "TPM", dependencies: ["CTPM", "DBusTransport", "Gcrypt", "Locking", "Waiting"]),
        // AES-256-GCM and the versioned envelope format; no D-Bus, no key storage.
        .target(name: "PingStorageCrypto", dependencies: ["Gcrypt", "Locking"]),
        // Layer 2: the D-Bus transport, the only importer of CGLib: connections, the loop thread,
        // messages, variants, object paths and the routing of replies and signals. No protocol of
        // its own: SecretService, the Secret portal and the TPM's name check stand on it.
        .target(name: "DBusTransport", dependencies: ["CGLib", "Locking", "Waiting"]),
        // An async Swift client of org.freedesktop.secrets (and of the Secret portal), on the
        // transport. Knows nothing about Ping.
        .target(name: "SecretService", dependencies: ["DBusTransport", "Gcrypt", "Locking", "Waiting"]),
        // Layer 3: the iOS-compatible Storage API.
        // The Ping SDK's logger (PingLogger) with a systemd-journal/stderr StandardLogger.
        .target(name: "PingLogger", dependencies: ["Locking"]),
        .target(name: "PingStorage", dependencies: ["SecretService", "DBusTransport", "PingStorageCrypto", "FileKeyring", "Gcrypt", "Locking", "Waiting", "PingLogger", "TPM"]),
        .executableTarget(name: "pingstorage-demo", dependencies: ["PingStorage"]),
        // The command-line tool: a small library of testable pieces and a thin executable.
        .target(name: "PingKeyringCore", dependencies: ["PingStorage", "PingStorageCrypto", "Locking"]),
        .executableTarget(name: "ping-keyring", dependencies: ["PingKeyringCore"]),
        // The Flatpak file keyring (libsecret's and oo7's `keyrings/default.keyring`), read and
        // written with a cross-process lock. Below PingStorage: no D-Bus, no Ping names.
        .target(name: "FileKeyring", dependencies: ["Gcrypt", "Locking", "Waiting"], exclude: ["FORMAT.md"]),
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
        .testTarget(name: "WaitingTests", dependencies: ["Waiting"]),
        .testTarget(name: "DBusTransportTests", dependencies: ["DBusTransport", "CGLib", "Locking", "Waiting"]),
        .testTarget(name: "SecretServiceTests", dependencies: ["SecretService", "DBusTransport", "CGLib", "Gcrypt", "Waiting"]),
        .testTarget(name: "PingStorageTests", dependencies: ["PingStorage", "DBusTransport", "FileKeyring", "Locking", "Waiting", "keychain-probe"]),
        .testTarget(name: "PingStorageCryptoTests", dependencies: ["PingStorageCrypto"]),
        // SecuredKey without a TPM (tpm-probe), its ECIES format and the TPM connection choice.
        .testTarget(name: "TPMTests", dependencies: ["PingStorage", "TPM", "Gcrypt", "tpm-probe"]),
        .testTarget(name: "PingKeyringTests", dependencies: ["PingKeyringCore", "DBusTransport"]),
        .testTarget(name: "PingLoggerTests", dependencies: ["PingLogger", "log-probe"]),
        .testTarget(name: "FileKeyringTests", dependencies: ["FileKeyring", "Gcrypt", "CGLib", "Waiting", "file-keyring-probe"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["PingStorage", "SecretService", "DBusTransport", "FileKeyring", "CGLib", "Gcrypt", "Waiting", "keychain-probe", "ping-keyring", "gcrypt-race-probe", "secret-memory-probe", "TPM", "tpm-probe"]
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
