/* fuzz_pprof.c - libFuzzer target: any bytes, read as folded stacks,
 * written as pprof (ph_pprof_write).  Beyond "no crash, no leak, no
 * undefined behaviour": the output is one whole gzip stream, and what it
 * holds parses as protobuf fields (key, varint or length within bounds)
 * from first byte to last, with string 0 the empty string.
 *
 * The second half of the input, read as a profile's comment and type,
 * goes into the options. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ph_folded.h"
#include "ph_pprof.h"

static int
varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    int shift = 0;

    *v = 0;
    while (*p < end && shift < 64) {
        unsigned char b = *(*p)++;

        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
        shift += 7;
    }
    return -1;
}

/* Every top-level field is well-formed; returns the first string's length. */
static long
check_fields(const unsigned char *p, const unsigned char *end)
{
    long first_string = -1;

    while (p < end) {
        uint64_t key, v;

        if (varint(&p, end, &key) < 0 || varint(&p, end, &v) < 0)
            abort();
        if ((key & 7) == 2) {
            if (v > (uint64_t)(end - p))
                abort();
            if ((key >> 3) == 6 && first_string < 0)
                first_string = (long)v;
            p += v;
        } else if ((key & 7) != 0) {
            abort();
        }
    }
    return first_string;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t half = size / 2;
    char *opt = strndup((const char *)data + half, size - half);
    ph_error_t err = NULL;
    ph_folded *f = ph_folded_parse((const char *)data, half, 0, &err);
    ph_pprof_opts o = { .type = opt, .comment = opt, .duration_ns = (int64_t)size };
    char *gz = NULL;
    size_t gz_len = 0;
    FILE *m;

    if (f == NULL || opt == NULL) {
        ph_error_free(&err);
        free(opt);
        ph_folded_free(f);
        return 0;
    }
    m = open_memstream(&gz, &gz_len);
    if (ph_pprof_write(f, &o, m, &err) == 0) {
        z_stream z;
        size_t cap = 1 << 16, len = 0;
        unsigned char *raw = malloc(cap);
        int zrc = Z_OK;

        fclose(m);
        m = NULL;
        memset(&z, 0, sizeof z);
        if (raw == NULL || inflateInit2(&z, 15 + 16) != Z_OK)
            abort();
        z.next_in = (unsigned char *)gz;
        z.avail_in = (uInt)gz_len;
        while (zrc == Z_OK) {
            if (len == cap && (raw = realloc(raw, cap *= 2)) == NULL)
                abort();
            z.next_out = raw + len;
            z.avail_out = (uInt)(cap - len);
            zrc = inflate(&z, Z_FINISH);
            len = cap - z.avail_out;
            if (zrc == Z_BUF_ERROR && z.avail_out == 0)
                zrc = Z_OK;
        }
        if (zrc != Z_STREAM_END || z.avail_in != 0)
            abort(); /* one whole gzip stream, nothing after it */
        inflateEnd(&z);
        if (check_fields(raw, raw + len) != 0)
            abort(); /* string 0 is "" */
        free(raw);
    }
    if (m != NULL)
        fclose(m);
    ph_error_free(&err);
    free(gz);
    free(opt);
    ph_folded_free(f);
    return 0;
}
