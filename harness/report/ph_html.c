/* ph_html.c - the report's HTML and SVG, written through a markup writer
 * (ph_markup.h; stdio's writers are poisoned here).
 *
 * Every page is one file: the style sheet and a small script inline, the
 * charts as inline SVG drawn here, flamegraphs drawn by the harness's
 * renderer in sandboxed frames of their own (srcdoc documents).  Everything
 * reads without JS; the script only sorts tables when a header is
 * clicked.  Text from artifacts (function names, paths, commands) is
 * always escaped; a Content-Security-Policy lets only the harness's own
 * scripts run.
 */
#include "ph_report_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ph_markup_only.h"

#define STYLE \
    ":root{--fg:#1c2230;--muted:#667085;--bg:#f4f5f7;--card:#fff;--line:#e4e7ec;--accent:#d9480f;--accent2:#1c7ed6;" \
    "--warn:#fff4e5;--warnline:#f59f00;--good:#2b8a3e;--bad:#c92a2a}" \
    "*{box-sizing:border-box}" \
    "body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',sans-serif;" \
    "color:var(--fg);background:var(--bg)}" \
    "header{background:#1c2230;color:#fff;padding:18px 32px 16px}" \
    "header h1{margin:0;font-size:21px;font-weight:600;letter-spacing:.01em}" \
    "header .sub{color:#aeb6c7;margin-top:4px;font-size:13px}" \
    "header .headline{margin-top:10px;font-size:17px;color:#ffd8a8;font-weight:500}" \
    "header a{color:#a5d8ff}" \
    "nav.toc{margin-top:10px;font-size:13px}nav.toc a{color:#d0ebff;margin-right:14px;text-decoration:none}" \
    "nav.toc a:hover{text-decoration:underline}" \
    "main{max-width:1340px;margin:0 auto;padding:8px 32px 56px}" \
    "section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 22px 18px;" \
    "margin:18px 0;box-shadow:0 1px 2px rgba(16,24,40,.04)}" \
    "h2{font-size:16px;margin:0 0 12px;font-weight:600}h3{font-size:14px;margin:18px 0 8px;color:#344054}" \
    "table.data{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}" \
    "table.data th{font-weight:600;color:#475467;font-size:12px;text-transform:uppercase;letter-spacing:.03em;" \
    "cursor:pointer;user-select:none;background:#f9fafb}" \
    "table.data th,table.data td{padding:5px 9px;border-bottom:1px solid var(--line);text-align:left;" \
    "vertical-align:top}" \
    "table.data tr:hover td{background:#f8f9fc}" \
    "table.data .n{text-align:right;white-space:nowrap}" \
    "td.name{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;word-break:break-all}" \
    "td.bar{width:140px;min-width:90px}td.bar span{display:block;height:9px;margin-top:5px;background:var(--accent);" \
    "border-radius:2px;min-width:1px}" \
    "td.up{color:var(--bad)}td.down{color:var(--good)}" \
    "td.name .file{color:var(--muted);font-size:11.5px;margin-left:6px}" \
    "details>summary{cursor:pointer;margin:6px 0}" \
    ".cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(180px,1fr));gap:12px;margin:4px 0 10px}" \
    ".card{border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:#fcfcfd}" \
    ".card .v{font-size:21px;font-weight:600;font-variant-numeric:tabular-nums}" \
    ".card .l{color:var(--muted);font-size:11.5px;text-transform:uppercase;letter-spacing:.05em}" \
    ".card .x{color:var(--muted);font-size:12px}" \
    ".problem{background:var(--warn);border-left:4px solid var(--warnline);padding:8px 12px;margin:8px 0;" \
    "border-radius:4px}" \
    ".note{color:var(--muted);font-size:12.5px;margin:6px 0}" \
    "code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}" \
    "dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:0}" \
    "dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;word-break:break-all}" \
    "iframe.flame{display:block;width:100%;max-height:calc(100vh - 24px);border:1px solid var(--line);border-radius:6px;" \
    "background:#fff}" \
    "svg.chart{width:100%;height:auto;display:block}" \
    "svg.chart text{font:11px system-ui,sans-serif;fill:#475467}" \
    "ul.legend{list-style:none;padding:0;margin:6px 0 0;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12.5px}" \
    "ul.legend li{display:flex;align-items:center;gap:6px;max-width:560px}" \
    "ul.legend i{width:11px;height:11px;border-radius:2px;flex:none;display:inline-block}" \
    ".tabs>input{position:absolute;opacity:0;pointer-events:none}" \
    ".tabs>label{display:inline-block;padding:4px 12px;margin:0 4px 8px 0;border:1px solid var(--line);" \
    "border-radius:14px;cursor:pointer;font-size:12.5px;background:#f9fafb}" \
    ".tabs>input:checked+label{background:#1c2230;color:#fff;border-color:#1c2230}" \
    ".tabs .panel{display:none}" \
    ".tree td.name{white-space:pre-wrap}" \
    "footer{color:var(--muted);font-size:12px;text-align:center;margin:24px 0}"

/* Click a header: sort by that column (numeric cells carry data-v). */
#define SCRIPT \
    "document.addEventListener('click',function(e){var th=e.target.closest&&e.target.closest('table.data th');" \
    "if(!th)return;var t=th.closest('table'),i=Array.prototype.indexOf.call(th.parentNode.children,th)," \
    "b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),num=th.classList.contains('n')," \
    "dir=th.getAttribute('data-dir')==='d'?'a':'d';th.setAttribute('data-dir',dir);" \
    "rows.sort(function(x,y){var a=x.cells[i],c=y.cells[i];if(!a||!c)return 0;" \
    "var u=num?parseFloat(a.getAttribute('data-v')):a.textContent,w=num?parseFloat(c.getAttribute('data-v')):c.textContent;" \
    "var r=num?u-w:(u<w?-1:u>w?1:0);return dir==='d'?-r:r});rows.forEach(function(r){b.appendChild(r)})});"

/* The page's Content-Security-Policy: nothing but what the harness wrote
 * runs.  Scripts: the page's own and the flamegraph renderer's (a srcdoc
 * frame keeps its parent's policy, so the graph's script is allowed by
 * its hash here too), by their SHA-256; no 'unsafe-inline', so
 * a <script> or an on* attribute that got in by any path does not run.
 * Styles: 'unsafe-inline', because the page draws with style attributes
 * (bar widths, legend colours, a frame's aspect ratio) and the renderer's
 * SVG has its <style>; CSS cannot run script, and with default-src 'none'
 * (no fonts, no fetches, images only as data:) a style cannot send
 * anything anywhere.  Frames: none loaded from anywhere (the graphs'
 * are srcdoc documents, each sandboxed). */
static void
csp(ph_mw *f)
{
    char page[PH_CSP_HASH_LEN], flame[PH_CSP_HASH_LEN];

    PH_MW_FMT(f,
              "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src '%s' '%s'; "
              "style-src 'unsafe-inline'; img-src data:; frame-src 'none'; base-uri 'none'; form-action 'none'\">",
              ph_markup_csp_hash(page, SCRIPT), ph_markup_csp_hash(flame, ph_flame_script()));
}

void
ph_html_begin(ph_mw *f, const char *title, const char *heading, const char *sub)
{
    PH_MW_RAW(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">");
    csp(f);
    PH_MW_RAW(f, "\n<title>");
    ph_mw_text(f, title);
    PH_MW_RAW(f, "</title>\n<style>" STYLE "</style>\n<script>" SCRIPT "</script>\n</head><body>\n<header><h1>");
    ph_mw_text(f, heading);
    PH_MW_RAW(f, "</h1>");
    if (sub != NULL && sub[0]) {
        PH_MW_RAW(f, "<div class=\"sub\">");
        ph_mw_text(f, sub);
        PH_MW_RAW(f, "</div>");
    }
}

void
ph_html_main(ph_mw *f)
{
    PH_MW_RAW(f, "</header>\n<main>\n");
}

void
ph_html_end(ph_mw *f)
{
    PH_MW_RAW(f, "</main>\n<footer>profharness</footer>\n</body></html>\n");
}

void
ph_html_section(ph_mw *f, const char *id, const char *title)
{
    PH_MW_FMT(f, "<section id=\"%s\"><h2>", id);
    ph_mw_text(f, title);
    PH_MW_RAW(f, "</h2>\n");
}

void
ph_html_section_end(ph_mw *f)
{
    PH_MW_RAW(f, "</section>\n");
}

void
ph_html_problem(ph_mw *f, const char *text)
{
    PH_MW_RAW(f, "<div class=\"problem\">");
    ph_mw_text(f, text);
    PH_MW_RAW(f, "</div>\n");
}

void
ph_html_note(ph_mw *f, const char *text)
{
    PH_MW_RAW(f, "<p class=\"note\">");
    ph_mw_text(f, text);
    PH_MW_RAW(f, "</p>\n");
}

void
ph_html_cards_begin(ph_mw *f)
{
    PH_MW_RAW(f, "<div class=\"cards\">");
}

void
ph_html_card(ph_mw *f, const char *label, const char *value, const char *note)
{
    PH_MW_RAW(f, "<div class=\"card\"><div class=\"l\">");
    ph_mw_text(f, label);
    PH_MW_RAW(f, "</div><div class=\"v\">");
    ph_mw_text(f, value);
    PH_MW_RAW(f, "</div>");
    if (note != NULL && note[0]) {
        PH_MW_RAW(f, "<div class=\"x\">");
        ph_mw_text(f, note);
        PH_MW_RAW(f, "</div>");
    }
    PH_MW_RAW(f, "</div>");
}

void
ph_html_cards_end(ph_mw *f)
{
    PH_MW_RAW(f, "</div>\n");
}

void
ph_html_table(ph_mw *f, const char *const *heads, size_t n)
{
    PH_MW_RAW(f, "<table class=\"data\"><thead><tr>");
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(heads[i]);
        int num = l > 0 && heads[i][l - 1] == '#';
        if (num)
            PH_MW_RAW(f, "<th class=\"n\">");
        else
            PH_MW_RAW(f, "<th>");
        ph_mw_textn(f, heads[i], num ? l - 1 : l);
        PH_MW_RAW(f, "</th>");
    }
    PH_MW_RAW(f, "</tr></thead><tbody>\n");
}

void
ph_html_table_end(ph_mw *f)
{
    PH_MW_RAW(f, "</tbody></table>\n");
}

void
ph_html_num(ph_mw *f, double v, const char *text)
{
    PH_MW_FMT(f, "<td class=\"n\" data-v=\"%.17g\">", isfinite(v) ? v : 0.0);
    ph_mw_text(f, text);
    PH_MW_RAW(f, "</td>");
}

void
ph_html_bar(ph_mw *f, double frac)
{
    if (!(frac > 0))
        frac = 0;
    if (frac > 1)
        frac = 1;
    PH_MW_FMT(f, "<td class=\"bar\"><span style=\"width:%.1f%%\"></span></td>", 100 * frac);
}

/* A number attribute of the root element, bounded to [start, end); its
 * value's place in *at and *n, or -1 when it is not there. */
static double
root_attr(const char *start, const char *end, const char *name, size_t *at, size_t *n)
{
    size_t nl = strlen(name);
    const char *p = start;

    while ((p = memmem(p, (size_t)(end - p), name, nl)) != NULL) {
        if (p > start && p[-1] == ' ' && p + nl + 1 < end && p[nl] == '=' && p[nl + 1] == '"') {
            char *q = NULL;
            double v = strtod(p + nl + 2, &q);

            if (q > p + nl + 2 && q < end && *q == '"' && v > 0) {
                *at = (size_t)(p + nl + 2 - start);
                *n = (size_t)(q - (p + nl + 2));
                return v;
            }
        }
        p += nl;
    }
    return -1;
}

/* The flamegraph in a frame of its own: its script runs there, apart from
 * the page's, sandboxed ("allow-scripts" and nothing more: an opaque
 * origin, so it cannot reach the page, and no top navigation).  SVG is
 * what the harness's renderer wrote, never an artifact's.
 *
 * The frame's document is its srcdoc, the SVG inline in a small HTML
 * page, escaped as the attribute it is: no URL holds it, so no limit on
 * a URL's length blanks it (Chromium's 2 MiB did, to every graph past
 * 1.5 MB of SVG as a data: URL), and it keeps the page's
 * Content-Security-Policy (a srcdoc document inherits it), which lets
 * the renderer's script run by its hash and nothing else.  The graph
 * takes the card's width, its height following (the frame takes the
 * graph's aspect ratio), at most the window's: a taller graph scrolls
 * inside its frame, and its script starts it at the root. */
static void
flame_frame(ph_mw *f, const char *svg, size_t len, const char *title)
{
    const char *root = memmem(svg, len < 4096 ? len : 4096, "<svg ", 5);
    const char *rend = root != NULL ? memchr(root, '>', (size_t)(svg + len - root)) : NULL;
    size_t wat = 0, wn = 0, hat = 0, hn = 0;
    double w = -1, h = -1;

    if (rend != NULL) {
        w = root_attr(root, rend, "width", &wat, &wn);
        h = root_attr(root, rend, "height", &hat, &hn);
    }
    if (root == NULL) /* not the renderer's: nothing to show */
        return;
    if (w > 0 && h > 0)
        PH_MW_FMT(f, "<iframe class=\"flame\" sandbox=\"allow-scripts\" style=\"aspect-ratio:%.0f/%.0f\" title=\"", w, h);
    else
        PH_MW_FMT(f, "<iframe class=\"flame\" sandbox=\"allow-scripts\" style=\"height:%.0fpx\" title=\"",
                  h >= 100 && h <= 2400 ? h + 24 : 424);
    ph_mw_attr(f, title);
    /* the XML declaration left out: an HTML page's parser would take it
     * for a comment, and it says nothing the page does not */
    PH_MW_RAW(f, "\" srcdoc=\"&lt;!DOCTYPE html&gt;&lt;meta charset=&quot;utf-8&quot;&gt;&lt;style&gt;"
                 "html,body{margin:0}svg{display:block;width:100%;height:auto}&lt;/style&gt;");
    ph_mw_attrn(f, root, len - (size_t)(root - svg));
    PH_MW_RAW(f, "\"></iframe>\n");
}

void
ph_html_flame_render(ph_mw *f, const ph_folded *folded, const ph_flame_opts *o, const char *title)
{
    ph_html_flame_render_kept(f, folded, o, title, NULL, NULL);
}

void
ph_report_graph_bounds(ph_flame_opts *o)
{
    if (!o->minwidth_percent && o->minwidth < 1)
        o->minwidth = 1; /* what a person can see */
    o->collapse = 1;
    o->max_depth = PH_REPORT_GRAPH_DEPTH;
    if (o->max_bytes == 0 || o->max_bytes > PH_REPORT_GRAPH_MAX)
        o->max_bytes = PH_REPORT_GRAPH_MAX;
}

void
ph_html_flame_render_kept(ph_mw *f, const ph_folded *folded, const ph_flame_opts *opts, const char *title,
                          char **kept, size_t *kept_len)
{
    char *svg = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&svg, &len);
    ph_error_t err = NULL;
    ph_flame_opts o = *opts;
    int rc;

    if (m == NULL) {
        ph_html_problem(f, "the flamegraph could not be drawn: out of memory");
        return;
    }
    ph_report_graph_bounds(&o);
    rc = ph_flame_render(folded, &o, m, NULL, &err);
    if (fclose(m) != 0 && rc == 0)
        rc = ph_fail(&err, ENOMEM, "write the SVG");
    if (rc < 0) {
        char msg[700];
        snprintf(msg, sizeof msg, "the flamegraph could not be drawn: %s", err->msg);
        ph_html_problem(f, msg);
        ph_error_free(&err);
    } else {
        flame_frame(f, svg, len, title);
        if (kept != NULL) {
            *kept = svg;
            *kept_len = len;
            svg = NULL;
        }
    }
    free(svg);
}

/* ---- charts ------------------------------------------------------------ */

const char *
ph_chart_color(size_t i)
{
    static const char *const palette[] = { "#e8590c", "#1c7ed6", "#2f9e44", "#ae3ec9", "#f59f00",
                                           "#0c8599", "#e03131", "#5c7cfa", "#868e96" };
    const size_t n = sizeof palette / sizeof palette[0];

    return palette[i < n ? i : n - 1];
}

/* A round step near SPAN/N: 1, 2 or 5 times a power of ten; BINARY
 * (bytes): the same within the power of 1024 SPAN is in, so ticks read
 * 256 KiB, 512 KiB rather than 488 KiB. */
static double
nice_step(double span, int n, int binary)
{
    double raw = span / n, p, m, unit = 1;

    if (!(raw > 0))
        return 1;
    if (binary)
        while (span / unit >= 1024)
            unit *= 1024;
    raw /= unit;
    p = pow(binary && raw >= 1 ? 2 : 10, floor(binary && raw >= 1 ? log2(raw) : log10(raw)));
    m = raw / p;
    if (binary && raw >= 1)
        return (m <= 1 ? 1 : 2) * p * unit;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p * unit;
}

#define CW 960.0
#define CH 300.0
#define ML 78.0
#define MR 18.0
#define MT 12.0
#define MB 40.0

void
ph_svg_stacked(ph_mw *f, const double *x, size_t n, const ph_chart_series *series, size_t ns, const double *lx,
               const double *ly, size_t ln, const char *line_name, ph_chart_fmt fx, ph_chart_fmt fy,
               const char *x_label, int flags)
{
    double x0 = INFINITY, x1 = -INFINITY, ymax = 0, ystep, xstep, pw = CW - ML - MR, ph = CH - MT - MB;
    double *cum = calloc(n ? n : 1, sizeof *cum);
    char buf[PH_FMT_LEN];

    if (cum == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (size_t k = 0; k < ns; k++)
            s += series[k].y[i];
        if (s > ymax)
            ymax = s;
        x0 = fmin(x0, x[i]);
        x1 = fmax(x1, x[i]);
    }
    for (size_t i = 0; i < ln; i++) {
        ymax = fmax(ymax, ly[i]);
        x0 = fmin(x0, lx[i]);
        x1 = fmax(x1, lx[i]);
    }
    if (!(x1 > x0)) {
        x0 = isfinite(x0) ? x0 : 0;
        x1 = x0 + 1;
    }
    ystep = nice_step(ymax > 0 ? ymax : 1, 5, (flags & PH_CHART_Y_BYTES) != 0);
    ymax = ceil((ymax > 0 ? ymax : 1) / ystep) * ystep;
    xstep = nice_step(x1 - x0, 6, (flags & PH_CHART_X_BYTES) != 0);
#define SX(v) (ML + ((v) - x0) / (x1 - x0) * pw)
#define SY(v) (MT + ph - (v) / ymax * ph)
    PH_MW_FMT(f, "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">",
            CW, CH);
    for (double v = 0; v <= ymax + ystep / 2; v += ystep) {
        PH_MW_FMT(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eaecf0\"/>", ML, CW - MR, SY(v),
                SY(v));
        PH_MW_FMT(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>", ML - 6, SY(v) + 4, fy(buf, v));
    }
    for (double v = ceil(x0 / xstep) * xstep; v <= x1 + xstep / 1000; v += xstep)
        PH_MW_FMT(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", SX(v), CH - MB + 16, fx(buf, v));
    if (x_label)
        PH_MW_FMT(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", ML + pw / 2, CH - 6, x_label);
    for (size_t k = 0; k < ns && n > 0; k++) {
        PH_MW_FMT(f, "<path fill=\"%s\" fill-opacity=\"0.85\" stroke=\"%s\" stroke-width=\"0.6\" d=\"", ph_chart_color(k),
                ph_chart_color(k));
        for (size_t i = 0; i < n; i++)
            PH_MW_FMT(f, "%s%.1f %.1f", i ? " L" : "M", SX(x[i]), SY(cum[i] + series[k].y[i]));
        for (size_t i = n; i-- > 0;)
            PH_MW_FMT(f, " L%.1f %.1f", SX(x[i]), SY(cum[i]));
        PH_MW_RAW(f, "Z\"><title>");
        ph_mw_text(f, series[k].name);
        PH_MW_RAW(f, "</title></path>");
        for (size_t i = 0; i < n; i++)
            cum[i] += series[k].y[i];
    }
    if (ln > 0) {
        PH_MW_RAW(f, "<polyline fill=\"none\" stroke=\"#1c2230\" stroke-width=\"1.6\" points=\"");
        for (size_t i = 0; i < ln; i++)
            PH_MW_FMT(f, "%s%.1f,%.1f", i ? " " : "", SX(lx[i]), SY(ly[i]));
        PH_MW_RAW(f, "\"><title>");
        ph_mw_text(f, line_name ? line_name : "");
        PH_MW_RAW(f, "</title></polyline>");
    }
    PH_MW_FMT(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#98a2b3\"/>", ML, CW - MR, SY(0), SY(0));
    PH_MW_RAW(f, "</svg>\n<ul class=\"legend\">");
    for (size_t k = 0; k < ns; k++) {
        PH_MW_FMT(f, "<li><i style=\"background:%s\"></i><span class=\"mono\">", ph_chart_color(k));
        ph_mw_text(f, series[k].name);
        PH_MW_RAW(f, "</span></li>");
    }
    if (ln > 0) {
        PH_MW_RAW(f, "<li><i style=\"background:#1c2230;height:3px\"></i><span>");
        ph_mw_text(f, line_name ? line_name : "");
        PH_MW_RAW(f, "</span></li>");
    }
    PH_MW_RAW(f, "</ul>\n");
#undef SX
#undef SY
    free(cum);
}
