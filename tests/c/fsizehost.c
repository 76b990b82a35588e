/* A host with a small file size limit (issue 48, item 4): it sets RLIMIT_FSIZE to 64 KiB, as
 * `ulimit -f 64` would, then makes many traced calls (far more than 64 KiB of trace) in two
 * threads and writes a small file of its own. Prints "done N"; exits 0.
 *
 *   fsizehost exec PROG   sets the limit, then runs PROG (fork and exec) and prints how it
 *                         ended: the program starts under the limit.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 100000; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
        if (i % 1000 == 0)
            usleep(1);
    }
    return NULL;
}

int main(int argc, char **argv) {
    struct rlimit rl = {64 * 1024, 64 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 1;
    if (argc > 2 && strcmp(argv[1], "exec") == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            execl(argv[2], argv[2], (char *)NULL);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status))
            printf("child exited %d\n", WEXITSTATUS(status));
        else
            printf("child killed by %d\n", WTERMSIG(status));
        return 0;
    }
    pthread_t a, b;
    pthread_create(&a, NULL, worker, NULL);
    pthread_create(&b, NULL, worker, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    FILE *f = tmpfile();
    if (!f || fprintf(f, "small\n") < 0 || fflush(f) != 0)
        return 1;
    printf("done %ld\n", counter);
    return 0;
}
