/* ph_suggest.h - "did you mean": the name a user most likely meant when
 * the one typed is unknown (a mode, a service, a command), and a short
 * list of the names there are, for hints.
 *
 * Pure and bounded: no allocation, names over PH_SUGGEST_MAX bytes are
 * never suggested.  Case is ignored when comparing, never when matching:
 * callers look a name up exactly and only suggest on a miss. */
#ifndef PH_SUGGEST_H
#define PH_SUGGEST_H

#include <stddef.h>

#define PH_SUGGEST_MAX 64

/* Edits between A and B (insert, delete, substitute, swap two neighbours;
 * case ignored), or PH_SUGGEST_MAX + 1 when either is longer than
 * PH_SUGGEST_MAX. */
size_t ph_suggest_distance(const char *a, const char *b);

/* The name in NAMES[0..N) closest to TYPED, when it is close enough to be
 * a slip: at most one edit per three characters typed (at least one), or
 * TYPED is the start of exactly one name (three characters at least).  A
 * tie goes to the earlier name.  NULL when none is; NULL entries are
 * skipped. */
const char *ph_suggest(const char *typed, const char *const *names, size_t n);

/* NAMES as "a, b, c" into BUF (LEN bytes, NUL-terminated), cut with ", ..."
 * when it does not fit.  Returns BUF. */
char *ph_suggest_list(char *buf, size_t len, const char *const *names, size_t n);

#endif
