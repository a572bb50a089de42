/* test_shim.c - the init shim (build/ph-init), run locally as a subprocess,
 * no Docker: exit statuses, signal forwarding in both target modes, the
 * stop protocol (grace, escalation, second request, a profiler that
 * outlives its target), the completion record, reaping of orphans (with a
 * check that the reaping test can fail), and, as root, a run as PID 1 of a
 * new pid namespace with the real strace.
 *
 * Helpers (tests/unit/helpers/shim_*.c): shim_sigrec records the signals it
 * gets, shim_tracer stands in for strace, shim_orphan leaves an orphan.
 * Every wait is a poll against a deadline; a hung shim is killed and fails
 * the test rather than hanging the suite. */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define SHIM "build/ph-init"
#define H(x) "build/tests/helpers/" x
#define WAIT_S 10.0 /* generous: a loaded CI box must not fail these */

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
nap(void)
{
    usleep(10 * 1000);
}

/* test_dir/NAME in one of a few rotating buffers. */
static const char *
tpath(const char *name)
{
    static char bufs[8][600];
    static int k;
    char *b = bufs[k++ % 8];

    snprintf(b, sizeof bufs[0], "%s/%s", test_dir, name);
    return b;
}

/* The last shim started and not yet waited for: a failed assertion leaves
 * it running, and the teardown ends it and the process group of every
 * shim the test started, so nothing holds the suite's output open
 * (children inherit stdout) or outlives the run. */
static pid_t live_pid, live_init, groups[32];
static int n_groups;

static int
shim_teardown(void **state)
{
    if (live_init > 0) { /* PID 1 of a namespace: its death ends all in it */
        kill(live_init, SIGKILL);
        live_init = 0;
    }
    if (live_pid > 0) {
        kill(live_pid, SIGKILL);
        waitpid(live_pid, NULL, 0);
        live_pid = 0;
    }
    /* Even after the shims exited: a broken one may leave its group behind. */
    while (n_groups > 0)
        kill(-groups[--n_groups], SIGKILL);
    return tu_teardown(state);
}

/* Run ARGV; stderr goes to ERRFILE when given. */
static pid_t
spawn_err(char *const argv[], const char *errfile)
{
    pid_t p = fork();

    assert_true(p >= 0);
    if (p == 0) {
        setpgid(0, 0); /* one group per shim: the teardown ends it whole */
        if (errfile) {
            int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0)
                dup2(fd, 2);
        }
        execv(argv[0], argv);
        _exit(99);
    }
    live_pid = p;
    if (n_groups < (int)(sizeof groups / sizeof groups[0]))
        groups[n_groups++] = p;
    return p;
}

static pid_t
spawn(char *const argv[])
{
    return spawn_err(argv, NULL);
}

/* The exit code of P (which must exit, not be killed) within WAIT_S. */
static int
wait_exit(pid_t p)
{
    double until = now() + WAIT_S;
    int st;
    pid_t r;

    while ((r = waitpid(p, &st, WNOHANG)) == 0 && now() < until)
        nap();
    if (r == 0) {
        kill(-p, SIGKILL);
        kill(p, SIGKILL);
        waitpid(p, &st, 0);
        live_pid = 0;
        fail_msg("ph-init (pid %d) did not exit within %.0f s", (int)p, WAIT_S);
    }
    assert_int_equal(r, p);
    if (live_pid == p)
        live_pid = 0;
    if (!WIFEXITED(st))
        fail_msg("ph-init itself was killed by signal %d", WTERMSIG(st));
    return WEXITSTATUS(st);
}

static int
still_running(pid_t p)
{
    return waitpid(p, NULL, WNOHANG) == 0;
}

/* Whether the file at PATH has a line equal to LINE. */
static int
has_line(const char *path, const char *line)
{
    char buf[256];
    FILE *f = fopen(path, "r");
    int found = 0;

    if (f == NULL)
        return 0;
    while (!found && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        found = strcmp(buf, line) == 0;
    }
    fclose(f);
    return found;
}

static int
has_sig(const char *path, int sig)
{
    char line[16];

    snprintf(line, sizeof line, "%d", sig);
    return has_line(path, line);
}

static int
wait_sig(const char *path, int sig)
{
    for (double until = now() + WAIT_S; now() < until; nap())
        if (has_sig(path, sig))
            return 1;
    return 0;
}

static int
wait_exists(const char *path)
{
    for (double until = now() + WAIT_S; now() < until; nap())
        if (access(path, F_OK) == 0)
            return 1;
    return 0;
}

static int
read_pid(const char *path)
{
    char buf[32] = "";
    FILE *f;

    assert_true(wait_exists(path));
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    return (int)strtol(buf, NULL, 10);
}

static json_t *
load_record(const char *path)
{
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);

    if (j == NULL)
        fail_msg("record %s: %s (line %d)", path, e.text, e.line);
    assert_true(json_is_object(j));
    assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
    return j;
}

static const char *
jstr(json_t *j, const char *key)
{
    return json_string_value(json_object_get(j, key));
}

static long long
jint(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);

    if (!json_is_integer(v))
        fail_msg("record: %s is not an integer", key);
    return (long long)json_integer_value(v);
}

/* The signal names in record array KEY joined by ',' ("" when empty). */
static const char *
jsigs(json_t *j, const char *key)
{
    static char out[256];
    json_t *a = json_object_get(j, key), *v;
    size_t i;

    assert_true(json_is_array(a));
    out[0] = '\0';
    json_array_foreach(a, i, v) {
        if (i)
            strncat(out, ",", sizeof out - strlen(out) - 1);
        strncat(out, json_string_value(v) ? json_string_value(v) : "?", sizeof out - strlen(out) - 1);
    }
    return out;
}

/* ------------------------------------------------------------ exit codes */

static void
test_exit_codes_0_to_255(void **state)
{
    (void)state;
    for (int code = 0; code < 256; code++) {
        char cmd[32];
        char *argv[] = { SHIM, "--", "/bin/sh", "-c", cmd, NULL };

        snprintf(cmd, sizeof cmd, "exit %d", code);
        if (wait_exit(spawn(argv)) != code)
            fail_msg("exit code %d was not propagated", code);
    }
}

/* Every signal whose default action ends the process: 128+N. */
static void
test_death_by_signal_is_128_plus_n(void **state)
{
    static const int not_fatal[] = { SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU, SIGCHLD, SIGCONT, SIGURG, SIGWINCH };

    (void)state;
    for (int s = 1; s < 32; s++) {
        char cmd[32];
        char *argv[] = { SHIM, "--", "/bin/sh", "-c", cmd, NULL };
        int skip = 0;

        for (size_t i = 0; i < sizeof not_fatal / sizeof not_fatal[0]; i++)
            skip |= not_fatal[i] == s;
        if (skip)
            continue;
        snprintf(cmd, sizeof cmd, "kill -%d $$", s);
        if (wait_exit(spawn(argv)) != 128 + s)
            fail_msg("death by signal %d was not reported as %d", s, 128 + s);
    }
}

static void
test_exec_failures(void **state)
{
    const char *noexec = tu_write("plain.txt", "not a program\n");
    const char *err = tpath("stderr");
    char *missing[] = { SHIM, "--", "/nonexistent/program", NULL };
    char *missing_path[] = { SHIM, "--", "no-such-program-ph-init-test", NULL };
    char *denied[] = { SHIM, "--", (char *)noexec, NULL };
    char *dir[] = { SHIM, "--", "/tmp", NULL };
    char buf[512];
    FILE *f;

    (void)state;
    assert_int_equal(wait_exit(spawn_err(missing, err)), 127);
    f = fopen(err, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_non_null(strstr(buf, "ph-init: exec /nonexistent/program"));
    assert_int_equal(wait_exit(spawn_err(missing_path, err)), 127);
    chmod(noexec, 0644);
    assert_int_equal(wait_exit(spawn_err(denied, err)), 126);
    assert_int_equal(wait_exit(spawn_err(dir, err)), 126);
}

static void
test_bad_usage_exits_2(void **state)
{
    char *bad[][8] = {
        { SHIM, NULL },
        { SHIM, "--", NULL },
        { SHIM, "--bogus", "--", "/bin/true", NULL },
        { SHIM, "--grace", "soon", "--", "/bin/true", NULL },
        { SHIM, "--grace", "-1", "--", "/bin/true", NULL },
        { SHIM, "--grace", "nan", "--", "/bin/true", NULL },
        { SHIM, "--escalate-grace", "", "--", "/bin/true", NULL },
        { SHIM, "--stop-signal", "SIGNOPE", "--", "/bin/true", NULL },
        { SHIM, "--stop-signal", "0", "--", "/bin/true", NULL },
        { SHIM, "--stop-target", "child", "--", "/bin/true", NULL },
        { SHIM, "--escalate", "", "--", "/bin/true", NULL },
        { SHIM, "--escalate", "TERM,,KILL", "--", "/bin/true", NULL },
        { SHIM, "--stop-on", "SIGKILL", "--", "/bin/true", NULL },
        { SHIM, "--stop-on", "CHLD", "--", "/bin/true", NULL },
        { SHIM, "--record", NULL },
    };
    char *ok[][12] = {
        { SHIM, "--help", NULL },
        { SHIM, "--grace", "0.25", "--escalate-grace", "1e-1", "--stop-signal", "15", "--", "/bin/true", NULL },
        { SHIM, "--escalate", "SIGUSR1,TERM,9", "--stop-on", "sigusr2,HUP", "-v", "/bin/true", NULL },
    };

    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (wait_exit(spawn_err(bad[i], "/dev/null")) != 2)
            fail_msg("bad usage #%zu (%s %s) did not exit 2", i, bad[i][1] ? bad[i][1] : "",
                     bad[i][1] && bad[i][2] ? bad[i][2] : "");
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        pid_t p = fork();

        assert_true(p >= 0);
        if (p == 0) {
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 1);
            dup2(fd, 2);
            execv(ok[i][0], ok[i]);
            _exit(99);
        }
        if (wait_exit(p) != 0)
            fail_msg("good usage #%zu was refused", i);
    }
}

/* ------------------------------------------------------------ forwarding */

static int
is_excluded(int s)
{
    /* Uncatchable, the shim's own reaping signal, the default stop set. */
    return s == SIGKILL || s == SIGSTOP || s == SIGCHLD || s == SIGTERM || s == SIGINT;
}

/* Every catchable signal, fault signals sent with kill() and the job
 * control ones included, reaches the target; then SIGTERM stops it. */
static void
test_forwards_every_catchable_signal(void **state)
{
    const char *rec = tpath("signals"), *ready = tpath("signals.ready"), *record = tpath("ph-exit.json");
    char *argv[] = { SHIM, "--record", (char *)record, "--", H("shim_sigrec"), (char *)rec, "15", NULL };
    pid_t p;
    json_t *j;

    (void)state;
    p = spawn(argv);
    assert_true(wait_exists(ready));
    for (int s = 1; s < 32; s++) {
        if (is_excluded(s))
            continue;
        assert_int_equal(kill(p, s), 0);
        if (!wait_sig(rec, s)) {
            kill(p, SIGKILL);
            fail_msg("signal %d was not forwarded", s);
        }
        assert_true(still_running(p)); /* ph-init did not die of it either */
    }
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_exit(p), 0);
    j = load_record(record);
    assert_true(json_is_true(json_object_get(j, "stop_requested")));
    assert_int_equal(jint(j, "exit_code"), 0);
    assert_true(json_is_null(json_object_get(j, "signal")));
    assert_string_equal(jsigs(j, "escalations"), "");
    json_decref(j);
}

/* In tracee mode the tracer's child gets forwarded and stop signals; the
 * tracer gets none of them. */
static void
test_tracee_mode_signals_the_tracee_not_the_tracer(void **state)
{
    const char *rec = tpath("tracee.sig"), *ready = tpath("tracee.sig.ready"), *tsig = tpath("tracer.sig"),
               *pidfile = tpath("tracee.pid"), *record = tpath("ph-exit.json");
    char *argv[] = { SHIM, "--stop-target", "tracee", "--grace", "5", "--record", (char *)record, "--",
                     H("shim_tracer"), "-s", (char *)tsig, "-p", (char *)pidfile, "--",
                     H("shim_sigrec"), (char *)rec, "15", NULL };
    static const int fwd[] = { SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT, SIGSEGV, SIGTSTP };
    pid_t p;
    json_t *j;
    int tracee;

    (void)state;
    p = spawn(argv);
    assert_true(wait_exists(ready));
    tracee = read_pid(pidfile);
    for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++) {
        assert_int_equal(kill(p, fwd[i]), 0);
        if (!wait_sig(rec, fwd[i]))
            fail_msg("signal %d did not reach the tracee", fwd[i]);
    }
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_exit(p), 0);
    assert_true(has_sig(rec, SIGTERM));
    for (int s = 1; s < 32; s++)
        if (has_sig(tsig, s))
            fail_msg("the tracer got signal %d", s);
    j = load_record(record);
    assert_int_equal(jint(j, "target_pid"), tracee);
    assert_int_not_equal(jint(j, "wrapper_pid"), tracee);
    assert_false(json_is_true(json_object_get(j, "wrapper_killed")));
    assert_string_equal(jsigs(j, "escalations"), "");
    json_decref(j);
}

/* Wrapper mode with a tracer shows why tracee mode exists: the tracer
 * swallows SIGTERM, the tracee never sees it, only escalation ends it. */
static void
test_wrapper_mode_signals_the_tracer(void **state)
{
    const char *rec = tpath("tracee.sig"), *ready = tpath("tracee.sig.ready"), *tsig = tpath("tracer.sig"),
               *record = tpath("ph-exit.json");
    char *argv[] = { SHIM, "--stop-target", "wrapper", "--grace", "1", "--record", (char *)record, "--",
                     H("shim_tracer"), "-s", (char *)tsig, "--", H("shim_sigrec"), (char *)rec, "15", NULL };
    pid_t p;
    json_t *j;

    (void)state;
    p = spawn(argv);
    assert_true(wait_exists(ready));
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_true(wait_sig(tsig, SIGTERM));
    /* Within the 1 s grace the tracee has nothing (it gets SIGTERM later,
     * from the drain of leftovers, once the tracer was killed). */
    assert_false(has_sig(rec, SIGTERM));
    assert_int_equal(wait_exit(p), 128 + SIGKILL);
    j = load_record(record);
    assert_int_equal(jint(j, "target_pid"), jint(j, "wrapper_pid"));
    assert_string_equal(jsigs(j, "escalations"), "SIGKILL");
    assert_string_equal(jstr(j, "signal"), "SIGKILL");
    json_decref(j);
}

/* A tracee-mode wrapper without children: the wrapper is the target. */
static void
test_tracee_mode_falls_back_to_the_wrapper(void **state)
{
    const char *rec = tpath("signals"), *ready = tpath("signals.ready"), *record = tpath("ph-exit.json");
    char *argv[] = { SHIM, "--stop-target", "tracee", "--record", (char *)record, "--", H("shim_sigrec"),
                     (char *)rec, "15", NULL };
    pid_t p;
    json_t *j;

    (void)state;
    p = spawn(argv);
    assert_true(wait_exists(ready));
    assert_int_equal(kill(p, SIGUSR1), 0);
    assert_true(wait_sig(rec, SIGUSR1));
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_exit(p), 0);
    j = load_record(record);
    assert_int_equal(jint(j, "target_pid"), jint(j, "wrapper_pid"));
    json_decref(j);
}

/* strace 6 forks short-lived children to probe ptrace before it starts the
 * program.  Taking such a probe for the tracee sent the stop signal, and
 * then the SIGKILL of the escalation, to strace itself: its log lost the
 * tail.  Here the probe lives until the first forwarded signal, so a shim
 * that takes it for the tracee does so every time. */
static void
test_tracee_mode_skips_the_tracers_probe_children(void **state)
{
    const char *rec = tpath("tracee.sig"), *ready = tpath("tracee.sig.ready"), *tsig = tpath("tracer.sig"),
               *pidfile = tpath("tracee.pid"), *probefile = tpath("probe.pid"), *record = tpath("ph-exit.json");
    char *argv[] = { SHIM, "--stop-target", "tracee", "--grace", "100", "--record", (char *)record, "--",
                     H("shim_tracer"), "-s", (char *)tsig, "-p", (char *)pidfile, "-P", (char *)probefile, "--",
                     H("shim_sigrec"), (char *)rec, "15", NULL };
    pid_t p;
    json_t *j;
    int tracee;

    (void)state;
    p = spawn(argv);
    read_pid(probefile);
    /* Forwarded to the stop target: the tracer, while only a probe runs. */
    assert_int_equal(kill(p, SIGUSR1), 0);
    assert_true(wait_exists(ready));
    tracee = read_pid(pidfile);
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_exit(p), 0);
    assert_true(has_sig(rec, SIGTERM));
    assert_true(has_sig(tsig, SIGUSR1));
    assert_false(has_sig(tsig, SIGTERM));
    j = load_record(record);
    assert_int_equal(jint(j, "target_pid"), tracee);
    assert_string_equal(jsigs(j, "escalations"), "");
    json_decref(j);
}

/* --stop-signal takes SIGUSR2, USR2 and 12 alike; --stop-on moves the stop
 * request to another signal and makes SIGTERM an ordinary forward. */
static void
test_stop_signal_and_stop_on(void **state)
{
    const char *names[] = { "SIGUSR2", "USR2", "12" };

    (void)state;
    for (size_t i = 0; i < 3; i++) {
        char file[32];
        const char *rec, *record = tpath("ph-exit.json");
        char ready[700];
        pid_t p;
        json_t *j;

        snprintf(file, sizeof file, "sig%zu", i);
        rec = tpath(file);
        snprintf(ready, sizeof ready, "%s.ready", rec);
        char *argv[] = { SHIM, "--stop-signal", (char *)names[i], "--record", (char *)record, "--",
                         H("shim_sigrec"), (char *)rec, "12", NULL };
        p = spawn(argv);
        assert_true(wait_exists(ready));
        assert_int_equal(kill(p, SIGINT), 0); /* a stop request too, by default */
        assert_int_equal(wait_exit(p), 0);
        assert_true(has_sig(rec, SIGUSR2));
        assert_false(has_sig(rec, SIGINT));
        j = load_record(record);
        assert_string_equal(jstr(j, "stop_signal"), "SIGUSR2");
        assert_true(json_is_true(json_object_get(j, "stop_requested")));
        json_decref(j);
    }
    {
        const char *rec = tpath("custom"), *ready = tpath("custom.ready"), *record = tpath("custom.json");
        char *argv[] = { SHIM, "--stop-on", "SIGUSR1", "--record", (char *)record, "--", H("shim_sigrec"),
                         (char *)rec, "15", NULL };
        pid_t p;
        json_t *j;

        p = spawn(argv);
        assert_true(wait_exists(ready));
        assert_int_equal(kill(p, SIGINT), 0); /* no longer a stop request */
        assert_true(wait_sig(rec, SIGINT));
        assert_int_equal(kill(p, SIGUSR1), 0);
        assert_int_equal(wait_exit(p), 0);
        assert_true(has_sig(rec, SIGTERM));
        assert_false(has_sig(rec, SIGUSR1));
        j = load_record(record);
        assert_true(json_is_true(json_object_get(j, "stop_requested")));
        json_decref(j);
    }
}

/* ------------------------------------------------------ the stop protocol */

/* A target that stops on the stop signal is not made to wait the grace. */
static void
test_stop_within_grace_does_not_escalate(void **state)
{
    const char *record = tpath("ph-exit.json"), *pidfile = tpath("bg.pid");
    char cmd[800];
    char *argv[] = { SHIM, "--grace", "30", "--record", (char *)record, "--", "/bin/sh", "-c", cmd, NULL };
    double t0;
    pid_t p;
    json_t *j;
    int bg;

    (void)state;
    /* sh dies of SIGTERM; its background sleep is left to the drain. */
    snprintf(cmd, sizeof cmd, "sleep 100 & echo $! > %s.tmp; mv %s.tmp %s; wait", pidfile, pidfile, pidfile);
    p = spawn(argv);
    bg = read_pid(pidfile);
    t0 = now();
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_exit(p), 128 + SIGTERM);
    assert_true(now() - t0 < 5);
    assert_int_equal(kill(bg, 0), -1); /* the leftover was ended and reaped */
    j = load_record(record);
    assert_string_equal(jstr(j, "signal"), "SIGTERM");
    assert_int_equal(jint(j, "exit_code"), 128 + SIGTERM);
    assert_string_equal(jsigs(j, "escalations"), "");
    assert_true(json_real_value(json_object_get(j, "stop_seconds")) < 5);
    json_decref(j);
}

static void
test_escalates_after_the_grace(void **state)
{
    const char *rec = tpath("signals"), *ready = tpath("signals.ready"), *record = tpath("ph-exit.json");
    double t0;
    pid_t p;
    json_t *j;

    (void)state;
    {
        /* Ignores SIGTERM, exits on the first escalation step. */
        char *argv[] = { SHIM, "--grace", "0.3", "--escalate", "SIGUSR1,SIGKILL", "--escalate-grace", "0.3",
                         "--record", (char *)record, "--", H("shim_sigrec"), (char *)rec, "10", "ignore-term",
                         NULL };
        p = spawn(argv);
        assert_true(wait_exists(ready));
        t0 = now();
        assert_int_equal(kill(p, SIGTERM), 0);
        assert_int_equal(wait_exit(p), 0);
        assert_true(now() - t0 >= 0.3); /* not before the grace */
        assert_true(has_sig(rec, SIGUSR1));
        j = load_record(record);
        assert_string_equal(jsigs(j, "escalations"), "SIGUSR1");
        assert_true(json_real_value(json_object_get(j, "stop_seconds")) >= 0.3);
        json_decref(j);
    }
    unlink(ready);
    {
        /* Survives every catchable step: the chain runs to its end. */
        char *argv[] = { SHIM, "--grace", "0.2", "--escalate", "USR1,HUP,KILL", "--escalate-grace", "0.2",
                         "--record", (char *)record, "--", H("shim_sigrec"), (char *)rec, "0", "ignore-term",
                         NULL };
        p = spawn(argv);
        assert_true(wait_exists(ready));
        t0 = now();
        assert_int_equal(kill(p, SIGTERM), 0);
        assert_int_equal(wait_exit(p), 128 + SIGKILL);
        assert_true(now() - t0 >= 0.6);
        j = load_record(record);
        assert_string_equal(jsigs(j, "escalations"), "SIGUSR1,SIGHUP,SIGKILL");
        assert_string_equal(jstr(j, "signal"), "SIGKILL");
        assert_int_equal(jint(j, "exit_code"), 128 + SIGKILL);
        json_decref(j);
    }
}

/* A second stop request does not wait out the 30 s grace. */
static void
test_second_stop_request_escalates_at_once(void **state)
{
    const char *rec = tpath("signals"), *ready = tpath("signals.ready"), *record = tpath("ph-exit.json");
    char *argv[] = { SHIM, "--grace", "30", "--record", (char *)record, "--", H("shim_sigrec"), (char *)rec, "0",
                     "ignore-term", NULL };
    double t0;
    pid_t p;
    json_t *j;

    (void)state;
    p = spawn(argv);
    assert_true(wait_exists(ready));
    t0 = now();
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(kill(p, SIGINT), 0); /* a different signal: the two cannot merge */
    assert_int_equal(wait_exit(p), 128 + SIGKILL);
    assert_true(now() - t0 < 5);
    j = load_record(record);
    assert_string_equal(jsigs(j, "escalations"), "SIGKILL");
    json_decref(j);
}

/* The tracee ended but the profiler does not: after escalate-grace it gets
 * SIGTERM, then SIGKILL, and the record says so. */
static void
test_profiler_outliving_its_target_is_ended(void **state)
{
    const char *rec = tpath("tracee.sig"), *ready = tpath("tracee.sig.ready"), *tsig = tpath("tracer.sig"),
               *record = tpath("ph-exit.json");
    char *argv[] = { SHIM, "--stop-target", "tracee", "--escalate-grace", "0.3", "--record", (char *)record, "--",
                     H("shim_tracer"), "-H", "-s", (char *)tsig, "--", H("shim_sigrec"), (char *)rec, "15", NULL };
    double t0;
    pid_t p;
    json_t *j;

    (void)state;
    p = spawn(argv);
    assert_true(wait_exists(ready));
    t0 = now();
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_exit(p), 128 + SIGKILL);
    assert_true(now() - t0 >= 0.6);
    assert_true(has_sig(rec, SIGTERM));
    assert_true(has_sig(tsig, SIGTERM));
    j = load_record(record);
    assert_true(json_is_true(json_object_get(j, "wrapper_killed")));
    assert_string_equal(jsigs(j, "wrapper_signals"), "SIGTERM,SIGKILL");
    assert_string_equal(jsigs(j, "escalations"), "");
    assert_string_equal(jstr(j, "signal"), "SIGKILL");
    json_decref(j);
}

/* Whether the real strace runs here (ptrace may be forbidden). */
static int
strace_works(void)
{
    return system("strace -o /dev/null /bin/true >/dev/null 2>&1") == 0;
}

/* With the real strace -f: the target's own children keep strace tracing
 * after the target died; the shim ends them so strace exits by itself,
 * long before escalate-grace. */
static void
test_strace_exits_once_the_service_leftovers_end(void **state)
{
    const char *rec = tpath("signals"), *ready = tpath("signals.ready"), *record = tpath("ph-exit.json"),
               *log = tpath("strace.log");
    char cmd[800];
    char *argv[] = { SHIM, "--stop-target", "tracee", "--escalate-grace", "8", "--record", (char *)record, "--",
                     "strace", "-f", "-o", (char *)log, "--", "/bin/sh", "-c", cmd, NULL };
    double t0;
    pid_t p;
    json_t *j;

    (void)state;
    if (!strace_works())
        skip();
    snprintf(cmd, sizeof cmd, "sleep 100 & exec %s %s 15", H("shim_sigrec"), rec);
    p = spawn(argv);
    assert_true(wait_exists(ready));
    t0 = now();
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_exit(p), 0);
    assert_true(now() - t0 < 6);
    j = load_record(record);
    assert_false(json_is_true(json_object_get(j, "wrapper_killed")));
    assert_true(jint(j, "leftovers_signalled") >= 1);
    json_decref(j);
}

/* ------------------------------------------------------------- the record */

static int
is_utc_ms(const char *s)
{
    /* 2026-01-02T03:04:05.678Z */
    static const char pat[] = "dddd-dd-ddTdd:dd:dd.dddZ";

    if (s == NULL || strlen(s) != sizeof pat - 1)
        return 0;
    for (size_t i = 0; pat[i]; i++)
        if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
            return 0;
    return 1;
}

static void
test_record_contents_escaping_and_dir_mode(void **state)
{
    char record[700], dir[700], tmp[720];
    char weird[] = "q\"b\\s\nn\tt\x01\x1f" "caf\xc3\xa9 \xff!";
    const char *weird_as_json = "q\"b\\s\nn\tt\x01\x1f" "caf\xc3\xa9 \xef\xbf\xbd!";
    char *argv[] = { SHIM, "--record", record, "--", "/bin/sh", "-c", "exit 7", weird, "", NULL };
    struct stat sb;
    mode_t old;
    json_t *j, *cmd;
    pid_t p;

    (void)state;
    snprintf(dir, sizeof dir, "%s/out/a/b", test_dir);
    snprintf(record, sizeof record, "%s/ph-exit.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", record);
    old = umask(077);
    p = spawn(argv);
    umask(old);
    assert_int_equal(wait_exit(p), 7);
    assert_int_equal(stat(dir, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0777);
    snprintf(dir, sizeof dir, "%s/out", test_dir);
    assert_int_equal(stat(dir, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0777);
    assert_int_equal(access(tmp, F_OK), -1);
    j = load_record(record);
    cmd = json_object_get(j, "command");
    assert_int_equal(json_array_size(cmd), 5);
    assert_string_equal(json_string_value(json_array_get(cmd, 0)), "/bin/sh");
    assert_string_equal(json_string_value(json_array_get(cmd, 2)), "exit 7");
    assert_string_equal(json_string_value(json_array_get(cmd, 3)), weird_as_json);
    assert_string_equal(json_string_value(json_array_get(cmd, 4)), "");
    assert_int_equal(jint(j, "exit_code"), 7);
    assert_true(json_is_null(json_object_get(j, "signal")));
    assert_true(json_is_false(json_object_get(j, "stop_requested")));
    assert_true(json_is_null(json_object_get(j, "stop_requested_at")));
    assert_true(json_is_null(json_object_get(j, "stop_seconds")));
    assert_true(json_is_false(json_object_get(j, "wrapper_killed")));
    assert_string_equal(jstr(j, "stop_signal"), "SIGTERM");
    assert_true(jint(j, "wrapper_pid") > 0);
    assert_true(is_utc_ms(jstr(j, "started_at")));
    assert_true(is_utc_ms(jstr(j, "ended_at")));
    assert_true(strcmp(jstr(j, "started_at"), jstr(j, "ended_at")) <= 0);
    assert_true(json_is_number(json_object_get(j, "run_seconds")));
    assert_true(json_number_value(json_object_get(j, "run_seconds")) >= 0);
    json_decref(j);
}

/* ------------------------------------------- a hostile artifacts dir */

/* The artifacts dir is writable by the service: whatever it plants there
 * must neither block ph-init nor redirect the record.  Each test runs
 * `ph-init --record D/ph-exit.json -- sh -c SCRIPT` (D = test_dir/art,
 * $D in SCRIPT), SCRIPT being the service that plants, then exiting 3;
 * ph-init's stderr goes to test_dir/stderr. */
static const char *
art(const char *name)
{
    static char bufs[4][700];
    static int k;
    char *b = bufs[k++ % 4];

    snprintf(b, sizeof bufs[0], "%s/art%s%s", test_dir, name[0] ? "/" : "", name);
    return b;
}

static int
run_hostile(const char *script)
{
    char record[700], env[800];
    char *argv[] = { SHIM, "--record", record, "--", "/bin/sh", "-c", (char *)script, NULL };

    snprintf(record, sizeof record, "%s", art("ph-exit.json"));
    snprintf(env, sizeof env, "%s", art(""));
    setenv("D", env, 1);
    setenv("T", test_dir, 1);
    return wait_exit(spawn_err(argv, tpath("stderr")));
}

/* Whether PATH is a regular file holding a record with exit_code 3. */
static int
is_record(const char *path)
{
    struct stat sb;
    json_t *j;
    int ok;

    if (lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1)
        return 0;
    j = load_record(path);
    ok = jint(j, "exit_code") == 3;
    json_decref(j);
    return ok;
}

static int
file_has(const char *path, const char *text)
{
    char buf[4096] = "";
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, text) != NULL;
}

/* How many entries of test_dir/art begin with PREFIX. */
static int
count_entries(const char *prefix)
{
    DIR *d = opendir(art(""));
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* A FIFO at the temporary name made ph-init block in open() for ever. */
static void
test_record_not_blocked_by_a_fifo(void **state)
{
    (void)state;
    assert_int_equal(run_hostile("mkfifo \"$D/ph-exit.json.tmp\" \"$D/ph-exit.json\" && exit 3"), 3);
    assert_true(is_record(art("ph-exit.json")));
}

/* A symlink or a hard link at either name: the record goes neither
 * through it nor to what it points at. */
static void
test_record_not_written_through_planted_links(void **state)
{
    const char *victim = tu_write("victim", "the service's target\n");
    static const char *const scripts[] = {
        "ln -s \"$T/victim\" \"$D/ph-exit.json.tmp\" && exit 3",
        "ln \"$T/victim\" \"$D/ph-exit.json.tmp\" && exit 3",
        "ln -s \"$T/victim\" \"$D/ph-exit.json\" && exit 3",
        "ln -s \"$T/nonexistent\" \"$D/ph-exit.json.tmp\" && exit 3",
        "ln -s \"$T/victim\" \"$D/ph-exit.json.tmp\" && ln -s \"$T/victim\" \"$D/ph-exit.json\" && exit 3",
    };

    (void)state;
    for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
        char cmd[800];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", art(""));
        assert_int_equal(system(cmd), 0);
        if (run_hostile(scripts[i]) != 3)
            fail_msg("case %zu: wrong exit status", i);
        if (!file_has(victim, "the service's target\n") || access(tpath("nonexistent"), F_OK) == 0)
            fail_msg("case %zu (%s): the record was written through the link", i, scripts[i]);
        if (!is_record(art("ph-exit.json")))
            fail_msg("case %zu (%s): no record in place", i, scripts[i]);
    }
}

/* A directory at the record's name is moved aside, not lost, and the
 * record takes its place. */
static void
test_record_replaces_a_planted_directory(void **state)
{
    char moved[700];
    DIR *d;
    struct dirent *e;
    int found = 0;

    (void)state;
    assert_int_equal(run_hostile("mkdir -p \"$D/ph-exit.json/sub\" && echo data > \"$D/ph-exit.json/sub/f\" && exit 3"),
                     3);
    assert_true(is_record(art("ph-exit.json")));
    assert_true(file_has(tpath("stderr"), "ph-exit.json"));
    d = opendir(art(""));
    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "ph-exit.json.", 13) == 0) {
            snprintf(moved, sizeof moved, "%s/%s/sub/f", art(""), e->d_name);
            found |= file_has(moved, "data\n");
        }
    closedir(d);
    assert_true(found);
}

/* The service replaces the artifacts dir by a symlink to another: the
 * record stays in the directory ph-init made, and says so on stderr. */
static void
test_record_dir_replaced_by_a_symlink(void **state)
{
    char moved[700];

    (void)state;
    assert_int_equal(mkdir(tpath("elsewhere"), 0755), 0);
    assert_int_equal(run_hostile("mv \"$D\" \"$T/moved\" && ln -s \"$T/elsewhere\" \"$D\" && exit 3"), 3);
    assert_int_equal(access(tpath("elsewhere/ph-exit.json"), F_OK), -1);
    snprintf(moved, sizeof moved, "%s/moved/ph-exit.json", test_dir);
    assert_true(is_record(moved));
    assert_true(file_has(tpath("stderr"), "moved or replaced"));
}

/* Thousands of entries at every name a simple scheme would try next. */
static void
test_record_despite_many_planted_names(void **state)
{
    char path[700];

    (void)state;
    assert_int_equal(mkdir(art(""), 0777), 0);
    assert_int_equal(mkdir(art("ph-exit.json.tmp"), 0777), 0);
    for (int i = 0; i < 5000; i++) {
        snprintf(path, sizeof path, "%s/ph-exit.json.tmp.%d", art(""), i);
        assert_int_equal(mkdir(path, 0777), 0);
        snprintf(path, sizeof path, "%s/ph-exit.json.tmp%d", art(""), i);
        assert_int_equal(mkdir(path, 0777), 0);
    }
    assert_int_equal(run_hostile("exit 3"), 3);
    assert_true(is_record(art("ph-exit.json")));
    assert_int_equal(count_entries("ph-exit.json"), 1 + 1 + 2 * 5000); /* no temporary left */
}

/* A full disk: the record cannot be written; ph-init says so, leaves no
 * partial file, and still exits with the command's status.  As root, on
 * a tiny tmpfs in a mount namespace of its own. */
static void
test_record_on_a_full_disk(void **state)
{
    char cmd[2000];
    const char *mnt = tpath("full");
    int rc;

    (void)state;
    if (geteuid() != 0 || system("unshare --mount true >/dev/null 2>&1") != 0)
        skip();
    assert_int_equal(mkdir(mnt, 0755), 0);
    snprintf(cmd, sizeof cmd,
             "unshare --mount sh -c 'mount -t tmpfs -o size=64k none %s || exit 90; "
             "dd if=/dev/zero of=%s/fill bs=4k >/dev/null 2>&1; "
             "%s --record %s/ph-exit.json -- /bin/sh -c \"exit 3\" 2> %s; rc=$?; "
             "ls -A %s > %s; exit $rc'",
             mnt, mnt, SHIM, mnt, tpath("stderr"), mnt, tpath("listing"));
    rc = system(cmd);
    assert_true(WIFEXITED(rc));
    if (WEXITSTATUS(rc) == 90)
        skip();
    assert_int_equal(WEXITSTATUS(rc), 3);
    assert_true(file_has(tpath("stderr"), "cannot write the record"));
    assert_true(file_has(tpath("stderr"), "No space left on device"));
    assert_true(file_has(tpath("listing"), "fill\n"));
    assert_false(file_has(tpath("listing"), "ph-exit"));
}

/* ---------------------------------------------------------------- reaping */

enum orphan_fate { ORPHAN_REAPED, ORPHAN_ZOMBIE, ORPHAN_RUNNING };

static char
proc_state(int pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

/* The shim runs a command that leaves an orphan which exits after 0.2 s
 * while the shim's wrapper still runs for seconds.  What became of the
 * orphan 1.5 s later?  Also reports whether the shim was still running
 * then, so a reap by the final drain cannot pass for reaping. */
static enum orphan_fate
orphan_fate(int *orphan, int *shim_alive)
{
    const char *pidfile = tpath("orphan.pid");
    char cmd[800];
    char *argv[] = { SHIM, "--", "/bin/sh", "-c", cmd, NULL };
    enum orphan_fate fate = ORPHAN_RUNNING;
    pid_t p;
    int g;

    unlink(pidfile);
    snprintf(cmd, sizeof cmd, "%s %s 200; exec sleep 3", H("shim_orphan"), pidfile);
    p = spawn(argv);
    g = read_pid(pidfile);
    for (double until = now() + 1.5; now() < until; nap()) {
        char s = proc_state(g);

        fate = s == 0 ? ORPHAN_REAPED : s == 'Z' ? ORPHAN_ZOMBIE : ORPHAN_RUNNING;
        if (fate == ORPHAN_REAPED)
            break;
    }
    *orphan = g;
    *shim_alive = still_running(p);
    kill(p, SIGTERM);
    assert_int_equal(wait_exit(p), 128 + SIGTERM);
    return fate;
}

static void
test_reaps_orphans_as_subreaper(void **state)
{
    int g, alive;

    (void)state;
    assert_int_equal(orphan_fate(&g, &alive), ORPHAN_REAPED);
    assert_true(alive);
}

/* The companion: the same check, with the shim not a subreaper and this
 * process one that does not reap, sees the zombie.  So the check above can
 * fail, and passes only because the shim reaps. */
static void
test_reaping_check_can_fail(void **state)
{
    enum orphan_fate fate;
    int g, alive;

    (void)state;
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    setenv("PH_INIT_NO_SUBREAPER", "1", 1);
    fate = orphan_fate(&g, &alive);
    unsetenv("PH_INIT_NO_SUBREAPER");
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    waitpid(g, NULL, 0); /* it was ours to reap */
    assert_int_equal(fate, ORPHAN_ZOMBIE);
    assert_true(alive);
}

/* --------------------------------------------------------------- as PID 1 */

/* `unshare --pid --fork --mount-proc ph-init -- strace -f -o LOG -- sleep
 * 100`, then SIGTERM to ph-init: the tracee dies of SIGTERM, strace writes
 * its last line and exits, the record is written. */
static void
test_as_pid1_with_strace(void **state)
{
    const char *record = tpath("rec/ph-exit.json"), *log = tpath("strace.log");
    char *argv[] = { "/usr/bin/unshare", "--pid", "--fork", "--mount-proc", SHIM, "--stop-target", "tracee",
                     "--grace", "5", "--record", (char *)record, "--", "strace", "-f", "-o", (char *)log, "--",
                     "sleep", "100", NULL };
    char path[64], buf[4096], last[512] = "";
    pid_t u, init = 0;
    int sleeping = 0;
    json_t *j;
    FILE *f;

    (void)state;
    if (geteuid() != 0 || access(argv[0], X_OK) != 0 || !strace_works() ||
        system("/usr/bin/unshare --pid --fork --mount-proc /bin/true >/dev/null 2>&1") != 0)
        skip();
    u = spawn_err(argv, tpath("stderr"));
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)u, (int)u);
    for (double until = now() + WAIT_S; now() < until && init <= 0; nap()) {
        f = fopen(path, "r");
        if (f) {
            if (fgets(buf, sizeof buf, f))
                init = (pid_t)strtol(buf, NULL, 10);
            fclose(f);
        }
    }
    assert_true(init > 0);
    live_init = init;
    /* Wait until sleep runs under strace: its nanosleep is in the log. */
    for (double until = now() + WAIT_S; now() < until && !sleeping; nap()) {
        f = fopen(log, "r");
        if (f == NULL)
            continue;
        while (!sleeping && fgets(buf, sizeof buf, f))
            sleeping = strstr(buf, "nanosleep(") != NULL;
        fclose(f);
    }
    assert_true(sleeping);
    assert_int_equal(kill(init, SIGTERM), 0);
    assert_int_equal(wait_exit(u), 128 + SIGTERM);
    live_init = 0;
    f = fopen(log, "r");
    assert_non_null(f);
    while (fgets(buf, sizeof buf, f))
        snprintf(last, sizeof last, "%s", buf);
    fclose(f);
    if (strstr(last, "+++ killed by SIGTERM +++") == NULL)
        fail_msg("strace log ends with: %s", last);
    j = load_record(record);
    assert_int_equal(jint(j, "wrapper_pid"), 2); /* strace, the child of PID 1 */
    assert_int_not_equal(jint(j, "target_pid"), 2);
    assert_string_equal(jstr(j, "signal"), "SIGTERM");
    assert_string_equal(jsigs(j, "escalations"), "");
    assert_true(json_real_value(json_object_get(j, "stop_seconds")) < 5);
    json_decref(j);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes_0_to_255),
        cmocka_unit_test(test_death_by_signal_is_128_plus_n),
        cmocka_unit_test_setup_teardown(test_exec_failures, tu_setup, shim_teardown),
        cmocka_unit_test(test_bad_usage_exits_2),
        cmocka_unit_test_setup_teardown(test_forwards_every_catchable_signal, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_tracee_mode_signals_the_tracee_not_the_tracer, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_wrapper_mode_signals_the_tracer, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_tracee_mode_falls_back_to_the_wrapper, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_tracee_mode_skips_the_tracers_probe_children, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_stop_signal_and_stop_on, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_stop_within_grace_does_not_escalate, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_escalates_after_the_grace, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_second_stop_request_escalates_at_once, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_profiler_outliving_its_target_is_ended, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_strace_exits_once_the_service_leftovers_end, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_contents_escaping_and_dir_mode, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_not_blocked_by_a_fifo, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_not_written_through_planted_links, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_replaces_a_planted_directory, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_dir_replaced_by_a_symlink, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_despite_many_planted_names, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_on_a_full_disk, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_reaps_orphans_as_subreaper, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_reaping_check_can_fail, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_as_pid1_with_strace, tu_setup, shim_teardown),
    };
    return cmocka_run_group_tests_name("shim", tests, NULL, NULL);
}
