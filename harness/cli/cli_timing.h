/* cli_timing.h - every command timed: its stages recorded, then the
 * tables (--timings, PH_TIMINGS), or for stop one summary line, on stderr,
 * and the spans to an OpenTelemetry collector when one is configured. */
#ifndef PH_CLI_TIMING_H
#define PH_CLI_TIMING_H

#include "ph_cmds.h"

/* --timings[=VALUE]: "1" or "flow" (tables in flow order), "sorted", "0"
 * (none), "off" (not even recorded).  -1 on anything else. */
int ph_cli_timings_set(const char *value);

/* Run FN as command NAME, timed.  PH_TIMINGS applies when --timings was not
 * given; a bad value is a usage error (exit 2) before anything runs.
 * Returns FN's exit status. */
int ph_cli_run_timed(const char *name, int (*fn)(const ph_global_opts *, int, char **), const ph_global_opts *g,
                     int argc, char **argv);

#endif
