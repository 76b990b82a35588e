/* errno must come back exactly as the real call left it: EAGAIN from a non-blocking read, EINTR
 * from a read interrupted by a signal, and an untouched value across successful calls. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_alarm(int s) { (void)s; }

int main(void) {
    int p[2];
    char c;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pipe(p);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    errno = 0;
    if (read(p[0], &c, 1) != -1 || errno != EAGAIN) { printf("EAGAIN lost: %d\n", errno); return 1; }
    errno = 12345;
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    if (write(p[1], "a", 1) != 1 || errno != 12345) { printf("errno clobbered: %d\n", errno); return 1; }
    fcntl(p[0], F_SETFL, 0);
    read(p[0], &c, 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: the blocked read must fail with EINTR */
    sigaction(SIGALRM, &sa, NULL);
    alarm(1);
    errno = 0;
    if (read(p[0], &c, 1) != -1 || errno != EINTR) { printf("EINTR lost: %d\n", errno); return 1; }
    printf("errno ok\n");
    return 0;
}
