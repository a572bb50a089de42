/* test_profile.c - mode files: the shipped profiles load with the stop
 * protocol each mode needs, collection limits parse, and bad files are
 * refused with file:line:col. */
#include "test_util.h"

#include "ph_profile.h"

static const char *
data_path(const char *rel)
{
    static char path[1024];
    const char *root = getenv("PH_TEST_DATA");

    snprintf(path, sizeof path, "%s/profiles/%s", root ? root : "tests/unit/data", rel);
    return path;
}

#define NS(s) ((long long)(s) * 1000000000LL)

static void
assert_strv(const ph_strv *v, const char *const *want, size_t n)
{
    assert_int_equal(v->n, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(v->v[i], want[i]);
    assert_null(v->v[n]);
}
#define ASSERT_STRV(v, ...)                                                  \
    do {                                                                     \
        static const char *const _w[] = { __VA_ARGS__ };                     \
        assert_strv((v), _w, sizeof _w / sizeof _w[0]);                      \
    } while (0)

/* The three shipped modes, flag for flag: these are the flags of the
 * setup profharness replaces, and the stop protocol each tool needs. */
static void
test_shipped_exact(void **state)
{
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    ph_profile *p;

    (void)state;
    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);
    for (size_t i = 1; i < set.n; i++)
        assert_true(strcmp(set.v[i - 1].name, set.v[i].name) < 0);

    p = ph_profiles_find(&set, "strace");
    assert_non_null(p);
    ASSERT_STRV(&p->wrap, "strace", "-f", "-tt", "-T", "-e", "trace=all", "-s", "256", "-o", "{out}/strace.log", "--");
    ASSERT_STRV(&p->cap_add, "SYS_PTRACE");
    ASSERT_STRV(&p->security_opt, "seccomp=unconfined");
    ASSERT_STRV(&p->packages, "strace");
    assert_string_equal(p->stop_target, "tracee");
    assert_string_equal(p->stop_signal, "SIGTERM");
    assert_true(p->stop_grace_ns == NS(30));
    ASSERT_STRV(&p->escalate, "SIGKILL");
    assert_true(p->escalate_grace_ns == NS(10));
    assert_int_equal(p->n_artifacts, 1);
    assert_string_equal(p->artifacts[0].glob, "strace.log*");
    assert_string_equal(p->artifacts[0].latest, "strace.log");
    assert_string_equal(p->artifacts[0].kind, "strace");
    assert_string_equal(p->report, "strace");
    assert_non_null(p->description);
    assert_null(strchr(p->description, '\n'));

    p = ph_profiles_find(&set, "massif");
    assert_non_null(p);
    ASSERT_STRV(&p->wrap, "env", "-u", "HOSTNAME", "-u", "HOST", "-u", "USER", "-u", "LOGNAME", "valgrind",
                "--tool=massif", "--soname-synonyms=somalloc=NONE", "--vgdb-prefix=/tmp/ph-vgdb", "--massif-out-file={out}/massif.out", "--time-unit=B",
                "--detailed-freq=10", "--max-snapshots=100", "--threshold=0.5");
    ASSERT_STRV(&p->cap_add, "SYS_PTRACE");
    ASSERT_STRV(&p->security_opt, "seccomp=unconfined");
    ASSERT_STRV(&p->packages, "valgrind");
    assert_string_equal(p->stop_target, "wrapper");
    assert_string_equal(p->stop_signal, "SIGTERM");
    assert_true(p->stop_grace_ns == NS(120));
    ASSERT_STRV(&p->escalate, "SIGUSR2", "SIGKILL");
    assert_true(p->escalate_grace_ns == NS(60));
    assert_int_equal(p->n_artifacts, 1);
    assert_string_equal(p->artifacts[0].glob, "massif.out*");
    assert_string_equal(p->artifacts[0].latest, "massif.out");
    assert_string_equal(p->artifacts[0].kind, "massif");
    assert_string_equal(p->report, "massif");

    p = ph_profiles_find(&set, "callgrind");
    assert_non_null(p);
    ASSERT_STRV(&p->wrap, "env", "-u", "HOSTNAME", "-u", "HOST", "-u", "USER", "-u", "LOGNAME", "valgrind",
                "--tool=callgrind", "--vgdb-prefix=/tmp/ph-vgdb", "--callgrind-out-file={out}/callgrind.out",
                "--cache-sim=yes", "--branch-sim=yes", "--collect-jumps=yes", "--collect-systime=yes",
                "--dump-instr=yes", "--dump-line=yes", "--compress-strings=no");
    ASSERT_STRV(&p->cap_add, "SYS_PTRACE");
    ASSERT_STRV(&p->packages, "valgrind");
    assert_string_equal(p->stop_target, "wrapper");
    assert_string_equal(p->stop_signal, "SIGTERM");
    assert_true(p->stop_grace_ns == NS(300));
    ASSERT_STRV(&p->escalate, "SIGUSR2", "SIGKILL");
    assert_true(p->escalate_grace_ns == NS(60));
    assert_string_equal(p->artifacts[0].glob, "callgrind.out*");
    assert_string_equal(p->artifacts[0].latest, "callgrind.out");
    assert_string_equal(p->artifacts[0].kind, "callgrind");
    assert_string_equal(p->report, "callgrind");
    ph_profiles_free(&set);
}

static void
test_fixture_full_profile(void **state)
{
    ph_profile p;
    ph_error_t err = NULL;
    char *x;

    (void)state;
    assert_int_equal(ph_profile_load(data_path("good/alpha.yaml"), &p, &err), 0);
    assert_string_equal(p.name, "alpha");
    assert_string_equal(p.path, data_path("good/alpha.yaml"));
    assert_string_equal(p.description, "a test mode that wraps with env and sleeps");
    ASSERT_STRV(&p.wrap, "env", "OUT={out}", "--", "{unknown}");
    assert_int_equal(p.environment.n, 2);
    assert_string_equal(ph_kvv_get(&p.environment, "ALPHA_DIR"), "{out}/{service}");
    ASSERT_STRV(&p.packages, "coreutils", "procps");
    assert_string_equal(p.stop_target, "tracee");
    assert_string_equal(p.stop_signal, "SIGINT");
    assert_true(p.stop_grace_ns == NS(90));
    ASSERT_STRV(&p.escalate, "SIGUSR2", "SIGQUIT", "SIGKILL");
    assert_true(p.escalate_grace_ns == 500000000LL);
    assert_int_equal(p.n_artifacts, 2);
    assert_string_equal(p.artifacts[0].glob, "alpha-*.log");
    assert_string_equal(p.artifacts[0].latest, "alpha.log");
    assert_string_equal(p.artifacts[0].kind, "text");
    assert_string_equal(p.artifacts[1].glob, "*.dat");
    assert_null(p.artifacts[1].latest);
    assert_null(p.artifacts[1].kind);
    assert_string_equal(p.report, "strace");
    assert_true(p.collect.max_bytes == 512ull << 20);
    assert_true(p.collect.max_entries == 5000);
    assert_true(p.collect.min_free_bytes == 2ull << 30);
    x = ph_profile_expand(p.wrap.v[1], "/opt/profiling/api/r7", "api", "alpha", "r7");
    assert_string_equal(x, "OUT=/opt/profiling/api/r7");
    free(x);
    x = ph_profile_expand(p.wrap.v[3], "/o", "api", "alpha", "r7");
    assert_string_equal(x, "{unknown}");
    free(x);
    x = ph_profile_expand("{mode} run {run_id} of {service} in {out}{out} {out", "/o", "api", "alpha", "r7");
    assert_string_equal(x, "alpha run r7 of api in /o/o {out");
    free(x);
    x = ph_profile_expand("{service}", "/o", NULL, "m", "r");
    assert_string_equal(x, "");
    free(x);
    ph_profile_free(&p);

    /* Defaults: stop the wrapper with SIGTERM, 30 s, then SIGKILL 10 s later. */
    assert_int_equal(ph_profile_load(data_path("good/beta.yaml"), &p, &err), 0);
    assert_string_equal(p.stop_target, "wrapper");
    assert_string_equal(p.stop_signal, "SIGTERM");
    assert_true(p.stop_grace_ns == NS(30));
    ASSERT_STRV(&p.escalate, "SIGKILL");
    assert_true(p.escalate_grace_ns == NS(10));
    assert_int_equal(p.n_artifacts, 0);
    assert_null(p.report);
    assert_null(p.description);
    /* No `collect:`: every limit takes the extractor's default. */
    assert_true(p.collect.max_bytes == 0 && p.collect.max_entries == 0 && p.collect.min_free_bytes == 0);
    ph_profile_free(&p);
}

static void
test_fixture_dirs(void **state)
{
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    char want[1200];

    (void)state;
    /* README.txt is not a profile. */
    assert_int_equal(ph_profiles_load_dir(data_path("good"), &set, &err), 0);
    assert_int_equal(set.n, 2);
    assert_string_equal(set.v[0].name, "alpha");
    assert_string_equal(set.v[1].name, "beta");
    ph_profiles_free(&set);
    ph_profiles_free(&set); /* twice is harmless */
    /* One bad file fails the whole load, and the error names it. */
    assert_int_equal(ph_profiles_load_dir(data_path("onebad"), &set, &err), -1);
    assert_int_equal(set.n, 0);
    assert_null(set.v);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    snprintf(want, sizeof want, "%s/gamma.yaml:4:11: `stop.target` must be `wrapper` or `tracee`, not `parent`",
             data_path("onebad"));
    assert_string_equal(err->msg, want);
    ph_error_free(&err);
    /* An empty directory is an error too (and must not leak). */
    assert_int_equal(ph_profiles_load_dir(test_dir, &set, &err), -1);
    assert_non_null(strstr(err->msg, "no profiles"));
    ph_error_free(&err);
}

static void
test_fixture_bad_profiles(void **state)
{
    static const struct {
        const char *file, *fragment;
        int line, col;
    } cases[] = {
        { "badname.yaml", "`name: other` must match the file name `badname`", 1, 7 },
        { "badtarget.yaml", "`stop.target` must be `wrapper` or `tracee`, not `child`", 4, 11 },
        { "badsignal.yaml", "`stop.signal`: `SIGFOO` is not a signal", 4, 11 },
        { "badescalate.yaml", "`stop.escalate`: `NOPE` is not a signal", 4, 23 },
        { "badduration.yaml", "`stop.grace`: `forever` is not a duration", 4, 10 },
        { "noglob.yaml", "an artifact needs `glob`", 4, 5 },
        { "globescape.yaml", "`glob` must be relative to the output directory", 4, 11 },
        { "artifactlist.yaml", "`artifacts` must be a list", 3, 12 },
        { "wrapstring.yaml", "`wrap` must be a list, not a scalar", 2, 7 },
        { "wrapmap.yaml", "items of `wrap` must be strings, not a mapping", 2, 16 },
        { "nowrap.yaml", "a profile needs `wrap:`", 1, 1 },
        { "emptywrap.yaml", "`wrap` and `environment` are both empty", 1, 1 },
        { "malformed.yaml", "did not find expected ',' or ']'", 3, 1 },
        { "dupkey.yaml", "duplicate key `grace` (first at line 4)", 5, 3 },
        { "envnull.yaml", "`environment.FROM_NOWHERE` needs a value", 3, 14 },
        { "badcollect.yaml", "`collect.max_bytes`: `16G` is not a size for `max_bytes`", 4, 14 },
        { "collectlist.yaml", "`collect` must be a mapping", 3, 10 },
        { "collectzero.yaml", "`collect.max_entries`: `max_entries` must be more than 0", 3, 41 },
        { "collectmap.yaml", "`collect.min_free` must be a string, not a mapping", 4, 13 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rel[256], where[1200];
        ph_profile p;
        ph_error_t err = NULL;
        const char *path;

        snprintf(rel, sizeof rel, "bad/%s", cases[i].file);
        path = data_path(rel);
        if (ph_profile_load(path, &p, &err) != -1)
            fail_msg("%s loaded", cases[i].file);
        assert_non_null(err);
        assert_int_equal(err->status, PH_EXIT_USAGE);
        assert_null(p.name); /* freed and cleared */
        snprintf(where, sizeof where, "%s:%d:%d: ", path, cases[i].line, cases[i].col);
        if (strncmp(err->msg, where, strlen(where)) != 0 || strstr(err->msg, cases[i].fragment) == NULL)
            fail_msg("%s: error `%s` does not start with `%s` or lacks `%s`", cases[i].file, err->msg, where,
                     cases[i].fragment);
        ph_error_free(&err);
    }
}


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
    x = ph_profile_expand(p->wrap.v[12], "/opt/profiling/front", "front", "callgrind", "r1");
    assert_string_equal(x, "--callgrind-out-file=/opt/profiling/front/callgrind.out");
    free(x);
    /* No profile asks for more than ptrace: least privilege. */
    for (size_t i = 0; i < set.n; i++)
        for (size_t j = 0; j < set.v[i].cap_add.n; j++)
            assert_string_equal(set.v[i].cap_add.v[j], "SYS_PTRACE");
    assert_null(ph_profiles_find(&set, "nope"));
    ph_profiles_free(&set);
}

/* The modes that join a running Node through its inspector (flamegraph,
 * wall): each in the service's network namespace (the inspector listens
 * on its loopback), each refusing, before attaching, a node whose
 * inspector is the user's or that takes no SIGUSR1, a plain one not. */
static void
test_shipped_node_attach(void **state)
{
    static const char *const modes[] = { "flamegraph", "wall" };
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    ph_strv env = { 0 }, inspect_env = { 0 };
    char *kv[] = { "NODE_OPTIONS=--max-old-space-size=512 --inspect" };

    (void)state;
    inspect_env.v = kv;
    inspect_env.n = 1;
    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        const ph_profile *p = ph_profiles_find(&set, modes[i]);
        const ph_profile_unnamed *u;

        assert_non_null(p);
        assert_true(p->attach.network_service);
        assert_null(ph_profile_unnamed_find(p, PH_UNNAMED_ATTACH, "node", "node /srv/server.js", &env));
        assert_non_null(u = ph_profile_unnamed_find(p, PH_UNNAMED_ATTACH, "node", "node --inspect /srv/server.js", &env));
        assert_non_null(strstr(u->why, "inspector"));
        assert_non_null(ph_profile_unnamed_find(p, PH_UNNAMED_ATTACH, "nodejs", "nodejs --disable-sigusr1 a.js", &env));
        assert_non_null(ph_profile_unnamed_find(p, PH_UNNAMED_ATTACH, "node", "node a.js", &inspect_env));
    }
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

/* `collect:` limits: sizes with units, `unlimited`, 0 free meaning
 * "keep nothing"; unknown keys warn like elsewhere. */
static void
test_collect_limits(void **state)
{
    ph_profile p;
    ph_error_t err = NULL;
    const char *path, *out;

    (void)state;
    path = tu_write("m.yaml", "name: m\nwrap: [x]\ncollect:\n  max_bytes: unlimited\n  max_entries: \"1000\"\n"
                              "  min_free: 0\n  max_files: 3\n");
    tu_capture_begin();
    assert_int_equal(ph_profile_load(path, &p, &err), 0);
    out = tu_capture_end();
    assert_true(p.collect.max_bytes == PH_TAR_NO_LIMIT);
    assert_true(p.collect.max_entries == 1000);
    assert_true(p.collect.min_free_bytes == PH_TAR_NO_LIMIT);
    assert_non_null(strstr(out, ":7: unknown key `collect.max_files`"));
    ph_profile_free(&p);
    expect_bad("m.yaml", "name: m\nwrap: [x]\ncollect:\n  max_bytes: 1.5GiB\n", "`1.5GiB` is not a size", 4, 14);
    expect_bad("m.yaml", "name: m\nwrap: [x]\ncollect:\n  max_entries: 10k\n", "is not a count", 4, 16);
    expect_bad("m.yaml", "name: m\nwrap: [x]\ncollect: 16GiB\n", "`collect` must be a mapping", 3, 10);
    expect_bad("m.yaml", "name: m\nwrap: [x]\ncollect:\n  max_bytes: 99999999999TiB\n", "too large", 4, 14);
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
        cmocka_unit_test(test_shipped_node_attach),
        cmocka_unit_test(test_shipped_exact),
        cmocka_unit_test(test_fixture_full_profile),
        cmocka_unit_test(test_fixture_dirs),
        cmocka_unit_test(test_fixture_bad_profiles),
        cmocka_unit_test(test_bad_profiles),
        cmocka_unit_test(test_collect_limits),
        cmocka_unit_test(test_unknown_key_and_dir_errors),
    };
    return cmocka_run_group_tests_name("profile", tests, tu_setup, tu_teardown);
}
