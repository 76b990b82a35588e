/* cputime: leaves whose CPU time and time off the CPU the program measures itself
 * (tests/tests/rollup.rs, recorded with `--cpu-time`).
 *
 * The process is pinned to one CPU. Thread "spinner" burns CPU until told to stop. Thread
 * "worker" runs two phases, each one leaf from a pipe read to a pipe write, calling nothing
 * the agent records in between:
 *   shared: spin for 60 ms of wall time while the spinner competes for the CPU;
 *   alone:  spin for 30 ms after the spinner has stopped.
 * Inside each leaf the worker measures its wall time (CLOCK_MONOTONIC) and its own CPU time
 * (CLOCK_THREAD_CPUTIME_ID); main prints "PHASE wall_ns cpu_ns" for both at the end. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int go[2], done[2];
static atomic_int spinning, stop;
static long long wall[2], cpu[2];

static long long now(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *spinner(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "spinner");
    atomic_store(&spinning, 1);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    }
    return NULL;
}

static void *worker(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "worker");
    static const long long span_ms[2] = {60, 30};
    for (int phase = 0; phase < 2; phase++) {
        char c;
        if (read(go[0], &c, 1) != 1) abort();
        long long w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
        long long w1 = w0;
        while (w1 - w0 < span_ms[phase] * 1000000LL) w1 = now(CLOCK_MONOTONIC);
        long long c1 = now(CLOCK_THREAD_CPUTIME_ID);
        wall[phase] = w1 - w0;
        cpu[phase] = c1 - c0;
        if (write(done[1], &c, 1) != 1) abort();
    }
    return NULL;
}

int main(void) {
    /* One CPU for the whole process: the first one it may run on. */
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed)) return 1;
    CPU_ZERO(&one);
    for (int i = 0; i < CPU_SETSIZE; i++) {
        if (CPU_ISSET(i, &allowed)) {
            CPU_SET(i, &one);
            break;
        }
    }
    if (sched_setaffinity(0, sizeof one, &one)) return 1;
    if (pipe(go) || pipe(done)) return 1;
    pthread_t s, w;
    if (pthread_create(&s, NULL, spinner, NULL)) return 1;
    while (!atomic_load(&spinning)) sched_yield();
    if (pthread_create(&w, NULL, worker, NULL)) return 1;
    char c = 'g';
    for (int phase = 0; phase < 2; phase++) {
        if (write(go[1], &c, 1) != 1) return 1;
        if (read(done[0], &c, 1) != 1) return 1;
        if (phase == 0) {
            atomic_store(&stop, 1);
            pthread_join(s, NULL);
        }
    }
    pthread_join(w, NULL);
    printf("shared %lld %lld\nalone %lld %lld\n", wall[0], cpu[0], wall[1], cpu[1]);
    return 0;
}
