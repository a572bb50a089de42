/* ph_pprof.c - folded stacks as a gzip'd pprof profile (see ph_pprof.h).
 *
 * profile.proto is written by hand with ph_pb (https://github.com/google/
 * pprof/blob/main/proto/profile.proto) into one buffer, then deflated with a gzip header as it is written
 * out.  Ids are dense: frame name I of the ph_folded is function I+1 and
 * location I+1, and its string is entry FIRST+I of the string table. */
#include "ph_pprof.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ph_pb.h"

static int
gzip_out(const ph_pb *b, FILE *out, ph_error_t *err)
{
    z_stream z;
    unsigned char buf[65536];
    int zrc;

    memset(&z, 0, sizeof z);
    /* 15 + 16: a gzip header and trailer, as `gunzip` and pprof expect. */
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return ph_fail(err, ENOMEM, "pprof: start compressing");
    z.next_in = b->d;
    z.avail_in = (uInt)b->len;
    if (b->len > UINT32_MAX) {
        deflateEnd(&z);
        return ph_fail(err, EFBIG, "pprof: a profile of %zu bytes is too large", b->len);
    }
    do {
        z.next_out = buf;
        z.avail_out = sizeof buf;
        zrc = deflate(&z, Z_FINISH);
        if (zrc == Z_STREAM_ERROR) {
            deflateEnd(&z);
            return ph_fail(err, 0, "pprof: compressing failed");
        }
        if (fwrite(buf, 1, sizeof buf - z.avail_out, out) != sizeof buf - z.avail_out) {
            deflateEnd(&z);
            return ph_fail(err, errno, "pprof: write");
        }
    } while (zrc != Z_STREAM_END);
    deflateEnd(&z);
    if (fflush(out) != 0)
        return ph_fail(err, errno, "pprof: write");
    return 0;
}

int
ph_pprof_write(const ph_folded *f, const ph_pprof_opts *o, FILE *out, ph_error_t *err)
{
    const char *type = o && o->type ? o->type : "samples", *unit = o && o->unit ? o->unit : "count";
    size_t n_names = ph_folded_n_names(f), n_stacks = ph_folded_n_stacks(f);
    ph_pb p = { 0 }, m = { 0 }, sub = { 0 };
    uint64_t s_type = 1, s_unit = 2, s_comment = 3, first = o && o->comment ? 4 : 3;
    int rc;

    /* sample_type (1) */
    ph_pb_uint(&m, 1, s_type);
    ph_pb_uint(&m, 2, s_unit);
    ph_pb_msg(&p, 1, &m);
    /* sample (2): locations leaf first, one value */
    for (size_t i = 0; i < n_stacks; i++) {
        ph_folded_stack st = ph_folded_get_stack(f, i);
        double c = st.count;

        if (!(c >= 0.5) || !isfinite(c)) /* 0, negative, NaN: nothing to show */
            continue;
        for (uint32_t k = st.depth; k-- > 0;)
            ph_pb_varint(&sub, (uint64_t)st.frames[k] + 1);
        ph_pb_msg(&m, 1, &sub);
        ph_pb_varint(&sub, c >= 9.2e18 ? (uint64_t)INT64_MAX : (uint64_t)llround(c));
        ph_pb_msg(&m, 2, &sub);
        ph_pb_msg(&p, 2, &m);
    }
    /* location (4) and function (5): one each per name */
    for (size_t i = 0; i < n_names; i++) {
        ph_pb_uint(&m, 1, i + 1);
        ph_pb_uint(&sub, 1, i + 1);
        ph_pb_msg(&m, 4, &sub); /* line: the function, no line number */
        ph_pb_msg(&p, 4, &m);
    }
    for (size_t i = 0; i < n_names; i++) {
        ph_pb_uint(&m, 1, i + 1);
        ph_pb_uint(&m, 2, first + i);
        ph_pb_uint(&m, 3, first + i);
        ph_pb_msg(&p, 5, &m);
    }
    /* string_table (6): "", the type, the unit, the comment, the names */
    ph_pb_bytes(&p, 6, "", 0);
    ph_pb_bytes(&p, 6, type, strlen(type));
    ph_pb_bytes(&p, 6, unit, strlen(unit));
    if (o && o->comment)
        ph_pb_bytes(&p, 6, o->comment, strlen(o->comment));
    for (size_t i = 0; i < n_names; i++) {
        size_t len = 0;
        const char *name = ph_folded_name(f, (uint32_t)i, &len);

        ph_pb_bytes(&p, 6, name, len);
    }
    if (o && o->duration_ns > 0)
        ph_pb_uint(&p, 10, (uint64_t)o->duration_ns);
    if (o && o->comment)
        ph_pb_uint(&p, 13, s_comment);
    if (p.oom || m.oom || sub.oom) {
        rc = ph_fail(err, ENOMEM, "pprof: allocate");
    } else {
        rc = gzip_out(&p, out, err);
    }
    ph_pb_free(&p);
    ph_pb_free(&m);
    ph_pb_free(&sub);
    return rc;
}
