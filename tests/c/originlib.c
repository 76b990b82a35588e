/* A library whose RUNPATH is $ORIGIN and which dlopens a sibling by bare name: the loader must
 * resolve $ORIGIN from this library, not from whoever interposes dlopen. */
#include <dlfcn.h>
#include <stdio.h>
int load_sibling(void) {
    void *h = dlopen("liboriginsib.so", RTLD_NOW);
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
    int (*f)(void) = (int (*)(void))dlsym(h, "sibling_value");
    return f && f() == 42 ? 0 : 1;
}
