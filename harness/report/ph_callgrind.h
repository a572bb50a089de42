/* ph_callgrind.h - valgrind callgrind's output (callgrind.out) parsed
 * while it streams in, with memory that follows the program's size (its
 * functions and call edges), never the file's.
 *
 * The format (valgrind's docs/callgrind-format): a header (`version:`,
 * `creator:`, `pid:`, `thread:`, `part:`, `cmd:`, `desc:`, `positions:
 * instr line`, `events: Ir Dr ...`), then `ob=`/`fl=`/`fi=`/`fe=`/`fn=`
 * lines that set the current object, file and function, cost lines
 * (positions, then one count per event, trailing zeros left out), and
 * calls: `cob=`/`cfi=`/`cfn=` name the callee, `calls=COUNT TARGET`, and
 * the next cost line is the call's inclusive cost.  Names may be
 * compressed: `(12) name` defines id 12, a later `(12)` means it (files,
 * functions and objects each have their own ids, per file).  Positions
 * may be relative (`+3`, `-2`, `*`) or hex (`0x1a2b`) under
 * --dump-instr=yes.  `jump=`/`jcnd=` lines are read and ignored.  Each
 * part ends with `totals:` (or has `summary:`).  Several files (threads
 * with --separate-threads, dumps) are read one after another with
 * ph_callgrind_next_file between them and add up.
 *
 * Figures are callgrind_annotate's (3.19), so the report can be checked
 * against it to the digit:
 *  - a function is "FILE:NAME", FILE being the current `fl=`, or the
 *    `fi=`/`fe=` file its cost is inlined from;
 *  - self cost: the function's cost lines (`callgrind_annotate`);
 *  - inclusive (`--inclusive=yes`): for a function something calls, the
 *    sum of the calls' costs into it; for one nothing calls, its self
 *    cost plus its calls' costs.  Except in a call cycle (recursion),
 *    which callgrind_annotate counts once per level, above the program's
 *    totals: there a function's calls to itself are not counted, and none
 *    costs more than its cycle as a whole (the calls into the cycle from
 *    outside); no figure is above the totals;
 *  - a callee without `cfi=`/`cfl=` is in the caller's current file;
 *  - program totals: `summary:`, else `totals:`, else the sum of the
 *    self costs.
 *
 * Bad input is never fatal: lines that do not parse are counted (the
 * first line numbers kept), and a part without `totals:`, or whose self
 * costs do not add up to its totals, gets a problem text.  Pure: libc
 * and ph_error; never exits.
 */
#ifndef PH_CALLGRIND_H
#define PH_CALLGRIND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ph_error.h"

#define PH_CG_MAX_EVENTS 64
#define PH_CG_BAD_KEPT 8
#define PH_CG_MAX_LINE (1u << 20)
#define PH_CG_MAX_PARTS 1024          /* parts described (all are added up) */
#define PH_CG_MAX_FUNCS (1u << 21)    /* more functions: their costs go to "(other)" */
#define PH_CG_MAX_CALLS (1u << 22)    /* more call edges are not kept (their costs still count) */
#define PH_CG_FOLDED_MAX_STACKS 10000 /* the inclusive flamegraph's stacks at most */

typedef struct ph_cg_fn {
    const char *name;     /* "FILE:NAME", as callgrind_annotate prints it */
    const char *fn;       /* NAME */
    const char *file;     /* FILE */
    const char *obj;      /* the object (`ob=`), "" if none */
    const uint64_t *self; /* one per event */
    const uint64_t *incl; /* one per event (after finish) */
    int called;           /* some call names it as callee */
    int defined;          /* it has an `fn=` of its own (callgrind_annotate lists it) */
} ph_cg_fn;

typedef struct ph_cg_call {
    uint32_t caller, callee;  /* function indices */
    uint64_t count;           /* calls= summed */
    const uint64_t *cost;     /* one per event: inclusive cost of those calls */
} ph_cg_call;

typedef struct ph_cg_part {
    char pid[24], thread[24], part[24];
    char cmd[256];
    uint64_t first_event_total; /* of this part, the first event */
} ph_cg_part;

typedef struct ph_cg_info {
    size_t n_events;
    const char *events[PH_CG_MAX_EVENTS];
    const uint64_t *totals;    /* program totals, one per event */
    const char *totals_from;   /* "summary:", "totals:" or "calculated" */
    const char *cmd, *creator; /* of the first part, "" if none */
    const char *positions;     /* "line", "instr line", ... */
    size_t n_files, n_parts;   /* files read, parts described */
    size_t lines, bad_lines;
    size_t bad_line_numbers[PH_CG_BAD_KEPT];
    size_t dropped_calls;      /* call edges past PH_CG_MAX_CALLS */
    char problem[256];         /* "" or what is missing / broken */
} ph_cg_info;

typedef struct ph_callgrind ph_callgrind;

ph_callgrind *ph_callgrind_new(ph_error_t *err);
void ph_callgrind_free(ph_callgrind *cg);
/* Parse LEN more bytes; -1 only on ENOMEM. */
int ph_callgrind_feed(ph_callgrind *cg, const char *buf, size_t len, ph_error_t *err);
/* The current file is complete: its last line, its part's checks;
 * compressed names are forgotten.  Feeding may go on with another file. */
int ph_callgrind_next_file(ph_callgrind *cg, ph_error_t *err);
/* End of input (calls next_file if a file is open): inclusive costs are
 * computed.  -1 only on ENOMEM. */
int ph_callgrind_finish(ph_callgrind *cg, ph_error_t *err);
/* new + each of PATHS read in turn + finish; NULL and *err when a file
 * cannot be read. */
ph_callgrind *ph_callgrind_parse_files(const char *const *paths, size_t n, ph_error_t *err);

const ph_cg_info *ph_callgrind_get_info(const ph_callgrind *cg);
size_t ph_callgrind_n_fns(const ph_callgrind *cg);
ph_cg_fn ph_callgrind_get_fn(const ph_callgrind *cg, uint32_t i);
size_t ph_callgrind_n_calls(const ph_callgrind *cg);
ph_cg_call ph_callgrind_get_call(const ph_callgrind *cg, size_t i);
const ph_cg_part *ph_callgrind_get_part(const ph_callgrind *cg, size_t i);
/* The index of event NAME (case-insensitive), or -1. */
int ph_callgrind_event_index(const ph_callgrind *cg, const char *name);

/* The N costliest functions by EVENT, self or inclusive, in
 * callgrind_annotate's order (by that event descending; for event 0 ties
 * go to the following events, as its default --sort does; then by name).
 * Writes up to N indices to OUT, returns how many. */
size_t ph_callgrind_top(const ph_callgrind *cg, size_t event, int inclusive, uint32_t *out, size_t n);

/* Folded stacks of EVENT's inclusive cost built from the call graph (an
 * approximation: a function's cost is split among its callers in
 * proportion to their calls, cycles are cut where they close, paths below
 * 1/2000 of the total are folded into their parent, and the expansion
 * stops at 128 frames and about PH_CG_FOLDED_MAX_STACKS stacks).  The
 * counts add up to the total all the same.  Function names without
 * their file.  Returns the number of stacks written. */
long ph_callgrind_write_folded(const ph_callgrind *cg, size_t event, FILE *out, ph_error_t *err);

#endif
