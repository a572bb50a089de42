/* test_shim.c - the init shim, run locally (no Docker): exit statuses,
 * signal forwarding, the stop protocol with tracee targeting and
 * escalation, the completion record, and reaping of orphans. */
#include "test_util.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#define SHIM "build/ph-init"
#define H(x) "build/tests/helpers/" x


static pid_t
spawn(char *const argv[])
{
    pid_t p = fork();

    assert_true(p >= 0);
    if (p == 0) {
        execv(argv[0], argv);
        _exit(99);
    }
    return p;
}

static int
wait_status(pid_t p)
{
    int st;

    while (waitpid(p, &st, 0) < 0)
        assert_int_equal(errno, EINTR);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Poll until PATH exists (and contains NEEDLE when not NULL); 10 s at most. */
static int
wait_file(const char *path, const char *needle)
{
    double until = now() + 10;
    char buf[4096];

    while (now() < until) {
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = '\0';
            if (needle == NULL || strstr(buf, needle))
                return 1;
        }
        usleep(10000);
    }
    return 0;
}

static void
test_exit_codes(void **state)
{
    (void)state;
    for (int code = 0; code < 256; code++) {
        char cmd[32];
        char *argv[] = { SHIM, "--", "/bin/sh", "-c", cmd, NULL };

        snprintf(cmd, sizeof cmd, "exit %d", code);
        assert_int_equal(wait_status(spawn(argv)), code);
    }
}

static void
test_killed_by_signal_and_exec_failure(void **state)
{
    char *killed[] = { SHIM, "--", "/bin/sh", "-c", "kill -USR1 $$", NULL };
    char *missing[] = { SHIM, "--", "/nonexistent/program", NULL };
    char *badopt[] = { SHIM, "--grace", "soon", "--", "/bin/true", NULL };

    (void)state;
    assert_int_equal(wait_status(spawn(killed)), 128 + SIGUSR1);
    assert_int_equal(wait_status(spawn(missing)), 127);
    assert_int_equal(wait_status(spawn(badopt)), 2);
}

static int
is_excluded(int s)
{
    /* Not forwarded: uncatchable, the child's own, the stop requests, and
     * the fault signals the shim leaves unblocked for itself. */
    static const int ex[] = { SIGKILL, SIGSTOP, SIGCHLD, SIGTERM, SIGINT, SIGSEGV, SIGBUS,
                              SIGFPE,  SIGILL,  SIGABRT, SIGTRAP, SIGSYS };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++)
        if (ex[i] == s)
            return 1;
    return 0;
}

static void
test_forwards_every_catchable_signal(void **state)
{
    char rec[512], ready[560], record[560], want[16];
    char *argv[] = { SHIM, "--record", record, "--", H("shim_sigrec"), rec, "15", NULL };
    pid_t p;
    json_t *j;

    (void)state;
    snprintf(rec, sizeof rec, "%s/signals", test_dir);
    snprintf(ready, sizeof ready, "%s.ready", rec);
    snprintf(record, sizeof record, "%s/out/ph-exit.json", test_dir);
    p = spawn(argv);
    assert_true(wait_file(ready, NULL));
    for (int s = 1; s < 32; s++) {
        if (is_excluded(s))
            continue;
        assert_int_equal(kill(p, s), 0);
        snprintf(want, sizeof want, "%d\n", s);
        if (!wait_file(rec, want))
            fail_msg("signal %d was not forwarded", s);
    }
    /* SIGTERM is a stop request: delivered as the stop signal, the child exits 0. */
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_status(p), 0);
    j = json_load_file(record, 0, NULL);
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "stop_requested")));
    assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 0);
    assert_true(json_is_null(json_object_get(j, "signal")));
    assert_int_equal(json_array_size(json_object_get(j, "escalations")), 0);
    json_decref(j);
}

static void
test_stop_targets_the_tracee(void **state)
{
    char rec[512], ready[560], record[560], pidfile[560], buf[32];
    char *argv[] = { SHIM, "--stop-target", "tracee", "--record", record, "--", H("shim_tracer"), H("shim_sigrec"),
                     rec, "15", NULL };
    pid_t p;
    json_t *j;
    FILE *f;
    int tracee;

    (void)state;
    snprintf(rec, sizeof rec, "%s/signals", test_dir);
    snprintf(ready, sizeof ready, "%s.ready", rec);
    snprintf(record, sizeof record, "%s/ph-exit.json", test_dir);
    snprintf(pidfile, sizeof pidfile, "%s/tracee.pid", test_dir);
    setenv("SHIM_TRACER_PIDFILE", pidfile, 1);
    p = spawn(argv);
    unsetenv("SHIM_TRACER_PIDFILE");
    assert_true(wait_file(ready, NULL));
    assert_true(wait_file(pidfile, "\n"));
    assert_int_equal(kill(p, SIGTERM), 0);
    /* The tracer ignores SIGTERM: only a signal to the tracee ends this. */
    assert_int_equal(wait_status(p), 0);
    assert_true(wait_file(rec, "15\n"));
    f = fopen(pidfile, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    tracee = atoi(buf);
    j = json_load_file(record, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "target_pid")), tracee);
    assert_false(json_is_true(json_object_get(j, "wrapper_killed")));
    json_decref(j);
}

static void
test_escalates_after_grace(void **state)
{
    char rec[512], ready[560], record[560];
    char *argv[] = { SHIM, "--grace", "0.3", "--escalate", "SIGUSR1,SIGKILL", "--escalate-grace", "0.3",
                     "--record", record, "--", H("shim_sigrec"), rec, "10", "ignore-term", NULL };
    pid_t p;
    json_t *j, *esc;
    double t0;

    (void)state;
    snprintf(rec, sizeof rec, "%s/signals", test_dir);
    snprintf(ready, sizeof ready, "%s.ready", rec);
    snprintf(record, sizeof record, "%s/ph-exit.json", test_dir);
    p = spawn(argv);
    assert_true(wait_file(ready, NULL));
    t0 = now();
    assert_int_equal(kill(p, SIGTERM), 0);
    assert_int_equal(wait_status(p), 0);
    assert_true(now() - t0 >= 0.3); /* not before the grace */
    j = json_load_file(record, 0, NULL);
    assert_non_null(j);
    esc = json_object_get(j, "escalations");
    assert_int_equal(json_array_size(esc), 1);
    assert_string_equal(json_string_value(json_array_get(esc, 0)), "SIGUSR1");
    json_decref(j);

    /* A child that ignores everything catchable ends with the last step. */
    {
        char *argv2[] = { SHIM, "--grace", "0.2", "--escalate", "SIGKILL", "--escalate-grace", "0.2",
                          "--record", record, "--", "/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done",
                          NULL };
        p = spawn(argv2);
        usleep(200000);
        assert_int_equal(kill(p, SIGTERM), 0);
        assert_int_equal(wait_status(p), 128 + SIGKILL);
        j = json_load_file(record, 0, NULL);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "signal")), "SIGKILL");
        json_decref(j);
    }
}

/* The orphan's state letter, or 0 when it is gone. */
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

static int
orphan_pid(const char *pidfile)
{
    char buf[32];
    FILE *f;

    assert_true(wait_file(pidfile, "\n"));
    f = fopen(pidfile, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    return atoi(buf);
}

static void
test_reaps_orphans(void **state)
{
    char pidfile[512], cmd[700];
    char *argv[] = { SHIM, "--", "/bin/sh", "-c", cmd, NULL };
    pid_t p;
    int g;
    double until;

    (void)state;
    snprintf(pidfile, sizeof pidfile, "%s/orphan.pid", test_dir);
    snprintf(cmd, sizeof cmd, "%s %s; sleep 1.5", H("shim_orphan"), pidfile);
    p = spawn(argv);
    g = orphan_pid(pidfile);
    /* The orphan exits after 0.3 s while the shim still runs: it must be
     * reaped, never left a zombie. */
    until = now() + 1.2;
    while (now() < until) {
        assert_true(proc_state(g) != 'Z' || now() < until - 0.7);
        usleep(20000);
    }
    assert_int_equal(proc_state(g), 0);
    assert_int_equal(wait_status(p), 0);
}

/* Proves the check above can fail: without the shim's subreaper the orphan
 * goes to us (a subreaper that does not reap) and is seen as a zombie. */
static void
test_reaping_check_can_fail(void **state)
{
    char pidfile[512], cmd[700];
    char *argv[] = { SHIM, "--", "/bin/sh", "-c", cmd, NULL };
    pid_t p;
    int g, zombie = 0;
    double until;

    (void)state;
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    setenv("PH_INIT_NO_SUBREAPER", "1", 1);
    snprintf(pidfile, sizeof pidfile, "%s/orphan2.pid", test_dir);
    snprintf(cmd, sizeof cmd, "%s %s; sleep 1", H("shim_orphan"), pidfile);
    p = spawn(argv);
    unsetenv("PH_INIT_NO_SUBREAPER");
    g = orphan_pid(pidfile);
    for (until = now() + 2; now() < until && !zombie; usleep(20000))
        zombie = proc_state(g) == 'Z';
    assert_true(zombie);
    assert_int_equal(waitpid(g, NULL, 0), g);
    assert_int_equal(wait_status(p), 0);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_killed_by_signal_and_exec_failure),
        cmocka_unit_test_setup_teardown(test_forwards_every_catchable_signal, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_stop_targets_the_tracee, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_escalates_after_grace, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_reaps_orphans, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_reaping_check_can_fail, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests_name("shim", tests, NULL, NULL);
}
