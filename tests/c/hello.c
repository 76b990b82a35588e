/* Linked statically in one test: LD_PRELOAD cannot apply, and the program must run unharmed. */
#include <pthread.h>
#include <stdio.h>
static void *run(void *a) { return a; }
int main(void) {
    pthread_t t;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    pthread_create(&t, NULL, run, NULL);
    pthread_join(t, NULL);
    printf("hello ok\n");
    return 3;
}
