/* ph_engine_endpoint.h - which Docker Engine to talk to, and how.
 *
 * Resolved the way the docker CLI resolves it, so that `profharness` and
 * `docker` in one shell talk to the same Engine with the same certificates:
 *
 *  1. The context: --context NAME (ph_engine_set_context); else "default"
 *     when DOCKER_HOST is set; else DOCKER_CONTEXT; else `currentContext`
 *     of $DOCKER_CONFIG/config.json (DOCKER_CONFIG defaults to ~/.docker);
 *     else "default".
 *  2. "default" is the environment: DOCKER_HOST (unix:///var/run/docker.sock
 *     when unset, tcp://localhost:2376 when unset and TLS is on; tcp://HOST
 *     without a port is 2375; HOST:PORT without a scheme is tcp).  TLS is on
 *     when DOCKER_TLS_VERIFY or DOCKER_TLS is set to anything non-empty
 *     ("0" included, as for docker); DOCKER_TLS_VERIFY also verifies the
 *     Engine's certificate and name.  The material is ca.pem (required),
 *     cert.pem and key.pem (used when both exist) in DOCKER_CERT_PATH
 *     (default: the config directory).
 *  3. Any other name is a context store entry:
 *     $DOCKER_CONFIG/contexts/meta/<sha256 of the name>/meta.json gives
 *     Endpoints.docker.Host and .SkipTLSVerify; TLS is on when the store
 *     holds contexts/tls/<sha256>/docker/ (ca.pem, cert.pem, key.pem, each
 *     optional: no ca.pem means the system's roots) or SkipTLSVerify is true.
 *  4. TLS never applies to a unix socket.
 *
 * Where this is deliberately stricter than docker, the error says why: a
 * broken config.json is an error (docker warns and falls back to the
 * default Engine, which could be the wrong one to stop containers on);
 * DOCKER_HOST=/path (no scheme) asks for unix://; a context's tcp host
 * must have a port (docker would fail later, when dialling); ssh:// and
 * fd:// Engines are not supported; an encrypted key is refused before any
 * TLS library could prompt for its passphrase.
 *
 * Reads only the environment and files; contacts nothing.
 */
#ifndef PH_ENGINE_ENDPOINT_H
#define PH_ENGINE_ENDPOINT_H

#include <limits.h>
#include <stddef.h>
#include "ph_error.h"

typedef struct ph_engine_endpoint {
    char context[256];          /* "default" or the context's name */
    char origin[PATH_MAX + 128]; /* why this context: "DOCKER_HOST", "--context", "currentContext in FILE" */
    char host[1024];            /* unix:///PATH or tcp://HOST:PORT[/PATH], normalised */
    char socket_path[PATH_MAX]; /* unix only */
    char base_url[1100];        /* http://localhost (unix), http(s)://HOST:PORT[/PATH] (tcp) */
    int tls;                    /* speak TLS (https) */
    int verify;                 /* check the Engine's certificate chain and name */
    char ca[PATH_MAX];          /* trust only this CA; "" = the system's roots */
    char cert[PATH_MAX];        /* client certificate and key; "" = none */
    char key[PATH_MAX];
    char tls_from[PATH_MAX + 64]; /* where the TLS material is, for hints */
} ph_engine_endpoint;

/* Resolve the endpoint; CONTEXT is --context (NULL: none).  0, or -1 and
 * a PH_EXIT_USAGE error naming the variable or file that is wrong (with
 * file:line:col for JSON), or PH_EXIT_FAILURE when a file cannot be read. */
int ph_engine_endpoint_resolve(const char *context, ph_engine_endpoint *ep, ph_error_t *err);

/* The docker CLI's parsing of a DOCKER_HOST value into OUT (normalised
 * "unix:///path" or "tcp://host:port[/path]"); DEFAULT_TLS picks the
 * default for an empty value.  0, or -1 and a PH_EXIT_USAGE error. */
int ph_engine_host_parse(const char *value, int default_tls, char *out, size_t size, ph_error_t *err);

/* The SHA-256 of S as 64 lowercase hex digits (the context store's
 * directory names).  OUT holds 65 bytes. */
void ph_engine_sha256_hex(const char *s, char out[65]);

#endif
