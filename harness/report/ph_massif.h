/* ph_massif.h - valgrind massif's output (massif.out) parsed while it
 * streams in, with bounded memory.
 *
 * The format: a header (`desc:` lines, `cmd:`, `time_unit: i|ms|B`), then
 * snapshots, each `snapshot=N`, `time=`, `mem_heap_B=`,
 * `mem_heap_extra_B=`, `mem_stacks_B=`, `heap_tree=empty|detailed|peak`;
 * a detailed or peak snapshot is followed by its allocation tree in
 * preorder, one node a line: `nCHILDREN: BYTES DETAILS`.  Lines starting
 * with '#' are comments.  A `cmd:` that runs over several lines (massif
 * writes the command line as it is, newlines included) is joined with
 * "\n": ms_print 3.19 refuses such a file; we read it.
 *
 * What is kept: every snapshot's figures (past 65,536 snapshots, every
 * other plain one is dropped from the chart series, never the peak or a
 * detailed one while there is room; the counts stay exact); for each
 * detailed snapshot, the bytes of its top-level allocation sites (the
 * root's children, the "stacked" view of massif-visualizer; the last 512
 * detailed snapshots are thinned the same way); and the peak snapshot's
 * whole tree down to nodes of 0.1 % of the snapshot's total (each kept
 * node counts the children not kept and their bytes), so ms_print's
 * tree at its default 1 % threshold can be reproduced line for line.
 *
 * Figures are ms_print's: a node's percentage is of the snapshot's total
 * (heap + extra heap + stacks), the root's bytes are the useful heap.
 *
 * Bad input is never fatal: a line that is not what the format allows at
 * that point is counted (the first line numbers kept), and a file that
 * ends inside a snapshot or a tree, or has no snapshot at all, gets a
 * problem text saying so.  Pure: libc and ph_error; never exits.
 */
#ifndef PH_MASSIF_H
#define PH_MASSIF_H

#include <stddef.h>
#include <stdint.h>
#include "ph_error.h"

#define PH_MASSIF_BAD_KEPT 8
#define PH_MASSIF_MAX_LINE (1u << 20)   /* longer lines are bad lines */
#define PH_MASSIF_MAX_POINTS 65536      /* snapshots kept for the chart */
#define PH_MASSIF_MAX_DETAILS 512       /* detailed snapshots kept for the chart */
#define PH_MASSIF_MAX_SITES_PER 256     /* top-level sites kept per detailed snapshot */
#define PH_MASSIF_MAX_PEAK_NODES 262144 /* peak tree nodes kept */
#define PH_MASSIF_MAX_DEPTH 4096        /* deeper trees are bad input */
#define PH_MASSIF_KEEP_PERMILLE 1       /* peak nodes kept down to 0.1 % */

enum ph_massif_tree { PH_MASSIF_EMPTY = 0, PH_MASSIF_DETAILED = 1, PH_MASSIF_PEAK = 2 };

typedef struct ph_massif_snapshot {
    uint64_t num;     /* massif's snapshot number */
    uint64_t time;    /* in the file's time unit */
    uint64_t heap, extra, stacks;
    int tree;         /* enum ph_massif_tree */
    int32_t detail;   /* index for ph_massif_detail_sites, -1 when none kept */
} ph_massif_snapshot;

typedef struct ph_massif_node {
    uint32_t depth;        /* 0: the root, "(heap allocation functions) ..." */
    uint32_t n_children;   /* as massif wrote them */
    uint64_t bytes;
    const char *details;   /* the text after the bytes, leading blank removed */
    uint32_t dropped;      /* children not kept (below 0.1 %) */
    uint64_t dropped_bytes;
} ph_massif_node;

typedef struct ph_massif_site_bytes {
    uint32_t site;    /* ph_massif_site_name */
    uint64_t bytes;
} ph_massif_site_bytes;

typedef struct ph_massif_info {
    const char *desc;      /* `desc:` lines joined with "\n", "" if none */
    const char *cmd;       /* "" if none */
    char time_unit[8];     /* "i", "ms", "B"; "" if none */
    int cmd_lines;         /* > 1: the multi-line command ms_print refuses */
    uint64_t n_snapshots;  /* all of them, kept or not */
    uint64_t n_detailed;   /* detailed and peak */
    int64_t peak;          /* index into the kept snapshots of the peak, -1: none marked */
    uint64_t peak_num;     /* its snapshot number */
    uint64_t max_total;    /* the largest heap+extra+stacks of any snapshot */
    uint64_t end_time;     /* the last snapshot's time */
    size_t lines, bad_lines;
    size_t bad_line_numbers[PH_MASSIF_BAD_KEPT];
    int peak_tree_truncated;    /* more than PH_MASSIF_MAX_PEAK_NODES */
    char problem[256];     /* "" or what is missing / broken, for the report */
} ph_massif_info;

typedef struct ph_massif ph_massif;

ph_massif *ph_massif_new(ph_error_t *err);
void ph_massif_free(ph_massif *m);
/* Parse LEN more bytes; -1 only on ENOMEM. */
int ph_massif_feed(ph_massif *m, const char *buf, size_t len, ph_error_t *err);
/* End of input: a final line without newline is parsed, the problem text
 * set.  -1 only on ENOMEM. */
int ph_massif_finish(ph_massif *m, ph_error_t *err);
/* new + read PATH + finish.  NULL and *err when the file cannot be read. */
ph_massif *ph_massif_parse_file(const char *path, ph_error_t *err);

const ph_massif_info *ph_massif_get_info(const ph_massif *m);
size_t ph_massif_n_snapshots(const ph_massif *m); /* kept */
const ph_massif_snapshot *ph_massif_get_snapshot(const ph_massif *m, size_t i);
/* The peak tree in preorder (empty when no peak). */
size_t ph_massif_n_peak_nodes(const ph_massif *m);
const ph_massif_node *ph_massif_get_peak_node(const ph_massif *m, size_t i);
/* Top-level sites of a kept detailed snapshot. */
size_t ph_massif_detail_sites(const ph_massif *m, int32_t detail, const ph_massif_site_bytes **out);
const char *ph_massif_site_name(const ph_massif *m, uint32_t site);

/* The peak tree as ms_print prints it at THRESHOLD percent (its default
 * is 1.0; below 0.1 the nodes were not kept and the walk uses 0.1): each
 * significant node, in preorder, and after a node's children one GROUP
 * line for those below the threshold ("in N+ places, all below ...").
 * PERCENT is of the snapshot's total, as ms_print's. */
typedef struct ph_massif_line {
    uint32_t depth;       /* 0 = the root */
    int group;            /* 1: the children below the threshold, PLACES of them */
    uint32_t places;
    uint64_t bytes;
    double percent;
    const char *details;  /* NULL for a group line */
    size_t node;          /* ph_massif_get_peak_node index (not for groups) */
} ph_massif_line;
typedef int (*ph_massif_line_cb)(void *ctx, const ph_massif_line *line);
/* Returns the callback's first non-zero return, else 0. */
int ph_massif_walk_peak(const ph_massif *m, double threshold, ph_massif_line_cb cb, void *ctx);
/* The total (heap + extra + stacks) of the peak snapshot, 0 when none. */
uint64_t ph_massif_peak_total(const ph_massif *m);

/* "0x4C2FB0F: front_cache_put (front.c:88)" -> "front_cache_put (front.c:88)":
 * the details without the code address.  Returns a pointer into DETAILS. */
const char *ph_massif_strip_address(const char *details);

#endif
