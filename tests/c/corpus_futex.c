/* Futex words used as notifications, not as locks, for the golden corpus (tests/corpus/futex):
 * the graph's futex edges (`graph::notify::futex`) go from a wake to the wait it released.
 *
 * Main and a worker play ping-pong ROUNDS times through two generation words: main bumps
 * `ping` and wakes it, the worker (waiting on `ping` with the old generation as the expected
 * value) bumps `pong` and wakes it, main waits on `pong`. The expected values are 0, 1, 2 ...,
 * so the words are not taken for locks (whose every wait expects 2). Main sleeps 1 ms before
 * each ping so the worker is usually asleep in its wait. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef ROUNDS
#define ROUNDS 12
#endif

static _Atomic int ping = 0, pong = 0;

static void fwait(_Atomic int *w, int expected) {
    syscall(SYS_futex, (int *)w, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void fwake(_Atomic int *w) {
    syscall(SYS_futex, (int *)w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *worker(void *a) {
    (void)a;
    for (int i = 0; i < ROUNDS; i++) {
        while (atomic_load(&ping) == i) fwait(&ping, i);
        atomic_store(&pong, i + 1);
        fwake(&pong);
    }
    return NULL;
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL)) return 1;
    for (int i = 0; i < ROUNDS; i++) {
        usleep(1000);
        atomic_store(&ping, i + 1);
        fwake(&ping);
        while (atomic_load(&pong) == i) fwait(&pong, i);
    }
    pthread_join(t, NULL);
    printf("futex rounds %d\n", ROUNDS);
    return 0;
}
