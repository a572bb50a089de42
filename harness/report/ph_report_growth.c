/* ph_report_growth.c - growth between two heap snapshots: per stack (by
 * its frames' names), the bytes in use at the later snapshot minus those
 * at the earlier one, only what grew kept ("a leak shows as what only
 * grows").  Pure: folded stacks in, folded stacks and their text out; the
 * heap section (ph_report_heap.c) picks the snapshots and shows it.
 *
 * Not a page writer: the folded text goes to a file of its own, so stdio
 * is used here (the section's file has it poisoned). */
#include "ph_report_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Stack S of FROM into TO with COUNT, its names interned in TO's table. */
static int
copy_stack(ph_folded *to, const ph_folded *from, ph_folded_stack s, double count, ph_error_t *err)
{
    uint32_t *ids = malloc(s.depth * sizeof *ids);
    int rc = 0;

    if (ids == NULL)
        return ph_fail(err, ENOMEM, "heap growth: a stack of %u frames", s.depth);
    for (uint32_t d = 0; d < s.depth && rc == 0; d++) {
        size_t len;
        const char *name = ph_folded_name(from, s.frames[d], &len);
        int64_t id = ph_folded_intern(to, name, len, err);

        if (id < 0)
            rc = -1;
        else
            ids[d] = (uint32_t)id;
    }
    if (rc == 0)
        rc = ph_folded_add(to, ids, s.depth, count, err);
    free(ids);
    return rc;
}

int
ph_heap_growth(const ph_folded *base, const ph_folded *last, ph_folded **out, ph_error_t *err)
{
    ph_folded *sum = ph_folded_new(0, err), *grown = NULL;

    *out = NULL;
    if (sum == NULL)
        return -1;
    for (size_t i = 0; last != NULL && i < ph_folded_n_stacks(last); i++) {
        ph_folded_stack s = ph_folded_get_stack(last, i);

        if (copy_stack(sum, last, s, s.count, err) < 0)
            goto fail;
    }
    for (size_t i = 0; base != NULL && i < ph_folded_n_stacks(base); i++) {
        ph_folded_stack s = ph_folded_get_stack(base, i);

        if (copy_stack(sum, base, s, -s.count, err) < 0)
            goto fail;
    }
    if ((grown = ph_folded_new(0, err)) == NULL)
        goto fail;
    for (size_t i = 0; i < ph_folded_n_stacks(sum); i++) {
        ph_folded_stack s = ph_folded_get_stack(sum, i);

        if (s.count > 0 && copy_stack(grown, sum, s, s.count, err) < 0)
            goto fail;
    }
    ph_folded_free(sum);
    *out = grown;
    return 0;
fail:
    ph_folded_free(sum);
    ph_folded_free(grown);
    return -1;
}

int
ph_heap_growth_text(const ph_folded *fo, char **buf, size_t *len, ph_error_t *err)
{
    FILE *f = open_memstream(buf, len);

    if (f == NULL)
        return ph_fail(err, ENOMEM, "heap growth: the folded text");
    for (size_t i = 0; i < ph_folded_n_stacks(fo); i++) {
        ph_folded_stack s = ph_folded_get_stack(fo, i);

        for (uint32_t d = 0; d < s.depth; d++)
            fprintf(f, "%s%s", d ? ";" : "", ph_folded_name(fo, s.frames[d], NULL));
        fprintf(f, " %.0f\n", s.count);
    }
    if (fclose(f) != 0) {
        free(*buf);
        *buf = NULL;
        return ph_fail(err, ENOMEM, "heap growth: the folded text");
    }
    return 0;
}
