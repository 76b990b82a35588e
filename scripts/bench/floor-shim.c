/* The floor of recording, for `scripts/bench-agent.sh`'s `hot` section: a preloaded library that
 * does the least a recorder of these calls must do and nothing else. `read` and `write` read the
 * clock before and after the call and store 16 bytes; `pthread_mutex_lock` and
 * `pthread_mutex_unlock` read it once and store 8 bytes. Into a per-thread ring in static TLS:
 * no file, no descriptor table, no stream offsets, no objects, no stacks, no reentrancy guard.
 * What the agent adds over this is the price of what it records.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>
#include <x86intrin.h>

#define RING (1u << 16)
static __thread __attribute__((tls_model("initial-exec"))) uint64_t ring[RING];
static __thread __attribute__((tls_model("initial-exec"))) unsigned at;

static inline void put(uint64_t v) { ring[at++ & (RING - 1)] = v; }

typedef ssize_t (*rw_fn)(int, void *, size_t);
typedef int (*mutex_fn)(pthread_mutex_t *);

ssize_t read(int fd, void *buf, size_t n) {
    static rw_fn real;
    if (!real) real = (rw_fn)dlsym(RTLD_NEXT, "read");
    uint64_t t0 = __rdtsc();
    ssize_t r = real(fd, buf, n);
    put(t0 ^ (uint64_t)fd);
    put(__rdtsc() ^ (uint64_t)r);
    return r;
}

ssize_t write(int fd, const void *buf, size_t n) {
    static rw_fn real;
    if (!real) real = (rw_fn)dlsym(RTLD_NEXT, "write");
    uint64_t t0 = __rdtsc();
    ssize_t r = real(fd, (void *)buf, n);
    put(t0 ^ (uint64_t)fd);
    put(__rdtsc() ^ (uint64_t)r);
    return r;
}

int pthread_mutex_lock(pthread_mutex_t *m) {
    static mutex_fn real;
    if (!real) real = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_lock");
    int r = real(m);
    put(__rdtsc() ^ (uint64_t)(uintptr_t)m);
    return r;
}

int pthread_mutex_unlock(pthread_mutex_t *m) {
    static mutex_fn real;
    if (!real) real = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_unlock");
    put(__rdtsc() ^ (uint64_t)(uintptr_t)m);
    return real(m);
}
