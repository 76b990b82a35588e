/* Mutex calls the agent records as HELD records (an uncontended lock and the unlock right after
 * it) or as plain events: every kind of mutex and every way a lock call can end.
 *
 *   heldlock        prints what each call returned, e.g. "edeadlk 35", then exits
 *   heldlock hang   prints its pid, takes a mutex without contention, then blocks in read()
 *                   on a pipe nobody writes, until the test kills it
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t many = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t across = PTHREAD_MUTEX_INITIALIZER;
static int holding[2];
static int release[2];

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Holds `busy` for 30 ms, telling main when it has it. */
static void *holder(void *a) {
    char c = 'h';
    (void)a;
    pthread_mutex_lock(&busy);
    write(holding[1], &c, 1);
    read(release[0], &c, 1);
    sleep_ms(30);
    pthread_mutex_unlock(&busy);
    return NULL;
}

static int hang(void) {
    int p[2];
    char c;
    if (pipe(p) != 0) return 1;
    printf("%d\n", (int)getpid());
    fflush(stdout);
    /* Nothing intercepted between the lock and the read: the read's hook writes the lock. */
    pthread_mutex_lock(&across);
    read(p[0], &c, 1);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "hang") == 0) return hang();

    printf("many %lu outer %lu inner %lu busy %lu\n", (unsigned long)&many,
           (unsigned long)&outer, (unsigned long)&inner, (unsigned long)&busy);

    /* 1000 uncontended pairs. */
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&many);
        pthread_mutex_unlock(&many);
    }

    /* Nested: the outer lock is written when the inner one is taken. */
    pthread_mutex_lock(&outer);
    pthread_mutex_lock(&inner);
    pthread_mutex_unlock(&inner);
    pthread_mutex_unlock(&outer);

    /* A trylock that takes the mutex, and its unlock. */
    printf("trylock %d\n", pthread_mutex_trylock(&many));
    pthread_mutex_unlock(&many);

    /* Recursive: the second lock counts up without waiting. */
    pthread_mutexattr_t attr;
    pthread_mutex_t rec, chk;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rec, &attr);
    int r1 = pthread_mutex_lock(&rec);
    int r2 = pthread_mutex_lock(&rec);
    pthread_mutex_unlock(&rec);
    pthread_mutex_unlock(&rec);
    printf("recursive %d %d\n", r1, r2);

    /* Error-checking: locking it again is refused, not a deadlock. */
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&chk, &attr);
    pthread_mutex_lock(&chk);
    printf("edeadlk %d\n", pthread_mutex_lock(&chk));
    /* An unlock that fails: not owned after this one. */
    pthread_mutex_unlock(&chk);
    printf("eperm %d\n", pthread_mutex_unlock(&chk));

    /* A lock, a pipe write while it is held, the unlock. */
    int p[2];
    char c = 'x';
    if (pipe(p) != 0) return 1;
    pthread_mutex_lock(&many);
    write(p[1], &c, 1);
    pthread_mutex_unlock(&many);

    /* Contended: main waits for the holder's 30 ms; a trylock meanwhile finds it busy. */
    pthread_t t;
    if (pipe(holding) != 0 || pipe(release) != 0) return 1;
    pthread_create(&t, NULL, holder, NULL);
    read(holding[0], &c, 1);
    printf("busy %d\n", pthread_mutex_trylock(&busy));
    write(release[1], &c, 1);
    pthread_mutex_lock(&busy);
    pthread_mutex_unlock(&busy);
    pthread_join(t, NULL);
    return 0;
}
