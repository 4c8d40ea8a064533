internal import Gcrypt

/// How PingStorage keeps secrets in memory, and the one process-wide protection it leaves to you.
///
/// Every secret PingStorage holds in its own buffers (encryption keys, the Flatpak file keyring's
/// master secret, the key derived from it and its decrypted items) sits in pages that are locked
/// in RAM when the system allows (`mlock`; when `RLIMIT_MEMLOCK` refuses, they stay unlocked and
/// may reach swap), left out of core dumps (`MADV_DONTDUMP`), and wiped when released. Values
/// returned to you as `Data` are ordinary memory: wipe them when you are done.
///
/// A core dump can still hold what the rest of the process holds, and another process of the
/// same user can read a dumpable process's memory through `/proc/PID/mem` or `ptrace` (when the
/// system's Yama policy allows). ``makeProcessNonDumpable()`` closes both for the whole process.
///
/// Thread-safety: all members may be called from any thread.
public enum SecretMemory {
    /// Makes the process non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`): the kernel writes no core
    /// file for it, and its `/proc/PID` files and `ptrace` become root's only, so other processes
    /// of the same user cannot read its memory. Lasts until the process ends or execs a new
    /// program. Idempotent.
    ///
    /// Call it early in `main`, before secrets are read, in an application that does not need core
    /// dumps (a crash reporter that reads its own process through `/proc` may stop working). PingStorage
    /// never calls it by itself.
    /// - Returns: whether the kernel agreed (Linux does not refuse it).
    @discardableResult
    public static func makeProcessNonDumpable() -> Bool { ProcessDumping.makeNonDumpable() }

    /// Whether the process can be dumped now (`prctl(PR_GET_DUMPABLE)`); nil when the kernel
    /// would not say.
    public static var isProcessDumpable: Bool? { ProcessDumping.isDumpable }
}
