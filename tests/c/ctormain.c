#include <unistd.h>
#include <stdio.h>
extern int ctor_pipe[2];
int main() { char c; int n = read(ctor_pipe[0], &c, 1); printf("main read %d\n", n); return 0; }
