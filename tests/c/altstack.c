/* A thread whose recorded calls are all made by a signal handler on an alternate signal stack
 * (sigaltstack): the agent cannot take call stacks there, so this thread's events carry none,
 * and the trace must say so rather than leave it unexplained. The signal is sent with a raw
 * tgkill, which the agent does not see, so the thread makes no recorded call of its own.
 *
 * Prints how many locks the handler took. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile int taken;

static void handler(int sig) {
    (void)sig;
    for (int i = 0; i < 100; i++) {
        pthread_mutex_lock(&m);
        taken++;
        pthread_mutex_unlock(&m);
    }
}

static void *work(void *arg) {
    (void)arg;
    stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16};
    sigaltstack(&ss, NULL);
    struct sigaction sa = {.sa_handler = handler, .sa_flags = SA_ONSTACK};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGUSR1);
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    printf("altstack: %d locks taken\n", taken);
    return taken == 100 ? 0 : 1;
}
