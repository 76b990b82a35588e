/* tasks: programs whose task hierarchy is known by construction, for scoring the miner.
 *
 *   tasks stages [--items N]     a request handled in 3 stages on 3 threads, N times (1000),
 *                                with background noise threads; the requests come from a
 *                                feeder process that is not traced (like a server's clients),
 *                                and a stop message ends every loop, so that the first and the
 *                                last request look like all the others;
 *   tasks mixed  [--items N]     two request types (get, put) interleaved on one pool of 4
 *                                workers (N = 1000);
 *                                --put-sleep-us N makes every put sleep N us in its
 *                                serve stage (an injected delay for rollup tests; the
 *                                truth records each sleep as `put_sleep`);
 *   tasks nested [--items N]     a request fans out 2 sub-requests to a second pool and joins
 *                                them (N = 500).
 *
 * Every hand-off goes through a pipe with one writer and one reader, in 16-byte messages read
 * 16 bytes at a time, so each hand-off is exactly one write and one read and the causal edge
 * between them is exact. These programs measure the miner, not edge matching (the handoff
 * sample does that). Truth spans are taken between sync calls, so each lies inside one leaf.
 * Ground truth (samples/TRUTH.md): see the table in samples/README.md. */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "truth.h"

#define NOINLINE __attribute__((noinline))
#define STOP UINT64_MAX

struct msg {
    uint64_t id;
    uint64_t aux; /* stages: when stage 1 began; mixed: the request kind */
};

static void die(const char *what) {
    perror(what);
    exit(2);
}

static void make_pipe(int p[2]) {
    if (pipe(p) != 0) die("pipe");
}

static int tid(void) { return (int)syscall(SYS_gettid); }

/* A fixed amount of computation, so that every task takes some time. */
static uint64_t spin(uint64_t seed, int rounds) {
    uint64_t x = seed | 1;
    for (int i = 0; i < rounds; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static volatile uint64_t sink_value;

static NOINLINE void send_msg(int fd, uint64_t id, uint64_t aux) {
    struct msg m = {id, aux};
    if (write(fd, &m, sizeof m) != sizeof m) die("write");
}

/* The stop message goes out from its own call site, so its leaves are not the requests'. */
static NOINLINE void send_stop(int fd) { send_msg(fd, STOP, 0); }

/* Returns 0 at the end of the stream. */
static NOINLINE int take_msg(int fd, struct msg *m) {
    ssize_t n = read(fd, m, sizeof *m);
    if (n == 0) return 0;
    if (n != sizeof *m) die("read");
    return 1;
}

/* ---- stages ---------------------------------------------------------------------------- */

static int s_feed[2], s_p1[2], s_p2[2], s_p3[2];
static int s_items = 1000;
static pthread_mutex_t s_stats = PTHREAD_MUTEX_INITIALIZER;
static uint64_t s_done;
static volatile int s_stop;
static sem_t s_ping, s_pong;

static NOINLINE void stage_one(uint64_t i) {
    uint64_t start = truth_now();
    if (i == STOP) {
        send_stop(s_p1[1]);
        return;
    }
    sink_value = spin(i, 4000);
    truth_task("stage1", (int64_t)i, (int64_t)i, start, truth_now());
    send_msg(s_p1[1], i, start);
}

static NOINLINE void stage_two(const struct msg *m) {
    uint64_t start = truth_now();
    if (m->id == STOP) {
        send_stop(s_p2[1]);
        return;
    }
    sink_value = spin(m->id, 6000);
    truth_task("stage2", (int64_t)m->id, (int64_t)m->id, start, truth_now());
    send_msg(s_p2[1], m->id, m->aux);
}

static NOINLINE void stage_three(const struct msg *m) {
    uint64_t start = truth_now();
    if (m->id == STOP) {
        send_stop(s_p3[1]);
        return;
    }
    sink_value = spin(m->id, 3000);
    pthread_mutex_lock(&s_stats);
    s_done++;
    pthread_mutex_unlock(&s_stats);
    uint64_t end = truth_now();
    truth_task("stage3", (int64_t)m->id, (int64_t)m->id, start, end);
    truth_task("request", (int64_t)m->id, -1, m->aux, end);
    send_msg(s_p3[1], m->id, 0);
}

static void *stage1_main(void *a) {
    struct msg m;
    (void)a;
    while (take_msg(s_feed[0], &m)) {
        stage_one(m.id);
        if (m.id == STOP) break;
    }
    return NULL;
}

static void *stage2_main(void *a) {
    struct msg m;
    (void)a;
    while (take_msg(s_p1[0], &m)) {
        stage_two(&m);
        if (m.id == STOP) break;
    }
    return NULL;
}

static void *stage3_main(void *a) {
    struct msg m;
    (void)a;
    while (take_msg(s_p2[0], &m)) {
        stage_three(&m);
        if (m.id == STOP) break;
    }
    return NULL;
}

/* `tasks feed N`: the untraced feeder, writing N requests and a stop message to stdout. */
static int feed_main(int items) {
    for (int i = 0; i < items; i++) {
        struct msg m = {(uint64_t)i, 0};
        if (write(1, &m, sizeof m) != sizeof m) return 1;
    }
    struct msg stop = {STOP, 0};
    return write(1, &stop, sizeof stop) == sizeof stop ? 0 : 1;
}

extern char **environ;

/* Starts the feeder without the agent. The agent follows exec and posix_spawn (it puts itself
 * back into the environment), so this forks and execs with raw system calls, which it does not
 * see, and an environment without LD_PRELOAD and SCALPEL_*. The child makes no library call
 * before exec. */
static pid_t start_feeder(int items) {
    static char *env[256];
    int n = 0;
    for (char **e = environ; *e && n < 255; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0 && strncmp(*e, "SCALPEL_", 8) != 0) env[n++] = *e;
    env[n] = NULL;
    static char count[32];
    snprintf(count, sizeof count, "%d", items);
    static char *argv[] = {"tasks", "feed", count, NULL};
    long pid = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
    if (pid < 0) die("clone");
    if (pid == 0) {
        syscall(SYS_dup2, (long)s_feed[1], 1L);
        syscall(SYS_execve, "/proc/self/exe", argv, env);
        syscall(SYS_exit_group, 127L);
    }
    close(s_feed[1]);
    return (pid_t)pid;
}

/* Noise: one thread takes the stages' statistics lock now and then; two more play ping-pong
 * over a pair of semaphores, a repeated pattern of their own that must stay apart. */
static void *noise_lock_main(void *a) {
    (void)a;
    truth_noise(getpid(), tid());
    while (!s_stop) {
        pthread_mutex_lock(&s_stats);
        sink_value = spin(s_done, 2000);
        pthread_mutex_unlock(&s_stats);
        usleep(300);
    }
    return NULL;
}

static NOINLINE void ping(void) {
    sem_post(&s_ping);
    sem_wait(&s_pong);
}

static NOINLINE void pong(void) {
    sem_wait(&s_ping);
    sink_value = spin(7, 500);
    sem_post(&s_pong);
}

static void *noise_ping_main(void *a) {
    (void)a;
    for (int i = 0; i < 200; i++) {
        ping();
        usleep(500);
    }
    return NULL;
}

static void *noise_pong_main(void *a) {
    (void)a;
    for (int i = 0; i < 200; i++) pong();
    return NULL;
}

static void run_stages(void) {
    pthread_t st[3], nz[3];
    make_pipe(s_feed);
    make_pipe(s_p1);
    make_pipe(s_p2);
    make_pipe(s_p3);
    sem_init(&s_ping, 0, 0);
    sem_init(&s_pong, 0, 0);
    void *(*noise[3])(void *) = {noise_lock_main, noise_ping_main, noise_pong_main};
    for (int i = 0; i < 3; i++)
        if (pthread_create(&nz[i], NULL, noise[i], NULL)) die("pthread_create");
    void *(*stage[3])(void *) = {stage1_main, stage2_main, stage3_main};
    for (int i = 0; i < 3; i++)
        if (pthread_create(&st[i], NULL, stage[i], NULL)) die("pthread_create");
    pid_t feeder = start_feeder(s_items);
    struct msg m;
    uint64_t got = 0;
    while (take_msg(s_p3[0], &m) && m.id != STOP) got++;
    for (int i = 0; i < 3; i++) pthread_join(st[i], NULL);
    waitpid(feeder, NULL, 0);
    s_stop = 1;
    for (int i = 0; i < 3; i++) pthread_join(nz[i], NULL);
    printf("tasks stages: %llu requests through 3 stages\n", (unsigned long long)got);
}

/* ---- mixed ----------------------------------------------------------------------------- */

#define WORKERS 4
enum { GET = 1, PUT = 2 };
static int m_req[WORKERS][2], m_rep[WORKERS][2];
static unsigned m_put_sleep_us;

static NOINLINE void serve_get(int w, const struct msg *m) {
    uint64_t start = truth_now();
    sink_value = spin(m->id, 3000);
    truth_task("get_serve", (int64_t)m->id, (int64_t)m->id, start, truth_now());
    truth_task("get", (int64_t)m->id, -1, start, truth_now());
    send_msg(m_rep[w][1], m->id, GET);
}

static NOINLINE void serve_put(int w, const struct msg *m) {
    uint64_t start = truth_now();
    sink_value = spin(m->id, 9000);
    if (m_put_sleep_us) {
        /* The sleep as it really went (it overruns on a busy machine), for the test. */
        uint64_t s0 = truth_now();
        usleep(m_put_sleep_us);
        truth_task("put_sleep", (int64_t)m->id, (int64_t)m->id, s0, truth_now());
    }
    truth_task("put_serve", (int64_t)m->id, (int64_t)m->id, start, truth_now());
    truth_task("put", (int64_t)m->id, -1, start, truth_now());
    send_msg(m_rep[w][1], m->id, PUT);
}

static void *mixed_worker(void *a) {
    int w = (int)(intptr_t)a;
    struct msg m;
    while (take_msg(m_req[w][0], &m)) {
        if (m.aux == GET)
            serve_get(w, &m);
        else
            serve_put(w, &m);
    }
    return NULL;
}

/* The client prepares each request (the `ask` part of the task) and sends it to a worker. */
static NOINLINE void send_get(int w, uint64_t i) {
    uint64_t start = truth_now();
    sink_value = spin(i, 1500);
    truth_task("get_ask", (int64_t)i, (int64_t)i, start, truth_now());
    send_msg(m_req[w][1], i, GET);
}

static NOINLINE void send_put(int w, uint64_t i) {
    uint64_t start = truth_now();
    sink_value = spin(i, 2500);
    truth_task("put_ask", (int64_t)i, (int64_t)i, start, truth_now());
    send_msg(m_req[w][1], i, PUT);
}
static NOINLINE void collect_reply(int w) {
    struct msg m;
    if (!take_msg(m_rep[w][0], &m)) die("reply");
}

static void run_mixed(int items) {
    pthread_t th[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        make_pipe(m_req[w]);
        make_pipe(m_rep[w]);
        if (pthread_create(&th[w], NULL, mixed_worker, (void *)(intptr_t)w)) die("pthread_create");
    }
    /* Keeps one request outstanding per worker; the kind is a fixed pseudo-random pick. */
    uint64_t x = 88172645463325252ull;
    int puts = 0;
    for (int i = 0; i < items; i++) {
        int w = i % WORKERS;
        if (i >= WORKERS) collect_reply(w);
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (x % 3 == 0) {
            send_put(w, (uint64_t)i);
            puts++;
        } else {
            send_get(w, (uint64_t)i);
        }
    }
    for (int i = items; i < items + WORKERS; i++)
        if (i >= WORKERS && i - WORKERS < items) collect_reply(i % WORKERS);
    for (int w = 0; w < WORKERS; w++) close(m_req[w][1]);
    for (int w = 0; w < WORKERS; w++) pthread_join(th[w], NULL);
    printf("tasks mixed: %d requests (%d get, %d put) on %d workers\n", items, items - puts, puts,
           WORKERS);
}

/* ---- nested ---------------------------------------------------------------------------- */

#define FRONTS 2
static int n_req[FRONTS][2], n_sub[FRONTS][2][2], n_done[FRONTS][2][2];

static NOINLINE void fan_out(int f, uint64_t r) {
    uint64_t start = truth_now();
    sink_value = spin(r, 1000);
    truth_task("dispatch", (int64_t)r, (int64_t)r, start, truth_now());
    send_msg(n_sub[f][0][1], r * 2, 0);
    send_msg(n_sub[f][1][1], r * 2 + 1, 0);
}

static NOINLINE void join_subs(int f, uint64_t r) {
    struct msg m;
    for (int h = 0; h < 2; h++)
        if (!take_msg(n_done[f][h][0], &m)) die("done");
    uint64_t start = truth_now();
    sink_value = spin(r, 1000);
    truth_task("finish", (int64_t)r, (int64_t)r, start, truth_now());
    truth_task("request", (int64_t)r, -1, start, truth_now());
}

static void *front_main(void *a) {
    int f = (int)(intptr_t)a;
    struct msg m;
    while (take_msg(n_req[f][0], &m)) {
        fan_out(f, m.id);
        join_subs(f, m.id);
    }
    for (int h = 0; h < 2; h++) close(n_sub[f][h][1]);
    return NULL;
}

static NOINLINE void serve_subrequest(int f, int h, const struct msg *m) {
    uint64_t start = truth_now();
    sink_value = spin(m->id, 5000);
    truth_task("subrequest", (int64_t)m->id, (int64_t)(m->id / 2), start, truth_now());
    send_msg(n_done[f][h][1], m->id, 0);
}

static void *back_main(void *a) {
    int f = (int)(intptr_t)a / 2, h = (int)(intptr_t)a % 2;
    struct msg m;
    while (take_msg(n_sub[f][h][0], &m)) serve_subrequest(f, h, &m);
    return NULL;
}

static void run_nested(int items) {
    pthread_t fr[FRONTS], bk[FRONTS * 2];
    for (int f = 0; f < FRONTS; f++) {
        make_pipe(n_req[f]);
        for (int h = 0; h < 2; h++) {
            make_pipe(n_sub[f][h]);
            make_pipe(n_done[f][h]);
        }
    }
    for (int b = 0; b < FRONTS * 2; b++)
        if (pthread_create(&bk[b], NULL, back_main, (void *)(intptr_t)b)) die("pthread_create");
    for (int f = 0; f < FRONTS; f++)
        if (pthread_create(&fr[f], NULL, front_main, (void *)(intptr_t)f)) die("pthread_create");
    for (int r = 0; r < items; r++) send_msg(n_req[r % FRONTS][1], (uint64_t)r, 0);
    for (int f = 0; f < FRONTS; f++) close(n_req[f][1]);
    for (int f = 0; f < FRONTS; f++) pthread_join(fr[f], NULL);
    for (int b = 0; b < FRONTS * 2; b++) pthread_join(bk[b], NULL);
    printf("tasks nested: %d requests, %d sub-requests\n", items, items * 2);
}

int tasks_main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int items = -1;
    if (strcmp(mode, "feed") == 0) return feed_main(argc > 2 ? atoi(argv[2]) : 0);
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--items") == 0 && i + 1 < argc)
            items = atoi(argv[++i]);
        else if (strcmp(argv[i], "--put-sleep-us") == 0 && i + 1 < argc)
            m_put_sleep_us = (unsigned)atoi(argv[++i]);
        else {
            fprintf(stderr, "tasks: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    if (strcmp(mode, "stages") == 0) {
        truth_open("tasks-stages");
        if (items > 0) s_items = items;
        run_stages();
    } else if (strcmp(mode, "mixed") == 0) {
        truth_open("tasks-mixed");
        run_mixed(items > 0 ? items : 1000);
    } else if (strcmp(mode, "nested") == 0) {
        truth_open("tasks-nested");
        run_nested(items > 0 ? items : 500);
    } else {
        fprintf(stderr, "usage: tasks stages|mixed|nested [--items N] [--put-sleep-us N]\n");
        return 2;
    }
    return 0;
}
