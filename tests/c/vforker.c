/* A spawner that relies on vfork's shared memory (issue 48, item 6), as shells and
 * posix_spawn implementations without CLONE_VFORK do: the child stores its exec error in a
 * variable of the parent and exits; the parent reads it after vfork returns.
 *
 *   vforker PROG   vforks twice: once to exec a path that does not exist, once to exec PROG;
 *                  prints what the parent learned each time
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int child_errno;

static void spawn(const char *path) {
    child_errno = 0;
    pid_t pid = vfork();
    if (pid == 0) {
        char *argv[] = {(char *)path, NULL};
        execv(path, argv);
        child_errno = errno;
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("%s: exec error %s, exit %d\n", strrchr(path, '/') ? strrchr(path, '/') + 1 : path,
           child_errno ? strerror(child_errno) : "none",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    spawn("/nonexistent/program");
    spawn(argv[1]);
    return 0;
}
