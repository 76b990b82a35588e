/* A thread made with glibc's clone() and CLONE_VM|CLONE_THREAD but no CLONE_SETTLS (issue 48,
 * item 6): the child runs with its parent's thread pointer, so anything kept in thread-local
 * storage is shared. The child locks its mutex 1,000 times; then the parent locks its own 500
 * times. Prints "child 1000 parent 500"; exits 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t child_m = PTHREAD_MUTEX_INITIALIZER, parent_m = PTHREAD_MUTEX_INITIALIZER;
static volatile int child_count, child_done;

static int child(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&child_m);
        child_count++;
        pthread_mutex_unlock(&child_m);
    }
    __atomic_store_n(&child_done, 1, __ATOMIC_RELEASE);
    /* A raw exit: the child owns no glibc thread descriptor to tear down. */
    for (;;)
        syscall(SYS_exit, 0);
}

int main(void) {
    int parent_count = 0;
    pthread_mutex_lock(&parent_m); /* the parent's recording starts before the clone */
    pthread_mutex_unlock(&parent_m);
    size_t size = 1 << 20;
    char *stack = malloc(size);
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
    if (clone(child, stack + size, flags, NULL) < 0)
        return 1;
    while (!__atomic_load_n(&child_done, __ATOMIC_ACQUIRE))
        sched_yield();
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&parent_m);
        parent_count++;
        pthread_mutex_unlock(&parent_m);
    }
    printf("child %d parent %d\n", child_count, parent_count);
    return 0;
}
