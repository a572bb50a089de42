/* ph_backend_engine.h - the loop's operations (ph_backend.h) on a plain
 * Docker Engine: a workload is a container.  The Engine's JSON is read
 * and written here and in harness/engine/, nowhere above.
 *
 *   ph_backend_engine.c         the table: listing, inspect, signals,
 *                               waits, files, exec, logs, ps
 *   ph_backend_engine_compose.c a compose service as the create body
 *                               compose would send (pure: the loaded model
 *                               in, JSON out); its networks, volumes, files
 *   ph_backend_engine_create.c  a spec as the Engine's create body (the
 *                               compose part above, with the loop's
 *                               overrides), create and start with their
 *                               fallbacks
 */
#ifndef PH_BACKEND_ENGINE_H
#define PH_BACKEND_ENGINE_H

#include <jansson.h>
#include "ph_backend.h"
#include "ph_engine.h"

/* Connected and pinged (the Engine the docker CLI would use). */
ph_backend *ph_backend_engine_new(ph_error_t *err);
/* The Engine backend over E, which stays the caller's (closing the
 * backend leaves it): a Swarm node's Engine, reached by the Swarm
 * backend. */
ph_backend *ph_backend_engine_borrow(ph_engine *e, ph_error_t *err);
/* The Engine client behind B (the Engine backend's own). */
ph_engine *ph_backend_engine_client(ph_backend *b);

/* A container as GET /containers/json lists it, into W (zeroed first).
 * -1 on ENOMEM. */
int ph_backend_engine_listed(json_t *c, ph_workload *w);
/* OURS (a listing of ours) and THEIRS (of a compose project) into OUT:
 * ours, then each of theirs that is the service's (not one-off) and not
 * listed yet, given the service and mode "none" and by_compose.  -1 on
 * ENOMEM. */
int ph_backend_engine_merge_compose(json_t *ours, json_t *theirs, ph_workload_list *out);
/* When MSG is the Engine's "port is already allocated": which container
 * of CONTAINERS (GET /containers/json) holds it, as a hint into HINT; 1
 * then, else 0. */
int ph_backend_engine_port_owner(const char *msg, json_t *containers, char *hint, size_t len);

/* ph_backend_engine_create.c: the operations of the table that make things. */
int ph_backend_engine_prepare(ph_backend *b, const ph_compose *c, const ph_service *s, ph_error_t *err);
int ph_backend_engine_create(ph_backend *b, const ph_workload_spec *spec, char **id, ph_error_t *err);
int ph_backend_engine_run(ph_backend *b, const ph_workload_spec *spec, char **id, ph_error_t *err);
/* The spec as the Engine's create body (a new object), or NULL and *err. */
json_t *ph_backend_engine_config(ph_backend *b, const ph_workload_spec *spec, ph_error_t *err);
/* IMAGE as E's image inspect says it, into OUT (ops.image_inspect of a
 * backend whose images are an Engine's: the Engine's, a Swarm manager's). */
int ph_backend_engine_image_config(ph_engine *e, const char *image, ph_image_config *out, int *found,
                                   ph_error_t *err);

#endif
