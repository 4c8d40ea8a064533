import Foundation
import Testing

/// dbus-test/run's choice of what to install, against stub package managers and a stub `gdbus`.
/// Only paths that end before a bus would start: a running Secret Service (COMMAND is a stub),
/// --install-only, or install-deps refusing as a user.
@Suite("run: installs only what the mode and COMMAND need", .serialized)
struct RunTests {
    static let sessionBus = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"]

    @Test func aRunningSecretServiceMeansNothingIsInstalled() async throws {
        let system = try StubSystem(os: .debian, secretServiceRunning: true, commands: ["app"])
        defer { system.remove() }
        let outcome = try await system.run("run", ["app", "hello", "world"], environment: Self.sessionBus)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("using the Secret Service already on this session bus"))
        #expect(try system.calls() == [
            "gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus --method org.freedesktop.DBus.NameHasOwner org.freedesktop.secrets",
            "app hello world",
        ], "asked the bus, ran COMMAND, and checked or installed no package")
    }

    @Test func withARunningSecretServiceSwiftStillNeedsTheBuildPackagesOnly() async throws {
        let system = try StubSystem(os: .debian, secretServiceRunning: true, commands: ["swift"])
        defer { system.remove() }
        let outcome = try await system.run("run", ["swift", "run", "pingstorage-demo"], environment: Self.sessionBus)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try system.calls(of: packageTools) == InstallDepsTests.buildOnApt.map { "dpkg-query -W -f=${Status} \($0)" } + [
            "apt-get update -qq",
            "apt-get install -y -qq --no-install-recommends \(InstallDepsTests.buildOnApt.joined(separator: " "))",
        ])
        #expect(try system.calls(of: ["swift"]) == ["swift run pingstorage-demo"])
    }

    @Test func withoutASecretServiceAUserIsToldWhatTheIsolatedModeNeeds() async throws {
        let system = try StubSystem(os: .fedora, uid: 1000, secretServiceRunning: false, commands: ["app"])
        defer { system.remove() }
        let outcome = try await system.run("run", ["app"], environment: Self.sessionBus)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("\n  sudo dnf install -y dbus-daemon glib2 procps-ng gnome-keyring\n"), "\(outcome.stderr)")
        #expect(try system.calls(of: ["app", "dnf", "sudo"]).isEmpty, "COMMAND did not run; nothing installed")
    }

    @Test func isolatedNeverUsesTheRunningSecretService() async throws {
        let system = try StubSystem(os: .debian, uid: 1000, secretServiceRunning: true, commands: ["app"])
        defer { system.remove() }
        let outcome = try await system.run("run", ["--isolated", "app"], environment: Self.sessionBus)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("\n  sudo apt-get install -y --no-install-recommends dbus-daemon libglib2.0-bin procps gnome-keyring\n"),
                "\(outcome.stderr)")
        #expect(try system.calls(of: ["app", "gdbus"]).isEmpty, "the running keyring was not even asked for")
    }

    @Test func theTestCommandInstallsBuildHarnessClientsAndFakeService() async throws {
        let system = try StubSystem(os: .debian, commands: ["swift"])
        defer { system.remove() }
        let outcome = try await system.run("run", ["--install-only", "--isolated", "swift", "test"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try system.calls(of: ["apt-get"]) == [
            "apt-get update -qq",
            "apt-get install -y -qq --no-install-recommends \(Self.testCommandPackages)",
        ])
        #expect(try system.calls(of: ["swift", "gdbus"]).isEmpty, "--install-only runs nothing and asks no bus")
    }

    static let testCommandPackages = "libsecret-1-dev libglib2.0-dev libgcrypt20-dev libtss2-dev pkg-config libsecret-tools dbus-bin "
        + "gir1.2-secret-1 python3-gi procps python3-keyring zsh groff bubblewrap python3-dbus python3-cryptography dbus-daemon "
        + "libglib2.0-bin gnome-keyring"

    @Test func theTPMModeAddsTheSoftwareTPM() async throws {
        // The Dockerfile's and .ci/run's first install line: test-all's first part runs with --tpm.
        let system = try StubSystem(os: .debian, commands: ["swift"])
        defer { system.remove() }
        let outcome = try await system.run("run", ["--install-only", "--tpm", "swift", "test"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try system.calls(of: ["apt-get"]) == [
            "apt-get update -qq",
            "apt-get install -y -qq --no-install-recommends \(Self.testCommandPackages) swtpm tpm2-abrmd libtss2-tcti-tabrmd0 tpm2-tools",
        ])
        #expect(try system.calls(of: ["swift", "gdbus"]).isEmpty, "--install-only runs nothing and asks no bus")
        let sandboxed = try await system.run("run", ["--tpm", "--sandbox", "swift", "test"])
        #expect(sandboxed.status == 2 && sandboxed.stderr.contains("--tpm does not run in a --sandbox"), "\(sandboxed.stderr)")
    }

    /// test-all's prompter part: the display, GNOME's prompter and the person's xdotool.
    @Test func thePrompterModeAddsTheDisplayThePrompterAndThePerson() async throws {
        let system = try StubSystem(os: .debian, commands: ["swift"])
        defer { system.remove() }
        let outcome = try await system.run("run", ["--install-only", "--prompter", "swift", "test"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try system.calls(of: ["apt-get"]) == [
            "apt-get update -qq",
            "apt-get install -y -qq --no-install-recommends \(Self.testCommandPackages) xvfb gcr xdotool",
        ])
        let onFedora = try StubSystem(os: .fedora, commands: ["app"])
        defer { onFedora.remove() }
        #expect(try await onFedora.run("run", ["--install-only", "--prompter", "app"]).status == 0)
        let dnf = try onFedora.calls(of: ["dnf"])
        #expect(dnf.last?.hasSuffix("xorg-x11-server-Xvfb gcr3 xdotool") == true, "\(dnf)")
        let sandboxed = try await system.run("run", ["--prompter", "--sandbox", "swift", "test"])
        #expect(sandboxed.status == 2 && sandboxed.stderr.contains("--prompter does not run in a --sandbox"), "\(sandboxed.stderr)")
    }

    @Test func sandboxInstallsThePortalProxyAndBwrapOnly() async throws {
        let system = try StubSystem(os: .arch, commands: ["app"])
        defer { system.remove() }
        let outcome = try await system.run("run", ["--install-only", "--sandbox", "app"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try system.calls(of: ["pacman"]).filter { $0.hasPrefix("pacman -S") } == [
            "pacman -S --needed --noconfirm dbus glib2 procps-ng gnome-keyring xdg-desktop-portal bubblewrap xdg-dbus-proxy",
        ])
    }

    @Test func aProviderBringsItsOwnNeedsInsteadOfGnomeKeyring() async throws {
        let system = try StubSystem(os: .debian, commands: ["app"])
        defer { system.remove() }
        let outcome = try await system.run("run", ["--install-only", "--provider", "keepassxc", "--needs", "valgrind", "app"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(try system.calls(of: ["apt-get"]).last
            == "apt-get install -y -qq --no-install-recommends valgrind dbus-daemon libglib2.0-bin procps keepassxc")
    }

    @Test func badOptionsAreRefusedBeforeAnythingIsInstalled() async throws {
        let system = try StubSystem(os: .debian, commands: ["app"])
        defer { system.remove() }
        for arguments in [["--sandbox-portal", "kde", "app"], ["--provider", "nope", "app"],
                          ["--sandbox", "--provider", "kwallet", "app"], ["--bogus", "app"]] {
            let outcome = try await system.run("run", arguments)
            #expect(outcome.status == 2, "\(arguments): \(outcome.stderr)")
        }
        #expect(try system.calls().isEmpty)
    }
}
