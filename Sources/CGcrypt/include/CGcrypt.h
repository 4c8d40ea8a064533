// CGcrypt: libgcrypt for Swift, and the one place in the process that initialises it.
//
// Why this target has C code:
// - `gcry_control` is variadic, so Swift cannot call it; the functions below wrap the commands
//   the package uses.
// - libgcrypt must be initialised once per process, and libsecret (in the same process)
//   initialises it too, under a lock of its own (g_once in egg_libgcrypt_initialize). libgcrypt
//   1.10's global_init takes no lock: it marks initialisation as started before it has decided
//   FIPS mode, so a second thread inside that window gets GPG_ERR_NOT_OPERATIONAL from
//   gcry_cipher_open or an abort() from gcry_create_nonce. `cgcrypt_initialize` is therefore one
//   process-wide once, in a .c file (a `static inline` in a header would be one copy per
//   importing module), that every user in this package calls before it touches libgcrypt or
//   starts libsecret. Once it has run, libsecret finds libgcrypt finished and leaves it alone.
#ifndef CGCRYPT_H
#define CGCRYPT_H

#include <gcrypt.h>

/// Who initialised libgcrypt, as `cgcrypt_initialize` found it.
typedef enum {
    /// `cgcrypt_initialize` ran gcry_check_version and GCRYCTL_INITIALIZATION_FINISHED.
    CGCRYPT_INITIALIZED_HERE = 1,
    /// Someone else (the application, libsecret) had already finished initialisation.
    CGCRYPT_INITIALIZED_ELSEWHERE = 2,
    /// Someone else had started initialisation without finishing it (it may still be under way
    /// on another thread). Not a final answer: the next call looks again.
    CGCRYPT_STARTED_ELSEWHERE = 3,
} cgcrypt_role;

/// Initialises libgcrypt for the process, once: when nobody has started yet it runs
/// gcry_check_version, silences the secure-memory warning and finishes initialisation, all on
/// the calling thread and under one process-wide lock. Later calls return the recorded answer at
/// the cost of one lock, except after CGCRYPT_STARTED_ELSEWHERE, which is looked at again each
/// time (a transient state is never recorded as final). Thread-safe.
/// `version` (may be NULL) receives the running library's version (static storage).
cgcrypt_role cgcrypt_initialize(const char **version);

/// Whether the running libgcrypt is at least `minimum` ("1.8.0"). Call after
/// `cgcrypt_initialize`. The corresponding C function is gcry_check_version.
int cgcrypt_version_at_least(const char *minimum);

#endif
