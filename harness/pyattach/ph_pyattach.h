/* ph_pyattach.h - a running CPython's frames read from outside it: the
 * `attach --mode flamegraph` / `--mode wall` of a Python service
 * (ph-pyattach, run by images/tools/ph-attach-sampler in a tools
 * container in the service's PID namespace, with CAP_SYS_PTRACE).
 *
 * The frame walk and the layouts are the in-process sampler's
 * (harness/sampler/ph_sampler_py.c, ph_sampler_pylayout.h), pointed at
 * the target with phs_py_target: every read is a process_vm_readv of the
 * target, never stopping it (a frame popped while it is read is named
 * "[python: code freed]" or cut short, never misnamed: the writer's
 * checks).  What this side adds is the symbol lookup of another process
 * (its modules from /proc/PID/maps, their symbols from the ELF files
 * under /proc/PID/root: the phs_symbols functions phs_py_detect calls),
 * which thread is running (/proc/PID/task/TID/stat), the loop and the
 * outputs.
 *
 * Not signal-safe, one target per process (the frame reader's state is
 * global); errors are ph_error_t, never an exit. */
#ifndef PH_PYATTACH_H
#define PH_PYATTACH_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "ph_error.h"

typedef struct php_target php_target;

/* Find the CPython in process PID and check its version can be read: NULL
 * and *err saying why not (no CPython, a version without a layout, not
 * readable) -- before anything is sampled. */
php_target *php_target_open(pid_t pid, ph_error_t *err);
void php_target_close(php_target *t);
/* "Python 3.11.2: frames read" */
const char *php_target_describe(const php_target *t);

enum { PHP_CLOCK_CPU, PHP_CLOCK_WALL };

/* One sample of every thread of T: CPU clock, the threads running (state
 * R; the GIL's holder when threads cannot be told apart); wall clock,
 * every thread, a thread not running ending in [off-cpu].  Each stack is
 * counted in T's table as a folded line `thread;outer;...;inner`.
 * Returns the stacks counted, -1 when the process is gone. */
int php_sample(php_target *t, int clock);

/* The counted stacks as folded text (sorted; each count times SCALE;
 * malloc'd into *OUT, *LEN); 0 or -1 and *err. */
int php_folded(const php_target *t, uint64_t scale, char **out, size_t *len, ph_error_t *err);
uint64_t php_samples(const php_target *t);

/* Sample T at HZ on CLOCK until *STOP is set or T ends, then write into
 * DIR what the sampler's snapshot writes (stacks-<UTC>-<pid>-1.folded,
 * flamegraph-...svg, profile-...pb.gz; wall: offcpu-/oncpu-...folded).
 * 0, or -1 and *err. */
int php_run(php_target *t, int hz, int clock, const char *dir, const char *title, volatile sig_atomic_t *stop,
            ph_error_t *err);

#endif
