/// An exclusive `flock` on the keyring's lock file, held from `acquire` until the value goes away.
///
/// Why a separate file: writers replace the keyring by renaming a new file over it, so a lock on
/// the keyring file itself would be on an inode that the next writer unlinks; a second writer
/// would then lock the new inode and both would proceed. The lock file is never renamed or
/// deleted, so every writer of this module contends for the same inode.
///
/// `flock` locks belong to the open file description: two `FileKeyring` calls in one process open
/// the file separately and exclude each other as two processes do. The lock goes away with the
/// descriptor, also when the process dies, so a crashed writer never leaves it held.
struct KeyringLock: ~Copyable {
    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    /// Takes the lock on `path` (creating the file, and its directory, when missing), polling
    /// `flock(LOCK_EX | LOCK_NB)` with short sleeps (1 ms doubling to 16 ms) until `timeout` has
    /// passed; then throws ``FileKeyringError/Code/lockTimeout``.
    static func acquire(_ path: String, timeout: Duration) throws(FileKeyringError) -> KeyringLock {
        try POSIX.makeDirectories(POSIX.split(path).directory)
        let fd = try POSIX.openLockFile(path)
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var pause = Duration.milliseconds(1)
        do throws(FileKeyringError) {
            while try !POSIX.tryLockExclusive(fd, path: path) {
                let now = clock.now
                guard now < deadline else {
                    throw FileKeyringError(
                        .lockTimeout,
                        "another writer held the keyring lock for more than \(timeout); try again, or look for a "
                            + "process of this app that hangs while changing the keyring",
                        path: path)
                }
                POSIX.sleep(min(pause, now.duration(to: deadline)))
                pause = min(pause * 2, .milliseconds(16))
            }
        } catch {
            POSIX.closeDescriptor(fd)
            throw error
        }
        return KeyringLock(fd: fd)
    }

    /// Takes the lock on `path` when no other open file holds it (creating the file, and its
    /// directory, when missing); nil when another writer holds it. Never waits: the worker tries
    /// again later and runs other calls meanwhile (FileKeyring+Async.swift).
    static func tryAcquire(_ path: String) throws(FileKeyringError) -> KeyringLock? {
        try POSIX.makeDirectories(POSIX.split(path).directory)
        let fd = try POSIX.openLockFile(path)
        do throws(FileKeyringError) {
            guard try POSIX.tryLockExclusive(fd, path: path) else {
                POSIX.closeDescriptor(fd)
                return nil
            }
        } catch {
            POSIX.closeDescriptor(fd)
            throw error
        }
        return KeyringLock(fd: fd)
    }

    deinit { POSIX.closeDescriptor(fd) }
}
