/* renamed: threads that name themselves after they started, then a SIGKILL before any clean exit.
 * The main thread uses prctl(PR_SET_NAME), a second thread pthread_setname_np on itself; both make
 * a recorded call after renaming, and then the process kills itself. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;
static int ready;

static void *worker(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "worker-renamed");
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    pthread_mutex_lock(&ready_lock);
    ready = 1;
    pthread_cond_signal(&ready_cond);
    pthread_mutex_unlock(&ready_lock);
    for (;;) pause();
    return NULL;
}

int main(void) {
    prctl(PR_SET_NAME, "main-renamed", 0, 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_mutex_lock(&ready_lock);
    while (!ready) pthread_cond_wait(&ready_cond, &ready_lock);
    pthread_mutex_unlock(&ready_lock);
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    raise(SIGKILL);
    return 0;
}
