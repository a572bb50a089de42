/* ph_callgrind_int.h - what the two files of the callgrind parser share
 * (not for other modules): ph_callgrind.c reads, ph_callgrind_graph.c
 * answers questions (top functions, the inclusive flamegraph). */
#ifndef PH_CALLGRIND_INT_H
#define PH_CALLGRIND_INT_H

#include "ph_callgrind.h"
#include "ph_intern.h"
#include "ph_lines.h"

#define CG_STRINGS_MAX (48u << 20)
#define CG_MAX_COMPRESSED_ID (1u << 24)

/* ---- compressed names: id -> interned string + 1 (0 = undefined) ------- */

typedef struct cmap {
    uint32_t *v;
    size_t cap;
} cmap;

typedef struct fn_rec {
    uint32_t file, fn, obj, name; /* string ids; name = "file:fn" */
    uint32_t primary;             /* for a piece inlined from another file (fi=), the
                                   * function it is part of; UINT32_MAX: itself */
    uint8_t called, defined, own; /* own: it has an fn= line */
} fn_rec;

typedef struct call_rec {
    uint32_t caller, callee;
    uint64_t count;
} call_rec;

struct ph_callgrind {
    ph_lines lines;
    ph_intern *strings;
    ph_cg_info info;
    int finished;

    size_t E;                        /* events, program-wide */
    const char *ev[PH_CG_MAX_EVENTS];
    int map[PH_CG_MAX_EVENTS];       /* this file's event j -> ours, -1 dropped */
    size_t fileE;                    /* events of this file */
    int identity;                    /* map is j -> j */
    int npos;                        /* position columns */
    char positions[32];
    int saw_events;

    cmap c_fl, c_fn, c_ob;
    uint32_t empty;                  /* the id of "" */
    uint32_t cur_obj, cur_file, cur_fn;
    int have_fn;
    uint32_t cur_func, cur_primary; /* cur_primary: the fn= function */
    uint32_t cfile;
    int have_cfile;
    uint32_t callee;
    int have_callee;
    uint64_t pending_calls;

    fn_rec *fns;
    uint64_t *self, *incl;
    size_t n_fns, cap_fns;
    ph_u64map fn_map;
    uint32_t overflow_fn;            /* UINT32_MAX until needed */

    call_rec *calls;
    uint64_t *call_cost;
    size_t n_calls, cap_calls;
    ph_u64map call_map;

    /* the part being read */
    uint64_t p_summary[PH_CG_MAX_EVENTS], p_totals[PH_CG_MAX_EVENTS], p_self[PH_CG_MAX_EVENTS];
    int p_has_summary, p_has_totals, p_any, p_open;
    ph_cg_part cur_part;
    size_t parts_seen;

    uint64_t totals[PH_CG_MAX_EVENTS];
    int all_summary, all_totals;     /* every part had one */
    ph_cg_part *parts;
    size_t n_parts;

    char *cmd, *creator;
    uint32_t *out_start, *out_idx;   /* call edges by caller, after finish */
};

#endif
