/* handoff: ground truth for the causal edges between threads and processes.
 *
 * `handoff [--items N]` (N = 200 by default) hands N items from one thread to another in five
 * ways at once, and records which call caused which (samples/TRUTH.md, "Causal edges"):
 *   1. cond queue: producer P pushes onto a mutex+condvar queue and signals once per item;
 *      consumer C waits only while the queue is empty. Edge: P's cond_signal #h -> C's last
 *      cond_wait before it popped item h, when C waited for it; when it found item h without
 *      waiting, a "queue" edge from P's cond_signal #h to the leaf C popped it in (the one its
 *      latest cond_wait started, or its thread_start if it never waited).
 *   2. pipe: writer W writes N 16-byte messages; reader R reads them back. Stream-call lines for
 *      every read and write; tests pair them by overlapping byte ranges.
 *   3. semaphore: poster posts N times, waiter waits N times. Edge: sem_post #k -> the k-th
 *      successful sem_wait.
 *   4. noise: two threads lock and unlock the queue's mutex and a mutex of their own; they hand
 *      nothing to anyone and are listed in `noise_tid` lines.
 *   5. TCP: the main thread forks a server process before starting any thread; a client thread
 *      sends N 24-byte requests and reads N 24-byte replies. Edges: fork -> fork_child,
 *      connect -> accept; stream-call lines for every read and write on both sides.
 * And the thread lifetimes: thread_create -> thread_start, thread_exit -> thread_join.
 *
 * Ordinals ("n") count every call of an op by one thread, in call order, from 0, whatever the
 * call returned. Each thread makes its counted calls only in the part it belongs to. Edge lines are
 * written by the main thread once everything is joined; stream-call lines by the calling thread. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "truth.h"

#define PIPE_MSG 16    /* bytes per pipe message */
#define TCP_MSG 24     /* bytes per request and per reply */
#define NOISE_ITERS 2000

static int items = 200;

static void fail(const char *what) {
    fprintf(stderr, "handoff: %s failed: %s\n", what, strerror(errno));
    exit(1);
}

static int gettid_(void) { return (int)syscall(SYS_gettid); }

/* ---- Byte streams: every read()/write() call is counted and recorded. ---- */

/* A thread's ordinals of its write() and read() calls (every call counts). */
struct io_counts {
    int64_t writes, reads;
};
/* One direction of one channel as one side sees it: the offset of its next byte. */
struct stream {
    const char *chan, *name;
    int64_t off;
};

/* Writes len bytes with write(): one call, unless the kernel takes fewer bytes. */
static void put(int fd, const void *buf, size_t len, struct io_counts *c, struct stream *s) {
    size_t done = 0;
    while (done < len) {
        ssize_t r = write(fd, (const char *)buf + done, len - done);
        int64_t n = c->writes++;
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) fail("write");
        truth_io("write", s->chan, s->name, n, s->off, r);
        s->off += r;
        done += (size_t)r;
    }
}

/* Reads exactly len bytes with read() calls. Returns 0 at end of stream before the first byte. */
static int get(int fd, void *buf, size_t len, struct io_counts *c, struct stream *s) {
    size_t done = 0;
    while (done < len) {
        ssize_t r = read(fd, (char *)buf + done, len - done);
        int64_t n = c->reads++;
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) fail("read");
        if (r == 0) {
            if (done == 0) return 0;
            errno = EPROTO;
            fail("read (stream ended inside a message)");
        }
        truth_io("read", s->chan, s->name, n, s->off, r);
        s->off += r;
        done += (size_t)r;
    }
    return 1;
}

/* ---- The threads of the parent process. ---- */

struct thread {
    const char *name;
    void *(*fn)(void *);
    pthread_t th;
    int tid;                 /* written by the thread itself as it starts */
    pthread_mutex_t own;     /* noise threads: their private mutex */
};

/* 1. Cond queue: N slots, each item is pushed once, so head and tail only grow. */
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static int *q_items, q_head, q_tail;
static int64_t *cond_wait_of; /* per item: C's cond_wait ordinal that it woke from, or -1 */
static int64_t *taken_after;  /* per item C took without waiting: its latest cond_wait, or -1 */
static int64_t noise_counter; /* touched by the noise threads under q_lock */

static void *producer(void *a) {
    struct thread *t = a;
    t->tid = gettid_();
    pthread_setname_np(pthread_self(), t->name); /* names the thread in traces */
    for (int h = 0; h < items; h++) {
        pthread_mutex_lock(&q_lock);
        q_items[q_tail++] = h;
        pthread_cond_signal(&q_cond); /* P's cond_signal #h */
        pthread_mutex_unlock(&q_lock);
        usleep(200); /* so that C usually finds the queue empty and waits */
    }
    return NULL;
}

static void *consumer(void *a) {
    struct thread *t = a;
    t->tid = gettid_();
    pthread_setname_np(pthread_self(), t->name); /* names the thread in traces */
    int64_t waits = 0;
    for (int h = 0; h < items; h++) {
        int64_t last = -1;
        pthread_mutex_lock(&q_lock);
        /* Wait only while empty: the item popped after a wait is the first pushed after the last
         * wait began, and its signal is the one that woke it (C is the only waiter). */
        while (q_head == q_tail) {
            last = waits++;
            int r = pthread_cond_wait(&q_cond, &q_lock);
            if (r) { errno = r; fail("pthread_cond_wait"); }
        }
        int v = q_items[q_head++];
        pthread_mutex_unlock(&q_lock);
        if (v != h) { errno = EPROTO; fail("cond queue order"); }
        cond_wait_of[h] = last;
        taken_after[h] = waits - 1;
    }
    return NULL;
}

/* 2. Pipe. */
static int pipe_fds[2];

static void *pipe_writer(void *a) {
    struct thread *t = a;
    t->tid = gettid_();
    pthread_setname_np(pthread_self(), t->name); /* names the thread in traces */
    struct io_counts c = {0, 0};
    struct stream s = {"pipe", "pipe", 0};
    for (int i = 0; i < items; i++) {
        unsigned char msg[PIPE_MSG];
        memset(msg, (unsigned char)i, sizeof msg);
        memcpy(msg, &i, sizeof i);
        put(pipe_fds[1], msg, sizeof msg, &c, &s);
        if (i % 8 == 7) usleep(100); /* let the reader block now and then */
    }
    close(pipe_fds[1]);
    return NULL;
}

static void *pipe_reader(void *a) {
    struct thread *t = a;
    t->tid = gettid_();
    pthread_setname_np(pthread_self(), t->name); /* names the thread in traces */
    struct io_counts c = {0, 0};
    struct stream s = {"pipe", "pipe", 0};
    unsigned char msg[PIPE_MSG];
    for (int i = 0; i < items; i++) {
        int v;
        if (!get(pipe_fds[0], msg, sizeof msg, &c, &s)) { errno = EPROTO; fail("pipe read (early end)"); }
        memcpy(&v, msg, sizeof v);
        if (v != i) { errno = EPROTO; fail("pipe message order"); }
    }
    /* The writer closed its end: one more read() sees the end (counted, not recorded). */
    if (get(pipe_fds[0], msg, sizeof msg, &c, &s)) { errno = EPROTO; fail("pipe read (extra data)"); }
    close(pipe_fds[0]);
    return NULL;
}

/* 3. Semaphore. */
static sem_t sem;
static int64_t *sem_wait_of; /* per post k: the waiter's sem_wait ordinal that took it */

static void *sem_poster(void *a) {
    struct thread *t = a;
    t->tid = gettid_();
    pthread_setname_np(pthread_self(), t->name); /* names the thread in traces */
    for (int k = 0; k < items; k++) {
        if (sem_post(&sem)) fail("sem_post"); /* the poster's sem_post #k */
        usleep(150);
    }
    return NULL;
}

static void *sem_waiter(void *a) {
    struct thread *t = a;
    t->tid = gettid_();
    pthread_setname_np(pthread_self(), t->name); /* names the thread in traces */
    int64_t calls = 0;
    for (int k = 0; k < items; k++) {
        for (;;) {
            int64_t n = calls++;
            if (sem_wait(&sem) == 0) { sem_wait_of[k] = n; break; }
            if (errno != EINTR) fail("sem_wait");
        }
    }
    return NULL;
}

/* 4. Noise: locks and unlocks, nothing handed to anyone. */
static void *noise(void *a) {
    struct thread *t = a;
    t->tid = gettid_();
    pthread_setname_np(pthread_self(), t->name); /* names the thread in traces */
    int64_t mine = 0;
    for (int i = 0; i < NOISE_ITERS; i++) {
        pthread_mutex_lock(&q_lock);
        noise_counter++;
        pthread_mutex_unlock(&q_lock);
        pthread_mutex_lock(&t->own);
        mine++;
        pthread_mutex_unlock(&t->own);
        if (i % 64 == 63) sched_yield();
        if (i % 50 == 49) usleep(1000); /* spread over the other parts' run (~40 ms) */
    }
    return (void *)(intptr_t)(mine == NOISE_ITERS);
}

/* 5. TCP: the client thread of the parent; the server is the forked child. */
static int tcp_port;

static void *tcp_client(void *a) {
    struct thread *t = a;
    t->tid = gettid_();
    pthread_setname_np(pthread_self(), t->name); /* names the thread in traces */
    struct io_counts c = {0, 0};
    struct stream up = {"tcp", "c2s", 0}, down = {"tcp", "s2c", 0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail("socket");
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)tcp_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) fail("connect"); /* connect #0 */
    for (int i = 0; i < items; i++) {
        uint32_t req[TCP_MSG / 4] = {0}, rep[TCP_MSG / 4];
        req[0] = (uint32_t)i;
        put(fd, req, sizeof req, &c, &up);
        if (!get(fd, rep, sizeof rep, &c, &down)) { errno = EPROTO; fail("reply read (early end)"); }
        if (rep[0] != (uint32_t)i * 2 + 1) { errno = EPROTO; fail("reply content"); }
    }
    close(fd);
    return NULL;
}

/* The child process's only thread: accepts one connection and answers every request. */
static void tcp_server(int listener) {
    truth_open("handoff"); /* this process's header line */
    if (gettid_() != getpid()) { errno = EPROTO; fail("server thread is not the process leader"); }
    struct io_counts c = {0, 0};
    struct stream up = {"tcp", "c2s", 0}, down = {"tcp", "s2c", 0};
    int fd = accept(listener, NULL, NULL); /* accept #0 */
    if (fd < 0) fail("accept");
    close(listener);
    for (int i = 0; i < items; i++) {
        uint32_t req[TCP_MSG / 4], rep[TCP_MSG / 4] = {0};
        if (!get(fd, req, sizeof req, &c, &up)) { errno = EPROTO; fail("request read (early end)"); }
        rep[0] = req[0] * 2 + 1;
        put(fd, rep, sizeof rep, &c, &down);
    }
    /* The client closes after its last reply: one more read() sees the end (not recorded). */
    uint32_t extra[TCP_MSG / 4];
    if (get(fd, extra, sizeof extra, &c, &up)) { errno = EPROTO; fail("request read (extra data)"); }
    close(fd);
    _exit(0);
}

/* A listening socket on 127.0.0.1 and an ephemeral port, made before the fork so that the child
 * inherits it and the parent knows the port. */
static int listen_loopback(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail("socket");
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa)) fail("bind");
    if (listen(fd, 4)) fail("listen");
    if (getsockname(fd, (struct sockaddr *)&sa, &len)) fail("getsockname");
    tcp_port = ntohs(sa.sin_port);
    return fd;
}

/* ---- Main: fork, run every part at once, join, then write the edges. ---- */

enum { PRODUCER, CONSUMER, WRITER, READER, POSTER, WAITER, NOISE1, NOISE2, CLIENT, NTHREADS };

int handoff_main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--items") && i + 1 < argc) {
            items = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: handoff [--items N]\n");
            return 1;
        }
    }
    if (items < 1) { fprintf(stderr, "handoff: --items must be at least 1\n"); return 1; }
    truth_open("handoff");
    int pid = getpid(), main_tid = gettid_();

    /* 5 (first, before any thread exists): the server process. */
    int listener = listen_loopback();
    pid_t child = fork(); /* the main thread's fork #0 */
    if (child < 0) fail("fork");
    if (child == 0) tcp_server(listener); /* does not return */
    close(listener);

    q_items = calloc((size_t)items, sizeof *q_items);
    cond_wait_of = calloc((size_t)items, sizeof *cond_wait_of);
    taken_after = calloc((size_t)items, sizeof *taken_after);
    sem_wait_of = calloc((size_t)items, sizeof *sem_wait_of);
    if (!q_items || !cond_wait_of || !taken_after || !sem_wait_of) fail("calloc");
    if (pipe(pipe_fds)) fail("pipe");
    if (sem_init(&sem, 0, 0)) fail("sem_init");

    struct thread ts[NTHREADS] = {
        [PRODUCER] = {"producer", producer}, [CONSUMER] = {"consumer", consumer},
        [WRITER] = {"pipe-writer", pipe_writer}, [READER] = {"pipe-reader", pipe_reader},
        [POSTER] = {"sem-poster", sem_poster}, [WAITER] = {"sem-waiter", sem_waiter},
        [NOISE1] = {"noise", noise}, [NOISE2] = {"noise", noise},
        [CLIENT] = {"tcp-client", tcp_client},
    };
    for (int i = 0; i < NTHREADS; i++) pthread_mutex_init(&ts[i].own, NULL);
    /* The main thread's thread_create #i and thread_join #i are thread i's. */
    for (int i = 0; i < NTHREADS; i++) {
        int r = pthread_create(&ts[i].th, NULL, ts[i].fn, &ts[i]);
        if (r) { errno = r; fail("pthread_create"); }
    }
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        int r = pthread_join(ts[i].th, &ret);
        if (r) { errno = r; fail("pthread_join"); }
        if ((i == NOISE1 || i == NOISE2) && !ret) { errno = EPROTO; fail("noise count"); }
    }
    int status;
    if (waitpid(child, &status, 0) != child) fail("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "handoff: the server process failed (status %#x)\n", status);
        return 1;
    }

    /* The edges. The child's only thread is its leader: tid = pid. */
    int cpid = (int)child;
    truth_edge("fork", (struct truth_at){pid, main_tid, "fork", 0},
               (struct truth_at){cpid, cpid, "fork_child", 0});
    for (int i = 0; i < NTHREADS; i++) {
        truth_edge("create", (struct truth_at){pid, main_tid, "thread_create", i},
                   (struct truth_at){pid, ts[i].tid, "thread_start", 0});
        truth_edge("join", (struct truth_at){pid, ts[i].tid, "thread_exit", 0},
                   (struct truth_at){pid, main_tid, "thread_join", i});
    }
    int waited = 0;
    for (int h = 0; h < items; h++) {
        if (cond_wait_of[h] < 0) {
            struct truth_at from = {pid, ts[PRODUCER].tid, "cond_signal", h};
            if (taken_after[h] < 0)
                truth_edge("queue", from, (struct truth_at){pid, ts[CONSUMER].tid, "thread_start", 0});
            else
                truth_edge("queue", from,
                           (struct truth_at){pid, ts[CONSUMER].tid, "cond_wait", taken_after[h]});
            continue;
        }
        waited++;
        truth_edge("cond", (struct truth_at){pid, ts[PRODUCER].tid, "cond_signal", h},
                   (struct truth_at){pid, ts[CONSUMER].tid, "cond_wait", cond_wait_of[h]});
    }
    for (int k = 0; k < items; k++)
        truth_edge("sem", (struct truth_at){pid, ts[POSTER].tid, "sem_post", k},
                   (struct truth_at){pid, ts[WAITER].tid, "sem_wait", sem_wait_of[k]});
    truth_edge("connect", (struct truth_at){pid, ts[CLIENT].tid, "connect", 0},
               (struct truth_at){cpid, cpid, "accept", 0});
    truth_noise(pid, ts[NOISE1].tid);
    truth_noise(pid, ts[NOISE2].tid);

    printf("handoff: %d items: cond %d (%d after a wait), pipe %d x %d B, sem %d, tcp %d round trips, "
           "noise 2 x %d\n", items, items, waited, items, PIPE_MSG, items, items, NOISE_ITERS);
    sem_destroy(&sem);
    free(q_items);
    free(cond_wait_of);
    free(sem_wait_of);
    return 0;
}
