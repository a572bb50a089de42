/* ph_stackset.c - the sampler modes' file set (ph_stackset.h). */
#include "ph_stackset.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_flame.h"
#include "ph_folded.h"
#include "ph_fs.h"
#include "ph_pprof.h"

#define OFFCPU_LEAF ";[off-cpu]"

int
ph_stackset_offcpu(const char *l, size_t n)
{
    const char *sp;

    while (n > 0 && (l[n - 1] == '\n' || l[n - 1] == '\r'))
        n--;
    sp = memrchr(l, ' ', n);
    return sp != NULL && (size_t)(sp - l) >= sizeof OFFCPU_LEAF - 1 &&
           memcmp(sp - (sizeof OFFCPU_LEAF - 1), OFFCPU_LEAF, sizeof OFFCPU_LEAF - 1) == 0;
}

/* FOLDED's lines, each kept when KEEP (0: those not off the CPU, 1: those
 * off it, 2: all) with its count times SCALE, into *OUT (malloc'd). */
static int
lines(const char *folded, size_t len, int keep, uint64_t scale, char **out, size_t *olen, ph_error_t *err)
{
    FILE *f = open_memstream(out, olen);

    if (f == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    for (const char *p = folded; p < folded + len;) {
        const char *nl = memchr(p, '\n', (size_t)(folded + len - p));
        size_t l = nl ? (size_t)(nl - p) + 1 : (size_t)(folded + len - p);
        const char *sp = memrchr(p, ' ', l);

        if (keep == 2 || ph_stackset_offcpu(p, l) == keep) {
            if (scale == 1 || sp == NULL) {
                fwrite(p, 1, l, f);
            } else {
                unsigned long long c = strtoull(sp + 1, NULL, 10);
                fprintf(f, "%.*s %llu\n", (int)(sp - p), p, c > UINT64_MAX / scale ? UINT64_MAX : c * scale);
            }
        }
        p += l;
    }
    if (fclose(f) != 0) {
        free(*out);
        *out = NULL;
        return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

/* The lines of FOLDED that KEEP says into DIR/KIND-STAMP-PID-1.folded. */
static int
view(const char *dir, const char *kind, const char *folded, size_t len, int keep, const ph_stackset_opts *o,
     ph_error_t *err)
{
    char name[PATH_MAX], *text = NULL;
    size_t tlen = 0;
    int rc;

    if (lines(folded, len, keep, 1, &text, &tlen, err) < 0)
        return -1;
    snprintf(name, sizeof name, "%s-%s-%d-1.folded", kind, o->stamp, (int)o->pid);
    rc = ph_fs_write_bytes(dir, name, text ? text : "", tlen, err);
    free(text);
    return rc;
}

int
ph_stackset_write(const char *dir, const char *folded, size_t len, const ph_stackset_opts *o, ph_error_t *err)
{
    char name[PATH_MAX], *svg = NULL, *pb = NULL, *ns = NULL;
    size_t slen = 0, plen = 0, nslen = 0;
    ph_folded *f = NULL;
    ph_flame_opts fo;
    ph_pprof_opts po = { .type = o->wall ? "wall" : "cpu", .unit = "nanoseconds", .duration_ns = o->duration_ns,
                         .comment = o->title };
    FILE *m;
    int rc = -1;

    if (view(dir, "stacks", folded, len, 2, o, err) < 0)
        return -1;
    if (o->wall && (view(dir, "offcpu", folded, len, 1, o, err) < 0 || view(dir, "oncpu", folded, len, 0, o, err) < 0))
        return -1;
    if ((f = ph_folded_parse(folded, len, 0, err)) == NULL)
        return -1;
    ph_flame_opts_init(&fo);
    fo.title = o->title;
    fo.subtitle = o->subtitle;
    if ((m = open_memstream(&svg, &slen)) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    if (ph_flame_render(f, &fo, m, NULL, err) < 0) {
        fclose(m);
        goto out;
    }
    fclose(m);
    snprintf(name, sizeof name, "flamegraph-%s-%d-1.svg", o->stamp, (int)o->pid);
    if (ph_fs_write_bytes(dir, name, svg, slen, err) < 0)
        goto out;
    /* pprof's values: each sample stands for a period of the clock */
    ph_folded_free(f);
    f = NULL;
    if (lines(folded, len, 2, o->period_ns ? o->period_ns : 1, &ns, &nslen, err) < 0 ||
        (f = ph_folded_parse(ns ? ns : "", nslen, 0, err)) == NULL)
        goto out;
    if ((m = open_memstream(&pb, &plen)) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    if (ph_pprof_write(f, &po, m, err) < 0) {
        fclose(m);
        goto out;
    }
    fclose(m);
    snprintf(name, sizeof name, "profile-%s-%d-1.pb.gz", o->stamp, (int)o->pid);
    rc = ph_fs_write_bytes(dir, name, pb, plen, err);
out:
    ph_folded_free(f);
    free(svg);
    free(pb);
    free(ns);
    return rc;
}
