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
 *     (service_profile): every task is replaced by one running
 *     the spec, at the pace of the service's update_config.  `create`,
 *     `start` and `run` of a single workload are refused: a task is made
 *     by its service.
 *   - Stopping is the way back (service_unprofile): the service
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
 * Engine in no swarm is an error that says so.  Its table has every
 * operation of ph_backend_ops, the service_* ones included (above):
 * service_profile is one service update, service_unprofile the rollback
 * to PreviousSpec, service_remove what `docker stack rm` does to each
 * service, reach the Engine of a task's node, lost a node that is not
 * ready, distribute a push to PH_SWARM_REGISTRY. */
ph_backend *ph_backend_swarm_new(ph_error_t *err);

/* Does the swarm handle PROJECT, asked of the plain Engine backend B
 * (ph_backend_new's question): 1 when B's Engine is a manager with a
 * service labelled com.docker.stack.namespace=PROJECT, 0 no (an Engine in
 * no swarm, a worker, a backend with no Engine, or PH_SWARM=0 set), -1
 * and *err.  One request, the services by that label; no GET /info. */
int ph_backend_swarm_handles(ph_backend *b, const char *project, ph_error_t *err);

/* The Docker context that reaches node HOSTNAME (PH_SWARM_CONTEXTS's
 * entry for exactly that name, else the hostname itself), into OUT. */
void ph_backend_swarm_context_of(const char *hostname, char *out, size_t size);

/* The spec of service SVC (the Engine's JSON of it: Spec, Version) as
 * service_profile sends it: SPEC's changes on a copy of the service's
 * own (the task's command, environment, labels, capabilities, stop
 * signal, StopGracePeriod in nanoseconds, mounts, no restart).  A new
 * object, or NULL and *err.  Pure. */
json_t *ph_backend_swarm_spec(const json_t *svc, const ph_workload_spec *spec, ph_error_t *err);

#endif
