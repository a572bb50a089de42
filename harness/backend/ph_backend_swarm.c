/* ph_backend_swarm.c - the Swarm backend (see ph_backend_swarm.h).
 *
 * The manager answers for the swarm (services, tasks, nodes); each node's
 * Engine answers for its containers.  A workload's operation looks its
 * task up on the manager (node, container) and goes to that node's Engine,
 * opened once per node and kept for the handle's life.
 */
#include "ph_backend_swarm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ph_backend_engine.h"
#include "ph_engine_swarm.h"
#include "ph_log.h"
#include "ph_signal.h"
#include "ph_util.h"

#define STACK_LABEL "com.docker.stack.namespace"
/* on the profiled spec: the service's version before it, for the record */
#define PH_LABEL_SWARM_VERSION "io.profharness.swarm.previous-version"

typedef struct node_conn {
    char node_id[72];
    ph_engine *e;
} node_conn;

typedef struct swarm_backend {
    ph_backend base;
    ph_engine *mgr;
    char self[72]; /* the manager's own node */
    char where[1500];
    ph_swarm_node *nodes;
    size_t n_nodes;
    node_conn conn[PH_PLACEMENT_NODES_MAX];
    size_t n_conn;
    ph_backend *images; /* the manager's Engine as a plain backend, made when first asked */
} swarm_backend;

static const ph_backend_ops swarm_ops;

static swarm_backend *
sb_of(ph_backend *b)
{
    return (swarm_backend *)b;
}

ph_backend *
ph_backend_swarm_new(ph_error_t *err)
{
    swarm_backend *b = calloc(1, sizeof *b);
    int manager = 0;

    if (b == NULL) {
        ph_fail(err, errno, "allocate the Swarm backend");
        return NULL;
    }
    b->base.ops = &swarm_ops;
    if ((b->mgr = ph_engine_new(err)) == NULL ||
        ph_engine_swarm_self(b->mgr, b->self, sizeof b->self, &manager, err) < 0)
        goto fail;
    if (!manager) {
        ph_fail(err, 0, "the Docker Engine at %s is not a swarm manager%s", ph_engine_describe(b->mgr),
                b->self[0] ? " (a worker: point DOCKER_HOST or --context at a manager)" : " (it is in no swarm)");
        goto fail;
    }
    snprintf(b->where, sizeof b->where, "the swarm managed at %s", ph_engine_describe(b->mgr));
    return &b->base;
fail:
    ph_engine_free(b->mgr);
    free(b);
    return NULL;
}

static void
sb_close(ph_backend *pb)
{
    swarm_backend *b = sb_of(pb);

    if (b == NULL)
        return;
    for (size_t i = 0; i < b->n_conn; i++)
        ph_engine_free(b->conn[i].e);
    ph_backend_close(b->images);
    ph_engine_free(b->mgr);
    free(b->nodes);
    free(b);
}

static ph_backend *
sb_open(ph_backend *pb, ph_error_t *err)
{
    (void)pb;
    return ph_backend_swarm_new(err);
}

static const char *
sb_describe(ph_backend *pb)
{
    return sb_of(pb)->where;
}

static struct ph_engine *
sb_engine(ph_backend *pb)
{
    return sb_of(pb)->mgr;
}

/* The manager's images, looked into through containers made there. */
static ph_backend *
sb_images(ph_backend *pb, ph_error_t *err)
{
    swarm_backend *b = sb_of(pb);

    if (b->images == NULL)
        b->images = ph_backend_engine_borrow(b->mgr, err);
    return b->images;
}

static int
sb_host_id(ph_backend *pb, char *buf, size_t len, ph_error_t *err)
{
    json_t *info = NULL;
    const char *id;

    if (ph_engine_request(sb_of(pb)->mgr, "GET", "/info", NULL, &info, NULL, err) < 0)
        return -1;
    id = json_string_value(json_object_get(json_object_get(json_object_get(info, "Swarm"), "Cluster"), "ID"));
    snprintf(buf, len, "%s", id ? id : "");
    json_decref(info);
    return id ? 0 : ph_fail(err, 0, "the swarm has no cluster ID");
}

/* ---- nodes -------------------------------------------------------------- */

static int
refresh_nodes(swarm_backend *b, ph_error_t *err)
{
    free(b->nodes);
    b->nodes = NULL;
    b->n_nodes = 0;
    return ph_engine_nodes(b->mgr, &b->nodes, &b->n_nodes, err);
}

static const ph_swarm_node *
node_of(swarm_backend *b, const char *id, ph_error_t *err)
{
    const ph_swarm_node *n = ph_swarm_node_find(b->nodes, b->n_nodes, id);

    if (n == NULL && refresh_nodes(b, err) == 0)
        n = ph_swarm_node_find(b->nodes, b->n_nodes, id);
    return n;
}

void
ph_backend_swarm_context_of(const char *hostname, char *out, size_t size)
{
    const char *map = getenv("PH_SWARM_CONTEXTS"), *p;
    size_t hl = strlen(hostname);

    snprintf(out, size, "%s", hostname);
    for (p = map; p != NULL && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        const char *end = strchr(p, ','), *eq = memchr(p, '=', end ? (size_t)(end - p) : strlen(p));

        if (eq != NULL && (size_t)(eq - p) == hl && strncmp(p, hostname, hl) == 0) {
            size_t vl = end ? (size_t)(end - eq - 1) : strlen(eq + 1);

            snprintf(out, size, "%.*s", (int)vl, eq + 1);
            return;
        }
    }
}

/* The Engine of node NODE_ID. */
static int
node_engine(swarm_backend *b, const char *node_id, ph_engine **out, ph_error_t *err)
{
    const ph_swarm_node *n;
    char ctx[300];
    ph_engine *e;

    if (strcmp(node_id, b->self) == 0) {
        *out = b->mgr;
        return 0;
    }
    for (size_t i = 0; i < b->n_conn; i++)
        if (strcmp(b->conn[i].node_id, node_id) == 0) {
            *out = b->conn[i].e;
            return 0;
        }
    if ((n = node_of(b, node_id, err)) == NULL)
        return err && *err ? -1 : ph_fail(err, 0, "node %.80s is not in the swarm", node_id);
    if (b->n_conn == PH_PLACEMENT_NODES_MAX)
        return ph_fail(err, 0, "node %s: more than %d nodes' Engines", n->hostname, PH_PLACEMENT_NODES_MAX);
    ph_backend_swarm_context_of(n->hostname, ctx, sizeof ctx);
    if ((e = ph_engine_new_context(ctx, err)) == NULL) {
        ph_error_wrap(err, "node %s: its Engine is reached through the Docker context `%s` (or set "
                      "PH_SWARM_CONTEXTS=%s=CONTEXT)", n->hostname, ctx, n->hostname);
        return -1;
    }
    snprintf(b->conn[b->n_conn].node_id, sizeof b->conn[b->n_conn].node_id, "%s", node_id);
    b->conn[b->n_conn++].e = e;
    *out = e;
    return 0;
}

/* Task ID's node Engine and container. */
static int
route(ph_backend *pb, const char *id, ph_engine **e, char *cid, size_t size, ph_error_t *err)
{
    swarm_backend *b = sb_of(pb);
    json_t *t = NULL;
    ph_swarm_task x;
    int found = 0;

    if (ph_engine_task_inspect(b->mgr, id, &t, &found, err) < 0)
        return -1;
    if (!found)
        return ph_fail(err, 0, "task %.80s is not in the swarm", id ? id : "");
    ph_swarm_task_read(t, NULL, NULL, &x);
    json_decref(t);
    if (x.container_id[0] == '\0')
        return ph_fail(err, 0, "task %.80s has no container (yet): %s", x.id, x.state);
    snprintf(cid, size, "%s", x.container_id);
    return node_engine(b, x.node_id, e, err);
}

static int
sb_reach(ph_backend *b, const char *task_id, ph_backend **out, char *cid, size_t len, ph_error_t *err)
{
    ph_engine *e;

    *out = NULL;
    if (route(b, task_id, &e, cid, len, err) < 0)
        return -1;
    *out = ph_backend_engine_borrow(e, err);
    return *out ? 0 : -1;
}

/* ---- workloads ---------------------------------------------------------- */

static ph_workload_state
task_state(const ph_swarm_task *t)
{
    if (strcmp(t->state, "running") == 0)
        return PH_WL_RUNNING;
    if (ph_swarm_task_ended(t))
        return PH_WL_EXITED;
    return PH_WL_CREATED;
}

/* Task T (Engine JSON) of stack PROJECT's service SERVICE into W. */
static int
task_workload(swarm_backend *b, const json_t *t, const char *project, const char *service, ph_workload *w,
              ph_error_t *err)
{
    ph_swarm_task x;
    const ph_swarm_node *n;
    json_t *labels = json_object_get(json_object_get(json_object_get(t, "Spec"), "ContainerSpec"), "Labels");
    const char *k;
    json_t *v;
    int bad = 0;

    memset(w, 0, sizeof *w);
    ph_swarm_task_read(t, NULL, NULL, &x);
    json_object_foreach(labels, k, v) if (json_is_string(v) && ph_kvv_set(&w->labels, k, json_string_value(v)) < 0)
        bad = 1;
    n = node_of(b, x.node_id, NULL);
    w->id = strdup(x.id);
    w->image = strdup(json_string_value(json_object_get(json_object_get(json_object_get(t, "Spec"), "ContainerSpec"),
                                                        "Image")) ?: "");
    w->node = strdup(n ? n->hostname : x.node_id);
    if (asprintf(&w->name, "%s_%s.%ld.%s", project, service, x.slot, x.id) < 0)
        w->name = NULL;
    w->slot = (int)x.slot;
    w->state = task_state(&x);
    snprintf(w->state_text, sizeof w->state_text, "%s", x.state);
    w->exit_code = x.exit_code;
    if (bad || w->id == NULL || w->image == NULL || w->node == NULL || w->name == NULL ||
        ph_workload_read_labels(w) < 0)
        goto oom;
    if (w->mode == NULL) { /* the stack's own task */
        w->by_compose = 1;
        free(w->project);
        free(w->service);
        w->project = strdup(project);
        w->service = strdup(service);
        w->mode = strdup("none");
        if (w->project == NULL || w->service == NULL || w->mode == NULL)
            goto oom;
    }
    return 0;
oom:
    ph_workload_clear(w);
    return ph_fail(err, ENOMEM, "task %s: allocate", x.id);
}

/* The stack PROJECT's service SERVICE (its Engine JSON), *found 0 when
 * there is none. */
static int
find_service(swarm_backend *b, const char *project, const char *service, json_t **svc, int *found, ph_error_t *err)
{
    char name[600];

    snprintf(name, sizeof name, "%s_%s", project, service);
    if (ph_engine_service_inspect(b->mgr, name, svc, found, err) < 0)
        return -1;
    if (*found) {
        const char *ns = json_string_value(
            json_object_get(json_object_get(json_object_get(*svc, "Spec"), "Labels"), STACK_LABEL));

        if (ns == NULL || strcmp(ns, project) != 0) { /* a service of that name, not the stack's */
            json_decref(*svc);
            *svc = NULL;
            *found = 0;
        }
    }
    return 0;
}

/* The workloads of service SVC: the tasks the swarm wants running, and
 * the profiled ones that have a container (ended or not). */
static int
service_workloads(swarm_backend *b, json_t *svc, const char *project, ph_workload_list *out, ph_error_t *err)
{
    const char *name = json_string_value(json_object_get(json_object_get(svc, "Spec"), "Name"));
    size_t pl = strlen(project), i;
    json_t *tasks = NULL, *t;
    int rc = 0;

    if (name == NULL || strncmp(name, project, pl) != 0 || name[pl] != '_')
        return 0; /* not the stack's naming: not a compose service of it */
    if (ph_engine_tasks_of(b->mgr, json_string_value(json_object_get(svc, "ID")), &tasks, err) < 0)
        return -1;
    json_array_foreach(tasks, i, t) {
        ph_workload w;
        ph_swarm_task x;

        ph_swarm_task_read(t, NULL, PH_LABEL_RUN, &x);
        if (strcmp(x.desired, "running") != 0 && (x.label[0] == '\0' || x.container_id[0] == '\0'))
            continue;
        if (task_workload(b, t, project, name + pl + 1, &w, err) < 0 || ph_workload_list_push(out, &w) < 0) {
            ph_workload_clear(&w);
            rc = -1;
            break;
        }
        ph_workload_clear(&w);
    }
    json_decref(tasks);
    return rc;
}

static int
sb_list(ph_backend *pb, const char *project, const char *service, int flags, ph_workload_list *out, ph_error_t *err)
{
    swarm_backend *b = sb_of(pb);
    char label[600];
    const char *labels[1] = { label };
    json_t *svcs = NULL, *s;
    size_t i;
    int rc = 0;

    (void)flags; /* a stack's tasks are listed always: the stack is compose's */
    memset(out, 0, sizeof *out);
    if (project == NULL)
        return ph_bad_input(err, "list a stack's tasks: no project");
    snprintf(label, sizeof label, "%s=%s", STACK_LABEL, project);
    if (ph_engine_services_by_label(b->mgr, labels, 1, &svcs, err) < 0)
        return -1;
    json_array_foreach(svcs, i, s) {
        const char *name = json_string_value(json_object_get(json_object_get(s, "Spec"), "Name"));
        char want[600];

        if (service != NULL) {
            snprintf(want, sizeof want, "%s_%s", project, service);
            if (name == NULL || strcmp(name, want) != 0)
                continue;
        }
        if ((rc = service_workloads(b, s, project, out, err)) < 0)
            break;
    }
    json_decref(svcs);
    if (rc < 0)
        ph_workload_list_free(out);
    return rc;
}

/* Whether the kernel's OOM killer struck in task T's container (W's
 * oom_killed), as its node's Engine says; a node not reached leaves it 0. */
static void
task_oom(swarm_backend *b, const json_t *t, ph_workload *w)
{
    ph_swarm_task x;
    ph_engine *e;
    json_t *c = NULL;
    ph_error_t sub = NULL;
    int found = 0;

    ph_swarm_task_read(t, NULL, NULL, &x);
    if (x.container_id[0] == '\0')
        return;
    if (node_engine(b, x.node_id, &e, &sub) == 0 &&
        ph_engine_container_inspect(e, x.container_id, &c, &found, &sub) == 0 && found)
        w->oom_killed = json_is_true(json_object_get(json_object_get(c, "State"), "OOMKilled"));
    if (sub != NULL)
        ph_debug("task %s: its container's state: %s", x.id, sub->msg);
    ph_error_free(&sub);
    json_decref(c);
}

static int
sb_inspect(ph_backend *pb, const char *id, ph_workload *out, int *found, ph_error_t *err)
{
    swarm_backend *b = sb_of(pb);
    json_t *t = NULL, *svc = NULL;
    const char *project, *name;
    int sfound = 0, rc = -1;

    memset(out, 0, sizeof *out);
    if (ph_engine_task_inspect(b->mgr, id, &t, found, err) < 0 || !*found)
        return *found ? -1 : 0;
    if (ph_engine_service_inspect(b->mgr, json_string_value(json_object_get(t, "ServiceID")), &svc, &sfound, err) < 0)
        goto out;
    project = json_string_value(json_object_get(json_object_get(json_object_get(svc, "Spec"), "Labels"), STACK_LABEL));
    name = json_string_value(json_object_get(json_object_get(svc, "Spec"), "Name"));
    if (!sfound || project == NULL || name == NULL || strncmp(name, project, strlen(project)) != 0) {
        *found = 0; /* not a stack's task */
        rc = 0;
        goto out;
    }
    rc = task_workload(b, t, project, name + strlen(project) + (name[strlen(project)] == '_'), out, err);
    if (rc == 0)
        task_oom(b, t, out);
out:
    json_decref(svc);
    json_decref(t);
    return rc;
}

/* The manager's image: what the service's spec names (its nodes pull
 * the same). */
static int
sb_image_inspect(ph_backend *pb, const char *image, ph_image_config *out, int *found, ph_error_t *err)
{
    return ph_backend_engine_image_config(sb_of(pb)->mgr, image, out, found, err);
}

static int
not_by_task(const char *what, ph_error_t *err)
{
    return ph_bad_input(err, "%s: a Swarm task is made by its service (ph_backend_swarm_profile), not one by one",
                        what);
}

static int
sb_prepare(ph_backend *pb, const ph_compose *c, const ph_service *s, ph_error_t *err)
{
    (void)pb;
    (void)c;
    (void)s;
    return 0; /* the stack's networks and volumes are the stack's */
}

static int
sb_create(ph_backend *pb, const ph_workload_spec *spec, char **id, ph_error_t *err)
{
    (void)pb;
    (void)spec;
    *id = NULL;
    return not_by_task("create", err);
}

static int
sb_start(ph_backend *pb, const char *id, ph_error_t *err)
{
    (void)pb;
    (void)id;
    return not_by_task("start", err);
}

/* ---- a task's container, on its node ------------------------------------ */

#define ROUTE(pb, id, e, cid, err)                                                                                    \
    ph_engine *e = NULL;                                                                                             \
    char cid[80];                                                                                                    \
    if (route((pb), (id), &e, cid, sizeof cid, (err)) < 0)                                                           \
        return -1

static int
sb_signal(ph_backend *pb, const char *id, const char *sig, ph_error_t *err)
{
    ROUTE(pb, id, e, cid, err);
    return ph_engine_container_kill(e, cid, sig, err);
}

static int
sb_stop(ph_backend *pb, const char *id, long grace_s, ph_error_t *err)
{
    ROUTE(pb, id, e, cid, err);
    return ph_engine_container_stop(e, cid, grace_s, err);
}

static int
sb_wait(ph_backend *pb, const char *id, long timeout_s, long *exit_code, int *timed_out, ph_error_t *err)
{
    ROUTE(pb, id, e, cid, err);
    return ph_engine_container_wait(e, cid, timeout_s, exit_code, timed_out, err);
}

static int
sb_wait_begin(ph_backend *pb, const char *id, ph_backend_wait **out, ph_error_t *err)
{
    ph_engine_wait *w = NULL;

    ROUTE(pb, id, e, cid, err);
    if (ph_engine_container_wait_begin(e, cid, &w, err) < 0)
        return -1;
    *out = (ph_backend_wait *)w;
    return 0;
}

static int
sb_wait_end(ph_backend_wait *w, long timeout_s, long *exit_code, int *timed_out, ph_error_t *err)
{
    return ph_engine_container_wait_end((ph_engine_wait *)w, timeout_s, exit_code, timed_out, err);
}

static void
sb_wait_free(ph_backend_wait *w)
{
    ph_engine_wait_free((ph_engine_wait *)w);
}

static int
sb_remove(ph_backend *pb, const char *id, int force, ph_error_t *err)
{
    (void)pb;
    (void)id;
    (void)force;
    (void)err;
    return 0; /* a task's container goes with the task history (the swarm's task_history_limit) */
}

static int
sb_archive_get(ph_backend *pb, const char *id, const char *path, ph_backend_data_cb cb, void *ud, ph_error_t *err)
{
    ROUTE(pb, id, e, cid, err);
    return ph_engine_archive_get(e, cid, path, cb, ud, err);
}

static int
sb_archive_stat(ph_backend *pb, const char *id, const char *path, int *found, ph_error_t *err)
{
    ROUTE(pb, id, e, cid, err);
    return ph_engine_archive_stat(e, cid, path, found, err);
}

static int
sb_archive_put(ph_backend *pb, const char *id, const char *path, ph_backend_read_cb cb, void *ud, long long len,
               ph_error_t *err)
{
    ROUTE(pb, id, e, cid, err);
    return ph_engine_archive_put(e, cid, path, cb, ud, len, err);
}

static int
sb_exec(ph_backend *pb, const char *id, const char *const *argv, const char *const *env, long timeout_s,
        ph_backend_data_cb cb, void *ud, long *exit_code, ph_error_t *err)
{
    ROUTE(pb, id, e, cid, err);
    return ph_engine_exec(e, cid, argv, env, timeout_s, cb, ud, exit_code, err);
}

static int
sb_logs(ph_backend *pb, const char *id, int follow, long tail, int fd, ph_error_t *err)
{
    ROUTE(pb, id, e, cid, err);
    return ph_engine_container_logs(e, cid, follow, tail, fd, err);
}

static int
sb_log_all(ph_backend *pb, const char *id, ph_backend_data_cb cb, void *ud, ph_error_t *err)
{
    ROUTE(pb, id, e, cid, err);
    return ph_engine_container_log_all(e, cid, cb, ud, err);
}

static int
sb_output(ph_backend *pb, const char *id, int stream, ph_backend_data_cb cb, void *ud, ph_error_t *err)
{
    ROUTE(pb, id, e, cid, err);
    return ph_engine_container_output(e, cid, stream, cb, ud, err);
}

static int
sb_top(ph_backend *pb, const char *id, const char *ps_args, ph_proc_table *out, ph_error_t *err)
{
    json_t *t = NULL, *row, *cell;
    size_t i, j;

    memset(out, 0, sizeof *out);
    {
        ROUTE(pb, id, e, cid, err);
        if (ph_engine_container_top(e, cid, ps_args, &t, err) < 0)
            return -1;
    }
    json_array_foreach(json_object_get(t, "Titles"), i, cell) ph_strv_push(&out->titles, json_string_value(cell) ?: "");
    out->n = json_array_size(json_object_get(t, "Processes"));
    out->rows = out->n ? calloc(out->n, sizeof *out->rows) : NULL;
    if (out->n && out->rows == NULL) {
        json_decref(t);
        ph_proc_table_clear(out);
        return ph_fail(err, ENOMEM, "allocate");
    }
    json_array_foreach(json_object_get(t, "Processes"), i, row)
        json_array_foreach(row, j, cell) ph_strv_push(&out->rows[i], json_string_value(cell) ?: "");
    json_decref(t);
    return 0;
}


/* ---- a service under a profiler ----------------------------------------- */

static int
sb_service_remove(ph_backend *pb, const char *project, const char *service, int *found, ph_error_t *err)
{
    swarm_backend *b = sb_of(pb);
    json_t *svc = NULL;
    int rc;

    *found = 0;
    if (find_service(b, project, service, &svc, found, err) < 0)
        return -1;
    if (!*found)
        return 0;
    rc = ph_engine_service_remove(b->mgr, json_string_value(json_object_get(svc, "ID")), found, err);
    json_decref(svc);
    return rc;
}

int
ph_backend_swarm_handles(ph_backend *b, const char *project, ph_error_t *err)
{
    ph_engine *e = b->ops->engine(b);
    const char *off = getenv("PH_SWARM");
    char label[600];
    const char *labels[1] = { label };
    json_t *svcs = NULL;
    int manager = 0, n;

    if (e == NULL || (off != NULL && strcmp(off, "0") == 0))
        return 0; /* no Engine, no swarm; or told to look for none */
    snprintf(label, sizeof label, "%s=%s", STACK_LABEL, project);
    if (ph_engine_services_if_manager(e, labels, 1, &svcs, &manager, err) < 0)
        return -1;
    n = manager && json_array_size(svcs) > 0;
    json_decref(svcs);
    return n;
}

static json_t *
spec_obj(json_t *parent, const char *key)
{
    json_t *o = json_object_get(parent, key);

    if (!json_is_object(o)) {
        o = json_object();
        json_object_set_new(parent, key, o);
    }
    return o;
}

/* PARENT's array KEY, made (or replacing what is no array) when need be. */
static json_t *
spec_arr(json_t *parent, const char *key)
{
    json_t *a = json_object_get(parent, key);

    if (!json_is_array(a)) {
        a = json_array();
        json_object_set_new(parent, key, a);
    }
    return a;
}

static json_t *
strv_json(const ph_strv *v)
{
    json_t *a = json_array();

    for (size_t i = 0; i < v->n; i++)
        json_array_append_new(a, json_string(v->v[i]));
    return a;
}

/* ENV ("K=V") over ARR's entries of the same K. */
static void
env_set(json_t *arr, const char *kv)
{
    const char *eq = strchr(kv, '=');
    size_t kl = eq ? (size_t)(eq - kv) : strlen(kv), i;
    json_t *x;

    json_array_foreach(arr, i, x) {
        const char *s = json_string_value(x);

        if (s && strncmp(s, kv, kl) == 0 && (s[kl] == '=' || s[kl] == '\0')) {
            json_array_set_new(arr, i, json_string(kv));
            return;
        }
    }
    json_array_append_new(arr, json_string(kv));
}

static void
add_unique(json_t *arr, const char *s)
{
    size_t i;
    json_t *x;

    json_array_foreach(arr, i, x) if (json_is_string(x) && strcmp(json_string_value(x), s) == 0) return;
    json_array_append_new(arr, json_string(s));
}

json_t *
ph_backend_swarm_spec(const json_t *svc, const ph_workload_spec *spec, ph_error_t *err)
{
    json_t *ns = json_deep_copy(json_object_get(svc, "Spec"));
    json_t *tt, *cs, *env, *labels, *slabels, *caps;
    char ver[32];
    size_t i;

    if (ns == NULL) {
        ph_fail(err, ENOMEM, "copy the service's spec");
        return NULL;
    }
    tt = spec_obj(ns, "TaskTemplate");
    cs = spec_obj(tt, "ContainerSpec");
    json_object_set_new(cs, "Image", json_string(spec->image));
    if (spec->set_entrypoint) {
        json_object_set_new(cs, "Command", strv_json(&spec->entrypoint));
        if (spec->set_cmd)
            json_object_set_new(cs, "Args", strv_json(&spec->cmd));
        else
            json_object_del(cs, "Args");
    } else if (spec->set_cmd) {
        json_object_set_new(cs, "Args", strv_json(&spec->cmd));
    }
    env = spec_arr(cs, "Env");
    for (i = 0; i < spec->env.n; i++)
        env_set(env, spec->env.v[i]);
    labels = spec_obj(cs, "Labels");
    slabels = spec_obj(ns, "Labels");
    for (i = 0; i < spec->labels.n; i++) {
        json_object_set_new(labels, spec->labels.v[i].key, json_string(spec->labels.v[i].value));
        json_object_set_new(slabels, spec->labels.v[i].key, json_string(spec->labels.v[i].value));
    }
    snprintf(ver, sizeof ver, "%lld", ph_engine_service_version(svc));
    json_object_set_new(slabels, PH_LABEL_SWARM_VERSION, json_string(ver));
    caps = spec_arr(cs, "CapabilityAdd");
    /* API 1.41 takes any capability the kernel's runtime knows */
    for (i = 0; i < spec->cap_add.n; i++)
        add_unique(caps, spec->cap_add.v[i]);
    for (i = 0; i < spec->cap_add_if_known.n; i++)
        add_unique(caps, spec->cap_add_if_known.v[i]);
    if (spec->stop_signal)
        json_object_set_new(cs, "StopSignal", json_string(spec->stop_signal));
    if (spec->stop_grace_s >= 0)
        json_object_set_new(cs, "StopGracePeriod", json_integer((json_int_t)spec->stop_grace_s * 1000000000LL));
    if (spec->user)
        json_object_set_new(cs, "User", json_string(spec->user));
    if (spec->workdir)
        json_object_set_new(cs, "Dir", json_string(spec->workdir));
    for (i = 0; i < spec->n_mounts; i++) {
        const ph_spec_mount *m = &spec->mounts[i];
        json_t *o;

        o = json_pack("{s:s, s:s, s:b}", "Type", m->kind == PH_MOUNT_SPEC_BIND ? "bind" : "volume", "Target",
                      m->target, "ReadOnly", m->read_only);
        if (m->source)
            json_object_set_new(o, "Source", json_string(m->source));
        if (m->kind == PH_MOUNT_SPEC_VOLUME && m->no_copy)
            json_object_set_new(o, "VolumeOptions", json_pack("{s:b}", "NoCopy", 1));
        json_array_append_new(spec_arr(cs, "Mounts"), o);
    }
    /* a profiled task that ends is not restarted: its profiler's files
     * stay in its container, which the swarm keeps */
    if (spec->no_restart)
        json_object_set_new(tt, "RestartPolicy", json_pack("{s:s}", "Condition", "none"));
    return ns;
}

static const char *
spec_label(const json_t *spec, const char *key)
{
    return json_string_value(json_object_get(json_object_get(spec, "Labels"), key));
}

static int
sb_service_profile(ph_backend *pb, const char *project, const char *service, const ph_workload_spec *spec,
                         long timeout_s, ph_placement *out, ph_error_t *err)
{
    swarm_backend *b = sb_of(pb);
    json_t *svc = NULL, *ns = NULL;
    ph_swarm_task *t = NULL;
    ph_placement own;
    size_t n = 0, i, k;
    const char *run;
    int found = 0, rc = -1;

    if (out == NULL)
        out = &own;
    memset(out, 0, sizeof *out);
    if (spec == NULL || spec->image == NULL)
        return ph_bad_input(err, "profile a Swarm service: no image");
    if (find_service(b, project, service, &svc, &found, err) < 0)
        return -1;
    if (!found)
        return ph_bad_input(err, "stack `%s` has no service `%s` (no Swarm service %s_%s labelled %s=%s)", project,
                            service, project, service, STACK_LABEL, project);
    if ((run = spec_label(json_object_get(svc, "Spec"), PH_LABEL_RUN)) != NULL) {
        ph_bad_input(err, "service %s_%s runs profiled already (run %s): stop it first", project, service, run);
        goto out;
    }
    /* what a service spec cannot carry, said, as a create's fallbacks are */
    if (spec->security_opt.n > 0)
        ph_warn("%s: a Swarm service has no security_opt (%s...): mode `%s` runs without it", service,
                spec->security_opt.v[0], ph_kvv_get(&spec->labels, PH_LABEL_MODE) ?: "?");
    if ((ns = ph_backend_swarm_spec(svc, spec, err)) == NULL)
        goto out;
    if (ph_engine_service_update(b->mgr, json_string_value(json_object_get(svc, "ID")), ph_engine_service_version(svc),
                                 ns, 0, err) < 0 ||
        ph_engine_service_converge(b->mgr, json_string_value(json_object_get(svc, "ID")), timeout_s, 0, NULL, err) < 0)
        goto out;
    json_decref(svc);
    svc = NULL;
    if (find_service(b, project, service, &svc, &found, err) < 0 || !found ||
        ph_engine_service_tasks(b->mgr, svc, NULL, &t, &n, err) < 0)
        goto out;
    if (refresh_nodes(b, err) < 0)
        goto out;
    for (i = 0; i < n; i++) {
        const ph_swarm_node *nd;

        if (!t[i].current || strcmp(t[i].desired, "running") != 0 || strcmp(t[i].state, "running") != 0)
            continue;
        out->tasks++;
        nd = ph_swarm_node_find(b->nodes, b->n_nodes, t[i].node_id);
        for (k = 0; k < out->n_nodes; k++)
            if (strcmp(out->nodes[k].hostname, nd ? nd->hostname : t[i].node_id) == 0)
                break;
        if (k == out->n_nodes && k < PH_PLACEMENT_NODES_MAX)
            snprintf(out->nodes[out->n_nodes++].hostname, sizeof out->nodes[0].hostname, "%s",
                     nd ? nd->hostname : t[i].node_id);
        if (k < PH_PLACEMENT_NODES_MAX)
            out->nodes[k].tasks++;
    }
    rc = 0;
out:
    free(t);
    json_decref(ns);
    json_decref(svc);
    return rc;
}

static int
sb_service_run(ph_backend *pb, const char *project, const char *service, ph_workload *w, int *found,
                             ph_error_t *err)
{
    swarm_backend *b = sb_of(pb);
    json_t *svc = NULL, *labels;
    const char *k;
    json_t *v;
    int sfound = 0;

    memset(w, 0, sizeof *w);
    *found = 0;
    if (find_service(b, project, service, &svc, &sfound, err) < 0)
        return -1;
    labels = json_object_get(json_object_get(svc, "Spec"), "Labels");
    if (sfound && json_object_get(labels, PH_LABEL_RUN) != NULL) {
        json_object_foreach(labels, k, v) if (json_is_string(v)) ph_kvv_set(&w->labels, k, json_string_value(v));
        w->id = strdup(json_string_value(json_object_get(svc, "ID")) ?: "");
        if (ph_workload_read_labels(w) < 0 || w->id == NULL) {
            json_decref(svc);
            ph_workload_clear(w);
            return ph_fail(err, ENOMEM, "allocate");
        }
        *found = 1;
    }
    json_decref(svc);
    return 0;
}

static int
sb_lost(ph_backend *pb, const ph_workload *w, ph_error_t *err)
{
    swarm_backend *b = sb_of(pb);

    if (w->node == NULL)
        return 1; /* never placed, or its node is gone from the swarm */
    if (refresh_nodes(b, err) < 0)
        return -1;
    for (size_t i = 0; i < b->n_nodes; i++)
        if (strcmp(b->nodes[i].hostname, w->node) == 0 || strcmp(b->nodes[i].id, w->node) == 0)
            return strcmp(b->nodes[i].state, "ready") != 0;
    return 1;
}

/* Every task of RUN ended, or on a node that is not ready: 1; 0 not yet. */
static int
run_ended(swarm_backend *b, const json_t *svc, const char *run, ph_error_t *err)
{
    ph_swarm_task *t = NULL;
    size_t n = 0, i;
    int ended = 1;

    if (ph_engine_service_tasks(b->mgr, svc, PH_LABEL_RUN, &t, &n, err) < 0 || refresh_nodes(b, err) < 0) {
        free(t);
        return -1;
    }
    for (i = 0; i < n && ended; i++) {
        const ph_swarm_node *nd = ph_swarm_node_find(b->nodes, b->n_nodes, t[i].node_id);

        if (strcmp(t[i].label, run) == 0 && !ph_swarm_task_ended(&t[i]) && t[i].container_id[0] &&
            nd != NULL && strcmp(nd->state, "ready") == 0)
            ended = 0;
    }
    free(t);
    return ended;
}

static double
now_mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Send SIG to every running task of RUN on a ready node, through the
 * node's Engine.  A node that cannot be reached is left: its tasks are
 * the collection's to call lost. */
static int
signal_run(swarm_backend *b, const json_t *svc, const char *run, const char *sig, ph_error_t *err)
{
    ph_swarm_task *t = NULL;
    size_t n = 0, i;

    if (ph_engine_service_tasks(b->mgr, svc, PH_LABEL_RUN, &t, &n, err) < 0 || refresh_nodes(b, err) < 0) {
        free(t);
        return -1;
    }
    for (i = 0; i < n; i++) {
        const ph_swarm_node *nd = ph_swarm_node_find(b->nodes, b->n_nodes, t[i].node_id);
        ph_engine *e = NULL;
        ph_error_t sub = NULL;

        if (strcmp(t[i].label, run) != 0 || strcmp(t[i].state, "running") != 0 || t[i].container_id[0] == '\0' ||
            nd == NULL || strcmp(nd->state, "ready") != 0)
            continue;
        if (node_engine(b, t[i].node_id, &e, &sub) < 0 || ph_engine_container_kill(e, t[i].container_id, sig, &sub) < 0)
            ph_warn("task %s (slot %ld on %s): %s", t[i].id, t[i].slot, nd->hostname, sub ? sub->msg : "?");
        ph_error_free(&sub);
    }
    free(t);
    return 0;
}

static int
sb_service_unprofile(ph_backend *pb, const char *project, const char *service, const char *run,
                           long timeout_s, int *rolled, ph_error_t *err)
{
    swarm_backend *b = sb_of(pb);
    json_t *svc = NULL;
    const char *cur, *sid;
    double deadline;
    int found = 0, rc = -1, e;

    if (rolled)
        *rolled = 0;
    if (find_service(b, project, service, &svc, &found, err) < 0)
        return -1;
    if (!found)
        return ph_fail(err, 0, "stack `%s` has no service `%s` any more", project, service);
    sid = json_string_value(json_object_get(svc, "ID"));
    cur = spec_label(json_object_get(svc, "Spec"), PH_LABEL_RUN);
    if (cur != NULL) {
        if (run != NULL && strcmp(cur, run) != 0) {
            ph_fail(err, 0, "service %s_%s runs profiled by another run (%s), not %s", project, service, cur, run);
            goto out;
        }
        if (json_object_get(svc, "PreviousSpec") == NULL ||
            spec_label(json_object_get(svc, "PreviousSpec"), PH_LABEL_RUN) != NULL) {
            ph_fail(err, 0, "service %s_%s was updated while profiled: its previous spec is not the one deployed, so "
                    "it is not rolled back; `docker stack deploy` puts the stack's back", project, service);
            goto out;
        }
    }
    /* Every profiled task is stopped at once, on its node, with the stop
     * signal (the init shim's SIGTERM: the profiler flushes); a profiled
     * spec restarts none.  Then the rollback makes the deployed tasks.
     * Leaving the stop to the rollback would take the service's
     * rollback_config pace (one task at a time by default), and a slot
     * whose node is down would hold the others. */
    if (run != NULL) {
        if (signal_run(b, svc, run, "SIGTERM", err) < 0)
            goto out;
        int killed = 0, sig;

        deadline = now_mono() + (double)(timeout_s > 0 ? timeout_s : 1);
        while ((e = run_ended(b, svc, run, err)) == 0) {
            struct timespec ts = { 0, 500000000L };

            if ((sig = ph_interrupted()) != 0) {
                ph_interrupt_fail(err, sig);
                goto out;
            }
            if (now_mono() >= deadline && killed) {
                ph_fail(err, 0, "service %s_%s: profiled tasks still running 30 s after SIGKILL", project, service);
                goto out;
            }
            if (now_mono() >= deadline) {
                ph_warn("service %s_%s: profiled tasks still running after %ld s: killed", project, service,
                        timeout_s);
                if (signal_run(b, svc, run, "SIGKILL", err) < 0)
                    goto out;
                deadline = now_mono() + 30;
                killed = 1;
            }
            nanosleep(&ts, NULL);
        }
        if (e < 0)
            goto out;
    }
    if (cur != NULL) {
        if (ph_engine_service_update(b->mgr, sid, ph_engine_service_version(svc), json_object_get(svc, "Spec"), 1,
                                     err) < 0)
            goto out;
        if (rolled)
            *rolled = 1;
    }
    rc = 0;
out:
    json_decref(svc);
    return rc;
}

/* ---- the image the nodes run --------------------------------------------- */

static int
sb_distribute(ph_backend *b, const char *tag, char **ref_out, ph_error_t *err)
{
    ph_engine *e = sb_of(b)->mgr;
    const char *reg = getenv("PH_SWARM_REGISTRY");
    char repo[1024], *colon;

    *ref_out = NULL;
    if (reg == NULL || reg[0] == '\0') {
        *ref_out = strdup(tag);
        return *ref_out ? 0 : ph_fail(err, ENOMEM, "allocate");
    }
    snprintf(repo, sizeof repo, "%s/%s", reg, tag);
    colon = strrchr(repo, ':');
    if (colon == NULL || strchr(colon, '/') != NULL)
        return ph_fail(err, 0, "profiling image `%s` has no tag", tag);
    *colon = '\0';
    ph_info("pushing %s:%s for the swarm's nodes", repo, colon + 1);
    if (ph_engine_image_tag(e, tag, repo, colon + 1, err) < 0 || ph_engine_image_push(e, repo, colon + 1, err) < 0)
        return ph_error_wrap(err, "the swarm's nodes pull the profiling image from PH_SWARM_REGISTRY=%s", reg);
    *colon = ':';
    *ref_out = strdup(repo);
    return *ref_out ? 0 : ph_fail(err, ENOMEM, "allocate");
}

static const ph_backend_ops swarm_ops = {
    .name = "swarm",
    .open = sb_open,
    .close = sb_close,
    .describe = sb_describe,
    .host_id = sb_host_id,
    .engine = sb_engine,
    .images = sb_images,
    .list = sb_list,
    .inspect = sb_inspect,
    .image_inspect = sb_image_inspect,
    .prepare = sb_prepare,
    .create = sb_create,
    .start = sb_start,
    .run = sb_create,
    .signal = sb_signal,
    .stop = sb_stop,
    .wait = sb_wait,
    .wait_begin = sb_wait_begin,
    .wait_end = sb_wait_end,
    .wait_free = sb_wait_free,
    .remove = sb_remove,
    .archive_get = sb_archive_get,
    .archive_stat = sb_archive_stat,
    .archive_put = sb_archive_put,
    .exec = sb_exec,
    .logs = sb_logs,
    .log_all = sb_log_all,
    .output = sb_output,
    .top = sb_top,
    .distribute = sb_distribute,
    .reach = sb_reach,
    .lost = sb_lost,
    .service_profile = sb_service_profile,
    .service_unprofile = sb_service_unprofile,
    .service_run = sb_service_run,
    .service_remove = sb_service_remove,
};
