/* ph_report.h - one view per run across profilers: every run dir gets a
 * self-contained report.html (no network: inline CSS, SVG and a little
 * JS; readable without JS) and a summary.json; the output dir gets an
 * index.html of every service and run; two runs can be compared.
 *
 * A run dir is what `stop`/`collect` leave: the profiler's artifacts,
 * run.json (mode, run id, stage timings, ...) and ph-exit.json (the init
 * shim's record of how the service stopped).  Which file is which comes
 * from the mode's profile (`artifacts: kind:`), or, without profiles,
 * from the usual names (massif.out*, callgrind.out*, strace.log*,
 * stacks-*.folded, flamegraph-*.svg).  Parsing streams with bounded
 * memory (ph_massif, ph_callgrind, ph_strace, ph_folded).
 *
 * A missing, empty, truncated or malformed artifact never stops a report:
 * the report says what is missing and why (and counts it in
 * `problems`), and every other section is written.  The files are
 * written to a temporary name and renamed, so a reader sees the old
 * report or the new one.
 *
 * The library never prints; the caller (stop, collect, `profharness
 * report`) shows the headline.
 */
#ifndef PH_REPORT_H
#define PH_REPORT_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include "ph_error.h"
#include "ph_profile.h"

/* A run dir's names, as the report reads and writes them.  The run-dir
 * store (harness/rundir, above this floor) writes the run and reserves
 * these names against the container's files (ph_rundir_reserved). */
#define PH_REPORT_HTML "report.html"
#define PH_REPORT_PREFIX "report"          /* report.html, report-<stem>.svg, ... */
#define PH_REPORT_SUMMARY "summary.json"
#define PH_REPORT_INDEX "index.html"
#define PH_COMPARE_HTML "compare.html"
#define PH_RUN_META_NAME "run.json"        /* what the harness knows of the run */
#define PH_SERVICE_LOG_NAME "service.log"  /* the service's output */
#define PH_HARNESS_PREFIX "harness."       /* the harness's own timings: */
#define PH_HARNESS_FOLDED "harness.folded" /* as a flamechart's stacks */
#define PH_HARNESS_TRACE "harness.trace.json" /* and a Chrome trace */
#define PH_LATEST_LINK "latest"            /* <service>/latest: the newest run */
#define PH_TASKS_NAME "tasks.json"         /* <service>/<run>/tasks.json: a run of several workloads, a dir each */
/* The flamegraphs the report draws from a run's folded stacks (never the
 * container's own SVGs): "report-" + the stacks file's stem, and this one
 * for the report's graph (the link <service>/flamegraph.svg points here). */
#define PH_REPORT_SVG_PREFIX "report-"
#define PH_REPORT_FLAME_SVG "report-flamegraph.svg"

typedef struct ph_report_headline {
    char service[128];
    char mode[64];
    char run[256];         /* the run dir's name */
    char text[512];        /* "peak heap 14.2 MiB at 3.10 s (front_cache_put 61.0 %)": names
                              from the artifacts, raw; a terminal sees it only through
                              ph_report_print_headline, which escapes it */
    char report[PATH_MAX]; /* the report.html written */
    int problems;          /* things the report says are missing or broken */
} ph_report_headline;

/* What holds one report's output (a field of 0 takes its default): its
 * files are the host's writing from what a container wrote, so they are
 * held as the artifacts are.
 *   min_free   left available on the run dir's filesystem: the
 *              collection's limit (ph_tar_limits), default its default
 *   max_bytes  all the report's files together, PH_REPORT_MAX_BYTES
 * Each graph is drawn to what a person can see (minwidth 1 px, narrow
 * siblings merged, PH_REPORT_GRAPH_DEPTH frames deep) and at most
 * PH_REPORT_GRAPH_MAX bytes, whatever the stacks (ph_flame.h's bounds);
 * the graphs of a run's stacks files, one per file, are drawn while the
 * bound leaves room, and the report says how many were not. */
typedef struct ph_report_limits {
    uint64_t min_free;
    uint64_t max_bytes;
} ph_report_limits;
#define PH_REPORT_MAX_BYTES (64ull << 20)
#define PH_REPORT_GRAPH_MAX (4u << 20)
#define PH_REPORT_GRAPH_DEPTH 512 /* the sampler's own cut */

/* Write RUN_DIR/report.html and RUN_DIR/summary.json (and the graphs
 * beside them) under LIM (NULL: the defaults).  PROFILES may be NULL.
 * OUT (may be NULL) gets the headline.  -1 and *err only when the run dir
 * cannot be read or the files cannot be written (a limit, named); bad
 * artifacts are reported inside. */
int ph_report_write_run_limited(const char *run_dir, const ph_profile_set *profiles, const ph_report_limits *lim,
                                ph_report_headline *out, ph_error_t *err);
/* The same under the defaults. */
int ph_report_write_run(const char *run_dir, const ph_profile_set *profiles, ph_report_headline *out,
                        ph_error_t *err);

/* The headline as the terminal shows it at the end of `stop`:
 *   front: peak heap 14.2 MiB at 3.10 s (front_cache_put 61.0 %)
 *     report: contrib/profiling/front/20261122T101500Z-massif/report.html
 * every byte escaped for a terminal (ph_escape_printf). */
void ph_report_print_headline(FILE *out, const ph_report_headline *h);

/* What a directory is to the report: a run dir (its run.json, which only
 * the harness writes, a JSON object naming the run's mode), a run of
 * several workloads (its tasks.json, a run dir per workload beside it),
 * or neither.  Only those two small files are read, bounded. */
enum { PH_RUN_DIR_NONE, PH_RUN_DIR_ONE, PH_RUN_DIR_SEVERAL };
typedef struct ph_run_dir_info {
    int kind;            /* PH_RUN_DIR_* */
    char mode[64];       /* the run's mode ("" when none is recorded) */
    char collected[40];  /* run.json's collected_at, "" when none */
} ph_run_dir_info;
/* DIR's kind into OUT (and its mode and time for a run dir); returns the kind. */
int ph_report_run_dir_info(const char *dir, ph_run_dir_info *out);

/* Write OUT_DIR/index.html: every OUT_DIR/<service>/<run>/ with its mode,
 * start, duration, how it stopped and headline (from summary.json, or
 * what run.json says when there is no report yet), newest first. */
int ph_report_write_index(const char *out_dir, ph_error_t *err);

/* ---- many Engines (ph_report_merge.c) ----------------------------------- */
/* A merged run: one service's runs on several Engines (`--context A
 * --context B`), each host's in OUT/@<context>/<service>/<run>/, the
 * merged one in OUT/<service>/<run>/ holding these and run.json, whose
 * PH_MERGED_FROM lists {context, dir (from OUT), run, samples}. */
#define PH_MERGED_FOLDED "stacks-merged.folded"
#define PH_MERGED_PPROF "profile-merged.pb.gz"
#define PH_MERGED_FROM "merged_from"
typedef struct ph_merge_src {
    const char *host;    /* the Docker context's name */
    const char *run_dir; /* its run dir */
} ph_merge_src;
/* Write into DIR (made empty by the caller, to be renamed NAME) the sum
 * of the N runs' stacks as each one's report counts them: PH_MERGED_FOLDED,
 * PH_MERGED_PPROF, run.json, and convert.json for perf runs (the samples
 * added up); ph_report_write_run then reports on it like on any run.
 * 0 done; 1 nothing to add up, with why in WHY (a mode without stacks,
 * runs of different modes, perf events or units); -1 and *err when a run
 * cannot be read or a file written. */
int ph_report_merge_runs(const char *dir, const char *name, const ph_merge_src *src, size_t n,
                         const ph_profile_set *profiles, char *why, size_t why_len, ph_error_t *err);

/* ---- compare ----------------------------------------------------------- */

enum ph_compare_format { PH_COMPARE_TEXT, PH_COMPARE_JSON };

typedef struct ph_compare_opts {
    const char *html_path;       /* compare.html to write; NULL: none */
    int format;                  /* what goes to OUT */
    const char *const *fail_if;  /* expressions, see ph_compare_check */
    size_t n_fail_if;
    size_t top;                  /* rows per table, default 20 */
} ph_compare_opts;

/* Compare run dirs A (before) and B (after) of one mode: callgrind self
 * and inclusive deltas per function, massif peak and top sites, strace
 * per syscall counts and times, flamegraph samples (and a differential
 * flamegraph in the HTML).  Writes the comparison to OUT in the format
 * asked, and compare.html when asked.  Returns 0 when every --fail-if
 * holds, 1 when some failed (the offending lines are in *FAILED, a
 * malloc'd text the caller frees), -1 and *err on error (unreadable run,
 * different modes, a bad expression: PH_EXIT_USAGE). */
int ph_compare_runs(const char *a, const char *b, const ph_profile_set *profiles, const ph_compare_opts *opts,
                    FILE *out, char **failed, ph_error_t *err);

/* Check a --fail-if expression's syntax: METRIC OP VALUE where
 *   METRIC  ir, or any callgrind event (dr, d1mr, ...), EVENT[fn] (self),
 *           EVENT_incl[fn]; peak_heap, peak_total, heap[site];
 *           syscalls, errors, syscall_time, calls[name], time[name],
 *           errors[name]; samples, samples[fn] (share of samples with fn
 *           on the stack, %), self[fn] (share where fn is the leaf, %);
 *           offcpu, offcpu[fn] (wall: share of samples blocked, %);
 *           inuse_space, alloc_space and their [fn] (heap: bytes)
 *   OP      > or <  (>= and <= too)
 *   VALUE   +N% / -N% (relative change from A to B), +N / -N (absolute
 *           change), N (B's value itself); N may end in k, M, G
 * e.g. `ir>+5%`, `peak_heap>+10%`, `samples[front_checksum_payload]>+20%`.
 * 0, or -1 and *err (PH_EXIT_USAGE) naming what is wrong. */
int ph_compare_check(const char *expr, ph_error_t *err);

#endif
