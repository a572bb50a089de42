/* fuzz_callgrind.c - libFuzzer target for the callgrind.out parser: any
 * bytes in three chunks, the middle one a second file (compressed names
 * are per file), then the top functions and the inclusive flamegraph. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ph_callgrind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    ph_error_t err = NULL;
    ph_callgrind *cg = ph_callgrind_new(&err);
    size_t a = size > 0 ? data[0] % (size + 1) : 0, b = size > 1 ? a + data[1] % (size - a + 1) : a;
    uint32_t top[16];

    if (cg == NULL)
        return 0;
    if (devnull == NULL)
        devnull = fopen("/dev/null", "w");
    ph_callgrind_feed(cg, (const char *)data, a, &err);
    ph_callgrind_feed(cg, (const char *)data + a, b - a, &err);
    ph_callgrind_next_file(cg, &err);
    ph_callgrind_feed(cg, (const char *)data + b, size - b, &err);
    ph_callgrind_finish(cg, &err);
    ph_error_free(&err);
    for (size_t k = 0; k < ph_callgrind_get_info(cg)->n_events && k < 3; k++) {
        size_t n = ph_callgrind_top(cg, k, (int)(k & 1), top, 16);
        for (size_t i = 0; i < n; i++)
            (void)ph_callgrind_get_fn(cg, top[i]).name[0];
        if (devnull != NULL && ph_callgrind_write_folded(cg, k, devnull, &err) < 0)
            ph_error_free(&err);
    }
    for (size_t i = 0; i < ph_callgrind_n_calls(cg); i++)
        (void)ph_callgrind_get_call(cg, i).cost;
    ph_callgrind_free(cg);
    return 0;
}
