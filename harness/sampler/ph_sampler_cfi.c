/* ph_sampler_cfi.c - unwind tables for code built without frame pointers.
 *
 * Why: most distribution code (glibc, libstdc++, anything built with -O2 on
 * x86-64) does not keep a frame pointer, so a frame-pointer walk stops at
 * the first such frame, often libc's, and every sample below it loses its
 * callers.  Every such object still carries .eh_frame (C++ exceptions and
 * backtraces need it): the call frame information (CFI) that says, for
 * each instruction, where the caller's frame and return address are.
 *
 * How: interpreting CFI needs parsing, and a general DWARF unwinder
 * (libunwind, libgcc's) finds the tables through dl_iterate_phdr, which
 * takes the loader's lock: a sample landing inside dlopen() would deadlock
 * (gperftools documents that hang).  So the parsing happens here, on the
 * writer thread, ahead of time: every FDE of every loaded object is run
 * through the CFA program and flattened into rows "from this offset on,
 * CFA = rsp|rbp + N, the return address is at CFA + R, the caller's rbp is
 * at CFA + F (or unchanged)", sorted; a row is kept as its offset in its
 * 256-byte block of code (the block index below says where each block's
 * rows begin) and the number of its rule, each distinct rule once: 2 bytes
 * a row, 3 past 256 rules (node 20's 373,577 rows and their index hold 1.2
 * MB of the host's memory; 2.7 MB at 6 bytes a row).  That covers what compilers emit for
 * ordinary functions; rules we cannot express (CFA expressions, as in PLT
 * stubs and signal trampolines) become "no row", and the signal path falls
 * back to the frame pointer for that one frame.
 *
 * The signal path (phs_cfi_enter/find/leave) finds the object (the walk's
 * previous one first: callers are mostly in the same object), then the
 * row by a binary search of the few rows of the object's 256-byte block
 * of code (an index per block, built with the rows: its first row, 1.6%
 * of the code's size; a cache line or two touched rather than a search of
 * tens of thousands of rows), and writes nothing but a counter.  A new table (after a dlopen or dlclose:
 * dl_iterate_phdr's adds/subs counters change) is published with one
 * atomic exchange; the old one is freed once no handler is inside it, the
 * way the sample tables are flipped (ph_sampler_int.h).  Rows of objects
 * still loaded are reused, not parsed again.
 *
 * The reads here are of the objects' own loaded, read-only segments, bounded
 * by the segment that holds them; dl_iterate_phdr holds the loader lock
 * while we read, so nothing is unmapped under us.  x86-64 only: elsewhere
 * the frame-pointer walk is all there is.
 */
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ph_sampler_int.h"

#if defined(__x86_64__)

#define DW_RBP 6
#define DW_RSP 7
#define DW_RA 16
#define CFA_STACK 16 /* remember_state nesting we follow */

#define BLOCK_SHIFT 8 /* the row index's granularity: 256 bytes of code, a few rows */
#define GROUP_SHIFT 6 /* blocks a 32-bit row number stands for; each a 16-bit step from it */

/* A row while the tables are built: from code offset LOC (from the load
 * bias) up to the next row, RULE. */
typedef struct phs_cfi_row {
    uint32_t loc;
    phs_cfi_rule rule;
} phs_cfi_row;

/* One loaded object's rows, 2 bytes each (3 past 256 rules): where it
 * starts in its block of code, and the number of its rule among the
 * object's distinct ones (node 20 has 373,577 rows and 63 rules, libjvm
 * 191,593 rows).  Block b's rows are first_row(b) .. first_row(b + 1) - 1;
 * a block's first row is a 32-bit number per 64 blocks (16 KiB of code)
 * and a 16-bit step from it per block (a row per byte of code at most: <
 * 16,384), 2.06 bytes a block.  Kept across rebuilds while it stays
 * loaded. */
typedef struct cfi_obj {
    uintptr_t bias, lo, hi; /* hi - lo < 4 GiB: 32-bit offsets and row numbers */
    uint8_t *at;            /* N: loc - (lo - bias), its low byte: ascending within a block */
    uint8_t *rule_lo;       /* N: the low byte of its index into RULES */
    uint8_t *rule_hi;       /* N: the high byte; NULL with 256 rules or fewer */
    phs_cfi_rule *rules;
    size_t n, n_rules;
    uint32_t *group;        /* (N_INDEX >> GROUP_SHIFT) + 1: the first row of every 64th block */
    uint16_t *index;        /* N_INDEX + 1: per block of code from lo, its first row from its group's */
    size_t n_index;         /* blocks; the entry past them is past their rows */
} cfi_obj;

static inline size_t
row_rule(const cfi_obj *o, size_t r)
{
    return o->rule_lo[r] | (o->rule_hi ? (size_t)o->rule_hi[r] << 8 : 0);
}

static inline size_t
first_row(const cfi_obj *o, size_t b)
{
    return (size_t)o->group[b >> GROUP_SHIFT] + o->index[b];
}

/* An object's code range, kept next to the others for the search. */
typedef struct cfi_span {
    uintptr_t lo, hi;
    const cfi_obj *obj;
} cfi_span;

struct phs_cfi {
    size_t n;
    cfi_span spans[]; /* sorted by lo, ranges disjoint */
};

static struct {
    _Atomic(phs_cfi *) cur;
    _Atomic int inflight;
    unsigned long long adds, subs; /* dl_iterate_phdr counters of cur */
    int built;
    cfi_obj **objs;                /* everything cur points into */
    size_t n_objs;
    size_t rows;                   /* in all, for the report */
} C;

/* ---- reading, bounded by the segment ------------------------------------ */

typedef struct rd {
    const uint8_t *p, *end;
    int bad;
} rd;

static uint64_t
rd_u(rd *r, size_t n)
{
    uint64_t v = 0;

    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i); /* little-endian: x86-64 only */
    r->p += n;
    return v;
}

static void
rd_skip(rd *r, uint64_t n)
{
    if (r->bad || n > (uint64_t)(r->end - r->p))
        r->bad = 1;
    else
        r->p += n;
}

static uint64_t
rd_uleb(rd *r)
{
    uint64_t v = 0;

    for (int shift = 0; !r->bad; shift += 7) {
        uint8_t b = (uint8_t)rd_u(r, 1);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    return v;
}

static int64_t
rd_sleb(rd *r)
{
    uint64_t v = 0;
    int shift = 0;
    uint8_t b;

    do {
        b = (uint8_t)rd_u(r, 1);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while ((b & 0x80) && !r->bad);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* A DW_EH_PE-encoded pointer.  Indirect and aligned forms are refused. */
static uintptr_t
rd_ptr(rd *r, uint8_t enc)
{
    uintptr_t at = (uintptr_t)r->p, v;

    if (enc == 0xff)
        return 0;
    switch (enc & 0x0f) {
    case 0x00: v = (uintptr_t)rd_u(r, 8); break;
    case 0x01: v = (uintptr_t)rd_uleb(r); break;
    case 0x02: v = (uintptr_t)rd_u(r, 2); break;
    case 0x03: v = (uintptr_t)rd_u(r, 4); break;
    case 0x04: v = (uintptr_t)rd_u(r, 8); break;
    case 0x09: v = (uintptr_t)rd_sleb(r); break;
    case 0x0a: v = (uintptr_t)(int16_t)rd_u(r, 2); break;
    case 0x0b: v = (uintptr_t)(int32_t)rd_u(r, 4); break;
    case 0x0c: v = (uintptr_t)rd_u(r, 8); break;
    default: r->bad = 1; return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += at; break; /* pcrel */
    default: r->bad = 1; return 0;
    }
    if (enc & 0x80)
        r->bad = 1;
    return v;
}

/* ---- the CFA program ----------------------------------------------------- */

enum { RULE_SAME, RULE_OFFSET, RULE_UNKNOWN, RULE_UNDEF };

typedef struct cfa_state {
    int cfa_reg;       /* DWARF register, -1 after an expression */
    int64_t cfa_off;
    int fp_rule, ra_rule;
    int64_t fp_off, ra_off;
} cfa_state;

typedef struct cie {
    uint64_t code_align;
    int64_t data_align;
    unsigned ra_reg;
    uint8_t fde_enc;
    int has_z;
    const uint8_t *insns, *insns_end;
} cie;

/* One FDE's rows in the buffer: FDEs are not always in address order
 * (cold parts of functions), so spans are sorted, not rows. */
typedef struct span {
    uint32_t loc, first, count;
} span;

typedef struct rows {
    phs_cfi_row *v;
    size_t n, cap;
    size_t floor;  /* the current FDE's first row: merges never cross it */
    span *spans;
    size_t n_spans, cap_spans;
    int oom;
} rows;

static int
same_rule(const phs_cfi_row *a, const phs_cfi_row *b)
{
    return a->rule.cfa_reg == b->rule.cfa_reg && a->rule.cfa_off == b->rule.cfa_off &&
           a->rule.ra_off == b->rule.ra_off && a->rule.fp_off == b->rule.fp_off && a->rule.flags == b->rule.flags;
}

static void
push_row(rows *out, uintptr_t loc, const cfa_state *s, int none)
{
    phs_cfi_row r;

    memset(&r, 0, sizeof r);
    r.loc = (uint32_t)loc;
    if (none || (s->cfa_reg != DW_RSP && s->cfa_reg != DW_RBP) || s->cfa_off < 0 || s->cfa_off > INT32_MAX ||
        s->ra_rule == RULE_UNKNOWN || s->ra_rule == RULE_SAME || (s->ra_rule == RULE_OFFSET &&
                                                                   (s->ra_off < INT16_MIN || s->ra_off > INT16_MAX))) {
        r.rule.cfa_reg = PHS_CFA_NONE;
    } else {
        r.rule.cfa_reg = s->cfa_reg == DW_RSP ? PHS_CFA_SP : PHS_CFA_FP;
        r.rule.cfa_off = (int32_t)s->cfa_off;
        r.rule.ra_off = (int16_t)s->ra_off;
        if (s->ra_rule == RULE_UNDEF)
            r.rule.flags |= PHS_CFI_OUTERMOST;
        if (s->fp_rule == RULE_OFFSET && s->fp_off >= INT16_MIN && s->fp_off <= INT16_MAX && s->fp_off != 0)
            r.rule.fp_off = (int16_t)s->fp_off;
        else if (s->fp_rule != RULE_SAME)
            r.rule.flags |= PHS_CFI_FP_LOST;
    }
    /* A row at the same offset as the last one replaces it. */
    if (out->n > out->floor && out->v[out->n - 1].loc == r.loc) {
        out->v[out->n - 1] = r;
        return;
    }
    if (out->n > out->floor && same_rule(&out->v[out->n - 1], &r))
        return; /* nothing new from here on */
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 1024;
        phs_cfi_row *v = realloc(out->v, cap * sizeof *v);
        if (v == NULL) {
            out->oom = 1;
            return;
        }
        out->v = v;
        out->cap = cap;
    }
    out->v[out->n++] = r;
}

static void
set_rule(cfa_state *s, uint64_t reg, int rule, int64_t off)
{
    if (reg == DW_RBP) {
        s->fp_rule = rule;
        s->fp_off = off;
    } else if (reg == DW_RA) {
        s->ra_rule = rule;
        s->ra_off = off;
    }
}

/* Run the instructions [P, END) from state S.  With OUT, rows are emitted
 * from LOC (runtime address; BIAS subtracted) as the location advances,
 * until LIMIT.  INIT is the state after the CIE's instructions (for
 * DW_CFA_restore).  0, or -1 on an instruction we do not know. */
static int
run_cfa(const cie *c, const uint8_t *p, const uint8_t *end, cfa_state *s, const cfa_state *init, uintptr_t loc,
        uintptr_t limit, uintptr_t bias, rows *out)
{
    cfa_state stack[CFA_STACK];
    int depth = 0;
    rd r = { p, end, 0 };

    while (r.p < r.end && !r.bad) {
        uint8_t op = (uint8_t)rd_u(&r, 1), low = op & 0x3f;
        uint64_t reg, adv = 0;

        switch (op >> 6) {
        case 1: adv = low * c->code_align; break;
        case 2: set_rule(s, low, RULE_OFFSET, (int64_t)rd_uleb(&r) * c->data_align); continue;
        case 3:
            if (init)
                set_rule(s, low, low == DW_RBP ? init->fp_rule : init->ra_rule,
                         low == DW_RBP ? init->fp_off : init->ra_off);
            continue;
        default: break;
        }
        if (op >> 6 == 0) {
            switch (op) {
            case 0x00: continue; /* nop */
            case 0x01: {         /* set_loc */
                uintptr_t to = rd_ptr(&r, c->fde_enc);
                adv = to > loc ? to - loc : 0;
                break;
            }
            case 0x02: adv = rd_u(&r, 1) * c->code_align; break;
            case 0x03: adv = rd_u(&r, 2) * c->code_align; break;
            case 0x04: adv = rd_u(&r, 4) * c->code_align; break;
            case 0x05: reg = rd_uleb(&r); set_rule(s, reg, RULE_OFFSET, (int64_t)rd_uleb(&r) * c->data_align); continue;
            case 0x06:
                reg = rd_uleb(&r);
                if (init)
                    set_rule(s, reg, reg == DW_RBP ? init->fp_rule : init->ra_rule,
                             reg == DW_RBP ? init->fp_off : init->ra_off);
                continue;
            case 0x07: set_rule(s, rd_uleb(&r), RULE_UNDEF, 0); continue;
            case 0x08: set_rule(s, rd_uleb(&r), RULE_SAME, 0); continue;
            case 0x09: reg = rd_uleb(&r); rd_uleb(&r); set_rule(s, reg, RULE_UNKNOWN, 0); continue;
            case 0x0a:
                if (depth == CFA_STACK)
                    return -1;
                stack[depth++] = *s;
                continue;
            case 0x0b:
                if (depth == 0)
                    return -1;
                *s = stack[--depth];
                continue;
            case 0x0c: s->cfa_reg = (int)rd_uleb(&r); s->cfa_off = (int64_t)rd_uleb(&r); continue;
            case 0x0d: s->cfa_reg = (int)rd_uleb(&r); continue;
            case 0x0e: s->cfa_off = (int64_t)rd_uleb(&r); continue;
            case 0x0f: rd_skip(&r, rd_uleb(&r)); s->cfa_reg = -1; continue; /* def_cfa_expression */
            case 0x10: /* expression */
            case 0x16: /* val_expression */
                reg = rd_uleb(&r);
                rd_skip(&r, rd_uleb(&r));
                set_rule(s, reg, RULE_UNKNOWN, 0);
                continue;
            case 0x11: reg = rd_uleb(&r); set_rule(s, reg, RULE_OFFSET, rd_sleb(&r) * c->data_align); continue;
            case 0x12: s->cfa_reg = (int)rd_uleb(&r); s->cfa_off = rd_sleb(&r) * c->data_align; continue;
            case 0x13: s->cfa_off = rd_sleb(&r) * c->data_align; continue;
            case 0x14: reg = rd_uleb(&r); rd_uleb(&r); set_rule(s, reg, RULE_UNKNOWN, 0); continue;
            case 0x15: reg = rd_uleb(&r); rd_sleb(&r); set_rule(s, reg, RULE_UNKNOWN, 0); continue;
            case 0x2e: rd_uleb(&r); continue; /* GNU_args_size */
            case 0x2f: reg = rd_uleb(&r); set_rule(s, reg, RULE_OFFSET, -(int64_t)rd_uleb(&r) * c->data_align); continue;
            default: return -1;
            }
        }
        /* The location advances: the rule so far covers [loc, loc + adv). */
        if (out && adv > 0 && loc < limit)
            push_row(out, loc - bias, s, 0);
        loc += adv;
    }
    if (r.bad)
        return -1;
    if (out && loc < limit)
        push_row(out, loc - bias, s, 0);
    return 0;
}

static int
parse_cie(const uint8_t *p, const uint8_t *end, cie *c)
{
    rd r = { p, end, 0 };
    uint8_t version = (uint8_t)rd_u(&r, 1);
    const char *aug = (const char *)r.p;
    size_t alen = strnlen(aug, (size_t)(r.end - r.p));

    memset(c, 0, sizeof *c);
    if ((version != 1 && version != 3 && version != 4) || r.bad || aug + alen >= (const char *)r.end)
        return -1;
    r.p += alen + 1;
    if (version == 4) {
        if (rd_u(&r, 1) != 8 || rd_u(&r, 1) != 0) /* address size, segment size */
            return -1;
    }
    c->code_align = rd_uleb(&r);
    c->data_align = rd_sleb(&r);
    c->ra_reg = version == 1 ? (unsigned)rd_u(&r, 1) : (unsigned)rd_uleb(&r);
    c->fde_enc = 0; /* absptr */
    if (aug[0] == 'z') {
        uint64_t len = rd_uleb(&r);
        rd a = { r.p, r.p + len, 0 };

        if (len > (uint64_t)(r.end - r.p))
            return -1;
        c->has_z = 1;
        for (size_t i = 1; i < alen && !a.bad; i++) {
            switch (aug[i]) {
            case 'R': c->fde_enc = (uint8_t)rd_u(&a, 1); break;
            case 'L': rd_u(&a, 1); break;
            case 'P': rd_ptr(&a, (uint8_t)rd_u(&a, 1)); break;
            case 'S': break; /* a signal frame: the return address is exact */
            case 'B': break;
            default: return -1;
            }
        }
        r.p += len;
    } else if (alen > 0) {
        return -1; /* "eh" and other pre-z forms: not worth it */
    }
    if (r.bad || c->ra_reg != DW_RA || c->code_align == 0)
        return -1;
    c->insns = r.p;
    c->insns_end = end;
    return 0;
}

/* Walk .eh_frame from P (bounded by END) and add rows for every FDE whose
 * code lies in [LO, HI).  Returns where the walk stopped: the end of what
 * it read. */
static const uint8_t *
parse_eh_frame(const uint8_t *p, const uint8_t *end, uintptr_t bias, uintptr_t lo, uintptr_t hi, rows *out)
{
    const uint8_t *start = p, *cie_at = NULL;
    cie c;
    cfa_state cie_init;
    int cie_ok = 0;

    /* An FDE's CIE is parsed, and its initial instructions run, once for
     * the run of FDEs that share it (compilers emit them together). */
    while (p + 4 <= end && !out->oom) {
        rd r = { p, end, 0 };
        uint64_t len = rd_u(&r, 4);
        const uint8_t *id_at, *next;
        uint32_t id;
        cfa_state init, s;
        uintptr_t begin, range;

        if (len == 0)
            break; /* the terminator */
        if (len == 0xffffffff)
            len = rd_u(&r, 8);
        if (r.bad || len > (uint64_t)(end - r.p) || len < 4)
            break;
        id_at = r.p;
        next = r.p + len;
        id = (uint32_t)rd_u(&r, 4);
        p = next;
        if (id == 0)
            continue; /* a CIE: read when an FDE points at it */
        if (id > (uintptr_t)(id_at - start))
            continue; /* a CIE pointer out of .eh_frame */
        if (id_at - id != cie_at) {
            const uint8_t *cp = id_at - id;
            rd cr = { cp, end, 0 };
            uint64_t clen = rd_u(&cr, 4);

            cie_at = cp;
            cie_ok = !cr.bad && clen != 0xffffffff && clen <= (uint64_t)(end - cr.p) && rd_u(&cr, 4) == 0 &&
                     parse_cie(cr.p, cp + 4 + clen, &c) == 0;
            /* x86-64 at a function's first instruction: CFA = rsp + 8, the
             * return address just below it, rbp untouched; then the CIE's
             * own instructions. */
            memset(&cie_init, 0, sizeof cie_init);
            cie_init.cfa_reg = DW_RSP;
            cie_init.cfa_off = 8;
            cie_init.ra_rule = RULE_OFFSET;
            cie_init.ra_off = -8;
            cie_init.fp_rule = RULE_SAME;
            cie_ok = cie_ok && run_cfa(&c, c.insns, c.insns_end, &cie_init, NULL, 0, 0, bias, NULL) == 0;
        }
        if (!cie_ok)
            continue;
        begin = rd_ptr(&r, c.fde_enc);
        range = rd_ptr(&r, c.fde_enc & 0x0f);
        if (r.bad || begin < lo || begin >= hi || range > hi - begin)
            continue;
        if (c.has_z) {
            uint64_t alen = rd_uleb(&r);
            if (alen > (uint64_t)(next - r.p))
                continue;
            r.p += alen;
        }
        init = cie_init;
        s = init;
        out->floor = out->n;
        if (run_cfa(&c, r.p, next, &s, &init, begin, begin + range, bias, out) < 0) {
            /* What we understood before the unknown instruction stands;
             * from there on, no row. */
        }
        push_row(out, begin + range - bias, &s, 1);
        if (out->n > out->floor && !out->oom) {
            if (out->n_spans == out->cap_spans) {
                size_t cap = out->cap_spans ? out->cap_spans * 2 : 256;
                span *v = realloc(out->spans, cap * sizeof *v);
                if (v == NULL) {
                    out->oom = 1;
                    break;
                }
                out->spans = v;
                out->cap_spans = cap;
            }
            out->spans[out->n_spans++] = (span){ out->v[out->floor].loc, (uint32_t)out->floor,
                                                 (uint32_t)(out->n - out->floor) };
        }
    }
    return p;
}

/* The block index of O's rows from their offsets IN, ascending and
 * distinct (see cfi_obj): first_row(b) is the first row at or past block
 * b's start.  A row before first_row(0) lies below the code, one from
 * first_row(n_index) on past it: no block holds them.  0; -1 out of
 * memory; -2 when a step does not fit (offsets not distinct). */
static int
build_index(cfi_obj *o, const phs_cfi_row *in, size_t n)
{
    uint64_t base = (uint64_t)(o->lo - o->bias);
    size_t r = 0;

    o->n_index = ((o->hi - o->lo) >> BLOCK_SHIFT) + 1;
    o->index = malloc((o->n_index + 1) * sizeof *o->index);
    o->group = malloc(((o->n_index >> GROUP_SHIFT) + 1) * sizeof *o->group);
    if (o->index == NULL || o->group == NULL)
        return -1;
    for (size_t b = 0; b <= o->n_index; b++) {
        uint64_t start = base + ((uint64_t)b << BLOCK_SHIFT);

        while (r < n && in[r].loc < start)
            r++;
        if ((b & ((1u << GROUP_SHIFT) - 1)) == 0)
            o->group[b >> GROUP_SHIFT] = (uint32_t)r;
        if (r - o->group[b >> GROUP_SHIFT] > UINT16_MAX)
            return -2;
        o->index[b] = (uint16_t)(r - o->group[b >> GROUP_SHIFT]);
    }
    return 0;
}

static void
clear_rows(cfi_obj *o)
{
    free(o->at);
    free(o->rule_lo);
    free(o->rule_hi);
    free(o->rules);
    free(o->index);
    free(o->group);
    o->at = o->rule_lo = o->rule_hi = NULL;
    o->rules = NULL;
    o->index = NULL;
    o->group = NULL;
    o->n = o->n_rules = o->n_index = 0;
}

static void
free_obj(cfi_obj *o)
{
    clear_rows(o);
    free(o);
}

static int
cmp_row(const void *a, const void *b)
{
    const phs_cfi_row *x = a, *y = b;

    if (x->loc != y->loc)
        return x->loc < y->loc ? -1 : 1;
    /* At one offset, an FDE's first row beats the previous FDE's end:
     * "no rule" sorts first, and finish_rows keeps the last. */
    return (y->rule.cfa_reg == PHS_CFA_NONE) - (x->rule.cfa_reg == PHS_CFA_NONE);
}

static int
cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;

    return x->loc < y->loc ? -1 : x->loc > y->loc;
}

/* Put the FDEs' rows in address order and keep, per offset, the last row
 * (an FDE's first row over the previous one's end, see cmp_row).  0, or
 * -1 out of memory. */
static int
finish_rows(rows *out)
{
    phs_cfi_row *v;
    size_t o = 0, sorted = 1;

    qsort(out->spans, out->n_spans, sizeof *out->spans, cmp_span);
    v = malloc((out->n ? out->n : 1) * sizeof *v);
    if (v == NULL)
        return -1;
    for (size_t i = 0; i < out->n_spans; i++) {
        const span *sp = &out->spans[i];

        for (uint32_t k = 0; k < sp->count; k++) {
            const phs_cfi_row *r = &out->v[sp->first + k];

            if (o > 0 && v[o - 1].loc == r->loc)
                o--;
            if (o > 0 && v[o - 1].loc > r->loc)
                sorted = 0; /* overlapping FDEs: sort the rows themselves */
            v[o++] = *r;
        }
    }
    free(out->v);
    free(out->spans);
    out->spans = NULL;
    out->v = v;
    out->n = o;
    if (!sorted) {
        qsort(out->v, out->n, sizeof *out->v, cmp_row);
        o = 0;
        for (size_t i = 0; i < out->n; i++) {
            if (o > 0 && out->v[o - 1].loc == out->v[i].loc)
                o--;
            out->v[o++] = out->v[i];
        }
        out->n = o;
    }
    return 0;
}

static uint32_t
rule_hash(const phs_cfi_rule *r)
{
    uint32_t h = (uint32_t)r->cfa_off * 0x9e3779b1u;

    h ^= ((uint32_t)(uint16_t)r->ra_off << 16 | (uint16_t)r->fp_off) * 0x85ebca77u;
    h ^= ((uint32_t)r->cfa_reg << 8 | r->flags) * 0xc2b2ae3du;
    return h ^ (h >> 15);
}

static int
rule_equal(const phs_cfi_rule *a, const phs_cfi_rule *b)
{
    return a->cfa_off == b->cfa_off && a->ra_off == b->ra_off && a->fp_off == b->fp_off &&
           a->cfa_reg == b->cfa_reg && a->flags == b->flags;
}

/* O's rows from the sorted IN (N of them; O's bias, lo and hi set):
 * offsets in their blocks and rule numbers, each distinct rule kept once,
 * and the block index.  0; -1 out of memory; -2 past 65,536 rules (the
 * object is then left to the frame pointers).  On failure O holds no
 * rows. */
static int
compact_rows(cfi_obj *o, const phs_cfi_row *in, size_t n)
{
    size_t slots = 1024, cap = 0;
    uint32_t *slot = NULL; /* rule number + 1, 0: free */
    uint16_t *num = NULL;  /* each row's rule number, until the rules are counted */
    uintptr_t base = o->lo - o->bias;
    int rc = -1;

    while (slots < 2 * n)
        slots *= 2;
    o->at = malloc(n ? n : 1);
    o->rule_lo = malloc(n ? n : 1);
    num = malloc((n ? n : 1) * sizeof *num);
    slot = calloc(slots, sizeof *slot);
    if (o->at == NULL || o->rule_lo == NULL || num == NULL || slot == NULL)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        size_t k = rule_hash(&in[i].rule) & (slots - 1);

        while (slot[k] != 0 && !rule_equal(&o->rules[slot[k] - 1], &in[i].rule))
            k = (k + 1) & (slots - 1);
        if (slot[k] == 0) {
            if (o->n_rules == 65536) {
                rc = -2;
                goto fail;
            }
            if (o->n_rules == cap) {
                size_t nc = cap ? cap * 2 : 64;
                phs_cfi_rule *v = realloc(o->rules, nc * sizeof *v);
                if (v == NULL)
                    goto fail;
                o->rules = v;
                cap = nc;
            }
            o->rules[o->n_rules++] = in[i].rule;
            slot[k] = (uint32_t)o->n_rules;
        }
        o->at[i] = (uint8_t)(in[i].loc - base); /* a row below the code: never read */
        num[i] = (uint16_t)(slot[k] - 1);
    }
    if (o->n_rules > 256 && (o->rule_hi = malloc(n)) == NULL)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        o->rule_lo[i] = (uint8_t)num[i];
        if (o->rule_hi)
            o->rule_hi[i] = (uint8_t)(num[i] >> 8);
    }
    o->n = n;
    if ((rc = build_index(o, in, n)) < 0)
        goto fail;
    free(slot);
    free(num);
    return 0;
fail:
    free(slot);
    free(num);
    clear_rows(o);
    return rc;
}

/* ---- the object list ------------------------------------------------------ */

/* Whether the object's read-only segments may have been written: text
 * relocations (DT_TEXTREL, DF_TEXTREL) patch them at load time. */
static int
has_textrel(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type != PT_DYNAMIC)
            continue;
        for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr); d->d_tag != DT_NULL; d++)
            if (d->d_tag == DT_TEXTREL || (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL)))
                return 1;
    }
    return 0;
}

/* .eh_frame read through, [LO, HI) of an object's read-only, never written
 * segment: its whole pages leave the host's RSS (a node's 2.7 MB, a
 * libjvm's 1.5).  They are the file's own bytes, so nothing is lost: the
 * process's own unwinder (a C++ throw) faults them back in from the page
 * cache. */
/* Whether [LO, HI) lies in one mapping of a file that is not writable,
 * so that dropped pages come back from the file.  A program that unpacked
 * itself into anonymous memory (UPX) has its .eh_frame there, where
 * MADV_DONTNEED would zero it.  No allocation (the heap mode builds its
 * tables in front of the service). */
static int
file_backed(uintptr_t lo, uintptr_t hi)
{
    char buf[4096], line[160];
    size_t ll = 0;
    ssize_t n;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), found = 0;

    if (fd < 0)
        return 0;
    while (found == 0 && (n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n && found == 0; i++) {
            unsigned long s, e, ino;
            char perms[8];

            if (buf[i] != '\n') {
                if (ll < sizeof line - 1)
                    line[ll++] = buf[i]; /* the fields before the path are enough */
                continue;
            }
            line[ll] = '\0';
            ll = 0;
            if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &s, &e, perms, &ino) == 4 && s <= lo && hi <= e)
                found = ino != 0 && perms[1] != 'w' ? 1 : -1;
        }
    close(fd);
    return found == 1;
}

static void
drop_read_pages(uintptr_t lo, uintptr_t hi)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

    lo = (lo + page - 1) & ~(page - 1);
    hi &= ~(page - 1);
    if (lo < hi && file_backed(lo, hi))
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

typedef struct build {
    cfi_obj **objs;
    size_t n, cap;
    int oom;
} build;

static cfi_obj *
find_old(uintptr_t bias, uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0; i < C.n_objs; i++)
        if (C.objs[i]->bias == bias && C.objs[i]->lo == lo && C.objs[i]->hi == hi)
            return C.objs[i];
    return NULL;
}

static int
object_cb(struct dl_phdr_info *info, size_t size, void *ud)
{
    build *b = ud;
    const ElfW(Phdr) *eh = NULL;
    uintptr_t lo = UINTPTR_MAX, hi = 0, seg_lo = 0, seg_hi = 0;
    int seg_w = 1;
    cfi_obj *o;
    rows out = { 0 };
    int rc;

    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type == PT_GNU_EH_FRAME)
            eh = ph;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr;
            if (a < lo)
                lo = a;
            if (a + ph->p_memsz > hi)
                hi = a + ph->p_memsz;
        }
    }
    if (eh == NULL || lo >= hi || hi - info->dlpi_addr > UINT32_MAX || info->dlpi_addr > lo)
        return 0;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        cfi_obj **v = realloc(b->objs, cap * sizeof *v);
        if (v == NULL) {
            b->oom = 1;
            return 1;
        }
        b->objs = v;
        b->cap = cap;
    }
    o = find_old(info->dlpi_addr, lo, hi);
    if (o != NULL) {
        b->objs[b->n++] = o;
        return 0;
    }
    /* The segment that holds .eh_frame_hdr and, in every linker's layout,
     * .eh_frame after it bounds every read. */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type == PT_LOAD && eh->p_vaddr >= ph->p_vaddr && eh->p_vaddr < ph->p_vaddr + ph->p_memsz) {
            seg_lo = info->dlpi_addr + ph->p_vaddr;
            seg_hi = seg_lo + ph->p_filesz;
            seg_w = (ph->p_flags & PF_W) != 0;
        }
    }
    if (seg_hi == 0)
        return 0;
    {
        const uint8_t *hdr = (const uint8_t *)(info->dlpi_addr + eh->p_vaddr);
        rd r = { hdr, (const uint8_t *)seg_hi, 0 };
        uint8_t version = (uint8_t)rd_u(&r, 1), ptr_enc = (uint8_t)rd_u(&r, 1);
        uintptr_t frame, end;

        rd_u(&r, 2); /* fde_count and table encodings: we walk .eh_frame itself */
        frame = rd_ptr(&r, ptr_enc);
        if (r.bad || version != 1 || frame < seg_lo || frame >= seg_hi)
            return 0;
        end = (uintptr_t)parse_eh_frame((const uint8_t *)frame, (const uint8_t *)seg_hi, info->dlpi_addr, lo, hi,
                                        &out);
        if (!seg_w && !has_textrel(info) && !(info->dlpi_name && strstr(info->dlpi_name, "linux-vdso")))
            drop_read_pages(frame, end);
    }
    if (out.oom || out.n == 0 || finish_rows(&out) < 0 || (o = calloc(1, sizeof *o)) == NULL) {
        free(out.v);
        free(out.spans);
        b->oom |= out.oom;
        return 0;
    }
    o->bias = info->dlpi_addr;
    o->lo = lo;
    o->hi = hi;
    if ((rc = compact_rows(o, out.v, out.n)) < 0) {
        free(out.v);
        free(o);
        b->oom |= rc == -1;
        return 0;
    }
    free(out.v);
    b->objs[b->n++] = o;
    return 0;
}

static int
counters_cb(struct dl_phdr_info *info, size_t size, void *ud)
{
    unsigned long long *c = ud;

    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        return 1;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

static int
cmp_obj(const void *a, const void *b)
{
    const cfi_obj *x = *(cfi_obj *const *)a, *y = *(cfi_obj *const *)b;

    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Wait until no handler is inside the table the handlers could still see;
 * give up after a second (the old table is then kept, never freed). */
static int
quiesce(void)
{
    struct timespec ts = { 0, 100 * 1000 };

    for (int i = 0; i < 10000; i++) {
        if (atomic_load(&C.inflight) == 0)
            return 0;
        phs_nap(&ts);
    }
    return -1;
}

void
phs_cfi_refresh(void)
{
    unsigned long long cnt[2] = { 0, 0 };
    build b = { 0 };
    phs_cfi *t, *old;
    size_t n_rows = 0;

    phs_dl_iterate(counters_cb, cnt);
    if (C.built && cnt[0] == C.adds && cnt[1] == C.subs)
        return;
    phs_dl_iterate(object_cb, &b);
    if (b.oom || (t = malloc(sizeof *t + b.n * sizeof t->spans[0])) == NULL) {
        free(b.objs); /* objects new in B are lost; tried again next time */
        return;
    }
    qsort(b.objs, b.n, sizeof *b.objs, cmp_obj);
    t->n = b.n;
    for (size_t i = 0; i < b.n; i++)
        t->spans[i] = (cfi_span){ b.objs[i]->lo, b.objs[i]->hi, b.objs[i] };
    old = atomic_exchange(&C.cur, t);
    if (old != NULL && quiesce() < 0) {
        /* A handler is stuck inside (it cannot be, but never free under
         * it): keep everything the old table points at. */
        free(C.objs);
        C.objs = b.objs;
        C.n_objs = b.n;
        C.adds = cnt[0];
        C.subs = cnt[1];
        C.built = 1;
        return;
    }
    for (size_t i = 0; i < C.n_objs; i++) {
        int kept = 0;

        for (size_t j = 0; j < b.n && !kept; j++)
            kept = b.objs[j] == C.objs[i];
        if (!kept)
            free_obj(C.objs[i]);
    }
    free(old);
    free(C.objs);
    C.objs = b.objs;
    C.n_objs = b.n;
    for (size_t i = 0; i < b.n; i++)
        n_rows += b.objs[i]->n;
    C.rows = n_rows;
    C.adds = cnt[0];
    C.subs = cnt[1];
    C.built = 1;
}

void
phs_cfi_describe(char *buf, size_t len)
{
    if (!C.built)
        snprintf(buf, len, "frame pointers");
    else
        snprintf(buf, len, "eh_frame CFI (%zu objects, %zu rows), frame pointers where it has none", C.n_objs,
                 C.rows);
}

/* ---- the signal path ------------------------------------------------------- */

const phs_cfi *
phs_cfi_enter(void)
{
    atomic_fetch_add(&C.inflight, 1);
    return atomic_load(&C.cur);
}

void
phs_cfi_leave(void)
{
    atomic_fetch_sub(&C.inflight, 1);
}

const phs_cfi_rule *
phs_cfi_find(const phs_cfi *t, uintptr_t pc, size_t *hint)
{
    size_t lo = 0, hi, b;
    const cfi_obj *o = NULL;
    uint8_t at;

    if (t == NULL)
        return NULL;
    if (*hint < t->n && pc >= t->spans[*hint].lo && pc < t->spans[*hint].hi) {
        o = t->spans[*hint].obj;
    } else {
        hi = t->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;

            if (pc < t->spans[mid].lo)
                hi = mid;
            else if (pc >= t->spans[mid].hi)
                lo = mid + 1;
            else {
                o = t->spans[mid].obj;
                *hint = mid;
                break;
            }
        }
    }
    if (o == NULL)
        return NULL;
    /* The last row of PC's block at or below it, else the last row
     * before the block (see build_index). */
    b = (pc - o->lo) >> BLOCK_SHIFT;
    at = (uint8_t)(pc - o->lo);
    lo = first_row(o, b);
    hi = first_row(o, b + 1);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (o->at[mid] <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || o->rules[row_rule(o, lo - 1)].cfa_reg == PHS_CFA_NONE)
        return NULL;
    return &o->rules[row_rule(o, lo - 1)];
}

#else /* not x86-64: frame pointers only */

void
phs_cfi_refresh(void)
{
}

void
phs_cfi_describe(char *buf, size_t len)
{
    snprintf(buf, len, "frame pointers");
}

const phs_cfi *
phs_cfi_enter(void)
{
    return NULL;
}

void
phs_cfi_leave(void)
{
}

const phs_cfi_rule *
phs_cfi_find(const phs_cfi *t, uintptr_t pc, size_t *hint)
{
    (void)t;
    (void)pc;
    (void)hint;
    return NULL;
}

#endif
