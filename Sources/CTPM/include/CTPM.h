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

/// Bytes of a P-256 coordinate, and of an uncompressed point (0x04 ‖ x ‖ y).
#define CTPM_P256_COORDINATE_BYTES 32
#define CTPM_P256_POINT_BYTES 65
/// Room enough for a marshalled TPM2B_PUBLIC / TPM2B_PRIVATE.
#define CTPM_BLOB_CAPACITY 1024

/// Loads libtss2-mu, libtss2-rc, libtss2-esys (the `.so.0` names) and `tcti_library` (e.g.
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

/// Creates an ECC P-256 decryption key (fixedTPM, fixedParent, sensitiveDataOrigin,
/// userWithAuth with an empty password, noDA) under the owner hierarchy's primary storage key
/// (re-created from its template each time: the standard ECC P-256 SRK template, so it is the same
/// key for the same TPM and owner seed). Writes the key's marshalled TPM2B_PUBLIC and TPM2B_PRIVATE
/// (the private part wrapped by the TPM under the primary key) to `public_blob` and
/// `private_blob` (CTPM_BLOB_CAPACITY bytes each) and their lengths. Transient objects are flushed.
uint32_t ctpm_create_key(ctpm_connection *connection, uint8_t *public_blob, size_t *public_length,
                         uint8_t *private_blob, size_t *private_length);

/// Loads the key of the two blobs under the primary key (the TPM checks the private blob's
/// integrity: a blob made by another TPM, or before the owner hierarchy was cleared, fails) and
/// writes its public point, uncompressed, to `point`. Flushes what it loaded.
uint32_t ctpm_public_point(ctpm_connection *connection, const uint8_t *public_blob, size_t public_length,
                           const uint8_t *private_blob, size_t private_length,
                           uint8_t point[CTPM_P256_POINT_BYTES]);

/// TPM2_ECDH_ZGen: loads the key, multiplies `peer_point` (uncompressed) by its private scalar in
/// the TPM, and writes the x-coordinate of the product to `shared_x` (which the caller wipes).
/// Flushes what it loaded.
uint32_t ctpm_ecdh_zgen(ctpm_connection *connection, const uint8_t *public_blob, size_t public_length,
                        const uint8_t *private_blob, size_t private_length,
                        const uint8_t peer_point[CTPM_P256_POINT_BYTES],
                        uint8_t shared_x[CTPM_P256_COORDINATE_BYTES]);

/// What `rc` means: tpm2-tss's Tss2_RC_Decode when it is loaded, else the number. Static storage
/// that the next call overwrites.
const char *ctpm_describe(uint32_t rc);

#endif
