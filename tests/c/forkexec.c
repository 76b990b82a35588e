/* fork, then exec (with an emptied environment, as privilege-dropping daemons do), then the child
 * switches to user nobody and starts a thread that does traced work. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *after_switch(void *a) {
    int p[2];
    char c;
    (void)a;
    if (pipe(p) != 0 || write(p[1], "u", 1) != 1 || read(p[0], &c, 1) != 1) exit(3);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) { perror("setuid"); return 2; }
        pthread_t t;
        pthread_create(&t, NULL, after_switch, NULL);
        pthread_join(t, NULL);
        printf("child uid %d ok\n", (int)getuid());
        return 0;
    }
    pid_t pid = fork();
    if (pid == 0) {
        char *envp[] = { NULL };
        execle(argv[0], argv[0], "child", (char *)NULL, envp);
        _exit(98);
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) { fprintf(stderr, "child failed %d\n", st); return 1; }
    printf("forkexec ok\n");
    return 0;
}
