import Foundation
import PingStorage
import Testing

/// The repository root, found from this file's path (Tests/ReadmeSnippetTests/…).
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Checks that the documentation says what the code does: README.md's Swift blocks compile (the
/// generated ReadmeSnippets.swift in this target), its manifests compile and name their
/// dependencies by the right identity, and CHANGELOG.md's newest version is the package's.
@Suite struct ReadmeSnippetTests {
    @Test func generatedFileIsWhatTheREADMEGeneratesNow() async throws {
        let readme = repositoryRoot.appendingPathComponent("README.md").path
        let generated = try await runProcess(readmeSnippetsPath, ["--readme", readme])
        #expect(generated.status == 0, "readme-snippets failed: \(generated.stderr)")
        let committed = try String(
            contentsOf: repositoryRoot.appendingPathComponent("Tests/ReadmeSnippetTests/ReadmeSnippets.swift"), encoding: .utf8)
        #expect(generated.stdout == committed,
                "README.md's swift blocks changed: run `swift run readme-snippets --write` and build again")
    }

    /// Each `Package.swift` block compiles (`swift package dump-package`), and every
    /// `.product(name:package:)` names a dependency by its identity (or by the `name:` given to it).
    @Test func manifestsCompileAndNameTheirDependencies() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("readme-manifests-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let readme = repositoryRoot.appendingPathComponent("README.md").path
        let written = try await runProcess(readmeSnippetsPath, ["--readme", readme, "--manifests", directory.path])
        try #require(written.status == 0, "readme-snippets failed: \(written.stderr)")
        let manifests = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(manifests.count == 2, "README.md's manifests: depending on it, and side by side with the iOS SDK")
        for manifest in manifests {
            let path = directory.appendingPathComponent(manifest).path
            let dump = try await runProcess("/usr/bin/env", ["swift", "package", "dump-package", "--package-path", path])
            try #require(dump.status == 0, "README.md's manifest at \(manifest) does not compile: \(dump.stderr)")
            let references = try packageReferences(inDump: Data(dump.stdout.utf8))
            #expect(!references.used.isEmpty)
            for package in references.used {
                #expect(references.known.contains(package),
                        "README.md \(manifest): package '\(package)' is not one of \(references.known.sorted())")
            }
        }
    }

    @Test func changelogsNewestVersionIsThePackageVersion() async throws {
        let changelog = try String(contentsOf: repositoryRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let versions = changelog.split(separator: "\n")
            .filter { $0.hasPrefix("## [") && !$0.hasPrefix("## [Unreleased]") }
            .map { $0.dropFirst(4).prefix { $0 != "]" } }
        #expect(versions.first.map(String.init) == PingStorageVersion.current,
                "CHANGELOG.md's newest version must be PingStorageVersion.current (Sources/PingStorage/Version.swift)")
    }

    /// The release a reader is told to depend on, or is shown installed, is the package's version:
    /// every `from:` of a pingstorage-linux dependency (README.md, the Getting Started article) and
    /// every `ping-keyring X.Y.Z` in docs/install.md. CHANGELOG.md's entry for it has a date.
    @Test func theDocumentsNameTheReleaseThePackageIs() throws {
        let current = PingStorageVersion.current
        let dependencies = ["README.md", "Sources/PingStorage/PingStorage.docc/GettingStarted.md"]
        for path in dependencies {
            let text = try String(contentsOf: repositoryRoot.appendingPathComponent(path), encoding: .utf8)
            let lines = text.split(separator: "\n").filter { $0.contains(".package(") && $0.contains("pingstorage-linux") && $0.contains("from:") }
            #expect(!lines.isEmpty, "\(path) shows no versioned pingstorage-linux dependency")
            for line in lines {
                #expect(line.contains("from: \"\(current)\""), "\(path): \(line.trimmingCharacters(in: .whitespaces)) is not \(current)")
            }
        }
        let install = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/install.md"), encoding: .utf8)
        let printed = install.matches(of: /ping-keyring (\d+\.\d+\.\d+)/).map { String($0.1) }
        #expect(!printed.isEmpty && printed.allSatisfy { $0 == current }, "docs/install.md shows ping-keyring \(printed)")
        let changelog = try String(contentsOf: repositoryRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        #expect(changelog.contains(try Regex("\n## \\[\(current)\\] - \\d{4}-\\d{2}-\\d{2}\n")),
                "CHANGELOG.md has no dated entry '## [\(current)] - YYYY-MM-DD'")
    }
}

/// The identities and `name:`s of a dumped manifest's dependencies, and the `package:` of every
/// `.product` dependency of its targets.
func packageReferences(inDump json: Data) throws -> (known: Set<String>, used: Set<String>) {
    let manifest = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
    var known: Set<String> = []
    for dependency in manifest["dependencies"] as? [[String: Any]] ?? [] {
        for case let details as [[String: Any]] in dependency.values {
            for detail in details {
                if let identity = detail["identity"] as? String { known.insert(identity) }
                if let name = detail["nameForTargetDependencyResolutionOnly"] as? String { known.insert(name) }
            }
        }
    }
    var used: Set<String> = []
    for target in manifest["targets"] as? [[String: Any]] ?? [] {
        for dependency in target["dependencies"] as? [[String: Any]] ?? [] {
            if let product = dependency["product"] as? [Any], product.count > 1, let package = product[1] as? String {
                used.insert(package)
            }
        }
    }
    return (known, used)
}
