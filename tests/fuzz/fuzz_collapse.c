/* fuzz_collapse.c - perf script text collapsed into folded stacks, from
 * any bytes.
 *
 * The first byte picks the options (pid, tid, kernel, jit, addrs, an
 * event filter, a map directory that does not exist), the second the
 * chunk size the rest is fed in.  The output must then read back, every
 * line of it, as folded stacks with no bad line, the counts adding up to
 * the samples' periods; ASan/UBSan catch the rest.  --inline is left out
 * (it reads files named by the input).  Seeds: tests/fuzz/seeds/collapse/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_collapse.h"
#include "ph_folded.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether a line of OUT has an empty frame: starts with ';' or holds ";;"
 * or "; " before its count. */
static int
empty_frame(const char *out, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (out[i] == ';' && (i == 0 || out[i - 1] == '\n' || (i + 1 < len && (out[i + 1] == ';' || out[i + 1] == ' '))))
            return 1;
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ph_collapse_opts o;
    ph_collapse *c;
    ph_error_t err = NULL;
    char *out = NULL;
    size_t outlen = 0, chunk;
    FILE *f;
    ph_folded *back;

    if (size < 2)
        return 0;
    ph_collapse_opts_init(&o);
    o.pid = data[0] & 1;
    o.tid = (data[0] >> 1) & 1;
    o.kernel = (data[0] >> 2) & 1;
    o.jit = (data[0] >> 3) & 1;
    o.addrs = (data[0] >> 4) & 1;
    o.event_filter = (data[0] >> 5) & 1 ? "cycles" : NULL;
    o.map_dir = (data[0] >> 6) & 1 ? "/nonexistent-ph-fuzz" : NULL;
    chunk = 1 + data[1] % 97;
    data += 2;
    size -= 2;
    if ((c = ph_collapse_new(&o, &err)) == NULL)
        abort();
    for (size_t off = 0; off < size; off += chunk)
        if (ph_collapse_feed(c, (const char *)data + off, off + chunk > size ? size - off : chunk, &err) < 0)
            abort();
    if (ph_collapse_finish(c, &err) < 0 || (f = open_memstream(&out, &outlen)) == NULL ||
        ph_collapse_write(c, f, &err) < 0)
        abort();
    fclose(f);
    /* what we print, flamegraph reads: one stack a line, nothing bad */
    if ((back = ph_folded_parse(out, outlen, 0, &err)) == NULL)
        abort();
    /* A comm or symbol of semicolons is written as stackcollapse-perf.pl
     * writes it, empty frames and all, which the folded parser refuses
     * and names: the only bad lines allowed besides a kept \r. */
    if (ph_folded_get_stats(back)->bad_lines != 0 && memchr(out, '\r', outlen) == NULL && !empty_frame(out, outlen))
        abort();
    if (ph_folded_get_stats(back)->stacks > ph_collapse_get_stats(c)->samples)
        abort();
    ph_folded_free(back);
    ph_collapse_free(c);
    free(out);
    return 0;
}
