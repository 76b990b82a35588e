/* The agent benchmark's workload: THREADS threads each run ITERS iterations of
 *   mutex: lock + unlock of a thread-private mutex (2 intercepted events), or
 *   pipe:  write 1 byte + read it back on a thread-private pipe (2 intercepted events), or
 *   relay: a turn of a server's worker (2 + 2 * SITES events): the threads pass one token
 *          round a ring of pipes, so one runs at a time and each finds its caches as the
 *          others left them, as a server's many workers do; the thread holding the token
 *          locks and unlocks a mutex from SITES (BENCH_SITES, default 8) call sites, each at
 *          another stack depth, then passes the token on (a write) and waits for it (a read).
 * optionally through a naive recorder (the Scalpel paper's baseline): every event takes one global
 * mutex, finds the thread's FILE* in a shared map, and fwrites a 24-byte record.
 * With BENCH_DEPTH=D in the environment, each thread first descends D nested calls (no frame
 * pointers: build with -fomit-frame-pointer) so that every event has a stack D frames deep.
 * Prints: threads, iterations, wall ns. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long iters;
static int mode_pipe, mode_relay, naive;
static int nthreads, sites = 8;
static int ring[64][2];
static pthread_barrier_t start;

/* --- naive recorder ------------------------------------------------------------------------ */
static pthread_mutex_t naive_lock = PTHREAD_MUTEX_INITIALIZER;
struct slot { pid_t tid; FILE *f; };
static struct slot naive_map[1024];
static const char *naive_dir;

static void naive_record(int op, const void *obj, long result) {
    pid_t tid = (pid_t)syscall(SYS_gettid);
    struct { uint64_t ts; uint64_t obj; int32_t op; int32_t result; } rec;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    rec.ts = (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
    rec.obj = (uintptr_t)obj;
    rec.op = op;
    rec.result = (int32_t)result;
    pthread_mutex_lock(&naive_lock);
    unsigned h = (unsigned)tid * 2654435761u % 1024;
    while (naive_map[h].tid && naive_map[h].tid != tid) h = (h + 1) % 1024;
    if (!naive_map[h].tid) {
        char path[512];
        snprintf(path, sizeof path, "%s/naive-%d.bin", naive_dir, (int)tid);
        naive_map[h].tid = tid;
        naive_map[h].f = fopen(path, "w");
    }
    fwrite(&rec, sizeof rec, 1, naive_map[h].f);
    pthread_mutex_unlock(&naive_lock);
}

/* --- workload ------------------------------------------------------------------------------ */
struct span { struct timespec a, b; };

static void loop(struct span *sp) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    int p[2];
    char c = 'x';
    if (pipe(p) != 0) abort();
    pthread_barrier_wait(&start);
    clock_gettime(CLOCK_MONOTONIC, &sp->a);
    for (long i = 0; i < iters; i++) {
        if (mode_pipe) {
            long w = write(p[1], &c, 1);
            if (naive) naive_record(70, p, w);
            long r = read(p[0], &c, 1);
            if (naive) naive_record(60, p, r);
        } else {
            int a = pthread_mutex_lock(&m);
            if (naive) naive_record(1, &m, a);
            int b = pthread_mutex_unlock(&m);
            if (naive) naive_record(5, &m, b);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &sp->b);
    close(p[0]);
    close(p[1]);
}

volatile int depth_sink;

/* Locks and unlocks `m` `d` frames further down: each call site of the relay at its own depth. */
__attribute__((noinline)) static void site(pthread_mutex_t *m, int d) {
    if (d <= 0) {
        pthread_mutex_lock(m);
        depth_sink++;
        pthread_mutex_unlock(m);
    } else {
        site(m, d - 1);
    }
    depth_sink += d;
}

/* One relay worker: `me` waits for the token on its pipe, works, passes it to the next. */
static void relay(struct span *sp, int me) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    char c = 'x';
    int next = (me + 1) % nthreads;
    pthread_barrier_wait(&start);
    clock_gettime(CLOCK_MONOTONIC, &sp->a);
    if (me == 0 && write(ring[next][1], &c, 1) != 1) abort();
    for (long i = 0; i < iters; i++) {
        if (read(ring[me][0], &c, 1) != 1) abort();
        for (int k = 0; k < sites; k++) site(&m, 3 * k);
        /* The last turn of the last thread keeps the token: no one waits for it. */
        if (!(me == 0 && i == iters - 1) && write(ring[next][1], &c, 1) != 1) abort();
    }
    clock_gettime(CLOCK_MONOTONIC, &sp->b);
}

/* Descends `d` frames, then runs the loop; the work after the call keeps it from being a tail call. */
__attribute__((noinline)) static void descend(struct span *sp, int d) {
    if (d <= 0) loop(sp);
    else descend(sp, d - 1);
    depth_sink += d;
}

static int depth;

static struct span spans[64];

static void *run(void *arg) {
    struct span *sp = arg;
    if (mode_relay) relay(sp, (int)(sp - spans));
    else descend(sp, depth);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: agent-bench mutex|pipe|relay THREADS ITERS [naive DIR]\n");
        return 2;
    }
    mode_pipe = strcmp(argv[1], "pipe") == 0;
    mode_relay = strcmp(argv[1], "relay") == 0;
    if (getenv("BENCH_SITES")) sites = atoi(getenv("BENCH_SITES"));
    int n = atoi(argv[2]);
    iters = atol(argv[3]);
    if (getenv("BENCH_DEPTH")) depth = atoi(getenv("BENCH_DEPTH"));
    if (argc > 5 && strcmp(argv[4], "naive") == 0) { naive = 1; naive_dir = argv[5]; }
    pthread_t t[64];
    struct span *sp = spans;
    if (n > 64) n = 64;
    nthreads = n;
    for (int i = 0; mode_relay && i < n; i++)
        if (pipe(ring[i]) != 0) abort();
    pthread_barrier_init(&start, NULL, n);
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, run, &sp[i]);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    /* Wall time from the first thread's start to the last thread's end. */
    long long first = -1, last = 0;
    for (int i = 0; i < n; i++) {
        long long a = sp[i].a.tv_sec * 1000000000LL + sp[i].a.tv_nsec;
        long long b = sp[i].b.tv_sec * 1000000000LL + sp[i].b.tv_nsec;
        if (first < 0 || a < first) first = a;
        if (b > last) last = b;
    }
    long long ns = last - first;
    getrusage(RUSAGE_SELF, &after);
    /* The process's own page faults while its threads ran (the recorder's are not in them):
     * the bytes section divides them by the trace pages written. */
    fprintf(stderr, "host minor faults: %ld\n", after.ru_minflt - before.ru_minflt);
    printf("%d %ld %lld\n", n, iters, ns);
    return 0;
}
