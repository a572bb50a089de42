/* test_sampler.c - the sampler preloaded into real workloads: CPU shares,
 * deep stacks, threads started later, SIGTERM chaining (the service's
 * handler still runs; the default action still kills), fork+exec children
 * left alone, and pprof output that a decoder not ours (protoc) reads. */
#include "test_util.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define WORK "build/tests/helpers/sampler_work"
#define LIB "build/libphsampler.so"

static char outdir[300];

static int
setup(void **state)
{
    tu_setup(state);
    snprintf(outdir, sizeof outdir, "%s/out", test_dir);
    return 0;
}

/* Start WORK ARGS with the sampler preloaded; returns the pid. */
static pid_t
start(const char *hz, char *const args[])
{
    pid_t p = fork();

    assert_true(p >= 0);
    if (p == 0) {
        char *argv[8] = { WORK };
        for (int i = 0; args[i] && i < 6; i++)
            argv[i + 1] = args[i];
        setenv("LD_PRELOAD", LIB, 1);
        setenv("PH_SAMPLER_DIR", outdir, 1);
        setenv("PH_SAMPLER_HZ", hz, 1);
        setenv("PH_SAMPLER_INTERVAL", "1", 1);
        execv(WORK, argv);
        _exit(99);
    }
    return p;
}

/* Wait for P at most 30 s; a workload that does not end is a failure,
 * never a hung test run. */
static int
finish(pid_t p)
{
    int st;

    for (int i = 0; i < 3000; i++) {
        pid_t r = waitpid(p, &st, WNOHANG);
        if (r == p)
            return st;
        usleep(10000);
    }
    kill(p, SIGKILL);
    waitpid(p, &st, 0);
    fail_msg("the workload did not end within 30 s");
    return -1;
}

/* The newest folded snapshot, read whole (static buffer). */
static const char *
newest(const char *prefix)
{
    static char buf[1 << 20];
    char best[256] = "", path[600];
    DIR *d = opendir(outdir);
    struct dirent *de;
    FILE *f;
    size_t n;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(prefix);
        /* names sort by time; -N breaks ties within a second */
        if (strncmp(de->d_name, prefix, l) == 0 && strstr(de->d_name, ".tmp") == NULL) {
            int nb = atoi(strrchr(de->d_name, '-') + 1), nbest = best[0] ? atoi(strrchr(best, '-') + 1) : -1;
            if (nb > nbest)
                snprintf(best, sizeof best, "%s", de->d_name);
        }
    }
    closedir(d);
    if (best[0] == '\0')
        return NULL;
    snprintf(path, sizeof path, "%s/%s", outdir, best);
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Sum of counts of the lines whose stack contains FRAME. */
static double
samples_with(const char *folded, const char *frame, double *total)
{
    double in = 0, all = 0;
    char line[8192];
    const char *p = folded;

    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *sp;
        double c;

        snprintf(line, sizeof line, "%.*s", (int)n, p);
        sp = strrchr(line, ' ');
        if (sp) {
            c = atof(sp + 1);
            *sp = '\0';
            all += c;
            if (strstr(line, frame))
                in += c;
        }
        p += n + (nl ? 1 : 0);
    }
    if (total)
        *total = all;
    return in;
}

static void
test_split_shares_and_final_snapshot(void **state)
{
    char *args[] = { "split", "2", NULL };
    const char *f;
    double total, heavy, light;
    int st;

    (void)state;
    st = finish(start("150", args));
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    f = newest("stacks-");
    assert_non_null(f); /* a 2 s run gets a final snapshot */
    heavy = samples_with(f, "work_heavy", &total);
    light = samples_with(f, "work_light", NULL);
    assert_true(total >= 150); /* ~2 CPU-seconds at 150 Hz */
    if (heavy / total < 0.70 || heavy / total > 0.80 || light / total < 0.20 || light / total > 0.30)
        fail_msg("shares heavy %.2f light %.2f of %.0f samples (want ~0.75/0.25)", heavy / total, light / total, total);
    assert_non_null(newest("flamegraph-"));
    assert_non_null(strstr(newest("flamegraph-"), "work_heavy"));
    assert_non_null(strstr(newest("flamegraph-"), "delivered"));
}

static void
test_deep_recursion_marked_truncated(void **state)
{
    char *args[] = { "deep", "1", NULL };
    const char *f;

    (void)state;
    finish(start("150", args));
    f = newest("stacks-");
    assert_non_null(f);
    assert_non_null(strstr(f, "[truncated];recurse"));
}

static void
test_threads_started_later(void **state)
{
    char *args[] = { "threads", "1.5", NULL };
    const char *f;
    double total, busy;

    (void)state;
    finish(start("150", args));
    f = newest("stacks-");
    assert_non_null(f);
    busy = samples_with(f, "thread_busy", &total);
    /* four busy threads on every core: nearly all samples are theirs */
    assert_true(total > 100);
    assert_true(busy / total > 0.8);
}

static int
wait_ready(pid_t p)
{
    /* the workload spins; give the sampler a second of samples */
    (void)p;
    usleep(1000000);
    return 1;
}

static void
test_service_sigterm_handler_runs_after_flush(void **state)
{
    char marker[400];
    char *args[] = { "handler", "20", marker, NULL };
    pid_t p;
    int st;
    struct stat sb;

    (void)state;
    snprintf(marker, sizeof marker, "%s/handler-ran", test_dir);
    p = start("150", args);
    wait_ready(p);
    assert_int_equal(kill(p, SIGTERM), 0);
    st = finish(p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* the service's handler decided */
    assert_int_equal(stat(marker, &sb), 0);
    assert_non_null(newest("stacks-"));
    assert_non_null(strstr(newest("stacks-"), "spin"));
}

/* Our handler must not change how the service's own behaves: a service
 * whose handler has no SA_RESTART gets EINTR from the call it blocks in. */
static void
test_handler_flags_preserved(void **state)
{
    char *args[] = { "eintr", "20", NULL };
    pid_t p;
    int st;

    (void)state;
    p = start("150", args);
    wait_ready(p);
    assert_int_equal(kill(p, SIGTERM), 0);
    st = finish(p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_non_null(newest("stacks-"));
}

static void
test_default_sigterm_still_kills(void **state)
{
    char *args[] = { "default", "20", NULL };
    pid_t p;
    int st;

    (void)state;
    p = start("150", args);
    wait_ready(p);
    assert_int_equal(kill(p, SIGTERM), 0);
    st = finish(p);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGTERM);
    assert_non_null(newest("stacks-")); /* flushed before dying */
}

static void
test_exec_children_not_profiled(void **state)
{
    char *args[] = { "forkexec", "1.5", NULL };
    const char *f;

    (void)state;
    finish(start("150", args));
    f = newest("stacks-");
    assert_non_null(f);
    /* the child runs "split" for 1 s; had it been profiled, its work_heavy
     * stacks would be in this directory */
    {
        DIR *d = opendir(outdir);
        struct dirent *de;
        char path[600];

        while ((de = readdir(d)) != NULL) {
            if (strncmp(de->d_name, "stacks-", 7) != 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", outdir, de->d_name);
            FILE *fp = fopen(path, "r");
            char buf[65536];
            size_t n = fread(buf, 1, sizeof buf - 1, fp);
            buf[n] = '\0';
            fclose(fp);
            assert_null(strstr(buf, "work_heavy"));
        }
        closedir(d);
    }
}

static void
test_pprof_decodes_with_protoc(void **state)
{
    char *args[] = { "split", "1", NULL };
    char cmd[800], out[65536];
    FILE *p;
    size_t n;

    (void)state;
    finish(start("100", args));
    snprintf(cmd, sizeof cmd, "cat %s/profile-*.pb.gz | gunzip -c | protoc --decode_raw 2>&1", outdir);
    p = popen(cmd, "r");
    assert_non_null(p);
    n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_non_null(strstr(out, "6: \"samples\""));
    assert_non_null(strstr(out, "6: \"count\""));
    assert_non_null(strstr(out, "6: \"cpu\""));
    assert_non_null(strstr(out, "6: \"nanoseconds\""));
    assert_non_null(strstr(out, "6: \"work_heavy\""));
    assert_non_null(strstr(out, "12: 10000000")); /* period: 1e9 / 100 Hz */
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_split_shares_and_final_snapshot, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_deep_recursion_marked_truncated, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_threads_started_later, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_service_sigterm_handler_runs_after_flush, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_handler_flags_preserved, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_default_sigterm_still_kills, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_exec_children_not_profiled, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_pprof_decodes_with_protoc, setup, tu_teardown),
    };
    return cmocka_run_group_tests_name("sampler", tests, NULL, NULL);
}
