// swift-tools-version:6.0
// TokenVault: keeps an OAuth token in the keyring with PingStorage's KeychainStorage and
// SecuredKeyEncryptor. The same Sources/ build on Linux against PingStorage for Linux (this
// repository) and on Apple platforms against the Ping iOS SDK's PingStorage module.
import PackageDescription

#if os(Linux)
// PingStorage for Linux, from this checkout. A path dependency's identity is its directory's name,
// which depends on where the repository was cloned; `name:` gives it one that does not.
let dependencies: [Package.Dependency] = [.package(name: "PingStorage", path: "../..")]
let storage: Target.Dependency = .product(name: "PingStorage", package: "PingStorage")
#else
// The Ping iOS SDK; a URL dependency's identity is the URL's last path component.
let dependencies: [Package.Dependency] = [.package(url: "https://github.com/ForgeRock/ping-ios-sdk", from: "2.0.0")]
let storage: Target.Dependency = .product(name: "PingStorage", package: "ping-ios-sdk")
#endif

// Each platform names one package, so no module names clash. A manifest that names both on every
// platform (one line per platform condition) gets "multiple packages declare targets with a
// conflicting name: 'PingStorage'" (and 'PingLogger'), and renames this repository's modules:
//
//     .product(name: "PingStorage", package: "PingStorage",
//              moduleAliases: ["PingStorage": "PingStorageLinux", "PingLogger": "PingLoggerLinux"],
//              condition: .when(platforms: [.linux])),
//
// with `#if canImport(PingStorageLinux)` around the import (README.md, "Side by side with the
// Ping iOS SDK", where that manifest is compiled by a test).

let package = Package(
    name: "TokenVault",
    platforms: [.macOS(.v15), .iOS(.v16)],
    dependencies: dependencies,
    targets: [
        .executableTarget(name: "TokenVault", dependencies: [storage]),
    ],
    swiftLanguageModes: [.v6]
)
