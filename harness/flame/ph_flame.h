/* ph_flame.h - folded stacks to an interactive SVG flamegraph.
 *
 * Input is the folded format flamegraph.pl and inferno read: one line per
 * stack, `root;child;leaf COUNT`, counts possibly decimal; a second count
 * makes a differential line `stack BEFORE AFTER`.  Lines that do not parse
 * are counted (and the first few line numbers kept), never fatal.
 *
 * Output is one self-contained SVG with flamegraph.pl's interactive
 * contract: tooltips `name (N unit, P%)`, click to zoom with faded
 * ancestors and Reset Zoom, regex search (Ctrl-F) reporting "Matched: X%"
 * without double counting nested matches, case toggle (Ctrl-I), zoom and
 * search kept in the URL; frames carry their extent in samples (fg:x,
 * fg:w, as inferno's do), so a zoom keeps exactly the frames it should.
 * Labels are fitted with a fixed monospace char width (the widest common
 * one), so the browser never measures text; the title is cut and the
 * subtitle wrapped to the width.  Whatever bytes the names,
 * title and subtitle hold, the SVG is valid UTF-8 and well-formed XML:
 * control characters and bidi controls are shown escaped (`\x01`,
 * `\u0085`, `\u202E`), bytes that are not UTF-8 as U+FFFD.
 *
 * Frames as flamegraph.pl draws them, siblings in its order, with two
 * deliberate differences: a name is one frame per parent (flamegraph.pl
 * sorts whole lines, so `f 1`, `f1 1`, `f;g 1` give it two `f` boxes),
 * and in differential graphs every frame is coloured by its change with
 * its children by default (flamegraph.pl colours each frame's own change,
 * so a parent whose children grew stays white; diff_self asks for that).
 * The subtitle of a differential graph says which colours it shows.
 * Pruning is flamegraph.pl's: a frame narrower than minwidth px (or % of
 * the total) is not drawn, nor anything above it.
 *
 * Bounds, off by default (flamegraph.pl has none), for graphs of stacks
 * nobody checked (the report's: a container wrote them): what a person
 * can see, in a file of a known size whatever the input.
 *   collapse   siblings narrower than minwidth are drawn as one frame,
 *              "[N narrow frames]", instead of leaving a gap
 *   max_depth  a stack deeper than this many frames above the root is
 *              drawn to max_depth - 1, then one frame for the rest:
 *              "[N frames cut]" ("up to N" where stacks merged into it
 *              were cut by different amounts)
 *   max_bytes  the SVG is at most this long: frames are merged narrowest
 *              first (minwidth raised, collapse on) until it fits, and
 *              the subtitle says below what width; a tooltip shows at
 *              most PH_FLAME_NAME_SHOWN characters of a name  Annotations perf's
 * collapsers append (`_[k]` kernel, `_[j]` JIT, `_[i]` inlined, `_[w]`
 * waker; the sampler's `_[p]`, a Python function) are left out of labels
 * and colour the frame, as flamegraph.pl's java palette does, in every
 * palette (flamegraph.pl: only in its multi palettes java, js, perl,
 * chain); Python frames are blue.
 *
 * Parsing and merging live in ph_folded.c; this module turns merged stacks
 * into frames and frames into SVG.  Linking ph_flame.o needs ph_folded.o,
 * ph_error.o, ph_escape.o (its UTF-8 decoder) and ph_markup.o (and -lm),
 * nothing else: whatever links ph_flame.o, such as libphsampler, must link
 * those too.
 *
 * Pure and reentrant: libc and ph_error only, no global state, never exits;
 * safe to call from any thread.
 */
#ifndef PH_FLAME_H
#define PH_FLAME_H

#include <stddef.h>
#include <stdio.h>
#include "ph_error.h"
#include "ph_folded.h"

typedef struct ph_flame_opts {
    const char *title;      /* default "Flame Graph" ("Icicle Graph" inverted, "Flame Chart") */
    const char *subtitle;   /* NULL: none */
    const char *countname;  /* default "samples" */
    const char *palette;    /* hot (default), mem, io, ..., java, js (ph_flame_palette_valid); differential graphs are red/blue */
    double width;           /* image width in px, default 1200 */
    double minwidth;        /* omit frames narrower than this many px, default 0.1 (flamegraph.pl's) */
    int minwidth_percent;   /* minwidth is a percentage of the total instead */
    int inverted;           /* icicle: root at the top */
    int reverse;            /* reverse each stack before merging */
    int flamechart;         /* keep input order: merge only with the previous stack */
    int differential;       /* -1 auto (default: any line with two counts), 0 off, 1 on */
    int diff_self;          /* differential: colour each frame by its own change, as flamegraph.pl
                               does, not by its change with its children (the default) */
    int collapse;           /* narrow siblings drawn as one frame (see above); 0 default */
    unsigned max_depth;     /* frames above the root, the last one a marker; 0 (default): any */
    size_t max_bytes;       /* the SVG's size; 0 (default): any */
} ph_flame_opts;

/* With max_bytes, a tooltip's name is cut to this many characters (and
 * ".."): an 8 MiB frame name cannot fill the budget alone. */
#define PH_FLAME_NAME_SHOWN 1000

typedef struct ph_flame_stats {
    size_t lines, bad_lines, stacks, frames_drawn;
    size_t stacks_cut;    /* stacks deeper than max_depth */
    size_t frames_merged; /* frames drawn as part of a "[N narrow frames]" */
    double minwidth_px;   /* the narrowest frame drawn on its own, in px (max_bytes may raise it) */
    size_t bad_line_numbers[PH_FOLDED_BAD_KEPT]; /* the first bad lines, 1-based; 0 = unused */
    int differential; /* drawn as a differential graph */
    double total;     /* sum of the counts drawn (AFTER counts when differential) */
} ph_flame_stats;

void ph_flame_opts_init(ph_flame_opts *o);

/* 1 if NAME is a palette: hot, mem, io, red, green, blue, yellow, purple,
 * aqua, orange, or a multi palette (each frame coloured by what its name
 * looks like, as flamegraph.pl does): java, js, perl, wakeup, chain. */
int ph_flame_palette_valid(const char *name);

/* Render FOLDED (LEN bytes) to OUT.  Returns 0 and fills STATS (may be
 * NULL), or -1 and *err when nothing can be drawn (no valid line), the
 * graph cannot be held to max_bytes (a title alone past it), or writing
 * fails. */
int ph_flame_render_folded(const char *folded, size_t len, const ph_flame_opts *opts, FILE *out,
                           ph_flame_stats *stats, ph_error_t *err);

/* Render stacks already parsed (streamed) into F.  For a flame chart F
 * must have been parsed with PH_FOLDED_KEEP_ORDER.  opts->reverse reverses
 * F's stacks as they are: parse without PH_FOLDED_REVERSE.  F is not
 * changed, so one parse can be drawn several ways. */
int ph_flame_render(const ph_folded *f, const ph_flame_opts *opts, FILE *out, ph_flame_stats *stats, ph_error_t *err);

/* A small SVG of OPTS's width saying "ERROR: MESSAGE", for when there is
 * nothing to draw (flamegraph.pl writes one too): a file meant to hold a
 * graph then shows why it does not.  -1 and *err if writing fails. */
/* The script every rendered SVG carries (the text of its <script>), for a
 * page's Content-Security-Policy hash. */
const char *ph_flame_script(void);

int ph_flame_render_error(const char *message, const ph_flame_opts *opts, FILE *out, ph_error_t *err);

/* Kept for callers of the first API: ph_folded_diff without bad-line counts. */
int ph_flame_diff_folded(const char *a, size_t alen, const char *b, size_t blen, int normalise, FILE *out,
                         ph_error_t *err);

#endif
