/* The self-pipe trick under a fast timer (issue 48, item 1). A SIGALRM handler writes one byte
 * to the pipe that the interrupted loop also writes, as libevent, libuv and glib do; the loop
 * makes a fresh pipe every few rounds, so the handler often lands while the interrupted code
 * is the first to use it.
 *
 *   selfpipe HZ ROUNDS [calls]
 *
 * HZ is the timer's rate; the loop makes ROUNDS rounds of work. With "calls", the handler
 * also makes traced calls of its own (an eventfd written and read) on every signal.
 * Prints the rounds made and whether every byte was accounted for; exits 0. On stderr, the
 * loop's own time ("selfpipe took N us"), which leaves out the recorder's start and end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int wfd = -1;
static volatile sig_atomic_t handler_bytes;
static int handler_calls;
static int efd = -1;

static void on_alarm(int sig) {
    (void)sig;
    int saved = errno;
    int fd = wfd;
    if (fd >= 0 && write(fd, "s", 1) == 1)
        handler_bytes++;
    if (handler_calls) {
        unsigned long long v = 1;
        if (write(efd, &v, sizeof v) == sizeof v)
            (void)!read(efd, &v, sizeof v);
    }
    errno = saved;
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    long hz = atol(argv[1]), rounds = atol(argv[2]);
    handler_calls = argc > 3 && strcmp(argv[3], "calls") == 0;
    efd = eventfd(0, EFD_NONBLOCK);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 1000000 / hz}, {0, 1000000 / hz}};
    setitimer(ITIMER_REAL, &it, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long written = 0, got = 0;
    char buf[4096];
    for (long i = 0; i < rounds; i++) {
        int p[2];
        if (pipe2(p, O_NONBLOCK) != 0)
            return 1;
        wfd = p[1];
        for (int k = 0; k < 8; k++) {
            if (write(p[1], "m", 1) == 1)
                written++;
            ssize_t n;
            while ((n = read(p[0], buf, sizeof buf)) > 0)
                got += n;
        }
        wfd = -1;
        ssize_t n;
        while ((n = read(p[0], buf, sizeof buf)) > 0)
            got += n;
        close(p[0]);
        close(p[1]);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "selfpipe took %ld us\n",
            (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000);
    /* Bytes the handler wrote land in whichever pipe was current: counted on read. */
    printf("rounds %ld balanced %d\n", rounds, got == written + handler_bytes);
    return 0;
}
