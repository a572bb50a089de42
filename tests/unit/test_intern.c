/* test_intern.c - the one string table (ph_intern): ids in first-seen
 * order, each string stored once and found again across table growth,
 * any byte in a string, the byte limit refusing without changing anything,
 * and the 64-bit key map beside it. */
#include "test_util.h"

#include <errno.h>
#include <stdint.h>

#include "ph_intern.h"

static void
test_ids(void **state)
{
    enum { N = 5000 }; /* past the first table of 1024 slots, several times */
    ph_intern *t = ph_intern_new(SIZE_MAX);
    char name[32];

    (void)state;
    assert_non_null(t);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            int n = snprintf(name, sizeof name, "f%d", i);
            assert_int_equal(ph_intern_add(t, name, (size_t)n), i);
        }
        assert_int_equal(ph_intern_count(t), N);
    }
    for (int i = 0; i < N; i++) {
        int n = snprintf(name, sizeof name, "f%d", i);
        assert_int_equal(ph_intern_find(t, name, (size_t)n), i);
        assert_string_equal(ph_intern_get(t, (uint32_t)i), name);
        assert_int_equal(ph_intern_len(t, (uint32_t)i), n);
    }
    /* a prefix, a NUL inside, the empty string: each its own */
    assert_int_equal(ph_intern_find(t, "f1", 1), -1);
    assert_int_equal(ph_intern_add(t, "f1\0x", 4), N);
    assert_int_equal(ph_intern_add(t, "f1\0y", 4), N + 1);
    assert_int_equal(ph_intern_add(t, "", 0), N + 2);
    assert_int_equal(ph_intern_add(t, "f1\0x", 4), N);
    assert_int_equal(ph_intern_len(t, N), 4);
    assert_int_equal(memcmp(ph_intern_get(t, N), "f1\0x", 5), 0);
    assert_null(ph_intern_get(t, N + 3));
    assert_int_equal(ph_intern_len(t, N + 3), 0);
    ph_intern_free(t);
    ph_intern_free(NULL);
}

/* MAX_BYTES counts each copy with its NUL: "abc" and "de" fill 7. */
static void
test_limit(void **state)
{
    ph_intern *t = ph_intern_new(7);

    (void)state;
    assert_int_equal(ph_intern_add(t, "abc", 3), 0);
    assert_int_equal(ph_intern_add(t, "de", 2), 1);
    errno = 0;
    assert_int_equal(ph_intern_add(t, "", 0), -1); /* its NUL is one byte too many */
    assert_int_equal(errno, E2BIG);
    errno = 0;
    assert_int_equal(ph_intern_add(t, "f", 1), -1);
    assert_int_equal(errno, E2BIG);
    assert_int_equal(ph_intern_count(t), 2);
    assert_int_equal(ph_intern_find(t, "f", 1), -1);
    assert_int_equal(ph_intern_add(t, "abc", 3), 0); /* known: still found */
    ph_intern_free(t);
}

static void
test_u64map(void **state)
{
    ph_u64map m = { 0 };

    (void)state;
    assert_int_equal(ph_u64map_get(&m, 7), UINT32_MAX);
    for (uint64_t k = 0; k < 3000; k++)
        assert_int_equal(ph_u64map_put(&m, k * 0x9E3779B97F4A7C15ull, (uint32_t)k), 0);
    assert_int_equal(ph_u64map_put(&m, 0, 42), 0); /* replaced, not added */
    assert_int_equal(m.n, 3000);
    assert_int_equal(ph_u64map_get(&m, 0), 42);
    for (uint64_t k = 1; k < 3000; k++)
        assert_int_equal(ph_u64map_get(&m, k * 0x9E3779B97F4A7C15ull), k);
    assert_int_equal(ph_u64map_get(&m, 1), UINT32_MAX);
    ph_u64map_free(&m);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_u64map),
    };
    return cmocka_run_group_tests_name("intern", tests, NULL, NULL);
}
