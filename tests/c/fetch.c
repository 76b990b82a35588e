/* fetch: an event loop whose next request is sometimes there before it waits (tests/tests/variants.rs).
 *
 *   client thread: 40 requests of 16 bytes on a socket pair, each answered with 1 byte; every
 *                  other time it sends two requests in one write (send_pair) before reading
 *                  both replies, so both are there when the server wakes, whatever the timing.
 *   server (main): epoll_wait on its end; then reads requests (read_request) until the socket
 *                  would block, answering each (send_answer).
 *
 * The second request of a pair is read without an epoll wait before it. It is new work all the
 * same, and its leaves must be typed like the first's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define REQUESTS 40

static int sv[2];

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static __attribute__((noinline)) ssize_t read_request(char *buf) { return read(sv[0], buf, 16); }
static __attribute__((noinline)) void send_answer(void) { must(write(sv[0], "a", 1) == 1, "write"); }
static __attribute__((noinline)) void send_request(const char *req) { must(write(sv[1], req, 16) == 16, "write"); }
static __attribute__((noinline)) void send_pair(const char *req) {
    char two[32];
    for (int i = 0; i < 16; i++) two[i] = two[16 + i] = req[i];
    must(write(sv[1], two, 32) == 32, "write");
}
static __attribute__((noinline)) void read_answer(void) {
    char c;
    must(read(sv[1], &c, 1) == 1, "read");
}

static void *client(void *arg) {
    (void)arg;
    const char req[16] = "request........";
    for (int i = 0; i < REQUESTS;) {
        if (i % 4 == 2 && i + 1 < REQUESTS) {
            send_pair(req);
            read_answer();
            read_answer();
            i += 2;
        } else {
            send_request(req);
            read_answer();
            i += 1;
        }
        usleep(1000);
    }
    return NULL;
}

int main(void) {
    must(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    must(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0, "fcntl");
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = sv[0]};
    must(epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev) == 0, "epoll_ctl");
    pthread_t t;
    must(pthread_create(&t, NULL, client, NULL) == 0, "pthread_create");
    int served = 0;
    while (served < REQUESTS) {
        struct epoll_event out;
        must(epoll_wait(ep, &out, 1, -1) == 1, "epoll_wait");
        char buf[16];
        ssize_t n;
        while ((n = read_request(buf)) == 16) {
            send_answer();
            served++;
        }
        must(n < 0 && errno == EAGAIN, "read");
    }
    pthread_join(t, NULL);
    printf("served %d\n", served);
    return 0;
}
