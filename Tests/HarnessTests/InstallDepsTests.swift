import Foundation
import Testing

/// dbus-test/install-deps against stub package managers: which system it detects, what it checks,
/// what it installs (as root) or prints (otherwise). Nothing is installed for real and no daemon runs.
@Suite("install-deps: needs to packages, per system", .serialized)
struct InstallDepsTests {
    static let buildOnApt = ["libsecret-1-dev", "libglib2.0-dev", "libgcrypt20-dev", "libtss2-dev", "pkg-config"]
    static let buildOnDnf = ["libsecret-devel", "glib2-devel", "libgcrypt-devel", "tpm2-tss-devel", "pkgconf-pkg-config"]
    static let buildOnPacman = ["libsecret", "glib2", "libgcrypt", "tpm2-tss", "pkgconf"]

    @Test func aptAsRootChecksEachPackageThenInstallsTheMissingOnes() async throws {
        let system = try StubSystem(os: .debian, installed: ["libglib2.0-dev", "pkg-config"])
        defer { system.remove() }
        let outcome = try await system.run("install-deps", ["build"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try system.calls(of: packageTools) == Self.buildOnApt.map { "dpkg-query -W -f=${Status} \($0)" } + [
            "apt-get update -qq",
            "apt-get install -y -qq --no-install-recommends libsecret-1-dev libgcrypt20-dev libtss2-dev",
        ])
    }

    @Test func aptAsAUserPrintsTheCommandAndInstallsNothing() async throws {
        let system = try StubSystem(os: .debian, uid: 1000)
        defer { system.remove() }
        let outcome = try await system.run("install-deps", ["build"])
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("\n  sudo apt-get install -y --no-install-recommends \(Self.buildOnApt.joined(separator: " "))\n"),
                "\(outcome.stderr)")
        #expect(try system.calls(of: packageTools) == Self.buildOnApt.map { "dpkg-query -W -f=${Status} \($0)" },
                "it checks, and neither installs nor calls sudo")
    }

    @Test func dnfAsRootUsesRpmToCheckAndDnfToInstall() async throws {
        let system = try StubSystem(os: .fedora, installed: ["glib2-devel"])
        defer { system.remove() }
        let outcome = try await system.run("install-deps", ["build"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try system.calls(of: packageTools) == Self.buildOnDnf.map { "rpm -q \($0)" } + [
            "dnf install -y libsecret-devel libgcrypt-devel tpm2-tss-devel pkgconf-pkg-config",
        ])
    }

    @Test func dnfAsAUserPrintsTheCommand() async throws {
        let system = try StubSystem(os: .fedora, uid: 1000)
        defer { system.remove() }
        let outcome = try await system.run("install-deps", ["build"])
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("\n  sudo dnf install -y \(Self.buildOnDnf.joined(separator: " "))\n"), "\(outcome.stderr)")
        #expect(try system.calls(of: packageTools) == Self.buildOnDnf.map { "rpm -q \($0)" })
    }

    @Test func pacmanAsRootUsesPacmanQueryThenSync() async throws {
        let system = try StubSystem(os: .arch, installed: ["pkgconf"])
        defer { system.remove() }
        let outcome = try await system.run("install-deps", ["build"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try system.calls(of: packageTools) == Self.buildOnPacman.map { "pacman -Q \($0)" } + [
            "pacman -S --needed --noconfirm libsecret glib2 libgcrypt tpm2-tss",
        ])
    }

    @Test func pacmanAsAUserPrintsTheCommand() async throws {
        let system = try StubSystem(os: .arch, uid: 1000)
        defer { system.remove() }
        let outcome = try await system.run("install-deps", ["build"])
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("\n  sudo pacman -S --needed --noconfirm \(Self.buildOnPacman.joined(separator: " "))\n"),
                "\(outcome.stderr)")
        #expect(try system.calls(of: packageTools) == Self.buildOnPacman.map { "pacman -Q \($0)" })
    }

    @Test("Nothing missing: checked, nothing installed", arguments: [
        (StubSystem.OS.debian, InstallDepsTests.buildOnApt),
        (.fedora, InstallDepsTests.buildOnDnf),
        (.arch, InstallDepsTests.buildOnPacman),
    ])
    func nothingMissingInstallsNothing(os: StubSystem.OS, packages: [String]) async throws {
        for uid in [0, 1000] {
            let system = try StubSystem(os: os, uid: uid, installed: packages)
            defer { system.remove() }
            let outcome = try await system.run("install-deps", ["build"])
            #expect(outcome.status == 0, "uid \(uid): \(outcome.stderr)")
            #expect(outcome.stderr.isEmpty)
            let calls = try system.calls(of: packageTools)
            #expect(calls.count == packages.count, "one check per package, uid \(uid): \(calls)")
            #expect(!calls.contains { $0.hasPrefix("apt-get") || $0.hasPrefix("dnf") || $0.hasPrefix("pacman -S") || $0.hasPrefix("sudo") })
        }
    }

    @Test("ID, then ID_LIKE, picks the package manager", arguments: [
        ("ID=ubuntu\nID_LIKE=debian\n", "dpkg-query"),
        ("ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n", "dpkg-query"),
        ("ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n", "rpm"),
        ("ID=endeavouros\nID_LIKE=arch\n", "pacman"),
        ("ID=archlinux\n", "pacman"),
    ])
    func osReleaseDecides(osRelease: String, checker: String) async throws {
        let system = try StubSystem(os: .custom(osRelease))
        defer { system.remove() }
        _ = try await system.run("install-deps", ["pkg-config"])
        let calls = try system.calls(of: packageTools)
        #expect(calls.first?.hasPrefix(checker + " ") == true, "\(osRelease): \(calls)")
    }

    @Test("An unknown system: the needs are named, nothing is called", arguments: [
        StubSystem.OS.custom("ID=gentoo\n"), .custom("ID=opensuse-tumbleweed\nID_LIKE=\"opensuse suse\"\n"), .none,
    ])
    func unknownSystemNamesTheNeeds(os: StubSystem.OS) async throws {
        let system = try StubSystem(os: os)
        defer { system.remove() }
        let outcome = try await system.run("install-deps", ["build"])
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("cannot check or install packages on this system"), "\(outcome.stderr)")
        for need in ["libsecret-dev", "glib-dev", "libgcrypt-dev", "libtss2-dev", "pkg-config"] {
            #expect(outcome.stderr.contains("  \(need): "), "names \(need)")
        }
        #expect(outcome.stderr.contains("DBUS_TEST_SKIP_INSTALL=1"))
        #expect(try system.calls(of: packageTools).isEmpty)
    }

    @Test func skipInstallChecksNothing() async throws {
        let system = try StubSystem(os: .debian)
        defer { system.remove() }
        let outcome = try await system.run("install-deps", ["build", "harness"], environment: ["DBUS_TEST_SKIP_INSTALL": "1"])
        #expect(outcome.status == 0)
        #expect(try system.calls().isEmpty)
    }

    @Test func anUnknownNeedIsAnError() async throws {
        let system = try StubSystem(os: .debian)
        defer { system.remove() }
        let outcome = try await system.run("install-deps", ["build", "libsecret-1-dev"])
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains("'libsecret-1-dev' (an argument) is not a need"), "\(outcome.stderr)")
        #expect(try system.calls().isEmpty)
    }

    @Test func listsNeedsAndFilesMixAndRepeatsCountOnce() async throws {
        let system = try StubSystem(os: .debian)
        defer { system.remove() }
        let list = system.root.appendingPathComponent("my.needs")
        try "# a comment\n\nvalgrind\n  gdbus  \n".write(to: list, atomically: true, encoding: .utf8)
        let outcome = try await system.run("install-deps", ["--packages", "harness", list.path, "valgrind", "/no/such/list"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout == "dbus-daemon\nlibglib2.0-bin\nprocps\nvalgrind\n")
    }

    @Test("Every list names only needs of the table, on every system", arguments: [
        StubSystem.OS.debian, .fedora, .arch,
    ])
    func everyListIsValid(os: StubSystem.OS) async throws {
        let system = try StubSystem(os: os)
        defer { system.remove() }
        let lists = try listFiles()
        #expect(lists.count >= 10, "\(lists)")
        for list in lists {
            let outcome = try await system.run("install-deps", ["--packages", list.path])
            #expect(outcome.status == 0, "\(list.path): \(outcome.stderr)")
            #expect(!outcome.stdout.isEmpty, "\(list.path) names at least one need")
        }
    }

    @Test func theReadmeTableIsTheTable() async throws {
        let system = try StubSystem(os: .debian)
        defer { system.remove() }
        let generated = try await system.run("install-deps", ["--markdown"])
        #expect(generated.status == 0)
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("dbus-test/README.md"), encoding: .utf8)
        let begin = "<!-- needs table: the output of dbus-test/install-deps --markdown -->\n"
        let end = "<!-- end of needs table -->"
        let start = try #require(readme.range(of: begin), "the README marks the table's start")
        let stop = try #require(readme.range(of: end, range: start.upperBound..<readme.endIndex), "and its end")
        #expect(String(readme[start.upperBound..<stop.lowerBound]) == generated.stdout,
                "dbus-test/README.md's table differs from `dbus-test/install-deps --markdown`: paste its output")
    }
}

/// Every file of needs in the repository.
func listFiles() throws -> [URL] {
    let fileManager = FileManager.default
    let needs = repositoryRoot.appendingPathComponent("dbus-test/needs")
    let providers = repositoryRoot.appendingPathComponent("dbus-test/providers")
    var lists = try fileManager.contentsOfDirectory(atPath: needs.path).filter { $0 != "table" }
        .map { needs.appendingPathComponent($0) }
    lists += try fileManager.contentsOfDirectory(atPath: providers.path).filter { $0.hasSuffix(".needs") }
        .map { providers.appendingPathComponent($0) }
    lists += [".ci/needs", "benchmark/needs"].map { repositoryRoot.appendingPathComponent($0) }
    return lists.sorted { $0.path < $1.path }
}
