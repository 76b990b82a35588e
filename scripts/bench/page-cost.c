/* What a page of trace costs the thread that writes it, for `scripts/bench/page-cost.sh`:
 * 15-byte records stored one after another through a MAP_SHARED window of a file, windows of
 * 1 MiB reserved with fallocate first, as the agent does. Two ways, alternated by the script:
 *
 *   fault  the pages are left for the stores to fault in (the agent before session 21);
 *   ahead  zeros are written over each window with pwrite, in 64 KiB pieces, before it is
 *          mapped (the agent since): the stores then find their pages in the page cache.
 *
 * Prints ns per record, ns per 4 KiB page and minor faults per page, all costs of the writing
 * thread counted (the pwrite calls included).
 *
 * Usage: page-cost FILE fault|ahead MIB */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define WINDOW (1L << 20)
#define PIECE (64L << 10)
#define RECORD 15

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static long minor_faults(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

static char zeros[PIECE];

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: page-cost FILE fault|ahead MIB\n");
        return 2;
    }
    int ahead = strcmp(argv[2], "ahead") == 0;
    long total = atol(argv[3]) << 20;
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    char record[RECORD];
    memset(record, 7, sizeof record);
    char *window = NULL;
    long win_off = 0, pos = 0;
    long f0 = minor_faults();
    double t0 = now_ns();
    while (pos < total) {
        if (window == NULL || pos + RECORD > win_off + WINDOW) {
            if (window != NULL) munmap(window, WINDOW);
            win_off = pos & ~4095L;
            if (fallocate(fd, 0, win_off, WINDOW) != 0) {
                perror("fallocate");
                return 1;
            }
            for (long at = pos; ahead && at < win_off + WINDOW;) {
                long n = PIECE - at % PIECE;
                if (at + n > win_off + WINDOW) n = win_off + WINDOW - at;
                if (pwrite(fd, zeros, n, at) != n) break;
                at += n;
            }
            window = mmap(NULL, WINDOW, PROT_READ | PROT_WRITE, MAP_SHARED, fd, win_off);
            if (window == MAP_FAILED) {
                perror("mmap");
                return 1;
            }
        }
        memcpy(window + (pos - win_off), record, RECORD);
        pos += RECORD;
    }
    double t1 = now_ns();
    long faults = minor_faults() - f0;
    double pages = total / 4096.0;
    printf("%s: %.2f ns per record, %.0f ns per page, %.2f faults per page\n", argv[2],
           (t1 - t0) / (total / RECORD), (t1 - t0) / pages, faults / pages);
    unlink(argv[1]);
    return 0;
}
