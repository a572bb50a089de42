/* ph_strace.h - an `strace -f -tt -T` log parsed while it streams in,
 * with memory that follows the number of threads and syscall names,
 * never the log's size.
 *
 * A line is `[PID ]TIME BODY` (PID with -f; `[pid N]` is read too; TIME
 * `HH:MM:SS[.frac]` or epoch seconds with -ttt), BODY one of:
 *   name(args) = RET [ERRNO (text)] [<SECONDS>]   a complete call
 *   name(args <unfinished ...>                    a call another thread interrupted...
 *   <... name resumed>rest) = RET ... <SECONDS>   ...and its end
 *   --- SIGNAME {siginfo} ---                     a signal delivered
 *   +++ exited with N +++ / +++ killed by SIG +++ a thread or process ended
 * A call is counted once, at its start (a complete line or an unfinished
 * one); its result and time come from the line that ends it.  An error
 * is a result of -1 or ? followed by an errno name (`-1 ENOENT`,
 * `? ERESTARTSYS`).  Times (-T) are kept in whole nanoseconds, as
 * printed, so sums are exact.
 *
 * Kept: per syscall (calls, errors by errno, total/mean/max time), per
 * thread (the same, first and last timestamps, signals, how it ended, and
 * a timeline of time spent in syscalls in 256 buckets whose width doubles
 * as the log goes on; the first 256 threads), the 20 slowest calls with
 * their start timestamps, and signal counts.
 *
 * Bad input is never fatal: lines that are not strace's are counted (the
 * first line numbers kept); calls left unfinished at the end, and an
 * empty log, are named in a problem text.  Pure: libc and ph_error.
 */
#ifndef PH_STRACE_H
#define PH_STRACE_H

#include <stddef.h>
#include <stdint.h>
#include "ph_error.h"

#define PH_STRACE_BAD_KEPT 8
#define PH_STRACE_MAX_LINE (1u << 20)
#define PH_STRACE_SLOWEST 20
#define PH_STRACE_BUCKETS 256
#define PH_STRACE_TIMELINE_THREADS 256
#define PH_STRACE_MAX_THREADS 65536   /* more: counted in one "other" thread */
#define PH_STRACE_MAX_SYSCALLS 4096   /* more distinct names: "(other)" */
#define PH_STRACE_SNIPPET 160

typedef struct ph_strace_sys {
    const char *name;
    uint64_t calls, errors;
    uint64_t timed;            /* calls with a -T time */
    uint64_t total_ns, max_ns;
} ph_strace_sys;

typedef struct ph_strace_errno {
    uint32_t sys;              /* ph_strace_get_syscall index */
    const char *name;          /* "ENOENT" */
    uint64_t count;
} ph_strace_errno;

typedef struct ph_strace_thread {
    int64_t pid;               /* -1: the threads past PH_STRACE_MAX_THREADS */
    uint64_t calls, errors, total_ns, signals;
    int64_t first_ns, last_ns; /* timestamps, ns since the day began (or the epoch) */
    char ended[48];            /* "exited with 0", "killed by SIGKILL", "" */
    int32_t timeline;          /* ph_strace_timeline index, -1 when none */
} ph_strace_thread;

typedef struct ph_strace_call {
    int64_t pid;
    int64_t start_ns;          /* timestamp of its start */
    uint64_t dur_ns;
    char ts[24];               /* as the log printed it */
    char text[PH_STRACE_SNIPPET]; /* "name(args...) = RET ERRNO" shortened */
} ph_strace_call;

typedef struct ph_strace_signal {
    const char *name;
    uint64_t count;
} ph_strace_signal;

typedef struct ph_strace_info {
    size_t lines, bad_lines;
    size_t bad_line_numbers[PH_STRACE_BAD_KEPT];
    uint64_t calls, errors, total_ns;
    uint64_t unfinished;       /* calls never resumed */
    uint64_t in_flight;        /* calls that had not returned where the log ends (these and the open ones) */
    int64_t first_ns, last_ns; /* first and last timestamps; first > last: none */
    int with_pids, with_times;
    char problem[256];
} ph_strace_info;

typedef struct ph_strace ph_strace;

ph_strace *ph_strace_new(ph_error_t *err);
void ph_strace_free(ph_strace *st);
/* Parse LEN more bytes; -1 only on ENOMEM. */
int ph_strace_feed(ph_strace *st, const char *buf, size_t len, ph_error_t *err);
/* End of input; may be fed again afterwards (strace -ff's files in turn). */
int ph_strace_finish(ph_strace *st, ph_error_t *err);
ph_strace *ph_strace_parse_files(const char *const *paths, size_t n, ph_error_t *err);

const ph_strace_info *ph_strace_get_info(const ph_strace *st);
size_t ph_strace_n_syscalls(const ph_strace *st);
ph_strace_sys ph_strace_get_syscall(const ph_strace *st, size_t i);
/* The index of syscall NAME, or -1. */
int ph_strace_find_syscall(const ph_strace *st, const char *name);
size_t ph_strace_n_errnos(const ph_strace *st);
ph_strace_errno ph_strace_get_errno(const ph_strace *st, size_t i);
size_t ph_strace_n_threads(const ph_strace *st);
const ph_strace_thread *ph_strace_get_thread(const ph_strace *st, size_t i);
/* The slowest calls, slowest first. */
size_t ph_strace_n_slowest(const ph_strace *st);
const ph_strace_call *ph_strace_get_slowest(const ph_strace *st, size_t i);
size_t ph_strace_n_signals(const ph_strace *st);
ph_strace_signal ph_strace_get_signal(const ph_strace *st, size_t i);
/* A thread's timeline: PH_STRACE_BUCKETS sums of syscall time (ns) from
 * *ORIGIN_NS, each *WIDTH_NS wide.  NULL when the thread has none. */
const uint64_t *ph_strace_timeline(const ph_strace *st, int32_t timeline, int64_t *origin_ns, int64_t *width_ns);

#endif
