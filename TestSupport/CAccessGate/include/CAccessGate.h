// CAccessGate: a test-only interposer of access(2) that can hold one thread inside libgcrypt's
// initialisation, for the deterministic race tests of gcrypt-race-probe.
//
// libgcrypt 1.10's global_init asks access("/etc/gcrypt/fips_enabled") after it has marked
// initialisation as started and before it has decided FIPS mode: exactly the window in which a
// second initialiser used to break it. Linked into an executable, this file's access() takes
// precedence over libc's for libgcrypt's calls; it forwards to the real one (dlsym RTLD_NEXT).
#ifndef CACCESSGATE_H
#define CACCESSGATE_H

/// Makes the next caller that asks for /etc/gcrypt/fips_enabled wait inside access() until
/// `access_gate_release` (only the first such caller after arming).
void access_gate_arm(void);

/// Waits up to `milliseconds` for a caller to be held; returns 1 when one is.
int access_gate_wait_until_holding(int milliseconds);

/// Lets the held caller go on (and any later one pass).
void access_gate_release(void);

/// How many callers have asked for /etc/gcrypt/fips_enabled so far.
int access_gate_fips_queries(void);

#endif
