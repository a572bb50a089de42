/* ph_escape.c - escaping untrusted text for terminals and logs (see
 * ph_escape.h). */
#include "ph_escape.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t
ph_utf8_decode(const void *data, size_t n, uint32_t *cp)
{
    const unsigned char *s = data;
    unsigned char c = n > 0 ? s[0] : 0, lo = 0x80, hi = 0xBF;
    size_t len;
    uint32_t v;

    if (c < 0x80 && n > 0) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        v = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        v = c & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (s[1] < lo || s[1] > hi)
        return 0;
    v = (v << 6) | (s[1] & 0x3F);
    for (size_t i = 2; i < len; i++) {
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    *cp = v;
    return len;
}

int
ph_escape_cp_hidden(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Code points that move the cursor, reorder text or start a control
 * sequence in some terminal. */
static int
cp_is_control(uint32_t cp)
{
    return ph_escape_cp_hidden(cp) || cp == 0x2028 || cp == 0x2029;
}

size_t
ph_escape_mem(char *buf, size_t size, const void *data, size_t n, unsigned flags)
{
    const unsigned char *s = data;
    size_t o = 0, i = 0, mark = 0;

    if (size < 4) {
        if (size > 0)
            buf[0] = '\0';
        return 0;
    }
    while (i < n) {
        char tmp[8];
        const char *piece = tmp;
        size_t plen, step = 1;
        unsigned char c = s[i];
        uint32_t cp;

        if (c == '\n' || c == '\r' || c == '\t') {
            tmp[0] = '\\';
            tmp[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
            plen = 2;
        } else if (c < 0x20 || c == 0x7F) {
            plen = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", c);
        } else if (c == '\\' && (flags & PH_ESCAPE_BACKSLASH)) {
            tmp[0] = tmp[1] = '\\';
            plen = 2;
        } else if (c < 0x80) {
            piece = (const char *)s + i;
            plen = 1;
        } else if ((step = ph_utf8_decode(s + i, n - i, &cp)) == 0) {
            plen = (size_t)snprintf(tmp, sizeof tmp, "\\x%02x", c);
            step = 1;
        } else if (cp_is_control(cp)) {
            plen = (size_t)snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned)cp);
        } else {
            piece = (const char *)s + i;
            plen = step;
        }
        /* The last place "..." still fits; cut back to it when a piece
         * does not fit, so an escape or a character is never cut. */
        if (o + 4 <= size)
            mark = o;
        if (o + plen >= size) {
            memcpy(buf + mark, "...", 3);
            o = mark + 3;
            break;
        }
        memcpy(buf + o, piece, plen);
        o += plen;
        i += step;
    }
    buf[o] = '\0';
    return o;
}

const char *
ph_escape(char *buf, size_t size, const char *s)
{
    if (s == NULL)
        s = "(null)";
    ph_escape_mem(buf, size, s, strlen(s), PH_ESCAPE_BACKSLASH);
    return buf;
}

int
ph_escape_write(FILE *out, const void *data, size_t n, unsigned flags)
{
    const char *s = data, *end = s + n;
    char small[1024], *buf = small;
    size_t cap = sizeof small;
    int rc = 0;

    while (s < end && rc == 0) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t len = (size_t)((nl ? nl : end) - s), o;

        /* a byte grows to at most 4 ("\xNN"): room for all, never cut */
        if (4 * len + 4 > cap) {
            char *nb;
            cap = 4 * len + 4;
            nb = buf == small ? malloc(cap) : realloc(buf, cap);
            if (nb == NULL) {
                errno = ENOMEM;
                rc = -1;
                break;
            }
            buf = nb;
        }
        o = ph_escape_mem(buf, cap, s, len, flags);
        if (fwrite(buf, 1, o, out) != o || (nl != NULL && fputc('\n', out) == EOF))
            rc = -1;
        s = nl ? nl + 1 : end;
    }
    if (buf != small)
        free(buf);
    return rc;
}

int
ph_escape_printf(FILE *out, const char *fmt, ...)
{
    va_list ap;
    char *text = NULL;
    int n, rc;

    va_start(ap, fmt);
    n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    rc = ph_escape_write(out, text, (size_t)n, PH_ESCAPE_BACKSLASH);
    free(text);
    return rc;
}
