/* 40 threads alive at once under a limit of 16 descriptors: the agent needs one per live
 * thread for its trace file, so some threads cannot get one. The program itself needs no
 * descriptor and must run unharmed.
 *
 * Prints the threads it ran. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>

#define THREADS 40

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t all_alive;
static int ran;

static void *work(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m); /* the thread's first recorded call: it asks for a file here */
    ran++;
    pthread_mutex_unlock(&m);
    pthread_barrier_wait(&all_alive);
    return NULL;
}

int main(void) {
    struct rlimit r = {16, 16};
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) {
        perror("setrlimit");
        return 1;
    }
    pthread_barrier_init(&all_alive, NULL, THREADS);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("fdlimit: %d threads ran\n", ran);
    return ran == THREADS ? 0 : 1;
}
