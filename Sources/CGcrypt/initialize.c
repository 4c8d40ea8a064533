// The process-wide initialisation of libgcrypt; see CGcrypt.h for why it lives here.
#include "CGcrypt.h"

#include <pthread.h>

static pthread_mutex_t initialization_lock = PTHREAD_MUTEX_INITIALIZER;
/// The recorded answer (0: none yet) and version; read and written only with the lock held.
static cgcrypt_role recorded_role = 0;
static const char *recorded_version = NULL;

cgcrypt_role cgcrypt_initialize(const char **version) {
    pthread_mutex_lock(&initialization_lock);
    cgcrypt_role role = recorded_role;
    if (role == 0) {
        // Neither query starts anything: they read flags.
        if (gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P)) {
            role = CGCRYPT_INITIALIZED_ELSEWHERE;
        } else if (gcry_control(GCRYCTL_ANY_INITIALIZATION_P)) {
            role = CGCRYPT_STARTED_ELSEWHERE;
        } else {
            role = CGCRYPT_INITIALIZED_HERE;
        }
        // Runs global_init on this thread when nobody has (idempotent otherwise).
        recorded_version = gcry_check_version(NULL);
        if (role == CGCRYPT_INITIALIZED_HERE) {
            // What an application does: no warning on stderr when the secure-memory pool cannot
            // be locked (RLIMIT_MEMLOCK), then declare initialisation complete.
            gcry_control(GCRYCTL_DISABLE_SECMEM_WARN);
            gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
        }
        if (role != CGCRYPT_STARTED_ELSEWHERE) recorded_role = role;
    }
    if (version != NULL) *version = recorded_version;
    pthread_mutex_unlock(&initialization_lock);
    return role;
}

int cgcrypt_version_at_least(const char *minimum) {
    return gcry_check_version(minimum) != NULL;
}
