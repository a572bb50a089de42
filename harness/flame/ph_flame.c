/* ph_flame.c - merged stacks to an interactive SVG (see ph_flame.h).
 *
 * Design.  ph_folded gives unique stacks as arrays of name ids.  Frames
 * are the nodes of the prefix tree of those stacks; we never build that
 * tree in memory (millions of nodes, almost all too narrow to draw).
 * Instead the stacks are ordered so every subtree is a contiguous run,
 * frame by frame in flamegraph.pl's left-to-right order, and one sweep
 * keeps a stack of open frames: a frame opens where a stack leaves the
 * previous stack's path and closes where a later stack leaves it; on
 * closing it is kept if wide enough.  Memory is one index per stack plus
 * the frames actually drawn.
 *
 * The order.  flamegraph.pl sorts whole lines as strings, so a frame with
 * children sorts as `name;` and a leaf as `name ` (then the count):
 * siblings `f10`, `f1;x` come in that order (';' > '0') but `f1 `, `f10`
 * the other way.  We rank each name twice, followed by ';' and by ' ', and
 * a frame takes the first rank when it has children, the second when it
 * has none - so siblings are in flamegraph.pl's order.  Where flamegraph.pl
 * draws one name twice under a parent (`f 1`, `f1 1`, `f;g 1`: its leaf
 * line and its child's line are apart), we draw one frame, where its
 * children put it: a name is one frame per parent.  Whether a frame that
 * ends a stack has children matters only when some other name ranks
 * between its two ranks (`f1` and `f10`); only then is it looked up
 * (fix_leaves).
 *
 * A flame chart keeps input order (time) and merges only consecutive
 * stacks: the same sweep without the sort.
 *
 * Differential input (`stack BEFORE AFTER`): widths are AFTER, like
 * flamegraph.pl, and each frame's colour is the change of its whole
 * subtree (the sweep sums BEFORE over the frame's stacks), so a parent
 * whose children grew is red too; or, with diff_self, its own change
 * (the counts of the stacks that end in it), as flamegraph.pl colours.
 *
 * Geometry is written in hundredths of a pixel computed from each frame's
 * two edges, so a child never pokes out of its parent after rounding; the
 * script's containment tests (zoom) use each frame's extent in samples
 * (fg:x, fg:w), since rounded x + width of a child and of its parent need
 * not add up to the same number.  Labels use a fixed
 * monospace advance (CHAR_W) so fitting them is arithmetic, here and in
 * the script, and the browser never measures text.
 *
 * Everything belongs to one call: no global state; safe in any thread.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* qsort_r */
#endif
#include "ph_flame.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ph_escape.h"
#include "ph_markup_only.h"

#define FRAME_H 16
#define FONT_SIZE 12
/* The advance of a 12 px monospace character: 0.6025 em, the widest of
 * the common ones (DejaVu Sans Mono and Menlo 0.602, Liberation Mono and
 * Courier New 0.600, Consolas 0.550), so a fitted label never runs past
 * its frame (at 0.59 em, Chromium's DejaVu Sans Mono did, by 15 px on a
 * full-width frame).  The script reads it back from data-charw. */
#define CHAR_W 7.23
#define XPAD 10
#define TOP_PAD (FONT_SIZE * 3)
#define BOTTOM_PAD (FONT_SIZE * 2 + 10)
#define SUB_PAD (FONT_SIZE * 2)     /* the first subtitle line */
#define SUB_LINE_H (FONT_SIZE + 4)  /* each line after it */
#define SUB_MAX_LINES 6             /* 3 of the caller's subtitle, 2 of the differential note, 1 of max_bytes */
#define TITLE_CHAR_W (17 * 0.6025)  /* the title's 17 px monospace */
#define TITLE_MARGIN 120            /* each side: "Reset Zoom", "Search ic" */
#define ROOT_ID UINT32_MAX

void
ph_flame_opts_init(ph_flame_opts *o)
{
    memset(o, 0, sizeof *o);
    o->countname = "samples";
    o->palette = "hot";
    o->width = 1200;
    o->minwidth = 0.1;
    o->differential = -1;
}

/* ---- ordering ------------------------------------------------------------ */

typedef struct order_ctx {
    const ph_folded_stack *stacks; /* all of F's stacks, fetched once */
    const uint32_t *rank;          /* name id -> rank of the name followed by ';' */
    int reverse;
    uint32_t bits, per_key;        /* bits of a rank + 1; ranks packed in a 64-bit key */
} order_ctx;

/* Names followed by a terminator: entry E is name E/2 followed by ' '
 * (E even) or ';' (odd), compared as flamegraph.pl compares lines. */
static int
cmp_terminated(const void *x, const void *y, void *arg)
{
    const ph_folded *f = arg;
    uint32_t ex = *(const uint32_t *)x, ey = *(const uint32_t *)y;
    size_t la, lb, n;
    const unsigned char *a = (const unsigned char *)ph_folded_name(f, ex / 2, &la);
    const unsigned char *b = (const unsigned char *)ph_folded_name(f, ey / 2, &lb);
    int c;
    unsigned ca, cb;

    n = la < lb ? la : lb;
    if ((c = memcmp(a, b, n)) != 0)
        return c;
    ca = la > n ? a[n] : (ex & 1 ? ';' : ' ');
    cb = lb > n ? b[n] : (ey & 1 ? ';' : ' ');
    if (ca != cb)
        return ca < cb ? -1 : 1;
    /* equal so far: the one that ends first is a prefix of the other */
    return la == lb ? 0 : la < lb ? -1 : 1;
}

/* Frame I of stack S, root first, honouring --reverse. */
static inline uint32_t
frame_at(const ph_folded_stack *s, uint32_t i, int reverse)
{
    return s->frames[reverse ? s->depth - 1 - i : i];
}

/* The sort key of stack S for block D: the ranks (+1) of its frames
 * D*K .. D*K+K-1 packed into 64 bits, most significant first, 0 past the
 * stack's end - so keys order like the frames, a stack before its own
 * extensions.  K frames of a stack are adjacent in memory: one cache miss
 * serves K levels of the sort.  Every frame takes its rank as a frame with
 * children (fix_leaves corrects the leaves where that matters). */
static inline uint64_t
key_at(const order_ctx *c, const ph_folded_stack *s, uint32_t d)
{
    uint64_t key = 0;
    uint32_t pos = d * c->per_key;

    for (uint32_t j = 0; j < c->per_key; j++, pos++)
        key = (key << c->bits) | (pos < s->depth ? (uint64_t)c->rank[frame_at(s, pos, c->reverse)] + 1 : 0);
    return key;
}

/* A block with its last slot used: the stacks may go on past it. */
static inline int
key_full(const order_ctx *c, uint64_t key)
{
    return (key & ((1ull << c->bits) - 1)) != 0;
}

/* Swap entries I and J of the parallel arrays. */
static inline void
swap2(uint32_t *idx, uint64_t *keys, size_t i, size_t j)
{
    uint32_t t = idx[i];
    uint64_t k = keys[i];

    idx[i] = idx[j];
    idx[j] = t;
    keys[i] = keys[j];
    keys[j] = k;
}

/* Stacks X and Y, equal up to block D (excluded), compared from D on. */
static int
cmp_from(const order_ctx *c, uint32_t x, uint32_t y, uint32_t d)
{
    const ph_folded_stack *a = &c->stacks[x], *b = &c->stacks[y];

    for (;; d++) {
        uint64_t ka = key_at(c, a, d), kb = key_at(c, b, d);
        if (ka != kb)
            return ka < kb ? -1 : 1;
        if (!key_full(c, ka))
            return 0;
    }
}

typedef struct sort_task {
    size_t lo, n;
    uint32_t d;
} sort_task;

/* Order the stacks frame by frame in name order, a prefix before its
 * extensions, so every subtree is one contiguous run.  Multikey quicksort
 * (Bentley & Sedgewick) on the packed keys: three-way partitions on block
 * d, the equal part moving on to block d + 1, so the long prefixes stacks
 * share are read once per level instead of once per comparison.  Each
 * stack's key for the current block sits next to its index, so partitions
 * scan two plain arrays; the stacks' frames (22 MB on the benchmark, far
 * beyond the cache) are read only when a run descends a level.  Tasks are
 * disjoint runs, so the task stack stays within n entries; -1 on ENOMEM. */
static int
sort_stacks(const order_ctx *c, uint32_t *idx, size_t n)
{
    sort_task *tasks = NULL;
    uint64_t *keys = NULL;
    size_t nt = 0, cap = 64;

    if (n < 2)
        return 0;
    if ((tasks = malloc(cap * sizeof *tasks)) == NULL || (keys = malloc(n * sizeof *keys)) == NULL) {
        free(tasks);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = key_at(c, &c->stacks[idx[i]], 0);
    tasks[nt++] = (sort_task){ 0, n, 0 };
    while (nt > 0) {
        sort_task t = tasks[--nt];
        uint32_t *a = idx + t.lo;
        uint64_t *k = keys + t.lo, pivot;
        size_t lt = 0, gt = t.n, i = 0;

        if (t.n < 16) { /* insertion sort: keys first, frames only on full ties */
            for (size_t m = 1; m < t.n; m++)
                for (size_t j = m; j > 0; j--) {
                    int r = k[j - 1] != k[j] ? (k[j - 1] < k[j] ? -1 : 1)
                            : key_full(c, k[j]) ? cmp_from(c, a[j - 1], a[j], t.d + 1) : 0;
                    if (r <= 0)
                        break;
                    swap2(a, k, j - 1, j);
                }
            continue;
        }
        {
            uint64_t k0 = k[0], k1 = k[t.n / 2], k2 = k[t.n - 1]; /* median of three */
            pivot = k0 < k1 ? (k1 < k2 ? k1 : k0 < k2 ? k2 : k0) : (k0 < k2 ? k0 : k1 < k2 ? k2 : k1);
        }
        /* [0, lt) < pivot, [lt, i) == pivot, [gt, n) > pivot */
        while (i < gt) {
            if (k[i] < pivot)
                swap2(a, k, lt++, i++);
            else if (k[i] > pivot)
                swap2(a, k, i, --gt);
            else
                i++;
        }
        if (nt + 3 > cap) {
            sort_task *bigger = realloc(tasks, cap * 2 * sizeof *tasks);
            if (bigger == NULL) {
                free(tasks);
                free(keys);
                return -1;
            }
            tasks = bigger;
            cap *= 2;
        }
        if (lt > 1)
            tasks[nt++] = (sort_task){ t.lo, lt, t.d };
        if (t.n - gt > 1)
            tasks[nt++] = (sort_task){ t.lo + gt, t.n - gt, t.d };
        /* equal keys with a free slot: identical stacks, nothing to order */
        if (gt - lt > 1 && key_full(c, pivot)) {
            for (size_t m = lt; m < gt; m++)
                k[m] = key_at(c, &c->stacks[a[m]], t.d + 1);
            tasks[nt++] = (sort_task){ t.lo + lt, gt - lt, t.d + 1 };
        }
    }
    free(tasks);
    free(keys);
    return 0;
}

/* 1 if stacks A and B have the same first D frames. */
static int
same_prefix(const ph_folded_stack *a, const ph_folded_stack *b, uint32_t d, int reverse)
{
    if (a->depth < d || b->depth < d)
        return 0;
    if (!reverse)
        return memcmp(a->frames, b->frames, d * sizeof *a->frames) == 0;
    for (uint32_t k = 0; k < d; k++)
        if (frame_at(a, k, reverse) != frame_at(b, k, reverse))
            return 0;
    return 1;
}

/* ORDER was sorted taking every frame to have children.  A stack's last
 * frame may have none (the next stack in ORDER does not extend it): then
 * its rank is its name's lower one (RANK2[2 * id], followed by ' ', where
 * RANK2[2 * id + 1] is followed by ';').  That matters only where other
 * names rank between the two (CLOSE[id] == 0, such as `f1` and `f10`):
 * the frame moves left past its siblings ranking between, which are right
 * before it, siblings being in key order.  For a sibling that is itself a
 * moved leaf its higher rank decides as its lower one would (no pair of
 * names interleaves as lo1 < lo2 < hi1 < hi2), so the result is ORDER
 * sorted by the right keys.  The work is the siblings passed, each
 * checked for the shared parent path. */
static void
fix_leaves(const order_ctx *c, uint32_t *order, size_t n, const uint32_t *rank2, const unsigned char *close)
{
    for (size_t p = 0; p < n; p++) {
        const ph_folded_stack *s = &c->stacks[order[p]];
        uint32_t d = s->depth - 1, id = frame_at(s, d, c->reverse), lo = rank2[2 * id], hi = rank2[2 * id + 1];
        size_t q = p;

        if (close[id] || (p + 1 < n && same_prefix(s, &c->stacks[order[p + 1]], s->depth, c->reverse)))
            continue;
        while (q > 0) {
            const ph_folded_stack *t = &c->stacks[order[q - 1]];
            uint32_t k;
            if (t->depth <= d || !same_prefix(s, t, d, c->reverse))
                break;
            k = rank2[2 * frame_at(t, d, c->reverse) + 1];
            if (!(k > lo && k < hi))
                break;
            q--;
        }
        if (q < p) {
            uint32_t moved = order[p];
            memmove(order + q + 1, order + q, (p - q) * sizeof *order);
            order[q] = moved;
        }
    }
}

/* ORDER (n entries): the stacks of F in flamegraph.pl's left-to-right
 * order, each subtree contiguous (see the top of this file).  -1 on
 * ENOMEM. */
static int
order_stacks(const ph_folded *f, const ph_folded_stack *stacks, size_t n, int reverse, uint32_t *order)
{
    size_t nn = ph_folded_n_names(f);
    uint32_t *sorted = NULL, *rank = NULL, *prank = NULL;
    unsigned char *close = NULL;
    order_ctx oc = { stacks, NULL, reverse, 1, 0 };
    int rc = -1;

    if (nn >= UINT32_MAX / 2 || (sorted = malloc(2 * nn * sizeof *sorted)) == NULL ||
        (rank = malloc(2 * nn * sizeof *rank)) == NULL || (prank = malloc(nn * sizeof *prank)) == NULL ||
        (close = malloc(nn)) == NULL)
        goto out;
    for (uint32_t e = 0; e < 2 * nn; e++)
        sorted[e] = e;
    qsort_r(sorted, 2 * nn, sizeof *sorted, cmp_terminated, (void *)f);
    /* rank[2 * id] leaf (' '), rank[2 * id + 1] with children (';'); the
     * sort needs only the latter, numbered 0..nn-1 in the same order */
    for (uint32_t r = 0, pr = 0; r < 2 * nn; r++) {
        rank[sorted[r]] = r;
        if (sorted[r] & 1)
            prank[sorted[r] / 2] = pr++;
    }
    for (size_t id = 0; id < nn; id++)
        close[id] = rank[2 * id + 1] == rank[2 * id] + 1;
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    oc.rank = prank;
    while (oc.bits < 32 && (1ull << oc.bits) <= nn) /* ranks 1..nn, 0 = past the end */
        oc.bits++;
    oc.per_key = 64 / oc.bits;
    if ((rc = sort_stacks(&oc, order, n)) == 0)
        fix_leaves(&oc, order, n, rank, close);
out:
    free(sorted);
    free(rank);
    free(prank);
    free(close);
    return rc;
}

/* ---- the sweep ------------------------------------------------------------ */

/* Frames that stand for others (with ROOT_ID, names no stack holds): the
 * frames of a stack past max_depth, and siblings narrower than minwidth. */
#define CUT_ID (UINT32_MAX - 1)
#define NARROW_ID (UINT32_MAX - 2)

/* A frame to draw: its name, depth (root 0), left edge and width in
 * counts, the sum of BEFORE counts under it, and (differential graphs)
 * its own counts, after and before: those of the stacks that end in it.
 * N1, N2: a CUT_ID frame's fewest and most frames cut, a NARROW_ID
 * frame's frames merged (N1). */
typedef struct kept {
    uint32_t name, depth;
    double x, w, before, self, self_before;
    uint32_t n1, n2;
} kept;

typedef struct frames {
    kept *v;
    size_t n, cap;
    uint32_t max_depth;
    size_t stacks_cut, merged;
} frames;

typedef struct openf {
    uint32_t name;
    double x, before, self, self_before;
    uint32_t n1, n2;
} openf;

/* Narrow siblings closed at one depth and not yet drawn: [x0, x1). */
typedef struct narrow_run {
    int on;
    double x0, x1, before, self, self_before;
    uint32_t n;
} narrow_run;

typedef struct sweep_opts {
    int reverse, differential, collapse;
    uint32_t max_depth;  /* 0: none */
    double min_w;        /* in counts: a frame this wide is kept ... */
    uint32_t tie_depth;  /* ... when it is at most this deep (max_bytes cuts between equal widths) */
} sweep_opts;

typedef struct sweep_st {
    const sweep_opts *o;
    frames *fr;
    narrow_run *runs; /* runs[k]: at depth k; max depth + 2 of them */
} sweep_st;

static int
keep(frames *fr, uint32_t depth, const openf *o, double w)
{
    if (fr->n == fr->cap) {
        size_t cap = fr->cap ? fr->cap * 2 : 1024;
        kept *nv = realloc(fr->v, cap * sizeof *nv);
        if (nv == NULL)
            return -1;
        fr->v = nv;
        fr->cap = cap;
    }
    fr->v[fr->n++] = (kept){ o->name, depth, o->x, w, o->before, o->self, o->self_before, o->n1, o->n2 };
    if (depth > fr->max_depth)
        fr->max_depth = depth;
    return 0;
}

/* Stack S's depth as drawn, and its frame K as drawn: past max_depth the
 * last one drawn is the marker. */
static inline uint32_t
drawn_depth(const ph_folded_stack *s, const sweep_opts *o)
{
    return o->max_depth && s->depth > o->max_depth ? o->max_depth : s->depth;
}

static inline uint32_t
drawn_frame(const ph_folded_stack *s, uint32_t k, const sweep_opts *o)
{
    return o->max_depth && s->depth > o->max_depth && k == o->max_depth - 1 ? CUT_ID : frame_at(s, k, o->reverse);
}

/* Whether a frame W counts wide at DEPTH is drawn on its own. */
static inline int
wide_enough(const sweep_opts *o, double w, uint32_t depth)
{
    return w > o->min_w || (w == o->min_w && depth <= o->tie_depth);
}

/* The narrow siblings pending at DEPTH, drawn as one frame if together
 * they are wide enough. */
static int
flush_run(sweep_st *st, uint32_t depth)
{
    narrow_run *r = &st->runs[depth];
    openf o = { NARROW_ID, r->x0, r->before, r->self, r->self_before, r->n, r->n };
    int rc = 0;

    if (r->on && wide_enough(st->o, r->x1 - r->x0, depth)) {
        rc = keep(st->fr, depth, &o, r->x1 - r->x0);
        st->fr->merged += r->n;
    }
    *r = (narrow_run){ 0 };
    return rc;
}

/* Frame O at DEPTH closes at X: kept if at least min_w counts wide
 * (flamegraph.pl deletes a frame when etime - stime < minwidth_time);
 * with collapse a narrow one joins the narrow siblings before it, which
 * a wide sibling or the parent's end draws.  Frames close children
 * first, so the runs above DEPTH end here. */
static int
close_frame(sweep_st *st, uint32_t depth, const openf *o, double x)
{
    narrow_run *r = &st->runs[depth];

    if (st->o->collapse && flush_run(st, depth + 1) < 0)
        return -1;
    if (wide_enough(st->o, x - o->x, depth)) {
        if (st->o->collapse && flush_run(st, depth) < 0)
            return -1;
        return keep(st->fr, depth, o, x - o->x);
    }
    if (st->o->collapse) {
        if (!r->on)
            *r = (narrow_run){ 1, o->x, x, 0, 0, 0, 0 };
        r->x1 = x;
        r->before += o->before;
        r->self += o->self;
        r->self_before += o->self_before;
        r->n++;
    }
    return 0;
}

/* Merge the stacks in ORDER into frames (see close_frame). */
static int
sweep(const ph_folded_stack *stacks, const uint32_t *order, size_t n, const sweep_opts *so, frames *fr)
{
    uint32_t max_depth = 0, pd = 0; /* depth of the previous stack */
    openf *open = NULL;
    sweep_st st = { so, fr, NULL };
    double x = 0, before_total = 0;

    fr->n = 0;
    fr->max_depth = 0;
    fr->stacks_cut = fr->merged = 0;
    for (size_t i = 0; i < n; i++)
        if (drawn_depth(&stacks[i], so) > max_depth)
            max_depth = drawn_depth(&stacks[i], so);
    /* open[0] is the root; open[k] the frame at depth k */
    if ((open = malloc(((size_t)max_depth + 1) * sizeof *open)) == NULL ||
        (st.runs = calloc((size_t)max_depth + 2, sizeof *st.runs)) == NULL)
        goto oom;
    open[0] = (openf){ ROOT_ID, 0, 0, 0, 0, 0, 0 };
    for (size_t i = 0; i < n; i++) {
        const ph_folded_stack *s = &stacks[order ? order[i] : i];
        uint32_t shared = 0, de = drawn_depth(s, so);

        while (shared < de && shared < pd && open[shared + 1].name == drawn_frame(s, shared, so))
            shared++;
        for (uint32_t k = pd; k > shared; k--)
            if (close_frame(&st, k, &open[k], x) < 0)
                goto oom;
        for (uint32_t k = shared; k < de; k++)
            open[k + 1] = (openf){ drawn_frame(s, k, so), x, 0, 0, 0, 0, 0 };
        if (de < s->depth) { /* cut: the marker says by how much */
            uint32_t cut = s->depth - (de - 1);
            openf *m = &open[de];
            m->n1 = m->n2 == 0 || cut < m->n1 ? cut : m->n1;
            m->n2 = cut > m->n2 ? cut : m->n2;
            fr->stacks_cut++;
        }
        /* each frame's BEFORE is the sum over its subtree, its own counts
         * those of the stacks ending in it; only differential graphs need
         * them (otherwise BEFORE equals the width) */
        if (so->differential) {
            for (uint32_t k = 1; k <= de; k++)
                open[k].before += s->before;
            open[de].self += s->count;
            open[de].self_before += s->before;
        }
        before_total += s->before;
        x += s->count;
        pd = de;
    }
    for (uint32_t k = pd; k > 0; k--) /* the last stack's frames */
        if (close_frame(&st, k, &open[k], x) < 0)
            goto oom;
    open[0].before = before_total;
    if ((so->collapse && flush_run(&st, 1) < 0) || keep(fr, 0, &open[0], x) < 0)
        goto oom;
    free(open);
    free(st.runs);
    return 0;
oom:
    free(open);
    free(st.runs);
    return -1;
}

/* ---- output --------------------------------------------------------------- */

/* How a name is shown.  Frame names are bytes; the SVG must be valid
 * UTF-8 and XML 1.0, where a stray byte or a control character (even as
 * a character reference) makes the whole file unreadable.  So, one unit
 * at a time: a valid UTF-8 character XML allows is itself; a control
 * character, C0 or C1 or DEL, a bidi control (U+202E and its kin, which
 * would make a frame read as another: ph_escape_cp_hidden) and
 * U+FFFE/U+FFFF are shown escaped (`\x01`, `\u0085`, `\u202E`,
 * `\uFFFE`); any byte that does not start a well-formed character
 * (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF) is
 * U+FFFD.  Markup is escaped later, on output.
 *
 * show_unit: the unit at S[0..N) (N >= 1): its displayed bytes in OUT
 * (at most 6), their count in *OUTLEN, the characters they show in
 * *CHARS; returns the input bytes consumed. */
static size_t
show_unit(const unsigned char *s, size_t n, char out[8], size_t *outlen, size_t *chars)
{
    static const char hex[] = "0123456789abcdef";
    unsigned c = s[0];
    uint32_t cp;
    size_t len;

    if (c < 0x80) {
        if (c >= 0x20 && c != 0x7f) {
            out[0] = (char)c;
            *outlen = *chars = 1;
        } else {
            memcpy(out, "\\x", 2);
            out[2] = hex[c >> 4];
            out[3] = hex[c & 15];
            *outlen = *chars = 4;
        }
        return 1;
    }
    if ((len = ph_utf8_decode(s, n, &cp)) == 0) {
        memcpy(out, "\xef\xbf\xbd", 3);
        *outlen = 3;
        *chars = 1;
        return 1;
    }
    if (ph_escape_cp_hidden(cp) || cp == 0xfffe || cp == 0xffff) {
        snprintf(out, 8, "\\u%04X", (unsigned)cp);
        *outlen = *chars = 6;
        return len;
    }
    memcpy(out, s, len);
    *outlen = len;
    *chars = 1;
    return len;
}

/* The number of characters S[0..N) shows as. */
static size_t
show_chars(const char *s, size_t n)
{
    size_t total = 0;
    char u[8];

    for (size_t i = 0, ulen, chars; i < n; total += chars)
        i += show_unit((const unsigned char *)s + i, n - i, u, &ulen, &chars);
    return total;
}

/* Text content or attribute value: S[0..N) shown (see show_unit), at most
 * LIMIT characters of it, with markup escaped. */
static void
xml_show(ph_mw *out, const char *s, size_t n, size_t limit)
{
    char u[8];

    for (size_t i = 0, ulen, chars; i < n && limit > 0;) {
        i += show_unit((const unsigned char *)s + i, n - i, u, &ulen, &chars);
        if (chars > limit) /* an escape cut short: its first characters */
            ulen = chars = limit;
        limit -= chars;
        ph_mw_textn(out, u, ulen);
    }
}

static void
xml_text(ph_mw *out, const char *s, size_t n)
{
    xml_show(out, s, n, SIZE_MAX);
}

/* A line of wrapped text: S[off, off + len), then ".." when cut short. */
typedef struct text_line {
    size_t off, len;
    int cut;
} text_line;

/* Break S[0..n) into at most MAX lines of at most WIDTH characters (as
 * shown), at blanks where there are any, inside a word too long for a
 * line otherwise; the last line ends with ".." if text is left over.
 * Returns the number of lines. */
static size_t
wrap_text(const char *s, size_t n, size_t width, text_line *lines, size_t max)
{
    size_t count = 0, i = 0;
    char u[8];

    if (width < 3)
        width = 3;
    while (i < n && count < max) {
        size_t start = i, chars = 0, brk = 0, ulen, uc;
        while (i < n) {
            size_t step = show_unit((const unsigned char *)s + i, n - i, u, &ulen, &uc);
            if (chars + uc > width)
                break;
            if (s[i] == ' ')
                brk = i; /* the line may end before this blank */
            chars += uc;
            i += step;
        }
        if (i < n && brk > start && s[i] != ' ')
            i = brk; /* back to the last blank, not inside the word */
        lines[count++] = (text_line){ start, i - start, 0 };
        while (i < n && s[i] == ' ')
            i++;
    }
    if (i < n && count > 0) { /* left over: the last line ends with ".." */
        text_line *l = &lines[count - 1];
        size_t keep = width - 2, chars = 0, j = l->off, ulen, uc;
        while (j < l->off + l->len) {
            size_t step = show_unit((const unsigned char *)s + j, l->off + l->len - j, u, &ulen, &uc);
            if (chars + uc > keep)
                break;
            chars += uc;
            j += step;
        }
        l->len = j - l->off;
        l->cut = 1;
    }
    return count;
}

/* 1234567 -> "1,234,567"; fractions keep three decimals. */
static void
fmt_count(char *buf, size_t len, double v)
{
    char raw[64];
    size_t n, o = 0;

    if (v != floor(v) || v >= 1e18) {
        snprintf(buf, len, "%.3f", v);
        return;
    }
    snprintf(raw, sizeof raw, "%.0f", v);
    n = strlen(raw);
    for (size_t i = 0; i < n && o + 2 < len; i++) {
        buf[o++] = raw[i];
        if ((n - i - 1) % 3 == 0 && i + 1 < n)
            buf[o++] = ',';
    }
    buf[o] = '\0';
}

/* Hundredths of a pixel as "123.45". */
static void
fmt_px(char *buf, size_t len, int64_t h)
{
    snprintf(buf, len, "%s%lld.%02lld", h < 0 ? "-" : "", (long long)(llabs(h) / 100), (long long)(llabs(h) % 100));
}

static uint32_t
name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

typedef struct palette {
    const char *name;
    /* base and spread per channel; each channel takes 1 of 3 hash bytes */
    int r0, rs, g0, gs, b0, bs;
    int rv, gv, bv; /* which hash byte (0..2) drives each channel */
    char multi;     /* a multi palette: each frame takes one of the others by its name */
} palette;

/* flamegraph.pl's palettes, as ranges: hot is 205-255 red, 0-230 green,
 * 0-55 blue, and so on; then its multi palettes. */
static const palette palettes[] = {
    { "hot", 205, 50, 0, 230, 0, 55, 2, 0, 1, 0 },      { "mem", 0, 0, 190, 50, 0, 210, 0, 1, 0, 0 },
    { "io", 80, 60, 80, 60, 190, 55, 0, 0, 1, 0 },      { "red", 200, 55, 50, 80, 50, 80, 0, 0, 0, 0 },
    { "green", 50, 60, 200, 55, 50, 60, 0, 0, 0, 0 },   { "blue", 80, 60, 80, 60, 205, 50, 0, 0, 0, 0 },
    { "yellow", 175, 55, 175, 55, 50, 20, 0, 0, 1, 0 }, { "purple", 190, 65, 80, 60, 190, 65, 0, 0, 0, 0 },
    { "aqua", 50, 60, 165, 55, 165, 55, 0, 0, 0, 0 },   { "orange", 190, 65, 90, 65, 0, 0, 0, 0, 0, 0 },
    { "java", 0, 0, 0, 0, 0, 0, 0, 0, 0, 'J' },         { "js", 0, 0, 0, 0, 0, 0, 0, 0, 0, 'S' },
    { "perl", 0, 0, 0, 0, 0, 0, 0, 0, 0, 'P' },         { "wakeup", 0, 0, 0, 0, 0, 0, 0, 0, 0, 'W' },
    { "chain", 0, 0, 0, 0, 0, 0, 0, 0, 0, 'C' },
};
#define PALETTE_NAMES "hot, mem, io, red, green, blue, yellow, purple, aqua, orange, java, js, perl, wakeup, chain"

static const palette *
find_palette(const char *name)
{
    for (size_t i = 0; i < sizeof palettes / sizeof palettes[0]; i++)
        if (strcmp(palettes[i].name, name) == 0)
            return &palettes[i];
    return NULL;
}

int
ph_flame_palette_valid(const char *name)
{
    return find_palette(name) != NULL;
}

/* A frame's kind, the suffix appended to its name (stackcollapse-perf
 * --kernel/--jit/--inline, ph_collapse, the sampler): `_[k]` kernel,
 * `_[j]` JIT code named from a perf map, `_[i]` inlined, `_[w]` waker,
 * `_[p]` a Python function; 0 for none (native).  Labels and tooltips
 * leave it out. */
static char
annotation(const char *s, size_t n)
{
    if (n >= 4 && s[n - 4] == '_' && s[n - 3] == '[' && s[n - 1] == ']' &&
        (s[n - 2] == 'k' || s[n - 2] == 'j' || s[n - 2] == 'i' || s[n - 2] == 'w' || s[n - 2] == 'p'))
        return s[n - 2];
    return 0;
}

/* The one choice of a colour per frame kind (annotation()) in a single
 * palette, as async-profiler gives each language its own: kernel orange,
 * JIT green and inlined or waker aqua (flamegraph.pl's java palette),
 * Python blue (in every palette, multi ones too: draw()); NULL for a
 * native frame (the palette's own colour). */
static const char *
kind_palette(char kind)
{
    switch (kind) {
    case 'k': return "orange";
    case 'j': return "green";
    case 'i':
    case 'w': return "aqua";
    case 'p': return "blue";
    default: return NULL;
    }
}

static int
contains(const char *s, size_t n, const char *what)
{
    return memmem(s, n, what, strlen(what)) != NULL;
}

/* The palette a frame of a multi palette takes, by flamegraph.pl's rules
 * (annotations first, then what the name looks like). */
static const char *
multi_palette(char multi, const char *s, size_t n, char ann)
{
    switch (multi) {
    case 'J': {
        static const char *const java[] = { "java/", "javax/", "jdk/", "net/", "org/", "com/", "io/", "sun/" };
        const char *t = n > 0 && s[0] == 'L' ? s + 1 : s;
        size_t tn = n > 0 && s[0] == 'L' ? n - 1 : n;
        if (ann == 'j')
            return "green";
        if (ann == 'i')
            return "aqua";
        for (size_t i = 0; i < sizeof java / sizeof java[0]; i++)
            if (tn >= strlen(java[i]) && memcmp(t, java[i], strlen(java[i])) == 0)
                return "green";
        if (contains(s, n, ":::"))
            return "green";
        if (contains(s, n, "::"))
            return "yellow";
        return ann == 'k' ? "orange" : "red";
    }
    case 'S': {
        const char *slash = memchr(s, '/', n);
        if (ann == 'j')
            return slash ? "green" : "aqua";
        if (contains(s, n, "::"))
            return "yellow";
        if (slash && contains(slash, n - (size_t)(slash - s), ".js"))
            return "green";
        if (memchr(s, ':', n))
            return "aqua";
        if (n == 1 && s[0] == ' ')
            return "green"; /* a missing symbol */
        return contains(s, n, "_[k]") ? "orange" : "red";
    }
    case 'P':
        if (contains(s, n, "::"))
            return "yellow";
        if (contains(s, n, "Perl") || contains(s, n, ".pl"))
            return "green";
        return ann == 'k' ? "orange" : "red";
    case 'W':
        return "aqua";
    default: /* chain */
        return contains(s, n, "_[w]") ? "aqua" : "blue";
    }
}

/* A frame's fill.  Differential graphs: red (grew) or blue (shrank) by
 * DELTA's share of MAXDELTA.  Otherwise the palette's colour of the
 * name's hash; in a single palette an annotated frame takes its kind's
 * colour (kind_palette), since the annotation says what it is.  The
 * separators `--` and `-` of combined stacks are grey, as flamegraph.pl
 * draws them. */
static void
colour(const char *name, size_t nlen, const palette *pal, int differential, double delta, double maxdelta,
       char *out, size_t len)
{
    uint32_t h = name_hash(name, nlen);
    double v[3] = { (h & 0xff) / 255.0, ((h >> 8) & 0xff) / 255.0, ((h >> 16) & 0xff) / 255.0 };
    char ann = annotation(name, nlen);

    if (nlen <= 2 && nlen > 0 && memcmp(name, "--", nlen) == 0) {
        snprintf(out, len, nlen == 2 ? "rgb(160,160,160)" : "rgb(200,200,200)");
        return;
    }
    if (differential) {
        /* the root's change is not on the scale (it is the sum of the
         * others): beyond the largest, a change is full colour */
        double share = maxdelta > 0 ? fabs(delta) / maxdelta : 0;
        int c = (int)(210 * (1.0 - (share < 1 ? share : 1)));
        if (delta > 0)
            snprintf(out, len, "rgb(255,%d,%d)", c, c);
        else if (delta < 0)
            snprintf(out, len, "rgb(%d,%d,255)", c, c);
        else
            snprintf(out, len, "rgb(250,250,250)");
        return;
    }
    if (ann == 'p')
        pal = find_palette(kind_palette(ann)); /* Python, whatever the palette: its own colour */
    else if (pal->multi)
        pal = find_palette(multi_palette(pal->multi, name, nlen, ann));
    else if (kind_palette(ann) != NULL)
        pal = find_palette(kind_palette(ann));
    snprintf(out, len, "rgb(%d,%d,%d)", pal->r0 + (int)(pal->rs * v[pal->rv]), pal->g0 + (int)(pal->gs * v[pal->gv]),
             pal->b0 + (int)(pal->bs * v[pal->bv]));
}

typedef struct draw_ctx {
    ph_mw *out;
    const ph_folded *f;
    const ph_flame_opts *o;
    const palette *pal;
    const char *countname;
    int differential, height, top; /* top: where an icicle's root goes */
    double total, scale, maxdelta;
} draw_ctx;

/* A frame's change in a differential graph: with its children (default),
 * or its own (flamegraph.pl's colours). */
static double
delta_of(const kept *k, int self)
{
    return self ? k->self - k->self_before : k->w - k->before;
}

/* The name a frame that stands for others shows, into BUF. */
static const char *
stand_in_name(const kept *k, char *buf, size_t len)
{
    char a[48];

    fmt_count(a, sizeof a, k->name == CUT_ID ? k->n2 : k->n1);
    if (k->name == CUT_ID)
        snprintf(buf, len, "[%s%s frames cut]", k->n1 != k->n2 ? "up to " : "", a);
    else
        snprintf(buf, len, "[%s narrow frames]", a);
    return buf;
}

static void
draw(const draw_ctx *c, const kept *k)
{
    static const char all[] = "all";
    ph_mw *out = c->out;
    size_t nlen;
    char fill[48], cnt[48], xs[32], ws[32], stand_in[80];
    int special = k->name == CUT_ID || k->name == NARROW_ID;
    const char *name = k->name == ROOT_ID ? all
                       : special          ? stand_in_name(k, stand_in, sizeof stand_in)
                                          : ph_folded_name(c->f, k->name, &nlen);
    int64_t x1 = llround((XPAD + k->x * c->scale) * 100), x2 = llround((XPAD + (k->x + k->w) * c->scale) * 100);
    double w = (double)(x2 - x1) / 100.0, y;
    size_t nch, chars;

    if (k->name == ROOT_ID || special)
        nlen = strlen(name);
    y = c->o->inverted ? c->top + (double)k->depth * FRAME_H : c->height - BOTTOM_PAD - (double)(k->depth + 1) * FRAME_H;
    if (special && !c->differential) /* grey: no function of the program */
        snprintf(fill, sizeof fill, k->name == CUT_ID ? "rgb(170,170,170)" : "rgb(215,215,215)");
    else
        colour(name, nlen, c->pal, c->differential, delta_of(k, c->o->diff_self), c->maxdelta, fill, sizeof fill);
    if (!special && annotation(name, nlen))
        nlen -= 4; /* shown without its annotation, as flamegraph.pl does */
    fmt_count(cnt, sizeof cnt, k->w);
    PH_MW_RAW(out, "<g><title>");
    if (c->o->max_bytes > 0 && show_chars(name, nlen) > PH_FLAME_NAME_SHOWN) {
        xml_show(out, name, nlen, PH_FLAME_NAME_SHOWN - 2);
        PH_MW_RAW(out, "..");
    } else {
        xml_text(out, name, nlen);
    }
    if (c->differential) {
        /* flamegraph.pl's form, "; +28.57%": the change as a share of the total */
        double d = 100.0 * delta_of(k, c->o->diff_self) / c->total;
        PH_MW_FMT(out, " (%s %s, %.2f%%; %s%.2f%%)", cnt, c->countname, 100.0 * k->w / c->total,
                d > 0.005 ? "+" : d < -0.005 ? "-" : "", fabs(d));
    } else {
        PH_MW_FMT(out, " (%s %s, %.2f%%)", cnt, c->countname, 100.0 * k->w / c->total);
    }
    fmt_px(xs, sizeof xs, x1);
    fmt_px(ws, sizeof ws, x2 - x1);
    /* fg:x and fg:w: the frame in samples (inferno's attributes), exact
     * (%.17g round-trips a double), for the script's zoom and search */
    PH_MW_FMT(out, "</title><rect x=\"%s\" y=\"%.0f\" width=\"%s\" height=\"%d\" fill=\"%s\" rx=\"2\" ry=\"2\" fg:x=\"%.17g\" "
            "fg:w=\"%.17g\"/>", xs, y, ws, FRAME_H - 1, fill, k->x, k->w);
    fmt_px(xs, sizeof xs, x1 + 300);
    PH_MW_FMT(out, "<text x=\"%s\" y=\"%.0f\">", xs, y + FRAME_H - 5);
    /* the same arithmetic as fit() in the script */
    nch = w > 6 ? (size_t)floor((w - 6) / CHAR_W) : 0;
    if (nch >= 3) {
        chars = show_chars(name, nlen);
        if (chars <= nch) {
            xml_text(out, name, nlen);
        } else {
            xml_show(out, name, nlen, nch - 2);
            PH_MW_RAW(out, "..");
        }
    }
    PH_MW_RAW(out, "</text></g>\n");
}

/* The interactive part.  Frames carry their extent in samples (fg:x,
 * fg:w); zoom decides what to keep in samples, never in rounded pixels
 * (x + width of a child and of its parent, each rounded to 0.01 px, need
 * not add up to the same number), with a tolerance of 1e-9 of the total
 * for decimal counts, rescales x and width and refits labels with the
 * fixed char width.  State (zoomed frame, search, case) lives in the
 * query string, so a link reopens the same view.  The graph is the
 * document's first svg: the document itself (a file), or inside a page
 * (a report's frame); a graph taller than its window opens scrolled to
 * its root, at the bottom. */
#define FLAME_JS \
    "\n'use strict';\n" \
    "var svg, frames=[], details, matchedtxt, searchbtn, unzoombtn, icbtn, W, PAD, CW, inverted, EPS;\n" \
    "var ignorecase=false, currentSearch=null, zoomed=null;\n" \
    "function init(){ svg=document.querySelector('svg'); W=svg.viewBox.baseVal.width||+svg.getAttribute('width'); PAD=+svg.getAttribute('data-xpad');\n" \
    "  CW=+svg.getAttribute('data-charw'); inverted=svg.getAttribute('data-inverted')==='1';\n" \
    "  details=document.getElementById('details').firstChild; matchedtxt=document.getElementById('matched');\n" \
    "  searchbtn=document.getElementById('search'); unzoombtn=document.getElementById('unzoom'); icbtn=document.getElementById('ignorecase');\n" \
    "  var gs=document.getElementById('frames').children;\n" \
    "  for(var i=0;i<gs.length;i++){ var g=gs[i], r=g.firstChild.nextSibling, t=r.nextSibling, title=g.firstChild.textContent;\n" \
    "    var f={ g:g, r:r, t:t, x:+r.getAttribute('fg:x'), w:+r.getAttribute('fg:w'), y:+r.getAttribute('y'),\n" \
    "      px:+r.getAttribute('x'), pw:+r.getAttribute('width'),\n" \
    "      name:Array.from(title.replace(/ \\([^()]*\\)$/,'')), title:title, fill:r.getAttribute('fill') };\n" \
    "    g.frame=f; frames.push(f); }\n" \
    "  EPS=frames[0].w*1e-9;\n" \
    "  document.getElementById('frames').addEventListener('click', function(e){ var g=e.target.closest('g'); if(g&&g.frame) zoom(g.frame); });\n" \
    "  document.getElementById('frames').addEventListener('mouseover', function(e){ var g=e.target.closest('g'); if(g&&g.frame) details.nodeValue='Function: '+g.frame.title; });\n" \
    "  document.getElementById('frames').addEventListener('mouseout', function(){ details.nodeValue=' '; });\n" \
    "  searchbtn.addEventListener('click', function(){ if(currentSearch===null) searchPrompt(); else resetSearch(); });\n" \
    "  unzoombtn.addEventListener('click', function(){ unzoom(); });\n" \
    "  icbtn.addEventListener('click', function(){ toggleCase(); });\n" \
    "  window.addEventListener('keydown', function(e){ if((e.ctrlKey&&e.key==='f')||e.key==='F3'){ e.preventDefault(); searchPrompt(); }\n" \
    "    else if(e.ctrlKey&&e.key==='i'){ e.preventDefault(); toggleCase(); } else if(e.key==='Escape'){ resetSearch(); } });\n" \
    "  var p=new URLSearchParams(document.location.search);\n" \
    "  if(p.get('ic')==='1') setCase(true);\n" \
    "  if(p.has('x')&&p.has('y')){ var x=+p.get('x'), y=+p.get('y'); var t=frames.filter(function(f){ return Math.abs(f.x-x)<=EPS && f.y===y; })[0]; if(t) zoom(t); }\n" \
    "  if(p.has('s')) search(p.get('s'));\n" \
    "  if(!inverted) window.scrollTo(0, document.documentElement.scrollHeight||1e7); }\n" \
    "function updateUrl(){ var p=new URLSearchParams();\n" \
    "  if(zoomed){ p.set('x',zoomed.x); p.set('y',zoomed.y); }\n" \
    "  if(currentSearch!==null) p.set('s',currentSearch); if(ignorecase) p.set('ic','1');\n" \
    "  var q=p.toString(); try{ history.replaceState(null,'',document.location.pathname+(q?'?'+q:'')); }catch(e){} }\n" \
    "function fit(f,x,w){ f.r.setAttribute('x',x.toFixed(2)); f.r.setAttribute('width',w.toFixed(2)); f.t.setAttribute('x',(x+3).toFixed(2));\n" \
    "  var n=w>6 ? Math.floor((w-6)/CW) : 0, s;\n" \
    "  s = n<3 ? '' : (f.name.length<=n ? f.name.join('') : f.name.slice(0,n-2).join('')+'..');\n" \
    "  if(f.t.textContent!==s) f.t.textContent=s; }\n" \
    "function isAncestor(f,z){ return (inverted ? f.y<z.y : f.y>z.y) && f.x<=z.x+EPS && f.x+f.w>=z.x+z.w-EPS; }\n" \
    "function isDescendant(f,z){ return (inverted ? f.y>=z.y : f.y<=z.y) && f.x>=z.x-EPS && f.x+f.w<=z.x+z.w+EPS; }\n" \
    "function zoom(z){ var scale=(W-2*PAD)/z.w; zoomed=z; unzoombtn.classList.remove('hide');\n" \
    "  frames.forEach(function(f){ var g=f.g;\n" \
    "    if(isAncestor(f,z)){ g.classList.add('parent'); g.classList.remove('hide'); fit(f,PAD,W-2*PAD); }\n" \
    "    else if(isDescendant(f,z)){ g.classList.remove('parent','hide'); fit(f,PAD+(f.x-z.x)*scale,f.w*scale); }\n" \
    "    else { g.classList.add('hide'); g.classList.remove('parent'); } });\n" \
    "  if(currentSearch!==null) search(currentSearch); updateUrl(); }\n" \
    "function unzoom(){ zoomed=null; unzoombtn.classList.add('hide');\n" \
    "  frames.forEach(function(f){ f.g.classList.remove('parent','hide'); fit(f,f.px,f.pw); });\n" \
    "  if(currentSearch!==null) search(currentSearch); updateUrl(); }\n" \
    "function setCase(on){ ignorecase=on; icbtn.classList.toggle('show',on); }\n" \
    "function toggleCase(){ setCase(!ignorecase); if(currentSearch!==null) search(currentSearch); updateUrl(); }\n" \
    "function searchPrompt(){ var t=prompt('Enter a search term (regexp allowed, eg: ^ext4_)'+(ignorecase?', ignoring case':'')+'\\nPress Ctrl-I to toggle case sensitivity',''); if(t!==null && t!=='') search(t); }\n" \
    "function clearPaint(){ frames.forEach(function(f){ if(f.painted){ f.r.setAttribute('fill',f.fill); f.painted=false; } }); }\n" \
    "function resetSearch(){ currentSearch=null; clearPaint(); matchedtxt.classList.add('hide'); matchedtxt.firstChild.nodeValue=' ';\n" \
    "  searchbtn.classList.remove('show'); searchbtn.firstChild.nodeValue='Search'; updateUrl(); }\n" \
    "// Matched: the union of the matching frames' spans within the view, so\n" \
    "// a match nested in another match is not counted twice.\n" \
    "function search(term){ var re; try{ re=new RegExp(term, ignorecase?'i':''); }catch(e){ return; }\n" \
    "  clearPaint(); currentSearch=term; var lo=zoomed?zoomed.x:frames[0].x, hi=zoomed?zoomed.x+zoomed.w:frames[0].x+frames[0].w, spans=[];\n" \
    "  frames.forEach(function(f){ if(f.g.classList.contains('hide') || !re.test(f.name.join(''))) return;\n" \
    "    f.r.setAttribute('fill','rgb(230,0,230)'); f.painted=true; spans.push([Math.max(f.x,lo), Math.min(f.x+f.w,hi)]); });\n" \
    "  spans.sort(function(a,b){ return a[0]-b[0]; }); var sum=0, end=-Infinity;\n" \
    "  spans.forEach(function(s){ var a=Math.max(s[0],end); if(s[1]>a){ sum+=s[1]-a; } if(s[1]>end) end=s[1]; });\n" \
    "  matchedtxt.firstChild.nodeValue='Matched: '+(hi>lo ? 100*sum/(hi-lo) : 0).toFixed(1)+'%'; matchedtxt.classList.remove('hide');\n" \
    "  searchbtn.classList.add('show'); searchbtn.firstChild.nodeValue='Reset Search'; updateUrl(); }\n" \
    "window.addEventListener('load', init);\n"

const char *
ph_flame_script(void)
{
    return FLAME_JS;
}

/* Write the SVG of FR to FILE.  LIMIT_NOTE (may be NULL): one more
 * subtitle line.  SIZES (may be NULL): each frame's bytes, in FR's
 * order, read from *COUNTED, the bytes FILE took so far (a counting
 * FILE). */
static int
write_svg(const ph_folded *f, const ph_flame_opts *o, const palette *pal, int differential, frames *fr, double total,
          const char *limit_note, FILE *file, size_t *sizes, const uint64_t *counted)
{
    ph_mw w = ph_mw_on(file, PH_MW_SVG), *out = &w;
    draw_ctx c;
    const char *title = o->title ? o->title
                        : o->inverted ? "Icicle Graph"
                        : o->flamechart ? "Flame Chart"
                        : "Flame Graph";
    /* The subtitle is centred: wider than the image, both its ends would
     * be clipped, so it is wrapped to the width (at CHAR_W a character,
     * as labels are fitted); so is the title, cut between the buttons. */
    text_line sub[SUB_MAX_LINES];
    const char *subsrc[SUB_MAX_LINES];
    char note[256];
    size_t per_line = (size_t)((o->width - 2 * XPAD) / CHAR_W), nsub = 0, nnote;
    size_t tmax = o->width > 2 * TITLE_MARGIN + 3 * TITLE_CHAR_W ? (size_t)((o->width - 2 * TITLE_MARGIN) / TITLE_CHAR_W) : 3;
    int sub_pad, height;
    double maxdelta = 0;

    if (o->subtitle) {
        nsub = wrap_text(o->subtitle, strlen(o->subtitle), per_line, sub, 3);
        for (size_t i = 0; i < nsub; i++)
            subsrc[i] = o->subtitle;
    }
    if (differential) { /* which colours these are, in words */
        snprintf(note, sizeof note, "red: more %s, blue: fewer, %s (widths: after)", o->countname ? o->countname : "samples",
                 o->diff_self ? "in each frame itself, children not counted, as flamegraph.pl colours"
                              : "counting each frame with its children");
        nnote = wrap_text(note, strlen(note), per_line, sub + nsub, 2);
        for (size_t i = nsub; i < nsub + nnote; i++)
            subsrc[i] = note;
        nsub += nnote;
    }
    if (limit_note != NULL && wrap_text(limit_note, strlen(limit_note), per_line, sub + nsub, 1) == 1)
        subsrc[nsub++] = limit_note;
    sub_pad = nsub ? SUB_PAD + (int)(nsub - 1) * SUB_LINE_H : 0;
    height = (int)((fr->max_depth + 1) * FRAME_H + TOP_PAD + BOTTOM_PAD + sub_pad);

    for (size_t i = 0; i < fr->n; i++)
        if (fr->v[i].depth > 0 && fabs(delta_of(&fr->v[i], o->diff_self)) > maxdelta)
            maxdelta = fabs(delta_of(&fr->v[i], o->diff_self));
    c = (draw_ctx){ out, f, o, pal, o->countname ? o->countname : "samples", differential, height, TOP_PAD + sub_pad,
                    total, (o->width - 2 * XPAD) / total, maxdelta };
    PH_MW_FMT(out, "<?xml version=\"1.0\" standalone=\"yes\"?>\n"
            "<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" "
            "xmlns=\"http://www.w3.org/2000/svg\" xmlns:fg=\"http://github.com/jonhoo/inferno\" data-charw=\"%.2f\" data-xpad=\"%d\" data-inverted=\"%d\">\n",
            o->width, height, o->width, height, CHAR_W, XPAD, o->inverted ? 1 : 0);
    PH_MW_RAW(out, "<style>text{font-family:monospace;font-size:12px;fill:rgb(0,0,0)}#title{text-anchor:middle;font-size:17px}"
          "#subtitle{text-anchor:middle;fill:rgb(160,160,160)}#frames>g{cursor:pointer}"
          "#frames>g:hover rect{stroke:black;stroke-width:0.5}#frames text{pointer-events:none}"
          ".hide{display:none}.parent{opacity:0.5}#search,#ignorecase{opacity:0.1;cursor:pointer}"
          "#search:hover,#search.show,#ignorecase:hover,#ignorecase.show{opacity:1}#unzoom{cursor:pointer}");
    /* unchanged frames of a differential graph are near white, as the
     * background is: an outline keeps them apart */
    if (differential)
        PH_MW_RAW(out, "#frames rect{stroke:rgb(210,210,210);stroke-width:0.5}");
    PH_MW_RAW(out, "</style>\n<script type=\"text/ecmascript\"><![CDATA[" FLAME_JS "]]></script>\n");
    PH_MW_FMT(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%d\" fill=\"rgb(248,248,248)\"/>\n", o->width, height);
    PH_MW_FMT(out, "<text id=\"title\" x=\"%.1f\" y=\"24\">", o->width / 2);
    if (show_chars(title, strlen(title)) <= tmax) {
        xml_text(out, title, strlen(title));
    } else {
        xml_show(out, title, strlen(title), tmax - 2);
        PH_MW_RAW(out, "..");
    }
    PH_MW_RAW(out, "</text>\n");
    if (nsub > 0) {
        PH_MW_FMT(out, "<text id=\"subtitle\" x=\"%.1f\" y=\"%d\">", o->width / 2, 24 + FONT_SIZE + 6);
        for (size_t i = 0; i < nsub; i++) {
            PH_MW_FMT(out, "<tspan x=\"%.1f\" y=\"%d\">", o->width / 2, 24 + FONT_SIZE + 6 + (int)i * SUB_LINE_H);
            xml_text(out, subsrc[i] + sub[i].off, sub[i].len);
            if (sub[i].cut)
                PH_MW_RAW(out, "..");
            PH_MW_RAW(out, "</tspan>");
        }
        PH_MW_RAW(out, "</text>\n");
    }
    PH_MW_FMT(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", XPAD, height - 17);
    PH_MW_FMT(out, "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n", XPAD);
    PH_MW_FMT(out, "<text id=\"search\" x=\"%.0f\" y=\"24\">Search</text>\n", o->width - XPAD - 100);
    PH_MW_FMT(out, "<text id=\"ignorecase\" x=\"%.0f\" y=\"24\">ic</text>\n", o->width - XPAD - 16);
    PH_MW_FMT(out, "<text id=\"matched\" class=\"hide\" x=\"%.0f\" y=\"%d\"> </text>\n", o->width - XPAD - 100, height - 17);
    PH_MW_RAW(out, "<g id=\"frames\">\n");
    /* the root first (the script reads the view's extent from it), then
     * the others in the order they closed: left to right, leaves first */
    for (size_t j = 0; j < fr->n; j++) {
        size_t i = j == 0 ? fr->n - 1 : j - 1;
        uint64_t at = 0;

        if (sizes != NULL && fflush(file) == 0)
            at = *counted;
        draw(&c, &fr->v[i]);
        if (sizes != NULL && fflush(file) == 0)
            sizes[i] = (size_t)(*counted - at);
    }
    PH_MW_RAW(out, "</g>\n</svg>\n");
    return fflush(file) != 0 || ph_mw_error(out) ? -1 : 0;
}

/* Bytes written, and nothing kept: a FILE that measures. */
static ssize_t
count_write(void *cookie, const char *buf, size_t n)
{
    (void)buf;
    *(uint64_t *)cookie += n;
    return (ssize_t)n;
}

typedef struct by_width {
    const kept *v;
} by_width;

/* Wider first; of equal widths, nearer the root first (a parent is never
 * after its child). */
static int
cmp_width(const void *a, const void *b, void *arg)
{
    const kept *v = ((const by_width *)arg)->v, *x = &v[*(const uint32_t *)a], *y = &v[*(const uint32_t *)b];

    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Room kept for the subtitle line fit() adds (its tspan, and a digit
 * more of height in two y attributes). */
#define LIMIT_NOTE_ROOM 320
/* Graphs fit() measures after the first, bisecting between what surely
 * fits and what surely does not. */
#define FIT_PROBES 6

typedef struct fit_ctx {
    const ph_folded *f;
    const ph_flame_opts *o;
    const palette *pal;
    int differential;
    const ph_folded_stack *stacks;
    const uint32_t *order;
    size_t n;
    double total;
    FILE *cf;          /* a FILE that counts what it is given */
    uint64_t counted;
} fit_ctx;

/* The bytes of FR's graph with NOTE; each frame's in SIZES (may be NULL). */
static int
measure(fit_ctx *x, frames *fr, const char *note, size_t *sizes, uint64_t *bytes)
{
    x->counted = 0;
    if (write_svg(x->f, x->o, x->pal, x->differential, fr, x->total, note, x->cf, sizes, &x->counted) < 0 ||
        fflush(x->cf) != 0)
        return -1;
    *bytes = x->counted;
    return 0;
}

/* Sweep again keeping frames wider than W, or as wide and at most
 * TIE_DEPTH deep, the others merged; NOTE (LEN bytes) says so. */
static int
cut_at(fit_ctx *x, sweep_opts *so, frames *fr, double w, uint32_t tie_depth, char *note, size_t len)
{
    double px = (x->o->width - 2 * XPAD) / x->total;

    so->min_w = w;
    so->tie_depth = tie_depth;
    so->collapse = 1;
    if (tie_depth == 0)
        snprintf(note, len, "frames of %.2f px and narrower merged: the graph is held to %zu bytes", w * px,
                 x->o->max_bytes);
    else
        snprintf(note, len, "frames narrower than %.2f px, and as wide past depth %u, merged: the graph is held to %zu bytes",
                 w * px, tie_depth, x->o->max_bytes);
    return sweep(x->stacks, x->order, x->n, so, fr);
}

/* Hold the graph to o->max_bytes (ph_flame.h).  The frames of the graph
 * as drawn are ranked widest first, nearer the root first among equals
 * (so a parent ranks before its child), and grouped by width and depth:
 * keeping the first K groups is a cut at group K's width and depth,
 * whatever else is merged into stand-ins.  Keeping the groups whose
 * bytes, with room for two stand-ins each (a run of narrow siblings
 * before a frame, and one above it: there are no more), fit in what the
 * header leaves surely fits: frames only lose bytes in a smaller graph.
 * Keeping those whose bytes alone do not fit surely does not.  Between
 * the two, a few graphs are measured; the last that fits is kept, in FR,
 * and NOTE (LEN bytes) says what was merged.  -1 and *err when not even
 * the root fits (the title, subtitle and script take it all), or on
 * ENOMEM. */
static int
fit(fit_ctx *x, sweep_opts *so, frames *fr, char *note, size_t len, ph_error_t *err)
{
    cookie_io_functions_t io = { NULL, count_write, NULL, NULL };
    size_t *sizes = NULL, ng = 0, lo, hi, block = 0, nfr = fr->n;
    uint32_t *idx = NULL;
    uint64_t bytes, frames_bytes = 0, fixed, budget, sure = 0, over = 0;
    struct {
        double w;
        uint32_t depth;
    } *group = NULL; /* each group's width and depth */
    int rc = -1;

    if ((x->cf = fopencookie(&x->counted, "w", io)) == NULL || (sizes = malloc(nfr * sizeof *sizes)) == NULL ||
        (idx = malloc(nfr * sizeof *idx)) == NULL || (group = malloc(nfr * sizeof *group)) == NULL)
        goto oom;
    if (measure(x, fr, NULL, sizes, &bytes) < 0)
        goto oom;
    if (bytes <= x->o->max_bytes) {
        rc = 0;
        goto out;
    }
    { /* what one stand-in costs at most: the widest numbers there are */
        kept k = { NARROW_ID, UINT32_MAX / 2, x->total, x->total, x->total, x->total, x->total, UINT32_MAX, UINT32_MAX };
        frames one = { &k, 1, 1, 0, 0, 0 };
        uint64_t b1;
        if (measure(x, &one, NULL, &block, &b1) < 0)
            goto oom;
    }
    for (size_t i = 0; i < nfr; i++) {
        frames_bytes += sizes[i];
        idx[i] = (uint32_t)i;
    }
    fixed = bytes - frames_bytes + sizes[nfr - 1] + LIMIT_NOTE_ROOM; /* the header, the root, the note */
    if (fixed > x->o->max_bytes) {
        ph_fail(err, EFBIG, "flamegraph: the graph cannot be held to %zu bytes (%llu without its frames)",
                x->o->max_bytes, (unsigned long long)fixed);
        goto out;
    }
    budget = x->o->max_bytes - fixed;
    qsort_r(idx, nfr, sizeof *idx, cmp_width, &(by_width){ fr->v });
    /* groups, and LO (the most that surely fit) and HI (the fewest that
     * surely do not); group 0 is the root, whose bytes are in FIXED */
    lo = 1;
    hi = 0;
    for (size_t i = 0; i < nfr;) {
        const kept *a = &fr->v[idx[i]];
        uint64_t g = 0, gs = 0;
        size_t j = i;
        for (; j < nfr && fr->v[idx[j]].w == a->w && fr->v[idx[j]].depth == a->depth; j++)
            if (fr->v[idx[j]].name != ROOT_ID) {
                g += sizes[idx[j]];
                gs += sizes[idx[j]] + 2 * block;
            }
        group[ng].w = a->w;
        group[ng].depth = a->depth;
        if ((sure += gs) <= budget)
            lo = ng + 1;
        if ((over += g) > budget && hi == 0)
            hi = ng + 1;
        ng++;
        i = j;
    }
    if (hi == 0 || hi > ng)
        hi = ng; /* not one group too many on its own: keeping them all is what did not fit */
    if (lo >= hi)
        lo = hi - 1;
    /* keeping K groups: a cut at group K */
    for (int p = 0; p < FIT_PROBES && hi - lo > 1; p++) {
        size_t mid = lo + (hi - lo) / 2;
        if (cut_at(x, so, fr, group[mid].w, group[mid].depth - 1, note, len) < 0 ||
            measure(x, fr, note, NULL, &bytes) < 0)
            goto oom;
        if (bytes <= x->o->max_bytes)
            lo = mid;
        else
            hi = mid;
    }
    if (cut_at(x, so, fr, group[lo].w, group[lo].depth - 1, note, len) < 0 || measure(x, fr, note, NULL, &bytes) < 0)
        goto oom;
    if (bytes > x->o->max_bytes) { /* cannot be: LO surely fits */
        ph_fail(err, EFBIG, "flamegraph: the graph cannot be held to %zu bytes (%llu as cut)", x->o->max_bytes,
                (unsigned long long)bytes);
        goto out;
    }
    rc = 0;
    goto out;
oom:
    ph_fail(err, ENOMEM, "flamegraph: out of memory");
out:
    if (x->cf != NULL)
        fclose(x->cf);
    x->cf = NULL;
    free(sizes);
    free(idx);
    free(group);
    return rc;
}

int
ph_flame_render(const ph_folded *f, const ph_flame_opts *opts, FILE *out, ph_flame_stats *stats, ph_error_t *err)
{
    const ph_folded_stats *fs = ph_folded_get_stats(f);
    ph_flame_opts defaults;
    ph_flame_stats local;
    const palette *pal = NULL;
    frames fr = { 0 };
    ph_folded_stack *stacks = NULL;
    uint32_t *order = NULL;
    size_t n = ph_folded_n_stacks(f);
    double total = 0, min_w;
    sweep_opts so;
    char limit_note[160] = "";
    int differential, rc = -1;

    if (opts == NULL) {
        ph_flame_opts_init(&defaults);
        opts = &defaults;
    }
    if (stats == NULL)
        stats = &local;
    memset(stats, 0, sizeof *stats);
    stats->lines = fs->lines;
    stats->bad_lines = fs->bad_lines;
    stats->stacks = fs->stacks;
    memcpy(stats->bad_line_numbers, fs->bad_line_numbers, sizeof stats->bad_line_numbers);
    differential = opts->differential < 0 ? fs->differential : opts->differential > 0;
    stats->differential = differential;
    if ((pal = find_palette(opts->palette ? opts->palette : "hot")) == NULL)
        return ph_bad_input(err, "flamegraph: unknown palette `%s` (" PALETTE_NAMES ")", opts->palette);
    if (!(opts->width >= 2 * XPAD + 10) || !isfinite(opts->width) || !(opts->minwidth >= 0))
        return ph_bad_input(err, "flamegraph: width %g or minwidth %g out of range", opts->width, opts->minwidth);
    /* one view of every stack, so sorting and sweeping read plain memory
     * instead of calling into ph_folded per frame */
    if ((stacks = malloc((n ? n : 1) * sizeof *stacks)) == NULL)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        stacks[i] = ph_folded_get_stack(f, i);
        total += stacks[i].count;
    }
    stats->total = total;
    if (n == 0 || !(total > 0)) {
        ph_bad_input(err, "flamegraph: no stack with a positive count in the input (%zu lines, %zu not in the folded format)",
                     fs->lines, fs->bad_lines);
        goto out;
    }
    if (!opts->flamechart &&
        ((order = malloc(n * sizeof *order)) == NULL || order_stacks(f, stacks, n, opts->reverse, order) < 0))
        goto oom;
    /* flamegraph.pl: minwidth_time = minwidth / widthpertime, or a share
     * of the total with "%" */
    min_w = opts->minwidth_percent ? total * opts->minwidth / 100 : opts->minwidth / ((opts->width - 2 * XPAD) / total);
    so = (sweep_opts){ opts->reverse, differential, opts->collapse, opts->max_depth, min_w, UINT32_MAX };
    if (sweep(stacks, order, n, &so, &fr) < 0)
        goto oom;
    if (opts->max_bytes > 0) {
        fit_ctx fx = { f, opts, pal, differential, stacks, order, n, total, NULL, 0 };
        if (fit(&fx, &so, &fr, limit_note, sizeof limit_note, err) < 0)
            goto out;
    }
    free(order);
    free(stacks);
    order = NULL;
    stacks = NULL;
    if (write_svg(f, opts, pal, differential, &fr, total, limit_note[0] ? limit_note : NULL, out, NULL, NULL) < 0) {
        ph_fail(err, errno, "flamegraph: write the SVG");
        goto out;
    }
    stats->stacks_cut = fr.stacks_cut;
    stats->frames_merged = fr.merged;
    stats->minwidth_px = (so.tie_depth == UINT32_MAX ? so.min_w : nextafter(so.min_w, INFINITY)) * (opts->width - 2 * XPAD) / total;
    stats->frames_drawn = fr.n;
    rc = 0;
    goto out;
oom:
    ph_fail(err, ENOMEM, "flamegraph: out of memory");
out:
    free(stacks);
    free(order);
    free(fr.v);
    return rc;
}

int
ph_flame_render_error(const char *message, const ph_flame_opts *opts, FILE *file, ph_error_t *err)
{
    ph_mw w = ph_mw_on(file, PH_MW_SVG), *out = &w;
    double width = opts && opts->width >= 2 * XPAD + 10 && isfinite(opts->width) ? opts->width : 1200;
    text_line lines[3];
    size_t n = wrap_text(message, strlen(message), (size_t)((width - 2 * XPAD) / CHAR_W) - 7, lines, 3);
    int height = TOP_PAD + (int)(n + 1) * SUB_LINE_H;

    PH_MW_FMT(out, "<?xml version=\"1.0\" standalone=\"yes\"?>\n"
            "<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" xmlns=\"http://www.w3.org/2000/svg\">\n"
            "<style>text{font-family:monospace;font-size:12px;fill:rgb(0,0,0);text-anchor:middle}</style>\n"
            "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%d\" fill=\"rgb(248,248,248)\"/>\n"
            "<text id=\"error\" x=\"%.1f\" y=\"24\">",
            width, height, width, height, width, height, width / 2);
    for (size_t i = 0; i < n; i++) {
        PH_MW_FMT(out, "<tspan x=\"%.1f\" y=\"%d\">%s", width / 2, 24 + (int)i * SUB_LINE_H, i ? "" : "ERROR: ");
        xml_text(out, message + lines[i].off, lines[i].len);
        if (lines[i].cut)
            PH_MW_RAW(out, "..");
        PH_MW_RAW(out, "</tspan>");
    }
    PH_MW_RAW(out, "</text>\n</svg>\n");
    if (fflush(file) != 0 || ph_mw_error(out))
        return ph_fail(err, errno, "flamegraph: write the SVG");
    return 0;
}

int
ph_flame_render_folded(const char *folded, size_t len, const ph_flame_opts *opts, FILE *out, ph_flame_stats *stats,
                       ph_error_t *err)
{
    ph_folded *f = ph_folded_parse(folded, len, opts && opts->flamechart ? PH_FOLDED_KEEP_ORDER : 0, err);
    int rc;

    if (f == NULL)
        return -1;
    rc = ph_flame_render(f, opts, out, stats, err);
    ph_folded_free(f);
    return rc;
}

int
ph_flame_diff_folded(const char *a, size_t alen, const char *b, size_t blen, int normalise, FILE *out,
                     ph_error_t *err)
{
    return ph_folded_diff(a, alen, b, blen, normalise, out, NULL, NULL, err);
}
