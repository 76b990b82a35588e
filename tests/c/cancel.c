/* One thread is cancelled while blocked in pthread_cond_wait; another leaves by pthread_exit from
 * inside a cond_wait loop after being woken; a third returns normally. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go = 0;

static void unlock(void *a) { pthread_mutex_unlock(a); }

static void *cancelled(void *a) {
    (void)a;
    pthread_mutex_lock(&m);
    pthread_cleanup_push(unlock, &m);
    for (;;) pthread_cond_wait(&cv, &m);
    pthread_cleanup_pop(1);
    return NULL;
}

static void *exits(void *a) {
    (void)a;
    pthread_mutex_lock(&m);
    while (!go) pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    pthread_exit(NULL);
}

static void *returns(void *a) { return a; }

int main(void) {
    pthread_t a, b, c;
    pthread_create(&a, NULL, cancelled, NULL);
    pthread_create(&b, NULL, exits, NULL);
    pthread_create(&c, NULL, returns, NULL);
    usleep(20000);
    pthread_cancel(a);
    void *r;
    pthread_join(a, &r);
    if (r != PTHREAD_CANCELED) { fprintf(stderr, "not cancelled\n"); return 1; }
    pthread_mutex_lock(&m);
    go = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&m);
    pthread_join(b, NULL);
    pthread_join(c, NULL);
    printf("cancel ok\n");
    return 0;
}
