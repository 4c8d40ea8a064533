import Foundation
import PingStorage
import Testing

/// What a new user gets (issue 38): only main's commits reach users, and a clone of it has no
/// tags, by which SwiftPM resolves `from:`. README.md's dependency section has them tag the clone
/// with the releases RELEASES lists (`./tag-releases`, the one shell line it gives); its manifest
/// then resolves to the newest release and builds. Every test starts from a fresh clone without
/// tags and never tags it by hand.
@Suite struct ReleaseTests {
    /// The list's newest release is the package's version, and CHANGELOG.md's newest dated entry.
    @Test func theListsNewestReleaseIsThePackagesVersion() throws {
        let newest = try #require(try releases(in: repositoryRoot).last, "RELEASES lists no release")
        #expect(newest == PingStorageVersion.current,
                "RELEASES' newest is \(newest), the package is \(PingStorageVersion.current): a release adds its line (CONTRIBUTING.md)")
        let changelog = try String(contentsOf: repositoryRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let dated = changelog.matches(of: /\n## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}\n/).map { String($0.1) }
        #expect(dated.first == newest, "CHANGELOG.md's newest dated entry is \(dated.first ?? "none"), RELEASES' \(newest)")
    }

    /// A fresh clone, README.md's shell line run in it, README.md's manifest with only the clone's
    /// path changed: it resolves to the newest release, builds, and the program it builds runs
    /// with that release.
    @Test func aNewUserWhoFollowsTheREADMEGetsTheNewestRelease() async throws {
        let directory = temporaryDirectory("readme-new-user")
        defer { try? FileManager.default.removeItem(at: directory) }
        let clone = directory.appendingPathComponent("src/pingstorage-linux")
        try await freshClone(of: repositoryRoot, at: clone)
        try await runTheREADMEsShellLine(in: clone)
        let app = try await theREADMEsApp(from: clone, at: directory.appendingPathComponent("app"))
        let built = try await runProcess("/usr/bin/env", ["swift", "build", "--package-path", app.directory.path])
        try #require(built.status == 0, "the README's manifest does not build: \(built.stderr)\(built.stdout.suffix(3000))")

        let newest = try #require(try releases(in: clone).last)
        #expect(newest == PingStorageVersion.current)
        #expect(try pin(of: "pingstorage-linux", in: app.directory).version == newest)
        let binPath = try await runProcess("/usr/bin/env", ["swift", "build", "--package-path", app.directory.path, "--show-bin-path"])
        let program = binPath.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + "/" + app.target
        let ran = try await runProcess(program, [])
        #expect(ran.status == 0 && ran.stdout == newest + "\n", "the program built runs with \(ran.stdout)\(ran.stderr)")
    }

    /// A release cut as CONTRIBUTING.md says (the version, CHANGELOG's dated entry and its line in
    /// RELEASES, in one commit, merged with a merge commit) is what README.md's manifest resolves
    /// to on a fresh clone: the release commit itself. SwiftPM accepts this commit's manifest as a
    /// versioned dependency (its unsafe flags need tools version 6.2, which `resolve` alone does not
    /// check), directly and through a library that depends on it by version from an app whose clone
    /// is elsewhere, mapped as README.md says.
    @Test func aReleaseCutAsCONTRIBUTINGSaysIsWhatTheREADMEResolves() async throws {
        let directory = temporaryDirectory("readme-next-release")
        defer { try? FileManager.default.removeItem(at: directory) }
        let maintainer = directory.appendingPathComponent("maintainer")
        try await freshClone(of: repositoryRoot, at: maintainer)
        let last = try #require(try releases(in: maintainer).last)
        let parts = last.split(separator: ".").compactMap { Int($0) }
        let next = "\(parts[0]).\(parts[1]).\(parts[2] + 1)"
        let release = try await cutRelease(next, in: maintainer)

        let clone = directory.appendingPathComponent("src/pingstorage-linux")
        try await freshClone(of: maintainer, at: clone)
        try await runTheREADMEsShellLine(in: clone)
        let app = try await theREADMEsApp(from: clone, at: directory.appendingPathComponent("app"))
        let loaded = try await runProcess("/usr/bin/env", ["swift", "package", "show-dependencies", "--package-path", app.directory.path])
        #expect(loaded.status == 0 && !loaded.stderr.contains("unsafe build flags"),
                "SwiftPM refused the release as a versioned dependency: \(loaded.stderr)")
        let direct = try pin(of: "pingstorage-linux", in: app.directory)
        #expect(direct.version == next && direct.revision == release, "resolved to \(direct), not \(next) at \(release)")

        // A library with README.md's dependency line, tagged as its own release; an app on it,
        // whose clone of this package is elsewhere than the library's URL, mapped with
        // README.md's set-mirror line.
        let readme = try String(contentsOf: clone.appendingPathComponent("README.md"), encoding: .utf8)
        let dependency = try #require(readme.split(separator: "\n")
            .first { $0.contains(".package(url: \"file:///src/pingstorage-linux\"") }?.trimmingCharacters(in: .whitespaces))
        let library = directory.appendingPathComponent("library")
        try writePackage(at: library, manifest: """
            // swift-tools-version:6.0
            import PackageDescription
            let package = Package(
                name: "Library",
                products: [.library(name: "Library", targets: ["Library"])],
                dependencies: [\(dependency)],
                targets: [.target(name: "Library", dependencies: [.product(name: "PingStorage", package: "pingstorage-linux")])]
            )
            """, source: ("Library/Library.swift", "import PingStorage\npublic let version = PingStorageVersion.current\n"))
        try await git(["init", "--quiet"], in: library)
        try await git(["add", "-A"], in: library)
        try await git(["-c", "user.name=Test", "-c", "user.email=test@example.invalid", "commit", "--quiet", "-m", "Library 1.0.0"],
                      in: library)
        try await git(["tag", "1.0.0"], in: library)
        let libraryApp = directory.appendingPathComponent("library-app")
        try writePackage(at: libraryApp, manifest: """
            // swift-tools-version:6.0
            import PackageDescription
            let package = Package(
                name: "LibraryApp",
                dependencies: [.package(url: "file://\(library.path)", from: "1.0.0")],
                targets: [.executableTarget(name: "LibraryApp", dependencies: [.product(name: "Library", package: "library")])]
            )
            """, source: ("LibraryApp/main.swift", "import Library\nprint(version)\n"))
        let mirror = try #require(readme.firstMatch(of: /`swift package config set-mirror --original (\S+) --mirror (\S+)`/),
                                  "README.md shows no set-mirror line")
        let mapped = try await runProcess("/usr/bin/env", ["swift", "package", "--package-path", libraryApp.path, "config", "set-mirror",
                                                           "--original", String(mirror.1), "--mirror", clone.path])
        try #require(mapped.status == 0, "set-mirror: \(mapped.stderr)")
        let throughLibrary = try await runProcess("/usr/bin/env", ["swift", "package", "show-dependencies", "--package-path", libraryApp.path])
        #expect(throughLibrary.status == 0 && !throughLibrary.stderr.contains("unsafe build flags"),
                "through a library: \(throughLibrary.stderr)")
        #expect(try pin(of: "pingstorage-linux", in: libraryApp).version == next)
    }

    /// `./tag-releases` tags only what the history says: a line whose commit's Version.swift says
    /// another version, or that no commit added, is named and left untagged; the others are tagged.
    @Test func tagReleasesTagsOnlyWhatTheHistorySays() async throws {
        let directory = temporaryDirectory("readme-tag-releases")
        defer { try? FileManager.default.removeItem(at: directory) }
        let clone = directory.appendingPathComponent("pingstorage-linux")
        try await freshClone(of: repositoryRoot, at: clone)
        let listed = try releases(in: clone)
        let list = clone.appendingPathComponent("RELEASES")
        try (try String(contentsOf: list, encoding: .utf8) + "99.0.0\n").write(to: list, atomically: true, encoding: .utf8)
        try await git(["-c", "user.name=Test", "-c", "user.email=test@example.invalid", "commit", "--quiet", "-am",
                       "A line without the release"], in: clone)
        try (try String(contentsOf: list, encoding: .utf8) + "99.0.1\n").write(to: list, atomically: true, encoding: .utf8)

        let tagged = try await runProcess(clone.appendingPathComponent("tag-releases").path, [], in: clone)
        #expect(tagged.status == 1)
        #expect(tagged.stderr.contains("('99.0.0'): at ") && tagged.stderr.contains("Version.swift does not say 99.0.0"), "\(tagged.stderr)")
        #expect(tagged.stderr.contains("('99.0.1'): no commit in this history added the line"), "\(tagged.stderr)")
        let tags = try await git(["tag", "--list"], in: clone).split(separator: "\n").map(String.init)
        #expect(tags == listed.sorted(), "tagged: \(tags)")
    }
}

/// A new directory's URL under the temporary directory (not created).
private func temporaryDirectory(_ name: String) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
}

/// Clones `source`'s current branch as users get it: that branch's commits, no tags.
private func freshClone(of source: URL, at clone: URL) async throws {
    try FileManager.default.createDirectory(at: clone.deletingLastPathComponent(), withIntermediateDirectories: true)
    try await git(["clone", "--quiet", "--no-tags", "--single-branch", source.path, clone.path], in: nil)
    #expect(try await git(["tag", "--list"], in: clone).isEmpty, "the fresh clone has tags")
}

/// Runs git; its stdout, once it succeeded.
@discardableResult
private func git(_ arguments: [String], in directory: URL?) async throws -> String {
    let result = try await runProcess("/usr/bin/env", ["git"] + arguments, in: directory)
    try #require(result.status == 0, "git \(arguments.joined(separator: " ")): \(result.stderr)")
    return result.stdout
}

/// The versions RELEASES lists in `clone`, oldest first.
private func releases(in clone: URL) throws -> [String] {
    try String(contentsOf: clone.appendingPathComponent("RELEASES"), encoding: .utf8)
        .split(separator: "\n")
        .filter { !$0.hasPrefix("#") && !$0.allSatisfy(\.isWhitespace) }
        .map { String($0.split(separator: " ")[0]) }
}

/// Runs, in `clone`, the one shell line of README.md's "Depending on it" section.
private func runTheREADMEsShellLine(in clone: URL) async throws {
    let readme = try String(contentsOf: clone.appendingPathComponent("README.md"), encoding: .utf8)
    let section = try #require(readme.components(separatedBy: "\n## Depending on it\n").dropFirst().first?
        .components(separatedBy: "\n## ").first, "README.md has no section 'Depending on it'")
    let lines = section.components(separatedBy: "```sh\n").dropFirst()
        .flatMap { $0.components(separatedBy: "\n```").first?.split(separator: "\n") ?? [] }
        .filter { !$0.hasPrefix("#") && !$0.allSatisfy(\.isWhitespace) }
    try #require(lines.count == 1, "README.md's dependency section gives \(lines.count) shell lines, not one: \(lines)")
    let ran = try await runProcess("/bin/sh", ["-c", String(lines[0])], in: clone)
    try #require(ran.status == 0, "README.md's '\(lines[0])' failed in a fresh clone: \(ran.stderr)\(ran.stdout)")
}

/// README.md's first manifest (in `clone`), with only the clone's path changed, at `directory`,
/// with a program that prints the package's version; its executable target's name.
private func theREADMEsApp(from clone: URL, at directory: URL) async throws -> (directory: URL, target: String) {
    let manifests = directory.deletingLastPathComponent().appendingPathComponent("manifests")
    let written = try await runProcess(readmeSnippetsPath, ["--readme", clone.appendingPathComponent("README.md").path,
                                                            "--manifests", manifests.path])
    try #require(written.status == 0, "readme-snippets failed: \(written.stderr)")
    let first = try #require(try FileManager.default.contentsOfDirectory(atPath: manifests.path)
        .sorted { Int($0.dropFirst(5)) ?? 0 < Int($1.dropFirst(5)) ?? 0 }.first)
    let text = try String(contentsOf: manifests.appendingPathComponent(first).appendingPathComponent("Package.swift"), encoding: .utf8)
    try #require(text.contains("file:///src/pingstorage-linux"), "README.md's first manifest no longer depends on file:///src/pingstorage-linux")
    let target = try #require(text.firstMatch(of: /\.executableTarget\(name: "([^"]+)"/).map { String($0.1) })
    try writePackage(at: directory, manifest: text.replacingOccurrences(of: "file:///src/pingstorage-linux", with: "file://\(clone.path)"),
                     source: ("\(target)/main.swift", "import PingStorage\nprint(PingStorageVersion.current)\n"))
    return (directory, target)
}

/// Writes a package: its manifest and one source file under Sources/.
private func writePackage(at directory: URL, manifest: String, source: (path: String, text: String)) throws {
    let file = directory.appendingPathComponent("Sources").appendingPathComponent(source.path)
    try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
    try manifest.write(to: directory.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
    try source.text.write(to: file, atomically: true, encoding: .utf8)
}

/// The version and revision `package` resolved to (Package.resolved).
private func pin(of package: String, in directory: URL) throws -> (version: String?, revision: String?) {
    let data = try Data(contentsOf: directory.appendingPathComponent("Package.resolved"))
    let resolved = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let pins = resolved["pins"] as? [[String: Any]] ?? []
    let state = try #require(pins.first { $0["identity"] as? String == package }?["state"] as? [String: Any],
                             "\(package) is not in Package.resolved")
    return (state["version"] as? String, state["revision"] as? String)
}

/// Cuts release `version` in `clone` as CONTRIBUTING.md says, on a commit of its own merged into
/// the current branch with a merge commit: Version.swift, CHANGELOG.md's dated entry and the line
/// in RELEASES, in one commit. Returns that commit.
private func cutRelease(_ version: String, in clone: URL) async throws -> String {
    let identity = ["-c", "user.name=Test", "-c", "user.email=test@example.invalid"]
    try await git(["checkout", "--quiet", "--detach"], in: clone)
    let versionFile = clone.appendingPathComponent("Sources/PingStorage/Version.swift")
    let source = try String(contentsOf: versionFile, encoding: .utf8)
    try #require(source.contains(/current = "\d+\.\d+\.\d+"/))
    try source.replacing(/current = "\d+\.\d+\.\d+"/, with: "current = \"\(version)\"")
        .write(to: versionFile, atomically: true, encoding: .utf8)
    let changelogFile = clone.appendingPathComponent("CHANGELOG.md")
    let changelog = try String(contentsOf: changelogFile, encoding: .utf8)
    // The [Unreleased] section becomes the dated entry; on a release tip (no such section), the
    // change's section is a new one above the newest entry.
    let dated = changelog.contains("\n## [Unreleased]\n")
        ? changelog.replacing("\n## [Unreleased]\n", with: "\n## [\(version)] - 2099-01-01\n", maxReplacements: 1)
        : changelog.replacing("\n## [", with: "\n## [\(version)] - 2099-01-01\n\n- A change.\n\n## [", maxReplacements: 1)
    try #require(dated != changelog)
    try dated.write(to: changelogFile, atomically: true, encoding: .utf8)
    let list = clone.appendingPathComponent("RELEASES")
    try (try String(contentsOf: list, encoding: .utf8) + "\(version)\n").write(to: list, atomically: true, encoding: .utf8)
    try await git(identity + ["commit", "--quiet", "-am", "Release \(version)"], in: clone)
    let release = try await git(["rev-parse", "HEAD"], in: clone).trimmingCharacters(in: .whitespacesAndNewlines)
    try await git(["checkout", "--quiet", "-"], in: clone)
    try await git(identity + ["merge", "--quiet", "--no-ff", "--no-edit", release], in: clone)
    return release
}
