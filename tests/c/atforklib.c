/* A library whose constructor registers fork handlers before the agent's constructor runs (so
 * they run while the agent marks the thread as forking): the prepare handler takes a mutex, the
 * parent and child handlers release it, as libraries guarding their state across fork do. */
#include <pthread.h>

pthread_mutex_t atfork_lock = PTHREAD_MUTEX_INITIALIZER;

static void prepare(void) { pthread_mutex_lock(&atfork_lock); }
static void release(void) { pthread_mutex_unlock(&atfork_lock); }

__attribute__((constructor)) static void early(void) { pthread_atfork(prepare, release, release); }
