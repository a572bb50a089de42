/* ph_escape.h - make text from a container or the Engine safe to print.
 *
 * Names of files a profiled container wrote, fields of its completion
 * record, the Engine's messages and build output are the attacker's bytes:
 * printed raw, "\r\e[2K\e]0;...\a" rewrites the user's terminal and "\e[8m"
 * hides what follows.  Everything such text passes through on its way to a
 * terminal or a log is escaped here:
 *
 *   C0 controls and DEL   \n \r \t, else \xNN
 *   bytes not UTF-8       \xNN (so a lone 0x9b, the 8-bit CSI, is shown)
 *   C1 controls, bidi and line-separator code points
 *                         \uNNNN (U+0080..U+009F, U+061C, U+200E/F,
 *                         U+2028/9, U+202A..U+202E, U+2066..U+2069)
 *   a backslash           \\ with PH_ESCAPE_BACKSLASH (so the escaped text
 *                         names exactly one string), else kept
 *
 * Everything else (printable ASCII, valid UTF-8) is kept.  Output is
 * bounded: text that does not fit ends with "...".  Pure and thread-safe:
 * the tar extractor's thread logs through it.
 *
 * ph_log() and ph_error_report() escape every line they print (without
 * PH_ESCAPE_BACKSLASH, so text escaped earlier is not escaped twice): a
 * string that reaches them unescaped still cannot drive the terminal.  Call
 * ph_escape() yourself for a name inside a message, so the name is shown
 * unambiguously.  Text for stdout or stderr that is not a log line (a
 * run's headline, compare's tables) goes out through ph_escape_write() or
 * ph_escape_printf(): the whole text is escaped on its way out, so a bare
 * %s of a function name cannot reach the terminal raw.
 */
#ifndef PH_ESCAPE_H
#define PH_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PH_ESCAPE_BACKSLASH 1u

/* The well-formed UTF-8 character at S, at most N bytes (RFC 3629: no
 * overlong form, no surrogate, nothing past U+10FFFF): its length, its
 * code point in *CP; 0 when S does not start one.  The markup writer and
 * the renderer decode with it too. */
size_t ph_utf8_decode(const void *s, size_t n, uint32_t *cp);

/* 1 for a code point no text from outside is shown as, anywhere: the C1
 * controls and the bidi controls, which reorder the text around them so
 * that a name reads as another (U+061C, U+200E/F, U+202A..U+202E,
 * U+2066..U+2069).  Shown as \uNNNN here and in pages (ph_markup.h);
 * a terminal's escape above also takes U+2028/9. */
int ph_escape_cp_hidden(uint32_t cp);

/* Escape the N bytes at S into BUF (SIZE >= 4 bytes, always terminated).
 * Returns the length written. */
size_t ph_escape_mem(char *buf, size_t size, const void *s, size_t n, unsigned flags);

/* Escape the string S (NULL prints as "(null)") with PH_ESCAPE_BACKSLASH.
 * Returns BUF, so it can be an argument: ph_warn("`%s`", ph_escape(b, sizeof b, name)). */
const char *ph_escape(char *buf, size_t size, const char *s);

/* Write the N bytes at S to OUT escaped line by line: each '\n' is kept,
 * everything else escaped as ph_escape_mem does with FLAGS, never cut.
 * Returns 0, or -1 (ENOMEM, or OUT's write error). */
int ph_escape_write(FILE *out, const void *s, size_t n, unsigned flags);

/* printf to OUT through ph_escape_write with PH_ESCAPE_BACKSLASH: the
 * format and its arguments alike.  Returns 0 or -1. */
int ph_escape_printf(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
