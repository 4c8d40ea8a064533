// CTPM's key commands: the parent key, the session salted to it, and creating, loading and using
// a key under it (see include/CTPM.h for what crosses the bus, and why).
#include "CTPM.h"
#include "ctpm_internal.h"

#include <string.h>

// Whether `rc` is the TPM refusing an authorization (format 1, TPM_RC_BAD_AUTH or
// TPM_RC_AUTH_FAIL, whichever session it names): for the owner hierarchy with the empty password,
// that the hierarchy has one.
// A parent's name: TPM2B_NAME's bytes.
typedef struct {
    uint8_t bytes[CTPM_NAME_CAPACITY];
    size_t length;
} ctpm_name;

static int is_refused_authorization(TSS2_RC rc) {
    if ((rc & 0xFFFFF000u) != 0 || (rc & 0x80u) == 0) return 0;
    return (rc & 0x3Fu) == 0x22u || (rc & 0x3Fu) == 0x0Eu;
}

// The ECC P-256 storage primary key of the owner hierarchy: TCG's SRK template (restricted
// decryption, AES-128-CFB, zero unique field). The same template on the same TPM always gives
// the same key, so it is re-created instead of kept. Sent with the empty password and no
// parameter encryption: its input has no sensitive part and its output is public, and it has to
// exist before a session can be salted to it (its name is checked against the pin first).
static TSS2_RC create_primary(ctpm_connection *connection, ESYS_TR *primary) {
    TPM2B_SENSITIVE_CREATE sensitive = {0};
    TPM2B_PUBLIC template = {0};
    template.publicArea.type = TPM2_ALG_ECC;
    template.publicArea.nameAlg = TPM2_ALG_SHA256;
    template.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT
        | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA
        | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT;
    template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_AES;
    template.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128;
    template.publicArea.parameters.eccDetail.symmetric.mode.aes = TPM2_ALG_CFB;
    template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
    template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
    template.publicArea.unique.ecc.x.size = CTPM_P256_COORDINATE_BYTES;
    template.publicArea.unique.ecc.y.size = CTPM_P256_COORDINATE_BYTES;
    TPM2B_DATA outside = {0};
    TPML_PCR_SELECTION pcrs = {0};
    TPM2B_PUBLIC *public = NULL;
    TPM2B_CREATION_DATA *creation = NULL;
    TPM2B_DIGEST *hash = NULL;
    TPMT_TK_CREATION *ticket = NULL;
    TSS2_RC rc = tss.create_primary(connection->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                                    &sensitive, &template, &outside, &pcrs, primary, &public, &creation, &hash, &ticket);
    tss.free(public); tss.free(creation); tss.free(hash); tss.free(ticket);
    return is_refused_authorization(rc) ? CTPM_ERROR_OWNER_AUTH : rc;
}

static int same_name(const TPM2B_NAME *name, const ctpm_name *pinned) {
    return name->size == pinned->length && memcmp(name->name, pinned->bytes, pinned->length) == 0;
}

// A key's parent, and the session salted to it that carries the key commands.
typedef struct {
    ESYS_TR parent;
    int transient;      // made here by TPM2_CreatePrimary: flushed; the persistent SRK is only closed
    ESYS_TR session;
} salted_parent;

static void release_parent(ctpm_connection *connection, salted_parent *salted) {
    if (salted->parent == ESYS_TR_NONE) return;
    if (salted->transient) tss.flush(connection->esys, salted->parent);
    else tss.close_handle(connection->esys, &salted->parent);
    salted->parent = ESYS_TR_NONE;
}

static void release(ctpm_connection *connection, salted_parent *salted) {
    release_parent(connection, salted);
    if (salted->session != ESYS_TR_NONE) tss.flush(connection->esys, salted->session);
    salted->session = ESYS_TR_NONE;
}

// The persistent SRK when it is the pinned key (the same template and seed: the same name), which
// spares re-creating it and needs no owner authorization; ESYS_TR_NONE otherwise (absent, or
// another key: salting to a key whose name is not pinned would give an interposer the salt).
static ESYS_TR pinned_persistent_srk(ctpm_connection *connection, const ctpm_name *pinned) {
    ESYS_TR srk = ESYS_TR_NONE;
    if (tss.from_tpm_public(connection->esys, CTPM_PERSISTENT_SRK, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &srk) != TSS2_RC_SUCCESS)
        return ESYS_TR_NONE;
    TPM2B_NAME *name = NULL;
    int same = tss.get_name(connection->esys, srk, &name) == TSS2_RC_SUCCESS && same_name(name, pinned);
    tss.free(name);
    if (!same) tss.close_handle(connection->esys, &srk);
    return same ? srk : ESYS_TR_NONE;
}

// An HMAC session salted to `salt_key` (the TPM decrypts the salt with its private key, so only
// the TPM holding it shares the session key) whose first command and response parameters are
// encrypted with AES-128-CFB. ESYS makes the caller's nonce and encrypts the salt to the public
// area it holds for `salt_key`: the one whose name was checked.
static TSS2_RC start_session(ctpm_connection *connection, ESYS_TR salt_key, ESYS_TR *session) {
    TPMT_SYM_DEF symmetric = {.algorithm = TPM2_ALG_AES, .keyBits = {.aes = 128}, .mode = {.aes = TPM2_ALG_CFB}};
    TSS2_RC rc = tss.start_auth_session(connection->esys, salt_key, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                        NULL, TPM2_SE_HMAC, &symmetric, TPM2_ALG_SHA256, session);
    if (rc != TSS2_RC_SUCCESS) { *session = ESYS_TR_NONE; return rc; }
    return tss.set_session_attributes(connection->esys, *session,
                                      TPMA_SESSION_DECRYPT | TPMA_SESSION_ENCRYPT | TPMA_SESSION_CONTINUESESSION, 0xff);
}

// The parent (the persistent SRK if it is the pinned key, else the primary from the template),
// its name written to `parent_name`, and a session salted to it. With a pin (`pinned->length` >
// 0), a primary of another name fails before any session or key command is sent.
static TSS2_RC open_parent(ctpm_connection *connection, const ctpm_name *pinned, salted_parent *salted, ctpm_name *parent_name) {
    salted->parent = ESYS_TR_NONE;
    salted->session = ESYS_TR_NONE;
    salted->transient = 0;
    int has_pin = pinned != NULL && pinned->length > 0;
    if (has_pin) salted->parent = pinned_persistent_srk(connection, pinned);
    TSS2_RC rc = TSS2_RC_SUCCESS;
    if (salted->parent == ESYS_TR_NONE) {
        rc = create_primary(connection, &salted->parent);
        if (rc != TSS2_RC_SUCCESS) { salted->parent = ESYS_TR_NONE; return rc; }
        salted->transient = 1;
    }
    TPM2B_NAME *name = NULL;
    rc = tss.get_name(connection->esys, salted->parent, &name);
    if (rc == TSS2_RC_SUCCESS && name->size > CTPM_NAME_CAPACITY) rc = CTPM_ERROR_UNEXPECTED;
    if (rc == TSS2_RC_SUCCESS) {
        memcpy(parent_name->bytes, name->name, name->size);
        parent_name->length = name->size;
        if (has_pin && !same_name(name, pinned)) rc = CTPM_ERROR_PARENT_MISMATCH;
    }
    tss.free(name);
    if (rc == TSS2_RC_SUCCESS) rc = start_session(connection, salted->parent, &salted->session);
    if (rc != TSS2_RC_SUCCESS) release(connection, salted);
    return rc;
}

// Copies a name the caller gave or is given.
static int take_name(ctpm_name *name, const uint8_t *bytes, size_t length) {
    if (length > CTPM_NAME_CAPACITY) return 0;
    if (length > 0) memcpy(name->bytes, bytes, length);
    name->length = length;
    return 1;
}

static void give_name(const ctpm_name *name, uint8_t *bytes, size_t *length) {
    memcpy(bytes, name->bytes, name->length);
    *length = name->length;
}

uint32_t ctpm_create_key(ctpm_connection *connection, uint8_t *public_blob, size_t *public_length,
                         uint8_t *private_blob, size_t *private_length, uint8_t *parent, size_t *parent_length) {
    salted_parent salted;
    ctpm_name name = {0};
    TSS2_RC rc = open_parent(connection, NULL, &salted, &name);
    if (rc != TSS2_RC_SUCCESS) return rc;
    give_name(&name, parent, parent_length);
    TPM2B_SENSITIVE_CREATE sensitive = {0};
    TPM2B_PUBLIC template = {0};
    template.publicArea.type = TPM2_ALG_ECC;
    template.publicArea.nameAlg = TPM2_ALG_SHA256;
    // Decryption only (ECDH_ZGen), never signing; not restricted; bound to this TPM and parent.
    template.publicArea.objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT
        | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA | TPMA_OBJECT_DECRYPT;
    template.publicArea.parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
    template.publicArea.parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
    template.publicArea.parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
    template.publicArea.parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
    TPM2B_DATA outside = {0};
    TPML_PCR_SELECTION pcrs = {0};
    TPM2B_PRIVATE *private = NULL;
    TPM2B_PUBLIC *public = NULL;
    TPM2B_CREATION_DATA *creation = NULL;
    TPM2B_DIGEST *hash = NULL;
    TPMT_TK_CREATION *ticket = NULL;
    rc = tss.create(connection->esys, salted.parent, salted.session, ESYS_TR_NONE, ESYS_TR_NONE,
                    &sensitive, &template, &outside, &pcrs, &private, &public, &creation, &hash, &ticket);
    release(connection, &salted);
    if (rc == TSS2_RC_SUCCESS) {
        size_t offset = 0;
        rc = tss.public_marshal(public, public_blob, CTPM_BLOB_CAPACITY, &offset);
        *public_length = offset;
        offset = 0;
        if (rc == TSS2_RC_SUCCESS) rc = tss.private_marshal(private, private_blob, CTPM_BLOB_CAPACITY, &offset);
        *private_length = offset;
    }
    tss.free(private); tss.free(public); tss.free(creation); tss.free(hash); tss.free(ticket);
    return rc;
}

// Writes a coordinate of up to 32 bytes right-aligned (the TPM may drop leading zeros).
static int put_coordinate(uint8_t *out, const TPM2B_ECC_PARAMETER *coordinate) {
    if (coordinate->size > CTPM_P256_COORDINATE_BYTES) return 0;
    memset(out, 0, CTPM_P256_COORDINATE_BYTES);
    memcpy(out + CTPM_P256_COORDINATE_BYTES - coordinate->size, coordinate->buffer, coordinate->size);
    return 1;
}

// Unmarshals the blobs, opens the parent and its session, and loads the key under it in that
// session. On success the session stays open in `salted` (the caller releases it); the parent is
// flushed at once (the loaded key does not need it).
static TSS2_RC load_key(ctpm_connection *connection, const uint8_t *public_blob, size_t public_length,
                        const uint8_t *private_blob, size_t private_length, const ctpm_name *pinned,
                        TPM2B_PUBLIC *public, salted_parent *salted, ESYS_TR *key, ctpm_name *parent) {
    TPM2B_PRIVATE private = {0};
    size_t offset = 0;
    if (tss.public_unmarshal(public_blob, public_length, &offset, public) != TSS2_RC_SUCCESS || offset != public_length)
        return CTPM_ERROR_BAD_INPUT;
    offset = 0;
    if (tss.private_unmarshal(private_blob, private_length, &offset, &private) != TSS2_RC_SUCCESS || offset != private_length)
        return CTPM_ERROR_BAD_INPUT;
    if (public->publicArea.type != TPM2_ALG_ECC || public->publicArea.parameters.eccDetail.curveID != TPM2_ECC_NIST_P256)
        return CTPM_ERROR_BAD_INPUT;
    TSS2_RC rc = open_parent(connection, pinned, salted, parent);
    if (rc != TSS2_RC_SUCCESS) return rc;
    rc = tss.load(connection->esys, salted->parent, salted->session, ESYS_TR_NONE, ESYS_TR_NONE, &private, public, key);
    explicit_bzero(&private, sizeof private);
    release_parent(connection, salted);
    if (rc != TSS2_RC_SUCCESS) release(connection, salted);
    return rc;
}

uint32_t ctpm_public_point(ctpm_connection *connection, const uint8_t *public_blob, size_t public_length,
                           const uint8_t *private_blob, size_t private_length,
                           const uint8_t *pinned, size_t pinned_length,
                           uint8_t point[CTPM_P256_POINT_BYTES], uint8_t *parent, size_t *parent_length) {
    TPM2B_PUBLIC public = {0};
    ESYS_TR key = ESYS_TR_NONE;
    salted_parent salted;
    ctpm_name pin = {0}, name = {0};
    if (!take_name(&pin, pinned, pinned_length)) return CTPM_ERROR_BAD_INPUT;
    TSS2_RC rc = load_key(connection, public_blob, public_length, private_blob, private_length, &pin, &public, &salted, &key, &name);
    if (rc != TSS2_RC_SUCCESS) return rc;
    give_name(&name, parent, parent_length);
    tss.flush(connection->esys, key);
    release(connection, &salted);
    point[0] = 0x04;
    if (!put_coordinate(point + 1, &public.publicArea.unique.ecc.x)
        || !put_coordinate(point + 1 + CTPM_P256_COORDINATE_BYTES, &public.publicArea.unique.ecc.y))
        return CTPM_ERROR_BAD_INPUT;
    return CTPM_OK;
}

// Wipes ESYS's copy of the last response's parameters: ESYS decrypts an encrypted response
// parameter in place, in its SYS context's buffer, where it would stay until a later command
// overwrote it.
static void wipe_last_response(ctpm_connection *connection) {
    TSS2_SYS_CONTEXT *sys = NULL;
    const uint8_t *parameters = NULL;
    size_t size = 0;
    if (tss.sys_context(connection->esys, &sys) != TSS2_RC_SUCCESS || sys == NULL) return;
    if (tss.response_parameters(sys, &size, &parameters) != TSS2_RC_SUCCESS || parameters == NULL) return;
    explicit_bzero((void *)parameters, size);
}

uint32_t ctpm_ecdh_zgen(ctpm_connection *connection, const uint8_t *public_blob, size_t public_length,
                        const uint8_t *private_blob, size_t private_length,
                        const uint8_t *pinned, size_t pinned_length,
                        const uint8_t peer_point[CTPM_P256_POINT_BYTES],
                        uint8_t shared_x[CTPM_P256_COORDINATE_BYTES], uint8_t *parent, size_t *parent_length) {
    if (peer_point[0] != 0x04) return CTPM_ERROR_BAD_INPUT;
    TPM2B_PUBLIC public = {0};
    ESYS_TR key = ESYS_TR_NONE;
    salted_parent salted;
    ctpm_name pin = {0}, name = {0};
    if (!take_name(&pin, pinned, pinned_length)) return CTPM_ERROR_BAD_INPUT;
    TSS2_RC rc = load_key(connection, public_blob, public_length, private_blob, private_length, &pin, &public, &salted, &key, &name);
    if (rc != TSS2_RC_SUCCESS) return rc;
    give_name(&name, parent, parent_length);
    TPM2B_ECC_POINT in = {0};
    in.point.x.size = CTPM_P256_COORDINATE_BYTES;
    in.point.y.size = CTPM_P256_COORDINATE_BYTES;
    memcpy(in.point.x.buffer, peer_point + 1, CTPM_P256_COORDINATE_BYTES);
    memcpy(in.point.y.buffer, peer_point + 1 + CTPM_P256_COORDINATE_BYTES, CTPM_P256_COORDINATE_BYTES);
    TPM2B_ECC_POINT *out = NULL;
    // The TPM checks that the point is on the curve (TPM_RC_ECC_POINT otherwise). In the salted
    // session: the point goes in encrypted, and the product comes back encrypted.
    rc = tss.ecdh_zgen(connection->esys, key, salted.session, ESYS_TR_NONE, ESYS_TR_NONE, &in, &out);
    wipe_last_response(connection);
    tss.flush(connection->esys, key);
    release(connection, &salted);
    if (rc == TSS2_RC_SUCCESS && !put_coordinate(shared_x, &out->point.x)) rc = CTPM_ERROR_UNEXPECTED;
    if (out != NULL) { explicit_bzero(out, sizeof *out); tss.free(out); }
    return rc;
}
