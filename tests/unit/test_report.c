/* test_report.c - report.html, summary.json, index.html and compare on
 * run dirs made of real artifacts (helpers/report_work.c under valgrind
 * massif and callgrind and strace, as the profiles run them), their
 * figures checked against ms_print, callgrind_annotate and awk; then
 * broken artifacts of every kind (the report says what is missing, never
 * fails), how a run stopped, stage timings of any shape, escaping, the
 * index's order, --fail-if, and number formatting. */
#include "report_test_util.h"

#include <jansson.h>
#include <math.h>

#include "ph_flame.h"
#include "ph_fmt.h"
#include "ph_report.h"
#include "ph_report_int.h" /* ph_flame_tally */

static char out_dir[600];

/* out/front/<run>/ with run.json (and ph-exit.json unless SNAPSHOT). */
static const char *
make_run(const char *service, const char *run, const char *mode, int snapshot)
{
    static char dir[700];
    char path[800];
    FILE *f;

    snprintf(dir, sizeof dir, "%s/%s/%s", out_dir, service, run);
    free(rt_must("mkdir -p %s", dir));
    snprintf(path, sizeof path, "%s/run.json", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"service\": \"%s\", \"mode\": \"%s\", \"run\": \"%s\", \"started_at\": \"2026-11-22T10:15:00Z\", "
               "\"collected_at\": \"2026-11-22T10:16:00Z\", \"stages\": [{\"name\": \"signal until the profiler exited\", "
               "\"seconds\": 0.5}, {\"name\": \"stream and extract artifacts\", \"seconds\": 0.25, \"bytes\": 1234, "
               "\"children\": [{\"name\": \"extract\", \"seconds\": 0.2}]}]}\n",
            service, mode, run);
    fclose(f);
    if (!snapshot) {
        snprintf(path, sizeof path, "%s/ph-exit.json", dir);
        f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "{\"version\":1,\"command\":[\"valgrind\",\"--tool=%s\",\"demo-front\"],\"wrapper_pid\":7,"
                   "\"target_pid\":7,\"exit_code\":0,\"signal\":null,\"stop_requested\":true,\"stop_signal\":\"SIGTERM\","
                   "\"escalations\":[],\"wrapper_killed\":false,\"wrapper_signals\":[],\"leftovers_signalled\":0,"
                   "\"started_at\":\"2026-11-22T10:15:00.000Z\",\"stop_requested_at\":null,"
                   "\"ended_at\":\"2026-11-22T10:16:00.000Z\",\"run_seconds\":60.000,\"stop_seconds\":0.420}\n",
                mode);
        fclose(f);
    }
    return dir;
}

static int
group_setup(void **state)
{
    const char *d;

    (void)state;
    tu_mkdtemp();
    snprintf(out_dir, sizeof out_dir, "%s/out", test_dir);
    d = make_run("front", "20261122T101500Z-massif", "massif", 0);
    free(rt_must("valgrind -q --tool=massif --massif-out-file=%s/massif.out --time-unit=B --detailed-freq=10 "
                 "--max-snapshots=100 --threshold=0.5 " WORK " alloc 2>&1",
                 d));
    d = make_run("front", "20261122T111500Z-callgrind", "callgrind", 0);
    free(rt_must("valgrind -q --tool=callgrind --callgrind-out-file=%s/callgrind.out --cache-sim=yes --branch-sim=yes "
                 "--dump-instr=yes --compress-strings=no " WORK " cpu 2>&1",
                 d));
    /* the same program doing twice the work: a comparison's "after" */
    d = make_run("front", "20261122T121500Z-callgrind", "callgrind", 0);
    free(rt_must("valgrind -q --tool=callgrind --callgrind-out-file=%s/callgrind.out --cache-sim=yes --branch-sim=yes "
                 "--dump-instr=yes --compress-strings=no " WORK " threads 2>&1",
                 d));
    d = make_run("worker", "20261122T131500Z-strace", "strace", 0);
    free(rt_run(NULL, "strace -f -tt -T -e trace=all -s 256 -o %s/strace.log " WORK " sys 2>&1", d));
    return 0;
}

static int
group_teardown(void **state)
{
    (void)state;
    tu_rmdir();
    return 0;
}

/* Write the report of RUN (under out/SERVICE/) and return its summary. */
static json_t *
report(const char *service, const char *run, ph_report_headline *h)
{
    char dir[800], path[900];
    ph_error_t err = NULL;
    json_error_t je;
    json_t *j;

    snprintf(dir, sizeof dir, "%s/%s/%s", out_dir, service, run);
    if (ph_report_write_run(dir, rt_profiles(), h, &err) < 0)
        fail_msg("report: %s", err->msg);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    j = json_load_file(path, 0, &je);
    if (j == NULL)
        fail_msg("summary.json: %s", je.text);
    snprintf(path, sizeof path, "%s/report.html.tmp", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    return j;
}

static char *
report_html(const char *service, const char *run)
{
    char path[900];

    snprintf(path, sizeof path, "%s/%s/%s/report.html", out_dir, service, run);
    return rt_slurp(path, NULL);
}

static int
count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void
test_massif_report(void **state)
{
    ph_report_headline h;
    json_t *j = report("front", "20261122T101500Z-massif", &h), *m = json_object_get(j, "massif");
    char *out, *html, want[128], b[PH_FMT_LEN];
    unsigned long long heap = 0;
    const char *p;
    char line[4096];

    (void)state;
    assert_non_null(m);
    /* the peak row of ms_print's table: "  N  time  total  useful  extra  stacks" */
    out = rt_must("cd / && ms_print %s/front/20261122T101500Z-massif/massif.out", out_dir);
    snprintf(want, sizeof want, "%lld (peak)", (long long)json_integer_value(json_object_get(m, "peak_snapshot")));
    assert_non_null(strstr(out, want));
    for (p = out; rt_next_line(&p, line, sizeof line);) {
        char c[6][64];
        if (sscanf(line, " %63[0-9] %63[0-9,] %63[0-9,] %63[0-9,] %63[0-9,] %63[0-9,]", c[0], c[1], c[2], c[3], c[4],
                   c[5]) == 6 &&
            strtoll(c[0], NULL, 10) == json_integer_value(json_object_get(m, "peak_snapshot")))
            heap = rt_uncommify(c[3], strlen(c[3]));
    }
    assert_true(heap > 0);
    assert_int_equal(json_integer_value(json_object_get(m, "peak_heap")), heap);
    /* the top site is ms_print's first child line, with its percentage */
    {
        json_t *top = json_array_get(json_object_get(m, "top_sites"), 0);
        char pct[32];
        assert_non_null(top);
        snprintf(pct, sizeof pct, "->%05.2f%%", json_real_value(json_object_get(top, "percent")));
        assert_non_null(strstr(out, pct));
        assert_non_null(strstr(json_string_value(json_object_get(top, "site")), "report_"));
    }
    snprintf(want, sizeof want, "peak heap %s at ", ph_fmt_bytes(b, (double)heap));
    assert_non_null(strstr(h.text, want));
    assert_string_equal(h.service, "front");
    assert_int_equal(h.problems, 0);
    html = report_html("front", "20261122T101500Z-massif");
    assert_non_null(strstr(html, "id=\"massif\""));
    assert_non_null(strstr(html, "Where the peak"));
    assert_non_null(strstr(html, "<svg class=\"chart\""));
    assert_non_null(strstr(html, "report_cache_put"));
    assert_null(strstr(html, "What is missing"));
    free(html);
    free(out);
    json_decref(j);
}

static void
test_callgrind_report(void **state)
{
    ph_report_headline h;
    json_t *j = report("front", "20261122T111500Z-callgrind", &h), *cg = json_object_get(j, "callgrind");
    char *out = rt_must("cd / && callgrind_annotate --auto=no --show=Ir %s/front/20261122T111500Z-callgrind/callgrind.out",
                        out_dir);
    const char *p = out;
    char line[4096], *html;
    unsigned long long total = 0;
    int fns = 0;

    (void)state;
    assert_non_null(cg);
    while (rt_next_line(&p, line, sizeof line)) {
        char num[64];
        if (strstr(line, "PROGRAM TOTALS") != NULL && sscanf(line, " %63[0-9,]", num) == 1)
            total = rt_uncommify(num, strlen(num));
        else if (strstr(line, "file:function") != NULL)
            fns = 1;
        else if (fns == 1 && strncmp(line, "----", 4) != 0 && line[0] != '\0') {
            /* the first function row: ours is the same */
            json_t *top = json_array_get(json_object_get(cg, "top_self"), 0);
            assert_non_null(strstr(line, json_string_value(json_object_get(top, "name"))));
            assert_non_null(strstr(line, ph_fmt_commify((char[PH_FMT_LEN]){ 0 },
                                                        (uint64_t)json_integer_value(json_object_get(
                                                            json_object_get(top, "cost"), "Ir")))));
            fns = 2;
        }
    }
    assert_int_equal(fns, 2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(cg, "totals"), "Ir")), total);
    assert_non_null(strstr(h.text, " instructions, top report_checksum "));
    html = report_html("front", "20261122T111500Z-callgrind");
    /* a tab per event, a flamegraph frame, callers and callees */
    assert_int_equal(count(html, "<div class=\"panel\" id=\"cg-pn-"),
                     (int)json_array_size(json_object_get(cg, "events")));
    assert_true(json_array_size(json_object_get(cg, "events")) > 5);
    assert_non_null(strstr(html, "<iframe class=\"flame\""));
    assert_non_null(strstr(html, "Callers and callees"));
    assert_non_null(strstr(html, "SIGTERM"));
    free(html);
    free(out);
    json_decref(j);
}

/* A mode is data: a new profile `sampled` with `report: flamegraph` gets
 * the flamegraph report as its main section, headline and first entry
 * of the table of contents, although its runs also hold a strace.log
 * (whose section, before, came first: the main section was picked by
 * comparing the mode's name with the reports').  The table of contents
 * lists the sections written, main first.  A profile naming a report
 * that does not exist is refused at load, with its file and line. */
static void
test_report_key_picks_the_section(void **state)
{
    char pdir[700], run[800], path[900];
    ph_profile_set set = { 0 };
    ph_report_headline h;
    ph_error_t err = NULL;
    char *html, *toc;
    FILE *f;

    (void)state;
    snprintf(pdir, sizeof pdir, "%s/sampled-profiles", test_dir);
    free(rt_must("mkdir -p %s && sed -e 's/^name: strace/name: sampled/' -e 's/^report: strace/report: flamegraph/' "
                 "profiles/strace.yaml > %s/sampled.yaml && grep -q '^report: flamegraph' %s/sampled.yaml",
                 pdir, pdir, pdir));
    assert_int_equal(ph_profiles_load_dir(pdir, &set, &err), 0);
    snprintf(run, sizeof run, "%s", make_run("front", "20261122T141500Z-sampled", "sampled", 0));
    free(rt_must("printf '1 12:00:00.000001 read(3, \"x\", 1) = 1 <0.000010>\\n' > %s/strace.log", run));
    snprintf(path, sizeof path, "%s/stacks-20261122T141500Z-1.folded", run);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("main;serve;hot 75\nmain;serve;cool 25\n", f);
    fclose(f);
    if (ph_report_write_run(run, &set, &h, &err) < 0)
        fail_msg("report: %s", err->msg);
    if (strstr(h.text, "samples") == NULL)
        fail_msg("the headline is not the flamegraph's: %s", h.text);
    html = report_html("front", "20261122T141500Z-sampled");
    toc = strstr(html, "<nav class=\"toc\">");
    assert_non_null(toc);
    if (strstr(toc, "all runs</a><a href=\"#flamegraph\">flamegraph</a><a href=\"#strace\">strace</a>") == NULL)
        fail_msg("table of contents: %.300s", toc);
    free(html);
    ph_profiles_free(&set);
    /* no such report: refused, where */
    free(rt_must("sed -i 's/^report: flamegraph/report: flamegrpah/' %s/sampled.yaml", pdir));
    assert_int_equal(ph_profiles_load_dir(pdir, &set, &err), -1);
    if (strstr(err->msg, "sampled.yaml:") == NULL || strstr(err->msg, "`report: flamegrpah`: there is no such report") == NULL)
        fail_msg("%s", err->msg);
    ph_error_free(&err);
    ph_profiles_free(&set);
}

static void
test_strace_report(void **state)
{
    ph_report_headline h;
    json_t *j = report("worker", "20261122T131500Z-strace", &h), *st = json_object_get(j, "strace");
    char *n = rt_must("awk '{ b = $0; sub(/^[0-9]+ +[0-9:.]+ /, \"\", b); if (b !~ /^(---|\\+\\+\\+|<\\.\\.\\.)/) n++ } "
                      "END { print n }' %s/worker/20261122T131500Z-strace/strace.log",
                      out_dir);
    char *e = rt_must("grep -cE ' = (-1|\\?) E[A-Z]+' %s/worker/20261122T131500Z-strace/strace.log", out_dir);
    size_t i;
    json_t *s;
    long long sum = 0;

    (void)state;
    assert_int_equal(json_integer_value(json_object_get(st, "calls")), strtoll(n, NULL, 10));
    assert_int_equal(json_integer_value(json_object_get(st, "errors")), strtoll(e, NULL, 10));
    json_array_foreach(json_object_get(st, "syscalls"), i, s) sum += json_integer_value(json_object_get(s, "calls"));
    assert_int_equal(sum, strtoll(n, NULL, 10));
    /* each syscall's longest call, as awk finds it in the log */
    json_array_foreach(json_object_get(st, "syscalls"), i, s) {
        const char *name = json_string_value(json_object_get(s, "name"));
        char *mx = rt_must("awk '{ b = $0; sub(/^[0-9]+ +[0-9:.]+ /, \"\", b); n = b;"
                           "       if (b ~ /^<\\.\\.\\. /) { n = substr(b, 6); sub(/ .*/, \"\", n) } else sub(/\\(.*/, \"\", n);"
                           "       if (n == \"%s\" && match(b, /<[0-9]+\\.[0-9]+>$/)) { t = substr(b, RSTART + 1, RLENGTH - 2) + 0;"
                           "           if (t > m) m = t } } END { printf \"%%.6f\", m }' %s/worker/20261122T131500Z-strace/strace.log",
                           name, out_dir);
        if (fabs(json_real_value(json_object_get(s, "max_seconds")) - strtod(mx, NULL)) > 5e-7)
            fail_msg("%s: max %.6f s, awk %s s", name, json_real_value(json_object_get(s, "max_seconds")), mx);
        free(mx);
    }
    assert_int_equal(json_array_size(json_object_get(st, "slowest")), 20);
    assert_non_null(strstr(h.text, " syscalls in "));
    assert_non_null(strstr(h.text, " errors"));
    free(n);
    free(e);
    json_decref(j);
}

/* The report of a strace run RUN of service svc whose log is LOG, its
 * headline in H and summary.json returned. */
static json_t *
strace_run_report(const char *run, const char *log, ph_report_headline *h)
{
    char path[900];

    make_run("svc", run, "strace", 0);
    snprintf(path, sizeof path, "out/svc/%s/strace.log", run);
    tu_write(path, log);
    return report("svc", run, h);
}

/* The time in syscalls is summed over the threads: three threads each
 * blocked 10 s in futex within a 10 s log is 30 s of it, which the
 * headline read as "30.0 s in syscalls" of a 10-second run.  With
 * several threads it says what the figure is; with one it is as before. */
static void
test_strace_time_summed_over_threads(void **state)
{
    const char *many = "100 10:00:00.000000 futex(0x1, FUTEX_WAIT_PRIVATE, 0, NULL) = 0 <10.000000>\n"
                       "101 10:00:00.000100 futex(0x2, FUTEX_WAIT_PRIVATE, 0, NULL) = 0 <10.000000>\n"
                       "102 10:00:00.000200 futex(0x3, FUTEX_WAIT_PRIVATE, 0, NULL) = 0 <10.000000>\n"
                       "100 10:00:10.000300 write(1, \"x\", 1) = 1 <0.000010>\n";
    const char *one = "100 10:00:00.000000 read(0, \"\", 1) = 0 <2.000000>\n"
                      "100 10:00:09.000000 write(1, \"x\", 1) = 1 <0.000010>\n";
    ph_report_headline h;
    json_t *j;

    (void)state;
    j = strace_run_report("20261122T141500Z-strace", many, &h);
    if (strstr(h.text, "30.0 s of syscall time summed over 3 threads (futex 100.0 %)") == NULL)
        fail_msg("headline: %s", h.text);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "strace"), "threads_in_syscalls")), 3);
    json_decref(j);
    j = strace_run_report("20261122T151500Z-strace", one, &h);
    if (strstr(h.text, ", 2.00 s in syscalls (read ") == NULL)
        fail_msg("headline: %s", h.text);
    json_decref(j);
}

/* The slowest calls' text is the container's bytes (a path it opened, a
 * buffer it wrote): escaped in the page, real in summary.json. */
static void
test_strace_slowest_escaped(void **state)
{
    char *html;
    ph_report_headline h;
    json_t *j, *slow;

    (void)state;
    make_run("worker", "20261122T151500Z-strace", "strace", 0);
    tu_write("out/worker/20261122T151500Z-strace/strace.log",
             "7 10:00:00.000001 openat(AT_FDCWD, \"</td><script>alert(1)</script>\", O_RDONLY) = -1 ENOENT "
             "(No such file or directory) <0.500000>\n"
             "7 10:00:00.600000 write(1, \"a&b <i>\", 8) = 8 <0.000010>\n");
    j = report("worker", "20261122T151500Z-strace", &h);
    slow = json_object_get(json_object_get(j, "strace"), "slowest");
    assert_int_equal(json_array_size(slow), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(slow, 0), "call")),
                        "openat(AT_FDCWD, \"</td><script>alert(1)</script>\", O_RDONLY) = -1 ENOENT (No such file "
                        "or directory)");
    html = report_html("worker", "20261122T151500Z-strace");
    assert_null(strstr(html, "<script>alert"));
    assert_null(strstr(html, "<i>"));
    assert_non_null(strstr(html, "openat(AT_FDCWD, &quot;&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;"));
    assert_non_null(strstr(html, "write(1, &quot;a&amp;b &lt;i&gt;&quot;, 8) = 8"));
    free(html);
    json_decref(j);
}

/* Write TEXT to the file PATH. */
static void
put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A wall-clock run (profiles/wall.yaml): 100 samples, 75 of them blocked
 * ([off-cpu] leaves), 60 of those in __read and 15 in poll (on a second
 * thread, "poller").  The headline and summary.json give the off-CPU
 * share and the top blocking call, and per thread its samples and those
 * off CPU (wall-svc 85, 60 off; poller 15, all off); the
 * CPU-only figures (a rate per CPU-second, "CPU time sampled") are not
 * printed: a wall sample is a tick of a thread's clock, running or not. */
static void
test_wall_report(void **state)
{
    const char *d = make_run("svc", "20261122T141500Z-wall", "wall", 0);
    const char *stacks = "wall-svc;main;wait;__read;[off-cpu] 60\npoller;start;loop;poll;[off-cpu] 15\n"
                         "wall-svc;main;compute 25\n";
    char path[900], *html;
    FILE *f;
    ph_report_headline h;
    json_t *j, *w, *top, *th;
    ph_error_t err = NULL;
    ph_flame_opts o;

    (void)state;
    snprintf(path, sizeof path, "%s/stacks-20261122T141600Z-1.folded", d);
    put(path, stacks);
    snprintf(path, sizeof path, "%s/offcpu-20261122T141600Z-1.folded", d);
    put(path, "wall-svc;main;wait;__read;[off-cpu] 60\npoller;start;loop;poll;[off-cpu] 15\n");
    snprintf(path, sizeof path, "%s/oncpu-20261122T141600Z-1.folded", d);
    put(path, "wall-svc;main;compute 25\n");
    snprintf(path, sizeof path, "%s/flamegraph-20261122T141600Z-1.svg", d);
    f = fopen(path, "w");
    ph_flame_opts_init(&o);
    o.subtitle = "final: 100 samples over 0.25 CPU-s; 0 dropped, 0 truncated, 0 threads without perf events, 0 in the "
                 "sampler's own writer (left out); requested 100 Hz, timer 100 Hz (timer_create(CLOCK_MONOTONIC) per "
                 "thread, SIGRTMAX-7: wall clock), delivered 400 Hz per CPU-second";
    assert_int_equal(ph_flame_render_folded(stacks, strlen(stacks), &o, f, NULL, &err), 0);
    fclose(f);
    j = report("svc", "20261122T141500Z-wall", &h);
    w = json_object_get(j, "wall");
    assert_non_null(w);
    assert_true(json_real_value(json_object_get(w, "offcpu_percent")) == 75);
    assert_true(json_real_value(json_object_get(w, "offcpu_samples")) == 75);
    top = json_array_get(json_object_get(w, "top_blocking"), 0);
    assert_string_equal(json_string_value(json_object_get(top, "name")), "__read");
    assert_true(json_real_value(json_object_get(top, "samples")) == 60);
    assert_true(json_real_value(json_object_get(top, "percent")) == 60);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(w, "top_blocking"), 1), "name")),
                        "poll");
    assert_null(json_array_get(json_object_get(w, "top_blocking"), 2));
    th = json_object_get(json_object_get(j, "flamegraph"), "threads");
    assert_string_equal(json_string_value(json_object_get(json_array_get(th, 0), "thread")), "wall-svc");
    assert_true(json_real_value(json_object_get(json_array_get(th, 0), "samples")) == 85);
    assert_true(json_real_value(json_object_get(json_array_get(th, 0), "offcpu_samples")) == 60);
    assert_string_equal(json_string_value(json_object_get(json_array_get(th, 1), "thread")), "poller");
    assert_true(json_real_value(json_object_get(json_array_get(th, 1), "offcpu_samples")) == 15);
    /* no CPU-only figure: the rate per CPU-second means nothing here */
    assert_null(json_object_get(json_object_get(json_object_get(j, "flamegraph"), "sampler"), "delivered_hz"));
    assert_string_equal(h.text, "100 samples, 75.0 % off CPU, top blocking call __read 60.0 %");
    html = report_html("svc", "20261122T141500Z-wall");
    assert_null(strstr(html, "per CPU-second"));
    assert_null(strstr(html, "delivered rate"));
    assert_null(strstr(html, "CPU time sampled"));
    assert_null(strstr(html, "(on CPU)"));
    assert_non_null(strstr(html, "off CPU"));
    assert_non_null(strstr(html, "<h3>Per thread</h3>"));
    free(html);
    json_decref(j);
}

/* A wall-clock run that waited once in 100 samples: its headline names
 * what took the wall time (compute, on CPU), with the off-CPU share, not
 * the one blocking call (it did: "1.0 % off CPU, top blocking call
 * __read 1.0 %", as an idle tick did over a busy Node). */
static void
test_wall_report_mostly_on_cpu(void **state)
{
    const char *d = make_run("svc", "20261122T151500Z-wall", "wall", 0);
    char path[900];
    ph_report_headline h;
    json_t *j;

    (void)state;
    snprintf(path, sizeof path, "%s/stacks-20261122T141600Z-1.folded", d);
    put(path, "wall-svc;main;wait;__read;[off-cpu] 1\nwall-svc;main;compute 74\nwall-svc;main;hash 25\n");
    j = report("svc", "20261122T151500Z-wall", &h);
    assert_string_equal(h.text, "100 samples, 1.0 % off CPU, top compute 74.0 % (self)");
    assert_true(json_real_value(json_object_get(json_object_get(j, "wall"), "offcpu_percent")) == 1);
    json_decref(j);
}

/* A wall run by an attached reader (no sampler status) that never saw
 * the service wait: its empty off-CPU view says it is on the wall clock,
 * and the figures say 0 % off CPU (they were missing: a Node busy the
 * whole run read as a CPU run). */
static void
test_wall_report_never_waiting(void **state)
{
    const char *d = make_run("svc", "20261122T161500Z-wall", "wall", 0);
    char path[900], *html;
    ph_report_headline h;
    json_t *j, *w;

    (void)state;
    snprintf(path, sizeof path, "%s/stacks-20261122T141600Z-1.folded", d);
    put(path, "node;hot 75\nnode;cool 25\n");
    snprintf(path, sizeof path, "%s/offcpu-20261122T141600Z-1.folded", d);
    put(path, "");
    snprintf(path, sizeof path, "%s/oncpu-20261122T141600Z-1.folded", d);
    put(path, "node;hot 75\nnode;cool 25\n");
    j = report("svc", "20261122T161500Z-wall", &h);
    w = json_object_get(j, "wall");
    assert_non_null(w);
    assert_true(json_real_value(json_object_get(w, "offcpu_percent")) == 0);
    assert_string_equal(h.text, "100 samples, top hot 75.0 % (self)");
    html = report_html("svc", "20261122T161500Z-wall");
    assert_non_null(strstr(html, "Wall-clock samples"));
    free(html);
    json_decref(j);
}

/* A runtime whose frames the sampler did not read (its status says so:
 * a JVM that did not load the agent, a CPython of an unknown version) is
 * a problem the report states, once whatever the number of processes,
 * with the program and pid as the status gives them, escaped; a runtime
 * read, or none, is no problem. */
static void
test_runtime_frames_not_read(void **state)
{
    const char *d = make_run("front", "20261122T141500Z-wall", "wall", 0);
    char path[900], *html;
    FILE *f;
    ph_report_headline h;
    json_t *j, *pr;
    size_t java;
    static const char *const status[] = {
        "{\"pid\": 8, \"program\": \"/usr/bin/java\", \"samples\": 90, \"python\": \"\", \"java\": \"Java (HotSpot "
        "17): frames not read (the JVM did not load the sampler as its agent: -agentpath is not in "
        "JAVA_TOOL_OPTIONS)\"}\n",
        "{\"pid\": 9, \"program\": \"/usr/bin/java\", \"samples\": 5, \"java\": \"Java (HotSpot 17): frames not read "
        "(the JVM did not load the sampler as its agent: -agentpath is not in JAVA_TOOL_OPTIONS)\"}\n",
        "{\"pid\": 10, \"program\": \"/usr/bin/python3.10<b>\", \"samples\": 5, \"python\": \"Python 3.10.12: frames "
        "not read (unknown version)\"}\n",
        "{\"pid\": 11, \"program\": \"/usr/bin/python3.11\", \"samples\": 5, \"python\": \"Python 3.11.2: frames "
        "read\"}\n",
    };

    (void)state;
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/sampler-status-%d.json", d, 8 + i);
        f = fopen(path, "w");
        fputs(status[i], f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/stacks-20261122T141600Z-1.folded", d);
    f = fopen(path, "w");
    fputs("main;run;work 60\nmain;wait;[off-cpu] 40\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/flamegraph-20261122T141600Z-1.svg", d);
    f = fopen(path, "w");
    fputs("<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>\n", f);
    fclose(f);
    j = report("front", "20261122T141500Z-wall", &h);
    pr = json_object_get(j, "problems");
    if (json_array_size(pr) != 2)
        fail_msg("%zu problems, the first: %s", json_array_size(pr), json_string_value(json_array_get(pr, 0)));
    /* in the files' order, each text once */
    java = strstr(json_string_value(json_array_get(pr, 0)), "Java") ? 0 : 1;
    assert_string_equal(json_string_value(json_array_get(pr, java)),
                        "Java (HotSpot 17): frames not read (the JVM did not load the sampler as its agent: -agentpath "
                        "is not in JAVA_TOOL_OPTIONS), in /usr/bin/java (pid 8, and 1 more process): its samples have "
                        "the runtime's native frames only");
    assert_string_equal(json_string_value(json_array_get(pr, 1 - java)),
                        "Python 3.10.12: frames not read (unknown version), in /usr/bin/python3.10<b> (pid 10): its "
                        "samples have the runtime's native frames only");
    html = report_html("front", "20261122T141500Z-wall");
    assert_non_null(strstr(html, "in /usr/bin/python3.10&lt;b&gt; (pid 10)"));
    free(html);
    json_decref(j);
}

/* Folded stacks and a sampler SVG, as the flamegraph mode leaves them. */
static void
test_flame_report(void **state)
{
    const char *d = make_run("front", "20261122T141500Z-flamegraph", "flamegraph", 0);
    char path[900], *html;
    FILE *f;
    ph_report_headline h;
    json_t *j, *fl;
    ph_error_t err = NULL;
    ph_flame_opts o;
    const char *folded = "main-thread;main;work;hot 60\nmain-thread;main;work;cold 20\nworker-1;start;hot 15\n"
                         "worker-1;start;<script>alert(1)</script> 3\nworker-1;start;a&b \"q\" 2\n";

    (void)state;
    snprintf(path, sizeof path, "%s/stacks-20261122T141600Z-1.folded", d);
    f = fopen(path, "w");
    fputs("main-thread;main;work;hot 1\n", f); /* an earlier cumulative snapshot: the last one has it all */
    fclose(f);
    snprintf(path, sizeof path, "%s/stacks-20261122T141600Z-2.folded", d);
    f = fopen(path, "w");
    fputs(folded, f);
    fclose(f);
    /* the sampler's SVG: its subtitle gives the sampler's figures; the
     * rest of it (a script that would run in the page) is never shown */
    snprintf(path, sizeof path, "%s/flamegraph-20261122T141600Z-2.svg", d);
    f = fopen(path, "w");
    ph_flame_opts_init(&o);
    o.title = "CONTAINER-SVG";
    o.subtitle = "final: 100 samples over 0.67 CPU-s; 3 dropped, 1 truncated, 0 threads without perf events, 7 in the "
                 "sampler's own writer (left out); requested 150 Hz, timer 150 Hz (perf_event cpu-clock per thread), "
                 "delivered 149 Hz per CPU-second";
    assert_int_equal(ph_flame_render_folded(folded, strlen(folded), &o, f, NULL, &err), 0);
    fclose(f);
    j = report("front", "20261122T141500Z-flamegraph", &h);
    fl = json_object_get(j, "flamegraph");
    assert_true(json_real_value(json_object_get(fl, "samples")) == 100);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(fl, "top_self"), 0), "name")),
                        "hot");
    assert_true(json_real_value(json_object_get(json_array_get(json_object_get(fl, "top_self"), 0), "samples")) == 75);
    /* the thread is not a function: main is on the stack of 80 */
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(fl, "top_total"), 0), "name")),
                        "main");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(fl, "threads"), 0), "thread")),
                        "main-thread");
    assert_true(json_real_value(json_object_get(json_object_get(fl, "sampler"), "requested_hz")) == 150);
    assert_true(json_real_value(json_object_get(json_object_get(fl, "sampler"), "delivered_hz")) == 149);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(fl, "sampler"), "dropped")), 3);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(fl, "sampler"), "own")), 7);
    assert_string_equal(h.text, "100 samples, top hot 75.0 % (self)");
    html = report_html("front", "20261122T141500Z-flamegraph");
    assert_null(strstr(html, "<script>alert"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_non_null(strstr(html, "a&amp;b &quot;q&quot;"));
    assert_non_null(strstr(html, " srcdoc=\"&lt;!DOCTYPE html&gt;"));
    free(html);
    /* the frame's document holds the harness's own rendering of the
     * stacks, as report-flamegraph.svg has it (but for the XML
     * declaration, which an HTML page has no use for), never the
     * container's SVG; and each stacks file has its own graph beside it */
    {
        char *decoded = rt_must("python3 -c 'import html, re, sys; "
                                "page = open(sys.argv[1]).read(); svg = open(sys.argv[2]).read(); "
                                "doc = html.unescape(re.search(\" srcdoc=\\\"([^\\\"]*)\\\"\", page).group(1)); "
                                "inner = doc[doc.index(\"<svg \"):]; "
                                "print(inner == svg[svg.index(\"<svg \"):], \"CONTAINER-SVG\" in doc, "
                                "\">front (flamegraph, run 20261122T141500Z-flamegraph)<\" in inner, "
                                "\"requested 150 Hz\" in inner)' %s/report.html %s/report-flamegraph.svg",
                                d, d);
        assert_string_equal(decoded, "True False True True\n");
        free(decoded);
        decoded = rt_must("grep -c 'iframe class=\"flame\" sandbox=\"allow-scripts\" style=\"aspect-ratio:' %s/report.html; "
                          "grep -l CONTAINER-SVG %s/report* || echo none; ls %s | grep '^report-'", d, d, d);
        assert_string_equal(decoded, "1\nnone\nreport-flamegraph.svg\nreport-stacks-20261122T141600Z-1.svg\n"
                                     "report-stacks-20261122T141600Z-2.svg\n");
        free(decoded);
    }
    /* written again (`profharness report`): the report's own graphs are
     * not the run's artifacts */
    json_decref(report("front", "20261122T141500Z-flamegraph", &h));
    html = report_html("front", "20261122T141500Z-flamegraph");
    assert_non_null(strstr(html, ">stacks-20261122T141600Z-2.folded</td>"));
    assert_null(strstr(html, ">report-flamegraph.svg</td>"));
    assert_null(strstr(html, ">report-stacks-20261122T141600Z-1.svg</td>"));
    free(html);
    json_decref(j);
}

/* A long subtitle wrapped into lines (<tspan>s, as the renderer writes
 * one wider than the graph): the sampler's figures are read all the same. */

static void
test_flame_wrapped_subtitle(void **state)
{
    const char *d = make_run("front", "20261122T142500Z-flamegraph", "flamegraph", 0);
    char path[900];
    FILE *f;
    ph_report_headline h;
    json_t *j, *smp;

    (void)state;
    snprintf(path, sizeof path, "%s/stacks-20261122T142600Z-1.folded", d);
    f = fopen(path, "w");
    fputs("main-thread;main;hot 10\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/flamegraph-20261122T142600Z-1.svg", d);
    f = fopen(path, "w");
    fputs("<?xml version=\"1.0\" standalone=\"yes\"?>\n<svg version=\"1.1\" width=\"1200\" height=\"300\" "
          "xmlns=\"http://www.w3.org/2000/svg\">\n<text id=\"title\" x=\"600.0\" y=\"24\">front</text>\n"
          "<text id=\"subtitle\" x=\"600.0\" y=\"42\"><tspan x=\"600.0\" y=\"42\">final: 10 samples over 0.07 "
          "CPU-s; 4 dropped, 0 truncated, 0 threads without perf events, 2 in the sampler&apos;s own writer (left "
          "out);</tspan><tspan x=\"600.0\" y=\"56\">requested 250 Hz, timer 250 Hz (setitimer(ITIMER_PROF)), "
          "delivered 142 Hz per CPU-second</tspan></text>\n<g id=\"frames\">\n</g>\n</svg>\n",
          f);
    fclose(f);
    j = report("front", "20261122T142500Z-flamegraph", &h);
    smp = json_object_get(json_object_get(j, "flamegraph"), "sampler");
    assert_non_null(smp);
    assert_true(json_real_value(json_object_get(smp, "requested_hz")) == 250);
    assert_true(json_real_value(json_object_get(smp, "delivered_hz")) == 142);
    assert_int_equal(json_integer_value(json_object_get(smp, "dropped")), 4);
    assert_int_equal(json_integer_value(json_object_get(smp, "own")), 2);
    assert_non_null(strstr(json_string_value(json_object_get(smp, "text")), "(left out); requested 250 Hz"));
    json_decref(j);
}

/* Broken artifacts: a report all the same, saying what and why. */
static void
test_bad_artifacts(void **state)
{
    static const struct {
        const char *run, *mode, *file, *content, *problem;
        int snapshot;
    } cases[] = {
        { "20261122T150000Z-massif", "massif", "massif.out", "", "massif.out is empty", 0 },
        { "20261122T150100Z-massif", "massif", "massif.out", "desc: x\ncmd: y\ntime_unit: B\nsnapshot=0\ntime=0\n",
          "the file ends inside snapshot 0", 0 },
        { "20261122T150200Z-callgrind", "callgrind", "callgrind.out", "events: Ir\nfl=a.c\nfn=f\n1 5\n",
          "no totals: line: the file is cut short", 0 },
        { "20261122T150300Z-strace", "strace", "strace.log", "garbage\nmore garbage\n", "no syscall in the log", 0 },
        { "20261122T150400Z-strace", "strace", NULL, NULL, "no strace.log* in the run", 0 },
        { "20261122T150500Z-massif", "massif", NULL, NULL, "did not stop through the init shim", 1 },
        { "20261122T150600Z-flamegraph", "flamegraph", "stacks-x-1.folded", "no stack here\n", "no samples", 0 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *d = make_run("broken", cases[i].run, cases[i].mode, cases[i].snapshot);
        ph_report_headline h;
        json_t *j, *problems;
        char *html, all[4096] = "";
        size_t k;
        json_t *p;

        if (cases[i].file != NULL) {
            char path[900];
            FILE *f;
            snprintf(path, sizeof path, "%s/%s", d, cases[i].file);
            f = fopen(path, "w");
            fputs(cases[i].content, f);
            fclose(f);
        }
        j = report("broken", cases[i].run, &h);
        problems = json_object_get(j, "problems");
        json_array_foreach(problems, k, p) {
            strncat(all, json_string_value(p), sizeof all - strlen(all) - 2);
            strcat(all, "|");
        }
        if (strstr(all, cases[i].problem) == NULL)
            fail_msg("case %zu: no problem \"%s\" in \"%s\"", i, cases[i].problem, all);
        assert_true(h.problems > 0);
        html = report_html("broken", cases[i].run);
        assert_non_null(strstr(html, "What is missing or broken"));
        free(html);
        json_decref(j);
    }
}

/* How it stopped, and stage timings whatever their shape. */
static void
test_run_section(void **state)
{
    const char *d = make_run("other", "20261122T160000Z-massif", "massif", 0);
    char path[900], *html;
    FILE *f;
    ph_report_headline h;
    json_t *j;

    (void)state;
    snprintf(path, sizeof path, "%s/ph-exit.json", d);
    f = fopen(path, "w");
    fputs("{\"version\":1,\"command\":[\"valgrind\",\"it's\"],\"exit_code\":137,\"signal\":\"SIGKILL\","
          "\"stop_requested\":true,\"stop_signal\":\"SIGTERM\",\"escalations\":[\"SIGUSR2\",\"SIGKILL\"],"
          "\"run_seconds\":12.5,\"stop_seconds\":90.4}",
          f);
    fclose(f);
    j = report("other", "20261122T160000Z-massif", &h);
    assert_string_equal(json_string_value(json_object_get(j, "stopped")),
                        "SIGTERM, escalated: SIGUSR2, then SIGKILL: ended by SIGKILL");
    html = report_html("other", "20261122T160000Z-massif");
    assert_non_null(strstr(html, "stop requested (SIGTERM); ended by SIGKILL, 90.4 s after the request; escalated: "
                                 "SIGUSR2, then SIGKILL"));
    assert_non_null(strstr(html, "valgrind &#39;it&#39;\\&#39;&#39;s&#39;")); /* shell-quoted, then escaped */
    assert_non_null(strstr(html, "stream and extract artifacts"));
    assert_non_null(strstr(html, ">extract<"));          /* a child stage */
    assert_non_null(strstr(html, "bytes=1234"));
    /* SIGKILL leaves massif no time to write: the report says so */
    assert_non_null(strstr(html, "killed (SIGKILL)"));
    free(html);
    json_decref(j);
}

/* The report of a massif run RUN of service jvm whose ph-exit.json is
 * RECORD: summary.json returned, the page in *HTML. */
static json_t *
stopped_run(const char *run, const char *record, char **html)
{
    char path[900];
    ph_report_headline h;
    json_t *j;

    make_run("jvm", run, "massif", 0);
    snprintf(path, sizeof path, "out/jvm/%s/ph-exit.json", run);
    tu_write(path, record);
    j = report("jvm", run, &h);
    *html = report_html("jvm", run);
    return j;
}

/* A JVM ends on SIGTERM with exit(143), 128 + SIGTERM, after its shutdown
 * hooks: a Tomcat stopped by the harness read "SIGTERM: exit 143", like a
 * failure.  After the stop signal the harness sent, 128 + that signal is
 * a normal stop, and said so; another status, or 143 with no stop asked,
 * is shown as it is. */
static void
test_stop_exit_128_plus_signal(void **state)
{
#define REC                                                                                                            \
    "{\"version\":1,\"exit_code\":%d,\"signal\":null,\"stop_requested\":%s,\"stop_signal\":\"SIGTERM\","           \
    "\"escalations\":[],\"outcome\":\"%s\",\"service_exit_code\":%d,\"service_signal\":null,\"complete\":true,"     \
    "\"stop_seconds\":1.5}"
    char buf[512], *html;
    json_t *j;

    (void)state;
    snprintf(buf, sizeof buf, REC, 143, "true", "stopped", 143);
    j = stopped_run("20261122T170000Z-massif", buf, &html);
    assert_string_equal(json_string_value(json_object_get(j, "stopped")),
                        "stopped on SIGTERM (exit 143 = 128 + SIGTERM, the JVM's usual)");
    if (strstr(html, "stop requested (SIGTERM); stopped on it: status 143 is 128 + SIGTERM, how the JVM and a shell "
                     "end on it, 1.50 s after the request; no escalation") == NULL)
        fail_msg("no normal stop in the page");
    free(html);
    json_decref(j);
    /* another status after the stop: as it is */
    snprintf(buf, sizeof buf, REC, 1, "true", "stopped", 1);
    j = stopped_run("20261122T171000Z-massif", buf, &html);
    assert_string_equal(json_string_value(json_object_get(j, "stopped")), "SIGTERM: exit 1");
    free(html);
    json_decref(j);
    /* 143 with no stop asked: a SIGTERM from someone else, as it is */
    snprintf(buf, sizeof buf, REC, 143, "false", "exited", 143);
    j = stopped_run("20261122T172000Z-massif", buf, &html);
    assert_string_equal(json_string_value(json_object_get(j, "stopped")), "exit 143");
    assert_non_null(strstr(html, "not asked to stop; exited with status 143"));
    free(html);
    json_decref(j);
#undef REC
}

/* run.json's timing tree (the harness's own stages, nested) and the
 * harness.folded beside it: shown in the run section, never taken for a
 * profiler's output. */
static void
test_timing_tree(void **state)
{
    const char *d = make_run("other", "20261122T161000Z-strace", "strace", 0);
    char path[900], *html;
    FILE *f;
    ph_report_headline h;
    json_t *j;

    (void)state;
    snprintf(path, sizeof path, "%s/run.json", d);
    f = fopen(path, "w");
    fputs("{\"service\": \"other\", \"mode\": \"strace\", \"timing\": {\"name\": \"stop\", \"category\": \"cli\", "
          "\"start_ns\": 0, \"duration_ns\": 2500000000, \"self_ns\": 1000, \"bytes_in\": 0, \"bytes_out\": 0, "
          "\"concurrent\": false, \"failed\": false, \"attributes\": {\"service\": \"other\"}, \"children\": ["
          "{\"name\": \"collect artifacts\", \"category\": \"engine\", \"start_ns\": 5, \"duration_ns\": 750000000, "
          "\"self_ns\": 0, \"bytes_in\": 4096, \"bytes_out\": 0, \"concurrent\": true, \"failed\": true, "
          "\"error\": \"disk full\", \"attributes\": {}, \"children\": []}]}}\n",
          f);
    fclose(f);
    snprintf(path, sizeof path, "%s/strace.log", d);
    f = fopen(path, "w");
    fputs("1 10:00:00.1 read(0, \"\", 1) = 0 <0.1>\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/harness.folded", d);
    f = fopen(path, "w");
    fputs("stop;collect artifacts 750000000\nstop 1750000000\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/harness.trace.json", d);
    f = fopen(path, "w");
    fputs("{\"traceEvents\": []}\n", f);
    fclose(f);
    j = report("other", "20261122T161000Z-strace", &h);
    assert_null(json_object_get(j, "flamegraph")); /* harness.folded is not the profile */
    assert_int_equal(json_array_size(json_object_get(j, "problems")), 0);
    html = report_html("other", "20261122T161000Z-strace");
    assert_non_null(strstr(html, ">stop<"));
    assert_non_null(strstr(html, ">collect artifacts<"));
    assert_non_null(strstr(html, "data-v=\"2.5\""));  /* 2,500,000,000 ns in seconds */
    assert_non_null(strstr(html, "data-v=\"0.75\""));
    assert_non_null(strstr(html, "bytes_in=4096"));
    assert_non_null(strstr(html, "concurrent"));
    assert_non_null(strstr(html, "error=disk full"));
    assert_non_null(strstr(html, "service=other"));
    assert_non_null(strstr(html, "The harness&#39;s own time"));
    free(html);
    json_decref(j);
}

static void
test_index(void **state)
{
    ph_error_t err = NULL;
    char path[900], *html;
    const char *a, *b, *c;

    (void)state;
    make_run("front", "20261122T170000Z-strace", "strace", 0); /* no report yet */
    /* a run dir's name is a path segment of the link: ? and # cannot cut it */
    free(rt_must("echo '{}' > '%s'/summary.json", make_run("front", "20261122T165000Z-strace#x?y", "strace", 0)));
    assert_int_equal(ph_report_write_index(out_dir, &err), 0);
    snprintf(path, sizeof path, "%s/index.html", out_dir);
    html = rt_slurp(path, NULL);
    a = strstr(html, "20261122T170000Z-strace");
    b = strstr(html, "20261122T131500Z-strace/report.html");
    c = strstr(html, "20261122T101500Z-massif/report.html");
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_true(a < b && b < c); /* newest first */
    assert_non_null(strstr(html, "profharness report front/20261122T170000Z-strace"));
    assert_non_null(strstr(html, "peak heap"));
    assert_non_null(strstr(html, "href=\"front/20261122T165000Z-strace%23x%3Fy/report.html\""));
    /* the page's own scripts only, by their hashes */
    assert_non_null(strstr(html, "script-src 'sha256-"));
    assert_null(strstr(html, "script-src 'unsafe-inline'"));
    free(html);
    /* a run of several workloads (replicas, a Swarm service's tasks):
     * listed per workload, each linking to its own report */
    make_run("worker/20261122T180000Z-strace", "1", "strace", 0);
    free(rt_must("echo '{}' > '%s'/summary.json", make_run("worker/20261122T180000Z-strace", "2", "strace", 0)));
    free(rt_must("echo '{}' > '%s/worker/20261122T180000Z-strace/tasks.json'", out_dir));
    /* a lone run's sub-dir is no workload's (a container's tasks.json is kept
     * as container-tasks.json: test_rundir) */
    make_run("worker", "20261122T175000Z-strace", "strace", 0);
    free(rt_must("mkdir '%s/worker/20261122T175000Z-strace/sub'", out_dir));
    assert_int_equal(ph_report_write_index(out_dir, &err), 0);
    html = rt_slurp(path, NULL);
    assert_non_null(strstr(html, "href=\"worker/20261122T180000Z-strace/2/report.html\""));
    assert_non_null(strstr(html, "profharness report worker/20261122T180000Z-strace/1<"));
    assert_non_null(strstr(html, "<b>worker</b>/2<"));
    {
        size_t n = 0; /* 1 and 2: no . nor .. */

        for (const char *at = html; (at = strstr(at, "<b>worker</b>/")) != NULL; at++)
            n++;
        assert_int_equal(n, 2);
    }
    assert_null(strstr(html, "20261122T175000Z-strace/sub"));
    free(html);
    assert_int_equal(ph_report_write_index("/nonexistent/out", &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
}

static int
compare(const char *a, const char *b, const char *const *fail_if, size_t n, int format, char **out, char **failed,
        ph_error_t *err)
{
    char pa[900], pb[900], html[900];
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    ph_compare_opts o = { html, format, fail_if, n, 10 };
    int rc;

    snprintf(pa, sizeof pa, "%s/%s", out_dir, a);
    snprintf(pb, sizeof pb, "%s/%s", out_dir, b);
    snprintf(html, sizeof html, "%s/compare.html", test_dir);
    rc = ph_compare_runs(pa, pb, rt_profiles(), &o, f, failed, err);
    fclose(f);
    return rc;
}

static void
test_compare(void **state)
{
    const char *a = "front/20261122T111500Z-callgrind", *b = "front/20261122T121500Z-callgrind";
    const char *grow[] = { "ir>+5%", "ir>+500%", "ir_incl[report_checksum]>+50%", "Ir[report_fib]<1k" };
    char *out = NULL, *failed = NULL, *html;
    ph_error_t err = NULL;
    json_t *j;

    (void)state;
    /* B ran cpu_work twice (two threads): about twice the instructions */
    assert_int_equal(compare(a, b, grow, 4, PH_COMPARE_TEXT, &out, &failed, &err), 1);
    assert_non_null(failed);
    assert_non_null(strstr(failed, "--fail-if ir>+5%: ir went from "));
    assert_null(strstr(failed, "ir>+500%"));
    assert_non_null(strstr(failed, "ir_incl[report_checksum]>+50%"));
    assert_null(strstr(failed, "report_fib]<1k"));
    assert_non_null(strstr(out, "compare front (callgrind): 20261122T111500Z-callgrind -> 20261122T121500Z-callgrind"));
    assert_non_null(strstr(out, "report_checksum"));
    free(out);
    free(failed);
    failed = NULL;

    assert_int_equal(compare(a, b, NULL, 0, PH_COMPARE_JSON, &out, &failed, &err), 0);
    assert_null(failed);
    j = json_loads(out, 0, NULL);
    assert_non_null(j);
    {
        json_t *row = json_array_get(json_object_get(json_object_get(j, "totals"), "rows"), 0);
        assert_string_equal(json_string_value(json_object_get(row, "name")), "Ir");
        assert_true(json_real_value(json_object_get(row, "b")) > 1.8 * json_real_value(json_object_get(row, "a")));
    }
    json_decref(j);
    free(out);
    html = rt_slurp(rt_path("compare.html"), NULL);
    assert_non_null(strstr(html, "Differential flamegraph"));
    assert_non_null(strstr(html, "<iframe class=\"flame\""));
    free(html);

    /* a run against itself: nothing changes, nothing fails */
    {
        const char *zero[] = { "peak_heap>+0%", "peak_heap<-0%", "heap[report_cache_put]>+1" };
        assert_int_equal(compare("front/20261122T101500Z-massif", "front/20261122T101500Z-massif", zero, 3,
                                 PH_COMPARE_TEXT, &out, &failed, &err),
                         0);
        free(out);
    }
    /* two modes */
    assert_int_equal(compare(a, "front/20261122T101500Z-massif", NULL, 0, PH_COMPARE_TEXT, &out, &failed, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_non_null(strstr(err->msg, "compare two runs of one mode"));
    ph_error_free(&err);
    free(out);
    /* a metric the mode does not have */
    {
        const char *bad[] = { "peak_heap>+1%" };
        assert_int_equal(compare(a, b, bad, 1, PH_COMPARE_TEXT, &out, &failed, &err), -1);
        assert_int_equal(err->status, PH_EXIT_USAGE);
        assert_non_null(strstr(err->hint, "metrics:"));
        ph_error_free(&err);
        free(out);
    }
}

/* A Python service's run (tests/unit/data/lang/python.folded, as the
 * sampler writes it, two more native-only samples): the headline, the
 * summary, the top tables and compare name Python functions; the
 * interpreter's unnamed frames under them are no "no function name"; the
 * native view is there beside it, in the page and as its own graph. */
static void
test_language_view_report(void **state)
{
    const char *run[2] = { "20261122T190000Z-flamegraph", "20261122T191500Z-flamegraph" };
    char *html, *out = NULL, *failed = NULL, *t;
    ph_report_headline h;
    ph_error_t err = NULL;
    json_t *j, *fl, *p;
    size_t k;

    (void)state;
    for (int i = 0; i < 2; i++) {
        const char *d = make_run("radicale", run[i], "flamegraph", 0);
        /* B: __setattr__ three times as often */
        free(rt_must("grep -v off-cpu tests/unit/data/lang/python.folded | awk '/^#/ { next } "
                     "{ n = $NF; if (%d && /__setattr__/) n *= 3; $NF = n; print } "
                     "END { print \"thread-251;clone;start_thread;python3.11+0x255792;python3.11+0x12a4f0 3\" }' "
                     "> %s/stacks-20261122T190100Z.folded",
                     i, d));
    }
    j = report("radicale", run[0], &h);
    fl = json_object_get(j, "flamegraph");
    assert_string_equal(h.text, "26 samples (Python view), top __setattr__ (base.py) 61.5 % (self)");
    assert_string_equal(json_string_value(json_object_get(fl, "view")), "Python");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(fl, "top_self"), 0), "name")),
                        "__setattr__ (base.py)");
    assert_true(json_real_value(json_object_get(json_array_get(json_object_get(fl, "top_self"), 0), "samples")) == 16);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(fl, "top_total"), 0), "name")),
                        "_bootstrap (threading.py)");
    /* the native view: every frame as the sampler wrote it */
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(json_object_get(fl, "native"), "top_self"), 0), "name")),
                        "python3.11+0x1e44b0");
    /* unnamed: the 5 samples of the threads with no Python frame, not the
     * interpreter running __setattr__ (before: 18 of 26) */
    t = NULL;
    json_array_foreach(json_object_get(j, "problems"), k, p)
        if (strstr(json_string_value(p), "no function name") != NULL)
            t = strdup(json_string_value(p));
    assert_non_null(t);
    assert_non_null(strstr(t, "19.2 % of the samples have no function name: python3.11 (19.2 %), the CPython "
                              "interpreter outside any Python function, has no symbols"));
    free(t);
    html = report_html("radicale", run[0]);
    assert_non_null(strstr(html, "Python view: each stack is its Python functions (80.8 % of the samples have one)"));
    assert_non_null(strstr(html, "<summary>Native view: every frame"));
    assert_int_equal(count(html, "iframe class=\"flame\""), 2);
    free(html);
    t = rt_must("ls %s/radicale/%s | grep '^report-'; grep -c 'python3.11+0x1e44b0' %s/radicale/%s/report-flamegraph.svg; "
                "grep -c 'python3.11+0x1e44b0' %s/radicale/%s/report-flamegraph-native.svg",
                out_dir, run[0], out_dir, run[0], out_dir, run[0]);
    assert_string_equal(t, "report-flamegraph-native.svg\nreport-flamegraph.svg\n0\n1\n");
    free(t);
    json_decref(j);
    json_decref(report("radicale", run[1], &h));
    /* compare speaks Python too */
    {
        char ra[200], rb[200];
        const char *fail[] = { "self[__setattr__ (base.py)]>+30%" };

        snprintf(ra, sizeof ra, "radicale/%s", run[0]);
        snprintf(rb, sizeof rb, "radicale/%s", run[1]);
        assert_int_equal(compare(ra, rb, fail, 1, PH_COMPARE_TEXT, &out, &failed, &err), 1);
        assert_non_null(failed);
        assert_non_null(strstr(failed, "__setattr__ (base.py)"));
        assert_non_null(strstr(out, "__setattr__ (base.py)"));
        assert_null(strstr(out, "python3.11+0x1e44b0"));
        free(out);
        free(failed);
    }
    assert_int_equal(ph_report_write_index(out_dir, &err), 0);
    html = rt_slurp(rt_path("out/index.html"), NULL);
    assert_non_null(strstr(html, "(Python view), top __setattr__ (base.py)"));
    free(html);
}

/* A headline never cuts a function's name: one that fits is whole (past
 * the 80 bytes a headline held before), a longer one loses whole pieces
 * (its arguments, its template arguments) for an ellipsis. */
static void
test_headline_whole_names(void **state)
{
    static const struct {
        const char *leaf, *want;
    } cases[] = {
        { "net::HttpStreamFactory::JobController::OnStreamReadyOnPooledConnection(net::SSLConfig const&)",
          "net::HttpStreamFactory::JobController::OnStreamReadyOnPooledConnection(net::SSLConfig const&)" },
        { "void std::vector<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >, "
          "std::allocator<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > > >::"
          "_M_realloc_insert<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&>"
          "(__gnu_cxx::__normal_iterator<std::__cxx11::basic_string<char, std::char_traits<char>, "
          "std::allocator<char> >*, std::vector<std::__cxx11::basic_string<char> > >, std::__cxx11::basic_string<char, "
          "std::char_traits<char>, std::allocator<char> > const&)",
          "void std::vector<\u2026>::_M_realloc_insert<\u2026>(\u2026)" },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *d = make_run("front", "20261122T200000Z-flamegraph", "flamegraph", 0);
        char path[900], want[1024];
        ph_report_headline h;
        FILE *f;

        snprintf(path, sizeof path, "%s/stacks-20261122T200100Z.folded", d);
        f = fopen(path, "w");
        fprintf(f, "main-thread;main;%s 9\nmain-thread;main;other 1\n", cases[i].leaf);
        fclose(f);
        json_decref(report("front", "20261122T200000Z-flamegraph", &h));
        snprintf(want, sizeof want, "10 samples, top %s 90.0 %% (self)", cases[i].want);
        assert_string_equal(h.text, want);
    }
}

/* Threads of a pool are one row, in the table and in summary.json:
 * names that differ only in runs of digits, each differing run as N,
 * with the count of threads, the biggest group first. */
static void
test_thread_pools(void **state)
{
    const char *d = make_run("tomcat", "20261122T210000Z-flamegraph", "flamegraph", 0);
    static const struct {
        const char *thread;
        double samples;
        int threads;
    } want[] = {
        { "http-nio-8080-exec-N", 9, 3 }, { "GC Thread#0", 6, 1 },          { "main", 5, 1 },
        { "ForkJoinPool-1-worker-N", 2, 2 }, { "pool-N-thread-1", 2, 2 },
    };
    char path[900], *html;
    ph_report_headline h;
    json_t *j, *th;
    FILE *f;

    (void)state;
    snprintf(path, sizeof path, "%s/stacks-20261122T210100Z.folded", d);
    f = fopen(path, "w");
    fputs("http-nio-8080-exec-1;run;doGet 4\nhttp-nio-8080-exec-2;run;doGet 2\nhttp-nio-8080-exec-10;run;service 3\n"
          "ForkJoinPool-1-worker-3;run;compute 1\nForkJoinPool-1-worker-5;run;compute 1\n"
          "pool-2-thread-1;run;poll 1\npool-3-thread-1;run;poll 1\nmain;main;wait 5\nGC Thread#0;work 6\n",
          f);
    fclose(f);
    j = report("tomcat", "20261122T210000Z-flamegraph", &h);
    th = json_object_get(json_object_get(j, "flamegraph"), "threads");
    assert_int_equal(json_array_size(th), 5);
    for (size_t i = 0; i < 5; i++) {
        json_t *r = json_array_get(th, i);
        assert_string_equal(json_string_value(json_object_get(r, "thread")), want[i].thread);
        assert_true(json_real_value(json_object_get(r, "samples")) == want[i].samples);
        assert_int_equal(json_integer_value(json_object_get(r, "threads")), want[i].threads);
    }
    html = report_html("tomcat", "20261122T210000Z-flamegraph");
    assert_non_null(strstr(html, ">http-nio-8080-exec-N (3 threads)</td>"));
    assert_non_null(strstr(html, "doGet (66.7 %)"));
    free(html);
    /* and the graph draws a pool as one tower: its root frame the group's
     * (a request-per-thread server drew hundreds of thin towers) */
    snprintf(path, sizeof path, "%s/report-flamegraph.svg", d);
    html = rt_slurp(path, NULL);
    assert_non_null(strstr(html, ">http-nio-8080-exec-N ("));
    assert_null(strstr(html, ">http-nio-8080-exec-10 ("));
    assert_non_null(strstr(html, ">GC Thread#0 ("));
    free(html);
    json_decref(j);
}

static void
test_fail_if_syntax(void **state)
{
    static const char *const good[] = { "ir>+5%", "peak_heap>+10%", "samples[front_checksum_payload]>+20%",
                                        "Ir[a::b<int>]>=1.5M", "syscall_time <= 2", "errors[openat]<-3",
                                        " calls[read] > 10k " };
    static const struct {
        const char *expr, *msg;
    } bad[] = {
        { ">5", "no metric" },       { "ir=5", "expected >, <, >= or <=" }, { "ir>", "is not a number" },
        { "ir>5x", "unexpected `x`" }, { "ir[>5", "without a name" },        { "ir[]>5", "without a name" },
    };
    ph_error_t err = NULL;

    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (ph_compare_check(good[i], &err) != 0)
            fail_msg("`%s`: %s", good[i], err->msg);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(ph_compare_check(bad[i].expr, &err), -1);
        assert_int_equal(err->status, PH_EXIT_USAGE);
        if (strstr(err->msg, bad[i].msg) == NULL)
            fail_msg("`%s`: %s", bad[i].expr, err->msg);
        ph_error_free(&err);
    }
}

/* Samples per function: recursion counts once per stack, the thread root
 * is not a function. */
static void
test_flame_tally(void **state)
{
    const char *in = "t1;a;b;a 5\nt1;a 3\nt2;b 2\nt2 1\n";
    ph_error_t err = NULL;
    ph_folded *f = ph_folded_parse(in, strlen(in), 0, &err);
    double *self, *total;
    int64_t a = -1, b = -1, t1 = -1;

    (void)state;
    assert_non_null(f);
    assert_int_equal(ph_flame_tally(f, 1, &self, &total), 0);
    for (uint32_t i = 0; i < ph_folded_n_names(f); i++) {
        const char *n = ph_folded_name(f, i, NULL);
        if (strcmp(n, "a") == 0)
            a = i;
        else if (strcmp(n, "b") == 0)
            b = i;
        else if (strcmp(n, "t1") == 0)
            t1 = i;
    }
    assert_true(a >= 0 && b >= 0 && t1 >= 0);
    assert_true(total[a] == 8 && self[a] == 8);
    assert_true(total[b] == 7 && self[b] == 2);
    assert_true(total[t1] == 0 && self[t1] == 0);
    free(self);
    free(total);
    ph_folded_free(f);
}

/* A planted report.html.tmp or summary.json.tmp symlink is not written
 * through (the harness may run as root under sudo): the files are made
 * fresh, the link's target is untouched. */
static void
test_planted_temp_links(void **state)
{
    const char *d = make_run("front", "20261122T160000Z-strace", "strace", 0);
    char path[900], victim[900], *text;
    ph_report_headline h;
    json_t *j;

    (void)state;
    snprintf(victim, sizeof victim, "%s/victim", out_dir);
    free(rt_must("printf 'precious\\n' > %s && ln -s %s %s/report.html.tmp && ln -s %s %s/summary.json.tmp && "
                 "ln -s %s %s/report-flamegraph.svg.tmp", victim, victim, d, victim, d, victim, d));
    snprintf(path, sizeof path, "%s/strace.log", d);
    free(rt_must("printf '1 10:00:00.000001 read(3, \"x\", 1) = 1 <0.000010>\\n' > %s", path));
    j = report("front", "20261122T160000Z-strace", &h);
    json_decref(j);
    text = rt_slurp(victim, NULL);
    assert_string_equal(text, "precious\n");
    free(text);
    text = rt_must("stat -c %%F %s/report.html %s/summary.json", d, d);
    assert_string_equal(text, "regular file\nregular file\n");
    free(text);
}

static void
test_fmt(void **state)
{
    char b[PH_FMT_LEN];

    (void)state;
    assert_string_equal(ph_fmt_commify(b, 0), "0");
    assert_string_equal(ph_fmt_commify(b, 999), "999");
    assert_string_equal(ph_fmt_commify(b, 1000), "1,000");
    assert_string_equal(ph_fmt_commify(b, 1768079), "1,768,079");
    assert_string_equal(ph_fmt_commify_signed(b, -1234567), "-1,234,567");
    assert_string_equal(ph_fmt_bytes(b, 812), "812 B");
    assert_string_equal(ph_fmt_bytes(b, 999), "999 B");
    assert_string_equal(ph_fmt_bytes(b, 1000), "0.98 KiB"); /* ms_print changes unit at 1000 */
    assert_string_equal(ph_fmt_bytes(b, 1536), "1.50 KiB");
    assert_string_equal(ph_fmt_bytes(b, 14.2 * 1024 * 1024), "14.2 MiB");
    assert_string_equal(ph_fmt_bytes(b, 300.0 * 1024 * 1024 * 1024), "300 GiB");
    assert_string_equal(ph_fmt_count(b, 812), "812");
    assert_string_equal(ph_fmt_count(b, 1920000000), "1.92 G");
    assert_string_equal(ph_fmt_count(b, 12345), "12.3 k");
    assert_string_equal(ph_fmt_seconds(b, 0), "0 s");
    assert_string_equal(ph_fmt_seconds(b, 0.000045), "45.0 µs");
    assert_string_equal(ph_fmt_seconds(b, 0.12), "120 ms");
    assert_string_equal(ph_fmt_seconds(b, 3.1), "3.10 s");
    assert_string_equal(ph_fmt_seconds(b, 125), "2 min 5 s");
    assert_string_equal(ph_fmt_percent(b, 61, 100), "61.0 %");
    assert_string_equal(ph_fmt_percent(b, 1, 0), "-");
    assert_string_equal(ph_fmt_change(b, 100, 105), "+5.0 %");
    assert_string_equal(ph_fmt_change(b, 100, 88), "-12.0 %");
    assert_string_equal(ph_fmt_change(b, 0, 5), "new");
    assert_string_equal(ph_fmt_change(b, 5, 0), "gone");
}

/* A heap site is the caller of the allocator: C++'s operator new (any
 * overload, its signature after the name) is the allocator as malloc is. */
static void
test_heap_allocator_names(void **state)
{
    (void)state;
    static const char *const alloc[] = { "malloc", "calloc", "realloc", "operator new(unsigned long)",
                                         "operator new[](unsigned long)", "operator new", "__libc_malloc" };
    static const char *const not_alloc[] = { "main", "mallocx", "my_malloc", "operator delete(void*)" };

    for (size_t i = 0; i < sizeof alloc / sizeof alloc[0]; i++)
        assert_true(ph_heap_is_allocator(alloc[i]));
    for (size_t i = 0; i < sizeof not_alloc / sizeof not_alloc[0]; i++)
        assert_false(ph_heap_is_allocator(not_alloc[i]));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_massif_report),
        cmocka_unit_test(test_heap_allocator_names),
        cmocka_unit_test(test_planted_temp_links),
        cmocka_unit_test(test_callgrind_report),
        cmocka_unit_test(test_strace_report),
        cmocka_unit_test(test_report_key_picks_the_section),
        cmocka_unit_test(test_strace_time_summed_over_threads),
        cmocka_unit_test(test_strace_slowest_escaped),
        cmocka_unit_test(test_flame_report),
        cmocka_unit_test(test_runtime_frames_not_read),
        cmocka_unit_test(test_wall_report),
        cmocka_unit_test(test_wall_report_mostly_on_cpu),
        cmocka_unit_test(test_wall_report_never_waiting),
        cmocka_unit_test(test_language_view_report),
        cmocka_unit_test(test_headline_whole_names),
        cmocka_unit_test(test_thread_pools),
        cmocka_unit_test(test_flame_wrapped_subtitle),
        cmocka_unit_test(test_bad_artifacts),
        cmocka_unit_test(test_run_section),
        cmocka_unit_test(test_stop_exit_128_plus_signal),
        cmocka_unit_test(test_timing_tree),
        cmocka_unit_test(test_index),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_fail_if_syntax),
        cmocka_unit_test(test_flame_tally),
        cmocka_unit_test(test_fmt),
    };
    int rc = cmocka_run_group_tests_name("report", tests, group_setup, group_teardown);

    rt_profiles_free();
    return rc;
}
