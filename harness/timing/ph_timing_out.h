/* ph_timing_out.h - the stage tree written out: a flamechart's folded
 * stacks, a Chrome trace, and JSON for run.json.
 *
 * harness.folded is in the format tracing-flame writes (the tracing crate's
 * FlameLayer): one line per stretch of a stage's own time, in time order,
 * "THREAD; stage; child; grandchild NANOSECONDS", frames separated by "; ",
 * the first frame naming the thread ("ThreadId(1)-main", "ThreadId(2)").
 * A stage's time is cut where its serial children run, so the lines of one
 * thread add up to its wall time and `profharness flamegraph --flamechart`
 * draws them as a timeline.  Stages that ran concurrently with their
 * parent's thread get lines of their own thread (a lane), after the lanes
 * that began before them.  ';' and line breaks in names become ',' and ' '.
 *
 * harness.trace.json is Chrome's trace event format (complete "X" events,
 * microseconds, one tid per lane, thread_name metadata), which Perfetto and
 * chrome://tracing open.
 */
#ifndef PH_TIMING_OUT_H
#define PH_TIMING_OUT_H

#include <stdio.h>
#include <jansson.h>

#include "ph_error.h"
#include "ph_timing.h"

int ph_timing_write_folded(FILE *out, const ph_stage *tree, ph_error_t *err);

/* {"traceEvents": [...], "displayTimeUnit": "ms", ...}; NULL on ENOMEM. */
json_t *ph_timing_trace_json(const ph_stage *tree);

/* The tree for run.json: {"name", "category", "start_ns" (from the
 * command's start), "duration_ns", "self_ns", "bytes_in", "bytes_out",
 * "concurrent", "failed", "error", "attributes", "children"}; NULL on ENOMEM. */
json_t *ph_timing_tree_json(const ph_stage *tree);

/* Into run.json's object META: "timing", the tree of the recording as far
 * as it has come, and "trace_id", the 32 hex digits of the trace the
 * command's spans belong to (TRACEPARENT's, or its own), so a run dir can
 * be found from a trace and the other way round.  0, or -1 on ENOMEM;
 * nothing recorded: nothing added, 0. */
int ph_timing_run_json(json_t *meta);

/* harness.folded and harness.trace.json of the finished recording into DIR
 * (written to temporary names, then renamed).  Nothing recorded: nothing
 * written, 0. */
int ph_timing_write_files(const char *dir, ph_error_t *err);

#endif
