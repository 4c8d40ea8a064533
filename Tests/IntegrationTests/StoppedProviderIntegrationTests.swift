import Foundation
import PingStorage
import SecretService
import Testing

extension Integration.Faults {
    /// A provider that stopped answering (SIGSTOP) costs one call's deadline, not one per call:
    /// the first call waits for its deadline, the calls after it fail at once (a quick probe, no
    /// answer) with a detail that says since when and what was tried, and they go through again
    /// as soon as it answers (SIGCONT).
    @Test func stoppedProviderCostsOneDeadlineNotOnePerStore() async throws {
        let accounts = (0..<4).map { uniqueAccount("stopped\($0)") }
        let configuration = KeychainConfiguration(timeout: .seconds(2))
        let stores = accounts.map { KeychainStorage<String>(account: $0, configuration: configuration) }
        for (index, store) in stores.enumerated() { try await store.save(item: "store \(index)") }

        try Harness.ctl("suspend")
        var resumed = false
        defer { if !resumed { try? Harness.ctl("resume") } }
        var started = ContinuousClock.now
        let first = await keychainError { _ = try await stores[0].get() }
        let firstTook = ContinuousClock.now - started
        #expect(first?.kind == "timedOut", "\(String(describing: first))")
        #expect(firstTook >= .milliseconds(1900), "the first call waits for its deadline: \(firstTook)")
        // The detail says what was waited for and how long.
        #expect(first?.detail?.contains("got no reply within") == true, "\(String(describing: first?.detail))")

        for store in stores.dropFirst() {
            started = ContinuousClock.now
            let error = await keychainError { _ = try await store.get() }
            let took = ContinuousClock.now - started
            #expect(error?.kind == "timedOut", "\(String(describing: error))")
            #expect(took < .seconds(1), "fails fast once the provider is known to be silent: \(took)")
            let detail = error?.detail ?? ""
            #expect(detail.contains("no reply from :") && detail.contains(" since ") && detail.contains("probe"), "\(detail)")
            #expect(detail.contains("this call was not sent"), "\(detail)")
        }

        // The same, typed, through a Secret Service client of its own (its own connection: its
        // first call waits for the deadline too).
        let client = SecretServiceClient(options: .init(timeout: .seconds(2)))
        let typed: SecretServiceError? = await {
            do throws(SecretServiceError) { _ = try await client.collections(); return nil } catch { return error }
        }()
        #expect(typed?.code == .timedOut, "\(String(describing: typed))")
        started = ContinuousClock.now
        let again: SecretServiceError? = await {
            do throws(SecretServiceError) { _ = try await client.collections(); return nil } catch { return error }
        }()
        #expect(again?.code == .notResponding, "\(String(describing: again))")
        #expect(ContinuousClock.now - started < .seconds(1))

        // A call whose own deadline is shorter than the probe's 500 ms ends at its own deadline.
        let hurried = client.with(options: .init(timeout: .milliseconds(100)))
        started = ContinuousClock.now
        let hurriedError: SecretServiceError? = await {
            do throws(SecretServiceError) { _ = try await hurried.collections(); return nil } catch { return error }
        }()
        #expect(hurriedError?.code == .timedOut || hurriedError?.code == .notResponding, "\(String(describing: hurriedError))")
        #expect(ContinuousClock.now - started < .milliseconds(450), "the app's deadline is kept: \(ContinuousClock.now - started)")

        try Harness.ctl("resume")
        resumed = true
        for (index, store) in stores.enumerated() {
            #expect(try await store.get() == "store \(index)", "calls go through again once it answers")
        }
        #expect(try await client.collections().isEmpty == false)
        for store in stores { try await store.delete() }
    }
}
