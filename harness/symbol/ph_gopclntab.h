/* ph_gopclntab.h - Go's own function table (.gopclntab) read: the names
 * of a Go program's functions when it has no symbol table.
 *
 * `go build -ldflags="-s -w"` (and distributions' stripped packages:
 * Debian's hugo) drop .symtab and DWARF, but the runtime needs its
 * pc-to-function table for stack traces and the garbage collector, so
 * it stays: .gopclntab in a static program, .data.rel.ro.gopclntab in a
 * PIE.  Layouts, by the magic at its start (Go's runtime/symtab.go and
 * debug/gosym/pclntab.go describe them):
 *   0xfffffffb  Go 1.2 to 1.15: pc and function offsets pointer-sized,
 *               names at offsets from the table's start;
 *   0xfffffffa  Go 1.16, 1.17: the header points to a names table and a
 *               function data table (pointer-sized entries still);
 *   0xfffffff0  Go 1.18, 1.19 and 0xfffffff1 Go 1.20+: entries are
 *               32-bit offsets from the text start the header gives.
 * Either byte order; pointers of 4 or 8 bytes.
 *
 * What it promises: the table is a file a container wrote, so untrusted.
 * Every offset is checked against the section's size before it is read;
 * the function table must lie whole inside it with its addresses in
 * order (else the table is not read at all); a name is returned only if
 * it ends (a NUL) inside the section.  Nothing is allocated, nothing is
 * copied: the answers point into the caller's bytes, which must outlive
 * the table.  Pure, so safe from any thread (not from a signal handler:
 * nothing forbids it, nothing needs it).  Compiled into the library and
 * (PIC) into the sampler, whose writer names Go frames through it.
 */
#ifndef PH_GOPCLNTAB_H
#define PH_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct ph_gopclntab {
    const unsigned char *p; /* the section */
    size_t len;
    int version;            /* 12, 116, 118 or 120 (Go 1.2, 1.16, 1.18, 1.20+) */
    int big_endian;
    unsigned ptrsize;       /* 4 or 8 */
    unsigned field;         /* bytes of one function table field */
    uint64_t text_start;    /* what 1.18+ entries are offsets from */
    size_t nfunc;
    size_t functab;         /* offsets into p */
    size_t funcdata;
    size_t names;
} ph_gopclntab;

/* T from the LEN bytes of a .gopclntab section at P; TEXT_ADDR is the
 * program's .text address, used when a 1.18+ header's text start is 0.
 * 0, or -1 (T zeroed) when P is not a table this reader knows or any
 * part of its function table lies outside it. */
int ph_gopclntab_parse(ph_gopclntab *t, const void *p, size_t len, uint64_t text_addr);

/* T from a whole ELF file (64 or 32-bit, either byte order) of LEN bytes
 * at FILE: its .gopclntab (or .data.rel.ro.gopclntab) section, bounds
 * checked.  0, or -1 when it has none that ph_gopclntab_parse reads. */
int ph_gopclntab_elf(ph_gopclntab *t, const void *file, size_t len);

/* The address (the program's link-time one) of file offset OFF of the
 * ELF file of LEN bytes at FILE: in the PT_LOAD segment whose file bytes
 * hold it.  0 and *ADDR, or -1 (none, or headers out of bounds).  perf
 * script prints a frame it cannot name at such an offset. */
int ph_gopclntab_elf_addr(const void *file, size_t len, uint64_t off, uint64_t *addr);

/* The function holding address PC (the program's link-time address):
 * its name (NUL-terminated, inside the section) and, when START or END
 * are not NULL, its first and one-past-last address; NULL when no
 * function covers PC or its name is out of bounds. */
const char *ph_gopclntab_find(const ph_gopclntab *t, uint64_t pc, uint64_t *start, uint64_t *end);

/* Function I (I < t->nfunc), in address order, as ph_gopclntab_find
 * answers it. */
const char *ph_gopclntab_func(const ph_gopclntab *t, size_t i, uint64_t *start, uint64_t *end);

/* The first function named NAME (the table's spelling: no `.abi0`):
 * 0 and its first and one-past-last address in *START and *END, or -1.
 * One pass over the table. */
int ph_gopclntab_by_name(const ph_gopclntab *t, const char *name, uint64_t *start, uint64_t *end);

#endif
