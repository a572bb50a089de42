/* ph_backend_swarm.h - the Swarm backend: a stack's services, their tasks
 * across the swarm's nodes.
 *
 * A compose project deployed with `docker stack deploy -c FILE PROJECT`
 * is a set of Swarm services named PROJECT_SERVICE and labelled
 * com.docker.stack.namespace=PROJECT.  The swarm (SwarmKit inside the
 * Engine) places their tasks; profharness never schedules anything.
 *
 *   - A workload is a task; its id is the task's ID, its node the node's
 *     hostname, its slot the task's slot.  The per-workload operations of
 *     ph_backend_ops (archive, signal, wait, exec, logs, top) go to the
 *     Engine of the task's node, on the task's container.
 *   - Starting a service under a profiler is one service update
 *     (ph_backend_swarm_profile): every task is replaced by one running
 *     the spec, at the pace of the service's update_config.  `create`,
 *     `start` and `run` of a single workload are refused: a task is made
 *     by its service.
 *   - Stopping is the way back (ph_backend_swarm_unprofile): the service
 *     is rolled back to PreviousSpec, which the swarm kept at the profiling
 *     update, so each profiled task gets its stop signal and grace (the
 *     profiler flushes) and the service runs as the user deployed it.  A
 *     stopped task's container stays on its node (the task history, 5 by
 *     default), where its files are read.
 *
 * Reaching a node's Engine, in order: the manager's own node is the
 * manager; a node named in PH_SWARM_CONTEXTS ("HOST=CONTEXT,HOST2=CONTEXT2")
 * is that Docker context; else a Docker context named as the node's
 * hostname (`docker context create HOST --docker host=tcp://HOST:2376,...`).
 * A node that is down, or that none of these reaches, is said, and its
 * tasks are lost to this collection (their containers stay on the node).
 */
#ifndef PH_BACKEND_SWARM_H
#define PH_BACKEND_SWARM_H

#include <jansson.h>
#include <stddef.h>
#include "ph_backend.h"
#include "ph_error.h"

/* The swarm the current Engine (ph_engine_new's) manages; a worker or an
 * Engine in no swarm is an error that says so. */
ph_backend *ph_backend_swarm_new(ph_error_t *err);

/* Whether PROJECT is deployed as a stack on the Engine of backend B (its
 * ops.engine: a manager with a service labelled
 * com.docker.stack.namespace=PROJECT): 1 yes, 0 no (an Engine in no swarm,
 * a worker, or a backend with no Engine is a no), -1 and *err.  One
 * request, the services by that label; no GET /info. */
int ph_backend_swarm_detect(ph_backend *b, const char *project, ph_error_t *err);

/* The profiling image TAG as the nodes name it: pushed to
 * PH_SWARM_REGISTRY when set (REGISTRY/<name>:<tag>), else the manager's
 * local tag (every node must have it: a one-node swarm, or images loaded
 * by hand).  *REF_OUT is the caller's. */
int ph_backend_swarm_distribute(ph_backend *b, const char *tag, char **ref_out, ph_error_t *err);

/* Where the tasks of a service run, as ph_backend_swarm_profile left them. */
#define PH_SWARM_NODES_MAX 64
typedef struct ph_swarm_placement {
    long tasks;                   /* tasks running the spec */
    size_t n_nodes;
    struct {
        char hostname[256];
        long tasks;
    } nodes[PH_SWARM_NODES_MAX];  /* by hostname, in the order first seen */
} ph_swarm_placement;

/* Update the stack PROJECT's service SERVICE so that every task runs SPEC
 * (the image, ENTRYPOINT as the task's command with CMD its arguments,
 * ENV added to the task's, labels added to the task's and the service's,
 * capabilities added (CapabilityAdd), the stop signal and grace, mounts);
 * SPEC's compose and service are not read.  Then wait, at most TIMEOUT_S,
 * until the update has converged.  *OUT (may be NULL): where the tasks
 * run.  A service whose spec is profiled already is refused (stop it
 * first). */
int ph_backend_swarm_profile(ph_backend *b, const char *project, const char *service, const ph_workload_spec *spec,
                             long timeout_s, ph_swarm_placement *out, ph_error_t *err);

/* Put the service back as the user deployed it: roll back to PreviousSpec
 * when the current spec is the one ph_backend_swarm_profile made for RUN
 * (its label), and wait, at most TIMEOUT_S, until the rollback converged
 * and every task of RUN has ended or is on a node that is down.  *ROLLED
 * (may be NULL): 1 when a rollback was made, 0 when the service was not
 * profiled (nothing done).  A spec profiled by another run, or a
 * PreviousSpec that is profiled too, is refused. */
int ph_backend_swarm_unprofile(ph_backend *b, const char *project, const char *service, const char *run,
                               long timeout_s, int *rolled, ph_error_t *err);

/* The profiled run of the service: its labels, as the service's spec
 * carries them (mode, run, outdir, profile...), into W's typed fields and
 * labels; *found 0 when the service is not profiled now. */
int ph_backend_swarm_service_run(ph_backend *b, const char *project, const char *service, ph_workload *w,
                                 int *found, ph_error_t *err);

/* The Engine of task TASK_ID's node, as a plain Engine backend (*OUT,
 * the caller's to close; its Engine stays B's, so B outlives it), and the
 * task's container there (CID).  What runs beside a task (an attached
 * profiler) is made there. */
int ph_backend_swarm_task_backend(ph_backend *b, const char *task_id, ph_backend **out, char *cid, size_t len,
                                  ph_error_t *err);

/* The Docker context that reaches node HOSTNAME (PH_SWARM_CONTEXTS's
 * entry for exactly that name, else the hostname itself), into OUT. */
void ph_backend_swarm_context_of(const char *hostname, char *out, size_t size);

/* The spec of service SVC (the Engine's JSON of it: Spec, Version) as
 * ph_backend_swarm_profile sends it: SPEC's changes on a copy of the
 * service's own (the task's command, environment, labels, capabilities,
 * stop signal, StopGracePeriod in nanoseconds, mounts, no restart).  A
 * new object, or NULL and *err.  Pure. */
json_t *ph_backend_swarm_spec(const json_t *svc, const ph_workload_spec *spec, ph_error_t *err);

/* Remove the stack PROJECT's service SERVICE, as `docker stack rm`
 * removes each (the swarm stops its tasks with their stop signal and
 * grace); *found 0 when there is none. */
int ph_backend_swarm_remove(ph_backend *b, const char *project, const char *service, int *found, ph_error_t *err);

/* Is the node of W down (or gone from the swarm)?  1 yes, 0 no, -1. */
int ph_backend_swarm_node_down(ph_backend *b, const ph_workload *w, ph_error_t *err);

#endif
