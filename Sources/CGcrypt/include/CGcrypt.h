// CGcrypt: libgcrypt for Swift, and the one place in the process that initialises it.
//
// Why this target has C code:
// - `gcry_control` is variadic, so Swift cannot call it; the functions below wrap the commands
//   the package uses.
// - libgcrypt must be initialised once per process, and libsecret (when the application uses it
//   too) initialises it as well, under a lock of its own (g_once in egg_libgcrypt_initialize). libgcrypt
//   1.10's global_init takes no lock: it marks initialisation as started before it has decided
//   FIPS mode, so a second thread inside that window gets GPG_ERR_NOT_OPERATIONAL from
//   gcry_cipher_open or an abort() from gcry_create_nonce. `cgcrypt_initialize` is therefore one
//   process-wide once, in a .c file (a `static inline` in a header would be one copy per
//   importing module), that every user in this package calls before it touches libgcrypt. Once
//   it has run, libsecret finds libgcrypt finished and leaves it alone.
// - The Secret Service's key exchange (dh_session.c) and AES-CBC (aes_cbc.c) work on libgcrypt's
//   MPIs, raw pointers throughout; Swift holds only the opaque pair. Key bytes are not kept here:
//   they live in the Swift `Gcrypt` module's secret memory (locked, left out of core dumps, wiped)
//   and are lent to each call.
// - `prctl` is variadic too (process.c): the one call of the secret-memory policy Swift cannot make.
//
// Only the Swift `Gcrypt` target imports this module.
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

// MARK: AES-128-CBC with PKCS#7 padding (aes_cbc.c)
//
// The one implementation in the package: the Secret Service's encrypted sessions and libsecret's
// file keyring (FileKeyring) both encrypt this way. `key` is CGCRYPT_AES_KEY_BYTES bytes the caller
// owns; each call opens its own cipher handle (its key schedule in libgcrypt's secure memory), so
// any number of threads may use one key at once. Call `cgcrypt_initialize` first.

#define CGCRYPT_AES_KEY_BYTES 16
#define CGCRYPT_CBC_IV_BYTES 16

/// The ciphertext length for `plaintext_length` bytes: the next multiple of 16 above it.
size_t cgcrypt_cbc_padded_length(size_t plaintext_length);
/// Pads and encrypts `plaintext` into `out` (cgcrypt_cbc_padded_length(length) bytes; the
/// plaintext is copied there and encrypted in place) with a fresh IV (gcry_create_nonce, as
/// libsecret) written to `iv`. Returns 1, or 0 (and `out` wiped) when libgcrypt failed.
int cgcrypt_cbc_encrypt(const unsigned char key[CGCRYPT_AES_KEY_BYTES], const unsigned char *plaintext, size_t length,
                        unsigned char iv[CGCRYPT_CBC_IV_BYTES], unsigned char *out);

/// `cgcrypt_cbc_decrypt`'s failures.
#define CGCRYPT_CBC_MALFORMED (-1)   /* the IV is not 16 bytes, or the length not a positive multiple of 16 */
#define CGCRYPT_CBC_BAD_PADDING (-2) /* the padding is wrong: another key, or altered data */
#define CGCRYPT_CBC_FAILED (-3)      /* libgcrypt failed */
/// Decrypts `ciphertext` into `out` (`length` bytes) and checks its padding. Returns the
/// plaintext's length (the first bytes of `out`), or one of the negative values above (and `out`
/// wiped).
long cgcrypt_cbc_decrypt(const unsigned char key[CGCRYPT_AES_KEY_BYTES], const unsigned char *iv, size_t iv_length,
                         const unsigned char *ciphertext, size_t length, unsigned char *out);

// MARK: Secret Service session key exchange (dh_session.c)
//
// The dh-ietf1024-sha256-aes128-cbc-pkcs7 algorithm of the Secret Service specification:
// Diffie-Hellman in the RFC 2409 1024-bit MODP group (generator 2), public keys as big-endian
// bytes; HKDF-SHA256 with no salt and no info over the shared secret (128 bytes, big-endian) gives
// the 16-byte AES key the session's secrets are encrypted with (above). Nothing here knows D-Bus.
// Private exponents stay in libgcrypt's secure memory and are released with the pair. A pair is
// immutable once made: any thread may use it.

/// The length of a public key in this group, and of the shared secret.
#define CGCRYPT_DH_KEY_BYTES 128
/// Our private exponents are this long. The group is a safe prime, so an exponent of twice the
/// security wanted is enough (RFC 3526 §8, NIST SP 800-56A's 2s bits): 256 bits is more than the
/// 80-bit strength of a 1024-bit group, and each modular exponentiation costs a quarter of a
/// full-length one (libsecret draws 1024 bits).
#define CGCRYPT_DH_EXPONENT_BITS 256

/// A Diffie-Hellman key pair (the private exponent, and the public key).
typedef struct cgcrypt_dh_pair cgcrypt_dh_pair;

typedef enum {
    CGCRYPT_DH_DERIVED = 0,
    /// The peer's public key is not in 2...p-2.
    CGCRYPT_DH_PEER_INVALID = 1,
    /// The shared secret starts with a zero byte, which implementations encode in two ways
    /// (kept or stripped) and so derive two different keys from: use another session.
    CGCRYPT_DH_SECRET_AMBIGUOUS = 2,
    /// libgcrypt failed (out of secure memory).
    CGCRYPT_DH_FAILED = 3,
} cgcrypt_dh_status;

/// A new key pair with a random CGCRYPT_DH_EXPONENT_BITS-bit exponent, or NULL when libgcrypt
/// cannot allocate it. Free with `cgcrypt_dh_free`.
cgcrypt_dh_pair *cgcrypt_dh_generate(void);
/// A key pair with the given private exponent (big-endian), for known-answer tests only.
cgcrypt_dh_pair *cgcrypt_dh_pair_with_private_exponent(const unsigned char *exponent, size_t length);
/// The public key: always CGCRYPT_DH_KEY_BYTES bytes, zero-padded on the left (some providers
/// refuse a shorter one). Valid while the pair lives.
const unsigned char *cgcrypt_dh_public_key(const cgcrypt_dh_pair *pair);
void cgcrypt_dh_free(cgcrypt_dh_pair *pair);

/// Derives the session's AES key from the peer's public key (big-endian; leading zeros allowed)
/// into `key`, which the caller owns (and wipes). On any status but CGCRYPT_DH_DERIVED `key` is
/// all zeros.
cgcrypt_dh_status cgcrypt_dh_derive(const cgcrypt_dh_pair *pair, const unsigned char *peer_key, size_t peer_length,
                                    unsigned char key[CGCRYPT_AES_KEY_BYTES]);

// MARK: ECDH on NIST P-256 (p256.c)
//
// The software half of SecuredKey's ECIES: encryption needs only the recipient's public key, so it
// runs here; the recipient's half (the same product with its private key) runs inside a TPM.
// Points are uncompressed (0x04 ‖ x ‖ y, 65 bytes). Scalars live in libgcrypt's secure memory.

#define CGCRYPT_P256_POINT_BYTES 65
#define CGCRYPT_P256_COORDINATE_BYTES 32

typedef enum {
    CGCRYPT_P256_OK = 0,
    /// The peer's point is not an uncompressed point on P-256 (or is the point at infinity).
    CGCRYPT_P256_PEER_INVALID = 1,
    /// libgcrypt failed (out of secure memory).
    CGCRYPT_P256_FAILED = 2,
} cgcrypt_p256_status;

/// ECDH with a fresh ephemeral key: draws a scalar k (uniform in 1...n-1), writes k·G to
/// `ephemeral_public` and the x-coordinate of k·`peer` to `shared_x` (which the caller wipes). On
/// any status but CGCRYPT_P256_OK `shared_x` is all zeros.
cgcrypt_p256_status cgcrypt_p256_ephemeral_ecdh(const unsigned char peer[CGCRYPT_P256_POINT_BYTES],
                                                unsigned char ephemeral_public[CGCRYPT_P256_POINT_BYTES],
                                                unsigned char shared_x[CGCRYPT_P256_COORDINATE_BYTES]);
/// The same with the given scalar (big-endian, `length` bytes, reduced mod n, not zero): for
/// known-answer tests, and for tests that play the key's owner in software.
cgcrypt_p256_status cgcrypt_p256_ecdh_with_scalar(const unsigned char *scalar, size_t length,
                                                  const unsigned char peer[CGCRYPT_P256_POINT_BYTES],
                                                  unsigned char public_point[CGCRYPT_P256_POINT_BYTES],
                                                  unsigned char shared_x[CGCRYPT_P256_COORDINATE_BYTES]);

// MARK: Process dumpability (process.c)

/// Whether the process may be dumped (core files, /proc/PID/mem and ptrace by the same user):
/// 1 yes, 0 no, -1 when prctl failed (errno set). The corresponding C call is
/// prctl(PR_GET_DUMPABLE).
int cgcrypt_process_dumpable(void);
/// Makes the process non-dumpable: no core dump, and its /proc files and ptrace are root's only.
/// Returns 0, or -1 with errno set. The corresponding C call is prctl(PR_SET_DUMPABLE, 0).
int cgcrypt_process_set_not_dumpable(void);

#endif
