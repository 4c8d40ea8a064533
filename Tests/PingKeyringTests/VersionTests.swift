import PingStorage
import Foundation
import Testing
@testable import PingKeyringCore

/// The package's root directory (this file is Tests/PingKeyringTests/VersionTests.swift).
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

@Suite("--version and the package version")
struct VersionTests {
    @Test func versionPrintsOneLine() async {
        for flag in ["--version", "-V"] {
            let outcome = await PingKeyring.run(arguments: [flag], environment: [:]) { Data() }
            #expect(outcome.status == 0, "\(flag)")
            #expect(String(decoding: outcome.standardOutput, as: UTF8.self) == "ping-keyring \(PingStorageVersion.current)\n", "\(flag)")
            #expect(outcome.standardError.isEmpty)
        }
    }

    @Test func versionWinsOverErrorsButNotOverHelp() throws {
        #expect(try ArgumentParser.parse(["list", "--bogus", "-V"]) == .version)
        #expect(try ArgumentParser.parse(["frobnicate", "--version"]) == .version)
        #expect(try ArgumentParser.parse(["--version", "get"]) == .version, "no --account needed")
        #expect(try ArgumentParser.parse(["-V", "--help"]) == .help(command: nil))
        #expect(try ArgumentParser.parse(["get", "--account", "-V"])
                == .run(.get(account: "-V", service: "com.pingidentity.keychainService", raw: false), GlobalOptions()),
                "an option's value is not an option")
    }

    @Test func theVersionIsSemanticAndDefinedInOnePlace() throws {
        let parts = PingStorageVersion.current.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) },
                "MAJOR.MINOR.PATCH: \(PingStorageVersion.current)")
        // No other source file spells the version out.
        let literal = "\"\(PingStorageVersion.current)\""
        let sources = packageRoot.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var holders: [String] = []
        for case let file as URL in files where file.pathExtension == "swift" {
            if try String(contentsOf: file, encoding: .utf8).contains(literal) { holders.append(file.lastPathComponent) }
        }
        #expect(holders == ["Version.swift"])
    }

    @Test func theLicenseIsMIT() throws {
        let license = try String(contentsOf: packageRoot.appendingPathComponent("LICENSE"), encoding: .utf8)
        #expect(license.hasPrefix("MIT License\n\nCopyright (c) 2026 PingStorage for Linux contributors\n"))
        #expect(license.contains("THE SOFTWARE IS PROVIDED \"AS IS\""))
    }
}
