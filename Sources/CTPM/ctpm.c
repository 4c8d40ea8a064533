// CTPM: see include/CTPM.h for what and why.
#include "CTPM.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctpm_internal.h"

// The functions used (ctpm_internal.h), filled by dlsym.
struct ctpm_functions tss;

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
    SYMBOL(get_capability, esys, "Esys_GetCapability");
    SYMBOL(start_auth_session, esys, "Esys_StartAuthSession");
    SYMBOL(set_session_attributes, esys, "Esys_TRSess_SetAttributes");
    SYMBOL(from_tpm_public, esys, "Esys_TR_FromTPMPublic");
    SYMBOL(get_name, esys, "Esys_TR_GetName");
    SYMBOL(close_handle, esys, "Esys_TR_Close");
    SYMBOL(sys_context, esys, "Esys_GetSysContext");
    // libtss2-sys is ESYS's own dependency (mapped already): only to wipe ESYS's response buffer.
    void *sys = open_library("libtss2-sys.so.1", message, capacity);
    if (sys == NULL) return CTPM_ERROR_NOT_LOADED;
    SYMBOL(response_parameters, sys, "Tss2_Sys_GetRpBuffer");
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

uint32_t ctpm_owner_auth_set(ctpm_connection *connection, int *set) {
    TPMI_YES_NO more = TPM2_NO;
    TPMS_CAPABILITY_DATA *data = NULL;
    TSS2_RC rc = tss.get_capability(connection->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                    TPM2_CAP_TPM_PROPERTIES, TPM2_PT_PERMANENT, 1, &more, &data);
    if (rc == TSS2_RC_SUCCESS) {
        const TPML_TAGGED_TPM_PROPERTY *properties = &data->data.tpmProperties;
        if (data->capability != TPM2_CAP_TPM_PROPERTIES || properties->count < 1
            || properties->tpmProperty[0].property != TPM2_PT_PERMANENT) rc = CTPM_ERROR_UNEXPECTED;
        else *set = (properties->tpmProperty[0].value & TPMA_PERMANENT_OWNERAUTHSET) != 0;
    }
    tss.free(data);
    return rc;
}

const char *ctpm_describe(uint32_t rc) {
    static char text[160];
    switch (rc) {
    case CTPM_ERROR_NOT_LOADED: return "tpm2-tss is not loaded";
    case CTPM_ERROR_BAD_INPUT: return "malformed key blob or point";
    case CTPM_ERROR_NO_MEMORY: return "out of memory";
    case CTPM_ERROR_UNEXPECTED: return "unexpected answer from the TPM";
    case CTPM_ERROR_PARENT_MISMATCH: return "the TPM's storage primary key is not the one the key was bound under";
    case CTPM_ERROR_OWNER_AUTH: return "the TPM's owner hierarchy has a password";
    default: break;
    }
    if (tss.decode != NULL) snprintf(text, sizeof text, "0x%x: %s", rc, tss.decode(rc));
    else snprintf(text, sizeof text, "TSS2_RC 0x%x", rc);
    return text;
}
