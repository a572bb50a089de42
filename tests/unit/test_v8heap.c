/* test_v8heap.c - V8's sampling heap profile (the heap mode's node
 * preload, images/tools/ph-heapprof.js; node's --heap-prof writes the
 * same) as the heap mode's JavaScript view (ph_v8heap.c,
 * ph_report_heap.c).
 *
 * tests/unit/data/heap/heap_two.heapprofile was written by node 20 on
 * the host: `PH_HEAPPROF_DIR=D PH_HEAPPROF_INTERVAL=65536 NODE_OPTIONS="--require
 * images/tools/ph-heapprof.js" node /opt/heap/heap_two.js`, stopped by
 * SIGTERM (its handler exits): keepThree keeps 24 MiB of arrays, keepOne
 * 8 MiB.  Its figures are checked against the file's own
 * selfSize sums (jq's, not ours). */
#include "report_test_util.h"

#include <jansson.h>
#include <math.h>

#include "ph_report.h"
#include "ph_v8heap.h"

#define PROFILE "tests/unit/data/heap/heap_two.heapprofile"

static json_t *
load(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);

    if (j == NULL)
        fail_msg("%s: %s", path, je.text);
    return j;
}

/* The bytes of FO's stacks whose leaf starts with PREFIX. */
static double
leaf_bytes(const ph_folded *fo, const char *prefix)
{
    double sum = 0;

    for (size_t i = 0; i < ph_folded_n_stacks(fo); i++) {
        ph_folded_stack s = ph_folded_get_stack(fo, i);

        if (strncmp(ph_folded_name(fo, s.frames[s.depth - 1], NULL), prefix, strlen(prefix)) == 0)
            sum += s.count;
    }
    return sum;
}

/* jq's sum of the selfSize of the nodes named FN ("" : all). */
static double
jq_self(const char *fn)
{
    char *out = rt_must("jq '[.. | objects | select(has(\"selfSize\")) | select(\"%s\" == \"\" or "
                        ".callFrame.functionName == \"%s\") | .selfSize] | add' " PROFILE, fn, fn);
    double v = strtod(out, NULL);

    free(out);
    return v;
}

/* The recorded profile: keepThree and keepOne's bytes as the file says,
 * 3 to 1 within 5 %, named `function (url:line)` with the line 1-based. */
static void
test_v8heap_recorded(void **state)
{
    (void)state;
    json_t *j = load(PROFILE);
    ph_error_t err = NULL;
    ph_folded *fo = ph_folded_new(0, &err);
    ph_v8heap_info info;
    double three, one;

    assert_non_null(fo);
    assert_int_equal(ph_v8heap_fold(j, fo, &info, &err), 0);
    three = leaf_bytes(fo, "keepThree (");
    one = leaf_bytes(fo, "keepOne (");
    print_message("# keepThree %.0f B, keepOne %.0f B, all %.0f B, %zu samples, %zu nodes\n", three, one, info.bytes,
                  info.samples, info.nodes);
    assert_true(fabs(three - jq_self("keepThree")) < 1);
    assert_true(fabs(one - jq_self("keepOne")) < 1);
    assert_true(fabs(info.bytes - jq_self("")) < 1);
    assert_true(fabs(ph_folded_get_stats(fo)->total - info.bytes) < 1);
    assert_true(three / (three + one) > 0.70 && three / (three + one) < 0.80);
    assert_true(info.samples > 100);
    assert_int_equal(info.cut, 0);
    /* heap_two.js's keepThree is on its line 9 (lineNumber 8 in the file) */
    {
        int named = 0;

        for (size_t i = 0; i < ph_folded_n_names(fo); i++) {
            const char *n = ph_folded_name(fo, (uint32_t)i, NULL);

            if (strncmp(n, "keepThree (", 11) == 0)
                named = strstr(n, "/heap_two.js:9)") != NULL;
        }
        assert_true(named);
    }
    ph_folded_free(fo);
    json_decref(j);
}

/* A container's profile: a chain deeper than the cap walked to the cap
 * (no recursion, the rest counted as cut), a name's control characters
 * replaced, a function with no name `(anonymous)`; not a profile: an error. */
static void
test_v8heap_bounds(void **state)
{
    (void)state;
    json_t *root = json_object(), *at = root;
    ph_error_t err = NULL;
    ph_folded *fo = ph_folded_new(0, &err);
    ph_v8heap_info info;

    json_object_set_new(root, "callFrame", json_pack("{s:s, s:s, s:i}", "functionName", "(root)", "url", "",
                                                     "lineNumber", -1));
    json_object_set_new(root, "selfSize", json_integer(0));
    for (int d = 0; d < 3 * PH_V8HEAP_MAX_DEPTH; d++) {
        json_t *kid = json_object(), *kids = json_array();

        json_object_set_new(kid, "callFrame", json_pack("{s:s, s:s, s:i}", "functionName", d == 0 ? "evil\nname\x1b[2J" : d == 1 ? "" : "f",
                                                         "url", "a.js", "lineNumber", d));
        json_object_set_new(kid, "selfSize", json_integer(10));
        json_array_append_new(kids, kid);
        json_object_set_new(at, "children", kids);
        at = kid;
    }
    json_object_set_new(at, "children", json_array());
    {
        json_t *p = json_pack("{s:o, s:[]}", "head", root, "samples");

        assert_int_equal(ph_v8heap_fold(p, fo, &info, &err), 0);
        assert_int_equal(info.cut, 1);
        assert_int_equal(info.nodes, PH_V8HEAP_MAX_DEPTH);
        /* every node read has its 10 bytes, the one at the cap's on its parent */
        assert_true(info.bytes == 10.0 * PH_V8HEAP_MAX_DEPTH);
        assert_true(ph_folded_get_stats(fo)->total == info.bytes);
        assert_string_equal(ph_folded_name(fo, 0, NULL), "evil?name?[2J (a.js:1)");
        assert_string_equal(ph_folded_name(fo, 1, NULL), "(anonymous) (a.js:2)");
        json_decref(p);
    }
    {
        json_t *p = json_pack("{s:s}", "nodes", "x");

        assert_int_equal(ph_v8heap_fold(p, fo, &info, &err), -1);
        assert_non_null(strstr(err->msg, "not a V8 heap profile"));
        ph_error_free(&err);
        json_decref(p);
    }
    ph_folded_free(fo);
}

/* A heap run with node's profile beside the sampler's files: the report
 * says the V8 objects first, names keepThree in the headline and in
 * summary.json; a node that said it samples but wrote no profile is a
 * problem. */
static void
test_v8heap_report(void **state)
{
    (void)state;
    char dir[700], path[800];
    ph_report_headline h;
    ph_error_t err = NULL;
    json_t *s;
    const char *site;
    static const char node_rt[] = "{\"runtimes\": [{\"runtime\": \"node\", \"objects\": true, \"note\": \"V8 seen\", "
                                  "\"brief\": \"V8 objects sampled (HeapProfiler)\"}]}\n";

    tu_mkdtemp();
    snprintf(dir, sizeof dir, "%s/svc/20261202T101500Z-heap", test_dir);
    free(rt_must("mkdir -p %s && cp " PROFILE " %s/Heap-7-1796209050928.heapprofile", dir, dir));
    tu_write("svc/20261202T101500Z-heap/run.json", "{\"service\": \"svc\", \"mode\": \"heap\", \"run\": \"20261202T101500Z-heap\"}\n");
    tu_write("svc/20261202T101500Z-heap/inuse_space-20261202T101600Z-1.folded", "main;uv_run;malloc 1000\n");
    tu_write("svc/20261202T101500Z-heap/peak_inuse_space-20261202T101600Z-1.folded", "main;uv_run;malloc 1000\n");
    tu_write("svc/20261202T101500Z-heap/alloc_space-20261202T101600Z-1.folded", "main;uv_run;malloc 1000\n");
    tu_write("svc/20261202T101500Z-heap/heap-20261202T101600Z-1.json", node_rt);
    if (ph_report_write_run(dir, rt_profiles(), &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    print_message("# %s\n", h.text);
    assert_non_null(strstr(h.text, "V8 objects sampled (HeapProfiler); JavaScript objects live at the exit "));
    assert_non_null(strstr(h.text, "(keepThree ("));
    snprintf(path, sizeof path, "%s/summary.json", dir);
    s = load(path);
    site = json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(s, "heap"),
                                                                                             "v8"), "top_sites"), 0),
                                             "site"));
    assert_non_null(site);
    assert_true(strncmp(site, "keepThree (", 11) == 0);
    assert_true(fabs(json_number_value(json_object_get(json_object_get(json_object_get(s, "heap"), "v8"), "live_bytes")) -
                     jq_self("")) < 1);
    json_decref(s);
    /* said before the malloc figures */
    snprintf(path, sizeof path, "%s/report.html", dir);
    {
        char *html = rt_slurp(path, NULL);
        const char *v8 = strstr(html, "JavaScript objects (V8"), *card = strstr(html, "in use at the peak");

        assert_non_null(v8);
        assert_non_null(card);
        assert_true(v8 < card);
        free(html);
    }
    /* no profile written (node killed by a signal): said as a problem */
    free(rt_must("rm %s/*.heapprofile", dir));
    if (ph_report_write_run(dir, rt_profiles(), &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    s = load(path);
    {
        char *txt = json_dumps(json_object_get(s, "problems"), 0);

        assert_non_null(strstr(txt, "wrote no heap profile"));
        free(txt);
    }
    json_decref(s);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v8heap_recorded),
        cmocka_unit_test(test_v8heap_bounds),
        cmocka_unit_test(test_v8heap_report),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);

    rt_profiles_free();
    return rc;
}
