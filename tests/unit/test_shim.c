/* test_shim.c - the init shim (build/ph-init), run locally as a subprocess,
 * no Docker: exit statuses, signal forwarding in both target modes, the
 * stop protocol (grace, escalation, second request, a profiler that
 * outlives its target), reaping of orphans (with a check that the reaping
 * test can fail), and, as root, a run as PID 1 of a new pid namespace with
 * the real strace.  The completion record: test_shim_record.c.
 *
 * Helpers (tests/unit/helpers/shim_*): shim_test.h is the shared test
 * code; shim_sigrec records the signals it gets, shim_tracer stands in for
 * strace, shim_orphan leaves an orphan, shim_service plays a service.
 * Every wait is a poll against a deadline; a hung shim is killed and fails
 * the test rather than hanging the suite. */
#include "helpers/shim_test.h"

#include <sys/prctl.h>

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
        { SHIM, "--record", "", "--", "/bin/true", NULL },
        { SHIM, "--record", "/tmp/dir/", "--", "/bin/true", NULL },
        { SHIM, "--record", "/tmp/..", "--", "/bin/true", NULL },
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
    char *argv[] = { SHIM, "--stop-target", "tracee", "--grace", "100", "--record", (char *)record, "--",
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
 * swallows SIGTERM, the tracee never sees it, only escalation (here at
 * once, by a second stop request) ends it. */
static void
test_wrapper_mode_signals_the_tracer(void **state)
{
    const char *rec = tpath("tracee.sig"), *ready = tpath("tracee.sig.ready"), *tsig = tpath("tracer.sig"),
               *record = tpath("ph-exit.json");
    char *argv[] = { SHIM, "--stop-target", "wrapper", "--grace", "100", "--record", (char *)record, "--",
                     H("shim_tracer"), "-s", (char *)tsig, "--", H("shim_sigrec"), (char *)rec, "15", NULL };
    pid_t p;
    json_t *j;

    (void)state;
    p = spawn(argv);
    assert_true(wait_exists(ready));
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_true(wait_sig(tsig, SIGTERM));
    /* Within the grace the tracee has nothing (it gets SIGTERM later,
     * from the drain of leftovers, once the tracer was killed). */
    assert_false(has_sig(rec, SIGTERM));
    assert_int_equal(kill(p, SIGINT), 0);
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

/* A target that stops on the stop signal is not made to wait the grace
 * (100 s: were it waited out, wait_exit would fail first). */
static void
test_stop_within_grace_does_not_escalate(void **state)
{
    const char *record = tpath("ph-exit.json"), *pidfile = tpath("bg.pid");
    char cmd[800];
    char *argv[] = { SHIM, "--grace", "100", "--record", (char *)record, "--", "/bin/sh", "-c", cmd, NULL };
    pid_t p;
    json_t *j;
    int bg;

    (void)state;
    /* sh dies of SIGTERM; its background sleep is left to the drain. */
    snprintf(cmd, sizeof cmd, "sleep 100 & echo $! > %s.tmp; mv %s.tmp %s; wait", pidfile, pidfile, pidfile);
    p = spawn(argv);
    bg = read_pid(pidfile);
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_exit(p), 128 + SIGTERM);
    assert_int_equal(kill(bg, 0), -1); /* the leftover was ended and reaped */
    j = load_record(record);
    assert_string_equal(jstr(j, "signal"), "SIGTERM");
    assert_int_equal(jint(j, "exit_code"), 128 + SIGTERM);
    assert_string_equal(jsigs(j, "escalations"), "");
    json_decref(j);
}

/* Escalation waits the grace, then escalate-grace between its steps: the
 * two differ here (the tests once had them equal, so swapping them went
 * unseen).  Lower bounds only: a step can never come early. */
static void
test_escalates_after_the_grace(void **state)
{
    const char *rec = tpath("signals"), *ready = tpath("signals.ready"), *record = tpath("ph-exit.json");
    double t0;
    pid_t p;
    json_t *j;

    (void)state;
    {
        /* Ignores SIGTERM, exits on the first escalation step, which
         * comes after the 1 s grace; the 100 s step after it never does. */
        char *argv[] = { SHIM, "--grace", "1", "--escalate", "SIGUSR1,SIGKILL", "--escalate-grace", "100",
                         "--record", (char *)record, "--", H("shim_sigrec"), (char *)rec, "10", "ignore-term",
                         NULL };
        p = spawn(argv);
        assert_true(wait_exists(ready));
        t0 = now();
        assert_int_equal(kill(p, SIGTERM), 0);
        assert_int_equal(wait_exit(p), 0);
        assert_true(now() - t0 >= 1.0); /* not before the grace */
        assert_true(has_sig(rec, SIGUSR1));
        j = load_record(record);
        assert_string_equal(jsigs(j, "escalations"), "SIGUSR1");
        assert_true(json_real_value(json_object_get(j, "stop_seconds")) >= 1.0);
        json_decref(j);
    }
    unlink(ready);
    {
        /* Survives every catchable step: the chain runs to its end, a
         * 0.1 s grace then two 0.5 s escalate-graces. */
        char *argv[] = { SHIM, "--grace", "0.1", "--escalate", "USR1,HUP,KILL", "--escalate-grace", "0.5",
                         "--record", (char *)record, "--", H("shim_sigrec"), (char *)rec, "0", "ignore-term",
                         NULL };
        p = spawn(argv);
        assert_true(wait_exists(ready));
        t0 = now();
        assert_int_equal(kill(p, SIGTERM), 0);
        assert_int_equal(wait_exit(p), 128 + SIGKILL);
        assert_true(now() - t0 >= 1.1);
        j = load_record(record);
        assert_string_equal(jsigs(j, "escalations"), "SIGUSR1,SIGHUP,SIGKILL");
        assert_string_equal(jstr(j, "signal"), "SIGKILL");
        assert_int_equal(jint(j, "exit_code"), 128 + SIGKILL);
        assert_true(json_real_value(json_object_get(j, "stop_seconds")) >= 1.1);
        assert_true(json_real_value(json_object_get(j, "grace_seconds")) == 0.1);
        assert_true(json_real_value(json_object_get(j, "escalate_grace_seconds")) == 0.5);
        json_decref(j);
    }
}

/* Without options: a 30 s grace (the target is left alone meanwhile),
 * SIGKILL as the one escalation, 10 s between steps. */
static void
test_default_grace_and_escalation(void **state)
{
    const char *rec = tpath("signals"), *ready = tpath("signals.ready"), *record = tpath("ph-exit.json");
    char *argv[] = { SHIM, "--record", (char *)record, "--", H("shim_sigrec"), (char *)rec, "0", "ignore-term",
                     NULL };
    pid_t p;
    json_t *j;

    (void)state;
    p = spawn(argv);
    assert_true(wait_exists(ready));
    assert_int_equal(kill(p, SIGTERM), 0);
    /* Half a second into the grace the target still runs: nothing
     * escalated.  (A lower bound again: correct code passes however slow
     * the machine is.) */
    for (double until = now() + 0.5; now() < until; nap())
        assert_true(still_running(p));
    assert_int_equal(kill(p, SIGINT), 0); /* the second request: escalate now */
    assert_int_equal(wait_exit(p), 128 + SIGKILL);
    j = load_record(record);
    assert_string_equal(jsigs(j, "escalations"), "SIGKILL");
    assert_string_equal(jstr(j, "stop_target"), "wrapper");
    assert_true(json_real_value(json_object_get(j, "grace_seconds")) == 30);
    assert_true(json_real_value(json_object_get(j, "escalate_grace_seconds")) == 10);
    json_decref(j);
}

/* stop_seconds runs from the stop request, run_seconds from the start. */
static void
test_stop_seconds_counts_from_the_stop_request(void **state)
{
    const char *rec = tpath("signals"), *ready = tpath("signals.ready"), *record = tpath("ph-exit.json");
    char *argv[] = { SHIM, "--record", (char *)record, "--", H("shim_sigrec"), (char *)rec, "15", NULL };
    double run, stop;
    pid_t p;
    json_t *j;

    (void)state;
    p = spawn(argv);
    assert_true(wait_exists(ready)); /* ph-init started before this */
    for (double until = now() + 1.0; now() < until; nap())
        ;
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_exit(p), 0);
    j = load_record(record);
    run = json_real_value(json_object_get(j, "run_seconds"));
    stop = json_real_value(json_object_get(j, "stop_seconds"));
    assert_true(stop >= 0);
    assert_true(run - stop >= 1.0 - 0.002); /* both rounded to ms */
    assert_true(strcmp(jstr(j, "stop_requested_at"), jstr(j, "started_at")) > 0);
    assert_true(strcmp(jstr(j, "stop_requested_at"), jstr(j, "ended_at")) <= 0);
    json_decref(j);
}

/* A second stop request does not wait out the grace (100 s: were it
 * waited out, wait_exit would fail first). */
static void
test_second_stop_request_escalates_at_once(void **state)
{
    const char *rec = tpath("signals"), *ready = tpath("signals.ready"), *record = tpath("ph-exit.json");
    char *argv[] = { SHIM, "--grace", "100", "--record", (char *)record, "--", H("shim_sigrec"), (char *)rec, "0",
                     "ignore-term", NULL };
    pid_t p;
    json_t *j;

    (void)state;
    p = spawn(argv);
    assert_true(wait_exists(ready));
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(kill(p, SIGINT), 0); /* a different signal: the two cannot merge */
    assert_int_equal(wait_exit(p), 128 + SIGKILL);
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
    /* The tracer was signalled: its status no longer speaks for the
     * service, and its output may have lost its tail. */
    assert_string_equal(jstr(j, "outcome"), "escalated");
    assert_true(json_is_null(json_object_get(j, "service_exit_code")));
    assert_true(json_is_null(json_object_get(j, "service_signal")));
    assert_true(json_is_false(json_object_get(j, "complete")));
    assert_string_equal(jsigs(j, "escalations"), "");
    assert_string_equal(jstr(j, "signal"), "SIGKILL");
    json_decref(j);
}

/* With the real strace -f: the target's own children keep strace tracing
 * after the target died; the shim ends them so strace exits by itself,
 * long before escalate-grace (100 s: were it waited out, wait_exit would
 * fail first). */
static void
test_strace_exits_once_the_service_leftovers_end(void **state)
{
    const char *rec = tpath("signals"), *ready = tpath("signals.ready"), *record = tpath("ph-exit.json"),
               *log = tpath("strace.log");
    char cmd[800];
    char *argv[] = { SHIM, "--stop-target", "tracee", "--escalate-grace", "100", "--record", (char *)record, "--",
                     "strace", "-f", "-o", (char *)log, "--", "/bin/sh", "-c", cmd, NULL };
    pid_t p;
    json_t *j;

    (void)state;
    if (!strace_works())
        skip();
    snprintf(cmd, sizeof cmd, "sleep 100 & exec %s %s 15", H("shim_sigrec"), rec);
    p = spawn(argv);
    assert_true(wait_exists(ready));
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_exit(p), 0);
    j = load_record(record);
    assert_false(json_is_true(json_object_get(j, "wrapper_killed")));
    assert_string_equal(jsigs(j, "wrapper_signals"), "");
    assert_int_equal(jint(j, "leftovers_signalled"), 1);
    assert_int_equal(jint(j, "leftovers_killed"), 0);
    json_decref(j);
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
 * while the shim's wrapper runs on.  Polls until the orphan's fate is
 * WANT (or WAIT_S passed) and returns the last one seen.  Also reports
 * whether the shim was still running then, so a reap by the final drain
 * cannot pass for reaping. */
static enum orphan_fate
orphan_fate(enum orphan_fate want, int *orphan, int *shim_alive)
{
    const char *pidfile = tpath("orphan.pid");
    char cmd[800];
    char *argv[] = { SHIM, "--", "/bin/sh", "-c", cmd, NULL };
    enum orphan_fate fate = ORPHAN_RUNNING;
    pid_t p;
    int g;

    unlink(pidfile);
    snprintf(cmd, sizeof cmd, "%s %s 200; exec sleep 100", H("shim_orphan"), pidfile);
    p = spawn(argv);
    g = read_pid(pidfile);
    for (double until = now() + WAIT_S; fate != want && now() < until; nap()) {
        char s = proc_state(g);

        fate = s == 0 ? ORPHAN_REAPED : s == 'Z' ? ORPHAN_ZOMBIE : ORPHAN_RUNNING;
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
    assert_int_equal(orphan_fate(ORPHAN_REAPED, &g, &alive), ORPHAN_REAPED);
    assert_true(alive);
}

/* The companion: with the shim not a subreaper and this process one that
 * does not reap, the orphan becomes a zombie and stays one, so the check
 * above can fail, and passes only because the shim reaps. */
static void
test_reaping_check_can_fail(void **state)
{
    enum orphan_fate fate;
    int g, alive;

    (void)state;
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    setenv("PH_INIT_NO_SUBREAPER", "1", 1);
    fate = orphan_fate(ORPHAN_ZOMBIE, &g, &alive);
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
                     "--grace", "100", "--record", (char *)record, "--", "strace", "-f", "-o", (char *)log, "--",
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
        cmocka_unit_test_setup_teardown(test_default_grace_and_escalation, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_stop_seconds_counts_from_the_stop_request, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_second_stop_request_escalates_at_once, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_profiler_outliving_its_target_is_ended, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_strace_exits_once_the_service_leftovers_end, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_reaps_orphans_as_subreaper, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_reaping_check_can_fail, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_as_pid1_with_strace, tu_setup, shim_teardown),
    };
    /* PH_TEST_FILTER=NAME runs one test (the mutation check does). */
    if (getenv("PH_TEST_FILTER"))
        cmocka_set_test_filter(getenv("PH_TEST_FILTER"));
    return cmocka_run_group_tests_name("shim", tests, NULL, NULL);
}
