import FileKeyring
import Foundation
import PingStorage
import Testing

/// `ping-keyring` run as a process inside the simulated sandbox: it finds, reads and writes the
/// app's file keyring (what KeychainStorage uses there), says so, and its doctor checks the
/// Secret portal and the file. libsecret's `secret-tool`, in the same sandbox, checks the file.
extension SandboxIntegration {
    /// The reason automatic selection gives when the portal hands over the secret.
    static let portalReason = "in a Flatpak sandbox (/.flatpak-info exists), and the Secret portal gave the app's secret"
    /// What every item command prints first (`get`: on stderr).
    static var fileBackendLine: String { "backend: file keyring \(Harness.sandboxKeyring) (\(portalReason))\n" }
}

extension SandboxIntegration.FileKeyringThroughThePortal {
    @Test func pingKeyringDoctorPassesOnTheFileKeyringAndNamesThePortal() async throws {
        let result = try await runPingKeyring(["doctor"])
        #expect(result.status == 0, "\(result.output)\(result.stderr)")
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "ping-keyring doctor (file keyring: \(Harness.sandboxKeyring))")
        #expect(lines.contains { $0.hasPrefix("ok    session bus ") })
        #expect(lines.contains("ok    backend            file keyring \(Harness.sandboxKeyring) (\(SandboxIntegration.portalReason))"))
        #expect(lines.contains("ok    Secret portal      gave the app's secret (64 bytes)"))
        #expect(lines.contains { $0.hasPrefix("ok    file keyring       \(Harness.sandboxKeyring) ") })
        #expect(lines.contains("ok    copied in          the host's Secret Service is out of reach: nothing to copy in"))
        #expect(lines.contains { $0.hasPrefix("ok    write/read/delete  wrote, read back and deleted an item") })
        #expect(lines.contains { $0.hasPrefix("ok    encryption key     ") })
        #expect(lines.contains { $0.hasPrefix("ok    key binding        not bound: ") }, "the sandbox has no TPM")
        for title in ["Secret Service", "collection    ", "unlocked      ", "transport     "] {
            #expect(lines.contains { $0.hasPrefix("skip  \(title)") && $0.hasSuffix("skipped: the file keyring is used: "
                                                                                    + SandboxIntegration.portalReason) }, "\(title)")
        }
        #expect(lines.last == "All checks passed.")

        let json = try jsonObject(try await runPingKeyring(["doctor", "--json"]))
        #expect(json["exitCode"] as? Int == 0)
        let backend = try #require(json["backend"] as? [String: Any])
        #expect(backend["kind"] as? String == "fileKeyring")
        #expect(backend["path"] as? String == Harness.sandboxKeyring)
        let checks = try #require(json["checks"] as? [[String: Any]])
        #expect(checks.map { $0["id"] as? String } == ["sessionBus", "backend", "portal", "fileKeyring", "movedIn", "probe",
                                                      "encryptionKey", "keyBinding", "provider", "collection", "unlocked", "transport"])
        #expect(try await SandboxIntegration.fileKeyring().items(matching: ["service": probeService]).isEmpty, "the probe cleaned up")
    }

    @Test func pingKeyringSavesGetsListsAndDeletesInTheFileAsLibsecretSeesIt() async throws {
        let account = uniqueAccount()
        let json = #"{"accessToken":"in-the-file-\#(UUID().uuidString.prefix(8))","expiresIn":3600}"#
        let saved = try await runPingKeyring(["save", "--account", account], input: Data(json.utf8))
        #expect(saved.status == 0, "\(saved.stderr)")
        #expect(saved.stderr == SandboxIntegration.fileBackendLine, "in a sandbox the backend is said, on stderr")
        #expect(saved.output.hasPrefix("Saved \(json.utf8.count) bytes for account '\(account)' (service \(defaultService)) in /file/default/"))
        let lookedUp = try await SandboxIntegration.libsecret(["lookup", "service", defaultService, "account", account])
        #expect(lookedUp.status == 0, "\(lookedUp.stderr)")
        #expect(lookedUp.output == json, "libsecret reads what ping-keyring saved from the file")

        let got = try await runPingKeyring(["get", "--account", account])
        #expect(got.status == 0, "\(got.stderr)")
        #expect(got.output == json + "\n")
        #expect(got.stderr == SandboxIntegration.fileBackendLine)

        let listed = try await runPingKeyring(["list"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stderr == SandboxIntegration.fileBackendLine)
        #expect(!listed.output.contains("backend:"), "never on stdout")
        #expect(listed.output.contains(" in \(Harness.sandboxKeyring):\n"))
        #expect(listed.output.contains("\n\(account)\n  service:    \(defaultService)\n"))
        #expect(listed.output.contains("  size:       \(json.utf8.count) bytes (text/plain)\n"))
        #expect(!listed.output.contains("in-the-file-"), "never the secret")
        let listedJSON = try jsonObject(try await runPingKeyring(["list", "--json"]))
        #expect(listedJSON["collection"] as? String == Harness.sandboxKeyring)
        #expect((listedJSON["backend"] as? [String: Any])?["kind"] as? String == "fileKeyring")
        let row = try #require((listedJSON["items"] as? [[String: Any]])?.first { $0["account"] as? String == account })
        #expect((row["item"] as? String)?.hasPrefix("/file/default/") == true)
        #expect(row["collection"] as? String == Harness.sandboxKeyring)

        // What libsecret stores, ping-keyring reads (as KeychainStorage adopts it).
        let other = uniqueAccount("libsecret")
        let stored = try await SandboxIntegration.libsecret(["store", "--label=by libsecret", "service", defaultService, "account", other],
                                                      input: Data("\"stored by libsecret\"".utf8))
        #expect(stored.status == 0, "\(stored.stderr)")
        #expect(try await runPingKeyring(["get", "--account", other]).output == "\"stored by libsecret\"\n")

        for name in [account, other] {
            let deleted = try await runPingKeyring(["delete", "--account", name])
            #expect(deleted.stderr == SandboxIntegration.fileBackendLine)
            #expect(deleted.output == "Deleted the item of account '\(name)' (service \(defaultService)).\n")
            let gone = try await SandboxIntegration.libsecret(["lookup", "service", defaultService, "account", name])
            #expect(gone.status == 1 && gone.output.isEmpty, "libsecret finds nothing: \(gone.status) \(gone.stderr)")
        }
        let missing = try await runPingKeyring(["get", "--account", account])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("in the file keyring \(Harness.sandboxKeyring)."), "\(missing.stderr)")
    }

    @Test func pingKeyringEncryptsWithTheKeyInTheFileAndDecryptsWhatAnAppSealed() async throws {
        let account = uniqueAccount()
        let saved = try await runPingKeyring(["save", "--account", account, "--encrypt"], input: Data("\"sealed by ping-keyring\"".utf8))
        #expect(saved.status == 0, "\(saved.stderr)")
        let stored = try #require(try await SandboxIntegration.fileKeyring().lookup(lookup(account)))
        #expect(stored.secret.withUnsafeBytes { Data($0.prefix(4)) } == envelopeMagic, "an envelope in the file")
        // An app's SecuredKeyEncryptor finds the key in the same file.
        let encryptor = try #require(SecuredKeyEncryptor())
        #expect(try await KeychainStorage<String>(account: account, encryptor: encryptor).get() == "sealed by ping-keyring")

        let other = uniqueAccount("app")
        try await KeychainStorage<String>(account: other, encryptor: encryptor).save(item: "sealed by the app")
        let got = try await runPingKeyring(["get", "--account", other])
        #expect(got.status == 0, "\(got.stderr)")
        #expect(got.output == "\"sealed by the app\"\n")
        let listed = try await runPingKeyring(["list", "--json"])
        let row = try #require((try jsonObject(listed)["items"] as? [[String: Any]])?.first { $0["account"] as? String == other })
        #expect(row["encrypted"] as? String == "yes")
        for name in [account, other] { #expect(try await runPingKeyring(["delete", "--account", name]).status == 0) }
    }
}

extension SandboxIntegration.WithoutASecret {
    @Test func pingKeyringDoctorFailsAtThePortalWithinSeconds() async throws {
        let started = ContinuousClock.now
        let result = try await runPingKeyring(["doctor"], timeout: 60)
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .seconds(5), "took \(elapsed)")
        #expect(result.status == 3, "\(result.output)\(result.stderr)")
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "ping-keyring doctor (file keyring: \(Harness.sandboxKeyring))")
        #expect(lines.contains { $0.hasPrefix("ok    session bus ") })
        #expect(lines.contains { $0.hasPrefix("ok    backend            file keyring \(Harness.sandboxKeyring) (in a Flatpak sandbox") })
        let portal = try #require(lines.firstIndex { $0.hasPrefix("FAIL  Secret portal ") }, "\(result.output)")
        let fix = try #require(lines[portal...].first { $0.contains("fix: ") })
        #expect(fix.contains("xdg-desktop-portal") && fix.contains("--talk-name=org.freedesktop.secrets"))
        #expect(lines.contains("skip  file keyring       skipped: needs the app's secret from the Secret portal"))
        #expect(lines.last == "1 check failed (exit status 3).")

        let json = try jsonObject(try await runPingKeyring(["doctor", "--json"], timeout: 60))
        #expect(json["exitCode"] as? Int == 3)
        let checks = try #require(json["checks"] as? [[String: Any]])
        #expect(checks.map { $0["status"] as? String } == ["pass", "pass", "fail", "skip", "skip", "skip",
                                                          "skip", "skip", "skip", "skip"])
        #expect(checks[2]["errorKind"] as? String == "noSecretService")

        let listed = try await runPingKeyring(["list"], timeout: 60)
        #expect(listed.status == 3)
        #expect(listed.stderr.hasPrefix("ping-keyring: error: noSecretService:"), "\(listed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: Harness.sandboxKeyring), "no file keyring without its secret")
    }
}
