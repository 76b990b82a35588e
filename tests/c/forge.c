/* A traced process that turns on its parent: the fork child sends the recorder a forged
 * "finished" message naming the first thread file of the recording (its parent's main thread),
 * hoping the recorder trims the file under the parent's live mapping (SIGBUS at its next record),
 * then asks to reopen it. The recorder must refuse both: a process finishes and reopens its own
 * files only.
 *
 * Prints "forge: parent survived" when the parent's later work ran. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void work(int n) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    for (int i = 0; i < n; i++) { pthread_mutex_lock(&m); pthread_mutex_unlock(&m); }
}

/* The broker protocol's request: kind:u8, 0:[u8;3], pid:u32, a:u32, 0:u32, b:u64. */
static void forge(int sock, uint8_t kind, uint32_t token) {
    unsigned char m[24];
    memset(m, 0, sizeof m);
    m[0] = kind;
    memcpy(m + 8, &token, 4);
    send(sock, m, sizeof m, MSG_NOSIGNAL);
}

int main(void) {
    const char *b = getenv("SCALPEL_BROKER");
    if (!b) return 2;
    int sock = atoi(b);
    work(1000); /* the main thread's file (token 0) and its first window */
    pid_t c = fork();
    if (c == 0) {
        forge(sock, 5, 0); /* Closed: token 0, length 0 */
        forge(sock, 4, 0); /* Reopen: no answer socket attached, so nothing could come back */
        _exit(0);
    }
    waitpid(c, NULL, 0);
    usleep(200000); /* the recorder has read the forged messages by now */
    work(50000); /* writes past what the forged trim would have left */
    printf("forge: parent survived\n");
    return 0;
}
