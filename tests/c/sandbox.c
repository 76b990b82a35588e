/* A host that locks itself into a seccomp allow-list after start, as sshd's privsep child,
 * browsers' renderers and systemd's SystemCallFilter= do (issue 48, item 3). Any call not on
 * the list kills the process (SECCOMP_RET_KILL_PROCESS).
 *
 *   sandbox prctl|syscall   how the filter is installed: prctl(PR_SET_SECCOMP), or
 *                           syscall(SYS_seccomp) as libseccomp does
 *   sandbox exec PROG       prctl, with what the loader needs allowed too, then execs PROG
 *                           inside the sandbox (the filter is kept across exec)
 *
 * The main thread locks a mutex first (its recording starts before the sandbox). After the
 * filter: four threads lock the mutex 50,000 times each (new threads), the main thread joins
 * them and exits. Prints "done N"; exits 0.
 */
#define _GNU_SOURCE
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 50000; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

int main(int argc, char **argv) {
    int via_syscall = argc > 1 && strcmp(argv[1], "syscall") == 0;
    const char *exec_prog = argc > 2 && strcmp(argv[1], "exec") == 0 ? argv[2] : NULL;
    /* What glibc needs to start and join threads, print and exit. */
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_exit), ALLOW(SYS_exit_group),
        ALLOW(SYS_futex), ALLOW(SYS_mmap), ALLOW(SYS_munmap), ALLOW(SYS_mprotect),
        ALLOW(SYS_brk), ALLOW(SYS_rt_sigprocmask), ALLOW(SYS_rt_sigreturn),
        ALLOW(SYS_clone), ALLOW(SYS_clone3), ALLOW(SYS_set_robust_list), ALLOW(SYS_rseq),
        ALLOW(SYS_madvise), ALLOW(SYS_newfstatat), ALLOW(SYS_clock_gettime),
        ALLOW(SYS_rt_sigaction), ALLOW(SYS_getpid), ALLOW(SYS_gettid), ALLOW(SYS_getrandom),
        /* For "exec": the loader and libc's start. */
        ALLOW(SYS_execve), ALLOW(SYS_openat), ALLOW(SYS_close), ALLOW(SYS_pread64),
        ALLOW(SYS_arch_prctl), ALLOW(SYS_access), ALLOW(SYS_set_tid_address),
        ALLOW(SYS_prlimit64), ALLOW(SYS_fstat), ALLOW(SYS_readlink),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
    /* The main thread's recording starts before the sandbox. */
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return 1;
    int r = via_syscall ? (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)
                        : prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
    if (r != 0)
        return 1;
    if (exec_prog) {
        execl(exec_prog, exec_prog, (char *)NULL);
        return 127;
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("done %ld\n", counter);
    return 0;
}
