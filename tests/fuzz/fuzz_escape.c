/* fuzz_escape.c - ph_escape_mem on any bytes: the output never carries a
 * terminal control (C0, DEL, C1, bidi or line separators, invalid UTF-8),
 * is terminated inside the buffer, and is the input itself when the input
 * is plain printable ASCII without backslashes that fits.  ph_escape_write
 * likewise, its lines the input's lines. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_escape.h"

/* Whether OUT holds a forbidden byte or code point. */
static int
has_control(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];

        if (c < 0x20 || c == 0x7f)
            return 1;
        if (c < 0x80)
            continue;
        /* the escaper only passes valid UTF-8 through: decode it */
        if (c >= 0xc2 && c <= 0xdf && i + 1 < n) {
            unsigned cp = ((c & 0x1fu) << 6) | (s[i + 1] & 0x3fu);
            if (cp >= 0x80 && cp <= 0x9f)
                return 1;
            if (cp == 0x61c)
                return 1;
            i += 1;
        } else if (c >= 0xe0 && c <= 0xef && i + 2 < n) {
            unsigned cp = ((c & 0x0fu) << 12) | ((s[i + 1] & 0x3fu) << 6) | (s[i + 2] & 0x3fu);
            if (cp == 0x200e || cp == 0x200f || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
                (cp >= 0x2066 && cp <= 0x2069))
                return 1;
            i += 2;
        } else if (c >= 0xf0 && c <= 0xf4 && i + 3 < n) {
            i += 3;
        } else {
            return 1; /* a lead byte without its sequence, or a stray continuation */
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t sizes[] = { 4, 5, 7, 16, 64, 4096 };
    char buf[4096 + 1];

    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t cap = sizes[k], n;
        int plain = 1;

        for (unsigned flags = 0; flags < 2; flags++) {
            buf[cap] = 'Z'; /* a canary one past the buffer given */
            n = ph_escape_mem(buf, cap, data, size, flags);
            if (buf[cap] != 'Z' || n >= cap || buf[n] != '\0' || strlen(buf) != n)
                abort();
            if (has_control((const unsigned char *)buf, n))
                abort();
        }
        for (size_t i = 0; i < size; i++)
            plain &= data[i] >= 0x20 && data[i] < 0x7f && data[i] != '\\';
        if (plain && size < cap) {
            ph_escape_mem(buf, cap, data, size, 1);
            if (memcmp(buf, data, size) != 0 || buf[size] != '\0')
                abort();
        }
    }
    {
        char *out = NULL;
        size_t len = 0, in_nl = 0, out_nl = 0, start = 0;
        FILE *m = open_memstream(&out, &len);

        if (m == NULL || ph_escape_write(m, data, size, 1) < 0 || fclose(m) != 0)
            abort();
        for (size_t i = 0; i < size; i++)
            in_nl += data[i] == '\n';
        for (size_t i = 0; i <= len; i++) {
            if (i < len && out[i] != '\n')
                continue;
            if (has_control((const unsigned char *)out + start, i - start))
                abort();
            out_nl += i < len;
            start = i + 1;
        }
        if (in_nl != out_nl)
            abort();
        free(out);
    }
    return 0;
}
