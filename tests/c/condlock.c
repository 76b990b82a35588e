/* condlock: a lock built from a mutex and a condition, shared by three threads (as CPython's GIL
 * is). Each thread, ROUNDS times: takes the token (waits on the condition while another holds
 * it), works, signals a bookkeeping condition that nobody waits on while it holds the mutex
 * (the GIL's switch condition), lets the token go (signals the condition), and writes a byte to
 * its own pipe, which the main thread reads. The token's hand-overs are lock order, not cause:
 * the graph must show them as waits, and each thread's rounds must not be joined to the others'. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef ROUNDS
#define ROUNDS 30
#endif
#define THREADS 3

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t token = PTHREAD_COND_INITIALIZER;
static pthread_cond_t switched = PTHREAD_COND_INITIALIZER;
static int held;
static int pipes[THREADS][2];

static void spin(unsigned n) {
    volatile unsigned x = 0;
    for (unsigned i = 0; i < n; i++) x += i;
}

static void *worker(void *arg) {
    int me = (int)(long)arg;
    char b = 'x';
    for (int r = 0; r < ROUNDS; r++) {
        pthread_mutex_lock(&m);
        while (held) pthread_cond_wait(&token, &m);
        held = 1;
        pthread_cond_signal(&switched);
        pthread_mutex_unlock(&m);
        spin(200000);
        pthread_mutex_lock(&m);
        held = 0;
        pthread_cond_signal(&token);
        pthread_mutex_unlock(&m);
        if (write(pipes[me][1], &b, 1) != 1) exit(1);
    }
    return NULL;
}

int main(void) {
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
