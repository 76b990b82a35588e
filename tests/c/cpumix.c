/* Five functions sharing one thread's CPU in known proportions (35, 25, 20, 12 and 8 parts on
 * average), interleaved in small slices of jittered length, with no system calls in the loop: for comparing on-CPU samples
 * with another profiler's (tests/tests/sampling.rs, scripts/compare-perf.sh).
 *
 *   cpumix UNITS   runs UNITS slices of 100 parts each (about 2 ms per slice here).
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

#define WORKER(name, salt)                                                                   \
    static void __attribute__((noinline)) name(long parts) {                                 \
        unsigned long x = sink + salt;                                                       \
        for (long i = 0; i < parts * 20000; i++)                                             \
            x = x * 6364136223846793005UL + (unsigned long)i + salt;                         \
        sink = x;                                                                            \
    }

WORKER(mix_thirty_five, 1)
WORKER(mix_twenty_five, 2)
WORKER(mix_twenty, 3)
WORKER(mix_twelve, 4)
WORKER(mix_eight, 5)

/* A slice of `parts` scaled by a pseudo-random factor from 0.5 to 1.5 (mean 1): slices of fixed
 * length would repeat in step with the kernel's tick and alias with a sampler driven by it. */
static long jitter(long parts) {
    static unsigned long rng = 2024;
    rng = rng * 6364136223846793005UL + 1442695040888963407UL;
    return parts * (50 + (long)((rng >> 33) % 101)) / 100;
}

int main(int argc, char **argv) {
    long units = argc > 1 ? atol(argv[1]) : 500;
    for (long u = 0; u < units; u++) {
        mix_thirty_five(jitter(35));
        mix_twenty_five(jitter(25));
        mix_twenty(jitter(20));
        mix_twelve(jitter(12));
        mix_eight(jitter(8));
    }
    printf("done %lu\n", sink & 1);
    return 0;
}
