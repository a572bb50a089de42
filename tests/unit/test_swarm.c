/* test_swarm.c - what the Swarm path builds, reached without a swarm:
 * the spec every profiled task runs (ph_run_swarm_task_spec: its
 * command, the tools tree's wrap where the image has no package manager,
 * the stop budget), the service spec the backend sends for it
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

/* The task spec of SERVICE under strace in an image offering FACTS whose
 * ENTRYPOINT is /usr/bin/demo and CMD --serve: its command, joined. */
static const char *
task_command(ph_run *r, const char *service, const char *pm, ph_workload_spec *spec)
{
    ph_image_config ic = { 0 };
    ph_image_facts facts = { 0 };
    ph_error_t err = NULL;
    ph_service *s = ph_compose_service(ph_run_compose(r), service);
    ph_profile *p = ph_profiles_find(ph_run_profiles(r), "strace");

    assert_non_null(s);
    assert_non_null(p);
    snprintf(facts.pm, sizeof facts.pm, "%s", pm);
    snprintf(facts.libc, sizeof facts.libc, "glibc");
    assert_int_equal(ph_strv_push(&ic.entrypoint, "/usr/bin/demo"), 0);
    assert_int_equal(ph_strv_push(&ic.cmd, "--serve"), 0);
    *spec = (ph_workload_spec)PH_WORKLOAD_SPEC_INIT;
    if (ph_run_swarm_task_spec(r, s, p, NULL, "reg/demo-profiling:1", &facts, &ic, "20260101T000000Z-strace",
                               "/out/front/20260101T000000Z-strace", spec, &err) < 0)
        fail_msg("task spec: %s", err->msg);
    ph_image_config_clear(&ic);
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
        cmocka_unit_test(test_service_spec),
        cmocka_unit_test(test_context_by_whole_name),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
