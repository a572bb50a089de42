/* ph_report_strace.c - the syscalls section: per syscall calls, errors by
 * errno, total, mean and max time; per thread; the 20 slowest calls with
 * the time they started; a per-thread timeline of time spent in
 * syscalls; signals. */
#include "ph_report_int.h"

#include <stdlib.h>
#include <string.h>

#include "ph_markup_only.h"

#define TIMELINE_ROWS 48

static int
cmp_sys(const void *a, const void *b, void *ctx)
{
    const ph_strace *st = ctx;
    ph_strace_sys x = ph_strace_get_syscall(st, *(const size_t *)a), y = ph_strace_get_syscall(st, *(const size_t *)b);

    if (x.total_ns != y.total_ns)
        return x.total_ns < y.total_ns ? 1 : -1;
    if (x.calls != y.calls)
        return x.calls < y.calls ? 1 : -1;
    return strcmp(x.name, y.name);
}

static int
cmp_thread(const void *a, const void *b, void *ctx)
{
    const ph_strace *st = ctx;
    const ph_strace_thread *x = ph_strace_get_thread(st, *(const size_t *)a),
                           *y = ph_strace_get_thread(st, *(const size_t *)b);

    if (x->total_ns != y->total_ns)
        return x->total_ns < y->total_ns ? 1 : -1;
    if (x->calls != y->calls)
        return x->calls < y->calls ? 1 : -1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The threads that made a syscall (the time in syscalls is theirs, summed). */
static size_t
busy_threads(const ph_strace *st)
{
    size_t n = 0;

    for (size_t i = 0; i < ph_strace_n_threads(st); i++)
        n += ph_strace_get_thread(st, i)->calls > 0;
    return n;
}

static const char *
fmt_rel_seconds(char buf[PH_FMT_LEN], double s)
{
    return ph_fmt_seconds(buf, s);
}

static void
errnos_text(ph_mw *f, const ph_strace *st, size_t sys, json_t *js)
{
    int first = 1;

    for (size_t i = 0; i < ph_strace_n_errnos(st); i++) {
        ph_strace_errno e = ph_strace_get_errno(st, i);
        if (e.sys != sys)
            continue;
        PH_MW_FMT(f, "%s", first ? "" : ", ");
        ph_mw_text(f, e.name);
        PH_MW_FMT(f, "&#215;%llu", (unsigned long long)e.count);
        json_object_set_new(js, e.name, json_integer((json_int_t)e.count));
        first = 0;
    }
}

static void
timeline(ph_mw *f, const ph_strace *st, const size_t *order, size_t nt)
{
    const double W = 960, left = 92, right = 12, row = 15, top = 6;
    size_t rows = 0;
    int64_t origin = 0, width = 1;
    double pw = W - left - right, bw, span_s, H;
    size_t nb;
    char b[PH_FMT_LEN];

    for (size_t i = 0; i < nt && rows < TIMELINE_ROWS; i++)
        if (ph_strace_timeline(st, ph_strace_get_thread(st, order[i])->timeline, &origin, &width) != NULL)
            rows++;
    if (rows == 0)
        return;
    /* only as far as the log goes */
    {
        const ph_strace_info *info = ph_strace_get_info(st);
        int64_t used = info->last_ns >= origin ? (info->last_ns - origin) / width + 1 : PH_STRACE_BUCKETS;
        nb = used < PH_STRACE_BUCKETS ? (size_t)used : PH_STRACE_BUCKETS;
        if (nb < 8)
            nb = 8;
    }
    bw = pw / (double)nb;
    span_s = (double)width * (double)nb / 1e9;
    H = top + row * (double)rows + 30;
    PH_MW_RAW(f, "<h3>Timeline: time in syscalls, per thread</h3>\n");
    ph_html_note(f, "Each row is a thread (the busiest first); the darker a slice, the more of it the thread spent "
                    "inside syscalls (blocked or working in the kernel).");
    PH_MW_FMT(f, "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">", W, H);
    rows = 0;
    for (size_t i = 0; i < nt && rows < TIMELINE_ROWS; i++) {
        const ph_strace_thread *t = ph_strace_get_thread(st, order[i]);
        const uint64_t *bk = ph_strace_timeline(st, t->timeline, &origin, &width);
        double y = top + row * (double)rows;

        if (bk == NULL)
            continue;
        PH_MW_FMT(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s%lld</text>", left - 8, y + row - 4,
                t->pid < 0 ? "other" : "pid ", t->pid < 0 ? 0LL : (long long)t->pid);
        PH_MW_FMT(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f2f4f7\"/>", left, y + 1, pw,
                row - 2);
        for (size_t k = 0; k < nb; k++) {
            double frac = (double)bk[k] / (double)width;
            if (bk[k] == 0)
                continue;
            if (frac > 1)
                frac = 1;
            PH_MW_FMT(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"#d9480f\" "
                    "fill-opacity=\"%.2f\"><title>%s in syscalls</title></rect>",
                    left + bw * (double)k, y + 1, bw + 0.05, row - 2, 0.12 + 0.88 * frac,
                    ph_fmt_seconds(b, (double)bk[k] / 1e9));
        }
        rows++;
    }
    for (int k = 0; k <= 6; k++) {
        double x = left + pw * k / 6;
        PH_MW_FMT(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">+%s</text>", x, H - 10,
                k == 0 ? "start" : k == 6 ? "end" : "middle", fmt_rel_seconds(b, span_s * k / 6));
    }
    PH_MW_RAW(f, "</svg>\n");
}

void
ph_report_strace(ph_rctx *c)
{
    ph_mw *f = c->html;
    const ph_strace *st = c->rd->st;
    const ph_strace_info *info;
    size_t nsys, nt, *order = NULL, *torder = NULL;
    char b[PH_FMT_LEN], b2[PH_FMT_LEN], b3[PH_FMT_LEN], note[256];
    double span;
    json_t *jsys, *jslow, *js;
    size_t busy;

    ph_html_section(f, "strace", "System calls (strace)");
    if (st == NULL || ph_strace_get_info(st)->calls == 0) {
        ph_html_problem(f, "There are no system calls to show (see the problems above).");
        ph_html_section_end(f);
        return;
    }
    info = ph_strace_get_info(st);
    nsys = ph_strace_n_syscalls(st);
    nt = ph_strace_n_threads(st);
    span = info->last_ns >= info->first_ns ? (double)(info->last_ns - info->first_ns) / 1e9 : 0;
    order = malloc((nsys ? nsys : 1) * sizeof *order);
    torder = malloc((nt ? nt : 1) * sizeof *torder);
    if (order == NULL || torder == NULL)
        goto out;
    for (size_t i = 0; i < nsys; i++)
        order[i] = i;
    for (size_t i = 0; i < nt; i++)
        torder[i] = i;
    qsort_r(order, nsys, sizeof *order, cmp_sys, (void *)st);
    qsort_r(torder, nt, sizeof *torder, cmp_thread, (void *)st);

    ph_html_cards_begin(f);
    ph_html_card(f, "system calls", ph_fmt_commify(b, info->calls), info->calls >= 1000 ? ph_fmt_count(b2, (double)info->calls) : "");
    snprintf(note, sizeof note, "%s of the calls", ph_fmt_percent(b2, (double)info->errors, (double)info->calls));
    ph_html_card(f, "errors", ph_fmt_commify(b, info->errors), note);
    busy = busy_threads(st);
    if (busy > 1 && span > 0 && (double)info->total_ns / 1e9 > span)
        snprintf(note, sizeof note, "summed over %zu threads (strace -T): %.1f× the log's span, threads wait side by side",
                 busy, (double)info->total_ns / 1e9 / span);
    else if (busy > 1)
        snprintf(note, sizeof note, "summed over %zu threads (strace -T)", busy);
    else
        snprintf(note, sizeof note, "strace -T");
    ph_html_card(f, busy > 1 ? "syscall time, all threads" : "time in syscalls",
                 ph_fmt_seconds(b, (double)info->total_ns / 1e9), note);
    ph_html_card(f, "log spans", ph_fmt_seconds(b, span), "first to last timestamp");
    ph_html_card(f, "threads", ph_fmt_commify(b, nt), "");
    ph_html_cards_end(f);
    if (c->rd->attached_to != NULL && info->in_flight > 0) {
        snprintf(note, sizeof note, "%llu call%s in progress when strace detached (the service kept running).",
                 (unsigned long long)info->in_flight, info->in_flight == 1 ? " was" : "s were");
        ph_html_note(f, note);
    }

    /* per syscall */
    {
        static const char *const heads[] = { "syscall", "calls#", "errors", "total#", "mean#", "max#", "% time#", "" };
        PH_MW_RAW(f, "<h3>Per syscall</h3>\n");
        ph_html_table(f, heads, 8);
        jsys = json_array();
        for (size_t i = 0; i < nsys; i++) {
            ph_strace_sys s = ph_strace_get_syscall(st, order[i]);
            double mean = s.timed ? (double)s.total_ns / (double)s.timed / 1e9 : 0;
            json_t *errnos = json_object();

            if (s.calls == 0)
                continue;
            PH_MW_RAW(f, "<tr><td class=\"name\">");
            ph_mw_text(f, s.name);
            PH_MW_RAW(f, "</td>");
            ph_html_num(f, (double)s.calls, ph_fmt_commify(b, s.calls));
            PH_MW_RAW(f, "<td>");
            if (s.errors) {
                PH_MW_FMT(f, "%s: ", ph_fmt_commify(b, s.errors));
                errnos_text(f, st, order[i], errnos);
            }
            PH_MW_RAW(f, "</td>");
            ph_html_num(f, (double)s.total_ns, s.timed ? ph_fmt_seconds(b, (double)s.total_ns / 1e9) : "-");
            ph_html_num(f, mean, s.timed ? ph_fmt_seconds(b2, mean) : "-");
            ph_html_num(f, (double)s.max_ns, s.timed ? ph_fmt_seconds(b3, (double)s.max_ns / 1e9) : "-");
            ph_html_num(f, info->total_ns ? 100.0 * (double)s.total_ns / (double)info->total_ns : 0,
                        ph_fmt_percent(b, (double)s.total_ns, (double)info->total_ns));
            ph_html_bar(f, info->total_ns ? (double)s.total_ns / (double)info->total_ns : 0);
            PH_MW_RAW(f, "</tr>\n");
            json_array_append_new(jsys, json_pack("{s:s, s:I, s:I, s:I, s:f, s:f, s:o}", "name", s.name, "calls",
                                                  (json_int_t)s.calls, "errors", (json_int_t)s.errors, "timed",
                                                  (json_int_t)s.timed, "seconds", (double)s.total_ns / 1e9,
                                                  "max_seconds", (double)s.max_ns / 1e9, "errnos", errnos));
        }
        ph_html_table_end(f);
    }

    /* the slowest calls */
    jslow = json_array();
    if (ph_strace_n_slowest(st) > 0) {
        static const char *const heads[] = { "started", "pid", "took#", "call" };
        PH_MW_FMT(f, "<h3>The %zu slowest calls</h3>\n", ph_strace_n_slowest(st));
        ph_html_table(f, heads, 4);
        for (size_t i = 0; i < ph_strace_n_slowest(st); i++) {
            const ph_strace_call *sc = ph_strace_get_slowest(st, i);
            PH_MW_RAW(f, "<tr><td class=\"mono\">");
            ph_mw_text(f, sc->ts);
            PH_MW_FMT(f, "</td><td class=\"mono\">%lld</td>", (long long)sc->pid);
            ph_html_num(f, (double)sc->dur_ns, ph_fmt_seconds(b, (double)sc->dur_ns / 1e9));
            PH_MW_RAW(f, "<td class=\"name\">");
            ph_mw_text(f, sc->text);
            PH_MW_RAW(f, "</td></tr>\n");
            json_array_append_new(jslow, json_pack("{s:s, s:I, s:f, s:s}", "started", sc->ts, "pid", (json_int_t)sc->pid,
                                                   "seconds", (double)sc->dur_ns / 1e9, "call", sc->text));
        }
        ph_html_table_end(f);
    }

    /* per thread */
    {
        static const char *const heads[] = { "pid", "calls#", "errors#", "in syscalls#", "first", "last", "signals#",
                                             "ended" };
        PH_MW_RAW(f, "<h3>Per thread</h3>\n");
        ph_html_table(f, heads, 8);
        for (size_t i = 0; i < nt && i < 500; i++) {
            const ph_strace_thread *t = ph_strace_get_thread(st, torder[i]);
            PH_MW_FMT(f, "<tr><td class=\"mono\">%s%lld</td>", t->pid < 0 ? "other " : "", t->pid < 0 ? 0LL : (long long)t->pid);
            ph_html_num(f, (double)t->calls, ph_fmt_commify(b, t->calls));
            ph_html_num(f, (double)t->errors, ph_fmt_commify(b, t->errors));
            ph_html_num(f, (double)t->total_ns, ph_fmt_seconds(b, (double)t->total_ns / 1e9));
            PH_MW_FMT(f, "<td class=\"mono\">+%s</td><td class=\"mono\">+%s</td>",
                    t->first_ns >= 0 ? ph_fmt_seconds(b, (double)(t->first_ns - info->first_ns) / 1e9) : "?",
                    t->last_ns >= 0 ? ph_fmt_seconds(b2, (double)(t->last_ns - info->first_ns) / 1e9) : "?");
            ph_html_num(f, (double)t->signals, ph_fmt_commify(b, t->signals));
            PH_MW_RAW(f, "<td>");
            ph_mw_text(f, t->ended[0] ? t->ended : "(still running when the log ends)");
            PH_MW_RAW(f, "</td></tr>\n");
        }
        ph_html_table_end(f);
        if (nt > 500)
            ph_html_note(f, "Only the 500 busiest threads are listed.");
    }
    timeline(f, st, torder, nt);
    if (ph_strace_n_signals(st) > 0) {
        static const char *const heads[] = { "signal", "delivered#" };
        PH_MW_RAW(f, "<h3>Signals</h3>\n");
        ph_html_table(f, heads, 2);
        for (size_t i = 0; i < ph_strace_n_signals(st); i++) {
            ph_strace_signal s = ph_strace_get_signal(st, i);
            PH_MW_RAW(f, "<tr><td class=\"mono\">");
            ph_mw_text(f, s.name);
            PH_MW_RAW(f, "</td>");
            ph_html_num(f, (double)s.count, ph_fmt_commify(b, s.count));
            PH_MW_RAW(f, "</tr>\n");
        }
        ph_html_table_end(f);
    }

    {
        /* the time in syscalls is summed over the threads: with several,
         * said so (it reads as more time than the run had otherwise) */
        ph_strace_sys top = nsys ? ph_strace_get_syscall(st, order[0]) : (ph_strace_sys){ "", 0, 0, 0, 0, 0 };
        char sum[64];

        if (busy > 1)
            snprintf(sum, sizeof sum, " of syscall time summed over %zu threads", busy);
        else
            snprintf(sum, sizeof sum, " in syscalls");
        snprintf(c->headline, sizeof c->headline, "%s syscalls in %s, %s%s%s%.40s%s%s%s, %s error%s",
                 ph_fmt_commify(b, info->calls), ph_fmt_seconds(b2, span),
                 ph_fmt_seconds(b3, (double)info->total_ns / 1e9), sum, top.total_ns ? " (" : "", top.total_ns ? top.name : "",
                 top.total_ns ? " " : "",
                 top.total_ns ? ph_fmt_percent((char[PH_FMT_LEN]){ 0 }, (double)top.total_ns, (double)info->total_ns) : "",
                 top.total_ns ? ")" : "", ph_fmt_commify((char[PH_FMT_LEN]){ 0 }, info->errors),
                 info->errors == 1 ? "" : "s");
    }
    js = json_pack("{s:I, s:I, s:f, s:f, s:I, s:I, s:I, s:o, s:o}", "calls", (json_int_t)info->calls, "errors",
                   (json_int_t)info->errors, "syscall_seconds", (double)info->total_ns / 1e9, "span_seconds", span,
                   "threads", (json_int_t)nt, "threads_in_syscalls", (json_int_t)busy, "unfinished",
                   (json_int_t)info->unfinished, "syscalls", jsys, "slowest", jslow);
    json_object_set_new(c->summary, "strace", js);
out:
    free(order);
    free(torder);
    ph_html_section_end(f);
}
