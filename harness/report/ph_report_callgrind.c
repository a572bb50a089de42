/* ph_report_callgrind.c - the instructions section: program totals for
 * every event recorded, the top functions by self and by inclusive cost
 * for each event (the figures of callgrind_annotate and
 * callgrind_annotate --inclusive=yes), callers and callees of the top
 * functions, totals per source file, parts and threads, and an inclusive
 * flamegraph built from the call graph. */
#include "ph_report_int.h"

#include <stdlib.h>
#include <string.h>

#include "ph_markup_only.h"

#define TOP_ROWS 25
#define TOP_CALLS 8
#define TOP_FILES 30

static const struct {
    const char *event, *meaning;
} meanings[] = {
    { "Ir", "instructions executed" },
    { "Dr", "data reads" },
    { "Dw", "data writes" },
    { "I1mr", "L1 instruction read misses" },
    { "D1mr", "L1 data read misses" },
    { "D1mw", "L1 data write misses" },
    { "ILmr", "last-level instruction read misses" },
    { "DLmr", "last-level data read misses" },
    { "DLmw", "last-level data write misses" },
    { "Bc", "conditional branches" },
    { "Bcm", "conditional branches mispredicted" },
    { "Bi", "indirect branches" },
    { "Bim", "indirect branches mispredicted" },
    { "sysCount", "system calls" },
    { "sysTime", "time in system calls (ms)" },
    { "Ge", "global bus events" },
};

static const char *
meaning(const char *ev)
{
    for (size_t i = 0; i < sizeof meanings / sizeof meanings[0]; i++)
        if (strcmp(meanings[i].event, ev) == 0)
            return meanings[i].meaning;
    return "";
}

/* The function first, its file after it (callgrind_annotate's
 * "file:function" in the tooltip, with the object). */
static void
fn_cell(ph_mw *f, const ph_cg_fn *fn)
{
    PH_MW_RAW(f, "<td class=\"name\" title=\"");
    ph_mw_text(f, fn->name);
    if (fn->obj[0]) {
        PH_MW_RAW(f, " [");
        ph_mw_text(f, fn->obj);
        PH_MW_RAW(f, "]");
    }
    PH_MW_RAW(f, "\"><b>");
    ph_mw_text(f, fn->fn);
    PH_MW_RAW(f, "</b><span class=\"file\">");
    ph_mw_text(f, fn->file);
    PH_MW_RAW(f, "</span></td>");
}

static void
top_table(ph_mw *f, const ph_callgrind *cg, size_t ev, int incl, const char *title)
{
    const ph_cg_info *info = ph_callgrind_get_info(cg);
    uint32_t top[TOP_ROWS];
    size_t n = ph_callgrind_top(cg, ev, incl, top, TOP_ROWS);
    char b[PH_FMT_LEN], p[PH_FMT_LEN];
    const char *heads[] = { "function and file", incl ? "inclusive#" : "self#", "%#", "" };
    double total = (double)info->totals[ev];

    PH_MW_FMT(f, "<h3>%s</h3>\n", title);
    ph_html_table(f, heads, 4);
    for (size_t i = 0; i < n; i++) {
        ph_cg_fn fn = ph_callgrind_get_fn(cg, top[i]);
        uint64_t v = (incl ? fn.incl : fn.self)[ev];

        PH_MW_RAW(f, "<tr>");
        fn_cell(f, &fn);
        ph_html_num(f, (double)v, ph_fmt_commify(b, v));
        ph_html_num(f, total > 0 ? 100.0 * (double)v / total : 0, ph_fmt_percent(p, (double)v, total));
        ph_html_bar(f, total > 0 ? (double)v / total : 0);
        PH_MW_RAW(f, "</tr>\n");
    }
    ph_html_table_end(f);
}

typedef struct file_total {
    const char *file;
    uint64_t v;
} file_total;

static int
cmp_file_total(const void *a, const void *b)
{
    const file_total *x = a, *y = b;

    if (x->v != y->v)
        return x->v < y->v ? 1 : -1;
    return strcmp(x->file, y->file);
}

static void
per_file(ph_mw *f, const ph_callgrind *cg)
{
    size_t n = ph_callgrind_n_fns(cg), nf = 0;
    file_total *ft = calloc(n ? n : 1, sizeof *ft);
    double total = (double)ph_callgrind_get_info(cg)->totals[0];
    const char *heads[] = { "source file", "self#", "%#", "" };
    char b[PH_FMT_LEN], p[PH_FMT_LEN];

    if (ft == NULL)
        return;
    /* files are interned: equal names are equal pointers */
    for (uint32_t i = 0; i < n; i++) {
        ph_cg_fn fn = ph_callgrind_get_fn(cg, i);
        size_t k;
        for (k = 0; k < nf && ft[k].file != fn.file; k++)
            ;
        if (k == nf)
            ft[nf++] = (file_total){ fn.file, 0 };
        ft[k].v += fn.self[0];
    }
    qsort(ft, nf, sizeof *ft, cmp_file_total);
    PH_MW_FMT(f, "<h3>Per source file (%s, self)</h3>\n", ph_callgrind_get_info(cg)->events[0]);
    ph_html_table(f, heads, 4);
    for (size_t i = 0; i < nf && i < TOP_FILES && ft[i].v > 0; i++) {
        PH_MW_RAW(f, "<tr><td class=\"name\">");
        ph_mw_text(f, ft[i].file[0] ? ft[i].file : "(unknown)");
        PH_MW_RAW(f, "</td>");
        ph_html_num(f, (double)ft[i].v, ph_fmt_commify(b, ft[i].v));
        ph_html_num(f, total > 0 ? 100 * (double)ft[i].v / total : 0, ph_fmt_percent(p, (double)ft[i].v, total));
        ph_html_bar(f, total > 0 ? (double)ft[i].v / total : 0);
        PH_MW_RAW(f, "</tr>\n");
    }
    ph_html_table_end(f);
    free(ft);
}

static void
callers_callees(ph_mw *f, const ph_callgrind *cg)
{
    uint32_t top[TOP_CALLS];
    size_t n = ph_callgrind_top(cg, 0, 0, top, TOP_CALLS), nc = ph_callgrind_n_calls(cg);
    const ph_cg_info *info = ph_callgrind_get_info(cg);
    char b[PH_FMT_LEN], k[PH_FMT_LEN];

    PH_MW_FMT(f, "<h3>Callers and callees of the top %zu functions (%s)</h3>\n", n, info->events[0]);
    ph_html_note(f, "For each function: who calls it (←) and what it calls (→), with the inclusive cost of those "
                    "calls and how many there were, as callgrind_annotate --tree=both shows them.");
    for (size_t i = 0; i < n; i++) {
        ph_cg_fn fn = ph_callgrind_get_fn(cg, top[i]);
        static const char *const heads[] = { "", "function", "calls#", "inclusive#" };

        PH_MW_RAW(f, "<details open><summary class=\"mono\">");
        ph_mw_text(f, fn.name);
        PH_MW_FMT(f, " &#8212; self %s</summary>\n", ph_fmt_commify(b, fn.self[0]));
        ph_html_table(f, heads, 4);
        for (int dir = 0; dir < 2; dir++)
            for (size_t c = 0; c < nc; c++) {
                ph_cg_call call = ph_callgrind_get_call(cg, c);
                uint32_t other;
                ph_cg_fn of;

                if (dir == 0 ? call.callee != top[i] : call.caller != top[i])
                    continue;
                other = dir == 0 ? call.caller : call.callee;
                of = ph_callgrind_get_fn(cg, other);
                if (dir == 0)
                    PH_MW_RAW(f, "<tr><td>&#8592; caller</td>");
                else
                    PH_MW_RAW(f, "<tr><td>&#8594; callee</td>");
                fn_cell(f, &of);
                ph_html_num(f, (double)call.count, ph_fmt_commify(k, call.count));
                ph_html_num(f, (double)call.cost[0], ph_fmt_commify(b, call.cost[0]));
                PH_MW_RAW(f, "</tr>\n");
            }
        ph_html_table_end(f);
        PH_MW_RAW(f, "</details>\n");
    }
}

static void
flamegraph(ph_mw *f, const ph_callgrind *cg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    ph_error_t err = NULL;
    const char *ev = ph_callgrind_get_info(cg)->events[0];
    char title[128];

    PH_MW_FMT(f, "<h3>Inclusive flamegraph (%s)</h3>\n", ev);
    ph_html_note(f, "Built from the call graph: a function's cost is shared among its callers in proportion to their "
                    "calls, so this is an approximation where one function is called from several places with "
                    "different costs, and recursion and call cycles are cut where they close.");
    if (m == NULL)
        return;
    if (ph_callgrind_write_folded(cg, 0, m, &err) < 0) {
        fclose(m);
        ph_html_problem(f, err->msg);
        ph_error_free(&err);
        free(buf);
        return;
    }
    fclose(m);
    {
        ph_folded *fo = ph_folded_parse(buf, len, 0, &err);
        ph_flame_opts o;

        ph_flame_opts_init(&o);
        snprintf(title, sizeof title, "Inclusive %s (from the call graph)", ev);
        o.title = title;
        o.countname = ev;
        if (fo != NULL)
            ph_html_flame_render(f, fo, &o, title);
        else
            ph_html_problem(f, err->msg);
        ph_error_free(&err);
        ph_folded_free(fo);
    }
    free(buf);
}

static json_t *
top_json(const ph_callgrind *cg, int incl)
{
    const ph_cg_info *info = ph_callgrind_get_info(cg);
    uint32_t top[20];
    size_t n = ph_callgrind_top(cg, 0, incl, top, 20);
    json_t *a = json_array();

    for (size_t i = 0; i < n; i++) {
        ph_cg_fn fn = ph_callgrind_get_fn(cg, top[i]);
        json_t *costs = json_object();
        for (size_t k = 0; k < info->n_events; k++)
            json_object_set_new(costs, info->events[k], json_integer((json_int_t)(incl ? fn.incl : fn.self)[k]));
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:o}", "name", fn.name, "function", fn.fn, "file", fn.file,
                                           "cost", costs));
    }
    return a;
}

void
ph_report_callgrind(ph_rctx *c)
{
    ph_mw *f = c->html;
    const ph_callgrind *cg = c->rd->cg;
    const ph_cg_info *info;
    char b[PH_FMT_LEN], note[256];
    json_t *totals;

    ph_html_section(f, "callgrind", "Instructions and call graph (valgrind callgrind)");
    if (cg == NULL || ph_callgrind_get_info(cg)->n_events == 0 || ph_callgrind_n_fns(cg) == 0) {
        ph_html_problem(f, "There is no callgrind profile to show (see the problems above).");
        ph_html_section_end(f);
        return;
    }
    info = ph_callgrind_get_info(cg);
    ph_html_cards_begin(f);
    for (size_t k = 0; k < info->n_events && k < 8; k++) {
        snprintf(note, sizeof note, "%s%s%s", meaning(info->events[k]), meaning(info->events[k])[0] ? ", " : "",
                 ph_fmt_commify(b, info->totals[k]));
        ph_html_card(f, info->events[k], ph_fmt_count(b, (double)info->totals[k]), note);
    }
    ph_html_cards_end(f);
    snprintf(note, sizeof note, "Program totals from %s; %zu function%s, %zu call edge%s, %zu part%s in %zu file%s.",
             strcmp(info->totals_from, "calculated") == 0 ? "the sum of the costs (the file has no summary: or totals: line)"
             : strcmp(info->totals_from, "summary:") == 0 ? "its summary: line"
                                                          : "its totals: line", ph_callgrind_n_fns(cg), ph_callgrind_n_fns(cg) == 1 ? "" : "s",
             ph_callgrind_n_calls(cg), ph_callgrind_n_calls(cg) == 1 ? "" : "s", info->n_parts,
             info->n_parts == 1 ? "" : "s", info->n_files, info->n_files == 1 ? "" : "s");
    ph_html_note(f, note);

    /* one tab per event, CSS only */
    PH_MW_RAW(f, "<div class=\"tabs\">\n<style>");
    for (size_t k = 0; k < info->n_events; k++)
        PH_MW_FMT(f, "%s#cg-ev-%zu:checked~#cg-pn-%zu", k ? "," : "", k, k);
    PH_MW_RAW(f, "{display:block}</style>\n");
    for (size_t k = 0; k < info->n_events; k++) {
        PH_MW_FMT(f, "<input type=\"radio\" name=\"cg-ev\" id=\"cg-ev-%zu\"%s><label for=\"cg-ev-%zu\" title=\"", k,
                k == 0 ? " checked" : "", k);
        ph_mw_text(f, meaning(info->events[k]));
        PH_MW_RAW(f, "\">");
        ph_mw_text(f, info->events[k]);
        PH_MW_RAW(f, "</label>\n");
    }
    for (size_t k = 0; k < info->n_events; k++) {
        char t1[160], t2[160];
        PH_MW_FMT(f, "<div class=\"panel\" id=\"cg-pn-%zu\">", k);
        snprintf(t1, sizeof t1, "Top %d by self %s (callgrind_annotate)", TOP_ROWS, info->events[k]);
        snprintf(t2, sizeof t2, "Top %d by inclusive %s (callgrind_annotate --inclusive=yes, recursion counted once)",
                 TOP_ROWS, info->events[k]);
        top_table(f, cg, k, 0, t1);
        top_table(f, cg, k, 1, t2);
        PH_MW_RAW(f, "</div>\n");
    }
    PH_MW_RAW(f, "</div>\n");

    callers_callees(f, cg);
    per_file(f, cg);
    if (info->n_parts > 1) {
        static const char *const heads[] = { "part", "pid", "thread", "command", "first event#" };
        PH_MW_RAW(f, "<h3>Parts and threads</h3>\n");
        ph_html_table(f, heads, 5);
        for (size_t i = 0;; i++) {
            const ph_cg_part *p = ph_callgrind_get_part(cg, i);
            if (p == NULL)
                break;
            PH_MW_RAW(f, "<tr><td>");
            ph_mw_text(f, p->part[0] ? p->part : "1");
            PH_MW_RAW(f, "</td><td>");
            ph_mw_text(f, p->pid);
            PH_MW_RAW(f, "</td><td>");
            ph_mw_text(f, p->thread[0] ? p->thread : "all");
            PH_MW_RAW(f, "</td><td class=\"name\">");
            ph_mw_text(f, p->cmd);
            PH_MW_RAW(f, "</td>");
            ph_html_num(f, (double)p->first_event_total, ph_fmt_commify(b, p->first_event_total));
            PH_MW_RAW(f, "</tr>\n");
        }
        ph_html_table_end(f);
    }
    flamegraph(f, cg);

    {
        uint32_t top;
        char b2[PH_FMT_LEN];
        int is_ir = strcmp(info->events[0], "Ir") == 0;

        if (ph_callgrind_top(cg, 0, 0, &top, 1) == 1) {
            ph_cg_fn fn = ph_callgrind_get_fn(cg, top);
            snprintf(c->headline, sizeof c->headline, "%s %s, top %s %s (self)", ph_fmt_count(b, (double)info->totals[0]),
                     is_ir ? "instructions" : info->events[0],
                     ph_fmt_name((char[PH_HEADLINE_NAME + 64]){ 0 }, PH_HEADLINE_NAME + 64, fn.fn, PH_HEADLINE_NAME),
                     ph_fmt_percent(b2, (double)fn.self[0], (double)info->totals[0]));
        } else {
            snprintf(c->headline, sizeof c->headline, "%s %s", ph_fmt_count(b, (double)info->totals[0]),
                     is_ir ? "instructions" : info->events[0]);
        }
    }
    totals = json_object();
    {
        json_t *events = json_array(), *o;
        for (size_t k = 0; k < info->n_events; k++) {
            json_object_set_new(totals, info->events[k], json_integer((json_int_t)info->totals[k]));
            json_array_append_new(events, json_string(info->events[k]));
        }
        o = json_pack("{s:o, s:o, s:s, s:I, s:I, s:I, s:o, s:o}", "events", events, "totals", totals, "totals_from",
                      info->totals_from, "functions", (json_int_t)ph_callgrind_n_fns(cg), "calls",
                      (json_int_t)ph_callgrind_n_calls(cg), "parts", (json_int_t)info->n_parts, "top_self",
                      top_json(cg, 0), "top_inclusive", top_json(cg, 1));
        json_object_set_new(c->summary, "callgrind", o);
    }
    ph_html_section_end(f);
}
