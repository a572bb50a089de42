/* ph_folded.c - folded stacks parsed, interned and merged (see ph_folded.h).
 *
 * Design, for large inputs (the benchmark is 75 MB: 200,000 unique stacks
 * over 3,000 names, ~28 frames each):
 *  - one pass over the bytes, line by line; a line is split on ';' and each
 *    frame looked up in an open-addressing table of names.  Name bytes live
 *    in an arena, once: 3,000 names instead of 5.6 million frame strings.
 *  - a stack is then a run of 32-bit name ids, parsed straight into the
 *    free tail of one growing array; a second table keyed on the ids
 *    merges identical stacks (a duplicate's ids are simply not kept).  Memory is
 *    ~4 bytes per frame of the unique stacks, independent of name length,
 *    and the input itself is never held (it can be streamed in chunks).
 *  - nothing is global: a ph_folded owns everything it points to.
 */
#include "ph_folded.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
} arena_block;

typedef struct name_rec {
    const char *s;
    uint32_t len;
    uint32_t hash;
} name_rec;

typedef struct stack_rec {
    size_t off; /* into ids */
    uint32_t depth;
    uint32_t hash;
    double count, before;
} stack_rec;

struct ph_folded {
    int flags;
    int column; /* ph_folded_diff: 0 adds to `before` (file A), 1 to `count` (file B) */
    ph_folded_stats st;

    arena_block *arena;
    name_rec *names;
    size_t n_names, cap_names;
    uint32_t *name_tab; /* 0 empty, else index + 1 */
    size_t name_mask;

    uint32_t *ids;
    size_t n_ids, cap_ids;
    stack_rec *stacks;
    size_t n_stacks, cap_stacks;
    uint64_t *stack_tab; /* 0 empty, else hash << 32 | (index + 1): most misses never touch stacks[] */
    size_t stack_mask;


    char *held; /* a line split across feeds */
    size_t held_len, held_cap;
    int held_too_long; /* the held line passed PH_FOLDED_MAX_LINE: skip to its end */
};

/* ---- memory ------------------------------------------------------------- */

static void *
arena_alloc(ph_folded *f, size_t n)
{
    arena_block *b = f->arena;

    if (b == NULL || b->cap - b->used < n) {
        size_t cap = n > (64u << 10) ? n : (64u << 10);
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

/* Make room for N more elements of SIZE in *V (capacity *CAP): doubling, so
 * appends are amortised O(1); large blocks are mremap'd by glibc, not copied. */
static int
reserve(void **v, size_t *cap, size_t used, size_t n, size_t size)
{
    size_t nc;
    void *nv;

    if (*cap - used >= n)
        return 0;
    nc = *cap ? *cap : 256;
    while (nc - used < n)
        nc *= 2;
    nv = realloc(*v, nc * size);
    if (nv == NULL)
        return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

/* ---- hashing ------------------------------------------------------------ */

/* Eight bytes at a time: names average ~15 bytes, so this is two or three
 * multiplies a frame instead of fifteen. */
static uint32_t
hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;

    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    }
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    return (uint32_t)h;
}

static uint32_t
hash_ids(const uint32_t *ids, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;

    for (size_t i = 0; i < n; i++)
        h = (h ^ ids[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 31;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return (uint32_t)h;
}

/* ---- names -------------------------------------------------------------- */

static int
grow_name_tab(ph_folded *f)
{
    size_t cap = f->name_mask ? (f->name_mask + 1) * 2 : 1024;
    uint32_t *t = calloc(cap, sizeof *t);

    if (t == NULL)
        return -1;
    for (size_t i = 0; i < f->n_names; i++) {
        size_t j = f->names[i].hash & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = (uint32_t)i + 1;
    }
    free(f->name_tab);
    f->name_tab = t;
    f->name_mask = cap - 1;
    return 0;
}

/* The id of name S[0..N), added if new; -1 on ENOMEM. */
static int64_t
intern(ph_folded *f, const char *s, size_t n)
{
    uint32_t h = hash_bytes(s, n);
    size_t j;
    char *copy;

    for (j = h & f->name_mask; f->name_tab[j]; j = (j + 1) & f->name_mask) {
        const name_rec *e = &f->names[f->name_tab[j] - 1];
        if (e->hash == h && e->len == n && memcmp(e->s, s, n) == 0)
            return f->name_tab[j] - 1;
    }
    if (reserve((void **)&f->names, &f->cap_names, f->n_names, 1, sizeof *f->names) < 0 ||
        (copy = arena_alloc(f, n + 1)) == NULL)
        return -1;
    memcpy(copy, s, n);
    copy[n] = '\0';
    f->names[f->n_names] = (name_rec){ copy, (uint32_t)n, h };
    f->name_tab[j] = (uint32_t)++f->n_names;
    /* keep the table at most half full: probes stay short */
    if (f->n_names * 2 > f->name_mask && grow_name_tab(f) < 0)
        return -1;
    return (int64_t)f->n_names - 1;
}

/* ---- stacks ------------------------------------------------------------- */

static int
grow_stack_tab(ph_folded *f)
{
    size_t cap = f->stack_mask ? (f->stack_mask + 1) * 2 : 4096;
    uint64_t *t = calloc(cap, sizeof *t);

    if (t == NULL)
        return -1;
    for (size_t i = 0; i < f->n_stacks; i++) {
        size_t j = f->stacks[i].hash & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = (uint64_t)f->stacks[i].hash << 32 | (i + 1);
    }
    free(f->stack_tab);
    f->stack_tab = t;
    f->stack_mask = cap - 1;
    return 0;
}

/* Add the stack just parsed into the free tail of ids (ids[n_ids ..
 * n_ids + depth)): kept there if new, forgotten if merged. */
static int
add_stack(ph_folded *f, uint32_t depth, double before, double count)
{
    uint32_t *cur = f->ids + f->n_ids;
    uint32_t h = 0;
    size_t j = 0;
    stack_rec *r;

    if (f->flags & PH_FOLDED_REVERSE) {
        for (uint32_t i = 0, k = depth - 1; i < k; i++, k--) {
            uint32_t t = cur[i];
            cur[i] = cur[k];
            cur[k] = t;
        }
    }
    if (!(f->flags & PH_FOLDED_KEEP_ORDER)) {
        h = hash_ids(cur, depth);
        for (j = h & f->stack_mask; f->stack_tab[j]; j = (j + 1) & f->stack_mask) {
            if ((uint32_t)(f->stack_tab[j] >> 32) != h)
                continue;
            r = &f->stacks[(uint32_t)f->stack_tab[j] - 1];
            if (r->depth == depth && memcmp(f->ids + r->off, cur, depth * sizeof *cur) == 0) {
                r->count += count;
                r->before += before;
                return 0;
            }
        }
    }
    if (f->n_stacks >= UINT32_MAX - 1 ||
        reserve((void **)&f->stacks, &f->cap_stacks, f->n_stacks, 1, sizeof *f->stacks) < 0)
        return -1;
    f->stacks[f->n_stacks] = (stack_rec){ f->n_ids, depth, h, count, before };
    f->n_ids += depth;
    f->n_stacks++;
    if (!(f->flags & PH_FOLDED_KEEP_ORDER)) {
        f->stack_tab[j] = (uint64_t)h << 32 | f->n_stacks;
        if (f->n_stacks * 2 > f->stack_mask && grow_stack_tab(f) < 0)
            return -1;
    }
    return 0;
}

/* ---- lines -------------------------------------------------------------- */

/* A count ending at *END (exclusive, trailing blanks already gone), as
 * flamegraph.pl reads it (/^(.*)\s+?(\d+(?:\.\d*)?)$/): digits with an
 * optional fraction, preceded by a blank.  Moves *END to that one blank:
 * more blanks belong to the stack, so a frame of only spaces is a frame.
 * 1 if found. */
static int
trailing_count(const char *s, const char **end, double *out)
{
    const char *e = *end, *p = e, *dot = NULL;

    while (p > s && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.')) {
        if (p[-1] == '.') {
            if (dot)
                return 0;
            dot = p - 1;
        }
        p--;
    }
    if (p == e || *p == '.' || p == s || (p[-1] != ' ' && p[-1] != '\t'))
        return 0;
    if (dot == NULL && e - p <= 18) {
        uint64_t v = 0; /* the common case: an integer, exact without strtod */
        for (const char *q = p; q < e; q++)
            v = v * 10 + (uint64_t)(*q - '0');
        *out = (double)v;
    } else {
        char buf[64];
        size_t n = (size_t)(e - p);
        if (n >= sizeof buf)
            return 0;
        memcpy(buf, p, n);
        buf[n] = '\0';
        *out = strtod(buf, NULL);
        if (!isfinite(*out))
            return 0;
    }
    *end = p - 1;
    return 1;
}

static void
bad_line(ph_folded *f)
{
    if (f->st.bad_lines < PH_FOLDED_BAD_KEPT)
        f->st.bad_line_numbers[f->st.bad_lines] = f->st.lines;
    f->st.bad_lines++;
}

/* A line longer than PH_FOLDED_MAX_LINE, never held whole. */
static void
long_line(ph_folded *f)
{
    f->st.lines++;
    f->st.long_lines++;
    bad_line(f);
}

/* One line without its '\n'.  -1 only on ENOMEM. */
static int
parse_line(ph_folded *f, const char *p, const char *end)
{
    const char *stack_end, *after_first;
    double a, b;
    uint32_t depth = 0;
    int two;

    f->st.lines++;
    while (end > p && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if (end == p || *p == '#')
        return 0;
    stack_end = end;
    if (!trailing_count(p, &stack_end, &b) || stack_end == p) {
        bad_line(f);
        return 0;
    }
    /* a second count makes "stack BEFORE AFTER"; "5 7" is stack "5" */
    after_first = stack_end;
    two = trailing_count(p, &stack_end, &a) && stack_end > p;
    if (!two) {
        a = b;
        stack_end = after_first;
    }
    /* like Perl's split, which flamegraph.pl uses: no trailing empty frames */
    while (stack_end > p && stack_end[-1] == ';')
        stack_end--;
    if (stack_end == p) {
        bad_line(f);
        return 0;
    }
    for (const char *q = p; q <= stack_end;) {
        const char *semi = memchr(q, ';', (size_t)(stack_end - q));
        const char *fe = semi ? semi : stack_end;
        int64_t id;

        if (f->n_ids + depth == f->cap_ids &&
            reserve((void **)&f->ids, &f->cap_ids, f->n_ids + depth, 1, sizeof *f->ids) < 0)
            return -1;
        if ((id = intern(f, q, (size_t)(fe - q))) < 0)
            return -1;
        f->ids[f->n_ids + depth++] = (uint32_t)id;
        if (semi == NULL)
            break;
        q = semi + 1;
    }
    if (two)
        f->st.differential = 1;
    if (f->column < 0) { /* diff, file A: its count is the "before" column */
        a = b;
        b = 0;
    } else if (f->column > 0) { /* diff, file B */
        a = 0;
    }
    f->st.total += b;
    f->st.total_before += a;
    return add_stack(f, depth, a, b);
}

ph_folded *
ph_folded_new(int flags, ph_error_t *err)
{
    ph_folded *f = calloc(1, sizeof *f);

    if (f == NULL || grow_name_tab(f) < 0 || (!(flags & PH_FOLDED_KEEP_ORDER) && grow_stack_tab(f) < 0)) {
        ph_folded_free(f);
        ph_fail(err, ENOMEM, "folded stacks: out of memory");
        return NULL;
    }
    f->flags = flags;
    return f;
}

void
ph_folded_free(ph_folded *f)
{
    if (f == NULL)
        return;
    while (f->arena) {
        arena_block *n = f->arena->next;
        free(f->arena);
        f->arena = n;
    }
    free(f->names);
    free(f->name_tab);
    free(f->ids);
    free(f->stacks);
    free(f->stack_tab);
    free(f->held);
    free(f);
}

/* Append BUF[0..N) to the held partial line, or drop it once too long. */
static int
hold(ph_folded *f, const char *buf, size_t n)
{
    if (f->held_too_long)
        return 0;
    if (f->held_len + n > PH_FOLDED_MAX_LINE) {
        f->held_too_long = 1;
        return 0;
    }
    if (reserve((void **)&f->held, &f->held_cap, f->held_len, n, 1) < 0)
        return -1;
    memcpy(f->held + f->held_len, buf, n);
    f->held_len += n;
    return 0;
}

/* The held line is complete: parse it (or count it bad) and forget it. */
static int
flush_held(ph_folded *f)
{
    int rc = 0;

    if (f->held_too_long) {
        long_line(f);
    } else {
        rc = parse_line(f, f->held, f->held + f->held_len);
    }
    f->held_len = 0;
    f->held_too_long = 0;
    return rc;
}

int
ph_folded_feed(ph_folded *f, const char *buf, size_t len, ph_error_t *err)
{
    const char *p = buf, *end = buf + len;

    if (f->held_len > 0 || f->held_too_long) {
        const char *nl = memchr(p, '\n', len);
        if (hold(f, p, (size_t)((nl ? nl : end) - p)) < 0)
            goto oom;
        if (nl == NULL)
            return 0;
        if (flush_held(f) < 0)
            goto oom;
        p = nl + 1;
    }
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) {
            if (hold(f, p, (size_t)(end - p)) < 0)
                goto oom;
            break;
        }
        if ((size_t)(nl - p) > PH_FOLDED_MAX_LINE)
            long_line(f);
        else if (parse_line(f, p, nl) < 0) {
            goto oom;
        }
        p = nl + 1;
    }
    f->st.stacks = f->n_stacks;
    f->st.names = f->n_names;
    return 0;
oom:
    return ph_fail(err, ENOMEM, "folded stacks: out of memory after %zu lines", f->st.lines);
}

int
ph_folded_finish(ph_folded *f, ph_error_t *err)
{
    if ((f->held_len > 0 || f->held_too_long) && flush_held(f) < 0)
        return ph_fail(err, ENOMEM, "folded stacks: out of memory after %zu lines", f->st.lines);
    f->st.stacks = f->n_stacks;
    f->st.names = f->n_names;
    return 0;
}

ph_folded *
ph_folded_parse(const char *buf, size_t len, int flags, ph_error_t *err)
{
    ph_folded *f = ph_folded_new(flags, err);

    if (f == NULL)
        return NULL;
    if (ph_folded_feed(f, buf, len, err) < 0 || ph_folded_finish(f, err) < 0) {
        ph_folded_free(f);
        return NULL;
    }
    return f;
}

int64_t
ph_folded_intern(ph_folded *f, const char *s, size_t n, ph_error_t *err)
{
    int64_t id = n <= PH_FOLDED_MAX_LINE ? intern(f, s, n) : -1;

    if (id < 0)
        return ph_fail(err, ENOMEM, "folded stacks: out of memory for a name of %zu bytes", n);
    f->st.names = f->n_names;
    return id;
}

int
ph_folded_add(ph_folded *f, const uint32_t *ids, uint32_t depth, double count, ph_error_t *err)
{
    if (depth == 0)
        return 0;
    if (reserve((void **)&f->ids, &f->cap_ids, f->n_ids, depth, sizeof *f->ids) < 0)
        return ph_fail(err, ENOMEM, "folded stacks: out of memory after %zu stacks", f->n_stacks);
    memcpy(f->ids + f->n_ids, ids, depth * sizeof *ids);
    f->st.total += count;
    f->st.total_before += count;
    if (add_stack(f, depth, count, count) < 0)
        return ph_fail(err, ENOMEM, "folded stacks: out of memory after %zu stacks", f->n_stacks);
    f->st.stacks = f->n_stacks;
    return 0;
}

const ph_folded_stats *
ph_folded_get_stats(const ph_folded *f)
{
    return &f->st;
}

size_t
ph_folded_n_stacks(const ph_folded *f)
{
    return f->n_stacks;
}

ph_folded_stack
ph_folded_get_stack(const ph_folded *f, size_t i)
{
    const stack_rec *r = &f->stacks[i];

    return (ph_folded_stack){ f->ids + r->off, r->depth, r->count, r->before };
}

size_t
ph_folded_n_names(const ph_folded *f)
{
    return f->n_names;
}

const char *
ph_folded_name(const ph_folded *f, uint32_t id, size_t *len)
{
    if (len)
        *len = f->names[id].len;
    return f->names[id].s;
}

/* ---- differential input ------------------------------------------------- */

int
ph_folded_diff(const char *a, size_t alen, const char *b, size_t blen, int normalise, FILE *out, size_t *bad_a,
               size_t *bad_b, ph_error_t *err)
{
    ph_folded *f = ph_folded_new(0, err);
    size_t bad0;
    double k = 1;
    int rc = -1;

    if (f == NULL)
        return -1;
    f->column = -1;
    if (ph_folded_feed(f, a, alen, err) < 0 || ph_folded_finish(f, err) < 0)
        goto out;
    bad0 = f->st.bad_lines;
    if (bad_a)
        *bad_a += bad0;
    f->column = 1;
    f->st.lines = 0; /* line numbers of bad lines are B's from here */
    if (ph_folded_feed(f, b, blen, err) < 0 || ph_folded_finish(f, err) < 0)
        goto out;
    if (bad_b)
        *bad_b += f->st.bad_lines - bad0;
    /* difffolded.pl -n scales the first profile to the second's total;
     * we keep three decimals instead of truncating, so small stacks of a
     * larger profile do not vanish. */
    if (normalise && f->st.total_before > 0 && f->st.total > 0)
        k = f->st.total / f->st.total_before;
    for (size_t i = 0; i < f->n_stacks; i++) {
        const stack_rec *r = &f->stacks[i];
        double ca = normalise ? round(r->before * k * 1000) / 1000 : r->before;

        for (uint32_t d = 0; d < r->depth; d++) {
            const name_rec *n = &f->names[f->ids[r->off + d]];
            if (d)
                putc(';', out);
            fwrite(n->s, 1, n->len, out);
        }
        fprintf(out, " %.15g %.15g\n", ca, r->count);
    }
    if (fflush(out) != 0 || ferror(out)) {
        ph_fail(err, errno, "diff: write the differential stacks");
        goto out;
    }
    rc = 0;
out:
    ph_folded_free(f);
    return rc;
}
