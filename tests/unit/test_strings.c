/* test_strings.c - the ground floor's parsers and containers
 * (harness/util/ph_strings): durations at the edges of a long long, shell
 * words at the edge of their buffer, vectors and key/value lists.  The
 * everyday cases are in test_compose.c, which loads them from YAML; these
 * are the edges, where a one-character slip goes unnoticed there.  Run
 * under the sanitizer build (`just test-sanitize`) they also prove that no
 * edge is reached through undefined behaviour. */
#include "test_util.h"

#include <limits.h>

#include "ph_strings.h"

static long long
dur(const char *s)
{
    long long ns = -42;

    if (ph_duration_parse(s, &ns) < 0)
        return -1;
    return ns;
}

static void
test_duration_units(void **state)
{
    (void)state;
    assert_true(dur("7ns") == 7);
    assert_true(dur("3us") == 3000);
    assert_true(dur("3\xc2\xb5s") == 3000);
    assert_true(dur("4ms") == 4000000);
    assert_true(dur("5s") == 5000000000LL);
    assert_true(dur("6m") == 360000000000LL);
    assert_true(dur("2h") == 7200000000000LL);
    assert_true(dur("1h1m1s1ms1us1ns") == 3661001001001LL);
    assert_true(dur("12") == 12000000000LL); /* a bare number is seconds */
    assert_true(dur("0.25") == 250000000LL);
    assert_true(dur(".5s") == 500000000LL);
    assert_true(dur("1.s") == 1000000000LL);
    assert_true(dur("0") == 0);
    /* digits past a nanosecond's worth are dropped, not rounded */
    assert_true(dur("1.0000000019s") == 1000000001LL);
    assert_true(dur("0.1234567890123456789h") == 444444440443LL);
}

static void
test_duration_refused(void **state)
{
    long long ns = 42;

    (void)state;
    assert_int_equal(ph_duration_parse(NULL, &ns), -1);
    assert_int_equal(ph_duration_parse("", &ns), -1);
    assert_int_equal(ph_duration_parse(".", &ns), -1);
    assert_int_equal(ph_duration_parse(".s", &ns), -1);
    assert_int_equal(ph_duration_parse("5x", &ns), -1);
    assert_int_equal(ph_duration_parse("5 s", &ns), -1);
    assert_int_equal(ph_duration_parse("1s5", &ns), -1); /* a bare number only alone */
    assert_int_equal(ph_duration_parse("1s 2s", &ns), -1);
    assert_int_equal(ph_duration_parse("+1s", &ns), -1);
    assert_int_equal(ph_duration_parse("-1s", &ns), -1);
    assert_true(ns == 42);
}

/* The largest duration there is, and one nanosecond more, reached by the
 * whole part, by the fraction, and by the sum of parts. */
static void
test_duration_limits(void **state)
{
    (void)state;
    assert_true(dur("9223372036854775807ns") == LLONG_MAX);
    assert_true(dur("9223372036.854775807s") == LLONG_MAX);
    assert_true(dur("9223372036854775808ns") == -1);
    assert_true(dur("92233720368547758070ns") == -1);
    assert_true(dur("9223372036.854775808s") == -1);
    assert_true(dur("9223372036.9s") == -1);
    assert_true(dur("2562047.9h") == -1);
    assert_true(dur("2562047h47m16.854775807s") == LLONG_MAX);
    assert_true(dur("2562047h47m16.854775808s") == -1);
    assert_true(dur("9223372036854775807ns1ns") == -1);
    assert_true(dur("99999999999999999999s") == -1);
}

static void
test_shell_words(void **state)
{
    ph_strv v = { 0 };
    ph_error_t err = NULL;

    (void)state;
    assert_int_equal(ph_shell_split("\ta\n b  ", &v, &err), 0);
    assert_int_equal(v.n, 2);
    assert_string_equal(v.v[0], "a");
    assert_string_equal(v.v[1], "b");
    assert_null(v.v[2]);
    ph_strv_free(&v);
    assert_null(v.v);
    assert_int_equal(v.n, 0);

    /* in double quotes a backslash escapes only " \ $ `; in single quotes nothing */
    assert_int_equal(ph_shell_split("\"\\a\\$\\`\\\\\" '\\n' \\'x", &v, &err), 0);
    assert_int_equal(v.n, 3);
    assert_string_equal(v.v[0], "\\a$`\\");
    assert_string_equal(v.v[1], "\\n");
    assert_string_equal(v.v[2], "'x");
    ph_strv_free(&v);

    /* ...and in single quotes a backslash is itself */
    assert_int_equal(ph_shell_split("'\\$' '\\\\'", &v, &err), 0);
    assert_int_equal(v.n, 2);
    assert_string_equal(v.v[0], "\\$");
    assert_string_equal(v.v[1], "\\\\");
    ph_strv_free(&v);

    /* adjacent quoted and plain parts make one word; '' alone is a word */
    assert_int_equal(ph_shell_split("a'b'\"c\"d '' \"\"", &v, &err), 0);
    assert_int_equal(v.n, 3);
    assert_string_equal(v.v[0], "abcd");
    assert_string_equal(v.v[1], "");
    assert_string_equal(v.v[2], "");
    ph_strv_free(&v);

    assert_int_equal(ph_shell_split("x \"a\\\"", &v, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_string_equal(err->msg, "unterminated \" quote");
    ph_error_free(&err);
    ph_strv_free(&v);
    assert_int_equal(ph_shell_split("x\\", &v, &err), -1);
    assert_string_equal(err->msg, "trailing backslash");
    ph_error_free(&err);
    ph_strv_free(&v);
}

/* A word fills the buffer but for its terminator; one byte more is bad
 * input, never a write past it. */
static void
test_shell_word_limit(void **state)
{
    char s[8200];
    ph_strv v = { 0 };
    ph_error_t err = NULL;

    (void)state;
    memset(s, 'w', 8191);
    strcpy(s + 8191, " 'q'");
    assert_int_equal(ph_shell_split(s, &v, &err), 0);
    assert_int_equal(v.n, 2);
    assert_int_equal(strlen(v.v[0]), 8191);
    assert_string_equal(v.v[1], "q");
    ph_strv_free(&v);

    memset(s, 'w', 8192);
    s[8192] = '\0';
    assert_int_equal(ph_shell_split(s, &v, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_string_equal(err->msg, "a word longer than 8191 bytes");
    ph_error_free(&err);
    ph_strv_free(&v);
}

static void
test_kv_lists(void **state)
{
    ph_kvv kv = { 0 };
    ph_strv v = { 0 };
    char key[8];

    (void)state;
    assert_null(ph_kvv_get(&kv, "A"));
    assert_int_equal(ph_kvv_set(&kv, "A", "1"), 0);
    assert_int_equal(ph_kvv_set(&kv, "B", NULL), 0);
    assert_int_equal(ph_kvv_set(&kv, "AB", "x"), 0);
    assert_int_equal(ph_kvv_set(&kv, "A", "2"), 0); /* replaced in place */
    assert_int_equal(kv.n, 3);
    assert_string_equal(kv.v[0].key, "A");
    assert_string_equal(kv.v[0].value, "2");
    assert_null(kv.v[1].value);
    assert_string_equal(ph_kvv_get(&kv, "A"), "2");
    assert_string_equal(ph_kvv_get(&kv, "AB"), "x");
    assert_null(ph_kvv_get(&kv, "B"));
    assert_null(ph_kvv_get(&kv, "a"));
    assert_int_equal(ph_kvv_set(&kv, "AB", NULL), 0);
    assert_null(ph_kvv_get(&kv, "AB"));
    assert_int_equal(kv.n, 3);
    ph_kvv_free(&kv);
    assert_null(kv.v);
    assert_int_equal(kv.n, 0);

    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(ph_strv_push(&v, key), 0);
        assert_int_equal(ph_kvv_set(&kv, key, key), 0);
    }
    assert_int_equal(v.n, 100);
    assert_null(v.v[100]);
    assert_string_equal(v.v[99], "k99");
    assert_string_equal(ph_kvv_get(&kv, "k57"), "k57");
    ph_strv_free(&v);
    ph_kvv_free(&kv);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration_units),
        cmocka_unit_test(test_duration_refused),
        cmocka_unit_test(test_duration_limits),
        cmocka_unit_test(test_shell_words),
        cmocka_unit_test(test_shell_word_limit),
        cmocka_unit_test(test_kv_lists),
    };
    return cmocka_run_group_tests_name("strings", tests, NULL, NULL);
}
