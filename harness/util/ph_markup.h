/* ph_markup.h - writing HTML and SVG so that text from an artifact can
 * only reach the page escaped for where it goes.
 *
 * A profiled container writes the artifacts the pages are made from:
 * function names, event names, file names, titles are the attacker's
 * bytes.  Pages and SVGs are written through a ph_mw (a markup writer),
 * never through a FILE: the report's and the renderer's files poison
 * stdio's writers (ph_markup_only.h), and the writer offers only:
 *
 *   PH_MW_RAW(w, "literal")       markup; a string literal only (a
 *                                 variable does not compile)
 *   PH_MW_FMT(w, "literal", ...)  printf with a literal format; every %s
 *                                 (and %c) argument is escaped for the
 *                                 writer's sink, as ph_mw_attr (HTML) or
 *                                 ph_mw_text (SVG) escapes it; numbers
 *                                 are numbers
 *   ph_mw_text(w, s)              text content
 *   ph_mw_attr(w, s), _attrn      inside a double-quoted attribute value
 *   ph_mw_url(w, s)               a path segment of a relative URL, inside
 *                                 a double-quoted href (percent-encoded)
 *   ph_mw_js(w, s)                a JavaScript string literal, quotes
 *                                 included, safe inside <script> and in
 *                                 an attribute
 *   ph_mw_base64(w, p, n)         bytes as base64 (a data: URL)
 *   ph_mw_splice(w, from)         what another writer wrote (already safe)
 *
 * One escaping rule per sink:
 *   HTML text   & < > " ' as references; C0 controls but tab and newline
 *               become U+FFFD
 *   attribute   the same, and tab, newline and CR as references (kept
 *               exactly, never normalised)
 *   SVG/XML     text and attributes of an XML 1.0 document: & < > " ' as
 *               references; whatever XML cannot hold even as a reference
 *               (C0 controls but tab, newline, CR; U+FFFE, U+FFFF)
 *               becomes U+FFFD, so the file always parses
 *   JS string   "…" with \" \\ \n and \uXXXX for controls, < > & ' and
 *               U+2028/U+2029 (so "</script>" cannot end the script)
 *   URL path    every byte but A-Z a-z 0-9 - . _ ~ as %XX (so a name
 *               cannot become "javascript:" or leave the path)
 * and in every sink but URLs: bytes that are not UTF-8 (RFC 3629: an
 * overlong form, a surrogate, a lone 0x9b) become U+FFFD (\ufffd in JS);
 * C1 controls and the bidi controls (ph_escape_cp_hidden: U+202E and its
 * kin reorder what is around them, so one frame could read as another)
 * are shown as the text \uNNNN, as the terminal's escaper shows them (in
 * JS a string whose value is that text).
 *
 * Content-Security-Policy hashes of a page's own scripts: ph_markup_csp_hash.
 * Pure and thread-safe; write errors are the FILE's (ferror).
 */
#ifndef PH_MARKUP_H
#define PH_MARKUP_H

#include <stddef.h>
#include <stdio.h>

typedef enum ph_mw_sink {
    PH_MW_HTML, /* an HTML document (inline SVG in it is HTML too) */
    PH_MW_SVG,  /* an XML document: an SVG file */
} ph_mw_sink;

/* A markup writer over a FILE the caller owns.  Fields are the writer's. */
typedef struct ph_mw {
    FILE *file_;
    ph_mw_sink sink_;
    int own_;       /* file_ is the writer's (a memory writer's stream) */
    char *mem_;
    size_t mem_len_;
} ph_mw;

/* A writer into F. */
ph_mw ph_mw_on(FILE *f, ph_mw_sink sink);
/* A writer into memory (for a part written before the parts above it);
 * -1 on ENOMEM.  ph_mw_close frees it. */
int ph_mw_open_mem(ph_mw *w, ph_mw_sink sink);
/* Flush a memory writer; MEM and LEN (either may be NULL) get what it
 * wrote, owned by the writer until ph_mw_close.  -1 on a write error. */
int ph_mw_finish(ph_mw *w, const char **mem, size_t *len);
void ph_mw_close(ph_mw *w);
/* Whether writing failed (the FILE's error flag). */
int ph_mw_error(const ph_mw *w);

#define PH_MW_RAW(w, lit) ph_mw_raw_((w), "" lit "")
#define PH_MW_FMT(w, fmt, ...) ph_mw_fmt_((w), "" fmt "", __VA_ARGS__)
void ph_mw_raw_(ph_mw *w, const char *literal);
void ph_mw_fmt_(ph_mw *w, const char *literal_fmt, ...) __attribute__((format(printf, 2, 3)));

void ph_mw_text(ph_mw *w, const char *s);
void ph_mw_textn(ph_mw *w, const char *s, size_t n);
void ph_mw_attr(ph_mw *w, const char *s);
void ph_mw_attrn(ph_mw *w, const char *s, size_t n);
void ph_mw_url(ph_mw *w, const char *s);
void ph_mw_js(ph_mw *w, const char *s);
void ph_mw_base64(ph_mw *w, const void *p, size_t n);
/* What memory writer FROM wrote so far (finished), appended to W. */
void ph_mw_splice(ph_mw *w, ph_mw *from);

/* sha256-<base64> of SCRIPT, the exact text of an inline <script>
 * element, for a Content-Security-Policy (quoted there: '%s'). */
#define PH_CSP_HASH_LEN 56
const char *ph_markup_csp_hash(char out[PH_CSP_HASH_LEN], const char *script);

#endif
