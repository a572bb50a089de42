/* fuzz_massif.c - libFuzzer target for the massif.out parser: any bytes,
 * fed in two chunks split where the first byte says (so a line is held
 * across chunks), then every query the report makes. */
#include <stddef.h>
#include <stdint.h>

#include "ph_massif.h"

static int
line_cb(void *ctx, const ph_massif_line *l)
{
    (void)ctx;
    return l->details != NULL && l->details[0] == '\x01'; /* any return value is allowed */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ph_error_t err = NULL;
    ph_massif *m = ph_massif_new(&err);
    size_t cut = size > 0 ? data[0] % (size + 1) : 0;
    const ph_massif_info *info;

    if (m == NULL)
        return 0;
    ph_massif_feed(m, (const char *)data, cut, &err);
    ph_massif_feed(m, (const char *)data + cut, size - cut, &err);
    ph_massif_finish(m, &err);
    ph_error_free(&err);
    info = ph_massif_get_info(m);
    (void)info->problem[0];
    for (size_t i = 0; i < ph_massif_n_snapshots(m); i++) {
        const ph_massif_snapshot *s = ph_massif_get_snapshot(m, i);
        const ph_massif_site_bytes *v;
        size_t n = ph_massif_detail_sites(m, s->detail, &v);
        for (size_t k = 0; k < n; k++)
            (void)ph_massif_site_name(m, v[k].site)[0];
    }
    for (size_t i = 0; i < ph_massif_n_peak_nodes(m); i++)
        (void)ph_massif_strip_address(ph_massif_get_peak_node(m, i)->details);
    ph_massif_walk_peak(m, 1.0, line_cb, NULL);
    ph_massif_walk_peak(m, 0.0, line_cb, NULL);
    ph_massif_free(m);
    return 0;
}
