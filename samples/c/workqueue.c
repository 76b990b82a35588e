/* A small work queue with a known task structure, used by the demo:
 *   - a dispatcher thread reads requests (8-byte ids) from a pipe and pushes them onto a bounded
 *     queue guarded by one mutex and two condition variables;
 *   - WORKERS worker threads pop requests, "process" them (a short computation) and write a
 *     reply (the id) into a reply pipe;
 *   - the main thread sends REQUESTS ids, at most WINDOW outstanding, and reads every reply back.
 * True tasks: one request = send(main) -> dispatch(dispatcher) -> process+reply(worker) -> receive(main).
 * Ground truth (samples/TRUTH.md): "dispatch" on the dispatcher (request read -> queued, before the
 * signal), "process" on a worker (dequeued -> reply write called), id = request. Spans run between
 * sync calls, as leaves do. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "truth.h"

#define WORKERS 4
#define QCAP 16
#define WINDOW 8

static uint64_t queue[QCAP];
static int head, count, done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
static int req_pipe[2], rep_pipe[2];

static void *dispatcher(void *a) {
    uint64_t id;
    (void)a;
    while (read(req_pipe[0], &id, sizeof id) == sizeof id) {
        uint64_t start = truth_now();
        pthread_mutex_lock(&lock);
        while (count == QCAP) pthread_cond_wait(&not_full, &lock);
        queue[(head + count++) % QCAP] = id;
        uint64_t queued = truth_now();
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&lock);
        truth_task("dispatch", (int64_t)id, -1, start, queued);
    }
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void *worker(void *a) {
    (void)a;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (count == 0 && !done) pthread_cond_wait(&not_empty, &lock);
        if (count == 0 && done) { pthread_mutex_unlock(&lock); return NULL; }
        uint64_t id = queue[head];
        head = (head + 1) % QCAP;
        count--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&lock);
        uint64_t start = truth_now();
        volatile uint64_t x = id;
        for (int i = 0; i < 20000; i++) x = x * 6364136223846793005ULL + 1;
        uint64_t end = truth_now();
        if (write(rep_pipe[1], &id, sizeof id) != sizeof id) abort();
        truth_task("process", (int64_t)id, -1, start, end);
    }
}

int workqueue_main(int argc, char **argv) {
    int requests = argc > 1 ? atoi(argv[1]) : 200;
    pthread_t d, w[WORKERS];
    truth_open("workqueue");
    if (pipe(req_pipe) || pipe(rep_pipe)) return 1;
    pthread_create(&d, NULL, dispatcher, NULL);
    for (int i = 0; i < WORKERS; i++) pthread_create(&w[i], NULL, worker, NULL);
    /* At most WINDOW requests outstanding, as a client with a window keeps them: the queue
     * (QCAP) never fills, so every dispatch has one shape. */
    uint64_t sent = 0, sum = 0, id;
    for (; sent < (uint64_t)requests && sent < WINDOW; sent++)
        if (write(req_pipe[1], &sent, sizeof sent) != sizeof sent) return 1;
    for (int i = 0; i < requests; i++) {
        if (read(rep_pipe[0], &id, sizeof id) != sizeof id) return 1;
        sum += id;
        if (sent < (uint64_t)requests) {
            if (write(req_pipe[1], &sent, sizeof sent) != sizeof sent) return 1;
            sent++;
        }
    }
    close(req_pipe[1]);
    pthread_join(d, NULL);
    for (int i = 0; i < WORKERS; i++) pthread_join(w[i], NULL);
    printf("workqueue: %d requests served, checksum %llu\n", requests, (unsigned long long)sum);
    return 0;
}
