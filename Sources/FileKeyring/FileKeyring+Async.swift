#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Locking
import Waiting

/// The keyring for async callers: file I/O and the wait for another writer's lock block a thread,
/// and Swift's cooperative threads must never block, so every call runs on the keyring's one
/// worker thread (``KeyringWorker``), and the caller waits for it as for every wait of the package
/// (``OneShot``): until the answer, its deadline or its Task's cancellation, whichever comes first.
/// A transaction whose lock another process holds does not hold that thread: it is tried again
/// while other calls run.
extension FileKeyring {
    /// ``items()`` on the keyring's thread.
    public func items(by deadline: ContinuousClock.Instant) async throws(FileKeyringError) -> [FileKeyringItem] {
        try await onWorker(by: deadline) { () throws(FileKeyringError) in try self.items() }
    }

    /// ``contents()`` on the keyring's thread.
    public func contents(by deadline: ContinuousClock.Instant) async throws(FileKeyringError) -> FileKeyringContents {
        try await onWorker(by: deadline) { () throws(FileKeyringError) in try self.contents() }
    }

    /// ``contents(matchingAny:)`` on the keyring's thread.
    public func contents(matchingAny queries: [[String: String]],
                         by deadline: ContinuousClock.Instant) async throws(FileKeyringError) -> FileKeyringContents {
        try await onWorker(by: deadline) { () throws(FileKeyringError) in try self.contents(matchingAny: queries) }
    }

    /// ``modify(_:)`` on the keyring's thread, waiting for another writer's lock until `deadline`
    /// at most (then ``FileKeyringError/Code/lockTimeout``). A call whose deadline passed before
    /// it started writes nothing and throws ``FileKeyringError/Code/lockTimeout``.
    public func modify<R: Sendable>(
        by deadline: ContinuousClock.Instant,
        _ body: @escaping @Sendable (inout [FileKeyringItem]) throws(FileKeyringError) -> R
    ) async throws(FileKeyringError) -> R {
        try await modify(by: deadline, withDamaged: { items, _ throws(FileKeyringError) in try body(&items) })
    }

    /// ``modify(withDamaged:)`` on the keyring's thread, waiting as ``modify(by:_:)``.
    public func modify<R: Sendable>(
        by deadline: ContinuousClock.Instant,
        withDamaged body: @escaping @Sendable (inout [FileKeyringItem], [FileKeyringDamagedRecord]) throws(FileKeyringError) -> R
    ) async throws(FileKeyringError) -> R {
        let path = self.path
        let heldByAnotherWriter = Locked(false)
        do {
            return try await onWorker(by: deadline) { () throws(FileKeyringError) -> R? in
                guard let lock = try KeyringLock.tryAcquire(self.lockPath) else {
                    heldByAnotherWriter.withLock { $0 = true }
                    return nil  // tried again shortly, other calls running meanwhile
                }
                heldByAnotherWriter.withLock { $0 = false }
                return try self.transaction(holding: lock, body)
            }
        } catch where error.code == .timedOut && heldByAnotherWriter.withLock({ $0 }) {
            throw FileKeyringError(
                .lockTimeout,
                "another writer held the keyring lock until this call's deadline; try again, or look for a "
                    + "process of this app that hangs while changing the keyring",
                path: path)
        }
    }

    /// Runs `work` on the worker thread until it gives a value (nil: not yet, try again), the
    /// caller waiting until then, `deadline`, or cancellation. Work not yet started when the wait
    /// ended is not started.
    private func onWorker<R: Sendable>(
        by deadline: ContinuousClock.Instant, _ work: @escaping @Sendable () throws(FileKeyringError) -> R?
    ) async throws(FileKeyringError) -> R {
        let path = self.path
        let wait = OneShot<R, FileKeyringError>(
            operation: "use the keyring file \(path)", deadline: Deadline(instant: deadline, timeout: ContinuousClock.now.duration(to: deadline)),
            timekeeper: .light)
        return try await wait.value { wait in
            let submitted = worker.submit { _ in
                guard !wait.hasEnded else { return .done }  // its deadline passed, or it was cancelled
                do throws(FileKeyringError) {
                    guard let value = try work() else { return .again }
                    wait.finish(.success(value))
                } catch {
                    wait.finish(.failure(error))
                }
                return .done
            }
            if !submitted {
                wait.finish(.failure(FileKeyringError(
                    .io, "no thread could be started to read the keyring (the process is out of threads)", path: path)))
            }
        }
    }
}

/// The failures of a wait for the keyring's thread (``OneShot``).
extension FileKeyringError: WaitFailure {
    public static func timedOut(_ operation: String, after timeout: Duration) -> FileKeyringError {
        FileKeyringError(.timedOut, "the call's deadline (\(timeout)) passed before it could \(operation); try again, or allow a "
                         + "longer timeout")
    }

    public static func cancelled(_ operation: String) -> FileKeyringError {
        FileKeyringError(.cancelled, "the call was cancelled before it could \(operation)")
    }

    public var isTimedOut: Bool { code == .timedOut }
}
