/* test_swarm.c - what the Swarm path builds, reached without a swarm:
 * the spec every profiled task runs (ph_run_profiled_spec, as a start on
 * one Engine builds it: its command, the tools tree's wrap where the
 * image has no package manager, the stop budget, the image's user and
 * workdir, a volume for the artifacts of a read-only service), the
 * service spec the backend sends for it
 * (ph_backend_swarm_spec: StopGracePeriod in nanoseconds), and which
 * Docker context reaches a node (PH_SWARM_CONTEXTS, by the whole name).
 * The swarm itself is tests/72-swarm-bed.bats and tests/swarm/. */
#include "test_util.h"

#include <limits.h>

#include "ph_backend_swarm.h"
#include "ph_run_int.h"

static ph_run *
open_project(const char *compose_yaml)
{
    char compose[512], top[PATH_MAX];
    ph_run_opts o = { 0 };
    ph_error_t err = NULL;
    ph_run *r;

    tu_write("compose.yaml", compose_yaml);
    snprintf(compose, sizeof compose, "%s/compose.yaml", test_dir);
    assert_non_null(getcwd(top, sizeof top));
    o.compose_file = compose;
    o.data_dir = top; /* the shipped profiles: run from the top of the tree */
    r = ph_run_new(&o, &err);
    if (r == NULL)
        fail_msg("ph_run_new: %s", err->msg);
    return r;
}

/* The task spec of SERVICE under strace as the Swarm start builds it, in
 * an image offering FACTS whose ENTRYPOINT is /usr/bin/demo and CMD
 * --serve, its USER and WORKDIR as given (may be NULL). */
static void
task_spec(ph_run *r, const char *service, const char *pm, const char *user, const char *workdir,
          ph_workload_spec *spec)
{
    static char image[] = "reg/demo-profiling:1";
    ph_image_config ic = { 0 };
    ph_run_prepared prep = { .prof_img = image };
    ph_error_t err = NULL;
    ph_service *s = ph_compose_service(ph_run_compose(r), service);
    ph_profile *p = ph_profiles_find(ph_run_profiles(r), "strace");

    assert_non_null(s);
    assert_non_null(p);
    snprintf(prep.facts.pm, sizeof prep.facts.pm, "%s", pm);
    snprintf(prep.facts.libc, sizeof prep.facts.libc, "glibc");
    assert_int_equal(ph_strv_push(&ic.entrypoint, "/usr/bin/demo"), 0);
    assert_int_equal(ph_strv_push(&ic.cmd, "--serve"), 0);
    ic.user = user ? strdup(user) : NULL;
    ic.workdir = workdir ? strdup(workdir) : NULL;
    if (ph_run_profiled_spec(r, s, p, &prep, &ic, "demo:1", "20260101T000000Z-strace", "2026-01-01T00:00:00Z",
                             "/out/front/20260101T000000Z-strace", PH_RUN_SLOT_ORCHESTRATED, NULL, spec, &err) < 0)
        fail_msg("task spec: %s", err->msg);
    ph_image_config_clear(&ic);
}

/* Its command, joined. */
static const char *
task_command(ph_run *r, const char *service, const char *pm, ph_workload_spec *spec)
{
    task_spec(r, service, pm, NULL, NULL, spec);
    return tu_join(spec->entrypoint.v, spec->entrypoint.n);
}

static void
clear(ph_workload_spec *spec)
{
    spec->image = NULL; /* the caller's */
    ph_workload_spec_clear(spec);
}

/* An image with no package manager has no strace of its own: the wrap's
 * program is the tools tree's, which the profiling image carries.  With
 * apt, strace is the image's own, found on its PATH. */
static void
test_task_wrap_from_the_tree(void **state)
{
    ph_workload_spec spec;
    ph_run *r;

    (void)state;
    r = open_project("services:\n  front:\n    image: demo:1\n");
    if (strstr(task_command(r, "front", "", &spec), " /opt/profharness/tools/bin/strace -f ") == NULL)
        fail_msg("no package manager: %s", tu_join(spec.entrypoint.v, spec.entrypoint.n));
    clear(&spec);
    if (strstr(task_command(r, "front", "apt", &spec), " -- strace -f ") == NULL)
        fail_msg("apt: %s", tu_join(spec.entrypoint.v, spec.entrypoint.n));
    clear(&spec);
    ph_run_free(r);
}

/* Docker's rule in a task too: an entrypoint given by the service drops
 * the image's CMD; a command given replaces it; neither: both the
 * image's.  The stop grace is the whole stop budget, in seconds. */
static void
test_task_command_and_grace(void **state)
{
    ph_workload_spec spec;
    const char *cmd;
    ph_run *r;

    (void)state;
    r = open_project("services:\n"
                     "  ep:\n    image: demo:1\n    entrypoint: [/bin/run, -x]\n"
                     "  cmd:\n    image: demo:1\n    command: [--other]\n"
                     "  both:\n    image: demo:1\n    entrypoint: [/bin/run]\n    command: [--other]\n"
                     "  plain:\n    image: demo:1\n");
    cmd = task_command(r, "ep", "apt", &spec);
    if (strstr(cmd, " -- /bin/run -x") == NULL || strstr(cmd, "--serve") != NULL || strstr(cmd, "/usr/bin/demo"))
        fail_msg("entrypoint: %s", cmd);
    assert_int_equal(spec.stop_grace_s, 70);
    assert_string_equal(spec.stop_signal, "SIGTERM");
    assert_string_equal(ph_kvv_get(&spec.labels, PH_LABEL_MODE), "strace");
    assert_string_equal(ph_kvv_get(&spec.labels, PH_LABEL_SERVICE), "ep");
    clear(&spec);
    cmd = task_command(r, "cmd", "apt", &spec);
    if (strstr(cmd, " -- /usr/bin/demo --other") == NULL || strstr(cmd, "--serve") != NULL)
        fail_msg("command: %s", cmd);
    clear(&spec);
    cmd = task_command(r, "both", "apt", &spec);
    if (strstr(cmd, " -- /bin/run --other") == NULL || strstr(cmd, "/usr/bin/demo") != NULL)
        fail_msg("both: %s", cmd);
    clear(&spec);
    cmd = task_command(r, "plain", "apt", &spec);
    if (strstr(cmd, " -- /usr/bin/demo --serve") == NULL)
        fail_msg("the image's: %s", cmd);
    clear(&spec);
    ph_run_free(r);
}

/* The service spec sent: the stop grace in nanoseconds (a 70 s budget is
 * 70,000,000,000), the task's command and labels, no restart; what the
 * service had kept. */
static void
test_service_spec(void **state)
{
    ph_workload_spec spec = PH_WORKLOAD_SPEC_INIT;
    ph_error_t err = NULL;
    json_t *svc, *ns, *cs;

    (void)state;
    svc = json_pack("{s:{s:i}, s:{s:s, s:{s:{s:s, s:[s]}}}}", "Version", "Index", 42, "Spec", "Name", "proj_front",
                    "TaskTemplate", "ContainerSpec", "Image", "demo:1", "Env", "KEEP=1");
    assert_non_null(svc);
    spec.image = "reg/demo-profiling:1";
    spec.set_entrypoint = spec.set_cmd = 1;
    assert_int_equal(ph_strv_push(&spec.entrypoint, "/opt/profharness/bin/ph-init"), 0);
    assert_int_equal(ph_strv_push(&spec.env, "PH=1"), 0);
    assert_int_equal(ph_kvv_set(&spec.labels, PH_LABEL_RUN, "r1"), 0);
    spec.stop_signal = strdup("SIGTERM");
    spec.stop_grace_s = 70;
    spec.no_restart = 1;
    ns = ph_backend_swarm_spec(svc, &spec, &err);
    if (ns == NULL)
        fail_msg("spec: %s", err->msg);
    cs = json_object_get(json_object_get(ns, "TaskTemplate"), "ContainerSpec");
    assert_int_equal(json_integer_value(json_object_get(cs, "StopGracePeriod")), 70000000000LL);
    assert_string_equal(json_string_value(json_object_get(cs, "StopSignal")), "SIGTERM");
    assert_string_equal(json_string_value(json_object_get(cs, "Image")), "reg/demo-profiling:1");
    assert_string_equal(json_string_value(json_array_get(json_object_get(cs, "Command"), 0)),
                        "/opt/profharness/bin/ph-init");
    assert_int_equal(json_array_size(json_object_get(cs, "Args")), 0);
    assert_int_equal(json_array_size(json_object_get(cs, "Env")), 2); /* KEEP=1, PH=1 */
    assert_string_equal(json_string_value(json_object_get(json_object_get(cs, "Labels"), PH_LABEL_RUN)), "r1");
    assert_string_equal(json_string_value(json_object_get(json_object_get(ns, "Labels"), PH_LABEL_RUN)), "r1");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_object_get(ns, "TaskTemplate"), "RestartPolicy"),
                                          "Condition")), "none");
    assert_string_equal(json_string_value(json_object_get(ns, "Name")), "proj_front");
    json_decref(ns);
    json_decref(svc);
    spec.image = NULL;
    ph_workload_spec_clear(&spec);
}

/* A task runs as a start on one Engine runs the service: as the image's
 * user in its workdir (the profiling image is built as root), compose's
 * own where it sets them (the service's spec keeps those); a read-only
 * service's artifacts on a volume of their own; the slots the swarm's,
 * no replica labels of ours; a global service (no mode one Engine runs)
 * not refused.  Through the service spec sent: User, Dir,
 * an anonymous volume at /opt/profiling. */
static void
test_task_user_workdir_read_only(void **state)
{
    ph_workload_spec spec;
    ph_error_t err = NULL;
    json_t *svc, *ns, *cs, *m;
    size_t i;
    int vol = 0;
    ph_run *r;

    (void)state;
    r = open_project("services:\n"
                     "  front:\n    image: demo:1\n    read_only: true\n    deploy:\n      replicas: 2\n"
                     "  own:\n    image: demo:1\n    user: \"1000\"\n    working_dir: /work\n"
                     "  everywhere:\n    image: demo:1\n    deploy:\n      mode: global\n");
    task_spec(r, "front", "apt", "65534", "/srv", &spec);
    assert_non_null(spec.user);
    assert_string_equal(spec.user, "65534");
    assert_non_null(spec.workdir);
    assert_string_equal(spec.workdir, "/srv");
    assert_null(ph_kvv_get(&spec.labels, PH_LABEL_REPLICA));
    assert_null(ph_kvv_get(&spec.labels, PH_LABEL_REPLICAS));
    svc = json_pack("{s:{s:i}, s:{s:s, s:{s:{s:s, s:b}}}}", "Version", "Index", 7, "Spec", "Name", "proj_front",
                    "TaskTemplate", "ContainerSpec", "Image", "demo:1", "ReadOnly", 1);
    ns = ph_backend_swarm_spec(svc, &spec, &err);
    if (ns == NULL)
        fail_msg("spec: %s", err->msg);
    cs = json_object_get(json_object_get(ns, "TaskTemplate"), "ContainerSpec");
    assert_string_equal(json_string_value(json_object_get(cs, "User")), "65534");
    assert_string_equal(json_string_value(json_object_get(cs, "Dir")), "/srv");
    json_array_foreach(json_object_get(cs, "Mounts"), i, m)
        vol += strcmp(json_string_value(json_object_get(m, "Target")), "/opt/profiling") == 0 &&
               strcmp(json_string_value(json_object_get(m, "Type")), "volume") == 0 &&
               json_object_get(m, "Source") == NULL && !json_is_true(json_object_get(m, "ReadOnly"));
    if (vol != 1)
        fail_msg("no volume of its own at /opt/profiling: %s", json_dumps(cs, JSON_COMPACT));
    json_decref(ns);
    json_decref(svc);
    clear(&spec);
    task_spec(r, "own", "apt", "65534", "/srv", &spec);
    assert_null(spec.user);
    assert_null(spec.workdir);
    clear(&spec);
    /* what one Engine could not run, the swarm runs: not refused */
    task_spec(r, "everywhere", "apt", NULL, NULL, &spec);
    clear(&spec);
    ph_run_free(r);
}

/* PH_SWARM_CONTEXTS names a node by its whole hostname: node1 is not
 * node10; a node it does not name is reached by a context of its name. */
static void
test_context_by_whole_name(void **state)
{
    char ctx[128];

    (void)state;
    setenv("PH_SWARM_CONTEXTS", "node10=ctx10,node1=ctx1,node2=ctx2", 1);
    ph_backend_swarm_context_of("node1", ctx, sizeof ctx);
    assert_string_equal(ctx, "ctx1");
    ph_backend_swarm_context_of("node10", ctx, sizeof ctx);
    assert_string_equal(ctx, "ctx10");
    ph_backend_swarm_context_of("node2", ctx, sizeof ctx);
    assert_string_equal(ctx, "ctx2");
    setenv("PH_SWARM_CONTEXTS", "node10=ctx10", 1);
    ph_backend_swarm_context_of("node1", ctx, sizeof ctx);
    assert_string_equal(ctx, "node1");
    ph_backend_swarm_context_of("node", ctx, sizeof ctx);
    assert_string_equal(ctx, "node");
    unsetenv("PH_SWARM_CONTEXTS");
    ph_backend_swarm_context_of("node10", ctx, sizeof ctx);
    assert_string_equal(ctx, "node10");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_task_wrap_from_the_tree, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_task_command_and_grace, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_task_user_workdir_read_only, tu_setup, tu_teardown),
        cmocka_unit_test(test_service_spec),
        cmocka_unit_test(test_context_by_whole_name),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
