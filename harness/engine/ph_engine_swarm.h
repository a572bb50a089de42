/* ph_engine_swarm.h - the Engine's Swarm endpoints: services, their tasks,
 * the nodes, and waiting for a service update to converge.
 *
 * Asked of a manager (any Engine of the swarm whose node is a manager; a
 * worker answers 503 "This node is not a swarm manager", which is passed
 * on as the error).  The answers are the Engine's JSON where the caller
 * needs the whole of it (a service: its Spec goes back in an update), and
 * flat records where the caller reads a few fields (a task, a node).
 * Needs API 1.41 for a spec's CapabilityAdd (docker 20.10); everything
 * else here is older.
 */
#ifndef PH_ENGINE_SWARM_H
#define PH_ENGINE_SWARM_H

#include <stddef.h>
#include <jansson.h>

#include "ph_engine.h"
#include "ph_error.h"

/* GET /info's Swarm.NodeID: the node this Engine is ("" outside a swarm),
 * and *manager set when it can answer the calls below. */
int ph_engine_swarm_self(ph_engine *e, char *node_id, size_t size, int *manager, ph_error_t *err);

/* GET /services?filters={"label":[...]}: the services carrying every
 * label ("k=v" or "k"), as the Engine's array. */
int ph_engine_services_by_label(ph_engine *e, const char *const *labels, size_t n, json_t **out, ph_error_t *err);
/* The same, asked of an Engine that may manage no swarm: its 503 then (in
 * none, or a worker) is *MANAGER 0 and an empty *OUT, no error; so one
 * request says whether a project is a stack, where GET /info would be
 * one more for every project that is not. */
int ph_engine_services_if_manager(ph_engine *e, const char *const *labels, size_t n, json_t **out, int *manager,
                                  ph_error_t *err);

/* GET /services/{id}: *found = 0 (and 0 returned) when there is none. */
int ph_engine_service_inspect(ph_engine *e, const char *id, json_t **out, int *found, ph_error_t *err);
/* DELETE /services/{id}: the swarm stops and removes its tasks; *found
 * = 0 (and 0 returned) when there was none. */
int ph_engine_service_remove(ph_engine *e, const char *id, int *found, ph_error_t *err);

/* A service's Version.Index (what an update must name), -1 when absent. */
long long ph_engine_service_version(const json_t *service);

/* POST /services/{id}/update?version=VERSION with SPEC (the whole spec,
 * as the Engine wants it).  ROLLBACK: `rollback=previous`, the Engine
 * puts PreviousSpec back (SPEC is then sent as the docker CLI sends it,
 * the current one, and ignored).  A version that is no longer the
 * service's fails ("update out of sequence"): someone updated it since
 * it was read. */
int ph_engine_service_update(ph_engine *e, const char *id, long long version, json_t *spec, int rollback,
                             ph_error_t *err);

/* A task, as the loop reads it. */
typedef struct ph_swarm_task {
    char id[72];
    char node_id[72];
    char container_id[72]; /* "" until the node made the container */
    long slot;             /* replicated services: 1..replicas; global: 0 */
    char state[24];        /* Status.State: new … running, complete, shutdown, failed, rejected, orphaned */
    char desired[24];      /* DesiredState: running, ready, shutdown, … */
    char message[256];     /* Status.Err, else Status.Message */
    long exit_code;        /* Status.ContainerStatus.ExitCode */
    int current;           /* its container spec is the service's now */
    char label[128];       /* its container spec's label named by the caller, "" if none */
} ph_swarm_task;

/* GET /tasks?filters={"service":[SERVICE_ID]}: the Engine's array. */
int ph_engine_tasks_of(ph_engine *e, const char *service_id, json_t **out, ph_error_t *err);
/* GET /tasks/{id}: *found = 0 (and 0 returned) when there is none. */
int ph_engine_task_inspect(ph_engine *e, const char *id, json_t **out, int *found, ph_error_t *err);
/* One task of the Engine's JSON into *OUT: TEMPLATE (a service's
 * Spec.TaskTemplate, may be NULL) tells whether it is current, LABEL (may
 * be NULL) names the label copied to out->label. */
void ph_swarm_task_read(const json_t *task, const json_t *template, const char *label, ph_swarm_task *out);

/* Task states after which nothing more happens to a task's container. */
int ph_swarm_task_ended(const ph_swarm_task *t);

/* GET /tasks?filters={"service":[ID]}: every task of service SERVICE (its
 * Engine JSON: its ID, and its Spec.TaskTemplate tells which tasks are
 * current), the history the swarm keeps included, ordered by slot, then
 * node, then task ID.  LABEL (may be NULL): the container-spec label
 * whose value goes to each task's `label`.  *out (malloc'd, *n of them)
 * is freed by free(). */
int ph_engine_service_tasks(ph_engine *e, const json_t *service, const char *label, ph_swarm_task **out, size_t *n,
                            ph_error_t *err);

/* A node. */
typedef struct ph_swarm_node {
    char id[72];
    char hostname[256];
    char addr[64];         /* Status.Addr */
    char state[24];        /* Status.State: ready, down, unknown, disconnected */
    char availability[24]; /* Spec.Availability: active, pause, drain */
    int manager;           /* a manager, reachable or not */
} ph_swarm_node;

/* GET /nodes.  *out (malloc'd, *n of them) is freed by free(). */
int ph_engine_nodes(ph_engine *e, ph_swarm_node **out, size_t *n, ph_error_t *err);

/* The node of ID in NODES, or NULL. */
const ph_swarm_node *ph_swarm_node_find(const ph_swarm_node *nodes, size_t n, const char *id);

/* Where a service's update stands, as ph_engine_service_converge left it. */
typedef struct ph_swarm_converge {
    long want;            /* replicas wanted (global: tasks the swarm wants running) */
    long running;         /* tasks running the current spec */
    long pending;         /* tasks wanted but not running the current spec */
    char update_state[32]; /* UpdateStatus.State, "" when there is none */
    char why[512];        /* the last task's error or the update's message, for the caller's error */
} ph_swarm_converge;

/* Wait until service ID has converged: no update under way (UpdateStatus
 * is not updating or rollback_started) and every task it wants runs the
 * current spec (replicated: Replicas of them; global: each task wanted
 * running), polling every half second for at most TIMEOUT_S seconds.
 * ROLLBACK: the update waited for is a rollback (rollback_completed is
 * its end).  A paused update, or an update the swarm rolled back on its
 * own, fails with the Engine's message; the timeout fails with how many
 * tasks run and the last task error.  An interrupt in a deferred section
 * (ph_signal.h) ends the wait.  *st (may be NULL) says where it stood. */
int ph_engine_service_converge(ph_engine *e, const char *id, long timeout_s, int rollback, ph_swarm_converge *st,
                               ph_error_t *err);

#endif
