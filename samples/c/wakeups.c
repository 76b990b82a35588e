/* wakeups: ground truth for the hand-offs real servers make that no read or wait names directly.
 *
 * `wakeups [--items N]` (N = 200 by default) runs these parts at once and records which call
 * caused which (samples/TRUTH.md, "Causal edges"):
 *   1. readiness (nginx's thread pool): an event-loop thread hands job k to a pool of two threads
 *      through a mutex+condvar queue; the pool thread that takes it pushes the result onto a done
 *      list and writes 1 to an eventfd that the loop watches with edge-triggered epoll and never
 *      reads. One job is in flight at a time, so the eventfd write of job k is reported by exactly
 *      one epoll_wait: the first one of the loop that returns after it. Edge "ready": the pool
 *      thread's write #w -> the loop's epoll_wait #m. The jobs queue is a queue under a mutex
 *      too: a job the pool thread found without waiting is an edge "queue" from the loop's
 *      cond_signal #k that put it to the pool thread's leaf in which it took the job, which
 *      began at its previous eventfd write.
 *   2. a flooded queue (a producer far faster than its consumers): the producer pushes N items
 *      onto a queue under a mutex with "not empty" and "not full" conditions (room for all N, so
 *      it never waits) and signals "not empty" once per item; two consumers take items, waiting
 *      only while the queue is empty (at the start and for the shutdown broadcast), signal
 *      "not full", unlock, then work on the item and count it under a statistics lock. A noise
 *      thread peeks at the queue's length under its mutex and takes the statistics lock, and
 *      hands nothing to anyone. Edge "queue", for every item its consumer took without waiting:
 *      the producer's cond_signal #s that put it -> the leaf in which the consumer popped it,
 *      which began at the consumer's previous cond_signal (its "not full" signal after the item
 *      before, or its start signal to the producer).
 *   3. signals: a sleeper thread waits N times in ppoll on a pipe nobody writes, with SIGUSR1 and
 *      SIGUSR2 blocked except inside ppoll; a signaller wakes it each time, alternately with
 *      pthread_kill(SIGUSR1) and a process-directed kill(SIGUSR2) (every other thread blocks
 *      SIGUSR2, so only the sleeper can take it). A signal sent before the sleeper reaches ppoll
 *      stays pending and ends the ppoll as it begins. Edge "signal": the signaller's
 *      pthread_kill #j or kill #j -> the sleeper's ppoll #k that the signal ended.
 *   4. storage: a writer thread writes 4 KiB to a temporary file and fdatasyncs it N/10 times
 *      (no edge: the tests check that the time shows as an `io` wait at its call site).
 *   5. a stolen wakeup (nginx's thread pool, where a pool thread that did not wait can pop the
 *      job whose signal woke another): a poster puts N jobs onto a queue under a mutex and
 *      signals "has jobs" once per job. Taker A waits whenever the queue is empty; taker B is
 *      let go once per round and blocks on the mutex while the poster holds it, so that it pops
 *      the job whose signal woke A. A then pops the round's second job (odd rounds) or waits
 *      again (even rounds). Edges, per job: "cond" from the poster's cond_signal #s that put it
 *      -> the taker's last cond_wait before it popped it, when the taker waited; "queue" from
 *      that signal -> the call that began the leaf it popped it in (B's sem_wait), when not.
 *
 * Ordinals ("n") count every call of an op by one thread, in call order, from 0, whatever the
 * call returned. Edge lines are written by the main thread once everything is joined. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <semaphore.h>
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
    int tid, waited;
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
        int waited = 0;
        while (jobs_next < 0 && !jobs_done) {
            pthread_cond_wait(&jobs_cond, &jobs_lock);
            waited = 1;
        }
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
        completions[k].waited = waited;
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

/* ---- 2. A flooded queue: items taken without waiting. ---- */

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t q_not_full = PTHREAD_COND_INITIALIZER;
static int *q_ring;          /* room for every item: the producer never waits */
static int q_head, q_count, q_closed;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long stats_items;
static volatile int noise_stop;

/* Per item: the producer's signal ordinal that put it; the consumer that took it, whether it
 * waited for it, and its "not full" signal ordinal right after. */
struct take {
    int64_t put_n;
    int tid, waited;
    int64_t signal_n;
};
static struct take *takes;
static int producer_tid;
static int queue_ready; /* consumers are waiting: the producer may start */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;

static void *q_producer(void *arg) {
    (void)arg;
    producer_tid = gettid_();
    pthread_mutex_lock(&start_lock);
    while (queue_ready < 2) pthread_cond_wait(&start_cond, &start_lock);
    pthread_mutex_unlock(&start_lock);
    int64_t signals = 0;
    for (int k = 0; k < items; k++) {
        pthread_mutex_lock(&q_lock);
        while (q_count == items) pthread_cond_wait(&q_not_full, &q_lock);
        q_ring[(q_head + q_count) % items] = k;
        q_count++;
        takes[k].put_n = signals++;
        pthread_cond_signal(&q_not_empty);
        pthread_mutex_unlock(&q_lock);
    }
    pthread_mutex_lock(&q_lock);
    q_closed = 1;
    pthread_cond_broadcast(&q_not_empty);
    pthread_mutex_unlock(&q_lock);
    return NULL;
}

static void *q_consumer(void *arg) {
    (void)arg;
    int tid = gettid_();
    int64_t signals = 0;
    int first = 1;
    for (;;) {
        pthread_mutex_lock(&q_lock);
        int waited = 0;
        while (q_count == 0 && !q_closed) {
            if (first) {
                /* Tell the producer this consumer is at its dequeue site. */
                pthread_mutex_lock(&start_lock);
                queue_ready++;
                /* The start condition is signalled under start_lock, not the queue's mutex. */
                pthread_cond_signal(&start_cond);
                signals++;
                pthread_mutex_unlock(&start_lock);
                first = 0;
            }
            pthread_cond_wait(&q_not_empty, &q_lock);
            waited = 1;
        }
        if (q_count == 0) {
            pthread_mutex_unlock(&q_lock);
            return NULL;
        }
        int k = q_ring[q_head];
        q_head = (q_head + 1) % items;
        q_count--;
        takes[k].tid = tid;
        takes[k].waited = waited;
        takes[k].signal_n = signals++;
        pthread_cond_signal(&q_not_full);
        pthread_mutex_unlock(&q_lock);
        /* The item's work, then its count. */
        volatile uint64_t x = (uint64_t)k;
        for (int i = 0; i < 5000; i++) x = x * 6364136223846793005ULL + 1;
        pthread_mutex_lock(&stats_lock);
        stats_items++;
        pthread_mutex_unlock(&stats_lock);
    }
}

static void *q_noise(void *arg) {
    (void)arg;
    truth_noise(getpid(), gettid_());
    long seen = 0;
    while (!noise_stop) {
        pthread_mutex_lock(&q_lock);
        seen += q_count;
        pthread_mutex_unlock(&q_lock);
        pthread_mutex_lock(&stats_lock);
        seen += stats_items;
        pthread_mutex_unlock(&stats_lock);
        sched_yield();
    }
    return (void *)seen;
}

/* ---- 3. Signals: a sleeper woken out of ppoll. ---- */

static volatile sig_atomic_t got_signals;
static void on_signal(int sig) {
    (void)sig;
    got_signals++;
}
static pthread_t sleeper_thread;
static int sleeper_tid;
static int sleep_pipe[2];
/* Per wake: how it was sent (0 pthread_kill, 1 kill), the sender's ordinal of that call, and the
 * sleeper's ppoll ordinal it ended. */
struct wake {
    int how;
    int64_t send_n;
    int64_t ppoll_n;
};
static struct wake *wakes;
static int signaller_tid;
static volatile int sleeper_waiting = -1; /* the wake the sleeper is ready for */
static volatile int sleeper_taken = 0;     /* wakes the sleeper has taken */

static void *sleeper(void *arg) {
    (void)arg;
    sleeper_tid = gettid_();
    sigset_t open;
    pthread_sigmask(SIG_SETMASK, NULL, &open);
    sigdelset(&open, SIGUSR1);
    sigdelset(&open, SIGUSR2);
    int64_t ppolls = 0;
    for (int k = 0; k < items; k++) {
        int before = got_signals;
        __atomic_store_n(&sleeper_waiting, k, __ATOMIC_SEQ_CST);
        for (;;) {
            struct pollfd p = {.fd = sleep_pipe[0], .events = POLLIN};
            int r = ppoll(&p, 1, NULL, &open);
            int64_t m = ppolls++;
            if (r < 0 && errno != EINTR) fail("ppoll");
            if (got_signals != before) {
                wakes[k].ppoll_n = m;
                break;
            }
        }
        __atomic_store_n(&sleeper_taken, k + 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static void *signaller(void *arg) {
    (void)arg;
    signaller_tid = gettid_();
    int64_t pthread_kills = 0, kills = 0;
    for (int k = 0; k < items; k++) {
        while (__atomic_load_n(&sleeper_waiting, __ATOMIC_SEQ_CST) != k) sched_yield();
        if (k % 2 == 0) {
            wakes[k].how = 0;
            wakes[k].send_n = pthread_kills++;
            int r = pthread_kill(sleeper_thread, SIGUSR1);
            if (r) { errno = r; fail("pthread_kill"); }
        } else {
            wakes[k].how = 1;
            wakes[k].send_n = kills++;
            if (kill(getpid(), SIGUSR2)) fail("kill");
        }
        while (__atomic_load_n(&sleeper_taken, __ATOMIC_SEQ_CST) <= k) sched_yield();
    }
    return NULL;
}

/* ---- 4. Storage: a writer bound by fdatasync. ---- */

static void *syncer(void *arg) {
    (void)arg;
    char path[] = "/tmp/scalpel-wakeups-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) fail("mkstemp");
    unlink(path);
    char block[4096];
    memset(block, 'x', sizeof block);
    for (int k = 0; k < items / 10 + 1; k++) {
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block) fail("write");
        if (fdatasync(fd)) fail("fdatasync");
    }
    close(fd);
    return NULL;
}

/* ---- 5. A pool of takers: a wakeup's job popped by a taker that did not wait. ---- */

/* The waiter (taker A) waits on "has jobs" whenever the queue is empty. The thief (taker B) is
 * let go by the poster once per round and then takes the queue's mutex, which the poster holds,
 * so it blocks on the mutex before A is woken: when the poster unlocks, B (first in the mutex's
 * queue) pops the job whose signal woke A. In odd rounds the poster puts a second job, which A
 * pops after its wait; in even rounds A finds the queue empty and waits again. */
static pthread_mutex_t p_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t p_jobs = PTHREAD_COND_INITIALIZER;
static pthread_cond_t p_took = PTHREAD_COND_INITIALIZER;
static int *p_ring, p_head, p_count, p_jobs_all;
static int a_waiting, b_waiting;    /* under p_lock: A (B) is inside its cond_wait */
static volatile int b_arriving;     /* B is about to lock p_lock (set by B, cleared as it pops) */
static sem_t a_go, b_go;

/* Per job: the poster's signal ordinal that put it; the taker that popped it, whether it
 * waited, and the call that began the leaf it popped it in (its last cond_wait when it
 * waited). */
struct job {
    int64_t put_n;
    int tid, waited;
    const char *began;
    int64_t began_n;
};
static struct job *jobs;
static int poster_tid;
static int rewaits; /* wakeups that found the queue empty again (under p_lock) */

static void p_put(int64_t *signals) {
    int k = p_jobs_all++;
    p_ring[(p_head + p_count) % (items + 2)] = k;
    p_count++;
    jobs[k].put_n = (*signals)++;
    pthread_cond_signal(&p_jobs);
}

static void *poster(void *arg) {
    (void)arg;
    poster_tid = gettid_();
    int64_t signals = 0;
    /* Round 0: B waits alone for the first job, so that its lock site is a dequeue site. */
    if (sem_post(&b_go)) fail("sem_post");
    for (;;) {
        pthread_mutex_lock(&p_lock);
        if (b_waiting) break;
        pthread_mutex_unlock(&p_lock);
        usleep(50);
    }
    p_put(&signals);
    pthread_mutex_unlock(&p_lock);
    if (sem_post(&a_go)) fail("sem_post");
    for (int round = 1; p_jobs_all < items; round++) {
        /* A back in its wait and the queue empty. */
        pthread_mutex_lock(&p_lock);
        if (!a_waiting || p_count) {
            pthread_mutex_unlock(&p_lock);
            usleep(50);
            continue;
        }
        if (!b_waiting) {
            /* B is at (or on its way to) its sem_wait: let it go, and let it block on p_lock. */
            if (!b_arriving && sem_post(&b_go)) fail("sem_post");
            while (!b_arriving) sched_yield();
            usleep(300);
        }
        /* (B lost an earlier race and waits too: the job goes to whichever the signal wakes.) */
        p_put(&signals);
        if (round % 2 == 1 && p_jobs_all < items) p_put(&signals);
        usleep(300); /* A, woken, is blocked on p_lock behind B */
        pthread_mutex_unlock(&p_lock);
    }
    /* One "stop" job each (a taker stops after popping one), once every job is popped and B is
     * not on its way to the queue (it is waiting on it, or at its sem_wait). B keeps
     * `b_arriving` set while it waits when A popped the jobs it was let go for. */
    for (;;) {
        pthread_mutex_lock(&p_lock);
        if (!p_count && (!b_arriving || b_waiting)) break;
        pthread_mutex_unlock(&p_lock);
        usleep(50);
    }
    p_put(&signals);
    p_put(&signals);
    if (!b_waiting && sem_post(&b_go)) fail("sem_post");
    pthread_mutex_unlock(&p_lock);
    return NULL;
}

static void *taker(void *arg) {
    int thief = arg != NULL;
    int tid = gettid_();
    int64_t waits = 0, sem_waits = 0, tooks = 0;
    /* The call that began the leaf open now. */
    const char *began = "thread_start";
    int64_t began_n = 0;
    if (!thief) {
        while (sem_wait(&a_go)) if (errno != EINTR) fail("sem_wait");
        began = "sem_wait", began_n = sem_waits++;
    }
    for (;;) {
        if (thief) {
            while (sem_wait(&b_go)) if (errno != EINTR) fail("sem_wait");
            began = "sem_wait", began_n = sem_waits++;
            b_arriving = 1;
        }
        pthread_mutex_lock(&p_lock);
        int waited = 0;
        while (p_count == 0) {
            if (waited) rewaits++;
            int64_t n = waits++;
            *(thief ? &b_waiting : &a_waiting) = 1;
            pthread_cond_wait(&p_jobs, &p_lock);
            *(thief ? &b_waiting : &a_waiting) = 0;
            began = "cond_wait", began_n = n, waited = 1;
        }
        int k = p_ring[p_head];
        p_head = (p_head + 1) % (items + 2);
        p_count--;
        struct job *j = &jobs[k];
        j->tid = tid;
        j->waited = waited;
        j->began = began;
        j->began_n = began_n;
        if (thief) b_arriving = 0;
        pthread_cond_signal(&p_took);
        began = "cond_signal", began_n = tooks++;
        pthread_mutex_unlock(&p_lock);
        if (k >= items) return NULL;
    }
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

    q_ring = calloc((size_t)items, sizeof *q_ring);
    takes = calloc((size_t)items, sizeof *takes);
    p_ring = calloc((size_t)items + 2, sizeof *p_ring);
    jobs = calloc((size_t)items + 2, sizeof *jobs);
    if (!q_ring || !takes || !p_ring || !jobs) fail("calloc");

    /* Every thread but the sleeper (inside ppoll) blocks SIGUSR1 and SIGUSR2; threads inherit
     * the mask. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    sigset_t usr;
    sigemptyset(&usr);
    sigaddset(&usr, SIGUSR1);
    sigaddset(&usr, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr, NULL);
    wakes = calloc((size_t)items, sizeof *wakes);
    if (!wakes) fail("calloc");
    if (pipe(sleep_pipe)) fail("pipe");

    pthread_t loop, pool[POOL], producer, consumers[2], noise, signal_thread, sync_thread;
    pthread_t post_thread, takers[2];
    if (pthread_create(&sleeper_thread, NULL, sleeper, NULL)) fail("pthread_create");
    if (pthread_create(&signal_thread, NULL, signaller, NULL)) fail("pthread_create");
    if (pthread_create(&sync_thread, NULL, syncer, NULL)) fail("pthread_create");
    for (int i = 0; i < POOL; i++)
        if (pthread_create(&pool[i], NULL, pool_thread, NULL)) fail("pthread_create");
    if (pthread_create(&loop, NULL, loop_thread, NULL)) fail("pthread_create");
    if (pthread_create(&noise, NULL, q_noise, NULL)) fail("pthread_create");
    for (int i = 0; i < 2; i++)
        if (pthread_create(&consumers[i], NULL, q_consumer, NULL)) fail("pthread_create");
    if (pthread_create(&producer, NULL, q_producer, NULL)) fail("pthread_create");
    if (sem_init(&a_go, 0, 0) || sem_init(&b_go, 0, 0)) fail("sem_init");
    if (pthread_create(&takers[0], NULL, taker, NULL)) fail("pthread_create");
    if (pthread_create(&takers[1], NULL, taker, &b_go)) fail("pthread_create");
    if (pthread_create(&post_thread, NULL, poster, NULL)) fail("pthread_create");
    pthread_join(loop, NULL);
    pthread_join(post_thread, NULL);
    for (int i = 0; i < 2; i++) pthread_join(takers[i], NULL);
    for (int i = 0; i < POOL; i++) pthread_join(pool[i], NULL);
    pthread_join(producer, NULL);
    for (int i = 0; i < 2; i++) pthread_join(consumers[i], NULL);
    noise_stop = 1;
    pthread_join(noise, NULL);
    pthread_join(sleeper_thread, NULL);
    pthread_join(signal_thread, NULL);
    pthread_join(sync_thread, NULL);

    for (int k = 0; k < items; k++) {
        struct completion *c = &completions[k];
        truth_edge("ready", (struct truth_at){pid, c->tid, "write", c->write_n},
                   (struct truth_at){pid, loop_tid, "epoll_wait", c->wait_n});
        /* A job the pool thread found without waiting is a queue take: the loop's signal #k
         * put it; the pool thread's leaf in which it took the job began at its previous
         * eventfd write, or at its start when this was its first job. */
        if (!c->waited && c->write_n > 0)
            truth_edge("queue", (struct truth_at){pid, loop_tid, "cond_signal", k},
                       (struct truth_at){pid, c->tid, "write", c->write_n - 1});
        else if (!c->waited)
            truth_edge("queue", (struct truth_at){pid, loop_tid, "cond_signal", k},
                       (struct truth_at){pid, c->tid, "thread_start", 0});
    }
    for (int k = 0; k < items; k++) {
        struct wake *w = &wakes[k];
        truth_edge("signal",
                   (struct truth_at){pid, signaller_tid, w->how ? "kill" : "pthread_kill", w->send_n},
                   (struct truth_at){pid, sleeper_tid, "ppoll", w->ppoll_n});
    }
    int unwaited = 0;
    for (int k = 0; k < items; k++) {
        struct take *t = &takes[k];
        if (t->waited) continue;
        unwaited++;
        truth_edge("queue", (struct truth_at){pid, producer_tid, "cond_signal", t->put_n},
                   (struct truth_at){pid, t->tid, "cond_signal", t->signal_n - 1});
    }
    int pool_waited = 0;
    for (int k = 0; k < items + 2; k++) {
        struct job *j = &jobs[k];
        pool_waited += j->waited;
        truth_edge(j->waited ? "cond" : "queue",
                   (struct truth_at){pid, poster_tid, "cond_signal", j->put_n},
                   (struct truth_at){pid, j->tid, j->began, j->began_n});
    }
    printf("wakeups: %d jobs, %d queue items (%d taken without waiting), %d pool jobs (%d after a "
           "wait, %d wakeups found the queue empty)\n",
           items, items, unwaited, items + 2, pool_waited, rewaits);
    return 0;
}
