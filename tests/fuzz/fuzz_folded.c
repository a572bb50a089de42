/* fuzz_folded.c - folded stacks parsed, diffed and drawn, from any bytes.
 *
 * The first byte picks the options (reverse, inverted, flame chart,
 * differential forced on or off and its colours, a multi palette,
 * minwidth in px or %, narrow width, a subtitle); the
 * rest is split at its first NUL byte into two profiles A and B.  A is
 * parsed in chunks of a size taken from the input and rendered; then the
 * differential input of A and B (ph_folded_diff) is rendered too.  Every
 * SVG must be valid UTF-8 without NUL bytes, whatever the names hold;
 * ASan/UBSan catch the rest.  Seeds: tests/fuzz/seeds/folded/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_flame.h"
#include "ph_folded.h"

/* Strict UTF-8 (RFC 3629) and no NUL: what a browser needs to read it. */
static int
valid_utf8(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = p[i], lo = 0x80, hi = 0xbf;
        size_t len;

        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            len = 2;
        else if (c >= 0xe0 && c <= 0xef)
            len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        else if (c >= 0xf0 && c <= 0xf4)
            len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        else
            return 0;
        if (i + len > n || p[i + 1] < lo || p[i + 1] > hi)
            return 0;
        for (size_t k = 2; k < len; k++)
            if ((p[i + k] & 0xc0) != 0x80)
                return 0;
        i += len;
    }
    return 1;
}

static void
draw(const ph_folded *f, const ph_flame_opts *o)
{
    char *svg = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&svg, &len);
    ph_error_t err = NULL;
    ph_flame_stats st;

    if (out == NULL)
        abort();
    if (ph_flame_render(f, o, out, &st, &err) == 0 && st.frames_drawn == 0)
        abort(); /* drawn means at least the root */
    if (err != NULL && ph_flame_render_error(err->msg, o, out, NULL) < 0)
        abort();
    ph_error_free(&err);
    fclose(out);
    if (!valid_utf8((const unsigned char *)svg, len))
        abort();
    free(svg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ph_flame_opts o;
    ph_folded *f;
    ph_error_t err = NULL;
    const char *a, *b, *nul;
    size_t alen, blen, chunk;
    char *diff = NULL;
    size_t difflen = 0;
    FILE *out;
    uint8_t opt;
    char subtitle[256];

    if (size < 2)
        return 0;
    opt = data[0];
    chunk = 1 + data[1] % 64;
    a = (const char *)data + 2;
    alen = size - 2;
    nul = memchr(a, '\0', alen);
    b = nul ? nul + 1 : a + alen;
    blen = nul ? alen - (size_t)(b - a) : 0;
    alen = nul ? (size_t)(nul - a) : alen;

    ph_flame_opts_init(&o);
    o.reverse = opt & 1;
    o.inverted = (opt >> 1) & 1;
    o.flamechart = (opt >> 2) & 1;
    o.differential = (opt >> 3) & 1 ? ((opt >> 4) & 1) : -1;
    o.minwidth_percent = (opt >> 5) & 1;
    o.minwidth = (opt >> 5) & 1 ? 0.5 : ((opt >> 6) & 1) ? 0 : 0.1;
    o.width = (opt >> 7) & 1 ? 30 : 1200;
    o.diff_self = (opt >> 2) & 1; /* with the flame chart bit: both ways get drawn */
    o.palette = (opt >> 4) & 1 ? "js" : "hot";
    if ((opt >> 6) & 1) { /* a subtitle of any bytes: the first line of A */
        const char *eol = memchr(a, '\n', alen);
        size_t n = eol ? (size_t)(eol - a) : alen;
        n = n < sizeof subtitle - 1 ? n : sizeof subtitle - 1;
        memcpy(subtitle, a, n);
        subtitle[n] = '\0';
        o.subtitle = subtitle;
    }

    f = ph_folded_new(o.flamechart ? PH_FOLDED_KEEP_ORDER : 0, &err);
    if (f == NULL)
        abort();
    for (size_t off = 0; off < alen; off += chunk)
        if (ph_folded_feed(f, a + off, off + chunk > alen ? alen - off : chunk, &err) < 0)
            abort();
    if (ph_folded_finish(f, &err) < 0)
        abort();
    draw(f, &o);
    ph_folded_free(f);

    out = open_memstream(&diff, &difflen);
    if (out == NULL || ph_folded_diff(a, alen, b, blen, opt & 1, out, NULL, NULL, &err) < 0)
        abort();
    fclose(out);
    f = ph_folded_parse(diff, difflen, 0, &err);
    if (f == NULL)
        abort();
    o.flamechart = 0;
    o.subtitle = NULL;
    draw(f, &o);
    ph_folded_free(f);
    free(diff);
    return 0;
}
