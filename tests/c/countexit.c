/* Counts a thread never wrote out, under `scalpel record --locks count`: the agent keeps them in
 * the thread file's header, where the reader finds them. A worker takes its own mutex 1000
 * times (every pair uncontended, so only counted), tells main through a pipe and blocks in
 * read(2) for good; main takes its own 700 times and ends the process, by exit(3) or by a
 * SIGKILL to itself (argv[1]: exit or kill). Exiting, the worker never writes its counts out;
 * killed, neither thread does. Prints the mutexes' addresses:
 *   mutexes worker A main B
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t worker_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t main_mutex = PTHREAD_MUTEX_INITIALIZER;
static int ready[2], never[2];
static long taken;

static void *worker(void *a) {
    (void)a;
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&worker_mutex);
        taken++;
        pthread_mutex_unlock(&worker_mutex);
    }
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) abort();
    /* Nobody writes here: the thread is still blocked when the process ends. */
    if (read(never[0], &c, 1) < 0) abort();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2 || (strcmp(argv[1], "exit") != 0 && strcmp(argv[1], "kill") != 0)) {
        fprintf(stderr, "usage: countexit exit|kill\n");
        return 2;
    }
    if (pipe(ready) != 0 || pipe(never) != 0) abort();
    printf("mutexes worker %lu main %lu\n", (unsigned long)&worker_mutex,
           (unsigned long)&main_mutex);
    fflush(stdout);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) abort();
    char c;
    if (read(ready[0], &c, 1) != 1) abort();
    for (int i = 0; i < 700; i++) {
        pthread_mutex_lock(&main_mutex);
        taken++;
        pthread_mutex_unlock(&main_mutex);
    }
    if (strcmp(argv[1], "kill") == 0) kill(getpid(), SIGKILL);
    exit(0);
}
