/* ph_sampler_int.h - internals shared by the sampler's files (hidden). */
#ifndef PH_SAMPLER_INT_H
#define PH_SAMPLER_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PH_HIDDEN __attribute__((visibility("hidden")))

#define PHS_MAX_DEPTH 128           /* deeper stacks end in a "[truncated]" frame */
#define PHS_TRUNCATED ((uintptr_t)1) /* marker pc */

/* One aggregated stack, innermost pc first, as the writer sees it. */
typedef struct phs_stack {
    uint32_t depth;
    uint64_t count;
    const uintptr_t *pcs;
} phs_stack;

/* Symbolisation, off the signal path: "name" or "module+0xoff".  The
 * returned string lives until phs_symbols_free. */
typedef struct phs_symbols phs_symbols;
PH_HIDDEN phs_symbols *phs_symbols_new(void);
PH_HIDDEN const char *phs_symbolise(phs_symbols *s, uintptr_t pc);
PH_HIDDEN void phs_symbols_free(phs_symbols *s);

/* Write a gzip'd pprof profile of STACKS to PATH.  0 or -1. */
PH_HIDDEN int phs_write_pprof(const char *path, const phs_stack *stacks, size_t n, phs_symbols *sym, int hz,
                              int64_t time_nanos, int64_t duration_nanos);

#endif
