/* A proxy in front of a backend outside the trace, for the golden corpus (tests/corpus/proxy):
 * the outbound-call rule (`outbound`) on a program of nginx's proxy shape.
 *
 *   corpus_proxy EXE   the proxy: one epoll loop over CLIENTS client connections of REQS
 *                      requests each. For every request it opens a connection to the backend
 *                      (non-blocking: the connect is in progress when it returns), writes the
 *                      request there when epoll says the connection is writable, reads the
 *                      answer when it says readable, closes the backend connection and writes
 *                      the answer to the client. The backend and the clients run in EXE (this
 *                      program linked statically, which the agent cannot record): a peer outside
 *                      the trace, and a load outside it.
 *   corpus_proxy backend FD         (internal) answers every request on a listening socket.
 *   corpus_proxy clients PORT       (internal) the clients, one thread per connection. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLIENTS
#define CLIENTS 3
#endif
#ifndef REQS
#define REQS 12
#endif
#define MSG 16

static struct sockaddr_in front, back;

static int full(ssize_t (*io)(int, void *, size_t), int fd, char *buf) {
    size_t got = 0;
    while (got < MSG) {
        ssize_t r = io(fd, buf + got, MSG - got);
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static ssize_t rd(int fd, void *b, size_t n) { return read(fd, b, n); }
static ssize_t wr(int fd, void *b, size_t n) { return write(fd, b, n); }

static void *client(void *arg) {
    (void)arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&front, sizeof front)) exit(1);
    char buf[MSG];
    for (int i = 0; i < REQS; i++) {
        memset(buf, 'a' + i % 26, MSG);
        if (full(wr, fd, buf) || full(rd, fd, buf)) exit(1);
    }
    close(fd);
    return NULL;
}

static int backend(int lfd) {
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) return 0;
        char buf[MSG];
        while (full(rd, fd, buf) == 0) {
            buf[0] = 'B';
            if (full(wr, fd, buf)) break;
        }
        close(fd);
    }
}

/* A client connection and the backend call of its request under way. */
struct conn {
    int fd, up;
    char buf[MSG];
};

static void watch(int ep, int fd, uint32_t events, void *p, int op) {
    struct epoll_event ev = {.events = events, .data.ptr = p};
    if (epoll_ctl(ep, op, fd, &ev)) exit(1);
}

/* Tags in the epoll data: a client's event or its backend connection's. */
#define UP 1u

static int proxy(int lfd) {
    int ep = epoll_create1(0);
    watch(ep, lfd, EPOLLIN, NULL, EPOLL_CTL_ADD);
    int open = 0, accepted = 0;
    while (accepted < CLIENTS || open > 0) {
        struct epoll_event ev[8];
        int n = epoll_wait(ep, ev, 8, -1);
        for (int i = 0; i < n; i++) {
            uintptr_t tag = (uintptr_t)ev[i].data.ptr;
            struct conn *c = (struct conn *)(tag & ~(uintptr_t)UP);
            if (c == NULL) {
                struct conn *nc = calloc(1, sizeof *nc);
                nc->fd = accept(lfd, NULL, NULL);
                nc->up = -1;
                watch(ep, nc->fd, EPOLLIN, nc, EPOLL_CTL_ADD);
                accepted++, open++;
                continue;
            }
            if (!(tag & UP)) {
                /* The client's request: dial the backend. */
                if (full(rd, c->fd, c->buf)) {
                    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                    close(c->fd);
                    free(c);
                    open--;
                    continue;
                }
                c->up = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
                if (connect(c->up, (struct sockaddr *)&back, sizeof back) && errno != EINPROGRESS)
                    exit(1);
                watch(ep, c->up, EPOLLOUT, (void *)((uintptr_t)c | UP), EPOLL_CTL_ADD);
            } else if (ev[i].events & EPOLLOUT) {
                /* Connected: the request goes out; wait for the answer. */
                if (full(wr, c->up, c->buf)) exit(1);
                watch(ep, c->up, EPOLLIN, (void *)((uintptr_t)c | UP), EPOLL_CTL_MOD);
            } else {
                /* The answer: the backend connection is done; relay it to the client. */
                int fl = fcntl(c->up, F_GETFL);
                fcntl(c->up, F_SETFL, fl & ~O_NONBLOCK);
                if (full(rd, c->up, c->buf)) exit(1);
                epoll_ctl(ep, EPOLL_CTL_DEL, c->up, NULL);
                close(c->up);
                c->up = -1;
                if (full(wr, c->fd, c->buf)) exit(1);
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

static pid_t spawn(const char *exe, const char *mode, int arg) {
    char num[16];
    snprintf(num, sizeof num, "%d", arg);
    pid_t p = fork();
    if (p == 0) {
        execl(exe, exe, mode, num, (char *)NULL);
        _exit(127);
    }
    return p;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "backend") && argc > 2) return backend(atoi(argv[2]));
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
        fprintf(stderr, "usage: corpus_proxy STATIC_EXE\n");
        return 2;
    }
    const char *exe = argv[1];
    int bfd = listener(&back);
    pid_t b = spawn(exe, "backend", bfd);
    close(bfd);
    int lfd = listener(&front);
    pid_t c = spawn(exe, "clients", ntohs(front.sin_port));
    int rc = proxy(lfd);
    waitpid(c, NULL, 0);
    kill(b, SIGTERM);
    waitpid(b, NULL, 0);
    return rc;
}
