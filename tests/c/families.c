/* Calls every intercepted family at least once, each with a successful outcome where possible. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "families: check failed: %s (line %d, errno %d)\n", #x, __LINE__, errno); exit(1); } } while (0)

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static sem_t sem;
static int futex_word;

static struct timespec soon(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    t.tv_nsec += 2000000;
    if (t.tv_nsec >= 1000000000) { t.tv_sec++; t.tv_nsec -= 1000000000; }
    return t;
}

static void *exiter(void *a) { (void)a; pthread_exit((void *)7); }
static void *noop(void *a) { return a; }

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exec-child") == 0) return 0;
    struct timespec t;
    /* mutex */
    CHECK(pthread_mutex_lock(&m) == 0); CHECK(pthread_mutex_unlock(&m) == 0);
    CHECK(pthread_mutex_trylock(&m) == 0); CHECK(pthread_mutex_unlock(&m) == 0);
    t = soon(CLOCK_REALTIME); CHECK(pthread_mutex_timedlock(&m, &t) == 0); pthread_mutex_unlock(&m);
    t = soon(CLOCK_MONOTONIC); CHECK(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &t) == 0); pthread_mutex_unlock(&m);
    /* cond: timeouts exercise the wait paths, signal/broadcast the notify paths */
    pthread_mutex_lock(&m);
    t = soon(CLOCK_REALTIME); CHECK(pthread_cond_timedwait(&cv, &m, &t) == ETIMEDOUT);
    t = soon(CLOCK_MONOTONIC); CHECK(pthread_cond_clockwait(&cv, &m, CLOCK_MONOTONIC, &t) == ETIMEDOUT);
    pthread_mutex_unlock(&m);
    pthread_cond_signal(&cv); pthread_cond_broadcast(&cv);
    /* rwlock */
    CHECK(pthread_rwlock_rdlock(&rw) == 0); pthread_rwlock_unlock(&rw);
    CHECK(pthread_rwlock_wrlock(&rw) == 0); pthread_rwlock_unlock(&rw);
    CHECK(pthread_rwlock_tryrdlock(&rw) == 0); pthread_rwlock_unlock(&rw);
    CHECK(pthread_rwlock_trywrlock(&rw) == 0); pthread_rwlock_unlock(&rw);
    t = soon(CLOCK_REALTIME); CHECK(pthread_rwlock_timedrdlock(&rw, &t) == 0); pthread_rwlock_unlock(&rw);
    t = soon(CLOCK_REALTIME); CHECK(pthread_rwlock_timedwrlock(&rw, &t) == 0); pthread_rwlock_unlock(&rw);
    t = soon(CLOCK_MONOTONIC); CHECK(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &t) == 0); pthread_rwlock_unlock(&rw);
    t = soon(CLOCK_MONOTONIC); CHECK(pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &t) == 0); pthread_rwlock_unlock(&rw);
    /* semaphores */
    sem_init(&sem, 0, 0);
    for (int i = 0; i < 4; i++) sem_post(&sem);
    CHECK(sem_wait(&sem) == 0); CHECK(sem_trywait(&sem) == 0);
    t = soon(CLOCK_REALTIME); CHECK(sem_timedwait(&sem, &t) == 0);
    t = soon(CLOCK_MONOTONIC); CHECK(sem_clockwait(&sem, CLOCK_MONOTONIC, &t) == 0);
    /* raw futex: a wait that fails at once (value differs) and a wake */
    CHECK(syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0) == -1 && errno == EAGAIN);
    CHECK(syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) == 0);
    CHECK(syscall(SYS_getpid) == getpid());
    /* pipes, eventfd, readiness */
    int p[2], q[2];
    CHECK(pipe(p) == 0); CHECK(pipe2(q, O_CLOEXEC) == 0);
    CHECK(write(p[1], "abc", 3) == 3);
    struct pollfd pf = { .fd = p[0], .events = POLLIN };
    CHECK(poll(&pf, 1, 100) == 1);
    t.tv_sec = 0; t.tv_nsec = 1000000;
    CHECK(ppoll(&pf, 1, &t, NULL) == 1);
    fd_set rs; FD_ZERO(&rs); FD_SET(p[0], &rs);
    struct timeval tv = { 0, 1000 };
    CHECK(select(p[0] + 1, &rs, NULL, NULL, &tv) == 1);
    FD_ZERO(&rs); FD_SET(p[0], &rs);
    CHECK(pselect(p[0] + 1, &rs, NULL, NULL, &t, NULL) == 1);
    int ep = epoll_create1(0); CHECK(ep >= 0);
    int ep2 = epoll_create(4); CHECK(ep2 >= 0); close(ep2);
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = p[0] }, out;
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
    CHECK(epoll_wait(ep, &out, 1, 100) == 1);
    CHECK(epoll_pwait(ep, &out, 1, 100, NULL) == 1);
    CHECK(epoll_pwait2(ep, &out, 1, &t, NULL) == 1);
    char buf[64];
    CHECK(read(p[0], buf, 3) == 3);
    struct iovec iov = { buf, 2 };
    CHECK(writev(q[1], &iov, 1) == 2); CHECK(readv(q[0], &iov, 1) == 2);
    int e = eventfd(0, 0); CHECK(e >= 0);
    uint64_t one = 1; CHECK(write(e, &one, 8) == 8); CHECK(read(e, &one, 8) == 8);
    /* sockets */
    int sv[2]; CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(send(sv[0], "hi", 2, 0) == 2); CHECK(recv(sv[1], buf, 2, 0) == 2);
    CHECK(sendto(sv[0], "hi", 2, 0, NULL, 0) == 2); CHECK(recvfrom(sv[1], buf, 2, 0, NULL, NULL) == 2);
    struct msghdr mh = { 0 }; mh.msg_iov = &iov; mh.msg_iovlen = 1;
    CHECK(sendmsg(sv[0], &mh, 0) == 2); CHECK(recvmsg(sv[1], &mh, 0) == 2);
    int ls = socket(AF_INET, SOCK_STREAM, 0); CHECK(ls >= 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    CHECK(bind(ls, (struct sockaddr *)&a, sizeof a) == 0); CHECK(listen(ls, 4) == 0);
    CHECK(getsockname(ls, (struct sockaddr *)&a, &al) == 0);
    int c1 = socket(AF_INET, SOCK_STREAM, 0), c2 = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(c1, (struct sockaddr *)&a, sizeof a) == 0); CHECK(connect(c2, (struct sockaddr *)&a, sizeof a) == 0);
    int s1 = accept(ls, NULL, NULL), s2 = accept4(ls, NULL, NULL, SOCK_CLOEXEC); CHECK(s1 >= 0 && s2 >= 0);
    /* unix stream socket on a path: connect and accept meet at the path, streams by inode */
    struct sockaddr_un ua = { .sun_family = AF_UNIX };
    snprintf(ua.sun_path, sizeof ua.sun_path, "/tmp/scalpel-families-%d.sock", (int)getpid());
    unlink(ua.sun_path);
    int ul = socket(AF_UNIX, SOCK_STREAM, 0); CHECK(ul >= 0);
    CHECK(bind(ul, (struct sockaddr *)&ua, sizeof ua) == 0); CHECK(listen(ul, 1) == 0);
    int uc = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(uc, (struct sockaddr *)&ua, sizeof ua) == 0);
    /* the client writes before the server accepts: its stream must still meet the server's */
    CHECK(write(uc, "unix!", 5) == 5);
    int us = accept(ul, NULL, NULL); CHECK(us >= 0);
    CHECK(read(us, buf, 5) == 5);
    close(uc); close(us); close(ul); unlink(ua.sun_path);
    /* a module loaded at run time: the module map is recorded again */
    void *lib = dlopen("libm.so.6", RTLD_NOW); CHECK(lib != NULL);
    { pthread_t seer; CHECK(pthread_create(&seer, NULL, noop, NULL) == 0); pthread_join(seer, NULL); }
    CHECK(dlclose(lib) == 0);
    int f = open("/proc/self/exe", O_RDONLY); CHECK(f >= 0);
    CHECK(pread(f, buf, 4, 0) == 4);
    CHECK(sendfile(c1, f, NULL, 16) == 16); CHECK(read(s1, buf, 16) == 16);
    int tmp = open("/tmp", O_TMPFILE | O_RDWR, 0600);
    if (tmp >= 0) { CHECK(pwrite(tmp, "x", 1, 0) == 1); close(tmp); }
    int d = dup(c2); CHECK(d >= 0); CHECK(dup2(d, 100) == 100); CHECK(dup3(d, 101, O_CLOEXEC) == 101);
    CHECK(write(101, "zz", 2) == 2); CHECK(read(s2, buf, 2) == 2);
    close(d); close(100); close(101);
    /* threads */
    pthread_t th; void *ret;
    CHECK(pthread_create(&th, NULL, exiter, NULL) == 0);
    CHECK(pthread_join(th, &ret) == 0 && ret == (void *)7);
    /* sleeps */
    t.tv_sec = 0; t.tv_nsec = 100000; nanosleep(&t, NULL); usleep(100);
    clock_nanosleep(CLOCK_MONOTONIC, 0, &t, NULL);
    /* fork + exec */
    pid_t pid = fork(); CHECK(pid >= 0);
    if (pid == 0) { execl(argv[0], argv[0], "exec-child", (char *)NULL); _exit(99); }
    int st; CHECK(waitpid(pid, &st, 0) == pid); CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("families ok\n");
    return 0;
}
