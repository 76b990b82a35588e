/* One lock call site reached from two callers in turn, both at the same stack depth: every
 * capture there starts at the same stack pointer and finds the same return address at the
 * call site, and only the callers' return addresses, a frame further out, tell the two stacks
 * apart. A cache that trusted the call site alone would give the second caller the first one's
 * stack.
 *
 * Prints "mutex addr ADDR". */
#include <pthread.h>
#include <stdio.h>

#define ROUNDS 50

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void site(void) {
    pthread_mutex_lock(&m);
    __asm__ volatile("# held" ::: "memory");
    pthread_mutex_unlock(&m);
    /* Not a tail call: the unlock returns here. */
    __asm__ volatile("# after" ::: "memory");
}

/* The asm statements after the calls keep them real calls, and differ so the two callers are
 * not merged into one. */
__attribute__((noinline)) static void caller_a(void) {
    site();
    __asm__ volatile("# a" ::: "memory");
}

__attribute__((noinline)) static void caller_b(void) {
    site();
    __asm__ volatile("# b" ::: "memory");
}

int main(void) {
    for (int r = 0; r < ROUNDS; r++) {
        caller_a();
        caller_b();
    }
    printf("mutex addr %lu\n", (unsigned long)&m);
    return 0;
}
