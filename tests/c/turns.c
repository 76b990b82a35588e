/* Two writers take turns on one pipe; each write is caused by the reader taking the one before.
 *
 * writer0 and writer1 each write ROUNDS 8-byte messages into the `data` pipe. The reader takes
 * them one at a time and, having read message k (from writer k % 2), gives the turn to the other
 * writer through that writer's `turn` pipe. writer0 starts. So message k is writer (k % 2)'s
 * (k / 2)-th write, and it was written after message k - 1 was read: every data edge must go
 * from the writer whose turn it was, forward in time. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ROUNDS 20

static int data[2];
static int turn[2][2];

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static void *writer(void *arg) {
    intptr_t me = (intptr_t)arg;
    pthread_setname_np(pthread_self(), me ? "writer1" : "writer0");
    for (int i = 0; i < ROUNDS; i++) {
        char go;
        if (me == 1 || i > 0)
            must(read(turn[me][0], &go, 1) == 1, "read turn");
        uint64_t msg = (uint64_t)me << 32 | (uint64_t)i;
        must(write(data[1], &msg, sizeof msg) == sizeof msg, "write data");
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "reader");
    for (int k = 0; k < 2 * ROUNDS; k++) {
        uint64_t msg;
        must(read(data[0], &msg, sizeof msg) == sizeof msg, "read data");
        must((int)(msg >> 32) == k % 2 && (int)(uint32_t)msg == k / 2, "message order");
        int next = (k + 1) % 2;
        if (k + 1 < 2 * ROUNDS)
            must(write(turn[next][1], "g", 1) == 1, "write turn");
    }
    return NULL;
}

int main(void) {
    must(pipe(data) == 0 && pipe(turn[0]) == 0 && pipe(turn[1]) == 0, "pipe");
    pthread_t w0, w1, r;
    must(pthread_create(&r, NULL, reader, NULL) == 0, "create");
    must(pthread_create(&w0, NULL, writer, (void *)0) == 0, "create");
    must(pthread_create(&w1, NULL, writer, (void *)1) == 0, "create");
    pthread_join(w0, NULL);
    pthread_join(w1, NULL);
    pthread_join(r, NULL);
    printf("turns: %d messages\n", 2 * ROUNDS);
    return 0;
}
