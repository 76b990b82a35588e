/* Forks 20 children that each make one recorded call and leave with _exit, which runs no thread
 * destructor: their trace files are never closed by the agent, so the recorder must trim what it
 * reserved for them when the recording ends. Also starts a thread and execs /bin/true once, so
 * the trace holds every kind of file and directory a recording makes.
 *
 * Prints how many children exited cleanly. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILDREN 20

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *work(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    int ok = 0;
    for (int i = 0; i < CHILDREN; i++) {
        pid_t p = fork();
        if (p == 0) {
            pthread_mutex_lock(&m);
            pthread_mutex_unlock(&m);
            _exit(0);
        }
        int st;
        if (p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            ok++;
    }
    pid_t p = fork();
    if (p == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    waitpid(p, NULL, 0);
    printf("forkexit: %d children exited\n", ok);
    return ok == CHILDREN ? 0 : 1;
}
