// See CAccessGate.h.
#define _GNU_SOURCE
#include "CAccessGate.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_changed = PTHREAD_COND_INITIALIZER;
static int armed = 0, holding = 0, released = 0, fips_queries = 0;

static const char fips_file[] = "/etc/gcrypt/fips_enabled";

int access(const char *path, int mode) {
    static int (*real_access)(const char *, int);
    if (real_access == NULL) real_access = (int (*)(const char *, int))dlsym(RTLD_NEXT, "access");
    if (strcmp(path, fips_file) == 0) {
        pthread_mutex_lock(&gate_lock);
        fips_queries += 1;
        if (armed && !holding && !released) {
            holding = 1;
            pthread_cond_broadcast(&gate_changed);
            while (!released) pthread_cond_wait(&gate_changed, &gate_lock);
        }
        pthread_mutex_unlock(&gate_lock);
    }
    return real_access(path, mode);
}

void access_gate_arm(void) {
    pthread_mutex_lock(&gate_lock);
    armed = 1;
    pthread_mutex_unlock(&gate_lock);
}

int access_gate_wait_until_holding(int milliseconds) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += milliseconds / 1000;
    until.tv_nsec += (long)(milliseconds % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) { until.tv_sec += 1; until.tv_nsec -= 1000000000L; }
    pthread_mutex_lock(&gate_lock);
    while (!holding) {
        if (pthread_cond_timedwait(&gate_changed, &gate_lock, &until) != 0) break;
    }
    int result = holding;
    pthread_mutex_unlock(&gate_lock);
    return result;
}

void access_gate_release(void) {
    pthread_mutex_lock(&gate_lock);
    released = 1;
    pthread_cond_broadcast(&gate_changed);
    pthread_mutex_unlock(&gate_lock);
}

int access_gate_fips_queries(void) {
    pthread_mutex_lock(&gate_lock);
    int queries = fips_queries;
    pthread_mutex_unlock(&gate_lock);
    return queries;
}
