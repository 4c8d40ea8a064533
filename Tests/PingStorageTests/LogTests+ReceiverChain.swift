import Locking
@testable import SecretService
import Testing
@testable import PingStorage

/// The stack address of a local of the caller's frame (the stack grows down on every Linux target).
@inline(never)
private func stackAddress() -> UInt {
    var local = 0
    return withUnsafeMutablePointer(to: &local) { UInt(bitPattern: $0) }
}

/// Log receivers read many times are still the closures that were set, not ones wrapped in a
/// reabstraction thunk per read. (A bare closure in `Locked`, read with `withLock { $0 }`, was
/// wrapped again on every inout write-back: the chain grew by two frames a message, each message
/// walked it, and a process that logged 20,000 messages ran 7x slower and held 10 MiB more.)
/// Measured as the stack the receivers' calls take, which a chain would make deep: no clock.
extension LogTests {
    static let receiverReads = 2_000

    /// Runs `send(probe)` after `prepare()` and returns the stack the call to the observer took.
    private func stackUsed(after prepare: () -> Void, sending send: (String) -> Void) -> UInt {
        let probe = "receiver-chain probe \(UInt64.random(in: 0 ... .max))"
        let calledAt = Locked<UInt?>(nil)
        let observer = Log.addObserver { line in if line.hasSuffix(probe) { calledAt.withLock { $0 = stackAddress() } } }
        defer { Log.removeObserver(observer) }
        prepare()
        let caller = stackAddress()
        send(probe)
        return caller &- (calledAt.withLock { $0 } ?? 0)
    }

    @Test func theLogObserverStaysOneClosure() {
        let used = stackUsed(after: { for _ in 0..<Self.receiverReads { Log.debug("not the probe") } },
                             sending: { Log.debug($0) })
        #expect(used < 16 * 1024, "the call took \(used) bytes of stack after \(Self.receiverReads) messages")
    }

    @Test func theSecretServiceHandlerStaysOneClosure() {
        _ = Log.forwardingSecretService
        let used = stackUsed(after: { for _ in 0..<Self.receiverReads { _ = SecretServiceDiagnostics.handler } },
                             sending: { SecretServiceDiagnostics.report(.debug, $0) })
        #expect(used < 16 * 1024, "the call took \(used) bytes of stack after \(Self.receiverReads) reads")
    }
}
