/* test_runtimes.c - what a mode asks of the runtimes: the environment it
 * extends (ph_profile_env_extend, ph_run_env_extend) and the profile's
 * `runtimes:` key as the loader reads it. */
#include "test_util.h"

#include "ph_profile.h"
#include "ph_run_int.h"

static void
check_extend(const char *user, const char *ours, const char *want)
{
    char *got = ph_profile_env_extend(user, ours);

    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* The user's value first, ours after; a word the user has is not said
 * twice; spaces tidied. */
static void
test_env_extend(void **state)
{
    (void)state;
    check_extend(NULL, "--perf-basic-prof --x", "--perf-basic-prof --x");
    check_extend("", "--a", "--a");
    check_extend("--max-old-space-size=100", "--perf-basic-prof", "--max-old-space-size=100 --perf-basic-prof");
    check_extend("-Xmx1g -XX:+PreserveFramePointer ", "-XX:+PreserveFramePointer -XX:+DumpPerfMapAtExit",
                 "-Xmx1g -XX:+PreserveFramePointer -XX:+DumpPerfMapAtExit");
    check_extend("--perf-basic-prof-only-functions", "--perf-basic-prof", "--perf-basic-prof-only-functions --perf-basic-prof");
    check_extend("a", "  b   c ", "a b c");
}

/* In a container's environment: compose's value, else the image's, else
 * ours alone; the variable set once, where it was. */
static void
test_run_env_extend(void **state)
{
    (void)state;
    ph_kvv ext = { 0 };
    ph_error_t err = NULL;
    json_t *env = json_pack("[s, s, s]", "A=1", "NODE_OPTIONS=--user", "B=2");
    json_t *img = json_pack("[s, s]", "JAVA_TOOL_OPTIONS=-Ximage", "NODE_OPTIONS=--image");
    char *dump;

    assert_int_equal(ph_kvv_set(&ext, "NODE_OPTIONS", "--perf-basic-prof"), 0);
    assert_int_equal(ph_kvv_set(&ext, "JAVA_TOOL_OPTIONS", "-XX:+PreserveFramePointer"), 0);
    assert_int_equal(ph_kvv_set(&ext, "OTHER", "x"), 0);
    assert_int_equal(ph_run_env_extend(env, img, &ext, &err), 0);
    dump = json_dumps(env, JSON_COMPACT);
    assert_string_equal(dump, "[\"A=1\",\"NODE_OPTIONS=--user --perf-basic-prof\",\"B=2\","
                              "\"JAVA_TOOL_OPTIONS=-Ximage -XX:+PreserveFramePointer\",\"OTHER=x\"]");
    free(dump);
    json_decref(env);
    /* no image environment at all */
    env = json_array();
    assert_int_equal(ph_run_env_extend(env, NULL, &ext, &err), 0);
    assert_string_equal(json_string_value(json_array_get(env, 0)), "NODE_OPTIONS=--perf-basic-prof");
    json_decref(env);
    json_decref(img);
    ph_kvv_free(&ext);
}

static const char profile_head[] = "name: m\nwrap: [x]\nstop: {target: wrapper, signal: SIGTERM, grace: 1s}\n"
                                   "artifacts: [{glob: a}]\n";

/* PROFILE_HEAD + TEXT as test_dir/m.yaml, loaded: 0, or -1 and *ERR. */
static int
load(const char *text, ph_profile *p, ph_error_t *err)
{
    char buf[2048];

    snprintf(buf, sizeof buf, "%s%s", profile_head, text);
    return ph_profile_load(tu_write("m.yaml", buf), p, err);
}

static void
test_profile_key(void **state)
{
    (void)state;
    ph_profile p;
    ph_error_t err = NULL;

    assert_int_equal(load("runtimes:\n  environment: {NODE_OPTIONS: --a --b, X: y}\n  refresh:\n"
                          "    - {in: service, exec: [jcmd, x], wait: 5s}\n    - {exec: [sh, -c, \"{out}\"]}\n",
                          &p, &err), 0);
    assert_int_equal(p.env_extend.n, 2);
    assert_string_equal(ph_kvv_get(&p.env_extend, "NODE_OPTIONS"), "--a --b");
    assert_int_equal(p.n_refresh, 2);
    assert_true(p.refresh[0].in_service);
    assert_string_equal(p.refresh[0].exec.v[0], "jcmd");
    assert_true(p.refresh[0].wait_ns == 5000000000LL);
    assert_false(p.refresh[1].in_service); /* the profiler's, by default */
    assert_string_equal(p.refresh[1].exec.v[2], "{out}");
    ph_profile_free(&p);

    static const struct { const char *text, *fragment; } bad[] = {
        { "runtimes: [x]\n", "`runtimes` must be a mapping" },
        { "runtimes: {environment: {A: }}\n", "`runtimes.environment.A` needs a value" },
        { "runtimes: {refresh: {exec: [x]}}\n", "`runtimes.refresh` must be a list" },
        { "runtimes: {refresh: [{in: elsewhere, exec: [x]}]}\n", "`service` or `profiler`, not `elsewhere`" },
        { "runtimes: {refresh: [{in: service}]}\n", "need `exec`" },
        { "runtimes: {refresh: [{exec: [\"\"]}]}\n", "need `exec`" },
        { "runtimes: {refresh: [x]}\n", "items must be mappings" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (load(bad[i].text, &p, &err) != -1)
            fail_msg("`%s` loaded", bad[i].text);
        if (strstr(err->msg, bad[i].fragment) == NULL)
            fail_msg("`%s`: `%s` lacks `%s`", bad[i].text, err->msg, bad[i].fragment);
        ph_error_free(&err);
    }
}

/* The modes that sample JIT code turn on what Node and HotSpot offer. */
static void
test_shipped(void **state)
{
    (void)state;
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    static const char *const modes[] = { "flamegraph", "perf" };

    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);
    for (size_t i = 0; i < 2; i++) {
        ph_profile *p = ph_profiles_find(&set, modes[i]);

        assert_non_null(p);
        assert_non_null(strstr(ph_kvv_get(&p->env_extend, "NODE_OPTIONS"), "--perf-basic-prof"));
        assert_non_null(strstr(ph_kvv_get(&p->env_extend, "JAVA_TOOL_OPTIONS"), "-XX:+PreserveFramePointer"));
        assert_non_null(strstr(ph_kvv_get(&p->env_extend, "JAVA_TOOL_OPTIONS"), "-XX:+DumpPerfMapAtExit"));
        assert_int_equal(p->n_refresh, 2);
    }
    /* the sampler is HotSpot's agent too: the library LD_PRELOAD loads */
    assert_string_equal(strstr(ph_kvv_get(&ph_profiles_find(&set, "flamegraph")->env_extend, "JAVA_TOOL_OPTIONS"),
                               "-agentpath:"),
                        "-agentpath:/opt/profharness/lib/libphsampler.so");
    assert_string_equal(ph_kvv_get(&ph_profiles_find(&set, "flamegraph")->environment, "LD_PRELOAD"),
                        "/opt/profharness/lib/libphsampler.so");
    assert_null(strstr(ph_kvv_get(&ph_profiles_find(&set, "perf")->env_extend, "JAVA_TOOL_OPTIONS"), "-agentpath"));
    assert_int_equal(ph_profiles_find(&set, "strace")->env_extend.n, 0);
    ph_profiles_free(&set);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_extend),
        cmocka_unit_test(test_run_env_extend),
        cmocka_unit_test_setup_teardown(test_profile_key, tu_setup, tu_teardown),
        cmocka_unit_test(test_shipped),
    };
    return cmocka_run_group_tests_name("runtimes", tests, NULL, NULL);
}
