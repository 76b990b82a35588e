//! A pool fed by a thread of its own (see [`Spec::feeder`](super::Spec::feeder)): the epoll
//! thread hands each request to a feeder, which gives it to an idle worker's own queue and,
//! with none idle, waits on a condition that every worker signals as it goes idle, as XZ Utils'
//! threaded encoder feeds its workers, in pieces when [`Spec::chunks`](super::Spec::chunks)
//! says so. The C sources only; `emit` puts them together.

/// Each worker's queue, the stack of idle workers, and the feeder.
pub(super) const FEEDER: &str = r#"
static struct handoff hq, wq[WORKERS];
static pthread_mutex_t idle_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static int idle_stack[WORKERS], idle_n;

static void *feeder_main(void *arg) {
    (void)arg;
    for (;;) {
        struct item it = handoff_take(&hq);
        uint64_t mark = truth_now();
        if (it.fd < 0) break;
        pthread_mutex_lock(&idle_mu);
        while (idle_n == 0) {
            pthread_cond_wait(&idle_cv, &idle_mu);
            mark = truth_now();
        }
        int w = idle_stack[--idle_n];
        pthread_mutex_unlock(&idle_mu);
        truth_part(1, &it.m, mark);
        handoff_put(&wq[w], it);
        for (int k = 0; k < CHUNKS; k++) handoff_put(&wq[w], it);
    }
    for (int i = 0; i < WORKERS; i++) handoff_put(&wq[i], (struct item){.fd = -1});
    return NULL;
}
"#;

/// A worker: its loop takes from its own queue, written with `hq` standing for that queue so
/// that it reads, and peels, as every pool's worker loop does.
pub(super) const WORKER: &str = r#"
static void *worker_main(void *arg) {
    struct handoff *own = arg;
#define hq (*own)
    for (;;) {
        struct item it = handoff_take(&hq);
        uint64_t mark = truth_now();
        if (it.fd < 0) break;
        for (int k = 0; k < CHUNKS; k++) handoff_take(&hq);
        serve(&it.m);
        answer(2, it.fd, &it.m, mark);
        pthread_mutex_lock(&idle_mu);
        idle_stack[idle_n++] = (int)(own - wq);
        pthread_cond_signal(&idle_cv);
        pthread_mutex_unlock(&idle_mu);
    }
#undef hq
    return NULL;
}
"#;

/// What the epoll thread does with each request: hands it to the feeder.
pub(super) const ON_REQUEST: &str = r#"                truth_part(0, &m, mark);
                handoff_put(&hq, (struct item){.m = m, .fd = c->fd});
                mark = truth_now();"#;

/// The server: the workers, each on its own queue and idle at first, the feeder, the loop.
pub(super) const SERVER: &str = r#"
static void server(int lfd) {
    handoff_init(&hq);
    pthread_t t[WORKERS], feeder;
    for (int i = 0; i < WORKERS; i++) {
        handoff_init(&wq[i]);
        idle_stack[idle_n++] = i;
        pthread_create(&t[i], NULL, worker_main, &wq[i]);
    }
    pthread_create(&feeder, NULL, feeder_main, NULL);
    epoll_loop(lfd);
    handoff_put(&hq, (struct item){.fd = -1});
    pthread_join(feeder, NULL);
    for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
}
"#;
