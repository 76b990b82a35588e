//! The C source of a generated program: its configuration, then the shared runtime
//! (`tests/gen/runtime.h`), then the server of its architecture.
//!
//! Each architecture is written from the same few pieces: a connection loop (read, then each
//! request parsed from what the read returned) and an epoll loop over the listener and the
//! connections, with what is done with each request filled in. Truth is written where the
//! request's part on a thread ends: `truth_part(stage, …, mark)`, `mark` being the time the
//! sync call before it returned (samples/TRUTH.md's convention).

use std::fmt::Write;

use super::feeder;
use super::spec::{Arch, Spec};

/// The whole program.
pub fn program(spec: &Spec) -> String {
    let mut c = String::new();
    header(&mut c, spec);
    c.push_str("#include \"runtime.h\"\n\n");
    match spec.arch {
        Arch::ThreadPerConnection => thread_per_connection(&mut c),
        Arch::EventLoop => event_loop(&mut c),
        Arch::Pool if spec.completions => completion_pool(&mut c, spec.peeled),
        Arch::Pool if spec.feeder => feeder_pool(&mut c, spec),
        Arch::Pool => pool(&mut c, spec),
        Arch::Pipeline => pipeline(&mut c, spec),
        Arch::ForkPerConnection => fork_per_connection(&mut c),
    }
    c
}

fn header(c: &mut String, s: &Spec) {
    let _ = writeln!(c, "/* Generated from seed {}: {s}. */", s.seed);
    let defs = [
        ("PROGRAM", format!("\"gen-{}\"", s.seed)),
        ("UNIX_SOCKET", u32::from(s.unix_socket).to_string()),
        ("NCLIENTS", format!("{}u", s.clients)),
        ("REQS", format!("{}u", s.requests)),
        ("PIPELINE", format!("{}u", s.pipeline)),
        ("SLOW_PERMILLE", format!("{}u", s.slow_permille)),
        ("SLOW_COMMIT", u32::from(s.slow_commit).to_string()),
        ("WORK_SPIN", format!("{}u", s.work)),
        ("NOISE", s.noise.to_string()),
        ("WORKERS", s.workers.to_string()),
        ("HANDOFF", s.handoff.c_name().to_owned()),
        ("CALL", u32::from(s.call).to_string()),
        ("GLOBAL_LOCK", u32::from(s.global_lock).to_string()),
        ("IDLE", u32::from(s.idle).to_string()),
    ];
    for (k, v) in defs {
        let _ = writeln!(c, "#define {k} {v}");
    }
}

/// A connection served by the thread that reads it: each request parsed from a read is served
/// and answered before the next is parsed.
const SERVE_CONNECTION: &str = r#"
static void serve_connection(struct conn *c) {
    uint64_t mark = truth_now();
    for (;;) {
        ssize_t r = conn_fill(c);
        mark = truth_now();
        if (r <= 0) break;
        struct msg m;
        while (conn_next(c, &m)) {
            serve(&m);
            answer(0, c->fd, &m, mark);
            mark = truth_now();
        }
    }
    close(c->fd);
}
"#;

fn thread_per_connection(c: &mut String) {
    c.push_str(SERVE_CONNECTION);
    c.push_str(
        r#"
static void *connection_main(void *arg) {
    serve_connection(arg);
    free(arg);
    return NULL;
}

static void server(int lfd) {
    pthread_t t[NCLIENTS];
    for (unsigned i = 0; i < NCLIENTS; i++) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) die("accept");
        struct conn *c = calloc(1, sizeof *c);
        c->fd = fd;
        pthread_create(&t[i], NULL, connection_main, c);
    }
    close(lfd);
    for (unsigned i = 0; i < NCLIENTS; i++) pthread_join(t[i], NULL);
}
"#,
    );
}

fn fork_per_connection(c: &mut String) {
    c.push_str(SERVE_CONNECTION);
    c.push_str(
        r#"
static void server(int lfd) {
    pid_t kids[NCLIENTS];
    for (unsigned i = 0; i < NCLIENTS; i++) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) die("accept");
        pid_t p = fork();
        if (p < 0) die("fork");
        if (p == 0) {
            close(lfd);
            truth_open(PROGRAM);
            struct conn *c = calloc(1, sizeof *c);
            c->fd = fd;
            serve_connection(c);
            _exit(0);
        }
        close(fd);
        kids[i] = p;
    }
    close(lfd);
    for (unsigned i = 0; i < NCLIENTS; i++) {
        int status;
        if (waitpid(kids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            die("a connection's process failed");
    }
}
"#,
    );
}

/// An epoll loop over the listener and every connection; `on_request` is C run for each
/// request `m` of connection `c`, with `mark` the time the last sync call returned (it must
/// set `mark` again after any sync call of its own).
fn epoll_loop(c: &mut String, on_request: &str) {
    let _ = write!(
        c,
        r#"
static void epoll_loop(int lfd) {{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    struct epoll_event lev = {{.events = EPOLLIN, .data.ptr = NULL}};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0) die("epoll_ctl");
    unsigned accepted = 0, open = 0;
    while (accepted < NCLIENTS || open > 0) {{
        struct epoll_event ev[16];
        int n = epoll_wait(ep, ev, 16, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("epoll_wait");
        uint64_t mark = truth_now();
        for (int i = 0; i < n; i++) {{
            struct conn *c = ev[i].data.ptr;
            if (c == NULL) {{
                int fd = accept(lfd, NULL, NULL);
                mark = truth_now();
                if (fd < 0) die("accept");
                c = calloc(1, sizeof *c);
                c->fd = fd;
                struct epoll_event cev = {{.events = EPOLLIN, .data.ptr = c}};
                if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev) < 0) die("epoll_ctl");
                accepted++;
                open++;
                if (accepted == NCLIENTS) epoll_ctl(ep, EPOLL_CTL_DEL, lfd, NULL);
                continue;
            }}
            ssize_t r = conn_fill(c);
            mark = truth_now();
            if (r <= 0) {{
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                free(c);
                open--;
                continue;
            }}
            struct msg m;
            while (conn_next(c, &m)) {{
{on_request}
            }}
        }}
    }}
    close(ep);
    close(lfd);
}}
"#
    );
}

fn event_loop(c: &mut String) {
    epoll_loop(
        c,
        r#"                serve(&m);
                answer(0, c->fd, &m, mark);
                mark = truth_now();"#,
    );
    c.push_str("\nstatic void server(int lfd) { epoll_loop(lfd); }\n");
}

/// A pool worker's loop header as written, and with its first take peeled out of the loop
/// (see [`Spec::peeled`]): the first item then comes from a call site of its own.
const WORKER_LOOP: &str = "    for (;;) {\n        struct item it = handoff_take(&hq);\n";
const PEELED_LOOP: &str =
    "    struct item it = handoff_take(&hq);\n    for (;; it = handoff_take(&hq)) {\n";

/// `code`'s worker loop peeled when `peeled`.
fn push_worker(c: &mut String, code: &str, peeled: bool) {
    assert!(code.contains(WORKER_LOOP), "the worker loop to peel");
    if peeled {
        c.push_str(&code.replacen(WORKER_LOOP, PEELED_LOOP, 1));
    } else {
        c.push_str(code);
    }
}

/// Idle workers, counted (see [`Spec::idle`]): the epoll thread claims one before each hand-off
/// and, with none idle, waits on the wake-up pipe, which a worker writes to as it goes idle
/// only while the epoll thread waits. The count is under a mutex (no cut); the pipe's read and
/// write are the only calls between the two.
const IDLE_WORKERS: &str = r#"
static pthread_mutex_t idle_mu = PTHREAD_MUTEX_INITIALIZER;
static int idle_workers = WORKERS, loop_waits;
static int wake_pipe[2];

static void claim_idle(void) {
    for (;;) {
        pthread_mutex_lock(&idle_mu);
        if (idle_workers > 0) {
            idle_workers--;
            pthread_mutex_unlock(&idle_mu);
            return;
        }
        loop_waits = 1;
        pthread_mutex_unlock(&idle_mu);
        char b;
        if (read(wake_pipe[0], &b, 1) != 1) die("read");
    }
}

static void release_idle(void) {
    pthread_mutex_lock(&idle_mu);
    idle_workers++;
    int wake = loop_waits;
    loop_waits = 0;
    pthread_mutex_unlock(&idle_mu);
    if (wake) full_write(wake_pipe[1], "", 1);
}
"#;

/// A sender thread that writes the replies the workers hand it through one channel (see
/// [`Spec::sender`]): a pipe, or a Unix socket pair where the program's transport is Unix
/// sockets (the two queue a write's bytes at different points of the call: see
/// `scalpel-graph`'s `streamorder`). Each item is written whole (under `PIPE_BUF`) and read
/// whole.
const SENDER: &str = r#"
static int reply_pipe[2];

static void *sender_main(void *arg) {
    (void)arg;
    for (;;) {
        struct item it;
        if (read_full(reply_pipe[0], &it, sizeof it) != 0) die("reply read");
        uint64_t mark = truth_now();
        if (it.fd < 0) break;
        answer(2, it.fd, &it.m, mark);
    }
    return NULL;
}
"#;

/// A pool fed by a thread of its own (see [`Spec::feeder`]).
fn feeder_pool(c: &mut String, s: &Spec) {
    let _ = writeln!(c, "#define CHUNKS {}", s.chunks);
    c.push_str(feeder::FEEDER);
    push_worker(c, feeder::WORKER, s.peeled);
    epoll_loop(c, feeder::ON_REQUEST);
    c.push_str(feeder::SERVER);
}

fn pool(c: &mut String, spec: &Spec) {
    let (peeled, idle) = (spec.peeled, spec.idle);
    if idle {
        c.push_str(IDLE_WORKERS);
    }
    let (release, claim, init) = if idle {
        (
            "\n        release_idle();",
            "                claim_idle();\n",
            "\n    if (pipe(wake_pipe) < 0) die(\"pipe\");",
        )
    } else {
        ("", "", "")
    };
    let reply = if spec.sender {
        c.push_str(SENDER);
        "truth_part(1, &it.m, mark);\n        full_write(reply_pipe[1], &it, sizeof it);"
    } else {
        "answer(1, it.fd, &it.m, mark);"
    };
    push_worker(
        c,
        &format!(
            r#"
static struct handoff hq;

static void *worker_main(void *arg) {{
    (void)arg;
    for (;;) {{
        struct item it = handoff_take(&hq);
        uint64_t mark = truth_now();
        if (it.fd < 0) break;
        serve(&it.m);
        {reply}{release}
    }}
    return NULL;
}}
"#
        ),
        peeled,
    );
    epoll_loop(
        c,
        &format!(
            r#"{claim}                truth_part(0, &m, mark);
                handoff_put(&hq, (struct item){{.m = m, .fd = c->fd}});
                mark = truth_now();"#
        ),
    );
    let (start, stop) = if spec.sender {
        (
            "\n    if ((UNIX_SOCKET ? socketpair(AF_UNIX, SOCK_STREAM, 0, reply_pipe) \
             : pipe(reply_pipe)) < 0)\n        die(\"reply channel\");\n    pthread_t snd;\n    \
             pthread_create(&snd, NULL, sender_main, NULL);",
            "\n    struct item end = {.fd = -1};\n    full_write(reply_pipe[1], &end, sizeof end);\n    \
             pthread_join(snd, NULL);",
        )
    } else {
        ("", "")
    };
    let _ = write!(
        c,
        r#"
static void server(int lfd) {{
    handoff_init(&hq);{init}{start}
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker_main, NULL);
    epoll_loop(lfd);
    for (int i = 0; i < WORKERS; i++) handoff_put(&hq, (struct item){{.fd = -1}});
    for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);{stop}
}}
"#
    );
}

/// A pool whose workers report finished requests to the epoll thread, which writes the replies
/// (see [`Spec::completions`]): a connection has one request at the pool at a time; the next one
/// it sent (pipelined) is handed over after the replies of the wakeup that answered it.
const COMPLETION_POOL: &str = r#"
static struct handoff hq;
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static struct item done_ring[RING];
static unsigned done_head, done_tail;
static int done_efd;

struct pconn {
    struct conn c;
    int busy, posted;
};
static struct pconn *by_fd[4096];

static void *worker_main(void *arg) {
    (void)arg;
    for (;;) {
        struct item it = handoff_take(&hq);
        uint64_t mark = truth_now();
        if (it.fd < 0) break;
        serve(&it.m);
        truth_part(1, &it.m, mark);
        pthread_mutex_lock(&done_mu);
        done_ring[done_tail++ % RING] = it;
        pthread_mutex_unlock(&done_mu);
        uint64_t one = 1;
        full_write(done_efd, &one, sizeof one);
    }
    return NULL;
}

/* Hands the connection's next buffered request to the pool, when none is there already. */
static void hand_over(struct pconn *pc, uint64_t *mark) {
    struct msg m;
    if (pc->busy || !conn_next(&pc->c, &m)) return;
    truth_part(0, &m, *mark);
    pc->busy = 1;
    handoff_put(&hq, (struct item){.m = m, .fd = pc->c.fd});
    *mark = truth_now();
}

/* Writes the reply of every finished request, oldest first, then hands over the next request
 * of each of their connections. */
static void replies(uint64_t *mark) {
    struct item got[64];
    struct pconn *posted[64];
    unsigned n = 0, np = 0;
    pthread_mutex_lock(&done_mu);
    while (done_head != done_tail && n < 64) got[n++] = done_ring[done_head++ % RING];
    pthread_mutex_unlock(&done_mu);
    for (unsigned i = 0; i < n; i++) {
        answer(2, got[i].fd, &got[i].m, *mark);
        *mark = truth_now();
        struct pconn *pc = by_fd[got[i].fd];
        pc->busy = 0;
        if (!pc->posted) {
            pc->posted = 1;
            posted[np++] = pc;
        }
    }
    for (unsigned i = 0; i < np; i++) {
        posted[i]->posted = 0;
        hand_over(posted[i], mark);
    }
}

static void completion_loop(int lfd) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    static char done_mark;
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0) die("epoll_ctl");
    /* Every write reports it again; its count is never read. */
    struct epoll_event dev = {.events = EPOLLIN | EPOLLET, .data.ptr = &done_mark};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, done_efd, &dev) < 0) die("epoll_ctl");
    unsigned accepted = 0, open = 0;
    while (accepted < NCLIENTS || open > 0) {
        struct epoll_event ev[16];
        int n = epoll_wait(ep, ev, 16, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("epoll_wait");
        uint64_t mark = truth_now();
        for (int i = 0; i < n; i++) {
            struct pconn *pc = ev[i].data.ptr;
            if ((void *)pc == (void *)&done_mark) {
                replies(&mark);
                continue;
            }
            if (pc == NULL) {
                int fd = accept(lfd, NULL, NULL);
                mark = truth_now();
                if (fd < 0 || fd >= 4096) die("accept");
                pc = calloc(1, sizeof *pc);
                pc->c.fd = fd;
                by_fd[fd] = pc;
                struct epoll_event cev = {.events = EPOLLIN, .data.ptr = pc};
                if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev) < 0) die("epoll_ctl");
                accepted++;
                open++;
                if (accepted == NCLIENTS) epoll_ctl(ep, EPOLL_CTL_DEL, lfd, NULL);
                continue;
            }
            ssize_t r = conn_fill(&pc->c);
            mark = truth_now();
            if (r <= 0) {
                epoll_ctl(ep, EPOLL_CTL_DEL, pc->c.fd, NULL);
                by_fd[pc->c.fd] = NULL;
                close(pc->c.fd);
                free(pc);
                open--;
                continue;
            }
            hand_over(pc, &mark);
        }
    }
    close(ep);
    close(lfd);
}

static void server(int lfd) {
    handoff_init(&hq);
    if ((done_efd = eventfd(0, 0)) < 0) die("eventfd");
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker_main, NULL);
    completion_loop(lfd);
    for (int i = 0; i < WORKERS; i++) handoff_put(&hq, (struct item){.fd = -1});
    for (int i = 0; i < WORKERS; i++) pthread_join(t[i], NULL);
}
"#;

fn completion_pool(c: &mut String, peeled: bool) {
    push_worker(c, COMPLETION_POOL, peeled);
}

fn pipeline(c: &mut String, s: &Spec) {
    let _ = writeln!(c, "#define STAGES {}", s.stages);
    let _ = writeln!(c, "#define CAPACITY {}", s.capacity);
    let _ = writeln!(c, "#define FLOODED {}", u32::from(s.flooded));
    c.push_str(
        r#"
static struct bqueue q1, q2;

/* The serving stage: serves, then answers (two stages) or passes on to the writer. */
static void *serving_main(void *arg) {
    (void)arg;
    for (;;) {
        struct item it = bq_take(&q1);
        uint64_t mark = truth_now();
        if (it.fd < 0) {
            if (STAGES == 2) bq_put(&q2, it);
            break;
        }
        serve(&it.m);
        if (FLOODED) spin(WORK_SPIN * 3);
        if (STAGES == 2) {
            truth_part(1, &it.m, mark);
            bq_put(&q2, it);
        } else {
            answer(1, it.fd, &it.m, mark);
        }
    }
    return NULL;
}

static void *writer_main(void *arg) {
    (void)arg;
    for (;;) {
        struct item it = bq_take(&q2);
        uint64_t mark = truth_now();
        if (it.fd < 0) break;
        spin(WORK_SPIN / 4);
        answer(2, it.fd, &it.m, mark);
    }
    return NULL;
}
"#,
    );
    epoll_loop(
        c,
        r#"                truth_part(0, &m, mark);
                bq_put(&q1, (struct item){.m = m, .fd = c->fd});
                mark = truth_now();"#,
    );
    c.push_str(
        r#"
static void server(int lfd) {
    bq_init(&q1, CAPACITY);
    bq_init(&q2, CAPACITY);
    pthread_t serving, writer;
    pthread_create(&serving, NULL, serving_main, NULL);
    if (STAGES == 2) pthread_create(&writer, NULL, writer_main, NULL);
    epoll_loop(lfd);
    bq_put(&q1, (struct item){.fd = -1});
    pthread_join(serving, NULL);
    if (STAGES == 2) pthread_join(writer, NULL);
}
"#,
    );
}
