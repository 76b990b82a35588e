/* A program that joins its arguments in place into one title, NULs included, as some
 * daemons' setproctitle does (issue 48, item 14): /proc/self/cmdline then runs on into the
 * environment. It keeps making traced calls for 300 ms, so the agent reads its title.
 * Prints "joined"; exits 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

int main(int argc, char **argv) {
    char *end = argv[argc - 1] + strlen(argv[argc - 1]);
    for (char *p = argv[0]; p <= end; p++)
        if (*p == 0)
            *p = ' ';
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 300);
    printf("joined\n");
    return 0;
}
