/* ph_signal.h - interrupts deferred while the loop holds partial state.
 *
 * Between creating a temp dir and renaming it into place (or removing it),
 * a Ctrl-C that kills the process leaves a root-owned half-collected dir.
 * Inside ph_interrupt_begin() .. ph_interrupt_end(), SIGINT, SIGTERM and
 * SIGHUP only set a flag (the handler does nothing else); the code that
 * streams and extracts checks ph_interrupted() and unwinds: temp dir
 * removed, container kept, exit 128+N.  Outside such a section the signals
 * keep their default action, so a Ctrl-C during a long Engine wait still
 * stops the harness at once (nothing is half-done then).  A signal ignored
 * when the section begins stays ignored (nohup, a background job).
 *
 * Sections nest.  The handlers are process-wide: only the main thread
 * begins an outermost section; worker threads may nest sections inside
 * one it holds (the depth is counted atomically).
 */
#ifndef PH_SIGNAL_H
#define PH_SIGNAL_H

#include "ph_error.h"

void ph_interrupt_begin(void);
void ph_interrupt_end(void);

/* The first signal caught in any section so far, 0 if none (it stays set:
 * a loop over services stops at the next one).  Async-signal-safe. */
int ph_interrupted(void);

/* How many signals were caught in sections so far.  A transfer notes it
 * when it begins and ends when it changes: an interrupt ends the transfer
 * under way, and a second one ends a cleanup begun after the first.
 * Async-signal-safe. */
int ph_interrupt_count(void);

/* Make the error for an interrupt by SIG: "interrupted by SIGINT", status
 * PH_EXIT_SIGNAL + SIG.  Returns -1. */
int ph_interrupt_fail(ph_error_t *err, int sig);

#endif
