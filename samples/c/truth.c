/* Ground-truth side files; see truth.h. */
#define _GNU_SOURCE
#include "truth.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int truth_fd = -1;

void truth_open(const char *program) {
    const char *path = getenv("SCALPEL_TRUTH");
    if (!path || !*path) return;
    truth_fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (truth_fd < 0) {
        fprintf(stderr, "%s: cannot open truth file %s\n", program, path);
        return;
    }
    char line[256];
    int n = snprintf(line, sizeof line, "{\"program\":\"%s\",\"pid\":%d}\n", program, (int)getpid());
    syscall(SYS_write, truth_fd, line, (size_t)n);
}

uint64_t truth_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void truth_task(const char *type, int64_t id, int64_t parent, uint64_t start_ns, uint64_t end_ns) {
    if (truth_fd < 0) return;
    char line[256];
    int n = snprintf(line, sizeof line,
                     "{\"type\":\"%s\",\"id\":%lld,\"parent\":%lld,\"pid\":%d,\"tid\":%d,\"start_ns\":%llu,\"end_ns\":%llu}\n",
                     type, (long long)id, (long long)parent, (int)getpid(), (int)syscall(SYS_gettid),
                     (unsigned long long)start_ns, (unsigned long long)end_ns);
    /* One write of a short line to an O_APPEND file: lines from threads never interleave. */
    syscall(SYS_write, truth_fd, line, (size_t)n);
}
