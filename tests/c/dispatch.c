/* A library event loop (libdispatch.so, for tests/tests/dispatch.rs): it waits on a
 * set of descriptors and calls the program's callback for each one that is ready, as libevent's
 * event_base_loop does. Its functions are exported, so they keep their names when the program
 * that links it is stripped. */
#include <sys/epoll.h>
#include <unistd.h>

typedef int (*dispatch_cb)(int fd, void *arg);

/* Calls `cb(fd, arg)` whenever `fd` is readable, until a callback returns non-zero. */
int dispatch_run(int fd, dispatch_cb cb, void *arg) {
    int ep = epoll_create1(0);
    if (ep < 0) return -1;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) return -1;
    for (;;) {
        struct epoll_event got;
        int n = epoll_wait(ep, &got, 1, -1);
        if (n < 0) continue;
        if (n == 1 && cb(got.data.fd, arg) != 0) break;
    }
    close(ep);
    return 0;
}
