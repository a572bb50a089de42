/* ph_stackset.h - the sampler modes' files of one process's folded stacks,
 * written by a profiler that samples from outside the process (ph-pyattach,
 * ph-nodeinsp), named as the preloaded sampler names its own so that the
 * profiles' artifact globs, the collection and the report take them as
 * theirs:
 *
 *   stacks-STAMP-PID-1.folded      every sample, counts as samples
 *   offcpu-STAMP-PID-1.folded      wall only: the stacks ending in [off-cpu]
 *   oncpu-STAMP-PID-1.folded       wall only: the rest
 *   flamegraph-STAMP-PID-1.svg     drawn from them (title, subtitle)
 *   profile-STAMP-PID-1.pb.gz      pprof: cpu or wall / nanoseconds, each
 *                                  sample weighing one period
 *
 * Each file through a temporary name, then renamed.  Never exits.
 */
#ifndef PH_STACKSET_H
#define PH_STACKSET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ph_error.h"

typedef struct ph_stackset_opts {
    const char *stamp;      /* the snapshot's time, e.g. 20260101T000000Z */
    pid_t pid;
    int wall;               /* the wall clock: the two views, pprof `wall` */
    uint64_t period_ns;     /* one sample's weight in pprof */
    int64_t duration_ns;    /* how long the profile covers; 0: not said */
    const char *title, *subtitle;
} ph_stackset_opts;

/* FOLDED[0..LEN) (`frame;frame COUNT` lines, counts whole samples) as the
 * files above in DIR: 0, or -1 with *ERR (an unwritable DIR, no memory). */
int ph_stackset_write(const char *dir, const char *folded, size_t len, const ph_stackset_opts *o, ph_error_t *err);

/* Whether the folded line L[0..N) (its count included) ends in [off-cpu]. */
int ph_stackset_offcpu(const char *l, size_t n);

#endif
