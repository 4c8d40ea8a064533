#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Locking

/// Other processes' writes of a keyring file, counted as they happen: inotify on the file's
/// directory (writers rename a new file over it), each notification checked against the file's
/// identity (device, inode, modification time, size): the version this instance wrote itself is
/// not another process's. One thread per watched file waits for the notifications (`poll`, so that
/// it sees ``stop()`` within a second).
///
/// A write by another process just before one of ours is counted too: our transaction read the
/// version it replaced, and when that is not the version last known, someone else wrote it.
final class KeyringFileWatch: Sendable {
    private struct State {
        var count: UInt64 = 0
        /// The version last known here: found by a check, or written by this instance.
        var lastKnown: POSIX.FileVersion?
        /// The version this instance is about to rename into place (a check that sees it first
        /// must not count it).
        var pendingOwn: POSIX.FileVersion?
        var stopped = false
    }
    let path: String
    private let state = Locked(State())

    /// Starts watching `path`; nil when inotify cannot watch its directory (none yet, no inotify).
    init?(path: String) {
        self.path = path
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else { return nil }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
        guard inotify_add_watch(descriptor, POSIX.split(path).directory, mask) >= 0 else {
            close(descriptor)
            return nil
        }
        state.withLock { $0.lastKnown = try? POSIX.version(of: path) }
        guard POSIX.startThread({ [self] in watch(descriptor) }) else {
            close(descriptor)
            return nil
        }
    }

    /// How many times another process changed the file since the watch started.
    var changes: UInt64 { state.withLock { $0.count } }

    /// Records a write of this instance: `previous` is the version its transaction read (nil: no
    /// file), `written` the one it renamed into place.
    func ownWrite(over previous: POSIX.FileVersion?, wrote written: POSIX.FileVersion) {
        state.withLock { state in
            if previous != state.lastKnown, state.lastKnown != written { state.count += 1 }
            state.lastKnown = written
            state.pendingOwn = nil
        }
    }

    /// Records the version this instance is about to rename into place.
    func willWrite(_ version: POSIX.FileVersion) { state.withLock { $0.pendingOwn = version } }

    /// Ends the thread (within a second) and the notifications.
    func stop() { state.withLock { $0.stopped = true } }

    /// Whether the file is still the version last known (one `stat`); counts a change when not.
    func check() {
        let version = try? POSIX.version(of: path)
        state.withLock { state in
            if version != state.lastKnown, version != state.pendingOwn || version == nil { state.count += 1 }
            state.lastKnown = version
        }
    }

    private func watch(_ descriptor: Int32) {
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !state.withLock({ $0.stopped }) {
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, 1000) > 0 else { continue }
            var notified = false
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                notified = true
            }
            // Which file a notification names does not matter: the check compares the file's identity.
            if notified { check() }
        }
    }
}

extension FileKeyring {
    /// How many times another process (or another instance) changed the file since this instance
    /// started watching it, which the first call does; nil when it cannot be watched (its directory
    /// does not exist yet, or inotify is unavailable). Reads no file: the count is kept up to date
    /// by the watch's own thread.
    public func foreignChanges() -> UInt64? {
        watch.withLock { watch in
            if watch == nil { watch = KeyringFileWatch(path: path) }
            return watch?.changes
        }
    }

    /// ``foreignChanges()``, the file's identity checked at once (one `stat`), so that a write the
    /// watch's thread has not handled yet is counted.
    public func foreignChangesChecked() -> UInt64? {
        guard let watch = watch.withLock({ $0 }) else { return foreignChanges() }
        watch.check()
        return watch.changes
    }
}
