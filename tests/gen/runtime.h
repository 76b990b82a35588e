/* What every generated program shares (see tests/src/generated/): the wire messages, the
 * transport, pipelined parsing, the hand-off mechanisms between stages, a bounded queue, a
 * group-commit service thread and noise threads. The generator writes the configuration macros
 * and the architecture (the server's threads and how a request travels through them), then
 * includes this file.
 *
 * A program runs in one of two modes: `prog server DIR` (under `scalpel record`; it writes its
 * address to DIR/addr and its truth to $SCALPEL_TRUTH, and exits once every client has closed)
 * and `prog client DIR` (outside the recording: the load, NCLIENTS connections of REQS requests
 * each, PIPELINE requests written before their responses are read; it checks every response
 * and exits non-zero on any mismatch). With CALL, `prog backend DIR` runs outside the recording
 * too: a peer every request calls on a connection of its own (TCP on 127.0.0.1, its port in
 * DIR/backend), as a proxy calls its backend. */
#ifndef SCALPEL_GEN_RUNTIME_H
#define SCALPEL_GEN_RUNTIME_H
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "truth.h"

/* One request or response: the request's id, whether it takes the slow path, its client. */
struct msg {
    uint64_t id;
    uint32_t slow;
    uint32_t client;
};

static inline void die(const char *what) {
    perror(what);
    exit(2);
}

static inline void full_write(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("write");
        p += w;
        n -= (size_t)w;
    }
}

static inline ssize_t read_some(int fd, void *buf, size_t n) {
    for (;;) {
        ssize_t r = read(fd, buf, n);
        if (r < 0 && errno == EINTR) continue;
        return r;
    }
}

/* ---- transport: TCP on 127.0.0.1 or a Unix socket in DIR ---- */

static inline int server_listen(const char *dir) {
    char path[512], addr[600];
    int fd;
    if (UNIX_SOCKET) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(path, sizeof path, "%s/sock", dir);
        if (strlen(path) >= sizeof a.sun_path) die("socket path too long");
        strcpy(a.sun_path, path);
        unlink(path);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0) die("bind unix");
        snprintf(addr, sizeof addr, "unix %s\n", path);
    } else {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0) die("bind tcp");
        if (getsockname(fd, (struct sockaddr *)&a, &len) < 0) die("getsockname");
        snprintf(addr, sizeof addr, "tcp %d\n", ntohs(a.sin_port));
    }
    if (listen(fd, 128) < 0) die("listen");
    /* Written to a temporary name and renamed, so that the load never reads half of it. */
    char tmp[560], final[560];
    snprintf(tmp, sizeof tmp, "%s/addr.tmp", dir);
    snprintf(final, sizeof final, "%s/addr", dir);
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(addr, f) < 0 || fclose(f) != 0 || rename(tmp, final) != 0) die("addr file");
    return fd;
}

static inline int client_dial(const char *dir) {
    char path[560], kind[8], where[512];
    snprintf(path, sizeof path, "%s/addr", dir);
    FILE *f = fopen(path, "r");
    if (!f || fscanf(f, "%7s %511s", kind, where) != 2) die("addr file");
    fclose(f);
    int fd;
    if (strcmp(kind, "unix") == 0) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        strncpy(a.sun_path, where, sizeof a.sun_path - 1);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect unix");
    } else {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(where))};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect tcp");
    }
    return fd;
}

/* ---- a connection's requests, parsed from what its reads returned ---- */

struct conn {
    int fd;
    size_t have;
    char buf[sizeof(struct msg) * 64];
};

/* Reads once; returns the bytes read (0 at the end of the stream). */
static inline ssize_t conn_fill(struct conn *c) {
    ssize_t r = read_some(c->fd, c->buf + c->have, sizeof c->buf - c->have);
    if (r > 0) c->have += (size_t)r;
    return r;
}

/* Takes the next complete request, if one is buffered. */
static inline int conn_next(struct conn *c, struct msg *m) {
    if (c->have < sizeof *m) return 0;
    memcpy(m, c->buf, sizeof *m);
    c->have -= sizeof *m;
    memmove(c->buf, c->buf + sizeof *m, c->have);
    return 1;
}

/* ---- the work a request costs, and the truth about it ---- */

static inline void spin(unsigned n) {
    volatile unsigned x = 0;
    for (unsigned i = 0; i < n; i++) x += i;
}

/* A part of a request done by one thread: stage `stage` of request `id`, from `start` (after
 * the sync call that began it returned) to now (before the sync call that ends it). */
static inline void truth_part(int stage, const struct msg *m, uint64_t start) {
    static const char *names[] = {"s0", "s1", "s2", "s3"};
    truth_task(names[stage], (int64_t)(m->id * 4 + (uint64_t)stage), (int64_t)m->id, start,
               truth_now());
}

/* The request as a whole: the union of its parts (the scorer composes it). */
static inline void truth_request(const struct msg *m) {
    truth_task("request", (int64_t)m->id, -1, 0, 0);
}

/* The last part of a request: its truth, then the response written to `fd`. */
static inline void answer(int stage, int fd, const struct msg *m, uint64_t mark) {
    truth_part(stage, m, mark);
    truth_request(m);
    full_write(fd, m, sizeof *m);
}

/* ---- a global lock, as an interpreter's (CPython's GIL): with GLOBAL_LOCK, every request's
 * computing and every noise thread's runs holding it. It is a mutex, a condition the threads
 * that want the lock wait on (timed: one that waited an interval with no switch asks for one)
 * and a switch condition that every take signals; a holder asked for a switch waits, after
 * letting the lock go, until another thread has taken it. ---- */

#ifndef GLOBAL_LOCK
#define GLOBAL_LOCK 0
#endif
#define GLOCK_INTERVAL_NS 200000L

static pthread_mutex_t gl_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t gl_switch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gl_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t gl_switch = PTHREAD_COND_INITIALIZER;
static int gl_locked, gl_drop_request;
static unsigned long gl_switches;
static long gl_holder;

static inline void glock_take(void) {
    if (!GLOBAL_LOCK) return;
    long me = syscall(SYS_gettid);
    pthread_mutex_lock(&gl_mu);
    while (gl_locked) {
        unsigned long seen = gl_switches;
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += GLOCK_INTERVAL_NS;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        int rc = pthread_cond_timedwait(&gl_cv, &gl_mu, &t);
        if (rc == ETIMEDOUT && gl_locked && gl_switches == seen)
            __atomic_store_n(&gl_drop_request, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_lock(&gl_switch_mu);
    gl_locked = 1;
    if (gl_holder != me) {
        gl_holder = me;
        gl_switches++;
    }
    pthread_cond_signal(&gl_switch);
    pthread_mutex_unlock(&gl_switch_mu);
    /* A request of its own is answered by this take. */
    __atomic_store_n(&gl_drop_request, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&gl_mu);
}

static inline void glock_drop(void) {
    if (!GLOBAL_LOCK) return;
    long me = syscall(SYS_gettid);
    pthread_mutex_lock(&gl_mu);
    gl_locked = 0;
    pthread_cond_signal(&gl_cv);
    pthread_mutex_unlock(&gl_mu);
    if (!__atomic_load_n(&gl_drop_request, __ATOMIC_RELAXED)) return;
    /* Asked for a switch by a thread still waiting (a take clears the request): wait until it,
     * or another, has the lock. */
    pthread_mutex_lock(&gl_switch_mu);
    if (gl_holder == me) {
        __atomic_store_n(&gl_drop_request, 0, __ATOMIC_RELAXED);
        pthread_cond_wait(&gl_switch, &gl_switch_mu);
    }
    pthread_mutex_unlock(&gl_switch_mu);
}

/* Computing, holding the global lock when there is one. */
static inline void compute(unsigned n) {
    glock_take();
    spin(n);
    glock_drop();
}

/* ---- noise: threads that share locks with the handlers and nothing else ---- */

static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long stats_served;
static volatile int noise_stop;

static inline void count_served(void) {
    pthread_mutex_lock(&stats_mu);
    stats_served++;
    pthread_mutex_unlock(&stats_mu);
}

static inline void *noise_main(void *arg) {
    (void)arg;
    truth_noise(getpid(), (int)syscall(SYS_gettid));
    while (!noise_stop) {
        pthread_mutex_lock(&stats_mu);
        spin(2000);
        pthread_mutex_unlock(&stats_mu);
        if (GLOBAL_LOCK) compute(2000);
        usleep(300);
    }
    return NULL;
}

/* ---- group commit: a service thread flushes a log for several requests at once ---- */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t log_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t log_done = PTHREAD_COND_INITIALIZER;
static unsigned long log_asked, log_flushed;
static int log_stop, log_fd = -1;

static inline void *flusher_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&log_mu);
    for (;;) {
        while (log_asked == log_flushed && !log_stop) pthread_cond_wait(&log_work, &log_mu);
        if (log_asked == log_flushed && log_stop) break;
        unsigned long upto = log_asked;
        pthread_mutex_unlock(&log_mu);
        char rec[16] = "commit\n";
        if (write(log_fd, rec, 7) != 7) die("log write");
        fdatasync(log_fd);
        pthread_mutex_lock(&log_mu);
        log_flushed = upto;
        pthread_cond_broadcast(&log_done);
    }
    pthread_mutex_unlock(&log_mu);
    return NULL;
}

/* The slow path: the request waits until the log holds it. */
static inline void commit(void) {
    pthread_mutex_lock(&log_mu);
    unsigned long mine = ++log_asked;
    pthread_cond_signal(&log_work);
    while (log_flushed < mine) pthread_cond_wait(&log_done, &log_mu);
    pthread_mutex_unlock(&log_mu);
}

/* ---- a backend outside the trace (CALL): a connection per call, one message each way ---- */

#ifndef CALL
#define CALL 0
#endif

static struct sockaddr_in backend_addr;

static inline int read_full(int fd, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read_some(fd, (char *)buf + got, n - got);
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static inline void *backend_conn(void *arg) {
    int fd = (int)(intptr_t)arg;
    struct msg m;
    while (read_full(fd, &m, sizeof m) == 0) full_write(fd, &m, sizeof m);
    close(fd);
    return NULL;
}

/* `prog backend DIR`: answers every call until killed. */
static inline int run_backend(const char *dir) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 128) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &len) < 0)
        die("backend listen");
    char tmp[560], final[560];
    snprintf(tmp, sizeof tmp, "%s/backend.tmp", dir);
    snprintf(final, sizeof final, "%s/backend", dir);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0 || rename(tmp, final))
        die("backend file");
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0 && errno != EINTR) die("backend accept");
        if (fd < 0) continue;
        pthread_t t;
        pthread_create(&t, NULL, backend_conn, (void *)(intptr_t)fd);
        pthread_detach(t);
    }
    return 0;
}

static inline void backend_locate(const char *dir) {
    char path[560];
    int port = 0;
    snprintf(path, sizeof path, "%s/backend", dir);
    FILE *f = fopen(path, "r");
    if (!f || fscanf(f, "%d", &port) != 1) die("backend file");
    fclose(f);
    backend_addr.sin_family = AF_INET;
    backend_addr.sin_port = htons((uint16_t)port);
    backend_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

/* The request's call: connect, write it, read the answer, close. */
static inline void call_backend(const struct msg *m) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&backend_addr, sizeof backend_addr) < 0)
        die("connect backend");
    struct msg answer;
    full_write(fd, m, sizeof *m);
    if (read_full(fd, &answer, sizeof answer) != 0 || answer.id != m->id) die("backend answer");
    close(fd);
}

/* What every request costs where it is served, the slow path included. */
static inline void serve(const struct msg *m) {
    if (CALL) call_backend(m);
    compute(WORK_SPIN);
    if (m->slow) {
        if (SLOW_COMMIT)
            commit();
        else
            compute(WORK_SPIN * 4);
    }
    count_served();
}

/* ---- hand-off between stages: an unbounded queue with one of five notifications ---- */

enum { H_COND, H_SEM, H_PIPE, H_EVENTFD, H_FUTEX };

struct item {
    struct msg m;
    int fd; /* -1: stop */
};

#define RING 8192
struct handoff {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sem_t sem;
    int pipe[2];
    int efd;
    uint32_t fut;
    unsigned head, tail;
    struct item ring[RING];
};

static inline void handoff_init(struct handoff *h) {
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    sem_init(&h->sem, 0, 0);
    if (HANDOFF == H_PIPE && pipe(h->pipe) < 0) die("pipe");
    if (HANDOFF == H_EVENTFD && (h->efd = eventfd(0, EFD_SEMAPHORE)) < 0) die("eventfd");
    h->fut = 0;
    h->head = h->tail = 0;
}

static inline void ring_push(struct handoff *h, struct item it) {
    if (h->tail - h->head >= RING) die("hand-off ring full");
    h->ring[h->tail++ % RING] = it;
}

static inline void handoff_put(struct handoff *h, struct item it) {
    if (HANDOFF == H_PIPE) {
        full_write(h->pipe[1], &it, sizeof it);
        return;
    }
    pthread_mutex_lock(&h->mu);
    ring_push(h, it);
    if (HANDOFF == H_COND) pthread_cond_signal(&h->cv);
    if (HANDOFF == H_FUTEX) __atomic_add_fetch(&h->fut, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&h->mu);
    if (HANDOFF == H_SEM) sem_post(&h->sem);
    if (HANDOFF == H_EVENTFD) {
        uint64_t one = 1;
        full_write(h->efd, &one, sizeof one);
    }
    if (HANDOFF == H_FUTEX) syscall(SYS_futex, &h->fut, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static inline struct item handoff_take(struct handoff *h) {
    struct item it;
    if (HANDOFF == H_PIPE) {
        size_t got = 0;
        while (got < sizeof it) {
            ssize_t r = read_some(h->pipe[0], (char *)&it + got, sizeof it - got);
            if (r <= 0) die("pipe read");
            got += (size_t)r;
        }
        return it;
    }
    if (HANDOFF == H_SEM)
        while (sem_wait(&h->sem) < 0 && errno == EINTR) {
        }
    if (HANDOFF == H_EVENTFD) {
        uint64_t v;
        if (read_some(h->efd, &v, sizeof v) != sizeof v) die("eventfd read");
    }
    if (HANDOFF == H_FUTEX) {
        for (;;) {
            uint32_t v = __atomic_load_n(&h->fut, __ATOMIC_SEQ_CST);
            if (v > 0 && __atomic_compare_exchange_n(&h->fut, &v, v - 1, 0, __ATOMIC_SEQ_CST,
                                                     __ATOMIC_SEQ_CST))
                break;
            if (v == 0) syscall(SYS_futex, &h->fut, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
        }
    }
    pthread_mutex_lock(&h->mu);
    if (HANDOFF == H_COND)
        while (h->head == h->tail) pthread_cond_wait(&h->cv, &h->mu);
    it = h->ring[h->head++ % RING];
    pthread_mutex_unlock(&h->mu);
    return it;
}

/* ---- a bounded queue between pipeline stages: mutex, not-empty and not-full ---- */

struct bqueue {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    unsigned head, tail, cap;
    struct item ring[64];
};

static inline void bq_init(struct bqueue *q, unsigned cap) {
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    q->head = q->tail = 0;
    q->cap = cap;
}

static inline void bq_put(struct bqueue *q, struct item it) {
    pthread_mutex_lock(&q->mu);
    while (q->tail - q->head >= q->cap) pthread_cond_wait(&q->not_full, &q->mu);
    q->ring[q->tail++ % 64] = it;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
}

static inline struct item bq_take(struct bqueue *q) {
    pthread_mutex_lock(&q->mu);
    while (q->head == q->tail) pthread_cond_wait(&q->not_empty, &q->mu);
    struct item it = q->ring[q->head++ % 64];
    pthread_cond_signal(&q->not_full);
    pthread_mutex_unlock(&q->mu);
    return it;
}

/* ---- what runs around the architecture ---- */

static pthread_t noise_threads[4], flusher;

static inline void services_start(const char *dir) {
    if (SLOW_COMMIT) {
        char path[560];
        snprintf(path, sizeof path, "%s/log", dir);
        log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (log_fd < 0) die("log open");
        pthread_create(&flusher, NULL, flusher_main, NULL);
    }
    for (int i = 0; i < NOISE; i++) pthread_create(&noise_threads[i], NULL, noise_main, NULL);
}

static inline void services_stop(void) {
    noise_stop = 1;
    for (int i = 0; i < NOISE; i++) pthread_join(noise_threads[i], NULL);
    if (SLOW_COMMIT) {
        pthread_mutex_lock(&log_mu);
        log_stop = 1;
        pthread_cond_signal(&log_work);
        pthread_mutex_unlock(&log_mu);
        pthread_join(flusher, NULL);
        close(log_fd);
    }
}

/* ---- the load ---- */

static const char *load_dir;
static volatile int load_failed;

/* Whether request `i` of client `c` takes the slow path: a fixed hash, so runs repeat. */
static inline uint32_t is_slow(unsigned c, unsigned i) {
    uint32_t h = (c * 2654435761u) ^ (i * 2246822519u);
    h ^= h >> 15;
    h *= 2654435761u;
    return (h >> 8) % 1000 < SLOW_PERMILLE;
}

static inline void *client_main(void *arg) {
    unsigned c = (unsigned)(uintptr_t)arg;
    int fd = client_dial(load_dir);
    struct msg batch[64], back[64];
    for (unsigned i = 0; i < REQS; i += PIPELINE) {
        unsigned n = REQS - i < PIPELINE ? REQS - i : PIPELINE;
        for (unsigned k = 0; k < n; k++) {
            batch[k].id = (uint64_t)c * 100000u + i + k + 1;
            batch[k].slow = is_slow(c, i + k);
            batch[k].client = c;
        }
        full_write(fd, batch, n * sizeof batch[0]);
        size_t want = n * sizeof back[0], got = 0;
        while (got < want) {
            ssize_t r = read_some(fd, (char *)back + got, want - got);
            if (r <= 0) {
                fprintf(stderr, "client %u: connection ended after %zu bytes\n", c, got);
                load_failed = 1;
                close(fd);
                return NULL;
            }
            got += (size_t)r;
        }
        /* Responses of one batch may come in any order (several workers answer). */
        uint64_t want_sum = 0, got_sum = 0;
        for (unsigned k = 0; k < n; k++) {
            want_sum += batch[k].id;
            got_sum += back[k].id;
        }
        if (want_sum != got_sum) {
            fprintf(stderr, "client %u: wrong responses\n", c);
            load_failed = 1;
        }
    }
    close(fd);
    return NULL;
}

static inline int run_load(const char *dir) {
    load_dir = dir;
    pthread_t t[64];
    for (unsigned c = 0; c < NCLIENTS; c++)
        pthread_create(&t[c], NULL, client_main, (void *)(uintptr_t)c);
    for (unsigned c = 0; c < NCLIENTS; c++) pthread_join(t[c], NULL);
    if (load_failed) return 1;
    printf("served %u requests\n", NCLIENTS * REQS);
    return 0;
}

/* The architecture's server, written by the generator. */
static void server(int listen_fd);

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s server|client|backend DIR\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(argv[1], "client") == 0) return run_load(argv[2]);
    if (strcmp(argv[1], "backend") == 0) return run_backend(argv[2]);
    if (strcmp(argv[1], "server") != 0) return 2;
    if (CALL) backend_locate(argv[2]);
    truth_open(PROGRAM);
    int lfd = server_listen(argv[2]);
    services_start(argv[2]);
    server(lfd);
    services_stop();
    return 0;
}

#endif
