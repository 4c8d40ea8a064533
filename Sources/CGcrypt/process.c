// Process dumpability for the secret-memory policy: prctl is variadic, so Swift cannot call it.
// See CGcrypt.h.
#include "CGcrypt.h"

#include <sys/prctl.h>

int cgcrypt_process_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

int cgcrypt_process_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
