/* test_engine_swarm.c - the Engine client's Swarm calls (ph_engine_swarm.h)
 * against a real swarm manager: the one-node bed of tests/72-swarm-bed.bats,
 * which runs this binary with DOCKER_HOST at the bed's node 1,
 * PH_TEST_SWARM_IMAGE an image loaded there and PH_TEST_SWARM_NODE its
 * hostname.  Not in build/tests/ (run-unit.sh runs those against the
 * shared Engine, which is in no swarm).
 *
 * A service per test, named ph-unittest-engine-swarm-<pid>-…, removed at
 * the end and swept at the start when a crashed run left one (its pid
 * gone). */
#include "../test_engine_util.h"

#include <time.h>

#include "ph_engine_swarm.h"

static ph_engine *e;
static char svc_name[128];
static char svc_id[128];

static const char *
env_or_fail(const char *name)
{
    const char *v = getenv(name);

    if (v == NULL || v[0] == '\0')
        fail_msg("%s is not set: run this from tests/72-swarm-bed.bats", name);
    return v;
}

static void
sweep_services(void)
{
    json_t *list = NULL, *s;
    size_t i;
    char p[300];

    if (ph_engine_request(e, "GET", "/services", NULL, &list, NULL, NULL) != 0)
        return;
    json_array_foreach(list, i, s) {
        const char *name = json_string_value(json_object_get(json_object_get(s, "Spec"), "Name"));

        if (tu_engine_sweepable(name)) {
            snprintf(p, sizeof p, "/services/%s", json_string_value(json_object_get(s, "ID")));
            ph_engine_request(e, "DELETE", p, NULL, NULL, NULL, NULL);
        }
    }
    json_decref(list);
}

static int
group_setup(void **state)
{
    ph_error_t err = NULL;

    (void)state;
    e = ph_engine_new(&err);
    if (e == NULL)
        fail_msg("%s", err->msg);
    sweep_services();
    return 0;
}

static int
group_teardown(void **state)
{
    (void)state;
    sweep_services();
    ph_engine_free(e);
    return 0;
}

/* A replicated service of REPLICAS tasks of the test image running `sleep`
 * (the demo image's shell), labelled as a stack's. */
static void
create_service(const char *suffix, long replicas)
{
    json_t *spec, *resp = NULL;
    ph_error_t err = NULL;

    snprintf(svc_name, sizeof svc_name, TU_ENGINE_PREFIX "swarm-%ld-%s", (long)getpid(), suffix);
    /* every task at once, a second's watch: the default (one by one,
     * 5 s each) is slower and tests nothing more */
    spec = json_pack("{s:s, s:{s:s, s:s}, s:{s:{s:s, s:[s,s,s], s:{s:s}, s:I}}, s:{s:{s:I}}, s:{s:s}, s:{s:I, s:I, "
                     "s:s}, s:{s:I, s:I, s:s}}",
                     "Name", svc_name, "Labels", "com.docker.stack.namespace", svc_name, "io.test", "yes",
                     "TaskTemplate", "ContainerSpec", "Image", env_or_fail("PH_TEST_SWARM_IMAGE"), "Command",
                     "sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done", "Labels",
                     "com.docker.stack.namespace", svc_name, "StopGracePeriod", (json_int_t)10000000000LL, "Mode",
                     "Replicated", "Replicas", (json_int_t)replicas, "EndpointSpec", "Mode", "dnsrr", "UpdateConfig",
                     "Parallelism", (json_int_t)0, "Monitor", (json_int_t)1000000000LL, "FailureAction", "pause",
                     "RollbackConfig", "Parallelism", (json_int_t)0, "Monitor", (json_int_t)1000000000LL,
                     "FailureAction", "pause");
    assert_non_null(spec);
    if (ph_engine_request(e, "POST", "/services/create", spec, &resp, NULL, &err) != 0)
        fail_msg("create service: %s", err->msg);
    snprintf(svc_id, sizeof svc_id, "%s", json_string_value(json_object_get(resp, "ID")));
    assert_true(svc_id[0] != '\0');
    json_decref(resp);
    json_decref(spec);
}

static json_t *
inspect(void)
{
    json_t *s = NULL;
    int found = 0;
    ph_error_t err = NULL;

    if (ph_engine_service_inspect(e, svc_id, &s, &found, &err) != 0)
        fail_msg("%s", err->msg);
    assert_true(found);
    return s;
}

static void
converge(int rollback, ph_swarm_converge *st)
{
    ph_error_t err = NULL;

    if (ph_engine_service_converge(e, svc_id, 180, rollback, st, &err) != 0)
        fail_msg("%s", err->msg);
}

static void
test_self_and_nodes(void **state)
{
    char id[80];
    int manager = 0;
    ph_swarm_node *nodes = NULL;
    size_t n = 0;
    ph_error_t err = NULL;

    (void)state;
    assert_int_equal(ph_engine_swarm_self(e, id, sizeof id, &manager, &err), 0);
    assert_true(id[0] != '\0');
    assert_true(manager);
    assert_int_equal(ph_engine_nodes(e, &nodes, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(nodes[0].id, id);
    assert_string_equal(nodes[0].hostname, env_or_fail("PH_TEST_SWARM_NODE"));
    assert_string_equal(nodes[0].state, "ready");
    assert_string_equal(nodes[0].availability, "active");
    assert_true(nodes[0].manager);
    assert_true(nodes[0].addr[0] != '\0');
    assert_ptr_equal(ph_swarm_node_find(nodes, n, id), &nodes[0]);
    assert_null(ph_swarm_node_find(nodes, n, "nope"));
    free(nodes);
}

/* Created, listed by label, converged; updated with its version (the old
 * tasks shut down and kept, the new ones current and carrying the new
 * label); an update naming an old version refused; rolled back to
 * PreviousSpec. */
static void
test_update_and_rollback(void **state)
{
    json_t *s, *list = NULL, *spec;
    const char *labels[2];
    char lbl[200];
    ph_swarm_task *t = NULL;
    ph_swarm_converge st;
    size_t n = 0, i, cur = 0, old = 0;
    long long v0, v1;
    ph_error_t err = NULL;
    char self[80];
    int manager;

    (void)state;
    create_service("upd", 2);
    snprintf(lbl, sizeof lbl, "com.docker.stack.namespace=%s", svc_name);
    labels[0] = lbl;
    labels[1] = "io.test";
    assert_int_equal(ph_engine_services_by_label(e, labels, 2, &list, &err), 0);
    assert_int_equal(json_array_size(list), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "ID")), svc_id);
    json_decref(list);
    labels[1] = "io.test=no";
    assert_int_equal(ph_engine_services_by_label(e, labels, 2, &list, &err), 0);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);

    converge(0, &st);
    assert_int_equal(st.want, 2);
    assert_int_equal(st.running, 2);
    assert_int_equal(ph_engine_swarm_self(e, self, sizeof self, &manager, &err), 0);
    s = inspect();
    assert_int_equal(ph_engine_service_tasks(e, s, "io.run", &t, &n, &err), 0);
    assert_int_equal(n, 2);
    for (i = 0; i < n; i++) {
        assert_int_equal(t[i].slot, (long)i + 1);
        assert_string_equal(t[i].node_id, self);
        assert_string_equal(t[i].state, "running");
        assert_string_equal(t[i].desired, "running");
        assert_int_equal(strlen(t[i].container_id), 64);
        assert_true(t[i].current);
        assert_string_equal(t[i].label, "");
        assert_false(ph_swarm_task_ended(&t[i]));
    }
    free(t);

    /* the update: a label on the container spec */
    v0 = ph_engine_service_version(s);
    assert_true(v0 > 0);
    spec = json_deep_copy(json_object_get(s, "Spec"));
    json_object_set_new(json_object_get(json_object_get(json_object_get(spec, "TaskTemplate"), "ContainerSpec"), "Labels"),
                        "io.run", json_string("r1"));
    assert_int_equal(ph_engine_service_update(e, svc_id, v0, spec, 0, &err), 0);
    /* the same version again: someone else's update came between */
    assert_int_equal(ph_engine_service_update(e, svc_id, v0, spec, 0, &err), -1);
    assert_non_null(strstr(err->msg, "out of sequence"));
    assert_non_null(strstr(err->msg, "update service"));
    ph_error_free(&err);
    json_decref(spec);
    json_decref(s);
    converge(0, &st);
    assert_int_equal(st.running, 2);
    assert_string_equal(st.update_state, "completed");
    s = inspect();
    v1 = ph_engine_service_version(s);
    assert_true(v1 > v0);
    assert_non_null(json_object_get(s, "PreviousSpec"));
    assert_int_equal(ph_engine_service_tasks(e, s, "io.run", &t, &n, &err), 0);
    for (i = 0; i < n; i++) {
        if (t[i].current) {
            cur++;
            assert_string_equal(t[i].label, "r1");
            assert_string_equal(t[i].state, "running");
        } else {
            old++;
            assert_string_equal(t[i].label, "");
            assert_string_equal(t[i].desired, "shutdown");
            assert_true(ph_swarm_task_ended(&t[i]));
            /* a stopped task's container stays on its node */
            assert_int_equal(strlen(t[i].container_id), 64);
        }
    }
    assert_int_equal(cur, 2);
    assert_int_equal(old, 2);
    free(t);

    /* rolled back: PreviousSpec, the label gone */
    assert_int_equal(ph_engine_service_update(e, svc_id, v1, json_object_get(s, "Spec"), 1, &err), 0);
    json_decref(s);
    converge(1, &st);
    assert_string_equal(st.update_state, "rollback_completed");
    s = inspect();
    assert_null(json_object_get(json_object_get(json_object_get(json_object_get(json_object_get(s, "Spec"),
                                                                                "TaskTemplate"),
                                                                "ContainerSpec"),
                                                "Labels"),
                                "io.run"));
    assert_int_equal(ph_engine_service_tasks(e, s, "io.run", &t, &n, &err), 0);
    cur = 0;
    for (i = 0; i < n; i++)
        if (t[i].current && strcmp(t[i].desired, "running") == 0) {
            cur++;
            assert_string_equal(t[i].label, "");
        }
    assert_int_equal(cur, 2);
    free(t);
    json_decref(s);
}

/* An update whose tasks cannot start: the swarm pauses it, and the wait
 * says so with the task's error rather than waiting out its time. */
static void
test_update_paused(void **state)
{
    json_t *s, *spec;
    ph_swarm_converge st;
    ph_error_t err = NULL;

    (void)state;
    create_service("bad", 1);
    converge(0, &st);
    s = inspect();
    spec = json_deep_copy(json_object_get(s, "Spec"));
    json_object_set_new(json_object_get(json_object_get(spec, "TaskTemplate"), "ContainerSpec"), "Image",
                        json_string("ph-unittest-no-such-image:never"));
    assert_int_equal(ph_engine_service_update(e, svc_id, ph_engine_service_version(s), spec, 0, &err), 0);
    assert_int_equal(ph_engine_service_converge(e, svc_id, 180, 0, &st, &err), -1);
    assert_non_null(err);
    assert_non_null(strstr(err->msg, "paused"));
    assert_string_equal(st.update_state, "paused");
    ph_error_free(&err);
    json_decref(spec);
    json_decref(s);
}

/* A service that is not there: not found, no error; a converge on it
 * fails at once. */
static void
test_missing_service(void **state)
{
    json_t *s = NULL;
    int found = 1;
    ph_error_t err = NULL;

    (void)state;
    assert_int_equal(ph_engine_service_inspect(e, "ph-unittest-no-such-service", &s, &found, &err), 0);
    assert_false(found);
    assert_null(s);
    assert_int_equal(ph_engine_service_converge(e, "ph-unittest-no-such-service", 5, 0, NULL, &err), -1);
    assert_non_null(strstr(err->msg, "is gone"));
    ph_error_free(&err);
}

/* A wait that cannot end in time says how far the tasks came. */
static void
test_converge_times_out(void **state)
{
    ph_swarm_converge st;
    ph_error_t err = NULL;

    (void)state;
    create_service("slow", 1);
    /* a placement no node satisfies: the task stays pending */
    {
        json_t *s = inspect(), *spec = json_deep_copy(json_object_get(s, "Spec"));

        json_object_set_new(json_object_get(spec, "TaskTemplate"), "Placement",
                            json_pack("{s:[s]}", "Constraints", "node.labels.ph-unittest==nowhere"));
        assert_int_equal(ph_engine_service_update(e, svc_id, ph_engine_service_version(s), spec, 0, &err), 0);
        json_decref(spec);
        json_decref(s);
    }
    assert_int_equal(ph_engine_service_converge(e, svc_id, 3, 0, &st, &err), -1);
    assert_non_null(strstr(err->msg, "did not converge in 3 s"));
    assert_true(st.running < st.want || st.pending > 0 || strcmp(st.update_state, "updating") == 0);
    ph_error_free(&err);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_and_nodes),
        cmocka_unit_test(test_update_and_rollback),
        cmocka_unit_test(test_update_paused),
        cmocka_unit_test(test_missing_service),
        cmocka_unit_test(test_converge_times_out),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
