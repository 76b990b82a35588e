/* Threads that lock from more call sites at one stack depth than a set of the agent's stack
 * cache holds, all at once: the cache's entries are rewritten while other threads read them.
 * Each site has its own mutex, which names the site in the trace.
 *
 *   stackrace       THREADS threads, ROUNDS rounds each over every site, each thread in its
 *                   own order; prints "site J ADDR" for every site */
#include <pthread.h>
#include <stdio.h>

#define SITES 40
#define THREADS 4
#define ROUNDS 100

static pthread_mutex_t m[SITES];

/* The asm comment differs per case, so the compiler cannot merge the cases into one call; the
 * comment after the unlock keeps it from being a tail call. */
#define CASE(k)                                                                                  \
    case k:                                                                                      \
        pthread_mutex_lock(&m[k]);                                                               \
        __asm__ volatile("# lock " #k ::: "memory");                                             \
        pthread_mutex_unlock(&m[k]);                                                             \
        __asm__ volatile("# unlock " #k ::: "memory");                                           \
        break;

__attribute__((noinline)) static void at(int j) {
    switch (j) {
        CASE(0) CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7)
        CASE(8) CASE(9) CASE(10) CASE(11) CASE(12) CASE(13) CASE(14) CASE(15)
        CASE(16) CASE(17) CASE(18) CASE(19) CASE(20) CASE(21) CASE(22) CASE(23)
        CASE(24) CASE(25) CASE(26) CASE(27) CASE(28) CASE(29) CASE(30) CASE(31)
        CASE(32) CASE(33) CASE(34) CASE(35) CASE(36) CASE(37) CASE(38) CASE(39)
    }
}

static pthread_barrier_t go;

static void *visit(void *arg) {
    long t = (long)arg;
    pthread_barrier_wait(&go);
    for (int r = 0; r < ROUNDS; r++) {
        for (int j = 0; j < SITES; j++) {
            at((int)((j * (2 * t + 1) + 7 * t + r) % SITES));
        }
    }
    return NULL;
}

int main(void) {
    pthread_t th[THREADS];
    for (int j = 0; j < SITES; j++) {
        pthread_mutex_init(&m[j], NULL);
    }
    pthread_barrier_init(&go, NULL, THREADS);
    for (long t = 0; t < THREADS; t++) {
        if (pthread_create(&th[t], NULL, visit, (void *)t) != 0) return 1;
    }
    for (long t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
    }
    for (int j = 0; j < SITES; j++) {
        printf("site%d addr %lu\n", j, (unsigned long)&m[j]);
    }
    return 0;
}
