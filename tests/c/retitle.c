/* A process that renames itself by overwriting argv, as PostgreSQL and nginx do: it serves as
 * "retitle: serving requests" for about 400 ms, then as "retitle: shutting down" for about
 * 80 ms before it exits (tests/tests/lifecycle.rs). A reader should name it by the title it
 * held longest, not by the last one.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Synchronization calls for `ms` milliseconds: the agent looks at the title every 16th event. */
static void work(long ms) {
    long end = now_ms() + ms;
    while (now_ms() < end) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

/* Overwrites the argument area with `title` (what /proc/self/cmdline shows). */
static void set_title(char **argv, size_t room, const char *title) {
    memset(argv[0], 0, room);
    strncpy(argv[0], title, room - 1);
}

int main(int argc, char **argv) {
    (void)argc;
    /* argv strings are contiguous: the room runs to the end of the last one. */
    size_t room = strlen(argv[argc - 1]) + (size_t)(argv[argc - 1] - argv[0]) + 1;
    set_title(argv, room, "retitle: serving requests");
    work(400);
    set_title(argv, room, "retitle: shutting down");
    work(80);
    return 0;
}
