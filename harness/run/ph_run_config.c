/* ph_run_config.c - the loop's side of a service's container: the
 * configuration compose would create (ph_compose_engine_config, with what
 * only the running project knows: the image, the containers behind
 * `service:` references), the project's networks and volumes as the
 * compose file defines them, and create-and-start (extra networks,
 * secrets and configs written in before start, the `privileged`
 * fallback).  The profiled variant is derived from the base one in
 * ph_run_start.c.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ph_compose_engine.h"
#include "ph_image.h"
#include "ph_log.h"
#include "ph_tar.h"
#include "ph_util.h"

/* ---- container configuration ------------------------------------------ */

json_t *
ph_run_strv_json(const ph_strv *v)
{
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < v->n; i++)
        json_array_append_new(a, json_string(v->v[i]));
    return a;
}

void
ph_run_array_add_unique(json_t *a, const char *s)
{
    size_t i;
    json_t *x;

    json_array_foreach(a, i, x) {
        if (json_string_value(x) && strcmp(json_string_value(x), s) == 0)
            return;
    }
    json_array_append_new(a, json_string(s));
}

char *
ph_run_project_name(ph_run *r, const char *name)
{
    char *s = NULL;

    if (asprintf(&s, "%s_%s", r->compose->project, name) < 0)
        return NULL;
    return s;
}

char *
ph_run_service_image(ph_run *r, const ph_service *s)
{
    char *img = NULL;

    if (s->image != NULL)
        return strdup(s->image);
    if (asprintf(&img, "%s-%s", r->compose->project, s->name) < 0)
        return NULL;
    return img;
}

/* The Engine API from 1.44 takes every network in the create call. */
static int
api_at_least(ph_engine *e, int major, int minor)
{
    const char *v = ph_engine_api_version(e);
    int ma = 0, mi = 0;

    return v && sscanf(v, "%d.%d", &ma, &mi) == 2 && (ma > major || (ma == major && mi >= minor));
}

typedef struct lookup_ctx {
    ph_run *r;
    char id[256];
} lookup_ctx;

/* The running container of SERVICE (its name), for `service:` references
 * and links. */
static const char *
container_of_cb(void *ud, const char *service)
{
    lookup_ctx *lc = ud;
    json_t *list = NULL, *c;
    size_t k;
    const char *found = NULL;

    if (ph_run_list(lc->r, service, &list, NULL) < 0)
        return NULL;
    json_array_foreach(list, k, c) {
        const char *name = json_string_value(json_array_get(json_object_get(c, "Names"), 0));

        if (ph_run_is_running(c) && name != NULL) {
            snprintf(lc->id, sizeof lc->id, "%s", name[0] == '/' ? name + 1 : name);
            found = lc->id;
            break;
        }
    }
    json_decref(list);
    return found;
}

/* What only the running project knows, for the compose translation. */
static int
runtime_for(ph_run *r, const char *image, const char *name, lookup_ctx *lc, ph_compose_runtime *rt, ph_error_t *err)
{
    ph_engine *e;

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    lc->r = r;
    *rt = (ph_compose_runtime){ .image = image, .container_name = name, .container_of = container_of_cb, .ud = lc };
    rt->all_endpoints = api_at_least(e, 1, 44);
    rt->mac_in_endpoint = rt->all_endpoints;
    return 0;
}

json_t *
ph_run_base_config(ph_run *r, const ph_service *s, const char *image, const char *name, ph_error_t *err)
{
    lookup_ctx lc;
    ph_compose_runtime rt;
    json_t *cfg, *labels;

    if (s->unsupported != NULL) {
        ph_bad_input(err, "%s, which profharness cannot honour: service `%s` would not run as compose runs it",
                     s->unsupported, s->name);
        return NULL;
    }
    if (runtime_for(r, image, name, &lc, &rt, err) < 0)
        return NULL;
    cfg = ph_compose_engine_config(r->compose, s, &rt, err);
    if (cfg == NULL)
        return NULL;
    labels = json_object_get(cfg, "Labels");
    json_object_set_new(labels, PH_LABEL_PROJECT, json_string(r->compose->project));
    json_object_set_new(labels, PH_LABEL_SERVICE, json_string(s->name));
    json_object_set_new(labels, PH_LABEL_MODE, json_string("none"));
    return cfg;
}

/* ---- networks and volumes ---------------------------------------------- */

/* NAME exists (*found) or not; other errors fail. */
static int
exists(ph_engine *e, const char *kind, const char *name, int *found, ph_error_t *err)
{
    char path[600];
    ph_error_t e2 = NULL;
    long st = 0;
    json_t *resp = NULL;

    snprintf(path, sizeof path, "/%s/%s", kind, name);
    *found = ph_engine_request(e, "GET", path, NULL, &resp, &st, &e2) == 0;
    json_decref(resp);
    if (!*found && st != 404) {
        *err = e2;
        return -1;
    }
    ph_error_free(&e2);
    return 0;
}

static int
ensure_network(ph_run *r, ph_engine *e, const char *key, json_t *labels, ph_error_t *err)
{
    ph_network *n = ph_compose_network(r->compose, key);
    json_t *body;
    int found, rc;
    long st;

    if (n == NULL)
        return ph_bad_input(err, "%s: no network `%s`", r->compose->path, key);
    if (exists(e, "networks", n->name, &found, err) < 0)
        return -1;
    if (found)
        return 0;
    if (n->external) {
        ph_fail(err, 0, "network `%s` is external (`external: true`) and does not exist", n->name);
        return ph_error_hint(err, "create it first: docker network create %s", n->name);
    }
    labels = json_deep_copy(labels);
    json_object_set_new(labels, "com.docker.compose.network", json_string(key));
    body = ph_compose_engine_network(r->compose, n, labels);
    rc = ph_engine_request(e, "POST", "/networks/create", body, NULL, &st, err);
    json_decref(body);
    json_decref(labels);
    return rc < 0 ? ph_error_wrap(err, "create network `%s`", n->name) : 0;
}

static int
ensure_volume(ph_run *r, ph_engine *e, const char *key, json_t *labels, ph_error_t *err)
{
    ph_named_volume *v = ph_compose_volume(r->compose, key);
    json_t *body;
    int found, rc;
    long st;

    if (v == NULL)
        return ph_bad_input(err, "%s: no volume `%s`", r->compose->path, key);
    if (exists(e, "volumes", v->name, &found, err) < 0)
        return -1;
    if (found)
        return 0;
    if (v->external) {
        ph_fail(err, 0, "volume `%s` is external (`external: true`) and does not exist", v->name);
        return ph_error_hint(err, "create it first: docker volume create %s", v->name);
    }
    labels = json_deep_copy(labels);
    json_object_set_new(labels, "com.docker.compose.volume", json_string(key));
    body = ph_compose_engine_volume(r->compose, v, labels);
    rc = ph_engine_request(e, "POST", "/volumes/create", body, NULL, &st, err);
    json_decref(body);
    json_decref(labels);
    return rc < 0 ? ph_error_wrap(err, "create volume `%s`", v->name) : 0;
}

int
ph_run_ensure_networks(ph_run *r, const ph_service *s, ph_error_t *err)
{
    ph_engine *e;
    json_t *labels;
    int rc = 0;

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    /* compose's labels too: docker compose (v2 refuses a project network
     * without them) takes what it finds as its own. */
    labels = json_pack("{s:s, s:s, s:s}", PH_LABEL_PROJECT, r->compose->project, PH_DC_PROJECT,
                       r->compose->project, "com.docker.compose.version", "1.29.2");
    if (s->network_mode == NULL && s->networks.n == 0)
        rc = ensure_network(r, e, "default", labels, err);
    for (size_t i = 0; rc == 0 && s->network_mode == NULL && i < s->networks.n; i++)
        rc = ensure_network(r, e, s->networks.v[i], labels, err);
    for (size_t i = 0; rc == 0 && i < s->n_volumes; i++)
        if (s->volumes[i].type == PH_MOUNT_VOLUME && s->volumes[i].source != NULL)
            rc = ensure_volume(r, e, s->volumes[i].source, labels, err);
    json_decref(labels);
    return rc;
}

/* Before API 1.44 only the first network goes in the create call. */
static int
connect_extra_networks(ph_run *r, const ph_service *s, const char *name, const char *id, ph_error_t *err)
{
    lookup_ctx lc;
    ph_compose_runtime rt;
    ph_engine *e;

    if (ph_run_engine(r, &e, err) < 0 || runtime_for(r, NULL, name, &lc, &rt, err) < 0)
        return -1;
    if (api_at_least(e, 1, 44) || s->network_mode != NULL)
        return 0;
    for (size_t i = 1; i < s->networks.n; i++) {
        ph_network *n = ph_compose_network(r->compose, s->networks.v[i]);
        char path[1024];
        json_t *body;
        long st;
        int rc;

        if (n == NULL)
            continue;
        snprintf(path, sizeof path, "/networks/%s/connect", n->name);
        body = json_pack("{s:s, s:o}", "Container", id, "EndpointConfig",
                         ph_compose_engine_endpoint(r->compose, s, i, &rt));
        rc = ph_engine_request(e, "POST", path, body, NULL, &st, err);
        json_decref(body);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* ---- secrets and configs written in ------------------------------------ */

/* Secrets and configs given as `environment` or `content`: compose copies
 * them into the created container before it starts. */
static int
inject_files(ph_run *r, const ph_service *s, const char *id, ph_error_t *err)
{
    ph_compose_file *files = NULL;
    ph_tar_extra *extra = NULL;
    size_t n = 0, tar_len = 0;
    void *tar = NULL;
    char path[256];
    ph_engine *e;
    ph_image_mem m;
    long st = 0;
    int rc = -1;

    if (ph_compose_engine_files(r->compose, s, &files, &n, err) < 0)
        return -1;
    if (n == 0) {
        free(files);
        return 0;
    }
    if (ph_run_engine(r, &e, err) < 0)
        goto out;
    extra = calloc(n, sizeof *extra);
    if (extra == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (files[i].uid || files[i].gid)
            ph_warn("%s: `uid`/`gid` of %s are not applied (the file is root's)", s->name, files[i].target);
        extra[i].name = files[i].target + 1; /* relative to / */
        extra[i].data = files[i].content;
        extra[i].len = strlen(files[i].content);
        extra[i].mode = (unsigned)files[i].mode;
    }
    if (ph_tar_context_build(NULL, extra, n, 64u << 20, &tar, &tar_len, err) < 0)
        goto out;
    m = (ph_image_mem){ tar, tar_len, 0 };
    snprintf(path, sizeof path, "/containers/%s/archive?path=/", id);
    rc = ph_engine_stream(e, "PUT", path, "application/x-tar", ph_image_mem_read_cb, &m, (long long)tar_len, NULL, NULL, 120,
                          &st, err);
    if (rc < 0)
        ph_error_wrap(err, "%s: write secrets and configs into the container", s->name);
out:
    free(files);
    free(extra);
    free(tar);
    return rc;
}

/* Whether USER ("name", "uid", "name:group"...; NULL or "" the image's,
 * which cfg carries when it has one) is root. */
static int
user_is_root(const char *user)
{
    size_t n = user ? strcspn(user, ":") : 0;

    return n == 0 || (n == 1 && user[0] == '0') || (n == 4 && strncmp(user, "root", 4) == 0);
}

/* A profiled container's artifacts directory, PH_CONTAINER_OUT/<service>,
 * when PH_CONTAINER_OUT is a volume of its own (the service's own image
 * runs with the tools volume, or is read-only), whose root only root may
 * write: made before the start for a service that runs as another user,
 * writable by anyone, as the profiling image's directory is (this costs
 * the Engine a mount of the created container: about 0.4 s).  For root,
 * the shim makes it. */
static int
put_out_dir(ph_engine *e, const ph_service *s, json_t *cfg, const char *id, ph_error_t *err)
{
    const ph_tar_extra dir = { .name = s->name, .mode = S_IFDIR | 01777 };
    void *tar = NULL;
    size_t tar_len = 0;
    int rc;

    if (json_object_get(json_object_get(cfg, "Volumes"), PH_CONTAINER_OUT) == NULL ||
        user_is_root(json_string_value(json_object_get(cfg, "User"))))
        return 0;
    if (ph_tar_context_build(NULL, &dir, 1, 1u << 20, &tar, &tar_len, err) < 0)
        return -1;
    {
        ph_image_mem m = { tar, tar_len, 0 };

        rc = ph_engine_archive_put(e, id, PH_CONTAINER_OUT, ph_image_mem_read_cb, &m, (long long)tar_len, err);
    }
    free(tar);
    return rc < 0 ? ph_error_wrap(err, "%s: make %s/%s", s->name, PH_CONTAINER_OUT, s->name) : 0;
}

/* ---- create and start -------------------------------------------------- */

/* POST /containers/create, with ?platform= when the service names one. */
static int
create(ph_engine *e, const ph_service *s, const char *name, json_t *cfg, char **id, ph_error_t *err)
{
    char path[512], plat[128] = "";
    json_t *resp = NULL;
    long st = 0;

    if (s->platform == NULL)
        return ph_engine_container_create(e, name, cfg, id, err);
    for (const char *p = s->platform; *p && strlen(plat) + 4 < sizeof plat; p++)
        snprintf(plat + strlen(plat), sizeof plat - strlen(plat), *p == '/' ? "%%2F" : "%c", *p);
    snprintf(path, sizeof path, "/containers/create?name=%s&platform=%s", name, plat);
    if (ph_engine_request(e, "POST", path, cfg, &resp, &st, err) < 0)
        return ph_error_wrap(err, "create container `%s`", name);
    *id = json_string_value(json_object_get(resp, "Id")) ? strdup(json_string_value(json_object_get(resp, "Id")))
                                                          : NULL;
    json_decref(resp);
    return *id ? 0 : ph_fail(err, 0, "create container `%s`: the Engine gave no id", name);
}

static int
create_prepare_start(ph_run *r, ph_engine *e, const ph_service *s, const char *name, json_t *cfg, char **id,
                     ph_error_t *err)
{
    if (create(e, s, name, cfg, id, err) < 0)
        return -1;
    if (connect_extra_networks(r, s, name, *id, err) < 0 || inject_files(r, s, *id, err) < 0 ||
        put_out_dir(e, s, cfg, *id, err) < 0)
        return -2;
    return ph_engine_container_start(e, *id, err) < 0 ? -3 : 0;
}

/* Create and start; when the host refuses `privileged` (it cannot grant
 * every capability), fall back to the explicit capabilities and say so. */
int
ph_run_create_and_start(ph_run *r, const ph_service *s, const char *name, json_t *cfg, char **id_out,
                        ph_error_t *err)
{
    ph_engine *e;
    char *id = NULL;
    json_t *host = json_object_get(cfg, "HostConfig");
    int rc;

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    rc = create_prepare_start(r, e, s, name, cfg, &id, err);
    if (rc == 0) {
        *id_out = id;
        return 0;
    }
    if (rc == -1)
        return -1;
    if (rc != -3 || !json_is_true(json_object_get(host, "Privileged")))
        goto fail;
    ph_warn("%s: the host refused `privileged: true` (%s); running with the explicit capabilities instead",
            s->name, (*err)->msg);
    ph_error_free(err);
    ph_engine_container_remove(e, id, 1, NULL);
    free(id);
    id = NULL;
    json_object_set_new(host, "Privileged", json_false());
    rc = create_prepare_start(r, e, s, name, cfg, &id, err);
    if (rc == 0) {
        *id_out = id;
        return 0;
    }
    if (rc == -1)
        return -1;
fail:
    ph_engine_container_remove(e, id, 1, NULL);
    free(id);
    ph_run_port_hint(r, err); /* a port someone else holds: who */
    return ph_error_wrap(err, "start service `%s`", s->name);
}
