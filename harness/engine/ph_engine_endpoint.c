/* ph_engine_endpoint.c - which Docker Engine to talk to (see ph_engine_endpoint.h). */
#include "ph_engine_endpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_HOST "unix:///var/run/docker.sock"

int
ph_engine_endpoint_resolve(ph_engine_endpoint *ep, ph_error_t *err)
{
    const char *host = getenv("DOCKER_HOST");

    memset(ep, 0, sizeof *ep);
    if (host == NULL || host[0] == '\0')
        host = DEFAULT_HOST;
    snprintf(ep->origin, sizeof ep->origin, "DOCKER_HOST");
    if (strlen(host) >= sizeof ep->host)
        return ph_bad_input(err, "DOCKER_HOST=`%.200s...`: longer than %zu bytes", host, sizeof ep->host - 1);
    snprintf(ep->host, sizeof ep->host, "%s", host);
    if (strncmp(host, "unix://", 7) == 0 && host[7] == '/' && strlen(host + 7) < sizeof ep->socket_path) {
        snprintf(ep->socket_path, sizeof ep->socket_path, "%s", host + 7);
        /* The host part is ignored over a unix socket; the Engine wants one. */
        snprintf(ep->base_url, sizeof ep->base_url, "http://localhost");
        return 0;
    }
    if (strncmp(host, "tcp://", 6) == 0 && host[6] != '\0' && host[6] != '/' && strchr(host + 6, '@') == NULL &&
        strlen(host) < 512) {
        const char *hp = host + 6;
        int l = (int)strlen(hp);
        int has_port;

        /* A trailing slash is tolerated, and a missing port is the
         * Engine's plain-HTTP default, 2375, as for the docker CLI. */
        if (hp[l - 1] == '/')
            l--;
        has_port = hp[0] == '[' ? memmem(hp, (size_t)l, "]:", 2) != NULL : memchr(hp, ':', (size_t)l) != NULL;
        snprintf(ep->base_url, sizeof ep->base_url, "http://%.*s%s", l, hp, has_port ? "" : ":2375");
        return 0;
    }
    return ph_bad_input(err, "DOCKER_HOST=`%s`: expected unix:///PATH or tcp://HOST:PORT", host);
}
