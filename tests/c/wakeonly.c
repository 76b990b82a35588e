/* A futex lock whose unlock sometimes wakes a word nobody ever waited on.
 *
 * The worker serves ROUNDS requests from main over two pipes: read a byte, take a futex lock
 * of the kind Rust's std::sync::Mutex is (0 free, 1 locked, 2 locked with waiters: the unlocker
 * that swaps out 2 calls FUTEX_WAKE), update a counter, unlock, write a byte back. On odd
 * rounds the word is marked 2 while held, as a contended locker leaves it when it swaps in 2
 * just as the holder lets go and so takes the lock without ever waiting; the unlock then wakes
 * nobody. No thread ever waits on the word. Each round is one leaf on the worker: read, write. */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ROUNDS 40

static int in[2], out[2];
static atomic_int word;
static long counter;

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static void lock(int contended) {
    int free_ = 0;
    must(atomic_compare_exchange_strong(&word, &free_, 1), "uncontended lock");
    if (contended)
        atomic_store(&word, 2);
}

static void unlock(void) {
    if (atomic_exchange(&word, 0) == 2)
        syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        char c;
        must(read(in[0], &c, 1) == 1, "worker read");
        lock(i % 2);
        counter++;
        unlock();
        must(write(out[1], &c, 1) == 1, "worker write");
    }
    return NULL;
}

int main(void) {
    must(pipe(in) == 0 && pipe(out) == 0, "pipe");
    pthread_t t;
    must(pthread_create(&t, NULL, worker, NULL) == 0, "create");
    for (int i = 0; i < ROUNDS; i++) {
        char c = 'r';
        must(write(in[1], &c, 1) == 1, "main write");
        must(read(out[0], &c, 1) == 1, "main read");
    }
    pthread_join(t, NULL);
    printf("wakeonly: %ld rounds\n", counter);
    return 0;
}
