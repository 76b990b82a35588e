/* Connections handed from one thread to another, for the golden corpus (tests/corpus/handoff-*):
 * the graph passes written for servers, each on a small program of the server's shape.
 *
 *   corpus_handoffs notify     memcached: main accepts each connection, queues it for one of
 *                              two workers under a mutex and writes that worker's notify pipe;
 *                              the worker reads the pipe, pops the connection, polls it (the
 *                              request comes 3 ms later) and serves it. The hand-off lands where
 *                              the worker was told (`land_handoffs`), not at its first read.
 *   corpus_handoffs broadcast  Apache: main accepts, queues under a mutex and broadcasts a
 *                              condition two idle workers wait on; one takes the connection,
 *                              the other finds the queue empty and waits again: its wakeup did
 *                              no work (`drop_stolen_wakeups`).
 *   corpus_handoffs loop       nginx with a thread pool: main is an epoll loop over two client
 *                              connections; each request is handed to a pool thread (condvar
 *                              queue), whose completion goes back on a done list and an eventfd
 *                              that edge-triggered epoll reports and nobody reads. The loop
 *                              writes each reply on its connection (`eventloop`: per-connection
 *                              order, completions landed on their connection).
 *
 * Clients run in a forked child (a connection's first use in the server's own process must be
 * the server's) on loopback TCP: CONNS connections one after another (notify, broadcast), or
 * LOOP_CLIENTS threads with a connection of LOOP_REQS requests each (loop).
 *
 *   corpus_handoffs loop EXE   the loop's clients run in EXE (this program linked statically,
 *                              so that the agent cannot record it), as memcached's load
 *                              generator does: each connection's requests are then joined only
 *                              by the server, and form a session (`mine::sessions`).
 *   corpus_handoffs clients PORT   (internal) the loop's clients, for the above. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CONNS
#define CONNS 8
#endif
#ifndef LOOP_CLIENTS
#define LOOP_CLIENTS 2
#endif
#ifndef LOOP_REQS
#define LOOP_REQS 6
#endif

static int listen_fd;
static struct sockaddr_in addr;

struct queue {
    pthread_mutex_t m;
    pthread_cond_t cv;
    int fds[64];
    int head, tail;
    int notify[2];
};

static void push(struct queue *q, int fd) { q->fds[q->tail++ % 64] = fd; }
static int empty(struct queue *q) { return q->head == q->tail; }
static int pop(struct queue *q) { return q->fds[q->head++ % 64]; }

static void init(struct queue *q) {
    pthread_mutex_init(&q->m, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->head = q->tail = 0;
    if (pipe(q->notify)) q->notify[0] = q->notify[1] = -1;
}

static int dial(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr)) return -1;
    return fd;
}

static void serve(int fd) {
    char buf[8];
    if (read(fd, buf, sizeof buf) == (ssize_t)sizeof buf) write(fd, buf, sizeof buf);
    close(fd);
}

/* Notify and broadcast: connections one after another, each request 3 ms after connecting. */
static void *client_seq(void *a) {
    char buf[8] = "request";
    (void)a;
    for (int i = 0; i < CONNS; i++) {
        int fd = dial();
        usleep(3000);
        write(fd, buf, sizeof buf);
        read(fd, buf, sizeof buf);
        close(fd);
        usleep(1000);
    }
    return NULL;
}

static struct queue wq[2];

static void *worker_notify(void *a) {
    struct queue *q = a;
    for (;;) {
        char c;
        if (read(q->notify[0], &c, 1) != 1) return NULL;
        pthread_mutex_lock(&q->m);
        int fd = pop(q);
        pthread_mutex_unlock(&q->m);
        if (fd < 0) return NULL;
        struct pollfd p = { fd, POLLIN, 0 };
        poll(&p, 1, -1);
        serve(fd);
    }
}

static void *worker_broadcast(void *a) {
    struct queue *q = a;
    for (;;) {
        pthread_mutex_lock(&q->m);
        while (empty(q)) pthread_cond_wait(&q->cv, &q->m);
        int fd = pop(q);
        pthread_mutex_unlock(&q->m);
        if (fd < 0) return NULL;
        serve(fd);
    }
}

/* Runs `client` in a forked child; returns its pid. */
static pid_t spawn_client(void (*client)(void)) {
    pid_t pid = fork();
    if (pid == 0) {
        client();
        _exit(0);
    }
    return pid;
}

static void clients_seq(void) { client_seq(NULL); }

static const char *client_exe;

/* Runs the loop's clients in `client_exe`, untraced. */
static pid_t spawn_untraced(void) {
    char port[16];
    snprintf(port, sizeof port, "%d", ntohs(addr.sin_port));
    pid_t pid = fork();
    if (pid == 0) {
        execl(client_exe, client_exe, "clients", port, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int handoffs(int notify) {
    pthread_t w[2];
    init(&wq[0]);
    init(&wq[1]);
    for (int i = 0; i < 2; i++)
        pthread_create(&w[i], NULL, notify ? worker_notify : worker_broadcast, &wq[notify ? i : 0]);
    usleep(2000);
    pid_t child = spawn_client(clients_seq);
    for (int i = 0; i <= CONNS; i++) {
        int fd = i < CONNS ? accept(listen_fd, NULL, NULL) : -1;
        for (int k = 0; k < (i < CONNS ? 1 : 2); k++) {
            struct queue *q = &wq[notify ? (i + k) % 2 : 0];
            pthread_mutex_lock(&q->m);
            push(q, fd);
            if (!notify) pthread_cond_broadcast(&q->cv);
            pthread_mutex_unlock(&q->m);
            if (notify) write(q->notify[1], "c", 1);
        }
    }
    waitpid(child, NULL, 0);
    for (int i = 0; i < 2; i++) pthread_join(w[i], NULL);
    return 0;
}

/* Loop: a pool thread's jobs and the done list it hands back. */
static struct queue jobs, done;
static int efd;

static void *client_loop(void *a) {
    char buf[8] = "request";
    int fd = dial();
    (void)a;
    for (int i = 0; i < LOOP_REQS; i++) {
        write(fd, buf, sizeof buf);
        read(fd, buf, sizeof buf);
        usleep(500);
    }
    close(fd);
    return NULL;
}

static void clients_loop(void) {
    pthread_t c[LOOP_CLIENTS];
    for (int i = 0; i < LOOP_CLIENTS; i++) pthread_create(&c[i], NULL, client_loop, NULL);
    for (int i = 0; i < LOOP_CLIENTS; i++) pthread_join(c[i], NULL);
}

static void *pool(void *a) {
    (void)a;
    for (;;) {
        pthread_mutex_lock(&jobs.m);
        while (empty(&jobs)) pthread_cond_wait(&jobs.cv, &jobs.m);
        int fd = pop(&jobs);
        pthread_mutex_unlock(&jobs.m);
        if (fd < 0) return NULL;
        usleep(300);
        pthread_mutex_lock(&done.m);
        push(&done, fd);
        pthread_mutex_unlock(&done.m);
        uint64_t one = 1;
        write(efd, &one, sizeof one);
    }
}

static void watch(int ep, int fd, uint32_t events) {
    struct epoll_event ev = { .events = events, .data.fd = fd };
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static int loop(void) {
    pthread_t p;
    init(&jobs);
    init(&done);
    efd = eventfd(0, EFD_NONBLOCK);
    int ep = epoll_create1(0);
    watch(ep, listen_fd, EPOLLIN);
    watch(ep, efd, EPOLLIN | EPOLLET);
    pthread_create(&p, NULL, pool, NULL);
    pid_t child = client_exe ? spawn_untraced() : spawn_client(clients_loop);
    int served = 0;
    while (served < LOOP_CLIENTS * LOOP_REQS) {
        struct epoll_event evs[16];
        int n = epoll_wait(ep, evs, 16, -1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == listen_fd) {
                watch(ep, accept(listen_fd, NULL, NULL), EPOLLIN);
            } else if (fd == efd) {
                int ready[64], k = 0;
                pthread_mutex_lock(&done.m);
                while (!empty(&done)) ready[k++] = pop(&done);
                pthread_mutex_unlock(&done.m);
                for (int j = 0; j < k; j++, served++) write(ready[j], "reply..", 8);
            } else {
                char buf[8];
                if (read(fd, buf, sizeof buf) <= 0) {
                    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                    close(fd);
                    continue;
                }
                pthread_mutex_lock(&jobs.m);
                push(&jobs, fd);
                pthread_cond_signal(&jobs.cv);
                pthread_mutex_unlock(&jobs.m);
            }
        }
    }
    waitpid(child, NULL, 0);
    pthread_mutex_lock(&jobs.m);
    push(&jobs, -1);
    pthread_cond_signal(&jobs.cv);
    pthread_mutex_unlock(&jobs.m);
    pthread_join(p, NULL);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "clients") && argc > 2) {
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons((uint16_t)atoi(argv[2]));
        clients_loop();
        return 0;
    }
    client_exe = argc > 2 ? argv[2] : NULL;
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) || listen(listen_fd, 16) ||
        getsockname(listen_fd, (struct sockaddr *)&addr, &len))
        return 1;
    if (!strcmp(mode, "notify")) return handoffs(1);
    if (!strcmp(mode, "broadcast")) return handoffs(0);
    if (!strcmp(mode, "loop")) return loop();
    fprintf(stderr, "usage: corpus_handoffs notify|broadcast|loop [CLIENT_EXE]\n");
    return 2;
}
