/* ph_sampler.h - the in-process sampling profiler (the `flamegraph` mode).
 *
 * Two ways in:
 *  - LD_PRELOAD=libphsampler.so with PH_SAMPLER_DIR set (the library is
 *    inert without it); PH_SAMPLER_HZ (default 150), PH_SAMPLER_INTERVAL
 *    (seconds between snapshots, default 120), PH_SAMPLER_TITLE,
 *    PH_SAMPLER_MODE (cumulative, the default, or delta).  These variables
 *    and LD_PRELOAD are removed from the environment at start, so programs
 *    the service execs are not profiled by accident.
 *  - linking it and calling ph_sampler_start().
 *
 * It samples CPU time of every thread (SIGPROF from ITIMER_PROF) and writes,
 * every interval and once more at exit or on SIGTERM/SIGINT:
 *   stacks-<UTC>-<n>.folded, flamegraph-<UTC>-<n>.svg, profile-<UTC>-<n>.pb.gz
 * The service's own SIGTERM/SIGINT handling runs after that final write.
 * On any failure profiling turns off with one line on stderr; the service
 * goes on.
 *
 * Async-signal-safety: none of these functions may be called from a signal
 * handler.  The library's own SIGPROF handler is async-signal-safe.
 */
#ifndef PH_SAMPLER_H
#define PH_SAMPLER_H

#ifdef __cplusplus
extern "C" {
#endif

/* Start sampling at HZ, writing into DIR every INTERVAL_S seconds (0: only
 * at the end), titling graphs TITLE (may be NULL).  0, or -1 when already
 * running or on failure (a message is printed). */
int ph_sampler_start(const char *dir, int hz, int interval_s, const char *title);

/* Write a snapshot now.  0 or -1. */
int ph_sampler_flush(void);

/* Stop sampling and write the final snapshot. */
void ph_sampler_stop(void);

#ifdef __cplusplus
}
#endif

#endif
