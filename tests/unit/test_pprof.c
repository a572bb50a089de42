/* test_pprof.c - folded stacks as pprof (ph_pprof.c): the output is a
 * gzip stream (as gunzip and pprof read it) of a profile.proto whose
 * samples, read back with a decoder written here from the .proto, give
 * the folded stacks again: each name once in the string table, each stack
 * leaf first, counts rounded, zero counts left out. */
#include "test_util.h"

#include <stdint.h>
#include <zlib.h>

#include "ph_folded.h"
#include "ph_pb.h"
#include "ph_pprof.h"

/* ---- a decoder of the fields ph_pprof writes --------------------------- */

typedef struct span {
    const unsigned char *p, *end;
} span;

static uint64_t
varint(span *s)
{
    uint64_t v = 0;
    int shift = 0;

    for (;;) {
        assert_true(s->p < s->end);
        assert_true(shift < 64);
        v |= (uint64_t)(*s->p & 0x7f) << shift;
        if (!(*s->p++ & 0x80))
            return v;
        shift += 7;
    }
}

/* The next field: its number and wire type; a length-delimited one's
 * bytes in *sub, a varint's value in *v. */
static int
field(span *s, int *wire, uint64_t *v, span *sub)
{
    uint64_t key;

    if (s->p == s->end)
        return 0;
    key = varint(s);
    *wire = (int)(key & 7);
    if (*wire == 0) {
        *v = varint(s);
    } else {
        assert_int_equal(*wire, 2);
        *v = varint(s);
        assert_true(*v <= (uint64_t)(s->end - s->p));
        sub->p = s->p;
        sub->end = s->p + *v;
        s->p += *v;
    }
    return (int)(key >> 3);
}

typedef struct profile {
    char *strings[64];
    size_t n_strings;
    uint64_t type, unit, duration, comment;
    uint64_t fn_name[64];            /* function id -> name string */
    uint64_t loc_fn[64];             /* location id -> function id */
    char stacks[16][256];            /* "root;...;leaf" */
    uint64_t values[16];
    size_t n_samples;
} profile;

/* PASS 0: the tables (strings, functions, locations); PASS 1: the
 * samples, which come first in the bytes but name what comes after. */
static void
decode(const unsigned char *buf, size_t len, profile *pr, int pass)
{
    span s = { buf, buf + len }, sub, inner, x;
    int wire, f;
    uint64_t v, locs[64];
    size_t n_locs;

    if (pass == 0)
        memset(pr, 0, sizeof *pr);
    while ((f = field(&s, &wire, &v, &sub)) != 0) {
        if ((pass == 0) == (f == 2))
            continue;
        switch (f) {
        case 1: /* sample_type */
            while ((f = field(&sub, &wire, &v, &inner)) != 0)
                *(f == 1 ? &pr->type : &pr->unit) = v;
            break;
        case 2: /* sample */
            n_locs = 0;
            while ((f = field(&sub, &wire, &v, &inner)) != 0) {
                assert_int_equal(wire, 2); /* packed */
                while (inner.p < inner.end) {
                    if (f == 1)
                        locs[n_locs++] = varint(&inner);
                    else
                        pr->values[pr->n_samples] = varint(&inner);
                }
            }
            /* leaf first in the profile; root first here */
            pr->stacks[pr->n_samples][0] = '\0';
            for (size_t k = n_locs; k-- > 0;) {
                uint64_t fn = pr->loc_fn[locs[k]];

                assert_true(fn > 0);
                strcat(pr->stacks[pr->n_samples], pr->strings[pr->fn_name[fn]]);
                if (k > 0)
                    strcat(pr->stacks[pr->n_samples], ";");
            }
            pr->n_samples++;
            break;
        case 4: { /* location: id, line { function_id } */
            uint64_t id = 0, fn = 0;

            while ((f = field(&sub, &wire, &v, &inner)) != 0) {
                if (f == 1)
                    id = v;
                if (f == 4)
                    while ((f = field(&inner, &wire, &v, &x)) != 0)
                        if (f == 1)
                            fn = v;
            }
            assert_true(id > 0 && id < 64);
            pr->loc_fn[id] = fn;
            break;
        }
        case 5: { /* function: id, name */
            uint64_t id = 0, name = 0;

            while ((f = field(&sub, &wire, &v, &inner)) != 0) {
                if (f == 1)
                    id = v;
                if (f == 2)
                    name = v;
            }
            assert_true(id > 0 && id < 64);
            pr->fn_name[id] = name;
            break;
        }
        case 6:
            assert_true(pr->n_strings < 64);
            pr->strings[pr->n_strings++] = strndup((const char *)sub.p, (size_t)(sub.end - sub.p));
            break;
        case 10:
            pr->duration = v;
            break;
        case 13:
            pr->comment = v;
            break;
        default:
            fail_msg("unexpected field %d", f);
        }
    }
}

static void
read_profile(const char *folded, const ph_pprof_opts *o, profile *pr)
{
    ph_error_t err = NULL;
    ph_folded *f = ph_folded_parse(folded, strlen(folded), 0, &err);
    char *gz = NULL;
    size_t gz_len = 0;
    FILE *m = open_memstream(&gz, &gz_len);
    static unsigned char raw[1 << 16];
    uLongf raw_len = sizeof raw;
    z_stream z;

    assert_non_null(f);
    assert_int_equal(ph_pprof_write(f, o, m, &err), 0);
    fclose(m);
    ph_folded_free(f);
    /* gzip magic, then inflate as gunzip does */
    assert_true(gz_len > 18);
    assert_int_equal((unsigned char)gz[0], 0x1f);
    assert_int_equal((unsigned char)gz[1], 0x8b);
    memset(&z, 0, sizeof z);
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (unsigned char *)gz;
    z.avail_in = (uInt)gz_len;
    z.next_out = raw;
    z.avail_out = (uInt)raw_len;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    raw_len = z.total_out;
    inflateEnd(&z);
    free(gz);
    decode(raw, raw_len, pr, 0);
    decode(raw, raw_len, pr, 1);
}

static void
free_profile(profile *pr)
{
    for (size_t i = 0; i < pr->n_strings; i++)
        free(pr->strings[i]);
}

static void
test_stacks_round_trip(void **state)
{
    static const char folded[] = "demo;main;work;hot 30\n"
                                 "demo;main;work;cold 10\n"
                                 "demo;main;idle 0\n"
                                 "demo;main;work;hot 5\n"
                                 "other;main 2.6\n";
    ph_pprof_opts o = { .type = "cpu", .unit = "nanoseconds", .duration_ns = 5000000000LL, .comment = "perf" };
    profile pr;

    (void)state;
    read_profile(folded, &o, &pr);
    /* "" first; then type, unit, comment; then each name once */
    assert_string_equal(pr.strings[0], "");
    assert_string_equal(pr.strings[pr.type], "cpu");
    assert_string_equal(pr.strings[pr.unit], "nanoseconds");
    assert_string_equal(pr.strings[pr.comment], "perf");
    assert_int_equal(pr.duration, 5000000000ULL);
    assert_int_equal(pr.n_strings, 4 + 7); /* demo main work hot cold idle other */
    for (size_t i = 1; i < pr.n_strings; i++)
        for (size_t j = i + 1; j < pr.n_strings; j++)
            assert_string_not_equal(pr.strings[i], pr.strings[j]);
    /* merged (hot 30 + 5), zero left out, 2.6 rounded */
    assert_int_equal(pr.n_samples, 3);
    assert_string_equal(pr.stacks[0], "demo;main;work;hot");
    assert_int_equal(pr.values[0], 35);
    assert_string_equal(pr.stacks[1], "demo;main;work;cold");
    assert_int_equal(pr.values[1], 10);
    assert_string_equal(pr.stacks[2], "other;main");
    assert_int_equal(pr.values[2], 3);
    free_profile(&pr);
}

static void
test_defaults_and_annotations(void **state)
{
    profile pr;

    (void)state;
    /* no options: samples/count, no duration, no comment */
    read_profile("p;k_[k];j_[j] 4\n", NULL, &pr);
    assert_string_equal(pr.strings[pr.type], "samples");
    assert_string_equal(pr.strings[pr.unit], "count");
    assert_int_equal(pr.duration, 0);
    assert_int_equal(pr.comment, 0);
    assert_int_equal(pr.n_samples, 1);
    assert_string_equal(pr.stacks[0], "p;k_[k];j_[j]"); /* names as they are */
    assert_int_equal(pr.values[0], 4);
    free_profile(&pr);
}

static void
test_nothing_and_write_errors(void **state)
{
    ph_error_t err = NULL;
    ph_folded *f = ph_folded_parse("", 0, 0, &err);
    profile pr;
    FILE *full;

    (void)state;
    /* no stacks: a valid, empty profile */
    read_profile("", NULL, &pr);
    assert_int_equal(pr.n_samples, 0);
    assert_string_equal(pr.strings[pr.type], "samples");
    free_profile(&pr);
    /* a full disk is an error, not silence */
    full = fopen("/dev/full", "w");
    assert_non_null(full);
    assert_int_equal(ph_pprof_write(f, NULL, full, &err), -1);
    assert_non_null(strstr(err->msg, "pprof: write"));
    ph_error_free(&err);
    fclose(full);
    ph_folded_free(f);
}

/* ph_pb's varints at their boundaries, against the wire format's own
 * examples (1 is 01, 150 is 96 01, 300 is ac 02). */
static void
test_varints(void **state)
{
    static const struct {
        uint64_t v;
        const char *bytes;
        size_t n;
    } cases[] = {
        { 0, "\x00", 1 }, { 1, "\x01", 1 }, { 127, "\x7f", 1 }, { 128, "\x80\x01", 2 }, { 150, "\x96\x01", 2 },
        { 300, "\xac\x02", 2 }, { 16383, "\xff\x7f", 2 }, { 16384, "\x80\x80\x01", 3 },
        { UINT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10 },
    };
    ph_pb b = { 0 }, m = { 0 };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        b.len = 0;
        ph_pb_varint(&b, cases[i].v);
        assert_int_equal(b.len, cases[i].n);
        assert_memory_equal(b.d, cases[i].bytes, cases[i].n);
    }
    /* a field: key (field << 3 | wire), 0 left out; a message, length first */
    b.len = 0;
    ph_pb_uint(&b, 1, 150);
    ph_pb_uint(&b, 2, 0);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.d, "\x08\x96\x01", 3);
    ph_pb_uint(&m, 1, 150);
    b.len = 0;
    ph_pb_msg(&b, 3, &m);
    assert_int_equal(m.len, 0); /* emptied for reuse */
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.d, "\x1a\x03\x08\x96\x01", 5);
    b.len = 0;
    ph_pb_bytes(&b, 2, "testing", 7);
    assert_memory_equal(b.d, "\x12\x07testing", 9);
    ph_pb_free(&b);
    ph_pb_free(&m);
    assert_null(b.d);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stacks_round_trip),
        cmocka_unit_test(test_defaults_and_annotations),
        cmocka_unit_test(test_nothing_and_write_errors),
        cmocka_unit_test(test_varints),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
