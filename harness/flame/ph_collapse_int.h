/* ph_collapse_int.h - between ph_collapse.c and ph_collapse_dw.c (the
 * DWARF reader for --inline); not for other modules. */
#ifndef PH_COLLAPSE_INT_H
#define PH_COLLAPSE_INT_H

#include <stddef.h>
#include <stdint.h>
#include "ph_error.h"

typedef struct ph_collapse_dw ph_collapse_dw;

typedef struct ph_collapse_dw_frame {
    const char *name, *file; /* libdw's, valid until ph_collapse_dw_close; may be NULL */
    int line;
} ph_collapse_dw_frame;

/* libdw.so.1 dlopen'd; NULL and *err when it cannot be. */
ph_collapse_dw *ph_collapse_dw_open(ph_error_t *err);
void ph_collapse_dw_close(ph_collapse_dw *d);

/* The functions at address PC of the ELF file PATH, outermost (the real
 * function) first, then each one inlined into the one before, up to MAX,
 * each with the file:line in it (where PC is, for the innermost; where the
 * next was inlined, for the others).  When PC is not in the file's DWARF
 * and HAS_OFF, the address is symbol SYM (SYMLEN bytes) + OFF instead (perf
 * prints run-time addresses for some modules).  Returns how many; 0 when
 * the file or its DWARF does not cover the address. */
int ph_collapse_dw_frames(ph_collapse_dw *d, const char *path, uint64_t pc, const char *sym, size_t symlen,
                          uint64_t off, int has_off, ph_collapse_dw_frame *out, int max);

#endif
