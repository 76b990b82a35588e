/* A fork-per-connection server in miniature: starts N (argv[1]) short-lived children one after
 * the other, each exec'ing this program as `child`, which locks a mutex once and exits
 * (tests/tests/attack_recorder.rs: every one must be recorded under `ulimit -n 1024`).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
        return 0;
    }
    int n = argc > 1 ? atoi(argv[1]) : 10;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            execl("/proc/self/exe", argv[0], "child", (char *)NULL);
            _exit(127);
        }
        int st;
        if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
    }
    printf("spawned %d failed %d\n", n, failed);
    return failed != 0;
}
