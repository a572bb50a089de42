/* ph_markup.c - the markup writer and its escaping rules (ph_markup.h). */
#include "ph_markup.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "ph_escape.h"
#include "ph_sha256.h"

typedef enum esc {
    ESC_HTML,
    ESC_ATTR,
    ESC_XML,
} esc;

static const char REPLACEMENT[] = "\xef\xbf\xbd"; /* U+FFFD */

ph_mw
ph_mw_on(FILE *f, ph_mw_sink sink)
{
    return (ph_mw){ .file_ = f, .sink_ = sink };
}

int
ph_mw_open_mem(ph_mw *w, ph_mw_sink sink)
{
    *w = (ph_mw){ .sink_ = sink };
    w->file_ = open_memstream(&w->mem_, &w->mem_len_);
    w->own_ = w->file_ != NULL;
    return w->file_ != NULL ? 0 : -1;
}

int
ph_mw_finish(ph_mw *w, const char **mem, size_t *len)
{
    int rc = fflush(w->file_) != 0 || ferror(w->file_) ? -1 : 0;

    if (mem != NULL)
        *mem = w->mem_;
    if (len != NULL)
        *len = w->mem_len_;
    return rc;
}

/* The stream is closed whether or not it was ever flushed: mem_ is set
 * only at a flush, so a writer closed unfinished (an error path) has
 * none yet and still owns its stream and buffer. */
void
ph_mw_close(ph_mw *w)
{
    if (w->own_)
        fclose(w->file_);
    free(w->mem_);
    *w = (ph_mw){ 0 };
}

int
ph_mw_error(const ph_mw *w)
{
    return w->file_ == NULL || ferror(w->file_);
}

void
ph_mw_raw_(ph_mw *w, const char *literal)
{
    fputs(literal, w->file_);
}

static void
escape(FILE *f, esc how, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;

    for (size_t i = 0; i < n && s[i];) {
        unsigned c = s[i];
        uint32_t cp;
        size_t len;

        switch (c) {
        case '&': fputs("&amp;", f); i++; continue;
        case '<': fputs("&lt;", f); i++; continue;
        case '>': fputs("&gt;", f); i++; continue;
        case '"': fputs("&quot;", f); i++; continue;
        case '\'': fputs(how == ESC_XML ? "&apos;" : "&#39;", f); i++; continue;
        }
        if (c < 0x20) {
            if (how == ESC_ATTR && (c == '\t' || c == '\n' || c == '\r'))
                fprintf(f, "&#%u;", c);
            else if (c == '\t' || c == '\n' || (c == '\r' && how == ESC_XML))
                fputc((int)c, f);
            else
                fputs(REPLACEMENT, f);
            i++;
            continue;
        }
        if (c < 0x80) {
            fputc((int)c, f);
            i++;
            continue;
        }
        /* past ASCII, in every sink: UTF-8 only, and (XML) only the
         * characters XML 1.0 allows */
        if ((len = ph_utf8_decode(s + i, n - i, &cp)) == 0 || (how == ESC_XML && (cp == 0xfffe || cp == 0xffff))) {
            fputs(REPLACEMENT, f);
            i += len ? len : 1;
            continue;
        }
        if (ph_escape_cp_hidden(cp)) /* C1 and bidi controls: shown, never obeyed */
            fprintf(f, "\\u%04X", (unsigned)cp);
        else
            fwrite(s + i, 1, len, f);
        i += len;
    }
}

void
ph_mw_textn(ph_mw *w, const char *s, size_t n)
{
    if (s != NULL)
        escape(w->file_, w->sink_ == PH_MW_SVG ? ESC_XML : ESC_HTML, s, n);
}

void
ph_mw_text(ph_mw *w, const char *s)
{
    if (s != NULL)
        ph_mw_textn(w, s, strlen(s));
}

void
ph_mw_attrn(ph_mw *w, const char *s, size_t n)
{
    if (s != NULL)
        escape(w->file_, w->sink_ == PH_MW_SVG ? ESC_XML : ESC_ATTR, s, n);
}

void
ph_mw_attr(ph_mw *w, const char *s)
{
    if (s != NULL)
        ph_mw_attrn(w, s, strlen(s));
}

void
ph_mw_url(ph_mw *w, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (const unsigned char *p = (const unsigned char *)s; p != NULL && *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
            *p == '.' || *p == '_' || *p == '~') {
            fputc(*p, w->file_);
        } else {
            fputc('%', w->file_);
            fputc(hex[*p >> 4], w->file_);
            fputc(hex[*p & 15], w->file_);
        }
    }
}

void
ph_mw_js(ph_mw *w, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    size_t n = strlen((const char *)s);

    fputc('"', w->file_);
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        uint32_t cp = 0;
        size_t len;

        if (c == '"' || c == '\\') {
            fputc('\\', w->file_);
            fputc((int)c, w->file_);
            i++;
        } else if (c == '\n') {
            fputs("\\n", w->file_);
            i++;
        } else if (c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&' || c == '\'') {
            fprintf(w->file_, "\\u%04x", c);
            i++;
        } else if (c < 0x80) {
            fputc((int)c, w->file_);
            i++;
        } else if ((len = ph_utf8_decode(s + i, n - i, &cp)) == 0) {
            fputs("\\ufffd", w->file_);
            i++;
        } else if (ph_escape_cp_hidden(cp)) { /* the string's value is the text \uNNNN */
            fprintf(w->file_, "\\\\u%04X", (unsigned)cp);
            i += len;
        } else if (cp == 0x2028 || cp == 0x2029) {
            fprintf(w->file_, "\\u%04x", (unsigned)cp);
            i += len;
        } else {
            fwrite(s + i, 1, len, w->file_);
            i += len;
        }
    }
    fputc('"', w->file_);
}

/* base64 of IN[0..N) into OUT (4 * ceil(N / 3) bytes, no terminator). */
static size_t
base64(char *out, const unsigned char *in, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i = 0, o = 0;

    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        out[o++] = tab[v >> 18];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = tab[(v >> 6) & 63];
        out[o++] = tab[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0);
        out[o++] = tab[v >> 18];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    return o;
}

void
ph_mw_base64(ph_mw *w, const void *p, size_t n)
{
    const unsigned char *s = p;
    char buf[4096];

    for (size_t i = 0; i < n; i += 3072) {
        size_t k = n - i < 3072 ? n - i : 3072;
        fwrite(buf, 1, base64(buf, s + i, k), w->file_);
    }
}

void
ph_mw_splice(ph_mw *w, ph_mw *from)
{
    const char *mem = NULL;
    size_t len = 0;

    if (ph_mw_finish(from, &mem, &len) < 0 || mem == NULL)
        return;
    fwrite(mem, 1, len, w->file_);
}

/* One conversion of a printf format, parsed; FMT[0] is '%'. */
typedef struct conv {
    size_t len;            /* of the whole conversion */
    char flags[8], mod[4]; /* "-0", "ll" */
    int star_w, star_p;    /* the width / precision is an argument */
    int width, prec;       /* -1: none */
    char c;                /* 's', 'd', ...; '\0' at a cut-off format */
} conv;

static conv
parse_conversion(const char *fmt)
{
    conv v = { .width = -1, .prec = -1 };
    size_t i = 1, k = 0;

    for (; fmt[i] && strchr("-+ #0", fmt[i]); i++)
        if (k + 1 < sizeof v.flags)
            v.flags[k++] = fmt[i];
    if (fmt[i] == '*') {
        v.star_w = 1;
        i++;
    } else {
        for (; fmt[i] >= '0' && fmt[i] <= '9'; i++)
            v.width = (v.width < 0 ? 0 : v.width * 10) + (fmt[i] - '0');
    }
    if (fmt[i] == '.') {
        v.prec = 0;
        if (fmt[++i] == '*') {
            v.star_p = 1;
            i++;
        } else {
            for (; fmt[i] >= '0' && fmt[i] <= '9'; i++)
                v.prec = v.prec * 10 + (fmt[i] - '0');
        }
    }
    for (k = 0; fmt[i] && strchr("hlLjzt", fmt[i]); i++)
        if (k + 1 < sizeof v.mod)
            v.mod[k++] = fmt[i];
    v.c = fmt[i];
    v.len = fmt[i] ? i + 1 : i;
    return v;
}

/* Text for a %s or %c: escaped; width and precision count bytes. */
static void
fmt_text(ph_mw *w, const conv *v, const char *s)
{
    size_t len = strlen(s), pad;
    int left = strchr(v->flags, '-') != NULL;

    if (v->prec >= 0 && (size_t)v->prec < len)
        len = (size_t)v->prec;
    pad = v->width > 0 && (size_t)v->width > len ? (size_t)v->width - len : 0;
    for (size_t i = 0; !left && i < pad; i++)
        fputc(' ', w->file_);
    escape(w->file_, w->sink_ == PH_MW_SVG ? ESC_XML : ESC_ATTR, s, len);
    for (size_t i = 0; left && i < pad; i++)
        fputc(' ', w->file_);
}

/* The numbers are formatted by snprintf with the caller's own conversion,
 * rebuilt: a literal the compiler checked against the arguments
 * (format(printf) on ph_mw_fmt_), so not a literal here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
void
ph_mw_fmt_(ph_mw *w, const char *fmt, ...)
{
    va_list ap;
    FILE *f = w->file_;

    va_start(ap, fmt);
    while (*fmt) {
        const char *pct = strchr(fmt, '%');
        char spec[48], num[400];
        conv v;
        int l, z, j, t, big;

        if (pct == NULL) {
            fputs(fmt, f);
            break;
        }
        fwrite(fmt, 1, (size_t)(pct - fmt), f);
        v = parse_conversion(pct);
        fmt = pct + v.len;
        if (v.c == '%') {
            fputc('%', f);
            continue;
        }
        if (v.star_w && (v.width = va_arg(ap, int)) < 0) {
            v.width = -v.width;
            strcat(v.flags, "-"); /* printf's rule; flags has room: at most 5 + 1 */
        }
        if (v.star_p)
            v.prec = va_arg(ap, int);
        if (v.c == 's') {
            const char *s = va_arg(ap, const char *);
            fmt_text(w, &v, s != NULL ? s : "(null)");
            continue;
        }
        if (v.c == 'c') {
            char one[2] = { (char)va_arg(ap, int), 0 };
            fmt_text(w, &v, one);
            continue;
        }
        /* a number: its digits cannot be markup */
        {
            /* the conversion again, its stars made numbers */
            size_t k = (size_t)snprintf(spec, sizeof spec, "%%%s", v.flags);
            if (v.width >= 0)
                k += (size_t)snprintf(spec + k, sizeof spec - k, "%d", v.width);
            if (v.prec >= 0)
                k += (size_t)snprintf(spec + k, sizeof spec - k, ".%d", v.prec);
            snprintf(spec + k, sizeof spec - k, "%s%c", v.mod, v.c);
        }
        l = (int)strspn(v.mod, "l");
        z = strchr(v.mod, 'z') != NULL;
        j = strchr(v.mod, 'j') != NULL;
        t = strchr(v.mod, 't') != NULL;
        big = strchr(v.mod, 'L') != NULL;
        switch (v.c) {
        case 'd': case 'i':
            if (z) snprintf(num, sizeof num, spec, va_arg(ap, ssize_t));
            else if (j) snprintf(num, sizeof num, spec, va_arg(ap, intmax_t));
            else if (t) snprintf(num, sizeof num, spec, va_arg(ap, ptrdiff_t));
            else if (l >= 2) snprintf(num, sizeof num, spec, va_arg(ap, long long));
            else if (l == 1) snprintf(num, sizeof num, spec, va_arg(ap, long));
            else snprintf(num, sizeof num, spec, va_arg(ap, int));
            break;
        case 'u': case 'x': case 'X': case 'o':
            if (z) snprintf(num, sizeof num, spec, va_arg(ap, size_t));
            else if (j) snprintf(num, sizeof num, spec, va_arg(ap, uintmax_t));
            else if (t) snprintf(num, sizeof num, spec, va_arg(ap, ptrdiff_t));
            else if (l >= 2) snprintf(num, sizeof num, spec, va_arg(ap, unsigned long long));
            else if (l == 1) snprintf(num, sizeof num, spec, va_arg(ap, unsigned long));
            else snprintf(num, sizeof num, spec, va_arg(ap, unsigned));
            break;
        case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
            if (big) snprintf(num, sizeof num, spec, va_arg(ap, long double));
            else snprintf(num, sizeof num, spec, va_arg(ap, double));
            break;
        case '\0':
            num[0] = '\0';
            break;
        default: /* %p, %n and the like have no place in a page: skipped */
            (void)va_arg(ap, void *);
            num[0] = '\0';
        }
        fputs(num, f);
    }
    va_end(ap);
}
#pragma GCC diagnostic pop

const char *
ph_markup_csp_hash(char out[PH_CSP_HASH_LEN], const char *script)
{
    unsigned char d[PH_SHA256_LEN];
    size_t k;

    ph_sha256(script, strlen(script), d);
    memcpy(out, "sha256-", 7);
    k = 7 + base64(out + 7, d, sizeof d);
    out[k] = '\0';
    return out;
}
