/* Runs traced work until killed; prints its pid first so the test can SIGKILL it. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *spin(void *a) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    int p[2];
    char c;
    (void)a;
    pipe(p);
    for (;;) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
        write(p[1], "k", 1);
        read(p[0], &c, 1);
    }
    return NULL;
}

int main(void) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, spin, NULL);
    printf("%d\n", (int)getpid());
    fflush(stdout);
    pause();
    return 0;
}
