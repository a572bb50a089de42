/* test_timing.c - the stage tree: recording (nesting, threads, detached
 * and concurrent stages), flattening into self times, the tables, the
 * folded flamechart, the Chrome trace, the run.json tree, and the OTLP
 * settings and encodings.
 *
 * Durations are never measured here: trees with exact times are built by
 * hand (the flattening and the writers are pure over a tree), and the
 * recorder is checked for structure only.  The OTLP wire format is checked
 * against an independent decoder in tests/60-timing.bats. */
#include "test_util.h"

#include <jansson.h>
#include <pthread.h>

#include "ph_otlp.h"
#include "ph_timing.h"
#include "ph_timing_out.h"
#include "ph_util.h"

/* ---- hand-built trees ----------------------------------------------------- */

static ph_stage *
mk(ph_stage *parent, const char *cat, const char *name, uint64_t start, uint64_t end, int thread, unsigned flags)
{
    ph_stage *s = calloc(1, sizeof *s);

    assert_non_null(s);
    s->name = strdup(name);
    snprintf(s->category, sizeof s->category, "%s", cat);
    s->start_ns = start * 1000; /* the trees below are written in microseconds */
    s->end_ns = end * 1000;
    s->thread = thread;
    s->flags = flags;
    s->span_id[6] = (unsigned char)(start >> 8);
    s->span_id[7] = (unsigned char)(start + 1);
    s->parent = parent;
    if (parent) {
        if (parent->last_child)
            parent->last_child->next = s;
        else
            parent->first_child = s;
        parent->last_child = s;
    }
    return s;
}

static void
free_tree(ph_stage *s)
{
    while (s) {
        ph_stage *next = s->next;

        free_tree(s->first_child);
        free(s->name);
        free(s->error);
        for (int i = 0; i < PH_STAGE_ATTRS; i++) {
            free(s->attr_key[i]);
            free(s->attr_val[i]);
        }
        free(s);
        s = next;
    }
}

/* root [1000,1100] on thread 1:
 *   A   engine [1010,1040]            serial, with A1 [1015,1025]
 *   B   collect [1020,1090] thread 2  concurrent, with B1 [1030,1060]
 *   C   engine [1050,1095]            serial
 * Appended out of start order (C before B) as threads would. */
static ph_stage *
sample_tree(ph_stage **a, ph_stage **b, ph_stage **c)
{
    ph_stage *root = mk(NULL, "harness", "stop", 1000, 1100, 1, 0);

    *a = mk(root, "engine", "GET /a", 1010, 1040, 1, 0);
    mk(*a, "engine", "A1", 1015, 1025, 1, 0);
    *c = mk(root, "engine", "POST /containers/{id}/stop", 1050, 1095, 1, 0);
    *b = mk(root, "collect", "stop front", 1020, 1090, 2, PH_STAGE_CONCURRENT);
    mk(*b, "collect", "B1;odd\nname", 1030, 1060, 2, 0);
    (*b)->bytes_in = 2048;
    (*c)->bytes_out = 10;
    return root;
}

static void
test_flatten_self_times(void **state)
{
    ph_stage *a, *b, *c, *root = sample_tree(&a, &b, &c);
    size_t n = 0, ns = 0;
    ph_timing_row *rows = ph_timing_flatten(root, &n);
    ph_timing_sum *sums;
    uint64_t counted = 0;

    (void)state;
    assert_int_equal(n, 6);
    /* Flow order: the root, then children by start time. */
    assert_string_equal(rows[0].stage->name, "stop");
    assert_string_equal(rows[1].stage->name, "GET /a");
    assert_string_equal(rows[2].stage->name, "A1");
    assert_string_equal(rows[3].stage->name, "stop front");
    assert_string_equal(rows[4].stage->name, "B1;odd\nname");
    assert_string_equal(rows[5].stage->name, "POST /containers/{id}/stop");
    assert_int_equal(rows[2].depth, 2);
    /* The concurrent child is not subtracted from the root: 100 - 30 - 45. */
    assert_int_equal(rows[0].self_ns, 25000);
    assert_int_equal(rows[1].self_ns, 20000);
    assert_int_equal(rows[2].self_ns, 10000);
    assert_int_equal(rows[3].self_ns, 40000);
    assert_int_equal(rows[4].self_ns, 30000);
    assert_int_equal(rows[5].self_ns, 45000);
    assert_int_equal(rows[3].total_ns, 70000);
    /* Neither the concurrent stage nor what ran under it is counted, and
     * the counted self times are the wall time exactly. */
    assert_true(rows[0].counted && rows[1].counted && rows[2].counted && rows[5].counted);
    assert_false(rows[3].counted);
    assert_false(rows[4].counted);
    for (size_t i = 0; i < n; i++)
        counted += rows[i].counted ? rows[i].self_ns : 0;
    assert_int_equal(counted, 100000);

    sums = ph_timing_summarise(rows, n, &ns);
    assert_int_equal(ns, 2);
    assert_string_equal(sums[0].category, "engine"); /* largest first */
    assert_int_equal(sums[0].self_ns, 75000);
    assert_int_equal(sums[0].stages, 3);
    assert_int_equal(sums[0].bytes, 10);
    assert_string_equal(sums[1].category, "harness");
    assert_int_equal(sums[1].self_ns, 25000);
    free(sums);
    free(rows);
    free_tree(root);
}

static char *
capture(int (*fn)(FILE *, const ph_stage *, unsigned, ph_error_t *), const ph_stage *tree, unsigned flags)
{
    static char *buf; /* static: the stream writes it after this frame */
    static size_t len;
    FILE *f;

    buf = NULL;
    len = 0;
    f = open_memstream(&buf, &len);
    ph_error_t err = NULL;

    assert_non_null(f);
    assert_int_equal(fn(f, tree, flags, &err), 0);
    fclose(f);
    return buf;
}

static int
print_cb(FILE *f, const ph_stage *t, unsigned flags, ph_error_t *err)
{
    return ph_timing_print(f, t, flags, err);
}

static int
folded_cb(FILE *f, const ph_stage *t, unsigned flags, ph_error_t *err)
{
    (void)flags;
    return ph_timing_write_folded(f, t, err);
}

static void
test_tables(void **state)
{
    ph_stage *a, *b, *c, *root = sample_tree(&a, &b, &c);
    char *out;
    const char *p, *q;

    (void)state;
    c->failed = 1;
    out = capture(print_cb, root, 0);
    /* Detailed rows in flow order, indented by depth; the concurrent stage
     * marked; then the summary by category, largest first, and the wall. */
    p = strstr(out, "SELF  CATEGORY");
    assert_non_null(p);
    p = strstr(p, "   25 us  harness");
    assert_non_null(p);
    q = strstr(p, "  GET /a\n");
    assert_non_null(q);
    q = strstr(q, "      A1\n");
    assert_non_null(q);
    q = strstr(q, "     40 us  collect      2.0 KiB    || stop front\n");
    assert_non_null(q);
    q = strstr(q, "B1;odd name\n"); /* one line per stage, whatever the name */
    assert_non_null(q);
    q = strstr(q, "  POST /containers/{id}/stop  (failed)\n");
    assert_non_null(q);
    q = strstr(q, "%");
    assert_non_null(q);
    q = strstr(q, "75 us    75.0       10 B  engine\n");
    assert_non_null(q);
    q = strstr(q, "25 us    25.0          -  harness\n");
    assert_non_null(q);
    assert_non_null(strstr(q, "100 us   100.0       10 B  total (wall)\n"));
    free(out);

    /* Sorted: by self time, flat. */
    out = capture(print_cb, root, PH_TIMING_SORTED);
    p = strstr(out, "POST /containers");
    q = strstr(out, "|| stop front");
    assert_non_null(p);
    assert_non_null(q);
    assert_true(p < q); /* 45 before 40 */
    assert_true(q < strstr(out, "B1"));
    assert_null(strstr(out, "    A1")); /* no indentation */
    free(out);
    free_tree(root);
}

/* A duration in the unit that shows it with two or three figures: us
 * below 1 ms, ms to 1 s (one decimal below 10 ms), s above. */
static void
test_fmt_ns(void **state)
{
    static const struct {
        uint64_t ns;
        const char *text;
    } cases[] = {
        { 0, "0 us" },           { 999400, "999 us" },       { 1000000, "1.0 ms" },
        { 9940000, "9.9 ms" },   { 10000000, "10 ms" },      { 250000000, "250 ms" },
        { 999000000, "999 ms" }, { 1000000000, "1.00 s" },   { 9990000000u, "9.99 s" },
        { 10000000000u, "10.0 s" }, { 125000000000u, "125.0 s" },
    };
    char buf[32];

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(ph_timing_fmt_ns(cases[i].ns, buf, sizeof buf), cases[i].text);
}

static void
test_folded_flamechart(void **state)
{
    ph_stage *a, *b, *c, *root = sample_tree(&a, &b, &c);
    char *out;
    /* tracing-flame's format: thread first, "; " between frames, ns; a
     * stage's time cut where its serial children run; the concurrent stage
     * on its thread's lane, after the main lane. */
    static const char want[] = "ThreadId(1)-main; stop 10000\n"
                               "ThreadId(1)-main; stop; GET /a 5000\n"
                               "ThreadId(1)-main; stop; GET /a; A1 10000\n"
                               "ThreadId(1)-main; stop; GET /a 15000\n"
                               "ThreadId(1)-main; stop 10000\n"
                               "ThreadId(1)-main; stop; POST /containers/{id}/stop 45000\n"
                               "ThreadId(1)-main; stop 5000\n"
                               "ThreadId(2); stop; stop front 10000\n"
                               "ThreadId(2); stop; stop front; B1,odd name 30000\n"
                               "ThreadId(2); stop; stop front 30000\n";

    (void)state;
    out = capture(folded_cb, root, 0);
    assert_string_equal(out, want);
    free(out);

    /* A stage concurrent with its parent on the parent's own thread (a
     * detached wait) gets a lane of its own. */
    mk(root, "engine", "POST /containers/{id}/wait", 1045, 1098, 1, PH_STAGE_CONCURRENT | PH_STAGE_DETACHED);
    out = capture(folded_cb, root, 0);
    assert_non_null(strstr(out, "ThreadId(1)-main; stop; POST /containers/{id}/stop 45000\nThreadId(1)-main; stop 5000\n"));
    assert_non_null(strstr(out, "ThreadId(1)-concurrent-2; stop; POST /containers/{id}/wait 53000\n"));
    free(out);
    free_tree(root);
}

static void
test_trace_and_tree_json(void **state)
{
    ph_stage *a, *b, *c, *root = sample_tree(&a, &b, &c);
    json_t *doc = ph_timing_trace_json(root), *ev, *tree;
    size_t i, x = 0, threads = 0;
    int saw_b = 0;

    (void)state;
    assert_non_null(doc);
    json_array_foreach(json_object_get(doc, "traceEvents"), i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));

        if (strcmp(ph, "X") == 0) {
            x++;
            if (strcmp(json_string_value(json_object_get(ev, "name")), "stop front") == 0) {
                saw_b = 1;
                assert_true(json_real_value(json_object_get(ev, "ts")) == 20.0); /* us from the start */
                assert_true(json_real_value(json_object_get(ev, "dur")) == 70.0);
                assert_int_equal(json_integer_value(json_object_get(ev, "tid")), 2);
                assert_string_equal(json_string_value(json_object_get(ev, "cat")), "collect");
                assert_int_equal(json_integer_value(json_object_get(json_object_get(ev, "args"), "bytes_in")), 2048);
                assert_true(json_is_true(json_object_get(json_object_get(ev, "args"), "concurrent")));
            }
        } else if (strcmp(json_string_value(json_object_get(ev, "name")), "thread_name") == 0) {
            threads++;
        }
    }
    assert_int_equal(x, 6);
    assert_int_equal(threads, 2);
    assert_true(saw_b);
    json_decref(doc);

    c->failed = 1;
    c->error = strdup("boom");
    ph_stage_attr(c, "container.id", "abc"); /* works on any stage */
    tree = ph_timing_tree_json(root);
    assert_non_null(tree);
    assert_string_equal(json_string_value(json_object_get(tree, "name")), "stop");
    assert_int_equal(json_integer_value(json_object_get(tree, "duration_ns")), 100000);
    assert_int_equal(json_integer_value(json_object_get(tree, "self_ns")), 25000);
    ev = json_array_get(json_object_get(tree, "children"), 1); /* in the order they were added */
    assert_string_equal(json_string_value(json_object_get(ev, "name")), "POST /containers/{id}/stop");
    assert_int_equal(json_integer_value(json_object_get(ev, "start_ns")), 50000);
    assert_true(json_is_true(json_object_get(ev, "failed")));
    assert_string_equal(json_string_value(json_object_get(ev, "error")), "boom");
    assert_string_equal(json_string_value(json_object_get(json_object_get(ev, "attributes"), "container.id")), "abc");
    ev = json_array_get(json_object_get(tree, "children"), 2);
    assert_true(json_is_true(json_object_get(ev, "concurrent")));
    json_decref(tree);
    free_tree(root);
}

/* ---- recording ----------------------------------------------------------- */

typedef struct worker {
    ph_stage *parent;
    ph_stage *made;
} worker;

static void *
worker_main(void *ud)
{
    worker *w = ud;
    ph_stage *s, *inner;

    ph_stage_adopt(w->parent);
    s = ph_stage_begin("collect", "stop front", 0);
    inner = ph_stage_begin("engine", "GET /inner", 0);
    ph_stage_end(inner);
    ph_stage_end(s);
    w->made = s;
    return NULL;
}

static void
test_recording(void **state)
{
    ph_stage *s1, *s2, *s3, *wait, *kill;
    const ph_stage *root;
    worker w = { 0 };
    pthread_t t;

    (void)state;
    /* Not recording: nothing, at no cost. */
    assert_false(ph_timing_recording());
    assert_null(ph_stage_begin("engine", "x", 0));
    assert_null(ph_stage_current());
    ph_stage_end(NULL);
    ph_stage_bytes(NULL, 1, 1);
    ph_stage_fail(NULL, "x");

    assert_int_equal(ph_timing_start("stop"), 0);
    assert_int_equal(ph_timing_start("again"), -1);
    s1 = ph_stage_begin("engine", "outer", 0);
    s2 = ph_stage_beginf("engine", 0, "inner %d", 1);
    assert_ptr_equal(s2->parent, s1);
    ph_stage_bytes(s2, 5, 7);
    ph_stage_bytes(s2, 1, 0);
    ph_stage_end(s2);
    s3 = ph_stage_begin("engine", "sibling", 0);
    assert_ptr_equal(s3->parent, s1);
    ph_stage_end(s3);
    /* A detached stage does not become current: what follows is its sibling. */
    wait = ph_stage_begin("engine", "wait", PH_STAGE_DETACHED | PH_STAGE_CONCURRENT);
    kill = ph_stage_begin("engine", "kill", 0);
    assert_ptr_equal(kill->parent, s1);
    ph_stage_end(kill);
    ph_stage_end(wait);
    /* A helper thread adopts its parent; its stages are concurrent. */
    w.parent = ph_stage_current();
    assert_ptr_equal(w.parent, s1);
    assert_int_equal(pthread_create(&t, NULL, worker_main, &w), 0);
    pthread_join(t, NULL);
    assert_ptr_equal(w.made->parent, s1);
    assert_true(w.made->flags & PH_STAGE_CONCURRENT);
    assert_int_not_equal(w.made->thread, s1->thread);
    assert_false(w.made->first_child->flags & PH_STAGE_CONCURRENT); /* same thread as its parent */
    /* A child left open does not keep the thread inside it. */
    ph_stage_begin("engine", "left open", 0);
    ph_stage_fail(s1, "the Engine said no");
    ph_stage_end(s1);
    assert_ptr_equal(ph_stage_current(), ph_timing_root());
    ph_stage_attr(s1, "service", "front");
    ph_stage_attr(s1, "service", "back"); /* replaced */
    ph_timing_finish(1, "stop failed");

    root = ph_timing_root();
    assert_non_null(root);
    assert_false(ph_timing_recording());
    assert_null(ph_stage_begin("engine", "late", 0));
    assert_string_equal(root->name, "stop");
    assert_true(root->failed);
    assert_string_equal(root->error, "stop failed");
    assert_ptr_equal(root->first_child, s1);
    assert_true(s1->failed);
    assert_string_equal(s1->error, "the Engine said no");
    assert_string_equal(s1->attr_val[0], "back");
    assert_null(s1->attr_key[1]);
    assert_int_equal(s2->bytes_in, 6);
    assert_int_equal(s2->bytes_out, 7);
    /* Everything is closed, and children lie within their parents. */
    for (const ph_stage *c = s1->first_child; c; c = c->next) {
        assert_true(c->end_ns >= c->start_ns && c->end_ns != 0);
        assert_true(c->start_ns >= s1->start_ns);
    }
    assert_true(root->end_ns >= s1->end_ns);
    {
        size_t n = 0;
        ph_timing_row *rows = ph_timing_flatten(root, &n);

        assert_int_equal(n, 9); /* root, outer, inner, sibling, wait, kill, stop front, GET /inner, left open */
        free(rows);
    }
    ph_timing_reset();
    assert_null(ph_timing_root());

    /* A new recording does not inherit the last one's current stages. */
    assert_int_equal(ph_timing_start("status"), 0);
    s1 = ph_stage_begin("engine", "first", 0);
    assert_ptr_equal(s1->parent, ph_timing_root());
    ph_stage_end(s1);
    ph_timing_finish(0, NULL);
    assert_false(ph_timing_root()->failed);
    ph_timing_reset();
}

/* ---- OTLP settings and encodings ------------------------------------------ */

static const char *const otel_vars[] = {
    "OTEL_EXPORTER_OTLP_ENDPOINT",         "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",  "OTEL_EXPORTER_OTLP_HEADERS",         "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",          "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",  "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",            "OTEL_SDK_DISABLED",                  "OTEL_EXPORTER_OTLP_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
};

static void
clear_otel(void)
{
    for (size_t i = 0; i < PH_ARRAY_LEN(otel_vars); i++)
        unsetenv(otel_vars[i]);
}

static void
test_otlp_config(void **state)
{
    ph_otlp_config c;
    ph_error_t err = NULL;

    (void)state;
    clear_otel();
    assert_int_equal(ph_otlp_config_from_env(&c, &err), 0); /* nothing set: no export */
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318", 1);
    assert_int_equal(ph_otlp_config_from_env(&c, &err), 1);
    assert_string_equal(c.url, "http://127.0.0.1:4318/v1/traces");
    assert_false(c.json);
    assert_int_equal(c.timeout_ms, 10000);
    assert_string_equal(ph_kvv_get(&c.resource, "service.name"), "profharness");
    ph_otlp_config_free(&c);
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:1/base/", 1);
    assert_int_equal(ph_otlp_config_from_env(&c, &err), 1);
    assert_string_equal(c.url, "http://h:1/base/v1/traces");
    ph_otlp_config_free(&c);
    /* The signal's own variables win; its endpoint is used as it is. */
    setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://c.example/otlp", 1);
    setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", 1);
    setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json", 1);
    setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "250", 1);
    setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20x, x-a=1", 1);
    setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-a=2", 1);
    setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci,service.name=ignored,team=a%2Cb", 1);
    setenv("OTEL_SERVICE_NAME", "ph-ci", 1);
    assert_int_equal(ph_otlp_config_from_env(&c, &err), 1);
    assert_string_equal(c.url, "https://c.example/otlp");
    assert_true(c.json);
    assert_int_equal(c.timeout_ms, 250);
    assert_string_equal(ph_kvv_get(&c.headers, "authorization"), "Bearer x");
    assert_string_equal(ph_kvv_get(&c.headers, "x-a"), "2");
    assert_string_equal(ph_kvv_get(&c.resource, "service.name"), "ph-ci");
    assert_string_equal(ph_kvv_get(&c.resource, "deployment.environment"), "ci");
    assert_string_equal(ph_kvv_get(&c.resource, "team"), "a,b");
    ph_otlp_config_free(&c);
    /* Malformed settings are named. */
    setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc", 1);
    assert_int_equal(ph_otlp_config_from_env(&c, &err), -1);
    assert_non_null(strstr(err->msg, "not grpc"));
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
    unsetenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
    unsetenv("OTEL_EXPORTER_OTLP_PROTOCOL");
    setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "soon", 1);
    assert_int_equal(ph_otlp_config_from_env(&c, &err), -1);
    assert_non_null(strstr(err->msg, "OTEL_EXPORTER_OTLP_TIMEOUT=`soon`"));
    ph_error_free(&err);
    unsetenv("OTEL_EXPORTER_OTLP_TIMEOUT");
    setenv("OTEL_RESOURCE_ATTRIBUTES", "novalue", 1);
    assert_int_equal(ph_otlp_config_from_env(&c, &err), -1);
    assert_non_null(strstr(err->msg, "OTEL_RESOURCE_ATTRIBUTES"));
    ph_error_free(&err);
    unsetenv("OTEL_RESOURCE_ATTRIBUTES");
    /* A decoded line break would smuggle a header in. */
    setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-a=1%0d%0aInjected: yes", 1);
    assert_int_equal(ph_otlp_config_from_env(&c, &err), -1);
    assert_non_null(strstr(err->msg, "line break"));
    ph_error_free(&err);
    setenv("OTEL_EXPORTER_OTLP_HEADERS", "x%3Ab=1", 1);
    assert_int_equal(ph_otlp_config_from_env(&c, &err), -1);
    ph_error_free(&err);
    unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
    setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://x", 1);
    assert_int_equal(ph_otlp_config_from_env(&c, &err), -1);
    ph_error_free(&err);
    /* Disabled wins over everything. */
    setenv("OTEL_SDK_DISABLED", "TRUE", 1);
    assert_int_equal(ph_otlp_config_from_env(&c, &err), 0);
    clear_otel();
}

static void
test_traceparent(void **state)
{
    ph_otlp_trace t;
    char hex[33];
    static const char *const bad[] = {
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", /* 00 takes no more fields */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       /* version ff */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",       /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",       /* zero parent */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",       /* uppercase */
        "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",       /* misplaced dash */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
    };

    (void)state;
    assert_int_equal(ph_otlp_traceparent_parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", &t), 0);
    ph_otlp_hex(t.trace_id, 16, hex);
    assert_string_equal(hex, "4bf92f3577b34da6a3ce929d0e0e4736");
    ph_otlp_hex(t.parent_span_id, 8, hex);
    assert_string_equal(hex, "00f067aa0ba902b7");
    /* A later version may carry more fields. */
    assert_int_equal(ph_otlp_traceparent_parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", &t), 0);
    for (size_t i = 0; i < PH_ARRAY_LEN(bad); i++)
        if (ph_otlp_traceparent_parse(bad[i], &t) == 0)
            fail_msg("accepted `%s`", bad[i]);
}

static void
test_otlp_json_encoding(void **state)
{
    ph_stage *a, *b, *c, *root = sample_tree(&a, &b, &c);
    ph_otlp_config cfg = { .json = 1 };
    ph_otlp_trace t = { 0 };
    unsigned char *body;
    size_t len = 0, i;
    json_t *doc, *spans, *span, *kv;
    char tid[33];
    int saw_error = 0, saw_bytes = 0;

    (void)state;
    ph_kvv_set(&cfg.resource, "service.name", "profharness");
    assert_int_equal(ph_otlp_traceparent_parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", &t), 0);
    c->failed = 1;
    c->error = strdup("No such container: x");
    body = ph_otlp_encode(root, &cfg, &t, &len);
    assert_non_null(body);
    doc = json_loadb((const char *)body, len, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(
                            json_array_get(json_object_get(doc, "resourceSpans"), 0), "resource"), "attributes"), 0),
                                                                                 "value"), "stringValue")),
                        "profharness");
    spans = json_object_get(json_array_get(json_object_get(json_array_get(json_object_get(doc, "resourceSpans"), 0),
                                                           "scopeSpans"), 0), "spans");
    assert_int_equal(json_array_size(spans), 6);
    ph_otlp_hex(t.trace_id, 16, tid);
    json_array_foreach(spans, i, span) {
        assert_string_equal(json_string_value(json_object_get(span, "traceId")), tid);
        assert_int_equal(strlen(json_string_value(json_object_get(span, "spanId"))), 16);
        assert_true(json_is_string(json_object_get(span, "startTimeUnixNano")));
        if (i == 0) /* the root joins the caller's span */
            assert_string_equal(json_string_value(json_object_get(span, "parentSpanId")), "00f067aa0ba902b7");
        if (json_object_get(span, "status")) {
            saw_error = 1;
            assert_int_equal(json_integer_value(json_object_get(json_object_get(span, "status"), "code")), 2);
            assert_string_equal(json_string_value(json_object_get(json_object_get(span, "status"), "message")),
                                "No such container: x");
            assert_int_equal(json_integer_value(json_object_get(span, "kind")), 3); /* an engine call: CLIENT */
        }
        json_array_foreach(json_object_get(span, "attributes"), len, kv) {
            if (strcmp(json_string_value(json_object_get(kv, "key")), "profharness.bytes_in") == 0) {
                saw_bytes = 1;
                assert_string_equal(json_string_value(json_object_get(json_object_get(kv, "value"), "intValue")),
                                    "2048");
            }
        }
    }
    assert_true(saw_error);
    assert_true(saw_bytes);
    json_decref(doc);
    free(body);

    /* Protobuf: the outer framing is ExportTraceServiceRequest field 1. */
    cfg.json = 0;
    body = ph_otlp_encode(root, &cfg, &t, &len);
    assert_non_null(body);
    assert_int_equal(body[0], 0x0a);
    assert_true(len > 200);
    assert_non_null(memmem(body, len, "No such container: x", 20));
    assert_non_null(memmem(body, len, t.trace_id, 16));
    /* The root's parent_span_id (field 4, 8 bytes) is the caller's span. */
    assert_non_null(memmem(body, len, "\x22\x08\x00\xf0\x67\xaa\x0b\xa9\x02\xb7", 10));
    free(body);
    ph_kvv_free(&cfg.resource);
    free_tree(root);
}

/* A tree read mid-command (run.json is written before the command
 * returns): every stage still open ends at one instant of the reading,
 * so children stay within their parents in the JSON tree, the trace and
 * the folded stacks, however long the reading takes. */
static void
test_read_mid_command(void **state)
{
    struct timespec now;
    uint64_t t;
    ph_stage *root, *child, *later, *racing;
    json_t *tree, *trace, *ev, *e;
    size_t i;
    double root_end = 0, child_end = 0;

    (void)state;
    clock_gettime(CLOCK_MONOTONIC, &now);
    t = ((uint64_t)now.tv_sec * 1000000000 + (uint64_t)now.tv_nsec) / 1000 - 1000; /* us, a ms ago */
    root = mk(NULL, "harness", "stop", t, 0, 1, 0);
    child = mk(root, "harness", "stop front", t + 10, 0, 1, 0);
    mk(child, "engine", "GET /done", t + 20, t + 30, 1, 0);
    /* begun after the reading's instant (a thread racing it): no time */
    later = mk(root, "collect", "later", t + 100000000, 0, 2, PH_STAGE_CONCURRENT);
    /* ended by another thread after the reading's instant */
    racing = mk(root, "collect", "racing", t + 40, t + 100000000, 3, PH_STAGE_CONCURRENT);

    tree = ph_timing_tree_json(root);
    assert_non_null(tree);
    e = json_array_get(json_object_get(tree, "children"), 0);
    assert_string_equal(json_string_value(json_object_get(e, "name")), "stop front");
    assert_true(json_integer_value(json_object_get(e, "start_ns")) + json_integer_value(json_object_get(e, "duration_ns")) <=
                json_integer_value(json_object_get(tree, "duration_ns")));
    json_decref(tree);

    trace = ph_timing_trace_json(root);
    assert_non_null(trace);
    ev = json_object_get(trace, "traceEvents");
    json_array_foreach(ev, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        double end = json_number_value(json_object_get(e, "ts")) + json_number_value(json_object_get(e, "dur"));

        if (strcmp(json_string_value(json_object_get(e, "ph")), "X") != 0)
            continue;
        assert_true(json_number_value(json_object_get(e, "dur")) >= 0);
        if (strcmp(name, "stop") == 0)
            root_end = end;
        else if (strcmp(name, "stop front") == 0)
            child_end = end;
    }
    assert_true(root_end > 0 && child_end > 0);
    /* ts and dur are microseconds as doubles: ts + dur of two stages that
     * end at the same instant may differ in the last bit (seen once in a
     * loop of runs); a nanosecond is far below what a reader could see */
    assert_true(child_end <= root_end + 0.001);
    json_decref(trace);

    /* Outside a reading an open stage ends now; inside, at its instant. */
    ph_timing_read_begin();
    t = ph_stage_end_ns(root);
    ph_timing_read_begin(); /* nested: the same instant */
    do
        clock_gettime(CLOCK_MONOTONIC, &now);
    while ((uint64_t)now.tv_sec * 1000000000 + (uint64_t)now.tv_nsec <= t);
    assert_int_equal(ph_stage_end_ns(child), t);
    ph_timing_read_end();
    assert_int_equal(ph_stage_end_ns(child), t);
    assert_int_equal(ph_stage_end_ns(later), later->start_ns);
    assert_int_equal(ph_stage_end_ns(racing), t);
    ph_timing_read_end();
    assert_int_equal(ph_stage_end_ns(racing), racing->end_ns);
    assert_true(ph_stage_end_ns(child) > t);
    free_tree(root);
}

static void
test_run_json_and_files(void **state)
{
    json_t *meta = json_object();
    char path[600], *text = NULL;
    size_t len = 0;
    FILE *f;
    ph_error_t err = NULL;

    (void)state;
    assert_int_equal(ph_timing_run_json(meta), 0); /* nothing recorded */
    assert_int_equal(json_object_size(meta), 0);
    tu_mkdtemp();
    assert_int_equal(ph_timing_write_files(test_dir, &err), 0); /* nothing written */
    snprintf(path, sizeof path, "%s/harness.folded", test_dir);
    assert_int_not_equal(access(path, F_OK), 0);

    assert_int_equal(ph_timing_start("stop"), 0);
    ph_stage_end(ph_stage_begin("collect", "stream and extract", 0));
    /* Mid-command, as a run dir gets them: the root is still open. */
    assert_int_equal(ph_timing_run_json(meta), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "timing"), "name")), "stop");
    assert_int_equal(strlen(json_string_value(json_object_get(meta, "trace_id"))), 32);
    assert_int_equal(ph_timing_write_files(test_dir, &err), 0);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_true(getdelim(&text, &len, '\0', f) > 0);
    fclose(f);
    assert_non_null(strstr(text, "ThreadId(1)-main; stop; stream and extract "));
    free(text);
    snprintf(path, sizeof path, "%s/harness.trace.json", test_dir);
    {
        json_t *doc = json_load_file(path, 0, NULL);

        assert_non_null(doc);
        assert_true(json_array_size(json_object_get(doc, "traceEvents")) >= 3);
        json_decref(doc);
    }
    ph_timing_finish(0, NULL);
    ph_timing_reset();
    json_decref(meta);
    tu_rmdir();
}

static void
test_otlp_export_unreachable(void **state)
{
    int rc;

    (void)state;
    clear_otel();
    assert_int_equal(ph_otlp_export(NULL), 0);
    assert_int_equal(ph_timing_start("status"), 0);
    ph_timing_finish(0, NULL);
    assert_int_equal(ph_otlp_export(ph_timing_root()), 0); /* not configured */
    /* Port 9 on loopback: nothing listens; one warning, and no failure. */
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9", 1);
    setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2000", 1);
    tu_mkdtemp();
    tu_capture_begin();
    rc = ph_otlp_export(ph_timing_root());
    {
        const char *got = tu_capture_end();
        const char *first = strstr(got, "OpenTelemetry: the spans were not exported to http://127.0.0.1:9/v1/traces");

        assert_non_null(first);
        assert_null(strstr(first + 1, "OpenTelemetry"));
        assert_non_null(strstr(got, "the command's result stands"));
    }
    assert_int_equal(rc, -1);
    tu_rmdir();
    ph_timing_reset();
    clear_otel();
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flatten_self_times),
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_fmt_ns),
        cmocka_unit_test(test_folded_flamechart),
        cmocka_unit_test(test_trace_and_tree_json),
        cmocka_unit_test(test_recording),
        cmocka_unit_test(test_otlp_config),
        cmocka_unit_test(test_traceparent),
        cmocka_unit_test(test_otlp_json_encoding),
        cmocka_unit_test(test_read_mid_command),
        cmocka_unit_test(test_run_json_and_files),
        cmocka_unit_test(test_otlp_export_unreachable),
    };
    return cmocka_run_group_tests_name("timing", tests, NULL, NULL);
}
