#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int ctor_pipe[2];
__attribute__((constructor)) static void early(void) {
  pthread_mutex_lock(&m); pthread_mutex_unlock(&m);
  pipe(ctor_pipe); write(ctor_pipe[1], "x", 1);
  fprintf(stderr, "ctor ran\n");
}
