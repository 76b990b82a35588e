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
    if (truth_fd < 0) /* a forked child already has it open */
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

void truth_edge(const char *kind, struct truth_at from, struct truth_at to) {
    if (truth_fd < 0) return;
    char line[384];
    int n = snprintf(line, sizeof line,
                     "{\"edge\":\"%s\",\"from\":{\"pid\":%d,\"tid\":%d,\"op\":\"%s\",\"n\":%lld},"
                     "\"to\":{\"pid\":%d,\"tid\":%d,\"op\":\"%s\",\"n\":%lld}}\n",
                     kind, from.pid, from.tid, from.op, (long long)from.n, to.pid, to.tid, to.op,
                     (long long)to.n);
    syscall(SYS_write, truth_fd, line, (size_t)n);
}

void truth_io(const char *io, const char *chan, const char *stream, int64_t n, int64_t off, int64_t len) {
    if (truth_fd < 0) return;
    char line[256];
    int k = snprintf(line, sizeof line,
                     "{\"io\":\"%s\",\"chan\":\"%s\",\"stream\":\"%s\",\"pid\":%d,\"tid\":%d,\"op\":\"%s\","
                     "\"n\":%lld,\"off\":%lld,\"len\":%lld}\n",
                     io, chan, stream, (int)getpid(), (int)syscall(SYS_gettid), io, (long long)n,
                     (long long)off, (long long)len);
    syscall(SYS_write, truth_fd, line, (size_t)k);
}

void truth_noise(int pid, int tid) {
    if (truth_fd < 0) return;
    char line[64];
    int n = snprintf(line, sizeof line, "{\"noise_tid\":%d,\"pid\":%d}\n", tid, pid);
    syscall(SYS_write, truth_fd, line, (size_t)n);
}
