/* A host with a small file size limit (issue 48, item 4): it sets RLIMIT_FSIZE to 64 KiB, as
 * `ulimit -f 64` would, then makes many traced calls (far more than 64 KiB of trace) in two
 * threads and writes a small file of its own. Prints "done N"; exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
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

int main(void) {
    struct rlimit rl = {64 * 1024, 64 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 1;
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
