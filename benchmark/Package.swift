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
        // gnome-keyring's keyring file, written directly: the scale benchmark's 5,000 items.
        .target(name: "CKeyringFixture", linkerSettings: [.linkedLibrary("gcrypt")]),
        // The token and the names every process of the benchmark shares.
        .target(name: "BenchmarkSupport", dependencies: [.product(name: "PingStorage", package: "PingStorage")]),
        .executableTarget(
            name: "pingstorage-benchmark",
            dependencies: [
                "BenchmarkSupport",
                "CBenchmarkLibsecret",
                "CKeyringFixture",
                .product(name: "PingStorage", package: "PingStorage"),
                .product(name: "SecretService", package: "PingStorage"),
            ]
        ),
        // Helper processes of the cold-start and memory sections (the benchmark starts them).
        // A fresh process doing one KeychainStorage<Token>.get: an app's cold start. benchmark/run
        // builds it as ping-keyring ships (--static-swift-stdlib), so the two cold-start rows compare.
        .executableTarget(name: "coldstart-get",
                          dependencies: ["BenchmarkSupport", .product(name: "PingStorage", package: "PingStorage")]),
        // The same read built as an app usually is (the app's cold start): full Foundation, and benchmark/run
        // builds it without --static-swift-stdlib (a build of its own), so the runtime and
        // Foundation are loaded dynamically. `--floor` exits before PingStorage is touched.
        .executableTarget(name: "coldstart-app",
                          dependencies: ["BenchmarkSupport", .product(name: "PingStorage", package: "PingStorage")]),
        // A process holding KeychainStorage instances for N accounts: its RSS per account.
        .executableTarget(name: "accounts-rss",
                          dependencies: ["BenchmarkSupport", .product(name: "PingStorage", package: "PingStorage")]),
        // A Swift program that only prints one line: the floor of a Swift tool's `--help`.
        .executableTarget(name: "swift-hello"),
        // (tools/spawn-measure.c, the cold-start launcher, is compiled by benchmark/run with clang
        // alone: as a SwiftPM target it would link the Swift runtime; see its header comment.)
    ],
    swiftLanguageModes: [.v6]
)
