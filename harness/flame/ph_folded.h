/* ph_folded.h - folded stacks in, interned and merged stacks out.
 *
 * The folded format (flamegraph.pl, inferno): one line per stack,
 * `root;child;leaf COUNT`, the count possibly decimal (`12.5`); a second
 * count makes a differential line `stack BEFORE AFTER`.  One blank (space
 * or tab) separates a count, as flamegraph.pl reads it: `a;  3` is the
 * stack `a` then ` `.  Trailing blanks and a CR are ignored (flamegraph.pl
 * refuses such lines; CRLF files are common).  Blank lines and
 * lines starting with '#' are skipped; any other line that does not parse
 * is counted as bad (the first few line numbers kept), never fatal.
 *
 * Frames are interned: each distinct name is stored once, and a stack is
 * an array of name ids (root first).  Identical stacks are merged through a
 * hash table unless PH_FOLDED_KEEP_ORDER is given (flame charts: every line
 * stays, in input order, because input order is time order).  Unique
 * stacks keep first-seen order either way.
 *
 * Input may arrive in chunks of any size (ph_folded_feed), so a writer can
 * stream a file through a small buffer instead of holding it.
 *
 * Pure and reentrant: libc, ph_error, ph_lines (the line splitter) and
 * ph_intern (the string table) only, no global state, never exits; one ph_folded belongs to one thread at a time.
 */
#ifndef PH_FOLDED_H
#define PH_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ph_error.h"

enum {
    PH_FOLDED_KEEP_ORDER = 1 << 0, /* no merging: one stack per input line, in order */
    PH_FOLDED_REVERSE = 1 << 1,    /* reverse each stack (leaf first) as it is read */
};

#define PH_FOLDED_BAD_KEPT 8           /* bad line numbers remembered */
/* Longer lines are bad lines (counted in long_lines): the only limit, so
 * a stack may be as deep as a line can hold (8 Mi one-byte frames). */
#define PH_FOLDED_MAX_LINE (16u << 20)

typedef struct ph_folded ph_folded;

typedef struct ph_folded_stats {
    size_t lines;     /* lines seen, including blank and comment lines */
    size_t bad_lines; /* lines not in the folded format */
    size_t long_lines; /* of those, lines longer than PH_FOLDED_MAX_LINE */
    size_t bad_line_numbers[PH_FOLDED_BAD_KEPT]; /* the first bad lines, 1-based; 0 = unused */
    size_t stacks;    /* unique stacks (every valid line with KEEP_ORDER) */
    size_t names;     /* distinct frame names */
    int differential; /* some line had two counts */
    double total;        /* sum of counts (AFTER of differential lines) */
    double total_before; /* sum of BEFORE counts (== total when not differential) */
} ph_folded_stats;

typedef struct ph_folded_stack {
    const uint32_t *frames; /* name ids, root first (leaf first with REVERSE) */
    uint32_t depth;         /* number of frames, >= 1 */
    double count;           /* the count; AFTER of a differential line */
    double before;          /* BEFORE of a differential line, else == count */
} ph_folded_stack;

/* A new, empty set of stacks; FLAGS from the enum above.  NULL on ENOMEM. */
ph_folded *ph_folded_new(int flags, ph_error_t *err);
void ph_folded_free(ph_folded *f);

/* Parse LEN more bytes.  A line may be split across calls: its start is
 * held until its newline arrives (or ph_folded_finish).  -1 only on ENOMEM. */
int ph_folded_feed(ph_folded *f, const char *buf, size_t len, ph_error_t *err);
/* Parse a held final line that had no newline: call after the last feed
 * of each input file (feeding may go on with the next file).  -1 only on
 * ENOMEM. */
int ph_folded_finish(ph_folded *f, ph_error_t *err);
/* ph_folded_new + feed + finish of one buffer. */
ph_folded *ph_folded_parse(const char *buf, size_t len, int flags, ph_error_t *err);

/* Stacks built by a caller rather than parsed (ph_collapse): the id of
 * name S[0..N), added if new, or -1 on ENOMEM; and one stack of DEPTH
 * such ids, root first, merged as a parsed line `stack COUNT` would be.
 * ph_folded_add returns -1 only on ENOMEM. */
int64_t ph_folded_intern(ph_folded *f, const char *s, size_t n, ph_error_t *err);
int ph_folded_add(ph_folded *f, const uint32_t *ids, uint32_t depth, double count, ph_error_t *err);

/* Add FROM's stacks to INTO (their names interned in INTO's table), as
 * if FROM's lines had been fed to INTO: counts of a stack both hold are
 * summed.  -1 only on ENOMEM. */
int ph_folded_merge(ph_folded *into, const ph_folded *from, ph_error_t *err);
/* F's stacks as folded text, `root;child;leaf COUNT` a line, in F's
 * order (the AFTER count of a differential stack); the count as short
 * as it is exact (`12`, `12.5`).  -1 and *err when writing fails. */
int ph_folded_write(const ph_folded *f, FILE *out, ph_error_t *err);

const ph_folded_stats *ph_folded_get_stats(const ph_folded *f);
size_t ph_folded_n_stacks(const ph_folded *f);
/* Stack I (0 <= I < n_stacks), pointers valid until the next feed/free. */
ph_folded_stack ph_folded_get_stack(const ph_folded *f, size_t i);
size_t ph_folded_n_names(const ph_folded *f);
/* Name ID (NUL-terminated; *LEN set when LEN is not NULL). */
const char *ph_folded_name(const ph_folded *f, uint32_t id, size_t *len);

/* Differential input from two profiles, like difffolded.pl: every stack of
 * A and B as `stack COUNT_A COUNT_B` (0 where absent), A's stacks first,
 * each in first-seen order.  NORMALISE scales A's counts to B's total, as
 * difffolded.pl -n does (rounded to 3 decimals rather than truncated).  Bad lines are skipped; their counts are added to
 * BAD_A and BAD_B when not NULL. */
int ph_folded_diff(const char *a, size_t alen, const char *b, size_t blen, int normalise, FILE *out, size_t *bad_a,
                   size_t *bad_b, ph_error_t *err);

#endif
