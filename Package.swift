// swift-tools-version:6.0
// PingStorage for Linux: the storage API of Ping Identity's iOS SDK, with KeychainStorage backed by
// the freedesktop Secret Service through libsecret.
import PackageDescription

let package = Package(
    name: "PingStorage",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PingStorage", targets: ["PingStorage"]),
        .library(name: "SecretService", targets: ["SecretService"]),
        .executable(name: "pingstorage-demo", targets: ["pingstorage-demo"]),
        .executable(name: "ping-keyring", targets: ["ping-keyring"]),
    ],
    targets: [
        // Layer 1: libsecret and GLib as a Clang module, plus the few helpers Swift cannot express.
        .systemLibrary(
            name: "CLibSecret",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev", "libglib2.0-dev"])]
        ),
        // libgcrypt (already a dependency of libsecret) for SecuredKeyEncryptor's AES-256-GCM.
        .systemLibrary(
            name: "CGcrypt",
            pkgConfig: "libgcrypt",
            providers: [.apt(["libgcrypt20-dev"])]
        ),
        // AES-256-GCM and the versioned envelope format; no D-Bus, no key storage.
        .target(name: "PingStorageCrypto", dependencies: ["CGcrypt"]),
        // Layer 2: an async Swift client of org.freedesktop.secrets. Knows nothing about Ping.
        .target(name: "SecretService", dependencies: ["CLibSecret"]),
        // Layer 3: the iOS-compatible Storage API.
        .target(name: "PingStorage", dependencies: ["SecretService", "PingStorageCrypto"]),
        .executableTarget(name: "pingstorage-demo", dependencies: ["PingStorage"]),
        // A second process for the integration tests (interop, two writers, no bus).
        .executableTarget(name: "keychain-probe", dependencies: ["PingStorage"]),
        // The side-by-side benchmark (benchmark/run): raw libsecret from C next to KeychainStorage.
        .target(name: "CBenchmarkLibsecret", dependencies: ["CLibSecret"]),
        .executableTarget(
            name: "pingstorage-benchmark",
            dependencies: ["PingStorage", "SecretService", "CBenchmarkLibsecret"]
        ),
        // The command-line tool: a small library of testable pieces and a thin executable.
        .target(name: "PingKeyringCore", dependencies: ["PingStorage", "SecretService", "PingStorageCrypto"]),
        .executableTarget(name: "ping-keyring", dependencies: ["PingKeyringCore"]),
        .testTarget(name: "SecretServiceTests", dependencies: ["SecretService"]),
        .testTarget(name: "PingStorageTests", dependencies: ["PingStorage"]),
        .testTarget(name: "PingStorageCryptoTests", dependencies: ["PingStorageCrypto"]),
        .testTarget(name: "PingKeyringTests", dependencies: ["PingKeyringCore"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["PingStorage", "SecretService", "keychain-probe", "ping-keyring"]
        ),
        // The shell harness (dbus-test/install-deps, dbus-test/run) against stub package managers.
        .testTarget(name: "HarnessTests"),
    ],
    swiftLanguageModes: [.v6]
)
