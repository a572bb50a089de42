/* ph_init.h - what the files of the init shim share: ph-init.c (the
 * supervisor: options, signals, the stop protocol, reaping) on top,
 * ph_init_record.c (the completion record) below it, ph_init_say.c (its
 * lines on stderr) below both.  Not a library: all are linked into the
 * one static ph-init binary, which uses no allocation after startup, so
 * none does anything here. */
#ifndef PH_INIT_H
#define PH_INIT_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

/* Everything the record says; ph-init.c fills it once the profiler has
 * ended and the leftovers were drained.  The meaning of each field is in
 * ph_init_record.c's header comment, with the JSON it becomes. */
typedef struct ph_init_report {
    char *const *argv;          /* COMMAND [ARG...] */
    pid_t wrapper_pid, target_pid;
    int exit_code;              /* ph-init's exit status */
    int wrapper_status;         /* the profiler's waitpid status */
    int stop_requested;
    int stop_signal;
    const int *escalations;
    int n_escalations;
    const int *wrapper_signals;
    int n_wrapper_signals;
    int leftovers_signalled, leftovers_killed, leftovers_survived;
    struct timespec started_at, stop_requested_at, ended_at;
    double run_seconds, stop_seconds;
    /* Added later in version 1 (readers of older records lack them). */
    int stop_target_tracee;     /* --stop-target tracee */
    double grace, escalate_grace;
    const char *outcome;        /* see ph-init.c */
    int service_known;          /* 0: service_exit_code and _signal are null */
    int service_exit_code;      /* -1: the service did not exit, it was signalled */
    int service_signal;         /* 0: none */
    int complete;
    long oom_kills;             /* -1: unknown */
} ph_init_report;

/* Set by -v: ph_init_log prints. */
extern int ph_init_verbose;

/* One line "ph-init: ..." to stderr in one write(); errno is kept. */
void ph_init_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, only with -v. */
void ph_init_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "SIGTERM" for 15, "SIG40" for a signal without a name; into BUF. */
const char *ph_init_signame(int sig, char *buf, size_t len);
#define PH_INIT_SIGNAME(sig) ph_init_signame((sig), (char[16]){ 0 }, 16)

/* Whether PATH can name a record: a file name after the last '/' that
 * leaves room for the temporary names beside it. */
int ph_init_record_path_ok(const char *path);

/* Before the command starts: create the record's directory (mkdir -p,
 * mode 0777 whatever the umask: the profiler may run as any user) and
 * open it.  The record is written through that descriptor later, so
 * nothing the service does to the path redirects it.  Returns 0, or -1
 * after saying why on stderr: the run goes on without a record. */
int ph_init_record_open(const char *path);

/* After the profiler ended: write R, complete or not at all, into the
 * directory ph_init_record_open opened.  Never blocks on, follows or
 * writes into anything the service planted there.  Returns 0, or -1
 * after saying why on stderr. */
int ph_init_record_write(const ph_init_report *r);

#endif
