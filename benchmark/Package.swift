// swift-tools-version:6.0
// The side-by-side benchmark of PingStorage for Linux (benchmark/run): KeychainStorage against raw
// libsecret from C, the one-round-trip floor, secret-tool and Python keyring. A package of its own,
// so that the root package is the library, the CLI, the demo and the tests.
import PackageDescription

let package = Package(
    name: "pingstorage-benchmark",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "PingStorage", path: "..")],
    targets: [
        .systemLibrary(name: "CLibSecretBenchmark", pkgConfig: "libsecret-1",
                       providers: [.apt(["libsecret-1-dev", "libglib2.0-dev"])]),
        // Raw libsecret from C: what a C program would call, and the one-round-trip floor.
        .target(name: "CBenchmarkLibsecret", dependencies: ["CLibSecretBenchmark"]),
        // The token and the names every process of the benchmark shares.
        .target(name: "BenchmarkSupport", dependencies: [.product(name: "PingStorage", package: "PingStorage")]),
        .executableTarget(
            name: "pingstorage-benchmark",
            dependencies: [
                "BenchmarkSupport",
                "CBenchmarkLibsecret",
                .product(name: "PingStorage", package: "PingStorage"),
                .product(name: "SecretService", package: "PingStorage"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
