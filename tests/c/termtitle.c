/* A program whose names carry terminal escape sequences (tests/tests/attack_readers.rs): it
 * retitles itself by overwriting argv with an OSC 52 clipboard write and a screen clear, and
 * names its worker thread with an OSC 52 sequence (prctl, 15 bytes at most). The two threads
 * hand a byte back and forth over pipes, so the trace has leaves, edges and waits to show.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];

static void *worker(void *a) {
    prctl(PR_SET_NAME, "\033]52;c;aGk=\007", 0, 0, 0);
    char c;
    while (read(ping[0], &c, 1) == 1 && c != 'q') {
        struct timespec ts = {0, 300000};
        nanosleep(&ts, NULL);
        if (write(pong[1], &c, 1) != 1) break;
    }
    return a;
}

int main(int argc, char **argv) {
    size_t room = strlen(argv[argc - 1]) + (size_t)(argv[argc - 1] - argv[0]) + 1;
    memset(argv[0], 0, room);
    strncpy(argv[0], "\033]52;c;aGk=\007\033[2J", room - 1);
    prctl(PR_SET_NAME, "\033]0;pwned\007", 0, 0, 0);
    if (pipe(ping) || pipe(pong)) return 1;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    for (int i = 0; i < 60; i++) {
        char c = 'x';
        if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) return 1;
    }
    char q = 'q';
    if (write(ping[1], &q, 1) != 1) return 1;
    pthread_join(t, NULL);
    return 0;
}
