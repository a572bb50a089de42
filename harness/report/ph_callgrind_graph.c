/* ph_callgrind_graph.c - questions to a parsed callgrind profile: the
 * costliest functions in callgrind_annotate's order, and an inclusive
 * flamegraph built from the call graph.  See ph_callgrind.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ph_callgrind_int.h"

/* Bounds that keep the graph's expansion small whatever the call graph:
 * a dense graph full of cycles has paths without end.  A share below
 * 1/2000 of the total is under a pixel of a 1200 px graph anyway. */
#define FOLDED_MAX_DEPTH 128
#define FOLDED_MIN_SHARE (1.0 / 2000)

typedef struct top_ctx {
    const ph_callgrind *cg;
    const uint64_t *costs;
    size_t event;
} top_ctx;

static int
cmp_top(const void *a, const void *b, void *ctx)
{
    const top_ctx *t = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    const uint64_t *cx = t->costs + (size_t)x * t->cg->E, *cy = t->costs + (size_t)y * t->cg->E;
    size_t last = t->event == 0 ? t->cg->E : t->event + 1;

    for (size_t j = t->event; j < last; j++)
        if (cx[j] != cy[j])
            return cx[j] < cy[j] ? 1 : -1;
    return strcmp(ph_intern_get(t->cg->strings, t->cg->fns[x].name), ph_intern_get(t->cg->strings, t->cg->fns[y].name));
}

/* The N best of all functions without sorting them all: each candidate
 * is compared with the worst kept first, so a large profile costs one
 * comparison per function (a report asks for the top of every event, self
 * and inclusive). */
size_t
ph_callgrind_top(const ph_callgrind *cg, size_t event, int inclusive, uint32_t *out, size_t n)
{
    top_ctx t = { cg, inclusive ? cg->incl : cg->self, event };
    size_t m = 0;

    if (event >= cg->E || t.costs == NULL || n == 0)
        return 0;
    for (uint32_t i = 0; i < cg->n_fns; i++) {
        size_t k;

        if (!(cg->fns[i].defined || (inclusive && cg->fns[i].called)))
            continue;
        if (m == n && cmp_top(&i, &out[n - 1], &t) >= 0)
            continue; /* no better than the worst kept */
        k = m < n ? m++ : n - 1;
        while (k > 0 && cmp_top(&i, &out[k - 1], &t) < 0) {
            out[k] = out[k - 1];
            k--;
        }
        out[k] = i;
    }
    return m;
}

/* ---- the inclusive flamegraph ------------------------------------------ */

/* The pieces callgrind files under the header a function's code was
 * inlined from (`fi=`) are drawn as the function itself, as a person
 * reading a flamegraph expects: one node per function, its pieces folded
 * in. */
typedef struct fold_graph {
    size_t n;             /* nodes */
    uint32_t *name;       /* string id of each node */
    double *self;
    int *called;
    double *in;           /* the cost of the calls into it */
    uint32_t *start;      /* out edges of node i: start[i]..start[i+1] */
    uint32_t *to;
    double *cost;
} fold_graph;

typedef struct fold_ctx {
    const ph_callgrind *cg;
    const fold_graph *g;
    FILE *out;
    uint32_t path[FOLDED_MAX_DEPTH];
    size_t depth;
    double min;
    long stacks;
} fold_ctx;

/* NAME as one frame: ';' would split it, a newline end the line. */
static void
put_name(FILE *out, const char *s)
{
    for (;;) {
        size_t n = strcspn(s, ";\n\r");
        fwrite(s, 1, n, out);
        if (s[n] == '\0')
            return;
        fputc(s[n] == ';' ? ':' : ' ', out);
        s += n + 1;
    }
}

static void
emit(fold_ctx *c, uint32_t last, int has_last, double v)
{
    if (v < 0.5)
        return;
    for (size_t i = 0; i < c->depth; i++) {
        if (i)
            fputc(';', c->out);
        put_name(c->out, ph_intern_get(c->cg->strings, c->g->name[c->path[i]]));
    }
    if (has_last) {
        fputc(';', c->out);
        put_name(c->out, ph_intern_get(c->cg->strings, c->g->name[last]));
    }
    fprintf(c->out, " %.0f\n", v);
    c->stacks++;
}

/* V of the cost of path[0..depth-1], split among the last function's own
 * cost and its calls in proportion to them. */
static void
expand(fold_ctx *c, double v)
{
    const fold_graph *g = c->g;
    uint32_t f = c->path[c->depth - 1];
    double d = g->self[f], own;

    for (uint32_t i = g->start[f]; i < g->start[f + 1]; i++)
        d += g->cost[i];
    if (d <= 0) {
        emit(c, 0, 0, v);
        return;
    }
    own = v * g->self[f] / d;
    for (uint32_t i = g->start[f]; i < g->start[f + 1]; i++) {
        uint32_t to = g->to[i];
        double share = v * g->cost[i] / d;
        int on_path = 0;

        if (share <= 0)
            continue;
        for (size_t p = 0; p < c->depth && !on_path; p++)
            on_path = c->path[p] == to;
        if (share < c->min) {
            own += share; /* too thin to draw: the caller keeps it */
        } else if (on_path || c->depth == FOLDED_MAX_DEPTH || c->stacks >= PH_CG_FOLDED_MAX_STACKS - 1) {
            emit(c, to, 1, share); /* a cycle closes (or too deep, or enough drawn): cut here */
        } else {
            c->path[c->depth++] = to;
            expand(c, share);
            c->depth--;
        }
    }
    emit(c, 0, 0, own);
}

static void
graph_free(fold_graph *g)
{
    free(g->name);
    free(g->self);
    free(g->called);
    free(g->in);
    free(g->start);
    free(g->to);
    free(g->cost);
}

static int
graph_build(const ph_callgrind *cg, size_t event, fold_graph *g)
{
    ph_u64map by_name = { 0 }, by_edge = { 0 };
    uint32_t *node_of = malloc((cg->n_fns ? cg->n_fns : 1) * sizeof *node_of);
    uint32_t *edge_from = NULL, *edge_to = NULL, *fill = NULL;
    double *edge_cost = NULL;
    size_t ne = 0, E = cg->E;
    int rc = -1;

    memset(g, 0, sizeof *g);
    g->name = malloc((cg->n_fns ? cg->n_fns : 1) * sizeof *g->name);
    g->self = calloc(cg->n_fns + 1, sizeof *g->self);
    g->called = calloc(cg->n_fns + 1, sizeof *g->called);
    g->in = calloc(cg->n_fns + 1, sizeof *g->in);
    g->start = calloc(cg->n_fns + 2, sizeof *g->start);
    edge_from = malloc((cg->n_calls + 1) * sizeof *edge_from);
    edge_to = malloc((cg->n_calls + 1) * sizeof *edge_to);
    edge_cost = calloc(cg->n_calls + 1, sizeof *edge_cost);
    if (node_of == NULL || g->name == NULL || g->self == NULL || g->called == NULL || g->in == NULL || g->start == NULL ||
        edge_from == NULL || edge_to == NULL || edge_cost == NULL)
        goto out;
    for (size_t f = 0; f < cg->n_fns; f++) {
        uint32_t p = cg->fns[f].primary == UINT32_MAX ? (uint32_t)f : cg->fns[f].primary;
        uint32_t n = ph_u64map_get(&by_name, p);
        if (n == UINT32_MAX) {
            n = (uint32_t)g->n++;
            g->name[n] = cg->fns[p].fn;
            if (ph_u64map_put(&by_name, p, n) < 0)
                goto out;
        }
        node_of[f] = n;
        g->self[n] += (double)cg->self[f * E + event];
    }
    for (size_t c = 0; c < cg->n_calls; c++) {
        uint32_t a = node_of[cg->calls[c].caller], b = node_of[cg->calls[c].callee];
        uint64_t key = (uint64_t)a << 32 | b;
        uint32_t e = ph_u64map_get(&by_edge, key);
        double cost = (double)cg->call_cost[c * E + event];

        if (cost <= 0)
            continue;
        if (a == b) {
            /* a call to itself (or to a piece of itself) adds nothing to a flamegraph */
            continue;
        }
        if (e == UINT32_MAX) {
            e = (uint32_t)ne++;
            edge_from[e] = a;
            edge_to[e] = b;
            if (ph_u64map_put(&by_edge, key, e) < 0)
                goto out;
            g->start[a + 1]++;
        }
        edge_cost[e] += cost;
        g->called[b] = 1;
        g->in[b] += cost;
    }
    for (size_t n = 0; n < g->n; n++)
        g->start[n + 1] += g->start[n];
    g->to = malloc((ne ? ne : 1) * sizeof *g->to);
    g->cost = malloc((ne ? ne : 1) * sizeof *g->cost);
    fill = calloc(g->n + 1, sizeof *fill);
    if (g->to == NULL || g->cost == NULL || fill == NULL)
        goto out;
    for (size_t e = 0; e < ne; e++) {
        uint32_t a = edge_from[e], at = g->start[a] + fill[a]++;
        g->to[at] = edge_to[e];
        g->cost[at] = edge_cost[e];
    }
    rc = 0;
out:
    ph_u64map_free(&by_name);
    ph_u64map_free(&by_edge);
    free(node_of);
    free(edge_from);
    free(edge_to);
    free(edge_cost);
    free(fill);
    if (rc < 0)
        graph_free(g);
    return rc;
}

long
ph_callgrind_write_folded(const ph_callgrind *cg, size_t event, FILE *out, ph_error_t *err)
{
    fold_graph g;
    fold_ctx c = { cg, &g, out, { 0 }, 0, 0, 0 };

    if (!cg->finished || event >= cg->E)
        return ph_bad_input(err, "no such event in the profile");
    if (graph_build(cg, event, &g) < 0)
        return ph_fail(err, ENOMEM, "build the call graph");
    c.min = (double)cg->totals[event] * FOLDED_MIN_SHARE;
    if (c.min < 1)
        c.min = 1;
    /* Roots: what nothing calls, with all it costs; and what costs more
     * than its callers paid for it, with the difference: a thread's
     * start (clone) is called from pthread_create in the parent, which
     * pays for the call, not for the thread's life. */
    for (uint32_t n = 0; n < g.n; n++) {
        double v = g.self[n];

        for (uint32_t i = g.start[n]; i < g.start[n + 1]; i++)
            v += g.cost[i];
        if (g.called[n])
            v -= g.in[n];
        if (v < c.min)
            continue;
        c.path[0] = n;
        c.depth = 1;
        expand(&c, v);
    }
    graph_free(&g);
    if (ferror(out))
        return ph_fail(err, errno, "write folded stacks");
    return c.stacks;
}
