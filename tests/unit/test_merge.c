/* test_merge.c - runs on several Engines as one: ph_folded_merge and
 * ph_folded_write (flame), ph_report_merge_runs and the index's hosts
 * (report). */
#include "report_test_util.h"

#include <sys/stat.h>

#include <jansson.h>

#include "ph_folded.h"
#include "ph_report.h"

static void
test_folded_merge_write(void **state)
{
    ph_error_t err = NULL;
    const char a[] = "main;work;hash 10\nmain;idle 2\n", b[] = "main;work;hash 5\nmain;other;x 1.5\n";
    ph_folded *fa = ph_folded_parse(a, strlen(a), 0, &err), *fb = ph_folded_parse(b, strlen(b), 0, &err);
    ph_folded *sum = ph_folded_new(0, &err);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);

    (void)state;
    assert_non_null(fa);
    assert_non_null(fb);
    assert_non_null(sum);
    assert_int_equal(ph_folded_merge(sum, fa, &err), 0);
    assert_int_equal(ph_folded_merge(sum, fb, &err), 0);
    /* the same stack from both: one stack, counts added */
    assert_int_equal(ph_folded_n_stacks(sum), 3);
    assert_true(ph_folded_get_stats(sum)->total == 18.5);
    assert_int_equal(ph_folded_write(sum, m, &err), 0);
    fclose(m);
    assert_string_equal(text, "main;work;hash 15\nmain;idle 2\nmain;other;x 1.5\n");
    free(text);
    ph_folded_free(fa);
    ph_folded_free(fb);
    ph_folded_free(sum);
}

/* TEST_DIR/OUT/@HOST/front/RUN with MODE's run.json and FOLDED as its
 * sampler's stacks; its path (static). */
static const char *
host_run(const char *host, const char *run, const char *mode, const char *folded)
{
    static char dir[600];

    snprintf(dir, sizeof dir, "%s/out/@%s/front/%s", test_dir, host, run);
    free(rt_must("mkdir -p '%s' && printf '{\"service\":\"front\",\"mode\":\"%s\",\"started_at\":\"2026-11-27T10:00:0%c\"}' "
                 "> '%s/run.json' && printf '%s' > '%s/stacks-1-final-1.folded'",
                 dir, mode, host[1], dir, folded, dir));
    return dir;
}

static void
test_merge_runs(void **state)
{
    ph_error_t err = NULL;
    char a[600], b[600], dir[600], why[256], path[700], *text;
    ph_merge_src src[2];
    ph_report_headline h;
    ph_profile_set profiles = { 0 };
    json_t *run;

    (void)state;
    snprintf(a, sizeof a, "%s", host_run("h1", "20261127T100000Z-flamegraph", "flamegraph",
                                         "1;main;work;hash 30\\n1;main;idle 6\\n"));
    snprintf(b, sizeof b, "%s", host_run("h2", "20261127T100000Z-flamegraph", "flamegraph",
                                         "7;main;work;hash 20\\n7;main;send 4\\n"));
    src[0] = (ph_merge_src){ "h1", a };
    src[1] = (ph_merge_src){ "h2", b };
    snprintf(dir, sizeof dir, "%s/out/front/.merge", test_dir);
    free(rt_must("mkdir -p '%s'", dir));
    assert_int_equal(ph_report_merge_runs(dir, "20261127T100000Z-flamegraph-merged", src, 2, NULL, why, sizeof why, &err),
                     0);
    /* the total is the hosts' totals added up */
    text = rt_must("awk '{ s += $NF } END { print s }' '%s/" PH_MERGED_FOLDED "'", dir);
    assert_string_equal(text, "60\n");
    free(text);
    text = rt_must("gzip -dc '%s/" PH_MERGED_PPROF "' | wc -c", dir);
    assert_true(atoi(text) > 0);
    free(text);
    snprintf(path, sizeof path, "%s/run.json", dir);
    run = json_load_file(path, 0, NULL);
    assert_non_null(run);
    assert_string_equal(json_string_value(json_object_get(run, "mode")), "flamegraph");
    assert_string_equal(json_string_value(json_object_get(run, "started_at")), "2026-11-27T10:00:01");
    assert_int_equal(json_array_size(json_object_get(run, PH_MERGED_FROM)), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(run, PH_MERGED_FROM), 1), "dir")),
                        "@h2/front/20261127T100000Z-flamegraph");
    json_decref(run);
    /* reported as any run: its graph, the hosts linked, none of the mode's
     * own files (the sampler's SVGs) said to be missing */
    assert_int_equal(ph_profiles_load_dir("profiles", &profiles, &err), 0);
    assert_int_equal(ph_report_write_run(dir, &profiles, &h, &err), 0);
    ph_profiles_free(&profiles);
    assert_string_equal(h.run, "20261127T100000Z-flamegraph-merged");
    assert_int_equal(h.problems, 0);
    assert_non_null(strstr(h.text, "60 samples"));
    snprintf(path, sizeof path, "%s/report.html", dir);
    text = rt_slurp(path, NULL);
    assert_non_null(strstr(text, "href=\"../../@h2/front/20261127T100000Z-flamegraph/report.html\""));
    free(text);
    free(rt_must("mv '%s' '%s/out/front/20261127T100000Z-flamegraph-merged'", dir, test_dir));

    /* the index: each host's run and the merged one, none taken for another */
    snprintf(path, sizeof path, "%s/out", test_dir);
    assert_int_equal(ph_report_write_index(path, &err), 0);
    snprintf(path, sizeof path, "%s/out/index.html", test_dir);
    text = rt_slurp(path, NULL);
    assert_non_null(strstr(text, "id=\"h1--front--20261127T100000Z-flamegraph\""));
    assert_non_null(strstr(text, "id=\"h2--front--20261127T100000Z-flamegraph\""));
    assert_non_null(strstr(text, "id=\"merged--front--20261127T100000Z-flamegraph-merged\""));
    assert_non_null(strstr(text, "profharness report @h1/front/20261127T100000Z-flamegraph<")); /* no report yet */
    assert_non_null(strstr(text, "href=\"front/20261127T100000Z-flamegraph-merged/report.html\""));
    assert_non_null(strstr(text, "merged: h1, h2"));
    assert_non_null(strstr(text, "3 runs of 1 service"));
    assert_null(strstr(text, ">@h1<")); /* a host's dir is no service */
    free(text);
}

static void
test_merge_refused(void **state)
{
    ph_error_t err = NULL;
    char a[600], b[600], dir[600], why[256];
    ph_merge_src src[2];

    (void)state;
    snprintf(a, sizeof a, "%s", host_run("h1", "20261127T110000Z-flamegraph", "flamegraph", "1;main 3\\n"));
    snprintf(b, sizeof b, "%s", host_run("h2", "20261127T110000Z-wall", "wall", "1;main 3\\n"));
    src[0] = (ph_merge_src){ "h1", a };
    src[1] = (ph_merge_src){ "h2", b };
    snprintf(dir, sizeof dir, "%s/out/front/.merge2", test_dir);
    free(rt_must("mkdir -p '%s'", dir));
    /* different modes are not added up; the answer says why */
    assert_int_equal(ph_report_merge_runs(dir, "x-merged", src, 2, NULL, why, sizeof why, &err), 1);
    assert_null(err);
    assert_non_null(strstr(why, "different services or modes"));
    /* a mode without stacks: nothing to add up */
    snprintf(b, sizeof b, "%s", host_run("h2", "20261127T120000Z-strace", "strace", "x"));
    free(rt_must("rm '%s/stacks-1-final-1.folded' && echo 'read(3) = 1' > '%s/strace.log.1'", b, b));
    src[0] = (ph_merge_src){ "h2", b };
    assert_int_equal(ph_report_merge_runs(dir, "y-merged", src, 1, NULL, why, sizeof why, &err), 1);
    assert_non_null(strstr(why, "no folded stacks"));
}

/* convert.json into DIR, as perf's conversion writes it. */
static void
put_convert(const char *dir, const char *event, const char *unit, int samples)
{
    free(rt_must("printf '{\"version\":1,\"event\":\"%s\",\"unit\":\"%s\",\"samples\":%d}' > '%s/convert.json'", event,
                 unit, samples, dir));
}

/* perf runs: convert.json's samples added up, the pprof's type what the
 * unit says; runs of different units or services are not added up. */
static void
test_merge_perf(void **state)
{
    ph_error_t err = NULL;
    char a[600], b[600], dir[600], why[256], path[700], *text;
    ph_merge_src src[2];
    json_t *conv;

    (void)state;
    snprintf(a, sizeof a, "%s", host_run("h1", "20261127T130000Z-perf", "perf", "main;work 3000\\n"));
    snprintf(b, sizeof b, "%s", host_run("h2", "20261127T130000Z-perf", "perf", "main;work 1000\\n"));
    put_convert(a, "cpu-clock", "nanoseconds", 3);
    put_convert(b, "cpu-clock", "nanoseconds", 4);
    src[0] = (ph_merge_src){ "h1", a };
    src[1] = (ph_merge_src){ "h2", b };
    snprintf(dir, sizeof dir, "%s/out/front/.merge3", test_dir);
    free(rt_must("mkdir -p '%s'", dir));
    assert_int_equal(ph_report_merge_runs(dir, "p-merged", src, 2, NULL, why, sizeof why, &err), 0);
    snprintf(path, sizeof path, "%s/convert.json", dir);
    conv = json_load_file(path, 0, NULL);
    assert_non_null(conv);
    assert_int_equal(json_integer_value(json_object_get(conv, "samples")), 7);
    assert_string_equal(json_string_value(json_object_get(conv, "unit")), "nanoseconds");
    json_decref(conv);
    /* CPU time in nanoseconds, not a count of cpu-clock events */
    text = rt_must("gzip -dc '%s/" PH_MERGED_PPROF "' | grep -a -o -e nanoseconds -e cpu-clock -e count | sort -u",
                   dir);
    assert_string_equal(text, "nanoseconds\n");
    free(text);

    /* a count of events and nanoseconds are not added up, either way round */
    put_convert(b, "cpu-clock", "events", 4);
    assert_int_equal(ph_report_merge_runs(dir, "p-merged", src, 2, NULL, why, sizeof why, &err), 1);
    assert_non_null(strstr(why, "different events or units"));
    src[0] = (ph_merge_src){ "h2", b };
    src[1] = (ph_merge_src){ "h1", a };
    assert_int_equal(ph_report_merge_runs(dir, "p-merged", src, 2, NULL, why, sizeof why, &err), 1);
    assert_non_null(strstr(why, "different events or units"));
    assert_null(err);

    /* two services' runs of one mode are not one service's */
    put_convert(b, "cpu-clock", "nanoseconds", 4);
    free(rt_must("sed -i 's/\"front\"/\"back\"/' '%s/run.json'", b));
    assert_int_equal(ph_report_merge_runs(dir, "p-merged", src, 2, NULL, why, sizeof why, &err), 1);
    assert_non_null(strstr(why, "different services or modes"));
    assert_null(err);
}

/* A host's name goes into the link to its run as a URL's path segment:
 * escaped for that, not as text ('#' would start the URL's fragment). */
static void
test_merge_host_link(void **state)
{
    ph_error_t err = NULL;
    char a[600], dir[600], why[256], path[700], *text;
    ph_merge_src src[1];
    ph_report_headline h;

    (void)state;
    snprintf(a, sizeof a, "%s", host_run("h#3", "20261127T140000Z-flamegraph", "flamegraph", "main 3\\n"));
    src[0] = (ph_merge_src){ "h#3", a };
    snprintf(dir, sizeof dir, "%s/out/front/.merge4", test_dir);
    free(rt_must("mkdir -p '%s'", dir));
    assert_int_equal(ph_report_merge_runs(dir, "q-merged", src, 1, NULL, why, sizeof why, &err), 0);
    assert_int_equal(ph_report_write_run(dir, NULL, &h, &err), 0);
    snprintf(path, sizeof path, "%s/report.html", dir);
    text = rt_slurp(path, NULL);
    assert_non_null(strstr(text, "href=\"../../@h%233/front/20261127T140000Z-flamegraph/report.html\""));
    free(text);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_folded_merge_write),
        cmocka_unit_test_setup_teardown(test_merge_runs, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_merge_refused, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_merge_perf, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_merge_host_link, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
