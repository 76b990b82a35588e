/* Programs whose bottleneck is known, for the wait-for graph's knots (tests/tests/waitfor.rs).
 *
 *   knots syncer DIR N   4 handler threads each append N records to a log and wait until the
 *                        syncer thread has flushed them (each keeps two in flight); the syncer writes and fdatasyncs the
 *                        log in DIR, batching what came in meanwhile (group commit). The
 *                        handlers wait on the syncer, the syncer on the disk: the knot is the
 *                        syncer and the disk (wPerf's HBase case).
 *   knots convoy N       4 worker threads each take one lock N times and hold it for about
 *                        200 us of work: the knot is the workers' critical section.
 *   knots cpu T MS       T cruncher threads each burn MS ms of CPU time with no waits at all;
 *                        with more threads than cores the knot is the scheduler.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t flushed_cond = PTHREAD_COND_INITIALIZER;
static long appended, flushed, records;
static int handlers_left, log_fd;

static long now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void __attribute__((noinline)) burn(clockid_t c, long ns) {
    long end = now_ns(c) + ns;
    volatile unsigned long x = 0;
    while (now_ns(c) < end)
        for (int i = 0; i < 1000; i++)
            x += i;
}

static void __attribute__((noinline)) wait_flushed(long mine) {
    while (flushed < mine)
        pthread_cond_wait(&flushed_cond, &m);
}

/* A handler keeps two records in flight: it appends its next record before waiting for the
 * flush of the one before, as a log's clients pipeline their commits. So when a flush ends the
 * next batch is already there and the syncer does not wait for the handlers (with one record
 * in flight it did after every flush, for as long as the handlers took to be scheduled: on a
 * loaded machine as long as the disk). */
static void *handler(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "handler");
    long previous = 0;
    for (long i = 0; i < records; i++) {
        pthread_mutex_lock(&m);
        long mine = ++appended;
        pthread_cond_signal(&work);
        wait_flushed(previous);
        pthread_mutex_unlock(&m);
        previous = mine;
    }
    pthread_mutex_lock(&m);
    wait_flushed(previous);
    handlers_left--;
    pthread_cond_signal(&work);
    pthread_mutex_unlock(&m);
    return NULL;
}

static void __attribute__((noinline)) flush_log(long n) {
    static char buf[4096];
    memset(buf, 'r', sizeof buf);
    for (long i = 0; i < n && i < 4; i++)
        if (write(log_fd, buf, sizeof buf) < 0)
            perror("write");
    fdatasync(log_fd);
}

static void *syncer(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "syncer");
    pthread_mutex_lock(&m);
    for (;;) {
        while (appended == flushed && handlers_left > 0)
            pthread_cond_wait(&work, &m);
        if (appended == flushed)
            break;
        long target = appended;
        pthread_mutex_unlock(&m);
        flush_log(target - flushed);
        pthread_mutex_lock(&m);
        flushed = target;
        pthread_cond_broadcast(&flushed_cond);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

static void __attribute__((noinline)) critical_section(void) {
    pthread_mutex_lock(&m);
    burn(CLOCK_MONOTONIC, 200000);
    pthread_mutex_unlock(&m);
}

static void *worker(void *arg) {
    pthread_setname_np(pthread_self(), "worker");
    long n = (long)arg;
    for (long i = 0; i < n; i++)
        critical_section();
    return NULL;
}

static void *cruncher(void *arg) {
    pthread_setname_np(pthread_self(), "cruncher");
    burn(CLOCK_THREAD_CPUTIME_ID, (long)arg * 1000000L);
    return NULL;
}

static void run(int n, void *(*f)(void *), void *arg) {
    pthread_t t[64];
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, f, arg);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "syncer") == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/knots.log", argv[2]);
        log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (log_fd < 0) {
            perror(path);
            return 1;
        }
        records = atol(argv[3]);
        handlers_left = 4;
        pthread_t s;
        pthread_create(&s, NULL, syncer, NULL);
        run(4, handler, NULL);
        pthread_join(s, NULL);
        printf("flushed %ld records\n", flushed);
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "convoy") == 0) {
        run(4, worker, (void *)atol(argv[2]));
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "cpu") == 0) {
        int n = atoi(argv[2]);
        run(n < 1 ? 1 : n > 64 ? 64 : n, cruncher, (void *)atol(argv[3]));
        return 0;
    }
    fprintf(stderr, "usage: knots syncer DIR N | convoy N | cpu THREADS MS\n");
    return 2;
}
