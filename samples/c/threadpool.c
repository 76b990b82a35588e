/* threadpool: the shape of Apache's worker MPM, with a known task structure.
 *
 *   acceptor thread --accept--> bounded queue (one mutex, two condition variables) --> N workers
 *   each worker serves one connection at a time: read request, compute, write response, repeat
 *
 * The load client runs in a forked process: C connections (one thread each), R requests per
 * connection, each response checked. Protocol: request = u32 length + payload; response = u32
 * length + u64 FNV-1a of the payload + u64 request id (the server numbers connections in accept
 * order, so the client learns the ids from the replies).
 *
 * Ground truth (samples/TRUTH.md), written when $SCALPEL_TRUTH is set. Spans run from the return
 * of the sync call that starts a task to the entry of the one that ends it, as leaves do, so a
 * blocking call at either end belongs to neither side:
 *   accept      acceptor  accept returned -> connection queued (signal called)   id = parent = connection
 *   connection  worker    connection dequeued -> the read finding it closed called   id = connection
 *   request     worker    request header read -> response write called  id = parent = request
 *   call        client    request prepared -> response read called      id = request, parent = connection
 * Nesting: a connection holds its accept and its calls, and a call holds the server's request.
 *
 * Usage: threadpool [--workers N] [--connections C] [--requests R]   (defaults 4, 8, 200) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "truth.h"

#define QCAP 8
#define MAX_WORKERS 64
#define MAX_CONNS 256

static int workers = 4, connections = 8, requests = 200;
static int listen_fd;

/* --- the bounded connection queue -------------------------------------------------------- */
static struct { int fd; int64_t id; } queue[QCAP];
static int q_head, q_len, q_closed;
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_not_empty = PTHREAD_COND_INITIALIZER, q_not_full = PTHREAD_COND_INITIALIZER;

/* Queues a connection; `queued` is when it was in the queue, just before the signal. */
static __attribute__((noinline)) void enqueue_connection(int fd, int64_t id, uint64_t *queued) {
    pthread_mutex_lock(&q_lock);
    while (q_len == QCAP) pthread_cond_wait(&q_not_full, &q_lock);
    queue[(q_head + q_len) % QCAP].fd = fd;
    queue[(q_head + q_len) % QCAP].id = id;
    q_len++;
    *queued = truth_now();
    pthread_cond_signal(&q_not_empty);
    pthread_mutex_unlock(&q_lock);
}

static __attribute__((noinline)) int dequeue_connection(int64_t *id) {
    pthread_mutex_lock(&q_lock);
    while (q_len == 0 && !q_closed) pthread_cond_wait(&q_not_empty, &q_lock);
    int fd = -1;
    if (q_len > 0) {
        fd = queue[q_head].fd;
        *id = queue[q_head].id;
        q_head = (q_head + 1) % QCAP;
        q_len--;
        pthread_cond_signal(&q_not_full);
    }
    pthread_mutex_unlock(&q_lock);
    return fd;
}

/* --- protocol ---------------------------------------------------------------------------- */
static int read_full(int fd, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r <= 0) {
            if (r < 0 && errno == EINTR) continue;
            return got == 0 && r == 0 ? 0 : -1;
        }
        got += (size_t)r;
    }
    return 1;
}

static int write_full(int fd, const void *buf, size_t n) {
    size_t put = 0;
    while (put < n) {
        ssize_t r = write(fd, (const char *)buf + put, n - put);
        if (r <= 0) {
            if (r < 0 && errno == EINTR) continue;
            return -1;
        }
        put += (size_t)r;
    }
    return 1;
}

static uint64_t fnv(const unsigned char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* --- server ------------------------------------------------------------------------------ */
/* Reads one request; `start` is when its header arrived (the request's task begins there). */
static __attribute__((noinline)) int recv_request(int fd, unsigned char *buf, uint32_t *len, uint64_t *start) {
    int r = read_full(fd, len, 4);
    if (r <= 0) return r;
    *start = truth_now();
    if (*len > 4096) return -1;
    return read_full(fd, buf, *len);
}

static volatile uint64_t sink;

/* The request's work: a hash of the payload (the reply) and some arithmetic (the cost). */
static __attribute__((noinline)) uint64_t handle_request(const unsigned char *buf, uint32_t len) {
    uint64_t h = fnv(buf, len), x = h;
    for (int i = 0; i < 2000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    sink = x;
    return h;
}

/* Sends one response; `end` is when the write was called (the request's task ends there). */
static __attribute__((noinline)) int send_response(int fd, uint64_t value, int64_t id, uint64_t *end) {
    unsigned char out[20];
    uint32_t len = 16;
    memcpy(out, &len, 4);
    memcpy(out + 4, &value, 8);
    memcpy(out + 12, &id, 8);
    *end = truth_now();
    return write_full(fd, out, sizeof out);
}

static void *worker_main(void *arg) {
    (void)arg;
    for (;;) {
        int64_t conn;
        int fd = dequeue_connection(&conn);
        if (fd < 0) return NULL;
        uint64_t conn_start = truth_now();
        unsigned char buf[4096];
        uint64_t conn_end;
        for (int64_t n = 0;; n++) {
            uint64_t start = 0, end;
            uint32_t len;
            conn_end = truth_now();
            int r = recv_request(fd, buf, &len, &start);
            if (r <= 0) break;
            uint64_t value = handle_request(buf, len);
            int64_t id = conn * 1000000 + n;
            if (send_response(fd, value, id, &end) <= 0) break;
            truth_task("request", id, id, start, end);
        }
        close(fd);
        truth_task("connection", conn, -1, conn_start, conn_end);
    }
}

static void *acceptor_main(void *arg) {
    (void)arg;
    for (int64_t id = 0;; id++) {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR) continue;
            break; /* the listening socket was shut down */
        }
        uint64_t start = truth_now();
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        uint64_t queued;
        enqueue_connection(fd, id, &queued);
        truth_task("accept", id, id, start, queued);
    }
    pthread_mutex_lock(&q_lock);
    q_closed = 1;
    pthread_cond_broadcast(&q_not_empty);
    pthread_mutex_unlock(&q_lock);
    return NULL;
}

/* --- client ------------------------------------------------------------------------------ */
static struct sockaddr_in server_addr;

static void *client_main(void *arg) {
    int64_t conn = (int64_t)(intptr_t)arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&server_addr, sizeof server_addr) != 0) {
        perror("threadpool client: connect");
        exit(1);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    unsigned char buf[600];
    for (int n = 0; n < requests; n++) {
        uint64_t start = truth_now();
        uint32_t len = 16 + (uint32_t)((conn * 131 + n * 17) % 500);
        for (uint32_t i = 0; i < len; i++) buf[4 + i] = (unsigned char)(conn + n + i);
        memcpy(buf, &len, 4);
        unsigned char resp[20];
        if (write_full(fd, buf, 4 + len) <= 0) goto broke;
        uint64_t end = truth_now();
        if (read_full(fd, resp, sizeof resp) <= 0) goto broke;
        uint64_t got;
        int64_t id;
        memcpy(&got, resp + 4, 8);
        memcpy(&id, resp + 12, 8);
        if (got != fnv(buf + 4, len)) {
            fprintf(stderr, "threadpool client: wrong response\n");
            exit(1);
        }
        truth_task("call", id, id / 1000000, start, end);
    }
    close(fd);
    return NULL;
broke:
    fprintf(stderr, "threadpool client: connection %lld broke\n", (long long)conn);
    exit(1);
}

static int run_client(void) {
    pthread_t t[MAX_CONNS];
    for (int i = 0; i < connections; i++) pthread_create(&t[i], NULL, client_main, (void *)(intptr_t)i);
    for (int i = 0; i < connections; i++) pthread_join(t[i], NULL);
    return 0;
}

int threadpool_main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i += 2) {
        int v = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--workers") == 0) workers = v;
        else if (strcmp(argv[i], "--connections") == 0) connections = v;
        else if (strcmp(argv[i], "--requests") == 0) requests = v;
        else {
            fprintf(stderr, "threadpool: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (workers < 1 || workers > MAX_WORKERS || connections < 1 || connections > MAX_CONNS || requests < 0) {
        fprintf(stderr, "threadpool: workers 1..%d, connections 1..%d, requests >= 0\n", MAX_WORKERS, MAX_CONNS);
        return 2;
    }
    truth_open("threadpool");
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    server_addr.sin_family = AF_INET;
    server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof server_addr;
    if (bind(listen_fd, (struct sockaddr *)&server_addr, sizeof server_addr) != 0 || listen(listen_fd, 64) != 0 ||
        getsockname(listen_fd, (struct sockaddr *)&server_addr, &alen) != 0) {
        perror("threadpool: listen");
        return 1;
    }
    pthread_t acceptor, pool[MAX_WORKERS];
    pthread_create(&acceptor, NULL, acceptor_main, NULL);
    for (int i = 0; i < workers; i++) pthread_create(&pool[i], NULL, worker_main, NULL);

    pid_t client = fork();
    if (client == 0) _exit(run_client());
    int status;
    waitpid(client, &status, 0);
    shutdown(listen_fd, SHUT_RDWR);
    pthread_join(acceptor, NULL);
    for (int i = 0; i < workers; i++) pthread_join(pool[i], NULL);
    close(listen_fd);
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    printf("threadpool: %d workers served %d connections x %d requests: %s\n", workers, connections, requests,
           ok ? "ok" : "CLIENT FAILED");
    return ok ? 0 : 1;
}
