/* condlock: a lock built from a mutex and a condition, shared by three threads (as CPython's GIL
 * is). Each thread, ROUNDS times: takes the token (waits on the condition while another holds
 * it), works, signals a bookkeeping condition that nobody waits on while it holds the mutex
 * (the GIL's switch condition), lets the token go (signals the condition), and writes a byte to
 * its own pipe, which the main thread reads. The token's hand-overs are lock order, not cause:
 * the graph must show them as waits, and each thread's rounds must not be joined to the others'.
 *
 * With the argument `forced`, the bookkeeping condition is signalled under a mutex of its own
 * as well, and the first thread, whenever it lets the token go while another
 * waits for it, waits on that condition until another thread has taken the token (CPython's
 * forced switch). One thread only, so that the condition is no lock by the rule of three
 * threads alone: its waits are waits for the lock's hand-over all the same, not cause. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef ROUNDS
#define ROUNDS 30
#endif
#define THREADS 3

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t token = PTHREAD_COND_INITIALIZER;
static pthread_cond_t switched = PTHREAD_COND_INITIALIZER;
static int held, waiting, forced;
static long last_holder = -1;
static int pipes[THREADS][2];

static void spin(unsigned n) {
    volatile unsigned x = 0;
    for (unsigned i = 0; i < n; i++) x += i;
}

static void take(int me) {
    pthread_mutex_lock(&m);
    waiting++;
    while (held) pthread_cond_wait(&token, &m);
    waiting--;
    held = 1;
    if (forced) pthread_mutex_lock(&sm);
    last_holder = me;
    pthread_cond_signal(&switched);
    if (forced) pthread_mutex_unlock(&sm);
    pthread_mutex_unlock(&m);
}

/* Lets the token go; with `force`, if another thread wanted it, waits until one has taken it.
 * The switch mutex is taken before the token goes, so that the taker's signal (under it) comes
 * after this wait began. */
static void let_go(int me, int force) {
    pthread_mutex_lock(&m);
    held = 0;
    int wait = force && waiting > 0;
    if (wait) pthread_mutex_lock(&sm);
    pthread_cond_signal(&token);
    pthread_mutex_unlock(&m);
    if (!wait) return;
    while (last_holder == me) pthread_cond_wait(&switched, &sm);
    pthread_mutex_unlock(&sm);
}

static void *worker(void *arg) {
    int me = (int)(long)arg;
    char b = 'x';
    for (int r = 0; r < ROUNDS; r++) {
        take(me);
        spin(200000);
        let_go(me, forced && me == 0);
        if (write(pipes[me][1], &b, 1) != 1) exit(1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    forced = argc > 1 && strcmp(argv[1], "forced") == 0;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pipe(pipes[i]) < 0) return 1;
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    char b;
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < THREADS; i++)
            if (read(pipes[i][0], &b, 1) != 1) return 1;
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    printf("%d rounds on %d threads\n", ROUNDS, THREADS);
    return 0;
}
