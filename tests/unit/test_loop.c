/* test_loop.c - the loop (harness/run/) through the fake backend
 * (harness/backend/ph_backend_fake.h): start, stop under every way a
 * service ends, collect, restore, attach, replicas, an interrupted
 * extraction, the order a run dir is completed in, the free space a
 * collection keeps; and what the loop asks of the backend (names, stop
 * graces, the create spec's command, labels).
 *
 * Each test makes a project in its own temp dir (test_dir/proj, runs in
 * test_dir/out) over a fresh world, with the shipped profiles (the
 * repository's profiles/, and its build/ph-init for the tools' hash: run
 * from the top of the tree, as run-unit.sh does).  Nothing here talks to
 * an Engine or sleeps. */
#include "test_util.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include "ph_backend_fake.h"
#include "ph_image.h"
#include "ph_log.h"
#include "ph_run_int.h"

/* ---- a disk whose free space the test says --------------------------------
 * The free-space checks (ph_tar_free_check) read fstatvfs; this binary's
 * own definition wins over libc's for the library linked into it.  With
 * fake_avail set, every filesystem has that many bytes available. */
static unsigned long long fake_avail;

int
fstatvfs(int fd, struct statvfs *buf)
{
    static int (*real)(int, struct statvfs *);

    if (real == NULL)
        real = (int (*)(int, struct statvfs *))dlsym(RTLD_NEXT, "fstatvfs");
    if (real(fd, buf) < 0)
        return -1;
    if (fake_avail > 0) {
        buf->f_frsize = 1;
        buf->f_bsize = 1;
        buf->f_bavail = buf->f_bfree = fake_avail;
        buf->f_blocks = fake_avail * 4;
    }
    return 0;
}

/* ---- the fixture ------------------------------------------------------------ */

typedef struct world {
    ph_fake *f;
    ph_run *r;
    char top[PATH_MAX];  /* the repository: data dir */
    char out[PATH_MAX];  /* test_dir/out */
    char proj[PATH_MAX]; /* test_dir/proj */
} world;

static world W;

/* Fail with the calls so far when COND does not hold. */
#define CHECK(cond, ...)                                                                                          \
    do {                                                                                                          \
        if (!(cond)) {                                                                                            \
            char *log_ = ph_fake_call_log(W.f);                                                                   \
            print_error("%s\n", log_ ? log_ : "");                                                                \
            free(log_);                                                                                           \
            fail_msg(__VA_ARGS__);                                                                                \
        }                                                                                                         \
    } while (0)


#define DEMO_IMAGE "demo:1"
#define DEMO_ID "sha256:d3m0"
#define RECORD_STOPPED \
    "{\"version\":1,\"exit_code\":0,\"signal\":\"SIGTERM\",\"escalations\":[],\"stop_signal\":\"SIGTERM\"," \
    "\"stop_requested\":true,\"complete\":true,\"outcome\":\"stopped\"}"
#define STRACE_LOG "12:00:00.000001 read(3, \"x\", 1) = 1 <0.000010>\n"
#define STRACE_JOINED "2026-01-01T00:00:00.000000000Z strace: Process 7 attached\n"

static void
mkdirs(const char *rel)
{
    char cmd[PATH_MAX + 32];

    snprintf(cmd, sizeof cmd, "mkdir -p '%s/%s'", test_dir, rel);
    assert_int_equal(system(cmd), 0);
}

/* The demo's image: glibc, apt, its program dynamic; ENTRYPOINT
 * /usr/bin/demo, CMD --serve. */
static ph_fake_image *
demo_image(const char *name, const char *id)
{
    ph_fake_image *img = ph_fake_image_add(W.f, name, id);
    ph_image_config *c = ph_fake_image_config(img);

    assert_non_null(img);
    assert_int_equal(ph_strv_push(&c->entrypoint, "/usr/bin/demo"), 0);
    assert_int_equal(ph_strv_push(&c->cmd, "--serve"), 0);
    assert_int_equal(ph_strv_push(&c->env, "PATH=/usr/local/bin:/usr/bin:/bin"), 0);
    assert_int_equal(ph_fake_image_facts(img, "apt", "glibc"), 0);
    assert_int_equal(ph_fake_image_program(img, "/usr/bin/demo", 1), 0);
    return img;
}

/* The tools image and its volume, there already (as `setup` leaves them). */
static void
tools_ready(void)
{
    char hash[64], keeper[128];
    ph_error_t err = NULL;

    assert_non_null(ph_fake_image_add(W.f, "profharness-tools:*", "sha256:70015"));
    if (ph_image_tools_hash(W.top, ph_run_profiles(W.r), hash, sizeof hash, &err) < 0)
        fail_msg("the tools' hash (is the tree built? run from its top): %s", err->msg);
    snprintf(keeper, sizeof keeper, "%s%s", PH_TOOLS_VOLUME_PREFIX, hash);
    ph_fake_wl_state(ph_fake_workload(W.f, keeper, "profharness-tools:x"), PH_WL_CREATED, 0);
}

/* A project of COMPOSE_YAML over a fresh world with the demo's image and
 * the tools; runs land in test_dir/out.  LIMITS may be NULL. */
static void
open_world(const char *compose_yaml, const ph_tar_limits *limits)
{
    ph_run_opts o = { 0 };
    char compose[PATH_MAX + 32];
    ph_error_t err = NULL;

    assert_non_null(getcwd(W.top, sizeof W.top));
    snprintf(W.out, sizeof W.out, "%s/out", test_dir);
    snprintf(W.proj, sizeof W.proj, "%s/proj", test_dir);
    mkdirs("proj");
    tu_write("proj/compose.yaml", compose_yaml);
    snprintf(compose, sizeof compose, "%s/compose.yaml", W.proj);
    W.f = ph_fake_new();
    assert_non_null(W.f);
    o.compose_file = compose;
    o.data_dir = W.top;
    o.out_dir = W.out;
    o.backend_new = ph_fake_backend;
    o.backend_ud = W.f;
    if (limits != NULL)
        o.collect = *limits;
    W.r = ph_run_new(&o, &err);
    if (W.r == NULL)
        fail_msg("ph_run_new: %s", err->msg);
    demo_image(DEMO_IMAGE, DEMO_ID);
    tools_ready();
}

static void
close_world(void)
{
    ph_run_free(W.r);
    ph_fake_free(W.f);
    memset(&W, 0, sizeof W);
}

static int
setup(void **state)
{
    (void)state;
    tu_mkdtemp();
    ph_log_set_level(PH_LOG_WARN);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    close_world();
    fake_avail = 0;
    tu_rmdir();
    return 0;
}

/* What a profiled container of SERVICE (named as GLOB) writes: a
 * strace.log from the start, the shim's record as it ends. */
static ph_fake_wl *
profiled_writes_rec(const char *glob, const char *service, ph_fake_end end, const char *record)
{
    ph_fake_wl *t = ph_fake_on_create(W.f, glob);
    char path[PATH_MAX];

    assert_non_null(t);
    ph_fake_wl_end(t, end);
    snprintf(path, sizeof path, "%s/%s/strace.log", PH_CONTAINER_OUT, service);
    assert_int_equal(ph_fake_wl_file(t, path, STRACE_LOG, strlen(STRACE_LOG), 0644), 0);
    snprintf(path, sizeof path, "%s/%s/%s", PH_CONTAINER_OUT, service, PH_RECORD_NAME);
    assert_int_equal(ph_fake_wl_file_at_end(t, path, record), 0);
    assert_int_equal(ph_fake_wl_log(t, "2026-01-01T00:00:00.000000000Z serving\n"), 0);
    return t;
}

static ph_fake_wl *
profiled_writes(const char *glob, const char *service, ph_fake_end end)
{
    return profiled_writes_rec(glob, service, end, RECORD_STOPPED);
}

/* test_dir/out/REL as JSON (the caller's to decref), or fail. */
static json_t *
json_at(const char *rel)
{
    char p[PATH_MAX + 256];
    json_error_t je;
    json_t *j;

    snprintf(p, sizeof p, "%s/%s", W.out, rel);
    j = json_load_file(p, 0, &je);
    CHECK(j != NULL, "%s: %s", p, je.text);
    return j;
}

static void
must(int rc, ph_error_t *err, const char *what)
{
    if (rc < 0) {
        char *log = ph_fake_call_log(W.f);

        print_error("%s\n", log ? log : "");
        free(log);
        fail_msg("%s: %s (hint: %s)", what, *err ? (*err)->msg : "?", *err ? (*err)->hint : "");
    }
}

static int
start(const char *mode, const char *service)
{
    char *names[1] = { (char *)service };
    ph_error_t err = NULL;
    int rc = ph_run_start(W.r, mode, names, 1, &err);

    must(rc, &err, "start");
    return rc;
}

static void
stop_ok(const char *service)
{
    char *names[1] = { (char *)service };
    ph_error_t err = NULL;

    must(ph_run_stop(W.r, names, 1, &err), &err, "stop");
}

/* Stop SERVICE, which must fail: its error (the caller's to free). */
static ph_error_t
stop_fails(const char *service)
{
    char *names[1] = { (char *)service };
    ph_error_t err = NULL;

    CHECK(ph_run_stop(W.r, names, 1, &err) < 0, "stop of %s did not fail", service);
    assert_non_null(err);
    return err;
}

/* The index (from 0) of the nth call of OP in the calls, or -1. */
static long
call_index(const char *op, size_t nth)
{
    const ph_fake_call *want = ph_fake_call_nth(W.f, op, nth);

    for (size_t i = 0; want != NULL && i < ph_fake_n_calls(W.f); i++)
        if (ph_fake_call_at(W.f, i) == want)
            return (long)i;
    return -1;
}

/* The index of the first call of OP on the workload NAME, or -1; how
 * many there are. */
static long
call_on(const char *op, const char *name)
{
    for (size_t i = 0; i < ph_fake_n_calls(W.f); i++) {
        const ph_fake_call *c = ph_fake_call_at(W.f, i);

        if (strcmp(c->op, op) == 0 && c->name != NULL && strcmp(c->name, name) == 0)
            return (long)i;
    }
    return -1;
}

static size_t
calls_on(const char *op, const char *name)
{
    size_t n = 0;

    for (size_t i = 0; i < ph_fake_n_calls(W.f); i++) {
        const ph_fake_call *c = ph_fake_call_at(W.f, i);

        n += strcmp(c->op, op) == 0 && c->name != NULL && strcmp(c->name, name) == 0;
    }
    return n;
}

/* Whether the workload NAME (or id) is there, and its state (may be NULL). */
static int
there(const char *name, ph_workload_state *state)
{
    ph_workload w;
    int found = ph_fake_look(W.f, name, &w);

    if (state != NULL)
        *state = w.state;
    ph_workload_clear(&w);
    return found;
}

/* The run call that created NAME, or fail. */
static const ph_fake_call *
run_of(const char *name)
{
    for (size_t i = 0; i < ph_fake_call_count(W.f, "run"); i++) {
        const ph_fake_call *c = ph_fake_call_nth(W.f, "run", i);

        if (c->spec.name != NULL && strcmp(c->spec.name, name) == 0)
            return c;
    }
    CHECK(0, "no container `%s` was made", name);
    return NULL;
}

static const char *
spec_label(const ph_workload_spec *s, const char *key)
{
    return ph_kvv_get(&s->labels, key);
}

/* Whether ARGV holds the words WORDS (NULL-ended) in a row. */
static int
has_words(const ph_strv *argv, const char *const *words)
{
    size_t n = 0;

    while (words[n] != NULL)
        n++;
    for (size_t i = 0; i + n <= argv->n; i++) {
        size_t k = 0;

        while (k < n && strcmp(argv->v[i + k], words[k]) == 0)
            k++;
        if (k == n)
            return 1;
    }
    return 0;
}

/* test_dir/out/REL exists (links not followed). */
static int
exists(const char *rel)
{
    char p[PATH_MAX + 256];
    struct stat st;

    snprintf(p, sizeof p, "%s/%s", W.out, rel);
    return lstat(p, &st) == 0;
}

/* The one run dir of SERVICE (its name into RUN), failing when there is
 * not exactly one. */
static void
the_run(const char *service, char *run, size_t len)
{
    char p[PATH_MAX];
    DIR *d;
    struct dirent *de;
    int n = 0;

    snprintf(p, sizeof p, "%s/%s", W.out, service);
    d = opendir(p);
    CHECK(d != NULL, "no %s", p);
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        char q[PATH_MAX + 256];

        snprintf(q, sizeof q, "%s/%s", p, de->d_name);
        if (de->d_name[0] == '.' || strcmp(de->d_name, "latest") == 0 || lstat(q, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        snprintf(run, len, "%s", de->d_name);
        n++;
    }
    closedir(d);
    CHECK(n == 1, "%d run dirs in %s, wanted 1", n, p);
}

/* No temp dir of a collection left anywhere under test_dir/out/SERVICE. */
static void
no_temp_left(const char *service)
{
    char cmd[PATH_MAX + 128];

    snprintf(cmd, sizeof cmd, "test -z \"$(find '%s/%s' -name '.incoming-*' 2>/dev/null)\"", W.out, service);
    CHECK(system(cmd) == 0, "a temp dir is left under %s/%s", W.out, service);
}

#define ONE "services:\n  front:\n    image: " DEMO_IMAGE "\n"

/* ---- start ------------------------------------------------------------------ */

/* A lone service under strace: one container, named <project>-<service>-
 * <mode>, running the service's own image with the tools volume, its
 * command the shim (the profile's grace in seconds), the tree's strace,
 * then the image's ENTRYPOINT and CMD; the orchestrator's stop timeout
 * the whole stop budget (30 s grace, one 10 s escalation, 30 s), our
 * labels, never restarted. */
static void
test_start_lone(void **state)
{
    static const char *const shim[] = { "/opt/profharness/bin/ph-init", "--stop-target", "tracee", "--stop-signal",
                                        "SIGTERM", "--grace", "30.000", "--escalate", "SIGKILL", "--escalate-grace",
                                        "10.000", "--record", "/opt/profiling/front/ph-exit.json", "--", NULL };
    static const char *const tail[] = { "/opt/profharness/tools/bin/strace", "-f", "-tt", "-T", "-e", "trace=all",
                                        "-s", "256", "-o", "/opt/profiling/front/strace.log", "--",
                                        "/usr/bin/demo", "--serve", NULL };
    const ph_fake_call *c;
    const ph_workload_spec *s;
    char want[PATH_MAX];

    (void)state;
    open_world(ONE, NULL);
    start("strace", "front");
    CHECK(ph_fake_call_count(W.f, "run") == 1, "one container made");
    c = run_of("proj-front-strace");
    s = &c->spec;
    assert_string_equal(s->image, DEMO_IMAGE);
    CHECK(s->set_entrypoint && has_words(&s->entrypoint, shim) && has_words(&s->entrypoint, tail),
          "the profiled argv: %s", tu_join(s->entrypoint.v, s->entrypoint.n));
    assert_string_equal(s->entrypoint.v[0], "/opt/profharness/bin/ph-init");
    assert_string_equal(s->entrypoint.v[s->entrypoint.n - 1], "--serve");
    CHECK(s->set_cmd && s->cmd.n == 0, "no CMD after the shim's argv");
    assert_int_equal(s->stop_grace_s, 70);
    assert_string_equal(s->stop_signal, "SIGTERM");
    assert_true(s->no_restart);
    assert_string_equal(spec_label(s, PH_LABEL_PROJECT), "proj");
    assert_string_equal(spec_label(s, PH_LABEL_SERVICE), "front");
    assert_string_equal(spec_label(s, PH_LABEL_MODE), "strace");
    assert_non_null(spec_label(s, PH_LABEL_PROFILE));
    snprintf(want, sizeof want, "%s/front/%s", W.out, spec_label(s, PH_LABEL_RUN));
    assert_string_equal(spec_label(s, PH_LABEL_OUTDIR), want);
    assert_null(spec_label(s, PH_LABEL_REPLICA));
    /* the tools volume read-only, never filled; the artifacts' own volume */
    CHECK(s->n_mounts == 2 && s->mounts[0].kind == PH_MOUNT_SPEC_VOLUME && s->mounts[0].read_only &&
          s->mounts[0].no_copy && strcmp(s->mounts[0].target, PH_TOOLS_MOUNT) == 0 &&
          s->mounts[1].kind == PH_MOUNT_SPEC_ANON && strcmp(s->mounts[1].target, PH_CONTAINER_OUT) == 0,
          "the mounts");
    assert_string_equal(s->open_dir, "/opt/profiling/front");
    CHECK(ph_fake_count(W.f, PH_LABEL_MODE, "strace") == 1, "one profiled container there");
}

/* massif from the tools tree in a musl image FROM scratch (its program
 * and musl's loader, no /tmp): the workload gets an empty /tmp of its
 * own, where valgrind writes its files and vgdb its FIFOs; an image with
 * a /tmp (the demo's) gets none (test_start_lone's two mounts). */
static void
test_start_no_tmp(void **state)
{
    ph_fake_image *img;
    const ph_workload_spec *s;
    size_t tmp = 0;

    (void)state;
    open_world("services:\n  front:\n    image: scratchy:1\n", NULL);
    img = ph_fake_image_add(W.f, "scratchy:1", "sha256:scratchy");
    assert_non_null(img);
    assert_int_equal(ph_strv_push(&ph_fake_image_config(img)->entrypoint, "/usr/bin/demo"), 0);
    assert_int_equal(ph_fake_image_facts(img, NULL, "musl"), 0);
    assert_int_equal(ph_fake_image_program(img, "/usr/bin/demo", 1), 0);
    start("massif", "front");
    s = &run_of("proj-front-massif")->spec;
    CHECK(strcmp(s->entrypoint.v[s->entrypoint.n - 1], "/usr/bin/demo") == 0 &&
          has_words(&s->entrypoint, (const char *const[]){ "/opt/profharness/tools/bin/valgrind", NULL }),
          "valgrind from the tree: %s", tu_join(s->entrypoint.v, s->entrypoint.n));
    for (size_t i = 0; i < s->n_mounts; i++)
        tmp += s->mounts[i].kind == PH_MOUNT_SPEC_ANON && strcmp(s->mounts[i].target, "/tmp") == 0;
    CHECK(tmp == 1, "one empty /tmp of its own (%zu mounts)", s->n_mounts);
}

/* Docker's rule for what runs: an entrypoint the service gives drops the
 * image's CMD (the image's ENTRYPOINT too); a command it gives replaces
 * only the CMD. */
static void
test_start_entrypoint_drops_cmd(void **state)
{
    const ph_fake_call *c;

    (void)state;
    open_world("services:\n"
               "  ep:\n    image: " DEMO_IMAGE "\n    entrypoint: [/bin/run, -x]\n"
               "  cmd:\n    image: " DEMO_IMAGE "\n    command: [--other]\n", NULL);
    start("strace", "ep");
    c = run_of("proj-ep-strace");
    CHECK(strcmp(c->spec.entrypoint.v[c->spec.entrypoint.n - 1], "-x") == 0 &&
          strcmp(c->spec.entrypoint.v[c->spec.entrypoint.n - 2], "/bin/run") == 0 &&
          strcmp(c->spec.entrypoint.v[c->spec.entrypoint.n - 3], "--") == 0,
          "the service's entrypoint and nothing of the image's: %s",
          tu_join(c->spec.entrypoint.v, c->spec.entrypoint.n));
    start("strace", "cmd");
    c = run_of("proj-cmd-strace");
    CHECK(strcmp(c->spec.entrypoint.v[c->spec.entrypoint.n - 1], "--other") == 0 &&
          strcmp(c->spec.entrypoint.v[c->spec.entrypoint.n - 2], "/usr/bin/demo") == 0,
          "the image's entrypoint, the service's command: %s",
          tu_join(c->spec.entrypoint.v, c->spec.entrypoint.n));
}

/* ---- stop, by how the service ends ----------------------------------------- */

/* Started under strace, ending as END when asked: the run's id. */
static const char *
started(ph_fake_end end, const char *record)
{
    static char run[128];
    const ph_fake_call *c;

    open_world(ONE, NULL);
    profiled_writes_rec("proj-front-strace", "front", end, record);
    start("strace", "front");
    c = run_of("proj-front-strace");
    snprintf(run, sizeof run, "%s", spec_label(&c->spec, PH_LABEL_RUN));
    return run;
}

/* The run of RUN collected in place: its files, run.json naming the
 * container ID, `latest` at it; the container gone. */
static json_t *
collected(const char *run, const char *id)
{
    char rel[512], link[PATH_MAX];
    json_t *meta;
    ssize_t n;

    snprintf(rel, sizeof rel, "front/%s/strace.log", run);
    CHECK(exists(rel), "%s collected", rel);
    snprintf(rel, sizeof rel, "front/%s/service.log", run);
    CHECK(exists(rel), "%s kept", rel);
    snprintf(rel, sizeof rel, "front/%s/report.html", run);
    CHECK(exists(rel), "%s written", rel);
    snprintf(rel, sizeof rel, "%s/front/latest", W.out);
    n = readlink(rel, link, sizeof link - 1);
    CHECK(n > 0, "front/latest is a link");
    link[n] = '\0';
    assert_string_equal(link, run);
    snprintf(rel, sizeof rel, "front/%s/run.json", run);
    meta = json_at(rel);
    assert_string_equal(json_string_value(json_object_get(meta, "container")), id);
    assert_string_equal(json_string_value(json_object_get(meta, "run")), run);
    CHECK(ph_fake_files_under(W.f, id, "/") < 0, "the container is removed once its run is in place");
    no_temp_left("front");
    return meta;
}

static const char *
profiled_id(void)
{
    ph_workload w;
    static char id[72];

    CHECK(ph_fake_look(W.f, "proj-front-strace", &w) == 1, "the profiled container is there");
    snprintf(id, sizeof id, "%s", w.id);
    ph_workload_clear(&w);
    return id;
}

/* It exits on SIGTERM after two polls: the wait is registered before the
 * signal, which goes to the shim; the wait is the stop budget; the run is
 * complete before the container goes. */
static void
test_stop_exits_on_term(void **state)
{
    const char *run = started((ph_fake_end){ PH_FAKE_EXITS_ON_TERM, 0, 2 }, RECORD_STOPPED);
    const char *id = profiled_id();
    const ph_fake_call *sig, *wait;
    json_t *meta;

    (void)state;
    stop_ok("front");
    sig = ph_fake_call_nth(W.f, "signal", 0);
    wait = ph_fake_call_nth(W.f, "wait_end", 0);
    CHECK(sig != NULL && wait != NULL && ph_fake_call_count(W.f, "signal") == 1, "one signal, one wait");
    assert_string_equal(sig->arg, "SIGTERM");
    assert_string_equal(sig->target, id);
    CHECK(call_index("wait_begin", 0) >= 0 && call_index("wait_begin", 0) < call_index("signal", 0),
          "the wait is registered before the signal");
    assert_int_equal(wait->num, 70);
    CHECK(call_on("remove", "proj-front-strace") > call_on("log_all", "proj-front-strace") &&
          call_on("log_all", "proj-front-strace") > call_on("archive_get", "proj-front-strace"),
          "extracted, then service.log, then removed");
    meta = collected(run, id);
    assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "completion"), "outcome")), "stopped");
    assert_false(json_is_true(json_object_get(meta, "oom_killed")));
    json_decref(meta);
}

/* It ignores SIGTERM: the wait times out, nothing is collected, the
 * container is kept (running) and the hint says how to retry. */
static void
test_stop_ignores_term(void **state)
{
    ph_error_t err;
    ph_workload_state st;

    (void)state;
    started((ph_fake_end){ PH_FAKE_IGNORES_TERM, 0, 0 }, RECORD_STOPPED);
    err = stop_fails("front");
    CHECK(strstr(err->msg, "did not exit within 70 s") != NULL, "why: %s", err->msg);
    CHECK(strstr(err->hint, "is kept") != NULL && strstr(err->hint, "profharness stop front") != NULL, "hint: %s",
          err->hint);
    ph_error_free(&err);
    CHECK(there("proj-front-strace", &st) && st == PH_WL_RUNNING, "kept, running");
    CHECK(calls_on("remove", "proj-front-strace") == 0 && calls_on("archive_get", "proj-front-strace") == 0,
          "nothing taken");
    CHECK(!exists("front/latest"), "no run");
    no_temp_left("front");
}

/* It crashes on SIGTERM: what it wrote is collected all the same, the
 * record saying how it ended. */
static void
test_stop_crashes(void **state)
{
    const char *run = started((ph_fake_end){ PH_FAKE_CRASHES, 0, 0 },
                              "{\"version\":1,\"exit_code\":139,\"signal\":\"SIGSEGV\",\"escalations\":[],"
                              "\"stop_requested\":true,\"complete\":false,\"outcome\":\"crashed\"}");
    const char *id = profiled_id();
    json_t *meta;

    (void)state;
    stop_ok("front");
    meta = collected(run, id);
    assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "completion"), "outcome")), "crashed");
    json_decref(meta);
}

/* It ended by itself before the stop: nothing is signalled, it is
 * collected. */
static void
test_stop_exited_by_itself(void **state)
{
    const char *run = started((ph_fake_end){ PH_FAKE_EXITS_BY_ITSELF, 3, 0 }, RECORD_STOPPED);
    const char *id = profiled_id();

    (void)state;
    stop_ok("front");
    json_decref(collected(run, id));
    CHECK(ph_fake_call_count(W.f, "signal") == 0, "an exited container is not signalled");
}

/* The OOM killer ended it: collected, and run.json says so. */
static void
test_stop_oom(void **state)
{
    const char *run = started((ph_fake_end){ PH_FAKE_OOM, 0, 1 }, RECORD_STOPPED);
    const char *id = profiled_id();
    json_t *meta;

    (void)state;
    stop_ok("front");
    meta = collected(run, id);
    assert_true(json_is_true(json_object_get(meta, "oom_killed")));
    json_decref(meta);
}

/* ---- collect ------------------------------------------------------------------ */

/* A running flamegraph run (its program checked: dynamic, so the sampler
 * can be preloaded) collected: the dump command in the container, then a
 * -snapshot- copy beside, the container running on, untouched. */
static void
test_collect_snapshot(void **state)
{
    char *names[1] = { "front" }, run[256];
    const ph_fake_call *ex;
    ph_fake_wl *t;
    ph_error_t err = NULL;
    ph_workload_state st;

    (void)state;
    open_world(ONE, NULL);
    t = ph_fake_on_create(W.f, "proj-front-flamegraph");
    assert_int_equal(ph_fake_wl_file(t, "/opt/profiling/front/stacks-1.folded", "main;work 3\n", 12, 0644), 0);
    start("flamegraph", "front");
    CHECK(call_on("archive_get", "proj-front-flamegraph") < 0, "nothing read before the collect");
    must(ph_run_collect(W.r, names, 1, &err), &err, "collect");
    /* the runtimes' refresh steps first (30 s each), then the dump */
    for (size_t i = 0; (ex = ph_fake_call_nth(W.f, "exec", i)) != NULL && ex->num != 40; i++)
        ;
    CHECK(ex != NULL && ex->name != NULL && strcmp(ex->name, "proj-front-flamegraph") == 0 && ex->argv.n > 0 &&
          strcmp(ex->argv.v[0], "sh") == 0 && ex->num == 40, "the dump command in the running container, 40 s");
    CHECK(ex->env.n == 1 && strcmp(ex->env.v[0], "LD_PRELOAD=") == 0, "the dump command is not sampled");
    the_run("front", run, sizeof run);
    CHECK(strstr(run, "-snapshot-") != NULL, "a snapshot run: %s", run);
    CHECK(there("proj-front-flamegraph", &st) && st == PH_WL_RUNNING, "it runs on");
    CHECK(calls_on("signal", "proj-front-flamegraph") == 0 && calls_on("remove", "proj-front-flamegraph") == 0,
          "neither signalled nor removed");
    CHECK(!exists("front/latest"), "a snapshot moves no link");
    no_temp_left("front");
}

/* ---- restore ----------------------------------------------------------------- */

/* A profiled run is collected first, then the service runs as compose
 * would make it: compose's labels, its own command. */
static void
test_restore_after_profiled(void **state)
{
    char *names[1] = { "front" };
    const ph_fake_call *c;
    ph_error_t err = NULL;
    const char *run;

    (void)state;
    char id[72];

    run = started((ph_fake_end){ PH_FAKE_EXITS_ON_TERM, 0, 0 }, RECORD_STOPPED);
    snprintf(id, sizeof id, "%s", profiled_id());
    must(ph_run_restore(W.r, names, 1, &err), &err, "restore");
    json_decref(collected(run, id));
    c = run_of("proj-front-1");
    CHECK(call_on("run", "proj-front-1") > call_on("remove", "proj-front-strace"), "collected before the restore");
    assert_true(c->spec.compose_labels);
    assert_int_equal(c->spec.slot, 1);
    assert_false(c->spec.set_entrypoint);
    assert_false(c->spec.set_cmd);
    assert_string_equal(spec_label(&c->spec, PH_LABEL_MODE), "none");
    CHECK(ph_fake_count(W.f, PH_DC_SERVICE, "front") == 1, "compose takes it for its own");
}

/* docker compose's own container: stopped (its grace, in seconds) and kept
 * by start, started again by restore; nothing new is made for it. */
static void
test_restore_compose_own(void **state)
{
    char *names[1] = { "front" };
    ph_fake_wl *own;
    const ph_fake_call *st;
    ph_error_t err = NULL;
    ph_workload_state wl_state;

    (void)state;
    open_world("services:\n  front:\n    image: " DEMO_IMAGE "\n    stop_grace_period: 30s\n", NULL);
    own = ph_fake_workload(W.f, "proj-front-1", DEMO_IMAGE);
    ph_fake_wl_label(own, PH_DC_PROJECT, "proj");
    ph_fake_wl_label(own, PH_DC_SERVICE, "front");
    ph_fake_wl_label(own, PH_DC_NUMBER, "1");
    profiled_writes("proj-front-strace", "front", (ph_fake_end){ 0 });
    start("strace", "front");
    st = ph_fake_call_nth(W.f, "stop", 0);
    CHECK(st != NULL && strcmp(st->target, ph_fake_wl_id(own)) == 0, "compose's container is stopped");
    assert_int_equal(st->num, 30);
    CHECK(calls_on("remove", "proj-front-1") == 0, "and kept");
    must(ph_run_restore(W.r, names, 1, &err), &err, "restore");
    CHECK(call_on("start", "proj-front-1") > call_on("remove", "proj-front-strace"),
          "started again after the collection");
    CHECK(ph_fake_call_count(W.f, "run") == 1, "nothing made but the profiled one");
    CHECK(there("proj-front-1", &wl_state) && wl_state == PH_WL_RUNNING, "compose's runs again");
}

/* A stop grace of 0 s is given to the orchestrator as 0, not left to its
 * default. */
static void
test_replaced_grace_zero(void **state)
{
    ph_fake_wl *own;
    const ph_fake_call *st;

    (void)state;
    open_world("services:\n  front:\n    image: " DEMO_IMAGE "\n    stop_grace_period: 0s\n", NULL);
    own = ph_fake_workload(W.f, "proj-front-1", DEMO_IMAGE);
    ph_fake_wl_label(own, PH_DC_PROJECT, "proj");
    ph_fake_wl_label(own, PH_DC_SERVICE, "front");
    start("strace", "front");
    st = ph_fake_call_nth(W.f, "stop", 0);
    CHECK(st != NULL, "compose's container is stopped");
    assert_int_equal(st->num, 0);
}

/* ---- attach ------------------------------------------------------------------ */

/* A tools container joins the running service's PID namespace, no
 * network, labelled as a run attached to it; stop detaches it (SIGTERM to
 * the tools container only) and collects; the service is never touched. */
static void
test_attach_and_detach(void **state)
{
    char *names[1] = { "front" }, run[256], rel[512];
    ph_fake_wl *own, *t;
    const ph_fake_call *c;
    ph_error_t err = NULL;
    json_t *meta;

    (void)state;
    open_world(ONE, NULL);
    own = ph_fake_workload(W.f, "proj-front-1", DEMO_IMAGE);
    ph_fake_wl_label(own, PH_DC_PROJECT, "proj");
    ph_fake_wl_label(own, PH_DC_SERVICE, "front");
    t = profiled_writes("proj-front-attach-strace", "front", (ph_fake_end){ 0 });
    assert_int_equal(ph_fake_wl_log(t, STRACE_JOINED), 0);
    must(ph_run_attach(W.r, "strace", names, 1, &err), &err, "attach");
    c = run_of("proj-front-attach-strace");
    CHECK(c->spec.pid_of != NULL && strcmp(c->spec.pid_of, ph_fake_wl_id(own)) == 0,
          "the service's PID namespace joined: %s", c->spec.pid_of ? c->spec.pid_of : "(none: the host's)");
    assert_true(c->spec.network_none);
    assert_null(c->spec.net_of); /* strace has no `attach.network: service` */
    assert_string_equal(spec_label(&c->spec, PH_LABEL_ATTACHED), ph_fake_wl_id(own));
    assert_string_equal(spec_label(&c->spec, PH_LABEL_MODE), "strace");
    CHECK(strncmp(c->spec.image, "profharness-tools:", 18) == 0, "the tools image: %s", c->spec.image);
    assert_int_equal(c->spec.stop_grace_s, 70);
    stop_ok("front");
    CHECK(calls_on("signal", "proj-front-attach-strace") == 1, "the tools container is signalled");
    CHECK(calls_on("signal", "proj-front-1") == 0 && calls_on("stop", "proj-front-1") == 0 &&
          calls_on("remove", "proj-front-1") == 0, "the service is never touched");
    the_run("front", run, sizeof run);
    snprintf(rel, sizeof rel, "front/%s/run.json", run);
    meta = json_at(rel);
    assert_string_equal(json_string_value(json_object_get(meta, "attached_to")), ph_fake_wl_id(own));
    json_decref(meta);
}

/* The service's own container and an attach's tools container for it,
 * which ends or says LOG as the test asks (END, LOG). */
static ph_fake_wl *
attach_world(ph_fake_end end, const char *log)
{
    ph_fake_wl *own, *t;

    open_world(ONE, NULL);
    own = ph_fake_workload(W.f, "proj-front-1", DEMO_IMAGE);
    ph_fake_wl_label(own, PH_DC_PROJECT, "proj");
    ph_fake_wl_label(own, PH_DC_SERVICE, "front");
    t = profiled_writes("proj-front-attach-strace", "front", end);
    assert_int_equal(ph_fake_wl_log(t, log), 0);
    return own;
}

/* attach returns once the tools container has said it joined (the
 * profile's attach.ready, strace's "Process N attached") and is still up
 * a second later: its output read and a wait of it that timed out, both
 * after it was started. */
static void
test_attach_waits_until_joined(void **state)
{
    char *names[1] = { "front" };
    ph_error_t err = NULL;

    (void)state;
    attach_world((ph_fake_end){ 0 }, STRACE_JOINED);
    must(ph_run_attach(W.r, "strace", names, 1, &err), &err, "attach");
    CHECK(calls_on("log_all", "proj-front-attach-strace") == 1, "its output read once: %zu",
          calls_on("log_all", "proj-front-attach-strace"));
    CHECK(calls_on("wait", "proj-front-attach-strace") == 1, "one settling wait: %zu",
          calls_on("wait", "proj-front-attach-strace"));
    CHECK(call_index("run", 0) < call_index("log_all", 0) && call_index("log_all", 0) < call_index("wait", 0),
          "started, then read, then waited on");
    assert_int_equal(ph_fake_count(W.f, PH_LABEL_MODE, "strace"), 1);
}

/* A tools container that ends before it says it joined (the profiler
 * refused the process after attach had made it): attach fails, saying
 * its exit and last lines, the tools container is removed, the service
 * untouched, and a second attach is not refused as one attached already. */
static void
test_attach_refused_after_start(void **state)
{
    char *names[1] = { "front" };
    ph_error_t err = NULL;

    (void)state;
    attach_world((ph_fake_end){ PH_FAKE_EXITS_BY_ITSELF, 2, 0 },
                 "2026-01-01T00:00:00.000000000Z ph-attach: the service's processes: 7\n"
                 "2026-01-01T00:00:00.100000000Z strace: attach: ptrace(PTRACE_SEIZE, 7): Operation not "
                 "permitted\n");
    CHECK(ph_run_attach(W.r, "strace", names, 1, &err) < 0, "attach fails");
    CHECK(strstr(err->msg, "ended (exit 2) before it joined the service") != NULL, "why: %s", err->msg);
    CHECK(strstr(err->msg, "strace: attach: ptrace(PTRACE_SEIZE, 7): Operation not permitted") != NULL &&
          strstr(err->msg, "2026-01-01T") == NULL, "its last lines, without their timestamps: %s", err->msg);
    CHECK(strstr(err->hint, "tools container is removed") != NULL, "hint: %s", err->hint);
    ph_error_free(&err);
    CHECK(ph_fake_count(W.f, PH_LABEL_MODE, "strace") == 0, "the tools container removed");
    CHECK(calls_on("signal", "proj-front-1") == 0 && calls_on("stop", "proj-front-1") == 0,
          "the service untouched");
    CHECK(ph_run_attach(W.r, "strace", names, 1, &err) < 0 && strstr(err->msg, "already") == NULL,
          "a second attach is not refused as attached already: %s", err ? err->msg : "(it succeeded)");
    ph_error_free(&err);
}

/* One that runs on and never says it joined: attach waits its bound (a
 * wait a second, 60 of them) and returns, the tools container left for
 * stop to collect. */
static void
test_attach_silent_is_bounded(void **state)
{
    char *names[1] = { "front" };
    ph_error_t err = NULL;

    (void)state;
    attach_world((ph_fake_end){ 0 }, "2026-01-01T00:00:00.000000000Z starting\n");
    must(ph_run_attach(W.r, "strace", names, 1, &err), &err, "attach");
    CHECK(calls_on("wait", "proj-front-attach-strace") == 60, "60 waits of a second: %zu",
          calls_on("wait", "proj-front-attach-strace"));
    assert_int_equal(ph_fake_count(W.f, PH_LABEL_MODE, "strace"), 1);
    stop_ok("front");
}

/* One that says it joined and ends within the second after (the sampler's
 * perf says so as it starts, then cannot open its events): refused as one
 * that never said it, not taken for attached. */
static void
test_attach_joined_then_ended(void **state)
{
    char *names[1] = { "front" };
    ph_error_t err = NULL;

    (void)state;
    attach_world((ph_fake_end){ PH_FAKE_EXITS_BY_ITSELF, 1, 0 }, STRACE_JOINED);
    CHECK(ph_run_attach(W.r, "strace", names, 1, &err) < 0, "attach fails");
    CHECK(strstr(err->msg, "ended (exit 1) before it joined the service: strace: Process 7 attached") != NULL,
          "why: %s", err->msg);
    ph_error_free(&err);
    CHECK(ph_fake_count(W.f, PH_LABEL_MODE, "strace") == 0, "the tools container removed");
}

/* The lines a refusal shows: the last four, in order, each without its
 * timestamp and nothing more (a line with none is shown whole), joined by
 * " | ". */
static void
test_attach_refused_tail(void **state)
{
    char *names[1] = { "front" };
    ph_error_t err = NULL;

    (void)state;
    attach_world((ph_fake_end){ PH_FAKE_EXITS_BY_ITSELF, 2, 0 },
                 "2026-01-01T00:00:00.000000000Z one\n"
                 "2026-01-01T00:00:00.100000000Z two\n"
                 "2026-01-01T00:00:00.200000000Z three\n"
                 "strace: attach: ptrace(PTRACE_SEIZE, 7): Operation not permitted\n"
                 "2026-01-01T00:00:00.300000000Z five\n"
                 "2026-01-01T00:00:00.400000000Z six\n");
    CHECK(ph_run_attach(W.r, "strace", names, 1, &err) < 0, "attach fails");
    CHECK(strstr(err->msg, "before it joined the service: three | strace: attach: ptrace(PTRACE_SEIZE, 7): "
                           "Operation not permitted | five | six") != NULL,
          "the last four lines: %s", err->msg);
    CHECK(strstr(err->msg, "two") == NULL, "no fifth line: %s", err->msg);
    ph_error_free(&err);
}

/* One that says it joined and then fills more than the output attach
 * reads (64 KiB): attached, the rest of its output not read. */
static void
test_attach_chatty_joins(void **state)
{
    static const char line[] = "2026-01-01T00:00:01.000000000Z strace: warning: a line of a chatty profiler\n";
    char *names[1] = { "front" }, *log;
    size_t n = 0, cap = strlen(STRACE_JOINED) + 2000 * (sizeof line - 1) + 1;
    ph_error_t err = NULL;

    (void)state;
    log = malloc(cap);
    assert_non_null(log);
    n = (size_t)snprintf(log, cap, "%s", STRACE_JOINED);
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(log + n, cap - n, "%s", line);
    assert_true(n > 64u << 10);
    attach_world((ph_fake_end){ 0 }, log);
    free(log);
    must(ph_run_attach(W.r, "strace", names, 1, &err), &err, "attach");
    assert_int_equal(ph_fake_count(W.f, PH_LABEL_MODE, "strace"), 1);
}

/* One that fills more than the output attach keeps (64 KiB) and then
 * ends: the refusal quotes its real last lines, not the last of its first
 * 64 KiB. */
static void
test_attach_refused_chatty_tail(void **state)
{
    static const char line[] = "2026-01-01T00:00:01.000000000Z strace: warning: a line of a chatty profiler\n";
    static const char last[] = "2026-01-01T00:00:02.000000000Z strace: the real last line\n";
    char *names[1] = { "front" }, *log;
    size_t n = 0, cap = 3000 * (sizeof line - 1) + sizeof last;
    ph_error_t err = NULL;

    (void)state;
    log = malloc(cap);
    assert_non_null(log);
    for (int i = 0; i < 3000; i++)
        n += (size_t)snprintf(log + n, cap - n, "%s", line);
    n += (size_t)snprintf(log + n, cap - n, "%s", last);
    assert_true(n > 128u << 10);
    attach_world((ph_fake_end){ PH_FAKE_EXITS_BY_ITSELF, 1, 0 }, log);
    free(log);
    CHECK(ph_run_attach(W.r, "strace", names, 1, &err) < 0, "attach fails");
    CHECK(strstr(err->msg, "a chatty profiler | strace: the real last line") != NULL, "its last lines: %s",
          err->msg);
    ph_error_free(&err);
}

/* ---- replicas ------------------------------------------------------------------ */

#define THREE "services:\n  front:\n    image: " DEMO_IMAGE "\n    deploy:\n      replicas: 3\n"

/* Three replicas: a container each, numbered, one run for all. */
static const char *
three_started(void)
{
    static char run[128];

    open_world(THREE, NULL);
    profiled_writes("proj-front-strace-*", "front", (ph_fake_end){ PH_FAKE_EXITS_ON_TERM, 0, 1 });
    start("strace", "front");
    CHECK(ph_fake_call_count(W.f, "run") == 3, "a container per replica");
    for (int k = 1; k <= 3; k++) {
        char name[64], num[8];
        const ph_fake_call *c;

        snprintf(name, sizeof name, "proj-front-strace-%d", k);
        snprintf(num, sizeof num, "%d", k);
        c = run_of(name);
        assert_string_equal(spec_label(&c->spec, PH_LABEL_REPLICA), num);
        assert_string_equal(spec_label(&c->spec, PH_LABEL_REPLICAS), "3");
        if (k == 1)
            snprintf(run, sizeof run, "%s", spec_label(&c->spec, PH_LABEL_RUN));
        else
            assert_string_equal(spec_label(&c->spec, PH_LABEL_RUN), run);
    }
    return run;
}

/* tasks.json of RUN: how many of its entries are collected, after
 * checking there is one per replica, in order. */
static int
tasks_collected(const char *run)
{
    char rel[512];
    json_t *t, *e;
    size_t i;
    int n = 0;

    snprintf(rel, sizeof rel, "front/%s/tasks.json", run);
    t = json_at(rel);
    CHECK(json_array_size(json_object_get(t, "tasks")) == 3, "a task per replica");
    json_array_foreach(json_object_get(t, "tasks"), i, e) {
        assert_int_equal(json_integer_value(json_object_get(e, "slot")), (json_int_t)i + 1);
        n += json_is_true(json_object_get(e, "collected"));
    }
    json_decref(t);
    return n;
}

/* All asked to stop at once (every signal before the first wait), each
 * collected into <run>/<n>/, the last one too. */
static void
test_replicas_stop(void **state)
{
    const char *run = three_started();
    char rel[512];

    (void)state;
    stop_ok("front");
    CHECK(ph_fake_call_count(W.f, "signal") == 3 && call_index("signal", 2) < call_index("wait_end", 0),
          "the three are signalled before the first is waited for");
    for (int k = 1; k <= 3; k++) {
        snprintf(rel, sizeof rel, "front/%s/%d/strace.log", run, k);
        CHECK(exists(rel), "replica %d collected into %s", k, rel);
    }
    assert_int_equal(tasks_collected(run), 3);
    CHECK(ph_fake_count(W.f, PH_LABEL_MODE, "strace") == 0, "every replica's container removed");
    no_temp_left("front");
}

/* The replicas' runtime refresh steps (ph-jattach, the perf maps' copy)
 * run at once, all before the first replica is signalled, so a step that
 * hangs (an image whose shell never returns: 30 s a step) costs its wait
 * once, not once per replica (before: one replica after another, 182 s
 * for 3); and a step that fails in every replica is said once, with how
 * many (before: a line per replica and step). */
static void
test_replicas_refresh_at_once(void **state)
{
    char log[PATH_MAX];
    FILE *f;
    char line[4096];
    int said = 0, of_three = 0, saved;
    long last_exec = -1;

    (void)state;
    open_world(THREE, NULL);
    profiled_writes("proj-front-flamegraph-*", "front", (ph_fake_end){ PH_FAKE_EXITS_ON_TERM, 0, 1 });
    start("flamegraph", "front");
    assert_int_equal(ph_fake_exec_rule(W.f, "proj-front-flamegraph-*", "sh", 1, "sh: hung up\n"), 0);
    ph_log_set_level(PH_LOG_INFO);
    snprintf(log, sizeof log, "%s/stderr", test_dir);
    fflush(stderr);
    saved = dup(2);
    f = fopen(log, "w");
    assert_non_null(f);
    dup2(fileno(f), 2);
    stop_ok("front");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    ph_log_set_level(PH_LOG_WARN);
    for (size_t i = 0; i < ph_fake_n_calls(W.f); i++) {
        const ph_fake_call *c = ph_fake_call_at(W.f, i);

        if (strcmp(c->op, "exec") == 0 && c->target != NULL && strstr(c->name ? c->name : c->target, "flamegraph-"))
            last_exec = (long)i;
    }
    CHECK(ph_fake_call_count(W.f, "signal") == 3, "three signals");
    CHECK(last_exec >= 0 && last_exec < call_index("signal", 0),
          "every replica's refresh before the first signal (last exec %ld, first signal %ld)", last_exec,
          call_index("signal", 0));
    f = fopen(log, "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f) != NULL)
        if (strstr(line, "refresh `sh`") && strstr(line, "did not succeed")) {
            said++;
            of_three += strstr(line, "in 3 of 3 replicas") != NULL;
        }
    fclose(f);
    CHECK(said == 1 && of_three == 1, "the failed step said once, for the 3 replicas (%d lines, %d so)", said,
          of_three);
}

/* Replica 2 cannot be collected: said as replica 2 of 3, its container
 * kept and named in tasks.json, the others collected; the retry adds it. */
static void
test_replicas_one_kept_then_added(void **state)
{
    const char *run = three_started();
    char rel[512], *kept_id;
    ph_error_t err;
    ph_workload w;
    json_t *t;

    (void)state;
    ph_fake_fault(W.f, "archive_get", "proj-front-strace-2", PH_FAKE_FAIL, 0, 1);
    err = stop_fails("front");
    CHECK(strstr(err->msg, "replica 2 of 3") != NULL, "which replica: %s", err->msg);
    CHECK(strstr(err->hint, "kept") != NULL, "hint: %s", err->hint);
    ph_error_free(&err);
    CHECK(ph_fake_look(W.f, "proj-front-strace-2", &w) == 1, "replica 2's container is kept");
    kept_id = strdup(w.id);
    ph_workload_clear(&w);
    CHECK(!there("proj-front-strace-1", NULL) && !there("proj-front-strace-3", NULL),
          "the others are collected and removed");
    assert_int_equal(tasks_collected(run), 2);
    snprintf(rel, sizeof rel, "front/%s/tasks.json", run);
    t = json_at(rel);
    {
        json_t *e = json_array_get(json_object_get(t, "tasks"), 1);

        assert_string_equal(json_string_value(json_object_get(e, "task")), kept_id);
        CHECK(strstr(json_string_value(json_object_get(e, "lost")), "is kept") != NULL, "why lost");
    }
    json_decref(t);
    snprintf(rel, sizeof rel, "front/%s/2", run);
    CHECK(!exists(rel), "nothing partial of replica 2");
    stop_ok("front");
    CHECK(exists(rel), "the retry adds replica 2");
    assert_int_equal(tasks_collected(run), 3);
    CHECK(!there(kept_id, NULL), "and removes its container");
    free(kept_id);
    no_temp_left("front");
}

/* In a child about to be interrupted: SIGINT's default action back, a
 * project whose profiled container writes 64 KiB, streamed 1 KiB at a
 * time (so a fault can strike part way). */
static void
open_big_world(void)
{
    static char big[64 * 1024];
    ph_fake_wl *t;

    signal(SIGINT, SIG_DFL);
    open_world(ONE, NULL);
    t = profiled_writes("proj-front-strace", "front", (ph_fake_end){ 0 });
    memset(big, 'x', sizeof big);
    ph_fake_wl_file(t, "/opt/profiling/front/big.bin", big, sizeof big, 0644);
    ph_fake_chunk(W.f, 1024);
}

/* ---- a Swarm task's collection ---------------------------------------------- */

/* The profiled container of front, ended as `started` said (asked to
 * stop when ASK), as a task of slot 1 on node n1 (*W, the caller's to
 * clear), and the run dir of several it lands in (*RUNFD), a leftover of
 * a dead harness in it. */
static void
task_ended(int ask, ph_backend **b, ph_workload *w, int *runfd)
{
    ph_workload_list l = { 0 };
    ph_error_t err = NULL;
    char rel[PATH_MAX];
    long code = 0;
    int timed_out = 0, svcfd = -1, lock = -1;

    must(ph_run_backend(W.r, b, &err), &err, "backend");
    must(ph_run_list(W.r, "front", &l, &err), &err, "list");
    CHECK(l.n == 1 && ph_workload_profiled(&l.v[0]), "one profiled workload");
    *w = l.v[0];
    memset(&l.v[0], 0, sizeof l.v[0]);
    ph_workload_list_free(&l);
    if (ask)
        (*b)->ops->signal(*b, w->id, "SIGTERM", NULL);
    must((*b)->ops->wait(*b, w->id, 60, &code, &timed_out, &err), &err, "wait");
    CHECK(!timed_out, "it ended");
    w->slot = 1;
    free(w->node);
    w->node = strdup("n1");
    snprintf(rel, sizeof rel, "out/front/%s/.incoming-left", w->run);
    mkdirs(rel);
    must(ph_run_lock_service(W.r, "front", &svcfd, &lock, &err), &err, "lock");
    must(ph_run_open_run_dir(W.r, svcfd, "front", w->run, runfd, &err), &err, "the run dir");
    close(svcfd);
    close(lock);
}

/* A task is collected as a lone container's stop collects it: the shim's
 * record examined into run.json (completion, missing_artifacts), the OOM
 * killer said, the task's node and slot beside; the leftover swept. */
static void
test_swarm_task_collected_as_lone(void **state)
{
    const char *run = started((ph_fake_end){ PH_FAKE_OOM, 0, 1 }, RECORD_STOPPED);
    ph_service *svc = ph_compose_service(W.r->compose, "front");
    json_t *summary = ph_run_tasks_new("front", "strace", run), *meta;
    ph_backend *b;
    ph_workload w;
    char rel[PATH_MAX];
    int runfd = -1;

    (void)state;
    task_ended(0, &b, &w, &runfd);
    CHECK(ph_run_placed_collect_task(W.r, b, runfd, svc, run, 0, NULL, &w, NULL, summary) == 1, "collected");
    snprintf(rel, sizeof rel, "front/%s/1-n1/run.json", run);
    meta = json_at(rel);
    CHECK(json_is_object(json_object_get(meta, "completion")), "run.json holds the shim's completion record");
    assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "completion"), "outcome")),
                        "stopped");
    assert_true(json_is_null(json_object_get(meta, "completion_problem")));
    assert_int_equal(json_array_size(json_object_get(meta, "missing_artifacts")), 0);
    assert_true(json_is_array(json_object_get(meta, "missing_artifacts")));
    assert_true(json_is_true(json_object_get(meta, "oom_killed")));
    assert_string_equal(json_string_value(json_object_get(meta, "node")), "n1");
    assert_int_equal(json_integer_value(json_object_get(meta, "slot")), 1);
    snprintf(rel, sizeof rel, "front/%s/.incoming-left", run);
    CHECK(!exists(rel), "the leftover of a dead harness is swept");
    no_temp_left("front");
    json_decref(meta);
    json_decref(summary);
    ph_workload_clear(&w);
    close(runfd);
}

/* In a child: SIGINT part way through a task's archive: the process
 * lives on (the interrupt section), the task is not collected, nothing is
 * left in the run dir, and the stop is told to go no further (130). */
static int
swarm_interrupted_child(void)
{
    const char *run;
    ph_service *svc;
    json_t *summary;
    ph_error_t err = NULL;
    ph_backend *b;
    ph_workload w;
    char cmd[PATH_MAX + 64];
    int runfd = -1;

    open_big_world();
    start("strace", "front");
    task_ended(1, &b, &w, &runfd);
    ph_fake_fault(W.f, "archive_get", "proj-front-strace", PH_FAKE_INTERRUPT, 8192, 1);
    svc = ph_compose_service(W.r->compose, "front");
    run = w.run;
    summary = ph_run_tasks_new("front", "strace", run);
    if (ph_run_placed_collect_task(W.r, b, runfd, svc, run, 0, NULL, &w, NULL, summary) != 0)
        return 1;
    if (!ph_run_placed_interrupted(svc, &err) || err->status != 130)
        return 2;
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s/front/%s')\"", W.out, run);
    if (system(cmd) != 0)
        return 3; /* a temp dir or a task dir left */
    json_decref(summary);
    ph_error_free(&err);
    ph_workload_clear(&w);
    close(runfd);
    return 0;
}

static void
test_swarm_task_interrupted(void **state)
{
    (void)state;
    tu_in_child(swarm_interrupted_child, "the interrupted task");
}

/* ---- a stack: services the orchestrator places ------------------------------- */

/* ONE deployed as a stack (the fake's service_* operations): front's two
 * tasks, slot 1 on n1 and slot 2 on n2, each printing "deployed task
 * <slot>"; each task a profiling update makes writes strace.log and the
 * shim's record, and prints "serving". */
static void
open_stack(void)
{
    open_world(ONE, NULL);
    ph_fake_stack(W.f);
    demo_image("demo-profiling:*", "sha256:pr0f"); /* a stack's tasks run the profiling image */
    for (int slot = 1; slot <= 2; slot++) {
        char name[64], node[8], says[64];
        ph_fake_wl *t;

        snprintf(name, sizeof name, "proj_front.%d.deployed", slot);
        snprintf(node, sizeof node, "n%d", slot);
        snprintf(says, sizeof says, "deployed task %d\n", slot);
        t = ph_fake_workload(W.f, name, DEMO_IMAGE);
        assert_int_equal(ph_fake_wl_label(t, PH_DC_PROJECT, "proj"), 0);
        assert_int_equal(ph_fake_wl_label(t, PH_DC_SERVICE, "front"), 0);
        assert_int_equal(ph_fake_wl_place(t, node, slot), 0);
        assert_int_equal(ph_fake_wl_log(t, says), 0);
    }
    profiled_writes("proj_front.*", "front", (ph_fake_end){ 0 });
}

/* The run a stack's start put front under (its spec's label), into RUN. */
static void
stack_run(char *run, size_t len)
{
    const ph_fake_call *c = ph_fake_call_nth(W.f, "service_profile", 0);

    CHECK(c != NULL, "the service was put under a profiling spec");
    snprintf(run, len, "%s", spec_label(&c->spec, PH_LABEL_RUN));
}

/* A mode the profile says a placed service cannot run (perf:
 * `swarm.unsupported`) is refused before anything is updated, in the
 * backend's own words for where it places tasks (its describe), not a
 * name the loop assumes. */
static void
test_stack_start_refused_mode(void **state)
{
    char *names[1] = { "front" };
    ph_error_t err = NULL;
    ph_backend *b;
    char want[256];

    (void)state;
    open_stack();
    CHECK(ph_run_start(W.r, "perf", names, 1, &err) < 0, "perf refused on a stack");
    must(ph_run_backend(W.r, &b, &err), &err, "backend");
    snprintf(want, sizeof want, "mode `perf` cannot run in a task of %s: ", b->ops->describe(b));
    CHECK(strstr(err->msg, want) != NULL && strstr(err->msg, "seccomp") != NULL, "said: %s", err->msg);
    CHECK(ph_fake_call_count(W.f, "service_profile") == 0, "nothing updated");
    ph_error_free(&err);
}

/* A node lost during a stack's stop: the other task is collected (its
 * run dir, `latest`), the service is rolled back, tasks.json says which
 * was lost and why, and the error says how to get the lost one's files. */
static void
test_stack_stop_node_lost(void **state)
{
    char *names[1] = { "front" }, run[128], rel[512];
    ph_error_t err = NULL;
    json_t *t, *e;
    size_t i, lost = 0;

    (void)state;
    open_stack();
    start("strace", "front");
    stack_run(run, sizeof run);
    assert_int_equal(ph_fake_node_down(W.f, "n2"), 0);
    CHECK(ph_run_stop(W.r, names, 1, &err) < 0, "a lost task fails the stop");
    CHECK(strstr(err->msg, "1 of 2 tasks lost") != NULL, "said: %s", err->msg);
    CHECK(err->hint != NULL && strstr(err->hint, "n2") != NULL && strstr(err->hint, "docker cp") != NULL &&
          strstr(err->hint, "/opt/profiling/front") != NULL,
          "how to recover the lost task's files: %s", err->hint ? err->hint : "(no hint)");
    snprintf(rel, sizeof rel, "front/%s/1-n1/run.json", run);
    CHECK(exists(rel), "the task on n1 is collected");
    CHECK(exists("front/latest"), "latest names the run");
    CHECK(exists("index.html"), "the index is rewritten");
    CHECK(ph_fake_call_count(W.f, "service_unprofile") == 1, "the service is rolled back");
    snprintf(rel, sizeof rel, "front/%s/tasks.json", run);
    t = json_at(rel);
    CHECK(json_array_size(json_object_get(t, "tasks")) == 2, "both tasks in tasks.json");
    json_array_foreach(json_object_get(t, "tasks"), i, e) {
        const char *why = json_string_value(json_object_get(e, "lost"));

        if (why == NULL)
            continue;
        lost++;
        assert_string_equal(json_string_value(json_object_get(e, "node")), "n2");
        CHECK(strstr(why, "node is down") != NULL, "why: %s", why);
    }
    CHECK(lost == 1, "one task lost");
    json_decref(t);
    ph_error_free(&err);
}

/* open_stack, then front attached to under strace: a tools container
 * beside each task. */
static void
open_stack_attached(void)
{
    char *names[1] = { "front" };
    ph_error_t err = NULL;

    open_stack();
    assert_int_equal(ph_fake_wl_log(profiled_writes("proj-front-attach-strace-*", "front", (ph_fake_end){ 0 }),
                                    STRACE_JOINED), 0);
    must(ph_run_attach(W.r, "strace", names, 1, &err), &err, "attach");
    CHECK(ph_fake_count(W.f, PH_LABEL_MODE, "strace") == 2, "a tools container beside each task");
}

/* A stack's front attached to under strace, then CMD (stop or collect)
 * on it: the one run it made into RUN, its tasks.json marking it attached
 * with a sub-dir per task, FILE in each. */
static void
stack_attached_then(int (*cmd)(ph_run *, char **, int, ph_error_t *), const char *file, char *run, size_t len)
{
    char *names[1] = { "front" }, rel[512];
    ph_error_t err = NULL;
    json_t *t;

    open_stack_attached();
    must(cmd(W.r, names, 1, &err), &err, "stop or collect");
    the_run("front", run, len);
    snprintf(rel, sizeof rel, "front/%s/tasks.json", run);
    t = json_at(rel);
    CHECK(json_is_true(json_object_get(t, "attached")), "tasks.json says attached");
    CHECK(json_array_size(json_object_get(t, "tasks")) == 2, "a sub-dir per attached task");
    json_decref(t);
    for (int slot = 1; slot <= 2; slot++) {
        snprintf(rel, sizeof rel, "front/%s/%d-n%d/%s", run, slot, slot, file);
        CHECK(exists(rel), "task %d's %s", slot, file);
    }
}

/* `collect` on a stack attached to (no restart): each attached task's
 * files now, one snapshot run with a sub-dir per task; the tools
 * containers run on and nothing is signalled. */
static void
test_stack_collect_attached(void **state)
{
    char run[256];

    (void)state;
    stack_attached_then(ph_run_collect, "run.json", run, sizeof run);
    CHECK(strstr(run, "-snapshot-") != NULL, "a snapshot run: %s", run);
    CHECK(ph_fake_call_count(W.f, "signal") == 0 && ph_fake_call_count(W.f, "remove") == 0,
          "nothing signalled or removed: they run on");
}

/* `stop` on a stack attached to (no restart): every tools container
 * signalled, each collected into <run>/<slot>-<node>/, removed from its
 * node, `latest` at the run. */
static void
test_stack_stop_attached(void **state)
{
    char run[256];

    (void)state;
    stack_attached_then(ph_run_stop, "strace.log", run, sizeof run);
    CHECK(strstr(run, "-snapshot-") == NULL, "the attach's run, not a snapshot: %s", run);
    CHECK(exists("front/latest"), "latest at the run");
    CHECK(ph_fake_call_count(W.f, "signal") == 2, "each tools container signalled once");
    CHECK(ph_fake_count(W.f, PH_LABEL_MODE, "strace") == 0, "each removed from its node");
}

/* `down` on a stack: a profiled run collected first (its index, as a
 * plain down's stop writes it), then its services removed; the networks
 * stay, as a plain down leaves them. */
static void
test_stack_down(void **state)
{
    char *names[1] = { "front" }, run[128], rel[512];
    ph_error_t err = NULL;

    (void)state;
    open_stack();
    start("strace", "front");
    stack_run(run, sizeof run);
    must(ph_run_down(W.r, names, 1, &err), &err, "down");
    snprintf(rel, sizeof rel, "front/%s/2-n2/run.json", run);
    CHECK(exists(rel), "the run collected before the removal");
    CHECK(exists("index.html"), "the index rewritten, as a plain down's stop does");
    CHECK(ph_fake_call_count(W.f, "service_remove") == 1, "the service removed");
    CHECK(ph_fake_count(W.f, PH_DC_SERVICE, "front") == 0, "no task of it left");
    CHECK(ph_fake_call_count(W.f, "prepare") == 0, "networks neither made nor touched");
}

/* Both of front's tasks placed on n2: the start says the node's two
 * tasks, and once n2 is down the stop loses both and names n2 once. */
static void
test_stack_two_tasks_one_node(void **state)
{
    char *names[1] = { "front" };
    ph_error_t err = NULL;
    const char *said;

    (void)state;
    open_world(ONE, NULL);
    ph_fake_stack(W.f);
    demo_image("demo-profiling:*", "sha256:pr0f");
    for (int slot = 1; slot <= 2; slot++) {
        char name[64];
        ph_fake_wl *t;

        snprintf(name, sizeof name, "proj_front.%d.deployed", slot);
        t = ph_fake_workload(W.f, name, DEMO_IMAGE);
        assert_int_equal(ph_fake_wl_label(t, PH_DC_PROJECT, "proj"), 0);
        assert_int_equal(ph_fake_wl_label(t, PH_DC_SERVICE, "front"), 0);
        assert_int_equal(ph_fake_wl_place(t, "n2", slot), 0);
    }
    profiled_writes("proj_front.*", "front", (ph_fake_end){ 0 });
    ph_log_set_level(PH_LOG_INFO);
    tu_capture_begin();
    start("strace", "front");
    said = tu_capture_end();
    ph_log_set_level(PH_LOG_WARN);
    CHECK(strstr(said, "2 tasks on n2 (2)") != NULL, "the start counts n2's tasks: %s", said);
    assert_int_equal(ph_fake_node_down(W.f, "n2"), 0);
    CHECK(ph_run_stop(W.r, names, 1, &err) < 0, "lost tasks fail the stop");
    CHECK(strstr(err->msg, "2 of 2 tasks lost") != NULL, "said: %s", err->msg);
    CHECK(err->hint != NULL && strstr(err->hint, "(n2)") != NULL, "n2 named once: %s",
          err->hint ? err->hint : "(no hint)");
    ph_error_free(&err);
}

/* front's running tasks counted per slot into SLOTS[1..2] (SLOTS[0]: any
 * other slot); how many of them run profiled. */
static int
front_running(int slots[3])
{
    ph_workload_list l = { 0 };
    ph_error_t err = NULL;
    ph_backend *b;
    int profiled = 0;

    must(ph_run_backend(W.r, &b, &err), &err, "backend");
    must(b->ops->list(b, "proj", "front", 0, &l, &err), &err, "list");
    for (size_t i = 0; i < l.n; i++)
        if (ph_workload_running(&l.v[i])) {
            profiled += ph_workload_profiled(&l.v[i]);
            slots[l.v[i].slot >= 1 && l.v[i].slot <= 2 ? l.v[i].slot : 0]++;
        }
    ph_workload_list_free(&l);
    return profiled;
}

/* After a stack's stop, each slot runs one task again, as deployed: the
 * rollback replaces the run's tasks only, not those the run replaced. */
static void
test_stack_rollback_one_per_slot(void **state)
{
    char *names[1] = { "front" };
    ph_error_t err = NULL;
    int slots[3] = { 0 };

    (void)state;
    open_stack();
    start("strace", "front");
    must(ph_run_stop(W.r, names, 1, &err), &err, "stop");
    CHECK(front_running(slots) == 0, "no task runs profiled");
    CHECK(slots[0] == 0 && slots[1] == 1 && slots[2] == 1, "one task per slot: %d and %d (%d in none)", slots[1],
          slots[2], slots[0]);
}

/* The fake's service removal is a swarm's: the service's tasks go, the
 * tools containers an attach put beside them (plain containers of each
 * node's Engine) are none of its tasks and stay. */
static void
test_stack_remove_leaves_attached(void **state)
{
    ph_error_t err = NULL;
    ph_backend *b;
    int found = 0;

    (void)state;
    open_stack_attached();
    must(ph_run_backend(W.r, &b, &err), &err, "backend");
    must(b->ops->service_remove(b, "proj", "front", &found, &err), &err, "service_remove");
    CHECK(found, "the service was there");
    CHECK(ph_fake_count(W.f, PH_DC_SERVICE, "front") == 0, "its tasks gone");
    CHECK(ph_fake_count(W.f, PH_LABEL_MODE, "strace") == 2, "the tools containers stay");
}

/* ---- a stack's logs and discard ---------------------------------------------- */

/* `logs [-f] SERVICE`: what it printed (fd 1, where ops.logs and
 * stdout write) into *OUT and what it said (stderr, INFO shown) into
 * *SAID, static buffers; its return, *ERR its error. */
static int
logs_run(const char *service, int follow, ph_error_t *err, const char **out, const char **said)
{
    static char buf[128 * 1024];
    char path[PATH_MAX];
    int saved, fd, rc;
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "%s/stdout.txt", test_dir);
    fflush(stdout);
    saved = dup(1);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(saved >= 0);
    assert_true(fd >= 0);
    dup2(fd, 1);
    close(fd);
    ph_log_set_level(PH_LOG_INFO);
    tu_capture_begin();
    rc = ph_run_logs(W.r, service, follow, err);
    *said = tu_capture_end();
    ph_log_set_level(PH_LOG_WARN);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    *out = buf;
    return rc;
}

/* How many times NEEDLE is in HAY. */
static int
count_in(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* `logs` on a stack: the output of every task the service runs, each
 * asked of the backend by its own id (the backend reads it where the task
 * runs), each line led by which task it is, as `docker service logs`
 * leads them; once a start replaced the tasks, the replaced ones are no
 * longer the service's, the run's are.  Followed, the same. */
static void
test_stack_logs_every_task(void **state)
{
    const char *out, *said;
    ph_error_t err = NULL;

    (void)state;
    open_stack();
    must(logs_run("front", 0, &err, &out, &said), &err, "logs");
    CHECK(count_in(out, "task 1 on n1 | deployed task 1\n") == 1 &&
          count_in(out, "task 2 on n2 | deployed task 2\n") == 1 && count_in(out, "\n") == 2,
          "each deployed task's output once, each line led by its task: %s", out);
    CHECK(calls_on("logs", "proj_front.1.deployed") == 1 && calls_on("logs", "proj_front.2.deployed") == 1,
          "each task's own logs asked for");
    start("strace", "front");
    must(logs_run("front", 1, &err, &out, &said), &err, "logs -f");
    CHECK(count_in(out, "task 1 on n1 | 2026-01-01T00:00:00.000000000Z serving\n") == 1 &&
          count_in(out, "task 2 on n2 | 2026-01-01T00:00:00.000000000Z serving\n") == 1,
          "each profiled task's output, followed: %s", out);
    CHECK(strstr(out, "deployed task") == NULL, "not the replaced tasks': %s", out);
    CHECK(ph_fake_call_nth(W.f, "logs", 2) != NULL && ph_fake_call_nth(W.f, "logs", 2)->arg != NULL &&
          strcmp(ph_fake_call_nth(W.f, "logs", 2)->arg, "follow") == 0, "followed");
}

/* `logs` on a stack with a node down: the tasks reached are shown all
 * the same; the one on the node that is down is said, with why, and the
 * command fails. */
static void
test_stack_logs_node_down(void **state)
{
    const char *out, *said;
    ph_error_t err = NULL;

    (void)state;
    open_stack();
    start("strace", "front");
    assert_int_equal(ph_fake_node_down(W.f, "n1"), 0);
    CHECK(logs_run("front", 0, &err, &out, &said) < 0, "a task not read fails logs");
    CHECK(count_in(out, "serving\n") == 1, "task 2's output, task 1's node down: %s", out);
    CHECK(strstr(said, "task 1 on n1") != NULL && strstr(said, "its node is down") != NULL,
          "task 1 said, and why: %s", said);
    CHECK(strstr(err->msg, "1 of its 2 workloads") != NULL, "said: %s", err->msg);
    ph_error_free(&err);
}

/* `logs` once the stack's service is gone (`down`): each task's
 * service.log of the last run, from its sub-dir, each named. */
static void
test_stack_logs_after_down(void **state)
{
    char *names[1] = { "front" }, run[128], want[256];
    const char *out, *said;
    ph_error_t err = NULL;

    (void)state;
    open_stack();
    start("strace", "front");
    stack_run(run, sizeof run);
    must(ph_run_down(W.r, names, 1, &err), &err, "down");
    must(logs_run("front", 0, &err, &out, &said), &err, "logs");
    CHECK(count_in(out, "serving\n") == 2, "each task's kept output: %s", out);
    for (int slot = 1; slot <= 2; slot++) {
        snprintf(want, sizeof want, "%s/%d-n%d/service.log", run, slot, slot);
        CHECK(strstr(said, want) != NULL, "task %d's file named: %s", slot, said);
    }
}

/* The same on one Engine: three replicas stopped, their containers gone:
 * `latest` at their run, and `logs` prints each replica's service.log. */
static void
test_replicas_logs_after_stop(void **state)
{
    const char *run = three_started(), *out, *said;
    ph_error_t err = NULL;
    char want[PATH_MAX], link[256] = "";

    (void)state;
    stop_ok("front");
    snprintf(want, sizeof want, "%s/front/latest", W.out);
    CHECK(readlink(want, link, sizeof link - 1) > 0 && strcmp(link, run) == 0, "latest at the run, as a stack's");
    must(logs_run("front", 0, &err, &out, &said), &err, "logs");
    CHECK(count_in(out, "serving\n") == 3, "each replica's kept output: %s", out);
    for (int k = 1; k <= 3; k++) {
        snprintf(want, sizeof want, "%s/%d/service.log", run, k);
        CHECK(strstr(said, want) != NULL, "replica %d's file named: %s", k, said);
    }
}

/* Nothing under test_dir/out/SERVICE but its lock file (a command that
 * holds the service makes it). */
static int
nothing_but_lock(const char *service)
{
    char cmd[PATH_MAX + 128];

    snprintf(cmd, sizeof cmd, "test -z \"$(find '%s/%s' -mindepth 1 ! -name .lock 2>/dev/null)\"", W.out, service);
    return system(cmd) == 0;
}

/* `logs` of three running replicas on one Engine: each line led by its
 * replica's container name, a line longer than the copy's 16 KiB printed in pieces, each
 * led, nothing of it lost. */
static void
test_replicas_logs_long_line(void **state)
{
    static char text[20000 + 8];
    const char *out, *said;
    ph_error_t err = NULL;
    ph_fake_wl *t;
    char lead[64], end[80];

    (void)state;
    open_world(THREE, NULL);
    t = profiled_writes("proj-front-strace-*", "front", (ph_fake_end){ 0 });
    memset(text, 'x', 20000);
    memcpy(text + 20000, "\nend\n", 6);
    assert_int_equal(ph_fake_wl_log(t, text), 0);
    start("strace", "front");
    must(logs_run("front", 0, &err, &out, &said), &err, "logs");
    CHECK(count_in(out, "x") == 3 * 20000, "every byte: %d x", count_in(out, "x"));
    for (int k = 1; k <= 3; k++) {
        snprintf(lead, sizeof lead, "proj-front-strace-%d | ", k);
        snprintf(end, sizeof end, "proj-front-strace-%d | end\n", k);
        CHECK(count_in(out, lead) == 3 && count_in(out, end) == 1, "replica %d: the long line in 2 pieces, then end",
              k);
    }
}

/* `stop --discard` on a stack restarted under a profiler gives the run up
 * as on one Engine: nothing is read or written on the host (no run dir),
 * and the service runs as deployed again (a task per slot, none
 * profiled), so the next start is not refused. */
static void
test_stack_discard(void **state)
{
    char *names[1] = { "front" }, run[128], rel[512];
    ph_error_t err = NULL;
    ph_workload w;
    ph_backend *b;
    int slots[3] = { 0 }, found = 1;

    (void)state;
    open_stack();
    start("strace", "front");
    stack_run(run, sizeof run);
    must(ph_run_discard(W.r, names, 1, &err), &err, "discard");
    CHECK(ph_fake_call_count(W.f, "service_unprofile") == 1, "the service rolled back");
    CHECK(ph_fake_call_count(W.f, "archive_get") == 0, "nothing collected");
    snprintf(rel, sizeof rel, "front/%s", run);
    CHECK(!exists(rel), "no run dir");
    CHECK(nothing_but_lock("front"), "nothing written on the host but the service's lock");
    must(ph_run_backend(W.r, &b, &err), &err, "backend");
    must(b->ops->service_run(b, "proj", "front", &w, &found, &err), &err, "service_run");
    ph_workload_clear(&w);
    CHECK(!found, "the service is under no run");
    CHECK(front_running(slots) == 0, "no task runs profiled");
    CHECK(slots[0] == 0 && slots[1] == 1 && slots[2] == 1, "one task per slot: %d and %d (%d in none)", slots[1],
          slots[2], slots[0]);
    start("strace", "front");
}

/* `stop --discard` is the way out of a run that cannot be collected, so it
 * must not need what collecting needs: a service whose run label names no
 * directory (not profharness's writing; stop refuses it) is rolled back
 * all the same, nothing written on the host. */
static void
test_stack_discard_bad_run_label(void **state)
{
    char *names[1] = { "front" };
    ph_workload_spec spec = PH_WORKLOAD_SPEC_INIT;
    ph_error_t err = NULL;
    ph_backend *b;
    ph_workload w;
    int found = 1;

    (void)state;
    open_stack();
    spec.image = "demo-profiling:x";
    assert_int_equal(ph_kvv_set(&spec.labels, PH_LABEL_PROJECT, "proj"), 0);
    assert_int_equal(ph_kvv_set(&spec.labels, PH_LABEL_SERVICE, "front"), 0);
    assert_int_equal(ph_kvv_set(&spec.labels, PH_LABEL_MODE, "strace"), 0);
    assert_int_equal(ph_kvv_set(&spec.labels, PH_LABEL_RUN, "../elsewhere"), 0);
    must(ph_run_backend(W.r, &b, &err), &err, "backend");
    must(b->ops->service_profile(b, "proj", "front", &spec, 60, NULL, &err), &err, "service_profile");
    spec.image = NULL;
    ph_workload_spec_clear(&spec);
    must(ph_run_discard(W.r, names, 1, &err), &err, "discard");
    CHECK(ph_fake_call_count(W.f, "service_unprofile") == 1, "the service rolled back");
    must(b->ops->service_run(b, "proj", "front", &w, &found, &err), &err, "service_run");
    ph_workload_clear(&w);
    CHECK(!found, "the service is under no run");
    CHECK(nothing_but_lock("front"), "nothing written on the host but the service's lock");
}

/* `stop --discard` on a stack attached to: every tools container removed
 * from its node, nothing collected, the tasks untouched. */
static void
test_stack_discard_attached(void **state)
{
    char *names[1] = { "front" };
    ph_error_t err = NULL;

    (void)state;
    open_stack_attached();
    must(ph_run_discard(W.r, names, 1, &err), &err, "discard");
    CHECK(ph_fake_count(W.f, PH_LABEL_MODE, "strace") == 0, "each tools container removed from its node");
    CHECK(ph_fake_call_count(W.f, "archive_get") == 0, "nothing collected");
    CHECK(nothing_but_lock("front"), "nothing written on the host but the service's lock");
    CHECK(there("proj_front.1.deployed", NULL) && there("proj_front.2.deployed", NULL), "the tasks stay");
    CHECK(ph_fake_call_count(W.f, "service_unprofile") == 0, "the service is not touched");
}

/* `prune` through a backend with no Engine of its images (the fake's, as
 * a Kubernetes backend would be): refused in the backend's words before
 * anything is asked of an Engine that is not there. */
static void
test_prune_without_engine(void **state)
{
    ph_error_t err = NULL;

    (void)state;
    open_stack();
    CHECK(ph_run_prune(W.r, 0, &err) < 0, "prune refused");
    CHECK(strstr(err->msg, "keeps no images or volumes of ours") != NULL &&
          strstr(err->msg, "an orchestrator in memory") != NULL, "said: %s", err->msg);
    ph_error_free(&err);
}

/* ---- an interrupted extraction ------------------------------------------------ */

/* In a child (an interrupt stays caught for the process's life): SIGINT
 * part way through the archive: the stop fails with 130, the container is
 * kept, nothing is left on the host.  The child's exit: 0, or which check
 * failed. */
static int
interrupted_child(void)
{
    char cmd[PATH_MAX + 64];
    char *names[1] = { "front" };
    ph_error_t err = NULL;
    ph_workload w;

    open_big_world();
    ph_fake_fault(W.f, "archive_get", "proj-front-strace", PH_FAKE_INTERRUPT, 8192, 1);
    start("strace", "front");
    if (ph_run_stop(W.r, names, 1, &err) == 0)
        return 1;
    if (err->status != 130 || strstr(err->msg, "interrupted by SIGINT") == NULL)
        return 2;
    if (ph_fake_look(W.f, "proj-front-strace", &w) != 1 || w.state != PH_WL_EXITED)
        return 3;
    ph_workload_clear(&w);
    if (calls_on("remove", "proj-front-strace") != 0)
        return 4;
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s/front' | grep -v '^.lock$')\"", W.out);
    if (system(cmd) != 0)
        return 5; /* a temp dir, a run dir or a link left */
    ph_error_free(&err);
    return 0;
}

static void
test_interrupted_extraction(void **state)
{
    (void)state;
    tu_in_child(interrupted_child, "the interrupted stop");
}

/* A conversion interrupted: SIGINT as the converter's `perf script`
 * starts (a hostile perf map can make its collapse take minutes).  The
 * stop ends then, with 130, instead of when the conversion is done: its
 * outputs never put back, the container kept, nothing left on the host.
 * (Before: the whole conversion ran first, its outputs put into the
 * container, and only the collection's section saw the signal.) */
static void
raise_sigint(void *ud, const ph_fake_call *c)
{
    (void)ud;
    (void)c;
    raise(SIGINT);
}

static int
interrupted_conversion_child(void)
{
    static const char script[] = "demo 1/1 1.000000: 2000000 cpu-clock:u:\n"
                                 "\t    401000 serve+0x0 (/usr/bin/demo)\n"
                                 "\t    402000 main+0x0 (/usr/bin/demo)\n\n";
    char cmd[PATH_MAX + 64];
    char *names[1] = { "front" };
    ph_error_t err = NULL;
    ph_workload w;
    ph_fake_wl *t;

    signal(SIGINT, SIG_DFL);
    open_world(ONE, NULL);
    t = ph_fake_on_create(W.f, "proj-front-perf");
    ph_fake_wl_end(t, (ph_fake_end){ 0 });
    ph_fake_wl_file(t, "/opt/profiling/front/perf.data", "PERFILE2", 8, 0644);
    ph_fake_wl_file_at_end(t, "/opt/profiling/front/" PH_RECORD_NAME, RECORD_STOPPED);
    ph_fake_exec_rule(W.f, "*", "*", 0, script);
    start("perf", "front");
    ph_fake_hook(W.f, "exec", raise_sigint, NULL);
    if (ph_run_stop(W.r, names, 1, &err) == 0)
        return 1;
    if (err->status != 130 || strstr(err->msg, "interrupted by SIGINT") == NULL)
        return 2;
    if (calls_on("archive_put", "proj-front-perf") != 0)
        return 3; /* the conversion went on to its end */
    if (ph_fake_look(W.f, "proj-front-perf", &w) != 1 || w.state != PH_WL_EXITED)
        return 4;
    ph_workload_clear(&w);
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s/front' | grep -v '^.lock$')\"", W.out);
    if (system(cmd) != 0)
        return 5; /* a temp dir, a run dir or a link left */
    ph_error_free(&err);
    return 0;
}

static void
test_interrupted_conversion(void **state)
{
    (void)state;
    tu_in_child(interrupted_conversion_child, "the interrupted conversion");
}

/* An attach interrupted while it waits for the tools container to say it
 * joined (a silent one, SIGINT at its first wait): attach fails with 130
 * then, not after the 60 s bound; the tools container is kept, for stop to
 * detach and collect. */
static int
interrupted_attach_child(void)
{
    char *names[1] = { "front" };
    ph_error_t err = NULL;

    signal(SIGINT, SIG_DFL);
    attach_world((ph_fake_end){ 0 }, "2026-01-01T00:00:00.000000000Z starting\n");
    ph_fake_hook(W.f, "wait", raise_sigint, NULL);
    if (ph_run_attach(W.r, "strace", names, 1, &err) == 0)
        return 1;
    if (err->status != 130 || strstr(err->msg, "interrupted by SIGINT") == NULL)
        return 2;
    if (calls_on("wait", "proj-front-attach-strace") != 1)
        return 3; /* waited on after the interrupt */
    if (ph_fake_count(W.f, PH_LABEL_MODE, "strace") != 1 || calls_on("remove", "proj-front-attach-strace") != 0)
        return 4;
    if (strstr(err->hint, "profharness stop front") == NULL)
        return 5;
    ph_error_free(&err);
    return 0;
}

static void
test_interrupted_attach(void **state)
{
    (void)state;
    tu_in_child(interrupted_attach_child, "the interrupted attach");
}

/* SEEN (an int) is 1 when the service's dir holds a temp dir named as the
 * collection's while the converter runs, -1 when it holds another. */
static void
note_convert_dir(void *ud, const ph_fake_call *c)
{
    int *seen = ud;
    char path[PATH_MAX + 16];
    DIR *d;
    struct dirent *de;

    (void)c;
    snprintf(path, sizeof path, "%s/front", W.out);
    if ((d = opendir(path)) == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, PH_RUNDIR_TEMP_PREFIX "convert-", strlen(PH_RUNDIR_TEMP_PREFIX "convert-")) == 0)
            *seen = *seen == 0 ? 1 : *seen;
        else if (strstr(de->d_name, "convert") != NULL)
            *seen = -1;
    }
    closedir(d);
}

/* A conversion killed (SIGKILL: nothing unwinds) leaves its temp dir in
 * the service's dir; the next stop or collect, under the lock, removes
 * it as it removes the collection's.  (Before: `.convert-*`, not swept:
 * each killed retry added one, up to max_bytes each.)
 * The conversion names its dir so: the same prefix. */
static void
test_killed_conversion_swept(void **state)
{
    static const char script[] = "demo 1/1 1.000000: 2000000 cpu-clock:u:\n"
                                 "\t    401000 serve+0x0 (/usr/bin/demo)\n\n";
    ph_fake_wl *t;
    int seen = 0;
    char path[PATH_MAX + 64];
    DIR *d;
    struct dirent *de;

    (void)state;
    open_world(ONE, NULL);
    t = ph_fake_on_create(W.f, "proj-front-perf");
    ph_fake_wl_end(t, (ph_fake_end){ 0 });
    ph_fake_wl_file(t, "/opt/profiling/front/perf.data", "PERFILE2", 8, 0644);
    ph_fake_wl_file_at_end(t, "/opt/profiling/front/" PH_RECORD_NAME, RECORD_STOPPED);
    ph_fake_exec_rule(W.f, "*", "*", 0, script);
    start("perf", "front");
    /* what the conversion makes, looked at while it runs */
    ph_fake_hook(W.f, "exec", note_convert_dir, &seen);
    stop_ok("front");
    CHECK(seen == 1, "the conversion's temp dir is named " PH_RUNDIR_TEMP_PREFIX "* (seen %d)", seen);
    /* one a killed stop left: the next stop's lock sweeps it */
    snprintf(path, sizeof path, "%s/front/" PH_RUNDIR_TEMP_PREFIX "convert-dead01/in", W.out);
    mkdirs(path + strlen(test_dir) + 1);
    start("perf", "front");
    seen = 0;
    stop_ok("front");
    snprintf(path, sizeof path, "%s/front", W.out);
    d = opendir(path);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        CHECK(strncmp(de->d_name, ".", 1) != 0 || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                  strcmp(de->d_name, ".lock") == 0,
              "`%s` left in the service's dir", de->d_name);
    closedir(d);
}

/* ---- a program found in a container's PATH ------------------------------------ */

/* A process's PATH is the container's to write: 43,000 entries made
 * `attach --mode perf` ask the Engine 43,000 times per process (39 s).
 * The directories looked in are the first PH_IMAGE_PATH_DIRS distinct
 * ones, the rest counted as skipped; a directory named again is not
 * asked again, so a program past many repeats is still found. */
static void
test_program_path_bounded(void **state)
{
    size_t cap = 43000 * 8 + 64, at = 0, before;
    char *path = malloc(cap);
    ph_image_program_t prog;
    ph_error_t err = NULL;
    ph_backend *b;
    ph_fake_wl *t;
    const char *id;
    char *argv[1] = { "node" };

    (void)state;
    assert_non_null(path);
    open_world(ONE, NULL);
    t = ph_fake_workload(W.f, "proj-front-1", DEMO_IMAGE);
    assert_non_null(t);
    assert_int_equal(ph_fake_wl_file(t, "/c/node", "#!/bin/sh\n", 10, 0755), 0);
    id = ph_fake_wl_id(t);
    b = ph_fake_backend(W.f, &err);
    assert_non_null(b);
    /* 43,000 distinct directories, none holding it */
    for (int i = 0; i < 43000; i++)
        at += (size_t)snprintf(path + at, cap - at, "%s/d%d", i ? ":" : "", i);
    must(ph_image_program_in(b, id, argv, 1, path, "/", &prog, &err), &err, "program_in");
    CHECK(ph_fake_call_count(W.f, "archive_stat") <= PH_IMAGE_PATH_DIRS, "%zu requests for one PATH",
          ph_fake_call_count(W.f, "archive_stat"));
    CHECK(prog.path[0] == '\0' && prog.path_skipped == 43000 - PH_IMAGE_PATH_DIRS, "%zu skipped",
          prog.path_skipped);
    /* two directories named 21,500 times each, then the one that has it */
    at = 0;
    for (int i = 0; i < 43000; i++)
        at += (size_t)snprintf(path + at, cap - at, "%s", i % 2 ? ":/b" : (i ? ":/a" : "/a"));
    snprintf(path + at, cap - at, ":/c");
    before = ph_fake_call_count(W.f, "archive_stat");
    must(ph_image_program_in(b, id, argv, 1, path, "/", &prog, &err), &err, "program_in");
    CHECK(strcmp(prog.path, "/c/node") == 0 && prog.path_skipped == 0, "found `%s`, %zu skipped", prog.path,
          prog.path_skipped);
    CHECK(ph_fake_call_count(W.f, "archive_stat") - before <= 4, "%zu requests for /a, /b, /c (and the program)",
          ph_fake_call_count(W.f, "archive_stat") - before);
    ph_backend_close(b);
    free(path);
}

/* ---- the order a run is completed in ---------------------------------------- */

typedef struct order_seen {
    int at_log, at_remove; /* 1: all held, else which check failed (negative) */
    char run[128];
} order_seen;

static int
count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    while (d != NULL && (de = readdir(d)) != NULL)
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    if (d != NULL)
        closedir(d);
    return n;
}

/* At service.log's turn: extracted into a temp dir, nothing in place yet. */
static void
at_log_all(void *ud, const ph_fake_call *c)
{
    order_seen *o = ud;
    char p[PATH_MAX + 256];

    if (c->name == NULL || strcmp(c->name, "proj-front-strace") != 0)
        return;
    snprintf(p, sizeof p, "%s/front", W.out);
    o->at_log = count_entries(p, ".incoming-") == 1 ? 1 : -1;
    snprintf(p, sizeof p, "front/%s", o->run);
    if (o->at_log == 1 && (exists(p) || exists("front/latest")))
        o->at_log = -2;
    snprintf(p, sizeof p, "%s/front/.incoming-*/strace.log", W.out);
    {
        char cmd[PATH_MAX + 300];

        snprintf(cmd, sizeof cmd, "ls %s >/dev/null 2>&1 && ! ls %s/front/.incoming-*/run.json >/dev/null 2>&1", p,
                 W.out);
        if (o->at_log == 1 && system(cmd) != 0)
            o->at_log = -3; /* the artifacts are there, run.json is not yet */
    }
}

/* At the removal: the run is complete in place, its links made. */
static void
at_remove(void *ud, const ph_fake_call *c)
{
    order_seen *o = ud;
    char p[PATH_MAX + 256];
    static const char *const files[] = { "strace.log", "service.log", "run.json", "report.html", "summary.json" };

    if (c->name == NULL || strcmp(c->name, "proj-front-strace") != 0)
        return;
    o->at_remove = 1;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "front/%s/%s", o->run, files[i]);
        if (!exists(p))
            o->at_remove = -(int)i - 1;
    }
    snprintf(p, sizeof p, "%s/front", W.out);
    if (o->at_remove == 1 && (!exists("front/latest") || !exists("front/strace.log") || count_entries(p, ".incoming-")))
        o->at_remove = -10;
}

static void
test_run_dir_completed_in_order(void **state)
{
    order_seen o = { 0 };

    (void)state;
    snprintf(o.run, sizeof o.run, "%s", started((ph_fake_end){ 0 }, RECORD_STOPPED));
    ph_fake_hook(W.f, "log_all", at_log_all, &o);
    ph_fake_hook(W.f, "remove", at_remove, &o);
    stop_ok("front");
    CHECK(o.at_log == 1, "at service.log: check %d", o.at_log);
    CHECK(o.at_remove == 1, "at the removal: check %d", o.at_remove);
}

/* ---- free space ------------------------------------------------------------ */

/* The disk has 10 bytes over min_free: the artifacts (empty files) fit,
 * service.log's first write (100 bytes) does not, and says so by its
 * name; the container is kept, nothing left on the host. */
static void
test_first_write_checks_free_space(void **state)
{
    ph_tar_limits lim = { 0 };
    ph_fake_wl *t;
    char log[101];
    ph_error_t err;

    (void)state;
    fake_avail = 1ull << 30;
    lim.min_free_bytes = fake_avail - 10;
    open_world(ONE, &lim);
    t = ph_fake_on_create(W.f, "proj-front-strace");
    ph_fake_wl_file(t, "/opt/profiling/front/strace.log", "", 0, 0644);
    memset(log, 'l', 100);
    log[100] = '\0';
    ph_fake_wl_log(t, log);
    start("strace", "front");
    err = stop_fails("front");
    CHECK(strstr(err->msg, "writing `service.log` would leave less free space") != NULL, "why: %s", err->msg);
    CHECK(strstr(err->msg, "set with --min-free") != NULL, "where the limit was set: %s", err->msg);
    ph_error_free(&err);
    CHECK(there("proj-front-strace", NULL), "the container is kept");
    no_temp_left("front");
    CHECK(!exists("front/latest"), "no run");
}

/* The perf conversion copies its inputs (perf.data) beside the run dir
 * under the collection's min_free too: on a disk with less free than
 * --min-free, perf.data is not taken (the conversion fails, said, and
 * puts nothing back), and the stop's own extraction refuses as well, the
 * container kept.  (A fresh mutant that dropped the conversion's
 * min_free survived every test: the converter then ran and its outputs
 * went back into the container.) */
static void
test_conversion_keeps_min_free(void **state)
{
    static char data[64 * 1024];
    ph_tar_limits lim = { 0 };
    ph_fake_wl *t;
    ph_error_t err;

    (void)state;
    fake_avail = 1ull << 30;
    lim.min_free_bytes = fake_avail + 4096; /* less free than the limit already */
    open_world(ONE, &lim);
    t = ph_fake_on_create(W.f, "proj-front-perf");
    ph_fake_wl_end(t, (ph_fake_end){ 0 });
    memset(data, 'p', sizeof data);
    ph_fake_wl_file(t, "/opt/profiling/front/perf.data", data, sizeof data, 0644);
    ph_fake_wl_file_at_end(t, "/opt/profiling/front/" PH_RECORD_NAME, RECORD_STOPPED);
    ph_fake_exec_rule(W.f, "*", "*", 0, "demo 1/1 1.000000: 2000000 cpu-clock:u:\n\t    401000 main+0x0 (/usr/bin/demo)\n\n");
    start("perf", "front");
    err = stop_fails("front");
    ph_error_free(&err);
    CHECK(calls_on("archive_put", "proj-front-perf") == 0, "the conversion took perf.data past min_free");
    CHECK(there("proj-front-perf", NULL), "the container is kept");
    no_temp_left("front");
}

/* Over --max-bytes 1500 (a 2000-byte file): the container is kept, and
 * the hint names twice the limit as it is, 3000 (not rounded to KiB). */
static void
test_limit_hint(void **state)
{
    static char data[2000];
    ph_tar_limits lim = { 0 };
    ph_fake_wl *t;
    ph_error_t err;

    (void)state;
    lim.max_bytes = 1500;
    open_world(ONE, &lim);
    t = profiled_writes("proj-front-strace", "front", (ph_fake_end){ 0 });
    memset(data, 'd', sizeof data);
    ph_fake_wl_file(t, "/opt/profiling/front/big.bin", data, sizeof data, 0644);
    start("strace", "front");
    err = stop_fails("front");
    CHECK(strstr(err->msg, "set with --max-bytes") != NULL, "where the limit was set: %s", err->msg);
    CHECK(strstr(err->hint, "`profharness stop --max-bytes 3000 front`") != NULL, "hint: %s", err->hint);
    ph_error_free(&err);
    CHECK(there("proj-front-strace", NULL), "the container is kept");
    no_temp_left("front");
}

/* A replica's number from its labels, which anyone could have written:
 * 1 to 100000, else none (compose's number then, else unknown). */
static void
test_replica_labels_read(void **state)
{
    static const struct {
        const char *ours, *compose;
        int slot;
    } cases[] = {
        { "2", "5", 2 }, { "0", "3", 3 }, { "0", NULL, 0 }, { "-1", NULL, 0 }, { "100001", "1", 1 },
        { "1x", NULL, 0 }, { NULL, "4", 4 }, { NULL, "0", 0 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ph_workload w = { 0 };

        if (cases[i].ours)
            assert_int_equal(ph_kvv_set(&w.labels, PH_LABEL_REPLICA, cases[i].ours), 0);
        if (cases[i].compose)
            assert_int_equal(ph_kvv_set(&w.labels, PH_DC_NUMBER, cases[i].compose), 0);
        assert_int_equal(ph_kvv_set(&w.labels, PH_LABEL_REPLICAS, "0"), 0);
        assert_int_equal(ph_workload_read_labels(&w), 0);
        if (w.slot != cases[i].slot)
            fail_msg("replica label `%s`, compose's `%s`: slot %d, want %d", cases[i].ours ? cases[i].ours : "-",
                     cases[i].compose ? cases[i].compose : "-", w.slot, cases[i].slot);
        assert_int_equal(w.replicas, 0);
        ph_workload_clear(&w);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_start_no_tmp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_lone, setup, teardown),
        cmocka_unit_test(test_replica_labels_read),
        cmocka_unit_test_setup_teardown(test_start_entrypoint_drops_cmd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_exits_on_term, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_ignores_term, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_crashes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_exited_by_itself, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_oom, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collect_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_start_refused_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_stop_node_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_collect_attached, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_stop_attached, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_two_tasks_one_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_rollback_one_per_slot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_remove_leaves_attached, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_logs_every_task, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_logs_node_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_logs_after_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replicas_logs_after_stop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replicas_logs_long_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_discard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_discard_bad_run_label, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_discard_attached, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_without_engine, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_after_profiled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_compose_own, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replaced_grace_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_and_detach, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_waits_until_joined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_refused_after_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_silent_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_joined_then_ended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_refused_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_chatty_joins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_attach_refused_chatty_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replicas_stop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replicas_refresh_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replicas_one_kept_then_added, setup, teardown),
        cmocka_unit_test_setup_teardown(test_swarm_task_collected_as_lone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_swarm_task_interrupted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupted_extraction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupted_conversion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupted_attach, setup, teardown),
        cmocka_unit_test_setup_teardown(test_program_path_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_conversion_swept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_dir_completed_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_write_checks_free_space, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_hint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conversion_keeps_min_free, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
