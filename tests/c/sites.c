/* One function that locks and unlocks a mutex from SITES call sites, all at the same stack
 * depth, in rounds: every hook call of a round starts at the same stack pointer, so the
 * agent's stack cache keeps all of them in one set, told apart only by the program's own
 * return addresses. Each site has its own mutex, which names the site in the trace.
 *
 * With the argument "threads", THREADS threads instead visit every site once each, one thread
 * after another and each in its own order: the stacks the first one met are the same for the
 * others at the same depths below their stack tops.
 *
 * Prints "site J ADDR" for every site. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define SITES 12
#define ROUNDS 50
#define THREADS 4

static pthread_mutex_t m[SITES];

/* The asm comment differs per case, so the compiler cannot merge the cases into one call. */
#define CASE(k)                                                                                  \
    case k:                                                                                      \
        pthread_mutex_lock(&m[k]);                                                               \
        __asm__ volatile("# site " #k ::: "memory");                                             \
        pthread_mutex_unlock(&m[k]);                                                             \
        break;

__attribute__((noinline)) static void at(int j) {
    switch (j) {
        CASE(0) CASE(1) CASE(2) CASE(3) CASE(4) CASE(5)
        CASE(6) CASE(7) CASE(8) CASE(9) CASE(10) CASE(11)
    }
}

static void *visit(void *arg) {
    long t = (long)arg;
    for (int j = 0; j < SITES; j++) {
        at((int)((j + 5 * t) % SITES));
    }
    return NULL;
}

int main(int argc, char **argv) {
    for (int j = 0; j < SITES; j++) {
        pthread_mutex_init(&m[j], NULL);
    }
    if (argc > 1 && strcmp(argv[1], "threads") == 0) {
        for (long t = 0; t < THREADS; t++) {
            pthread_t th;
            if (pthread_create(&th, NULL, visit, (void *)t) != 0 || pthread_join(th, NULL) != 0) {
                return 1;
            }
        }
    } else {
        for (int r = 0; r < ROUNDS; r++) {
            for (int j = 0; j < SITES; j++) {
                at(j);
            }
        }
    }
    for (int j = 0; j < SITES; j++) {
        printf("site%d addr %lu\n", j, (unsigned long)&m[j]);
    }
    return 0;
}
