/* Forked processes with private sync objects at the same addresses, and process-shared ones.
 *
 * Parent and child each run ROUNDS ping-pongs between their main thread and a helper thread
 * through a private (static) mutex and two conds: the same addresses in both processes, but
 * different objects. Across the processes, the parent signals a PTHREAD_PROCESS_SHARED cond in
 * a MAP_SHARED page that the child waits on, and the child posts a shared semaphore that the
 * parent waits on. A correct graph links private conds only within a process, and the shared
 * cond and semaphore across the two. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 20

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static int turn; /* 1: the helper's turn, 0: main's */

struct shm {
    pthread_mutex_t m;
    pthread_cond_t c;
    int waiting, ready;
    sem_t back;
};

static void *helper(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&m);
        while (turn != 1)
            pthread_cond_wait(&go, &m);
        turn = 0;
        pthread_cond_signal(&done);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void ping_pong(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, helper, NULL) != 0)
        exit(2);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&m);
        turn = 1;
        pthread_cond_signal(&go);
        while (turn != 0)
            pthread_cond_wait(&done, &m);
        pthread_mutex_unlock(&m);
        usleep(200);
    }
    pthread_join(t, NULL);
}

int main(void) {
    struct shm *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED)
        return 2;
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&s->m, &ma);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_cond_init(&s->c, &ca);
    sem_init(&s->back, 1, 0);

    pid_t child = fork();
    if (child < 0)
        return 2;
    ping_pong();
    if (child == 0) {
        pthread_mutex_lock(&s->m);
        s->waiting = 1;
        while (!s->ready)
            pthread_cond_wait(&s->c, &s->m);
        pthread_mutex_unlock(&s->m);
        sem_post(&s->back);
        return 0;
    }
    /* The child sets `waiting` under the mutex and holds it into its wait, so once we hold the
     * mutex with `waiting` set, the child is waiting and the signal wakes it. */
    pthread_mutex_lock(&s->m);
    while (!s->waiting) {
        pthread_mutex_unlock(&s->m);
        usleep(1000);
        pthread_mutex_lock(&s->m);
    }
    s->ready = 1;
    pthread_cond_signal(&s->c);
    pthread_mutex_unlock(&s->m);
    sem_wait(&s->back);
    int st;
    waitpid(child, &st, 0);
    printf("pshared done\n");
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
