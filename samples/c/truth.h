/* Ground truth for Scalpel's samples: each program records its true task instances in a side
 * file, one JSON object per line (see samples/TRUTH.md). The writes use syscall(SYS_write), which
 * the agent passes through without recording, so the truth never shows up in the trace. */
#ifndef SCALPEL_TRUTH_H
#define SCALPEL_TRUTH_H
#include <stdint.h>

/* Opens the file named by $SCALPEL_TRUTH (no-op when unset) and writes the header line. Call once,
 * before threads start; a forked child calls it again to write its own header (the file stays
 * open across fork, so it is not reopened). */
void truth_open(const char *program);
/* CLOCK_MONOTONIC nanoseconds, the clock of the traces' times. */
uint64_t truth_now(void);
/* Records one task instance: its type, instance id, parent instance (-1 for none), and span on
 * the calling thread. */
void truth_task(const char *type, int64_t id, int64_t parent, uint64_t start_ns, uint64_t end_ns);

/* One end of a causal edge: the n-th (0-based) call of `op` made by thread `tid` of process `pid`
 * (op names as in samples/TRUTH.md: cond_signal, cond_wait, sem_post, thread_create, ...). */
struct truth_at {
    int pid, tid;
    const char *op;
    int64_t n;
};
/* Records one true causal edge of the given kind ("cond", "sem", "create", ...). Any thread may
 * write it, since both ends are given. */
void truth_edge(const char *kind, struct truth_at from, struct truth_at to);
/* Records one read() or write() call of the calling thread on a byte stream: `io` is "read" or
 * "write", `chan` the channel kind ("pipe", "tcp"), `stream` names one direction of one channel,
 * `n` the call's ordinal among the thread's calls of that op, `off` the stream offset of its first
 * byte and `len` the bytes it moved. */
void truth_io(const char *io, const char *chan, const char *stream, int64_t n, int64_t off, int64_t len);
/* Names a noise thread: one that must have no causal edge with any other thread. */
void truth_noise(int pid, int tid);

#endif
