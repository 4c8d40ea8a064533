import Foundation
import PingStorage
import Testing
@testable import PingKeyringCore

private func options(_ arguments: [String]) throws -> GlobalOptions? {
    guard case .run(_, let options) = try ArgumentParser.parse(arguments) else { return nil }
    return options
}

@Suite("--backend and the backend line of every command")
struct BackendOptionTests {
    @Test func theValuesAreKeychainConfigurationsBackends() throws {
        #expect(try options(["list"])?.backend == nil)
        #expect(try options(["list", "--backend", "automatic"])?.backend == .automatic)
        #expect(try options(["--backend", "secret-service", "list"])?.backend == .secretService)
        #expect(try options(["get", "-a", "A", "--backend=file-keyring"])?.backend == .fileKeyring(path: nil))

        var settings = KeyringSettings(try #require(try options(["list", "--backend", "file-keyring"])))
        #expect(settings.configuration(service: "S").backend == .fileKeyring(path: nil))
        settings.backend = nil
        #expect(settings.configuration().backend == .automatic, "the library's default")
    }

    @Test func anUnknownBackendIsAUsageError() {
        do {
            _ = try ArgumentParser.parse(["list", "--backend", "file-keyrin"])
            Issue.record("parsed")
        } catch {
            #expect(error.status == .usage)
            #expect(error.message.hasPrefix("--backend 'file-keyrin' is not a backend; did you mean 'file-keyring'?"))
        }
        do {
            _ = try ArgumentParser.parse(["list", "--backend", "kwallet"])
            Issue.record("parsed")
        } catch {
            #expect(error.message.hasPrefix(
                "--backend 'kwallet' is not a backend; it is one of automatic, secret-service, file-keyring"))
        }
    }

    @Test func aBackendSetByTheOptionSaysSo() async throws {
        var settings = KeyringSettings(GlobalOptions())
        settings.backend = .secretService
        let configuration = settings.configuration()
        // A set backend is decided without any I/O.
        let choice = try await settings.backend(of: settings.inventory(configuration))
        #expect(choice == KeychainBackendChoice(kind: .secretService, reason: "set by --backend secret-service"))
        #expect(try settings.plannedBackend(configuration) == choice)
        settings.backend = .fileKeyring(path: nil)
        let file = try settings.plannedBackend(settings.configuration())
        #expect(file.reason == "set by --backend file-keyring")
        #expect(file.filePath?.hasSuffix("/keyrings/default.keyring") == true)
    }

    @Test func theBackendLineAndObject() throws {
        let secretService = KeychainBackendChoice(kind: .secretService, reason: "not in a Flatpak sandbox")
        let file = KeychainBackendChoice(kind: .fileKeyring(path: "/d/keyrings/default.keyring"), reason: "set by --backend file-keyring")
        #expect(secretService.humanLine == "backend: Secret Service (not in a Flatpak sandbox)\n")
        #expect(file.humanLine == "backend: file keyring /d/keyrings/default.keyring (set by --backend file-keyring)\n")

        var list = ListReport(collectionPath: "/d/keyrings/default.keyring", service: "S", items: [], backend: file)
        #expect(list.human == "No items with service S in /d/keyrings/default.keyring.\n")
        let json = try parseJSON(list.json.document)
        let backend = try #require(json["backend"] as? [String: Any])
        #expect(backend["kind"] as? String == "fileKeyring")
        #expect(backend["path"] as? String == "/d/keyrings/default.keyring")
        #expect(backend["reason"] as? String == "set by --backend file-keyring")
        list.backend = secretService
        let ssBackend = try #require(try parseJSON(list.json.document)["backend"] as? [String: Any])
        #expect(ssBackend["kind"] as? String == "secretService")
        #expect(ssBackend["path"] is NSNull)

        let save = SaveReport(account: "A", service: "S", path: "/file/default/1", collectionPath: "/d/keyrings/default.keyring",
                              size: 3, encryption: .no, backend: file)
        #expect(save.human == "Saved 3 bytes for account 'A' (service S) in /file/default/1.\n")
        let delete = DeleteReport(account: "A", service: "S", deleted: true, backend: secretService)
        #expect(delete.human == "Deleted the item of account 'A' (service S).\n")
        #expect((try parseJSON(delete.json.document)["backend"] as? [String: Any])?["kind"] as? String == "secretService")
    }

    @Test func getKeepsStdoutTheValueAlone() throws {
        let file = KeychainBackendChoice(kind: .fileKeyring(path: "/k"), reason: "r")
        let report = GetReport(account: "A", service: "S", path: "/file/k/1", collectionPath: "/k", contentType: "text/plain",
                               value: Data(#""v""#.utf8), raw: false, encryption: .no, keyID: nil, backend: file)
        #expect(report.human == Data("\"v\"\n".utf8), "the backend line goes to stderr")
        #expect((try parseJSON(report.json.document)["backend"] as? [String: Any])?["path"] as? String == "/k")
    }

    @Test func theManPageDocumentsTheVariable() {
        #expect(CommandTable.environment.contains { $0.name == "PINGSTORAGE_BACKEND" })
        #expect(ManPage.page.contains("PINGSTORAGE_BACKEND"))
    }
}
