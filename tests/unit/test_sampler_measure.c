/* test_sampler_measure.c - what libphsampler says it measured, checked
 * against what the workload (tests/unit/helpers/sampler_work.c) did:
 * the delivered rate below the kernel tick as samples per CPU-second the
 * workload spent, each delta snapshot's CPU seconds and rate, the callers
 * of frames with big locals (and the cut, marked and counted, where the
 * unwinder's bound stops a walk), and the thread a forked child's samples
 * carry.
 *
 * CPU time, never wall time: the workloads stop after so many CPU-seconds
 * of their own, so a loaded machine stretches a run but changes no
 * count. */
#include "sampler_test_util.h"

#include <math.h>

/* The number just before SUFFIX in TEXT ("... 123 samples over"), or -1. */
static double
num_before(const char *text, const char *suffix)
{
    const char *p = strstr(text, suffix);

    if (p == NULL)
        return -1;
    while (p > text && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.'))
        p--;
    return atof(p);
}

/* The number just after PREFIX in TEXT, or -1. */
static double
num_after(const char *text, const char *prefix)
{
    const char *p = strstr(text, prefix);

    return p ? atof(p + strlen(prefix)) : -1;
}

/* What a snapshot says of itself (its pprof comments) and holds. */
typedef struct snap_says {
    double samples;         /* "N samples over" */
    double cpu_s;           /* "over X CPU-s" */
    double delivered;       /* "delivered D Hz" */
    double truncated;       /* "N truncated" */
    double folded;          /* the counts in its folded file */
} snap_says;

static snap_says
snapshot_says(int which)
{
    static char text[1 << 20];
    snap_says s;

    pprof_of("profile-", which, "", text, sizeof text);
    s.samples = num_before(text, " samples over ");
    s.cpu_s = num_after(text, " samples over ");
    s.delivered = num_after(text, "delivered ");
    s.truncated = num_before(text, " truncated");
    samples_with(read_snapshot("stacks-", which), "", &s.folded, NULL);
    return s;
}

/* Below the tick, setitimer delivers the rate asked for: the samples of a
 * run are its CPU-seconds times the rate (a timer period 1,000 times too
 * short is capped by the kernel at 250 Hz: 2.5 and 5 times too many
 * here). */
static void
test_rate_below_the_tick_delivered(void **state)
{
    static const struct {
        const char *hz;
        double secs;
    } runs[] = { { "100", 1.2 }, { "50", 1.6 } };

    (void)state;
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        char secs[16];
        char *args[] = { "split", secs, NULL };
        run_opts o = { .hz = runs[i].hz, .interval = "0" };
        double hz = atof(runs[i].hz), want = runs[i].secs * hz, cpu;
        const char *st;
        snap_says s;

        snprintf(secs, sizeof secs, "%.1f", runs[i].secs);
        clear_outdir();
        assert_int_equal(finish(start_opts(&o, args)), 0);
        s = snapshot_says(0);
        st = status_of("/sampler_work");
        cpu = json_num(st, "cpu_seconds");
        print_message("# %s Hz: %.0f samples in %.2f CPU-s (the workload's own: %.1f), delivered %.0f Hz\n",
                      runs[i].hz, s.folded, cpu, runs[i].secs, s.delivered);
        /* the workload stops at SECS CPU-seconds of its own */
        if (s.folded < 0.7 * want || s.folded > 1.4 * want)
            fail_msg("%s Hz over %.1f CPU-s: %.0f samples (want about %.0f)", runs[i].hz, runs[i].secs, s.folded,
                     want);
        if (s.delivered < 0.7 * hz || s.delivered > 1.4 * hz)
            fail_msg("%s Hz: the snapshot says %.0f Hz delivered", runs[i].hz, s.delivered);
        if (cpu < 0.8 * runs[i].secs || cpu > runs[i].secs + 0.5)
            fail_msg("%s Hz: the status says %.2f CPU-s for a run of %.1f", runs[i].hz, cpu, runs[i].secs);
    }
}

/* Delta snapshots: each says the CPU seconds and the rate of its own
 * interval, not of the run so far.  Each interval's CPU seconds times the
 * rate is about its samples, and together they are the process's CPU
 * (less the writer's, which is not sampled). */
static void
test_delta_snapshots_cpu_and_rate(void **state)
{
    char *args[] = { "split", "3", NULL };
    run_opts o = { .hz = "100", .interval = "1", .mode = "delta" };
    double hz = 100, secs = 3, sum = 0;
    int n;

    (void)state;
    clear_outdir();
    assert_int_equal(finish(start_opts(&o, args)), 0);
    n = count_files("profile-");
    assert_true(n >= 2);
    for (int i = 1; i <= n; i++) {
        snap_says s = snapshot_says(i);

        print_message("# delta %d: %.0f samples (%.0f folded) over %.2f CPU-s, delivered %.0f Hz\n", i, s.samples,
                      s.folded, s.cpu_s, s.delivered);
        assert_true(s.samples == s.folded);
        /* (ITIMER_PROF counts the writer's CPU too: when the writer runs
         * beside the service, a service thread takes its samples; 30 %
         * more was seen under load) */
        if (s.cpu_s < 0 || fabs(s.cpu_s * hz - s.folded) > 0.4 * s.folded + 5)
            fail_msg("delta snapshot %d: %.0f samples, but %.2f CPU-s at %.0f Hz", i, s.folded, s.cpu_s, hz);
        /* the rate is its samples per CPU-second (the writer's own
         * samples are left out of both) */
        if (s.cpu_s >= 0.2 && (s.delivered < 0.6 * hz || s.delivered > 1.6 * hz ||
                               fabs(s.delivered - s.folded / s.cpu_s) > 0.05 * hz + 1))
            fail_msg("delta snapshot %d: %.0f Hz delivered, %.0f samples over %.2f CPU-s", i, s.delivered, s.folded,
                     s.cpu_s);
        sum += s.cpu_s;
    }
    if (sum < 0.6 * secs || sum > 1.1 * secs)
        fail_msg("the delta snapshots' CPU-s add up to %.2f for a run of %.1f CPU-s", sum, secs);
}

/* Samples of the folded text F inside FRAME, and how many of them have
 * CALLERS (a fragment ending in FRAME) in *WITH. */
static double
inside(const char *f, const char *frame, const char *callers, double *with)
{
    *with = samples_with(f, callers, NULL, NULL);
    return samples_with(f, frame, NULL, NULL);
}

/* A frame with 9 or 64 KiB of locals still has its callers, with either
 * unwinder, on the thread's stack (the bound is its top) and on a stack
 * of the workload's own (the bound is 8 MiB a step). */
static void
test_big_frames_keep_their_callers(void **state)
{
    char *args[] = { "bigframes", "0.8", NULL };
    const char *unwinders[] = { "cfi", "fp" };

    (void)state;
    for (int u = 0; u < 2; u++) {
        run_opts o = { .hz = "250", .interval = "0", .unwind = unwinders[u] };
        const char *f;
        double n9, n64, w9, w64;

        clear_outdir();
        assert_int_equal(finish(start_opts(&o, args)), 0);
        f = newest("stacks-");
        assert_non_null(f);
        for (int s = 0; s < 2; s++) {
            const char *caller = s == 0 ? ";main;big_frames_until;" : ";big_context;big_frames_until;";
            char c9[80], c64[80];

            snprintf(c9, sizeof c9, "%sframe_9k", caller);
            snprintf(c64, sizeof c64, "%sframe_64k", caller);
            w9 = samples_with(f, c9, NULL, NULL);
            w64 = samples_with(f, c64, NULL, NULL);
            if (w9 < 15 || w64 < 15)
                fail_msg("PH_SAMPLER_UNWIND=%s: %s above frame_9k in %.0f samples, above frame_64k in %.0f:\n%s",
                         unwinders[u], caller, w9, w64, f);
        }
        n9 = inside(f, ";frame_9k", ";big_frames_until;frame_9k", &w9);
        n64 = inside(f, ";frame_64k", ";big_frames_until;frame_64k", &w64);
        if (w9 < 0.95 * n9 || w64 < 0.95 * n64)
            fail_msg("PH_SAMPLER_UNWIND=%s: callers above frame_9k in %.0f of %.0f samples, above frame_64k in %.0f "
                     "of %.0f:\n%s",
                     unwinders[u], w9, n9, w64, n64, f);
        /* on the thread's own stack nothing is cut (on the workload's
         * own, the walk past its first frame, __start_context, finds a
         * word far off, which it cannot tell from a huge frame: marked) */
        assert_int_equal(samples_with(f, "[truncated];_start;", NULL, NULL), 0);
        assert_int_equal(samples_with(f, "[truncated];__libc_start_main;", NULL, NULL), 0);
    }
}

/* A 9 MiB frame on a thread's own 32 MiB stack keeps its callers; on a
 * stack whose bounds the sampler does not know (swapcontext to one of the
 * workload's own), the 8 MiB step bound cuts the walk there: the stack
 * ends in [truncated], and the status and the snapshot count it. */
static void
test_huge_frame_walked_or_cut_and_counted(void **state)
{
    char *args[] = { "hugeframe", "1", NULL };
    const char *unwinders[] = { "cfi", "fp" };

    (void)state;
    for (int u = 0; u < 2; u++) {
        run_opts o = { .hz = "250", .interval = "0", .unwind = unwinders[u] };
        const char *f, *st;
        double n, walked, cut, truncated;
        snap_says s;

        clear_outdir();
        assert_int_equal(finish(start_opts(&o, args)), 0);
        f = newest("stacks-");
        assert_non_null(f);
        n = samples_with(f, ";frame_9m", NULL, NULL);
        walked = samples_with(f, ";start_thread;huge_thread;frame_9m", NULL, NULL);
        cut = samples_with(f, "sampler_work;[truncated];frame_9m", NULL, NULL);
        if (walked < 40 || cut < 40 || walked + cut < 0.95 * n)
            fail_msg("PH_SAMPLER_UNWIND=%s: of %.0f samples in frame_9m, %.0f have the thread's callers, %.0f end in "
                     "[truncated]:\n%s",
                     unwinders[u], n, walked, cut, f);
        st = status_of("/sampler_work");
        truncated = json_num(st, "truncated");
        s = snapshot_says(0);
        if (truncated < cut || s.truncated < cut)
            fail_msg("PH_SAMPLER_UNWIND=%s: %.0f stacks cut, the status counts %.0f, the snapshot %.0f: %s",
                     unwinders[u], cut, truncated, s.truncated, st);
    }
}

/* The pids in the thread_id labels of the pprof profile NAME (every
 * sample has one): how many there are, and how many are not TID.  By its
 * whole name: the parent's "profile-<UTC>-1" is also the start of a
 * child's "profile-<UTC>-1234-1" written in the same second. */
static int
thread_ids_not(const char *name, long tid, int *n)
{
    static char out[1 << 20];
    const char *p;
    char want[64], cmd[1000];
    long k = -1, i = 0;
    int other = 0;
    FILE *f;
    size_t got;

    snprintf(cmd, sizeof cmd, "gunzip -c '%s/%s' | protoc --decode_raw 2>&1", outdir, name);
    f = popen(cmd, "r");
    assert_non_null(f);
    got = fread(out, 1, sizeof out - 1, f);
    assert_int_equal(pclose(f), 0);
    out[got] = '\0';
    /* the string table's index of "thread_id" */
    for (p = out; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, "6: \"", 4) == 0) {
            if (strncmp(p, "6: \"thread_id\"\n", 15) == 0)
                k = i;
            i++;
        }
    }
    assert_true(k > 0);
    snprintf(want, sizeof want, "  3 {\n    1: %ld\n    3: ", k);
    *n = 0;
    for (p = strstr(out, want); p != NULL; p = strstr(p + 1, want)) {
        (*n)++;
        other += atol(p + strlen(want)) != tid;
    }
    return other;
}

/* With PH_SAMPLER_FOLLOW=all a forked child samples with a writer of its
 * own: its samples carry its own thread, never the thread id the parent's
 * sampled thread had before the fork. */
static void
test_fork_child_samples_carry_its_tid(void **state)
{
    char *args[] = { "forklate", "0.6", NULL };
    run_opts o = { .hz = "100", .interval = "0", .follow = "all" };
    char prefix[300], path[600];
    const char *st;
    pid_t parent;
    long child = -1;
    int n, other;
    DIR *d;
    struct dirent *de;

    (void)state;
    clear_outdir();
    parent = start_opts(&o, args);
    assert_int_equal(finish(parent), 0);
    d = opendir(outdir);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        if (sscanf(de->d_name, "sampler-status-%ld.json", &child) == 1 && child != parent)
            break;
    closedir(d);
    assert_true(child > 0 && child != parent);
    snprintf(path, sizeof path, "%s/sampler-status-%ld.json", outdir, child);
    st = read_text(path);
    assert_true(json_num(st, "samples") >= 20);

    prefix[0] = '\0';
    d = opendir(outdir);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        char want[40];

        snprintf(want, sizeof want, "-%ld-", child);
        if (strncmp(de->d_name, "profile-", 8) == 0 && strstr(de->d_name, want) && strstr(de->d_name, ".tmp") == NULL)
            snprintf(prefix, sizeof prefix, "%s", de->d_name);
    }
    closedir(d);
    assert_true(prefix[0] != '\0');
    other = thread_ids_not(prefix, child, &n);
    if (n == 0 || other > 0)
        fail_msg("%d of the child's %d samples carry another thread than its own (%ld)", other, n, child);
    /* the parent's: the profile with no pid in its name */
    prefix[0] = '\0';
    d = opendir(outdir);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        int dashes = 0;

        for (const char *c = de->d_name; *c; c++)
            dashes += *c == '-';
        if (strncmp(de->d_name, "profile-", 8) == 0 && dashes == 2 && strstr(de->d_name, ".tmp") == NULL)
            snprintf(prefix, sizeof prefix, "%s", de->d_name);
    }
    closedir(d);
    assert_true(prefix[0] != '\0');
    other = thread_ids_not(prefix, parent, &n);
    if (n == 0 || other > 0)
        fail_msg("%d of the parent's %d samples carry another thread than its own (%d)", other, n, (int)parent);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rate_below_the_tick_delivered, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_delta_snapshots_cpu_and_rate, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_big_frames_keep_their_callers, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_huge_frame_walked_or_cut_and_counted, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_fork_child_samples_carry_its_tid, setup, tu_teardown),
    };

    return cmocka_run_group_tests_name("sampler_measure", tests, NULL, NULL);
}
