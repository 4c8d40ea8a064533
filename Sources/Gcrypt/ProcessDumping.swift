internal import CGcrypt

/// The process-wide half of the secret-memory policy: whether the process can be dumped at all.
/// Secret pages are always left out of core dumps (``SecretBytes``); a non-dumpable process also
/// writes no core file, and its memory cannot be read through /proc/PID/mem or ptrace by other
/// processes of the same user.
package enum ProcessDumping {
    /// Whether the process can be dumped now; nil when the kernel would not say.
    ///
    /// The corresponding C call is `prctl(PR_GET_DUMPABLE)`.
    package static var isDumpable: Bool? {
        let answer = cgcrypt_process_dumpable()
        return answer < 0 ? nil : answer != 0
    }

    /// Makes the process non-dumpable, for the rest of its life (and that of a child it forks
    /// without exec; `execve` of a set-user-ID program aside, exec makes a process dumpable again).
    /// Idempotent. Returns whether the kernel agreed (Linux does not refuse this).
    ///
    /// The corresponding C call is `prctl(PR_SET_DUMPABLE, 0)`.
    @discardableResult
    package static func makeNonDumpable() -> Bool {
        cgcrypt_process_set_not_dumpable() == 0
    }
}
