/* test_sampler_heap.c - the heap sampler: its arithmetic (the code the
 * allocation path runs, ph_sampler_heapmath.h: expected samples for N
 * bytes, unbiased estimates of bytes and objects), then the library
 * preloaded into tests/data/heap/heapwork.c: shares of what is in use
 * and allocated, threads claiming the tables at once, a bad setting.
 *
 * The statistical checks use fixed seeds (the same numbers every run)
 * and bounds of 4 to 5 standard deviations of the quantity checked, so
 * they fail on a wrong formula, not by chance. */
#include "sampler_test_util.h"

#include <math.h>

#include "ph_sampler_heapmath.h"

#define HEAPWORK "build/tests/helpers/heapwork"

/* COUNT allocations of SIZE bytes through the countdown at MEAN: how
 * many were sampled, and the estimated bytes and objects. */
typedef struct sim {
    uint64_t sampled;
    double bytes, objects;
} sim;

static sim
simulate(uint64_t seed, double mean, size_t size, uint64_t count)
{
    uint64_t rng = seed;
    int64_t left = phs_heap_interval(&rng, mean);
    sim s = { 0, 0, 0 };

    for (uint64_t i = 0; i < count; i++)
        if (phs_heap_step(&left, &rng, mean, size)) {
            double w = phs_heap_weight((double)size, mean);
            s.sampled++;
            s.bytes += w * (double)size;
            s.objects += w;
        }
    return s;
}

static void
test_weights(void **state)
{
    double t = 524288;

    (void)state;
    /* S = T: 1 / (1 - 1/e) */
    assert_true(fabs(phs_heap_weight(t, t) - 1.0 / (1.0 - exp(-1.0))) < 1e-12);
    /* S << T: about T / S samples' worth (one sample per T bytes) */
    assert_true(fabs(phs_heap_weight(64, t) * 64 / t - 1) < 1e-3);
    /* S >> T: always sampled, stands for itself */
    assert_true(fabs(phs_heap_weight(64 * t, t) - 1) < 1e-12);
    assert_true(phs_heap_weight(0, t) == 0);
    /* expected samples: 1 - exp(-S/T) per allocation */
    assert_true(fabs(phs_heap_expected(1000, t, t) - 1000 * (1 - exp(-1.0))) < 1e-9);
}

static void
test_interval_is_exponential(void **state)
{
    uint64_t rng = 42;
    double mean = 4096, sum = 0, n = 200000, over = 0;

    (void)state;
    for (int i = 0; i < (int)n; i++) {
        int64_t d = phs_heap_interval(&rng, mean);
        assert_true(d >= 1);
        sum += (double)d;
        over += d > mean;
    }
    /* mean T (sd T / sqrt(n)); P(X > T) = 1/e */
    assert_true(fabs(sum / n - mean) < 5 * mean / sqrt(n));
    assert_true(fabs(over / n - exp(-1.0)) < 5 * sqrt(exp(-1.0) * (1 - exp(-1.0)) / n));
}

/* The number of samples for N bytes of allocations of one size is
 * binomial with p = 1 - exp(-S/T), for every size. */
static void
test_expected_samples(void **state)
{
    static const size_t sizes[] = { 16, 64, 1000, 4096, 30000, 65536, 1 << 20 };
    double mean = 4096;

    (void)state;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        uint64_t count = (64u << 20) / sizes[k] + 1000; /* 64 MiB each */
        sim s = simulate(7 + k, mean, sizes[k], count);
        double p = 1 - exp(-(double)sizes[k] / mean), e = phs_heap_expected((double)count, (double)sizes[k], mean);
        double sd = sqrt((double)count * p * (1 - p));

        print_message("# %zu B x %llu: %llu samples, %.1f expected (sd %.1f)\n", sizes[k],
                      (unsigned long long)count, (unsigned long long)s.sampled, e, sd);
        assert_true(fabs((double)s.sampled - e) <= 5 * sd + 1);
    }
}

/* The estimates add up to what was allocated, whatever the size. */
static void
test_estimates_unbiased(void **state)
{
    static const size_t sizes[] = { 16, 200, 4096, 65536, 1 << 22 };
    double mean = 524288;

    (void)state;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        uint64_t count = (1ull << 31) / sizes[k]; /* 2 GiB each */
        double bytes = (double)count * (double)sizes[k], p = 1 - exp(-(double)sizes[k] / mean);
        /* sd of the byte estimate: S/p * sqrt(n p (1-p)) */
        double sd = (double)sizes[k] / p * sqrt((double)count * p * (1 - p));
        sim s = simulate(1000 + k, mean, sizes[k], count);

        print_message("# %zu B: %.4g bytes estimated of %.4g (sd %.3g), %.4g objects of %llu\n", sizes[k], s.bytes,
                      bytes, sd, s.objects, (unsigned long long)count);
        assert_true(fabs(s.bytes - bytes) <= 5 * sd + 1);
        assert_true(fabs(s.objects - (double)count) <= 5 * sd / (double)sizes[k] + 1);
    }
}

/* One allocation holding several sampled bytes is one sample, and the
 * next one starts afresh: huge and tiny allocations in turn keep each
 * size's own rate (a countdown left below zero would sample every tiny
 * allocation after a huge one). */
static void
test_huge_then_tiny(void **state)
{
    uint64_t rng = 99, tiny = 0, huge = 0, n = 20000;
    int64_t left = phs_heap_interval(&rng, 4096);
    double p = 1 - exp(-64.0 / 4096), sd = sqrt((double)n * p * (1 - p));

    (void)state;
    for (uint64_t i = 0; i < n; i++) {
        huge += phs_heap_step(&left, &rng, 4096, 1 << 20);
        assert_true(left > 0);
        tiny += phs_heap_step(&left, &rng, 4096, 64);
    }
    assert_true(huge == n);
    assert_true(fabs((double)tiny - (double)n * p) <= 5 * sd);
    /* nothing is a sample of nothing */
    left = 0;
    assert_int_equal(phs_heap_step(&left, &rng, 4096, 0), 0);
}

/* ---- the library preloaded --------------------------------------------- */

/* Per mille of the values in the newest VIEW file whose line holds NAME;
 * *TOTAL (may be NULL) gets the sum. */
static long
share_of(const char *view, const char *name, double *total)
{
    char cmd[1200], line[64] = "";
    FILE *p;
    long v = -1;

    snprintf(cmd, sizeof cmd,
             "f=$(ls %s/%s-*.folded | sort | tail -1) && awk -v n='%s' '{ t += $NF; if (index($0, n)) h += $NF } "
             "END { printf \"%%d %%.0f\", t ? 1000 * h / t : -1, t }' \"$f\"",
             outdir, view, name);
    p = popen(cmd, "r");
    assert_non_null(p);
    if (fgets(line, sizeof line, p) != NULL) {
        double t = 0;
        if (sscanf(line, "%ld %lf", &v, &t) == 2 && total)
            *total = t;
    }
    pclose(p);
    return v;
}

static pid_t
start_heap(const char *mean, char *const args[])
{
    run_opts o = { .prog = HEAPWORK, .interval = "0" };
    pid_t p;

    setenv("PH_SAMPLER_HEAP", mean, 1);
    p = start_opts(&o, args);
    unsetenv("PH_SAMPLER_HEAP");
    return p;
}

static void
test_shares_in_use_and_allocated(void **state)
{
    char *args[] = { "once", NULL };
    double inuse = 0;
    int st;

    (void)state;
    st = finish(start_heap("4K", args));
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    {
        long three = share_of("inuse_space", ";keep_three_mib;", &inuse), one = share_of("inuse_space", ";keep_one_mib;", NULL);
        long churn = share_of("alloc_space", ";churn_hundred_mib;", NULL);
        long peak = share_of("peak_inuse_space", ";keep_three_mib;", NULL);

        print_message("# in use %.0f B: keep_three_mib %ld, keep_one_mib %ld; allocated: churn %ld; peak: %ld\n",
                      inuse, three, one, churn, peak);
        assert_true(three >= 700 && three <= 800);
        assert_true(one >= 200 && one <= 300);
        assert_true(churn >= 940 && churn <= 980);
        assert_true(peak >= 650 && peak <= 800);
        assert_true(inuse > 0.9 * 4 * 1048576 && inuse < 1.1 * 4 * 1048576);
    }
    /* the allocation functions are the leaves */
    assert_true(share_of("inuse_space", ";keep_three_mib;posix_memalign ", NULL) > 0);
    assert_true(share_of("inuse_space", ";keep_three_mib;calloc ", NULL) > 0);
    assert_true(share_of("alloc_space", ";churn_hundred_mib;realloc ", NULL) > 0);
    assert_int_equal(count_files("heap-"), 2); /* the pprof profile, and what it saw of the runtimes: */
    {
        char cmd[600];

        snprintf(cmd, sizeof cmd, "jq -e '.runtimes == []' %s/heap-*.json >/dev/null", outdir);
        assert_int_equal(system(cmd), 0); /* none: every allocation is malloc's */
    }
    assert_int_equal(count_files("stacks-"), 0); /* no CPU profile in the heap mode */
    /* the writer's own allocations (symbols, files) are not the service's */
    assert_int_equal(share_of("alloc_space", "writer_main", NULL), 0);
}

/* The peak's composition is the one at the peak, not at the end. */
static void
test_peak_is_the_peak(void **state)
{
    char *args[] = { "peak", NULL };
    double peak = 0, inuse = 0;
    long burst;
    int st;

    (void)state;
    st = finish(start_heap("4096", args));
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    burst = share_of("peak_inuse_space", ";burst_eight_mib;", &peak);
    print_message("# peak %.0f B, burst_eight_mib %ld per mille of it\n", peak, burst);
    /* 8 of 9 MiB: 889 per mille */
    assert_true(burst >= 850 && burst <= 930);
    assert_true(peak > 0.9 * 9 * 1048576 && peak < 1.1 * 9 * 1048576);
    /* (>= 990: a small block of libc's own, sampled, weighs its mean) */
    assert_true(share_of("inuse_space", ";keep_one_mib;", &inuse) >= 990);
    assert_true(inuse > 0.9 * 1048576 && inuse < 1.1 * 1048576);
}

/* The peak and what is in use are exact at the default interval, where
 * the samples alone would be tens of percent off: heapwork counts what
 * it asks for itself, through every allocation function, realloc grown,
 * shrunk and to 0, and blocks freed on other threads than theirs.  Ours
 * may exceed its figures by libc's own blocks (stdout's buffer, a
 * thread's), never fall short. */
static long long
status_field(const char *field)
{
    char cmd[700], line[64] = "";
    FILE *p;

    snprintf(cmd, sizeof cmd, "jq '.heap.%s' %s/sampler-status-*.json", field, outdir);
    p = popen(cmd, "r");
    assert_non_null(p);
    if (fgets(line, sizeof line, p) == NULL)
        line[0] = '\0';
    pclose(p);
    return atoll(line);
}

/* What the sampler's own tables hold resident stays near what is live,
 * not what was ever sampled: heapwork's churn of 100 MiB at 4 KiB is some
 * 3,300 samples (its blocks are larger than 4 KiB: each one sampled), of
 * which some 140 are live at the end.  (Before, each sample's entry
 * landed on a page of the whole 8 MiB live table at random: 80 % of its
 * 2,048 pages resident after as many samples as here, as in any long run
 * at the default interval.) */
static void
test_tables_resident_follow_the_live(void **state)
{
    char *args[] = { "once", NULL };
    long long kb, samples, live;

    (void)state;
    assert_int_equal(finish(start_heap("4K", args)), 0);
    kb = status_field("tables_kb");
    samples = status_field("samples");
    live = status_field("live_samples");
    print_message("# %lld samples, %lld live at the end: the tables %lld kB resident\n", samples, live, kb);
    assert_true(samples > 3000);
    assert_true(kb > 0);
    assert_true(kb <= 512);
}

/* heapwork PROG's exact run with the sampler LIB preloaded at 512 KiB:
 * the sampler's peak and in use against heapwork's own count. */
static void
check_exact(const char *prog, const char *lib)
{
    char *args[] = { "exact", NULL }, log[400], cmd[700], line[200] = "";
    run_opts o = { .prog = prog, .lib = lib, .interval = "0", .out = log };
    long long true_peak = -1, true_inuse = -1, peak, inuse;
    FILE *f;
    int st;
    pid_t p;

    snprintf(log, sizeof log, "%s/exact.log", test_dir);
    setenv("PH_SAMPLER_HEAP", "512K", 1);
    p = start_opts(&o, args);
    unsetenv("PH_SAMPLER_HEAP");
    st = finish(p);
    snprintf(cmd, sizeof cmd, "grep '^heapwork: exact' %s", log);
    f = popen(cmd, "r");
    assert_non_null(f);
    if (fgets(line, sizeof line, f) != NULL)
        sscanf(line, "heapwork: exact peak %lld in use %lld", &true_peak, &true_inuse);
    pclose(f);
    peak = status_field("peak_inuse_bytes");
    inuse = status_field("inuse_bytes");
    print_message("# %s: exit %d, peak %lld B (true %lld), in use %lld B (true %lld)\n", prog,
                  WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), peak, true_peak, inuse, true_inuse);
    /* (heapwork aborts when a block's bytes changed under it) */
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_true(true_peak > 16 * 1048576);
    assert_true(peak >= true_peak && peak - true_peak <= 16384);
    assert_true(inuse >= true_inuse && inuse - true_inuse <= 16384);
    assert_true(status_field("malloc_peak_bytes") == peak);
}

static void
test_peak_exact_at_the_default_interval(void **state)
{
    (void)state;
    check_exact(HEAPWORK, NULL);
}

/* The same on musl (the musl build of the sampler and heapwork, on
 * musl's loader): its allocator calls our calloc's, realloc's and the
 * aligned ones' malloc, and its malloc_usable_size is the size asked. */
static void
test_peak_exact_on_musl(void **state)
{
    (void)state;
    check_exact(HEAPWORK "-musl", "build/libphsampler-musl.so");
}

/* Blocks from before the sampler started (a program that calls
 * ph_sampler_start itself, the library preloaded without PH_SAMPLER_DIR)
 * carry no size: grown with realloc, measured with malloc_usable_size
 * (at least what was asked) and freed among new ones, their bytes stay
 * the program's.  (Before: malloc_usable_size read a tag that was never
 * written, and said less than the block held: heapwork aborted.)  glibc
 * only: on another allocator the tail's one byte cannot tell. */
static void
test_blocks_from_before_the_start(void **state)
{
    char *args[] = { "late", outdir, NULL }, log[400];
    run_opts o = { .prog = HEAPWORK, .dir = "", .interval = "0", .out = log };
    int st;
    pid_t p;

    (void)state;
    snprintf(log, sizeof log, "%s/late.log", test_dir);
    setenv("PH_SAMPLER_HEAP", "512K", 1);
    p = start_opts(&o, args);
    unsetenv("PH_SAMPLER_HEAP");
    st = finish(p);
    print_message("# %s", read_text(log));
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_non_null(strstr(read_text(log), "heapwork: late ok"));
    /* the sampler ran, counting exactly */
    assert_true(status_field("malloc_peak_bytes") > 0);
}

/* A block realloc moves is forgotten at its old address: the addresses
 * it leaves are never handed out again (a record there would stay "in
 * use" for good), and in use at the end is what the reallocs kept. */
static void
test_realloc_forgets_the_block_it_moved(void **state)
{
    char *args[] = { "grow", NULL }, log[400];
    run_opts o = { .prog = HEAPWORK, .interval = "0", .out = log };
    double inuse = 0;
    long grown, left;
    int st;
    pid_t p;

    (void)state;
    snprintf(log, sizeof log, "%s/grow.log", test_dir);
    setenv("PH_SAMPLER_HEAP", "4096", 1);
    p = start_opts(&o, args);
    unsetenv("PH_SAMPLER_HEAP");
    st = finish(p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* (the workload's own premise: every block moved) */
    assert_non_null(strstr(read_text(log), "heapwork: grown, 256 moved"));
    grown = share_of("inuse_space", ";grow_four_mib;realloc ", &inuse);
    left = share_of("inuse_space", ";grow_four_mib;malloc ", NULL);
    print_message("# in use %.0f B: the reallocs %ld per mille, the blocks they moved %ld\n", inuse, grown, left);
    assert_int_equal(left, 0);
    assert_true(inuse > 0.9 * 5 * 1048576 && inuse < 1.1 * 5 * 1048576);
    assert_true(grown >= 750 && grown <= 850);
}

/* PH_SAMPLER_HEAP's suffixes are binary: 512K is 524288 bytes, 1M
 * 1048576 (as the header says), as the status reports the mean. */
static void
test_suffixes_are_binary(void **state)
{
    static const char *const set[] = { "512K", "64k", "1M" };
    static const long want[] = { 524288, 65536, 1048576 };
    char *args[] = { "peak", NULL }, cmd[600];

    (void)state;
    for (int i = 0; i < 3; i++) {
        int st;

        clear_outdir();
        st = finish(start_heap(set[i], args));
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        snprintf(cmd, sizeof cmd, "jq -s -e 'length == 1 and .[0].heap.mean_bytes == %ld' %s/sampler-status-*.json",
                 want[i], outdir);
        if (system(cmd) != 0)
            fail_msg("PH_SAMPLER_HEAP=%s: the status's mean is not %ld", set[i], want[i]);
    }
}

/* Eight threads claim stacks and live slots at once: nothing lost. */
static void
test_threads_at_once(void **state)
{
    char *args[] = { "threads", NULL };
    double inuse = 0, alloc = 0;
    int st;

    (void)state;
    st = finish(start_heap("4096", args));
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_true(share_of("inuse_space", ";thread_keeps;", &inuse) >= 950);
    assert_true(share_of("alloc_space", ";thread_churns;", &alloc) >= 950);
    print_message("# in use %.0f B of 2 MiB kept; %.0f B allocated of 130 MiB\n", inuse, alloc);
    assert_true(inuse > 0.9 * 2 * 1048576 && inuse < 1.1 * 2 * 1048576);
    assert_true(alloc > 0.95 * 130 * 1048576 && alloc < 1.05 * 130 * 1048576);
}

/* A program a shell starts gets the heap mode too (PH_SAMPLER_HEAP is
 * handed on with the other settings). */
static void
test_followed_program_heap(void **state)
{
    char *args[] = { "-c", "echo; " HEAPWORK " once", NULL }, cmd[700];
    run_opts o = { .prog = "/bin/sh", .interval = "0" };
    pid_t p;
    int st;

    (void)state;
    setenv("PH_SAMPLER_HEAP", "4096", 1);
    p = start_opts(&o, args);
    unsetenv("PH_SAMPLER_HEAP");
    st = finish(p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    snprintf(cmd, sizeof cmd,
             "jq -s -e 'map(select(.program | endswith(\"/heapwork\"))) | length == 1 and "
             ".[0].heap.mean_bytes == 4096 and .[0].samples > 100' %s/sampler-status-*.json",
             outdir);
    assert_int_equal(system(cmd), 0);
}

static void
test_bad_setting_said(void **state)
{
    char *args[] = { "once", NULL }, cmd[600];
    int st;

    (void)state;
    st = finish(start_heap("lots", args));
    /* the service runs on, unprofiled; the status says why */
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    snprintf(cmd, sizeof cmd, "grep -q '\"reason\": \"profiling disabled: PH_SAMPLER_HEAP=lots: want' %s/sampler-status-*.json",
             outdir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(count_files("heap-"), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_interval_is_exponential),
        cmocka_unit_test(test_expected_samples),
        cmocka_unit_test(test_estimates_unbiased),
        cmocka_unit_test(test_huge_then_tiny),
        cmocka_unit_test_setup_teardown(test_shares_in_use_and_allocated, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_tables_resident_follow_the_live, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_peak_is_the_peak, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_peak_exact_at_the_default_interval, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_peak_exact_on_musl, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_blocks_from_before_the_start, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_realloc_forgets_the_block_it_moved, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_suffixes_are_binary, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_threads_at_once, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_followed_program_heap, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_bad_setting_said, setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
