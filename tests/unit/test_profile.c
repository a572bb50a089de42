/* test_profile.c - mode files: the shipped profiles load with the stop
 * protocol each mode needs, and bad files are refused with file:line:col. */
#include "test_util.h"

#include "ph_profile.h"


static void
test_shipped_profiles(void **state)
{
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    ph_profile *p;
    char *x;

    (void)state;
    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);
    assert_true(set.n >= 3);
    p = ph_profiles_find(&set, "strace");
    assert_non_null(p);
    assert_string_equal(p->stop_target, "tracee");
    assert_string_equal(p->stop_signal, "SIGTERM");
    assert_string_equal(p->wrap.v[0], "strace");
    assert_string_equal(p->cap_add.v[0], "SYS_PTRACE");
    assert_string_equal(p->artifacts[0].latest, "strace.log");
    p = ph_profiles_find(&set, "massif");
    assert_non_null(p);
    assert_string_equal(p->stop_target, "wrapper");
    assert_int_equal(p->escalate.n, 2);
    assert_string_equal(p->escalate.v[0], "SIGUSR2");
    assert_string_equal(p->escalate.v[1], "SIGKILL");
    p = ph_profiles_find(&set, "callgrind");
    assert_non_null(p);
    assert_true(p->stop_grace_ns >= 120LL * 1000000000LL);
    x = ph_profile_expand(p->wrap.v[2], "/opt/profiling/front", "front", "callgrind", "r1");
    assert_string_equal(x, "--callgrind-out-file=/opt/profiling/front/callgrind.out");
    free(x);
    /* No profile asks for more than ptrace: least privilege. */
    for (size_t i = 0; i < set.n; i++)
        for (size_t j = 0; j < set.v[i].cap_add.n; j++)
            assert_string_equal(set.v[i].cap_add.v[j], "SYS_PTRACE");
    assert_null(ph_profiles_find(&set, "nope"));
    ph_profiles_free(&set);
}

static void
expect_bad(const char *file, const char *yaml, const char *fragment, int line, int col)
{
    ph_profile p;
    ph_error_t err = NULL;
    const char *path = tu_write(file, yaml);
    char where[600];

    assert_int_equal(ph_profile_load(path, &p, &err), -1);
    assert_non_null(err);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    snprintf(where, sizeof where, "%s:%d:%d:", path, line, col);
    if (strstr(err->msg, where) == NULL || strstr(err->msg, fragment) == NULL)
        fail_msg("error `%s` lacks `%s` or `%s`", err->msg, where, fragment);
    ph_error_free(&err);
}

static void
test_bad_profiles(void **state)
{
    (void)state;
    expect_bad("m.yaml", "name: other\nwrap: [x]\n", "must match the file name `m`", 1, 7);
    expect_bad("m.yaml", "name: m\nwrap: x\n", "`wrap` must be a list", 2, 7);
    expect_bad("m.yaml", "name: m\nwrap: [x]\nstop:\n  target: child\n", "`wrapper` or `tracee`", 4, 11);
    expect_bad("m.yaml", "name: m\nwrap: [x]\nstop:\n  signal: SIGFOO\n", "not a signal", 4, 11);
    expect_bad("m.yaml", "name: m\nwrap: [x]\nstop:\n  grace: forever\n", "not a duration", 4, 10);
    expect_bad("m.yaml", "name: m\nwrap: [x]\nartifacts:\n  - {latest: x}\n", "needs `glob`", 4, 5);
    expect_bad("m.yaml", "name: m\n", "needs `wrap:`", 1, 1);
    expect_bad("m.yaml", "name: m\nwrap: [x\n", "", 3, 1);
}

static void
test_unknown_key_and_dir_errors(void **state)
{
    ph_profile p;
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    const char *path, *out;
    char want[600];

    (void)state;
    path = tu_write("ok.yaml", "name: ok\nwrap: [x]\nsignal: TERM\n");
    tu_capture_begin();
    assert_int_equal(ph_profile_load(path, &p, &err), 0);
    out = tu_capture_end();
    snprintf(want, sizeof want, "%s:3: unknown key `signal`", path);
    assert_non_null(strstr(out, want));
    assert_string_equal(p.stop_signal, "SIGTERM"); /* the default, not the misplaced key */
    ph_profile_free(&p);
    assert_int_equal(ph_profiles_load_dir("/nonexistent-profiles", &set, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_profiles),
        cmocka_unit_test(test_bad_profiles),
        cmocka_unit_test(test_unknown_key_and_dir_errors),
    };
    return cmocka_run_group_tests_name("profile", tests, tu_setup, tu_teardown);
}
