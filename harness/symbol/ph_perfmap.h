/* ph_perfmap.h - perf map files read: the names a JIT gives its code.
 *
 * A JIT that wants its code named by perf writes /tmp/perf-<pid>.map, one
 * `START SIZE name` line per code object (START and SIZE hex: bare as V8
 * writes them, or with 0x as HotSpot's Compiler.perfmap and
 * DumpPerfMapAtExit do; perf reads both).  This is the one reader of
 * such files: the perf conversion's collapser (flame/ph_collapse.c) and
 * the in-process sampler's writer (sampler/ph_sampler_out.c) both name
 * JIT frames through it, so a frame gets the same name on either path.
 *
 * What it promises:
 *  - the file is the service's (untrusted): it is opened without
 *    following a link, must be a regular file, and at most max_bytes of
 *    it are read (a map grows for as long as the JIT runs; a cut line at
 *    the bound is dropped) and at most max_entries kept: what is left
 *    out is counted, never an error;
 *  - a line that is not `HEX HEX name` is skipped and counted; a name
 *    keeps everything after the second space (HotSpot's signatures have
 *    spaces), its line end and any NUL cut;
 *  - lookups are by address: of the entries starting nearest at or
 *    before it, the first written (a JIT reuses memory; perf names such
 *    an address by the first entry too), and only if it covers it; one
 *    binary search over the distinct starts, whatever the map holds.
 * Pure apart from ph_perfmap_open's read; no allocation after loading;
 * never prints, never exits.  Compiled into the library and (PIC) into
 * the sampler, which calls it from its writer thread only.
 */
#ifndef PH_PERFMAP_H
#define PH_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include "ph_error.h"

#define PH_PERFMAP_MAX_BYTES   (64u << 20) /* a map read whole up to this */
#define PH_PERFMAP_MAX_ENTRIES (1u << 20)

typedef struct ph_perfmap_opts {
    size_t max_bytes;   /* 0: PH_PERFMAP_MAX_BYTES */
    size_t max_entries; /* 0: PH_PERFMAP_MAX_ENTRIES */
    const char *suffix; /* appended to every name (the frame kind, "_[j]"); NULL: none */
} ph_perfmap_opts;

typedef struct ph_perfmap_stats {
    size_t lines, entries;
    size_t bad_lines;   /* not `HEX HEX name` */
    size_t dropped;     /* entries over max_entries */
    int cut;            /* the input went on past max_bytes */
} ph_perfmap_stats;

typedef struct ph_perfmap ph_perfmap;

/* Parse LEN bytes of map text.  NULL and *err only on ENOMEM; an input
 * with no entry gives an empty map. */
ph_perfmap *ph_perfmap_parse(const char *text, size_t len, const ph_perfmap_opts *o, ph_error_t *err);

/* Read the map file PATH (see above).  NULL and *err when it cannot be
 * opened or read, is a link or not a regular file (errno ENOENT when it
 * is not there, so callers can tell "no map" apart). */
ph_perfmap *ph_perfmap_open(const char *path, const ph_perfmap_opts *o, ph_error_t *err);

/* The name of the code at PC, NULL if no entry covers it. */
const char *ph_perfmap_find(const ph_perfmap *m, uint64_t pc);
/* The same, and in *STEPS (when not NULL) the entries it compared on the
 * way: at most log2(entries) + 1, whatever the map holds (entries that
 * start at one address are resolved to one when the map is read), so
 * that a test can hold a lookup to that. */
const char *ph_perfmap_find_counted(const ph_perfmap *m, uint64_t pc, size_t *steps);

const ph_perfmap_stats *ph_perfmap_get_stats(const ph_perfmap *m);
void ph_perfmap_free(ph_perfmap *m);

#endif
