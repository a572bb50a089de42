/* test_perfmap.c - the one perf map reader (harness/symbol/ph_perfmap.c):
 * V8's bare hex and HotSpot's 0x form, lookups at the edges, the first
 * entry of a reused address, bad lines, the bounds on bytes and
 * entries, the kind suffix, files that are not maps, and what a lookup
 * costs on a map made to be slow. */
#include "test_util.h"

#include <errno.h>
#include <sys/stat.h>

#include "ph_perfmap.h"

static ph_perfmap *
parse(const char *text, const ph_perfmap_opts *o)
{
    ph_error_t err = NULL;
    ph_perfmap *m = ph_perfmap_parse(text, strlen(text), o, &err);

    assert_null(err);
    assert_non_null(m);
    return m;
}

/* Node writes bare hex; HotSpot 0x and names with spaces. */
static void
test_both_formats(void **state)
{
    (void)state;
    ph_perfmap *m = parse("7f00aa001000 40 LazyCompile:*hot_seventy_five /opt/lang/lang.js:9\n"
                          "0x00007f7be8ed5d80 0x00000000000000d8 long LangJava.hot_seventy_five(long, long)\n"
                          "0X10 0X8 upper\n",
                          NULL);

    assert_string_equal(ph_perfmap_find(m, 0x7f00aa001000), "LazyCompile:*hot_seventy_five /opt/lang/lang.js:9");
    assert_string_equal(ph_perfmap_find(m, 0x7f00aa00103f), "LazyCompile:*hot_seventy_five /opt/lang/lang.js:9");
    assert_null(ph_perfmap_find(m, 0x7f00aa001040)); /* one past its end */
    assert_null(ph_perfmap_find(m, 0x7f00aa000fff)); /* one before its start */
    assert_string_equal(ph_perfmap_find(m, 0x00007f7be8ed5d80 + 0xd7), "long LangJava.hot_seventy_five(long, long)");
    assert_null(ph_perfmap_find(m, 0x00007f7be8ed5d80 + 0xd8));
    assert_string_equal(ph_perfmap_find(m, 0x17), "upper");
    assert_int_equal(ph_perfmap_get_stats(m)->entries, 3);
    assert_int_equal(ph_perfmap_get_stats(m)->bad_lines, 0);
    ph_perfmap_free(m);
}

/* Sorted whatever the order written; a reused address is named by the
 * first entry written (as perf does); an entry nested in another does not
 * hide the outer one's start. */
static void
test_order_and_reuse(void **state)
{
    (void)state;
    ph_perfmap *m = parse("3000 100 c\n1000 100 first\n1000 200 second\n2000 10 b\n", NULL);

    assert_string_equal(ph_perfmap_find(m, 0x1000), "first");
    assert_string_equal(ph_perfmap_find(m, 0x10ff), "first");
    assert_null(ph_perfmap_find(m, 0x1100)); /* the first entry ends there */
    assert_string_equal(ph_perfmap_find(m, 0x2005), "b");
    assert_string_equal(ph_perfmap_find(m, 0x30ff), "c");
    assert_null(ph_perfmap_find(m, 0x3100));
    assert_null(ph_perfmap_find(m, 0));
    assert_null(ph_perfmap_find(NULL, 0x1000));
    ph_perfmap_free(m);
}

/* Lines that are not `HEX HEX name` are skipped and counted; CRLF and a
 * NUL end a name; a size that would wrap stops at the top. */
static void
test_bad_lines(void **state)
{
    (void)state;
    static const char text[] = "zz 10 notHex\n10 yy notHex\n10 10\n10 10 \n0x 10 empty\n"
                               "11111111111111111 10 seventeen\nno spaces\n"
                               "4000 10 crlf\r\n5000 10 nul\0after\nffffffffffffff00 ffff top\n";
    ph_error_t err = NULL;
    ph_perfmap *m = ph_perfmap_parse(text, sizeof text - 1, NULL, &err);

    assert_non_null(m);
    assert_string_equal(ph_perfmap_find(m, 0x4001), "crlf");
    assert_string_equal(ph_perfmap_find(m, 0x5001), "nul");
    assert_string_equal(ph_perfmap_find(m, UINT64_MAX - 1), "top");
    assert_int_equal(ph_perfmap_get_stats(m)->entries, 3);
    assert_int_equal(ph_perfmap_get_stats(m)->bad_lines, 7);
    assert_int_equal(ph_perfmap_get_stats(m)->lines, 10);
    ph_perfmap_free(m);
}

/* At most max_bytes are read (a line cut there dropped) and max_entries
 * kept; what is left out is counted. */
static void
test_bounds(void **state)
{
    (void)state;
    const char *text = "1000 10 a\n2000 10 b\n3000 10 c\n";
    ph_perfmap_opts o = { .max_bytes = 29 }; /* "1000 10 a\n2000 10 b\n3000 10 c": its end cut */
    ph_perfmap *m = parse(text, &o);

    assert_string_equal(ph_perfmap_find(m, 0x2000), "b");
    assert_null(ph_perfmap_find(m, 0x3000));
    assert_int_equal(ph_perfmap_get_stats(m)->entries, 2);
    assert_true(ph_perfmap_get_stats(m)->cut);
    ph_perfmap_free(m);

    o = (ph_perfmap_opts){ .max_bytes = 30 }; /* exactly the text: nothing cut */
    m = parse(text, &o);
    assert_int_equal(ph_perfmap_get_stats(m)->entries, 3);
    assert_false(ph_perfmap_get_stats(m)->cut);
    ph_perfmap_free(m);

    o = (ph_perfmap_opts){ .max_entries = 2 };
    m = parse(text, &o);
    assert_int_equal(ph_perfmap_get_stats(m)->entries, 2);
    assert_int_equal(ph_perfmap_get_stats(m)->dropped, 1);
    assert_null(ph_perfmap_find(m, 0x3000));
    ph_perfmap_free(m);
}

/* The kind suffix goes on every name. */
static void
test_suffix(void **state)
{
    (void)state;
    ph_perfmap_opts o = { .suffix = "_[j]" };
    ph_perfmap *m = parse("1000 10 a\n2000 10 bb", &o);

    assert_string_equal(ph_perfmap_find(m, 0x1000), "a_[j]");
    assert_string_equal(ph_perfmap_find(m, 0x2000), "bb_[j]"); /* no line end */
    ph_perfmap_free(m);
}

/* A file: read bounded; a link, a directory, a FIFO, a missing file are
 * refused (ENOENT for the missing one). */
static void
test_open(void **state)
{
    (void)state;
    char path[400], link[400];
    ph_error_t err = NULL;
    ph_perfmap *m;
    ph_perfmap_opts o = { .max_bytes = 10 };
    FILE *f;

    snprintf(path, sizeof path, "%s/perf-1.map", test_dir);
    assert_non_null(f = fopen(path, "w"));
    fputs("0x1000 0x10 one\n2000 10 two\n", f);
    fclose(f);
    m = ph_perfmap_open(path, NULL, &err);
    assert_non_null(m);
    assert_string_equal(ph_perfmap_find(m, 0x1001), "one");
    assert_string_equal(ph_perfmap_find(m, 0x2001), "two");
    ph_perfmap_free(m);
    m = ph_perfmap_open(path, &o, &err); /* 10 bytes: not even the first line whole */
    assert_non_null(m);
    assert_int_equal(ph_perfmap_get_stats(m)->entries, 0);
    assert_true(ph_perfmap_get_stats(m)->cut);
    ph_perfmap_free(m);

    snprintf(link, sizeof link, "%s/perf-2.map", test_dir);
    assert_int_equal(symlink(path, link), 0);
    assert_null(ph_perfmap_open(link, NULL, &err));
    assert_non_null(err);
    ph_error_free(&err);
    assert_null(ph_perfmap_open(test_dir, NULL, &err));
    assert_non_null(err);
    ph_error_free(&err);
    snprintf(link, sizeof link, "%s/perf-3.map", test_dir);
    assert_int_equal(mkfifo(link, 0600), 0);
    assert_null(ph_perfmap_open(link, NULL, &err)); /* never blocks on it */
    assert_non_null(err);
    ph_error_free(&err);
    snprintf(link, sizeof link, "%s/perf-4.map", test_dir);
    assert_null(ph_perfmap_open(link, NULL, &err));
    assert_int_equal(err->errnum, ENOENT);
    ph_error_free(&err);
}

/* ceil(log2(n + 1)): the comparisons a binary search over n entries makes
 * at most. */
static size_t
log_bound(size_t n)
{
    size_t k = 0;

    while (n > 0) {
        k++;
        n >>= 1;
    }
    return k;
}

/* A map made to be slow: 200,000 entries at one start (a JIT writing the
 * same address again and again; the review's map had a million, 35 MB),
 * among others.  Every lookup compares at most log2 of the entries,
 * and names what a plain reading of the rule names: of the entries
 * starting nearest at or before the address, the first written, if it
 * covers it. */
static void
test_lookup_cost(void **state)
{
    enum { SAME = 200000, OTHER = 1000 };
    size_t cap = (size_t)(SAME + OTHER) * 40, len = 0, worst = 0, steps;
    char *text = malloc(cap);
    ph_perfmap_opts o = { .max_entries = SAME + 2 * OTHER };
    ph_perfmap *m;
    uint64_t seed = 42;

    (void)state;
    assert_non_null(text);
    /* OTHER entries 0x100 apart from 0x10000, each size 0x80, written
     * twice at every 10th (the second with another name and size), and
     * SAME entries at 0x20040 (inside f256), the first of size 0x40 */
    for (int i = 0; i < OTHER; i++) {
        len += (size_t)snprintf(text + len, cap - len, "%x 80 f%d\n", 0x10000 + 0x100 * i, i);
        if (i % 10 == 0)
            len += (size_t)snprintf(text + len, cap - len, "%x 100 again%d\n", 0x10000 + 0x100 * i, i);
        if (i == OTHER / 2)
            for (int k = 0; k < SAME; k++)
                len += (size_t)snprintf(text + len, cap - len, "20040 %x same%d\n", k == 0 ? 0x40 : 0x1000 + k, k);
    }
    m = ph_perfmap_parse(text, len, &o, NULL);
    assert_non_null(m);
    assert_int_equal(ph_perfmap_get_stats(m)->entries, SAME + OTHER + OTHER / 10);
    assert_string_equal(ph_perfmap_find(m, 0x2003f), "f256");
    assert_string_equal(ph_perfmap_find(m, 0x20040), "same0");
    assert_string_equal(ph_perfmap_find(m, 0x2007f), "same0");
    assert_null(ph_perfmap_find(m, 0x20080)); /* the first written decides: it ends there */
    assert_string_equal(ph_perfmap_find(m, 0x10000 + 0x100 * 10 + 0x7f), "f10");
    assert_null(ph_perfmap_find(m, 0x10000 + 0x100 * 10 + 0x80));
    for (int i = 0; i < 20000; i++) {
        uint64_t pc;
        const char *got;

        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        pc = 0xff00 + (seed >> 33) % (0x100 * OTHER + 0x200);
        got = ph_perfmap_find_counted(m, pc, &steps);
        if (steps > worst)
            worst = steps;
        /* the rule, read plainly */
        {
            uint64_t start = pc < 0x10000 ? 0 : pc - (pc - 0x10000) % 0x100;
            char want[32] = "";
            int n = (int)((start - 0x10000) / 0x100);

            if (pc >= 0x20040 && pc < 0x20100)
                snprintf(want, sizeof want, "%s", pc < 0x20080 ? "same0" : "");
            else if (pc >= 0x10000 && n < OTHER && pc < start + 0x80)
                snprintf(want, sizeof want, "f%d", n);
            if (want[0])
                assert_string_equal(got, want);
            else
                assert_null(got);
        }
    }
    /* a binary search over the distinct starts (OTHER + 1 of them; the
     * review's map cost a walk over every entry at that start: 200,017
     * steps here) */
    print_message("worst lookup: %zu steps, at most %zu\n", worst, log_bound(OTHER + 1));
    assert_true(worst <= log_bound(OTHER + 1));
    ph_perfmap_free(m);
    free(text);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_formats),
        cmocka_unit_test(test_order_and_reuse),
        cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_suffix),
        cmocka_unit_test(test_lookup_cost),
        cmocka_unit_test_setup_teardown(test_open, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests_name("perfmap", tests, NULL, NULL);
}
