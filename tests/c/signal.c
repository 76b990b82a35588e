/* A signal handler that calls hooked functions (write to a pipe) while the interrupted thread is
 * busy in hooked calls itself. Nothing may crash or deadlock; the handler's writes are traced. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static int p[2];
static volatile sig_atomic_t fired = 0;

static void on_tick(int s) {
    (void)s;
    write(p[1], "s", 1);
    fired++;
}

int main(void) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pipe(p);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = { { 0, 500 }, { 0, 500 } };
    setitimer(ITIMER_PROF, &it, NULL);
    long i = 0;
    while (fired < 50) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
        i++;
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_PROF, &off, NULL);
    char buf[64];
    long got = 0;
    int n;
    close(p[1]);
    while ((n = read(p[0], buf, sizeof buf)) > 0) got += n;
    printf("signal ok fired=%d got=%ld loops=%ld\n", (int)fired, got, i);
    return got == fired ? 0 : 1;
}
