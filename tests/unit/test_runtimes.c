/* test_runtimes.c - what a mode asks of the runtimes: the environment it
 * extends (ph_profile_env_extend, ph_run_env_extend), the profile's
 * `runtimes:` key as the loader reads it, and the runtimes a mode would
 * name nothing of (`runtimes.unnamed`: the rules, the refusal, the
 * environment read from the Engine's `ps`), and the runtimes it records
 * otherwise (`runtimes.wrap`). */
#include "test_util.h"

#include <sys/stat.h>

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
    ph_strv env = { 0 }, img = { 0 };

    assert_int_equal(ph_kvv_set(&ext, "NODE_OPTIONS", "--perf-basic-prof"), 0);
    assert_int_equal(ph_kvv_set(&ext, "JAVA_TOOL_OPTIONS", "-XX:+PreserveFramePointer"), 0);
    assert_int_equal(ph_kvv_set(&ext, "OTHER", "x"), 0);
    assert_int_equal(ph_strv_push(&env, "A=1"), 0);
    assert_int_equal(ph_strv_push(&env, "NODE_OPTIONS=--user"), 0);
    assert_int_equal(ph_strv_push(&env, "B=2"), 0);
    assert_int_equal(ph_strv_push(&img, "JAVA_TOOL_OPTIONS=-Ximage"), 0);
    assert_int_equal(ph_strv_push(&img, "NODE_OPTIONS=--image"), 0);
    assert_int_equal(ph_run_env_extend(&env, &img, &ext, &err), 0);
    assert_int_equal(env.n, 5);
    assert_string_equal(env.v[0], "A=1");
    assert_string_equal(env.v[1], "NODE_OPTIONS=--user --perf-basic-prof");
    assert_string_equal(env.v[2], "B=2");
    assert_string_equal(env.v[3], "JAVA_TOOL_OPTIONS=-Ximage -XX:+PreserveFramePointer");
    assert_string_equal(env.v[4], "OTHER=x");
    ph_strv_free(&env);
    /* no image environment at all */
    assert_int_equal(ph_run_env_extend(&env, NULL, &ext, &err), 0);
    assert_string_equal(env.v[0], "NODE_OPTIONS=--perf-basic-prof");
    ph_strv_free(&env);
    ph_strv_free(&img);
    ph_kvv_free(&ext);
}

/* A variable whose name only starts with the one extended is another:
 * left as it is, and ours added after it. */
static void
test_run_env_extend_whole_name(void **state)
{
    (void)state;
    ph_kvv ext = { 0 };
    ph_error_t err = NULL;
    ph_strv env = { 0 }, img = { 0 };

    assert_int_equal(ph_kvv_set(&ext, "JAVA_TOOL_OPTIONS", "-XX:+PreserveFramePointer"), 0);
    assert_int_equal(ph_strv_push(&env, "JAVA_TOOL_OPTIONS_X=-Xuser"), 0);
    assert_int_equal(ph_strv_push(&img, "JAVA_TOOL_OPTIONSX=-Ximage"), 0);
    assert_int_equal(ph_run_env_extend(&env, &img, &ext, &err), 0);
    assert_int_equal(env.n, 2);
    assert_string_equal(env.v[0], "JAVA_TOOL_OPTIONS_X=-Xuser");
    assert_string_equal(env.v[1], "JAVA_TOOL_OPTIONS=-XX:+PreserveFramePointer");
    ph_strv_free(&env);
    ph_strv_free(&img);
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

typedef struct bad_text {
    const char *text, *fragment;
} bad_text;

/* Each of BAD's N texts is refused, its error naming its fragment. */
static void
refuses(const bad_text *bad, size_t n)
{
    ph_profile p;
    ph_error_t err = NULL;

    for (size_t i = 0; i < n; i++) {
        if (load(bad[i].text, &p, &err) != -1)
            fail_msg("`%s` loaded", bad[i].text);
        if (strstr(err->msg, bad[i].fragment) == NULL)
            fail_msg("`%s`: `%s` lacks `%s`", bad[i].text, err->msg, bad[i].fragment);
        ph_error_free(&err);
    }
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

    static const bad_text bad[] = {
        { "runtimes: [x]\n", "`runtimes` must be a mapping" },
        { "runtimes: {environment: {A: }}\n", "`runtimes.environment.A` needs a value" },
        { "runtimes: {refresh: {exec: [x]}}\n", "`runtimes.refresh` must be a list" },
        { "runtimes: {refresh: [{in: elsewhere, exec: [x]}]}\n", "`service` or `profiler`, not `elsewhere`" },
        { "runtimes: {refresh: [{in: service}]}\n", "need `exec`" },
        { "runtimes: {refresh: [{exec: [\"\"]}]}\n", "need `exec`" },
        { "runtimes: {refresh: [x]}\n", "items must be mappings" },
        { "runtimes: {unnamed: {program: x}}\n", "`runtimes.unnamed` must be a list" },
        { "runtimes: {unnamed: [x]}\n", "`runtimes.unnamed` items must be mappings" },
        { "runtimes: {unnamed: [{program: x, why: y}]}\n", "need `program`, `why` and `use`" },
        { "runtimes: {unnamed: [{why: y, use: z}]}\n", "need `program`, `why` and `use`" },
        { "runtimes: {unnamed: [{program: /usr/bin/x, why: y, use: z}]}\n", "file names (globs), not `/usr/bin/x`" },
        { "runtimes: {unnamed: [{program: x, why: y, use: z, on: [stop]}]}\n", "not `stop`" },
        { "runtimes: {unnamed: [{program: x, why: y, use: z, on: []}]}\n", "needs `start`, `attach` or both" },
        { "runtimes: {unnamed: [{program: x, why: y, use: z, unless: [\" \"]}]}\n", "cannot be empty" },
    };
    refuses(bad, sizeof bad / sizeof bad[0]);
}

/* `runtimes.after_exit`: read with its default, refused with the line
 * and what is wanted; the rule takes regular files of its glob directly
 * in `from`, and leaves (saying so) one over its max_bytes. */
static void
test_after_exit_key(void **state)
{
    ph_profile p;
    ph_error_t err = NULL;
    ph_profile_exit_files *x;

    (void)state;
    assert_int_equal(load("runtimes:\n  after_exit:\n    - {from: /tmp, files: \"perf-[0-9]*.map\", into: perf-maps}\n"
                          "    - {from: /var/x, files: \"*.log\", into: logs, max_bytes: 1KiB}\n", &p, &err), 0);
    assert_int_equal(p.n_after_exit, 2);
    x = &p.after_exit[0];
    assert_string_equal(x->from, "/tmp");
    assert_string_equal(x->into, "perf-maps");
    assert_true(x->max_bytes == PH_EXIT_FILES_MAX_DEFAULT);
    assert_true(p.after_exit[1].max_bytes == 1024);
    assert_int_equal(ph_profile_exit_file(x, "perf-8.map", S_IFREG, 100), PH_EXIT_FILE_TAKE);
    assert_int_equal(ph_profile_exit_file(x, "perf-8.map", S_IFREG, PH_EXIT_FILES_MAX_DEFAULT), PH_EXIT_FILE_TAKE);
    assert_int_equal(ph_profile_exit_file(x, "perf-8.map", S_IFREG, PH_EXIT_FILES_MAX_DEFAULT + 1), PH_EXIT_FILE_OVER);
    assert_int_equal(ph_profile_exit_file(x, "perf-8.map", S_IFLNK, 10), PH_EXIT_FILE_PASS); /* a link: never */
    assert_int_equal(ph_profile_exit_file(x, "perf-8.map", S_IFDIR, 0), PH_EXIT_FILE_PASS);
    assert_int_equal(ph_profile_exit_file(x, "sub/perf-8.map", S_IFREG, 10), PH_EXIT_FILE_PASS);
    assert_int_equal(ph_profile_exit_file(x, "perf-x.map", S_IFREG, 10), PH_EXIT_FILE_PASS);
    assert_int_equal(ph_profile_exit_file(x, ".java_pid8", S_IFREG, 10), PH_EXIT_FILE_PASS);
    assert_int_equal(ph_profile_exit_file(&p.after_exit[1], ".hidden.log", S_IFREG, 10), PH_EXIT_FILE_PASS);
    ph_profile_free(&p);

    static const bad_text bad[] = {
        { "runtimes: {after_exit: {from: /tmp}}\n", "`runtimes.after_exit` must be a list" },
        { "runtimes: {after_exit: [x]}\n", "items must be mappings" },
        { "runtimes: {after_exit: [{from: /tmp, files: x}]}\n", "need `from`, `files` and `into`" },
        { "runtimes: {after_exit: [{from: tmp, files: x, into: y}]}\n", "absolute path in the container" },
        { "runtimes: {after_exit: [{from: /tmp/../etc, files: x, into: y}]}\n", "with no `..`" },
        { "runtimes: {after_exit: [{from: /tmp, files: a/b, into: y}]}\n", "(no `/`), not `a/b`" },
        { "runtimes: {after_exit: [{from: /tmp, files: x, into: ../y}]}\n", "the name of a directory in {out}" },
        { "runtimes: {after_exit: [{from: /tmp, files: x, into: .y}]}\n", "no leading `.`" },
        { "runtimes: {after_exit: [{from: /tmp, files: x, into: y, max_bytes: lots}]}\n",
          "`runtimes.after_exit.max_bytes`" },
    };
    refuses(bad, sizeof bad / sizeof bad[0]);
}

/* The rules as read: `on` both by default, `unless` kept in order. */
static void
test_unnamed_key(void **state)
{
    (void)state;
    ph_profile p;
    ph_error_t err = NULL;

    assert_int_equal(load("runtimes:\n  unnamed:\n    - {program: [a, \"b*\"], why: w1, use: u1}\n"
                          "    - {program: c, on: attach, unless: [V=x, -y z], why: w2, use: u2}\n",
                          &p, &err), 0);
    assert_int_equal(p.n_unnamed, 2);
    assert_int_equal(p.unnamed[0].on, PH_UNNAMED_START | PH_UNNAMED_ATTACH);
    assert_int_equal(p.unnamed[0].program.n, 2);
    assert_string_equal(p.unnamed[0].why, "w1");
    assert_string_equal(p.unnamed[0].use, "u1");
    assert_int_equal(p.unnamed[1].on, PH_UNNAMED_ATTACH);
    assert_int_equal(p.unnamed[1].unless.n, 2);
    assert_string_equal(p.unnamed[1].unless.v[1], "-y z");
    assert_true(ph_profile_unnamed_any(&p, PH_UNNAMED_START, 0));
    assert_true(ph_profile_unnamed_any(&p, PH_UNNAMED_ATTACH, 0));
    ph_profile_free(&p);
    assert_int_equal(load("runtimes: {unnamed: [{program: c, on: [attach], why: w, use: u}]}\n", &p, &err), 0);
    assert_false(ph_profile_unnamed_any(&p, PH_UNNAMED_START, 0));
    assert_true(ph_profile_unnamed_any(&p, PH_UNNAMED_ATTACH, 0));
    ph_profile_free(&p);
}

/* ENV from "K=V" strings (NULL-terminated). */
static ph_strv
envv(const char *const *kv)
{
    ph_strv v = { 0 };

    for (; kv != NULL && *kv != NULL; kv++)
        assert_int_equal(ph_strv_push(&v, *kv), 0);
    return v;
}

/* The name of the rule P refuses PROGRAM with, "-" for none. */
static const char *
refused(const ph_profile *p, int when, const char *program, const char *args, const char *const *kv)
{
    ph_strv env = envv(kv);
    const ph_profile_unnamed *u = ph_profile_unnamed_find(p, when, program, args, &env);

    ph_strv_free(&env);
    return u == NULL ? "-" : u->why;
}

/* Globs on the file name; `VAR=WORD` is a word of the variable's value
 * (the last of a name); other items are consecutive argument words;
 * `on` is honoured; the first rule that holds is the one. */
static void
test_unnamed_find(void **state)
{
    (void)state;
    ph_profile p;
    ph_error_t err = NULL;
    static const char *const none[] = { NULL };
    static const char *const opt_after[] = { "NODE_OPTIONS=--max-old-space-size=100 --perf-basic-prof", NULL };
    static const char *const opt_part[] = { "NODE_OPTIONS=--perf-basic-prof-x", NULL };
    static const char *const opt_other_var[] = { "OTHER=--perf-basic-prof", NULL };
    static const char *const opt_last_wins[] = { "NODE_OPTIONS=--perf-basic-prof", "NODE_OPTIONS=--x", NULL };
    static const char *const opt_prefix_var[] = { "NODE_OPTIONSX=x --perf-basic-prof", NULL };

    assert_int_equal(load("runtimes:\n  unnamed:\n"
                          "    - {program: [\"py3.[0-9]\", \"py3.1[01]\"], why: old, use: u}\n"
                          "    - {program: [node], unless: [NODE_OPTIONS=--perf-basic-prof, --perf-basic-prof],"
                          " why: nomap, use: u}\n"
                          "    - {program: [\"py3.1[2-9]\"], on: [attach], unless: [-X perf], why: noperf, use: u}\n"
                          "    - {program: [\"*\"], on: [start], unless: [A=1], why: any, use: u}\n",
                          &p, &err), 0);
    assert_string_equal(refused(&p, PH_UNNAMED_START, "py3.11", "py3 app.py", none), "old");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "py3.9", "py3 app.py", none), "old");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "py3.111", "x", none), "-");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "node", "node app.js", none), "nomap");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "node", "node --perf-basic-prof app.js", none), "-");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "node", "node --perf-basic-prof-only app.js", none), "nomap");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "node", "node app.js", opt_after), "-");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "node", "node app.js", opt_part), "nomap");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "node", "node app.js", opt_other_var), "nomap");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "node", "node app.js", opt_last_wins), "nomap");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "node", "node app.js", opt_prefix_var), "nomap");
    /* on: attach only; two words in order */
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "py3.12", "py3 app.py", none), "noperf");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "py3.12", "py3 -X perf app.py", none), "-");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "py3.12", "py3 -X  perf", none), "-");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "py3.12", "py3 perf -X", none), "noperf");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "py3.12", "py3 -X perfx", none), "noperf");
    assert_string_equal(refused(&p, PH_UNNAMED_START, "py3.12", "py3 app.py", none), "any");
    /* on: start only */
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "cc", "cc", none), "-");
    assert_string_equal(refused(&p, PH_UNNAMED_START, "", "cc", none), "-");
    assert_null(ph_profile_unnamed_find(&p, PH_UNNAMED_START, NULL, NULL, NULL));
    ph_profile_free(&p);
}

/* `if`: the rule holds only when one of its items does (an argument's
 * words, or `VAR=WORD`), and never when an `unless` does. */
static void
test_unnamed_if(void **state)
{
    (void)state;
    ph_profile p;
    ph_error_t err = NULL;
    static const char *const none[] = { NULL };
    static const char *const tool[] = { "JAVA_TOOL_OPTIONS=-Xmx1g -XX:+DisableAttachMechanism", NULL };
    static const char *const other[] = { "OTHER=-XX:+DisableAttachMechanism", NULL };

    assert_int_equal(load("runtimes:\n  unnamed:\n"
                          "    - {program: [java], on: [attach], if: [-XX:+DisableAttachMechanism, "
                          "JAVA_TOOL_OPTIONS=-XX:+DisableAttachMechanism], unless: [-Dok], why: noattach, use: u}\n",
                          &p, &err), 0);
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "java", "java -XX:+DisableAttachMechanism -cp . App", none),
                        "noattach");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "java", "java -cp . App", tool), "noattach");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "java", "java -cp . App", none), "-");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "java", "java -cp . App", other), "-");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "java", "java -XX:+DisableAttachMechanismX App", none), "-");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "java", "java -XX:+DisableAttachMechanism -Dok", none), "-");
    assert_string_equal(refused(&p, PH_UNNAMED_START, "java", "java -XX:+DisableAttachMechanism", none), "-");
    assert_string_equal(refused(&p, PH_UNNAMED_ATTACH, "node", "node -XX:+DisableAttachMechanism", none), "-");
    ph_profile_free(&p);
    assert_int_equal(load("runtimes: {unnamed: [{program: x, why: y, use: z, if: [\"\"]}]}\n", &p, &err), -1);
    assert_non_null(strstr(err->msg, "cannot be empty"));
    ph_error_free(&err);
}

/* One line: the program (its file name), why, what works; the hint
 * names the flag with the command it was refused on. */
static void
test_unnamed_refuse(void **state)
{
    (void)state;
    ph_profile p;
    ph_error_t err = NULL;
    ph_strv env = { 0 };

    assert_int_equal(load("runtimes: {unnamed: [{program: [\"py*\"], why: \"is old\", use: \"`other`\"}]}\n",
                          &p, &err), 0);
    assert_int_equal(ph_run_unnamed_refuse("svc", &p, PH_UNNAMED_START, "/usr/bin/cc", "cc", &env, &err), 0);
    assert_null(err);
    assert_int_equal(ph_run_unnamed_refuse("svc", &p, PH_UNNAMED_START, "/usr/bin/py3", "py3", &env, &err), -1);
    assert_string_equal(err->msg, "service `svc`, mode `m`: py3 is old; use `other`");
    assert_int_equal(err->status, 2);
    assert_non_null(strstr(err->hint, "`profharness start --mode m --allow-unnamed svc`"));
    assert_null(strchr(err->msg, '\n'));
    ph_error_free(&err);
    assert_int_equal(ph_run_unnamed_refuse("svc", &p, PH_UNNAMED_ATTACH, "py3", "py3", &env, &err), -1);
    assert_non_null(strstr(err->hint, "`profharness attach --mode m --allow-unnamed svc`"));
    ph_error_free(&err);
    ph_profile_free(&p);
}

/* A node that set process.title (Verdaccio: `verdaccio` in ps, its
 * arguments gone) runs node all the same: /proc/PID/exe says so, and the
 * refusal names both. */
static void
test_unnamed_program_titled(void **state)
{
    static const struct {
        const char *exe, *found, *want;
        int titled;
    } cases[] = {
        { "/usr/bin/node", "", "/usr/bin/node", 1 },                   /* `verdaccio`: no such program */
        { "/usr/bin/node", "/usr/bin/redis-server", "/usr/bin/node", 1 }, /* a title that is a program */
        { "/usr/bin/node", "/usr/bin/node", "/usr/bin/node", 0 },
        { "/usr/bin/python3.11", "/usr/bin/python3.11", "/usr/bin/python3.11", 0 }, /* python3, links followed */
        { "/usr/bin/node (deleted)", "/usr/bin/node", "/usr/bin/node", 0 },  /* upgraded under it */
        { "-", "/usr/bin/node", "/usr/bin/node", 0 },                  /* ps could not read it */
        { NULL, "/usr/bin/node", "/usr/bin/node", 0 },                 /* a ps without `exe` */
        { NULL, "", "", 0 },
    };
    ph_profile p;
    ph_error_t err = NULL;
    ph_strv env = { 0 };
    char out[256];

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int titled = ph_run_unnamed_program(cases[i].exe, cases[i].found, out, sizeof out);
        if (titled != cases[i].titled || strcmp(out, cases[i].want) != 0)
            fail_msg("case %zu: `%s` titled %d, want `%s` %d", i, out, titled, cases[i].want, cases[i].titled);
    }
    assert_int_equal(load("runtimes: {unnamed: [{program: [node], unless: [--perf-basic-prof], why: \"is bare\", "
                          "use: \"`start`\"}]}\n",
                          &p, &err),
                     0);
    assert_int_equal(ph_run_unnamed_refuse_titled("svc", &p, PH_UNNAMED_ATTACH, "/usr/bin/node", "verd\033]0;x",
                                                  "verd\033]0;x", &env, &err),
                     -1);
    assert_string_equal(err->msg, "service `svc`, mode `m`: node (shown as `verd\\x1b]0;x`: it set its title) is bare; "
                                  "use `start`");
    ph_error_free(&err);
    /* the words compose started it with stand in for its arguments */
    assert_int_equal(ph_run_unnamed_refuse_titled("svc", &p, PH_UNNAMED_ATTACH, "/usr/bin/node", "verdaccio",
                                                  "verdaccio node --perf-basic-prof app.js", &env, &err),
                     0);
    assert_null(err);
    ph_profile_free(&p);
}

/* ph_run_ps_env(ARGS, LINE) as its strings joined by `|`. */
static void
check_ps_env(const char *args, const char *line, const char *want)
{
    ph_strv env = { 0 };
    char got[512] = "";

    assert_int_equal(ph_run_ps_env(args, line, &env), 0);
    for (size_t i = 0; i < env.n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? "|" : "", env.v[i]);
    if (strcmp(got, want) != 0)
        fail_msg("`%s` after `%s`: `%s`, not `%s`", line, args, got, want);
    ph_strv_free(&env);
}

/* The environment `ps -o args e` puts after the arguments: a word with no
 * NAME= goes with the value before it; a line that does not start with
 * the arguments gives nothing. */
static void
test_ps_env(void **state)
{
    (void)state;
    check_ps_env("node /app.js", "node /app.js PATH=/bin HOSTNAME=x NODE_OPTIONS=--a --perf-basic-prof HOME=/root",
                 "PATH=/bin|HOSTNAME=x|NODE_OPTIONS=--a --perf-basic-prof|HOME=/root");
    /* a value with `=` in it, one that starts with a digit, an empty one */
    check_ps_env("a", "a X=b=c 1=y Y= Z=1", "X=b=c 1=y|Y=|Z=1");
    /* no environment; another process's line; a longer first word */
    check_ps_env("a b", "a b", "");
    check_ps_env("a b", "a c X=1", "");
    check_ps_env("a", "ab X=1", "");
    /* words before the first variable belong to no value */
    check_ps_env("a", "a junk X=1", "X=1");
}

/* The shipped perf mode: Python before 3.12 refused on start and attach;
 * 3.12+ only when attached to one started without perf support; node
 * when started without --perf-basic-prof (a start gives it the flag, so
 * a start is not refused); the flamegraph mode, whose sampler reads
 * Python's frames and gives node its flag, refuses neither. */
static void
test_unnamed_shipped(void **state)
{
    (void)state;
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    ph_profile *perf, *flame;
    static const char *const none[] = { NULL };
    static const char *const pyperf[] = { "PYTHONPERFSUPPORT=1", NULL };
    static const char *const nodeopt[] = { "NODE_OPTIONS=--perf-basic-prof", NULL };
    static const char *const nodeopt_fn[] = { "NODE_OPTIONS=--x --perf-basic-prof-only-functions", NULL };

    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);
    perf = ph_profiles_find(&set, "perf");
    flame = ph_profiles_find(&set, "flamegraph");
    assert_non_null(strstr(refused(perf, PH_UNNAMED_START, "python3.11", "python3 /a.py", none), "no perf support"));
    assert_non_null(strstr(refused(perf, PH_UNNAMED_ATTACH, "python3.11", "python3 /a.py", pyperf), "no perf support"));
    assert_non_null(strstr(refused(perf, PH_UNNAMED_START, "python3.9", "x", none), "no perf support"));
    assert_non_null(strstr(refused(perf, PH_UNNAMED_START, "python3.10", "x", none), "no perf support"));
    assert_non_null(strstr(refused(perf, PH_UNNAMED_START, "python3.11d", "x", none), "no perf support"));
    assert_non_null(strstr(refused(perf, PH_UNNAMED_START, "python2.7", "x", none), "no perf support"));
    assert_string_equal(refused(perf, PH_UNNAMED_START, "python3.12", "python3 /a.py", none), "-");
    assert_string_equal(refused(perf, PH_UNNAMED_START, "python3.13", "python3 /a.py", none), "-");
    assert_non_null(strstr(refused(perf, PH_UNNAMED_ATTACH, "python3.13", "python3 /a.py", none), "PYTHONPERFSUPPORT"));
    assert_string_equal(refused(perf, PH_UNNAMED_ATTACH, "python3.13", "python3 /a.py", pyperf), "-");
    assert_string_equal(refused(perf, PH_UNNAMED_ATTACH, "python3.12", "python3 -X perf /a.py", none), "-");
    assert_string_equal(refused(perf, PH_UNNAMED_ATTACH, "python3.12", "python3 -Xperf /a.py", none), "-");
    assert_non_null(strstr(refused(perf, PH_UNNAMED_ATTACH, "node", "node /a.js", none), "--perf-basic-prof"));
    assert_non_null(strstr(refused(perf, PH_UNNAMED_START, "node", "node /a.js", none), "--perf-basic-prof"));
    assert_string_equal(refused(perf, PH_UNNAMED_ATTACH, "node", "node /a.js", nodeopt), "-");
    assert_string_equal(refused(perf, PH_UNNAMED_ATTACH, "node", "node /a.js", nodeopt_fn), "-");
    assert_string_equal(refused(perf, PH_UNNAMED_ATTACH, "node", "node --perf-basic-prof /a.js", none), "-");
    assert_string_equal(refused(perf, PH_UNNAMED_ATTACH, "lang-c", "lang-c", none), "-");
    assert_string_equal(refused(perf, PH_UNNAMED_ATTACH, "java", "java -jar a.jar", none), "-");
    /* a JVM that interprets everything: the perf map's `Interpreter` only,
     * wherever HotSpot reads -Xint from; the sampler names its methods */
    {
        static const char *const tool[] = { "JAVA_TOOL_OPTIONS=-Xmx64m -Xint", NULL };
        static const char *const jdk[] = { "JDK_JAVA_OPTIONS=-Xint", NULL };
        static const char *const under[] = { "_JAVA_OPTIONS=-Xint", NULL };
        static const char *const other[] = { "JAVA_TOOL_OPTIONS=-Xint2", NULL };

        for (int w = PH_UNNAMED_START; w <= PH_UNNAMED_ATTACH; w <<= 1) {
            assert_non_null(strstr(refused(perf, w, "java", "java -Xint -cp /a A", none), "runs with -Xint"));
            assert_non_null(strstr(refused(perf, w, "java", "java -jar a.jar", tool), "runs with -Xint"));
            assert_non_null(strstr(refused(perf, w, "java", "java -jar a.jar", jdk), "runs with -Xint"));
            assert_non_null(strstr(refused(perf, w, "java", "java -jar a.jar", under), "runs with -Xint"));
            assert_string_equal(refused(perf, w, "java", "java -Xint2 -jar a.jar", other), "-");
            assert_string_equal(refused(flame, w, "java", "java -Xint -cp /a A", none), "-");
        }
        assert_non_null(strstr(ph_profile_unnamed_find(perf, PH_UNNAMED_ATTACH, "java", "java -Xint", NULL)->use,
                               "--mode flamegraph"));
    }
    /* what works is named */
    assert_non_null(strstr(ph_profile_unnamed_find(perf, PH_UNNAMED_START, "python3.11", "", NULL)->use,
                           "--mode flamegraph"));
    assert_string_equal(refused(flame, PH_UNNAMED_START, "python3.11", "python3 /a.py", none), "-");
    assert_string_equal(refused(flame, PH_UNNAMED_START, "node", "node /a.js", none), "-");
    ph_profiles_free(&set);
}

/* A start: the environment the container will have decides, so a node
 * that the mode's `runtimes.environment` gives --perf-basic-prof is not
 * refused, and one whose mode does not is. */
static void
test_unnamed_start_env(void **state)
{
    (void)state;
    ph_profile p;
    ph_error_t err = NULL;
    ph_service s = { .name = (char *)"web" };
    ph_run r = { 0 };
    ph_strv argv = { 0 }, img = { 0 };

    assert_int_equal(ph_strv_push(&argv, "node"), 0);
    assert_int_equal(ph_strv_push(&argv, "/a.js"), 0);
    assert_int_equal(ph_strv_push(&img, "PATH=/bin"), 0);

    assert_int_equal(load("runtimes:\n  environment: {NODE_OPTIONS: --perf-basic-prof}\n"
                          "  unnamed: [{program: node, unless: [NODE_OPTIONS=--perf-basic-prof], why: w, use: u}]\n",
                          &p, &err), 0);
    assert_int_equal(ph_run_unnamed_start(&r, &s, &p, "/usr/bin/node", &argv, &img, &err), 0);
    ph_profile_free(&p);
    assert_int_equal(load("runtimes:\n  environment: {NODE_OPTIONS: --other}\n"
                          "  unnamed: [{program: node, unless: [NODE_OPTIONS=--perf-basic-prof], why: w, use: u}]\n",
                          &p, &err), 0);
    assert_int_equal(ph_run_unnamed_start(&r, &s, &p, "/usr/bin/node", &argv, &img, &err), -1);
    assert_non_null(strstr(err->msg, "node w; use u"));
    ph_error_free(&err);
    /* the image's own value counts, and compose's */
    assert_int_equal(ph_strv_push(&img, "NODE_OPTIONS=--perf-basic-prof"), 0);
    assert_int_equal(ph_run_unnamed_start(&r, &s, &p, "/usr/bin/node", &argv, &img, &err), 0);
    free(img.v[1]);
    img.v[1] = NULL;
    img.n = 1;
    assert_int_equal(ph_kvv_set(&s.environment, "NODE_OPTIONS", "--perf-basic-prof"), 0);
    assert_int_equal(ph_run_unnamed_start(&r, &s, &p, "/usr/bin/node", &argv, &img, &err), 0);
    /* compose's value is the container's, not the image's */
    assert_int_equal(ph_strv_push(&img, "NODE_OPTIONS=--perf-basic-prof"), 0);
    assert_int_equal(ph_kvv_set(&s.environment, "NODE_OPTIONS", "--x"), 0);
    assert_int_equal(ph_run_unnamed_start(&r, &s, &p, "/usr/bin/node", &argv, &img, &err), -1);
    ph_error_free(&err);
    /* and --allow-unnamed goes on */
    ph_kvv_free(&s.environment);
    r.opts.allow_unnamed = 1;
    assert_int_equal(ph_run_unnamed_start(&r, &s, &p, "/usr/bin/node", &argv, &img, &err), 0);
    ph_profile_free(&p);
    ph_strv_free(&argv);
    ph_strv_free(&img);
}

/* The attached sampler's refusals, as shipped: a rule whose tools
 * container would refuse the runtime the same is refused under
 * --allow-unnamed too, its hint naming the mode that does go on (Node
 * and an unreadable CPython under flamegraph: perf) or none (wall); wall
 * needs a JVM, a CPython or a Node among the service's programs. */
static void
test_attach_shipped_refusals(void **state)
{
    static const char *const inspect[] = { "NODE_OPTIONS=--inspect", NULL };
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    ph_profile *flame, *wall, *perf, p;
    ph_strv env = envv(inspect), argv = { 0 }, img = { 0 };
    ph_service s = { .name = (char *)"web" };
    ph_run r = { 0 };

    (void)state;
    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);
    flame = ph_profiles_find(&set, "flamegraph");
    wall = ph_profiles_find(&set, "wall");
    perf = ph_profiles_find(&set, "perf");
    assert_int_equal(ph_run_unnamed_refuse("web", flame, PH_UNNAMED_ATTACH, "/usr/bin/node", "node /a.js", &env,
                                           &err), -1);
    assert_non_null(strstr(err->msg, "node was started with its inspector open"));
    assert_non_null(strstr(err->hint, "its native frames only: `profharness attach --mode perf --allow-unnamed web`"));
    assert_null(strstr(err->hint, "--mode flamegraph --allow-unnamed"));
    ph_error_free(&err);
    assert_int_equal(ph_run_unnamed_refuse("web", flame, PH_UNNAMED_ATTACH, "/usr/local/bin/python3.14",
                                           "python3 /a.py", NULL, &err), -1);
    assert_non_null(strstr(err->msg, "python3.14 is a CPython whose frames the attached reader cannot read"));
    assert_non_null(strstr(err->hint, "`profharness attach --mode perf --allow-unnamed web`"));
    ph_error_free(&err);
    assert_int_equal(ph_run_unnamed_refuse("web", wall, PH_UNNAMED_ATTACH, "/usr/local/bin/python3.14",
                                           "python3 /a.py", NULL, &err), -1);
    assert_non_null(strstr(err->msg, "use `start --mode wall`"));
    assert_non_null(strstr(err->hint, "--allow-unnamed does not go on under wall"));
    ph_error_free(&err);
    /* by the program's name, its ABI letters too: 3.7's python3.7m, the
     * free-threaded builds the reader refuses (python3.13t, 3.14t) */
    {
        static const char *const unreadable[] = { "python3.7m", "python3.7", "python3.6dm", "python3.13t",
                                                  "python3.14t", "python3.14", "python3.15", "python3.20", "python2.7" };
        static const char *const readable[] = { "python3.8", "python3.9", "python3.10", "python3.11", "python3.12",
                                                "python3.13", "python3" };

        for (size_t i = 0; i < sizeof unreadable / sizeof unreadable[0]; i++)
            for (int m = 0; m < 2; m++)
                if (ph_profile_unnamed_find(m ? wall : flame, PH_UNNAMED_ATTACH, unreadable[i], "x", NULL) == NULL)
                    fail_msg("%s not refused under %s", unreadable[i], m ? "wall" : "flamegraph");
        for (size_t i = 0; i < sizeof readable / sizeof readable[0]; i++)
            for (int m = 0; m < 2; m++)
                if (ph_profile_unnamed_find(m ? wall : flame, PH_UNNAMED_ATTACH, readable[i], "x", NULL) != NULL)
                    fail_msg("%s refused under %s", readable[i], m ? "wall" : "flamegraph");
    }
    /* the readable ones are not refused */
    assert_int_equal(ph_run_unnamed_refuse("web", wall, PH_UNNAMED_ATTACH, "/usr/bin/python3.13", "python3 /a.py",
                                           NULL, &err), 0);
    assert_int_equal(ph_run_unnamed_refuse("web", flame, PH_UNNAMED_ATTACH, "/usr/bin/python3.9", "python3 /a.py",
                                           NULL, &err), 0);
    /* what the wall clock can join from outside */
    assert_false(ph_profile_attach_needs(wall, "lang-c"));
    assert_false(ph_profile_attach_needs(wall, "sh"));
    assert_true(ph_profile_attach_needs(wall, "java"));
    assert_true(ph_profile_attach_needs(wall, "python3.11"));
    assert_true(ph_profile_attach_needs(wall, "node"));
    assert_true(ph_profile_attach_needs(flame, "lang-c"));
    assert_true(ph_profile_attach_needs(perf, "lang-c"));
    ph_profiles_free(&set);
    ph_strv_free(&env);
    /* --allow-unnamed passes a rule of this mode's, not one with `anyway` */
    assert_int_equal(ph_strv_push(&argv, "py"), 0);
    assert_int_equal(load("runtimes: {unnamed: [{program: py, on: [start], why: w, use: u, anyway: perf}]}\n", &p,
                          &err), 0);
    r.opts.allow_unnamed = 1;
    assert_int_equal(ph_run_unnamed_start(&r, &s, &p, "/usr/bin/py", &argv, &img, &err), -1);
    assert_non_null(strstr(err->hint, "`profharness start --mode perf --allow-unnamed web`"));
    ph_error_free(&err);
    ph_profile_free(&p);
    assert_int_equal(load("runtimes: {unnamed: [{program: py, on: [start], why: w, use: u}]}\n", &p, &err), 0);
    assert_int_equal(ph_run_unnamed_start(&r, &s, &p, "/usr/bin/py", &argv, &img, &err), 0);
    ph_profile_free(&p);
    assert_int_equal(load("runtimes: {unnamed: [{program: py, why: w, use: u, anyway: \"a b\"}]}\n", &p, &err), -1);
    assert_non_null(strstr(err->msg, "a mode's name or `none`"));
    ph_error_free(&err);
    ph_strv_free(&argv);
}

/* `runtimes.wrap`: read, the first rule whose glob matches the program's
 * file name, the same program as `wrap`'s, each item whole. */
static void
test_rewrap_key(void **state)
{
    (void)state;
    ph_profile p;
    ph_error_t err = NULL;

    assert_int_equal(load("runtimes:\n  wrap:\n    - {program: [\"py3.1[2-9]\", py4], wrap: [x, -a, \"{out}\"], why: w1}\n"
                          "    - {program: [\"py*\"], wrap: [x, -b], why: w2}\n",
                          &p, &err), 0);
    assert_int_equal(p.n_rewrap, 2);
    assert_string_equal(p.rewrap[0].wrap.v[2], "{out}");
    assert_string_equal(ph_profile_rewrap_find(&p, "py3.13")->why, "w1");
    assert_string_equal(ph_profile_rewrap_find(&p, "py4")->why, "w1");
    assert_string_equal(ph_profile_rewrap_find(&p, "py3.11")->why, "w2");
    assert_null(ph_profile_rewrap_find(&p, "node"));
    assert_null(ph_profile_rewrap_find(&p, ""));
    assert_null(ph_profile_rewrap_find(&p, NULL));
    ph_profile_free(&p);

    static const bad_text bad[] = {
        { "runtimes: {wrap: {program: x}}\n", "`runtimes.wrap` must be a list" },
        { "runtimes: {wrap: [x]}\n", "`runtimes.wrap` items must be mappings" },
        { "runtimes: {wrap: [{program: x, wrap: [x]}]}\n", "need `program`, `wrap` and `why`" },
        { "runtimes: {wrap: [{program: x, why: y}]}\n", "need `program`, `wrap` and `why`" },
        { "runtimes: {wrap: [{wrap: [x], why: y}]}\n", "need `program`, `wrap` and `why`" },
        { "runtimes: {wrap: [{program: /bin/x, wrap: [x], why: y}]}\n", "file names (globs), not `/bin/x`" },
        { "runtimes: {wrap: [{program: x, wrap: [y, -g], why: y}]}\n", "runs `y`, not `wrap`'s program `x`" },
    };
    refuses(bad, sizeof bad / sizeof bad[0]);
}

/* The shipped perf mode records CPython 3.12+ (built without frame
 * pointers: -g stops in its eval loop) with DWARF call graphs, and the
 * conversion does not ask addr2line for their inlined frames; every
 * other program keeps the frame-pointer wrap. */
static void
test_rewrap_shipped(void **state)
{
    (void)state;
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    const ph_profile *perf;
    const ph_profile_rewrap *w;
    static const char *const fp[] = { "python3.11", "python3.11d", "python2.7", "python3", "lang-c", "node", "java" };
    static const char *const dwarf[] = { "python3.12", "python3.13", "python3.13t", "python3.14", "python3.20" };

    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);
    perf = ph_profiles_find(&set, "perf");
    for (size_t i = 0; i < sizeof dwarf / sizeof dwarf[0]; i++) {
        char words[512] = "";

        if ((w = ph_profile_rewrap_find(perf, dwarf[i])) == NULL)
            fail_msg("%s is recorded with the profile's own wrap", dwarf[i]);
        for (size_t k = 0; k < w->wrap.n; k++)
            snprintf(words + strlen(words), sizeof words - strlen(words), " %s", w->wrap.v[k]);
        assert_non_null(strstr(words, " record "));
        assert_non_null(strstr(words, " --call-graph dwarf "));
        assert_null(strstr(words, " -g "));
        assert_string_equal(w->wrap.v[w->wrap.n - 1], "--");
    }
    for (size_t i = 0; i < sizeof fp / sizeof fp[0]; i++)
        if (ph_profile_rewrap_find(perf, fp[i]) != NULL)
            fail_msg("%s is recorded otherwise", fp[i]);
    for (size_t k = 0; k <= perf->convert.command.n; k++) {
        assert_true(k < perf->convert.command.n);
        if (strcmp(perf->convert.command.v[k], "--no-inline") == 0)
            break;
    }
    assert_non_null(strstr(perf->convert.symfs_command.v[2], "perf script --no-inline"));
    assert_int_equal(ph_profiles_find(&set, "flamegraph")->n_rewrap, 0);
    ph_profiles_free(&set);
}

/* The modes that sample JIT code turn on what Node and HotSpot offer. */
static void
test_shipped(void **state)
{
    (void)state;
    ph_profile_set set = { 0 };
    ph_error_t err = NULL;
    static const char *const modes[] = { "flamegraph", "perf", "wall" };

    assert_int_equal(ph_profiles_load_dir("profiles", &set, &err), 0);
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        ph_profile *p = ph_profiles_find(&set, modes[i]);

        assert_non_null(p);
        assert_non_null(strstr(ph_kvv_get(&p->env_extend, "NODE_OPTIONS"), "--perf-basic-prof"));
        assert_non_null(strstr(ph_kvv_get(&p->env_extend, "JAVA_TOOL_OPTIONS"), "-XX:+PreserveFramePointer"));
        assert_non_null(strstr(ph_kvv_get(&p->env_extend, "JAVA_TOOL_OPTIONS"), "-XX:+DumpPerfMapAtExit"));
        assert_int_equal(p->n_refresh, 2);
        /* the JVM's map now, by ph-jattach (no jcmd in a JRE), and the one it writes at exit */
        assert_string_equal(p->refresh[0].exec.v[0], "/opt/profharness/bin/ph-jattach");
        assert_false(p->refresh[0].in_service);
        assert_int_equal(p->n_after_exit, 1);
        assert_int_equal(ph_profile_exit_file(&p->after_exit[0], "perf-8.map", S_IFREG, 10), PH_EXIT_FILE_TAKE);
        assert_string_equal(p->after_exit[0].into, "perf-maps");
    }
    /* the sampler is HotSpot's agent too, in both its modes (the wall
     * clock's Java frames come from the agent as the CPU clock's do): the
     * library LD_PRELOAD loads */
    for (size_t i = 0; i < 2; i++) {
        ph_profile *p = ph_profiles_find(&set, i == 0 ? "flamegraph" : "wall");

        assert_string_equal(strstr(ph_kvv_get(&p->env_extend, "JAVA_TOOL_OPTIONS"), "-agentpath:"),
                            "-agentpath:/opt/profharness/lib/libphsampler.so");
        assert_non_null(strstr(ph_kvv_get(&p->env_extend, "JAVA_TOOL_OPTIONS"), "-XX:+DebugNonSafepoints"));
        assert_string_equal(ph_kvv_get(&p->environment, "LD_PRELOAD"), "/opt/profharness/lib/libphsampler.so");
    }
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
        cmocka_unit_test(test_run_env_extend_whole_name),
        cmocka_unit_test_setup_teardown(test_profile_key, tu_setup, tu_teardown),
        cmocka_unit_test(test_shipped),
        cmocka_unit_test_setup_teardown(test_after_exit_key, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unnamed_key, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unnamed_find, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unnamed_if, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unnamed_refuse, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unnamed_program_titled, tu_setup, tu_teardown),
        cmocka_unit_test(test_ps_env),
        cmocka_unit_test(test_unnamed_shipped),
        cmocka_unit_test_setup_teardown(test_unnamed_start_env, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_attach_shipped_refusals, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_rewrap_key, tu_setup, tu_teardown),
        cmocka_unit_test(test_rewrap_shipped),
    };
    return cmocka_run_group_tests_name("runtimes", tests, NULL, NULL);
}
