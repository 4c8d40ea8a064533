import Foundation
import PingStorage
import SecretService
import Testing

extension SandboxIntegration.MovingIn {
    /// A move into the sandbox killed at each of its steps (keychain-probe's `--exit-in-move STEP`:
    /// 1 once the file holds the copies, 1 + N after the N-th host deletion) finishes at a later
    /// start: the app's own host items still as they were copied leave the host; one the app
    /// outside the sandbox saved again meanwhile stays there, reported; another app's and no app's
    /// items are never touched. Each step on a service of its own (the move is once per service).
    @Test(arguments: 1...4)
    func aMoveKilledAtAnyStepFinishesAtALaterStart(step: Int) async throws {
        let service = "com.example.move-\(step)-\(UUID().uuidString.prefix(8))"
        let app = AppIdentity.current.id, other = "com.example.Other.\(service.suffix(8))"
        let accounts = (0..<3).map { "own-\($0)" }
        func probe(_ arguments: [String], app: String? = nil, host: Bool = false) async throws -> ProcessResult {
            var environment = ProcessInfo.processInfo.environment
            if host { environment["PINGSTORAGE_BACKEND"] = "secret-service" }
            if let app { environment["KEYCHAIN_PROBE_APP"] = app }
            return try await run(Harness.probePath, ["--service", service] + arguments, environment: environment)
        }
        for account in accounts {
            #expect(try await probe(["save", account, "\(account) on the host"], app: app, host: true).status == 0)
        }
        #expect(try await probe(["save", accounts[0], "another app's"], app: other, host: true).status == 0)
        _ = try await SecretServiceClient().createItem(
            in: .default, label: "1.x", attributes: ["service": service, "account": "legacy"],
            secret: SecretValue(bytes: Data("\"from 1.x\"".utf8)))
        func ownOnHost() async throws -> [String] {
            try await Self.hostItems(["service": service, AppIdentity.attribute: app])
        }
        #expect(try await ownOnHost().count == 3)

        // The first start in the sandbox is killed at `step`.
        let killed = try await probe(["--exit-in-move", "\(step)", "get", accounts[0]])
        #expect(killed.status == 9, "killed in the move: \(killed.output) \(killed.stderr)")
        let left = try await ownOnHost()
        #expect(left.count == 3 - min(step - 1, 3), "the host deletions made before the kill: \(left)")

        // Meanwhile the app outside the sandbox saves one of them again: that item changed since it
        // was copied in, and must stay on the host.
        var changedPath: String?
        if let first = left.first {
            let account = try #require(try await SecretServiceClient().itemInfo(ItemPath(first)).attributes["account"])
            #expect(try await probe(["save", account, "saved again on the host"], app: app, host: true).status == 0)
            changedPath = first
        }

        // A later start finishes the move.
        let finished = try await probe(["get", accounts[1]])
        #expect(finished.output == "\(accounts[1]) on the host\n", "\(finished.stderr)")
        #expect(try await ownOnHost() == (changedPath.map { [$0] } ?? []), "only the item changed since the copy stays on the host")
        for account in accounts {
            let read = try await probe(["get", account])
            #expect(read.output == "\(account) on the host\n", "the sandbox has the copy: \(read.stderr)")
        }
        #expect(try await Self.hostItems(["service": service, AppIdentity.attribute: other]).count == 1, "another app's stays")
        #expect(try await Self.hostItems(["service": service, "account": "legacy"]).count == 1, "no app's stays")
        #expect(try await probe(["get", accounts[0]], app: other, host: true).output == "another app's\n")
    }
}
