/* A lock whose waiters sleep on latches of their own, as PostgreSQL's heavyweight locks do,
 * beside a latch that really hands work over.
 *
 * The client sends a request to each of WORKERS worker processes over its socket pair, then
 * reads each worker's reply. A worker reads a request, spins, takes the lock, sleeps and spins
 * inside it, lets it go, spins, and answers on the same socket. The lock lives in shared memory
 * under a process-shared mutex: a worker that finds it taken queues itself and sleeps on its
 * latch (an epoll instance watching a signalfd for SIGURG); the worker letting it go hands it to
 * the first in the queue and wakes it with kill(pid, SIGURG). So every such kill and wait sits
 * in the middle of a request (lock order, no cause). Every FLUSH_EVERY-th request a worker also
 * sets the flusher's latch: the flusher waits at the head of its loop for work, and those
 * signals keep their edges.
 *
 * Prints the number of hand-overs and of flusher wake-ups sent, and exits 2 when a worker was
 * handed the lock fewer than ROUNDS / 4 times (the lock was not contended enough to test
 * anything). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 4
#ifndef ROUNDS
#define ROUNDS 200
#endif
#define FLUSH_EVERY 8

struct shared {
    pthread_mutex_t m;
    int held, queue[WORKERS], queued, handovers, handed[WORKERS], flushes;
    pid_t pid[WORKERS], flusher;
};

static struct shared *sh;
static volatile uint64_t sink;

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static void spin(int n) {
    for (int i = 0; i < n; i++) sink += (uint64_t)i * 2654435761u;
}

/* A latch: an epoll instance watching a signalfd for SIGURG (blocked since main began). */
static int latch_new(int *sfd) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGURG);
    *sfd = signalfd(-1, &s, SFD_CLOEXEC);
    must(*sfd >= 0, "signalfd");
    int ep = epoll_create1(EPOLL_CLOEXEC);
    must(ep >= 0, "epoll_create1");
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = *sfd };
    must(epoll_ctl(ep, EPOLL_CTL_ADD, *sfd, &ev) == 0, "epoll_ctl");
    return ep;
}

/* Sleeps until the latch is set, and resets it. */
static void latch_wait(int ep, int sfd) {
    struct epoll_event ev;
    while (epoll_wait(ep, &ev, 1, -1) != 1) {
    }
    struct signalfd_siginfo si;
    must(read(sfd, &si, sizeof si) == sizeof si, "read signalfd");
}

static void lock_acquire(int me, int ep, int sfd) {
    pthread_mutex_lock(&sh->m);
    if (!sh->held) {
        sh->held = 1;
        pthread_mutex_unlock(&sh->m);
        return;
    }
    sh->queue[sh->queued++] = me;
    pthread_mutex_unlock(&sh->m);
    /* The lock is ours when the holder sets our latch: it handed the lock over. */
    latch_wait(ep, sfd);
}

static void lock_release(void) {
    pthread_mutex_lock(&sh->m);
    if (sh->queued == 0) {
        sh->held = 0;
        pthread_mutex_unlock(&sh->m);
        return;
    }
    int next = sh->queue[0];
    for (int i = 1; i < sh->queued; i++) sh->queue[i - 1] = sh->queue[i];
    sh->queued--;
    sh->handovers++;
    sh->handed[next]++;
    pid_t to = sh->pid[next];
    pthread_mutex_unlock(&sh->m);
    must(kill(to, SIGURG) == 0, "kill waiter");
}

static void worker(int me, int sock) {
    char name[16];
    snprintf(name, sizeof name, "worker%d", me);
    pthread_setname_np(pthread_self(), name);
    int sfd;
    int ep = latch_new(&sfd);
    for (int r = 0; r < ROUNDS; r++) {
        char c;
        must(recv(sock, &c, 1, 0) == 1, "recv request");
        spin(200);
        lock_acquire(me, ep, sfd);
        /* Long enough, asleep, that the other workers (sent their requests at the same time)
         * arrive and queue: every worker waits on its latch in most rounds. */
        usleep(300);
        spin(2000);
        lock_release();
        if (r % FLUSH_EVERY == 0) {
            pthread_mutex_lock(&sh->m);
            sh->flushes++;
            pthread_mutex_unlock(&sh->m);
            must(kill(sh->flusher, SIGURG) == 0, "kill flusher");
        }
        spin(200);
        must(send(sock, "y", 1, 0) == 1, "send reply");
    }
    exit(0);
}

/* Waits at the head of its loop for its latch (work to do) or the client's word to stop. */
static void flusher(int ctl) {
    pthread_setname_np(pthread_self(), "flusher");
    int sfd;
    int ep = latch_new(&sfd);
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = ctl };
    must(epoll_ctl(ep, EPOLL_CTL_ADD, ctl, &ev) == 0, "epoll_ctl ctl");
    for (;;) {
        struct epoll_event got;
        if (epoll_wait(ep, &got, 1, -1) != 1) continue;
        if (got.data.fd == ctl) exit(0);
        struct signalfd_siginfo si;
        must(read(sfd, &si, sizeof si) == sizeof si, "read signalfd");
        spin(5000);
    }
}

int main(void) {
    pthread_setname_np(pthread_self(), "client");
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGURG);
    must(sigprocmask(SIG_BLOCK, &s, NULL) == 0, "sigprocmask");
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    must(sh != MAP_FAILED, "mmap");
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->m, &a);
    int ctl[2];
    must(socketpair(AF_UNIX, SOCK_STREAM, 0, ctl) == 0, "socketpair ctl");
    pid_t f = fork();
    must(f >= 0, "fork flusher");
    if (f == 0) flusher(ctl[1]);
    sh->flusher = f;
    int sv[WORKERS][2];
    for (int i = 0; i < WORKERS; i++) {
        must(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) == 0, "socketpair");
        pid_t p = fork();
        must(p >= 0, "fork worker");
        if (p == 0) worker(i, sv[i][1]);
        sh->pid[i] = p;
    }
    for (int r = 0; r < ROUNDS; r++) {
        /* Each round starts with another worker, so that each is handed the lock as often. */
        for (int k = 0; k < WORKERS; k++) {
            int i = (r + k) % WORKERS;
            must(send(sv[i][0], "x", 1, 0) == 1, "send request");
        }
        for (int i = 0; i < WORKERS; i++) {
            char c;
            must(recv(sv[i][0], &c, 1, 0) == 1, "recv reply");
        }
    }
    for (int i = 0; i < WORKERS; i++) waitpid(sh->pid[i], NULL, 0);
    /* The last wake-up reaches the flusher before it is told to stop. */
    usleep(20000);
    must(send(ctl[0], "q", 1, 0) == 1, "send stop");
    waitpid(sh->flusher, NULL, 0);
    int fewest = ROUNDS;
    for (int i = 0; i < WORKERS; i++)
        if (sh->handed[i] < fewest) fewest = sh->handed[i];
    printf("handovers %d fewest %d flushes %d\n", sh->handovers, fewest, sh->flushes);
    return fewest < ROUNDS / 4 ? 2 : 0;
}
