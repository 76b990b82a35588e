/* A host that uses signals heavily, for on-CPU sampling (tests/tests/sampling.rs): its output
 * must be the same traced with `--sample` as untraced.
 *
 *   - main blocks every signal before starting threads (so every thread inherits a full mask);
 *   - a sigwait thread burns CPU with every signal blocked, then waits for any signal (a full
 *     set) and counts the SIGUSR1s main sends to the process;
 *   - main has its own SIGPROF handler on a CPU-time interval timer and burns CPU;
 *   - main has a SIGALRM handler without SA_RESTART: a one-shot alarm interrupts its read of an
 *     empty pipe with EINTR;
 *   - main installs a handler for the third-highest real-time signal (the one the sampler uses)
 *     and raises it.
 *
 * Everything printed is deterministic.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t prof_ticks, alarms, rt_runs;
static int usr1_got, other_got;
static pthread_barrier_t alarm_done;

static long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void __attribute__((noinline)) burn_masked(long ns) {
    long end = cpu_ns() + ns;
    volatile unsigned long x = 0;
    while (cpu_ns() < end)
        for (int i = 0; i < 1000; i++)
            x += i;
}

static void __attribute__((noinline)) burn_profiled(long ns) {
    long end = cpu_ns() + ns;
    volatile unsigned long x = 3;
    while (cpu_ns() < end)
        for (int i = 0; i < 1500; i++)
            x ^= (unsigned long)i * 5;
}

static void on_prof(int s) { (void)s; prof_ticks++; }
static void on_alarm(int s) { (void)s; alarms++; }
static void on_rt(int s, siginfo_t *i, void *u) { (void)s; (void)i; (void)u; rt_runs++; }

static void *waiter(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "sigwaiter");
    burn_masked(150000000);
    /* Waiting with a full set would take main's SIGALRM: start once main has had it. */
    pthread_barrier_wait(&alarm_done);
    sigset_t all;
    sigfillset(&all);
    while (usr1_got < 5) {
        int sig = 0;
        if (sigwait(&all, &sig) != 0)
            continue;
        if (sig == SIGUSR1)
            usr1_got++;
        else
            other_got++;
    }
    return NULL;
}

int main(void) {
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    pthread_barrier_init(&alarm_done, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);

    /* main's own handlers; main unblocks everything but SIGUSR1. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    sa.sa_handler = on_alarm;
    sa.sa_flags = 0;
    sigaction(SIGALRM, &sa, NULL);
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_SETMASK, &usr1, NULL);

    struct itimerval prof = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_PROF, &prof, NULL);
    burn_profiled(150000000);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    printf("prof handler ran: %s\n", prof_ticks > 10 ? "yes" : "no");

    int p[2];
    pipe(p);
    struct itimerval once = {{0, 0}, {0, 50000}};
    setitimer(ITIMER_REAL, &once, NULL);
    char c;
    ssize_t r = read(p[0], &c, 1);
    printf("read: %zd %s, alarms %d\n", r, r < 0 ? strerror(errno) : "", (int)alarms);
    pthread_barrier_wait(&alarm_done);

    int rt = SIGRTMAX - 2;
    struct sigaction old;
    sigaction(rt, NULL, &old);
    printf("rt signal default before: %s\n", old.sa_handler == SIG_DFL ? "yes" : "no");
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO;
    sigaction(rt, &sa, NULL);
    raise(rt);
    sigaction(rt, NULL, &old);
    printf("rt handler ran %d, installed: %s\n", (int)rt_runs,
           old.sa_sigaction == on_rt ? "yes" : "no");

    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    printf("mask reads back full: %s\n", sigismember(&cur, SIGUSR2) == 1 ? "yes" : "no");
    pthread_sigmask(SIG_SETMASK, &usr1, NULL);

    for (int i = 0; i < 5; i++) {
        kill(getpid(), SIGUSR1);
        usleep(20000);
    }
    pthread_join(t, NULL);
    printf("sigwait got SIGUSR1 %d times, other signals %d times\n", usr1_got, other_got);
    return 0;
}
