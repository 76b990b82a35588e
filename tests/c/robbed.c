/* A reader robbed of the bytes it was woken for, as a queue socket's consumers are on a busy
 * machine.
 *
 * `main` writes 8-byte tokens into a socketpair that two threads read. `sleeper` shares a CPU
 * with main and runs SCHED_IDLE, so its wake-up never preempts main; `robber` runs on another
 * CPU. Each round:
 *   1. main sleeps 2 ms, in which sleeper gets into its read and blocks;
 *   2. main writes token 2r, raises `go` and spins (keeping its CPU) until robber has read;
 *   3. robber, spinning on `go`, reads at once and takes token 2r: sleeper was woken by the
 *      write but has had no CPU to take it;
 *   4. main sleeps 2 ms (sleeper finds nothing and sleeps on), writes token 2r + 1, which
 *      sleeper takes, and waits for it to have done so.
 * Scheduling may still let sleeper take the first token (robber then takes the second, or a
 * later one): robber reads once per round and sleeper the rest, each records the tokens it
 * got, and main prints both lists and how many rounds were robbed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#define ROUNDS 30

static int sv[2];
/* Rounds released to robber, reads robber has made, tokens taken by either. */
static int go, robber_done, taken;
static int cpus[2];
static uint64_t got[2][ROUNDS];

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    must(sched_setaffinity(0, sizeof set, &set) == 0, "sched_setaffinity");
}

static void pause_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t take(void) {
    uint64_t t;
    must(read(sv[1], &t, sizeof t) == sizeof t, "read token");
    return t;
}

static void *sleeper(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "sleeper");
    pin(cpus[0]);
    struct sched_param p = {0};
    must(sched_setscheduler(0, SCHED_IDLE, &p) == 0, "SCHED_IDLE");
    for (int r = 0; r < ROUNDS; r++) {
        got[0][r] = take();
        __atomic_fetch_add(&taken, 1, __ATOMIC_ACQ_REL);
    }
    return NULL;
}

static void *robber(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "robber");
    pin(cpus[1]);
    for (int r = 0; r < ROUNDS; r++) {
        while (__atomic_load_n(&go, __ATOMIC_ACQUIRE) < r + 1)
            ;
        got[1][r] = take();
        __atomic_fetch_add(&taken, 1, __ATOMIC_ACQ_REL);
        __atomic_store_n(&robber_done, r + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void put(uint64_t t) {
    must(write(sv[0], &t, sizeof t) == sizeof t, "write token");
}

int main(void) {
    cpu_set_t set;
    must(sched_getaffinity(0, sizeof set, &set) == 0, "sched_getaffinity");
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    if (n < 2) {
        fprintf(stderr, "robbed: needs two CPUs, has %d\n", n);
        return 2;
    }
    must(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    pin(cpus[0]);
    pthread_t s, r;
    must(pthread_create(&s, NULL, sleeper, NULL) == 0, "create");
    must(pthread_create(&r, NULL, robber, NULL) == 0, "create");
    for (int k = 0; k < ROUNDS; k++) {
        pause_ms(2);
        put(2 * (uint64_t)k);
        __atomic_store_n(&go, k + 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(&robber_done, __ATOMIC_ACQUIRE) < k + 1 &&
               __atomic_load_n(&taken, __ATOMIC_ACQUIRE) < 2 * k + 1)
            ;
        pause_ms(2);
        put(2 * (uint64_t)k + 1);
        while (__atomic_load_n(&taken, __ATOMIC_ACQUIRE) < 2 * k + 2)
            pause_ms(1);
    }
    pthread_join(s, NULL);
    pthread_join(r, NULL);
    int robbed = 0;
    for (int k = 0; k < ROUNDS; k++)
        robbed += got[1][k] == 2 * (uint64_t)k;
    const char *names[2] = {"sleeper", "robber"};
    for (int i = 0; i < 2; i++) {
        printf("%s:", names[i]);
        for (int k = 0; k < ROUNDS; k++)
            printf(" %llu", (unsigned long long)got[i][k]);
        printf("\n");
    }
    printf("robbed %d of %d\n", robbed, ROUNDS);
    return 0;
}
