/* test_compare.c - `profharness compare` on pairs of runs of each kind,
 * and what reaches a terminal from a run (compare's text, the headline of
 * stop, collect and report).
 *
 * strace: real logs (report_work under strace), the figures checked
 * against awk over each log; A did the work twice, B once, so every
 * change is a fall and the negative --fail-if conditions are the ones that
 * fire.  flamegraph: folded stacks as the sampler writes them, small
 * enough to know every share.  callgrind: a file whose function names
 * carry terminal escapes (title, clipboard, clear screen), as a container
 * can plant one: escaped in every text, real in every JSON. */
#include "report_test_util.h"

#include <jansson.h>
#include <math.h>

#include "ph_fmt.h"
#include "ph_report.h"
#include "ph_report_int.h" /* ph_heap_growth */

static char out_dir[600];

/* The escapes of issue 19: set the title, write the clipboard, clear. */
#define EVIL "evil\x1b]0;PWNED\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J"
#define EVIL_SHOWN "evil\\x1b]0;PWNED\\x07\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J"

#define ST_A "worker/20261122T101500Z-strace"
#define ST_B "worker/20261122T111500Z-strace"
#define FL_A "front/20261122T101500Z-flamegraph"
#define FL_B "front/20261122T111500Z-flamegraph"
#define WL_A "svc/20261122T101500Z-wall"
#define WL_B "svc/20261122T111500Z-wall"
#define HP_A "svc/20261122T101500Z-heap"
#define HP_B "svc/20261122T111500Z-heap"
#define HP_ONE "svc/20261122T121500Z-heap"
#define PF_A "front/20261122T101500Z-perf"
#define PF_B "front/20261122T111500Z-perf"
#define HP_SITES "svc/20261122T131500Z-heap"
#define HP_JVM "svc/20261122T141500Z-heap"
#define HP_PY "svc/20261122T151500Z-heap"
#define CG_A "front/20261122T101500Z-callgrind"
#define CG_B "front/20261122T111500Z-callgrind"

/* out/RUN/ with a run.json (no completion record: as a snapshot) and the
 * file NAME holding TEXT (NULL: none).  Returns the run dir. */
static const char *
run_dir(const char *run, const char *name, const char *text)
{
    static char dir[700];
    char path[800], meta[400];

    snprintf(dir, sizeof dir, "%s/%s", out_dir, run);
    free(rt_must("mkdir -p %s", dir));
    snprintf(meta, sizeof meta, "{\"service\": \"%.*s\", \"mode\": \"%s\", \"run\": \"%s\"}\n",
             (int)strcspn(run, "/"), run, strrchr(run, '-') + 1, strchr(run, '/') + 1);
    snprintf(path, sizeof path, "out/%s/run.json", run);
    tu_write(path, meta);
    if (name != NULL) {
        snprintf(path, sizeof path, "out/%s/%s", run, name);
        tu_write(path, text);
    }
    return dir;
}

static const char *
cg_file(unsigned long long evil, unsigned long long work)
{
    static char text[1024];

    snprintf(text, sizeof text,
             "version: 1\ncreator: test\ncmd: demo\nevents: Ir\n"
             "fn=main\n1 10\ncalls=1 0\n2 %llu\ncalls=1 0\n3 %llu\n"
             "fn=" EVIL "\n4 %llu\n"
             "fn=work\n5 %llu\n"
             "totals: %llu\n",
             evil, work, evil, work, 10 + 2 * (evil + work));
    return text;
}

static int
group_setup(void **state)
{
    const char *d;

    (void)state;
    tu_mkdtemp();
    snprintf(out_dir, sizeof out_dir, "%s/out", test_dir);
    /* A: the work twice, B: once */
    d = run_dir(ST_A, NULL, NULL);
    free(rt_run(NULL, "strace -f -tt -T -e trace=all -s 256 -o %s/strace.log sh -c '" WORK " sys; " WORK " sys' 2>&1",
                d));
    d = run_dir(ST_B, NULL, NULL);
    free(rt_run(NULL, "strace -f -tt -T -e trace=all -s 256 -o %s/strace.log " WORK " sys 2>&1", d));
    /* 1,000 samples, then 1,200: hot (a leaf under work) 60 % -> 75 %, cold
     * (a leaf under main) 40 % -> 25 %; main is on every stack in both
     * (100 % -> 100 %) and never the leaf */
    run_dir(FL_A, "stacks-20261122T101600Z-1.folded", "main-thread;main;work;hot 600\nmain-thread;main;cold 400\n");
    run_dir(FL_B, "stacks-20261122T111600Z-1.folded", "main-thread;main;work;hot 900\nmain-thread;main;cold 300\n");
    /* the wall clock: off CPU 50 % -> 75 %, all of it in wait's read */
    run_dir(WL_A, "stacks-20261122T101600Z-1.folded", "t;main;wait;__read;[off-cpu] 50\nt;main;compute 50\n");
    run_dir(WL_B, "stacks-20261122T111600Z-1.folded", "t;main;wait;__read;[off-cpu] 75\nt;main;compute 25\n");
    /* the heap: keep's 1 MiB in use -> 3 MiB; churn's 9 MiB allocated in both */
    run_dir(HP_A, "inuse_space-20261122T101600Z-1.folded", "main;keep;malloc 1048576\n");
    run_dir(HP_A, "alloc_space-20261122T101600Z-1.folded", "main;keep;malloc 1048576\nmain;churn;malloc 9437184\n");
    run_dir(HP_B, "inuse_space-20261122T111600Z-1.folded", "main;keep;malloc 3145728\n");
    run_dir(HP_B, "alloc_space-20261122T111600Z-1.folded", "main;keep;malloc 3145728\nmain;churn;malloc 9437184\n");
    /* their first snapshots: A kept 1 MiB all along; B grew keep's 2 MiB
     * to 3 MiB while other's 512 KiB went; a followed child of B's (its
     * tag -77) wrote one before, which is not B's first */
    run_dir(HP_A, "inuse_space-20261122T100600Z-1.folded", "main;keep;malloc 1048576\n");
    run_dir(HP_B, "inuse_space-20261122T110600Z-1.folded", "main;keep;malloc 2097152\nmain;other;malloc 524288\n");
    run_dir(HP_B, "inuse_space-20261122T110500Z-77-1.folded", "child;keep;malloc 99\n");
    /* one snapshot: no growth to show */
    run_dir(HP_ONE, "inuse_space-20261122T121600Z-1.folded", "main;keep;malloc 1048576\n");
    /* perf: the folded counts are cpu-clock periods (ns), convert.json
     * counts the samples: 4 s of CPU in 4,000 samples, then 7 s in 7,000 */
    run_dir(PF_A, "stacks.folded", "main;hot 3000000000\nmain;cold 1000000000\n");
    tu_write("out/" PF_A "/convert.json", "{\"event\": \"cpu-clock\", \"unit\": \"nanoseconds\", \"samples\": 4000}\n");
    run_dir(PF_B, "stacks.folded", "main;hot 6000000000\nmain;cold 1000000000\n");
    tu_write("out/" PF_B "/convert.json", "{\"event\": \"cpu-clock\", \"unit\": \"nanoseconds\", \"samples\": 7000}\n");
    /* seven sites whose figures tell every column apart: at the peak s1
     * most, s7 least; at the end the other way round (s7 most); allocated
     * 10 times the peak; grown since the first snapshot by 10 (s1), 20,
     * 70, 40, 60, 30, 50 (s7): the top five by growth are s3 s5 s7 s4 s6.
     * Each file in another order than any of those. */
    {
        static const int order[7] = { 4, 1, 6, 3, 0, 5, 2 }, grown[7] = { 10, 20, 70, 40, 60, 30, 50 };
        char peak[512] = "", end[512] = "", alloc[512] = "", first[512] = "";

        for (int k = 0; k < 7; k++) {
            int i = order[k];
            size_t l;

            l = strlen(peak), snprintf(peak + l, sizeof peak - l, "main;s%d;malloc %d\n", i + 1, 7000 - 1000 * i);
            l = strlen(end), snprintf(end + l, sizeof end - l, "main;s%d;malloc %d\n", i + 1, 1000 + 100 * i);
            l = strlen(alloc), snprintf(alloc + l, sizeof alloc - l, "main;s%d;malloc %d\n", i + 1, 70000 - 10000 * i);
            l = strlen(first), snprintf(first + l, sizeof first - l, "main;s%d;malloc %d\n", i + 1, 1000 + 100 * i - grown[i]);
        }
        run_dir(HP_SITES, "peak_inuse_space-20261122T131600Z-1.folded", peak);
        run_dir(HP_SITES, "inuse_space-20261122T131600Z-1.folded", end);
        run_dir(HP_SITES, "alloc_space-20261122T131600Z-1.folded", alloc);
        run_dir(HP_SITES, "inuse_space-20261122T130600Z-1.folded", first);
    }
    /* a JVM's heap run: Java objects by class under the method that made
     * them, the JVM's own mallocs; its heap file says the objects are
     * seen, and (a second process) that a node's heap is not, with a
     * note that must be escaped */
    {
        static const char java[] = "main;App.load_[j];new byte[]_[j] 6000\n"
                                   "main;App.cache_[j];new java.lang.String_[j] 3000\n"
                                   "main;App.load_[j];new java.lang.String_[j] 500\n"
                                   "main;os::malloc(unsigned long) 500\n";

        run_dir(HP_JVM, "peak_inuse_space-20261122T141600Z-1.folded", java);
        run_dir(HP_JVM, "inuse_space-20261122T141600Z-1.folded", java);
        run_dir(HP_JVM, "alloc_space-20261122T141600Z-1.folded", java);
        run_dir(HP_JVM, "heap-20261122T141600Z-1.json",
                "{\"runtimes\": [{\"runtime\": \"java\", \"objects\": true, \"note\": \"Java objects seen\", "
                "\"brief\": \"Java objects sampled (JVMTI)\"}]}\n");
        run_dir(HP_PY, "peak_inuse_space-20261122T151600Z-1.folded",
                "main;<module> (a.py:1)_[p];load (a.py:5)_[p];PyTuple_New 3000\n"
                "main;<module> (a.py:1)_[p];parse (a.py:9)_[p] 1000\nmain;Py_Initialize;malloc 5000\n");
        run_dir(HP_PY, "heap-20261122T151600Z-1.json",
                "{\"runtimes\": [{\"runtime\": \"python\", \"objects\": true, \"note\": \"seen\", "
                "\"brief\": \"CPython objects sampled (PyMem_SetAllocator)\"}]}\n");
        run_dir(HP_JVM, "heap-20261122T141600Z-9-1.json",
                "{\"runtimes\": [{\"runtime\": \"node\", \"objects\": false, \"note\": \"V8 <b>not</b> seen\", "
                "\"brief\": \"V8's heap not seen\"}]}\n");
    }
    run_dir(CG_A, "callgrind.out", cg_file(1000, 500));
    run_dir(CG_B, "callgrind.out", cg_file(5000, 500));
    return 0;
}


/* Compare out/A with out/B; the output into *OUT, the failed conditions
 * into *FAILED (NULL when none). */
static int
compare(const char *a, const char *b, const char *const *fail_if, size_t n, int format, char **out, char **failed)
{
    char pa[900], pb[900];
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    ph_compare_opts o = { NULL, format, fail_if, n, 10 };
    ph_error_t err = NULL;
    int rc;

    snprintf(pa, sizeof pa, "%s/%s", out_dir, a);
    snprintf(pb, sizeof pb, "%s/%s", out_dir, b);
    rc = ph_compare_runs(pa, pb, rt_profiles(), &o, f, failed, &err);
    fclose(f);
    if (rc < 0)
        fail_msg("compare %s %s: %s", a, b, err->msg);
    return rc;
}

static json_t *
compare_json(const char *a, const char *b)
{
    char *out = NULL, *failed = NULL;
    json_t *j;

    assert_int_equal(compare(a, b, NULL, 0, PH_COMPARE_JSON, &out, &failed), 0);
    j = json_loads(out, 0, NULL);
    assert_non_null(j);
    free(out);
    return j;
}

/* The element of the array ARR whose string KEY is VALUE (its first LEN
 * bytes; 0: all of it), or NULL. */
static json_t *
find(json_t *arr, const char *key, const char *value, size_t len)
{
    size_t i;
    json_t *e;

    json_array_foreach(arr, i, e) {
        const char *v = json_string_value(json_object_get(e, key));
        if (v != NULL && (len ? strncmp(v, value, len) : strcmp(v, value)) == 0)
            return e;
    }
    return NULL;
}

/* The table of J whose title starts with TITLE. */
static json_t *
table(json_t *j, const char *title)
{
    json_t *t = find(json_object_get(j, "tables"), "title", title, strlen(title));

    if (t == NULL)
        fail_msg("no table `%s`", title);
    return t;
}

/* The row NAME of table T (NULL: none). */
static json_t *
row(json_t *t, const char *name)
{
    return find(json_object_get(t, "rows"), "name", name, 0);
}

static double
num(json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

/* The line of TEXT that starts (after blanks) with WORD. */
static char *
line_of(const char *text, const char *word)
{
    static char line[1024];
    const char *p = text;

    while (rt_next_line(&p, line, sizeof line)) {
        const char *s = line + strspn(line, " ");
        if (strncmp(s, word, strlen(word)) == 0 && s[strlen(word)] == ' ')
            return line;
    }
    fail_msg("no line `%s` in:\n%s", word, text);
    return NULL;
}

/* ---- strace ------------------------------------------------------------ */

/* awk over a run's strace.log: NAME CALLS MICROSECONDS per syscall. */
static const char awk_calls[] =
    "awk '{ body = $0; sub(/^[0-9]+ +[0-9:.]+ /, \"\", body);"
    "       if (body ~ /^(---|\\+\\+\\+)/) next;"
    "       if (body ~ /^<\\.\\.\\. /) { n = substr(body, 6); sub(/ .*/, \"\", n) }"
    "       else { n = body; sub(/\\(.*/, \"\", n); calls[n]++ };"
    "       if (match(body, /<[0-9]+\\.[0-9]+>$/)) { t = substr(body, RSTART + 1, RLENGTH - 2); split(t, a, \".\");"
    "           us[n] += a[1] * 1000000 + a[2] } }"
    "     END { for (n in calls) printf \"%%s %%d %%d\\n\", n, calls[n], us[n] }' %s/%s/strace.log";

typedef struct sys_fig {
    char name[64];
    unsigned long long calls, us;
} sys_fig;

static size_t
awk_figures(const char *run, sys_fig *v, size_t max)
{
    char *out = rt_must(awk_calls, out_dir, run), line[256];
    const char *p = out;
    size_t n = 0;

    while (n < max && rt_next_line(&p, line, sizeof line)) {
        assert_int_equal(sscanf(line, "%63s %llu %llu", v[n].name, &v[n].calls, &v[n].us), 3);
        n++;
    }
    free(out);
    return n;
}

static const sys_fig *
fig(const sys_fig *v, size_t n, const char *name)
{
    static const sys_fig none = { "", 0, 0 };

    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    return &none;
}

static int
cmp_desc(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return a < b ? 1 : a > b ? -1 : 0;
}

/* Calls per syscall of both runs equal awk's, the unchanged ones left
 * out; the totals and time[name] in seconds. */
static void
test_compare_strace(void **state)
{
    sys_fig fa[256], fb[256];
    size_t na = awk_figures(ST_A, fa, 256), nb = awk_figures(ST_B, fb, 256), changed = 0, i;
    unsigned long long all_a = 0, all_b = 0;
    json_t *j = compare_json(ST_A, ST_B), *calls = table(j, "calls per syscall"), *r;

    (void)state;
    for (i = 0; i < na; i++) {
        all_a += fa[i].calls;
        changed += fa[i].calls != fig(fb, nb, fa[i].name)->calls;
    }
    for (i = 0; i < nb; i++) {
        all_b += fb[i].calls;
        changed += fig(fa, na, fb[i].name)->calls == 0;
    }
    assert_true(changed > 0);
    assert_int_equal(json_integer_value(json_object_get(calls, "changed")), changed);
    json_array_foreach(json_object_get(calls, "rows"), i, r) {
        const char *name = json_string_value(json_object_get(r, "name"));
        if (num(r, "a") != fig(fa, na, name)->calls || num(r, "b") != fig(fb, nb, name)->calls)
            fail_msg("%s: %g -> %g, awk %llu -> %llu", name, num(r, "a"), num(r, "b"), fig(fa, na, name)->calls,
                     fig(fb, nb, name)->calls);
    }
    /* largest change first: the table's rows are awk's changes, the
     * largest |B - A| of all first, as many as the table shows */
    {
        double d[512], prev = INFINITY;
        size_t nd = 0;

        for (i = 0; i < na; i++)
            if (fa[i].calls != fig(fb, nb, fa[i].name)->calls)
                d[nd++] = fabs((double)fig(fb, nb, fa[i].name)->calls - (double)fa[i].calls);
        for (i = 0; i < nb; i++)
            if (fig(fa, na, fb[i].name)->calls == 0)
                d[nd++] = (double)fb[i].calls;
        qsort(d, nd, sizeof *d, cmp_desc);
        assert_true(nd > 10); /* more than the table shows: which ones it shows matters */
        assert_int_equal(json_array_size(json_object_get(calls, "rows")), 10);
        json_array_foreach(json_object_get(calls, "rows"), i, r) {
            double dr = fabs(num(r, "b") - num(r, "a"));
            if (dr != d[i] || dr > prev)
                fail_msg("row %zu (%s): a change of %g, the %zu-th largest is %g", i,
                         json_string_value(json_object_get(r, "name")), dr, i + 1, d[i]);
            prev = dr;
        }
    }
    r = row(json_object_get(j, "totals"), "syscalls");
    assert_non_null(r);
    assert_true(num(r, "a") == all_a && num(r, "b") == all_b);
    json_decref(j);

    /* time[name] is in seconds: the run's own figure, its unit in the text */
    {
        const char *sys = "nanosleep";
        char expr[80], *out = NULL, *failed = NULL, want[200], ba[PH_FMT_LEN], bb[PH_FMT_LEN];
        const char *conds[1] = { expr };
        double a, b;

        if (fig(fb, nb, sys)->us == 0)
            sys = "clock_nanosleep";
        a = fig(fa, na, sys)->us / 1e6;
        b = fig(fb, nb, sys)->us / 1e6;
        assert_true(a > 0 && b > 0);
        snprintf(expr, sizeof expr, "time[%s]>0", sys);
        assert_int_equal(compare(ST_A, ST_B, conds, 1, PH_COMPARE_JSON, &out, &failed), 1);
        j = json_loads(out, 0, NULL);
        r = json_array_get(json_object_get(j, "fail_if"), 0);
        if (fabs(num(r, "a") - a) > 1e-9 || fabs(num(r, "b") - b) > 1e-9)
            fail_msg("%s: %g s -> %g s, awk %g s -> %g s", expr, num(r, "a"), num(r, "b"), a, b);
        snprintf(want, sizeof want, "time[%s] went from %s to %s", sys, ph_fmt_seconds(ba, a), ph_fmt_seconds(bb, b));
        if (strstr(failed, want) == NULL)
            fail_msg("want `%s` in `%s`", want, failed);
        json_decref(j);
        free(out);
        free(failed);
    }
}

/* B made about half of A's calls: the falls fire, the rises do not. */
static void
test_compare_negative(void **state)
{
    const char *conds[] = { "syscalls<-10%", "syscalls<-80%", "syscalls>+10%", "syscalls<-5", "syscalls>-5",
                            "errors<-10%" };
    char *out = NULL, *failed = NULL;

    (void)state;
    assert_int_equal(compare(ST_A, ST_B, conds, 6, PH_COMPARE_TEXT, &out, &failed), 1);
    assert_non_null(strstr(failed, "--fail-if syscalls<-10%: syscalls went from "));
    assert_null(strstr(failed, "syscalls<-80%"));
    assert_null(strstr(failed, "syscalls>+10%"));
    assert_non_null(strstr(failed, "--fail-if syscalls<-5: "));
    assert_null(strstr(failed, "syscalls>-5"));
    assert_non_null(strstr(failed, "--fail-if errors<-10%: "));
    /* the text's verdicts say the same */
    assert_non_null(strstr(line_of(out, "syscalls<-10%"), "FAILED"));
    assert_non_null(strstr(line_of(out, "syscalls<-80%"), "ok"));
    assert_non_null(strstr(line_of(out, "syscalls>+10%"), "ok"));
    free(out);
    free(failed);
}

/* ---- flamegraph --------------------------------------------------------- */

static void
test_compare_flame(void **state)
{
    const char *conds[] = { "samples>+10%", "samples[cold]<-10%", "self[hot]>+30%", "samples[hot]>70",
                            "samples>+1000", "self[main]>0", "samples[main]<100", "samples[work]>+20%" };
    char *out = NULL, *failed = NULL, *l;
    json_t *j = compare_json(FL_A, FL_B), *t;

    (void)state;
    assert_int_equal(compare(FL_A, FL_B, conds, 8, PH_COMPARE_TEXT, &out, &failed), 1);
    /* samples is a count, not a share */
    l = line_of(out, "samples");
    assert_non_null(strstr(l, "1,000"));
    assert_non_null(strstr(l, "1,200"));
    assert_null(strstr(l, "%  "));
    assert_non_null(strstr(l, "+20.0 %"));
    /* what changed, and only that: main is 100 % in both */
    assert_null(strstr(out, "\n  main "));
    assert_non_null(strstr(line_of(out, "hot"), "60.00 %"));
    assert_non_null(strstr(line_of(out, "cold"), "25.00 %"));
    t = table(j, "share of samples on the stack");
    assert_int_equal(json_integer_value(json_object_get(t, "changed")), 3);
    assert_null(row(t, "main"));
    assert_true(num(row(t, "work"), "a") == 60 && num(row(t, "work"), "b") == 75);
    assert_true(num(row(t, "hot"), "a") == 60 && num(row(t, "hot"), "b") == 75);
    t = table(j, "share of samples on CPU");
    assert_int_equal(json_integer_value(json_object_get(t, "changed")), 2);
    assert_null(row(t, "work")); /* never the leaf */
    assert_true(num(row(t, "cold"), "a") == 40 && num(row(t, "cold"), "b") == 25);
    t = row(json_object_get(j, "totals"), "samples");
    assert_true(num(t, "a") == 1000 && num(t, "b") == 1200);
    /* the conditions: counts and shares, relative and absolute */
    assert_non_null(strstr(failed, "--fail-if samples>+10%: samples went from 1,000 to 1,200 (+20.0 %)"));
    assert_non_null(strstr(failed, "--fail-if samples[cold]<-10%: samples[cold] went from 40.00 % to 25.00 %"));
    assert_null(strstr(failed, "self[hot]"));
    assert_non_null(strstr(failed, "--fail-if samples[hot]>70: samples[hot] went from 60.00 % to 75.00 %"));
    assert_null(strstr(failed, "samples>+1000"));
    /* main is on every stack (100 %) and never the leaf (0 %) */
    assert_null(strstr(failed, "[main]"));
    assert_non_null(strstr(failed, "--fail-if samples[work]>+20%: samples[work] went from 60.00 % to 75.00 %"));
    json_decref(j);
    free(out);
    free(failed);
}

/* perf: its folded counts are nanoseconds of CPU, not samples: the
 * totals say CPU time in seconds, and samples as convert.json counts them. */
static void
test_compare_perf_units(void **state)
{
    const char *conds[] = { "cpu_time>+50%", "samples>6999" };
    json_t *j = compare_json(PF_A, PF_B), *t = json_object_get(json_object_get(j, "totals"), "rows");
    json_t *cpu = find(t, "name", "cpu_time", 0), *n = find(t, "name", "samples", 0);
    char *out = NULL, *failed = NULL;

    (void)state;
    assert_non_null(cpu);
    assert_non_null(n);
    assert_true(json_real_value(json_object_get(cpu, "a")) == 4.0 && json_real_value(json_object_get(cpu, "b")) == 7.0);
    assert_true(json_real_value(json_object_get(n, "a")) == 4000 && json_real_value(json_object_get(n, "b")) == 7000);
    json_decref(j);
    assert_int_equal(compare(PF_A, PF_B, conds, 2, PH_COMPARE_TEXT, &out, &failed), 1);
    assert_non_null(strstr(out, "cpu_time"));
    assert_non_null(strstr(out, "4.00 s"));
    assert_null(strstr(out, "4,000,000,000"));
    assert_non_null(strstr(failed, "--fail-if cpu_time>+50%: cpu_time went from 4.00 s to 7.00 s (+75.0 %)"));
    assert_non_null(strstr(failed, "--fail-if samples>6999: samples went from 4,000 to 7,000"));
    free(out);
    free(failed);
}

/* ---- the wall clock and the heap ----------------------------------------- */

static void
test_compare_wall(void **state)
{
    const char *conds[] = { "offcpu>+20%", "offcpu[wait]>70", "offcpu[compute]>0", "offcpu<50", "offcpu[__read]>=+25" };
    char *out = NULL, *failed = NULL;

    (void)state;
    assert_int_equal(compare(WL_A, WL_B, conds, 5, PH_COMPARE_TEXT, &out, &failed), 1);
    assert_non_null(failed);
    assert_non_null(strstr(failed, "--fail-if offcpu>+20%: offcpu went from 50.00 % to 75.00 % (+50.0 %)"));
    assert_non_null(strstr(failed, "--fail-if offcpu[wait]>70: offcpu[wait] went from 50.00 % to 75.00 %"));
    assert_non_null(strstr(failed, "--fail-if offcpu[__read]>=+25: offcpu[__read] went from 50.00 % to 75.00 %"));
    /* compute is never off CPU; the share is not under 50 */
    assert_null(strstr(failed, "[compute]"));
    assert_null(strstr(failed, "offcpu<50"));
    free(out);
    free(failed);
}

static void
test_compare_heap(void **state)
{
    const char *conds[] = { "inuse_space>+50%", "inuse_space[keep]>2000000", "alloc_space[churn]>+1%",
                            "alloc_space>+10%", "inuse_space[churn]>0" };
    char *out = NULL, *failed = NULL;

    (void)state;
    assert_int_equal(compare(HP_A, HP_B, conds, 5, PH_COMPARE_TEXT, &out, &failed), 1);
    assert_non_null(failed);
    assert_non_null(strstr(failed, "--fail-if inuse_space>+50%: inuse_space went from 1.00 MiB to 3.00 MiB (+200.0 %)"));
    assert_non_null(strstr(failed, "--fail-if inuse_space[keep]>2000000: inuse_space[keep] went from 1.00 MiB to 3.00 MiB"));
    assert_non_null(strstr(failed, "--fail-if alloc_space>+10%: alloc_space went from 10.0 MiB to 12.0 MiB (+20.0 %)"));
    /* churn allocated as much in both, and keeps nothing */
    assert_null(strstr(failed, "[churn]"));
    free(out);
    free(failed);
}

/* Growth: per stack, the later count minus the earlier, what grew only;
 * stacks matched by their names, whatever their order or name ids. */
static void
test_heap_growth_arithmetic(void **state)
{
    static const struct {
        const char *base, *last, *want;
    } cases[] = {
        /* grew, unchanged (gone), shrank (gone), new, decimal counts */
        { "a;b 100\na;c 50\nx 10\n", "x 5\nnew 7\na;c 50\na;b 300\n", "new 7\na;b 200\n" },
        /* no base: everything in use grew from nothing */
        { "", "a 1\nb 2\n", "a 1\nb 2\n" },
        /* gone entirely: nothing grew */
        { "a 1\nb 2\n", "", "" },
        /* the same stack twice in one file counts once, summed */
        { "a;b 10\na;b 10\n", "a;b 25\n", "a;b 5\n" },
        /* a prefix is another stack */
        { "a 10\n", "a 10\na;b 4\n", "a;b 4\n" },
        { "m;k 1.5\n", "m;k 4\n", "m;k 2\n" }, /* (2.5, written as a whole number of bytes) */
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ph_error_t err = NULL;
        ph_folded *base = ph_folded_parse(cases[i].base, strlen(cases[i].base), 0, &err);
        ph_folded *last = ph_folded_parse(cases[i].last, strlen(cases[i].last), 0, &err), *g = NULL;
        char *text = NULL;
        size_t len = 0;

        assert_non_null(base);
        assert_non_null(last);
        assert_int_equal(ph_heap_growth(base, last, &g, &err), 0);
        assert_int_equal(ph_heap_growth_text(g, &text, &len, &err), 0);
        if (strcmp(text, cases[i].want) != 0)
            fail_msg("case %zu: `%s`, want `%s`", i, text, cases[i].want);
        free(text);
        ph_folded_free(g);
        ph_folded_free(base);
        ph_folded_free(last);
    }
}

/* The report of a heap run with two snapshots: the growth from the
 * process's first to its newest, its file and graph beside the report,
 * its headline; compare's inuse_space_growth. */
static void
test_heap_growth_report(void **state)
{
    const char *conds[] = { "inuse_space_growth>1000000", "inuse_space_growth[other]>0", "inuse_space_growth>+0" };
    char dir[800], path[900], *text, *out = NULL, *failed = NULL;
    ph_report_headline h;
    ph_error_t err = NULL;
    json_t *sum, *g;

    (void)state;
    snprintf(dir, sizeof dir, "%s/%s", out_dir, HP_B);
    if (ph_report_write_run(dir, rt_profiles(), &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    snprintf(path, sizeof path, "%s/report-inuse_space_growth.folded", dir);
    text = rt_slurp(path, NULL);
    assert_string_equal(text, "main;keep;malloc 1048576\n");
    free(text);
    snprintf(path, sizeof path, "%s/report-inuse_space_growth.svg", dir);
    text = rt_slurp(path, NULL);
    assert_non_null(strstr(text, "<svg"));
    free(text);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    sum = json_load_file(path, 0, NULL);
    assert_non_null(sum);
    g = json_object_get(json_object_get(sum, "heap"), "growth");
    assert_true(json_real_value(json_object_get(g, "bytes")) == 1048576);
    assert_string_equal(json_string_value(json_object_get(g, "from")), "inuse_space-20261122T110600Z-1.folded");
    assert_string_equal(json_string_value(json_object_get(g, "to")), "inuse_space-20261122T111600Z-1.folded");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(g, "top_sites"), 0), "site")),
                        "keep");
    assert_int_equal(json_array_size(json_object_get(g, "top_sites")), 1);
    assert_non_null(strstr(h.text, "; grown 1.00 MiB (keep 100.0 %)"));
    json_decref(sum);
    snprintf(path, sizeof path, "%s/report.html", dir);
    text = rt_slurp(path, NULL);
    assert_non_null(strstr(text, "Grown since the first snapshot"));
    free(text);
    /* A grew nothing: 0 -> 1 MiB; other shrank in B: not growth */
    assert_int_equal(compare(HP_A, HP_B, conds, 3, PH_COMPARE_TEXT, &out, &failed), 1);
    assert_non_null(failed);
    assert_non_null(strstr(failed, "--fail-if inuse_space_growth>1000000: inuse_space_growth went from 0 B to 1.00 MiB"));
    assert_null(strstr(failed, "[other]"));
    free(out);
    free(failed);
    /* one snapshot: no growth, said in the section, none in the headline */
    snprintf(dir, sizeof dir, "%s/%s", out_dir, HP_ONE);
    if (ph_report_write_run(dir, rt_profiles(), &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    assert_null(strstr(h.text, "grown"));
    snprintf(path, sizeof path, "%s/summary.json", dir);
    sum = json_load_file(path, 0, NULL);
    assert_non_null(sum);
    assert_null(json_object_get(json_object_get(sum, "heap"), "growth"));
    json_decref(sum);
    snprintf(path, sizeof path, "%s/report-inuse_space_growth.folded", dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/report.html", dir);
    text = rt_slurp(path, NULL);
    assert_non_null(strstr(text, "One snapshot only"));
    free(text);
}

/* A heap run reported without the profiles (as `report` did when run
 * without --profiles): the same report as with them, the views read as
 * heap, never as CPU samples ("5,645,180 samples, top malloc"). */
static void
test_heap_report_without_profiles(void **state)
{
    char dir[800];
    ph_report_headline with, without;
    ph_error_t err = NULL;

    (void)state;
    snprintf(dir, sizeof dir, "%s/%s", out_dir, HP_B);
    if (ph_report_write_run(dir, rt_profiles(), &with, &err) < 0 || ph_report_write_run(dir, NULL, &without, &err) < 0)
        fail_msg("report: %s", err->msg);
    assert_non_null(strstr(with.text, "peak in use "));
    assert_string_equal(without.text, with.text);
}

/* Compare out/A with out/B under the one condition EXPR, which must be
 * refused: the error (the caller frees), its status PH_EXIT_USAGE. */
static ph_error_t
compare_refused(const char *a, const char *b, const char *expr)
{
    char pa[900], pb[900], *out = NULL, *failed = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    ph_compare_opts o = { NULL, PH_COMPARE_TEXT, &expr, 1, 10 };
    ph_error_t err = NULL;

    snprintf(pa, sizeof pa, "%s/%s", out_dir, a);
    snprintf(pb, sizeof pb, "%s/%s", out_dir, b);
    if (ph_compare_runs(pa, pb, rt_profiles(), &o, f, &failed, &err) != -1)
        fail_msg("`%s` was evaluated: %s", expr, failed ? failed : "held not");
    fclose(f);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    free(out);
    free(failed);
    return err;
}

/* The heap report's tables: the top sites by their bytes at the peak,
 * most first, each column its own view's figure (at the peak, at the
 * end, allocated); the sites that grew most, most first, the five of
 * seven that grew most. */
static void
test_heap_sites_and_columns(void **state)
{
    static const char *const by_growth[] = { "s3", "s5", "s7", "s4", "s6" };
    static const double grown[] = { 70, 60, 50, 40, 30 };
    char dir[800], path[900], *html;
    ph_report_headline h;
    ph_error_t err = NULL;
    json_t *sum, *top, *g;

    (void)state;
    snprintf(dir, sizeof dir, "%s/%s", out_dir, HP_SITES);
    if (ph_report_write_run(dir, rt_profiles(), &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    sum = json_load_file(path, 0, NULL);
    assert_non_null(sum);
    top = json_object_get(json_object_get(sum, "heap"), "top_sites");
    assert_int_equal(json_array_size(top), 7);
    for (int i = 0; i < 7; i++) {
        json_t *t = json_array_get(top, (size_t)i);
        char want[8];

        snprintf(want, sizeof want, "s%d", i + 1);
        assert_string_equal(json_string_value(json_object_get(t, "site")), want);
        assert_true(json_real_value(json_object_get(t, "peak_inuse_bytes")) == 7000 - 1000 * i);
        assert_true(json_real_value(json_object_get(t, "inuse_bytes")) == 1000 + 100 * i);
        assert_true(json_real_value(json_object_get(t, "alloc_bytes")) == 70000 - 10000 * i);
    }
    assert_non_null(strstr(h.text, "peak in use 27.3 KiB (s1 25.0 %)"));
    g = json_object_get(json_object_get(json_object_get(sum, "heap"), "growth"), "top_sites");
    assert_int_equal(json_array_size(g), 5);
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(json_string_value(json_object_get(json_array_get(g, i), "site")), by_growth[i]);
        assert_true(json_real_value(json_object_get(json_array_get(g, i), "bytes")) == grown[i]);
    }
    json_decref(sum);
    /* the page's table: the first row is s1's, its peak, then its end,
     * then what it allocated */
    snprintf(path, sizeof path, "%s/report.html", dir);
    html = rt_slurp(path, NULL);
    {
        const char *row = strstr(html, "<h3>Top allocation sites</h3>"), *end, *pk, *e, *a;

        assert_non_null(row);
        row = strstr(row, "<td class=\"name\">");
        assert_non_null(row);
        assert_int_equal(strncmp(row, "<td class=\"name\">s1</td>", 24), 0);
        end = strstr(row, "</tr>");
        pk = strstr(row, "data-v=\"7000\"");
        e = strstr(row, "data-v=\"1000\"");
        a = strstr(row, "data-v=\"70000\"");
        assert_true(end != NULL && pk != NULL && e != NULL && a != NULL);
        assert_true(pk < e && e < a && a < end);
    }
    free(html);
}

/* A heap run of runtimes: what of their heaps is seen and what is not
 * comes first, in the headline and on the page before any figure; the
 * sites are the Java methods (not the classes they made), the classes a
 * table of their own. */
static void
test_heap_runtimes_first(void **state)
{
    char dir[800], path[900], *html;
    const char *first, *card, *node;
    ph_report_headline h;
    ph_error_t err = NULL;
    json_t *sum, *heap;

    (void)state;
    snprintf(dir, sizeof dir, "%s/%s", out_dir, HP_JVM);
    if (ph_report_write_run(dir, rt_profiles(), &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    print_message("# %s\n", h.text);
    /* java then node, by name */
    /* the Java objects first (9,500 B), the JVM's own mallocs in the total */
    assert_non_null(strstr(h.text, "Java objects sampled (JVMTI); V8's heap not seen; Java objects at the peak 9.28 KiB "
                                   "(App.load 68.4 % of them), all at the peak 9.77 KiB"));
    snprintf(path, sizeof path, "%s/report.html", dir);
    html = rt_slurp(path, NULL);
    first = strstr(html, "Java objects seen");
    node = strstr(html, "V8 &lt;b&gt;not&lt;/b&gt; seen");
    card = strstr(html, "in use at the peak");
    assert_true(first != NULL && node != NULL && card != NULL);
    assert_true(first < card && node < card);
    assert_null(strstr(html, "<b>not</b>"));
    assert_non_null(strstr(html, "<h3>Top classes (Java objects)</h3>"));
    /* the rows name sites and classes as the headline does: no marks */
    assert_non_null(strstr(html, "<td class=\"name\">App.load</td>"));
    assert_non_null(strstr(html, "<td class=\"name\">new java.lang.String</td>"));
    free(html);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    sum = json_load_file(path, 0, NULL);
    assert_non_null(sum);
    heap = json_object_get(sum, "heap");
    assert_int_equal(json_array_size(json_object_get(heap, "runtimes")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(heap, "top_sites"), 0), "site")),
                        "App.load_[j]");
    /* the classes: byte[] 6000, String 3500 */
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(heap, "top_classes"), 1), "class")),
        "new java.lang.String_[j]");
    assert_true(json_real_value(json_object_get(json_array_get(json_object_get(heap, "top_classes"), 1),
                                                "peak_inuse_bytes")) == 3500);
    json_decref(sum);
    /* CPython's objects: their site the innermost Python function (not the
     * interpreter's PyTuple_New), first in the headline, named as the
     * language view names it (no line, no mark: so is Java's above) */
    snprintf(dir, sizeof dir, "%s/%s", out_dir, HP_PY);
    if (ph_report_write_run(dir, rt_profiles(), &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    print_message("# %s\n", h.text);
    assert_non_null(strstr(h.text, "CPython objects sampled (PyMem_SetAllocator); Python objects at the peak 3.91 KiB "
                                   "(load (a.py) 75.0 % of them), all at the peak 8.79 KiB"));
}

/* Each metric belongs to its kind of run. */
static void
test_compare_wrong_kind(void **state)
{
    static const char *const pairs[][3] = { { FL_A, FL_B, "offcpu>0" }, { WL_A, WL_B, "inuse_space>0" },
                                            { HP_A, HP_B, "offcpu[keep]>0" }, { FL_A, FL_B, "alloc_space[hot]>0" } };

    (void)state;
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        ph_error_t err = compare_refused(pairs[i][0], pairs[i][1], pairs[i][2]);

        assert_non_null(strstr(err->msg, "is not a metric of a"));
        ph_error_free(&err);
    }
}

/* A [name] in neither run is a slip, not a 0 that never fires: exit 2,
 * the name said, the nearest name of either run suggested.  A name in
 * one run only still compares with 0 (new, gone). */
static void
test_fail_if_unknown_name(void **state)
{
    static const char *const cases[][4] = {
        { FL_A, FL_B, "samples[hto]>+20%", "no function `hto` in either run (20261122T101500Z-flamegraph, "
                                           "20261122T111500Z-flamegraph); did you mean `hot`?" },
        { FL_A, FL_B, "self[front_nothing_like_it]>1", "no function `front_nothing_like_it` in either run" },
        { CG_A, CG_B, "ir[wrok]>0", "no function `wrok` in either run" },
        { ST_A, ST_B, "calls[writ]>0", "no syscall `writ` in either run" },
        { WL_A, WL_B, "offcpu[wiat]>0", "did you mean `wait`?" },
        { HP_A, HP_B, "inuse_space[kepe]>0", "did you mean `keep`?" },
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ph_error_t err = compare_refused(cases[i][0], cases[i][1], cases[i][2]);

        if (strstr(err->msg, cases[i][3]) == NULL)
            fail_msg("`%s`: %s", cases[i][2], err->msg);
        ph_error_free(&err);
    }
    /* the name of a function in one run only: evaluated (0 in the other) */
    {
        const char *conds[] = { "inuse_space_growth[other]>0" };
        char *out = NULL, *failed = NULL;

        assert_int_equal(compare(HP_A, HP_B, conds, 1, PH_COMPARE_TEXT, &out, &failed), 0);
        free(out);
        free(failed);
    }
}

/* ---- what reaches a terminal ------------------------------------------- */

/* The offset of the first control byte but '\n' in S, or -1.  (A failing
 * test names the offset: printing the text would run its escapes.) */
static long
first_control(const char *s)
{
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\n')
            return p - s;
    return -1;
}

static void
test_compare_escapes_names(void **state)
{
    const char *conds[] = { "ir>+10%" };
    char *out = NULL, *failed = NULL;
    json_t *j, *t;

    (void)state;
    assert_int_equal(compare(CG_A, CG_B, conds, 1, PH_COMPARE_TEXT, &out, &failed), 1);
    if (first_control(out) >= 0)
        fail_msg("a control byte at offset %ld of compare's text", first_control(out));
    assert_non_null(strstr(out, EVIL_SHOWN));
    free(out);
    free(failed);
    /* JSON keeps the real name (jansson writes \u001b) */
    j = compare_json(CG_A, CG_B);
    t = table(j, "self cost");
    assert_non_null(row(t, ":" EVIL)); /* no fl=: file:fn with no file */
    assert_int_equal(json_integer_value(json_object_get(t, "changed")), 1); /* work and main did not change */
    json_decref(j);
}

static void
test_headline_escaped(void **state)
{
    ph_report_headline h;
    ph_error_t err = NULL;
    char dir[800], path[900], *text = NULL;
    size_t len = 0;
    FILE *f;
    json_t *sum;

    (void)state;
    snprintf(dir, sizeof dir, "%s/%s", out_dir, CG_B);
    if (ph_report_write_run(dir, rt_profiles(), &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    f = open_memstream(&text, &len);
    ph_report_print_headline(f, &h);
    fclose(f);
    if (first_control(text) >= 0)
        fail_msg("a control byte at offset %ld of the headline", first_control(text));
    assert_non_null(strstr(text, "top " EVIL_SHOWN " "));
    free(text);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    sum = json_load_file(path, 0, NULL);
    assert_non_null(sum);
    assert_non_null(strstr(json_string_value(json_object_get(sum, "headline")), "top " EVIL " "));
    json_decref(sum);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_strace),
        cmocka_unit_test(test_compare_negative),
        cmocka_unit_test(test_compare_flame),
        cmocka_unit_test(test_compare_wall),
        cmocka_unit_test(test_compare_heap),
        cmocka_unit_test(test_heap_growth_arithmetic),
        cmocka_unit_test(test_heap_growth_report),
        cmocka_unit_test(test_heap_report_without_profiles),
        cmocka_unit_test(test_compare_perf_units),
        cmocka_unit_test(test_heap_sites_and_columns),
        cmocka_unit_test(test_heap_runtimes_first),
        cmocka_unit_test(test_compare_wrong_kind),
        cmocka_unit_test(test_fail_if_unknown_name),
        cmocka_unit_test(test_compare_escapes_names),
        cmocka_unit_test(test_headline_escaped),
    };
    int rc = cmocka_run_group_tests_name("compare", tests, group_setup, tu_teardown);

    rt_profiles_free();
    return rc;
}
