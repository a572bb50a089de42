/* ph_flame.c - folded stacks to an interactive SVG (see ph_flame.h).
 *
 * Design, for speed and memory on large inputs (the benchmark is 75 MB of
 * 200,000 stacks over 3,000 names): no tree.  The input is indexed, not
 * copied (one record per line), the index is sorted so identical prefixes
 * are adjacent (flame charts keep input order instead), and one sweep
 * merges each line with the previous one, keeping only frames wide enough
 * to draw.  A trie of every frame cost 4x the time in cache misses and
 * held millions of nodes that are never drawn.
 * All memory belongs to one render call; nothing is global.
 */
#include "ph_flame.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FRAME_H 16
#define FONT_SIZE 12
#define FONT_W 0.59 /* monospace advance, in em: fixed so labels never need measuring */
#define XPAD 10
#define MAX_DEPTH 4096
#define TOP_PAD (FONT_SIZE * 3)
#define BOTTOM_PAD (FONT_SIZE * 2 + 10)

void
ph_flame_opts_init(ph_flame_opts *o)
{
    memset(o, 0, sizeof *o);
    o->countname = "samples";
    o->palette = "hot";
    o->width = 1200;
    o->minwidth = 0.1;
}

/* ---- arena and tables ------------------------------------------------- */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
} arena_block;

typedef struct name_entry {
    const char *s;
    uint32_t len;
    uint32_t hash;
} name_entry;

/* The name table `diff` uses to merge identical stacks of two files. */
typedef struct flame {
    arena_block *arena;
    name_entry *names;
    size_t n_names, cap_names;
    uint32_t *name_index; /* open addressing over names, size mask+1, 0 = empty else idx+1 */
    size_t name_mask;
} flame;

static void *
arena_alloc(flame *f, size_t n)
{
    arena_block *b = f->arena;

    n = (n + 7) & ~(size_t)7;
    if (b == NULL || b->used + n > b->cap) {
        size_t cap = n > (1u << 20) ? n : (1u << 20);
        arena_block *nb = malloc(sizeof *nb + cap);

        if (nb == NULL)
            return NULL;
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        f->arena = nb;
        b = nb;
    }
    b->used += n;
    return b->data + b->used - n;
}

static uint32_t
hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static int
grow_names(flame *f)
{
    size_t cap = f->name_mask ? (f->name_mask + 1) * 2 : 4096;
    uint32_t *t = calloc(cap, sizeof *t);

    if (t == NULL)
        return -1;
    for (size_t i = 0; i < f->n_names; i++) {
        size_t j = f->names[i].hash & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)i + 1;
    }
    free(f->name_index);
    f->name_index = t;
    f->name_mask = cap - 1;
    return 0;
}

/* Intern S[0..N): the name's index, or -1 on ENOMEM. */
static long
intern(flame *f, const char *s, size_t n)
{
    uint32_t h = hash_bytes(s, n);
    size_t j;

    if ((f->n_names + 1) * 2 > f->name_mask + 1 && grow_names(f) < 0)
        return -1;
    for (j = h & f->name_mask; f->name_index[j]; j = (j + 1) & f->name_mask) {
        name_entry *e = &f->names[f->name_index[j] - 1];
        if (e->hash == h && e->len == n && memcmp(e->s, s, n) == 0)
            return (long)f->name_index[j] - 1;
    }
    if (f->n_names == f->cap_names) {
        size_t cap = f->cap_names ? f->cap_names * 2 : 1024;
        name_entry *ne = realloc(f->names, cap * sizeof *ne);
        if (ne == NULL)
            return -1;
        f->names = ne;
        f->cap_names = cap;
    }
    {
        char *copy = arena_alloc(f, n + 1);
        if (copy == NULL)
            return -1;
        memcpy(copy, s, n);
        copy[n] = '\0';
        f->names[f->n_names] = (name_entry){ copy, (uint32_t)n, h };
    }
    f->name_index[j] = (uint32_t)f->n_names + 1;
    return (long)f->n_names++;
}

static void
flame_free(flame *f)
{
    while (f->arena) {
        arena_block *n = f->arena->next;
        free(f->arena);
        f->arena = n;
    }
    free(f->names);
    free(f->name_index);
}

static int
flame_init(flame *f)
{
    memset(f, 0, sizeof *f);
    return intern(f, "", 0) < 0 ? -1 : 0;
}

/* ---- parsing ---------------------------------------------------------- */

/* Parse a trailing number in [s, *end): moves *end before it.  1 if found. */
static int
trailing_number(const char *s, const char **end, double *out)
{
    const char *e = *end, *p;
    char buf[64];
    char *stop;
    size_t n;

    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    p = e;
    while (p > s && p[-1] != ' ' && p[-1] != '\t')
        p--;
    n = (size_t)(e - p);
    if (n == 0 || n >= sizeof buf)
        return 0;
    memcpy(buf, p, n);
    buf[n] = '\0';
    *out = strtod(buf, &stop);
    if (*stop != '\0' || !isfinite(*out) || *out < 0)
        return 0;
    while (p > s && (p[-1] == ' ' || p[-1] == '\t'))
        p--;
    *end = p;
    return 1;
}

/* One input line: the stack's bytes and its counts (b is the width). */
typedef struct fline {
    const char *s;
    uint32_t len;
    double a, b;
} fline;

/* A frame kept for drawing: wide enough at the requested width. */
typedef struct kept {
    const char *name;
    uint32_t nlen, depth;
    double x, w, before;
} kept;

typedef struct sweep {
    fline *lines;
    size_t n_lines, cap_lines;
    char *reversed;          /* --reverse: the reversed stacks, one buffer */
    size_t rev_len, rev_cap;
    kept *kept;
    size_t n_kept, cap_kept;
    int differential;
} sweep;

static int
add_line(sweep *sw, const char *line, const char *end)
{
    const char *stack_end = end;
    double a, b = 0;
    fline *l;

    if (!trailing_number(line, &stack_end, &a))
        return 1;
    if (trailing_number(line, &stack_end, &b)) {
        double t = a; /* "stack BEFORE AFTER": a was read last */
        a = b;
        b = t;
        sw->differential = 1;
    } else {
        b = a;
    }
    if (stack_end == line)
        return 1;
    if (sw->n_lines == sw->cap_lines) {
        size_t cap = sw->cap_lines ? sw->cap_lines * 2 : 4096;
        fline *nl = realloc(sw->lines, cap * sizeof *nl);
        if (nl == NULL)
            return -1;
        sw->lines = nl;
        sw->cap_lines = cap;
    }
    l = &sw->lines[sw->n_lines++];
    l->s = line;
    l->len = (uint32_t)(stack_end - line);
    l->a = a;
    l->b = b;
    return 0;
}

static int
parse(sweep *sw, const char *buf, size_t len, ph_flame_stats *st)
{
    const char *p = buf, *end = buf + len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        int r;

        st->lines++;
        while (le > p && (le[-1] == '\r' || le[-1] == ' ' || le[-1] == '\t'))
            le--;
        if (le > p && *p != '#') {
            r = add_line(sw, p, le);
            if (r < 0)
                return -1;
            if (r > 0) {
                if (st->bad_lines < sizeof st->bad_line_numbers / sizeof st->bad_line_numbers[0])
                    st->bad_line_numbers[st->bad_lines] = st->lines;
                st->bad_lines++;
            }
        }
        p = nl ? nl + 1 : end;
    }
    st->stacks = sw->n_lines;
    return 0;
}

/* --reverse: copy each stack with its frames in reverse order. */
static int
reverse_lines(sweep *sw)
{
    size_t total = 0, off = 0;

    for (size_t i = 0; i < sw->n_lines; i++)
        total += sw->lines[i].len;
    sw->reversed = malloc(total ? total : 1);
    if (sw->reversed == NULL)
        return -1;
    for (size_t i = 0; i < sw->n_lines; i++) {
        fline *l = &sw->lines[i];
        char *dst = sw->reversed + off;
        size_t o = 0, e = l->len;

        for (size_t k = l->len; k-- > 0;) {
            if (l->s[k] == ';' || k == 0) {
                size_t st = l->s[k] == ';' ? k + 1 : k;
                if (o)
                    dst[o++] = ';';
                memcpy(dst + o, l->s + st, e - st);
                o += e - st;
                e = k;
            }
        }
        l->s = dst;
        off += l->len;
    }
    return 0;
}

static int
cmp_lines(const void *x, const void *y)
{
    const fline *a = x, *b = y;
    uint32_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, n);

    if (c != 0)
        return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

static int
keep(sweep *sw, const char *name, uint32_t nlen, uint32_t depth, double x, double w, double before)
{
    if (sw->n_kept == sw->cap_kept) {
        size_t cap = sw->cap_kept ? sw->cap_kept * 2 : 1024;
        kept *nk = realloc(sw->kept, cap * sizeof *nk);
        if (nk == NULL)
            return -1;
        sw->kept = nk;
        sw->cap_kept = cap;
    }
    sw->kept[sw->n_kept++] = (kept){ name, nlen, depth, x, w, before };
    return 0;
}

/* The merge, as flamegraph.pl does it: over lines in order (sorted, or as
 * given for a flame chart), a frame stays open while consecutive lines
 * share it; when the prefix diverges the deeper frames close and, if wide
 * enough at SCALE, are kept.  No tree is built: memory is the line index
 * plus the frames that will be drawn. */
static int
merge(sweep *sw, double scale, double minwidth)
{
    typedef struct openf {
        const char *name;
        uint32_t nlen;
        double x, before;
    } openf;
    static const char root[] = "all";
    openf *open = malloc((MAX_DEPTH + 2) * sizeof *open);
    const char **pf = malloc((MAX_DEPTH + 1) * sizeof *pf);
    uint32_t *pl = malloc((MAX_DEPTH + 1) * sizeof *pl);
    size_t pd = 0; /* frames of the previous line */
    double x = 0, before_total = 0;
    int rc = -1;

    if (open == NULL || pf == NULL || pl == NULL)
        goto out;
    open[0] = (openf){ root, 3, 0, 0 };
    for (size_t i = 0; i < sw->n_lines; i++) {
        const fline *l = &sw->lines[i];
        const char *p = l->s, *end = l->s + l->len;
        size_t d = 0, shared;
        const char *cf[MAX_DEPTH];
        uint32_t cl[MAX_DEPTH];

        while (p < end && d < MAX_DEPTH) {
            const char *semi = memchr(p, ';', (size_t)(end - p));
            const char *e = semi ? semi : end;
            cf[d] = p;
            cl[d] = (uint32_t)(e - p);
            d++;
            p = semi ? semi + 1 : end;
        }
        for (shared = 0; shared < d && shared < pd; shared++)
            if (cl[shared] != pl[shared] || memcmp(cf[shared], pf[shared], cl[shared]) != 0)
                break;
        /* close the previous line's frames below the shared prefix */
        for (size_t k = pd; k > shared; k--) {
            openf *o = &open[k];
            if ((x - o->x) * scale >= minwidth && keep(sw, o->name, o->nlen, (uint32_t)k, o->x, x - o->x, o->before) < 0)
                goto out;
        }
        for (size_t k = shared; k < d; k++)
            open[k + 1] = (openf){ cf[k], cl[k], x, 0 };
        for (size_t k = 1; k <= d; k++)
            open[k].before += l->a;
        before_total += l->a;
        x += l->b;
        memcpy(pf, cf, d * sizeof *pf);
        memcpy(pl, cl, d * sizeof *pl);
        pd = d;
    }
    for (size_t k = pd; k > 0; k--) {
        openf *o = &open[k];
        if ((x - o->x) * scale >= minwidth && keep(sw, o->name, o->nlen, (uint32_t)k, o->x, x - o->x, o->before) < 0)
            goto out;
    }
    if (keep(sw, root, 3, 0, 0, x, before_total) < 0)
        goto out;
    rc = 0;
out:
    free(open);
    free(pf);
    free(pl);
    return rc;
}

/* ---- output ----------------------------------------------------------- */

static void
xml_escape(FILE *out, const char *s, size_t max)
{
    for (size_t i = 0; s[i] && i < max; i++) {
        switch (s[i]) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            if ((unsigned char)s[i] >= 0x20 || s[i] == '\t')
                fputc(s[i], out);
        }
    }
}

static void
fmt_count(char *buf, size_t len, double v)
{
    if (v == floor(v) && v < 1e15) {
        /* thousands separators, like flamegraph.pl */
        char raw[32];
        size_t n, o = 0;

        snprintf(raw, sizeof raw, "%.0f", v);
        n = strlen(raw);
        for (size_t i = 0; i < n && o + 2 < len; i++) {
            buf[o++] = raw[i];
            if ((n - i - 1) % 3 == 0 && i + 1 < n)
                buf[o++] = ',';
        }
        buf[o] = '\0';
    } else {
        snprintf(buf, len, "%.3f", v);
    }
}

static void
colour(const kept *k, int differential, const char *palette, double maxdelta, char *out, size_t len)
{
    uint32_t h = hash_bytes(k->name, k->nlen);
    double v1 = (double)(h & 0xff) / 255.0, v2 = (double)((h >> 8) & 0xff) / 255.0,
           v3 = (double)((h >> 16) & 0xff) / 255.0;

    if (differential) {
        double d = k->w - k->before;
        int c = maxdelta > 0 ? (int)(210 * (1.0 - fabs(d) / maxdelta)) : 210;

        if (d > 0)
            snprintf(out, len, "rgb(255,%d,%d)", c, c);
        else if (d < 0)
            snprintf(out, len, "rgb(%d,%d,255)", c, c);
        else
            snprintf(out, len, "rgb(250,250,250)");
        return;
    }
    if (strcmp(palette, "mem") == 0)
        snprintf(out, len, "rgb(%d,%d,%d)", 0, (int)(190 + 50 * v2), (int)(210 * v1));
    else if (strcmp(palette, "io") == 0)
        snprintf(out, len, "rgb(%d,%d,%d)", (int)(80 + 60 * v1), (int)(80 + 60 * v1), (int)(190 + 55 * v2));
    else
        snprintf(out, len, "rgb(%d,%d,%d)", (int)(205 + 50 * v3), (int)(230 * v1), (int)(55 * v2));
}

static void
draw(FILE *out, const ph_flame_opts *o, const kept *k, int differential, double total, double scale,
     double maxdelta, int height, const char *countname)
{
    double w = k->w * scale, x = XPAD + k->x * scale, y;
    char fill[48], cnt[48], cnt2[48];
    size_t nch;

    if (o->inverted)
        y = TOP_PAD + (double)k->depth * FRAME_H;
    else
        y = height - BOTTOM_PAD - (double)(k->depth + 1) * FRAME_H;
    colour(k, differential, o->palette ? o->palette : "hot", maxdelta, fill, sizeof fill);
    fmt_count(cnt, sizeof cnt, k->w);
    fputs("<g><title>", out);
    xml_escape(out, k->name, k->nlen);
    if (differential) {
        double d = k->w - k->before;
        fmt_count(cnt2, sizeof cnt2, fabs(d));
        fprintf(out, " (%s %s, %.2f%%; %s%s)", cnt, countname, 100.0 * k->w / total, d >= 0 ? "+" : "-", cnt2);
    } else {
        fprintf(out, " (%s %s, %.2f%%)", cnt, countname, 100.0 * k->w / total);
    }
    fprintf(out, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" rx=\"2\" ry=\"2\"/>", x, y,
            w, FRAME_H - 1, fill);
    nch = w > 6 ? (size_t)((w - 6) / (FONT_SIZE * FONT_W)) : 0;
    fprintf(out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FRAME_H - 5);
    if (nch >= 3) {
        if (k->nlen <= nch) {
            xml_escape(out, k->name, k->nlen);
        } else {
            xml_escape(out, k->name, nch - 2);
            fputs("..", out);
        }
    }
    fputs("</text></g>\n", out);
}

/* The interactive part.  Frames carry their geometry in the rect; zoom
 * rescales x and width from the original values kept in data attributes
 * and refits labels arithmetically from the fixed char width. */
static const char script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "'use strict';\n"
    "var svg, frames, details, matchedtxt, searchbtn, unzoombtn, icbtn, W, PAD=" "10" ", CW, ignorecase=false, currentSearch=null, zoomed=null;\n"
    "function init(){ svg=document.documentElement; W=+svg.getAttribute('width');\n"
    "  CW=+svg.getAttribute('data-charw'); frames=Array.prototype.slice.call(document.querySelectorAll('#frames > g'));\n"
    "  details=document.getElementById('details').firstChild; matchedtxt=document.getElementById('matched');\n"
    "  searchbtn=document.getElementById('search'); unzoombtn=document.getElementById('unzoom'); icbtn=document.getElementById('ignorecase');\n"
    "  frames.forEach(function(g){ var r=g.querySelector('rect'); g.dataset.x=r.getAttribute('x'); g.dataset.w=r.getAttribute('width');\n"
    "    g.dataset.name=g.querySelector('title').textContent.replace(/ \\([^()]*\\)$/,'');\n"
    "    g.addEventListener('click', function(e){ zoom(g); e.stopPropagation(); });\n"
    "    g.addEventListener('mouseover', function(){ details.nodeValue='Function: '+g.querySelector('title').textContent; });\n"
    "    g.addEventListener('mouseout', function(){ details.nodeValue=' '; }); });\n"
    "  searchbtn.addEventListener('click', function(){ if(currentSearch===null) searchPrompt(); else resetSearch(); });\n"
    "  unzoombtn.addEventListener('click', function(){ unzoom(); });\n"
    "  icbtn.addEventListener('click', function(){ toggleCase(); });\n"
    "  window.addEventListener('keydown', function(e){ if((e.ctrlKey&&e.key==='f')||e.key==='F3'){ e.preventDefault(); searchPrompt(); }\n"
    "    else if(e.ctrlKey&&e.key==='i'){ e.preventDefault(); toggleCase(); } else if(e.key==='Escape'){ resetSearch(); } });\n"
    "  var p=new URLSearchParams(document.location.search);\n"
    "  if(p.get('ic')==='1'){ ignorecase=true; icbtn.classList.add('on'); }\n"
    "  if(p.has('x')&&p.has('y')){ var t=frames.filter(function(g){ return g.dataset.x===p.get('x') && g.querySelector('rect').getAttribute('y')===p.get('y'); })[0]; if(t) zoom(t); }\n"
    "  if(p.has('s')) search(p.get('s')); }\n"
    "function updateUrl(){ var p=new URLSearchParams();\n"
    "  if(zoomed){ p.set('x',zoomed.dataset.x); p.set('y',zoomed.querySelector('rect').getAttribute('y')); }\n"
    "  if(currentSearch!==null) p.set('s',currentSearch); if(ignorecase) p.set('ic','1');\n"
    "  var q=p.toString(); try{ history.replaceState(null,'',document.location.pathname+(q?'?'+q:'')); }catch(e){} }\n"
    "function fit(g,x,w){ var r=g.querySelector('rect'), t=g.querySelector('text'); r.setAttribute('x',x.toFixed(1)); r.setAttribute('width',w.toFixed(1));\n"
    "  t.setAttribute('x',(x+3).toFixed(2)); var n=Math.floor((w-6)/CW), name=g.dataset.name;\n"
    "  t.textContent = n<3 ? '' : (name.length<=n ? name : name.substring(0,n-2)+'..'); }\n"
    "function zoom(target){ var tx=+target.dataset.x, tw=+target.dataset.w, ty=+target.querySelector('rect').getAttribute('y');\n"
    "  var inverted=svg.getAttribute('data-inverted')==='1', scale=(W-2*PAD)/tw; zoomed=target; unzoombtn.classList.remove('hide');\n"
    "  frames.forEach(function(g){ var x=+g.dataset.x, w=+g.dataset.w, y=+g.querySelector('rect').getAttribute('y');\n"
    "    var above = inverted ? y<ty : y>ty;\n"
    "    if(above && x<=tx+1e-6 && x+w>=tx+tw-1e-6){ g.classList.add('parent'); g.classList.remove('hide'); fit(g,PAD,W-2*PAD); }\n"
    "    else if(!above && x>=tx-1e-6 && x+w<=tx+tw+1e-6){ g.classList.remove('parent','hide'); fit(g,(x-tx)*scale+PAD,w*scale); }\n"
    "    else { g.classList.add('hide'); g.classList.remove('parent'); } });\n"
    "  if(currentSearch!==null) search(currentSearch); updateUrl(); }\n"
    "function unzoom(){ zoomed=null; unzoombtn.classList.add('hide');\n"
    "  frames.forEach(function(g){ g.classList.remove('parent','hide'); fit(g,+g.dataset.x,+g.dataset.w); });\n"
    "  if(currentSearch!==null) search(currentSearch); updateUrl(); }\n"
    "function toggleCase(){ ignorecase=!ignorecase; icbtn.classList.toggle('on',ignorecase); if(currentSearch!==null) search(currentSearch); updateUrl(); }\n"
    "function searchPrompt(){ var t=prompt('Enter a search term (regexp allowed, eg: ^ext4_)'+(ignorecase?', ignoring case':'')+'\\nPress Ctrl-I to toggle case sensitivity',''); if(t!==null && t!=='') search(t); }\n"
    "function resetSearch(){ currentSearch=null; matchedtxt.classList.add('hide'); searchbtn.classList.remove('show');\n"
    "  frames.forEach(function(g){ var r=g.querySelector('rect'); if(r.dataset.fill){ r.setAttribute('fill',r.dataset.fill); delete r.dataset.fill; } }); updateUrl(); }\n"
    "function search(term){ var re; try{ re=new RegExp(term, ignorecase?'i':''); }catch(e){ return; }\n"
    "  resetSearch(); currentSearch=term; var spans=[], root=+frames[0].dataset.w;\n"
    "  frames.forEach(function(g){ if(g.classList.contains('hide')) return; if(!re.test(g.dataset.name)) return; var r=g.querySelector('rect');\n"
    "    r.dataset.fill=r.getAttribute('fill'); r.setAttribute('fill','rgb(230,0,230)'); spans.push([+g.dataset.x, +g.dataset.x + +g.dataset.w]); });\n"
    "  spans.sort(function(a,b){ return a[0]-b[0] || b[1]-a[1]; }); var sum=0, end=-1;\n"
    "  spans.forEach(function(s){ if(s[0]>=end-1e-9){ sum+=s[1]-s[0]; end=s[1]; } else if(s[1]>end){ sum+=s[1]-end; end=s[1]; } });\n"
    "  var base = zoomed ? +zoomed.dataset.w : root;\n"
    "  matchedtxt.firstChild.nodeValue='Matched: '+(100*sum/base).toFixed(1)+'%'; matchedtxt.classList.remove('hide'); searchbtn.classList.add('show'); updateUrl(); }\n"
    "window.addEventListener('load', init);\n"
    "]]></script>\n";

int
ph_flame_render_folded(const char *folded, size_t len, const ph_flame_opts *opts, FILE *out, ph_flame_stats *stats,
                       ph_error_t *err)
{
    ph_flame_opts defaults;
    ph_flame_stats local;
    sweep sw;
    const char *title, *countname;
    double total, scale, maxdelta = 0;
    uint32_t max_depth = 0;
    int height, rc = -1;

    if (opts == NULL) {
        ph_flame_opts_init(&defaults);
        opts = &defaults;
    }
    if (stats == NULL)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    memset(&sw, 0, sizeof sw);
    if (parse(&sw, folded, len, stats) < 0 || (opts->reverse && reverse_lines(&sw) < 0)) {
        ph_fail(err, ENOMEM, "flamegraph: out of memory");
        goto out;
    }
    total = 0;
    for (size_t i = 0; i < sw.n_lines; i++)
        total += sw.lines[i].b;
    stats->differential = sw.differential;
    stats->total = total;
    if (sw.n_lines == 0 || total <= 0) {
        ph_bad_input(err, "flamegraph: no stack with a positive count in the input (%zu lines, %zu not in the folded format)",
                     stats->lines, stats->bad_lines);
        goto out;
    }
    /* Merging needs identical prefixes adjacent: sort, as flamegraph.pl
     * does, unless the input order is the point (a flame chart). */
    if (!opts->flamechart)
        qsort(sw.lines, sw.n_lines, sizeof *sw.lines, cmp_lines);
    scale = (opts->width - 2 * XPAD) / total;
    if (merge(&sw, scale, opts->minwidth) < 0) {
        ph_fail(err, ENOMEM, "flamegraph: out of memory");
        goto out;
    }
    for (size_t i = 0; i < sw.n_kept; i++) {
        if (sw.kept[i].depth > max_depth)
            max_depth = sw.kept[i].depth;
        if (sw.kept[i].depth > 0 && fabs(sw.kept[i].w - sw.kept[i].before) > maxdelta)
            maxdelta = fabs(sw.kept[i].w - sw.kept[i].before);
    }
    height = (int)((max_depth + 1) * FRAME_H + TOP_PAD + BOTTOM_PAD + (opts->subtitle ? FONT_SIZE * 2 : 0));
    title = opts->title ? opts->title : opts->inverted ? "Icicle Graph" : "Flame Graph";
    countname = opts->countname ? opts->countname : "samples";

    fprintf(out,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\" data-charw=\"%.3f\" data-inverted=\"%d\">\n",
            opts->width, height, opts->width, height, FONT_SIZE * FONT_W, opts->inverted ? 1 : 0);
    fputs("<style>text{font-family:monospace;font-size:12px;fill:rgb(0,0,0)}#title{text-anchor:middle;font-size:17px}"
          "#subtitle{text-anchor:middle;fill:rgb(160,160,160)}#frames>g{cursor:pointer}#frames>g:hover rect{stroke:black;stroke-width:0.5}"
          ".hide{display:none}.parent{opacity:0.5}#search,#ignorecase,#unzoom{cursor:pointer}"
          "#ignorecase.on{fill:rgb(0,0,0);font-weight:bold}</style>\n",
          out);
    fputs(script, out);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%d\" fill=\"rgb(248,248,248)\"/>\n", opts->width, height);
    fprintf(out, "<text id=\"title\" x=\"%.1f\" y=\"24\">", opts->width / 2);
    xml_escape(out, title, (size_t)-1);
    fputs("</text>\n", out);
    if (opts->subtitle) {
        fprintf(out, "<text id=\"subtitle\" x=\"%.1f\" y=\"%d\">", opts->width / 2, 24 + FONT_SIZE + 4);
        xml_escape(out, opts->subtitle, (size_t)-1);
        fputs("</text>\n", out);
    }
    fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", XPAD, height - 17);
    fprintf(out, "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n", XPAD);
    fprintf(out, "<text id=\"search\" x=\"%.0f\" y=\"24\">Search</text>\n", opts->width - XPAD - 100);
    fprintf(out, "<text id=\"ignorecase\" x=\"%.0f\" y=\"24\">ic</text>\n", opts->width - XPAD - 16);
    fprintf(out, "<text id=\"matched\" class=\"hide\" x=\"%.0f\" y=\"%d\"> </text>\n", opts->width - XPAD - 140, height - 17);
    fputs("<g id=\"frames\">\n", out);
    /* Root first, then children in the order they closed (left to right). */
    draw(out, opts, &sw.kept[sw.n_kept - 1], sw.differential, total, scale, maxdelta, height, countname);
    for (size_t i = 0; i + 1 < sw.n_kept; i++)
        draw(out, opts, &sw.kept[i], sw.differential, total, scale, maxdelta, height, countname);
    fputs("</g>\n</svg>\n", out);
    if (fflush(out) != 0 || ferror(out)) {
        ph_fail(err, errno, "flamegraph: write the SVG");
        goto out;
    }
    stats->frames_drawn = sw.n_kept;
    rc = 0;
out:
    free(sw.lines);
    free(sw.reversed);
    free(sw.kept);
    return rc;
}

/* ---- differential input ----------------------------------------------- */

typedef struct diff_entry {
    uint32_t name; /* the whole stack, interned */
    double a, b;
} diff_entry;

static int
diff_add(flame *f, diff_entry **v, size_t *n, size_t *cap, uint32_t **index_of, size_t *index_cap,
         const char *buf, size_t len, int which, double *total)
{
    const char *p = buf, *end = buf + len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end, *se;
        double c;
        long id;

        se = le;
        while (se > p && (se[-1] == '\r'))
            se--;
        if (se > p && *p != '#' && trailing_number(p, &se, &c) && se > p) {
            id = intern(f, p, (size_t)(se - p));
            if (id < 0)
                return -1;
            if ((size_t)id >= *index_cap) {
                size_t nc = (size_t)id * 2 + 1024;
                uint32_t *ni = realloc(*index_of, nc * sizeof *ni);
                if (ni == NULL)
                    return -1;
                memset(ni + *index_cap, 0, (nc - *index_cap) * sizeof *ni);
                *index_of = ni;
                *index_cap = nc;
            }
            if ((*index_of)[id] == 0) {
                if (*n == *cap) {
                    size_t ncap = *cap ? *cap * 2 : 1024;
                    diff_entry *nv = realloc(*v, ncap * sizeof *nv);
                    if (nv == NULL)
                        return -1;
                    *v = nv;
                    *cap = ncap;
                }
                (*v)[*n] = (diff_entry){ (uint32_t)id, 0, 0 };
                (*index_of)[id] = (uint32_t)++*n;
            }
            if (which == 0)
                (*v)[(*index_of)[id] - 1].a += c;
            else
                (*v)[(*index_of)[id] - 1].b += c;
            *total += c;
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

int
ph_flame_diff_folded(const char *a, size_t alen, const char *b, size_t blen, int normalise, FILE *out,
                     ph_error_t *err)
{
    ph_flame_opts o;
    flame f;
    diff_entry *v = NULL;
    uint32_t *index_of = NULL;
    size_t n = 0, cap = 0, index_cap = 0;
    double ta = 0, tb = 0, k = 1;
    int rc = -1;

    ph_flame_opts_init(&o);
    (void)o;
    if (flame_init(&f) < 0)
        goto oom;
    if (diff_add(&f, &v, &n, &cap, &index_of, &index_cap, a, alen, 0, &ta) < 0 ||
        diff_add(&f, &v, &n, &cap, &index_of, &index_cap, b, blen, 1, &tb) < 0)
        goto oom;
    if (normalise && tb > 0)
        k = ta / tb;
    for (size_t i = 0; i < n; i++) {
        double bb = v[i].b * k;
        fprintf(out, "%s %.15g %.15g\n", f.names[v[i].name].s, v[i].a, normalise ? round(bb * 1000) / 1000 : bb);
    }
    if (fflush(out) != 0 || ferror(out))
        ph_fail(err, errno, "diff: write");
    else
        rc = 0;
    goto out;
oom:
    ph_fail(err, ENOMEM, "diff: out of memory");
out:
    flame_free(&f);
    free(v);
    free(index_of);
    return rc;
}
