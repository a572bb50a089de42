
/* ph_report_run.c - one run's report.html and summary.json.
 *
 * The sections are written first (into memory), because the headline
 * they find goes at the top; then the page is assembled: header and
 * headline, what is missing or broken, the mode's own section, the other
 * kinds found, and the run itself (how it stopped, the container, the
 * harness's stage timings, the files).  Both files are written to a
 * temporary name and renamed, and take the run dir's owner, so a report
 * made under sudo belongs to whoever owns the run.
 */
#include "ph_report_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_escape.h"

#include "ph_markup_only.h"

/* ---- the run itself ----------------------------------------------------- */

static const char *
jstr(json_t *o, const char *key)
{
    return o ? json_string_value(json_object_get(o, key)) : NULL;
}

static double
jnum(json_t *o, const char *key, double dflt)
{
    json_t *v = o ? json_object_get(o, key) : NULL;

    return json_is_number(v) ? json_number_value(v) : dflt;
}

/* "SIGUSR2, then SIGKILL" */
static void
sig_list(json_t *a, char *buf, size_t cap)
{
    size_t o = 0, n = json_array_size(a);

    buf[0] = '\0';
    for (size_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i == 0 ? "" : i + 1 == n ? ", then " : ", ",
                              json_string_value(json_array_get(a, i)) ? json_string_value(json_array_get(a, i)) : "?");
}

/* The number of the signal named NAME ("SIGTERM"), 0 if none is. */
static int
signal_number(const char *name)
{
    if (name == NULL || strncmp(name, "SIG", 3) != 0)
        return 0;
    for (int n = 1; n < NSIG; n++) {
        const char *abbrev = sigabbrev_np(n);
        if (abbrev != NULL && strcmp(abbrev, name + 3) == 0)
            return n;
    }
    return 0;
}

/* Whether X records a normal stop that ended in status 128 + the stop
 * signal: the JVM (and a shell) run their handlers and exit(143) on the
 * SIGTERM the harness sent, which is no failure.  Not when nobody asked
 * it to stop (someone else's SIGTERM), nor after an escalation. */
static int
exit_on_stop_signal(json_t *x, long long *code)
{
    const char *outcome = jstr(x, "outcome");
    json_t *svc = x ? json_object_get(x, "service_exit_code") : NULL;
    int n = signal_number(jstr(x, "stop_signal"));

    if (x == NULL || !json_is_true(json_object_get(x, "stop_requested")) || jstr(x, "signal") != NULL ||
        json_array_size(json_object_get(x, "escalations")) > 0 || (outcome != NULL && strcmp(outcome, "stopped") != 0) ||
        n == 0)
        return 0;
    *code = json_is_integer(svc) ? json_integer_value(svc) : (long long)jnum(x, "exit_code", -1);
    return *code == 128 + n;
}

/* How it stopped, for the index: "SIGTERM: exit 0", "SIGTERM, escalated:
 * SIGUSR2, then SIGKILL: ended by SIGKILL", "stopped on SIGTERM (exit 143
 * = 128 + SIGTERM, the JVM's usual)". */
static void
stop_short(json_t *x, char *buf, size_t cap)
{
    const char *sig = jstr(x, "signal"), *stop = jstr(x, "stop_signal");
    char esc[160], head[256];
    long long code;

    if (x == NULL) {
        snprintf(buf, cap, "snapshot / unknown");
        return;
    }
    if (exit_on_stop_signal(x, &code)) {
        snprintf(buf, cap, "stopped on %s (exit %lld = 128 + %s, the JVM's usual)", stop, code, stop);
        return;
    }
    sig_list(json_object_get(x, "escalations"), esc, sizeof esc);
    snprintf(head, sizeof head, "%s%s%s", json_is_true(json_object_get(x, "stop_requested")) && stop ? stop : "",
             esc[0] ? ", escalated: " : "", esc);
    if (sig != NULL)
        snprintf(buf, cap, "%s%sended by %s", head, head[0] ? ": " : "", sig);
    else
        snprintf(buf, cap, "%s%sexit %lld", head, head[0] ? ": " : "", (long long)jnum(x, "exit_code", -1));
}

/* How the service stopped, in one sentence, from ph-exit.json. */
/* ATTACHED: the record is the attach's (ph-attach, then strace or perf
 * on the service's processes), which stop detaches. */
static void
how_it_stopped(json_t *x, int attached, char *buf, size_t cap)
{
    char esc[160], t[PH_FMT_LEN];
    const char *sig = jstr(x, "signal"), *stop = jstr(x, "stop_signal");
    json_t *req = x ? json_object_get(x, "stop_requested") : NULL;
    double ss = jnum(x, "stop_seconds", -1);
    long long code;
    size_t o;

    if (x == NULL) {
        snprintf(buf, cap, "unknown: no ph-exit.json (a snapshot of a running service, or it did not stop through the "
                           "init shim)");
        return;
    }
    sig_list(json_object_get(x, "escalations"), esc, sizeof esc);
    if (attached && json_is_true(req))
        o = (size_t)snprintf(buf, cap, "detached: %s to the profiler; the service kept running; ", stop ? stop : "?");
    else if (json_is_true(req))
        o = (size_t)snprintf(buf, cap, "stop requested (%s); ", stop ? stop : "?");
    else
        o = (size_t)snprintf(buf, cap, "not asked to stop; ");
    if (o >= cap)
        return;
    if (!attached && exit_on_stop_signal(x, &code))
        o += (size_t)snprintf(buf + o, cap - o, "stopped on it: status %lld is 128 + %s, how the JVM and a shell end "
                                                "on it", code, stop);
    else if (sig != NULL)
        o += (size_t)snprintf(buf + o, cap - o, "ended by %s", sig);
    else
        o += (size_t)snprintf(buf + o, cap - o, "exited with status %lld", (long long)jnum(x, "exit_code", -1));
    if (o < cap && ss >= 0)
        o += (size_t)snprintf(buf + o, cap - o, ", %s after the request", ph_fmt_seconds(t, ss));
    if (o < cap)
        snprintf(buf + o, cap - o, "%s%s", esc[0] ? "; escalated: " : "; no escalation", esc);
}

/* One detail of a stage, "key=value" (SEP before it). */
static void
stage_detail(ph_mw *f, const char *key, json_t *v, int *first)
{
    if (json_is_false(v) || json_is_null(v) || (json_is_integer(v) && json_integer_value(v) == 0 &&
                                                (strncmp(key, "bytes_", 6) == 0)))
        return; /* nothing to say: no bytes, not concurrent, not failed */
    if (!*first)
        PH_MW_RAW(f, ", ");
    *first = 0;
    ph_mw_text(f, key);
    if (json_is_true(v))
        return;
    PH_MW_RAW(f, "=");
    if (json_is_string(v))
        ph_mw_text(f, json_string_value(v));
    else if (json_is_integer(v))
        PH_MW_FMT(f, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        PH_MW_FMT(f, "%g", json_real_value(v));
}

/* A stage's seconds: {seconds} (run.json's first stages array) or
 * {duration_ns} (the timing tree); -1 when neither. */
static double
stage_seconds(json_t *s)
{
    double sec = jnum(s, "seconds", -1);

    if (sec < 0 && json_is_number(json_object_get(s, "duration_ns")))
        sec = json_number_value(json_object_get(s, "duration_ns")) / 1e9;
    return sec;
}

/* The harness's stages as run.json has them: an array of {name, seconds}
 * or a tree ({name, duration_ns, children, attributes, ...}); whatever
 * else a stage carries is shown as key=value. */
static void
stage_rows(ph_mw *f, json_t *stages, int depth, double total)
{
    size_t i;
    json_t *s;
    char b[PH_FMT_LEN];

    json_array_foreach(stages, i, s) {
        const char *name = jstr(s, "name"), *key;
        double sec = stage_seconds(s);
        json_t *v, *kids = NULL;
        int first = 1;

        if (!json_is_object(s))
            continue;
        PH_MW_FMT(f, "<tr><td style=\"padding-left:%dpx\">", 9 + 18 * depth);
        ph_mw_text(f, name ? name : "(unnamed)");
        PH_MW_RAW(f, "</td>");
        ph_html_num(f, sec, sec >= 0 ? ph_fmt_seconds(b, sec) : "-");
        ph_html_bar(f, total > 0 && sec > 0 ? sec / total : 0);
        PH_MW_RAW(f, "<td class=\"note\">");
        json_object_foreach(s, key, v) {
            static const char *const quiet[] = { "name", "seconds", "start_ns", "duration_ns", "self_ns" };
            int skip = 0;
            for (size_t q = 0; q < sizeof quiet / sizeof quiet[0]; q++)
                skip |= strcmp(key, quiet[q]) == 0;
            if (skip)
                continue;
            if (json_is_array(v)) {
                kids = v;
            } else if (json_is_object(v)) {
                const char *k2;
                json_t *v2;
                json_object_foreach(v, k2, v2) stage_detail(f, k2, v2, &first);
            } else {
                stage_detail(f, key, v, &first);
            }
        }
        PH_MW_RAW(f, "</td></tr>\n");
        if (kids != NULL && depth < 12)
            stage_rows(f, kids, depth + 1, total);
    }
}

/* harness.folded (the harness's own stages as folded stacks, in ns): a
 * small flamegraph of where the harness spent its time. */
static void
harness_flamegraph(ph_mw *f, const ph_rundata *rd)
{
    char path[PATH_MAX + 32];
    ph_folded *fo = NULL;
    ph_error_t err = NULL;
    FILE *in;
    char buf[65536];
    size_t n;

    snprintf(path, sizeof path, "%s/harness.folded", rd->dir);
    if ((in = fopen(path, "re")) == NULL)
        return;
    fo = ph_folded_new(0, &err);
    while (fo != NULL && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (ph_folded_feed(fo, buf, n, &err) < 0)
            break;
    fclose(in);
    if (fo != NULL && err == NULL && ph_folded_finish(fo, &err) == 0 && ph_folded_n_stacks(fo) > 0) {
        ph_flame_opts o;
        ph_flame_opts_init(&o);
        o.title = "The harness's own time";
        o.countname = "ns";
        o.palette = "aqua";
        PH_MW_RAW(f, "<h3>The harness's own time (harness.folded)</h3>\n");
        ph_html_flame_render(f, fo, &o, "The harness's own time");
    }
    ph_error_free(&err);
    ph_folded_free(fo);
}

static void
run_section(ph_mw *f, ph_rundata *rd, const ph_profile_set *profiles, json_t *summary)
{
    json_t *x = rd->exit, *run = rd->run, *stages = run ? json_object_get(run, "stages") : NULL;
    ph_profile *p = profiles ? ph_profiles_find((ph_profile_set *)profiles, rd->mode) : NULL;
    char how[512], b[PH_FMT_LEN];
    double run_s = jnum(x, "run_seconds", -1);

    ph_html_section(f, "run", "The run");
    how_it_stopped(x, rd->attached_to != NULL, how, sizeof how);
    PH_MW_RAW(f, "<dl class=\"kv\">");
#define KV(k, v)                                                                                                       \
    do {                                                                                                               \
        PH_MW_RAW(f, "<dt>" k "</dt><dd>");                                                                            \
        ph_mw_text(f, v);                                                                                             \
        PH_MW_RAW(f, "</dd>");                                                                                             \
    } while (0)
    KV("service", rd->service);
    KV("mode", rd->mode);
    KV("run", rd->name);
    if (jstr(run, "started_at"))
        KV("started", jstr(run, "started_at"));
    if (jstr(run, "collected_at"))
        KV("collected", jstr(run, "collected_at"));
    if (run_s >= 0)
        KV("ran for", ph_fmt_seconds(b, run_s));
    KV("how it stopped", how);
    if (rd->attached_to != NULL) {
        snprintf(b, sizeof b, "%.12s", rd->attached_to);
        snprintf(how, sizeof how, "container %s, which kept running (profiled without a restart)", b);
        KV("attached to", how);
    }
    if (x != NULL && json_integer_value(json_object_get(x, "leftovers_signalled")) > 0) {
        snprintf(how, sizeof how, "%lld process(es) still running after the service were signalled",
                 (long long)json_integer_value(json_object_get(x, "leftovers_signalled")));
        KV("left over", how);
    }
    if (jstr(run, "image"))
        KV("image", jstr(run, "image"));
    if (x != NULL && json_is_array(json_object_get(x, "command"))) {
        size_t i;
        json_t *a;
        PH_MW_RAW(f, "<dt>command</dt><dd class=\"mono\">");
        json_array_foreach(json_object_get(x, "command"), i, a) {
            const char *w = json_string_value(a) ? json_string_value(a) : "";
            if (i)
                PH_MW_RAW(f, " ");
            if (w[0] != '\0' && strpbrk(w, " \t\n'\"$\\`*?;&|<>()") == NULL) {
                ph_mw_text(f, w);
                continue;
            }
            /* as a shell would need it: 'it'\''s' */
            PH_MW_RAW(f, "&#39;");
            for (const char *q = w; *q; q++) {
                if (*q == '\'')
                    PH_MW_RAW(f, "&#39;\\&#39;&#39;");
                else
                    ph_mw_textn(f, q, 1);
            }
            PH_MW_RAW(f, "&#39;");
        }
        PH_MW_RAW(f, "</dd>");
    }
    if (p != NULL) {
        char caps[512] = "";
        size_t o = 0;
        /* an attach's tools container has the attach form's */
        const ph_strv *ca = rd->attached_to ? &p->attach.cap_add : &p->cap_add;
        const ph_strv *so = rd->attached_to ? &p->attach.security_opt : &p->security_opt;
        for (size_t i = 0; i < ca->n && o < sizeof caps; i++)
            o += (size_t)snprintf(caps + o, sizeof caps - o, "%s%s", i ? ", " : "", ca->v[i]);
        for (size_t i = 0; i < so->n && o < sizeof caps; i++)
            o += (size_t)snprintf(caps + o, sizeof caps - o, "%s%s", o ? ", " : "", so->v[i]);
        KV("capabilities", caps[0] ? caps : "none added (the mode's profile)");
    }
    if (jstr(run, "container"))
        KV("container", jstr(run, "container"));
    PH_MW_RAW(f, "</dl>\n");
#undef KV

    {
        /* run.json's "stages" array, or the "timing" tree that followed it */
        json_t *tree = run ? json_object_get(run, "timing") : NULL, *rows = NULL;
        static const char *const heads[] = { "stage", "seconds#", "", "details" };
        double total = 0;
        size_t i;
        json_t *s;

        if (json_is_object(tree)) {
            rows = json_array();
            json_array_append(rows, tree);
        } else if (json_is_object(stages)) {
            rows = json_array();
            json_array_append(rows, stages);
        } else if (json_is_array(stages) && json_array_size(stages) > 0) {
            rows = json_incref(stages);
        }
        if (rows != NULL) {
            json_array_foreach(rows, i, s) total += fmax(stage_seconds(s), 0);
            PH_MW_RAW(f, "<h3>The harness's stage timings</h3>\n");
            ph_html_table(f, heads, 4);
            stage_rows(f, rows, 0, total);
            ph_html_table_end(f);
            json_decref(rows);
        }
    }
    harness_flamegraph(f, rd);

    {
        static const char *const heads[] = { "file", "kind", "size#" };
        PH_MW_RAW(f, "<h3>Files</h3>\n");
        ph_html_table(f, heads, 3);
        for (size_t i = 0; i < rd->n_arts; i++) {
            PH_MW_RAW(f, "<tr><td class=\"name\">");
            ph_mw_text(f, rd->arts[i].name);
            PH_MW_RAW(f, "</td><td>");
            ph_mw_text(f, rd->arts[i].kind);
            PH_MW_RAW(f, "</td>");
            ph_html_num(f, (double)rd->arts[i].size, ph_fmt_bytes(b, (double)rd->arts[i].size));
            PH_MW_RAW(f, "</tr>\n");
        }
        ph_html_table_end(f);
    }
    ph_html_section_end(f);

    {
        char shortly[160];
        stop_short(x, shortly, sizeof shortly);
        if (rd->attached_to != NULL && x != NULL && json_is_true(json_object_get(x, "stop_requested")))
            snprintf(shortly, sizeof shortly, "detached (%s)", jstr(x, "stop_signal") ? jstr(x, "stop_signal") : "?");
        how_it_stopped(x, rd->attached_to != NULL, how, sizeof how); /* `how` was reused above */
        json_object_set_new(summary, "stopped", json_string(shortly));
        json_object_set_new(summary, "stopped_detail", json_string(how));
        if (rd->attached_to != NULL)
            json_object_set_new(summary, "attached_to", json_string(rd->attached_to));
        if (run_s >= 0)
            json_object_set_new(summary, "run_seconds", json_real(run_s));
    }
}

/* The sections: the one the mode's profile names (`report:`) first, then
 * every other kind the run has, in this order; each one that wrote
 * something is in the table of contents.  No mode's name here: a mode is
 * data (its profile), a report kind is code. */
static void
sections(ph_rctx *c)
{
    static const struct {
        const char *report;
        void (*fn)(ph_rctx *);
        size_t has_off;
    } all[] = {
        { "massif", ph_report_massif, offsetof(ph_rundata, has_massif) },
        { "callgrind", ph_report_callgrind, offsetof(ph_rundata, has_cg) },
        { "strace", ph_report_strace, offsetof(ph_rundata, has_st) },
        { "flamegraph", ph_report_flame, offsetof(ph_rundata, has_flame) },
        { "heap", ph_report_heap, offsetof(ph_rundata, has_heap) },
    };
    const size_t n = sizeof all / sizeof all[0];
    int done[sizeof all / sizeof all[0]] = { 0 };

    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            char headline[sizeof c->headline];
            size_t before = 0, after = 0;
            int main_one = strcmp(c->rd->report, all[i].report) == 0;

            if (done[i] || (pass == 0 && !main_one) || (pass == 1 && !*(int *)((char *)c->rd + all[i].has_off)))
                continue;
            done[i] = 1;
            /* another kind's headline does not replace the main one's */
            memcpy(headline, c->headline, sizeof headline);
            ph_mw_finish(c->html, NULL, &before);
            all[i].fn(c);
            ph_mw_finish(c->html, NULL, &after);
            if (pass == 1 && headline[0])
                memcpy(c->headline, headline, sizeof headline);
            if (after > before && c->n_toc < sizeof c->toc / sizeof c->toc[0])
                c->toc[c->n_toc++] = all[i].report;
        }
}

/* What the page's header and the problems take beyond its body, kept
 * free of the report's bound while the stacks files' graphs are drawn. */
#define PAGE_ROOM (1u << 20)

/* report.html: the header bar with the headline and the sections' links,
 * what is missing or broken, then the body the sections wrote. */
typedef struct page_ctx {
    ph_rundata *rd;
    const char *headline, *body;
    size_t body_len;
    ph_mw *bw;      /* the body's writer, finished */
    json_t *problems;
    const char *const *toc;
    size_t n_toc;
} page_ctx;

static int
fill_page(FILE *file, void *arg, ph_error_t *err)
{
    page_ctx *p = arg;
    ph_rundata *rd = p->rd;
    ph_mw w = ph_mw_on(file, PH_MW_HTML), *pw = &w;
    char title[512], sub[700];

    snprintf(title, sizeof title, "%s · %s · %s", rd->service, rd->mode, rd->name);
    snprintf(sub, sizeof sub, "%s%s%s", jstr(rd->run, "started_at") ? "started " : "",
             jstr(rd->run, "started_at") ? jstr(rd->run, "started_at") : "", "");
    ph_html_begin(pw, title, title, sub);
    PH_MW_RAW(pw, "<div class=\"headline\">");
    ph_mw_text(pw, p->headline);
    PH_MW_RAW(pw, "</div><nav class=\"toc\"><a href=\"../../index.html\">all runs</a>");
    for (size_t i = 0; i < p->n_toc; i++) /* the sections written, each by its id */
        PH_MW_FMT(pw, "<a href=\"#%s\">%s</a>", p->toc[i], p->toc[i]);
    PH_MW_RAW(pw, "<a href=\"#run\">the run</a></nav>\n");
    ph_html_main(pw);
    if (rd->n_problems > 0) {
        PH_MW_RAW(pw, "<section id=\"problems\"><h2>What is missing or broken</h2>\n");
        for (size_t i = 0; i < rd->n_problems; i++) {
            ph_html_problem(pw, rd->problems[i]);
            json_array_append_new(p->problems, json_string(rd->problems[i]));
        }
        PH_MW_RAW(pw, "</section>\n");
    }
    ph_mw_splice(pw, p->bw);
    ph_html_end(pw);
    return ph_mw_error(pw) ? ph_fail(err, errno ? errno : EIO, "write `%s`", PH_REPORT_HTML) : 0;
}

int
ph_report_write_run(const char *run_dir, const ph_profile_set *profiles, ph_report_headline *out, ph_error_t *err)
{
    return ph_report_write_run_limited(run_dir, profiles, NULL, out, err);
}

int
ph_report_write_run_limited(const char *run_dir, const ph_profile_set *profiles, const ph_report_limits *lim,
                            ph_report_headline *out, ph_error_t *err)
{
    ph_rundata rd;
    ph_rctx c = { 0 };
    ph_report_out ro = { .min_free = 0 };
    char path[PATH_MAX + 32];
    const char *body = NULL;
    size_t body_len = 0;
    ph_mw bw = { 0 };
    page_ctx page;
    int rc = -1;

    if (ph_rundata_load(run_dir, profiles, &rd, err) < 0)
        return ph_error_wrap(err, "report on `%s`", run_dir);
    c.rd = &rd;
    c.summary = json_object();
    if (c.summary == NULL || ph_mw_open_mem(&bw, PH_MW_HTML) < 0) {
        ph_fail(err, ENOMEM, "report on `%s`", run_dir);
        goto out;
    }
    c.html = &bw;
    sections(&c);
    ph_report_merged_section(&bw, &rd);
    run_section(&bw, &rd, profiles, c.summary);
    if (ph_mw_finish(&bw, &body, &body_len) < 0) {
        ph_fail(err, ENOMEM, "report on `%s`", run_dir);
        goto out;
    }
    if (c.headline[0] == '\0')
        snprintf(c.headline, sizeof c.headline, "no figures: %s",
                 rd.n_problems ? rd.problems[0] : "the run has no artifact a report can read");

    /* the graphs first: the report links them, and says which of the
     * stacks files' graphs the bound left out */
    ph_report_out_init(&ro, rd.dir, lim);
    if (c.flame_svg != NULL) {
        snprintf(path, sizeof path, "%s/%s", rd.dir, PH_REPORT_FLAME_SVG);
        if (ph_report_out_write(&ro, path, c.flame_svg, c.flame_svg_len, err) < 0)
            goto out;
    }
    if (c.flame_native_svg != NULL) {
        snprintf(path, sizeof path, "%s/%s", rd.dir, PH_REPORT_FLAME_NATIVE_SVG);
        if (ph_report_out_write(&ro, path, c.flame_native_svg, c.flame_native_svg_len, err) < 0)
            goto out;
    }
    if (ph_report_heap_files(&c, &ro, err) < 0 || ph_report_flame_files(&rd, &ro, body_len + PAGE_ROOM, err) < 0)
        goto out;

    page = (page_ctx){ &rd, c.headline, body, body_len, &bw, json_array(), c.toc, c.n_toc };
    snprintf(path, sizeof path, "%s/%s", rd.dir, PH_REPORT_HTML);
    if (ph_report_out_stream(&ro, path, fill_page, &page, err) < 0) {
        json_decref(page.problems);
        goto out;
    }
    json_object_set_new(c.summary, "version", json_integer(1));
    json_object_set_new(c.summary, "service", json_string(rd.service));
    json_object_set_new(c.summary, "mode", json_string(rd.mode));
    json_object_set_new(c.summary, "run", json_string(rd.name));
    json_object_set_new(c.summary, "headline", json_string(c.headline));
    json_object_set_new(c.summary, "problems", page.problems);
    if (jstr(rd.run, "started_at"))
        json_object_set_new(c.summary, "started_at", json_string(jstr(rd.run, "started_at")));
    if (jstr(rd.run, "collected_at"))
        json_object_set_new(c.summary, "collected_at", json_string(jstr(rd.run, "collected_at")));
    snprintf(path, sizeof path, "%s/%s", rd.dir, PH_REPORT_SUMMARY);
    if (ph_report_out_json(&ro, path, c.summary, err) < 0)
        goto out;
    if (out != NULL) {
        memset(out, 0, sizeof *out);
        snprintf(out->service, sizeof out->service, "%s", rd.service);
        snprintf(out->mode, sizeof out->mode, "%s", rd.mode);
        snprintf(out->run, sizeof out->run, "%s", rd.name);
        snprintf(out->text, sizeof out->text, "%s", c.headline);
        snprintf(out->report, sizeof out->report, "%s/%s", rd.dir, PH_REPORT_HTML);
        out->problems = (int)rd.n_problems;
    }
    rc = 0;
out:
    if (rc < 0) /* nothing of a report left half written: its graphs go too */
        ph_report_out_undo(&ro);
    else
        ph_report_out_done(&ro);
    ph_mw_close(&bw);
    free(c.flame_svg);
    free(c.flame_native_svg);
    free(c.heap_svg);
    json_decref(c.summary);
    ph_rundata_free(&rd);
    return rc;
}

void
ph_report_print_headline(FILE *out, const ph_report_headline *h)
{
    /* the text holds names from the artifacts: escaped on the way out */
    ph_escape_printf(out, "%s: %s\n  report: %s%s\n", h->service, h->text, h->report,
                     h->problems > 0 ? " (it says what is missing)" : "");
}
