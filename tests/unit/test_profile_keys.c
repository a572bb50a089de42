/* test_profile_keys.c - where a mode can run and what runs beside and
 * after it (ph_profile_keys.c): package names per package manager, the
 * tools tree, the C library, attach and convert; the shipped modes say
 * what the issue asks of them; bad files are refused at file:line:col. */
#include "test_util.h"

#include "ph_profile.h"

static const char *
data_path(const char *rel)
{
    static char path[1024];
    const char *root = getenv("PH_TEST_DATA");

    snprintf(path, sizeof path, "%s/profiles/keys/%s", root ? root : "tests/unit/data", rel);
    return path;
}

static void
assert_strv(const ph_strv *v, const char *const *want, size_t n)
{
    assert_int_equal(v->n, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(v->v[i], want[i]);
}
#define ASSERT_STRV(v, ...)                                                  \
    do {                                                                     \
        static const char *const _w[] = { __VA_ARGS__ };                     \
        assert_strv((v), _w, sizeof _w / sizeof _w[0]);                      \
    } while (0)

static void
test_every_key(void **state)
{
    ph_profile p;
    ph_error_t err = NULL;

    (void)state;
    tu_capture_begin();
    assert_int_equal(ph_profile_load(data_path("good/gamma.yaml"), &p, &err), 0);
    /* A package manager it does not know is a warning naming the line. */
    assert_non_null(strstr(tu_capture_end(), "gamma.yaml:4: unknown package manager `packages.zypper`"));
    ASSERT_STRV(&p.packages, "tracer-deb");
    ASSERT_STRV(&p.packages_apk, "tracer-alpine", "extra");
    ASSERT_STRV(&p.packages_dnf, "tracer-rpm");
    ASSERT_STRV(ph_profile_packages(&p, "apt"), "tracer-deb");
    ASSERT_STRV(ph_profile_packages(&p, "apk"), "tracer-alpine", "extra");
    ASSERT_STRV(ph_profile_packages(&p, "dnf"), "tracer-rpm");
    ASSERT_STRV(ph_profile_packages(&p, "microdnf"), "tracer-rpm");
    ASSERT_STRV(ph_profile_packages(&p, "yum"), "tracer-rpm");
    assert_null(ph_profile_packages(&p, "zypper"));
    assert_null(ph_profile_packages(&p, "none"));
    assert_null(ph_profile_packages(&p, NULL));
    assert_true(p.has_tools);
    ASSERT_STRV(&p.tools, "tracer", "helper");
    ASSERT_STRV(&p.libc, "glibc", "musl");
    assert_string_equal(p.limits, "only where tracers trace");
    ASSERT_STRV(&p.cap_add_if_known, "PERFMON", "SYSLOG");
    ASSERT_STRV(&p.convert.command, "perf", "script", "-i", "{out}/perf.data");
    assert_string_equal(p.convert.collapse, "perf");
    ASSERT_STRV(&p.attach.command, "tracer", "-p", "{pids}", "-o", "{out}/t.log");
    assert_null(p.attach.unsupported);
    ASSERT_STRV(&p.attach.cap_add, "SYS_PTRACE");
    ASSERT_STRV(&p.attach.cap_add_if_known, "PERFMON");
    ASSERT_STRV(&p.attach.security_opt, "seccomp=unconfined");
    assert_string_equal(p.attach.signal, "SIGUSR1");
    assert_string_equal(p.attach.copy_mapped, "symfs");
    assert_true(p.attach.network_service); /* `network: service`: the service's namespace */
    ASSERT_STRV(&p.attach.convert.command, "perf", "script", "--symfs", "{out}/symfs");
    assert_string_equal(p.attach.convert.collapse, "perf");
    ph_profile_free(&p);
    assert_null(p.attach.signal);
    assert_int_equal(p.tools.n, 0);
}

static void
test_defaults(void **state)
{
    ph_profile p;
    ph_error_t err = NULL;

    (void)state;
    assert_int_equal(ph_profile_load(data_path("good/delta.yaml"), &p, &err), 0);
    /* The list form is apt's, as it always was; the others are empty. */
    ASSERT_STRV(&p.packages, "one", "two");
    assert_int_equal(ph_profile_packages(&p, "apk")->n, 0);
    assert_int_equal(ph_profile_packages(&p, "dnf")->n, 0);
    /* No `tools`: the mode needs a package manager. */
    assert_false(p.has_tools);
    assert_int_equal(p.libc.n, 0);
    assert_null(p.limits);
    assert_null(p.swarm_unsupported); /* no `swarm:`: a task runs it */
    assert_int_equal(p.convert.command.n, 0);
    /* {pids} may sit inside an argument; detaching is SIGINT by default. */
    ASSERT_STRV(&p.attach.command, "tracer", "-p{pids}");
    assert_string_equal(p.attach.signal, "SIGINT");
    assert_null(p.attach.copy_mapped);
    assert_false(p.attach.network_service); /* no network by default */
    ph_profile_free(&p);

    assert_int_equal(ph_profile_load(data_path("good/epsilon.yaml"), &p, &err), 0);
    assert_true(p.has_tools); /* `tools: []`: nothing needed from the tree */
    assert_int_equal(p.tools.n, 0);
    assert_int_equal(p.attach.command.n, 0);
    assert_string_equal(p.attach.unsupported, "it loads at start");
    assert_null(p.attach.signal);
    assert_string_equal(p.swarm_unsupported, "no task can");
    ph_profile_free(&p);
}

/* The shipped modes: which attach and how, which run in any image. */
static void
test_shipped(void **state)
{
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    ph_profile *p;

    (void)state;
    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);

    p = ph_profiles_find(&set, "strace");
    assert_non_null(p);
    ASSERT_STRV(&p->packages, "strace");
    ASSERT_STRV(&p->packages_apk, "strace");
    ASSERT_STRV(&p->packages_dnf, "strace");
    assert_true(p->has_tools);
    ASSERT_STRV(&p->tools, "strace");
    assert_int_equal(p->libc.n, 0);
    ASSERT_STRV(&p->attach.command, "strace", "-f", "-tt", "-T", "-e", "trace=all", "-s", "256", "-o",
                "{out}/strace.log", "-p", "{pids}");
    ASSERT_STRV(&p->attach.cap_add, "SYS_PTRACE");
    assert_int_equal(p->attach.security_opt.n, 0); /* the default seccomp profile allows ptrace with the cap */
    assert_string_equal(p->attach.signal, "SIGINT");

    p = ph_profiles_find(&set, "perf");
    assert_non_null(p);
    ASSERT_STRV(&p->wrap, "perf", "--buildid-dir", "{out}/perf.buildid", "record", "--buildid-all", "-g", "-F",
                "499", "-o", "{out}/perf.data", "--");
    assert_int_equal(p->cap_add.n, 0); /* never SYS_ADMIN by default */
    ASSERT_STRV(&p->cap_add_if_known, "PERFMON", "SYSLOG");
    ASSERT_STRV(&p->security_opt, "seccomp=unconfined");
    ASSERT_STRV(&p->packages, "linux-perf");
    ASSERT_STRV(&p->packages_apk, "perf");
    ASSERT_STRV(&p->packages_dnf, "perf");
    ASSERT_STRV(&p->tools, "perf");
    assert_string_equal(p->stop_target, "tracee");
    ASSERT_STRV(&p->convert.command, "perf", "--buildid-dir", "{out}/perf.buildid", "script", "--no-inline", "--force",
                "-i", "{out}/perf.data");
    assert_string_equal(p->convert.collapse, "perf");
    /* a file perf has no copy of (no build-id) goes to symfs/, and perf
     * script reads it there with the run's cache as symfs/.debug */
    assert_string_equal(p->convert.symfs, "symfs");
    assert_string_equal(p->convert.symfs_command.v[0], "sh");
    assert_null(p->attach.convert.symfs);
    ASSERT_STRV(&p->attach.command, "perf", "record", "-g", "-F", "499", "-o", "{out}/perf.data", "-p", "{pids}");
    ASSERT_STRV(&p->attach.cap_add, "SYS_PTRACE");
    assert_string_equal(p->attach.signal, "SIGINT");
    assert_string_equal(p->attach.copy_mapped, "symfs");
    assert_null(p->attach.ready); /* perf says nothing as it starts: up a second later is joined */
    /* perf cannot record in a Swarm task (no seccomp=unconfined there) */
    assert_non_null(strstr(p->swarm_unsupported, "seccomp"));
    ASSERT_STRV(&p->attach.convert.command, "perf", "script", "--force", "--symfs", "{out}/symfs", "-i",
                "{out}/perf.data");

    /* valgrind cannot join a running process, runs from the tree with
     * glibc's or musl's loader, and each says why. */
    for (int i = 0; i < 2; i++) {
        p = ph_profiles_find(&set, i ? "callgrind" : "massif");
        assert_non_null(p);
        assert_int_equal(p->attach.command.n, 0);
        assert_non_null(strstr(p->attach.unsupported, "valgrind must start the process"));
        assert_true(p->has_tools);
        ASSERT_STRV(&p->tools, "env", "valgrind", "vgdb");
        ASSERT_STRV(&p->tools_libc, "glibc", "musl");
        assert_non_null(strstr(p->limits, "static programs only"));
        ASSERT_STRV(&p->packages_apk, "valgrind");
    }
    /* the sampler's modes: glibc's build or musl's, from the tools volume
     * (nothing from apk: the library is ours) */
    for (int i = 0; i < 3; i++) {
        p = ph_profiles_find(&set, i == 0 ? "flamegraph" : i == 1 ? "wall" : "heap");
        assert_non_null(p);
        assert_true(p->has_tools);
        assert_int_equal(p->tools.n, 0);
        ASSERT_STRV(&p->libc, "glibc", "musl");
        assert_int_equal(p->packages_apk.n, 0);
        if (i == 2) {
            assert_non_null(p->attach.unsupported); /* heap: only from the start */
            continue;
        }
        /* flamegraph and wall join a running JVM (its agent), flamegraph
         * anything else through perf, on their own clocks */
        assert_null(p->attach.unsupported);
        assert_string_equal(p->attach.command.v[0], "/opt/profharness/bin/ph-attach-sampler");
        assert_string_equal(p->attach.command.v[2], "{pids}");
        assert_string_equal(p->attach.command.v[4], i ? "wall" : "cpu");
        ASSERT_STRV(&p->attach.cap_add, "SYS_PTRACE");
        /* what each of its joiners says once in (attach waits for it) */
        assert_string_equal(p->attach.ready, "ph-attach: joined");
    }
    ph_profiles_free(&set);
}

static void
test_bad(void **state)
{
    static const struct {
        const char *file, *fragment;
        int line, col;
    } cases[] = {
        { "nopids.yaml", "`attach.command` must name the service's processes with `{pids}`", 4, 3 },
        { "both.yaml", "`attach` has a `command` and says it is `unsupported`: one or the other", 4, 3 },
        { "attachempty.yaml", "`attach` needs `command` (how to join a running service) or `unsupported`", 3, 9 },
        { "attachlist.yaml", "`attach` must be a mapping", 3, 9 },
        { "nocollapse.yaml", "`convert` needs `collapse`", 4, 3 },
        { "badcollapse.yaml", "`convert.collapse`: no collapser `dtrace` (there is: perf)", 3, 46 },
        { "nocommand.yaml", "`convert` needs `command`", 3, 10 },
        { "badlibc.yaml", "`libc`: `bionic` is not a C library profharness tells apart (glibc, musl)", 3, 7 },
        { "badtoolslibc.yaml", "`tools_libc`: `uclibc` is not a C library profharness tells apart (glibc, musl)", 4, 13 },
        { "toolpath.yaml", "`tools`: `usr/bin/strace` must be a plain name", 3, 8 },
        { "tooldot.yaml", "`tools`: `.hidden` must be a plain name", 3, 8 },
        { "mappeddots.yaml", "`attach.copy_mapped` must be a plain directory name under {out}, not `..`", 5, 16 },
        { "mappedpath.yaml", "`attach.copy_mapped` must be a plain directory name under {out}, not `../up`", 5, 16 },
        { "wrapnottool.yaml", "`wrap` runs `strace`, which `tools` does not list", 1, 1 },
        { "wrappath.yaml", "`wrap` must start with a program name from it, not the path `/usr/bin/strace`", 1, 1 },
        { "pkgscalar.yaml", "`packages` must be a list (Debian's names) or a mapping", 3, 11 },
        { "badsignal.yaml", "`attach.signal`: `SIGNOPE` is not a signal", 5, 11 },
        { "badnetwork.yaml", "`attach.network` is `none` or `service`, not `host`", 5, 12 },
        { "emptyready.yaml", "`attach.ready` is empty", 5, 10 },
        { "emptyattachcmd.yaml", "`attach.command` must start with a program", 4, 12 },
        { "symfsdots.yaml", "`convert.symfs.dir` must be a plain directory name under {out}, not `..`", 6, 16 },
        { "symfsnocmd.yaml", "`convert.symfs` needs `dir` and `command`", 6, 10 },
        { "attachsymfs.yaml", "`attach.convert.symfs` can do nothing: an attach never stops the service's container", 9,
          5 },
        { "swarmempty.yaml", "`swarm` needs `unsupported` (why the mode cannot run in a Swarm task)", 3, 8 },
        { "swarmlist.yaml", "`swarm` must be a mapping: {unsupported: why}", 3, 8 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ph_profile p;
        ph_error_t err = NULL;
        char path[1024], at[1100];

        snprintf(path, sizeof path, "%s", data_path("bad/"));
        strncat(path, cases[i].file, sizeof path - strlen(path) - 1);
        assert_int_equal(ph_profile_load(path, &p, &err), -1);
        assert_non_null(err);
        snprintf(at, sizeof at, "%s:%d:%d: ", path, cases[i].line, cases[i].col);
        if (strncmp(err->msg, at, strlen(at)) != 0 || strstr(err->msg, cases[i].fragment) == NULL)
            fail_msg("%s: got `%s`, want `%s%s...`", cases[i].file, err->msg, at, cases[i].fragment);
        assert_int_equal(err->status, PH_EXIT_USAGE);
        ph_error_free(&err);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_key, tu_setup, tu_teardown),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_shipped),
        cmocka_unit_test(test_bad),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
