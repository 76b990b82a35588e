/* Notifications whose order the trace must reproduce: cond signal/broadcast -> wakeup, sem post ->
 * wait, and bytes written into a pipe, a socketpair and a loopback TCP connection -> their reads.
 * Write and read sizes differ on purpose so one read spans several writes and vice versa. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef ROUNDS
#define ROUNDS 2000
#endif
#ifndef BYTES
#define BYTES 200000
#endif

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn = 0;
static sem_t items;

static void *pong(void *a) {
    (void)a;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&m);
        while (turn != 1) pthread_cond_wait(&cv, &m);
        turn = 0;
        if (i % 2) pthread_cond_signal(&cv); else pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void *consumer(void *a) {
    (void)a;
    for (int i = 0; i < ROUNDS; i++) sem_wait(&items);
    return NULL;
}

struct stream { int rfd; long total; };

static void *reader(void *a) {
    struct stream *s = a;
    char buf[777];
    long got = 0;
    while (got < s->total) {
        ssize_t n = read(s->rfd, buf, sizeof buf);
        if (n <= 0) { perror("read"); exit(1); }
        got += n;
    }
    return NULL;
}

static void pump(int wfd, int rfd) {
    struct stream s = { rfd, BYTES };
    pthread_t t;
    pthread_create(&t, NULL, reader, &s);
    char buf[1500];
    memset(buf, 'x', sizeof buf);
    long sent = 0;
    for (int i = 0; sent < BYTES; i++) {
        size_t want = 1 + (i * 37) % sizeof buf;
        if (want > (size_t)(BYTES - sent)) want = BYTES - sent;
        ssize_t n = write(wfd, buf, want);
        if (n <= 0) { perror("write"); exit(1); }
        sent += n;
    }
    pthread_join(t, NULL);
}

int main(void) {
    pthread_t t1, t2;
    sem_init(&items, 0, 0);
    pthread_create(&t1, NULL, pong, NULL);
    pthread_create(&t2, NULL, consumer, NULL);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&m);
        turn = 1;
        pthread_cond_signal(&cv);
        while (turn != 0) pthread_cond_wait(&cv, &m);
        pthread_mutex_unlock(&m);
        sem_post(&items);
    }
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);

    int p[2];
    pipe(p);
    pump(p[1], p[0]);
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    pump(sv[0], sv[1]);
    pump(sv[1], sv[0]);

    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    bind(ls, (struct sockaddr *)&a, sizeof a);
    listen(ls, 1);
    getsockname(ls, (struct sockaddr *)&a, &al);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (struct sockaddr *)&a, sizeof a) != 0) { perror("connect"); return 1; }
    int s = accept(ls, NULL, NULL);
    pump(c, s);
    pump(s, c);
    printf("ordering ok\n");
    return 0;
}
