/* ph_report_massif.c - the heap section: the peak in figures (useful
 * heap, allocator overhead, stacks), heap over time stacked by the top
 * allocation sites (massif-visualizer's view), the top sites at the peak
 * and the peak's allocation tree as ms_print prints it at 1 %, with the
 * same figures. */
#include "ph_report_int.h"

#include <stdlib.h>
#include <string.h>

#include "ph_markup_only.h"

#define TOP_SITES 8

const char *
ph_report_site_name(const char *details)
{
    return ph_massif_strip_address(details);
}

/* A time in the file's unit, for people. */
static const char *
fmt_time(char buf[PH_FMT_LEN], double t, const char *unit)
{
    char n[PH_FMT_LEN];

    if (strcmp(unit, "ms") == 0)
        return ph_fmt_seconds(buf, t / 1000);
    if (strcmp(unit, "B") == 0) {
        snprintf(buf, PH_FMT_LEN, "%s allocated", ph_fmt_bytes(n, t));
        return buf;
    }
    snprintf(buf, PH_FMT_LEN, "%s instr.", ph_fmt_count(n, t));
    return buf;
}

/* The time axis, one formatter per unit massif can use. */
static const char *
fmt_axis_ms(char buf[PH_FMT_LEN], double t)
{
    return ph_fmt_seconds(buf, t / 1000);
}

static const char *
fmt_axis_bytes(char buf[PH_FMT_LEN], double v)
{
    return ph_fmt_bytes(buf, v);
}

static const char *
fmt_axis_instr(char buf[PH_FMT_LEN], double t)
{
    return ph_fmt_count(buf, t);
}

typedef struct tree_ctx {
    ph_mw *f;
    json_t *top;  /* the root's children, for summary.json */
} tree_ctx;

static int
tree_row_cb(void *ctx, const ph_massif_line *l)
{
    tree_ctx *t = ctx;
    char b[PH_FMT_LEN], pct[32];

    snprintf(pct, sizeof pct, "%05.2f%%", l->percent);
    if (l->group)
        PH_MW_RAW(t->f, "<tr class=\"group\">");
    else
        PH_MW_RAW(t->f, "<tr>");
    PH_MW_FMT(t->f, "<td class=\"name\" style=\"padding-left:%upx\">", 9 + 18 * l->depth);
    if (l->group) {
        PH_MW_FMT(t->f, "<span class=\"note\">in %u+ places, all below the 1%% threshold</span>", l->places);
    } else {
        if (l->depth > 0)
            PH_MW_RAW(t->f, "&#8627; ");
        ph_mw_text(t->f, l->details);
    }
    PH_MW_RAW(t->f, "</td>");
    ph_html_num(t->f, l->percent, pct);
    ph_html_num(t->f, (double)l->bytes, ph_fmt_commify(b, l->bytes));
    ph_html_bar(t->f, l->percent / 100);
    PH_MW_RAW(t->f, "</tr>\n");
    if (!l->group && l->depth == 1)
        json_array_append_new(t->top, json_pack("{s:s, s:I, s:f}", "site", ph_report_site_name(l->details), "bytes",
                                                (json_int_t)l->bytes, "percent", l->percent));
    return 0;
}

static int
cmp_bytes_desc(const void *a, const void *b)
{
    const ph_massif_site_bytes *x = a, *y = b;

    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* Sites to stack: the largest at the peak. */
static size_t
pick_sites(const ph_massif *m, const ph_massif_snapshot *peak, uint32_t *out, size_t max)
{
    const ph_massif_site_bytes *v;
    ph_massif_site_bytes *copy;
    size_t nv, n = 0;

    if (peak == NULL || peak->detail < 0)
        return 0;
    nv = ph_massif_detail_sites(m, peak->detail, &v);
    copy = malloc((nv ? nv : 1) * sizeof *copy);
    if (copy == NULL)
        return 0;
    memcpy(copy, v, nv * sizeof *copy);
    qsort(copy, nv, sizeof *copy, cmp_bytes_desc);
    for (size_t i = 0; i < nv && n < max; i++)
        if (copy[i].bytes > 0)
            out[n++] = copy[i].site;
    free(copy);
    return n;
}

void
ph_report_massif(ph_rctx *c)
{
    ph_mw *f = c->html;
    const ph_massif *m = c->rd->massif;
    const ph_massif_info *info;
    const ph_massif_snapshot *peak = NULL;
    const char *unit;
    json_t *js, *top;
    char b1[PH_FMT_LEN], b2[PH_FMT_LEN], b3[PH_FMT_LEN], note[160];
    uint64_t total;
    size_t ns;

    ph_html_section(f, "massif", "Heap (valgrind massif)");
    if (m == NULL || ph_massif_n_snapshots(m) == 0) {
        ph_html_problem(f, m == NULL ? "There is no massif output to show (see the problems above)."
                                     : "massif.out has no snapshot: the heap cannot be shown.");
        ph_html_section_end(f);
        return;
    }
    info = ph_massif_get_info(m);
    unit = info->time_unit[0] ? info->time_unit : "i";
    ns = ph_massif_n_snapshots(m);
    if (info->peak >= 0) {
        peak = ph_massif_get_snapshot(m, (size_t)info->peak);
    } else {
        for (size_t i = 0; i < ns; i++) {
            const ph_massif_snapshot *s = ph_massif_get_snapshot(m, i);
            if (peak == NULL || s->heap + s->extra + s->stacks > peak->heap + peak->extra + peak->stacks)
                peak = s;
        }
        ph_html_note(f, "massif marked no peak snapshot; the figures below are of the largest snapshot.");
    }
    total = peak->heap + peak->extra + peak->stacks;

    ph_html_cards_begin(f);
    snprintf(note, sizeof note, "at %s (snapshot %llu)", fmt_time(b2, (double)peak->time, unit),
             (unsigned long long)peak->num);
    ph_html_card(f, "peak heap (useful)", ph_fmt_bytes(b1, (double)peak->heap), note);
    snprintf(note, sizeof note, "%s of the total", ph_fmt_percent(b2, (double)peak->extra, (double)total));
    ph_html_card(f, "extra heap", ph_fmt_bytes(b1, (double)peak->extra), "allocator overhead and alignment");
    ph_html_card(f, "stacks", ph_fmt_bytes(b1, (double)peak->stacks), peak->stacks ? "" : "not measured (--stacks=no)");
    snprintf(note, sizeof note, "%s bytes", ph_fmt_commify(b2, total));
    ph_html_card(f, "total at peak", ph_fmt_bytes(b1, (double)total), note);
    snprintf(note, sizeof note, "%llu detailed", (unsigned long long)info->n_detailed);
    ph_html_card(f, "snapshots", ph_fmt_commify(b1, info->n_snapshots), note);
    ph_html_cards_end(f);
    if (total > 0)
        PH_MW_FMT(f, "<div style=\"display:flex;height:12px;border-radius:3px;overflow:hidden;margin:2px 0 12px\" "
                "title=\"useful heap / extra heap / stacks\"><span style=\"flex:%llu;background:%s\"></span>"
                "<span style=\"flex:%llu;background:%s\"></span><span style=\"flex:%llu;background:%s\"></span></div>\n",
                (unsigned long long)peak->heap, ph_chart_color(0), (unsigned long long)peak->extra, ph_chart_color(1),
                (unsigned long long)peak->stacks, ph_chart_color(2));
    PH_MW_FMT(f, "<ul class=\"legend\" style=\"margin-top:-6px\"><li><i style=\"background:%s\"></i>useful heap</li>"
               "<li><i style=\"background:%s\"></i>extra heap</li><li><i style=\"background:%s\"></i>stacks</li></ul>\n",
            ph_chart_color(0), ph_chart_color(1), ph_chart_color(2));

    /* heap over time, stacked by site */
    {
        uint32_t sites[TOP_SITES];
        size_t nsites = pick_sites(m, peak, sites, TOP_SITES), nd = 0;
        double *x = calloc(ns, sizeof *x), *lx = calloc(ns, sizeof *lx), *ly = calloc(ns, sizeof *ly);
        double *ys = calloc((TOP_SITES + 1) * ns, sizeof *ys);
        ph_chart_series series[TOP_SITES + 1];
        char other[] = "other allocation sites";

        if (x && lx && ly && ys) {
            for (size_t i = 0; i < ns; i++) {
                const ph_massif_snapshot *s = ph_massif_get_snapshot(m, i);
                const ph_massif_site_bytes *v;
                size_t nv = ph_massif_detail_sites(m, s->detail, &v);
                double rest = (double)s->heap;

                lx[i] = (double)s->time;
                ly[i] = (double)s->heap;
                if (s->detail < 0)
                    continue;
                x[nd] = (double)s->time;
                for (size_t k = 0; k < nsites; k++)
                    for (size_t j = 0; j < nv; j++)
                        if (v[j].site == sites[k]) {
                            ys[k * ns + nd] += (double)v[j].bytes;
                            rest -= (double)v[j].bytes;
                        }
                ys[nsites * ns + nd] = rest > 0 ? rest : 0;
                nd++;
            }
            for (size_t k = 0; k < nsites; k++)
                series[k] = (ph_chart_series){ ph_massif_site_name(m, sites[k]), ys + k * ns };
            series[nsites] = (ph_chart_series){ other, ys + nsites * ns };
            PH_MW_RAW(f, "<h3>Heap over time, by allocation site</h3>\n");
            ph_svg_stacked(f, x, nd, series, nsites + 1, lx, ly, ns, "useful heap, every snapshot",
                           strcmp(unit, "B") == 0    ? fmt_axis_bytes
                           : strcmp(unit, "ms") == 0 ? fmt_axis_ms
                                                     : fmt_axis_instr,
                           fmt_axis_bytes,
                           strcmp(unit, "B") == 0    ? "bytes allocated so far (massif --time-unit=B)"
                           : strcmp(unit, "ms") == 0 ? "time"
                                                              : "instructions executed",
                           PH_CHART_Y_BYTES | (strcmp(unit, "B") == 0 ? PH_CHART_X_BYTES : 0));
            if (nd == 0)
                ph_html_note(f, "No detailed snapshot: only the total is drawn.");
        }
        free(x);
        free(lx);
        free(ly);
        free(ys);
    }

    /* the peak's tree, ms_print's lines */
    top = json_array();
    if (ph_massif_n_peak_nodes(m) > 0) {
        tree_ctx t = { f, top };
        static const char *const heads[] = { "allocation tree at the peak", "% of total#", "bytes#", "" };

        snprintf(note, sizeof note, "Snapshot %llu, as ms_print prints it (threshold 1%%; percentages of the total, %s).",
                 (unsigned long long)peak->num, ph_fmt_bytes(b3, (double)total));
        PH_MW_RAW(f, "<h3>Where the peak's memory was allocated</h3>\n");
        ph_html_note(f, note);
        PH_MW_RAW(f, "<div class=\"tree\">");
        ph_html_table(f, heads, 4);
        ph_massif_walk_peak(m, 1.0, tree_row_cb, &t);
        ph_html_table_end(f);
        PH_MW_RAW(f, "</div>");
        if (info->peak_tree_truncated)
            ph_html_note(f, "The tree was too large to keep whole; its smallest branches are left out.");
    } else if (info->peak < 0 || peak->tree == PH_MASSIF_EMPTY) {
        ph_html_note(f, "The peak snapshot has no allocation tree.");
    }

    /* the headline: peak heap and the top site at the peak */
    {
        json_t *first = json_array_get(top, 0);
        const char *site = first ? json_string_value(json_object_get(first, "site")) : NULL;
        char sitebuf[96];

        if (site != NULL) {
            /* "front_cache_put (front.c:88)" -> "front_cache_put" */
            size_t n = strcspn(site, " (");
            snprintf(sitebuf, sizeof sitebuf, "%.*s", (int)(n < 80 ? n : 80), site);
            snprintf(c->headline, sizeof c->headline, "peak heap %s at %s (%s %.1f %%)",
                     ph_fmt_bytes(b1, (double)peak->heap), fmt_time(b2, (double)peak->time, unit), sitebuf,
                     json_real_value(json_object_get(first, "percent")));
        } else {
            snprintf(c->headline, sizeof c->headline, "peak heap %s at %s", ph_fmt_bytes(b1, (double)peak->heap),
                     fmt_time(b2, (double)peak->time, unit));
        }
    }
    js = json_pack("{s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:s, s:o}", "peak_heap", (json_int_t)peak->heap,
                   "peak_extra", (json_int_t)peak->extra, "peak_stacks", (json_int_t)peak->stacks, "peak_total",
                   (json_int_t)total, "peak_time", (json_int_t)peak->time, "time_unit", unit, "peak_snapshot",
                   (json_int_t)peak->num, "snapshots", (json_int_t)info->n_snapshots, "detailed",
                   (json_int_t)info->n_detailed, "max_total", (json_int_t)info->max_total, "cmd", info->cmd, "top_sites",
                   top);
    json_object_set_new(c->summary, "massif", js);
    ph_html_section_end(f);
}
