/* ph_flame.c - folded stacks to an interactive SVG (see ph_flame.h).
 *
 * Design, for speed and memory on large inputs (the benchmark is 75 MB of
 * 200,000 stacks over 3,000 names):
 * - one pass over the input, no copy of it: frame names are interned in an
 *   open-addressing table into an arena, so each distinct name is stored once;
 * - the merged tree is an array of nodes; a second open-addressing table maps
 *   (parent, name) to a child, so merging a frame is one probe, not a scan
 *   (flamechart mode only ever merges with the parent's last child, which
 *   keeps time order);
 * - layout walks the tree once and prunes narrow subtrees before any output
 *   is produced; output goes through one FILE buffer.
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

typedef struct node {
    uint32_t name;        /* index into names */
    uint32_t parent;
    uint32_t first_child, last_child, next_sibling; /* 0 = none (node 0 is the root) */
    double v1, v2;        /* value; v2 is the "after" count of a differential line */
    uint32_t depth;
} node;

typedef struct flame {
    arena_block *arena;
    name_entry *names;
    size_t n_names, cap_names;
    uint32_t *name_index; /* open addressing over names, size mask+1, 0 = empty else idx+1 */
    size_t name_mask;
    node *nodes;
    size_t n_nodes, cap_nodes;
    uint32_t *child_index; /* open addressing: (parent,name) -> node idx+1 */
    size_t child_mask;
    int flamechart, reverse, differential;
    /* The previous line's frames and nodes: consecutive lines usually share
     * a long prefix, which then costs one memcmp per frame, no lookups. */
    char *prev;
    size_t prev_len, prev_cap, prev_depth;
    uint32_t *prev_off, *prev_flen, *prev_node;
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

static uint32_t
child_hash(uint32_t parent, uint32_t name)
{
    uint64_t k = ((uint64_t)parent << 32) | name;

    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (uint32_t)k;
}

static int
grow_children(flame *f)
{
    size_t cap = f->child_mask ? (f->child_mask + 1) * 2 : 8192;
    uint32_t *t = calloc(cap, sizeof *t);

    if (t == NULL)
        return -1;
    for (size_t i = 1; i < f->n_nodes; i++) {
        size_t j = child_hash(f->nodes[i].parent, f->nodes[i].name) & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)i + 1;
    }
    free(f->child_index);
    f->child_index = t;
    f->child_mask = cap - 1;
    return 0;
}

/* The child NAME of PARENT, created when missing; 0 on ENOMEM. */
static uint32_t
child(flame *f, uint32_t parent, uint32_t name)
{
    size_t j = 0;
    node *n;

    if (f->flamechart) {
        uint32_t last = f->nodes[parent].last_child;
        if (last && f->nodes[last].name == name)
            return last;
    } else {
        if ((f->n_nodes + 1) * 2 > f->child_mask + 1 && grow_children(f) < 0)
            return 0;
        for (j = child_hash(parent, name) & f->child_mask; f->child_index[j]; j = (j + 1) & f->child_mask) {
            node *c = &f->nodes[f->child_index[j] - 1];
            if (c->parent == parent && c->name == name)
                return f->child_index[j] - 1;
        }
    }
    if (f->n_nodes == f->cap_nodes) {
        size_t cap = f->cap_nodes * 2;
        node *nn = realloc(f->nodes, cap * sizeof *nn);
        if (nn == NULL)
            return 0;
        f->nodes = nn;
        f->cap_nodes = cap;
    }
    n = &f->nodes[f->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = name;
    n->parent = parent;
    n->depth = f->nodes[parent].depth + 1;
    if (f->nodes[parent].last_child)
        f->nodes[f->nodes[parent].last_child].next_sibling = (uint32_t)f->n_nodes;
    else
        f->nodes[parent].first_child = (uint32_t)f->n_nodes;
    f->nodes[parent].last_child = (uint32_t)f->n_nodes;
    if (!f->flamechart)
        f->child_index[j] = (uint32_t)f->n_nodes + 1;
    return (uint32_t)f->n_nodes++;
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
    free(f->nodes);
    free(f->child_index);
    free(f->prev);
    free(f->prev_off);
    free(f->prev_flen);
    free(f->prev_node);
}

static int
flame_init(flame *f, const ph_flame_opts *o)
{
    memset(f, 0, sizeof *f);
    f->flamechart = o->flamechart;
    f->reverse = o->reverse;
    f->cap_nodes = 4096;
    f->nodes = calloc(f->cap_nodes, sizeof *f->nodes);
    f->prev_off = calloc(MAX_DEPTH, sizeof *f->prev_off);
    f->prev_flen = calloc(MAX_DEPTH, sizeof *f->prev_flen);
    f->prev_node = calloc(MAX_DEPTH, sizeof *f->prev_node);
    if (f->nodes == NULL || f->prev_off == NULL || f->prev_flen == NULL || f->prev_node == NULL ||
        intern(f, "all", 3) < 0)
        return -1;
    f->n_nodes = 1; /* the root, "all" */
    return 0;
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

static int
add_line(flame *f, const char *line, const char *end, ph_flame_stats *st, ph_error_t *err)
{
    const char *stack_end = end;
    double a, b = 0;
    int two;
    uint32_t path[MAX_DEPTH];
    const char *starts[MAX_DEPTH];
    size_t lens[MAX_DEPTH];
    size_t depth = 0, same = 0;
    uint32_t cur = 0;

    if (!trailing_number(line, &stack_end, &a))
        return 1;
    two = trailing_number(line, &stack_end, &b);
    if (two) {
        double t = a; /* "stack BEFORE AFTER": a was read last */
        a = b;
        b = t;
        f->differential = 1;
    } else {
        b = a;
    }
    if (stack_end == line)
        return 1;
    for (const char *p = line; p < stack_end && depth < MAX_DEPTH;) {
        const char *semi = memchr(p, ';', (size_t)(stack_end - p));
        const char *e = semi ? semi : stack_end;

        starts[depth] = p;
        lens[depth] = (size_t)(e - p);
        depth++;
        p = semi ? semi + 1 : stack_end;
    }
    if (!f->reverse) {
        while (same < depth && same < f->prev_depth && lens[same] == f->prev_flen[same] &&
               memcmp(starts[same], f->prev + f->prev_off[same], lens[same]) == 0)
            same++;
    }
    for (size_t i = same; i < depth; i++) {
        size_t k = f->reverse ? depth - 1 - i : i;
        long nm = intern(f, starts[k], lens[k]);

        if (nm < 0)
            return ph_fail(err, ENOMEM, "flamegraph: out of memory");
        path[i] = (uint32_t)nm;
    }
    f->nodes[0].v1 += a;
    f->nodes[0].v2 += b;
    for (size_t i = 0; i < depth; i++) {
        cur = i < same ? f->prev_node[i] : child(f, cur, path[i]);
        if (cur == 0)
            return ph_fail(err, ENOMEM, "flamegraph: out of memory");
        f->nodes[cur].v1 += a;
        f->nodes[cur].v2 += b;
        f->prev_node[i] = cur;
    }
    if (!f->reverse) {
        size_t n = (size_t)(stack_end - line);

        if (n > f->prev_cap) {
            char *np = realloc(f->prev, n * 2);
            if (np == NULL)
                return ph_fail(err, ENOMEM, "flamegraph: out of memory");
            f->prev = np;
            f->prev_cap = n * 2;
        }
        memcpy(f->prev, line, n);
        for (size_t i = 0; i < depth; i++) {
            f->prev_off[i] = (uint32_t)(starts[i] - line);
            f->prev_flen[i] = (uint32_t)lens[i];
        }
        f->prev_depth = depth;
    }
    st->stacks++;
    return 0;
}

static int
parse(flame *f, const char *buf, size_t len, ph_flame_stats *st, ph_error_t *err)
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
            r = add_line(f, p, le, st, err);
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
    return 0;
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
colour(const flame *f, const node *n, const char *palette, double maxdelta, char *out, size_t len)
{
    const name_entry *nm = &f->names[n->name];
    uint32_t h = nm->hash;
    double v1 = (double)(h & 0xff) / 255.0, v2 = (double)((h >> 8) & 0xff) / 255.0,
           v3 = (double)((h >> 16) & 0xff) / 255.0;

    if (f->differential) {
        double d = n->v2 - n->v1;
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

typedef struct layout {
    const ph_flame_opts *o;
    const flame *f;
    FILE *out;
    double total, scale, maxdelta;
    uint32_t max_depth;
    size_t drawn;
    int height;
    const char *countname;
} layout;

static int
cmp_child_names_cb(const void *a, const void *b, void *ud)
{
    const flame *f = ud;
    const node *x = &f->nodes[*(const uint32_t *)a], *y = &f->nodes[*(const uint32_t *)b];

    return strcmp(f->names[x->name].s, f->names[y->name].s);
}

/* Visit children of N in drawing order (alphabetical unless flamechart). */
static uint32_t *
ordered_children(const flame *f, uint32_t n, size_t *count)
{
    size_t k = 0;
    uint32_t *v;

    for (uint32_t c = f->nodes[n].first_child; c; c = f->nodes[c].next_sibling)
        k++;
    *count = k;
    if (k == 0)
        return NULL;
    v = malloc(k * sizeof *v);
    if (v == NULL)
        return NULL;
    k = 0;
    for (uint32_t c = f->nodes[n].first_child; c; c = f->nodes[c].next_sibling)
        v[k++] = c;
    if (!f->flamechart)
        qsort_r(v, k, sizeof *v, cmp_child_names_cb, (void *)f);
    return v;
}

static double
width_of(const flame *f, const node *n)
{
    return f->differential ? n->v2 : n->v1;
}

/* Pass 1: depth of what will be drawn, and the largest delta. */
static void
measure(layout *L, uint32_t n)
{
    const node *nd = &L->f->nodes[n];

    if (width_of(L->f, nd) * L->scale < L->o->minwidth)
        return;
    if (nd->depth > L->max_depth)
        L->max_depth = nd->depth;
    if (fabs(nd->v2 - nd->v1) > L->maxdelta && n != 0)
        L->maxdelta = fabs(nd->v2 - nd->v1);
    for (uint32_t c = nd->first_child; c; c = L->f->nodes[c].next_sibling)
        measure(L, c);
}

static int
draw(layout *L, uint32_t n, double x)
{
    const flame *f = L->f;
    const node *nd = &f->nodes[n];
    double w = width_of(f, nd) * L->scale, y;
    char fill[48], cnt[48], cnt2[48];
    const char *name = f->names[nd->name].s;
    size_t nch, nkids;
    uint32_t *kids;
    double cx = x;
    int rc = 0;

    if (w < L->o->minwidth)
        return 0;
    if (L->o->inverted)
        y = TOP_PAD + (double)nd->depth * FRAME_H;
    else
        y = L->height - BOTTOM_PAD - (double)(nd->depth + 1) * FRAME_H;
    colour(f, nd, L->o->palette ? L->o->palette : "hot", L->maxdelta, fill, sizeof fill);
    fmt_count(cnt, sizeof cnt, width_of(f, nd));
    fputs("<g><title>", L->out);
    xml_escape(L->out, name, (size_t)-1);
    if (f->differential) {
        double d = nd->v2 - nd->v1;
        fmt_count(cnt2, sizeof cnt2, fabs(d));
        fprintf(L->out, " (%s %s, %.2f%%; %s%s)", cnt, L->countname, 100.0 * width_of(f, nd) / L->total,
                d >= 0 ? "+" : "-", cnt2);
    } else {
        fprintf(L->out, " (%s %s, %.2f%%)", cnt, L->countname, 100.0 * width_of(f, nd) / L->total);
    }
    fprintf(L->out, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" rx=\"2\" ry=\"2\"/>",
            x, y, w, FRAME_H - 1, fill);
    nch = (size_t)((w - 6) / (FONT_SIZE * FONT_W));
    fprintf(L->out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FRAME_H - 5);
    if (nch >= 3) {
        size_t len = strlen(name);
        if (len <= nch) {
            xml_escape(L->out, name, len);
        } else {
            xml_escape(L->out, name, nch - 2);
            fputs("..", L->out);
        }
    }
    fputs("</text></g>\n", L->out);
    L->drawn++;
    kids = ordered_children(f, n, &nkids);
    if (nkids > 0 && kids == NULL)
        return -1;
    for (size_t i = 0; i < nkids && rc == 0; i++) {
        rc = draw(L, kids[i], cx);
        cx += width_of(f, &f->nodes[kids[i]]) * L->scale;
    }
    free(kids);
    return rc;
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
    flame f;
    layout L;
    const char *title;
    int rc = -1;

    if (opts == NULL) {
        ph_flame_opts_init(&defaults);
        opts = &defaults;
    }
    if (stats == NULL)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    if (flame_init(&f, opts) < 0) {
        flame_free(&f);
        return ph_fail(err, ENOMEM, "flamegraph: out of memory");
    }
    if (parse(&f, folded, len, stats, err) < 0)
        goto out;
    stats->differential = f.differential;
    stats->total = width_of(&f, &f.nodes[0]);
    if (stats->stacks == 0 || stats->total <= 0) {
        ph_bad_input(err, "flamegraph: no stack with a positive count in the input (%zu lines, %zu not in the folded format)",
                     stats->lines, stats->bad_lines);
        goto out;
    }
    memset(&L, 0, sizeof L);
    L.o = opts;
    L.f = &f;
    L.out = out;
    L.total = stats->total;
    L.countname = opts->countname ? opts->countname : "samples";
    L.scale = (opts->width - 2 * XPAD) / L.total;
    measure(&L, 0);
    L.height = (int)((L.max_depth + 1) * FRAME_H + TOP_PAD + BOTTOM_PAD + (opts->subtitle ? FONT_SIZE * 2 : 0));
    title = opts->title ? opts->title : opts->inverted ? "Icicle Graph" : "Flame Graph";

    fprintf(out,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n"
            "<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\" data-charw=\"%.3f\" data-inverted=\"%d\">\n",
            opts->width, L.height, opts->width, L.height, FONT_SIZE * FONT_W, opts->inverted ? 1 : 0);
    fputs("<style>text{font-family:monospace;font-size:" "12" "px;fill:rgb(0,0,0)}#title{text-anchor:middle;font-size:17px}"
          "#subtitle{text-anchor:middle;fill:rgb(160,160,160)}#frames>g{cursor:pointer}#frames>g:hover rect{stroke:black;stroke-width:0.5}"
          ".hide{display:none}.parent{opacity:0.5}#search,#ignorecase,#unzoom{cursor:pointer}#search.show{opacity:1}"
          "#ignorecase.on{fill:rgb(0,0,0);font-weight:bold}</style>\n",
          out);
    fputs(script, out);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%d\" fill=\"rgb(248,248,248)\"/>\n", opts->width, L.height);
    fprintf(out, "<text id=\"title\" x=\"%.1f\" y=\"24\">", opts->width / 2);
    xml_escape(out, title, (size_t)-1);
    fputs("</text>\n", out);
    if (opts->subtitle) {
        fprintf(out, "<text id=\"subtitle\" x=\"%.1f\" y=\"%d\">", opts->width / 2, 24 + FONT_SIZE + 4);
        xml_escape(out, opts->subtitle, (size_t)-1);
        fputs("</text>\n", out);
    }
    fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", XPAD, L.height - 17);
    fprintf(out, "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n", XPAD);
    fprintf(out, "<text id=\"search\" x=\"%.0f\" y=\"24\">Search</text>\n", opts->width - XPAD - 100);
    fprintf(out, "<text id=\"ignorecase\" x=\"%.0f\" y=\"24\">ic</text>\n", opts->width - XPAD - 16);
    fprintf(out, "<text id=\"matched\" class=\"hide\" x=\"%.0f\" y=\"%d\"> </text>\n", opts->width - XPAD - 140, L.height - 17);
    fputs("<g id=\"frames\">\n", out);
    if (opts->subtitle && opts->inverted)
        L.height += 0; /* the subtitle sits above TOP_PAD's frames either way */
    if (draw(&L, 0, XPAD) < 0) {
        ph_fail(err, ENOMEM, "flamegraph: out of memory");
        goto out;
    }
    fputs("</g>\n</svg>\n", out);
    if (fflush(out) != 0 || ferror(out)) {
        ph_fail(err, errno, "flamegraph: write the SVG");
        goto out;
    }
    stats->frames_drawn = L.drawn;
    rc = 0;
out:
    flame_free(&f);
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
    if (flame_init(&f, &o) < 0)
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
