/* A library whose constructor starts a thread, before main and possibly before the agent's own
 * constructor has run. */
#include <pthread.h>
#include <unistd.h>
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_t ctor_thread;
volatile int ctor_sink;
__attribute__((noinline)) int ctor_four(int i) {
  pthread_mutex_lock(&cm);
  ctor_sink += i;
  pthread_mutex_unlock(&cm);
  return ctor_sink & 1;
}
__attribute__((noinline)) int ctor_three(int i) { int r = ctor_four(i + 1); ctor_sink += r; return r + 1; }
__attribute__((noinline)) int ctor_two(int i) { int r = ctor_three(i * 3); ctor_sink += r; return r + 2; }
__attribute__((noinline)) int ctor_one(int i) { int r = ctor_two(i ^ 5); ctor_sink += r; return r + 3; }
static void *ctor_main(void *a) {
  for (int i = 0; i < 50; i++) ctor_one(i);
  return a;
}
__attribute__((constructor)) static void start(void) { pthread_create(&ctor_thread, 0, ctor_main, 0); }
void stackctor_join(void) { pthread_join(ctor_thread, 0); }
