/* Two names for one function, as identical-code folding leaves them: put_reply is an alias of
 * put_request (the symbol table holds both at one address). main calls it by the second name;
 * a frame there must show both names, since nothing in the binary says which was meant. */
#include <unistd.h>

__attribute__((noinline)) void put_request(int fd) {
    char c = 1;
    if (write(fd, &c, 1) != 1)
        _exit(2);
}

void put_reply(int fd) __attribute__((alias("put_request")));

int main(void) {
    int p[2];
    char c;
    if (pipe(p) != 0)
        return 1;
    for (int i = 0; i < 3; i++) {
        put_reply(p[1]);
        if (read(p[0], &c, 1) != 1)
            return 1;
    }
    return 0;
}
