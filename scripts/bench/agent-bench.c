/* The agent benchmark's workload: THREADS threads each run ITERS iterations of
 *   mutex: lock + unlock of a thread-private mutex (2 intercepted events), or
 *   pipe:  write 1 byte + read it back on a thread-private pipe (2 intercepted events),
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
static int mode_pipe, naive;
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

/* Descends `d` frames, then runs the loop; the work after the call keeps it from being a tail call. */
__attribute__((noinline)) static void descend(struct span *sp, int d) {
    if (d <= 0) loop(sp);
    else descend(sp, d - 1);
    depth_sink += d;
}

static int depth;

static void *run(void *arg) {
    descend(arg, depth);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: agent-bench mutex|pipe THREADS ITERS [naive DIR]\n");
        return 2;
    }
    mode_pipe = strcmp(argv[1], "pipe") == 0;
    int n = atoi(argv[2]);
    iters = atol(argv[3]);
    if (getenv("BENCH_DEPTH")) depth = atoi(getenv("BENCH_DEPTH"));
    if (argc > 5 && strcmp(argv[4], "naive") == 0) { naive = 1; naive_dir = argv[5]; }
    pthread_t t[64];
    struct span sp[64];
    if (n > 64) n = 64;
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
