/* N threads x M iterations of lock+unlock on a per-thread mutex: 2*N*M events, none may be lost.
 * Usage: stress THREADS ITERATIONS [shared] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long iters;
static int shared;
static pthread_mutex_t common = PTHREAD_MUTEX_INITIALIZER;

static void *run(void *a) {
    pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_t *m = shared ? &common : &own;
    volatile long sink = 0;
    for (long i = 0; i < iters; i++) {
        pthread_mutex_lock(m);
        sink += i;
        pthread_mutex_unlock(m);
    }
    (void)a;
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 8;
    iters = argc > 2 ? atol(argv[2]) : 100000;
    shared = argc > 3 && strcmp(argv[3], "shared") == 0;
    pthread_t t[256];
    if (n > 256) n = 256;
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, run, NULL);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    printf("stress ok %d %ld\n", n, iters);
    return 0;
}
