/* ph_engine_endpoint.h - which Docker Engine to talk to, and how.
 *
 * Resolved from the environment the way the docker CLI resolves it, so
 * that `profharness` and `docker` in one shell talk to the same Engine.
 * Reads only the environment and files; contacts nothing.
 */
#ifndef PH_ENGINE_ENDPOINT_H
#define PH_ENGINE_ENDPOINT_H

#include <limits.h>
#include "ph_error.h"

typedef struct ph_engine_endpoint {
    char host[1024];    /* unix:///PATH or tcp://HOST:PORT[/PATH], normalised */
    char origin[1200];  /* where it came from, for messages ("DOCKER_HOST", ...) */
    char socket_path[PATH_MAX]; /* unix only */
    char base_url[1100];        /* http://localhost (unix), http(s)://HOST:PORT[/PATH] */
} ph_engine_endpoint;

/* Resolve the endpoint.  0, or -1 and a PH_EXIT_USAGE error naming the
 * variable or file that is wrong. */
int ph_engine_endpoint_resolve(ph_engine_endpoint *ep, ph_error_t *err);

#endif
