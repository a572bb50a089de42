/* test_adopt.c - what a user adopting profharness in their own project
 * meets before any container runs: did-you-mean for what they mistype,
 * the harness finding its own files from wherever it is installed, modes
 * layered (shipped, the project's own, --profiles), the run context's
 * defaults (output beside the project, absolute), the errors and hints
 * for an unknown mode or service; and the pure cores of living beside
 * docker compose (its containers merged in, its labels, who holds a
 * port), of stopping dependants first, of prune's choice and of reading
 * the last run's service.log, and of what a collected run is missing. */
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "ph_paths.h"
#include "ph_profile.h"
#include "ph_backend_engine.h"
#include "ph_image.h"
#include "ph_run_int.h"
#include "ph_suggest.h"
#include "ph_util.h"

static char top[PATH_MAX]; /* the tree's top, where the tests start */

/* Tests chdir into their temp dir: leave it before it is removed. */
static int
teardown(void **state)
{
    assert_int_equal(chdir("/"), 0);
    return tu_teardown(state);
}

/* ---- did you mean ------------------------------------------------------ */

static void
test_distance(void **state)
{
    (void)state;
    assert_int_equal(ph_suggest_distance("", ""), 0);
    assert_int_equal(ph_suggest_distance("abc", ""), 3);
    assert_int_equal(ph_suggest_distance("", "abc"), 3);
    assert_int_equal(ph_suggest_distance("flamegraph", "flamegraph"), 0);
    assert_int_equal(ph_suggest_distance("flamegraf", "flamegraph"), 2);   /* substitute, insert */
    assert_int_equal(ph_suggest_distance("cwroker", "cworker"), 1);        /* a swap is one edit */
    assert_int_equal(ph_suggest_distance("kitten", "sitting"), 3);
    assert_int_equal(ph_suggest_distance("STRACE", "strace"), 0);          /* case ignored */
    assert_int_equal(ph_suggest_distance("ab", "ba"), 1);
    assert_int_equal(ph_suggest_distance("abc", "ca"), 3);                 /* OSA, not full Damerau */
    assert_int_equal(ph_suggest_distance("massif", "mass"), 2);
    {
        char longer[PH_SUGGEST_MAX + 2];

        memset(longer, 'a', sizeof longer - 1);
        longer[sizeof longer - 1] = '\0';
        assert_int_equal(ph_suggest_distance(longer, "a"), PH_SUGGEST_MAX + 1);
        longer[PH_SUGGEST_MAX] = '\0'; /* exactly the maximum is still measured */
        assert_int_equal(ph_suggest_distance(longer, longer), 0);
    }
}

static void
test_suggest(void **state)
{
    static const char *const modes[] = { "callgrind", "flamegraph", "massif", "valgrind", "strace" };
    static const char *const cmds[] = { "setup", "start", "stop", "restore", "collect", "status", "modes", "logs" };
    static const char *const svcs[] = { "cworker", "api", NULL, "worker" };

    (void)state;
    assert_string_equal(ph_suggest("flamegraf", modes, 5), "flamegraph");
    assert_string_equal(ph_suggest("valgrnd", modes, 5), "valgrind");
    assert_string_equal(ph_suggest("Strace", modes, 5), "strace");
    assert_string_equal(ph_suggest("stauts", cmds, 8), "status");
    assert_string_equal(ph_suggest("sotp", cmds, 8), "stop");
    assert_string_equal(ph_suggest("cwroker", svcs, 4), "cworker");
    /* A prefix of exactly one name, three characters or more. */
    assert_string_equal(ph_suggest("flame", modes, 5), "flamegraph");
    assert_string_equal(ph_suggest("call", modes, 5), "callgrind");
    /* ... but not of two ("st": start, stop, status), nor too short. */
    assert_null(ph_suggest("sta", cmds, 8));
    assert_null(ph_suggest("fl", modes, 5));
    assert_null(ph_suggest("xyz", modes, 5));
    assert_null(ph_suggest("perf", modes, 5));
    assert_null(ph_suggest("", modes, 5));
    assert_null(ph_suggest(NULL, modes, 5));
    assert_null(ph_suggest("api", NULL, 0));
    /* One edit per three characters: "apx" is one from "api"; "zzi" two. */
    assert_string_equal(ph_suggest("apx", svcs, 4), "api");
    assert_null(ph_suggest("zzi", svcs, 4));
    /* Ties go to the earlier name. */
    {
        static const char *const two[] = { "aab", "abb" };
        assert_string_equal(ph_suggest("abab", two, 2), "aab");
    }
}

static void
test_suggest_list(void **state)
{
    static const char *const names[] = { "worker", NULL, "front", "db" };
    char buf[64], small[16], tiny[4];

    (void)state;
    assert_string_equal(ph_suggest_list(buf, sizeof buf, names, 4), "worker, front, db");
    assert_string_equal(ph_suggest_list(buf, sizeof buf, names, 0), "");
    /* Cut where it does not fit, saying so; never overrun. */
    assert_string_equal(ph_suggest_list(small, sizeof small, names, 4), "worker, ...");
    assert_true(strlen(ph_suggest_list(tiny, sizeof tiny, names, 4)) < sizeof tiny);
}

/* ---- where the harness's files are -------------------------------------- */

static void
mkdirs(const char *rel)
{
    char cmd[PATH_MAX + 64];

    snprintf(cmd, sizeof cmd, "mkdir -p '%s/%s'", test_dir, rel);
    assert_int_equal(system(cmd), 0);
}

static void
touch(const char *rel)
{
    char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", test_dir, rel);
    f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
}

static void
test_layout_installed(void **state)
{
    char exe[PATH_MAX], want[PATH_MAX], lib[PATH_MAX];
    ph_layout lay;
    ph_error_t err = NULL;

    (void)state;
    mkdirs("usr/bin");
    mkdirs("usr/share/profharness/profiles");
    mkdirs("usr/share/profharness/images");
    mkdirs("usr/lib/profharness");
    touch("usr/bin/profharness");
    touch("usr/lib/profharness/ph-init");
    touch("usr/lib/profharness/libphsampler.so");
    snprintf(exe, sizeof exe, "%s/usr/bin/profharness", test_dir);
    assert_int_equal(ph_paths_layout(exe, NULL, &lay, &err), 0);
    snprintf(want, sizeof want, "%s/usr/share/profharness", test_dir);
    assert_string_equal(lay.data, want);
    snprintf(want, sizeof want, "%s/usr/lib/profharness", test_dir);
    assert_string_equal(lay.lib, want);
    ph_paths_lib_file(lay.data, "ph-init", lib, sizeof lib);
    snprintf(want, sizeof want, "%s/usr/lib/profharness/ph-init", test_dir);
    assert_string_equal(lib, want);
    /* Through a link in someone's ~/bin: still the installed tree. */
    mkdirs("home/bin");
    snprintf(want, sizeof want, "%s/home/bin/profharness", test_dir);
    assert_int_equal(symlink(exe, want), 0);
    assert_int_equal(ph_paths_layout(want, "", &lay, &err), 0);
    snprintf(want, sizeof want, "%s/usr/share/profharness", test_dir);
    assert_string_equal(lay.data, want);
}

static void
test_layout_build_tree(void **state)
{
    char exe[PATH_MAX], want[PATH_MAX];
    ph_layout lay;
    ph_error_t err = NULL;

    (void)state;
    mkdirs("clone/build");
    mkdirs("clone/profiles");
    mkdirs("clone/images/profiling");
    touch("clone/build/profharness");
    touch("clone/build/ph-init");
    snprintf(exe, sizeof exe, "%s/clone/build/profharness", test_dir);
    assert_int_equal(ph_paths_layout(exe, NULL, &lay, &err), 0);
    snprintf(want, sizeof want, "%s/clone", test_dir);
    assert_string_equal(lay.data, want);
    snprintf(want, sizeof want, "%s/clone/build", test_dir);
    assert_string_equal(lay.lib, want);
    /* PH_DATA_DIR wins, relative to where the user stands. */
    mkdirs("elsewhere/build");
    touch("elsewhere/build/ph-init");
    assert_int_equal(chdir(test_dir), 0);
    assert_int_equal(ph_paths_layout(exe, "./elsewhere/", &lay, &err), 0);
    snprintf(want, sizeof want, "%s/elsewhere", test_dir);
    assert_string_equal(lay.data, want);
    snprintf(want, sizeof want, "%s/elsewhere/build", test_dir);
    assert_string_equal(lay.lib, want);
}

static void
test_layout_neither(void **state)
{
    char exe[PATH_MAX];
    ph_layout lay;
    ph_error_t err = NULL;

    (void)state;
    mkdirs("loose");
    touch("loose/profharness");
    snprintf(exe, sizeof exe, "%s/loose/profharness", test_dir);
    assert_int_equal(ph_paths_layout(exe, NULL, &lay, &err), -1);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "share/profharness"));
    assert_non_null(strstr(err->hint, "PH_DATA_DIR"));
    ph_error_free(&err);
    /* A binary that is not there at all. */
    snprintf(exe, sizeof exe, "%s/loose/gone", test_dir);
    assert_int_equal(ph_paths_layout(exe, NULL, &lay, &err), -1);
    ph_error_free(&err);
}

static void
test_absolute(void **state)
{
    char buf[PATH_MAX], want[PATH_MAX], small[8];
    ph_error_t err = NULL;

    (void)state;
    assert_int_equal(ph_paths_absolute("/a/./b//c/../d/", buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "/a/b/d");
    assert_int_equal(ph_paths_absolute("/..", buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "/");
    assert_int_equal(ph_paths_absolute("/a/..", buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "/");
    assert_int_equal(ph_paths_absolute("/a/b/../../c", buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "/c");
    assert_int_equal(chdir(test_dir), 0);
    assert_int_equal(ph_paths_absolute("out/x/..", buf, sizeof buf, &err), 0);
    snprintf(want, sizeof want, "%s/out", test_dir);
    assert_string_equal(buf, want);
    assert_int_equal(ph_paths_absolute(".", buf, sizeof buf, &err), 0);
    assert_string_equal(buf, test_dir);
    /* In place, as the layout does it. */
    snprintf(buf, sizeof buf, "/x/y/../z");
    assert_int_equal(ph_paths_absolute(buf, buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "/x/z");
    assert_int_equal(ph_paths_absolute("/a/long/path", small, sizeof small, &err), -1);
    assert_int_equal(err->errnum, ENAMETOOLONG);
    ph_error_free(&err);
    assert_int_equal(ph_paths_absolute("", buf, sizeof buf, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
}

/* ---- modes in layers ------------------------------------------------------ */

static const char *
profile_text(const char *name, const char *description, const char *extra)
{
    static char buf[1024];

    snprintf(buf, sizeof buf,
             "name: %s\ndescription: %s\nwrap: [echo]\n%s"
             "artifacts:\n  - {glob: \"x*\"}\n",
             name, description, extra ? extra : "");
    return buf;
}

static void
write_profile(const char *dir, const char *name, const char *description, const char *extra)
{
    char rel[PATH_MAX];

    mkdirs(dir);
    snprintf(rel, sizeof rel, "%s/%s.yaml", dir, name);
    tu_write(rel, profile_text(name, description, extra));
}

static void
test_profiles_layered(void **state)
{
    char shipped[PATH_MAX], own[PATH_MAX], given[PATH_MAX], none[PATH_MAX], empty[PATH_MAX];
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;

    (void)state;
    write_profile("shipped", "strace", "shipped strace", NULL);
    write_profile("shipped", "massif", "shipped massif", "aliases: [valgrind]\n");
    write_profile("own", "strace", "the project's strace", NULL);
    write_profile("own", "perf", "the project's perf", NULL);
    write_profile("given", "perf", "the flag's perf", NULL);
    mkdirs("empty");
    tu_write("empty/README", "not a profile\n");
    snprintf(shipped, sizeof shipped, "%s/shipped", test_dir);
    snprintf(own, sizeof own, "%s/own", test_dir);
    snprintf(given, sizeof given, "%s/given", test_dir);
    snprintf(none, sizeof none, "%s/none", test_dir);
    snprintf(empty, sizeof empty, "%s/empty", test_dir);
    {
        ph_profile_dir dirs[] = { { shipped, 0 }, { own, 1 }, { given, 0 } };

        assert_int_equal(ph_profiles_load_dirs(dirs, 3, &set, &err), 0);
        assert_int_equal(set.n, 3);
        /* sorted by name; later layers win */
        assert_string_equal(set.v[0].name, "massif");
        assert_string_equal(set.v[1].name, "perf");
        assert_string_equal(set.v[1].description, "the flag's perf");
        assert_string_equal(set.v[2].description, "the project's strace");
        /* found by alias too, by name first */
        assert_ptr_equal(ph_profiles_find(&set, "valgrind"), &set.v[0]);
        assert_ptr_equal(ph_profiles_find(&set, "massif"), &set.v[0]);
        assert_null(ph_profiles_find(&set, "Massif"));
        ph_profiles_free(&set);
    }
    {
        /* Optional layers that are not there or hold no profile: skipped.
         * The same directory twice: read once. */
        ph_profile_dir dirs[] = { { shipped, 0 }, { none, 1 }, { empty, 1 }, { shipped, 0 } };

        assert_int_equal(ph_profiles_load_dirs(dirs, 4, &set, &err), 0);
        assert_int_equal(set.n, 2);
        ph_profiles_free(&set);
    }
    {
        /* A layer that must be there and is not: the error names it. */
        ph_profile_dir dirs[] = { { shipped, 0 }, { none, 0 } };

        assert_int_equal(ph_profiles_load_dirs(dirs, 2, &set, &err), -1);
        assert_non_null(strstr(err->msg, none));
        assert_int_equal(set.n, 0);
        ph_error_free(&err);
    }
    {
        /* A broken profile in the project's layer fails, naming file:line. */
        ph_profile_dir dirs[] = { { shipped, 0 }, { own, 1 } };

        tu_write("own/broken.yaml", "name: broken\nwrap: [x\n");
        assert_int_equal(ph_profiles_load_dirs(dirs, 2, &set, &err), -1);
        assert_non_null(strstr(err->msg, "broken.yaml:"));
        ph_error_free(&err);
    }
}

static void
test_profile_use_keys(void **state)
{
    ph_profile p;
    ph_error_t err = NULL;
    const char *path;

    (void)state;
    path = tu_write("callgrind.yaml", profile_text("callgrind", "d",
                                                  "note: slow to start\n"
                                                  "snapshot: {exec: [callgrind_control, --dump], wait: 20s}\n"));
    assert_int_equal(ph_profile_load(path, &p, &err), 0);
    assert_string_equal(p.note, "slow to start");
    assert_int_equal(p.snapshot.exec.n, 2);
    assert_string_equal(p.snapshot.exec.v[0], "callgrind_control");
    assert_int_equal(p.snapshot.wait_ns, 20LL * 1000000000LL);
    assert_null(p.snapshot.signal);
    ph_profile_free(&p);

    path = tu_write("flamegraph.yaml", profile_text("flamegraph", "d", "snapshot: {signal: usr2}\n"));
    assert_int_equal(ph_profile_load(path, &p, &err), 0);
    assert_string_equal(p.snapshot.signal, "SIGUSR2");
    ph_profile_free(&p);

    path = tu_write("strace.yaml", profile_text("strace", "d", "snapshot: {unsupported: writes as it goes}\n"));
    assert_int_equal(ph_profile_load(path, &p, &err), 0);
    assert_string_equal(p.snapshot.unsupported, "writes as it goes");
    ph_profile_free(&p);

    /* The malformed forms, each named at its line. */
    static const char *const bad[] = {
        "snapshot: {exec: [x], signal: USR1}\n",
        "snapshot: {wait: 3s}\n",
        "snapshot: {signal: NOPE}\n",
        "snapshot: {exec: []}\n",
        "snapshot: [x]\n",
        "aliases: [\"../up\"]\n",
        "aliases: [\"\"]\n",
        "aliases: [\"-x\"]\n", /* an alias read as an option */
    };
    for (size_t i = 0; i < PH_ARRAY_LEN(bad); i++) {
        path = tu_write("strace.yaml", profile_text("strace", "d", bad[i]));
        assert_int_equal(ph_profile_load(path, &p, &err), -1);
        assert_int_equal(err->status, PH_EXIT_USAGE);
        assert_non_null(strstr(err->msg, "strace.yaml:4"));
        ph_error_free(&err);
    }
}

/* ---- the run context ------------------------------------------------------ */

/* A project in test_dir/proj with two services, shipped profiles in
 * test_dir/data. */
static ph_run *
open_project(const char *out_dir, const char *profiles_dir, ph_error_t *err)
{
    char compose[PATH_MAX], data[PATH_MAX];
    ph_run_opts o = { 0 };

    write_profile("data/profiles", "strace", "shipped strace", NULL);
    write_profile("data/profiles", "massif", "shipped massif", "aliases: [valgrind]\n");
    write_profile("data/profiles", "flamegraph", "shipped flamegraph", NULL);
    mkdirs("proj");
    tu_write("proj/compose.yaml", "services:\n  cworker:\n    image: w\n  api:\n    image: a\n");
    snprintf(compose, sizeof compose, "%s/proj/compose.yaml", test_dir);
    snprintf(data, sizeof data, "%s/data", test_dir);
    o.compose_file = compose;
    o.data_dir = data;
    o.out_dir = out_dir;
    o.profiles_dir = profiles_dir;
    return ph_run_new(&o, err);
}

static void
test_run_out_dir(void **state)
{
    char want[PATH_MAX];
    ph_error_t err = NULL;
    ph_run *r;

    (void)state;
    mkdirs("elsewhere");
    assert_int_equal(chdir(test_dir), 0);
    assert_int_equal(chdir("elsewhere"), 0);
    /* Not where the user stands: beside the project. */
    r = open_project(NULL, NULL, &err);
    assert_non_null(r);
    snprintf(want, sizeof want, "%s/proj/contrib/profiling", test_dir);
    assert_string_equal(r->opts.out_dir, want);
    ph_run_free(r);
    /* -o relative: from where the user stands, made absolute. */
    r = open_project("../runs/", NULL, &err);
    assert_non_null(r);
    snprintf(want, sizeof want, "%s/runs", test_dir);
    assert_string_equal(r->opts.out_dir, want);
    ph_run_free(r);
}

static void
test_run_project_profiles(void **state)
{
    char given[PATH_MAX];
    ph_error_t err = NULL;
    ph_run *r;

    (void)state;
    write_profile("proj/profiles", "strace", "the project's strace", NULL);
    write_profile("proj/profiles", "pyspy", "the project's own mode", NULL);
    write_profile("flag", "pyspy", "the flag's", NULL);
    r = open_project(NULL, NULL, &err);
    assert_non_null(r);
    assert_int_equal(ph_run_profiles(r)->n, 4);
    assert_string_equal(ph_profiles_find(ph_run_profiles(r), "strace")->description, "the project's strace");
    assert_non_null(ph_profiles_find(ph_run_profiles(r), "pyspy"));
    ph_run_free(r);
    snprintf(given, sizeof given, "%s/flag", test_dir);
    r = open_project(NULL, given, &err);
    assert_non_null(r);
    assert_string_equal(ph_profiles_find(ph_run_profiles(r), "pyspy")->description, "the flag's");
    ph_run_free(r);
}

static void
test_run_unknown_names(void **state)
{
    char want[PATH_MAX];
    ph_error_t err = NULL;
    ph_svc_list sl = { 0 };
    char *names[] = { "cwroker" };
    ph_run *r;

    (void)state;
    assert_int_equal(chdir(test_dir), 0);
    r = open_project(NULL, NULL, &err);
    assert_non_null(r);
    /* A mode: did you mean, and every mode with its aliases. */
    assert_int_equal(ph_run_start(r, "flamegraf", NULL, 0, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_string_equal(err->msg, "no mode `flamegraf`; did you mean `flamegraph`?");
    assert_non_null(strstr(err->hint, "flamegraph, massif (also valgrind), strace"));
    ph_error_free(&err);
    assert_int_equal(ph_run_start(r, "zzz", NULL, 0, &err), -1);
    assert_string_equal(err->msg, "no mode `zzz`");
    ph_error_free(&err);
    /* A service: the compose file named absolutely, did you mean, the list. */
    assert_int_equal(ph_run_select(r, names, 1, &sl, &err), -1);
    snprintf(want, sizeof want, "%s/proj/compose.yaml: no service `cwroker`; did you mean `cworker`?", test_dir);
    assert_string_equal(err->msg, want);
    assert_string_equal(err->hint, "its services: cworker, api");
    assert_null(sl.v);
    ph_error_free(&err);
    ph_run_free(r);
}

/* ---- beside docker compose ------------------------------------------------ */

static json_t *
jload(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);

    if (j == NULL)
        fail_msg("bad JSON in the test (line %d): %s", je.line, je.text);
    return j;
}

static void
test_merge_compose(void **state)
{
    json_t *ours = jload("[{\"Id\": \"a\", \"State\": \"running\", \"Labels\": {"
                         "\"io.profharness.service\": \"front\", \"io.profharness.mode\": \"none\","
                         "\"com.docker.compose.project\": \"p\", \"com.docker.compose.service\": \"front\"}}]");
    json_t *theirs = jload("[{\"Id\": \"a\", \"Labels\": {\"io.profharness.service\": \"front\","
                           "  \"io.profharness.mode\": \"none\", \"com.docker.compose.service\": \"front\"}},"
                           " {\"Id\": \"b\", \"State\": \"exited\", \"Labels\": {\"com.docker.compose.project\": \"p\","
                           "  \"com.docker.compose.service\": \"worker\", \"com.docker.compose.oneoff\": \"False\"}},"
                           " {\"Id\": \"c\", \"Labels\": {\"com.docker.compose.service\": \"worker\","
                           "  \"com.docker.compose.oneoff\": \"True\"}},"
                           " {\"Id\": \"d\", \"Labels\": {\"com.docker.compose.project\": \"p\"}},"
                           " {\"Id\": \"e\", \"Labels\": null}]");
    ph_workload_list list = { 0 };
    const ph_workload *b;

    (void)state;
    assert_int_equal(ph_backend_engine_merge_compose(ours, theirs, &list), 0);
    /* a is ours (restore gave it compose's labels): once, as ours. */
    assert_int_equal(list.n, 2);
    assert_false(list.v[0].by_compose);
    assert_true(ph_workload_running(&list.v[0]));
    b = &list.v[1];
    assert_string_equal(b->id, "b");
    assert_true(b->by_compose);
    assert_string_equal(b->service, "worker");
    assert_string_equal(b->mode, "none");
    assert_false(ph_workload_profiled(b));
    assert_false(ph_workload_running(b));
    ph_workload_list_free(&list);
    json_decref(ours);
    json_decref(theirs);
}

static void
test_compose_labels(void **state)
{
    ph_error_t err = NULL;
    ph_kvv labels = { 0 };
    ph_run *r;
    char want[PATH_MAX];

    (void)state;
    mkdirs("proj");
    tu_write("proj/compose.yaml", "services:\n  cworker:\n    image: w\n");
    tu_write("proj/compose.override.yaml", "services:\n  cworker:\n    environment: {A: b}\n");
    write_profile("data/profiles", "strace", "s", NULL);
    {
        /* Found as compose finds it: here, with its override. */
        char data[PATH_MAX];
        ph_compose_opts co = { .project = "myapp" };
        ph_run_opts o = { .compose = &co, .data_dir = data };

        snprintf(data, sizeof data, "%s/data", test_dir);
        assert_int_equal(chdir(test_dir), 0);
        assert_int_equal(chdir("proj"), 0);
        r = ph_run_new(&o, &err);
    }
    assert_non_null(r);
    assert_int_equal(ph_backend_compose_labels(ph_run_compose(r), ph_compose_service(ph_run_compose(r), "cworker"), 1,
                                               &labels), 0);
    assert_string_equal(ph_kvv_get(&labels, "com.docker.compose.project"), "myapp");
    assert_string_equal(ph_kvv_get(&labels, "com.docker.compose.service"), "cworker");
    assert_string_equal(ph_kvv_get(&labels, "com.docker.compose.oneoff"), "False");
    /* docker-compose 1.29 refuses a container without its number. */
    assert_string_equal(ph_kvv_get(&labels, "com.docker.compose.container-number"), "1");
    snprintf(want, sizeof want, "%s/proj", test_dir);
    assert_string_equal(ph_kvv_get(&labels, "com.docker.compose.project.working_dir"), want);
    snprintf(want, sizeof want, "%s/proj/compose.yaml,%s/proj/compose.override.yaml", test_dir, test_dir);
    assert_string_equal(ph_kvv_get(&labels, "com.docker.compose.project.config_files"), want);
    ph_kvv_free(&labels);
    ph_run_free(r);
}

static void
test_port_owner(void **state)
{
    static const char msg[] = "start container `x`: driver failed programming external connectivity on endpoint "
                              "y-front-strace (abc): Bind for 127.0.0.1:18181 failed: port is already allocated";
    json_t *all = jload("[{\"Names\": [\"/other\"], \"Ports\": [{\"PrivatePort\": 18181, \"Type\": \"tcp\"}]},"
                        " {\"Names\": [\"/nu-myapp_front_1\"], \"Ports\": [{\"IP\": \"127.0.0.1\","
                        "  \"PrivatePort\": 8080, \"PublicPort\": 18181, \"Type\": \"tcp\"}],"
                        "  \"Labels\": {\"com.docker.compose.project\": \"nu-myapp\","
                        "   \"com.docker.compose.service\": \"front\"}},"
                        " {\"Names\": [\"/plain\"], \"Ports\": [{\"PrivatePort\": 80, \"PublicPort\": 8000}]}]");
    char hint[512];

    (void)state;
    assert_int_equal(ph_backend_engine_port_owner(msg, all, hint, sizeof hint), 1);
    assert_non_null(strstr(hint, "port 18181 is held by container `nu-myapp_front_1`, service `front` of the "
                                 "compose project `nu-myapp`"));
    assert_non_null(strstr(hint, "-p nu-myapp"));
    assert_int_equal(ph_backend_engine_port_owner("Bind for 0.0.0.0:8000 failed: port is already allocated", all, hint,
                                       sizeof hint), 1);
    assert_non_null(strstr(hint, "container `plain`, which profharness did not make"));
    assert_int_equal(ph_backend_engine_port_owner("Bind for [::]:9999 failed: port is already allocated", all, hint,
                                       sizeof hint), 1);
    assert_non_null(strstr(hint, "port 9999 is held by a process outside"));
    /* Not a port conflict: nothing to say. */
    assert_int_equal(ph_backend_engine_port_owner("No such image: x", all, hint, sizeof hint), 0);
    assert_int_equal(ph_backend_engine_port_owner("Bind for 1.2.3.4:http failed: port is already allocated", all, hint,
                                       sizeof hint), 0);
    assert_int_equal(ph_backend_engine_port_owner("Bind for 1.2.3.4:70000 failed: port is already allocated", all, hint,
                                       sizeof hint), 0);
    json_decref(all);
    /* A container's name and labels are anyone's: escaped for the terminal,
     * the name's and the service's as much as the project's. */
    all = jload("[{\"Names\": [\"/x\\u001b[2Jname\"], \"Ports\": [{\"PrivatePort\": 80, \"PublicPort\": 8001}],"
                "  \"Labels\": {\"com.docker.compose.project\": \"p\","
                "   \"com.docker.compose.service\": \"s\\u001b]0;t\\u0007\"}}]");
    assert_int_equal(ph_backend_engine_port_owner("Bind for 0.0.0.0:8001 failed: port is already allocated", all, hint,
                                       sizeof hint), 1);
    assert_non_null(strstr(hint, "port 8001 is held by container"));
    assert_null(strchr(hint, '\033'));
    assert_null(strchr(hint, '\007'));
    all = (json_decref(all), jload("[{\"Names\": [\"/x\\u001b[2Jname\"], \"Ports\": [{\"PublicPort\": 8001}]}]"));
    assert_int_equal(ph_backend_engine_port_owner("Bind for 0.0.0.0:8001 failed: port is already allocated", all, hint,
                                       sizeof hint), 1);
    assert_non_null(strstr(hint, "which profharness did not make"));
    assert_null(strchr(hint, '\033'));
    json_decref(all);
}

static void
test_stop_order(void **state)
{
    char compose[PATH_MAX], data[PATH_MAX];
    ph_run_opts o = { 0 };
    ph_error_t err = NULL;
    ph_svc_list sl = { 0 };
    ph_run *r;

    (void)state;
    write_profile("data/profiles", "strace", "s", NULL);
    mkdirs("p");
    tu_write("p/compose.yaml", "services:\n"
                               "  db: {image: d}\n"
                               "  api: {image: a, depends_on: [db]}\n"
                               "  front: {image: f, depends_on: [api]}\n"
                               "  cron: {image: c}\n");
    snprintf(compose, sizeof compose, "%s/p/compose.yaml", test_dir);
    snprintf(data, sizeof data, "%s/data", test_dir);
    o.compose_file = compose;
    o.data_dir = data;
    r = ph_run_new(&o, &err);
    assert_non_null(r);
    assert_int_equal(ph_run_select(r, NULL, 0, &sl, &err), 0);
    ph_run_order_dependants_first(r, &sl);
    assert_int_equal(sl.n, 4);
    /* front before api before db: the reverse of starting */
    {
        int front = -1, api = -1, db = -1;

        for (size_t i = 0; i < sl.n; i++) {
            front = strcmp(sl.v[i]->name, "front") == 0 ? (int)i : front;
            api = strcmp(sl.v[i]->name, "api") == 0 ? (int)i : api;
            db = strcmp(sl.v[i]->name, "db") == 0 ? (int)i : db;
        }
        assert_true(front < api);
        assert_true(api < db);
    }
    free(sl.v);
    ph_run_free(r);
}

static void
test_prune_plan(void **state)
{
    json_t *images = jload(
        "[{\"Id\": \"old\", \"Created\": 100, \"Size\": 300, \"RepoTags\": [\"app-profiling:aaa\"]},"
        " {\"Id\": \"new\", \"Created\": 300, \"Size\": 310, \"RepoTags\": [\"app-profiling:bbb\"]},"
        " {\"Id\": \"used\", \"Created\": 200, \"Size\": 320, \"RepoTags\": [\"app-profiling:ccc\"]},"
        " {\"Id\": \"twice\", \"Created\": 50, \"Size\": 330, \"RepoTags\": [\"app-profiling:ddd\","
        "   \"other-profiling:ddd\"]},"
        " {\"Id\": \"theirs\", \"Created\": 10, \"Size\": 340, \"RepoTags\": [\"other-profiling:eee\"]},"
        " {\"Id\": \"prefix\", \"Created\": 10, \"Size\": 1, \"RepoTags\": [\"app-profiling2:x\"]},"
        " {\"Id\": \"untagged\", \"Created\": 400, \"RepoTags\": null}]");
    json_t *containers = jload("[{\"ImageID\": \"used\"}, {\"ImageID\": \"unrelated\"}]");
    ph_strv repos = { 0 };
    json_t *plan;

    (void)state;
    assert_int_equal(ph_strv_push(&repos, "app-profiling"), 0);
    plan = ph_image_prune_plan(images, containers, &repos, 0);
    assert_non_null(plan);
    /* the newest (bbb) stays, the used one (ccc) stays, another
     * project's repository and a longer name are none of ours */
    assert_int_equal(json_array_size(plan), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(plan, 0), "tag")), "app-profiling:aaa");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(plan, 0), "size")), 300);
    assert_string_equal(json_string_value(json_object_get(json_array_get(plan, 1), "tag")), "app-profiling:ddd");
    json_decref(plan);
    plan = ph_image_prune_plan(images, containers, &repos, 1);
    assert_int_equal(json_array_size(plan), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(plan, 1), "tag")), "app-profiling:bbb");
    json_decref(plan);
    ph_strv_free(&repos);
    json_decref(images);
    json_decref(containers);
}

/* Old tools volumes: a volume (named after its hash, labelled with it)
 * of an old hash goes unless a container other than its keeper mounts
 * it; so does one known only by its mark, or by the keeper an older
 * profharness kept; each hash once.  The current one, a labelled volume
 * or container of another name and an unlabelled one never do. */
static void
test_tools_prune_plan(void **state)
{
    json_t *volumes = jload(
        "[{\"Name\": \"profharness-tools-aaaa\", \"Labels\": {\"io.profharness.tools\": \"aaaa\"}},"
        " {\"Name\": \"profharness-tools-aaaa-filled\", \"Labels\": {\"io.profharness.tools\": \"aaaa\"}},"
        " {\"Name\": \"profharness-tools-bbbb\", \"Labels\": {\"io.profharness.tools\": \"bbbb\"}},"
        " {\"Name\": \"profharness-tools-cccc\", \"Labels\": {\"io.profharness.tools\": \"cccc\"}},"
        " {\"Name\": \"profharness-tools-cccc-filled\", \"Labels\": {\"io.profharness.tools\": \"cccc\"}},"
        " {\"Name\": \"profharness-tools-ffff-filled\", \"Labels\": {\"io.profharness.tools\": \"ffff\"}},"
        " {\"Name\": \"mine\", \"Labels\": {\"io.profharness.tools\": \"9999\"}},"
        " {\"Name\": \"profharness-tools-8888-x\", \"Labels\": {\"io.profharness.tools\": \"8888\"}},"
        " {\"Name\": \"profharness-tools-7777\", \"Labels\": null}]");
    json_t *containers = jload(
        "[{\"Id\": \"k2\", \"Names\": [\"/profharness-tools-bbbb\"],"
        "   \"Labels\": {\"io.profharness.tools\": \"bbbb\"},"
        "   \"Mounts\": [{\"Type\": \"volume\", \"Name\": \"profharness-tools-bbbb\"}]},"
        " {\"Id\": \"svc\", \"Names\": [\"/app-front-strace\"], \"Labels\": {},"
        "   \"Mounts\": [{\"Type\": \"volume\", \"Name\": \"profharness-tools-bbbb\"}]},"
        " {\"Id\": \"k1\", \"Names\": [\"/profharness-tools-aaaa\"],"
        "   \"Labels\": {\"io.profharness.tools\": \"aaaa\"},"
        "   \"Mounts\": [{\"Type\": \"volume\", \"Name\": \"profharness-tools-aaaa\"}]},"
        " {\"Id\": \"k3\", \"Names\": [\"/profharness-tools-cccc\"],"
        "   \"Labels\": {\"io.profharness.tools\": \"cccc\"},"
        "   \"Mounts\": [{\"Type\": \"volume\", \"Name\": \"profharness-tools-cccc\"}]},"
        " {\"Id\": \"k5\", \"Names\": [\"/profharness-tools-eeee\"],"
        "   \"Labels\": {\"io.profharness.tools\": \"eeee\"}},"
        " {\"Id\": \"hand\", \"Names\": [\"/mine\"], \"Labels\": {\"io.profharness.tools\": \"dddd\"}},"
        " {\"Id\": \"plain\", \"Names\": [\"/profharness-tools-6666\"], \"Labels\": {}}]");
    static const struct {
        const char *hash;
        int in_use;
    } want[] = { { "aaaa", 0 }, { "bbbb", 1 }, { "ffff", 0 }, { "eeee", 0 } };
    json_t *plan;

    (void)state;
    plan = ph_image_tools_prune_plan(volumes, containers, "cccc");
    assert_non_null(plan);
    assert_int_equal(json_array_size(plan), PH_ARRAY_LEN(want));
    for (size_t i = 0; i < PH_ARRAY_LEN(want); i++) {
        json_t *x = json_array_get(plan, i);
        char name[64];

        snprintf(name, sizeof name, "profharness-tools-%s", want[i].hash);
        assert_string_equal(json_string_value(json_object_get(x, "hash")), want[i].hash);
        assert_string_equal(json_string_value(json_object_get(x, "name")), name);
        if (json_is_true(json_object_get(x, "in_use")) != want[i].in_use)
            fail_msg("%s: in_use %d", want[i].hash, !want[i].in_use);
    }
    json_decref(plan);
    json_decref(volumes);
    json_decref(containers);
}

static void
test_last_log(void **state)
{
    ph_error_t err = NULL;
    ph_run *r;
    FILE *out;
    char path[PATH_MAX], got[256];
    size_t n;

    (void)state;
    assert_int_equal(chdir(test_dir), 0);
    r = open_project("runs", NULL, &err);
    assert_non_null(r);
    /* None yet: an error that says how to get one. */
    assert_int_equal(ph_run_print_last_log(r, "api", stdout, &err), -1);
    assert_non_null(strstr(err->msg, "no container, and no run with a service.log"));
    assert_non_null(strstr(err->hint, "profharness restore api"));
    ph_error_free(&err);
    mkdirs("runs/api/20261122T101500Z-strace");
    tu_write("runs/api/20261122T101500Z-strace/service.log", "2026-11-22T10:15:00.1Z api: listening\n");
    snprintf(path, sizeof path, "%s/runs/api/latest", test_dir);
    assert_int_equal(symlink("20261122T101500Z-strace", path), 0);
    snprintf(path, sizeof path, "%s/printed", test_dir);
    out = fopen(path, "w+");
    assert_non_null(out);
    assert_int_equal(ph_run_print_last_log(r, "api", out, &err), 0);
    rewind(out);
    n = fread(got, 1, sizeof got - 1, out);
    got[n] = '\0';
    fclose(out);
    assert_string_equal(got, "2026-11-22T10:15:00.1Z api: listening\n");
    ph_run_free(r);
}

/* ---- a run with no samples says why ------------------------------------ */

static void
test_sample_verdict(void **state)
{
    char why[512];
    int fd;

    (void)state;
    assert_int_equal(chdir(test_dir), 0);
    fd = open(test_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    /* No status at all: not the sampler's run, nothing to say. */
    assert_int_equal(ph_run_sample_verdict(fd, why, sizeof why), 0);
    /* The shell that started the program: no samples, and why. */
    tu_write("sampler-status-7.json", "{\"pid\": 7, \"program\": \"/bin/sh\", \"state\": \"exec\", "
                                      "\"samples\": 0, \"reason\": \"no CPU time used\"}\n");
    assert_int_equal(ph_run_sample_verdict(fd, why, sizeof why), 2);
    assert_string_equal(why, "/bin/sh (pid 7): no CPU time used");
    /* Not a status (no object): skipped, not counted. */
    tu_write("sampler-status-9.json", "[1, 2]");
    assert_int_equal(ph_run_sample_verdict(fd, why, sizeof why), 2);
    /* A FIFO by a status's name (the container wrote the dir): skipped,
     * never waited on. */
    assert_int_equal(mkfifo("sampler-status-6.json", 0600), 0);
    assert_int_equal(ph_run_sample_verdict(fd, why, sizeof why), 2);
    /* The program it started has samples: the run is fine. */
    tu_write("sampler-status-8.json", "{\"pid\": 8, \"program\": \"/usr/bin/python3\", \"state\": "
                                      "\"terminated\", \"samples\": 42, \"reason\": \"\"}\n");
    assert_int_equal(ph_run_sample_verdict(fd, why, sizeof why), 1);
    close(fd);
}

/* What a collected flamegraph run is missing: the profiler's artifacts
 * that are not there, never the report's own drawing (report-*.svg, made
 * after collection), nor a directory or a link by an artifact's name. */
static void
test_missing_artifacts(void **state)
{
    ph_profile p;
    ph_error_t err = NULL;
    json_t *m;
    char path[PATH_MAX + 32];
    int fd;

    (void)state;
    snprintf(path, sizeof path, "%s/profiles/flamegraph.yaml", top);
    assert_int_equal(ph_profile_load(path, &p, &err), 0);
    assert_int_equal(chdir(test_dir), 0);
    fd = open(test_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    /* all the sampler writes: nothing missing, report-flamegraph.svg not drawn yet */
    tu_write("flamegraph-20261122T101600Z-1.svg", "<svg/>");
    tu_write("stacks-20261122T101600Z-1.folded", "main 1\n");
    tu_write("profile-20261122T101600Z-1.pb.gz", "x");
    m = ph_run_missing_artifacts(&p, fd);
    assert_non_null(m);
    assert_int_equal(json_array_size(m), 0);
    json_decref(m);
    /* no stacks (a directory and a link by their name are none): that one */
    assert_int_equal(unlink("stacks-20261122T101600Z-1.folded"), 0);
    assert_int_equal(mkdir("stacks-20261122T101600Z-2.folded", 0755), 0);
    assert_int_equal(symlink("flamegraph-20261122T101600Z-1.svg", "stacks-20261122T101600Z-3.folded"), 0);
    m = ph_run_missing_artifacts(&p, fd);
    assert_int_equal(json_array_size(m), 1);
    assert_string_equal(json_string_value(json_array_get(m, 0)), "stacks-*.folded");
    json_decref(m);
    /* an attached native run: perf's converted stacks.folded and
     * profile.pb.gz stand for the sampler's (the same `latest`), its own
     * SVG is no fault */
    for (const char *const *f = (const char *const[]){ "stacks-20261122T101600Z-2.folded",
                                                       "flamegraph-20261122T101600Z-1.svg",
                                                       "profile-20261122T101600Z-1.pb.gz", NULL };
         *f != NULL; f++)
        if (rmdir(*f) < 0)
            (void)unlink(*f);
    tu_write("stacks.folded", "main 1\n");
    tu_write("profile.pb.gz", "x");
    m = ph_run_missing_artifacts(&p, fd);
    assert_int_equal(json_array_size(m), 0);
    json_decref(m);
    assert_int_equal(unlink("stacks.folded"), 0);
    m = ph_run_missing_artifacts(&p, fd);
    assert_int_equal(json_array_size(m), 1);
    assert_string_equal(json_string_value(json_array_get(m, 0)), "stacks-*.folded");
    json_decref(m);
    close(fd);
    ph_profile_free(&p);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_suggest_list),
        cmocka_unit_test_setup_teardown(test_layout_installed, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_layout_build_tree, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_layout_neither, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_absolute, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_profiles_layered, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_use_keys, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_out_dir, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_project_profiles, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_unknown_names, tu_setup, teardown),
        cmocka_unit_test(test_merge_compose),
        cmocka_unit_test_setup_teardown(test_compose_labels, tu_setup, teardown),
        cmocka_unit_test(test_port_owner),
        cmocka_unit_test_setup_teardown(test_stop_order, tu_setup, teardown),
        cmocka_unit_test(test_prune_plan),
        cmocka_unit_test(test_tools_prune_plan),
        cmocka_unit_test_setup_teardown(test_last_log, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_sample_verdict, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_artifacts, tu_setup, teardown),
    };

    if (getcwd(top, sizeof top) == NULL)
        return 1;

    return cmocka_run_group_tests_name("adopt", tests, NULL, NULL);
}
