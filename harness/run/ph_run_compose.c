/* ph_run_compose.c - living beside docker compose.
 *
 * A user's stack often runs under `docker compose up -d` when they reach
 * for profharness: "restart *this* service under a profiler, then put it
 * back".  So the loop sees compose's containers as well as its own:
 *
 *   - listing (ph_run_list) takes the containers labelled
 *     com.docker.compose.project=<project> as well, one-off ones (`compose
 *     run`) left out; each is given in memory the labels the loop reads
 *     (service, mode "none") and PH_BY_COMPOSE, so status, start, restore
 *     and `service:` references treat it as the service's container;
 *   - start stops compose's container of the service and keeps it (its
 *     name, its anonymous volumes, its config hash are compose's), then
 *     runs the profiled one in its place on the same networks, aliases and
 *     ports; restore starts compose's container again when there is one,
 *     and otherwise creates a container carrying compose's labels, so
 *     `docker compose ps/logs/down` take it as their own;
 *   - networks and volumes the loop creates carry compose's labels too
 *     (compose v2 refuses a network of the project without them);
 *   - a port the Engine cannot bind names the container that holds it.
 *
 * Nothing here removes a container compose made.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ph_escape.h"
#include "ph_log.h"

#define DC_VERSION "1.29.2" /* the compose whose labels these are (Debian's, the oracle's) */

int
ph_run_by_compose(json_t *c)
{
    return json_is_true(json_object_get(c, PH_BY_COMPOSE));
}

/* The id of C is in LIST already. */
static int
listed(json_t *list, json_t *c)
{
    const char *id = json_string_value(json_object_get(c, "Id"));
    size_t k;
    json_t *x;

    json_array_foreach(list, k, x) {
        const char *xid = json_string_value(json_object_get(x, "Id"));

        if (id != NULL && xid != NULL && strcmp(id, xid) == 0)
            return 1;
    }
    return 0;
}

int
ph_run_merge_compose(json_t *list, json_t *theirs)
{
    size_t k;
    json_t *c;

    json_array_foreach(theirs, k, c) {
        json_t *labels = json_object_get(c, "Labels");
        const char *svc = json_string_value(json_object_get(labels, PH_DC_SERVICE));
        const char *oneoff = json_string_value(json_object_get(labels, PH_DC_ONEOFF));

        /* One-off containers (`compose run`) are not the service's. */
        if (svc == NULL || !json_is_object(labels) || (oneoff != NULL && strcmp(oneoff, "True") == 0))
            continue;
        if (listed(list, c))
            continue; /* ours, made with compose's labels by restore */
        if (json_object_get(labels, PH_LABEL_SERVICE) == NULL) {
            json_object_set_new(labels, PH_LABEL_SERVICE, json_string(svc));
            json_object_set_new(labels, PH_LABEL_MODE, json_string("none"));
            json_object_set_new(c, PH_BY_COMPOSE, json_true());
        }
        if (json_array_append(list, c) < 0)
            return -1;
    }
    return 0;
}

int
ph_run_list_compose(ph_run *r, const char *service, json_t *list, ph_error_t *err)
{
    char l1[512], l2[512];
    const char *labels[2] = { l1, l2 };
    json_t *theirs = NULL;
    ph_engine *e;
    int rc;

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    snprintf(l1, sizeof l1, "%s=%s", PH_DC_PROJECT, r->compose->project);
    snprintf(l2, sizeof l2, "%s=%s", PH_DC_SERVICE, service ? service : "");
    if (ph_engine_containers_by_label(e, labels, service ? 2 : 1, &theirs, err) < 0)
        return -1;
    rc = ph_run_merge_compose(list, theirs);
    json_decref(theirs);
    return rc < 0 ? ph_fail(err, ENOMEM, "allocate") : 0;
}

void
ph_run_compose_labels(ph_run *r, const ph_service *s, json_t *labels)
{
    char files[4096] = "";
    size_t o = 0;

    for (size_t i = 0; i < r->compose->files.n && o < sizeof files; i++)
        o += (size_t)snprintf(files + o, sizeof files - o, "%s%s", i ? "," : "", r->compose->files.v[i]);
    json_object_set_new(labels, PH_DC_PROJECT, json_string(r->compose->project));
    json_object_set_new(labels, PH_DC_SERVICE, json_string(s->name));
    json_object_set_new(labels, PH_DC_ONEOFF, json_string("False"));
    json_object_set_new(labels, "com.docker.compose.container-number", json_string("1"));
    json_object_set_new(labels, "com.docker.compose.version", json_string(DC_VERSION));
    json_object_set_new(labels, "com.docker.compose.project.working_dir", json_string(r->compose->dir));
    json_object_set_new(labels, "com.docker.compose.project.config_files", json_string(files));
}

/* ---- a port someone else holds ------------------------------------------ */

/* "...Bind for 127.0.0.1:18181 failed: port is already allocated" (or
 * "0.0.0.0:80"): the port, 0 when the message is not that. */
static long
bound_port(const char *msg)
{
    const char *p = strstr(msg, "Bind for "), *colon, *end;
    long port;

    if (p == NULL || strstr(msg, "port is already allocated") == NULL)
        return 0;
    end = strstr(p, " failed");
    if (end == NULL)
        return 0;
    for (colon = end; colon > p && *colon != ':'; colon--)
        ;
    if (*colon != ':')
        return 0;
    port = strtol(colon + 1, NULL, 10);
    return port > 0 && port < 65536 ? port : 0;
}

int
ph_run_port_owner(const char *msg, json_t *containers, char *hint, size_t len)
{
    long port = bound_port(msg);
    size_t k, j;
    json_t *c, *pt;

    if (port == 0)
        return 0;
    json_array_foreach(containers, k, c) {
        json_array_foreach(json_object_get(c, "Ports"), j, pt) {
            const char *name = json_string_value(json_array_get(json_object_get(c, "Names"), 0));
            json_t *labels = json_object_get(c, "Labels");
            const char *proj = json_string_value(json_object_get(labels, PH_DC_PROJECT));
            const char *svc = json_string_value(json_object_get(labels, PH_DC_SERVICE));
            char e_name[256], e_proj[256], e_svc[256];

            if (json_integer_value(json_object_get(pt, "PublicPort")) != port || name == NULL)
                continue;
            ph_escape(e_name, sizeof e_name, name[0] == '/' ? name + 1 : name);
            if (proj != NULL && svc != NULL)
                snprintf(hint, len,
                         "port %ld is held by container `%s`, service `%s` of the compose project `%s`: "
                         "run profharness with `-p %s` to profile it in its place, or stop it "
                         "(`docker stop %s`)",
                         port, e_name, ph_escape(e_svc, sizeof e_svc, svc), ph_escape(e_proj, sizeof e_proj, proj),
                         e_proj, e_name);
            else
                snprintf(hint, len, "port %ld is held by container `%s`, which profharness did not make: stop it "
                         "(`docker stop %s`) or publish another port", port, e_name, e_name);
            return 1;
        }
    }
    snprintf(hint, len, "port %ld is held by a process outside Docker's containers here (`ss -ltnp` names it)",
             port);
    return 1;
}

int
ph_run_port_hint(ph_run *r, ph_error_t *err)
{
    json_t *all = NULL;
    ph_engine *e;
    char hint[sizeof((ph_error *)0)->hint];

    if (err == NULL || *err == NULL || bound_port((*err)->msg) == 0)
        return -1;
    if (ph_run_engine(r, &e, NULL) < 0 || ph_engine_containers_all(e, 0, &all, NULL) < 0)
        return -1;
    if (ph_run_port_owner((*err)->msg, all, hint, sizeof hint))
        ph_error_hint(err, "%s", hint);
    json_decref(all);
    return -1;
}
