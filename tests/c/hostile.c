/* Things a host does that must not hurt it or the trace:
 *   closefd: closes every descriptor from 3 up (a loop, then close_range), opens its own file
 *            read-write and keeps doing traced work; its file must hold only what it wrote;
 *   _fork:   forks with _Fork (no fork handlers run); parent and child both keep working;
 *   vfork:   vfork + dup2 + exec, the classic spawn; the parent's trace must not show the
 *            child's dup2;
 *   dupall:  dup2 over every descriptor number, then a thread and an exec'd child;
 *   rawclose: the same through syscall(2): SYS_dup2, SYS_dup3, SYS_close and SYS_close_range
 *            over every descriptor number, then a thread and an exec'd child. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t _Fork(void);

static void work(int n) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    for (int i = 0; i < n; i++) { pthread_mutex_lock(&m); pthread_mutex_unlock(&m); }
}

static void *worker(void *arg) {
    (void)arg;
    work(1000);
    return NULL;
}

/* After the host's descriptor sweep: a thread and an exec'd child, which must both get files. */
static int thread_then_exec(const char *mode) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    pid_t c = fork();
    if (c == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(c, &st, 0);
    printf("%s ok\n", mode);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "closefd") == 0) {
        work(5000);
        for (int fd = 3; fd < 1024; fd++) close(fd);
        close_range(3, ~0U, 0);
        char path[] = "/tmp/scalpel-hostile-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0) return 2;
        work(200000); /* enough to need new trace windows */
        const char msg[] = "only the host writes here\n";
        if (write(fd, msg, sizeof msg - 1) != (ssize_t)(sizeof msg - 1)) return 3;
        off_t size = lseek(fd, 0, SEEK_END);
        unlink(path);
        printf("closefd ok size=%ld\n", (long)size);
        return size == (off_t)(sizeof msg - 1) ? 0 : 1;
    }
    if (strcmp(mode, "rawclose") == 0) {
        /* What a host that bypasses libc's wrappers does: the agent's socket to the recorder
         * must survive it, so the thread and the exec'd child still get files. */
        work(5000);
        /* Each sweep alone would take the socket, whichever number it is at by then. */
        for (int fd = 3; fd < 1024; fd++) syscall(SYS_close, fd);
        for (int fd = 3; fd < 512; fd++) syscall(SYS_dup2, 2, fd);
        for (int fd = 512; fd < 1024; fd++) syscall(SYS_dup3, 2, fd, 0);
        syscall(SYS_close_range, 3U, ~0U, 0);
        return thread_then_exec("rawclose");
    }
    if (strcmp(mode, "dupall") == 0) {
        /* dup2 over every descriptor number: the agent's socket to the recorder must move out
         * of the way, so the thread started after it and the exec'd child still get files. */
        work(5000);
        for (int fd = 3; fd < 1024; fd++) dup2(2, fd);
        for (int fd = 3; fd < 1024; fd++) close(fd);
        return thread_then_exec("dupall");
    }
    if (strcmp(mode, "_fork") == 0) {
        work(1000);
        pid_t pid = _Fork();
        if (pid == 0) { work(3000); _exit(0); }
        work(3000);
        int st;
        waitpid(pid, &st, 0);
        printf("_fork ok\n");
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
    }
    if (strcmp(mode, "vfork") == 0) {
        int p[2];
        if (pipe(p) != 0) return 2;
        pid_t pid = vfork();
        if (pid == 0) {
            dup2(p[1], 1);
            execl("/bin/echo", "echo", "from-child", (char *)NULL);
            _exit(127);
        }
        close(p[1]);
        char buf[64] = { 0 };
        ssize_t n = read(p[0], buf, sizeof buf - 1);
        int st;
        waitpid(pid, &st, 0);
        printf("vfork ok %s", n > 0 ? buf : "nothing\n");
        return n > 0 && strncmp(buf, "from-child", 10) == 0 ? 0 : 1;
    }
    fprintf(stderr, "usage: hostile closefd|_fork|vfork\n");
    return 2;
}
