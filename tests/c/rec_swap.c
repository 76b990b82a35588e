/* The attacker of the creation race: makes a link SPARE -> VICTIM, then spins exchanging it
 * with PATH (renameat2 RENAME_EXCHANGE, one atomic step) until PATH exists, within SECONDS
 * (tests/tests/attack_recorder.rs). Exits 0 when it swapped, 1 when time ran out.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 5) return 2;
    if (symlink(argv[3], argv[2]) != 0) return 3;
    time_t end = time(NULL) + atoi(argv[4]);
    printf("ready\n");
    fflush(stdout);
    while (time(NULL) < end) {
        for (int i = 0; i < 10000; i++) {
            if (renameat2(AT_FDCWD, argv[2], AT_FDCWD, argv[1], RENAME_EXCHANGE) == 0) return 0;
        }
    }
    return 1;
}
