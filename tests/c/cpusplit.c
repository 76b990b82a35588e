/* A thread whose time is known, for on-CPU samples and wall-clock flame graphs
 * (tests/tests/sampling.rs):
 *
 *   cpusplit MS   the worker thread burns MS ms of its own CPU time, 70% of it in burn_seventy
 *                 and 30% in burn_thirty (interleaved in slices of 2 to 12 and 1 to 5 ms,
 *                 their lengths drawn from a fixed pseudo-random sequence), then waits about 50 ms
 *                 for a lock main holds, then sleeps 100 ms. Main takes the lock before the
 *                 worker starts, sleeps until the worker's CPU work is done plus 50 ms, then
 *                 unlocks and joins.
 *
 * It prints `worker seventy_ns N thirty_ns N lock_ns N sleep_ns N lock_runq_ns N
 * sleep_runq_ns N lock_held_ns N sleep_asked_ns N`, measured by the program itself.
 *
 * `lock_ns` and `sleep_ns` are the clock reads around the call: upper bounds of the wait, for
 * they also hold what ran in the call after the wait ended (the agent writing its record, which
 * on a machine busy writing to disk can be throttled for milliseconds). Lower bounds:
 * `lock_held_ns`, from the worker's first clock read to main's last before it unlocked (the
 * worker cannot have the lock sooner), and `sleep_asked_ns`, the time asked of nanosleep.
 * A `_runq_ns` figure is the time the thread spent runnable but not running (the kernel's
 * schedstat run delay) between the two clock reads around the call; 0 when the kernel keeps no
 * schedstat.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total_ms;
static volatile int cpu_done;
/* Main's clock just before it unlocks `m`: written under the lock, read by the worker once it
 * holds it. */
static long unlocked_at;

static long now_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Spin until the thread has used `ns` more CPU time, each in its own loop (identical bodies
 * would be folded into one function by the compiler). */
static void __attribute__((noinline)) burn_seventy(long ns) {
    long end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
    volatile unsigned long x = 0;
    while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 2000; i++)
            x += i;
}

static void __attribute__((noinline)) burn_thirty(long ns) {
    long end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
    volatile unsigned long x = 1;
    while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 3000; i++)
            x ^= (unsigned long)i * 7;
}

/* The thread's run delay so far, ns (the second field of its schedstat), or 0. */
static long run_delay_ns(void) {
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f) return 0;
    unsigned long long on_cpu = 0, delay = 0;
    int n = fscanf(f, "%llu %llu", &on_cpu, &delay);
    fclose(f);
    return n == 2 ? (long)delay : 0;
}

static void *worker(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "worker");
    long seventy = 0, thirty = 0;
    /* Slices of random length (7 and 3 ms on average): slices of fixed length would repeat in
     * step with the kernel's tick, where CPU-time timers fire, and alias. */
    unsigned long rng = 12345;
    for (long done = 0; done < total_ms * 1000000L; done = seventy + thirty) {
        rng = rng * 6364136223846793005UL + 1442695040888963407UL;
        long a = 2000000 + (long)((rng >> 33) % 10000001);
        rng = rng * 6364136223846793005UL + 1442695040888963407UL;
        long b = 1000000 + (long)((rng >> 33) % 4000001);
        long t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        burn_seventy(a);
        long t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        burn_thirty(b);
        long t2 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        seventy += t1 - t0;
        thirty += t2 - t1;
    }
    __atomic_store_n(&cpu_done, 1, __ATOMIC_RELEASE);
    long q0 = run_delay_ns();
    long l0 = now_ns(CLOCK_MONOTONIC);
    pthread_mutex_lock(&m);
    long l1 = now_ns(CLOCK_MONOTONIC);
    long q1 = run_delay_ns();
    long held = unlocked_at;
    pthread_mutex_unlock(&m);
    struct timespec ts = {0, 100000000};
    long s0 = now_ns(CLOCK_MONOTONIC);
    nanosleep(&ts, NULL);
    long s1 = now_ns(CLOCK_MONOTONIC);
    long q2 = run_delay_ns();
    printf("worker seventy_ns %ld thirty_ns %ld lock_ns %ld sleep_ns %ld lock_runq_ns %ld "
           "sleep_runq_ns %ld lock_held_ns %ld sleep_asked_ns %ld\n",
           seventy, thirty, l1 - l0, s1 - s0, q1 - q0, q2 - q1, held - l0,
           ts.tv_sec * 1000000000L + ts.tv_nsec);
    return NULL;
}

int main(int argc, char **argv) {
    total_ms = argc > 1 ? atol(argv[1]) : 1000;
    pthread_mutex_lock(&m);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    struct timespec poll = {0, 1000000};
    while (!__atomic_load_n(&cpu_done, __ATOMIC_ACQUIRE))
        nanosleep(&poll, NULL);
    struct timespec hold = {0, 50000000};
    nanosleep(&hold, NULL);
    unlocked_at = now_ns(CLOCK_MONOTONIC);
    pthread_mutex_unlock(&m);
    pthread_join(t, NULL);
    return 0;
}
