/* variants: one kind of request, with an optional step after every third (tests/tests/variants.rs).
 *
 *   client thread: 60 times: write a 1-byte request to the worker; read its 1-byte reply.
 *   worker thread: 60 times: read a request (serve_request); write the reply (send_reply); after
 *                  a third of them, chosen by a fixed pseudo-random sequence (no period for
 *                  the miner to find), also write a 1-byte log record to the logger (write_log)
 *                  before going back for the next request.
 *   logger thread: read the log records (read_log).
 *
 * A request is the same task whether or not its worker logged after it: the model must have one
 * request type holding all 60, with the logging as a variant of the ones that logged. The
 * program prints how many logged. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define REQUESTS 60

static int req[2], rep[2], logp[2];

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static char byte = 'x';
static int logged[REQUESTS];

/* Each call site in a function of its own, so that every leaf is named by what it does. */
static __attribute__((noinline)) void serve_request(void) { must(read(req[0], &byte, 1) == 1, "read"); }
static __attribute__((noinline)) void send_reply(void) { must(write(rep[1], &byte, 1) == 1, "write"); }
static __attribute__((noinline)) void write_log(void) { must(write(logp[1], &byte, 1) == 1, "write"); }
static __attribute__((noinline)) void read_log(void) { must(read(logp[0], &byte, 1) == 1, "read"); }
static __attribute__((noinline)) void send_request(void) { must(write(req[1], &byte, 1) == 1, "write"); }
static __attribute__((noinline)) void await_reply(void) { must(read(rep[0], &byte, 1) == 1, "read"); }

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < REQUESTS; i++) {
        serve_request();
        send_reply();
        if (logged[i]) {
            write_log();
        }
    }
    return NULL;
}

static void *logger(void *arg) {
    (void)arg;
    for (int i = 0; i < REQUESTS; i++) {
        if (logged[i]) {
            read_log();
        }
    }
    return NULL;
}

int main(void) {
    must(pipe(req) == 0 && pipe(rep) == 0 && pipe(logp) == 0, "pipe");
    unsigned seed = 12345, n = 0;
    for (int i = 0; i < REQUESTS; i++) {
        seed = seed * 1103515245u + 12345u;
        logged[i] = (seed >> 16) % 3 == 0;
        n += logged[i];
    }
    pthread_t w, l;
    must(pthread_create(&w, NULL, worker, NULL) == 0, "pthread_create");
    must(pthread_create(&l, NULL, logger, NULL) == 0, "pthread_create");
    for (int i = 0; i < REQUESTS; i++) {
        send_request();
        await_reply();
        /* Spaced, so that the worker has logged before the next request comes. */
        usleep(2000);
    }
    pthread_join(w, NULL);
    pthread_join(l, NULL);
    printf("logged %u of %d\n", n, REQUESTS);
    return 0;
}
