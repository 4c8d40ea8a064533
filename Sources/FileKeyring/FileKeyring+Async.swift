#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The keyring for async callers: file I/O and the wait for another writer's lock block a thread,
/// and Swift's cooperative threads must never block, so each call runs on a thread of its own
/// (started per call: calls are rare and short, and a thread of their own means one caller
/// waiting for the lock never delays another caller's read).
extension FileKeyring {
    /// ``items()`` on a thread of its own.
    public func items(by deadline: ContinuousClock.Instant) async throws(FileKeyringError) -> [FileKeyringItem] {
        try await offThread(by: deadline) { () throws(FileKeyringError) in try self.items() }
    }

    /// ``contents()`` on a thread of its own.
    public func contents(by deadline: ContinuousClock.Instant) async throws(FileKeyringError) -> FileKeyringContents {
        try await offThread(by: deadline) { () throws(FileKeyringError) in try self.contents() }
    }

    /// ``modify(_:)`` on a thread of its own, waiting for another writer's lock until `deadline`
    /// at most (then ``FileKeyringError/Code/lockTimeout``). A call whose deadline passed before
    /// its thread started writes nothing and throws ``FileKeyringError/Code/lockTimeout``.
    public func modify<R: Sendable>(
        by deadline: ContinuousClock.Instant,
        _ body: @escaping @Sendable (inout [FileKeyringItem]) throws(FileKeyringError) -> R
    ) async throws(FileKeyringError) -> R {
        try await offThread(by: deadline) { () throws(FileKeyringError) in
            try self.modify(waitingAtMost: max(deadline - .now, .zero), body)
        }
    }

    /// ``modify(withDamaged:)`` on a thread of its own, waiting as ``modify(by:_:)``.
    public func modify<R: Sendable>(
        by deadline: ContinuousClock.Instant,
        withDamaged body: @escaping @Sendable (inout [FileKeyringItem], [FileKeyringDamagedRecord]) throws(FileKeyringError) -> R
    ) async throws(FileKeyringError) -> R {
        try await offThread(by: deadline) { () throws(FileKeyringError) in
            try self.modify(waitingAtMost: max(deadline - .now, .zero), withDamaged: body)
        }
    }

    private func offThread<R: Sendable>(
        by deadline: ContinuousClock.Instant, _ work: @escaping @Sendable () throws(FileKeyringError) -> R
    ) async throws(FileKeyringError) -> R {
        let path = self.path
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<R, FileKeyringError>, Never>) in
            let started = POSIX.startThread {
                guard deadline > .now else {
                    continuation.resume(returning: .failure(FileKeyringError(
                        .lockTimeout, "the call's deadline passed before the keyring could be read", path: path)))
                    return
                }
                do throws(FileKeyringError) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            if !started {
                continuation.resume(returning: .failure(FileKeyringError(
                    .io, "no thread could be started to read the keyring (the process is out of threads)", path: path)))
            }
        }
        return try result.get()
    }
}
