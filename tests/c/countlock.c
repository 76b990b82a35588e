/* Mutexes under `scalpel record --locks count`: which pairs are only counted and which stay
 * recorded. Prints the addresses the test looks for:
 *   mutexes mine0 A mine1 B stats C queue D robust E hot F
 *
 * Two workers each take their own mutex 3000 times and try it 500 times (nobody else touches
 * it: every pair is uncontended), and both take a shared `stats` mutex 2000 times (sometimes
 * contended). A producer hands 200 items to a consumer through a queue guarded by `queue` and
 * a condition variable, once the consumer waits. A robust mutex is taken 10 times, and a
 * recursive one 100 times 12 deep. Last, `hot` is held by one thread
 * for 30 ms while another blocks on it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mine[2] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t stats = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t queue = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nonempty = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t robust;
static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t nested = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int items;
static int waiting;
static int checks;
static long counter;
static long own[2];
static int holding[2];

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void *worker(void *a) {
    pthread_mutex_t *m = &mine[(long)a];
    for (int i = 0; i < 3000; i++) {
        pthread_mutex_lock(m);
        own[(long)a]++;
        pthread_mutex_unlock(m);
        if (i < 2000) {
            pthread_mutex_lock(&stats);
            counter++;
            pthread_mutex_unlock(&stats);
        }
    }
    for (int i = 0; i < 500; i++) {
        if (pthread_mutex_trylock(m) == 0) {
            pthread_mutex_unlock(m);
        }
    }
    return NULL;
}

static void *consumer(void *a) {
    (void)a;
    for (int taken = 0; taken < 200; taken++) {
        pthread_mutex_lock(&queue);
        while (items == 0) {
            waiting = 1;
            pthread_cond_wait(&nonempty, &queue);
        }
        items--;
        pthread_mutex_unlock(&queue);
    }
    return NULL;
}

static void *holder(void *a) {
    char c = 'h';
    (void)a;
    pthread_mutex_lock(&hot);
    write(holding[1], &c, 1);
    sleep_ms(30);
    pthread_mutex_unlock(&hot);
    return NULL;
}

int main(void) {
    printf("mutexes mine0 %lu mine1 %lu stats %lu queue %lu robust %lu hot %lu nested %lu\n",
           (unsigned long)&mine[0], (unsigned long)&mine[1], (unsigned long)&stats,
           (unsigned long)&queue, (unsigned long)&robust, (unsigned long)&hot,
           (unsigned long)&nested);
    fflush(stdout);
    pthread_t w[2], c, h;
    for (long i = 0; i < 2; i++) {
        pthread_create(&w[i], NULL, worker, (void *)i);
    }
    pthread_create(&c, NULL, consumer, NULL);
    /* The first item goes in once the consumer waits (it released the mutex inside the wait,
     * after setting `waiting`): a section made before anyone waited on the queue's condition
     * is counted, and its item's hand-off would be lost. */
    for (int seen = 0; !seen;) {
        checks++;
        pthread_mutex_lock(&queue);
        seen = waiting;
        pthread_mutex_unlock(&queue);
        if (!seen) {
            sleep_ms(1);
        }
    }
    for (int i = 0; i < 200; i++) {
        pthread_mutex_lock(&queue);
        items++;
        pthread_cond_signal(&nonempty);
        pthread_mutex_unlock(&queue);
        if (i % 50 == 0) {
            sleep_ms(2);
        }
    }
    pthread_join(c, NULL);
    for (int i = 0; i < 2; i++) {
        pthread_join(w[i], NULL);
    }

    pthread_mutexattr_t at;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust, &at);
    for (int i = 0; i < 10; i++) {
        pthread_mutex_lock(&robust);
        pthread_mutex_unlock(&robust);
    }

    /* A recursive mutex taken 12 deep, deeper than the agent tracks counted locks. */
    for (int round = 0; round < 100; round++) {
        for (int i = 0; i < 12; i++) {
            pthread_mutex_lock(&nested);
        }
        for (int i = 0; i < 12; i++) {
            pthread_mutex_unlock(&nested);
        }
    }

    char b;
    if (pipe(holding) != 0) {
        return 1;
    }
    pthread_create(&h, NULL, holder, NULL);
    read(holding[0], &b, 1);
    pthread_mutex_lock(&hot);
    pthread_mutex_unlock(&hot);
    pthread_join(h, NULL);
    printf("counter %ld own %ld %ld\n", counter, own[0], own[1]);
    printf("checks %d\n", checks);
    return 0;
}
