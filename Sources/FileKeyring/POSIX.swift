#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
internal import Gcrypt

// The thin layer over the system calls this module makes: whole-file reads, atomic replacement,
// directory creation and `flock`. Every failure becomes a `FileKeyringError` with the errno.

enum POSIX {
    /// Files larger than this are not read: 10,000 items (KeyringFile's cap) of 1.6 KiB each, where
    /// a sandboxed app's keyring holds a few KiB (libsecret and oo7 parse the whole file in memory
    /// too). Checked from `fstat` before anything is allocated for the contents, and again while
    /// reading (a file written in place can grow).
    static let maximumFileSize = 16 << 20

    /// One version of a file, as `stat` tells it: a writer that replaces the file (a rename, as
    /// libsecret and oo7 write) gives it another inode; one that writes in place changes its size
    /// or modification time.
    struct FileVersion: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int
        var size: Int64

        init(_ status: stat) {
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
            modifiedSeconds = Int(status.st_mtim.tv_sec)
            modifiedNanoseconds = Int(status.st_mtim.tv_nsec)
            size = Int64(status.st_size)
        }
    }

    /// The version of the file at `path` now; nil when it does not exist.
    static func version(of path: String) throws(FileKeyringError) -> FileVersion? {
        var status = stat()
        if stat(path, &status) == 0 { return FileVersion(status) }
        let error = errno
        if error == ENOENT { return nil }
        throw failure("look at the keyring file", path, error)
    }

    /// The whole file, or nil when it does not exist.
    static func readFile(_ path: String) throws(FileKeyringError) -> [UInt8]? {
        try readVersionedFile(path)?.bytes
    }

    /// The whole file and the version it was read from (`fstat` of the descriptor read), or nil
    /// when it does not exist.
    static func readVersionedFile(_ path: String) throws(FileKeyringError) -> (bytes: [UInt8], version: FileVersion)? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let error = errno
            if error == ENOENT { return nil }
            throw failure("open the keyring file for reading", path, error)
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw failure("look at the keyring file", path, errno) }
        let version = FileVersion(status)
        guard status.st_size <= maximumFileSize else { throw tooLarge(Int64(status.st_size), path) }
        var contents: [UInt8] = []
        contents.reserveCapacity(Int(status.st_size))
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("read the keyring file", path, errno)
            }
            if count == 0 { return (contents, version) }
            contents += chunk[0..<count]
            if contents.count > maximumFileSize { throw tooLarge(Int64(contents.count), path) }
        }
    }

    /// Replaces `path` with `bytes` atomically: a temporary file in the same directory (mode
    /// 0600), written, fsync'ed, renamed over `path`, then the directory fsync'ed. A reader opening
    /// `path` sees the old file or the new one, never a mixture. On failure `path` is untouched and
    /// the temporary file is removed.
    ///
    /// Only over the version `expected` (the one the caller read; nil: no file): when the file is
    /// another version by the time the new one is ready, nothing is replaced and nil is
    /// returned; else the version written. A file that did not exist is created exclusively (`link`, which fails when one
    /// appeared meanwhile); an existing one is checked just before the rename. A writer that takes
    /// no lock can still slip in between that check and the rename; and libsecret checks its etag
    /// before it writes and fsyncs its temporary file, so a replacement of ours that lands inside
    /// that longer window of libsecret's is overwritten by its rename (under a 40-way stress, 39 of
    /// 40 of our writes were kept; the DocC article "Inside a Flatpak sandbox" says so).
    @discardableResult
    static func replaceFile(_ path: String, with bytes: [UInt8], ifStill expected: FileVersion?,
                            beforeReplacing: (FileVersion) -> Void = { _ in }) throws(FileKeyringError) -> FileVersion? {
        let (directory, name) = split(path)
        var temporary = ""
        var fd: Int32 = -1
        while fd < 0 {
            let suffix = Random.bytes(6).map { String($0, radix: 16) }.joined()
            temporary = "\(directory)/.\(name).\(suffix).tmp"
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            if fd < 0 && errno != EEXIST && errno != EINTR {
                throw failure("create a temporary file next to the keyring", temporary, errno)
            }
        }
        var renamed = false
        defer { if !renamed { unlink(temporary) } }
        var written: FileVersion
        do {
            defer { close(fd) }
            if fchmod(fd, 0o600) != 0 { throw failure("restrict the temporary keyring file to its owner", temporary, errno) }
            var offset = 0
            while offset < bytes.count {
                let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw failure("write the temporary keyring file", temporary, errno)
                }
                offset += count
            }
            if fsync(fd) != 0 { throw failure("flush the temporary keyring file to disk", temporary, errno) }
            var status = stat()
            guard fstat(fd, &status) == 0 else { throw failure("look at the temporary keyring file", temporary, errno) }
            written = FileVersion(status)  // renaming or linking it keeps its device, inode, times and size
        }
        beforeReplacing(written)
        if let expected {
            guard try version(of: path) == expected else { return nil }
            if rename(temporary, path) != 0 { throw failure("rename the temporary file over the keyring", path, errno) }
        } else {
            if link(temporary, path) != 0 {
                if errno == EEXIST { return nil }
                throw failure("create the keyring file", path, errno)
            }
            unlink(temporary)
        }
        renamed = true
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)  // best effort: the rename itself has happened
            close(directoryFD)
        }
        return written
    }

    /// Creates `directory` and its missing parents, mode 0700 (oo7 does the same).
    static func makeDirectories(_ directory: String) throws(FileKeyringError) {
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw failure("create the keyring directory", prefix, errno)
            }
        }
    }

    /// Opens (creating, mode 0600) a lock file and returns its descriptor.
    static func openLockFile(_ path: String) throws(FileKeyringError) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd < 0 { throw failure("open the keyring's lock file", path, errno) }
        return fd
    }

    /// Tries `flock(fd, LOCK_EX | LOCK_NB)`: true when taken, false when another open file holds it.
    static func tryLockExclusive(_ fd: Int32, path: String) throws(FileKeyringError) -> Bool {
        while true {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            let error = errno
            if error == EINTR { continue }
            if error == EWOULDBLOCK { return false }
            throw failure("lock the keyring's lock file", path, error)
        }
    }

    /// Runs `body` on a new detached thread (a small stack: the work is file I/O and AES); false,
    /// with `body` dropped, when no thread could be started.
    static func startThread(_ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        pthread_attr_setstacksize(&attributes, 256 * 1024)
        var thread = pthread_t()
        let started = pthread_create(&thread, &attributes, { box in
            Unmanaged<ThreadBody>.fromOpaque(box!).takeRetainedValue().body()
            return nil
        }, box)
        if started != 0 { Unmanaged<ThreadBody>.fromOpaque(box).release() }
        return started == 0
    }

    private final class ThreadBody: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Closes a descriptor (releasing its `flock`).
    static func closeDescriptor(_ fd: Int32) {
        close(fd)
    }

    /// Sleeps for `duration` (interrupted sleeps just end early).
    static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        _ = nanosleep(&request, nil)
    }

    /// The value of an environment variable, when set and non-empty.
    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let string = String(cString: value)
        return string.isEmpty ? nil : string
    }

    /// (directory, last component) of a path; the directory of `name` alone is `.`.
    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    private static func tooLarge(_ size: Int64, _ path: String) -> FileKeyringError {
        .tooLarge("\(size) bytes, over the cap of \(maximumFileSize >> 20) MiB", path: path)
    }

    private static func failure(_ operation: String, _ path: String, _ error: Int32) -> FileKeyringError {
        let reason = String(cString: strerror(error))
        return FileKeyringError(
            .io, "could not \(operation): \(reason); check that the directory exists and is writable by this user",
            path: path, errno: error)
    }
}
