/* ph_massif.c - massif.out, streamed; see ph_massif.h for what is kept.
 *
 * One pass, line by line, as a small state machine: the header, then each
 * snapshot's six fields, then (detailed and peak snapshots) its tree,
 * whose shape comes from the child counts, not the indentation, as
 * ms_print reads it.  A stack of "children still to come" per level tells
 * where each node hangs and when the tree is complete.
 */
#include "ph_massif.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_intern.h"
#include "ph_lines.h"

#define STRINGS_MAX (24u << 20) /* interned text: peak tree details and site names */
#define TEXT_MAX (1u << 20)     /* desc and cmd */

enum { ST_HEADER, ST_SNAP, ST_TREE };

enum { F_SNAPSHOT = 1, F_TIME = 2, F_HEAP = 4, F_EXTRA = 8, F_STACKS = 16 };

typedef struct detail_rec {
    uint64_t snap_num;
    size_t off;   /* into sites */
    uint32_t n;
} detail_rec;

typedef struct level {
    uint32_t remaining; /* children still to come */
    int64_t node;       /* kept peak node, -1 when not kept */
} level;

typedef struct node_rec {
    uint32_t depth, n_children;
    uint64_t bytes;
    uint32_t details; /* strings id */
    uint32_t dropped;
    uint64_t dropped_bytes;
} node_rec;

struct ph_massif {
    ph_lines lines;
    ph_intern *strings;
    ph_massif_info info;
    char *desc, *cmd;
    size_t desc_len, cmd_len;
    int state, in_cmd, saw_time_unit;

    /* the snapshot being read */
    ph_massif_snapshot cur;
    int fields;
    uint64_t cur_total;

    ph_massif_snapshot *snaps;
    size_t n_snaps, cap_snaps;

    detail_rec *details;
    size_t n_details, cap_details;
    ph_massif_site_bytes *sites;
    size_t n_sites, cap_sites;
    int cur_detail;         /* recording the current tree's top-level sites */

    level *stack;
    size_t depth, cap_stack;
    int cur_is_peak;
    uint64_t tree_snap_num;

    node_rec *nodes;
    size_t n_nodes, cap_nodes;
    ph_massif_node *pub;    /* built at finish */
    int finished;
};

/* ---- small helpers ----------------------------------------------------- */

static void
bad_line(ph_massif *m, size_t lineno)
{
    if (m->info.bad_lines < PH_MASSIF_BAD_KEPT)
        m->info.bad_line_numbers[m->info.bad_lines] = lineno;
    m->info.bad_lines++;
}

static void
problem(ph_massif *m, const char *text)
{
    if (m->info.problem[0] == '\0')
        snprintf(m->info.problem, sizeof m->info.problem, "%s", text);
}

/* Strict unsigned decimal of the whole of S..E. */
static int
parse_u64(const char *s, const char *e, uint64_t *out)
{
    uint64_t v = 0;

    if (s == e)
        return -1;
    for (; s < e; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int
append_text(char **buf, size_t *len, const char *sep, const char *s, size_t n)
{
    size_t sl = *len ? strlen(sep) : 0;
    char *nb;

    if (*len + sl + n + 1 > TEXT_MAX)
        return 0; /* enough of it */
    nb = realloc(*buf, *len + sl + n + 1);
    if (nb == NULL)
        return -1;
    memcpy(nb + *len, sep, sl);
    memcpy(nb + *len + sl, s, n);
    *len += sl + n;
    nb[*len] = '\0';
    *buf = nb;
    return 0;
}

#define GROW(arr, n, cap, init)                                            \
    ((n) < (cap) ? 0 : grow_array((void **)&(arr), &(cap), sizeof *(arr), (init)))

static int
grow_array(void **arr, size_t *cap, size_t size, size_t init)
{
    size_t nc = *cap ? *cap * 2 : init;
    void *na = realloc(*arr, nc * size);

    if (na == NULL)
        return -1;
    *arr = na;
    *cap = nc;
    return 0;
}

static int
is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t')
            return 0;
    return 1;
}

/* "KEY=VALUE" with KEY given: the value, or NULL. */
static const char *
eq_value(const char *s, size_t n, const char *key, const char **end)
{
    size_t kl = strlen(key);
    const char *e = s + n;

    if (n <= kl || memcmp(s, key, kl) != 0 || s[kl] != '=')
        return NULL;
    while (e > s + kl + 1 && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *end = e;
    return s + kl + 1;
}

/* ---- chart series: thinning when too many ---------------------------- */

static void
thin_snapshots(ph_massif *m)
{
    size_t o = 0;
    int64_t peak = m->info.peak;

    for (size_t i = 0; i < m->n_snaps; i++) {
        int keep = (i % 2 == 0) || m->snaps[i].tree != PH_MASSIF_EMPTY || i + 1 == m->n_snaps;
        if (!keep)
            continue;
        if ((int64_t)i == peak)
            m->info.peak = (int64_t)o;
        m->snaps[o++] = m->snaps[i];
    }
    if (o > PH_MASSIF_MAX_POINTS * 3 / 4) {
        /* mostly detailed snapshots: thin them too, the peak stays */
        size_t o2 = 0;
        peak = m->info.peak;
        for (size_t i = 0; i < o; i++) {
            if (i % 2 == 1 && (int64_t)i != peak && i + 1 != o)
                continue;
            if ((int64_t)i == peak)
                m->info.peak = (int64_t)o2;
            m->snaps[o2++] = m->snaps[i];
        }
        o = o2;
    }
    m->n_snaps = o;
}

static void
thin_details(ph_massif *m)
{
    size_t o = 0, so = 0;

    for (size_t i = 0; i < m->n_details; i++) {
        detail_rec d = m->details[i];
        int is_peak = m->info.peak >= 0 && d.snap_num == m->info.peak_num;

        if (i % 2 == 1 && !is_peak && i + 1 != m->n_details)
            continue;
        memmove(m->sites + so, m->sites + d.off, d.n * sizeof *m->sites);
        d.off = so;
        so += d.n;
        m->details[o++] = d;
    }
    m->n_details = o;
    m->n_sites = so;
}

/* ---- snapshots and trees ---------------------------------------------- */

static int
end_snapshot_header(ph_massif *m, int tree, ph_error_t *err)
{
    ph_massif_snapshot s = m->cur;
    uint64_t total = s.heap + s.extra + s.stacks;

    s.tree = tree;
    s.detail = -1;
    m->info.n_snapshots++;
    if (tree != PH_MASSIF_EMPTY)
        m->info.n_detailed++;
    if (total > m->info.max_total)
        m->info.max_total = total;
    m->info.end_time = s.time;
    if (m->n_snaps == PH_MASSIF_MAX_POINTS)
        thin_snapshots(m);
    if (GROW(m->snaps, m->n_snaps, m->cap_snaps, 256) < 0)
        return ph_fail(err, ENOMEM, "keep massif snapshots");
    m->snaps[m->n_snaps] = s;
    if (tree == PH_MASSIF_PEAK) {
        m->info.peak = (int64_t)m->n_snaps;
        m->info.peak_num = s.num;
    }
    m->n_snaps++;
    m->fields = 0;
    m->cur_total = total;
    if (tree == PH_MASSIF_EMPTY) {
        m->state = ST_SNAP;
        return 0;
    }
    m->state = ST_TREE;
    m->depth = 0;
    m->tree_snap_num = s.num;
    m->cur_is_peak = tree == PH_MASSIF_PEAK;
    if (m->cur_is_peak)
        m->n_nodes = 0; /* a second peak replaces the first */
    if (m->n_details == PH_MASSIF_MAX_DETAILS)
        thin_details(m);
    if (GROW(m->details, m->n_details, m->cap_details, 64) < 0)
        return ph_fail(err, ENOMEM, "keep massif snapshots");
    m->details[m->n_details++] = (detail_rec){ s.num, m->n_sites, 0 };
    m->cur_detail = 1;
    return 0;
}

static int
add_site(ph_massif *m, const char *details, size_t len, uint64_t bytes, ph_error_t *err)
{
    detail_rec *d = &m->details[m->n_details - 1];
    const char *name = details, *end = details + len;
    int64_t id;

    if (d->n >= PH_MASSIF_MAX_SITES_PER)
        return 0;
    /* the site without its code address, so one function's line is one site */
    if (len > 2 && details[0] == '0' && details[1] == 'x') {
        const char *c = memchr(details, ':', len);
        if (c != NULL && c + 1 < end) {
            name = c + 1;
            while (name < end && *name == ' ')
                name++;
        }
    }
    id = ph_intern_add(m->strings, name, (size_t)(end - name));
    if (id < 0) {
        if (errno == ENOMEM)
            return ph_fail(err, ENOMEM, "keep massif allocation sites");
        return 0; /* the text budget is spent: this site is left out */
    }
    if (GROW(m->sites, m->n_sites, m->cap_sites, 1024) < 0)
        return ph_fail(err, ENOMEM, "keep massif allocation sites");
    m->sites[m->n_sites++] = (ph_massif_site_bytes){ (uint32_t)id, bytes };
    d->n++;
    return 0;
}

/* One tree node line; 1 when it is one, 0 when the line is not a node. */
static int
tree_line(ph_massif *m, const char *s, size_t n, ph_error_t *err)
{
    const char *e = s + n, *p = s, *q;
    uint64_t kids, bytes;
    int64_t kept = -1, parent = -1;
    uint32_t d = (uint32_t)m->depth;

    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    if (p == e || *p != 'n')
        return 0;
    q = ++p;
    while (q < e && *q >= '0' && *q <= '9')
        q++;
    if (q == p || q == e || *q != ':' || parse_u64(p, q, &kids) < 0 || kids > UINT32_MAX)
        return 0;
    p = q + 1;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    q = p;
    while (q < e && *q >= '0' && *q <= '9')
        q++;
    if (parse_u64(p, q, &bytes) < 0)
        return 0;
    /* the details: ms_print prints them as they are; we drop the one blank */
    if (q < e && *q == ' ')
        q++;
    if (m->depth >= PH_MASSIF_MAX_DEPTH)
        return 0;

    if (m->depth > 0) {
        level *top = &m->stack[m->depth - 1];
        top->remaining--;
        parent = top->node;
    }
    if (d == 1 && m->cur_detail && add_site(m, q, (size_t)(e - q), bytes, err) < 0)
        return -1;
    if (m->cur_is_peak && (d == 0 || parent >= 0)) {
        int significant = d == 0 || (m->cur_total > 0 &&
                                     (double)bytes * 1000.0 >= (double)m->cur_total * PH_MASSIF_KEEP_PERMILLE);
        int64_t id = -1;

        if (significant && m->n_nodes < PH_MASSIF_MAX_PEAK_NODES) {
            id = ph_intern_add(m->strings, q, (size_t)(e - q));
            if (id < 0 && errno == ENOMEM)
                return ph_fail(err, ENOMEM, "keep the massif peak tree");
        }
        if (significant && id < 0)
            m->info.peak_tree_truncated = 1;
        if (id >= 0) {
            if (GROW(m->nodes, m->n_nodes, m->cap_nodes, 256) < 0)
                return ph_fail(err, ENOMEM, "keep the massif peak tree");
            m->nodes[m->n_nodes] = (node_rec){ d, (uint32_t)kids, bytes, (uint32_t)id, 0, 0 };
            kept = (int64_t)m->n_nodes++;
        } else if (parent >= 0) {
            m->nodes[parent].dropped++;
            m->nodes[parent].dropped_bytes += bytes;
        }
    }
    if (GROW(m->stack, m->depth, m->cap_stack, 32) < 0)
        return ph_fail(err, ENOMEM, "read a massif tree");
    m->stack[m->depth++] = (level){ (uint32_t)kids, kept };
    while (m->depth > 0 && m->stack[m->depth - 1].remaining == 0)
        m->depth--;
    if (m->depth == 0) {
        m->state = ST_SNAP;
        m->cur_detail = 0;
        m->cur_is_peak = 0;
    }
    return 1;
}

static int snap_line(ph_massif *m, const char *s, size_t n, size_t lineno, ph_error_t *err);

static void
tree_cut_short(ph_massif *m, size_t lineno)
{
    char msg[160];

    snprintf(msg, sizeof msg, "the tree of snapshot %llu ends early (line %zu)",
             (unsigned long long)m->tree_snap_num, lineno);
    problem(m, msg);
    m->state = ST_SNAP;
    m->depth = 0;
    m->cur_detail = 0;
    m->cur_is_peak = 0;
}

static int
snap_line(ph_massif *m, const char *s, size_t n, size_t lineno, ph_error_t *err)
{
    static const struct {
        const char *key;
        int flag;
        size_t off;
    } fields[] = {
        { "snapshot", F_SNAPSHOT, offsetof(ph_massif_snapshot, num) },
        { "time", F_TIME, offsetof(ph_massif_snapshot, time) },
        { "mem_heap_B", F_HEAP, offsetof(ph_massif_snapshot, heap) },
        { "mem_heap_extra_B", F_EXTRA, offsetof(ph_massif_snapshot, extra) },
        { "mem_stacks_B", F_STACKS, offsetof(ph_massif_snapshot, stacks) },
    };
    const char *v, *e;

    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        uint64_t x;

        if ((v = eq_value(s, n, fields[i].key, &e)) == NULL)
            continue;
        if (parse_u64(v, e, &x) < 0) {
            bad_line(m, lineno);
            return 0;
        }
        if (fields[i].flag == F_SNAPSHOT) {
            if (m->fields != 0) {
                char msg[160];
                snprintf(msg, sizeof msg, "snapshot %llu has no heap_tree line (line %zu)",
                         (unsigned long long)m->cur.num, lineno);
                problem(m, msg);
            }
            memset(&m->cur, 0, sizeof m->cur);
            m->fields = 0;
        } else if (!(m->fields & F_SNAPSHOT)) {
            bad_line(m, lineno);
            return 0;
        }
        memcpy((char *)&m->cur + fields[i].off, &x, sizeof x);
        m->fields |= fields[i].flag;
        return 0;
    }
    if ((v = eq_value(s, n, "heap_tree", &e)) != NULL) {
        size_t vl = (size_t)(e - v);
        int tree = vl == 5 && memcmp(v, "empty", 5) == 0      ? PH_MASSIF_EMPTY
                   : vl == 8 && memcmp(v, "detailed", 8) == 0 ? PH_MASSIF_DETAILED
                   : vl == 4 && memcmp(v, "peak", 4) == 0     ? PH_MASSIF_PEAK
                                                              : -1;
        if (tree < 0 || m->fields != (F_SNAPSHOT | F_TIME | F_HEAP | F_EXTRA | F_STACKS)) {
            char msg[160];
            bad_line(m, lineno);
            snprintf(msg, sizeof msg, "snapshot %llu is incomplete or has a bad heap_tree (line %zu)",
                     (unsigned long long)m->cur.num, lineno);
            problem(m, msg);
            m->fields = 0;
            return 0;
        }
        return end_snapshot_header(m, tree, err);
    }
    bad_line(m, lineno);
    return 0;
}

static int
header_line(ph_massif *m, const char *s, size_t n, size_t lineno, ph_error_t *err)
{
    if (n >= 5 && memcmp(s, "desc:", 5) == 0) {
        const char *v = s + 5;
        while (v < s + n && *v == ' ')
            v++;
        m->in_cmd = 0;
        return append_text(&m->desc, &m->desc_len, "\n", v, (size_t)(s + n - v)) < 0
                   ? ph_fail(err, ENOMEM, "read massif's header")
                   : 0;
    }
    if (n >= 4 && memcmp(s, "cmd:", 4) == 0) {
        const char *v = s + 4;
        while (v < s + n && *v == ' ')
            v++;
        m->in_cmd = 1;
        m->info.cmd_lines = 1;
        return append_text(&m->cmd, &m->cmd_len, "\n", v, (size_t)(s + n - v)) < 0
                   ? ph_fail(err, ENOMEM, "read massif's header")
                   : 0;
    }
    if (n >= 10 && memcmp(s, "time_unit:", 10) == 0) {
        const char *v = s + 10, *e = s + n;
        while (v < e && *v == ' ')
            v++;
        while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if ((size_t)(e - v) < sizeof m->info.time_unit)
            memcpy(m->info.time_unit, v, (size_t)(e - v));
        else
            bad_line(m, lineno);
        m->in_cmd = 0;
        m->saw_time_unit = 1;
        m->state = ST_SNAP;
        return 0;
    }
    if (n >= 9 && memcmp(s, "snapshot=", 9) == 0) {
        m->state = ST_SNAP;
        return snap_line(m, s, n, lineno, err);
    }
    if (m->in_cmd) {
        /* the command line went on past a newline */
        m->info.cmd_lines++;
        return append_text(&m->cmd, &m->cmd_len, "\n", s, n) < 0 ? ph_fail(err, ENOMEM, "read massif's header")
                                                                    : 0;
    }
    bad_line(m, lineno);
    return 0;
}

static int
line_cb(void *ctx, const char *s, size_t n, size_t lineno, ph_error_t *err)
{
    ph_massif *m = ctx;

    m->info.lines = lineno;
    if (s == NULL) {
        bad_line(m, lineno);
        return 0;
    }
    /* a comment or blank line; inside the command it is part of it */
    if (!(m->state == ST_HEADER && m->in_cmd) && (n == 0 || s[0] == '#' || is_blank(s, n)))
        return 0;
    switch (m->state) {
    case ST_HEADER: return header_line(m, s, n, lineno, err);
    case ST_SNAP: return snap_line(m, s, n, lineno, err);
    default: {
        int r = tree_line(m, s, n, err);
        if (r != 0)
            return r < 0 ? -1 : 0;
        bad_line(m, lineno);
        tree_cut_short(m, lineno);
        return snap_line(m, s, n, lineno, err);
    }
    }
}

/* ---- the public face --------------------------------------------------- */

ph_massif *
ph_massif_new(ph_error_t *err)
{
    ph_massif *m = calloc(1, sizeof *m);

    if (m == NULL || (m->strings = ph_intern_new(STRINGS_MAX)) == NULL) {
        free(m);
        ph_fail(err, ENOMEM, "parse massif output");
        return NULL;
    }
    ph_lines_init(&m->lines, PH_MASSIF_MAX_LINE, 0, line_cb, m);
    m->info.peak = -1;
    return m;
}

void
ph_massif_free(ph_massif *m)
{
    if (m == NULL)
        return;
    ph_lines_free(&m->lines);
    ph_intern_free(m->strings);
    free(m->desc);
    free(m->cmd);
    free(m->snaps);
    free(m->details);
    free(m->sites);
    free(m->stack);
    free(m->nodes);
    free(m->pub);
    free(m);
}

int
ph_massif_feed(ph_massif *m, const char *buf, size_t len, ph_error_t *err)
{
    return ph_lines_feed(&m->lines, buf, len, err);
}

int
ph_massif_finish(ph_massif *m, ph_error_t *err)
{
    size_t k = 0;

    if (m->finished)
        return 0;
    if (ph_lines_finish(&m->lines, err) < 0)
        return -1;
    m->finished = 1;
    if (m->state == ST_TREE)
        tree_cut_short(m, m->info.lines);
    if (m->fields != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "the file ends inside snapshot %llu", (unsigned long long)m->cur.num);
        problem(m, msg);
    }
    if (m->info.n_snapshots == 0)
        problem(m, m->info.lines == 0 ? "the file is empty" : "no snapshot in the file");
    else if (!m->saw_time_unit)
        problem(m, "no time_unit line");
    m->info.desc = m->desc ? m->desc : "";
    m->info.cmd = m->cmd ? m->cmd : "";

    /* snapshot -> its kept top-level sites, both in file order */
    for (size_t i = 0; i < m->n_snaps; i++) {
        if (m->snaps[i].tree == PH_MASSIF_EMPTY)
            continue;
        while (k < m->n_details && m->details[k].snap_num < m->snaps[i].num)
            k++;
        if (k < m->n_details && m->details[k].snap_num == m->snaps[i].num)
            m->snaps[i].detail = (int32_t)k++;
    }
    if (m->n_nodes > 0) {
        m->pub = calloc(m->n_nodes, sizeof *m->pub);
        if (m->pub == NULL)
            return ph_fail(err, ENOMEM, "keep the massif peak tree");
        for (size_t i = 0; i < m->n_nodes; i++) {
            const node_rec *r = &m->nodes[i];
            m->pub[i] = (ph_massif_node){ r->depth, r->n_children, r->bytes, ph_intern_get(m->strings, r->details),
                                          r->dropped, r->dropped_bytes };
        }
    }
    return 0;
}

static int
chunk_cb(void *ctx, const char *buf, size_t len, ph_error_t *err)
{
    return ph_massif_feed(ctx, buf, len, err);
}

ph_massif *
ph_massif_parse_file(const char *path, ph_error_t *err)
{
    ph_massif *m = ph_massif_new(err);

    if (m == NULL)
        return NULL;
    if (ph_read_file_chunks(path, chunk_cb, m, NULL, err) < 0 || ph_massif_finish(m, err) < 0) {
        ph_massif_free(m);
        return NULL;
    }
    return m;
}

const ph_massif_info *
ph_massif_get_info(const ph_massif *m)
{
    return &m->info;
}

size_t
ph_massif_n_snapshots(const ph_massif *m)
{
    return m->n_snaps;
}

const ph_massif_snapshot *
ph_massif_get_snapshot(const ph_massif *m, size_t i)
{
    return i < m->n_snaps ? &m->snaps[i] : NULL;
}

size_t
ph_massif_n_peak_nodes(const ph_massif *m)
{
    return m->pub ? m->n_nodes : 0;
}

const ph_massif_node *
ph_massif_get_peak_node(const ph_massif *m, size_t i)
{
    return m->pub && i < m->n_nodes ? &m->pub[i] : NULL;
}

size_t
ph_massif_detail_sites(const ph_massif *m, int32_t detail, const ph_massif_site_bytes **out)
{
    if (detail < 0 || (size_t)detail >= m->n_details || m->details[detail].n == 0) {
        *out = NULL;
        return 0;
    }
    *out = m->sites + m->details[detail].off;
    return m->details[detail].n;
}

const char *
ph_massif_site_name(const ph_massif *m, uint32_t site)
{
    const char *s = ph_intern_get(m->strings, site);
    return s ? s : "";
}

uint64_t
ph_massif_peak_total(const ph_massif *m)
{
    const ph_massif_snapshot *s;

    if (m->info.peak < 0)
        return 0;
    s = &m->snaps[m->info.peak];
    return s->heap + s->extra + s->stacks;
}

/* 100 * BYTES / TOTAL as ms_print (Perl) computes it: the product in
 * integers when it fits, then a floating division; 0 when TOTAL is 0. */
static double
ms_percent(uint64_t bytes, uint64_t total)
{
    if (total == 0)
        return 0;
    if (bytes <= UINT64_MAX / 100)
        return (double)(bytes * 100) / (double)total;
    return (double)bytes * 100.0 / (double)total;
}

typedef struct walk_level {
    uint32_t depth;
    int significant;
    uint32_t insig;
    uint64_t insig_bytes;
} walk_level;

int
ph_massif_walk_peak(const ph_massif *m, double threshold, ph_massif_line_cb cb, void *ctx)
{
    uint64_t total = ph_massif_peak_total(m);
    size_t n = ph_massif_n_peak_nodes(m), sp = 0;
    walk_level *stack;
    int rc = 0;

    if (n == 0)
        return 0;
    if (threshold < PH_MASSIF_KEEP_PERMILLE / 10.0)
        threshold = PH_MASSIF_KEEP_PERMILLE / 10.0;
    stack = calloc(n + 1, sizeof *stack);
    if (stack == NULL)
        return -1;
    for (size_t i = 0; i <= n && rc == 0; i++) {
        const ph_massif_node *nd = i < n ? &m->pub[i] : NULL;
        uint32_t d = nd ? nd->depth : 0;

        /* leaving the nodes at depth >= d: their groups come now */
        while (sp > 0 && stack[sp - 1].depth >= d && rc == 0) {
            walk_level *l = &stack[--sp];
            if (l->significant && l->insig > 0) {
                ph_massif_line g = { l->depth + 1, 1, l->insig, l->insig_bytes,
                                     ms_percent(l->insig_bytes, total), NULL, 0 };
                rc = cb(ctx, &g);
            }
        }
        if (nd == NULL || rc != 0)
            break;
        {
            walk_level *parent = sp > 0 ? &stack[sp - 1] : NULL;
            double pct = ms_percent(nd->bytes, total);
            int sig = d == 0 || (parent != NULL && parent->significant && total != 0 && pct >= threshold);

            if (sig) {
                ph_massif_line l = { d, 0, 0, nd->bytes, pct, nd->details, i };
                rc = cb(ctx, &l);
            } else if (parent != NULL && parent->significant) {
                parent->insig++;
                parent->insig_bytes += nd->bytes;
            }
            stack[sp++] = (walk_level){ d, sig, sig ? nd->dropped : 0, sig ? nd->dropped_bytes : 0 };
        }
    }
    free(stack);
    return rc;
}

const char *
ph_massif_strip_address(const char *details)
{
    const char *c;

    if (details[0] != '0' || details[1] != 'x' || (c = strchr(details, ':')) == NULL)
        return details;
    for (c++; *c == ' '; c++)
        ;
    return c;
}
