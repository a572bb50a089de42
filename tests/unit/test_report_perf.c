/* test_report_perf.c - reports of the runs issue 12 added: a perf run
 * (folded counts that are nanoseconds of cpu-clock, the conversion's
 * facts in convert.json, perf.data beside) and an attached run (run.json
 * names the service's container, which kept running; the strace log
 * ends with the calls strace let go of when it detached). */
#include "report_test_util.h"

#include <jansson.h>

#include "ph_flame.h"
#include "ph_report.h"

static char out_dir[600];
static ph_profile_set profiles;

static int
count_of(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void
put(const char *dir, const char *name, const char *text)
{
    char path[900];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* out/front/RUN/ with run.json (ATTACHED_TO: the service's container, or
 * NULL) and the shim's record of STOP_SIGNAL ending TARGET. */
static const char *
make_run(const char *run, const char *mode, const char *attached_to, const char *command, const char *stop_signal)
{
    static char dir[700];
    char buf[2048];

    snprintf(dir, sizeof dir, "%s/front/%s", out_dir, run);
    free(rt_must("mkdir -p %s", dir));
    snprintf(buf, sizeof buf,
             "{\"service\": \"front\", \"mode\": \"%s\", \"run\": \"%s\", \"started_at\": \"2026-11-23T01:15:38Z\", "
             "\"collected_at\": \"2026-11-23T01:15:52Z\", \"container\": \"0123456789abcdef\"%s%s%s, "
             "\"stages\": [{\"name\": \"signal until the profiler exited\", \"seconds\": 0.5}]}\n",
             mode, run, attached_to ? ", \"attached_to\": \"" : "", attached_to ? attached_to : "",
             attached_to ? "\"" : "");
    put(dir, "run.json", buf);
    snprintf(buf, sizeof buf,
             "{\"version\":1,\"command\":%s,\"wrapper_pid\":17,\"target_pid\":17,\"exit_code\":%s,\"signal\":%s,"
             "\"stop_requested\":true,\"stop_signal\":\"%s\",\"escalations\":[],\"wrapper_killed\":false,"
             "\"wrapper_signals\":[],\"leftovers_signalled\":0,\"started_at\":\"2026-11-23T01:15:40.043Z\","
             "\"ended_at\":\"2026-11-23T01:15:50.171Z\",\"run_seconds\":10.128,\"stop_seconds\":0.427,"
             "\"outcome\":\"stopped\",\"complete\":true}\n",
             command, attached_to ? "130" : "0", attached_to ? "\"SIGINT\"" : "null", stop_signal);
    put(dir, "ph-exit.json", buf);
    return dir;
}

static int
group_setup(void **state)
{
    ph_error_t err = NULL;

    (void)state;
    tu_mkdtemp();
    snprintf(out_dir, sizeof out_dir, "%s/out", test_dir);
    if (ph_profiles_load_dir("profiles", &profiles, &err) < 0)
        fail_msg("%s", err->msg);
    return 0;
}

static int
group_teardown(void **state)
{
    (void)state;
    ph_profiles_free(&profiles);
    tu_rmdir();
    return 0;
}

static json_t *
report(const char *run, ph_report_headline *h, char **html)
{
    char dir[800], path[900];
    ph_error_t err = NULL;
    json_error_t je;
    json_t *j;

    snprintf(dir, sizeof dir, "%s/front/%s", out_dir, run);
    if (ph_report_write_run(dir, &profiles, h, &err) < 0)
        fail_msg("report: %s", err->msg);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    if ((j = json_load_file(path, 0, &je)) == NULL)
        fail_msg("summary.json: %s", je.text);
    snprintf(path, sizeof path, "%s/report.html", dir);
    *html = rt_slurp(path, NULL);
    return j;
}

#define PERF_FOLDED                                                                                                    \
    "demo-front;_start;main;serve;front_checksum_payload 600000000\n"                                                  \
    "demo-front;_start;main;serve;recv 50000000\n"                                                                     \
    "demo-front;_start;main 17334664\n"

/* A perf run: the counts are nanoseconds, so the headline counts the
 * samples convert.json gives and says the CPU time; perf.data is an
 * artifact of its own kind, not a problem; the mode is perf. */
static void
test_perf_run(void **state)
{
    const char *d = make_run("20261123T011538Z-perf", "perf", NULL, "[\"perf\",\"record\",\"-g\",\"demo-front\"]",
                             "SIGTERM");
    char path[900], *html;
    ph_report_headline h;
    ph_flame_opts o;
    ph_error_t err = NULL;
    json_t *j, *fl, *pm;
    FILE *f;

    (void)state;
    put(d, "stacks.folded", PERF_FOLDED);
    put(d, "perf.data", "PERFILE2 (not read by the report)");
    put(d, "convert.json", "{\"version\": 1, \"command\": \"perf\", \"collapse\": \"perf\", \"event\": "
                           "\"cpu-clock:uhpppH\", \"samples\": 333, \"stacks\": 3, \"unit\": \"nanoseconds\", "
                           "\"unrecognized_lines\": 0}\n");
    snprintf(path, sizeof path, "%s/flamegraph.svg", d);
    f = fopen(path, "w");
    ph_flame_opts_init(&o);
    o.subtitle = "perf cpu-clock:uhpppH, in nanoseconds of CPU";
    o.countname = "ns";
    assert_int_equal(ph_flame_render_folded(PERF_FOLDED, strlen(PERF_FOLDED), &o, f, NULL, &err), 0);
    fclose(f);

    j = report("20261123T011538Z-perf", &h, &html);
    assert_string_equal(json_string_value(json_object_get(j, "mode")), "perf");
    assert_int_equal(json_array_size(json_object_get(j, "problems")), 0);
    assert_string_equal(h.text, "333 samples of cpu-clock:uhpppH (667 ms of CPU), top front_checksum_payload 89.9 % "
                                "(self)");
    fl = json_object_get(j, "flamegraph");
    pm = json_object_get(fl, "perf");
    assert_non_null(pm);
    assert_int_equal(json_integer_value(json_object_get(pm, "samples")), 333);
    assert_string_equal(json_string_value(json_object_get(pm, "event")), "cpu-clock:uhpppH");
    assert_string_equal(json_string_value(json_object_get(pm, "unit")), "nanoseconds");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(fl, "top_self"), 0), "name")),
                        "front_checksum_payload");
    /* the counts are nanoseconds: the tables print times, with units */
    assert_non_null(strstr(html, "data-v=\"600000000\">600 ms</td>"));
    assert_non_null(strstr(html, "data-v=\"667334664\">667 ms</td>")); /* main's total */
    assert_null(strstr(html, ">600 M</td>"));
    assert_non_null(strstr(html, "self time"));
    /* perf.data is listed as what it is */
    assert_non_null(strstr(html, "perf.data</td><td>perf</td>"));
    assert_non_null(strstr(html, "333 samples of cpu-clock:uhpppH"));
    assert_null(strstr(html, "convert.json")); /* the conversion's facts, not an artifact */
    free(html);
    json_decref(j);

    /* without perf.data (the recorder was killed), the report says so */
    snprintf(path, sizeof path, "%s/perf.data", d);
    assert_int_equal(unlink(path), 0);
    j = report("20261123T011538Z-perf", &h, &html);
    assert_int_equal(json_array_size(json_object_get(j, "problems")), 1);
    assert_non_null(strstr(json_string_value(json_array_get(json_object_get(j, "problems"), 0)), "no perf.data"));
    free(html);
    json_decref(j);
}

/* Work in frames without a function name is a problem that says whose
 * code it is and why: a module without symbols (a static Go binary
 * perf found no symbols for), JIT code without its perf map, the
 * sampler's own placeholders; a little of it is none. */
static void
test_unnamed(void **state)
{
    static const struct {
        const char *folded, *want;
    } cases[] = {
        { "lang_go_static;[lang_go_static] 1000000000\n",
          "100.0 % of the samples have no function name: lang_go_static (100.0 %) has no symbols" },
        { "node;[perf-8.map] 990000000\nnode;main;work 10000000\n",
          "99.0 % of the samples have no function name: perf-8.map (99.0 %) is JIT code without a perf map" },
        { "java;[unknown] 50\njava;[libjvm.so <7f01>] 30\njava;main 20\n",
          "80.0 % of the samples have no function name: code in no file (50.0 %) is JIT code without a perf map "
          "(the runtime wrote none, or the run did not carry it); libjvm.so (30.0 %), the JVM (HotSpot), has no symbols" },
        { "node;main;[unknown]+0x7fe51234 70\nnode;main;libfoo.so+0x1a2b 20\nnode;main;hot 10\n",
          "90.0 % of the samples have no function name: code in no file (70.0 %) is JIT code" },
        { "demo;main;[truncated] 50\ndemo;main;run 50\n", NULL },
        /* the wall clock's mark of a blocked thread is no unnamed code */
        { "svc;main;wait;read;[off-cpu] 75\nsvc;main;compute 25\n", NULL },
        { "demo;main;[libc.so.6] 9\ndemo;main;run 91\n", NULL },
        { "demo;main;operator+0x1(int) 50\ndemo;main;[x]y 50\n", NULL },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *d = make_run("20261123T020000Z-perf", "perf", NULL, "[\"perf\",\"record\",\"app\"]", "SIGTERM");
        ph_report_headline h;
        char *html;
        json_t *j, *pr;

        put(d, "stacks.folded", cases[i].folded);
        put(d, "perf.data", "PERFILE2");
        put(d, "flamegraph.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>\n");
        put(d, "convert.json", "{\"version\": 1, \"event\": \"cpu-clock\", \"samples\": 100, \"unit\": "
                               "\"nanoseconds\"}\n");
        j = report("20261123T020000Z-perf", &h, &html);
        pr = json_object_get(j, "problems");
        if (cases[i].want == NULL) {
            if (json_array_size(pr) != 0)
                fail_msg("case %zu: %s", i, json_string_value(json_array_get(pr, 0)));
        } else {
            if (json_array_size(pr) != 1)
                fail_msg("case %zu: %zu problems, the first %s", i, json_array_size(pr), json_string_value(json_array_get(pr, 0)));
            if (strstr(json_string_value(json_array_get(pr, 0)), cases[i].want) == NULL)
                fail_msg("case %zu: %s", i, json_string_value(json_array_get(pr, 0)));
            assert_non_null(strstr(html, "have no function name"));
        }
        free(html);
        json_decref(j);
    }
}

/* An attached strace run: the service kept running; the calls in
 * progress when strace detached are no problem, and the run says whose
 * container it joined and how it was detached. */
static void
test_attached_run(void **state)
{
    const char *d = make_run("20261123T011606Z-strace", "strace", "ee8ae9b28a2e0123456789",
                             "[\"/opt/profharness/bin/ph-attach\",\"--\",\"strace\",\"-f\",\"-p\",\"{pids}\"]",
                             "SIGINT");
    char *html;
    ph_report_headline h;
    json_t *j;

    (void)state;
    put(d, "strace.log",
        "8     01:16:09.180666 recvfrom(6, \"REQ 1089\\n\", 2048, 0, NULL, NULL) = 9 <0.004971>\n"
        "9     01:16:09.188988 close(4)          = 0 <0.000383>\n"
        "9     01:16:09.191750 futex(0x5613d9cada54, FUTEX_WAIT_BITSET_PRIVATE, 0, NULL, FUTEX_BITSET_MATCH_ANY "
        "<unfinished ...>\n"
        "8     01:16:09.245653 close(6)          = 0 <0.000127>\n"
        "8     01:16:09.245827 futex(0x5613d9cada54, FUTEX_WAIT_BITSET_PRIVATE, 0, NULL, FUTEX_BITSET_MATCH_ANY "
        "<detached ...>\n");
    j = report("20261123T011606Z-strace", &h, &html);
    assert_int_equal(json_array_size(json_object_get(j, "problems")), 0);
    assert_string_equal(json_string_value(json_object_get(j, "attached_to")), "ee8ae9b28a2e0123456789");
    assert_non_null(strstr(json_string_value(json_object_get(j, "stopped_detail")), "detached"));
    assert_string_equal(json_string_value(json_object_get(j, "stopped")), "detached (SIGINT)");
    assert_non_null(strstr(html, "<dt>attached to</dt><dd>container ee8ae9b28a2e, which kept running"));
    assert_non_null(strstr(html, "2 calls were in progress when strace detached"));
    assert_int_equal(h.problems, 0);
    free(html);
    json_decref(j);

    /* the same log from a restarted run: those calls never returned */
    d = make_run("20261123T011700Z-strace", "strace", NULL, "[\"strace\",\"-f\",\"demo-front\"]", "SIGTERM");
    put(d, "strace.log",
        "8     01:16:09.180666 recvfrom(6, \"REQ 1089\\n\", 2048, 0, NULL, NULL) = 9 <0.004971>\n"
        "8     01:16:09.245827 futex(0x5613d9cada54, FUTEX_WAIT_BITSET_PRIVATE, 0, NULL, FUTEX_BITSET_MATCH_ANY "
        "<detached ...>\n");
    j = report("20261123T011700Z-strace", &h, &html);
    assert_int_equal(json_array_size(json_object_get(j, "problems")), 1);
    assert_null(json_object_get(j, "attached_to"));
    assert_null(strstr(html, "<dt>attached to</dt>"));
    free(html);
    json_decref(j);

    /* the index tells the attached run from the restarted one */
    {
        ph_error_t err = NULL;
        char path[900];

        if (ph_report_write_index(out_dir, &err) < 0)
            fail_msg("index: %s", err->msg);
        snprintf(path, sizeof path, "%s/index.html", out_dir);
        html = rt_slurp(path, NULL);
        assert_non_null(strstr(html, "strace (attached)"));
        assert_non_null(strstr(html, "perf"));
        assert_int_equal(count_of(html, "(attached)"), 1);
        free(html);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_perf_run),
        cmocka_unit_test(test_unnamed),
        cmocka_unit_test(test_attached_run),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
