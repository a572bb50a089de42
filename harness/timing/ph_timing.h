/* ph_timing.h - the harness timing itself: a tree of timed stages.
 *
 * A command (setup, start, stop, ...) is the root stage; every place where
 * work crosses a boundary (an Engine call, an image build, a stream and
 * extract, a rename, handing files to the invoker) is a stage under the
 * stage that was current on its thread when it began.  A stage has a
 * category ("engine", "image", "profiler", "collect", "host", ...), a name
 * ("POST /containers/{id}/stop"), a duration, bytes in and out where data
 * moves, attributes (service, container id, ...), an outcome, and a flag
 * for stages that ran concurrently with their siblings.
 *
 * Timing sits at the boundaries, not in the code between them: the Engine
 * transport makes every Engine call a stage by itself, and a helper thread
 * adopts its parent (ph_stage_adopt) so its stages nest where they belong.
 *
 * The finished tree is flattened into self times the way per-stage timing
 * tables of request pipelines are (a checkpoint/restore daemon's adapters,
 * each timed, were the model): a stage's self time is its duration
 * less its serial children's; concurrent children are not subtracted (only
 * the time spent waiting for them counts, in the parent), and neither they
 * nor anything under them is summed into a category, so the counted self
 * times add up to the command's wall time exactly.
 *
 * Cost.  When no command is being recorded, ph_stage_begin is one load and
 * a branch and returns NULL; every other call takes NULL and does nothing.
 * When recording, a stage is one allocation, two clock reads and a mutex
 * (uncontended but for helper threads).
 *
 * Thread safety: stages may begin and end on any thread; ph_timing_start,
 * _finish and _reset belong to the main thread, with no stage open on
 * another thread.
 */
#ifndef PH_TIMING_H
#define PH_TIMING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ph_error.h"

enum {
    PH_STAGE_CONCURRENT = 1 << 0, /* runs alongside its siblings */
    PH_STAGE_DETACHED = 1 << 1,   /* does not become its thread's current stage:
                                   * what begins after it on the thread is its sibling
                                   * (a wait registered before the signal it waits for) */
};

#define PH_STAGE_ATTRS 8

typedef struct ph_stage ph_stage;

struct ph_stage {
    char *name;
    char category[16];
    unsigned flags;
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC; end_ns 0 while open */
    uint64_t bytes_in, bytes_out;
    int failed;
    char *error;               /* the failure's message, or NULL */
    char *attr_key[PH_STAGE_ATTRS], *attr_val[PH_STAGE_ATTRS];
    int thread;                /* 1 for the thread that started the command, 2... for others */
    unsigned char span_id[8];  /* for OpenTelemetry */
    ph_stage *parent, *first_child, *last_child, *next;
};

/* ---- recording ----------------------------------------------------------- */

/* Begin recording COMMAND ("stop") as the root stage, on this thread.  A
 * second call while recording is a no-op returning -1. */
int ph_timing_start(const char *command);
/* End the root stage (FAILED with MSG, or not) and stop recording; the tree
 * stays readable (ph_timing_root) until ph_timing_reset.  Stages still open
 * are closed at this instant. */
void ph_timing_finish(int failed, const char *msg);
void ph_timing_reset(void);
int ph_timing_recording(void);
/* The tree: NULL before start and after reset. */
const ph_stage *ph_timing_root(void);
/* CLOCK_REALTIME minus CLOCK_MONOTONIC at start, in ns (for wall times). */
int64_t ph_timing_epoch_offset_ns(void);

/* Begin a stage under this thread's current stage (the root when none).
 * NULL when not recording: every other call below then does nothing. */
ph_stage *ph_stage_begin(const char *category, const char *name, unsigned flags);
ph_stage *ph_stage_beginf(const char *category, unsigned flags, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ph_stage_bytes(ph_stage *s, uint64_t in, uint64_t out); /* adds */
/* A key/value for exporters ("service", "container.id", "mode", "run.id");
 * beyond PH_STAGE_ATTRS the rest are dropped. */
void ph_stage_attr(ph_stage *s, const char *key, const char *value);
void ph_stage_fail(ph_stage *s, const char *msg);
/* End S; its parent becomes its thread's current stage again. */
void ph_stage_end(ph_stage *s);

/* This thread's current stage (for a helper thread to adopt), or NULL. */
ph_stage *ph_stage_current(void);
/* On a helper thread, before its first stage: nest under PARENT.  Stages
 * begun right under a parent of another thread are CONCURRENT. */
void ph_stage_adopt(ph_stage *parent);

/* ---- reading ------------------------------------------------------------- */

/* S's end; now for a stage still open (the tree may be read mid-command,
 * as when a run dir gets its timings before the command returns). */
uint64_t ph_stage_end_ns(const ph_stage *s);
/* A reading of the tree as of one instant: between these (on this
 * thread; they nest), every stage open at the first call's instant, or
 * ended after it, ends at it, so a tree read mid-command has its children
 * within their parents.  The readers below (flatten, the folded stacks,
 * the trace, the JSON tree) each read this way; a caller writing several
 * of them brackets them all to read them at one instant. */
void ph_timing_read_begin(void);
void ph_timing_read_end(void);

typedef struct ph_timing_row {
    const ph_stage *stage;
    int depth;           /* 0 for the root */
    uint64_t total_ns;   /* the stage's duration */
    uint64_t self_ns;    /* less its serial children */
    int counted;         /* neither it nor an ancestor ran concurrently */
} ph_timing_row;

/* The rows of TREE in the order the work flowed (pre-order: a stage, then
 * its children by start time).  *N rows, malloc'd; NULL and *N 0 on ENOMEM. */
ph_timing_row *ph_timing_flatten(const ph_stage *tree, size_t *n);

typedef struct ph_timing_sum {
    char category[16];
    uint64_t self_ns;
    uint64_t bytes;      /* in + out */
    size_t stages;
} ph_timing_sum;

/* Per category, over the counted rows, largest first.  *N sums, malloc'd. */
ph_timing_sum *ph_timing_summarise(const ph_timing_row *rows, size_t n_rows, size_t *n);

enum { PH_TIMING_SORTED = 1 << 0 }; /* the detailed table by self time, largest first */

/* The two tables (detailed, then per category) of TREE to OUT. */
int ph_timing_print(FILE *out, const ph_stage *tree, unsigned flags, ph_error_t *err);

/* One line: "stop: 3.21 s (engine 2.90 s, collect 210 ms, harness 100 ms)". */
int ph_timing_print_line(FILE *out, const ph_stage *tree, ph_error_t *err);

/* "12.3 ms", "1.20 s", "850 us" into BUF. */
const char *ph_timing_fmt_ns(uint64_t ns, char *buf, size_t size);
/* "1.5 MiB", "512 B" into BUF. */
const char *ph_timing_fmt_bytes(uint64_t b, char *buf, size_t size);

#endif
