/* ph_folded.c - folded stacks parsed, interned and merged (see ph_folded.h).
 *
 * Design, for large inputs (the benchmark is 75 MB: 200,000 unique stacks
 * over 3,000 names, ~28 frames each):
 *  - one pass over the bytes, line by line (ph_lines); a line is split on
 *    ';' and each frame looked up in the string table (ph_intern).  Name
 *    bytes are stored there once: 3,000 names instead of 5.6 million frame
 *    strings.
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

#include "ph_intern.h"
#include "ph_lines.h"

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

    ph_intern *names; /* frame names, ids in first-seen order */

    uint32_t *ids;
    size_t n_ids, cap_ids;
    stack_rec *stacks;
    size_t n_stacks, cap_stacks;
    uint64_t *stack_tab; /* 0 empty, else hash << 32 | (index + 1): most misses never touch stacks[] */
    size_t stack_mask;

    ph_lines lines; /* the bytes fed, as lines; a line split across feeds is held there */
};

/* ---- memory ------------------------------------------------------------- */

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

/* The id of name S[0..N), added if new; -1 on ENOMEM. */
static inline int64_t
intern(ph_folded *f, const char *s, size_t n)
{
    return ph_intern_add(f->names, s, n);
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

/* A line from the splitter, a '\r' left for parse_line to trim with the
 * blanks; NULL: longer than PH_FOLDED_MAX_LINE.  The only failure is
 * ENOMEM, which the feed reports. */
static inline int
line_cb(void *ctx, const char *line, size_t len, size_t lineno, ph_error_t *err)
{
    ph_folded *f = ctx;

    if (line == NULL) {
        long_line(f);
        return 0;
    }
    return parse_line(f, line, line + len);
}

ph_folded *
ph_folded_new(int flags, ph_error_t *err)
{
    ph_folded *f = calloc(1, sizeof *f);

    if (f == NULL || (f->names = ph_intern_new(SIZE_MAX)) == NULL ||
        (!(flags & PH_FOLDED_KEEP_ORDER) && grow_stack_tab(f) < 0)) {
        ph_folded_free(f);
        ph_fail(err, ENOMEM, "folded stacks: out of memory");
        return NULL;
    }
    f->flags = flags;
    ph_lines_init(&f->lines, PH_FOLDED_MAX_LINE, PH_LINES_KEEP_CR, line_cb, f);
    return f;
}

void
ph_folded_free(ph_folded *f)
{
    if (f == NULL)
        return;
    ph_intern_free(f->names);
    free(f->ids);
    free(f->stacks);
    free(f->stack_tab);
    ph_lines_free(&f->lines);
    free(f);
}

int
ph_folded_feed(ph_folded *f, const char *buf, size_t len, ph_error_t *err)
{
    if (ph_lines_feed_with(&f->lines, buf, len, line_cb, err) < 0)
        return ph_fail(err, ENOMEM, "folded stacks: out of memory after %zu lines", f->st.lines);
    f->st.stacks = f->n_stacks;
    f->st.names = ph_intern_count(f->names);
    return 0;
}

int
ph_folded_finish(ph_folded *f, ph_error_t *err)
{
    if (ph_lines_finish(&f->lines, err) < 0)
        return ph_fail(err, ENOMEM, "folded stacks: out of memory after %zu lines", f->st.lines);
    f->st.stacks = f->n_stacks;
    f->st.names = ph_intern_count(f->names);
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
    f->st.names = ph_intern_count(f->names);
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
    return ph_intern_count(f->names);
}

const char *
ph_folded_name(const ph_folded *f, uint32_t id, size_t *len)
{
    if (len)
        *len = ph_intern_len(f->names, id);
    return ph_intern_get(f->names, id);
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
            uint32_t id = f->ids[r->off + d];
            if (d)
                putc(';', out);
            fwrite(ph_intern_get(f->names, id), 1, ph_intern_len(f->names, id), out);
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

int
ph_folded_merge(ph_folded *into, const ph_folded *from, ph_error_t *err)
{
    size_t nn = ph_folded_n_names(from), cap = 0;
    uint32_t *map = malloc((nn ? nn : 1) * sizeof *map), *ids = NULL;
    int rc = -1;

    if (map == NULL)
        return ph_fail(err, ENOMEM, "merge folded stacks");
    for (size_t i = 0; i < nn; i++) {
        size_t len = 0;
        const char *s = ph_folded_name(from, (uint32_t)i, &len);
        int64_t id = ph_folded_intern(into, s, len, err);

        if (id < 0)
            goto out;
        map[i] = (uint32_t)id;
    }
    for (size_t i = 0; i < ph_folded_n_stacks(from); i++) {
        ph_folded_stack s = ph_folded_get_stack(from, i);

        if (s.depth > cap) {
            uint32_t *n = realloc(ids, s.depth * sizeof *n);
            if (n == NULL) {
                ph_fail(err, ENOMEM, "merge folded stacks");
                goto out;
            }
            ids = n;
            cap = s.depth;
        }
        for (uint32_t d = 0; d < s.depth; d++)
            ids[d] = map[s.frames[d]];
        if (ph_folded_add(into, ids, s.depth, s.count, err) < 0)
            goto out;
    }
    rc = 0;
out:
    free(map);
    free(ids);
    return rc;
}

int
ph_folded_write(const ph_folded *f, FILE *out, ph_error_t *err)
{
    for (size_t i = 0; i < ph_folded_n_stacks(f); i++) {
        ph_folded_stack s = ph_folded_get_stack(f, i);

        for (uint32_t d = 0; d < s.depth; d++) {
            size_t n = 0;
            const char *name = ph_folded_name(f, s.frames[d], &n);

            if ((d && fputc(';', out) == EOF) || fwrite(name, 1, n, out) != n)
                return ph_fail(err, errno, "write folded stacks");
        }
        if (fprintf(out, " %.17g\n", s.count) < 0)
            return ph_fail(err, errno, "write folded stacks");
    }
    return 0;
}
