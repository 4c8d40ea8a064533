import Locking

/// A call held in flight until the test opens it.
final class Hold: Sendable {
    private struct State {
        var isOpen = false
        var hasArrived = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Locked(State())

    var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Returns once a call reached the hold; throws when none did within `timeout`.
    func waitForArrival(within timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !state.withLock({ $0.hasArrived }) {
            guard ContinuousClock.now < deadline else { throw HoldError("no call reached the hold within \(timeout)") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let runNow = state.withLock { state -> Bool in
                state.hasArrived = true
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if runNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}

struct HoldError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
