/* A root master whose worker drops to uid 65534 (as Apache's and nginx's do), asks the recorder's
 * broker for the shared counter table over the inherited socket named in SCALPEL_BROKER, and
 * truncates it to nothing. The master then makes traced calls from four threads; it must not
 * die of SIGBUS (tests/tests/attack_recorder.rs). Prints what the worker's ftruncate returned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *work(void *arg) {
    (void)arg;
    for (int i = 0; i < 10000; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

/* Sends a Shared request (scalpel_format::broker::Request::encode: kind 1, pid at 4) with a reply
 * socket, and returns the descriptor of the answer, or -1. */
static int ask_shared(int sock) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return -1;
    unsigned char req[24] = {0};
    req[0] = 1;
    uint32_t pid = (uint32_t)getpid();
    memcpy(req + 4, &pid, 4);
    struct iovec iov = {req, sizeof req};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &pair[1], sizeof(int));
    if (sendmsg(sock, &msg, 0) != (ssize_t)sizeof req) return -1;
    close(pair[1]);
    unsigned char reply[16];
    struct iovec riov = {reply, sizeof reply};
    memset(&u, 0, sizeof u);
    struct msghdr r = {0};
    r.msg_iov = &riov;
    r.msg_iovlen = 1;
    r.msg_control = u.buf;
    r.msg_controllen = sizeof u.buf;
    if (recvmsg(pair[0], &r, 0) < 8) return -1;
    uint32_t status;
    memcpy(&status, reply, 4);
    c = CMSG_FIRSTHDR(&r);
    if (status != 0 || !c || c->cmsg_type != SCM_RIGHTS) return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

int main(void) {
    const char *b = getenv("SCALPEL_BROKER");
    if (!b) {
        fprintf(stderr, "no SCALPEL_BROKER\n");
        return 2;
    }
    int sock = atoi(b);
    pid_t child = fork();
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
        int fd = ask_shared(sock);
        if (fd < 0) {
            printf("worker: no table\n");
            _exit(0);
        }
        int rc = ftruncate(fd, 0);
        printf("worker: ftruncate %d errno %d\n", rc, rc ? errno : 0);
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(child, &st, 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("master ok %ld\n", counter);
    return 0;
}
