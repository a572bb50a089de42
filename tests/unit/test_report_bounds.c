/* test_report_bounds.c - a report's output is bounded whatever a
 * container wrote (the report graphs review, finding 1): stacks files of
 * one stack a million frames deep, or of thousands of frames side by side, give
 * graphs of a few hundred kB that say what they cut; a report's files are
 * held to its bound (the stacks files' graphs past it not drawn, and
 * said) and to the collection's min_free; memory does not follow the
 * output's size.  And what reaches report.html of a name is escaped for
 * it (finding 2).
 *
 * Bytes are counted, never timed: the files' sizes, and the peak
 * resident set of a child doing the report (VmHWM, reset through
 * /proc/self/clear_refs before it starts). */
#include "report_test_util.h"

#include <errno.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include "ph_report.h"

/* Under AddressSanitizer memory is its shadow and quarantine too: the
 * peak resident set says nothing of the report's own, and is not held. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_HELD 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RSS_HELD 0
#endif
#endif
#ifndef RSS_HELD
#define RSS_HELD 1
#endif

/* test_dir/NAME, a run dir of a flamegraph run. */
static const char *
run_dir(const char *name)
{
    static char dir[600];

    snprintf(dir, sizeof dir, "%s/out/front/%s", test_dir, name);
    free(rt_must("mkdir -p '%s'", dir));
    return dir;
}

/* DIR/NAME: N stacks "main;f;f;...;f COUNT" of DEPTH frames, each with
 * its own leaf when WIDE. */
static void
write_folded(const char *dir, const char *name, int n, int depth, int wide)
{
    char path[800];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < n; i++) {
        fputs("main", f);
        for (int d = 0; d < depth; d++)
            fprintf(f, wide ? ";s%dd%d" : ";f", i, d);
        fputs(" 1\n", f);
    }
    assert_int_equal(fclose(f), 0);
}

/* The bytes of DIR's files whose name starts with "report" or is
 * summary.json, the largest of them in *LARGEST. */
static unsigned long long
report_bytes(const char *dir, unsigned long long *largest)
{
    char *out = rt_must("cd '%s' && stat -c '%%s %%n' report* summary.json", dir), *p = out;
    unsigned long long total = 0, v;
    int k;

    *largest = 0;
    while (sscanf(p, "%llu %*s%n", &v, &k) == 1) {
        total += v;
        if (v > *largest)
            *largest = v;
        p += k;
    }
    free(out);
    return total;
}

/* VmHWM of this process, in bytes. */
static unsigned long long
peak_rss(void)
{
    char line[256];
    unsigned long long kb = 0;
    FILE *f = fopen("/proc/self/status", "re");

    assert_non_null(f);
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return kb << 10;
}

/* The report of DIR written by a child; what its resident set grew by at
 * its peak, from where it stood before (its copy of this process). */
static unsigned long long
report_in_child(const char *dir)
{
    int fds[2], status;
    unsigned long long grew = 0;
    pid_t pid;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ph_report_headline h;
        ph_error_t err = NULL;
        unsigned long long before, after;
        FILE *c = fopen("/proc/self/clear_refs", "we");
        /* 5: the peak resident set starts again from the current one */
        if (c == NULL || fputs("5", c) < 0 || fclose(c) != 0)
            _exit(3);
        before = peak_rss();
        if (ph_report_write_run(dir, NULL, &h, &err) < 0) {
            fprintf(stderr, "report: %s\n", err->msg);
            _exit(2);
        }
        after = peak_rss();
        after -= after > before ? before : after;
        if (write(fds[1], &after, sizeof after) != (ssize_t)sizeof after)
            _exit(4);
        _exit(0);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &grew, sizeof grew), (ssize_t)sizeof grew);
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return grew;
}

/* Three stacks files of one stack DEPTH frames deep in a run dir of
 * NAME; its report's bytes (the largest file's in *LARGEST) and what
 * the report's peak resident set grew by in *GREW. */
static unsigned long long
deep_run(const char *name, int depth, unsigned long long *largest, unsigned long long *grew)
{
    const char *dir = run_dir(name);

    for (int i = 0; i < 3; i++) {
        char file[64];
        snprintf(file, sizeof file, "stacks-20260101T00000%dZ-1.folded", i);
        write_folded(dir, file, 1, depth, 0);
    }
    *grew = report_in_child(dir);
    return report_bytes(dir, largest);
}

/* Finding 1.  Before: a stack of 200,000 frames drew 38 MB a file, the
 * report's graph again, and report.html its base64 (51 MB), all of it
 * held in memory; five times deeper, five times all that.  After: a
 * graph stops at 512 frames with one that says how many more there
 * were, the same few hundred kB however deep, and memory follows the
 * input (its frames), not what would have been drawn. */
static void
test_deep_stacks_bounded(void **state)
{
    unsigned long long largest, total, grew, largest5, total5, grew5;
    char path[800], *svg;

    (void)state;
    total = deep_run("20260101T000000Z-flamegraph", 200000, &largest, &grew);
    total5 = deep_run("20260101T000500Z-flamegraph", 1000000, &largest5, &grew5);
    print_message("200,000 deep: %llu bytes in all, the largest file %llu, peak RSS +%llu\n", total, largest, grew);
    print_message("1,000,000 deep: %llu bytes in all, the largest file %llu, peak RSS +%llu\n", total5, largest5, grew5);
    assert_true(total <= 1u << 20);
    assert_true(total5 <= total + 4096); /* digits of the counts */
    assert_true(!RSS_HELD || grew <= 32u << 20);
    assert_true(!RSS_HELD || grew5 <= grew + (32u << 20)); /* the input: 3 x 2 MB of text, 4 MB of frames */
    /* the cut is said where it is: 200,001 frames, 511 drawn, the rest one */
    snprintf(path, sizeof path, "%s/out/front/20260101T000000Z-flamegraph/report-stacks-20260101T000000Z-1.svg",
             test_dir);
    svg = rt_slurp(path, NULL);
    assert_non_null(strstr(svg, "<title>[199,490 frames cut] (1 samples, 100.00%)</title>"));
    free(svg);
}

/* 1,100 stacks side by side, 600 frames each, every frame a pixel wide:
 * 660,000 frames, 107 MB of SVG drawn whole.  Each graph is held to its
 * bound, frames merged past it (said), the report to a few graphs; the
 * renderer holds at most a frame per pixel per level while it measures. */
static void
test_wide_stacks_bounded(void **state)
{
    const char *dir = run_dir("20260101T000900Z-flamegraph");
    unsigned long long largest, total, grew;
    char path[800], *svg;

    (void)state;
    write_folded(dir, "stacks-20260101T000900Z-1.folded", 1, 3, 1);
    write_folded(dir, "stacks-20260101T000901Z-1.folded", 1100, 600, 1); /* the newest: the report's graph */
    grew = report_in_child(dir);
    total = report_bytes(dir, &largest);
    print_message("wide: %llu bytes in all, the largest file %llu, peak RSS +%llu\n", total, largest, grew);
    /* each graph within its bound; report.html embeds the report's once */
    assert_true(largest <= 2ull * PH_REPORT_GRAPH_MAX);
    assert_true(total <= 5ull * PH_REPORT_GRAPH_MAX);
    assert_true(!RSS_HELD || grew <= 192u << 20);
    snprintf(path, sizeof path, "%s/report-stacks-20260101T000901Z-1.svg", dir);
    svg = rt_slurp(path, NULL);
    assert_non_null(strstr(svg, " merged: the graph is held to 4194304 bytes</tspan>"));
    free(svg);
    snprintf(path, sizeof path, "%s/report-flamegraph.svg", dir);
    svg = rt_slurp(path, NULL);
    assert_non_null(strstr(svg, " merged: the graph is held to 4194304 bytes</tspan>"));
    assert_non_null(strstr(svg, "<title>all (1,100 samples, 100.00%)</title>"));
    free(svg);
}

/* A report's files together are held to max_bytes: the stacks files'
 * graphs the bound leaves no room for are not drawn, and report.html says
 * so; every byte written is counted. */
static void
test_report_files_held_to_bound(void **state)
{
    const char *dir = run_dir("20260101T010000Z-flamegraph");
    ph_report_limits lim = { 0, 8u << 20 };
    ph_report_headline h;
    ph_error_t err = NULL;
    unsigned long long largest, total;
    char path[800], *html;

    (void)state;
    for (int i = 0; i < 24; i++) { /* about 1 MB of graph each */
        char name[64];
        snprintf(name, sizeof name, "stacks-20260101T0100%02dZ-1.folded", i);
        write_folded(dir, name, 400, 12, 1);
    }
    if (ph_report_write_run_limited(dir, NULL, &lim, &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    total = report_bytes(dir, &largest);
    print_message("report: %llu bytes in all, the largest file %llu\n", total, largest);
    assert_true(total <= lim.max_bytes);
    assert_true(total > lim.max_bytes / 2);
    snprintf(path, sizeof path, "%s/report.html", dir);
    html = rt_slurp(path, NULL);
    assert_non_null(strstr(html, " stacks files have no graph of their own (`stacks-20260101T0100"));
    assert_non_null(strstr(html, "a report&#39;s files are held to 8"));
    assert_non_null(strstr(html, "; report-flamegraph.svg draws them all"));
    free(html);
    snprintf(path, sizeof path, "%s/report-stacks-20260101T010023Z-1.svg", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/report-stacks-20260101T010000Z-1.svg", dir);
    assert_int_equal(access(path, F_OK), 0);
    /* a bound smaller than the report's own graph: an error naming it */
    lim.max_bytes = 64u << 10;
    assert_int_equal(ph_report_write_run_limited(dir, NULL, &lim, &h, &err), -1);
    assert_int_equal(err->errnum, EFBIG);
    assert_non_null(strstr(err->msg, "the bound on one report"));
    ph_error_free(&err);
}

/* A report is held to min_free as the artifacts are: over it, an error
 * that names the limit, and nothing written (no report.html, no temp
 * file), so the run is as it was. */
static void
test_report_held_to_min_free(void **state)
{
    const char *dir = run_dir("20260101T020000Z-flamegraph");
    struct statvfs sv;
    ph_report_limits lim = { 0, 0 };
    ph_report_headline h;
    ph_error_t err = NULL;
    char *left;

    (void)state;
    write_folded(dir, "stacks-20260101T020000Z-1.folded", 3, 5, 1);
    write_folded(dir, "stacks-20260101T020001Z-1.folded", 3, 5, 1);
    assert_int_equal(statvfs(dir, &sv), 0);
    lim.min_free = (unsigned long long)sv.f_bavail * sv.f_frsize + (1ull << 30); /* more than there is */
    assert_int_equal(ph_report_write_run_limited(dir, NULL, &lim, &h, &err), -1);
    assert_int_equal(err->errnum, ENOSPC);
    assert_non_null(strstr(err->msg, "over the limit `min_free`"));
    ph_error_free(&err);
    left = rt_must("cd '%s' && ls", dir);
    assert_string_equal(left, "stacks-20260101T020000Z-1.folded\nstacks-20260101T020001Z-1.folded\n");
    free(left);
    /* with room, the same run is reported */
    lim.min_free = 1;
    if (ph_report_write_run_limited(dir, NULL, &lim, &h, &err) < 0)
        fail_msg("report: %s", err->msg);
}

/* A report refused part way (its first graph written, then a bound
 * passed) leaves none of its files: not the graph without the page that
 * shows it.  (Before: report-flamegraph.svg stayed, written into a run
 * whose report was refused as over min_free; seen once the language view
 * added a second graph before the page.) */
static void
test_report_refused_part_way_leaves_nothing(void **state)
{
    const char *dir = run_dir("20260101T030000Z-flamegraph");
    ph_report_limits lim = { 0, 0 };
    ph_report_headline h;
    ph_error_t err = NULL;
    unsigned long long largest, total;
    char *left;

    (void)state;
    write_folded(dir, "stacks-20260101T030000Z-1.folded", 40, 8, 1);
    write_folded(dir, "stacks-20260101T030001Z-1.folded", 40, 8, 1);
    if (ph_report_write_run_limited(dir, NULL, &lim, &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    total = report_bytes(dir, &largest);
    free(rt_must("cd '%s' && rm -f report* summary.json", dir));
    /* room for the largest file, not for all of them */
    lim.max_bytes = largest + 1;
    assert_true(lim.max_bytes < total);
    assert_int_equal(ph_report_write_run_limited(dir, NULL, &lim, &h, &err), -1);
    assert_int_equal(err->errnum, EFBIG);
    ph_error_free(&err);
    left = rt_must("cd '%s' && ls", dir);
    assert_string_equal(left, "stacks-20260101T030000Z-1.folded\nstacks-20260101T030001Z-1.folded\n");
    free(left);
}

/* Finding 2: a right-to-left override and a lone 0x9b in a function
 * name reach no page raw: not the headline, not a table, not the graph. */
static void
test_names_escaped_in_report(void **state)
{
    const char *dir = run_dir("20260101T030000Z-flamegraph");
    ph_report_headline h;
    ph_error_t err = NULL;
    char path[800], *html, *svg;
    FILE *f;

    (void)state;
    snprintf(path, sizeof path, "%s/stacks-20260101T030000Z-1.folded", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("main-thread;main;evil\xe2\x80\xaegnp.exe 90\nmain-thread;main;csi\x9b" "31m 10\n", f);
    assert_int_equal(fclose(f), 0);
    if (ph_report_write_run(dir, NULL, &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    snprintf(path, sizeof path, "%s/report.html", dir);
    html = rt_slurp(path, NULL);
    snprintf(path, sizeof path, "%s/report-flamegraph.svg", dir);
    svg = rt_slurp(path, NULL);
    assert_non_null(strstr(html, "<div class=\"headline\">100 samples, top evil\\u202Egnp.exe 90.0 % (self)</div>"));
    assert_non_null(strstr(html, ">csi\xef\xbf\xbd" "31m<"));
    assert_null(strstr(html, "\xe2\x80\xae"));
    assert_null(strstr(html, "\x9b" "31m"));
    assert_null(strstr(svg, "\xe2\x80\xae"));
    assert_non_null(strstr(svg, "<title>evil\\u202Egnp.exe (90 samples, 90.00%)</title>"));
    free(html);
    free(svg);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_deep_stacks_bounded, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_wide_stacks_bounded, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_report_files_held_to_bound, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_report_held_to_min_free, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_report_refused_part_way_leaves_nothing, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_names_escaped_in_report, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
