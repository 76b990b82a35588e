/* A program whose title (argv overwritten in place) and thread name hold terminal escape
 * sequences: an OSC 52 clipboard write, a window title and a screen clear. `record` must print
 * them escaped (tests/tests/attack_recorder.rs).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
    size_t room = strlen(argv[argc - 1]) + (size_t)(argv[argc - 1] - argv[0]) + 1;
    const char *title = "\033]52;c;cHduZWQ=\a\033]0;pwned\a\033[2J";
    memset(argv[0], 0, room);
    strncpy(argv[0], title, room - 1);
    prctl(PR_SET_NAME, "\033]52;c;aGk=\a", 0, 0, 0);
    long end = now_ms() + 300;
    while (now_ms() < end) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return 0;
}
