/* metrics: a program whose leaf metrics can be worked out by hand (tests/tests/rollup.rs).
 *
 *   holder thread: lock m; sleep 30 ms; unlock m; sleep 20 ms; write 100 bytes to a pipe.
 *   main thread:   start holder; sleep 5 ms; lock m (waits ~25 ms for holder); unlock m;
 *                  read the 100 bytes (waits ~20 ms); write 10 bytes to a file; join holder. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int p[2];

static __attribute__((noinline)) void hold_and_send(void) {
    pthread_mutex_lock(&m);
    usleep(30000);
    pthread_mutex_unlock(&m);
    usleep(20000);
    char buf[100];
    memset(buf, 'x', sizeof buf);
    if (write(p[1], buf, sizeof buf) != sizeof buf) abort();
}

static void *holder(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "holder");
    hold_and_send();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (pipe(p)) return 1;
    int f = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (f < 0) return 1;
    pthread_t t;
    if (pthread_create(&t, NULL, holder, NULL)) return 1;
    usleep(5000);
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    char buf[100];
    size_t got = 0;
    while (got < sizeof buf) {
        ssize_t n = read(p[0], buf + got, sizeof buf - got);
        if (n <= 0) return 1;
        got += (size_t)n;
    }
    if (write(f, buf, 10) != 10) return 1;
    pthread_join(t, NULL);
    close(f);
    printf("metrics: done\n");
    return 0;
}
