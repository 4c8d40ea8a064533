// CTPM: see include/CTPM.h for what and why.
#include "CTPM.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tcti.h>

// The functions used, as pointers filled by dlsym (their types come from the headers).
static struct {
    __typeof__(&Esys_Initialize) initialize;
    __typeof__(&Esys_Finalize) finalize;
    __typeof__(&Esys_GetRandom) get_random;
    __typeof__(&Esys_CreatePrimary) create_primary;
    __typeof__(&Esys_Create) create;
    __typeof__(&Esys_Load) load;
    __typeof__(&Esys_ECDH_ZGen) ecdh_zgen;
    __typeof__(&Esys_FlushContext) flush;
    __typeof__(&Esys_Free) free;
    __typeof__(&Tss2_MU_TPM2B_PUBLIC_Marshal) public_marshal;
    __typeof__(&Tss2_MU_TPM2B_PUBLIC_Unmarshal) public_unmarshal;
    __typeof__(&Tss2_MU_TPM2B_PRIVATE_Marshal) private_marshal;
    __typeof__(&Tss2_MU_TPM2B_PRIVATE_Unmarshal) private_unmarshal;
    __typeof__(&Tss2_RC_Decode) decode;   // optional: descriptions only
    int loaded;
} tss;

// The TCTI libraries loaded so far (a process uses one or two).
#define CTPM_MAX_TCTIS 4
static struct { char name[64]; const TSS2_TCTI_INFO *info; } tctis[CTPM_MAX_TCTIS];
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static void *open_library(const char *name, char *message, size_t capacity) {
    void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) snprintf(message, capacity, "cannot load %s: %s", name, dlerror());
    return handle;
}

#define SYMBOL(field, handle, name) \
    do { \
        *(void **)&tss.field = dlsym(handle, name); \
        if (tss.field == NULL) { snprintf(message, capacity, "%s has no %s", #handle, name); return CTPM_ERROR_NOT_LOADED; } \
    } while (0)

static uint32_t load_tss(char *message, size_t capacity) {
    if (tss.loaded) return CTPM_OK;
    // tpm2-tss reads TSS2_LOG when it first logs; its default prints errors to stderr. Set under
    // load_lock, before the libraries exist; an application's own TSS2_LOG is kept. (setenv is not
    // safe against a concurrent getenv on another thread; this runs once per process.)
    setenv("TSS2_LOG", "all+none", 0);
    void *mu = open_library("libtss2-mu.so.0", message, capacity);
    if (mu == NULL) return CTPM_ERROR_NOT_LOADED;
    void *esys = open_library("libtss2-esys.so.0", message, capacity);
    if (esys == NULL) return CTPM_ERROR_NOT_LOADED;
    SYMBOL(initialize, esys, "Esys_Initialize");
    SYMBOL(finalize, esys, "Esys_Finalize");
    SYMBOL(get_random, esys, "Esys_GetRandom");
    SYMBOL(create_primary, esys, "Esys_CreatePrimary");
    SYMBOL(create, esys, "Esys_Create");
    SYMBOL(load, esys, "Esys_Load");
    SYMBOL(ecdh_zgen, esys, "Esys_ECDH_ZGen");
    SYMBOL(flush, esys, "Esys_FlushContext");
    SYMBOL(free, esys, "Esys_Free");
    SYMBOL(public_marshal, mu, "Tss2_MU_TPM2B_PUBLIC_Marshal");
    SYMBOL(public_unmarshal, mu, "Tss2_MU_TPM2B_PUBLIC_Unmarshal");
    SYMBOL(private_marshal, mu, "Tss2_MU_TPM2B_PRIVATE_Marshal");
    SYMBOL(private_unmarshal, mu, "Tss2_MU_TPM2B_PRIVATE_Unmarshal");
    char ignored[8];
    void *rc = open_library("libtss2-rc.so.0", ignored, sizeof ignored);
    if (rc != NULL) *(void **)&tss.decode = dlsym(rc, "Tss2_RC_Decode");
    tss.loaded = 1;
    return CTPM_OK;
}

static const TSS2_TCTI_INFO *tcti_info(const char *name) {
    for (int i = 0; i < CTPM_MAX_TCTIS; i++) {
        if (tctis[i].info != NULL && strcmp(tctis[i].name, name) == 0) return tctis[i].info;
    }
    return NULL;
}

uint32_t ctpm_load(const char *tcti_library, char *message, size_t capacity) {
    pthread_mutex_lock(&load_lock);
    uint32_t rc = load_tss(message, capacity);
    if (rc == CTPM_OK && tcti_info(tcti_library) == NULL) {
        rc = CTPM_ERROR_NOT_LOADED;
        int slot = -1;
        for (int i = 0; i < CTPM_MAX_TCTIS; i++) if (tctis[i].info == NULL) { slot = i; break; }
        if (slot < 0 || strlen(tcti_library) >= sizeof tctis[0].name) {
            snprintf(message, capacity, "cannot load the TCTI %s: too many or too long a name", tcti_library);
        } else {
            void *handle = open_library(tcti_library, message, capacity);
            TSS2_TCTI_INFO_FUNC info = handle ? (TSS2_TCTI_INFO_FUNC)dlsym(handle, TSS2_TCTI_INFO_SYMBOL) : NULL;
            const TSS2_TCTI_INFO *found = info ? info() : NULL;
            if (handle != NULL && (found == NULL || found->init == NULL)) {
                snprintf(message, capacity, "%s is not a TCTI (no %s)", tcti_library, TSS2_TCTI_INFO_SYMBOL);
            } else if (found != NULL) {
                strcpy(tctis[slot].name, tcti_library);
                tctis[slot].info = found;
                rc = CTPM_OK;
            }
        }
    }
    pthread_mutex_unlock(&load_lock);
    return rc;
}

struct ctpm_connection {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
};

uint32_t ctpm_open(const char *tcti_library, const char *conf, ctpm_connection **connection) {
    *connection = NULL;
    pthread_mutex_lock(&load_lock);
    const TSS2_TCTI_INFO *info = tss.loaded ? tcti_info(tcti_library) : NULL;
    pthread_mutex_unlock(&load_lock);
    if (info == NULL) return CTPM_ERROR_NOT_LOADED;
    size_t size = 0;
    TSS2_RC rc = info->init(NULL, &size, conf);
    if (rc != TSS2_RC_SUCCESS) return rc;
    ctpm_connection *made = calloc(1, sizeof *made);
    if (made == NULL) return CTPM_ERROR_NO_MEMORY;
    made->tcti = calloc(1, size);
    if (made->tcti == NULL) { free(made); return CTPM_ERROR_NO_MEMORY; }
    rc = info->init(made->tcti, &size, conf);
    if (rc != TSS2_RC_SUCCESS) { free(made->tcti); free(made); return rc; }
    rc = tss.initialize(&made->esys, made->tcti, NULL);
    if (rc != TSS2_RC_SUCCESS) { Tss2_Tcti_Finalize(made->tcti); free(made->tcti); free(made); return rc; }
    *connection = made;
    return CTPM_OK;
}

void ctpm_close(ctpm_connection *connection) {
    if (connection == NULL) return;
    tss.finalize(&connection->esys);
    Tss2_Tcti_Finalize(connection->tcti);
    free(connection->tcti);
    free(connection);
}

uint32_t ctpm_ping(ctpm_connection *connection) {
    TPM2B_DIGEST *random = NULL;
    TSS2_RC rc = tss.get_random(connection->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, 8, &random);
    tss.free(random);
    return rc;
}

// The ECC P-256 storage primary key of the owner hierarchy: TCG's SRK template (restricted
// decryption, AES-128-CFB, zero unique field). The same template on the same TPM always gives
// the same key, so it is re-created instead of kept.
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
    return rc;
}

uint32_t ctpm_create_key(ctpm_connection *connection, uint8_t *public_blob, size_t *public_length,
                         uint8_t *private_blob, size_t *private_length) {
    ESYS_TR primary = ESYS_TR_NONE;
    TSS2_RC rc = create_primary(connection, &primary);
    if (rc != TSS2_RC_SUCCESS) return rc;
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
    rc = tss.create(connection->esys, primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                    &sensitive, &template, &outside, &pcrs, &private, &public, &creation, &hash, &ticket);
    tss.flush(connection->esys, primary);
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

// Unmarshals the blobs, re-creates the primary key and loads the key under it.
static TSS2_RC load_key(ctpm_connection *connection, const uint8_t *public_blob, size_t public_length,
                        const uint8_t *private_blob, size_t private_length,
                        TPM2B_PUBLIC *public, ESYS_TR *key) {
    TPM2B_PRIVATE private = {0};
    size_t offset = 0;
    if (tss.public_unmarshal(public_blob, public_length, &offset, public) != TSS2_RC_SUCCESS || offset != public_length)
        return CTPM_ERROR_BAD_INPUT;
    offset = 0;
    if (tss.private_unmarshal(private_blob, private_length, &offset, &private) != TSS2_RC_SUCCESS || offset != private_length)
        return CTPM_ERROR_BAD_INPUT;
    if (public->publicArea.type != TPM2_ALG_ECC || public->publicArea.parameters.eccDetail.curveID != TPM2_ECC_NIST_P256)
        return CTPM_ERROR_BAD_INPUT;
    ESYS_TR primary = ESYS_TR_NONE;
    TSS2_RC rc = create_primary(connection, &primary);
    if (rc != TSS2_RC_SUCCESS) return rc;
    rc = tss.load(connection->esys, primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &private, public, key);
    tss.flush(connection->esys, primary);
    explicit_bzero(&private, sizeof private);
    return rc;
}

uint32_t ctpm_public_point(ctpm_connection *connection, const uint8_t *public_blob, size_t public_length,
                           const uint8_t *private_blob, size_t private_length,
                           uint8_t point[CTPM_P256_POINT_BYTES]) {
    TPM2B_PUBLIC public = {0};
    ESYS_TR key = ESYS_TR_NONE;
    TSS2_RC rc = load_key(connection, public_blob, public_length, private_blob, private_length, &public, &key);
    if (rc != TSS2_RC_SUCCESS) return rc;
    tss.flush(connection->esys, key);
    point[0] = 0x04;
    if (!put_coordinate(point + 1, &public.publicArea.unique.ecc.x)
        || !put_coordinate(point + 1 + CTPM_P256_COORDINATE_BYTES, &public.publicArea.unique.ecc.y))
        return CTPM_ERROR_BAD_INPUT;
    return CTPM_OK;
}

uint32_t ctpm_ecdh_zgen(ctpm_connection *connection, const uint8_t *public_blob, size_t public_length,
                        const uint8_t *private_blob, size_t private_length,
                        const uint8_t peer_point[CTPM_P256_POINT_BYTES],
                        uint8_t shared_x[CTPM_P256_COORDINATE_BYTES]) {
    if (peer_point[0] != 0x04) return CTPM_ERROR_BAD_INPUT;
    TPM2B_PUBLIC public = {0};
    ESYS_TR key = ESYS_TR_NONE;
    TSS2_RC rc = load_key(connection, public_blob, public_length, private_blob, private_length, &public, &key);
    if (rc != TSS2_RC_SUCCESS) return rc;
    TPM2B_ECC_POINT in = {0};
    in.point.x.size = CTPM_P256_COORDINATE_BYTES;
    in.point.y.size = CTPM_P256_COORDINATE_BYTES;
    memcpy(in.point.x.buffer, peer_point + 1, CTPM_P256_COORDINATE_BYTES);
    memcpy(in.point.y.buffer, peer_point + 1 + CTPM_P256_COORDINATE_BYTES, CTPM_P256_COORDINATE_BYTES);
    TPM2B_ECC_POINT *out = NULL;
    // The TPM checks that the point is on the curve (TPM_RC_ECC_POINT otherwise).
    rc = tss.ecdh_zgen(connection->esys, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &in, &out);
    tss.flush(connection->esys, key);
    if (rc == TSS2_RC_SUCCESS && !put_coordinate(shared_x, &out->point.x)) rc = CTPM_ERROR_UNEXPECTED;
    if (out != NULL) { explicit_bzero(out, sizeof *out); tss.free(out); }
    return rc;
}

const char *ctpm_describe(uint32_t rc) {
    static char text[160];
    switch (rc) {
    case CTPM_ERROR_NOT_LOADED: return "tpm2-tss is not loaded";
    case CTPM_ERROR_BAD_INPUT: return "malformed key blob or point";
    case CTPM_ERROR_NO_MEMORY: return "out of memory";
    case CTPM_ERROR_UNEXPECTED: return "unexpected answer from the TPM";
    default: break;
    }
    if (tss.decode != NULL) snprintf(text, sizeof text, "0x%x: %s", rc, tss.decode(rc));
    else snprintf(text, sizeof text, "TSS2_RC 0x%x", rc);
    return text;
}
