// CTPM's own declarations, shared by its two files (not part of its interface, include/CTPM.h).
#ifndef CTPM_INTERNAL_H
#define CTPM_INTERNAL_H

#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_sys.h>
#include <tss2/tss2_tcti.h>

// The functions used, as pointers filled by dlsym (their types come from the headers).
struct ctpm_functions {
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
    __typeof__(&Esys_GetCapability) get_capability;
    __typeof__(&Esys_StartAuthSession) start_auth_session;
    __typeof__(&Esys_TRSess_SetAttributes) set_session_attributes;
    __typeof__(&Esys_TR_FromTPMPublic) from_tpm_public;
    __typeof__(&Esys_TR_GetName) get_name;
    __typeof__(&Esys_TR_Close) close_handle;
    __typeof__(&Esys_GetSysContext) sys_context;
    __typeof__(&Tss2_Sys_GetRpBuffer) response_parameters;
    __typeof__(&Tss2_RC_Decode) decode;   // optional: descriptions only
    int loaded;
};

/// Filled once by ctpm_load (ctpm.c); read-only afterwards.
extern struct ctpm_functions tss;

struct ctpm_connection {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
};

#endif
