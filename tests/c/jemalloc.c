/* Linked with jemalloc, which takes pthread locks inside malloc (and during its own startup,
 * before our constructor). Threads allocate and free while synchronizing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total = 0;

static void *run(void *a) {
    (void)a;
    for (int i = 0; i < 20000; i++) {
        char *p = malloc(16 + (i % 4096));
        p[0] = 1;
        pthread_mutex_lock(&m);
        total += p[0];
        pthread_mutex_unlock(&m);
        free(p);
    }
    return NULL;
}

int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, run, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("jemalloc ok %ld\n", total);
    return total == 80000 ? 0 : 1;
}
