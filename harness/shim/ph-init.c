/* ph-init.c - PID 1 of every profiled container: starts the profiler (the
 * "wrapper", e.g. strace or valgrind) as its only child, reaps every zombie,
 * forwards signals to the profiled process, stops it gracefully on request
 * and writes a completion record once the profiler has exited.
 *
 * Why it exists: the setup we replace made the profiler PID 1.  strace run
 * as `strace -o FILE PROG` blocks fatal signals, so `docker stop` ended in a
 * SIGKILL after 10 s; valgrind as PID 1 crashes on SIGTERM; a slow callgrind
 * dump was lost to that SIGKILL (all three seen here).  What stops them
 * cleanly is to signal the *profiled process* (for strace: the tracee, not
 * strace), wait generously, and escalate only then.  The record tells the
 * supervisor that the profiler's output is complete.
 *
 * Design.
 * - Threads: none.  Every signal but the synchronous fault signals is
 *   blocked from the start and taken with sigtimedwait in one loop, as tini
 *   does; the loop's timeout drives the grace timers (CLOCK_MONOTONIC
 *   deadlines, so a wall-clock jump cannot cut a grace short).
 * - Fault signals (SEGV, BUS, FPE, ILL, ABRT, TRAP, SYS) stay unblocked: a
 *   real fault in ph-init must kill it, not be queued.  Their handler tells
 *   the two cases apart by si_code: a kernel-generated fault restores the
 *   default action and dies; one sent with kill() by another process only
 *   sets a flag, and the loop forwards it like any other signal.  That is
 *   the only handler, and it does nothing but that.
 * - What may block: sigtimedwait (bounded: 1 s idle, 50 ms while stopping),
 *   reads of /proc (never blocks on procfs), and at the very end write and
 *   fsync of the record, which happen after the profiler exited.  Nothing
 *   the service can put in the artifacts dir blocks or redirects the
 *   record (ph_init_record.c says how).
 * - Ordering: signals are blocked before fork, so nothing sent to us between
 *   fork and the loop is lost; the child restores the original mask and
 *   default dispositions just before exec.  The wrapper's status is taken
 *   by the same waitpid(-1) loop that reaps orphans, so it is never lost to
 *   a reap of "some other" child.  The record is written only after the
 *   wrapper was reaped and the leftovers were drained, then renamed into
 *   place: its presence means "the profiler is done writing".
 * - Memory: options are parsed into fixed arrays, /proc is read with
 *   getdents64 into stack buffers, the record is formatted into a static
 *   buffer: no allocation after startup.
 * - Files: this one is the supervisor; ph_init_record.c writes the record;
 *   ph_init.h is what they share.
 *
 * The record's fields and what each outcome means: ph_init_record.c.
 *
 * The environment variable PH_INIT_NO_SUBREAPER (tests only) keeps ph-init
 * from becoming a child subreaper, so a test can show that its reaping
 * check fails when nobody reaps orphans.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ph_init.h"

#define MAX_SIGLIST  16     /* --escalate and --stop-on entries */
#define MAX_PROCS    4096   /* processes considered by one /proc walk */
#define DRAIN_TERM_S 2.0    /* leftovers after the wrapper: SIGTERM, then SIGKILL */
#define DRAIN_KILL_S 1.0
#define IDLE_TICK_S  1.0
#define STOP_TICK_S  0.05   /* a tracee is not our child: poll for its end */

static const int fault_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS };

static struct {
    int target_tracee;          /* --stop-target tracee */
    int stop_signal;
    double grace;
    int escalate[MAX_SIGLIST];
    int n_escalate;
    double escalate_grace;
    const char *record;
    int stop_on[MAX_SIGLIST];
    int n_stop_on;
    char **argv;                /* COMMAND [ARG...] */
} opt = {
    .stop_signal = SIGTERM,
    .grace = 30,
    .escalate = { SIGKILL },
    .n_escalate = 1,
    .escalate_grace = 10,
    .stop_on = { SIGTERM, SIGINT },
    .n_stop_on = 2,
};

/* Distinct pids, for counting leftovers; past the table only counted. */
struct pidset {
    pid_t v[256];
    int n, extra;
};

static struct {
    pid_t self;
    pid_t wrapper;
    int wrapper_done, wrapper_status;
    pid_t tracee;               /* resolved tracee, 0 while unknown */
    pid_t target_pid;           /* for the record: who got (or would get) our signals */
    /* The stop protocol.  step counts what the target chain has sent:
     * 1 = the stop signal, 1+k = escalate[k-1].  wstep is the chain that
     * starts when a tracee is gone but the wrapper is not: 1 = leftovers
     * got SIGTERM, 2 = leftovers got SIGKILL, 3 = wrapper got SIGTERM,
     * 4 = wrapper got SIGKILL. */
    int stop_requested;
    pid_t chain_pid;            /* the process the target chain signals */
    int step, wstep;
    double deadline;            /* next step of the active chain; 0 = none */
    double target_gone_at;
    int escalations[MAX_SIGLIST], n_escalations;
    int wrapper_signals[2], n_wrapper_signals;
    /* Which signals ph-init sent to the stop target (forwarded, the stop
     * signal, escalations) and to the wrapper process: the record tells a
     * crash or an OOM kill from what we did by them. */
    unsigned char sent_target[NSIG], sent_wrapper[NSIG];
    struct pidset termed, killed; /* leftovers that got SIGTERM, SIGKILL */
    int survived;               /* leftovers still there after SIGKILL */
    long oom_start;             /* the cgroup's oom_kill count at start, -1: unknown */
    double t_start, t_stop, t_end;
    struct timespec w_start, w_stop, w_end;
} st;

/* Set by the fault handler for fault signals sent by other processes. */
static volatile sig_atomic_t fault_pending[NSIG];

static double
mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------- signals */

static const struct {
    const char *name;
    int num;
} signames[] = {
    { "HUP", SIGHUP },     { "INT", SIGINT },       { "QUIT", SIGQUIT },   { "ILL", SIGILL },
    { "TRAP", SIGTRAP },   { "ABRT", SIGABRT },     { "IOT", SIGIOT },     { "BUS", SIGBUS },
    { "FPE", SIGFPE },     { "KILL", SIGKILL },     { "USR1", SIGUSR1 },   { "SEGV", SIGSEGV },
    { "USR2", SIGUSR2 },   { "PIPE", SIGPIPE },     { "ALRM", SIGALRM },   { "TERM", SIGTERM },
    { "STKFLT", SIGSTKFLT }, { "CHLD", SIGCHLD },   { "CLD", SIGCHLD },    { "CONT", SIGCONT },
    { "STOP", SIGSTOP },   { "TSTP", SIGTSTP },     { "TTIN", SIGTTIN },   { "TTOU", SIGTTOU },
    { "URG", SIGURG },     { "XCPU", SIGXCPU },     { "XFSZ", SIGXFSZ },   { "VTALRM", SIGVTALRM },
    { "PROF", SIGPROF },   { "WINCH", SIGWINCH },   { "IO", SIGIO },       { "POLL", SIGPOLL },
    { "PWR", SIGPWR },     { "SYS", SIGSYS },
};

/* "SIGTERM" for 15, "SIG40" for a real-time signal.  Returns a pointer into
 * a static table or BUF. */
const char *
ph_init_signame(int sig, char *buf, size_t len)
{
    for (size_t i = 0; i < sizeof signames / sizeof signames[0]; i++)
        if (signames[i].num == sig) {
            snprintf(buf, len, "SIG%s", signames[i].name);
            return buf;
        }
    snprintf(buf, len, "SIG%d", sig);
    return buf;
}


/* Decimal without sign or junk, in [lo, hi]; -1 otherwise. */
static long
parse_uint(const char *s, long lo, long hi)
{
    long n = 0;

    if (*s == '\0')
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || n > hi)
            return -1;
        n = n * 10 + (*s - '0');
    }
    return n >= lo && n <= hi ? n : -1;
}

/* "SIGTERM", "TERM", "sigterm" or "15"; -1 when unknown. */
static int
parse_signal(const char *s)
{
    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    for (size_t i = 0; i < sizeof signames / sizeof signames[0]; i++)
        if (strcasecmp(s, signames[i].name) == 0)
            return signames[i].num;
    return (int)parse_uint(s, 1, NSIG - 1);
}

static int
is_fault_signal(int sig)
{
    for (size_t i = 0; i < sizeof fault_signals / sizeof fault_signals[0]; i++)
        if (fault_signals[i] == sig)
            return 1;
    return 0;
}

/* "SIG[,SIG...]" into OUT; the count, or -1 on a bad or empty entry. */
static int
parse_signal_list(const char *s, int *out, int max)
{
    int n = 0;

    for (;;) {
        char one[32];
        size_t len = strcspn(s, ",");

        if (len == 0 || len >= sizeof one || n >= max)
            return -1;
        memcpy(one, s, len);
        one[len] = '\0';
        if ((out[n++] = parse_signal(one)) < 0)
            return -1;
        if (s[len] == '\0')
            return n;
        s += len + 1;
    }
}

static double
parse_seconds(const char *s)
{
    char *end;
    double d;

    errno = 0;
    d = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(d) || d < 0 || d > 1e7)
        return -1;
    return d;
}

static void
usage(FILE *f, int code)
{
    fputs("usage: ph-init [options] -- COMMAND [ARG...]\n"
          "  --stop-target wrapper|tracee  who gets the stop signal: COMMAND itself, or the child in\n"
          "                                which it runs a program (the process a tracer like strace\n"
          "                                traces); default wrapper\n"
          "  --stop-signal SIG             default SIGTERM (SIGTERM, TERM and 15 are the same)\n"
          "  --grace SECONDS               wait after the stop signal before escalating; default 30\n"
          "  --escalate SIG[,SIG...]       sent in turn after the grace; default SIGKILL\n"
          "  --escalate-grace SECONDS      wait between escalation steps; default 10\n"
          "  --record FILE                 write the completion record (JSON) there\n"
          "  --stop-on SIG[,SIG...]        signals that request a stop; default SIGTERM,SIGINT\n"
          "  -v                            log decisions to stderr\n"
          "Every other signal is forwarded to the stop target.\n"
          "Exit status: COMMAND's, 128+N if it was killed by signal N, 126 if it cannot be run,\n"
          "127 if it is not found, 2 on bad usage, 1 if ph-init itself fails.\n",
          f);
    exit(code);
}

static void
bad_usage(const char *what, const char *value)
{
    ph_init_warn("%s%s%s", what, value ? ": " : "", value ? value : "");
    ph_init_warn("usage: ph-init [options] -- COMMAND [ARG...]  (ph-init --help lists the options)");
    exit(2);
}

static int
takes_value(const char *a)
{
    static const char *const names[] = { "--stop-target", "--stop-signal", "--grace", "--escalate",
                                         "--escalate-grace", "--record", "--stop-on" };

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(a, names[i]) == 0)
            return 1;
    return 0;
}

static void
parse_args(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v;

        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-v") == 0) {
            ph_init_verbose = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            usage(stdout, 0);
        if (a[0] != '-')
            break;
        if (!takes_value(a))
            bad_usage("unknown option", a);
        if (i + 1 >= argc)
            bad_usage("missing value for", a);
        v = argv[++i];
        if (strcmp(a, "--stop-target") == 0) {
            if (strcmp(v, "tracee") == 0)
                opt.target_tracee = 1;
            else if (strcmp(v, "wrapper") == 0)
                opt.target_tracee = 0;
            else
                bad_usage("--stop-target must be wrapper or tracee, not", v);
        } else if (strcmp(a, "--stop-signal") == 0) {
            if ((opt.stop_signal = parse_signal(v)) < 0)
                bad_usage("unknown signal", v);
        } else if (strcmp(a, "--grace") == 0) {
            if ((opt.grace = parse_seconds(v)) < 0)
                bad_usage("bad --grace", v);
        } else if (strcmp(a, "--escalate") == 0) {
            if ((opt.n_escalate = parse_signal_list(v, opt.escalate, MAX_SIGLIST)) < 0)
                bad_usage("bad --escalate", v);
        } else if (strcmp(a, "--escalate-grace") == 0) {
            if ((opt.escalate_grace = parse_seconds(v)) < 0)
                bad_usage("bad --escalate-grace", v);
        } else if (strcmp(a, "--record") == 0) {
            if (!ph_init_record_path_ok(v))
                bad_usage("bad --record (a file name, not too long)", v);
            opt.record = v;
        } else if (strcmp(a, "--stop-on") == 0) {
            if ((opt.n_stop_on = parse_signal_list(v, opt.stop_on, MAX_SIGLIST)) < 0)
                bad_usage("bad --stop-on", v);
            /* These never reach sigtimedwait: uncatchable, our own
             * reaping signal, or left unblocked for real faults. */
            for (int k = 0; k < opt.n_stop_on; k++) {
                int s = opt.stop_on[k];
                if (s == SIGKILL || s == SIGSTOP || s == SIGCHLD || is_fault_signal(s))
                    bad_usage("--stop-on cannot use", PH_INIT_SIGNAME(s));
            }
        } else {
            bad_usage("unknown option", a);
        }
    }
    if (i >= argc)
        bad_usage("no COMMAND given", NULL);
    opt.argv = argv + i;
}

static int
is_stop_on(int sig)
{
    for (int i = 0; i < opt.n_stop_on; i++)
        if (opt.stop_on[i] == sig)
            return 1;
    return 0;
}

/* Kernel-generated faults (si_code > 0) and our own abort() are real: take
 * the default action.  The same signal sent by someone else is a request
 * to forward, like every other signal. */
static void
fault_cb(int sig, siginfo_t *si, void *uctx)
{
    struct sigaction dfl;

    (void)uctx;
    if (si->si_code <= 0 && si->si_pid != st.self) {
        fault_pending[sig] = 1;
        return;
    }
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    if (si->si_code <= 0)
        raise(sig); /* pending until we return, then fatal */
    /* A hardware fault re-executes the instruction and now dies. */
}

/* --------------------------------------------------------------- /proc */

/* Call FN(pid, arg) for each numeric entry of directory PATH, stopping when
 * it returns nonzero.  getdents64 into a stack buffer: opendir allocates. */
static void
for_each_pid(const char *path, int (*fn)(pid_t, void *), void *arg)
{
    char buf[4096];
    int fd;

    while ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (fd < 0)
        return;
    for (;;) {
        ssize_t n = getdents64(fd, buf, sizeof buf);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (ssize_t off = 0; off < n;) {
            struct dirent64 *de = (struct dirent64 *)(buf + off);
            long pid = parse_uint(de->d_name, 1, INT_MAX);

            off += de->d_reclen;
            if (pid > 0 && fn((pid_t)pid, arg)) {
                close(fd);
                return;
            }
        }
    }
    close(fd);
}

/* Read up to LEN-1 bytes of PATH into BUF, NUL-terminated.  Bytes read or -1. */
static ssize_t
read_small(const char *path, char *buf, size_t len)
{
    ssize_t n;
    int fd;

    while ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (fd < 0)
        return -1;
    while ((n = read(fd, buf, len - 1)) < 0 && errno == EINTR)
        ;
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

/* State letter and parent of PID from /proc/PID/stat; 0, or -1 if gone. */
static int
proc_stat(pid_t pid, char *state, pid_t *ppid)
{
    char path[64], buf[512], *p;
    long pp = 0;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (read_small(path, buf, sizeof buf) <= 0)
        return -1;
    /* The command name may hold spaces and parentheses: parse after the last ')'. */
    p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ' || p[2] == '\0' || p[3] != ' ')
        return -1;
    *state = p[2];
    for (p += 4; *p >= '0' && *p <= '9'; p++)
        pp = pp * 10 + (*p - '0');
    *ppid = (pid_t)pp;
    return 0;
}

/* Whether PID and the wrapper W run different programs, i.e. PID has
 * exec'd one of its own.  By the executable's identity when both
 * /proc/N/exe can be stat'ed, else (an executable we may not inspect) by
 * the command name.  A process that is gone runs nothing. */
static int
runs_own_program(pid_t pid, pid_t w)
{
    char path[64], a[32], b[32];
    struct stat sp, sw;

    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    if (stat(path, &sp) == 0) {
        snprintf(path, sizeof path, "/proc/%d/exe", (int)w);
        if (stat(path, &sw) == 0)
            return sp.st_dev != sw.st_dev || sp.st_ino != sw.st_ino;
    } else if (errno == ENOENT || errno == ESRCH) {
        return 0;
    }
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    if (read_small(path, a, sizeof a) <= 0)
        return 0;
    snprintf(path, sizeof path, "/proc/%d/comm", (int)w);
    if (read_small(path, b, sizeof b) <= 0)
        return 0;
    return strcmp(a, b) != 0;
}

/* Whether PID, a child of the wrapper, is the process it traces: alive
 * and running a program of its own.  A tracer's other children are not:
 * strace 6 forks children that only probe ptrace and exit, before it
 * forks the one that execs the traced program.  Taking a probe for the
 * tracee sent the stop signal and the escalation's SIGKILL to strace
 * itself, whose log then lost its tail. */
static int
is_tracee(pid_t pid, pid_t wrapper)
{
    pid_t ppid;
    char state;

    if (proc_stat(pid, &state, &ppid) < 0 || ppid != wrapper || state == 'Z' || state == 'X')
        return 0;
    return runs_own_program(pid, wrapper);
}

struct child_search {
    pid_t parent;
    pid_t found;
    int have_children_file;
};

/* /proc/P/task/T/children lists T's children in fork order: the first
 * that is a tracee. */
static int
task_children_cb(pid_t tid, void *arg)
{
    struct child_search *cs = arg;
    char path[96], buf[512];
    char *p, *end;

    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)cs->parent, (int)tid);
    if (read_small(path, buf, sizeof buf) < 0)
        return 0;
    cs->have_children_file = 1;
    for (p = buf; *p && cs->found == 0; p = end) {
        long pid;

        p += strspn(p, " \n");
        end = p + strcspn(p, " \n");
        if (end == p)
            break;
        if (*end)
            *end++ = '\0';
        pid = parse_uint(p, 1, INT_MAX);
        if (pid > 0 && is_tracee((pid_t)pid, cs->parent))
            cs->found = (pid_t)pid;
    }
    return cs->found > 0;
}

/* Kernels without CONFIG_PROC_CHILDREN: the oldest-looking tracee whose
 * parent is ours (lowest pid; fine until pids wrap). */
static int
scan_children_cb(pid_t pid, void *arg)
{
    struct child_search *cs = arg;

    if ((cs->found == 0 || pid < cs->found) && is_tracee(pid, cs->parent))
        cs->found = pid;
    return 0;
}

/* The process PARENT traces (see is_tracee), or 0 when there is none yet. */
static pid_t
tracee_of(pid_t parent)
{
    struct child_search cs = { parent, 0, 0 };
    char path[64];

    snprintf(path, sizeof path, "/proc/%d/task", (int)parent);
    for_each_pid(path, task_children_cb, &cs);
    if (cs.found == 0 && !cs.have_children_file)
        for_each_pid("/proc", scan_children_cb, &cs);
    return cs.found;
}

/* Gone, or a zombie waiting for its parent: either way it runs no more. */
static int
proc_gone(pid_t pid)
{
    char state;
    pid_t ppid;

    if (kill(pid, 0) < 0 && errno == ESRCH)
        return 1;
    return proc_stat(pid, &state, &ppid) < 0 || state == 'Z' || state == 'X';
}

struct proc_table {
    int n;
    pid_t pid[MAX_PROCS], ppid[MAX_PROCS];
    unsigned char mark[MAX_PROCS];
};

static int
collect_cb(pid_t pid, void *arg)
{
    struct proc_table *t = arg;
    pid_t ppid;
    char state;

    if (t->n >= MAX_PROCS)
        return 1;
    if (proc_stat(pid, &state, &ppid) < 0 || state == 'Z' || state == 'X')
        return 0;
    t->pid[t->n] = pid;
    t->ppid[t->n] = ppid;
    t->mark[t->n] = 0;
    t->n++;
    return 0;
}

static void
pidset_add(struct pidset *set, pid_t pid)
{
    for (int i = 0; i < set->n; i++)
        if (set->v[i] == pid)
            return;
    if (set->n < (int)(sizeof set->v / sizeof set->v[0]))
        set->v[set->n++] = pid;
    else
        set->extra++;
}

static int
pidset_count(const struct pidset *set)
{
    return set->n + set->extra;
}

/* Send SIG (0: none, just count) to every live descendant of ours, except
 * the subtree of SPARE (0: spare nobody), and add each to SET unless it is
 * NULL.  Returns how many there were.  Used for what the service left
 * behind: orphans are reparented to us (PID 1 or subreaper), so they are
 * found here and not under the profiler. */
static int
signal_descendants(pid_t spare, int sig, struct pidset *set)
{
    static struct proc_table t;
    int hit = 0, changed = 1;

    t.n = 0;
    for_each_pid("/proc", collect_cb, &t);
    /* Mark by generations until nothing changes: a parent may be listed after its child. */
    while (changed) {
        changed = 0;
        for (int i = 0; i < t.n; i++) {
            int up = t.ppid[i] == st.self;

            if (t.mark[i] || t.pid[i] == spare || t.pid[i] == st.self)
                continue;
            for (int j = 0; !up && j < t.n; j++)
                up = t.mark[j] && t.pid[j] == t.ppid[i];
            if (up) {
                t.mark[i] = 1;
                changed = 1;
            }
        }
    }
    for (int i = 0; i < t.n; i++)
        if (t.mark[i] && kill(t.pid[i], sig) == 0) {
            hit++;
            if (set)
                pidset_add(set, t.pid[i]);
        }
    return hit;
}

/* ------------------------------------------------------------ the stop */

/* In tracee mode, find the traced process once it runs the service's
 * program; it keeps its pid across later execs, so one lookup holds for
 * its life.  Until then the wrapper is the target. */
static void
resolve_tracee(void)
{
    if (!opt.target_tracee || st.tracee > 0 || st.wrapper_done)
        return;
    st.tracee = tracee_of(st.wrapper);
    if (st.tracee > 0) {
        st.target_pid = st.tracee;
        ph_init_log("tracee is pid %d", (int)st.tracee);
    }
}

/* Who gets stop and forwarded signals now: the tracee while it runs, else
 * the wrapper (tracee mode before the tracer forked, or after the tracee
 * ended; the wrapper in wrapper mode). */
static pid_t
current_target(void)
{
    resolve_tracee();
    if (st.tracee > 0 && !proc_gone(st.tracee))
        return st.tracee;
    return st.wrapper;
}

static void
sig_send(pid_t pid, int sig, const char *why)
{
    if (pid == st.wrapper)
        st.sent_wrapper[sig] = 1;
    ph_init_log("%s: %s to pid %d", why, PH_INIT_SIGNAME(sig), (int)pid);
    if (kill(pid, sig) < 0 && errno != ESRCH)
        ph_init_warn("kill %d %s: %s", (int)pid, PH_INIT_SIGNAME(sig), strerror(errno));
}

/* A signal to the stop target: remembered for the record. */
static void
target_send(pid_t pid, int sig, const char *why)
{
    st.sent_target[sig] = 1;
    sig_send(pid, sig, why);
}

static void
forward(int sig)
{
    target_send(current_target(), sig, "forwarding");
}

static void
start_stop(int by)
{
    st.stop_requested = 1;
    st.t_stop = mono();
    clock_gettime(CLOCK_REALTIME, &st.w_stop);
    st.chain_pid = current_target();
    st.target_pid = st.chain_pid; /* the record names who got the stop signal */
    ph_init_log("stop requested by %s", PH_INIT_SIGNAME(by));
    target_send(st.chain_pid, opt.stop_signal, "stop");
    st.step = 1;
    st.deadline = st.t_stop + opt.grace;
}

static int
chain_target_gone(void)
{
    if (st.chain_pid == st.wrapper)
        return st.wrapper_done;
    return proc_gone(st.chain_pid);
}

/* Advance the stop protocol: on its deadline, or at once when FORCED (a
 * second stop request).  Called every loop turn while a stop is under way. */
static void
stop_tick(int forced)
{
    double now = mono();

    if (!st.stop_requested || st.wrapper_done)
        return;
    if (st.chain_pid != st.wrapper && st.wstep == 0 && chain_target_gone()) {
        /* The profiled process is gone; the profiler flushes and exits once
         * it has nothing left to trace.  What keeps it is the rest of the
         * service (reparented to us): end that now, it was asked to stop. */
        int n = signal_descendants(st.wrapper, SIGTERM, &st.termed);

        st.target_gone_at = now;
        ph_init_log("target %d is gone; SIGTERM to %d leftover process(es)", (int)st.chain_pid, n);
        st.wstep = 1;
        st.deadline = now + opt.escalate_grace; /* then SIGKILL them */
        return;
    }
    if (!forced && (st.deadline == 0 || now < st.deadline))
        return;
    if (st.wstep == 0) {
        if (st.step > opt.n_escalate) {
            ph_init_log("no escalation step left; waiting for pid %d", (int)st.chain_pid);
            st.deadline = 0;
            return;
        }
        int sig = opt.escalate[st.step - 1];
        st.step++;
        st.escalations[st.n_escalations++] = sig;
        target_send(st.chain_pid, sig, forced ? "second stop request, escalating" : "grace over, escalating");
        st.deadline = now + opt.escalate_grace; /* then the next step */
        return;
    }
    if (st.wstep == 1) {
        /* Leftovers that ignored SIGTERM for a whole escalate-grace keep
         * the profiler tracing: SIGKILL them, then give the profiler
         * another escalate-grace to write its end and exit by itself.
         * Signalling the profiler now would cut it short for nothing (and
         * strace -o FILE PROG ignores SIGTERM anyway). */
        int n = signal_descendants(st.wrapper, SIGKILL, &st.killed);

        st.wstep = 2;
        if (n > 0) {
            ph_init_log("SIGKILL to %d leftover process(es) that outlived the target", n);
            st.deadline = now + opt.escalate_grace; /* then the profiler */
            return;
        }
    }
    if (st.wstep < 4) {
        /* The profiler outlived its target and the rest of the service:
         * last resort, it loses what it had buffered. */
        int sig = st.wstep == 2 ? SIGTERM : SIGKILL;

        st.wrapper_signals[st.n_wrapper_signals++] = sig;
        sig_send(st.wrapper, sig, "profiler outlived its target");
        st.wstep++;
        st.deadline = st.wstep < 4 ? now + opt.escalate_grace : 0;
    }
}

/* ---------------------------------------------------------------- reaping */

static void
reap(void)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);

        if (pid < 0 && errno == EINTR)
            continue;
        if (pid <= 0)
            return;
        if (pid == st.wrapper) {
            st.wrapper_status = status;
            st.wrapper_done = 1;
            st.t_end = mono();
            clock_gettime(CLOCK_REALTIME, &st.w_end);
            ph_init_log("wrapper %d ended (status 0x%x)", (int)pid, status);
        } else {
            ph_init_log("reaped pid %d", (int)pid);
        }
    }
}

/* Signal the leftovers: as PID 1 of a namespace kill(-1) reaches exactly
 * the rest of it (counted first); else our descendants.  Adds them to SET. */
static void
signal_leftovers(int am_pid1, int sig, struct pidset *set)
{
    if (am_pid1) {
        signal_descendants(0, 0, set);
        kill(-1, sig);
    } else {
        signal_descendants(0, sig, set);
    }
    ph_init_log("%s to leftover processes", PH_INIT_SIGNAME(sig));
}

/* The wrapper is gone: whatever is left of ours gets SIGTERM, then SIGKILL
 * after DRAIN_TERM_S, so we exit without stranding anyone. */
static void
drain(int am_pid1)
{
    sigset_t chld;
    int sent_kill = 0;
    double deadline = mono() + DRAIN_TERM_S;

    reap();
    if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
        return;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    signal_leftovers(am_pid1, SIGTERM, &st.termed);
    for (;;) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        pid_t pid;

        while ((pid = waitpid(-1, NULL, WNOHANG)) > 0 || (pid < 0 && errno == EINTR))
            ;
        if (pid < 0) /* ECHILD: nobody left */
            return;
        if (mono() >= deadline) {
            if (sent_kill) {
                st.survived = signal_descendants(0, 0, NULL);
                ph_init_warn("%d leftover process(es) survived SIGKILL; exiting anyway", st.survived);
                return;
            }
            signal_leftovers(am_pid1, SIGKILL, &st.killed);
            sent_kill = 1;
            deadline = mono() + DRAIN_KILL_S;
        }
        sigtimedwait(&chld, NULL, &ts);
    }
}

/* The oom_kill counter of our memory cgroup: v2 memory.events or v1
 * memory.oom_control, at the path /proc/self/cgroup names or, inside a
 * container whose cgroup is mounted at the root, there.  -1 if none. */
static long
oom_kills_now(void)
{
    char cg[4096], path[PATH_MAX], buf[1024];
    const char *v1 = NULL, *v2 = NULL;
    long n = -1;

    if (read_small("/proc/self/cgroup", cg, sizeof cg) <= 0)
        return -1;
    for (char *line = cg, *next; *line; line = next) {
        char *ctl, *cpath;

        next = line + strcspn(line, "\n");
        if (*next)
            *next++ = '\0';
        ctl = strchr(line, ':');
        cpath = ctl ? strchr(ctl + 1, ':') : NULL;
        if (cpath == NULL)
            continue;
        *cpath++ = '\0';
        ctl++;
        if (*ctl == '\0')
            v2 = cpath;
        for (char *c = ctl; (c = strstr(c, "memory")) != NULL; c += 6)
            if ((c == ctl || c[-1] == ',') && (c[6] == '\0' || c[6] == ','))
                v1 = cpath;
    }
    /* v1 then v2, each at the named path, then at the mount's root. */
    for (int i = 0; i < 4 && n < 0; i++) {
        const char *cp = i < 2 ? v1 : v2;
        char *p;

        if (cp == NULL)
            continue;
        snprintf(path, sizeof path, "/sys/fs/cgroup%s%s/%s", i < 2 ? "/memory" : "",
                 i % 2 == 0 && strcmp(cp, "/") != 0 ? cp : "", i < 2 ? "memory.oom_control" : "memory.events");
        if (read_small(path, buf, sizeof buf) <= 0)
            continue;
        for (p = buf; (p = strstr(p, "oom_kill ")) != NULL; p++)
            if (p == buf || p[-1] == '\n') {
                n = strtol(p + 9, NULL, 10);
                break;
            }
    }
    return n;
}

/* ----------------------------------------------------------------- record */

/* What became of the service, from the profiler's status: in wrapper mode
 * the profiler is the service's process (valgrind runs it in-process; no
 * wrapper at all for the sampler), and a tracer like strace exits with
 * its tracee's code or kills itself with its tracee's signal.  Unknown
 * when ph-init signalled the tracer itself, which then speaks for itself.
 * Sets R's service and outcome fields. */
static void
classify(ph_init_report *r)
{
    int ws = st.wrapper_status, sig = 0;

    r->service_known = 1;
    if (opt.target_tracee)
        for (int s = 1; s < NSIG && r->service_known; s++)
            r->service_known = !st.sent_wrapper[s];
    r->service_exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    r->service_signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
    if (r->service_known)
        sig = r->service_signal;
    if (sig == SIGKILL && !st.sent_target[SIGKILL])
        r->outcome = r->oom_kills > 0 ? "oom_killed" : "killed";
    else if (sig > 0 && !st.sent_target[sig])
        r->outcome = "crashed";
    else if (st.stop_requested)
        r->outcome = st.n_escalations > 0 || st.n_wrapper_signals > 0 ? "escalated" : "stopped";
    else if (sig > 0)
        r->outcome = "signalled"; /* by a signal forwarded to it */
    else
        r->outcome = "exited";
    /* The profiler had the chance to write its output unless it got a
     * SIGKILL: from us, or (wrapper mode: not a tracer mirroring its
     * tracee's death) from anyone, such as the OOM killer.  A tracer that
     * died of SIGKILL while the OOM killer killed more than one process
     * was one of them, as likely as not (perf record, larger than the
     * service it traces, taken with it: its perf.data cut short), so its
     * output is not said to be whole. */
    r->complete = !st.sent_wrapper[SIGKILL] &&
                  !(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL && (!opt.target_tracee || r->oom_kills > 1));
}

static void
write_record(int exit_code)
{
    ph_init_report r = {
        .argv = opt.argv,
        .wrapper_pid = st.wrapper,
        .target_pid = st.target_pid,
        .exit_code = exit_code,
        .wrapper_status = st.wrapper_status,
        .stop_requested = st.stop_requested,
        .stop_signal = opt.stop_signal,
        .escalations = st.escalations,
        .n_escalations = st.n_escalations,
        .wrapper_signals = st.wrapper_signals,
        .n_wrapper_signals = st.n_wrapper_signals,
        .leftovers_signalled = pidset_count(&st.termed),
        .leftovers_killed = pidset_count(&st.killed),
        .leftovers_survived = st.survived,
        .started_at = st.w_start,
        .stop_requested_at = st.w_stop,
        .ended_at = st.w_end,
        .run_seconds = st.t_end - st.t_start,
        .stop_seconds = st.t_end - st.t_stop,
        .stop_target_tracee = opt.target_tracee,
        .grace = opt.grace,
        .escalate_grace = opt.escalate_grace,
        .oom_kills = -1,
    };
    long oom = oom_kills_now();

    if (st.oom_start >= 0 && oom >= st.oom_start)
        r.oom_kills = oom - st.oom_start;
    classify(&r);
    if (opt.record)
        ph_init_record_write(&r);
}

/* ------------------------------------------------------------------ main */

/* Never returns.  Runs in the child between fork and exec. */
static void
exec_command(int am_pid1, pid_t parent, const sigset_t *orig)
{
    struct sigaction dfl;
    int e;

    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sizeof fault_signals / sizeof fault_signals[0]; i++)
        sigaction(fault_signals[i], &dfl, NULL);
    /* Not PID 1 (tests, a run on the host): if ph-init dies, nothing else
     * would end the profiler and the service, so they die with us.  As
     * PID 1 the kernel already SIGKILLs the whole pid namespace when we
     * exit, so PDEATHSIG would add nothing but state that survives exec
     * into the profiler (and its documented surprise: it fires when the
     * forking *thread* exits, which in a threaded parent is not the
     * parent's death; we have one thread, but need not rely on it). */
    if (!am_pid1) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) /* we died before the prctl took hold */
            _exit(1);
    }
    sigprocmask(SIG_SETMASK, orig, NULL);
    execvp(opt.argv[0], opt.argv);
    e = errno;
    ph_init_warn("exec %s: %s", opt.argv[0], strerror(e));
    /* As a shell does: found but cannot be run is 126, anything else 127. */
    _exit(e == EACCES || e == EPERM || e == ENOEXEC ? 126 : 127);
}

int
main(int argc, char **argv)
{
    struct sigaction sa;
    sigset_t all, orig;
    int am_pid1, exit_code;

    st.self = getpid();
    am_pid1 = st.self == 1;
    parse_args(argc, argv);
    if (opt.record)
        ph_init_record_open(opt.record);
    st.oom_start = oom_kills_now();
    st.t_start = mono();
    clock_gettime(CLOCK_REALTIME, &st.w_start);

    /* Default dispositions for everything: an inherited SIG_IGN for SIGCHLD
     * would make the kernel reap the wrapper and lose its status, and the
     * child must start from defaults whatever started us. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &sa, NULL); /* EINVAL for libc's reserved ones: fine */
    sa.sa_sigaction = fault_cb;
    sa.sa_flags = SA_SIGINFO;
    sigfillset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof fault_signals / sizeof fault_signals[0]; i++)
        sigaction(fault_signals[i], &sa, NULL);

    sigfillset(&all);
    for (size_t i = 0; i < sizeof fault_signals / sizeof fault_signals[0]; i++)
        sigdelset(&all, fault_signals[i]);
    if (sigprocmask(SIG_SETMASK, &all, &orig) < 0) {
        ph_init_warn("sigprocmask: %s", strerror(errno));
        return 1;
    }
    /* Outside a container orphans would go to the host's init and pile up
     * as zombies of nobody we know: collect them ourselves. */
    if (!am_pid1 && getenv("PH_INIT_NO_SUBREAPER") == NULL && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        ph_init_warn("cannot become a child subreaper: %s", strerror(errno));

    st.wrapper = fork();
    if (st.wrapper < 0) {
        ph_init_warn("fork: %s", strerror(errno));
        return 1;
    }
    if (st.wrapper == 0)
        exec_command(am_pid1, st.self, &orig);
    st.target_pid = st.wrapper;
    ph_init_log("started %s as pid %d%s", opt.argv[0], (int)st.wrapper, am_pid1 ? " (we are PID 1)" : "");

    for (;;) {
        struct timespec ts;
        double wait_s = IDLE_TICK_S;
        siginfo_t si;
        int sig;

        reap();
        if (st.wrapper_done)
            break;
        for (int s = 1; s < NSIG; s++)
            if (fault_pending[s]) {
                fault_pending[s] = 0;
                forward(s);
            }
        resolve_tracee();
        stop_tick(0);
        if (st.stop_requested) {
            wait_s = STOP_TICK_S;
            if (st.deadline > 0 && st.deadline - mono() < wait_s)
                wait_s = st.deadline - mono();
            if (wait_s < 0.001)
                wait_s = 0.001;
        }
        ts.tv_sec = (time_t)wait_s;
        ts.tv_nsec = (long)((wait_s - (double)ts.tv_sec) * 1e9);
        sig = sigtimedwait(&all, &si, &ts);
        if (sig < 0) {
            if (errno != EAGAIN && errno != EINTR) {
                ph_init_warn("sigtimedwait: %s", strerror(errno));
                return 1;
            }
            continue;
        }
        if (sig == SIGCHLD)
            continue; /* reaped at the top */
        if (is_stop_on(sig)) {
            if (!st.stop_requested)
                start_stop(sig);
            else
                stop_tick(1);
        } else {
            forward(sig);
        }
    }

    if (WIFEXITED(st.wrapper_status))
        exit_code = WEXITSTATUS(st.wrapper_status);
    else if (WIFSIGNALED(st.wrapper_status))
        exit_code = 128 + WTERMSIG(st.wrapper_status);
    else
        exit_code = 1;
    drain(am_pid1);
    write_record(exit_code);
    ph_init_log("exiting with %d", exit_code);
    return exit_code;
}
