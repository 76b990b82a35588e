#include <stdio.h>
int load_sibling(void);
int main(void) { int r = load_sibling(); printf("origin %s\n", r == 0 ? "ok" : "failed"); return r; }
