/* ph_pprof.h - folded stacks as a pprof profile (profile.proto, gzip'd),
 * for `pprof -http=:` and the tools that read it.
 *
 * Folded stacks carry names and counts, no addresses: each distinct frame
 * name becomes one function and one location (line 0 of that function);
 * each stack one sample, its locations leaf first as pprof wants them, its
 * count rounded to an integer as the one value of the sample type the
 * caller names ("cpu"/"nanoseconds" for perf's cpu-clock, whose folded
 * counts are summed periods).  Names are kept as they are, collapsers'
 * annotations (`_[k]`, `_[j]`, `_[i]`) included.  The string table holds
 * each name once; output bytes depend only on the stacks and options.
 *
 * Pure: libc, zlib, ph_pb and ph_error; no global state, never exits; safe on
 * any thread (one ph_folded per thread).
 */
#ifndef PH_PPROF_H
#define PH_PPROF_H

#include <stdint.h>
#include <stdio.h>

#include "ph_error.h"
#include "ph_folded.h"

typedef struct ph_pprof_opts {
    const char *type;     /* the value's type: "cpu", "samples"; NULL: "samples" */
    const char *unit;     /* its unit: "nanoseconds", "count"; NULL: "count" */
    int64_t duration_ns;  /* how long the profile covers; 0: not said */
    const char *comment;  /* one comment line, or NULL */
} ph_pprof_opts;

/* Write F's stacks to OUT as a gzip'd pprof profile.  Differential
 * stacks give their AFTER counts; stacks of count 0 are left out.  -1 and
 * *err on ENOMEM or when writing fails. */
int ph_pprof_write(const ph_folded *f, const ph_pprof_opts *o, FILE *out, ph_error_t *err);

#endif
