/* wakeups: ground truth for the hand-offs real servers make that no read or wait names directly.
 *
 * `wakeups [--items N]` (N = 200 by default) runs these parts at once and records which call
 * caused which (samples/TRUTH.md, "Causal edges"):
 *   1. readiness (nginx's thread pool): an event-loop thread hands job k to a pool of two threads
 *      through a mutex+condvar queue; the pool thread that takes it pushes the result onto a done
 *      list and writes 1 to an eventfd that the loop watches with edge-triggered epoll and never
 *      reads. One job is in flight at a time, so the eventfd write of job k is reported by exactly
 *      one epoll_wait: the first one of the loop that returns after it. Edge "ready": the pool
 *      thread's write #w -> the loop's epoll_wait #m.
 *
 * Ordinals ("n") count every call of an op by one thread, in call order, from 0, whatever the
 * call returned. Edge lines are written by the main thread once everything is joined. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "truth.h"

#define POOL 2

static int items = 200;
static int pid;

static void fail(const char *what) {
    fprintf(stderr, "wakeups: %s failed: %s\n", what, strerror(errno));
    exit(1);
}

static int gettid_(void) { return (int)syscall(SYS_gettid); }

/* ---- 1. Readiness: an eventfd completion reported by edge-triggered epoll. ---- */

static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_cond = PTHREAD_COND_INITIALIZER;
static int jobs_next = -1; /* the job waiting to be taken, or -1 */
static int jobs_done = 0;  /* set when the loop stops */

static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static int done_count = 0;
static int efd = -1;

/* Per job: the pool thread that wrote its completion, that write's ordinal, and the loop's
 * epoll_wait ordinal that reported it. */
struct completion {
    int tid;
    int64_t write_n;
    int64_t wait_n;
};
static struct completion *completions;
static int loop_tid;

/* A tag the loop registers as the eventfd's user data: a pointer, as nginx registers its
 * connection objects. */
static int efd_tag;

static void *pool_thread(void *arg) {
    (void)arg;
    int tid = gettid_();
    int64_t writes = 0;
    for (;;) {
        pthread_mutex_lock(&jobs_lock);
        while (jobs_next < 0 && !jobs_done) pthread_cond_wait(&jobs_cond, &jobs_lock);
        if (jobs_next < 0) {
            pthread_mutex_unlock(&jobs_lock);
            return NULL;
        }
        int k = jobs_next;
        jobs_next = -1;
        pthread_mutex_unlock(&jobs_lock);
        /* The job's work: a little computation. */
        volatile uint64_t x = (uint64_t)k;
        for (int i = 0; i < 20000; i++) x = x * 6364136223846793005ULL + 1;
        completions[k].tid = tid;
        completions[k].write_n = writes;
        pthread_mutex_lock(&done_lock);
        done_count = k + 1;
        pthread_mutex_unlock(&done_lock);
        uint64_t one = 1;
        writes++;
        if (write(efd, &one, sizeof one) != sizeof one) fail("eventfd write");
    }
}

static void *loop_thread(void *arg) {
    (void)arg;
    loop_tid = gettid_();
    int ep = epoll_create1(0);
    if (ep < 0) fail("epoll_create1");
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.ptr = &efd_tag};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev)) fail("epoll_ctl");
    int64_t waits = 0;
    for (int k = 0; k < items; k++) {
        pthread_mutex_lock(&jobs_lock);
        jobs_next = k;
        pthread_cond_signal(&jobs_cond);
        pthread_mutex_unlock(&jobs_lock);
        for (;;) {
            struct epoll_event got[4];
            int n = epoll_wait(ep, got, 4, -1);
            int64_t m = waits++;
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail("epoll_wait");
            int reported = 0;
            for (int i = 0; i < n; i++) reported |= got[i].data.ptr == &efd_tag;
            if (!reported) continue;
            pthread_mutex_lock(&done_lock);
            int finished = done_count > k;
            pthread_mutex_unlock(&done_lock);
            if (!finished) fail("a report without its completion");
            completions[k].wait_n = m;
            break;
        }
    }
    pthread_mutex_lock(&jobs_lock);
    jobs_done = 1;
    pthread_cond_broadcast(&jobs_cond);
    pthread_mutex_unlock(&jobs_lock);
    close(ep);
    return NULL;
}

int wakeups_main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--items") && i + 1 < argc) {
            items = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: wakeups [--items N]\n");
            return 1;
        }
    }
    if (items < 1) { fprintf(stderr, "wakeups: --items must be at least 1\n"); return 1; }
    truth_open("wakeups");
    pid = getpid();
    completions = calloc((size_t)items, sizeof *completions);
    if (!completions) fail("calloc");
    efd = eventfd(0, EFD_NONBLOCK);
    if (efd < 0) fail("eventfd");

    pthread_t loop, pool[POOL];
    for (int i = 0; i < POOL; i++)
        if (pthread_create(&pool[i], NULL, pool_thread, NULL)) fail("pthread_create");
    if (pthread_create(&loop, NULL, loop_thread, NULL)) fail("pthread_create");
    pthread_join(loop, NULL);
    for (int i = 0; i < POOL; i++) pthread_join(pool[i], NULL);

    for (int k = 0; k < items; k++) {
        struct completion *c = &completions[k];
        truth_edge("ready", (struct truth_at){pid, c->tid, "write", c->write_n},
                   (struct truth_at){pid, loop_tid, "epoll_wait", c->wait_n});
    }
    printf("wakeups: %d jobs\n", items);
    return 0;
}
