/* An event loop that offloads each request to a thread pool while its clients pipeline, for the
 * golden corpus (tests/corpus/pipelined-pool): the rules on a pool's completions (`completions`)
 * on a program of nginx's shape under a pipelining client.
 *
 *   corpus_pipelined_pool EXE   the server: one epoll loop over CLIENTS connections. A read
 *                     takes whatever a client sent (DEPTH requests written at once); the loop
 *                     hands the first request to a pool of two threads (a mutex and condition
 *                     queue) and keeps the rest. A pool thread answers the job and reports it
 *                     done through an eventfd that the loop watches edge-triggered and never
 *                     reads, as nginx's thread pools do. When epoll reports it the loop writes the
 *                     replies of every finished job, one write each, and only then hands over
 *                     the next buffered request of each of those connections: the pipelined
 *                     request is parsed with no call on its connection, after another
 *                     connection's reply. The clients run in EXE (this program linked
 *                     statically, which the agent cannot record): a load outside the trace.
 *   corpus_pipelined_pool clients PORT   (internal) the clients, one thread per connection,
 *                     each writing DEPTH requests at once and reading DEPTH replies, BATCHES
 *                     times. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
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

#ifndef CLIENTS
#define CLIENTS 3
#endif
#ifndef DEPTH
#define DEPTH 4
#endif
#ifndef BATCHES
#define BATCHES 4
#endif
#define MSG 16
#define WORKERS 2

static struct sockaddr_in front;

static int full(int fd, char *buf, size_t n, int writing) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = writing ? write(fd, buf + got, n - got) : read(fd, buf + got, n - got);
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static void *client(void *arg) {
    (void)arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&front, sizeof front)) exit(1);
    char buf[MSG * DEPTH];
    for (int b = 0; b < BATCHES; b++) {
        memset(buf, 'a' + b % 26, sizeof buf);
        if (full(fd, buf, sizeof buf, 1) || full(fd, buf, sizeof buf, 0)) exit(1);
    }
    close(fd);
    return NULL;
}

/* A connection: the requests read and not yet handed over. */
struct conn {
    int fd;
    char buf[MSG * DEPTH];
    size_t have, next;
    struct conn *posted;
};

/* A job: one request of a connection, and its answer. */
struct job {
    struct conn *c;
    char msg[MSG];
    struct job *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static struct job *todo, *done;
static int efd, stopping;

static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (todo == NULL && !stopping) pthread_cond_wait(&work, &mu);
        struct job *j = todo;
        if (j == NULL) {
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        todo = j->next;
        pthread_mutex_unlock(&mu);
        for (int i = 0; i < MSG; i++) j->msg[i] = (char)(j->msg[i] ^ 0x20);
        pthread_mutex_lock(&mu);
        j->next = done;
        done = j;
        pthread_mutex_unlock(&mu);
        uint64_t one = 1;
        if (write(efd, &one, sizeof one) != sizeof one) exit(1);
    }
}

/* Hands the connection's next buffered request to the pool. */
static void hand_over(struct conn *c) {
    struct job *j = malloc(sizeof *j);
    j->c = c;
    memcpy(j->msg, c->buf + c->next, MSG);
    c->next += MSG;
    pthread_mutex_lock(&mu);
    struct job **tail = &todo;
    while (*tail) tail = &(*tail)->next;
    j->next = NULL;
    *tail = j;
    pthread_cond_signal(&work);
    pthread_mutex_unlock(&mu);
}

/* Writes the replies of every finished job (oldest first), then hands over the next request of
 * each of their connections that has one buffered. */
static void answer(void) {
    pthread_mutex_lock(&mu);
    struct job *list = done, *rev = NULL;
    done = NULL;
    pthread_mutex_unlock(&mu);
    while (list) {
        struct job *j = list;
        list = j->next;
        j->next = rev;
        rev = j;
    }
    struct conn *posted = NULL, **tail = &posted;
    for (struct job *j = rev; j;) {
        struct job *next = j->next;
        if (full(j->c->fd, j->msg, MSG, 1)) exit(1);
        if (j->c->next < j->c->have) {
            j->c->posted = NULL;
            *tail = j->c;
            tail = &j->c->posted;
        }
        free(j);
        j = next;
    }
    for (struct conn *c = posted; c; c = c->posted) hand_over(c);
}

static void watch(int ep, int fd, void *p, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.ptr = p};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) exit(1);
}

static int serve(int lfd) {
    int ep = epoll_create1(0);
    static char lmark, emark;
    watch(ep, lfd, &lmark, EPOLLIN);
    /* Each write reports it again: the count is never read, so it only grows. */
    watch(ep, efd, &emark, EPOLLIN | EPOLLET);
    int open = 0, accepted = 0;
    while (accepted < CLIENTS || open > 0) {
        struct epoll_event ev[8];
        int n = epoll_wait(ep, ev, 8, -1);
        for (int i = 0; i < n; i++) {
            void *p = ev[i].data.ptr;
            if (p == &lmark) {
                struct conn *c = calloc(1, sizeof *c);
                c->fd = accept(lfd, NULL, NULL);
                watch(ep, c->fd, c, EPOLLIN);
                accepted++, open++;
            } else if (p == &emark) {
                answer();
            } else {
                struct conn *c = p;
                ssize_t r = read(c->fd, c->buf, sizeof c->buf);
                if (r <= 0) {
                    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                    close(c->fd);
                    free(c);
                    open--;
                    continue;
                }
                /* A client writes DEPTH requests at once; a short read waits for the rest. */
                c->have = (size_t)r;
                if (c->have % MSG && full(c->fd, c->buf + c->have, MSG - c->have % MSG, 0) == 0)
                    c->have += MSG - c->have % MSG;
                c->next = 0;
                hand_over(c);
            }
        }
    }
    return 0;
}

static int listener(struct sockaddr_in *a) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *a;
    if (bind(fd, (struct sockaddr *)a, sizeof *a) || listen(fd, 16) ||
        getsockname(fd, (struct sockaddr *)a, &len))
        exit(1);
    return fd;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "clients") && argc > 2) {
        front.sin_family = AF_INET;
        front.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        front.sin_port = htons((uint16_t)atoi(argv[2]));
        pthread_t t[CLIENTS];
        for (int i = 0; i < CLIENTS; i++) pthread_create(&t[i], NULL, client, NULL);
        for (int i = 0; i < CLIENTS; i++) pthread_join(t[i], NULL);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: corpus_pipelined_pool STATIC_EXE\n");
        return 2;
    }
    efd = eventfd(0, 0);
    pthread_t w[WORKERS];
    for (int i = 0; i < WORKERS; i++) pthread_create(&w[i], NULL, worker, NULL);
    int lfd = listener(&front);
    char port[16];
    snprintf(port, sizeof port, "%d", ntohs(front.sin_port));
    pid_t c = fork();
    if (c == 0) {
        execl(argv[1], argv[1], "clients", port, (char *)NULL);
        _exit(127);
    }
    int rc = serve(lfd);
    waitpid(c, NULL, 0);
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_broadcast(&work);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < WORKERS; i++) pthread_join(w[i], NULL);
    printf("pipelined_pool replies %d\n", CLIENTS * DEPTH * BATCHES);
    return rc;
}
