/* Forks 5 children (each exits at once), then takes the library's mutex itself once: with
 * tests/c/atforklib.c, the parent takes and releases that mutex 6 times. */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

extern pthread_mutex_t atfork_lock;

int main(void) {
    for (int i = 0; i < 5; i++) {
        pid_t c = fork();
        if (c == 0) _exit(0);
        waitpid(c, NULL, 0);
    }
    pthread_mutex_lock(&atfork_lock);
    pthread_mutex_unlock(&atfork_lock);
    puts("forked 5");
    return 0;
}
