/* ph-init.c - PID 1 of every profiled container.
 *
 * Why: the setup we replace made the profiler PID 1.  strace as PID 1
 * ignores SIGTERM (it blocks fatal signals while it runs a program), so
 * `docker stop` ended in SIGKILL and a truncated log; valgrind as PID 1
 * crashes on SIGTERM; a slow callgrind dump was lost to the 10 s SIGKILL.
 * This shim runs the profiler as its child and, on a stop request, signals
 * the *profiled process* (for strace: the tracee, not strace), waits the
 * profile's grace, escalates one step at a time, lets the profiler finish
 * writing, and records what happened so the supervisor knows the output is
 * complete.
 *
 * Design (tini's, plus the stop protocol):
 * - One thread.  Every signal but the synchronous fault signals is blocked;
 *   the main loop takes them with sigtimedwait, whose timeout drives the
 *   grace timers (CLOCK_MONOTONIC deadlines).  No signal handlers at all.
 * - SIGCHLD: reap every child (we are PID 1, or a subreaper otherwise).
 * - A stop-request signal (default SIGTERM, SIGINT) starts the protocol; a
 *   second one jumps to the next escalation step.  Any other catchable
 *   signal is forwarded to the profiled process, as tini forwards to its child.
 * - When the wrapper (the command we started) has exited: the remaining
 *   processes get SIGTERM then SIGKILL, the completion record is written
 *   atomically, and we exit with the wrapper's status (128+N if killed).
 * Static, libc only, no allocation after startup: the host hands us argv.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ESCALATE 8
#define MAX_STOP_ON 8

static struct {
    int target_tracee;
    int stop_signal;
    double grace;
    int escalate[MAX_ESCALATE];
    int n_escalate;
    double escalate_grace;
    const char *record;
    int stop_on[MAX_STOP_ON];
    int n_stop_on;
    int verbose;
    char **argv;
} opt = {
    .stop_signal = SIGTERM,
    .grace = 30,
    .escalate = { SIGKILL },
    .n_escalate = 1,
    .escalate_grace = 10,
    .stop_on = { SIGTERM, SIGINT },
    .n_stop_on = 2,
};

static struct {
    pid_t wrapper, target;
    int wrapper_status;
    int wrapper_done;
    int target_done;
    int stop_requested;
    int step;              /* 0: stop signal sent; k: escalate[k-1] sent */
    int wrapper_killed;
    int cleanup_step;      /* after the target died: 0..4, see main */
    int escalations[MAX_ESCALATE + 2];
    int n_escalations;
    double next_deadline;  /* monotonic seconds; 0 = none */
    double started, stop_at, target_gone_at;
    struct timespec started_wall, stop_wall;
} st;

static void
logv(const char *fmt, ...)
{
    va_list ap;

    if (!opt.verbose)
        return;
    va_start(ap, fmt);
    fputs("ph-init: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void
die(int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("ph-init: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}

static double
mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct {
    const char *name;
    int num;
} signames[] = {
    { "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "ILL", SIGILL }, { "TRAP", SIGTRAP },
    { "ABRT", SIGABRT }, { "BUS", SIGBUS }, { "FPE", SIGFPE }, { "KILL", SIGKILL }, { "USR1", SIGUSR1 },
    { "SEGV", SIGSEGV }, { "USR2", SIGUSR2 }, { "PIPE", SIGPIPE }, { "ALRM", SIGALRM }, { "TERM", SIGTERM },
    { "STKFLT", SIGSTKFLT }, { "CHLD", SIGCHLD }, { "CONT", SIGCONT }, { "STOP", SIGSTOP }, { "TSTP", SIGTSTP },
    { "TTIN", SIGTTIN }, { "TTOU", SIGTTOU }, { "URG", SIGURG }, { "XCPU", SIGXCPU }, { "XFSZ", SIGXFSZ },
    { "VTALRM", SIGVTALRM }, { "PROF", SIGPROF }, { "WINCH", SIGWINCH }, { "IO", SIGIO }, { "PWR", SIGPWR },
    { "SYS", SIGSYS },
};

static const char *
signame(int sig)
{
    static char buf[16];

    for (size_t i = 0; i < sizeof signames / sizeof signames[0]; i++)
        if (signames[i].num == sig) {
            snprintf(buf, sizeof buf, "SIG%s", signames[i].name);
            return buf;
        }
    snprintf(buf, sizeof buf, "SIG%d", sig);
    return buf;
}

static int
parse_signal(const char *s)
{
    char *end;
    long n;

    if (strncmp(s, "SIG", 3) == 0)
        s += 3;
    for (size_t i = 0; i < sizeof signames / sizeof signames[0]; i++)
        if (strcmp(s, signames[i].name) == 0)
            return signames[i].num;
    n = strtol(s, &end, 10);
    if (*s != '\0' && *end == '\0' && n > 0 && n < NSIG)
        return (int)n;
    return -1;
}

static int
parse_signal_list(const char *s, int *out, int max)
{
    char buf[256], *tok, *save = NULL;
    int n = 0;

    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int sig = parse_signal(tok);
        if (sig < 0 || n >= max)
            return -1;
        out[n++] = sig;
    }
    return n;
}

static double
parse_seconds(const char *s)
{
    char *end;
    double d = strtod(s, &end);

    if (end == s || *end != '\0' || d < 0)
        return -1;
    return d;
}

static void
usage(void)
{
    fputs("usage: ph-init [--stop-target wrapper|tracee] [--stop-signal SIG] [--grace S]\n"
          "               [--escalate SIG[,SIG...]] [--escalate-grace S] [--record FILE]\n"
          "               [--stop-on SIG[,SIG...]] [-v] -- COMMAND [ARG...]\n",
          stderr);
    exit(2);
}

static void
parse_args(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-v") == 0) {
            opt.verbose = 1;
            continue;
        }
        if (a[0] != '-')
            break;
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--stop-target") == 0) {
            if (strcmp(v, "tracee") == 0)
                opt.target_tracee = 1;
            else if (strcmp(v, "wrapper") == 0)
                opt.target_tracee = 0;
            else
                usage();
        } else if (strcmp(a, "--stop-signal") == 0) {
            if ((opt.stop_signal = parse_signal(v)) < 0)
                usage();
        } else if (strcmp(a, "--grace") == 0) {
            if ((opt.grace = parse_seconds(v)) < 0)
                usage();
        } else if (strcmp(a, "--escalate") == 0) {
            if ((opt.n_escalate = parse_signal_list(v, opt.escalate, MAX_ESCALATE)) < 0)
                usage();
        } else if (strcmp(a, "--escalate-grace") == 0) {
            if ((opt.escalate_grace = parse_seconds(v)) < 0)
                usage();
        } else if (strcmp(a, "--record") == 0) {
            opt.record = v;
        } else if (strcmp(a, "--stop-on") == 0) {
            if ((opt.n_stop_on = parse_signal_list(v, opt.stop_on, MAX_STOP_ON)) < 0)
                usage();
        } else {
            usage();
        }
    }
    if (i >= argc)
        usage();
    opt.argv = argv + i;
}

/* mkdir -p DIR with mode 0777: the profiler may run as any user. */
static void
make_record_dir(void)
{
    char dir[PATH_MAX];
    mode_t old;
    char *slash;

    if (opt.record == NULL || strlen(opt.record) >= sizeof dir)
        return;
    strcpy(dir, opt.record);
    slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        return;
    *slash = '\0';
    old = umask(0);
    for (char *p = dir + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0777);
            *p = '/';
        }
    }
    if (mkdir(dir, 0777) < 0 && errno != EEXIST)
        fprintf(stderr, "ph-init: mkdir %s: %s\n", dir, strerror(errno));
    umask(old);
}

static int
is_stop_on(int sig)
{
    for (int i = 0; i < opt.n_stop_on; i++)
        if (opt.stop_on[i] == sig)
            return 1;
    return 0;
}

/* Read /proc/PID/stat: the state letter and the parent pid.  0 or -1. */
static int
proc_stat(pid_t pid, char *state, int *ppid)
{
    char path[64], buf[512], *p;
    ssize_t n;
    int fd;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: parse after the last ')'. */
    p = strrchr(buf, ')');
    if (p == NULL || sscanf(p + 2, "%c %d", state, ppid) != 2)
        return -1;
    return 0;
}

/* The first child of PID: /proc/PID/task/PID/children, else a /proc scan. */
static pid_t
first_child_of(pid_t pid)
{
    char path[64], buf[256];
    DIR *d;
    struct dirent *de;
    pid_t best = 0;
    int fd;

    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n > 0) {
            buf[n] = '\0';
            best = (pid_t)atoi(buf);
            if (best > 0)
                return best;
        }
    }
    d = opendir("/proc");
    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        pid_t cand = (pid_t)atoi(de->d_name);
        char state;
        int ppid;

        if (cand <= 0 || proc_stat(cand, &state, &ppid) < 0)
            continue;
        if (ppid == pid && (best == 0 || cand < best))
            best = cand;
    }
    closedir(d);
    return best;
}

/* Signal every descendant of ours but SPARE (the profiler).  Orphaned
 * tracees are reparented to us, not to the profiler, so "ours" is the
 * right set.  Returns how many were signalled. */
#define MAX_PROCS 4096
static int
signal_others(pid_t spare, int sig)
{
    pid_t root = getpid();
    static pid_t pids[MAX_PROCS], ppids[MAX_PROCS];
    int n = 0, hit = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;

    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL && n < MAX_PROCS) {
        pid_t pid = (pid_t)atoi(de->d_name);
        char state;
        int ppid;

        if (pid <= 0 || proc_stat(pid, &state, &ppid) < 0 || state == 'Z')
            continue;
        pids[n] = pid;
        ppids[n] = (pid_t)ppid;
        n++;
    }
    closedir(d);
    for (int i = 0; i < n; i++) {
        pid_t a = ppids[i];

        /* Walk up at most 64 generations looking for ROOT. */
        for (int depth = 0; depth < 64 && a > 0; depth++) {
            int j;

            if (a == root) {
                if (pids[i] == spare)
                    break;
                kill(pids[i], sig);
                hit++;
                break;
            }
            for (j = 0; j < n && pids[j] != a; j++)
                ;
            if (j == n)
                break;
            a = ppids[j];
        }
    }
    return hit;
}

/* The process that gets stop and forwarded signals. */
static pid_t
target(void)
{
    pid_t t;

    if (!opt.target_tracee)
        return st.wrapper;
    if (st.target > 0 && !st.target_done && kill(st.target, 0) == 0)
        return st.target;
    t = first_child_of(st.wrapper);
    if (t > 0) {
        st.target = t;
        return t;
    }
    return st.wrapper; /* no tracee (yet): the wrapper is all there is */
}

static void
send_to_target(int sig, int record)
{
    pid_t t = target();

    if (t <= 0)
        return;
    logv("sending %s to pid %d", signame(sig), (int)t);
    if (record && st.n_escalations < MAX_ESCALATE + 2)
        st.escalations[st.n_escalations++] = sig;
    if (kill(t, sig) < 0 && errno != ESRCH)
        fprintf(stderr, "ph-init: kill %d %s: %s\n", (int)t, signame(sig), strerror(errno));
}

static void
start_stop(void)
{
    st.stop_requested = 1;
    st.stop_at = mono();
    clock_gettime(CLOCK_REALTIME, &st.stop_wall);
    st.step = 0;
    send_to_target(opt.stop_signal, 0);
    st.next_deadline = st.stop_at + opt.grace;
}

static void
next_step(void)
{
    if (st.step < opt.n_escalate) {
        int sig = opt.escalate[st.step++];
        logv("grace over; escalating with %s", signame(sig));
        send_to_target(sig, 1);
        st.next_deadline = mono() + opt.escalate_grace;
    } else {
        st.next_deadline = 0;
    }
}

static void
reap(void)
{
    int status;
    pid_t pid;

    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid == st.wrapper) {
            st.wrapper_status = status;
            st.wrapper_done = 1;
            logv("wrapper %d exited (status 0x%x)", (int)pid, status);
        }
        if (pid == st.target) {
            st.target_done = 1;
            st.target_gone_at = mono();
        }
    }
}

/* A tracee is reparented to us only after the tracer exits, so watch it
 * with kill(0) too. */
static void
check_target_gone(void)
{
    if (!opt.target_tracee || st.target <= 0 || st.target_done)
        return;
    if (kill(st.target, 0) < 0 && errno == ESRCH) {
        st.target_done = 1;
        st.target_gone_at = mono();
    } else {
        char state;
        int ppid;

        /* A zombie still answers kill(0): it is gone for our purpose. */
        if (proc_stat(st.target, &state, &ppid) == 0 && state == 'Z') {
            st.target_done = 1;
            st.target_gone_at = mono();
        }
    }
}

static void
iso(const struct timespec *ts, char *out, size_t len)
{
    struct tm tm;
    char base[24];

    gmtime_r(&ts->tv_sec, &tm);
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%03ldZ", base, ts->tv_nsec / 1000000);
}

static void
json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void
write_record(int exit_code)
{
    char tmp[PATH_MAX], t0[64], t1[64], t2[64];
    struct timespec now;
    FILE *f;
    int fd;

    if (opt.record == NULL)
        return;
    if (snprintf(tmp, sizeof tmp, "%s.tmp", opt.record) >= (int)sizeof tmp)
        return;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
        fprintf(stderr, "ph-init: cannot write %s: %s\n", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    clock_gettime(CLOCK_REALTIME, &now);
    iso(&st.started_wall, t0, sizeof t0);
    iso(&now, t2, sizeof t2);
    fputs("{\"version\":1,\"command\":[", f);
    for (int i = 0; opt.argv[i]; i++) {
        if (i)
            fputc(',', f);
        json_str(f, opt.argv[i]);
    }
    fprintf(f, "],\"wrapper_pid\":%d,\"target_pid\":%d,\"exit_code\":%d,\"signal\":", (int)st.wrapper,
            (int)(st.target > 0 ? st.target : st.wrapper), exit_code);
    if (WIFSIGNALED(st.wrapper_status))
        json_str(f, signame(WTERMSIG(st.wrapper_status)));
    else
        fputs("null", f);
    fprintf(f, ",\"stop_requested\":%s,\"stop_signal\":", st.stop_requested ? "true" : "false");
    json_str(f, signame(opt.stop_signal));
    fputs(",\"escalations\":[", f);
    for (int i = 0; i < st.n_escalations; i++) {
        if (i)
            fputc(',', f);
        json_str(f, signame(st.escalations[i]));
    }
    fprintf(f, "],\"wrapper_killed\":%s,\"started_at\":\"%s\",\"stop_requested_at\":", st.wrapper_killed ? "true" : "false",
            t0);
    if (st.stop_requested) {
        iso(&st.stop_wall, t1, sizeof t1);
        fprintf(f, "\"%s\"", t1);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"ended_at\":\"%s\",\"run_seconds\":%.3f,\"stop_seconds\":", t2, mono() - st.started);
    if (st.stop_requested)
        fprintf(f, "%.3f", mono() - st.stop_at);
    else
        fputs("null", f);
    fputs("}\n", f);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        fprintf(stderr, "ph-init: write %s: %s\n", tmp, strerror(errno));
        fclose(f);
        return;
    }
    fclose(f);
    if (rename(tmp, opt.record) < 0)
        fprintf(stderr, "ph-init: rename %s: %s\n", tmp, strerror(errno));
}

/* After the wrapper: whatever is left gets SIGTERM, then SIGKILL after 2 s. */
static void
signal_rest(int am_pid1, int sig)
{
    pid_t c;

    /* As PID 1 of a pid namespace, kill(-1) reaches only our descendants;
     * anywhere else it would reach every process we may signal. */
    if (am_pid1) {
        kill(-1, sig);
        return;
    }
    for (int i = 0; i < 64 && (c = first_child_of(getpid())) > 0; i++) {
        if (kill(c, sig) < 0)
            break;
        if (sig != SIGKILL)
            break; /* one pass per round; the loop below polls */
    }
}

static void
drain_children(int am_pid1)
{
    double deadline = mono() + 2.0;
    int sent_kill = 0;

    signal_rest(am_pid1, SIGTERM);
    for (;;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);

        if (pid < 0 && errno == ECHILD)
            return;
        if (pid > 0)
            continue;
        if (mono() > deadline) {
            if (sent_kill)
                return;
            signal_rest(am_pid1, SIGKILL);
            sent_kill = 1;
            deadline = mono() + 1.0;
        }
        usleep(20000);
    }
}

int
main(int argc, char **argv)
{
    sigset_t all, orig;
    static const int faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS };
    int am_pid1 = getpid() == 1;
    int exit_code;

    parse_args(argc, argv);
    make_record_dir();
    st.started = mono();
    clock_gettime(CLOCK_REALTIME, &st.started_wall);

    sigfillset(&all);
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        sigdelset(&all, faults[i]);
    if (sigprocmask(SIG_SETMASK, &all, &orig) < 0)
        die(1, "sigprocmask: %s", strerror(errno));
    if (!am_pid1 && getenv("PH_INIT_NO_SUBREAPER") == NULL && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        fprintf(stderr, "ph-init: cannot become a subreaper: %s\n", strerror(errno));

    st.wrapper = fork();
    if (st.wrapper < 0)
        die(1, "fork: %s", strerror(errno));
    if (st.wrapper == 0) {
        /* Outside a container nobody kills the service if we die; inside
         * one, the namespace does it, and PDEATHSIG would fire on any
         * thread exit of a multithreaded parent (we have none). */
        if (!am_pid1)
            prctl(PR_SET_PDEATHSIG, SIGKILL);
        sigprocmask(SIG_SETMASK, &orig, NULL);
        execvp(opt.argv[0], opt.argv);
        fprintf(stderr, "ph-init: exec %s: %s\n", opt.argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    logv("started %s as pid %d", opt.argv[0], (int)st.wrapper);

    while (!st.wrapper_done) {
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        siginfo_t si;
        int sig;

        sig = sigtimedwait(&all, &si, &ts);
        if (sig < 0 && errno != EAGAIN && errno != EINTR)
            die(1, "sigtimedwait: %s", strerror(errno));
        if (sig == SIGCHLD) {
            reap();
        } else if (sig > 0 && is_stop_on(sig)) {
            if (!st.stop_requested) {
                logv("stop requested by %s", signame(sig));
                start_stop();
            } else {
                next_step();
            }
        } else if (sig > 0) {
            send_to_target(sig, 0);
        }
        reap();
        if (st.wrapper_done)
            break;
        check_target_gone();
        if (st.stop_requested) {
            double now = mono();
            int target_is_wrapper = !opt.target_tracee || st.target <= 0 || st.target == st.wrapper;

            if (!target_is_wrapper && st.target_done) {
                /* The profiled process is gone; the profiler flushes and
                 * exits once its other tracees are gone too.  End those
                 * first, politely then not; the profiler itself only as a
                 * last resort, since killing it loses what it buffered. */
                double since = now - st.target_gone_at;

                if (st.cleanup_step == 0) {
                    if (signal_others(st.wrapper, SIGTERM) > 0)
                        logv("the target is gone; SIGTERM to the profiler's remaining tracees");
                    st.cleanup_step = 1;
                } else if (st.cleanup_step == 1 && since > opt.escalate_grace) {
                    if (signal_others(st.wrapper, SIGKILL) > 0)
                        logv("SIGKILL to the profiler's remaining tracees");
                    st.cleanup_step = 2;
                } else if (st.cleanup_step == 2 && since > 2 * opt.escalate_grace) {
                    logv("profiler still running; SIGTERM to it");
                    kill(st.wrapper, SIGTERM);
                    st.wrapper_killed = 1;
                    st.cleanup_step = 3;
                } else if (st.cleanup_step == 3 && since > 3 * opt.escalate_grace) {
                    kill(st.wrapper, SIGKILL);
                    st.cleanup_step = 4;
                }
            } else if (st.next_deadline > 0 && now >= st.next_deadline) {
                next_step();
            }
        }
    }

    if (WIFEXITED(st.wrapper_status))
        exit_code = WEXITSTATUS(st.wrapper_status);
    else if (WIFSIGNALED(st.wrapper_status))
        exit_code = 128 + WTERMSIG(st.wrapper_status);
    else
        exit_code = 1;
    drain_children(am_pid1);
    write_record(exit_code);
    logv("exiting with %d", exit_code);
    return exit_code;
}
