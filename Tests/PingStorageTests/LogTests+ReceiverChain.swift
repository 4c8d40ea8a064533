import Glibc
import Locking
@testable import SecretService
import Testing
@testable import PingStorage

/// How many frames deep the calling thread's stack is (glibc's `backtrace`, found with dlsym: the
/// Glibc module does not declare it). Frames, not stack addresses: AddressSanitizer moves locals
/// to a "fake stack" on the heap, where addresses say nothing about depth.
@inline(never)
private func stackDepth() -> Int {
    typealias Backtrace = @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>?, Int32) -> Int32
    guard let symbol = dlsym(nil, "backtrace") else { preconditionFailure("glibc has backtrace") }
    let capacity: Int32 = 16_384
    let frames = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: Int(capacity))
    defer { frames.deallocate() }
    return Int(unsafeBitCast(symbol, to: Backtrace.self)(frames, capacity))
}

/// Log receivers read many times are still the closures that were set, not ones wrapped in a
/// reabstraction thunk per read. (A bare closure in `Locked`, read with `withLock { $0 }`, was
/// wrapped again on every inout write-back: the chain grew by two frames a message, each message
/// walked it, and a process that logged 20,000 messages ran 7x slower and held 10 MiB more.)
/// Measured as the frames the receivers' calls add, which a chain would make thousands: no clock.
extension LogTests {
    static let receiverReads = 2_000

    /// Runs `send(probe)` after `prepare()` and returns how many frames deeper the observer ran.
    private func framesAdded(after prepare: () -> Void, sending send: (String) -> Void) -> Int {
        let probe = "receiver-chain probe \(UInt64.random(in: 0 ... .max))"
        let calledAt = Locked<Int?>(nil)
        let observer = Log.addObserver { line in if line.hasSuffix(probe) { calledAt.withLock { $0 = stackDepth() } } }
        defer { Log.removeObserver(observer) }
        prepare()
        let caller = stackDepth()
        send(probe)
        #expect(caller > 0)
        return (calledAt.withLock { $0 } ?? .max) - caller
    }

    @Test func theLogObserverStaysOneClosure() {
        let added = framesAdded(after: { for _ in 0..<Self.receiverReads { Log.debug("not the probe") } },
                                sending: { Log.debug($0) })
        #expect(added < 200, "the call went \(added) frames deeper after \(Self.receiverReads) messages")
    }

    @Test func theSecretServiceHandlerStaysOneClosure() {
        Log.forwardSecretServiceDiagnostics()
        let added = framesAdded(after: { for _ in 0..<Self.receiverReads { _ = SecretServiceDiagnostics.handler } },
                                sending: { SecretServiceDiagnostics.report(.debug, $0) })
        #expect(added < 200, "the call went \(added) frames deeper after \(Self.receiverReads) reads")
    }
}
