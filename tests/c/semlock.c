/* A lock whose waiters sleep on semaphores of their own, as PostgreSQL's lightweight locks do,
 * beside a semaphore that really hands work back.
 *
 * The client sends a request to each of WORKERS workers over its pipe, then waits on `done`
 * once per worker. A worker reads a request (its new work), spins, takes the lock, spins inside
 * it, lets it go, spins, and posts `done` (the client's completion), then goes back to its
 * pipe. The lock is a flag and a queue under a mutex: a worker that finds it taken queues itself
 * and sleeps on its own semaphore `wake[i]`; the worker letting it go hands it to the first in
 * the queue by posting that semaphore. So every post and wait on a `wake` semaphore sits in the
 * middle of a request (lock order, no cause), while `done` carries each reply to the client.
 *
 * Prints the number of hand-overs and exits 2 when a worker was handed the lock fewer than
 * ROUNDS / 4 times (the lock was not contended enough to test anything). */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define WORKERS 4
#ifndef ROUNDS
#define ROUNDS 200
#endif

static int req[WORKERS][2];
static sem_t wake[WORKERS], done;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int held, queue[WORKERS], queued, handovers, handed[WORKERS];
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

static void lock_acquire(int me) {
    pthread_mutex_lock(&m);
    if (!held) {
        held = 1;
        pthread_mutex_unlock(&m);
        return;
    }
    queue[queued++] = me;
    pthread_mutex_unlock(&m);
    /* The lock is ours when this returns: the holder handed it over. */
    while (sem_wait(&wake[me]) != 0) {
    }
}

static void lock_release(void) {
    pthread_mutex_lock(&m);
    if (queued == 0) {
        held = 0;
        pthread_mutex_unlock(&m);
        return;
    }
    int next = queue[0];
    for (int i = 1; i < queued; i++) queue[i - 1] = queue[i];
    queued--;
    handovers++;
    handed[next]++;
    pthread_mutex_unlock(&m);
    must(sem_post(&wake[next]) == 0, "sem_post wake");
}

static void *worker(void *arg) {
    int me = (int)(intptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "worker%d", me);
    pthread_setname_np(pthread_self(), name);
    for (int r = 0; r < ROUNDS; r++) {
        char c;
        must(read(req[me][0], &c, 1) == 1, "read request");
        spin(200);
        lock_acquire(me);
        /* Long enough, asleep, that the other workers (sent their requests at the same time)
         * arrive and queue: every worker waits on its semaphore in most rounds. */
        usleep(300);
        spin(2000);
        lock_release();
        spin(200);
        must(sem_post(&done) == 0, "sem_post done");
    }
    return NULL;
}

int main(void) {
    pthread_t t[WORKERS];
    pthread_setname_np(pthread_self(), "client");
    must(sem_init(&done, 0, 0) == 0, "sem_init");
    for (int i = 0; i < WORKERS; i++) {
        must(pipe(req[i]) == 0, "pipe");
        must(sem_init(&wake[i], 0, 0) == 0, "sem_init");
        must(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0, "pthread_create");
    }
    for (int r = 0; r < ROUNDS; r++) {
        /* Each round starts with another worker, so that each is handed the lock as often. */
        for (int k = 0; k < WORKERS; k++) {
            int i = (r + k) % WORKERS;
            must(write(req[i][1], "x", 1) == 1, "write request");
        }
        for (int i = 0; i < WORKERS; i++)
            while (sem_wait(&done) != 0) {
            }
    }
    for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
    int fewest = ROUNDS;
    for (int i = 0; i < WORKERS; i++)
        if (handed[i] < fewest) fewest = handed[i];
    printf("handovers %d fewest %d\n", handovers, fewest);
    return fewest < ROUNDS / 4 ? 2 : 0;
}
