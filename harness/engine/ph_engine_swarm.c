/* ph_engine_swarm.c - the Swarm endpoints (see ph_engine_swarm.h).
 *
 * A service update is asynchronous: the manager answers at once and the
 * orchestrator replaces tasks at the pace of the service's update (or
 * rollback) config.  So "converged" is read, not told: the update's state
 * (absent right after the request, `updating`, then `completed`) and the
 * tasks themselves (those wanted running, running the current container
 * spec).  A task's Spec is the service's TaskTemplate as it was when the
 * task was made, less what the API adds (Runtime): its ContainerSpec and
 * ForceUpdate are what tell a current task from an old one.
 */
#include "ph_engine_int.h"
#include "ph_engine_swarm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ph_signal.h"
#include "ph_util.h"

#define POLL_NS 500000000L

static void
copy_str(char *dst, size_t size, const json_t *v)
{
    const char *s = json_string_value(v);

    snprintf(dst, size, "%s", s ? s : "");
}

/* GET a list whose query is one filter (KEY: [VALUE...]).  With
 * MANAGER: 503, the Engine's answer when it manages no swarm (in none, or
 * a worker), is no error: *MANAGER 0 and *OUT an empty array. */
static int
filtered_list(ph_engine *e, const char *what, const char *path, const char *key, const char *const *values, size_t n,
              json_t **out, int *manager, ph_error_t *err)
{
    ph_engine_req r = { .what = what, .method = "GET", .path = path, .resp = out, .ok = { manager ? 503 : 0 } };
    json_t *filters = NULL, *arr;
    char *s = NULL;
    int rc = -1;

    *out = NULL;
    if (ph_engine_check(e, what, err) < 0)
        return -1;
    if (n > 0) {
        filters = json_object();
        arr = json_array();
        if (filters == NULL || arr == NULL || json_object_set_new(filters, key, arr) < 0) {
            json_decref(arr);
            ph_fail(err, ENOMEM, "%s: allocate", what);
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            if (ph_engine_check_str(values[i], what, key, err) < 0)
                goto out;
            if (json_array_append_new(arr, json_string(values[i])) < 0) {
                ph_bad_input(err, "%s: %s `%.200s` is not UTF-8", what, key, values[i]);
                goto out;
            }
        }
        if ((s = json_dumps(filters, JSON_COMPACT)) == NULL) {
            ph_fail(err, ENOMEM, "%s: encode the filter", what);
            goto out;
        }
        r.query[0] = PH_ENGINE_Q("filters", s);
    }
    if (ph_engine_call(e, &r, err) < 0)
        goto out;
    if (manager != NULL && (*manager = r.status != 503) == 0) {
        json_decref(*out);
        *out = NULL;
    }
    if (*out == NULL)
        *out = json_array();
    if (!json_is_array(*out)) {
        json_decref(*out);
        *out = NULL;
        ph_fail(err, 0, "%s: the Engine's answer is not a list", what);
        goto out;
    }
    rc = 0;
out:
    free(s);
    json_decref(filters);
    return rc;
}

int
ph_engine_swarm_self(ph_engine *e, char *node_id, size_t size, int *manager, ph_error_t *err)
{
    ph_engine_req r = { .what = "ask the Engine for its swarm", .method = "GET", .path = "/info" };
    json_t *info = NULL, *sw;

    r.resp = &info;
    node_id[0] = '\0';
    *manager = 0;
    if (ph_engine_check(e, r.what, err) < 0 || ph_engine_call(e, &r, err) < 0)
        return -1;
    sw = json_object_get(info, "Swarm");
    copy_str(node_id, size, json_object_get(sw, "NodeID"));
    *manager = json_is_true(json_object_get(sw, "ControlAvailable"));
    json_decref(info);
    return 0;
}

int
ph_engine_services_by_label(ph_engine *e, const char *const *labels, size_t n, json_t **out, ph_error_t *err)
{
    if (out == NULL || labels == NULL || n == 0)
        return ph_bad_input(err, "list services by label: no labels given");
    return filtered_list(e, "list services by label", "/services", "label", labels, n, out, NULL, err);
}

int
ph_engine_services_if_manager(ph_engine *e, const char *const *labels, size_t n, json_t **out, int *manager,
                              ph_error_t *err)
{
    if (out == NULL || labels == NULL || n == 0 || manager == NULL)
        return ph_bad_input(err, "list services by label: no labels given");
    return filtered_list(e, "list services by label", "/services", "label", labels, n, out, manager, err);
}

int
ph_engine_service_inspect(ph_engine *e, const char *id, json_t **out, int *found, ph_error_t *err)
{
    ph_engine_req r = { .what = "inspect service `{}`", .method = "GET", .path = "/services/{id}", .arg = { id },
                        .kind = "service id", .ok = { 404 } };
    json_t *tmp = NULL;

    *out = NULL;
    *found = 0;
    r.resp = &tmp;
    if (ph_engine_check(e, "inspect a service", err) < 0 || ph_engine_call(e, &r, err) < 0)
        return -1;
    if (r.status == 404) {
        json_decref(tmp);
        return 0;
    }
    *found = 1;
    *out = tmp;
    return 0;
}

int
ph_engine_service_remove(ph_engine *e, const char *id, int *found, ph_error_t *err)
{
    ph_engine_req r = { .what = "remove service `{}`", .method = "DELETE", .path = "/services/{id}", .arg = { id },
                        .kind = "service id", .ok = { 404 } };

    *found = 0;
    if (ph_engine_check(e, "remove a service", err) < 0 || ph_engine_call(e, &r, err) < 0)
        return -1;
    *found = r.status != 404;
    return 0;
}

long long
ph_engine_service_version(const json_t *service)
{
    json_t *v = json_object_get(json_object_get(service, "Version"), "Index");

    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

int
ph_engine_service_update(ph_engine *e, const char *id, long long version, json_t *spec, int rollback,
                         ph_error_t *err)
{
    char ver[32];
    ph_engine_req r = { .what = rollback ? "roll service `{}` back" : "update service `{}`", .method = "POST",
                        .path = "/services/{id}/update", .arg = { id }, .kind = "service id", .body = spec };

    if (ph_engine_check(e, "update a service", err) < 0)
        return -1;
    if (version < 0 || spec == NULL || !json_is_object(spec))
        return ph_bad_input(err, "update service `%.200s`: no version or no spec", id ? id : "");
    snprintf(ver, sizeof ver, "%lld", version);
    r.query[0] = PH_ENGINE_Q("version", ver);
    if (rollback)
        r.query[1] = PH_ENGINE_Q("rollback", "previous");
    return ph_engine_call(e, &r, err);
}

int
ph_swarm_task_ended(const ph_swarm_task *t)
{
    static const char *const ended[] = { "complete", "shutdown", "failed", "rejected", "orphaned", "remove" };

    for (size_t i = 0; i < sizeof ended / sizeof *ended; i++)
        if (strcmp(t->state, ended[i]) == 0)
            return 1;
    return 0;
}

static int
task_cmp(const void *a, const void *b)
{
    const ph_swarm_task *x = a, *y = b;
    int c;

    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    if ((c = strcmp(x->node_id, y->node_id)) != 0)
        return c;
    return strcmp(x->id, y->id);
}

/* Is task spec TS the service's TEMPLATE now? */
static int
task_current(const json_t *ts, const json_t *template)
{
    json_t *fa, *fb;

    if (template == NULL || ts == NULL)
        return 0;
    if (!json_equal(json_object_get(ts, "ContainerSpec"), json_object_get(template, "ContainerSpec")))
        return 0;
    fa = json_object_get(ts, "ForceUpdate");
    fb = json_object_get(template, "ForceUpdate");
    return json_integer_value(fa) == json_integer_value(fb);
}

int
ph_engine_tasks_of(ph_engine *e, const char *service_id, json_t **out, ph_error_t *err)
{
    if (service_id == NULL || service_id[0] == '\0')
        return ph_bad_input(err, "list a service's tasks: no service ID");
    return filtered_list(e, "list the tasks of a service", "/tasks", "service", &service_id, 1, out, NULL, err);
}

int
ph_engine_task_inspect(ph_engine *e, const char *id, json_t **out, int *found, ph_error_t *err)
{
    ph_engine_req r = { .what = "inspect task `{}`", .method = "GET", .path = "/tasks/{id}", .arg = { id },
                        .kind = "task id", .ok = { 404 } };
    json_t *tmp = NULL;

    *out = NULL;
    *found = 0;
    r.resp = &tmp;
    if (ph_engine_check(e, "inspect a task", err) < 0 || ph_engine_call(e, &r, err) < 0)
        return -1;
    if (r.status == 404) {
        json_decref(tmp);
        return 0;
    }
    *found = 1;
    *out = tmp;
    return 0;
}

void
ph_swarm_task_read(const json_t *t, const json_t *template, const char *label, ph_swarm_task *x)
{
    json_t *st = json_object_get(t, "Status"), *cs = json_object_get(st, "ContainerStatus");
    json_t *spec = json_object_get(t, "Spec");
    const char *m;

    memset(x, 0, sizeof *x);
    copy_str(x->id, sizeof x->id, json_object_get(t, "ID"));
    copy_str(x->node_id, sizeof x->node_id, json_object_get(t, "NodeID"));
    copy_str(x->container_id, sizeof x->container_id, json_object_get(cs, "ContainerID"));
    x->slot = (long)json_integer_value(json_object_get(t, "Slot"));
    copy_str(x->state, sizeof x->state, json_object_get(st, "State"));
    copy_str(x->desired, sizeof x->desired, json_object_get(t, "DesiredState"));
    m = json_string_value(json_object_get(st, "Err"));
    if (m == NULL || m[0] == '\0')
        m = json_string_value(json_object_get(st, "Message"));
    snprintf(x->message, sizeof x->message, "%s", m ? m : "");
    x->exit_code = (long)json_integer_value(json_object_get(cs, "ExitCode"));
    x->current = task_current(spec, template);
    if (label != NULL)
        copy_str(x->label, sizeof x->label,
                 json_object_get(json_object_get(json_object_get(spec, "ContainerSpec"), "Labels"), label));
}

int
ph_engine_service_tasks(ph_engine *e, const json_t *service, const char *label, ph_swarm_task **out, size_t *n,
                        ph_error_t *err)
{
    const char *sid = json_string_value(json_object_get(service, "ID"));
    const json_t *template = json_object_get(json_object_get(service, "Spec"), "TaskTemplate");
    json_t *list = NULL, *t;
    ph_swarm_task *v = NULL;
    size_t i, k = 0;

    *out = NULL;
    *n = 0;
    if (ph_engine_tasks_of(e, sid, &list, err) < 0)
        return -1;
    if (json_array_size(list) > 0 && (v = calloc(json_array_size(list), sizeof *v)) == NULL) {
        json_decref(list);
        return ph_fail(err, ENOMEM, "list the tasks of service `%.200s`: allocate", sid);
    }
    json_array_foreach(list, i, t) {
        /* the filter is the Engine's: a task of another service is not ours */
        if (!json_equal(json_object_get(t, "ServiceID"), json_object_get(service, "ID")))
            continue;
        ph_swarm_task_read(t, template, label, &v[k++]);
    }
    json_decref(list);
    if (k > 1)
        qsort(v, k, sizeof *v, task_cmp);
    *out = v;
    *n = k;
    return 0;
}

int
ph_engine_nodes(ph_engine *e, ph_swarm_node **out, size_t *n, ph_error_t *err)
{
    json_t *list = NULL, *x;
    ph_swarm_node *v = NULL;
    size_t i;

    *out = NULL;
    *n = 0;
    if (filtered_list(e, "list the swarm's nodes", "/nodes", NULL, NULL, 0, &list, NULL, err) < 0)
        return -1;
    if (json_array_size(list) > 0 && (v = calloc(json_array_size(list), sizeof *v)) == NULL) {
        json_decref(list);
        return ph_fail(err, ENOMEM, "list the swarm's nodes: allocate");
    }
    json_array_foreach(list, i, x) {
        json_t *st = json_object_get(x, "Status");

        copy_str(v[i].id, sizeof v[i].id, json_object_get(x, "ID"));
        copy_str(v[i].hostname, sizeof v[i].hostname, json_object_get(json_object_get(x, "Description"), "Hostname"));
        copy_str(v[i].addr, sizeof v[i].addr, json_object_get(st, "Addr"));
        copy_str(v[i].state, sizeof v[i].state, json_object_get(st, "State"));
        copy_str(v[i].availability, sizeof v[i].availability,
                 json_object_get(json_object_get(x, "Spec"), "Availability"));
        v[i].manager = json_object_get(x, "ManagerStatus") != NULL;
    }
    *n = json_array_size(list);
    *out = v;
    json_decref(list);
    return 0;
}

const ph_swarm_node *
ph_swarm_node_find(const ph_swarm_node *nodes, size_t n, const char *id)
{
    for (size_t i = 0; id != NULL && i < n; i++)
        if (strcmp(nodes[i].id, id) == 0)
            return &nodes[i];
    return NULL;
}

/* One look at service ID: 1 converged, 0 not yet, -1 and *err. */
static int
converge_step(ph_engine *e, const char *id, int rollback, ph_swarm_converge *st, ph_error_t *err)
{
    json_t *svc = NULL, *us, *mode;
    ph_swarm_task *tasks = NULL;
    size_t n = 0, i;
    int found = 0, rc = -1;
    const char *s;

    if (ph_engine_service_inspect(e, id, &svc, &found, err) < 0)
        return -1;
    if (!found)
        return ph_fail(err, 0, "service `%.200s` is gone", id);
    us = json_object_get(svc, "UpdateStatus");
    copy_str(st->update_state, sizeof st->update_state, json_object_get(us, "State"));
    s = json_string_value(json_object_get(us, "Message"));
    if (s != NULL && s[0])
        snprintf(st->why, sizeof st->why, "%s", s);
    if (strcmp(st->update_state, "paused") == 0 || strcmp(st->update_state, "rollback_paused") == 0) {
        ph_fail(err, 0, "the update of service `%.200s` is paused: %s", id, st->why);
        goto out;
    }
    if (!rollback && strncmp(st->update_state, "rollback_", 9) == 0) {
        ph_fail(err, 0, "the swarm rolled the update of service `%.200s` back: %s", id, st->why);
        goto out;
    }
    if (ph_engine_service_tasks(e, svc, NULL, &tasks, &n, err) < 0)
        goto out;
    mode = json_object_get(json_object_get(svc, "Spec"), "Mode");
    st->running = st->pending = 0;
    st->want = -1;
    if (json_object_get(mode, "Replicated") != NULL)
        st->want = (long)json_integer_value(json_object_get(json_object_get(mode, "Replicated"), "Replicas"));
    for (i = 0; i < n; i++) {
        const ph_swarm_task *t = &tasks[i];

        if (strcmp(t->desired, "running") != 0)
            continue;
        if (t->current && strcmp(t->state, "running") == 0) {
            st->running++;
            continue;
        }
        st->pending++;
        if (t->message[0])
            snprintf(st->why, sizeof st->why, "task %.80s (slot %ld): %s: %s", t->id, t->slot, t->state, t->message);
    }
    if (st->want < 0) /* global: every task the swarm wants running */
        st->want = st->running + st->pending;
    rc = strcmp(st->update_state, "updating") != 0 && strcmp(st->update_state, "rollback_started") != 0 &&
         st->pending == 0 && st->running == st->want;
out:
    free(tasks);
    json_decref(svc);
    return rc;
}

int
ph_engine_service_converge(ph_engine *e, const char *id, long timeout_s, int rollback, ph_swarm_converge *st,
                           ph_error_t *err)
{
    ph_swarm_converge own;
    double deadline = ph_engine_now_mono() + (double)(timeout_s > 0 ? timeout_s : 1);
    int rc;

    if (st == NULL)
        st = &own;
    memset(st, 0, sizeof *st);
    if (ph_engine_check(e, "wait for a service update", err) < 0)
        return -1;
    for (;;) {
        struct timespec ts = { 0, POLL_NS };
        int sig;

        if ((rc = converge_step(e, id, rollback, st, err)) != 0)
            return rc < 0 ? -1 : 0;
        if ((sig = ph_interrupted()) != 0)
            return ph_interrupt_fail(err, sig);
        if (ph_engine_now_mono() >= deadline)
            return ph_fail(err, 0,
                           "service `%.200s` did not converge in %ld s: %ld of %ld tasks run the new spec%s%s%s%s%s",
                           id, timeout_s, st->running, st->want, st->update_state[0] ? " (update " : "",
                           st->update_state, st->update_state[0] ? ")" : "", st->why[0] ? "; " : "", st->why);
        nanosleep(&ts, NULL);
    }
}
