// CGcrypt: libgcrypt as a Clang module for Swift (used only by PingStorageCrypto).
//
// Why this header has code: everything PingStorageCrypto needs from libgcrypt is a plain C function
// that Swift calls directly (gcry_check_version, gcry_cipher_*, gcry_randomize, gcry_strerror),
// except `gcry_control`, which is variadic and so cannot be called from Swift. The helpers below
// wrap exactly the `gcry_control` commands the library uses, one fixed-argument function each.
// They can go if libgcrypt ever grows non-variadic equivalents.
#ifndef CGCRYPT_SHIM_H
#define CGCRYPT_SHIM_H

#include <gcrypt.h>

// Non-zero once someone in the process (libsecret, the application, or us) has finished
// initialising libgcrypt. Does not itself initialise anything, so it is safe to ask first.
static inline int cgcrypt_initialization_finished_p(void) {
    return gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P) != 0;
}

// Non-zero once any initialisation has started (gcry_check_version was called), even if it was
// never finished. Does not itself initialise anything.
static inline int cgcrypt_any_initialization_p(void) {
    return gcry_control(GCRYCTL_ANY_INITIALIZATION_P) != 0;
}

// Tells libgcrypt that initialisation is complete. Call only after gcry_check_version.
static inline gcry_error_t cgcrypt_initialization_finished(void) {
    return gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
}

// Stops libgcrypt from printing "Warning: using insecure memory!" to stderr when it cannot mlock
// its secure-memory pool (e.g. RLIMIT_MEMLOCK is 0). Only set when we are the ones initialising.
static inline gcry_error_t cgcrypt_disable_secmem_warning(void) {
    return gcry_control(GCRYCTL_DISABLE_SECMEM_WARN, 0);
}

#endif
