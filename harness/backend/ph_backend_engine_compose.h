/* ph_backend_engine_compose.h - a compose service as the Docker Engine's
 * container configuration: the body of POST /containers/create that
 * docker compose would send, built from the loaded model alone (pure:
 * nothing is asked of the Engine; what only the running project knows
 * comes in through ph_backend_engine_runtime).  Also the bodies for the
 * project's networks and volumes, and the files (secrets and configs from
 * `environment` or `content`) compose copies into a container before it
 * starts.  The Engine backend's: no other floor builds the Engine's JSON.
 */
#ifndef PH_BACKEND_ENGINE_COMPOSE_H
#define PH_BACKEND_ENGINE_COMPOSE_H

#include <jansson.h>
#include "ph_compose.h"

typedef struct ph_backend_engine_runtime {
    const char *image;          /* the image the container runs */
    const char *container_name; /* the container's name: compose adds it to the network aliases */
    int all_endpoints;          /* Engine API >= 1.44: every network in the create call, not only the first */
    int mac_in_endpoint;        /* Engine API >= 1.44: mac_address on the endpoint, not in Config */
    /* The container running service NAME (its name or id), for `service:`
     * modes, volumes_from and links; NULL when none runs. */
    const char *(*container_of)(void *ud, const char *service);
    void *ud;
} ph_backend_engine_runtime;

/* The create body for S.  Returns a new object, or NULL and *err: a
 * `service:` reference whose container is not running (PH_EXIT_FAILURE),
 * a secret or config that cannot be honoured (PH_EXIT_USAGE). */
json_t *ph_backend_engine_compose_config(const ph_compose *c, const ph_service *s, const ph_backend_engine_runtime *rt,
                                         ph_error_t *err);

/* The endpoint settings of S on its network I (for networks connected
 * after create when !all_endpoints): {"Aliases": [...], ...}. */
json_t *ph_backend_engine_compose_endpoint(const ph_compose *c, const ph_service *s, size_t i,
                                           const ph_backend_engine_runtime *rt);

/* POST /networks/create and /volumes/create bodies (with LABELS merged in;
 * may be NULL). */
json_t *ph_backend_engine_compose_network(const ph_compose *c, const ph_network *n, json_t *labels);
json_t *ph_backend_engine_compose_volume(const ph_compose *c, const ph_named_volume *v, json_t *labels);

/* A file compose writes into the container before it starts. */
typedef struct ph_backend_engine_file {
    const char *target;   /* absolute */
    const char *content;
    const char *uid, *gid; /* may be NULL */
    int mode;             /* 0444 unless given */
} ph_backend_engine_file;

/* The secrets and configs of S that are not files on the host: *OUT (an
 * array to free, pointing into C) and *N.  A secret whose variable is not
 * set is an error naming it. */
int ph_backend_engine_compose_files(const ph_compose *c, const ph_service *s, ph_backend_engine_file **out,
                                    size_t *n, ph_error_t *err);

#endif
