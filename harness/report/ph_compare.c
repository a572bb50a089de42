/* ph_compare.c - two runs of one mode side by side: what changed, as
 * text, JSON and compare.html (with a differential flamegraph), and
 * --fail-if expressions a CI pipeline can gate a merge on.
 *
 * Both runs are read in full (ph_rundata), so any function, site or
 * syscall can be asked about, not only the ones a summary kept.  A name
 * in one run only compares with 0 ("new" or "gone").
 */
#include "ph_report_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "ph_escape.h"
#include "ph_intern.h"
#include "ph_suggest.h"

/* ---- metrics ----------------------------------------------------------- */

typedef struct side {
    ph_rundata rd;
    double *self, *total; /* flamegraph: samples per name id */
    int root;
} side;

/* FN matches a callgrind function: its full "file:fn" name or its fn. */
static int
cg_matches(const ph_cg_fn *f, const char *fn)
{
    return strcmp(f->name, fn) == 0 || strcmp(f->fn, fn) == 0;
}

/* The value of METRIC[ARG] (ARG NULL: none) in S.  0 found, 1 when the
 * metric is unknown for this kind of run. */
static int
metric(const side *s, const char *metric, const char *arg, double *v)
{
    const ph_rundata *rd = &s->rd;

    *v = 0;
    if (rd->cg != NULL) {
        const ph_cg_info *info = ph_callgrind_get_info(rd->cg);
        char ev[64];
        size_t ml = strlen(metric);
        int incl = ml > 5 && strcmp(metric + ml - 5, "_incl") == 0, k;

        snprintf(ev, sizeof ev, "%.*s", (int)(incl ? ml - 5 : ml), metric);
        if ((k = ph_callgrind_event_index(rd->cg, ev)) >= 0) {
            if (arg == NULL && !incl) {
                *v = (double)info->totals[k];
                return 0;
            }
            if (arg == NULL)
                return 1;
            for (uint32_t i = 0; i < ph_callgrind_n_fns(rd->cg); i++) {
                ph_cg_fn f = ph_callgrind_get_fn(rd->cg, i);
                if (!cg_matches(&f, arg))
                    continue;
                if (incl) /* pieces of one function overlap: the largest */
                    *v = fmax(*v, (double)f.incl[k]);
                else
                    *v += (double)f.self[k];
            }
            return 0;
        }
    }
    if (rd->massif != NULL && ph_massif_get_info(rd->massif)->n_snapshots > 0) {
        const ph_massif_info *info = ph_massif_get_info(rd->massif);
        const ph_massif_snapshot *p = NULL;

        if (info->peak >= 0)
            p = ph_massif_get_snapshot(rd->massif, (size_t)info->peak);
        if (p == NULL) {
            for (size_t i = 0; i < ph_massif_n_snapshots(rd->massif); i++) {
                const ph_massif_snapshot *x = ph_massif_get_snapshot(rd->massif, i);
                if (p == NULL || x->heap + x->extra + x->stacks > p->heap + p->extra + p->stacks)
                    p = x;
            }
        }
        if (arg == NULL && strcmp(metric, "peak_heap") == 0) {
            *v = (double)p->heap;
            return 0;
        }
        if (arg == NULL && strcmp(metric, "peak_total") == 0) {
            *v = (double)(p->heap + p->extra + p->stacks);
            return 0;
        }
        if (arg == NULL && strcmp(metric, "peak_extra") == 0) {
            *v = (double)p->extra;
            return 0;
        }
        if (arg == NULL && strcmp(metric, "peak_stacks") == 0) {
            *v = (double)p->stacks;
            return 0;
        }
        if (arg != NULL && strcmp(metric, "heap") == 0) {
            const ph_massif_site_bytes *sb;
            size_t n = ph_massif_detail_sites(rd->massif, p->detail, &sb);
            for (size_t i = 0; i < n; i++) {
                const char *name = ph_massif_site_name(rd->massif, sb[i].site);
                if (strcmp(name, arg) == 0 ||
                    (strncmp(name, arg, strlen(arg)) == 0 && name[strlen(arg)] == ' '))
                    *v += (double)sb[i].bytes;
            }
            return 0;
        }
    }
    if (rd->st != NULL) {
        const ph_strace_info *info = ph_strace_get_info(rd->st);
        int i;

        if (arg == NULL && strcmp(metric, "syscalls") == 0) {
            *v = (double)info->calls;
            return 0;
        }
        if (arg == NULL && strcmp(metric, "errors") == 0) {
            *v = (double)info->errors;
            return 0;
        }
        if (arg == NULL && strcmp(metric, "syscall_time") == 0) {
            *v = (double)info->total_ns / 1e9;
            return 0;
        }
        if (arg != NULL && (strcmp(metric, "calls") == 0 || strcmp(metric, "time") == 0 || strcmp(metric, "errors") == 0)) {
            if ((i = ph_strace_find_syscall(rd->st, arg)) >= 0) {
                ph_strace_sys sy = ph_strace_get_syscall(rd->st, (size_t)i);
                *v = metric[0] == 'c' ? (double)sy.calls : metric[0] == 't' ? (double)sy.total_ns / 1e9 : (double)sy.errors;
            }
            return 0;
        }
    }
    if (strcmp(metric, "offcpu") == 0) {
        /* the wall clock: the share of the samples blocked ([fn]: with fn on the stack) */
        double total = rd->flame.folded ? ph_folded_get_stats(rd->flame.folded)->total : 0;

        if (rd->flame.folded == NULL || !ph_flame_is_wall(rd))
            return 1;
        *v = total > 0 ? 100 * ph_folded_sum_with(rd->flame.folded, arg, 1) / total : 0;
        return 0;
    }
    if (strcmp(metric, "inuse_space_growth") == 0) {
        /* the heap sampler: bytes in use grown since the first snapshot ([fn]: with fn on the stack) */
        if (rd->heap.growth == NULL)
            return 1;
        *v = ph_folded_sum_with(rd->heap.growth, arg, 0);
        return 0;
    }
    if (strcmp(metric, "inuse_space") == 0 || strcmp(metric, "alloc_space") == 0) {
        /* the heap sampler: bytes in use at the end, or allocated ([fn]: with fn on the stack) */
        const ph_folded *fo = rd->heap.view[metric[0] == 'i' ? PH_HEAP_INUSE_SPACE : PH_HEAP_ALLOC_SPACE];

        if (fo == NULL)
            return 1;
        *v = ph_folded_sum_with(fo, arg, 0);
        return 0;
    }
    if (rd->flame.folded != NULL && s->self != NULL) {
        const ph_folded *fo = rd->flame.folded;
        double total = ph_folded_get_stats(fo)->total;
        /* perf's folded counts are its samples' periods (ph_run_convert.c's
         * convert.json): nanoseconds of CPU for cpu-clock, events else;
         * its samples are counted there */
        json_t *perf = json_is_integer(json_object_get(rd->convert, "samples")) ? rd->convert : NULL;
        const char *unit = perf ? json_string_value(json_object_get(perf, "unit")) : NULL;

        if (arg == NULL && strcmp(metric, "samples") == 0) {
            *v = perf ? (double)json_integer_value(json_object_get(perf, "samples")) : total;
            return 0;
        }
        if (arg == NULL && perf != NULL && unit != NULL && strcmp(unit, "nanoseconds") == 0 &&
            strcmp(metric, "cpu_time") == 0) {
            *v = total / 1e9;
            return 0;
        }
        if (arg == NULL && perf != NULL && (unit == NULL || strcmp(unit, "nanoseconds") != 0) &&
            strcmp(metric, "events") == 0) {
            *v = total;
            return 0;
        }
        if (arg != NULL && (strcmp(metric, "samples") == 0 || strcmp(metric, "self") == 0)) {
            for (uint32_t i = 0; i < ph_folded_n_names(fo); i++)
                if (strcmp(ph_folded_name(fo, i, NULL), arg) == 0)
                    *v = total > 0 ? 100 * (metric[1] == 'a' ? s->total[i] : s->self[i]) / total : 0;
            return 0;
        }
    }
    return 1;
}

static const char *const metric_help =
    "callgrind: ir (or any event: dr, d1mr, ...), EVENT[fn], EVENT_incl[fn]; massif: peak_heap, peak_total, "
    "peak_extra, peak_stacks, heap[site]; strace: syscalls, errors, syscall_time, calls[name], time[name], "
    "errors[name]; flamegraph: samples, samples[fn], self[fn]; perf: those and cpu_time (seconds of CPU, "
    "cpu-clock) or events (another event); wall: those and offcpu, offcpu[fn] (per cent "
    "of the samples); heap: inuse_space, inuse_space[fn], alloc_space, alloc_space[fn], inuse_space_growth, "
    "inuse_space_growth[fn] (bytes)";

/* ---- --fail-if --------------------------------------------------------- */

typedef struct cond {
    char metric[64];
    char arg[512];
    int has_arg;
    char op[3];
    int kind;       /* 0: B's value, 1: absolute change, 2: relative change (%) */
    double value;
} cond;

static int
parse_cond(const char *expr, cond *c, ph_error_t *err)
{
    const char *p = expr, *s;
    char *end;
    double mult = 1;

    memset(c, 0, sizeof *c);
    while (isspace((unsigned char)*p))
        p++;
    for (s = p; isalnum((unsigned char)*p) || *p == '_'; p++)
        ;
    if (p == s || (size_t)(p - s) >= sizeof c->metric)
        return ph_bad_input(err, "--fail-if `%s`: no metric before the comparison", expr);
    snprintf(c->metric, sizeof c->metric, "%.*s", (int)(p - s), s);
    for (char *m = c->metric; *m; m++)
        *m = (char)tolower((unsigned char)*m);
    if (*p == '[') {
        const char *close = strrchr(p, ']');
        if (close == NULL || (size_t)(close - p - 1) >= sizeof c->arg || close == p + 1)
            return ph_bad_input(err, "--fail-if `%s`: `[` without a name and its `]`", expr);
        snprintf(c->arg, sizeof c->arg, "%.*s", (int)(close - p - 1), p + 1);
        c->has_arg = 1;
        p = close + 1;
    }
    while (isspace((unsigned char)*p))
        p++;
    if ((p[0] == '>' || p[0] == '<') && p[1] == '=') {
        snprintf(c->op, sizeof c->op, "%.2s", p);
        p += 2;
    } else if (p[0] == '>' || p[0] == '<') {
        snprintf(c->op, sizeof c->op, "%.1s", p);
        p++;
    } else {
        return ph_bad_input(err, "--fail-if `%s`: expected >, <, >= or <= after `%s`", expr, c->metric);
    }
    while (isspace((unsigned char)*p))
        p++;
    c->kind = (*p == '+' || *p == '-') ? 1 : 0;
    errno = 0;
    c->value = strtod(p, &end);
    if (end == p || errno != 0 || !isfinite(c->value))
        return ph_bad_input(err, "--fail-if `%s`: `%s` is not a number", expr, p);
    p = end;
    if (*p == 'k' || *p == 'K')
        mult = 1e3, p++;
    else if (*p == 'M')
        mult = 1e6, p++;
    else if (*p == 'G')
        mult = 1e9, p++;
    c->value *= mult;
    if (*p == '%') {
        if (c->kind == 1)
            c->kind = 2;
        p++;
    }
    while (isspace((unsigned char)*p))
        p++;
    if (*p != '\0')
        return ph_bad_input(err, "--fail-if `%s`: unexpected `%s` at the end", expr, p);
    return 0;
}

int
ph_compare_check(const char *expr, ph_error_t *err)
{
    cond c;

    return parse_cond(expr, &c, err);
}

static int
holds(double x, const char *op, double v)
{
    return strcmp(op, ">") == 0 ? x > v : strcmp(op, "<") == 0 ? x < v : strcmp(op, ">=") == 0 ? x >= v : x <= v;
}

/* ---- the comparison's rows --------------------------------------------- */

typedef struct row {
    char *name;
    double a, b;
} row;

typedef struct table {
    const char *title, *unit; /* unit: "bytes", "s", "%", "" */
    row *v;
    size_t n, cap;
    ph_u64map by_name;        /* for table_slot */
} table;

static int
table_add(table *t, const char *name, double a, double b)
{
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        row *nv = realloc(t->v, nc * sizeof *nv);
        if (nv == NULL)
            return -1;
        t->v = nv;
        t->cap = nc;
    }
    t->v[t->n].name = strdup(name);
    if (t->v[t->n].name == NULL)
        return -1;
    t->v[t->n].a = a;
    t->v[t->n].b = b;
    t->n++;
    return 0;
}

/* The row of NAME, added (0, 0) when new; -1 on ENOMEM. */
static ssize_t
table_slot(table *t, const char *name)
{
    uint64_t h = ph_hash_bytes(name, strlen(name), PH_HASH_INIT);
    uint32_t k = ph_u64map_get(&t->by_name, h);

    while (k != UINT32_MAX && strcmp(t->v[k].name, name) != 0)
        k = ph_u64map_get(&t->by_name, h = h * 31 + 7); /* a collision: probe on */
    if (k != UINT32_MAX)
        return k;
    if (table_add(t, name, 0, 0) < 0 || ph_u64map_put(&t->by_name, h, (uint32_t)(t->n - 1)) < 0)
        return -1;
    return (ssize_t)(t->n - 1);
}

/* Drop the rows whose A and B are equal: a "largest changes" table lists
 * what changed, and its count says how many did.  The name index is
 * stale afterwards (the table is only sorted and shown from then on). */
static void
table_drop_unchanged(table *t)
{
    size_t o = 0;

    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].a == t->v[i].b)
            free(t->v[i].name);
        else
            t->v[o++] = t->v[i];
    }
    t->n = o;
}

static void
table_free(table *t)
{
    ph_u64map_free(&t->by_name);
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].name);
    free(t->v);
}

static int
cmp_delta(const void *x, const void *y)
{
    const row *a = x, *b = y;
    double da = fabs(a->b - a->a), db = fabs(b->b - b->a);

    if (da != db)
        return da < db ? 1 : -1;
    return strcmp(a->name, b->name);
}

static const char *
fmt_value(char buf[PH_FMT_LEN], double v, const char *unit)
{
    if (strcmp(unit, "bytes") == 0)
        return ph_fmt_bytes(buf, v);
    if (strcmp(unit, "s") == 0)
        return ph_fmt_seconds(buf, v);
    if (strcmp(unit, "%") == 0) {
        snprintf(buf, PH_FMT_LEN, "%.2f %%", v);
        return buf;
    }
    if (v == floor(v) && fabs(v) < 1e18)
        return ph_fmt_commify_signed(buf, (int64_t)v);
    snprintf(buf, PH_FMT_LEN, "%.3f", v);
    return buf;
}

/* Function name -> index, by the name's 64-bit hash (a collision keeps
 * the first; names are checked on lookup). */
static int
cg_index(const ph_callgrind *cg, ph_u64map *m)
{
    for (uint32_t i = 0; i < ph_callgrind_n_fns(cg); i++) {
        const char *name = ph_callgrind_get_fn(cg, i).name;
        uint64_t h = ph_hash_bytes(name, strlen(name), PH_HASH_INIT);
        if (ph_u64map_get(m, h) == UINT32_MAX && ph_u64map_put(m, h, i) < 0)
            return -1;
    }
    return 0;
}

static int
cg_find(const ph_callgrind *cg, const ph_u64map *m, const char *name, ph_cg_fn *out)
{
    uint32_t i = ph_u64map_get(m, ph_hash_bytes(name, strlen(name), PH_HASH_INIT));

    if (i == UINT32_MAX)
        return 0;
    *out = ph_callgrind_get_fn(cg, i);
    return strcmp(out->name, name) == 0;
}

/* Every function of either run whose event-K self or inclusive cost
 * changed, A's first. */
static int
cg_rows(const ph_callgrind *a, const ph_callgrind *b, size_t k, table *self, table *incl)
{
    ph_u64map ia = { 0 }, ib = { 0 };
    int rc = cg_index(a, &ia) < 0 || cg_index(b, &ib) < 0 ? -1 : 0;

    for (uint32_t i = 0; rc == 0 && i < ph_callgrind_n_fns(a); i++) {
        ph_cg_fn f = ph_callgrind_get_fn(a, i), g;
        int in_b = cg_find(b, &ib, f.name, &g);
        double sb = in_b ? (double)g.self[k] : 0, ib_ = in_b ? (double)g.incl[k] : 0;

        if ((double)f.self[k] != sb && table_add(self, f.name, (double)f.self[k], sb) < 0)
            rc = -1;
        if ((double)f.incl[k] != ib_ && table_add(incl, f.name, (double)f.incl[k], ib_) < 0)
            rc = -1;
    }
    for (uint32_t i = 0; rc == 0 && i < ph_callgrind_n_fns(b); i++) {
        ph_cg_fn g = ph_callgrind_get_fn(b, i), f;

        if (cg_find(a, &ia, g.name, &f))
            continue;
        if (g.self[k] != 0 && table_add(self, g.name, 0, (double)g.self[k]) < 0)
            rc = -1;
        if (g.incl[k] != 0 && table_add(incl, g.name, 0, (double)g.incl[k]) < 0)
            rc = -1;
    }
    ph_u64map_free(&ia);
    ph_u64map_free(&ib);
    return rc;
}

/* The top-level sites of the peak snapshot: name -> bytes, added to T's
 * A (WHICH 0) or B column. */
static int
massif_rows(const ph_massif *m, int which, table *t)
{
    const ph_massif_info *info = ph_massif_get_info(m);
    const ph_massif_snapshot *p = info->peak >= 0 ? ph_massif_get_snapshot(m, (size_t)info->peak) : NULL;
    const ph_massif_site_bytes *sb;
    size_t n = p ? ph_massif_detail_sites(m, p->detail, &sb) : 0;

    for (size_t i = 0; i < n; i++) {
        ssize_t k = table_slot(t, ph_massif_site_name(m, sb[i].site));
        if (k < 0)
            return -1;
        *(which ? &t->v[k].b : &t->v[k].a) += (double)sb[i].bytes;
    }
    return 0;
}

static int
strace_rows(const ph_strace *a, const ph_strace *b, table *calls, table *time, table *errs)
{
    const ph_strace *runs[2] = { a, b };

    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < ph_strace_n_syscalls(runs[r]); i++) {
            ph_strace_sys s = ph_strace_get_syscall(runs[r], i), o = { s.name, 0, 0, 0, 0, 0 };
            int j = ph_strace_find_syscall(runs[!r], s.name);

            if (r == 1 && j >= 0)
                continue; /* both have it: done from A */
            if (j >= 0)
                o = ph_strace_get_syscall(runs[!r], (size_t)j);
            if (r == 1) {
                ph_strace_sys t = s;
                s = o;
                o = t;
            }
            if ((s.calls != o.calls && table_add(calls, s.name ? s.name : o.name, (double)s.calls, (double)o.calls) < 0) ||
                (s.total_ns != o.total_ns &&
                 table_add(time, s.name ? s.name : o.name, (double)s.total_ns / 1e9, (double)o.total_ns / 1e9) < 0) ||
                (s.errors != o.errors && table_add(errs, s.name ? s.name : o.name, (double)s.errors, (double)o.errors) < 0))
                return -1;
        }
    return 0;
}

/* Shares of samples per function name, A and B. */
static int
flame_rows(const side *a, const side *b, int self, table *t)
{
    const side *sides[2] = { a, b };

    for (int r = 0; r < 2; r++) {
        const ph_folded *fo = sides[r]->rd.flame.folded;
        double total = ph_folded_get_stats(fo)->total;
        for (uint32_t i = 0; i < ph_folded_n_names(fo); i++) {
            const char *name = ph_folded_name(fo, i, NULL);
            double v = total > 0 ? 100 * (self ? sides[r]->self : sides[r]->total)[i] / total : 0;
            ssize_t k;
            if (v == 0)
                continue;
            if ((k = table_slot(t, name)) < 0)
                return -1;
            *(r ? &t->v[k].b : &t->v[k].a) = v;
        }
    }
    return 0;
}

/* ---- putting it together ----------------------------------------------- */

#define MAX_TABLES 8

typedef struct comparison {
    side a, b;
    table totals;             /* the run-wide figures, in a fixed order */
    table t[MAX_TABLES];      /* per function / site / syscall, largest change first */
    size_t nt;
    char *diff;               /* differential folded stacks, or NULL */
    size_t diff_len;
    char diff_title[128];
    json_t *checks;           /* the --fail-if results */
} comparison;

static table *
new_table(comparison *c, const char *title, const char *unit)
{
    table *t = &c->t[c->nt++];

    memset(t, 0, sizeof *t);
    t->title = title;
    t->unit = unit;
    return t;
}

/* Folded text of a parsed set of stacks (to diff two runs' stacks). */
static char *
folded_text(const ph_folded *f, size_t *len)
{
    char *buf = NULL;
    FILE *m = open_memstream(&buf, len);

    if (m == NULL)
        return NULL;
    for (size_t i = 0; i < ph_folded_n_stacks(f); i++) {
        ph_folded_stack s = ph_folded_get_stack(f, i);
        for (uint32_t d = 0; d < s.depth; d++) {
            fputs(d ? ";" : "", m);
            fputs(ph_folded_name(f, s.frames[d], NULL), m);
        }
        fprintf(m, " %.17g\n", s.count);
    }
    fclose(m);
    return buf;
}

static char *
cg_folded_text(const ph_callgrind *cg, size_t *len)
{
    char *buf = NULL;
    FILE *m = open_memstream(&buf, len);
    ph_error_t err = NULL;

    if (m == NULL)
        return NULL;
    if (ph_callgrind_write_folded(cg, 0, m, &err) < 0)
        ph_error_free(&err);
    fclose(m);
    return buf;
}

static void
make_diff(comparison *c, char *fa, size_t la, char *fb, size_t lb, int normalise)
{
    FILE *m;
    ph_error_t err = NULL;

    if (fa != NULL && fb != NULL && (m = open_memstream(&c->diff, &c->diff_len)) != NULL) {
        if (ph_folded_diff(fa, la, fb, lb, normalise, m, NULL, NULL, &err) < 0)
            ph_error_free(&err);
        fclose(m);
    }
    free(fa);
    free(fb);
}

static const char *const flame_totals[] = { "samples", "cpu_time", "events" };

static int
build(comparison *c)
{
    ph_rundata *a = &c->a.rd, *b = &c->b.rd;
    char *fa, *fb;
    size_t la = 0, lb = 0;

    c->totals.title = "totals";
    c->totals.unit = "";
    if (a->cg && b->cg) {
        const ph_cg_info *ia = ph_callgrind_get_info(a->cg);
        for (size_t k = 0; k < ia->n_events; k++) {
            int kb = ph_callgrind_event_index(b->cg, ia->events[k]);
            if (kb >= 0 &&
                table_add(&c->totals, ia->events[k], (double)ia->totals[k],
                          (double)ph_callgrind_get_info(b->cg)->totals[kb]) < 0)
                return -1;
        }
        if (ia->n_events > 0 && ph_callgrind_event_index(b->cg, ia->events[0]) == 0) {
            /* two statements: the order of a call's arguments is unspecified */
            table *self = new_table(c, "self cost (callgrind_annotate), largest changes", "");
            table *incl = new_table(c, "inclusive cost (--inclusive=yes), largest changes", "");
            if (cg_rows(a->cg, b->cg, 0, self, incl) < 0)
                return -1;
        }
        fa = cg_folded_text(a->cg, &la);
        fb = cg_folded_text(b->cg, &lb);
        snprintf(c->diff_title, sizeof c->diff_title, "Inclusive %s: red grew, blue shrank", ia->n_events ? ia->events[0] : "");
        make_diff(c, fa, la, fb, lb, 0);
    }
    if (a->massif && b->massif) {
        static const char *const names[] = { "peak_heap", "peak_extra", "peak_stacks", "peak_total" };
        table *t = new_table(c, "allocation sites at the peak", "bytes");
        for (size_t i = 0; i < 4; i++) {
            double va, vb;
            if (metric(&c->a, names[i], NULL, &va) == 0 && metric(&c->b, names[i], NULL, &vb) == 0 &&
                table_add(&c->totals, names[i], va, vb) < 0)
                return -1;
        }
        c->totals.unit = "bytes";
        if (massif_rows(a->massif, 0, t) < 0 || massif_rows(b->massif, 1, t) < 0)
            return -1;
    }
    if (a->st && b->st) {
        static const char *const names[] = { "syscalls", "errors", "syscall_time" };
        for (size_t i = 0; i < 3; i++) {
            double va, vb;
            if (metric(&c->a, names[i], NULL, &va) == 0 && metric(&c->b, names[i], NULL, &vb) == 0 &&
                table_add(&c->totals, names[i], va, vb) < 0)
                return -1;
        }
        table *calls = new_table(c, "calls per syscall", "");
        table *time = new_table(c, "time per syscall", "s");
        table *errs = new_table(c, "errors per syscall", "");
        if (strace_rows(a->st, b->st, calls, time, errs) < 0)
            return -1;
    }
    if (a->flame.folded && b->flame.folded && c->a.self && c->b.self) {
        double va, vb;
        table *self = new_table(c, "share of samples on CPU (self), largest changes", "%");
        table *total = new_table(c, "share of samples on the stack (total), largest changes", "%");
        /* the run-wide figures in their own unit: perf's periods are
         * nanoseconds of CPU (or events), not samples */
        for (size_t i = 0; i < sizeof flame_totals / sizeof flame_totals[0]; i++)
            if (metric(&c->a, flame_totals[i], NULL, &va) == 0 && metric(&c->b, flame_totals[i], NULL, &vb) == 0 &&
                table_add(&c->totals, flame_totals[i], va, vb) < 0)
                return -1;
        if (flame_rows(&c->a, &c->b, 1, self) < 0 || flame_rows(&c->a, &c->b, 0, total) < 0)
            return -1;
        fa = folded_text(a->flame.folded, &la);
        fb = folded_text(b->flame.folded, &lb);
        snprintf(c->diff_title, sizeof c->diff_title, "CPU samples, B against A scaled to B's total: red grew, blue shrank");
        make_diff(c, fa, la, fb, lb, 1);
    }
    for (size_t i = 0; i < c->nt; i++) {
        table_drop_unchanged(&c->t[i]);
        qsort(c->t[i].v, c->t[i].n, sizeof *c->t[i].v, cmp_delta);
    }
    return 0;
}

/* The unit of METRIC (a totals row, or a --fail-if metric without its
 * [name]): samples alone is a count; samples[fn] and self[fn] are shares,
 * which the caller knows by the [name]. */
static const char *
unit_of(const comparison *c, const char *metric_name)
{
    if (strncmp(metric_name, "peak_", 5) == 0 || strcmp(metric_name, "heap") == 0 ||
        strcmp(metric_name, "inuse_space") == 0 || strcmp(metric_name, "alloc_space") == 0 ||
        strcmp(metric_name, "inuse_space_growth") == 0)
        return "bytes";
    if (strcmp(metric_name, "offcpu") == 0)
        return "%";
    if (strcmp(metric_name, "syscall_time") == 0 || strcmp(metric_name, "time") == 0 ||
        strcmp(metric_name, "cpu_time") == 0)
        return "s";
    if (c->a.rd.flame.folded && strcmp(metric_name, "self") == 0)
        return "%";
    return "";
}

/* ---- the names a [name] may take -------------------------------------- */

/* The names a METRIC[name] could mean in a run, looked through for WANT;
 * with COLLECT, kept (up to NAMES_MAX, each short enough to suggest) for
 * a did-you-mean when it is in neither run. */
#define NAMES_MAX 100000

typedef struct names {
    const char *want;
    int found, collect;
    char **v;
    size_t n, cap;
} names;

static void
name_seen(names *ns, const char *name, size_t len)
{
    char **nv;

    if (strlen(ns->want) == len && memcmp(ns->want, name, len) == 0)
        ns->found = 1;
    if (!ns->collect || len == 0 || len > PH_SUGGEST_MAX || ns->n == NAMES_MAX)
        return;
    if (ns->n == ns->cap) {
        if ((nv = realloc(ns->v, (ns->cap ? ns->cap * 2 : 256) * sizeof *nv)) == NULL)
            return;
        ns->v = nv;
        ns->cap = ns->cap ? ns->cap * 2 : 256;
    }
    if ((ns->v[ns->n] = strndup(name, len)) != NULL)
        ns->n++;
}

static void
folded_names(const ph_folded *fo, names *ns)
{
    for (uint32_t i = 0; fo != NULL && i < ph_folded_n_names(fo); i++) {
        size_t len = 0;
        const char *name = ph_folded_name(fo, i, &len);

        name_seen(ns, name, len);
    }
}

/* What a [name] of METRIC is, for the error: "function", "syscall"... */
static const char *
metric_names(const side *s, const char *metric, names *ns)
{
    const ph_rundata *rd = &s->rd;
    size_t ml = strlen(metric);
    char ev[64];

    snprintf(ev, sizeof ev, "%.*s", (int)(ml > 5 && strcmp(metric + ml - 5, "_incl") == 0 ? ml - 5 : ml), metric);
    if (rd->cg != NULL && ph_callgrind_event_index(rd->cg, ev) >= 0) {
        for (uint32_t i = 0; i < ph_callgrind_n_fns(rd->cg); i++) {
            ph_cg_fn f = ph_callgrind_get_fn(rd->cg, i);
            name_seen(ns, f.fn, strlen(f.fn));
            name_seen(ns, f.name, strlen(f.name));
        }
        return "function";
    }
    if (strcmp(metric, "heap") == 0) {
        for (size_t i = 0; rd->massif != NULL && i < ph_massif_n_snapshots(rd->massif); i++) {
            const ph_massif_site_bytes *sb;
            size_t n = ph_massif_detail_sites(rd->massif, ph_massif_get_snapshot(rd->massif, i)->detail, &sb);
            for (size_t k = 0; k < n; k++) {
                const char *name = ph_massif_site_name(rd->massif, sb[k].site);
                /* "fn (file.c:12)" is asked for as fn, or whole */
                name_seen(ns, name, strcspn(name, " "));
                name_seen(ns, name, strlen(name));
            }
        }
        return "allocation site";
    }
    if (strcmp(metric, "calls") == 0 || strcmp(metric, "time") == 0 || strcmp(metric, "errors") == 0) {
        for (size_t i = 0; rd->st != NULL && i < ph_strace_n_syscalls(rd->st); i++) {
            ph_strace_sys sy = ph_strace_get_syscall(rd->st, i);
            name_seen(ns, sy.name, strlen(sy.name));
        }
        return "syscall";
    }
    if (strncmp(metric, "inuse_space", 11) == 0 || strcmp(metric, "alloc_space") == 0) {
        for (size_t v = 0; v < PH_HEAP_VIEWS; v++)
            folded_names(rd->heap.view[v], ns);
        folded_names(rd->heap.growth, ns);
        folded_names(rd->heap.growth_base, ns);
        return "function";
    }
    folded_names(rd->flame.folded, ns);
    return "function";
}

/* A [name] in neither run is a slip, not a 0: an error naming it, with
 * the name nearest to it in either run.  0, or -1 and *err. */
static int
check_named(const comparison *c, const char *expr, const char *metric, const char *arg, ph_error_t *err)
{
    names ns = { .want = arg };
    const char *what = metric_names(&c->a, metric, &ns), *near;

    metric_names(&c->b, metric, &ns);
    if (ns.found)
        return 0;
    ns.collect = 1;
    metric_names(&c->a, metric, &ns);
    metric_names(&c->b, metric, &ns);
    near = ph_suggest(arg, (const char *const *)ns.v, ns.n);
    ph_bad_input(err, "--fail-if `%s`: no %s `%s` in either run (%s, %s)%s%s%s", expr, what, arg, c->a.rd.name,
                 c->b.rd.name, near ? "; did you mean `" : "", near ? near : "", near ? "`?" : "");
    for (size_t i = 0; i < ns.n; i++)
        free(ns.v[i]);
    free(ns.v);
    return -1;
}

/* Evaluate the --fail-if expressions; failed lines into *FAILED. */
static int
check_all(comparison *c, const ph_compare_opts *o, char **failed, ph_error_t *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int any = 0;

    c->checks = json_array();
    if (m == NULL || c->checks == NULL)
        return ph_fail(err, ENOMEM, "check --fail-if");
    for (size_t i = 0; i < o->n_fail_if; i++) {
        cond k;
        double va, vb, x, change;
        char ba[PH_FMT_LEN], bb[PH_FMT_LEN], bc[PH_FMT_LEN];
        const char *unit;
        int hit;

        if (parse_cond(o->fail_if[i], &k, err) < 0 ||
            metric(&c->a, k.metric, k.has_arg ? k.arg : NULL, &va) != 0 ||
            metric(&c->b, k.metric, k.has_arg ? k.arg : NULL, &vb) != 0 ||
            (k.has_arg && check_named(c, o->fail_if[i], k.metric, k.arg, err) < 0)) {
            if (*err == NULL) {
                ph_bad_input(err, "--fail-if `%s`: `%s%s` is not a metric of a %s run", o->fail_if[i], k.metric,
                             k.has_arg ? "[...]" : "", c->b.rd.mode);
                ph_error_hint(err, "metrics: %s", metric_help);
            }
            fclose(m);
            free(buf);
            return -1;
        }
        unit = k.has_arg && strcmp(k.metric, "samples") == 0 ? "%" : unit_of(c, k.metric);
        change = va != 0 ? 100 * (vb - va) / fabs(va) : vb == 0 ? 0 : vb > 0 ? INFINITY : -INFINITY;
        x = k.kind == 0 ? vb : k.kind == 1 ? vb - va : change;
        hit = holds(x, k.op, k.value);
        json_array_append_new(c->checks, json_pack("{s:s, s:f, s:f, s:b}", "expr", o->fail_if[i], "a", va, "b", vb,
                                                   "failed", hit));
        if (hit) {
            fprintf(m, "--fail-if %s: %s%s%s%s went from %s to %s (%s)\n", o->fail_if[i], k.metric, k.has_arg ? "[" : "",
                    k.has_arg ? k.arg : "", k.has_arg ? "]" : "", fmt_value(ba, va, unit), fmt_value(bb, vb, unit),
                    ph_fmt_change(bc, va, vb));
            any = 1;
        }
    }
    fclose(m);
    if (any)
        *failed = buf;
    else
        free(buf);
    return any;
}

static void
text_tables(FILE *out, const comparison *c, size_t top)
{
    char ba[PH_FMT_LEN], bb[PH_FMT_LEN], bc[PH_FMT_LEN];
    const table *all[MAX_TABLES + 1];
    size_t n = 0;

    fprintf(out, "compare %s (%s): %s -> %s\n", c->b.rd.service, c->b.rd.mode, c->a.rd.name, c->b.rd.name);
    all[n++] = &c->totals;
    for (size_t i = 0; i < c->nt; i++)
        all[n++] = &c->t[i];
    for (size_t i = 0; i < n; i++) {
        const table *t = all[i];
        if (t->n == 0)
            continue;
        fprintf(out, "\n%s\n  %-56s %16s %16s %10s\n", t->title, "", "A", "B", "change");
        for (size_t r = 0; r < t->n && (t == &c->totals || r < top); r++) {
            const char *unit = t == &c->totals ? unit_of(c, t->v[r].name) : t->unit;
            const char *name = t->v[r].name;
            size_t nl = strlen(name);
            /* a long name keeps its end: the function, not the directory */
            if (nl > 56)
                fprintf(out, "  ...%-53s", name + nl - 53);
            else
                fprintf(out, "  %-56s", name);
            fprintf(out, " %16s %16s %10s\n", fmt_value(ba, t->v[r].a, unit), fmt_value(bb, t->v[r].b, unit),
                    ph_fmt_change(bc, t->v[r].a, t->v[r].b));
        }
        if (t != &c->totals && t->n > top)
            fprintf(out, "  ... %zu more\n", t->n - top);
    }
    for (size_t i = 0; i < json_array_size(c->checks); i++) {
        json_t *k = json_array_get(c->checks, i);
        if (i == 0)
            fputs("\n--fail-if\n", out);
        fprintf(out, "  %-40s %s\n", json_string_value(json_object_get(k, "expr")),
                json_is_true(json_object_get(k, "failed")) ? "FAILED" : "ok");
    }
}

/* The tables as text for a terminal: names of functions, sites and
 * syscalls are the artifacts' bytes, so the whole text is escaped on its
 * way out, not each name where it is printed. */
static void
write_text(FILE *out, const comparison *c, size_t top)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);

    if (m == NULL)
        return;
    text_tables(m, c, top);
    if (fclose(m) == 0)
        ph_escape_write(out, text, len, PH_ESCAPE_BACKSLASH);
    free(text);
}

static json_t *
table_json(const table *t, size_t top)
{
    json_t *rows = json_array();

    for (size_t r = 0; r < t->n && r < top; r++)
        json_array_append_new(rows, json_pack("{s:s, s:f, s:f}", "name", t->v[r].name, "a", t->v[r].a, "b", t->v[r].b));
    return json_pack("{s:s, s:s, s:I, s:o}", "title", t->title, "unit", t->unit, "changed", (json_int_t)t->n, "rows",
                     rows);
}

static void
write_json(FILE *out, const comparison *c, size_t top)
{
    json_t *tables = json_array(), *j;

    for (size_t i = 0; i < c->nt; i++)
        json_array_append_new(tables, table_json(&c->t[i], top));
    j = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}, s:o, s:o, s:O}", "service", c->b.rd.service, "mode",
                  c->b.rd.mode, "a", "dir", c->a.rd.dir, "run", c->a.rd.name, "b", "dir", c->b.rd.dir, "run",
                  c->b.rd.name, "totals", table_json(&c->totals, SIZE_MAX), "tables", tables, "fail_if", c->checks);
    json_dumpf(j, out, JSON_INDENT(2));
    fputc('\n', out);
    json_decref(j);
}

static void
html_table(ph_mw *f, const comparison *c, const table *t, size_t top)
{
    static const char *const heads[] = { "name", "A#", "B#", "change#", "" };
    char ba[PH_FMT_LEN], bb[PH_FMT_LEN], bc[PH_FMT_LEN];
    double maxd = 0;

    for (size_t r = 0; r < t->n && r < top; r++)
        maxd = fmax(maxd, fabs(t->v[r].b - t->v[r].a));
    ph_html_table(f, heads, 5);
    for (size_t r = 0; r < t->n && (t == &c->totals || r < top); r++) {
        const row *w = &t->v[r];
        const char *unit = t == &c->totals ? unit_of(c, w->name) : t->unit;
        double rel = w->a != 0 ? (w->b - w->a) / fabs(w->a) : (w->b > 0 ? 1 : 0);
        PH_MW_RAW(f, "<tr><td class=\"name\">");
        ph_mw_text(f, w->name);
        PH_MW_RAW(f, "</td>");
        ph_html_num(f, w->a, fmt_value(ba, w->a, unit));
        ph_html_num(f, w->b, fmt_value(bb, w->b, unit));
        PH_MW_FMT(f, "<td class=\"n %s\" data-v=\"%.17g\">", w->b > w->a ? "up" : w->b < w->a ? "down" : "",
                isfinite(rel) ? rel : 0.0);
        ph_mw_text(f, ph_fmt_change(bc, w->a, w->b));
        PH_MW_RAW(f, "</td>");
        ph_html_bar(f, maxd > 0 ? fabs(w->b - w->a) / maxd : 0);
        PH_MW_RAW(f, "</tr>\n");
    }
    ph_html_table_end(f);
    if (t != &c->totals && t->n > top)
        PH_MW_FMT(f, "<p class=\"note\">%zu more changed.</p>\n", t->n - top);
}

static int
write_html(const comparison *c, const char *path, size_t top, const char *failed, ph_error_t *err)
{
    char title[600], sub[1200], dir[PATH_MAX], *slash;
    const char *page = NULL;
    size_t len = 0;
    ph_mw w, *f = &w;
    int rc;

    if (ph_mw_open_mem(&w, PH_MW_HTML) < 0)
        return ph_fail(err, ENOMEM, "write `%s`", path);
    snprintf(title, sizeof title, "%s · %s: compare", c->b.rd.service, c->b.rd.mode);
    snprintf(sub, sizeof sub, "A = %s, B = %s", c->a.rd.name, c->b.rd.name);
    ph_html_begin(f, title, title, sub);
    if (failed != NULL) {
        PH_MW_RAW(f, "<div class=\"headline\">");
        ph_mw_text(f, failed);
        PH_MW_RAW(f, "</div>");
    }
    ph_html_main(f);
    ph_html_section(f, "totals", "Totals");
    html_table(f, c, &c->totals, top);
    ph_html_section_end(f);
    if (c->diff != NULL && c->diff_len > 0) {
        ph_folded *fo;
        ph_error_t e2 = NULL;
        ph_html_section(f, "diff", "Differential flamegraph");
        ph_html_note(f, c->diff_title);
        if ((fo = ph_folded_parse(c->diff, c->diff_len, 0, &e2)) != NULL) {
            ph_flame_opts o;
            ph_flame_opts_init(&o);
            o.title = "B against A";
            o.subtitle = c->diff_title;
            ph_html_flame_render(f, fo, &o, "differential flamegraph");
            ph_folded_free(fo);
        } else {
            ph_html_problem(f, e2->msg);
            ph_error_free(&e2);
        }
        ph_html_section_end(f);
    }
    for (size_t i = 0; i < c->nt; i++) {
        char id[16];
        snprintf(id, sizeof id, "t%zu", i);
        ph_html_section(f, id, c->t[i].title);
        if (c->t[i].n == 0)
            ph_html_note(f, "No change.");
        else
            html_table(f, c, &c->t[i], top);
        ph_html_section_end(f);
    }
    ph_html_end(f);
    if (ph_mw_finish(&w, &page, &len) < 0) {
        ph_mw_close(&w);
        return ph_fail(err, ENOMEM, "write `%s`", path);
    }
    snprintf(dir, sizeof dir, "%s", path);
    slash = strrchr(dir, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else
        *slash = '\0';
    rc = ph_report_write_file(dir, path, page, len, err);
    ph_mw_close(&w);
    return rc;
}

int
ph_compare_runs(const char *a, const char *b, const ph_profile_set *profiles, const ph_compare_opts *opts, FILE *out,
                char **failed, ph_error_t *err)
{
    comparison *c = calloc(1, sizeof *c);
    size_t top = opts->top ? opts->top : 20;
    int rc = -1, bad;

    *failed = NULL;
    if (c == NULL)
        return ph_fail(err, ENOMEM, "compare");
    if (ph_rundata_load(a, profiles, &c->a.rd, err) < 0) {
        free(c);
        return ph_error_wrap(err, "compare");
    }
    if (ph_rundata_load(b, profiles, &c->b.rd, err) < 0) {
        ph_rundata_free(&c->a.rd);
        free(c);
        return ph_error_wrap(err, "compare");
    }
    if (strcmp(c->a.rd.mode, c->b.rd.mode) != 0) {
        ph_bad_input(err, "`%s` is a %s run and `%s` a %s run: compare two runs of one mode", c->a.rd.name, c->a.rd.mode,
                     c->b.rd.name, c->b.rd.mode);
        goto out;
    }
    for (int s = 0; s < 2; s++) {
        side *sd = s ? &c->b : &c->a;
        if (sd->rd.flame.folded != NULL &&
            ph_flame_tally(sd->rd.flame.folded, ph_flame_has_thread_root(&sd->rd), &sd->self, &sd->total) < 0) {
            ph_fail(err, ENOMEM, "compare");
            goto out;
        }
    }
    if (build(c) < 0) {
        ph_fail(err, ENOMEM, "compare");
        goto out;
    }
    if ((bad = check_all(c, opts, failed, err)) < 0)
        goto out;
    if (opts->format == PH_COMPARE_JSON)
        write_json(out, c, top);
    else
        write_text(out, c, top);
    if (opts->html_path != NULL && write_html(c, opts->html_path, top, *failed, err) < 0) {
        free(*failed);
        *failed = NULL;
        goto out;
    }
    rc = bad;
out:
    for (size_t i = 0; i < c->nt; i++)
        table_free(&c->t[i]);
    table_free(&c->totals);
    json_decref(c->checks);
    free(c->diff);
    for (int s = 0; s < 2; s++) {
        side *sd = s ? &c->b : &c->a;
        free(sd->self);
        free(sd->total);
        ph_rundata_free(&sd->rd);
    }
    free(c);
    return rc;
}
