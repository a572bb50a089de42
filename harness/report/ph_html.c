/* ph_html.c - the report's HTML and SVG, written straight to a FILE.
 *
 * Every page is one file: the style sheet and a small script inline, the
 * charts as inline SVG drawn here, flamegraphs in frames of their own
 * (data: URLs) so their scripts run as they were written.  Everything
 * reads without JS; the script only sorts tables when a header is
 * clicked.  Text from artifacts (function names, paths, commands) is
 * always escaped.
 */
#include "ph_report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char style[] =
    ":root{--fg:#1c2230;--muted:#667085;--bg:#f4f5f7;--card:#fff;--line:#e4e7ec;--accent:#d9480f;--accent2:#1c7ed6;"
    "--warn:#fff4e5;--warnline:#f59f00;--good:#2b8a3e;--bad:#c92a2a}"
    "*{box-sizing:border-box}"
    "body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',sans-serif;"
    "color:var(--fg);background:var(--bg)}"
    "header{background:#1c2230;color:#fff;padding:18px 32px 16px}"
    "header h1{margin:0;font-size:21px;font-weight:600;letter-spacing:.01em}"
    "header .sub{color:#aeb6c7;margin-top:4px;font-size:13px}"
    "header .headline{margin-top:10px;font-size:17px;color:#ffd8a8;font-weight:500}"
    "header a{color:#a5d8ff}"
    "nav.toc{margin-top:10px;font-size:13px}nav.toc a{color:#d0ebff;margin-right:14px;text-decoration:none}"
    "nav.toc a:hover{text-decoration:underline}"
    "main{max-width:1340px;margin:0 auto;padding:8px 32px 56px}"
    "section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 22px 18px;"
    "margin:18px 0;box-shadow:0 1px 2px rgba(16,24,40,.04)}"
    "h2{font-size:16px;margin:0 0 12px;font-weight:600}h3{font-size:14px;margin:18px 0 8px;color:#344054}"
    "table.data{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}"
    "table.data th{font-weight:600;color:#475467;font-size:12px;text-transform:uppercase;letter-spacing:.03em;"
    "cursor:pointer;user-select:none;background:#f9fafb}"
    "table.data th,table.data td{padding:5px 9px;border-bottom:1px solid var(--line);text-align:left;"
    "vertical-align:top}"
    "table.data tr:hover td{background:#f8f9fc}"
    "table.data .n{text-align:right;white-space:nowrap}"
    "td.name{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;word-break:break-all}"
    "td.bar{width:140px;min-width:90px}td.bar span{display:block;height:9px;margin-top:5px;background:var(--accent);"
    "border-radius:2px;min-width:1px}"
    "td.up{color:var(--bad)}td.down{color:var(--good)}"
    "td.name .file{color:var(--muted);font-size:11.5px;margin-left:6px}"
    "details>summary{cursor:pointer;margin:6px 0}"
    ".cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(180px,1fr));gap:12px;margin:4px 0 10px}"
    ".card{border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:#fcfcfd}"
    ".card .v{font-size:21px;font-weight:600;font-variant-numeric:tabular-nums}"
    ".card .l{color:var(--muted);font-size:11.5px;text-transform:uppercase;letter-spacing:.05em}"
    ".card .x{color:var(--muted);font-size:12px}"
    ".problem{background:var(--warn);border-left:4px solid var(--warnline);padding:8px 12px;margin:8px 0;"
    "border-radius:4px}"
    ".note{color:var(--muted);font-size:12.5px;margin:6px 0}"
    "code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}"
    "dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:0}"
    "dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;word-break:break-all}"
    "iframe.flame{width:100%;border:1px solid var(--line);border-radius:6px;background:#fff}"
    "svg.chart{width:100%;height:auto;display:block}"
    "svg.chart text{font:11px system-ui,sans-serif;fill:#475467}"
    "ul.legend{list-style:none;padding:0;margin:6px 0 0;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12.5px}"
    "ul.legend li{display:flex;align-items:center;gap:6px;max-width:560px}"
    "ul.legend i{width:11px;height:11px;border-radius:2px;flex:none;display:inline-block}"
    ".tabs>input{position:absolute;opacity:0;pointer-events:none}"
    ".tabs>label{display:inline-block;padding:4px 12px;margin:0 4px 8px 0;border:1px solid var(--line);"
    "border-radius:14px;cursor:pointer;font-size:12.5px;background:#f9fafb}"
    ".tabs>input:checked+label{background:#1c2230;color:#fff;border-color:#1c2230}"
    ".tabs .panel{display:none}"
    ".tree td.name{white-space:pre-wrap}"
    "footer{color:var(--muted);font-size:12px;text-align:center;margin:24px 0}";

/* Click a header: sort by that column (numeric cells carry data-v). */
static const char script[] =
    "document.addEventListener('click',function(e){var th=e.target.closest&&e.target.closest('table.data th');"
    "if(!th)return;var t=th.closest('table'),i=Array.prototype.indexOf.call(th.parentNode.children,th),"
    "b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),num=th.classList.contains('n'),"
    "dir=th.getAttribute('data-dir')==='d'?'a':'d';th.setAttribute('data-dir',dir);"
    "rows.sort(function(x,y){var a=x.cells[i],c=y.cells[i];if(!a||!c)return 0;"
    "var u=num?parseFloat(a.getAttribute('data-v')):a.textContent,w=num?parseFloat(c.getAttribute('data-v')):c.textContent;"
    "var r=num?u-w:(u<w?-1:u>w?1:0);return dir==='d'?-r:r});rows.forEach(function(r){b.appendChild(r)})});";

void
ph_html_escn(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        switch (s[i]) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if ((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t')
                fputc('?', f);
            else
                fputc(s[i], f);
        }
    }
}

void
ph_html_esc(FILE *f, const char *s)
{
    if (s != NULL)
        ph_html_escn(f, s, strlen(s));
}

void
ph_html_begin(FILE *f, const char *title, const char *heading, const char *sub)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
          "script-src 'unsafe-inline'; img-src data:; frame-src data:\">\n<title>",
          f);
    ph_html_esc(f, title);
    fprintf(f, "</title>\n<style>%s</style>\n<script>%s</script>\n</head><body>\n<header><h1>", style, script);
    ph_html_esc(f, heading);
    fputs("</h1>", f);
    if (sub != NULL && sub[0]) {
        fputs("<div class=\"sub\">", f);
        ph_html_esc(f, sub);
        fputs("</div>", f);
    }
}

void
ph_html_main(FILE *f)
{
    fputs("</header>\n<main>\n", f);
}

void
ph_html_end(FILE *f)
{
    fputs("</main>\n<footer>profharness</footer>\n</body></html>\n", f);
}

void
ph_html_section(FILE *f, const char *id, const char *title)
{
    fprintf(f, "<section id=\"%s\"><h2>", id);
    ph_html_esc(f, title);
    fputs("</h2>\n", f);
}

void
ph_html_section_end(FILE *f)
{
    fputs("</section>\n", f);
}

void
ph_html_problem(FILE *f, const char *text)
{
    fputs("<div class=\"problem\">", f);
    ph_html_esc(f, text);
    fputs("</div>\n", f);
}

void
ph_html_note(FILE *f, const char *text)
{
    fputs("<p class=\"note\">", f);
    ph_html_esc(f, text);
    fputs("</p>\n", f);
}

void
ph_html_cards_begin(FILE *f)
{
    fputs("<div class=\"cards\">", f);
}

void
ph_html_card(FILE *f, const char *label, const char *value, const char *note)
{
    fputs("<div class=\"card\"><div class=\"l\">", f);
    ph_html_esc(f, label);
    fputs("</div><div class=\"v\">", f);
    ph_html_esc(f, value);
    fputs("</div>", f);
    if (note != NULL && note[0]) {
        fputs("<div class=\"x\">", f);
        ph_html_esc(f, note);
        fputs("</div>", f);
    }
    fputs("</div>", f);
}

void
ph_html_cards_end(FILE *f)
{
    fputs("</div>\n", f);
}

void
ph_html_table(FILE *f, const char *const *heads, size_t n)
{
    fputs("<table class=\"data\"><thead><tr>", f);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(heads[i]);
        int num = l > 0 && heads[i][l - 1] == '#';
        fputs(num ? "<th class=\"n\">" : "<th>", f);
        ph_html_escn(f, heads[i], num ? l - 1 : l);
        fputs("</th>", f);
    }
    fputs("</tr></thead><tbody>\n", f);
}

void
ph_html_table_end(FILE *f)
{
    fputs("</tbody></table>\n", f);
}

void
ph_html_num(FILE *f, double v, const char *text)
{
    fprintf(f, "<td class=\"n\" data-v=\"%.17g\">", isfinite(v) ? v : 0.0);
    ph_html_esc(f, text);
    fputs("</td>", f);
}

void
ph_html_bar(FILE *f, double frac)
{
    if (!(frac > 0))
        frac = 0;
    if (frac > 1)
        frac = 1;
    fprintf(f, "<td class=\"bar\"><span style=\"width:%.1f%%\"></span></td>", 100 * frac);
}

static void
base64(FILE *f, const unsigned char *s, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i = 0;

    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
        fputc(tab[v >> 18], f);
        fputc(tab[(v >> 12) & 63], f);
        fputc(tab[(v >> 6) & 63], f);
        fputc(tab[v & 63], f);
    }
    if (i < n) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0);
        fputc(tab[v >> 18], f);
        fputc(tab[(v >> 12) & 63], f);
        fputc(i + 1 < n ? tab[(v >> 6) & 63] : '=', f);
        fputc('=', f);
    }
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

/* The flamegraph in a frame of its own (its script runs there, apart from
 * the page's).  Its root's width and height become 100 % and the frame
 * takes the graph's aspect ratio, so the whole graph shows at the card's
 * width, scaled; the renderer's script reads its width from the viewBox.
 * An SVG without both attributes keeps its size, in a frame as tall. */
void
ph_html_flame_frame(FILE *f, const char *svg, size_t len, const char *title)
{
    const char *root = memmem(svg, len < 4096 ? len : 4096, "<svg ", 5);
    const char *rend = root != NULL ? memchr(root, '>', (size_t)(svg + len - root)) : NULL;
    size_t wat = 0, wn = 0, hat = 0, hn = 0;
    double w = -1, h = -1;
    char *copy = NULL;

    if (rend != NULL) {
        w = root_attr(root, rend, "width", &wat, &wn);
        h = root_attr(root, rend, "height", &hat, &hn);
    }
    if (w > 0 && h > 0 && wat < hat && (copy = malloc(len + 8)) != NULL) {
        size_t off = (size_t)(root - svg), k = 0;

        memcpy(copy, svg, off + wat);
        k = off + wat;
        memcpy(copy + k, "100%", 4);
        k += 4;
        memcpy(copy + k, root + wat + wn, hat - wat - wn);
        k += hat - wat - wn;
        memcpy(copy + k, "100%", 4);
        k += 4;
        memcpy(copy + k, root + hat + hn, len - off - hat - hn);
        k += len - off - hat - hn;
        fprintf(f, "<iframe class=\"flame\" style=\"aspect-ratio:%.0f/%.0f\" title=\"", w, h);
        svg = copy;
        len = k;
    } else {
        if (!(h >= 100))
            h = 400;
        if (h > 2400)
            h = 2400;
        fprintf(f, "<iframe class=\"flame\" style=\"height:%.0fpx\" title=\"", h + 24);
    }
    ph_html_esc(f, title);
    fputs("\" src=\"data:image/svg+xml;base64,", f);
    base64(f, (const unsigned char *)svg, len);
    fputs("\"></iframe>\n", f);
    free(copy);
}

void
ph_html_flame_render(FILE *f, const ph_folded *folded, const ph_flame_opts *o, const char *title)
{
    char *svg = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&svg, &len);
    ph_error_t err = NULL;
    int rc;

    if (m == NULL) {
        ph_html_problem(f, "the flamegraph could not be drawn: out of memory");
        return;
    }
    rc = ph_flame_render(folded, o, m, NULL, &err);
    fclose(m);
    if (rc < 0) {
        char msg[700];
        snprintf(msg, sizeof msg, "the flamegraph could not be drawn: %s", err->msg);
        ph_html_problem(f, msg);
        ph_error_free(&err);
    } else {
        ph_html_flame_frame(f, svg, len, title);
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
ph_svg_stacked(FILE *f, const double *x, size_t n, const ph_chart_series *series, size_t ns, const double *lx,
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
    fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">",
            CW, CH);
    for (double v = 0; v <= ymax + ystep / 2; v += ystep) {
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eaecf0\"/>", ML, CW - MR, SY(v),
                SY(v));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>", ML - 6, SY(v) + 4, fy(buf, v));
    }
    for (double v = ceil(x0 / xstep) * xstep; v <= x1 + xstep / 1000; v += xstep)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", SX(v), CH - MB + 16, fx(buf, v));
    if (x_label)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", ML + pw / 2, CH - 6, x_label);
    for (size_t k = 0; k < ns && n > 0; k++) {
        fprintf(f, "<path fill=\"%s\" fill-opacity=\"0.85\" stroke=\"%s\" stroke-width=\"0.6\" d=\"", ph_chart_color(k),
                ph_chart_color(k));
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%.1f %.1f", i ? " L" : "M", SX(x[i]), SY(cum[i] + series[k].y[i]));
        for (size_t i = n; i-- > 0;)
            fprintf(f, " L%.1f %.1f", SX(x[i]), SY(cum[i]));
        fputs("Z\"><title>", f);
        ph_html_esc(f, series[k].name);
        fputs("</title></path>", f);
        for (size_t i = 0; i < n; i++)
            cum[i] += series[k].y[i];
    }
    if (ln > 0) {
        fputs("<polyline fill=\"none\" stroke=\"#1c2230\" stroke-width=\"1.6\" points=\"", f);
        for (size_t i = 0; i < ln; i++)
            fprintf(f, "%s%.1f,%.1f", i ? " " : "", SX(lx[i]), SY(ly[i]));
        fputs("\"><title>", f);
        ph_html_esc(f, line_name ? line_name : "");
        fputs("</title></polyline>", f);
    }
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#98a2b3\"/>", ML, CW - MR, SY(0), SY(0));
    fputs("</svg>\n<ul class=\"legend\">", f);
    for (size_t k = 0; k < ns; k++) {
        fprintf(f, "<li><i style=\"background:%s\"></i><span class=\"mono\">", ph_chart_color(k));
        ph_html_esc(f, series[k].name);
        fputs("</span></li>", f);
    }
    if (ln > 0) {
        fputs("<li><i style=\"background:#1c2230;height:3px\"></i><span>", f);
        ph_html_esc(f, line_name ? line_name : "");
        fputs("</span></li>", f);
    }
    fputs("</ul>\n", f);
#undef SX
#undef SY
    free(cum);
}
