/* test_sampler_jit.c - the sampler names JIT code from the process's own
 * perf map (/tmp/perf-<pid>.map, through ph_perfmap): the frames of code
 * in anonymous memory are the map's names marked `_[j]`, also when the
 * map appears after a snapshot named them [unknown] (the map is read
 * again when it changed, and what was named without it is forgotten);
 * with no map they stay [unknown]+0xADDR.  Workload:
 * tests/unit/helpers/sampler_jit.c. */
#include "sampler_test_util.h"

#define JIT "build/tests/helpers/sampler_jit"

/* Run the JIT workload WHEN for SECS at 250 Hz, snapshots every second;
 * its last snapshot's folded text (NULL when it is not x86-64). */
static const char *
run_jit(const char *when, const char *secs)
{
    char *args[] = { (char *)when, (char *)secs, NULL }, path[64];
    run_opts o = { .hz = "250", .interval = "1", .prog = JIT };
    pid_t p = start_opts(&o, args);
    int st = finish(p);

    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)p);
    unlink(path);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
        return NULL;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return newest("stacks-");
}

static void
test_named_from_the_map(void **state)
{
    double total, named;
    const char *f;

    (void)state;
    if ((f = run_jit("early", "1.5")) == NULL)
        skip();
    named = samples_with(f, ";jit_spin(long)_[j]", &total, NULL);
    if (total < 100 || named / total < 0.8)
        fail_msg("%.0f of %.0f samples in jit_spin(long)_[j]:\n%s", named, total, f);
    assert_null(strstr(f, "[unknown]+0x"));
}

/* Named [unknown] in the first snapshots, then the map appears: the last
 * snapshot (the whole run) names every sample of the code from it. */
static void
test_map_read_again_when_it_changes(void **state)
{
    double total, named;
    const char *f;

    (void)state;
    if ((f = run_jit("late", "3")) == NULL)
        skip();
    named = samples_with(f, ";jit_spin(long)_[j]", &total, NULL);
    if (total < 200 || named / total < 0.8 || strstr(f, "[unknown]+0x") != NULL)
        fail_msg("%.0f of %.0f samples in jit_spin(long)_[j]:\n%s", named, total, f);
    /* the earlier snapshots had no map to name it from */
    assert_non_null(strstr(read_snapshot("stacks-", 1), "[unknown]+0x"));
}

/* No map: the code stays an address, never a wrong name. */
static void
test_no_map_unknown(void **state)
{
    const char *f;

    (void)state;
    if ((f = run_jit("none", "1")) == NULL)
        skip();
    assert_non_null(strstr(f, "[unknown]+0x"));
    assert_null(strstr(f, "_[j]"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_named_from_the_map, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_map_read_again_when_it_changes, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_no_map_unknown, setup, tu_teardown),
    };
    return cmocka_run_group_tests_name("sampler_jit", tests, NULL, NULL);
}
