/* 40 threads alive at once under a limit of 16 descriptors. The agent holds no descriptor for a
 * thread's trace file, so every thread is recorded and the program's own pipe() calls (made
 * after all threads are alive, one at a time) never fail; an agent that kept one descriptor per
 * live thread ran out and made them fail with EMFILE.
 *
 * With the argument "fill", the program first uses up every descriptor the limit allows, so its
 * threads cannot get trace files at all (the agent must count them, not hide them).
 *
 * Prints the threads it ran and how many pipe() calls failed. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define THREADS 40

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t all_alive;
static int ran, pipe_failures, fill;

static void *work(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m); /* the thread's first recorded call: it asks for a file here */
    ran++;
    pthread_mutex_unlock(&m);
    pthread_barrier_wait(&all_alive);
    if (!fill) {
        pthread_mutex_lock(&m);
        int p[2];
        if (pipe(p) != 0)
            pipe_failures++;
        else {
            close(p[0]);
            close(p[1]);
        }
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

int main(int argc, char **argv) {
    fill = argc > 1 && strcmp(argv[1], "fill") == 0;
    struct rlimit r = {16, 16};
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) {
        perror("setrlimit");
        return 1;
    }
    pthread_barrier_init(&all_alive, NULL, THREADS);
    if (fill)
        while (open("/dev/null", O_RDONLY) >= 0)
            ;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("fdlimit: %d threads ran, %d pipe failures\n", ran, pipe_failures);
    return ran == THREADS && pipe_failures == 0 ? 0 : 1;
}
