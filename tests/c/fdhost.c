/* A host that works at the edges of its descriptor table (issue 48, items 5 and 6); every line
 * it prints must be the same traced as untraced.
 *
 *   fdhost closeall   closes every number from 3 up to 70,000 and prints how many closes
 *                     succeeded; then close_range(3, 2, 0), which the kernel refuses
 *   fdhost envp       a child execs with an invalid envp and reports the errno it got
 *   fdhost cloexec PROG  marks every number from 3 up to 70,000 close-on-exec, prints how many
 *                     were open, then runs PROG (fork and exec) and prints how it ended
 *   fdhost spawn PROG    runs PROG with posix_spawn, every descriptor from 3 up closed in the
 *                     child (posix_spawn_file_actions_addclosefrom_np), and prints how it ended
 *   fdhost limit      lowers its descriptor limit to 20 (soft and hard, as `ulimit -n 20`),
 *                     opens /dev/null until refused, asks F_DUPFD for number 19, and starts 200
 *                     threads one after another; prints the counts, and its own time on stderr
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int counter;

static void *worker(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m);
    counter++;
    pthread_mutex_unlock(&m);
    return NULL;
}

static long now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

static int closeall(void) {
    int ok = 0;
    for (int fd = 3; fd < 70000; fd++)
        if (close(fd) == 0)
            ok++;
    printf("closed %d\n", ok);
    errno = 0;
    int r = close_range(3, 2, 0);
    printf("close_range(3, 2) = %d %s\n", r, r ? strerror(errno) : "");
    return 0;
}

static int bad_envp(void) {
    pid_t pid = fork();
    if (pid == 0) {
        char *argv[] = {"true", NULL};
        char **volatile bad = (char **)16;
        execve("/bin/true", argv, bad);
        printf("execve: %s\n", strerror(errno));
        fflush(stdout);
        _exit(7);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child %s %d\n", WIFEXITED(status) ? "exited" : "killed",
           WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return 0;
}

static int cloexec(const char *prog) {
    int marked = 0;
    for (int fd = 3; fd < 70000; fd++)
        if (fcntl(fd, F_SETFD, FD_CLOEXEC) == 0)
            marked++;
    printf("marked %d\n", marked);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl(prog, prog, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

static int spawn_closefrom(char *prog) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (posix_spawn_file_actions_addclosefrom_np(&fa, 3) != 0)
        return 1;
    char *argv[] = {prog, NULL};
    extern char **environ;
    pid_t pid;
    int r = posix_spawn(&pid, prog, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0)
        return 1;
    int status = 0;
    waitpid(pid, &status, 0);
    printf("spawned child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

static int limit(void) {
    struct rlimit rl = {20, 20};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1;
    long t0 = now_us();
    int opened = 0;
    while (open("/dev/null", O_RDONLY) >= 0)
        opened++;
    printf("opened %d (%s)\n", opened, strerror(errno));
    for (int fd = 3; fd < 20; fd++)
        close(fd);
    int d = fcntl(0, F_DUPFD, 19);
    printf("F_DUPFD 19 = %d\n", d);
    if (d >= 0)
        close(d);
    /* Threads started with the table full save one slot: each start finds no descriptor. */
    int fill = 0;
    while (open("/dev/null", O_RDONLY) >= 0)
        fill++;
    for (int i = 0; i < 200; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0)
            return 1;
        pthread_join(t, NULL);
    }
    printf("threads %d\n", counter);
    fprintf(stderr, "fdhost took %ld us\n", now_us() - t0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    if (strcmp(argv[1], "closeall") == 0)
        return closeall();
    if (strcmp(argv[1], "envp") == 0)
        return bad_envp();
    if (strcmp(argv[1], "cloexec") == 0 && argc > 2)
        return cloexec(argv[2]);
    if (strcmp(argv[1], "spawn") == 0 && argc > 2)
        return spawn_closefrom(argv[2]);
    if (strcmp(argv[1], "limit") == 0)
        return limit();
    return 2;
}
