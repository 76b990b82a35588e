/* Ground truth for Scalpel's samples: each program records its true task instances in a side
 * file, one JSON object per line (see samples/TRUTH.md). The writes use syscall(SYS_write), which
 * the agent passes through without recording, so the truth never shows up in the trace. */
#ifndef SCALPEL_TRUTH_H
#define SCALPEL_TRUTH_H
#include <stdint.h>

/* Opens the file named by $SCALPEL_TRUTH (no-op when unset). Call once, before threads start. */
void truth_open(const char *program);
/* CLOCK_MONOTONIC nanoseconds, the clock of the traces' times. */
uint64_t truth_now(void);
/* Records one task instance: its type, instance id, parent instance (-1 for none), and span on
 * the calling thread. */
void truth_task(const char *type, int64_t id, int64_t parent, uint64_t start_ns, uint64_t end_ns);

#endif
