/* A program stripped of its symbols whose requests are handled by callbacks from a library's
 * event loop (libdispatch.so, tests/c/dispatch.c), as memcached's are from libevent's. A client
 * thread sends 200 requests down a pipe and reads each answer from another; the callback reads
 * a request and writes its answer. Its tasks must be named by the program (`in loopmain`), not
 * by the library's loop (`dispatch_run`) that called it. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef int (*dispatch_cb)(int fd, void *arg);
int dispatch_run(int fd, dispatch_cb cb, void *arg);

#define REQUESTS 200

static int to_server[2], to_client[2];

static int serve(int fd, void *arg) {
    (void)arg;
    char req[16];
    if (read(fd, req, sizeof req) != (ssize_t)sizeof req) return 1;
    char ans[16];
    memcpy(ans, req, sizeof ans);
    ans[0] = 'A';
    if (write(to_client[1], ans, sizeof ans) != (ssize_t)sizeof ans) return 1;
    return req[1] == 'Q';
}

static void *client(void *arg) {
    (void)arg;
    for (int i = 0; i < REQUESTS; i++) {
        char req[16] = {0};
        snprintf(req, sizeof req, "R%c%d", i + 1 == REQUESTS ? 'Q' : 'r', i);
        if (write(to_server[1], req, sizeof req) != (ssize_t)sizeof req) return NULL;
        char ans[16];
        if (read(to_client[0], ans, sizeof ans) != (ssize_t)sizeof ans) return NULL;
    }
    return NULL;
}

int main(void) {
    if (pipe(to_server) || pipe(to_client)) return 1;
    pthread_t t;
    pthread_create(&t, NULL, client, NULL);
    dispatch_run(to_server[0], serve, NULL);
    pthread_join(t, NULL);
    printf("loopmain requests %d\n", REQUESTS);
    return 0;
}
