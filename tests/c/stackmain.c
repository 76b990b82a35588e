/* Stacks without frame pointers: built with -O2 -fomit-frame-pointer. Each chain of noinline
 * functions ends in a traced call; every function does work after its call so that none is a
 * tail call, and the chain survives in the stack. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 200
static int fds[2];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
volatile int sink;
extern void stackctor_join(void);

__attribute__((noinline)) int app_four(int i) {
  char c = (char)i;
  int r = (int)write(fds[1], &c, 1);
  sink += r;
  return r + 1;
}
__attribute__((noinline)) int app_three(int i) { int r = app_four(i + 1); sink += r; return r * 2; }
__attribute__((noinline)) int app_two(int i) { int r = app_three(i ^ 3); sink += r; return r + 3; }
__attribute__((noinline)) int app_one(int i) { int r = app_two(i * 5); sink += r; return r - 1; }

__attribute__((noinline)) int drain_four(void) {
  char c;
  int r = (int)read(fds[0], &c, 1);
  pthread_mutex_lock(&m);
  sink += c;
  pthread_mutex_unlock(&m);
  return r;
}
__attribute__((noinline)) int drain_three(void) { int r = drain_four(); sink += r; return r + 1; }
__attribute__((noinline)) int drain_two(void) { int r = drain_three(); sink += r; return r + 2; }
__attribute__((noinline)) int drain_one(void) { int r = drain_two(); sink += r; return r + 3; }

static void *drainer(void *a) {
  for (int i = 0; i < N; i++) drain_one();
  return a;
}

int main(int argc, char **argv) {
  if (pipe(fds) != 0) return 1;
  pthread_t t;
  pthread_create(&t, 0, drainer, 0);
  for (int i = 0; i < N; i++) app_one(i);
  pthread_join(t, 0);
  stackctor_join();
  if (argc > 1) {
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
    int (*run)(int) = (int (*)(int))dlsym(h, "plug_run");
    if (!run) return 3;
    for (int i = 0; i < N; i++) sink += run(i);
    dlclose(h);
    /* After the unload, stacks in the main program must still come out right. */
    for (int i = 0; i < 10; i++) app_one(i);
    for (int i = 0; i < 10; i++) drain_one();
  }
  printf("done %d\n", sink != 0);
  return 0;
}
