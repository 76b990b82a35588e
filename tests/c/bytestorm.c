/* A pipe written one byte at a time (100,000 times, or argv[1]), and read 4 KiB at a time: a clean
 * recording whose causal graph has paths as long as the writes (every read is fed by the
 * thousands of writes before it, each write follows the last in program order). Analyses that
 * recurse along paths overflow their stack on it.
 *
 * With argv[2] = N, the reader pauses 2 ms after every N reads, so that the writer runs ahead and
 * one read takes the bytes of a thousand writes: the recording then has long runs of writes
 * that feed one read between runs of writes that each feed their own.
 *
 * Prints the bytes the reader took. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int fds[2];
static long writes = 100000;
static long period = 0;

static void *writer(void *arg) {
    (void)arg;
    for (long i = 0; i < writes; i++) {
        if (write(fds[1], "x", 1) != 1) {
            perror("write");
            exit(1);
        }
    }
    close(fds[1]);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        writes = atol(argv[1]);
    if (argc > 2)
        period = atol(argv[2]);
    if (pipe(fds) != 0) {
        perror("pipe");
        return 1;
    }
    pthread_t w;
    pthread_create(&w, NULL, writer, NULL);
    char buf[4096];
    long total = 0;
    ssize_t n;
    long reads = 0;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) {
        total += n;
        if (period > 0 && ++reads % period == 0)
            usleep(2000);
    }
    pthread_join(w, NULL);
    printf("bytestorm: read %ld bytes\n", total);
    return total == writes ? 0 : 1;
}
