/* metrics: a program whose leaf metrics can be worked out by hand (tests/tests/rollup.rs).
 *
 *   holder thread: lock m; sleep 30 ms; unlock m; sleep 20 ms; write 100 bytes to a pipe.
 *   main thread:   start holder; wait (spinning) until it holds m; sleep 5 ms; lock m (waits
 *                  ~25 ms for holder); unlock m;
 *                  read the 100 bytes (waits ~20 ms); write 10 bytes to a file; join holder.
 *
 * On a loaded machine sleeps overrun and wake-ups come late, so each thread also times its own
 * calls (CLOCK_MONOTONIC, the trace's clock) and main prints them at the end, for the test to
 * hold the recorded metrics to. A thread preempted between the agent's clock reading and its
 * own is timed longer than the agent times it, so each thread also measures how long it waited
 * for a CPU within each timed span (run_delay in /proc/thread-self/schedstat), which the test
 * allows as slack. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int p[2];
static long long holder_sleep_ns, holder_delay_ns;
static int holding;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Nanoseconds this thread has spent runnable but waiting for a CPU; 0 where the kernel does not
 * say. Raw system calls, so the agent records no file opened or read and the leaves stay as
 * worked out above. */
static long long run_delay_ns(void) {
    static __thread int fd = -1;
    if (fd < 0)
        fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[96];
    long n = syscall(SYS_pread64, fd, buf, sizeof buf - 1, 0L);
    if (n <= 0) return 0;
    buf[n] = 0;
    long long cpu, delay;
    return sscanf(buf, "%lld %lld", &cpu, &delay) == 2 ? delay : 0;
}

static __attribute__((noinline)) void hold_and_send(void) {
    pthread_mutex_lock(&m);
    __atomic_store_n(&holding, 1, __ATOMIC_RELEASE);
    long long d0 = run_delay_ns(), t0 = now_ns();
    usleep(30000);
    long long t1 = now_ns(), d1 = run_delay_ns();
    pthread_mutex_unlock(&m);
    long long d2 = run_delay_ns(), t2 = now_ns();
    usleep(20000);
    holder_sleep_ns = (t1 - t0) + (now_ns() - t2);
    holder_delay_ns = (d1 - d0) + (run_delay_ns() - d2);
    char buf[100];
    memset(buf, 'x', sizeof buf);
    if (write(p[1], buf, sizeof buf) != sizeof buf) abort();
}

static void *holder(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "holder");
    hold_and_send();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (pipe(p)) return 1;
    int f = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (f < 0) return 1;
    long long d_start = run_delay_ns();
    pthread_t t;
    if (pthread_create(&t, NULL, holder, NULL)) return 1;
    long long start = now_ns();
    /* The holder's start can take longer than the sleep below on a busy machine. */
    while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE))
        sched_yield();
    long long d_awake = run_delay_ns(), awake = now_ns();
    usleep(5000);
    long long slept = now_ns(), d_slept = run_delay_ns();
    long long d_lock = run_delay_ns(), lock = now_ns();
    pthread_mutex_lock(&m);
    long long locked = now_ns(), d_locked = run_delay_ns();
    pthread_mutex_unlock(&m);
    char buf[100];
    size_t got = 0;
    long long read_ns = 0, read_delay = 0;
    while (got < sizeof buf) {
        long long d0 = run_delay_ns(), r0 = now_ns();
        ssize_t n = read(p[0], buf + got, sizeof buf - got);
        read_ns += now_ns() - r0;
        read_delay += run_delay_ns() - d0;
        if (n <= 0) return 1;
        got += (size_t)n;
    }
    long long wall = now_ns() - start;
    long long wall_delay = run_delay_ns() - d_start;
    if (write(f, buf, 10) != 10) return 1;
    pthread_join(t, NULL);
    close(f);
    printf("main sleep %lld lock %lld read %lld wall %lld\n", slept - awake, locked - lock,
           read_ns, wall);
    printf("main-delay sleep %lld lock %lld read %lld wall %lld\n", d_slept - d_awake,
           d_locked - d_lock, read_delay, wall_delay);
    printf("holder sleep %lld delay %lld\n", holder_sleep_ns, holder_delay_ns);
    printf("metrics: done\n");
    return 0;
}
