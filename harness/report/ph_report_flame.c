/* ph_report_flame.c - the CPU samples section (the built-in sampler, or
 * any folded stacks): the interactive flamegraph, top functions by self
 * and by total samples, samples per thread, and what the sampler says of
 * itself (requested and delivered rate, drops, its own cost). */
#include "ph_report_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ph_intern.h"
#include "ph_lines.h"

#include "ph_markup_only.h"

#define TOP_ROWS 25

int
ph_flame_tally(const ph_folded *folded, int skip_root, double **self_out, double **total_out)
{
    size_t nn = ph_folded_n_names(folded), ns = ph_folded_n_stacks(folded);
    double *self = calloc(nn ? nn : 1, sizeof *self), *total = calloc(nn ? nn : 1, sizeof *total);
    size_t *seen = malloc((nn ? nn : 1) * sizeof *seen);

    if (self == NULL || total == NULL || seen == NULL) {
        free(self);
        free(total);
        free(seen);
        return -1;
    }
    for (size_t i = 0; i < nn; i++)
        seen[i] = SIZE_MAX;
    for (size_t i = 0; i < ns; i++) {
        ph_folded_stack s = ph_folded_get_stack(folded, i);
        uint32_t from = skip_root && s.depth > 1 ? 1 : 0;

        if (skip_root && s.depth == 1)
            continue; /* a thread with no frame under it */
        self[s.frames[s.depth - 1]] += s.count;
        for (uint32_t d = from; d < s.depth; d++) {
            uint32_t id = s.frames[d];
            if (seen[id] == i)
                continue; /* recursion: once per stack */
            seen[id] = i;
            total[id] += s.count;
        }
    }
    free(seen);
    *self_out = self;
    *total_out = total;
    return 0;
}

const ph_folded *
ph_flame_native(const ph_flamedata *fd)
{
    return fd->native != NULL ? fd->native : fd->folded;
}

int
ph_flame_has_thread_root(const ph_rundata *rd)
{
    const ph_artifact *a[1];

    return rd->flame.sampler.have || (ph_rundata_files(rd, "folded", a, 1) == 1 && strncmp(a[0]->name, "stacks-", 7) == 0);
}

/* A wall-clock run: the sampler's status says so, its files have an
 * off-CPU view (offcpu-*: what the attached readers write, which have no
 * status; a Node seen waiting not once writes an empty one), or a stack
 * ends off the CPU. */
int
ph_flame_is_wall(const ph_rundata *rd)
{
    const ph_folded *fo = rd->flame.folded;
    const ph_artifact *a[PH_RD_MAX_ARTIFACTS];
    size_t n = ph_rundata_files(rd, "folded", a, PH_RD_MAX_ARTIFACTS);

    if (rd->flame.sampler.wall)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (strncmp(a[i]->name, "offcpu-", 7) == 0)
            return 1;
    for (uint32_t i = 0; fo != NULL && i < ph_folded_n_names(fo); i++)
        if (strcmp(ph_folded_name(fo, i, NULL), PH_OFFCPU_FRAME) == 0)
            return 1;
    return 0;
}

static int
ends_offcpu(const ph_folded *fo, ph_folded_stack s)
{
    return s.depth > 0 && strcmp(ph_folded_name(fo, s.frames[s.depth - 1], NULL), PH_OFFCPU_FRAME) == 0;
}

double
ph_folded_sum_with(const ph_folded *fo, const char *fn, int offcpu)
{
    double sum = 0;

    for (size_t i = 0; fo != NULL && i < ph_folded_n_stacks(fo); i++) {
        ph_folded_stack s = ph_folded_get_stack(fo, i);
        int has = fn == NULL;

        if (offcpu && !ends_offcpu(fo, s))
            continue;
        for (uint32_t d = 0; !has && d < s.depth; d++)
            has = strcmp(ph_folded_name(fo, s.frames[d], NULL), fn) == 0;
        if (has)
            sum += s.count;
    }
    return sum;
}

/* Off-CPU samples per name id of FO: the frame under each [off-cpu] leaf
 * (the call the thread blocks in); NULL without memory. */
static double *
blocking_calls(const ph_folded *fo)
{
    size_t nn = ph_folded_n_names(fo);
    double *v = calloc(nn ? nn : 1, sizeof *v);

    for (size_t i = 0; v != NULL && i < ph_folded_n_stacks(fo); i++) {
        ph_folded_stack s = ph_folded_get_stack(fo, i);
        if (s.depth >= 2 && ends_offcpu(fo, s))
            v[s.frames[s.depth - 2]] += s.count;
    }
    return v;
}

typedef struct rank_ctx {
    const double *v;
    const ph_folded *f;
} rank_ctx;

static int
cmp_rank(const void *a, const void *b, void *ctx)
{
    const rank_ctx *r = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    if (r->v[x] != r->v[y])
        return r->v[x] < r->v[y] ? 1 : -1;
    return strcmp(ph_folded_name(r->f, x, NULL), ph_folded_name(r->f, y, NULL));
}

/* Name ids of F sorted by V, largest first; the caller frees. */
static uint32_t *
ranked(const ph_folded *f, const double *v, size_t *n)
{
    size_t nn = ph_folded_n_names(f);
    uint32_t *ids = malloc((nn ? nn : 1) * sizeof *ids);
    rank_ctx r = { v, f };
    size_t m = 0;

    if (ids == NULL)
        return NULL;
    for (uint32_t i = 0; i < nn; i++)
        if (v[i] > 0)
            ids[m++] = i;
    qsort_r(ids, m, sizeof *ids, cmp_rank, &r);
    *n = m;
    return ids;
}

/* A count of the table's unit: samples or events, or with NS nanoseconds
 * of CPU (perf's cpu-clock periods), as a time. */
static const char *
fmt_value(char b[PH_FMT_LEN], double v, int ns)
{
    return ns ? ph_fmt_seconds(b, v / 1e9) : ph_fmt_count(b, v);
}

static json_t *
top_rows(ph_mw *f, const ph_folded *fo, const double *v, double total, const char *title, const char *what, int ns)
{
    size_t n = 0;
    uint32_t *ids = ranked(fo, v, &n);
    const char *heads[] = { "function", what, "%#", "" };
    char b[PH_FMT_LEN], p[PH_FMT_LEN];
    json_t *a = json_array();

    if (ids == NULL)
        return a;
    PH_MW_FMT(f, "<h3>%s</h3>\n", title);
    ph_html_table(f, heads, 4);
    for (size_t i = 0; i < n && i < TOP_ROWS; i++) {
        const char *name = ph_folded_name(fo, ids[i], NULL);
        PH_MW_RAW(f, "<tr><td class=\"name\">");
        ph_mw_text(f, name);
        PH_MW_RAW(f, "</td>");
        ph_html_num(f, v[ids[i]], fmt_value(b, v[ids[i]], ns));
        ph_html_num(f, total > 0 ? 100 * v[ids[i]] / total : 0, ph_fmt_percent(p, v[ids[i]], total));
        ph_html_bar(f, total > 0 ? v[ids[i]] / total : 0);
        PH_MW_RAW(f, "</tr>\n");
        if (i < 20)
            json_array_append_new(a, json_pack("{s:s, s:f, s:f}", "name", name, "samples", v[ids[i]], "percent",
                                               total > 0 ? 100 * v[ids[i]] / total : 0.0));
    }
    ph_html_table_end(f);
    free(ids);
    return a;
}

/* Threads of a pool are one row: threads whose names differ only in
 * their runs of digits (`thread-249`, `thread-422`; `pool-1-thread-3`,
 * `pool-1-thread-7`) are a group, called by the name with each run that
 * differs as N (`thread-N`, `pool-1-thread-N`).  A name alone in its
 * pattern is its own group, as it was. */
typedef struct thread_group {
    char *label;
    size_t threads;
} thread_group;

typedef struct thread_key {
    char key[256]; /* the name with each digit run as one byte 001 */
    uint32_t id;
} thread_key;

static int
cmp_key(const void *a, const void *b)
{
    const thread_key *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    return c ? c : (x->id > y->id) - (x->id < y->id);
}

static void
digit_key(const char *name, char *key, size_t cap)
{
    size_t o = 0;

    for (const char *p = name; *p && o + 1 < cap; p++) {
        if (*p >= '0' && *p <= '9') {
            key[o++] = '\001'; /* a run: a byte no thread name of a person's has */
            while (p[1] >= '0' && p[1] <= '9')
                p++;
        } else {
            key[o++] = *p;
        }
    }
    key[o] = '\0';
}

/* The label of the names IDS[0..N) (one pattern): the first name with
 * every digit run that is not the same in all of them as N. */
static char *
group_label(const ph_folded *fo, const thread_key *k, size_t n)
{
    const char *first = ph_folded_name(fo, k[0].id, NULL);
    char out[512];
    size_t o = 0, run = 0;

    for (const char *p = first; *p && o + 2 < sizeof out;) {
        if (*p < '0' || *p > '9') {
            out[o++] = *p++;
            continue;
        }
        {
            const char *e = p;
            int same = 1;

            while (*e >= '0' && *e <= '9')
                e++;
            for (size_t i = 1; i < n && same; i++) {
                /* the same run (by its place) in the other name */
                const char *q = ph_folded_name(fo, k[i].id, NULL), *qe;
                size_t r = 0;
                for (; *q; q++) {
                    if (*q >= '0' && *q <= '9') {
                        if (r++ == run)
                            break;
                        while (q[1] >= '0' && q[1] <= '9')
                            q++;
                    }
                }
                for (qe = q; *qe >= '0' && *qe <= '9'; qe++)
                    ;
                same = (size_t)(qe - q) == (size_t)(e - p) && memcmp(q, p, (size_t)(e - p)) == 0;
            }
            if (same) {
                while (p < e && o + 1 < sizeof out)
                    out[o++] = *p++;
            } else {
                out[o++] = 'N';
                p = e;
            }
            run++;
        }
    }
    out[o] = '\0';
    return strdup(out);
}

/* The group of each thread (root frame) of FO into GROUP_OF (one per
 * name id); the groups into *GROUPS.  How many groups, or -1 on ENOMEM. */
static ssize_t
thread_groups(const ph_folded *fo, uint32_t *group_of, thread_group **groups)
{
    size_t nn = ph_folded_n_names(fo), ns = ph_folded_n_stacks(fo), nk = 0, ng = 0;
    uint8_t *is_thread = calloc(nn ? nn : 1, 1);
    thread_key *k = NULL;
    thread_group *g = NULL;

    if (is_thread == NULL)
        return -1;
    for (size_t i = 0; i < ns; i++)
        is_thread[ph_folded_get_stack(fo, i).frames[0]] = 1;
    for (size_t i = 0; i < nn; i++)
        nk += is_thread[i];
    k = malloc((nk ? nk : 1) * sizeof *k);
    g = calloc(nk ? nk : 1, sizeof *g);
    if (k == NULL || g == NULL)
        goto enomem;
    nk = 0;
    for (uint32_t i = 0; i < nn; i++) {
        group_of[i] = UINT32_MAX;
        if (is_thread[i]) {
            digit_key(ph_folded_name(fo, i, NULL), k[nk].key, sizeof k[nk].key);
            k[nk++].id = i;
        }
    }
    if (nk > 1)
        qsort(k, nk, sizeof *k, cmp_key);
    for (size_t i = 0; i < nk;) {
        size_t j = i + 1;

        while (j < nk && strcmp(k[j].key, k[i].key) == 0)
            j++;
        g[ng].threads = j - i;
        g[ng].label = j - i == 1 ? strdup(ph_folded_name(fo, k[i].id, NULL)) : group_label(fo, k + i, j - i);
        if (g[ng].label == NULL)
            goto enomem;
        for (size_t m = i; m < j; m++)
            group_of[k[m].id] = (uint32_t)ng;
        ng++;
        i = j;
    }
    free(is_thread);
    free(k);
    *groups = g;
    return (ssize_t)ng;
enomem:
    for (size_t i = 0; g != NULL && i < ng; i++)
        free(g[i].label);
    free(g);
    free(k);
    free(is_thread);
    return -1;
}

typedef struct group_rank {
    const double *v;
    const thread_group *g;
} group_rank;

static int
cmp_group(const void *a, const void *b, void *ctx)
{
    const group_rank *r = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    if (r->v[x] != r->v[y])
        return r->v[x] < r->v[y] ? 1 : -1;
    return strcmp(r->g[x].label, r->g[y].label);
}

/* FO with each thread (root frame) of a pool named as its group
 * (`thread-N`), so the graph draws the pool's stacks as one tower, as the
 * per-thread table counts them as one row; NULL when no pool has more
 * than one thread (FO draws as it is), or on ENOMEM. */
static ph_folded *
pooled_roots(const ph_folded *fo)
{
    size_t nn = ph_folded_n_names(fo), ns = ph_folded_n_stacks(fo), pools = 0;
    uint32_t *group_of = malloc((nn ? nn : 1) * sizeof *group_of), *ids = NULL, cap = 0;
    thread_group *g = NULL;
    ssize_t ng = group_of ? thread_groups(fo, group_of, &g) : -1;
    ph_folded *out = NULL;
    ph_error_t err = NULL;

    for (ssize_t i = 0; i < ng; i++)
        pools += g[i].threads > 1;
    if (pools == 0 || (out = ph_folded_new(0, &err)) == NULL)
        goto out;
    for (size_t i = 0; i < ns; i++) {
        ph_folded_stack st = ph_folded_get_stack(fo, i);
        const char *label = g[group_of[st.frames[0]]].label;
        int64_t id;

        if (st.depth > cap) {
            uint32_t *v = realloc(ids, st.depth * sizeof *ids);

            if (v == NULL)
                goto fail;
            ids = v;
            cap = st.depth;
        }
        for (uint32_t d = 0; d < st.depth; d++) {
            size_t len;
            const char *name = d == 0 ? label : ph_folded_name(fo, st.frames[d], &len);

            if ((id = ph_folded_intern(out, name, d == 0 ? strlen(label) : len, &err)) < 0)
                goto fail;
            ids[d] = (uint32_t)id;
        }
        if (ph_folded_add(out, ids, st.depth, st.count, &err) < 0)
            goto fail;
    }
    goto out;
fail:
    ph_folded_free(out);
    out = NULL;
out:
    ph_error_free(&err);
    for (ssize_t i = 0; i < ng; i++)
        free(g[i].label);
    free(g);
    free(group_of);
    free(ids);
    return out;
}

/* Samples per thread (the root frame; a pool's threads one row) with
 * each one's busiest leaf; on the wall clock, each one's share off CPU too. */
static json_t *
threads(ph_mw *f, const ph_folded *fo, double total, int in_ns, int wall)
{
    size_t nn = ph_folded_n_names(fo), ns = ph_folded_n_stacks(fo), npairs = 0;
    uint32_t *group_of = malloc((nn ? nn : 1) * sizeof *group_of), *ids = NULL;
    thread_group *g = NULL;
    ssize_t ng = group_of ? thread_groups(fo, group_of, &g) : -1;
    size_t gn = ng > 0 ? (size_t)ng : 1;
    double *per = calloc(gn, sizeof *per), *best = calloc(gn, sizeof *best), *off = calloc(gn, sizeof *off);
    double *sums = malloc((ns ? ns : 1) * sizeof *sums);
    uint32_t *leaf = malloc(gn * sizeof *leaf);
    ph_u64map pairs = { 0 };
    json_t *a = json_array();
    const char *const heads[] = { "thread", in_ns ? "CPU time#" : "samples#", "%#", "", "off CPU#",
                                  "busiest function (self)" };
    const char *const heads_cpu[] = { heads[0], heads[1], heads[2], heads[3], heads[5] };
    char b[PH_FMT_LEN], p[PH_FMT_LEN];
    group_rank r = { per, g };

    if (ng <= 0 || per == NULL || best == NULL || off == NULL || sums == NULL || leaf == NULL ||
        (ids = malloc(gn * sizeof *ids)) == NULL)
        goto out;
    for (size_t i = 0; i < gn; i++)
        leaf[i] = UINT32_MAX;
    /* one pass: samples per group, and per (group, leaf) pair */
    for (size_t i = 0; i < ns; i++) {
        ph_folded_stack s = ph_folded_get_stack(fo, i);
        uint32_t t = group_of[s.frames[0]], l = s.frames[s.depth - 1], k;
        uint64_t key = (uint64_t)t << 32 | l;

        per[t] += s.count;
        if (ends_offcpu(fo, s))
            off[t] += s.count;
        if (s.depth < 2)
            continue;
        if ((k = ph_u64map_get(&pairs, key)) == UINT32_MAX) {
            k = (uint32_t)npairs++;
            sums[k] = 0;
            if (ph_u64map_put(&pairs, key, k) < 0)
                goto out;
        }
        if ((sums[k] += s.count) > best[t]) {
            best[t] = sums[k];
            leaf[t] = l;
        }
    }
    for (uint32_t i = 0; i < gn; i++)
        ids[i] = i;
    qsort_r(ids, gn, sizeof *ids, cmp_group, &r);
    PH_MW_RAW(f, "<h3>Per thread</h3>\n");
    if (wall)
        ph_html_table(f, heads, 6);
    else
        ph_html_table(f, heads_cpu, 5);
    for (size_t i = 0; i < gn && i < 200; i++) {
        uint32_t t = ids[i];
        json_t *row;

        if (!(per[t] > 0))
            continue;
        PH_MW_RAW(f, "<tr><td class=\"name\">");
        ph_mw_text(f, g[t].label);
        if (g[t].threads > 1)
            PH_MW_FMT(f, " (%zu threads)", g[t].threads);
        PH_MW_RAW(f, "</td>");
        ph_html_num(f, per[t], fmt_value(b, per[t], in_ns));
        ph_html_num(f, total > 0 ? 100 * per[t] / total : 0, ph_fmt_percent(p, per[t], total));
        ph_html_bar(f, total > 0 ? per[t] / total : 0);
        if (wall) /* of the group's own samples */
            ph_html_num(f, per[t] > 0 ? 100 * off[t] / per[t] : 0, ph_fmt_percent(p, off[t], per[t]));
        PH_MW_RAW(f, "<td class=\"name\">");
        if (leaf[t] != UINT32_MAX) {
            ph_mw_text(f, ph_folded_name(fo, leaf[t], NULL));
            PH_MW_FMT(f, " (%s)", ph_fmt_percent(p, best[t], per[t]));
        }
        PH_MW_RAW(f, "</td></tr>\n");
        row = json_pack("{s:s, s:f, s:I}", "thread", g[t].label, "samples", per[t], "threads", (json_int_t)g[t].threads);
        if (wall)
            json_object_set_new(row, "offcpu_samples", json_real(off[t]));
        json_array_append_new(a, row);
    }
    ph_html_table_end(f);
out:
    ph_u64map_free(&pairs);
    for (ssize_t i = 0; i < ng; i++)
        free(g[i].label);
    free(g);
    free(group_of);
    free(ids);
    free(per);
    free(best);
    free(off);
    free(sums);
    free(leaf);
    return a;
}

static int
folded_chunk(void *ctx, const char *buf, size_t len, ph_error_t *err)
{
    return ph_folded_feed(ctx, buf, len, err);
}

static void
sampler_figures(ph_mw *f, const ph_sampler_stats *s)
{
    char b[PH_FMT_LEN], note[200];

    if (!s->have)
        return;
    PH_MW_RAW(f, "<h3>The sampler</h3>\n");
    ph_html_cards_begin(f);
    snprintf(note, sizeof note, "timer %.0f Hz (%s)", s->timer_hz, s->source);
    snprintf(b, sizeof b, "%.0f Hz", s->requested_hz);
    ph_html_card(f, "requested rate", b, note);
    if (!s->wall) {
        snprintf(b, sizeof b, "%.0f Hz", s->delivered_hz);
        ph_html_card(f, "delivered rate", b, "per CPU-second, as the kernel delivered");
    }
    snprintf(note, sizeof note, "%llu truncated stacks", s->truncated);
    ph_html_card(f, "dropped samples", ph_fmt_commify(b, s->dropped), note);
    snprintf(note, sizeof note, "%s of the samples",
             ph_fmt_percent((char[PH_FMT_LEN]){ 0 }, (double)s->own, (double)(s->samples + s->own)));
    ph_html_card(f, "sampler's own cost", ph_fmt_commify(b, s->own), note);
    ph_html_cards_end(f);
    ph_html_note(f, s->text);
}

void
ph_report_flame_opts(const ph_rundata *rd, ph_flame_opts *o, char *title, size_t cap)
{
    ph_flame_opts_init(o);
    snprintf(title, cap, "%s (%s, run %s)", rd->service, rd->mode, rd->name);
    o->title = title;
    if (rd->flame.sampler.text[0])
        o->subtitle = rd->flame.sampler.text;
}

/* One stacks file's graph, streamed to its file. */
typedef struct file_graph {
    const ph_folded *fo;
    const ph_flame_opts *o;
} file_graph;

static int
fill_graph(FILE *f, void *arg, ph_error_t *err)
{
    const file_graph *g = arg;

    if (ph_folded_n_stacks(g->fo) == 0)
        return ph_flame_render_error("no samples in this file", g->o, f, err);
    return ph_flame_render(g->fo, g->o, f, NULL, err);
}

/* Less than this left of the report's bound: no more stacks files' graphs. */
#define GRAPH_MIN (64u << 10)

int
ph_report_flame_files(ph_rundata *rd, ph_report_out *ro, uint64_t reserve, ph_error_t *err)
{
    const ph_artifact *a[PH_RD_MAX_ARTIFACTS];
    size_t n = ph_rundata_files(rd, "folded", a, PH_RD_MAX_ARTIFACTS), skipped = 0;
    const char *first_skipped = NULL;

    for (size_t i = 0; n > 1 && i < n; i++) {
        char name[NAME_MAX + 1], path[PATH_MAX + NAME_MAX + 2], title[400];
        size_t stem = strlen(a[i]->name);
        uint64_t left = ph_report_out_left(ro);
        ph_folded *fo = NULL;
        ph_flame_opts o;
        file_graph g;
        int rc;

        if (stem > 7 && strcmp(a[i]->name + stem - 7, ".folded") == 0)
            stem -= 7;
        if (snprintf(name, sizeof name, PH_REPORT_SVG_PREFIX "%.*s.svg", (int)stem, a[i]->name) >= (int)sizeof name)
            continue; /* no room for the prefix: the report's graph has it */
        if (left < reserve + GRAPH_MIN) {
            if (skipped++ == 0)
                first_skipped = a[i]->name;
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", rd->dir, name);
        ph_flame_opts_init(&o);
        snprintf(title, sizeof title, "%s (%s, %s)", rd->service, rd->mode, a[i]->name);
        o.title = title;
        ph_report_graph_bounds(&o);
        if (o.max_bytes > left - reserve)
            o.max_bytes = left - reserve;
        if ((fo = ph_folded_new(0, err)) == NULL || ph_read_file_chunks(a[i]->path, folded_chunk, fo, NULL, err) < 0 ||
            ph_folded_finish(fo, err) < 0) {
            /* the report says what is wrong with the file */
            ph_error_free(err);
            ph_folded_free(fo);
            continue;
        }
        g = (file_graph){ fo, &o };
        rc = ph_report_out_stream(ro, path, fill_graph, &g, err);
        ph_folded_free(fo);
        if (rc < 0)
            return -1;
    }
    if (skipped > 0) {
        char b[PH_FMT_LEN];
        ph_rundata_problem(rd, "%zu of the %zu stacks files have no graph of their own (`%s` and after): a report's "
                           "files are held to %s; " PH_REPORT_FLAME_SVG " draws them all",
                           skipped, n, first_skipped, ph_fmt_bytes(b, (double)ro->max_bytes));
    }
    return 0;
}

/* The stacks with every frame, for a language service (its view is the
 * section's): the graph (kept for PH_REPORT_FLAME_NATIVE_SVG) and the
 * top tables, folded away in the page until opened. */
static void
native_view(ph_rctx *c, json_t *js, int root, int perf_ns)
{
    ph_mw *f = c->html;
    const ph_folded *fo = c->rd->flame.native;
    double total = ph_folded_get_stats(fo)->total, *self = NULL, *tot = NULL;
    json_t *jn = json_object();
    ph_flame_opts o;
    char title[400];

    PH_MW_RAW(f, "<details class=\"native\"><summary>Native view: every frame (the interpreter's, the VM's)</summary>\n");
    ph_report_flame_opts(c->rd, &o, title, sizeof title);
    free(c->flame_native_svg);
    c->flame_native_svg = NULL;
    ph_html_flame_render_kept(f, fo, &o, title, &c->flame_native_svg, &c->flame_native_svg_len);
    ph_html_note(f, PH_REPORT_FLAME_NATIVE_SVG " beside this report is the same graph by itself.");
    if (ph_flame_tally(fo, root, &self, &tot) == 0) {
        json_object_set_new(jn, "top_self", top_rows(f, fo, self, total, "Top native functions by self samples",
                                                     perf_ns ? "self time#" : "self#", perf_ns));
        json_object_set_new(jn, "top_total", top_rows(f, fo, tot, total, "Top native functions by total samples",
                                                      perf_ns ? "total time#" : "total#", perf_ns));
    }
    PH_MW_RAW(f, "</details>\n");
    json_object_set_new(js, "native", jn);
    free(self);
    free(tot);
}

void
ph_report_flame(ph_rctx *c)
{
    ph_mw *f = c->html;
    const ph_flamedata *fd = &c->rd->flame;
    const ph_folded *fo = fd->folded;
    double total = fo ? ph_folded_get_stats(fo)->total : 0, *self = NULL, *tot = NULL;
    int root = ph_flame_has_thread_root(c->rd), wall = ph_flame_is_wall(c->rd);
    /* the wall clock: samples of threads blocked, and where they block */
    double off = wall ? ph_folded_sum_with(fo, NULL, 1) : 0, *blk = wall && fo ? blocking_calls(fo) : NULL;
    char b[PH_FMT_LEN], b2[PH_FMT_LEN], b3[PH_FMT_LEN], note[200];
    json_t *js = json_object(), *jw = wall ? json_object() : NULL;
    /* a perf run's conversion facts (ph_run_convert.c's convert.json) */
    json_t *perf = json_is_integer(json_object_get(c->rd->convert, "samples")) ? c->rd->convert : NULL;
    const char *pevent = perf && json_string_value(json_object_get(perf, "event"))
                             ? json_string_value(json_object_get(perf, "event"))
                             : "an event";
    int perf_ns = perf && json_string_value(json_object_get(perf, "unit")) &&
                  strcmp(json_string_value(json_object_get(perf, "unit")), "nanoseconds") == 0;

    ph_html_section(f, "flamegraph", wall ? "Wall-clock samples (flamegraph)" : "CPU samples (flamegraph)");
    ph_html_cards_begin(f);
    if (perf != NULL) {
        /* perf's folded counts are the samples' periods: nanoseconds of
         * CPU for cpu-clock, events otherwise; convert.json counts them. */
        snprintf(note, sizeof note, "of %s (perf)", pevent);
        ph_html_card(f, "samples", ph_fmt_commify(b, (uint64_t)json_integer_value(json_object_get(perf, "samples"))),
                     note);
        if (perf_ns)
            ph_html_card(f, "CPU time sampled", ph_fmt_seconds(b, total / 1e9), "the samples' periods added up");
        else
            ph_html_card(f, "events", ph_fmt_commify(b, (uint64_t)total), "the samples' periods added up");
    } else {
        ph_html_card(f, "samples", ph_fmt_commify(b, (uint64_t)total),
                     fd->n_files > 1 ? "added up over the snapshots" : "");
    }
    if (wall) {
        snprintf(note, sizeof note, "%s samples of threads blocked in a call", ph_fmt_commify(b2, (uint64_t)off));
        ph_html_card(f, "off CPU", ph_fmt_percent(b, off, total), note);
        if (fd->sampler.timer_hz > 0) {
            snprintf(note, sizeof note, "at %.0f Hz per thread, running or blocked", fd->sampler.timer_hz);
            ph_html_card(f, "thread time sampled", ph_fmt_seconds(b, total / fd->sampler.timer_hz), note);
        }
    } else if (fd->sampler.have) {
        snprintf(note, sizeof note, "at %.0f Hz delivered", fd->sampler.delivered_hz);
        ph_html_card(f, "CPU time sampled", ph_fmt_seconds(b, fd->sampler.cpu_seconds), note);
    }
    ph_html_cards_end(f);
    json_object_set_new(js, "view", json_string(fd->native ? ph_langview_lang_name(fd->lang.lang) : "native"));
    if (fd->native != NULL) {
        const char *lang = ph_langview_lang_name(fd->lang.lang);
        snprintf(note, sizeof note,
                 "%s view: each stack is its %s functions (%s of the samples have one); the runtime's own native "
                 "frames are the time of the function they run.  The native view, every frame, is below.",
                 lang, lang, ph_fmt_percent(b, fd->lang.with_lang, fd->lang.total));
        ph_html_note(f, note);
    }

    /* the interactive graph, drawn here from the stacks: an SVG the
     * container wrote is never shown (its script would run in the page) */
    if (fo != NULL && ph_folded_n_stacks(fo) > 0) {
        ph_flame_opts o;
        char title[400];

        ph_folded *pooled = root ? pooled_roots(fo) : NULL; /* a pool's threads one tower */

        ph_report_flame_opts(c->rd, &o, title, sizeof title);
        free(c->flame_svg);
        c->flame_svg = NULL;
        ph_html_flame_render_kept(f, pooled ? pooled : fo, &o, title, &c->flame_svg, &c->flame_svg_len);
        ph_folded_free(pooled);
        ph_html_note(f, "Click a frame to zoom.  " PH_REPORT_FLAME_SVG " beside this report is the same graph by itself, "
                        "to search (Ctrl-F) and to link to.");
    }
    if (fo == NULL || ph_folded_n_stacks(fo) == 0) {
        ph_html_problem(f, "No stacks to count (see the problems above).");
    } else if (ph_flame_tally(fo, root, &self, &tot) == 0) {
        json_object_set_new(js, "top_self",
                            top_rows(f, fo, self, total,
                                     wall ? "Top functions by self samples (the leaf; " PH_OFFCPU_FRAME ": blocked)"
                                          : "Top functions by self samples (on CPU)",
                                     perf_ns ? "self time#" : "self#", perf_ns));
        if (blk != NULL)
            json_object_set_new(jw, "top_blocking", top_rows(f, fo, blk, total,
                                                             "Top blocking calls (the frame under " PH_OFFCPU_FRAME ")",
                                                             "off CPU#", 0));
        json_object_set_new(js, "top_total", top_rows(f, fo, tot, total, "Top functions by total samples (on the stack)",
                                                      perf_ns ? "total time#" : "total#", perf_ns));
        if (root)
            json_object_set_new(js, "threads", threads(f, fo, total, perf_ns, wall));
        {
            size_t n = 0;
            uint32_t *ids = ranked(fo, self, &n);
            size_t nb = 0;
            uint32_t *bids = blk != NULL && off > 0 ? ranked(fo, blk, &nb) : NULL;
            char name[PH_HEADLINE_NAME + 64], view[64] = "";

            if (fd->native != NULL)
                snprintf(view, sizeof view, " (%s view)", ph_langview_lang_name(fd->lang.lang));
            size_t oncpu = 0; /* the top function on CPU: [off-cpu] is no function */

            while (oncpu < n && strcmp(ph_folded_name(fo, ids[oncpu], NULL), PH_OFFCPU_FRAME) == 0)
                oncpu++;
            if (bids != NULL && nb > 0 && oncpu < n && self[ids[oncpu]] > blk[bids[0]])
                /* wall time mostly on CPU (one idle sample is no headline) */
                snprintf(c->headline, sizeof c->headline, "%s samples%s, %s off CPU, top %s %s (self)",
                         ph_fmt_commify(b, (uint64_t)total), view, ph_fmt_percent(b2, off, total),
                         ph_fmt_name(name, sizeof name, ph_folded_name(fo, ids[oncpu], NULL), PH_HEADLINE_NAME),
                         ph_fmt_percent(b3, self[ids[oncpu]], total));
            else if (bids != NULL && nb > 0)
                snprintf(c->headline, sizeof c->headline, "%s samples%s, %s off CPU, top blocking call %s %s",
                         ph_fmt_commify(b, (uint64_t)total), view, ph_fmt_percent(b2, off, total),
                         ph_fmt_name(name, sizeof name, ph_folded_name(fo, bids[0], NULL), PH_HEADLINE_NAME),
                         ph_fmt_percent(b3, blk[bids[0]], total));
            else if (ids != NULL && n > 0 && perf != NULL)
                snprintf(c->headline, sizeof c->headline, "%s samples of %.40s (%s %s)%s, top %s %s (self)",
                         ph_fmt_commify(b, (uint64_t)json_integer_value(json_object_get(perf, "samples"))), pevent,
                         perf_ns ? ph_fmt_seconds(b2, total / 1e9) : ph_fmt_commify(b2, (uint64_t)total),
                         perf_ns ? "of CPU" : "events", view,
                         ph_fmt_name(name, sizeof name, ph_folded_name(fo, ids[0], NULL), PH_HEADLINE_NAME),
                         ph_fmt_percent(b3, self[ids[0]], total));
            else if (ids != NULL && n > 0)
                snprintf(c->headline, sizeof c->headline, "%s samples%s, top %s %s (self)",
                         ph_fmt_commify(b, (uint64_t)total), view,
                         ph_fmt_name(name, sizeof name, ph_folded_name(fo, ids[0], NULL), PH_HEADLINE_NAME),
                         ph_fmt_percent(b2, self[ids[0]], total));
            free(ids);
            free(bids);
        }
    }
    if (fd->native != NULL)
        native_view(c, js, root, perf_ns);
    sampler_figures(f, &fd->sampler);
    json_object_set_new(js, "samples", json_real(total));
    if (perf != NULL)
        json_object_set(js, "perf", perf);
    if (jw != NULL) {
        json_object_set_new(jw, "offcpu_samples", json_real(off));
        json_object_set_new(jw, "offcpu_percent", json_real(total > 0 ? 100 * off / total : 0));
        json_object_set_new(c->summary, "wall", jw);
    }
    if (fd->sampler.have) {
        json_object_set_new(js, "sampler",
                            json_pack("{s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:s}", "requested_hz", fd->sampler.requested_hz,
                                      "timer_hz", fd->sampler.timer_hz, "delivered_hz", fd->sampler.delivered_hz,
                                      "cpu_seconds", fd->sampler.cpu_seconds, "dropped", (json_int_t)fd->sampler.dropped,
                                      "truncated", (json_int_t)fd->sampler.truncated, "own",
                                      (json_int_t)fd->sampler.own, "text", fd->sampler.text));
        if (wall) /* per CPU-second: nothing on the wall clock */
            json_object_del(json_object_get(js, "sampler"), "delivered_hz");
    }
    json_object_set_new(c->summary, "flamegraph", js);
    free(self);
    free(tot);
    free(blk);
    ph_html_section_end(f);
}
