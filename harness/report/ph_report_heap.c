/* ph_report_heap.c - the heap sampler's section (profiles/heap.yaml,
 * artifacts of kind "heap"): the newest folded file of each view read
 * (inuse_space, inuse_objects, peak_inuse_space, peak_inuse_objects,
 * alloc_space, alloc_objects: cumulative, so the newest has everything),
 * the figures (in use at the peak and at the end, allocated), the top
 * allocation sites and the graphs of what was in use at the peak, at the
 * end and of what was allocated, drawn here from the stacks.
 *
 * Growth (a leak shows as what only grows): the in-use bytes of the
 * newest snapshot minus those of the first one the same process wrote
 * (the first interval snapshot, PH_SAMPLER_INTERVAL after it started, or
 * the first `collect`), per stack, positive only (ph_report_growth.c).
 * The first, not zero: what a service builds at start and keeps is its
 * working set, not growth.  Written beside the report as
 * report-inuse_space_growth.folded and .svg; none when the process
 * wrote one snapshot only.
 *
 * A site is the innermost Python function of a stack that has one, else
 * the innermost frame that is not the allocator's (malloc and its
 * family, operator new, a Java object's class): the function that asked. */
#include "ph_report_int.h"
#include "ph_langview.h"

#include <stdlib.h>
#include <string.h>

#include "ph_intern.h"
#include "ph_lines.h"

#include "ph_markup_only.h"

#define TOP_SITES 15

static const char *const view_names[PH_HEAP_VIEWS] = {
    [PH_HEAP_INUSE_SPACE] = "inuse_space",     [PH_HEAP_INUSE_OBJECTS] = "inuse_objects",
    [PH_HEAP_PEAK_SPACE] = "peak_inuse_space", [PH_HEAP_PEAK_OBJECTS] = "peak_inuse_objects",
    [PH_HEAP_ALLOC_SPACE] = "alloc_space",     [PH_HEAP_ALLOC_OBJECTS] = "alloc_objects",
};

static int
chunk_cb(void *ctx, const char *buf, size_t len, ph_error_t *err)
{
    return ph_folded_feed(ctx, buf, len, err);
}

/* What follows a snapshot's stamp in NAME (`inuse_space-<UTC><tag>-<n>.folded`):
 * <tag>, the process, as a length into *TAG. */
static size_t
snapshot_tag(const char *name, const char **tag)
{
    size_t pre = strlen(view_names[PH_HEAP_INUSE_SPACE]) + 1 + 16; /* "inuse_space-" + YYYYMMDDTHHMMSSZ */
    const char *dash = strrchr(name, '-');

    if (strlen(name) < pre || dash == NULL || dash < name + pre) {
        *tag = name;
        return 0;
    }
    *tag = name + pre;
    return (size_t)(dash - *tag);
}

/* The growth from the first in-use snapshot of the newest one's process
 * to the newest (A: the N heap artifacts, in name order: oldest first). */
static void
read_growth(ph_rundata *rd, const ph_artifact *const *a, size_t n)
{
    const ph_artifact *last = rd->heap.art[PH_HEAP_INUSE_SPACE], *first = NULL;
    const char *want, *tag;
    size_t want_len, len = strlen(view_names[PH_HEAP_INUSE_SPACE]);
    ph_folded *base = NULL;
    ph_error_t err = NULL;

    if (last == NULL || rd->heap.view[PH_HEAP_INUSE_SPACE] == NULL)
        return;
    want_len = snapshot_tag(last->name, &want);
    for (size_t i = 0; i < n && first == NULL; i++)
        if (strncmp(a[i]->name, view_names[PH_HEAP_INUSE_SPACE], len) == 0 && a[i]->name[len] == '-' &&
            snapshot_tag(a[i]->name, &tag) == want_len && strncmp(tag, want, want_len) == 0)
            first = a[i];
    if (first == NULL || first == last)
        return;
    if ((base = ph_folded_new(0, &err)) == NULL || ph_read_file_chunks(first->path, chunk_cb, base, NULL, &err) < 0 ||
        ph_folded_finish(base, &err) < 0 ||
        ph_heap_growth(base, rd->heap.view[PH_HEAP_INUSE_SPACE], &rd->heap.growth, &err) < 0) {
        ph_rundata_problem(rd, "%s: %s (no growth shown)", first->name, err ? err->msg : "cannot be read");
        ph_error_free(&err);
    } else {
        rd->heap.growth_from = first;
        rd->heap.growth_base = base;
        base = NULL;
    }
    ph_folded_free(base);
}

#define HEAPINFO_MAX (64u * 1024u)

/* The runtimes each process's newest heap-*.json names, each runtime
 * once (the last said wins: newer, or a later process). */
static void
read_runtimes(ph_rundata *rd)
{
    const ph_artifact *a[PH_RD_MAX_ARTIFACTS];
    size_t n = ph_rundata_files(rd, "heapinfo", a, PH_RD_MAX_ARTIFACTS);
    json_t *all = NULL;

    for (size_t i = 0; i < n; i++) {
        char problem[PATH_MAX + 512];
        json_t *j = ph_report_load_json(rd->dir, a[i]->name, HEAPINFO_MAX, problem, sizeof problem), *rts, *rt;
        size_t k;

        if (j == NULL) {
            if (problem[0])
                ph_rundata_problem(rd, "%s (what it says of the runtimes is not shown)", problem);
            continue;
        }
        rts = json_object_get(j, "runtimes");
        if (all == NULL && (all = json_object()) == NULL) {
            json_decref(j);
            return;
        }
        json_array_foreach(rts, k, rt) {
            const char *name = json_string_value(json_object_get(rt, "runtime"));

            if (name != NULL && json_is_string(json_object_get(rt, "note")) &&
                json_is_string(json_object_get(rt, "brief")))
                json_object_set(all, name, rt);
        }
        json_decref(j);
    }
    if (all != NULL && json_object_size(all) > 0) {
        const char *key;
        json_t *v;

        rd->heap.runtimes = json_array();
        json_object_foreach(all, key, v)
            json_array_append(rd->heap.runtimes, v);
    }
    json_decref(all);
}

#define V8HEAP_MAX (64u * 1024u * 1024u)

/* A node said its V8 heap is sampled (heap-*.json's runtimes RTS). */
static int
node_sampled(const json_t *rts)
{
    size_t i;
    const json_t *rt;

    json_array_foreach(rts, i, rt) {
        const char *name = json_string_value(json_object_get(rt, "runtime"));

        if (name != NULL && strcmp(name, "node") == 0 && json_is_true(json_object_get(rt, "objects")))
            return 1;
    }
    return 0;
}

/* V8's objects: every process's *.heapprofile (the mode's preload in
 * node writes one at each process's exit), their stacks summed into one
 * view. */
static void
read_v8(ph_rundata *rd)
{
    const ph_artifact *a[PH_RD_MAX_ARTIFACTS];
    size_t n = ph_rundata_files(rd, "v8heap", a, PH_RD_MAX_ARTIFACTS);
    ph_heapdata *h = &rd->heap;
    ph_error_t err = NULL;

    for (size_t i = 0; i < n; i++) {
        char problem[PATH_MAX + 512];
        json_t *j = ph_report_load_json(rd->dir, a[i]->name, V8HEAP_MAX, problem, sizeof problem);
        ph_v8heap_info info;

        if (j == NULL) {
            if (problem[0])
                ph_rundata_problem(rd, "%s (its JavaScript objects are not shown)", problem);
            continue;
        }
        if (h->v8 == NULL && (h->v8 = ph_folded_new(0, &err)) == NULL) {
            json_decref(j);
            break;
        }
        if (ph_v8heap_fold(j, h->v8, &info, &err) < 0) {
            ph_rundata_problem(rd, "%s: %s (its JavaScript objects are not shown)", a[i]->name, err->msg);
            ph_error_free(&err);
        } else {
            h->v8_info.bytes += info.bytes;
            h->v8_info.samples += info.samples;
            h->v8_info.nodes += info.nodes;
            h->v8_info.cut += info.cut;
            h->v8_files++;
            if (info.cut > 0)
                ph_rundata_problem(rd, "%s: %zu call-tree nodes deeper than %d frames: what they hold below is not "
                                   "shown", a[i]->name, info.cut, PH_V8HEAP_MAX_DEPTH - 1);
        }
        json_decref(j);
    }
    if (err != NULL) {
        ph_rundata_problem(rd, "V8's heap profiles: %s", err->msg);
        ph_error_free(&err);
    }
    if (h->v8 != NULL && ph_folded_finish(h->v8, &err) < 0) {
        ph_rundata_problem(rd, "V8's heap profiles: %s", err->msg);
        ph_error_free(&err);
        ph_folded_free(h->v8);
        h->v8 = NULL;
    }
    if (h->v8 != NULL && h->v8_files == 0) {
        ph_folded_free(h->v8);
        h->v8 = NULL;
    }
    if (h->v8 == NULL && n == 0 && node_sampled(h->runtimes))
        ph_rundata_problem(rd, "node sampled its V8 heap but wrote no heap profile: it writes one as it exits, and a "
                           "node killed (SIGKILL, the stop's escalation) or whose *.heapprofile was not collected "
                           "writes none; its JavaScript objects are not shown");
}

void
ph_rundata_read_heap(ph_rundata *rd)
{
    const ph_artifact *a[PH_RD_MAX_ARTIFACTS];
    size_t n = ph_rundata_files(rd, "heap", a, PH_RD_MAX_ARTIFACTS);

    if (n == 0)
        return;
    rd->has_heap = 1;
    for (int v = 0; v < PH_HEAP_VIEWS; v++) {
        size_t len = strlen(view_names[v]);
        ph_error_t err = NULL;
        ph_folded *fo;

        /* files are in name order: the last of a view is the newest */
        for (size_t i = 0; i < n; i++)
            if (strncmp(a[i]->name, view_names[v], len) == 0 && a[i]->name[len] == '-')
                rd->heap.art[v] = a[i];
        if (rd->heap.art[v] == NULL) {
            ph_rundata_problem(rd, "no %s-*.folded in the run: that view of the heap cannot be shown", view_names[v]);
            continue;
        }
        if ((fo = ph_folded_new(0, &err)) == NULL ||
            ph_read_file_chunks(rd->heap.art[v]->path, chunk_cb, fo, NULL, &err) < 0 || ph_folded_finish(fo, &err) < 0) {
            ph_rundata_problem(rd, "%s: %s", rd->heap.art[v]->name, err ? err->msg : "cannot be read");
            ph_error_free(&err);
            ph_folded_free(fo);
            continue;
        }
        rd->heap.view[v] = fo;
    }
    read_growth(rd, a, n);
    read_runtimes(rd);
    read_v8(rd);
}

void
ph_heapdata_free(ph_heapdata *h)
{
    for (int v = 0; v < PH_HEAP_VIEWS; v++)
        ph_folded_free(h->view[v]);
    ph_folded_free(h->growth);
    ph_folded_free(h->growth_base);
    ph_folded_free(h->v8);
    json_decref(h->runtimes);
    memset(h, 0, sizeof *h);
}

int
ph_heap_java_class(const char *name)
{
    size_t n = strlen(name);

    return strncmp(name, "new ", 4) == 0 && n > 8 && strcmp(name + n - 4, "_[j]") == 0;
}

int
ph_heap_is_allocator(const char *name)
{
    static const char *const names[] = { "malloc",  "calloc",   "realloc",        "reallocarray", "posix_memalign",
                                         "aligned_alloc", "memalign", "valloc", "pvalloc", "strdup", "strndup" };

    if (strncmp(name, "operator new", 12) == 0 || strncmp(name, "__libc_", 7) == 0)
        return 1;
    if (ph_heap_java_class(name))
        return 1; /* the object a Java method made: its site is the method */
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return 0;
}

/* Each stack's site (a name id of FO): its innermost frame not the
 * allocator's, or its leaf when all are. */
static uint32_t
site_of(const ph_folded *fo, ph_folded_stack s)
{
    /* a Python object's: the innermost Python function (the interpreter's
     * frames under it run it) */
    for (uint32_t d = s.depth; d-- > 0;) {
        const char *name = ph_folded_name(fo, s.frames[d], NULL);
        size_t n = strlen(name);

        if (n > 4 && strcmp(name + n - 4, "_[p]") == 0)
            return s.frames[d];
    }
    for (uint32_t d = s.depth; d-- > 0;)
        if (!ph_heap_is_allocator(ph_folded_name(fo, s.frames[d], NULL)))
            return s.frames[d];
    return s.frames[s.depth - 1];
}

/* Each Java object's class (its leaf, `new C_[j]`); UINT32_MAX for a
 * stack that is not one. */
static uint32_t
class_of(const ph_folded *fo, ph_folded_stack s)
{
    uint32_t leaf = s.frames[s.depth - 1];

    return ph_heap_java_class(ph_folded_name(fo, leaf, NULL)) ? leaf : UINT32_MAX;
}

/* Does NAME end in the language mark SUFFIX (`_[j]`, `_[p]`)? */
static int
marked(const char *name, const char *suffix)
{
    size_t n = strlen(name);

    return n > 4 && strcmp(name + n - 4, suffix) == 0;
}

/* NAME as a headline shows it: a language frame by its name in the
 * language view (`keep_three (heap_two.py)`, `HeapTwo.keepBytes`: no line,
 * no mark), cut whole (ph_fmt_name); a native one as it is. */
static const char *
headline_name(const char *name, char *buf, size_t cap)
{
    char lang[PH_HEADLINE_NAME + 64];

    if (ph_langview_frame(name, strlen(name), lang, sizeof lang) != PH_LANG_NONE)
        name = lang;
    return ph_fmt_name(buf, cap, name, PH_HEADLINE_NAME);
}

/* The bytes at the peak of the stacks whose site is a function of the
 * language SUFFIX marks: the program's own objects (a JVM's, CPython's). */
static double
lang_peak(const ph_heapdata *h, const char *suffix)
{
    const ph_folded *fo = h->view[PH_HEAP_PEAK_SPACE];
    double sum = 0;

    for (size_t i = 0; fo != NULL && i < ph_folded_n_stacks(fo); i++) {
        ph_folded_stack s = ph_folded_get_stack(fo, i);

        if (marked(ph_folded_name(fo, site_of(fo, s), NULL), suffix))
            sum += s.count;
    }
    return sum;
}

/* A site's bytes in one view, by name (the views are separate files, so
 * separate name tables). */
enum { S_PEAK, S_END, S_ALLOC, S_GROWN, S_VIEWS };
typedef struct site {
    const char *name;
    double v[S_VIEWS];      /* at the peak, at the end, allocated, grown */
} site;

static int
cmp_site(const void *x, const void *y)
{
    const site *a = x, *b = y;

    if (a->v[0] != b->v[0])
        return a->v[0] < b->v[0] ? 1 : -1;
    if (a->v[2] != b->v[2])
        return a->v[2] < b->v[2] ? 1 : -1;
    return strcmp(a->name, b->name);
}

/* Sites over the byte views and the growth, sorted by their bytes at the
 * peak; their names kept in NAMES. */
static site *
sites(const ph_heapdata *h, ph_intern *names, uint32_t (*key_of)(const ph_folded *, ph_folded_stack), size_t *n_out)
{
    const ph_folded *views[S_VIEWS] = { h->view[PH_HEAP_PEAK_SPACE], h->view[PH_HEAP_INUSE_SPACE],
                                        h->view[PH_HEAP_ALLOC_SPACE], h->growth };
    site *out = NULL;
    size_t n = 0, cap = 0;

    for (int k = 0; k < S_VIEWS; k++) {
        const ph_folded *fo = views[k];

        for (size_t i = 0; fo != NULL && i < ph_folded_n_stacks(fo); i++) {
            ph_folded_stack s = ph_folded_get_stack(fo, i);
            uint32_t key = key_of(fo, s);
            const char *name;
            int64_t id;

            if (key == UINT32_MAX)
                continue;
            name = ph_folded_name(fo, key, NULL);
            id = ph_intern_add(names, name, strlen(name));

            if (id < 0)
                goto fail;
            if ((size_t)id >= n) {
                if ((size_t)id >= cap) {
                    size_t nc = cap ? cap * 2 : 64;
                    site *ns;
                    while (nc <= (size_t)id)
                        nc *= 2;
                    if ((ns = realloc(out, nc * sizeof *ns)) == NULL)
                        goto fail;
                    out = ns;
                    cap = nc;
                }
                for (; n <= (size_t)id; n++)
                    out[n] = (site){ NULL, { 0 } };
            }
            out[id].name = ph_intern_get(names, (uint32_t)id);
            out[id].v[k] += s.count;
        }
    }
    if (n > 1)
        qsort(out, n, sizeof *out, cmp_site);
    *n_out = n;
    return out;
fail:
    free(out);
    return NULL;
}

static double
total_of(const ph_folded *fo)
{
    return fo ? ph_folded_get_stats(fo)->total : 0;
}

/* The flamegraph of FO under TITLE; the SVG drawn kept in *KEPT when
 * KEPT is not NULL. */
static void
graph(ph_rctx *c, const ph_folded *fo, const char *countname, const char *title, char **kept, size_t *kept_len)
{
    char t[400];
    ph_flame_opts o;

    if (fo == NULL || ph_folded_n_stacks(fo) == 0)
        return;
    ph_flame_opts_init(&o);
    snprintf(t, sizeof t, "%s (%s, run %s): %s", c->rd->service, c->rd->mode, c->rd->name, title);
    o.title = t;
    o.countname = countname;
    o.palette = "mem";
    PH_MW_FMT(c->html, "<h3>%s</h3>\n", title);
    ph_html_flame_render_kept(c->html, fo, &o, t, kept, kept_len);
}

/* The sites that grew, most first (at most TOP_GROWING), into G; how many. */
#define TOP_GROWING 5
static size_t
growing(const site *all, size_t n, const site **g)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        size_t j;

        if (!(all[i].v[S_GROWN] > 0))
            continue;
        /* insertion from the end; the least falls off when G is full */
        j = k < TOP_GROWING ? k++ : TOP_GROWING;
        while (j > 0 && g[j - 1]->v[S_GROWN] < all[i].v[S_GROWN]) {
            if (j < TOP_GROWING)
                g[j] = g[j - 1];
            j--;
        }
        if (j < TOP_GROWING)
            g[j] = &all[i];
    }
    return k;
}

/* The growth part of the section: figures, the sites that grew, the graph;
 * into JS and the headline. */
static void
report_growth(ph_rctx *c, const site *top, size_t ns, json_t *js)
{
    ph_mw *f = c->html;
    const ph_heapdata *h = &c->rd->heap;
    double grown = total_of(h->growth);
    const site *g[TOP_GROWING];
    size_t ng = top ? growing(top, ns, g) : 0;
    char b[PH_FMT_LEN], b2[PH_FMT_LEN];
    json_t *jg = json_object(), *jt = json_array();
    size_t hl = strlen(c->headline);

    PH_MW_RAW(f, "<h3>Growth</h3>\n");
    if (h->growth == NULL) {
        ph_html_note(f, "One snapshot only: growth is in use at the newest snapshot minus in use at the first, and "
                        "needs two (the interval, PH_SAMPLER_INTERVAL, or a `collect` while it runs).");
        json_decref(jg);
        json_decref(jt);
        return;
    }
    PH_MW_RAW(f, "<p class=\"note\">");
    PH_MW_FMT(f, "In use grew by %s from the first snapshot (", ph_fmt_bytes(b, grown));
    ph_mw_text(f, h->growth_from->name);
    PH_MW_RAW(f, ") to the newest (");
    ph_mw_text(f, h->art[PH_HEAP_INUSE_SPACE]->name);
    PH_MW_RAW(f, "), counting only the stacks whose bytes in use grew: a leak shows as what only grows.</p>\n");
    if (ng > 0) {
        const char *heads[] = { "site", "grown#", "%#", "" };

        ph_html_table(f, heads, 4);
        for (size_t i = 0; i < ng; i++) {
            PH_MW_RAW(f, "<tr><td class=\"name\">");
            ph_mw_text(f, g[i]->name);
            PH_MW_RAW(f, "</td>");
            ph_html_num(f, g[i]->v[S_GROWN], ph_fmt_bytes(b, g[i]->v[S_GROWN]));
            ph_html_num(f, grown > 0 ? 100 * g[i]->v[S_GROWN] / grown : 0, ph_fmt_percent(b2, g[i]->v[S_GROWN], grown));
            ph_html_bar(f, grown > 0 ? g[i]->v[S_GROWN] / grown : 0);
            PH_MW_RAW(f, "</tr>\n");
            json_array_append_new(jt, json_pack("{s:s, s:f, s:f}", "site", g[i]->name, "bytes", g[i]->v[S_GROWN],
                                                "percent", grown > 0 ? 100 * g[i]->v[S_GROWN] / grown : 0.0));
        }
        ph_html_table_end(f);
        snprintf(c->headline + hl, sizeof c->headline - hl, "; grown %s (%s %s)", ph_fmt_bytes(b, grown),
                 ph_fmt_name((char[PH_HEADLINE_NAME + 64]){ 0 }, PH_HEADLINE_NAME + 64, g[0]->name, PH_HEADLINE_NAME),
                 ph_fmt_percent(b2, g[0]->v[S_GROWN], grown));
    } else {
        ph_html_note(f, "Nothing grew.");
        snprintf(c->headline + hl, sizeof c->headline - hl, "; nothing grew");
    }
    graph(c, h->growth, "bytes", "Grown since the first snapshot (bytes in use)", &c->heap_svg, &c->heap_svg_len);
    json_object_set_new(jg, "bytes", json_real(grown));
    json_object_set_new(jg, "from", json_string(h->growth_from->name));
    json_object_set_new(jg, "to", json_string(h->art[PH_HEAP_INUSE_SPACE]->name));
    json_object_set_new(jg, "top_sites", jt);
    json_object_set_new(js, "growth", jg);
}

/* One row of a sites' or classes' table: at the peak (of PEAK), at the
 * end, allocated (of ALLOC). */
static void
site_row(ph_mw *f, const site *s, double peak, double alloc)
{
    char b[PH_FMT_LEN], b2[PH_FMT_LEN];

    char shown[4096]; /* a row keeps the whole name */
    size_t n = strlen(s->name);

    /* as the language view names it; a class (`new byte[]_[j]`) and what
     * the view keeps native shown without the mark: the tags are the
     * graphs' */
    if (strncmp(s->name, "new ", 4) == 0 || ph_langview_frame(s->name, n, shown, sizeof shown) == PH_LANG_NONE)
        snprintf(shown, sizeof shown, "%.*s", (int)(n > 4 && s->name[n - 4] == '_' && s->name[n - 3] == '[' &&
                                                             s->name[n - 1] == ']' ? n - 4 : n), s->name);
    PH_MW_RAW(f, "<tr><td class=\"name\">");
    ph_mw_text(f, shown);
    PH_MW_RAW(f, "</td>");
    ph_html_num(f, s->v[S_PEAK], ph_fmt_bytes(b, s->v[S_PEAK]));
    ph_html_num(f, peak > 0 ? 100 * s->v[S_PEAK] / peak : 0, ph_fmt_percent(b2, s->v[S_PEAK], peak));
    ph_html_bar(f, peak > 0 ? s->v[S_PEAK] / peak : 0);
    ph_html_num(f, s->v[S_END], ph_fmt_bytes(b, s->v[S_END]));
    ph_html_num(f, s->v[S_ALLOC], ph_fmt_bytes(b, s->v[S_ALLOC]));
    ph_html_num(f, alloc > 0 ? 100 * s->v[S_ALLOC] / alloc : 0, ph_fmt_percent(b2, s->v[S_ALLOC], alloc));
    PH_MW_RAW(f, "</tr>\n");
}

/* The Java objects' classes, when there are any: most at the peak first. */
static void
report_classes(ph_rctx *c, double peak, double alloc, json_t *js)
{
    ph_mw *f = c->html;
    size_t n = 0;
    ph_intern *names = ph_intern_new(16u << 20);
    site *cl = names ? sites(&c->rd->heap, names, class_of, &n) : NULL;
    const char *heads[] = { "class#", "at the peak#", "%#", "", "in use at the end#", "allocated#", "%#" };
    json_t *jc;
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        k += cl[i].name != NULL;
    if (cl == NULL || k == 0) {
        free(cl);
        ph_intern_free(names);
        return;
    }
    jc = json_array();
    PH_MW_RAW(f, "<h3>Top classes (Java objects)</h3>\n");
    ph_html_table(f, heads, 7);
    for (size_t i = 0; i < n && i < TOP_SITES; i++) {
        if (cl[i].name == NULL)
            continue;
        site_row(f, &cl[i], peak, alloc);
        json_array_append_new(jc, json_pack("{s:s, s:f, s:f, s:f}", "class", cl[i].name, "peak_inuse_bytes",
                                            cl[i].v[S_PEAK], "inuse_bytes", cl[i].v[S_END], "alloc_bytes",
                                            cl[i].v[S_ALLOC]));
    }
    ph_html_table_end(f);
    json_object_set_new(js, "top_classes", jc);
    free(cl);
    ph_intern_free(names);
}

/* Before any figure: what of each runtime's heap is seen and what is
 * not, as the sampler said it (heap-*.json); the headline starts with
 * the same, briefly. */
static void
runtimes_first(ph_rctx *c, json_t *js)
{
    const json_t *rts = c->rd->heap.runtimes, *rt;
    size_t i, hl = 0;

    c->headline[0] = '\0';
    if (rts == NULL)
        return;
    json_array_foreach(rts, i, rt) {
        const char *note = json_string_value(json_object_get(rt, "note"));
        const char *brief = json_string_value(json_object_get(rt, "brief"));
        int seen = json_is_true(json_object_get(rt, "objects"));

        /* a heap not seen is a problem of the run, said as one */
        if (seen)
            ph_html_note(c->html, note);
        else
            ph_html_problem(c->html, note);
        if (hl + 4 < sizeof c->headline)
            hl += (size_t)snprintf(c->headline + hl, sizeof c->headline - hl, "%.80s; ", brief);
    }
    if (hl >= sizeof c->headline)
        c->headline[sizeof c->headline - 1] = '\0';
    json_object_set(js, "runtimes", (json_t *)rts);
}

typedef struct v8site {
    const char *name;
    double bytes;
} v8site;

static int
cmp_v8site(const void *x, const void *y)
{
    const v8site *a = x, *b = y;

    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return strcmp(a->name, b->name);
}

/* V8's objects, when a node wrote its heap profile: before the malloc
 * figures, the program's own; the JS functions that made what was live
 * at the exit (the innermost frame of each stack), the graph; into JS
 * and the headline. */
static void
report_v8(ph_rctx *c, json_t *js)
{
    const ph_heapdata *h = &c->rd->heap;
    const ph_folded *fo = h->v8;
    size_t nn = fo ? ph_folded_n_names(fo) : 0, k = 0;
    v8site *by = nn ? calloc(nn, sizeof *by) : NULL;
    double total = h->v8_info.bytes;
    char b[PH_FMT_LEN], b2[PH_FMT_LEN];
    json_t *jv, *jt;
    ph_mw *f = c->html;

    if (fo == NULL)
        return;
    if (by == NULL) {
        ph_html_problem(f, "No memory to show V8's objects.");
        return;
    }
    for (size_t i = 0; i < ph_folded_n_stacks(fo); i++) {
        ph_folded_stack st = ph_folded_get_stack(fo, i);
        uint32_t leaf = st.frames[st.depth - 1];

        by[leaf].name = ph_folded_name(fo, leaf, NULL);
        by[leaf].bytes += st.count;
    }
    for (size_t i = 0; i < nn; i++)
        if (by[i].name != NULL)
            by[k++] = by[i];
    qsort(by, k, sizeof *by, cmp_v8site);
    PH_MW_RAW(f, "<h3>JavaScript objects (V8's sampling heap profiler)</h3>\n");
    PH_MW_FMT(f, "<p class=\"note\">%s of JavaScript objects were live when node exited, by the function that "
                 "allocated them, as V8's own sampling heap profiler estimates them (", ph_fmt_bytes(b, total));
    PH_MW_FMT(f, "%s sampled objects, %zu profile%s written at the exit of node's processes): live at the exit, not "
                 "a peak, and not what was allocated and collected before.</p>\n",
              ph_fmt_count(b2, (double)h->v8_info.samples), h->v8_files, h->v8_files == 1 ? "" : "s");
    jv = json_object();
    jt = json_array();
    if (k > 0) {
        const char *heads[] = { "JS function", "live at the exit#", "%#", "" };

        ph_html_table(f, heads, 4);
        for (size_t i = 0; i < k && i < TOP_SITES; i++) {
            double pc = total > 0 ? 100 * by[i].bytes / total : 0;

            PH_MW_RAW(f, "<tr><td class=\"name\">");
            ph_mw_text(f, by[i].name);
            PH_MW_RAW(f, "</td>");
            ph_html_num(f, by[i].bytes, ph_fmt_bytes(b, by[i].bytes));
            ph_html_num(f, pc, ph_fmt_percent(b2, by[i].bytes, total));
            ph_html_bar(f, total > 0 ? by[i].bytes / total : 0);
            PH_MW_RAW(f, "</tr>\n");
            json_array_append_new(jt, json_pack("{s:s, s:f, s:f}", "site", by[i].name, "bytes", by[i].bytes,
                                                "percent", pc));
        }
        ph_html_table_end(f);
        size_t hl = strlen(c->headline);
        snprintf(c->headline + hl, sizeof c->headline - hl, "JavaScript objects live at the exit %s (%s %s of them); ",
                 ph_fmt_bytes(b, total),
                 ph_fmt_name((char[PH_HEADLINE_NAME + 64]){ 0 }, PH_HEADLINE_NAME + 64, by[0].name, PH_HEADLINE_NAME),
                 ph_fmt_percent(b2, by[0].bytes, total));
    }
    graph(c, fo, "bytes", "JavaScript objects live at the exit (bytes, V8's estimate)", NULL, NULL);
    json_object_set_new(jv, "live_bytes", json_real(total));
    json_object_set_new(jv, "samples", json_integer((json_int_t)h->v8_info.samples));
    json_object_set_new(jv, "profiles", json_integer((json_int_t)h->v8_files));
    json_object_set_new(jv, "top_sites", jt);
    json_object_set_new(js, "v8", jv);
    free(by);
    ph_html_note(f, "The figures below are malloc's: node's and V8's native allocations.");
}

void
ph_report_heap(ph_rctx *c)
{
    ph_mw *f = c->html;
    const ph_heapdata *h = &c->rd->heap;
    double peak = total_of(h->view[PH_HEAP_PEAK_SPACE]), inuse = total_of(h->view[PH_HEAP_INUSE_SPACE]);
    double alloc = total_of(h->view[PH_HEAP_ALLOC_SPACE]), allocn = total_of(h->view[PH_HEAP_ALLOC_OBJECTS]);
    char b[PH_FMT_LEN], b2[PH_FMT_LEN], b3[PH_FMT_LEN], note[200];
    size_t ns = 0;
    ph_intern *names = ph_intern_new(64u << 20);
    site *top = names ? sites(h, names, site_of, &ns) : NULL;
    json_t *js = json_object(), *jt = json_array();

    ph_html_section(f, "heap", "Heap (sampled allocations)");
    runtimes_first(c, js);
    report_v8(c, js);
    ph_html_cards_begin(f);
    snprintf(note, sizeof note, "%s objects", ph_fmt_count(b2, total_of(h->view[PH_HEAP_PEAK_OBJECTS])));
    ph_html_card(f, "in use at the peak", ph_fmt_bytes(b, peak), note);
    snprintf(note, sizeof note, "%s objects", ph_fmt_count(b2, total_of(h->view[PH_HEAP_INUSE_OBJECTS])));
    ph_html_card(f, "in use at the end", ph_fmt_bytes(b, inuse), note);
    snprintf(note, sizeof note, "%s objects over the run", ph_fmt_count(b2, allocn));
    ph_html_card(f, "allocated", ph_fmt_bytes(b, alloc), note);
    if (h->growth != NULL)
        ph_html_card(f, "grown", ph_fmt_bytes(b, total_of(h->growth)), "in use, since the first snapshot");
    ph_html_cards_end(f);
    ph_html_note(f, "Estimates from sampled allocations (one per N bytes on average, a randomized interval): each "
                    "sample of S bytes stands for S / (1 - exp(-S/N)) bytes, so the figures add up to what the "
                    "service allocated.  A site is the function that called the allocator.");

    if (top == NULL || ns == 0) {
        ph_html_problem(f, "No allocation sites to show (see the problems above).");
    } else {
        const char *heads[] = { "site", "at the peak#", "%#", "", "in use at the end#", "allocated#", "%#" };

        PH_MW_RAW(f, "<h3>Top allocation sites</h3>\n");
        ph_html_table(f, heads, 7);
        for (size_t i = 0; i < ns && i < TOP_SITES; i++) {
            site_row(f, &top[i], peak, alloc);
            json_array_append_new(jt, json_pack("{s:s, s:f, s:f, s:f, s:f}", "site", top[i].name, "peak_inuse_bytes",
                                                top[i].v[S_PEAK], "percent", peak > 0 ? 100 * top[i].v[S_PEAK] / peak : 0.0,
                                                "inuse_bytes", top[i].v[S_END], "alloc_bytes", top[i].v[S_ALLOC]));
        }
        ph_html_table_end(f);
        size_t hl = strlen(c->headline), j = 0;
        double jpeak = lang_peak(h, "_[j]"), ppeak = lang_peak(h, "_[p]"), lpeak = jpeak > ppeak ? jpeak : ppeak;
        const char *mark = jpeak > ppeak ? "_[j]" : "_[p]";

        while (j < ns && !marked(top[j].name, mark))
            j++;
        if (lpeak > 0 && j < ns) /* the program's own objects first, the runtime's mallocs after */
            snprintf(c->headline + hl, sizeof c->headline - hl,
                     "%s objects at the peak %s (%s %s of them), all at the peak %s, %s in use at the end, %s "
                     "allocated",
                     jpeak > ppeak ? "Java" : "Python", ph_fmt_bytes(b, lpeak),
                     headline_name(top[j].name, (char[PH_HEADLINE_NAME + 64]){ 0 }, PH_HEADLINE_NAME + 64),
                     ph_fmt_percent(b2, top[j].v[S_PEAK], lpeak),
                     ph_fmt_bytes(b3, peak), ph_fmt_bytes((char[PH_FMT_LEN]){ 0 }, inuse),
                     ph_fmt_bytes((char[PH_FMT_LEN]){ 0 }, alloc));
        else
            snprintf(c->headline + hl, sizeof c->headline - hl,
                     "peak in use %s (%s %s), %s in use at the end, %s allocated", ph_fmt_bytes(b, peak),
                     headline_name(top[0].name, (char[PH_HEADLINE_NAME + 64]){ 0 }, PH_HEADLINE_NAME + 64),
                     ph_fmt_percent(b2, top[0].v[S_PEAK], peak), ph_fmt_bytes(b3, inuse),
                     ph_fmt_bytes((char[PH_FMT_LEN]){ 0 }, alloc));
    }
    report_classes(c, peak, alloc, js);
    report_growth(c, top, ns, js);
    graph(c, h->view[PH_HEAP_PEAK_SPACE], "bytes", "In use at the peak (bytes)", NULL, NULL);
    graph(c, h->view[PH_HEAP_INUSE_SPACE], "bytes", "In use at the end (bytes)", NULL, NULL);
    graph(c, h->view[PH_HEAP_ALLOC_SPACE], "bytes", "Allocated over the run (bytes)", NULL, NULL);
    ph_html_note(f, "Click a frame to zoom.  The objects views and the pprof profile (heap.pb.gz: go tool pprof) "
                    "are beside this report; the growth's stacks too (" PH_REPORT_HEAP_GROWTH ".folded).");

    json_object_set_new(js, "peak_inuse_bytes", json_real(peak));
    json_object_set_new(js, "inuse_bytes", json_real(inuse));
    json_object_set_new(js, "alloc_bytes", json_real(alloc));
    json_object_set_new(js, "alloc_objects", json_real(allocn));
    json_object_set_new(js, "top_sites", jt);
    json_object_set_new(c->summary, "heap", js);
    free(top);
    ph_intern_free(names);
    ph_html_section_end(f);
}

int
ph_report_heap_files(const ph_rctx *c, ph_report_out *ro, ph_error_t *err)
{
    ph_rundata *rd = c->rd;
    char path[PATH_MAX + 64], *text = NULL, b[PH_FMT_LEN];
    size_t len = 0;
    int rc = 0;

    if (rd->heap.growth == NULL)
        return 0;
    if (ph_heap_growth_text(rd->heap.growth, &text, &len, err) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/%s.folded", rd->dir, PH_REPORT_HEAP_GROWTH);
    if (len + (c->heap_svg ? c->heap_svg_len : 0) > ph_report_out_left(ro) / 2)
        ph_rundata_problem(rd, PH_REPORT_HEAP_GROWTH ".folded not written: its %s would take more than half of what a "
                           "report's files are held to", ph_fmt_bytes(b, (double)len));
    else
        rc = ph_report_out_write(ro, path, text, len, err);
    free(text);
    if (rc == 0 && c->heap_svg != NULL) {
        snprintf(path, sizeof path, "%s/%s.svg", rd->dir, PH_REPORT_HEAP_GROWTH);
        rc = ph_report_out_write(ro, path, c->heap_svg, c->heap_svg_len, err);
    }
    return rc;
}
