import Foundation
import PingStorage
import Testing
@testable import PingKeyringCore

private func options(_ arguments: [String]) throws -> GlobalOptions? {
    guard case .run(_, let options) = try ArgumentParser.parse(arguments) else { return nil }
    return options
}

private let executable = AppIdentity(id: "/usr/bin/ping-keyring", source: .executable)
private let flatpak = AppIdentity(id: "org.example.Sandboxed", source: .flatpak)

@Suite("--app, the default app, and each item's app in the output")
struct AppOptionTests {
    @Test func appIsAGlobalOptionThatSetsTheConfigurationsApp() throws {
        #expect(try options(["list"])?.app == nil)
        #expect(try options(["--app", "com.example.A", "list"])?.app == "com.example.A")
        #expect(try options(["get", "-a", "X", "--app=com.example.B"])?.app == "com.example.B")
        let settings = KeyringSettings(try #require(try options(["save", "-a", "X", "--app", "com.example.A"])),
                                       detected: flatpak)
        #expect(settings.scopedApp == "com.example.A", "--app wins over the sandbox's id")
        #expect(settings.configuration(service: "S").app == "com.example.A")
        #expect(settings.configuration(service: "S").appIdentity.id == "com.example.A")
        #expect(settings.configuration(service: "S", app: "com.example.C").app == "com.example.C")
    }

    @Test func anEmptyOrNULAppIsAUsageError() {
        for arguments in [["list", "--app="], ["list", "--app", "a\u{0}b"]] {
            do {
                _ = try ArgumentParser.parse(arguments)
                Issue.record("parsed \(arguments)")
            } catch {
                #expect(error.status == .usage)
            }
        }
    }

    @Test func theDefaultIsTheSandboxsIdAndOutsideOneNoApp() throws {
        let none = try #require(try options(["list"]))
        #expect(KeyringSettings(none, detected: flatpak).scopedApp == "org.example.Sandboxed")
        #expect(KeyringSettings(none, detected: AppIdentity(id: "example", source: .snap)).scopedApp == "example")
        #expect(KeyringSettings(none, detected: executable).scopedApp == nil,
                "ping-keyring's own path is no app's: no app is chosen")
    }

    @Test func withoutAnAppTheOneAppOfTheAccountIsChosen() throws {
        for purpose in [AppChoice.Purpose.read, .save, .delete] {
            #expect(try AppChoice.choose(among: ["com.example.A"], account: "X", service: "S", purpose: purpose)
                == "com.example.A")
        }
        #expect(try AppChoice.choose(among: [], account: "X", service: "S", purpose: .read) == nil)
        #expect(try AppChoice.choose(among: [], account: "X", service: "S", purpose: .delete) == nil)
    }

    @Test func aSaveWithNoOwnerAndAnythingWithSeveralOwnersNeedsApp() {
        do {
            _ = try AppChoice.choose(among: [], account: "X", service: "S", purpose: .save)
            Issue.record("chose an app for a save with no owner")
        } catch {
            #expect(error.status == .usage)
            #expect(error.message.contains("--app ID"))
            #expect(error.message.contains("Nothing was saved."))
        }
        for purpose in [AppChoice.Purpose.read, .save, .delete] {
            do {
                _ = try AppChoice.choose(among: ["com.example.B", "com.example.A"], account: "X", service: "S",
                                         purpose: purpose)
                Issue.record("chose one of two apps for \(purpose)")
            } catch {
                #expect(error.status == .usage)
                #expect(error.message.contains("has items of 2 apps (com.example.A, com.example.B): choose one with --app"))
            }
        }
    }

    @Test func eachListedItemShowsItsApp() throws {
        let date = Date(timeIntervalSince1970: 0)
        let mine = ListedItem(account: "X", service: "S", label: "L", path: "/c/1", collectionPath: "/c", created: date,
                              modified: date, size: 3, contentType: "text/plain", encryption: .no, keyID: nil,
                              schema: KeyringCommands.schemaName, app: "com.example.A")
        var theirs = mine
        (theirs.app, theirs.path) = (nil, "/c/2")
        let report = ListReport(collectionPath: "/c", service: nil, items: [mine, theirs])
        let items = try #require(try parseJSON(report.json.document)["items"] as? [[String: Any]])
        #expect(items[0]["app"] as? String == "com.example.A")
        #expect(items[1]["app"] is NSNull)
        #expect(report.human.contains("  app:        com.example.A\n"))
        #expect(report.human.contains("  app:        none (another tool's, or PingStorage 1.x's: every app reads it)\n"))

        let filtered = ListReport(collectionPath: "/c", service: nil, app: "com.example.A", items: [mine])
        #expect(try parseJSON(filtered.json.document)["app"] as? String == "com.example.A")
        #expect(filtered.human.hasPrefix("1 item of PingStorage (any service) or with service "
            + "\(KeychainConfiguration.defaultService) of app com.example.A in /c:"))
    }

    @Test func getSaveAndDeleteSayTheApp() throws {
        var get = GetReport(account: "X", service: "S", path: "/c/1", collectionPath: "/c", contentType: "text/plain",
                            value: Data("1".utf8), raw: false, encryption: .no, keyID: nil, app: "com.example.A")
        #expect(try parseJSON(get.json.document)["app"] as? String == "com.example.A")
        #expect(get.humanNotes == "", "the app asked for (--app, or the sandbox's) is not repeated")
        get.appWasChosen = true
        #expect(get.humanNotes == "app: com.example.A\n", "the app ping-keyring chose, on stderr: stdout is the value alone")
        get.app = nil
        #expect(try parseJSON(get.json.document)["app"] is NSNull)

        var save = SaveReport(account: "X", service: "S", path: "/c/1", collectionPath: "/c", size: 1, encryption: .no,
                              app: "com.example.A")
        #expect(try parseJSON(save.json.document)["app"] as? String == "com.example.A")
        #expect(save.human == "Saved 1 bytes for account 'X' (service S) in /c/1.\n")
        save.appWasChosen = true
        #expect(save.human == "Saved 1 bytes for account 'X' (service S, app com.example.A) in /c/1.\n")
        var delete = DeleteReport(account: "X", service: "S", app: "com.example.A", deleted: true)
        #expect(try parseJSON(delete.json.document)["app"] as? String == "com.example.A")
        #expect(delete.human == "Deleted the item of account 'X' (service S).\n")
        delete.appWasChosen = true
        #expect(delete.human == "Deleted the item of account 'X' (service S, items of app com.example.A or of no app).\n")
        delete.app = nil
        #expect(delete.human == "Deleted the item of account 'X' (service S, items of no app).\n")
    }

    @Test func theDoctorReportsTheIdentityAndWarnsAboutTheFallback() async throws {
        var environment = FakeDoctorEnvironment()
        environment.appIdentity = executable
        var report = await Doctor.run(environment)
        var identity = try #require(try parseJSON(report.json.document)["appIdentity"] as? [String: Any])
        #expect(identity["id"] is NSNull, "each program's own path")
        #expect(identity["source"] as? String == "executable")
        #expect((identity["warning"] as? String)?.contains("AppIdentity.set(\"com.example.App\")") == true)
        #expect(report.human.contains("warn  app identity       each program's own executable path (this one's: "
            + "/usr/bin/ping-keyring)"))
        #expect(report.ok, "a warning is not a failure")

        environment.appIdentity = flatpak
        report = await Doctor.run(environment)
        identity = try #require(try parseJSON(report.json.document)["appIdentity"] as? [String: Any])
        #expect(identity["id"] as? String == "org.example.Sandboxed")
        #expect(identity["source"] as? String == "flatpak")
        #expect(identity["warning"] is NSNull)
        #expect(report.human.contains("ok    app identity       org.example.Sandboxed (the Flatpak's id"))
    }
}
