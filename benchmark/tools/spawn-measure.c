// spawn-measure: runs one command and reports its wall time and peak resident memory, for the
// cold-start rows of pingstorage-benchmark.
//
//     spawn-measure [--quiet] COMMAND [ARG...]
//
// COMMAND (a path; no PATH lookup, so none is timed) runs with /dev/null as stdin and stdout, and
// our stderr (/dev/null too with --quiet), with no signal blocked. spawn-measure prints one line, "STATUS WALL_NS MAXRSS_KIB": the exit status (128 +
// the signal when killed), the time from posix_spawn to wait4's return (CLOCK_MONOTONIC), and
// wait4's ru_maxrss. It exits 0 once it has printed, 127 when COMMAND cannot be started.
//
// Why a process of its own, in C: a child's ru_maxrss includes the peak RSS of the address space
// it came from. At exec the kernel folds the old address space's high-water mark into the child's
// maxrss, and glibc's posix_spawn runs the child in its parent's address space until exec, so every
// child of the benchmark (tens of MiB) would report at least the benchmark's own peak. This
// launcher's peak is about 1 MiB, and that is the floor the children inherit (the "/bin/true" row
// of the report shows it). benchmark/run compiles it with clang alone: built by SwiftPM it would
// link the Swift runtime, and its floor would be 5 MiB.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv) {
    int first = 1;
    int quiet = argc > 1 && strcmp(argv[1], "--quiet") == 0;
    if (quiet) first++;
    if (argc <= first) {
        fprintf(stderr, "usage: spawn-measure [--quiet] COMMAND [ARG...]\n");
        return 2;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (quiet) posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    // Whatever mask and ignored signals we were started with, the command gets none.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t signals;
    sigemptyset(&signals);
    posix_spawnattr_setsigmask(&attributes, &signals);
    sigfillset(&signals);
    posix_spawnattr_setsigdefault(&attributes, &signals);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    pid_t pid;
    int64_t start = now_ns();
    int result = posix_spawn(&pid, argv[first], &actions, &attributes, argv + first, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (result != 0) {
        fprintf(stderr, "spawn-measure: cannot start %s: %s\n", argv[first], strerror(result));
        return 127;
    }
    int status = 0;
    struct rusage usage;
    while (wait4(pid, &status, 0, &usage) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "spawn-measure: wait4: %s\n", strerror(errno));
            return 127;
        }
    }
    int64_t elapsed = now_ns() - start;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf("%d %lld %ld\n", code, (long long) elapsed, usage.ru_maxrss);
    return 0;
}
