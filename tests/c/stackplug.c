/* A library loaded with dlopen after the program started: its frames must unwind too. */
#include <pthread.h>
static pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
volatile int plug_sink;
__attribute__((noinline)) int plug_four(int i) {
  pthread_mutex_lock(&pm);
  plug_sink += i;
  pthread_mutex_unlock(&pm);
  return plug_sink & 1;
}
__attribute__((noinline)) int plug_three(int i) { int r = plug_four(i + 1); plug_sink += r; return r + 1; }
__attribute__((noinline)) int plug_two(int i) { int r = plug_three(i * 3); plug_sink += r; return r + 2; }
int plug_run(int i) { int r = plug_two(i ^ 5); plug_sink += r; return r + 3; }
