/* Several threads use descriptors they have never used before at the same moment.
 *
 * Main makes PAIRS socketpairs and PAIRS pipes, then starts WRITERS threads that meet at a
 * barrier and each write one 8-byte message into every pair's sending end, in the same order,
 * so that for every descriptor the writers' first uses of it collide. Main then reads every
 * message. Each write must be recorded with its stream and offset: a write recorded without
 * them leaves its bytes out of the stream's numbering and shifts every later match on it. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define PAIRS 32
#define WRITERS 4

static int fds[2 * PAIRS][2];
static pthread_barrier_t start;

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static void *writer(void *arg) {
    uint64_t me = (uint64_t)(uintptr_t)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < 2 * PAIRS; i++)
        must(write(fds[i][1], &me, sizeof me) == sizeof me, "write");
    return NULL;
}

int main(void) {
    for (int i = 0; i < PAIRS; i++) {
        must(socketpair(AF_UNIX, SOCK_STREAM, 0, fds[i]) == 0, "socketpair");
        must(pipe(fds[PAIRS + i]) == 0, "pipe");
    }
    pthread_barrier_init(&start, NULL, WRITERS);
    pthread_t t[WRITERS];
    for (uintptr_t w = 0; w < WRITERS; w++)
        must(pthread_create(&t[w], NULL, writer, (void *)w) == 0, "create");
    for (int w = 0; w < WRITERS; w++)
        pthread_join(t[w], NULL);
    for (int i = 0; i < 2 * PAIRS; i++) {
        for (int w = 0; w < WRITERS; w++) {
            uint64_t m;
            must(read(fds[i][0], &m, sizeof m) == sizeof m, "read");
        }
    }
    printf("firstuse: %d writes\n", 2 * PAIRS * WRITERS);
    return 0;
}
