/* ph_report_heap.c - the heap sampler's section (profiles/heap.yaml,
 * artifacts of kind "heap"): the newest folded file of each view read
 * (inuse_space, inuse_objects, peak_inuse_space, peak_inuse_objects,
 * alloc_space, alloc_objects: cumulative, so the newest has everything),
 * the figures (in use at the peak and at the end, allocated), the top
 * allocation sites and the graphs of what was in use at the peak, at the
 * end and of what was allocated, drawn here from the stacks.
 *
 * A site is the innermost frame of a stack that is not the allocator's
 * (malloc and its family, operator new): the function that asked. */
#include "ph_report_int.h"

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
}

void
ph_heapdata_free(ph_heapdata *h)
{
    for (int v = 0; v < PH_HEAP_VIEWS; v++)
        ph_folded_free(h->view[v]);
    memset(h, 0, sizeof *h);
}

int
ph_heap_is_allocator(const char *name)
{
    static const char *const names[] = { "malloc",  "calloc",   "realloc",        "reallocarray", "posix_memalign",
                                         "aligned_alloc", "memalign", "valloc", "pvalloc", "strdup", "strndup" };

    if (strncmp(name, "operator new", 12) == 0 || strncmp(name, "__libc_", 7) == 0)
        return 1;
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
    for (uint32_t d = s.depth; d-- > 0;)
        if (!ph_heap_is_allocator(ph_folded_name(fo, s.frames[d], NULL)))
            return s.frames[d];
    return s.frames[s.depth - 1];
}

/* A site's bytes in one view, by name (the views are separate files, so
 * separate name tables). */
typedef struct site {
    const char *name;
    double v[3];            /* at the peak, at the end, allocated */
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

/* Sites over the three byte views, sorted by their bytes at the peak;
 * their names kept in NAMES. */
static site *
sites(const ph_heapdata *h, ph_intern *names, size_t *n_out)
{
    static const int views[3] = { PH_HEAP_PEAK_SPACE, PH_HEAP_INUSE_SPACE, PH_HEAP_ALLOC_SPACE };
    site *out = NULL;
    size_t n = 0, cap = 0;

    for (int k = 0; k < 3; k++) {
        const ph_folded *fo = h->view[views[k]];

        for (size_t i = 0; fo != NULL && i < ph_folded_n_stacks(fo); i++) {
            ph_folded_stack s = ph_folded_get_stack(fo, i);
            const char *name = ph_folded_name(fo, site_of(fo, s), NULL);
            int64_t id = ph_intern_add(names, name, strlen(name));

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
                    out[n] = (site){ NULL, { 0, 0, 0 } };
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

static void
graph(ph_rctx *c, int v, const char *title)
{
    const ph_folded *fo = c->rd->heap.view[v];
    char t[400];
    ph_flame_opts o;

    if (fo == NULL || ph_folded_n_stacks(fo) == 0)
        return;
    ph_flame_opts_init(&o);
    snprintf(t, sizeof t, "%s (%s, run %s): %s", c->rd->service, c->rd->mode, c->rd->name, title);
    o.title = t;
    o.countname = strstr(view_names[v], "objects") ? "objects" : "bytes";
    o.palette = "mem";
    PH_MW_FMT(c->html, "<h3>%s</h3>\n", title);
    ph_html_flame_render(c->html, fo, &o, t);
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
    site *top = names ? sites(h, names, &ns) : NULL;
    json_t *js = json_object(), *jt = json_array();

    ph_html_section(f, "heap", "Heap (sampled allocations)");
    ph_html_cards_begin(f);
    snprintf(note, sizeof note, "%s objects", ph_fmt_count(b2, total_of(h->view[PH_HEAP_PEAK_OBJECTS])));
    ph_html_card(f, "in use at the peak", ph_fmt_bytes(b, peak), note);
    snprintf(note, sizeof note, "%s objects", ph_fmt_count(b2, total_of(h->view[PH_HEAP_INUSE_OBJECTS])));
    ph_html_card(f, "in use at the end", ph_fmt_bytes(b, inuse), note);
    snprintf(note, sizeof note, "%s objects over the run", ph_fmt_count(b2, allocn));
    ph_html_card(f, "allocated", ph_fmt_bytes(b, alloc), note);
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
            PH_MW_RAW(f, "<tr><td class=\"name\">");
            ph_mw_text(f, top[i].name);
            PH_MW_RAW(f, "</td>");
            ph_html_num(f, top[i].v[0], ph_fmt_bytes(b, top[i].v[0]));
            ph_html_num(f, peak > 0 ? 100 * top[i].v[0] / peak : 0, ph_fmt_percent(b2, top[i].v[0], peak));
            ph_html_bar(f, peak > 0 ? top[i].v[0] / peak : 0);
            ph_html_num(f, top[i].v[1], ph_fmt_bytes(b, top[i].v[1]));
            ph_html_num(f, top[i].v[2], ph_fmt_bytes(b3, top[i].v[2]));
            ph_html_num(f, alloc > 0 ? 100 * top[i].v[2] / alloc : 0, ph_fmt_percent(b2, top[i].v[2], alloc));
            PH_MW_RAW(f, "</tr>\n");
            json_array_append_new(jt, json_pack("{s:s, s:f, s:f, s:f, s:f}", "site", top[i].name, "peak_inuse_bytes",
                                                top[i].v[0], "percent", peak > 0 ? 100 * top[i].v[0] / peak : 0.0,
                                                "inuse_bytes", top[i].v[1], "alloc_bytes", top[i].v[2]));
        }
        ph_html_table_end(f);
        snprintf(c->headline, sizeof c->headline, "peak in use %s (%.80s %s), %s in use at the end, %s allocated",
                 ph_fmt_bytes(b, peak), top[0].name, ph_fmt_percent(b2, top[0].v[0], peak), ph_fmt_bytes(b3, inuse),
                 ph_fmt_bytes((char[PH_FMT_LEN]){ 0 }, alloc));
    }
    graph(c, PH_HEAP_PEAK_SPACE, "In use at the peak (bytes)");
    graph(c, PH_HEAP_INUSE_SPACE, "In use at the end (bytes)");
    graph(c, PH_HEAP_ALLOC_SPACE, "Allocated over the run (bytes)");
    ph_html_note(f, "Click a frame to zoom.  The objects views and the pprof profile (heap.pb.gz: go tool pprof) "
                    "are beside this report.");

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
