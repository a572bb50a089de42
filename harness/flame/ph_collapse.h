/* ph_collapse.h - `perf script` output collapsed into folded stacks, as
 * FlameGraph's stackcollapse-perf.pl does it.
 *
 * Input is perf script's text: a sample header line (`comm pid/tid [cpu]
 * time: period event:`), then one line per frame, leaf first (`  addr
 * symbol+0xoff (dso)`), then a blank line.  Output is one folded line per
 * distinct stack, `comm;root;...;leaf count`, the count the sum of the
 * samples' periods, lines in byte order - what stackcollapse-perf.pl
 * prints for the same options, byte for byte (checked against its own
 * regression suite, tests/43-collapse-peers.bats).  Its rules, kept:
 *  - only samples of one event are kept: --event-filter's, else the
 *    first event seen (merging cycles with instructions would mislead);
 *  - symbols are tidied: `+0x..` offsets, argument lists `(...)` (but
 *    Go's `pkg.(*T).M` and C++'s `(anonymous namespace)`), quotes and
 *    `;` go; Java's `L` prefix goes in processes named java*;
 *  - `[unknown]` frames take their dso's name (`[libc.so.6]`), with the
 *    address under `addrs`;
 *  - `kernel` appends `_[k]` to kernel frames, `jit` `_[j]` to frames of
 *    /tmp/perf-<pid>.map, and perf's own inline chains `a->b` give `b_[i]`;
 *  - a sample not ended by a blank line is not counted; a line that is
 *    neither a header nor a frame is counted as unrecognized.
 * Counts are exact to 2^53 (Perl's to 2^63); a header whose period has
 * more than 18 digits is counted as unrecognized (Perl adds it as a float).
 * Two additions: `[unknown]` frames of a perf map file are looked up in
 * a file of that name in map_dir (never where perf script names it: that
 * path is the profiled machine's), so JIT frames have names when perf
 * script ran where the map was not (node --perf-basic-prof); map lines
 * are `START SIZE name`, the numbers hex with or without 0x (HotSpot's);
 * `inline_frames` expands a frame into the functions inlined at its
 * address, read from its dso's DWARF through libdw (dlopen'd; without it,
 * an error says so), where stackcollapse-perf.pl --inline runs addr2line:
 * the names are DWARF's (C++ functions without their arguments) and the
 * inlined ones end in `_[i]`; `elf_dirs` names a stripped Go program's
 * `[unknown]` frames from Go's own function table.
 *
 * Input may arrive in chunks of any size; memory is the distinct frames
 * and stacks, never the text.  Not thread-safe: one ph_collapse per
 * thread.  Never exits, never prints.
 */
#ifndef PH_COLLAPSE_H
#define PH_COLLAPSE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ph_error.h"

typedef struct ph_collapse_opts {
    int pid, tid;             /* process names as comm-PID, comm-PID/TID */
    int kernel, jit;          /* annotate kernel frames _[k], perf map (JIT) frames _[j] */
    int jit_named;            /* annotate _[j] the frames named from a map_dir map only
                               * (an unnamed [perf-N.map] stays as it is, for the report) */
    int addrs;                /* [unknown] frames keep their address: [dso <addr>] */
    int inline_frames;        /* expand inlined functions from DWARF (libdw) */
    int context;              /* with inline_frames: each function's file:line */
    const char *event_filter; /* NULL: the first event seen */
    const char *map_dir;      /* where perf-<pid>.map files are; NULL: no maps read */
    /* Where copies of the profiled machine's programs are (NULL-ended; NULL:
     * none): an `[unknown]` frame of a program at PATH there (ROOT/PATH, or
     * perf's build-id cache layout ROOT/PATH/<build-id>/elf) that is a Go
     * program is named from its .gopclntab (ph_gopclntab), which stripping
     * keeps, at the file offset perf prints for such a frame; the path is
     * walked without following a link. */
    const char *const *elf_dirs;
} ph_collapse_opts;

#define PH_COLLAPSE_BAD_KEPT 8

typedef struct ph_collapse_stats {
    size_t lines, samples, stacks;
    size_t filtered;          /* samples of another event, skipped */
    size_t unrecognized;      /* lines neither header nor frame */
    size_t unrecognized_line_numbers[PH_COLLAPSE_BAD_KEPT]; /* the first, 1-based */
    size_t long_lines;        /* of those, longer than PH_COLLAPSE_MAX_LINE */
    size_t map_lookups;       /* frames looked up in a perf map: one per distinct address and map,
                               * however often the address comes */
    size_t map_steps;         /* the map entries those lookups compared (ph_perfmap_find_counted) */
    char event[64];           /* the event kept ("" before the first header) */
    char other_event[64];     /* the first other event skipped */
} ph_collapse_stats;

#define PH_COLLAPSE_MAX_LINE (16u << 20)

typedef struct ph_collapse ph_collapse;

void ph_collapse_opts_init(ph_collapse_opts *o);

/* NULL and *err on ENOMEM, or when inline_frames is asked and libdw
 * cannot be loaded. */
ph_collapse *ph_collapse_new(const ph_collapse_opts *o, ph_error_t *err);
void ph_collapse_free(ph_collapse *c);

/* Parse LEN more bytes of perf script output; a line may be split across
 * calls.  -1 only on ENOMEM. */
int ph_collapse_feed(ph_collapse *c, const char *buf, size_t len, ph_error_t *err);
/* The input has ended: parse a final line without its newline. */
int ph_collapse_finish(ph_collapse *c, ph_error_t *err);

const ph_collapse_stats *ph_collapse_get_stats(const ph_collapse *c);

/* The files (dsos perf script names with a path: `/usr/bin/x`, not
 * `[vdso]`, `//anon` or a perf map) none of whose frames perf named, in
 * first-seen order, at most PH_COLLAPSE_UNNAMED_MAX: the files perf had
 * no symbols of at all (no copy in its build-id cache: a static Go
 * binary has no GNU build-id), which a second pass may be given; a file
 * with some frames named had its symbols.  Dso I (0 <= I < the count),
 * valid until free. */
#define PH_COLLAPSE_UNNAMED_MAX 16
size_t ph_collapse_n_unnamed(const ph_collapse *c);
const char *ph_collapse_unnamed(const ph_collapse *c, size_t i);

/* The folded stacks, `stack count` a line, in byte order.  -1 and *err
 * when writing fails or on ENOMEM. */
int ph_collapse_write(ph_collapse *c, FILE *out, ph_error_t *err);

#endif
