// CTPM: the TPM 2.0 calls SecuredKey needs, through tpm2-tss loaded at run time.
//
// Why C, and why dlopen:
// - tpm2-tss's ESYS structures are deep C unions (TPM2B_PUBLIC, TPMU_PUBLIC_PARMS...) that are
//   clumsy and error-prone to fill from Swift; here they are filled once, by name.
// - tpm2-tss is loaded (dlopen, RTLD_LOCAL) only when a TPM is about to be used: a process that
//   never reaches a TPM never maps it (cold start), and the package links nothing of it. Its
//   headers (libtss2-dev) only give this file its types.
// - The connection (TCTI) is chosen by the caller and loaded by file name: tpm2-tss's own loader
//   (tctildr) tries several and logs an error for each that is missing on a machine without a TPM.
//
// Nothing here is thread-safe by itself: the Swift `TPM` target calls it from one thread of its
// own, one command at a time. No secret key material passes through: the TPM keeps the private
// key; what comes out is its wrapped (TPM-encrypted) blob, public data, and the ECDH x-coordinate
// (the caller wipes it).
//
// What crosses the TPM's bus (a sniffer on LPC/SPI, or swtpm's log, sees the same): every command
// that carries key material (TPM2_Create, TPM2_Load, TPM2_ECDH_ZGen) runs in one HMAC session
// salted to the parent key and encrypting its first parameter both ways (AES-128-CFB, the
// session's decrypt and encrypt attributes), so the ECDH point leaves the TPM as ciphertext, and
// tpm2-tss's and tpm2-abrmd's buffers only ever hold that. The parent is the owner hierarchy's
// primary from the SRK template (or the persistent SRK at 0x81000001 when it is that same key), and
// its name is checked against the one pinned when the key was made before the session is salted
// to it: an interposer answering with a key of its own is refused before anything is sent.
#ifndef CTPM_H
#define CTPM_H

#include <stddef.h>
#include <stdint.h>

/// This shim's own failures (tpm2-tss's are TSS2_RC values, never these: their layer byte is set
/// or they are TPM response codes below 0x1000).
#define CTPM_OK 0u
#define CTPM_ERROR_NOT_LOADED 0xFFFF0001u     /* a library or one of its symbols could not be loaded */
#define CTPM_ERROR_BAD_INPUT 0xFFFF0002u      /* a blob or point is malformed */
#define CTPM_ERROR_NO_MEMORY 0xFFFF0003u
#define CTPM_ERROR_UNEXPECTED 0xFFFF0004u     /* the TPM answered something this shim did not expect */
#define CTPM_ERROR_PARENT_MISMATCH 0xFFFF0005u /* the primary key's name is not the pinned one: nothing was loaded */
#define CTPM_ERROR_OWNER_AUTH 0xFFFF0006u     /* the owner hierarchy has a password: no primary key can be made */

/// Bytes of a P-256 coordinate, and of an uncompressed point (0x04 ‖ x ‖ y).
#define CTPM_P256_COORDINATE_BYTES 32
#define CTPM_P256_POINT_BYTES 65
/// Room enough for a marshalled TPM2B_PUBLIC / TPM2B_PRIVATE.
#define CTPM_BLOB_CAPACITY 1024
/// Room enough for an object's name (TPM2B_NAME's bytes: the name algorithm, then the digest).
#define CTPM_NAME_CAPACITY 68
/// The persistent handle of the storage root key, where systemd and TCG's provisioning put it.
#define CTPM_PERSISTENT_SRK 0x81000001u

/// Loads libtss2-mu, libtss2-rc, libtss2-esys (the `.so.0` names), libtss2-sys (`.so.1`, ESYS's
/// own dependency) and `tcti_library` (e.g.
/// "libtss2-tcti-device.so.0"), once each; later calls return at once. Before the first load it
/// sets TSS2_LOG=all+none unless the environment already has TSS2_LOG: tpm2-tss logs its errors to
/// stderr by default. On failure `message` (size `capacity`) says which library or symbol.
uint32_t ctpm_load(const char *tcti_library, char *message, size_t capacity);

/// A connection to a TPM: an ESYS context over a TCTI.
typedef struct ctpm_connection ctpm_connection;

/// Opens a connection through the TCTI `tcti_library` (loaded by `ctpm_load`) with its
/// configuration string `conf` ("/dev/tpmrm0", "bus_type=session"...).
uint32_t ctpm_open(const char *tcti_library, const char *conf, ctpm_connection **connection);
/// Closes it (finalizes ESYS and the TCTI). NULL is fine.
void ctpm_close(ctpm_connection *connection);

/// Whether the TPM answers: TPM2_GetRandom of 8 bytes.
uint32_t ctpm_ping(ctpm_connection *connection);

/// Whether the owner hierarchy has a password (TPMA_PERMANENT's ownerAuthSet, one
/// TPM2_GetCapability): then this shim cannot make the primary key, which it authorizes with the
/// empty password. Writes 1 or 0 to `set`.
uint32_t ctpm_owner_auth_set(ctpm_connection *connection, int *set);

// The name of the parent a key is made or used under, as TPM2B_NAME's bytes (the name algorithm,
// then the digest of its public area): `parent` (CTPM_NAME_CAPACITY bytes) and `parent_length`
// below are where a call writes it, for the caller to pin with the key; `pinned` and
// `pinned_length` the name pinned before (length 0: none, a key made before names were pinned).

/// Creates an ECC P-256 decryption key (fixedTPM, fixedParent, sensitiveDataOrigin,
/// userWithAuth with an empty password, noDA) under the owner hierarchy's primary storage key
/// (re-created from its template each time: the standard ECC P-256 SRK template, so it is the same
/// key for the same TPM and owner seed), in a session salted to that primary. Writes the key's
/// marshalled TPM2B_PUBLIC and TPM2B_PRIVATE (the private part wrapped by the TPM under the primary
/// key) to `public_blob` and `private_blob` (CTPM_BLOB_CAPACITY bytes each) and their lengths, and
/// the primary's name to `parent`. Transient objects are flushed.
/// CTPM_ERROR_OWNER_AUTH when the owner hierarchy has a password.
uint32_t ctpm_create_key(ctpm_connection *connection, uint8_t *public_blob, size_t *public_length,
                         uint8_t *private_blob, size_t *private_length, uint8_t *parent, size_t *parent_length);

/// Loads the key of the two blobs under the primary key whose name is `pinned` (the TPM checks the
/// private blob's integrity: a blob made by another TPM, or before the owner hierarchy was
/// cleared, fails) and writes its public point, uncompressed, to `point`. A primary of another name
/// fails with CTPM_ERROR_PARENT_MISMATCH before anything is loaded. `pinned_length` 0: the
/// primary is taken as it comes (trust on first use). On success the primary's name is written to
/// `parent`. Flushes what it loaded.
uint32_t ctpm_public_point(ctpm_connection *connection, const uint8_t *public_blob, size_t public_length,
                           const uint8_t *private_blob, size_t private_length,
                           const uint8_t *pinned, size_t pinned_length,
                           uint8_t point[CTPM_P256_POINT_BYTES], uint8_t *parent, size_t *parent_length);

/// TPM2_ECDH_ZGen: loads the key as ctpm_public_point does, multiplies `peer_point`
/// (uncompressed) by its private scalar in the TPM, and writes the x-coordinate of the product to
/// `shared_x` (which the caller wipes); the point crosses the bus encrypted. Flushes what it loaded.
uint32_t ctpm_ecdh_zgen(ctpm_connection *connection, const uint8_t *public_blob, size_t public_length,
                        const uint8_t *private_blob, size_t private_length,
                        const uint8_t *pinned, size_t pinned_length,
                        const uint8_t peer_point[CTPM_P256_POINT_BYTES],
                        uint8_t shared_x[CTPM_P256_COORDINATE_BYTES], uint8_t *parent, size_t *parent_length);

/// What `rc` means: tpm2-tss's Tss2_RC_Decode when it is loaded, else the number. Static storage
/// that the next call overwrites.
const char *ctpm_describe(uint32_t rc);

#endif
