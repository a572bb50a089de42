/* ph_fmt.h - every number a report prints goes through here, so a size,
 * a count or a duration reads the same in the terminal headline, the HTML
 * and the compare table.
 *
 * Sizes are binary like ms_print's (it divides by 1024 and prints "MB");
 * we say what it means: "14.2 MiB".  Counts are decimal ("1.92 G").  Each
 * function writes into the caller's buffer of PH_FMT_LEN bytes and returns
 * it, so several can appear in one printf.  Pure; no allocation.
 */
#ifndef PH_FMT_H
#define PH_FMT_H

#include <stddef.h>
#include <stdint.h>

#define PH_FMT_LEN 48

/* 1768079 -> "1,768,079" (callgrind_annotate's and ms_print's commify). */
const char *ph_fmt_commify(char buf[PH_FMT_LEN], uint64_t v);
/* Signed: -1234 -> "-1,234". */
const char *ph_fmt_commify_signed(char buf[PH_FMT_LEN], int64_t v);
/* Bytes, three significant digits: "812 B", "1.50 KiB", "14.2 MiB", "3.07 GiB". */
const char *ph_fmt_bytes(char buf[PH_FMT_LEN], double bytes);
/* A count, three significant digits: "812", "12.3 k", "1.92 G". */
const char *ph_fmt_count(char buf[PH_FMT_LEN], double v);
/* Seconds: "812 ns", "45.0 µs", "120 ms", "3.10 s", "2 min 5 s". */
const char *ph_fmt_seconds(char buf[PH_FMT_LEN], double s);
/* 100*part/whole with one decimal, "61.0 %"; "-" when whole is 0. */
const char *ph_fmt_percent(char buf[PH_FMT_LEN], double part, double whole);
/* A relative change from A to B: "+5.2 %", "-12.0 %", "new" (A == 0). */
const char *ph_fmt_change(char buf[PH_FMT_LEN], double a, double b);

/* Function NAME for a headline, at most about MAX bytes, into OUT (CAP
 * bytes): a name is never cut in the middle; a longer one loses whole
 * pieces for an ellipsis (…) at their boundaries: its argument list's
 * contents, then its template arguments, then its outer qualifiers
 * (`…::push_back(…)`).  A name still longer is kept whole (to CAP). */
const char *ph_fmt_name(char *out, size_t cap, const char *name, size_t max);

#endif
