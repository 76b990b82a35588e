/* Signals that end a blocking call, for the golden corpus (tests/corpus/signals): the graph's
 * signal edges (`graph::signals`) go from the send to the target's next return from a
 * blocking call.
 *
 * A worker thread, ROUNDS times: writes one byte to `ack` (main's cue), then blocks in a poll
 * of a pipe nobody writes; the SIGUSR1 handler (installed without SA_RESTART) makes that poll
 * fail with EINTR (a failed read would cut no leaf; a readiness wait does). Main reads each
 * cue, sleeps 2 ms so the worker is in its poll, and sends the signal: thread-directed
 * (pthread_kill) on even rounds, process-directed (kill) on odd ones, which only the worker
 * can take (main blocks SIGUSR1). */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef ROUNDS
#define ROUNDS 12
#endif

static int ack[2], never[2];
static volatile sig_atomic_t hits = 0;

static void on_usr1(int sig) {
    (void)sig;
    hits++;
}

static void *worker(void *a) {
    char c = 'x';
    (void)a;
    for (int i = 0; i < ROUNDS; i++) {
        if (write(ack[1], &c, 1) != 1) return NULL;
        struct pollfd p = { never[0], POLLIN, 0 };
        if (poll(&p, 1, -1) >= 0) return NULL;
    }
    return NULL;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    if (pipe(ack) || pipe(never)) return 1;
    /* Main takes no process-directed signal: it blocks SIGUSR1 before the worker starts,
     * and the worker unblocks it for itself. */
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL)) return 1;
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    char c;
    for (int i = 0; i < ROUNDS; i++) {
        if (read(ack[0], &c, 1) != 1) return 1;
        usleep(2000);
        if (i % 2 == 0)
            pthread_kill(t, SIGUSR1);
        else
            kill(getpid(), SIGUSR1);
    }
    pthread_join(t, NULL);
    printf("signals %d\n", (int)hits);
    return hits == ROUNDS ? 0 : 2;
}
