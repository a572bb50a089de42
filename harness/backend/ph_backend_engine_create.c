/* ph_backend_engine_create.c - making containers from the neutral spec
 * (ph_backend.h) on a plain Engine: the create body compose would send
 * for the spec's service (ph_backend_engine_compose.c, with what only the running
 * project knows: the containers behind `service:` references), the loop's
 * overrides on it, the project's networks and volumes as the compose
 * file defines them, and create-and-start with its fallbacks (extra
 * networks and compose's secrets and configs before start, capabilities
 * the Engine does not know, `privileged` the host refuses).
 */
#include "ph_backend_engine_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_backend_engine_compose.h"
#include "ph_escape.h"
#include "ph_log.h"
#include "ph_paths.h"
#include "ph_tar.h"

#define E(b) (((ph_backend_eng *)(b))->e)

static json_t *
strv_json(const ph_strv *v)
{
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < v->n; i++)
        json_array_append_new(a, json_string(v->v[i]));
    return a;
}

static void
add_unique(json_t *a, const char *s)
{
    size_t i;
    json_t *x;

    json_array_foreach(a, i, x) {
        if (json_string_value(x) && strcmp(json_string_value(x), s) == 0)
            return;
    }
    json_array_append_new(a, json_string(s));
}

/* The Engine API from 1.44 takes every network in the create call. */
static int
api_at_least(ph_engine *e, int major, int minor)
{
    return ph_engine_version_at_least(ph_engine_api_version(e), major, minor);
}

typedef struct lookup_ctx {
    ph_backend *b;
    const char *project;
    char id[256];
} lookup_ctx;

/* The running container of SERVICE (its name), for `service:` references
 * and links. */
static const char *
container_of_cb(void *ud, const char *service)
{
    lookup_ctx *lc = ud;
    ph_workload_list list = { 0 };
    const char *found = NULL;

    if (lc->b->ops->list(lc->b, lc->project, service, PH_LIST_COMPOSE, &list, NULL) < 0)
        return NULL;
    for (size_t i = 0; i < list.n; i++) {
        if (ph_workload_running(&list.v[i]) && list.v[i].name != NULL) {
            snprintf(lc->id, sizeof lc->id, "%s", list.v[i].name);
            found = lc->id;
            break;
        }
    }
    ph_workload_list_free(&list);
    return found;
}

/* What only the running project knows, for the compose translation. */
static void
runtime_for(ph_backend *b, const ph_compose *c, const char *image, const char *name, lookup_ctx *lc,
            ph_backend_engine_runtime *rt)
{
    lc->b = b;
    lc->project = c->project;
    *rt = (ph_backend_engine_runtime){
        .image = image, .container_name = name, .container_of = container_of_cb, .ud = lc };
    rt->all_endpoints = api_at_least(E(b), 1, 44);
    rt->mac_in_endpoint = rt->all_endpoints;
}

#define DC_VERSION PH_DC_VERSION

static json_t *
object_at(json_t *o, const char *key)
{
    json_t *x = json_object_get(o, key);

    if (x == NULL) {
        x = json_object();
        json_object_set_new(o, key, x);
    }
    return x;
}

static json_t *
array_at(json_t *o, const char *key)
{
    json_t *x = json_object_get(o, key);

    if (x == NULL) {
        x = json_array();
        json_object_set_new(o, key, x);
    }
    return x;
}

json_t *
ph_backend_engine_config(ph_backend *b, const ph_workload_spec *sp, ph_error_t *err)
{
    json_t *cfg, *labels, *host;

    if (sp->service != NULL) {
        lookup_ctx lc;
        ph_backend_engine_runtime rt;

        runtime_for(b, sp->compose, sp->image, sp->name, &lc, &rt);
        if ((cfg = ph_backend_engine_compose_config(sp->compose, sp->service, &rt, err)) == NULL)
            return NULL;
    } else if ((cfg = json_pack("{s:s}", "Image", sp->image)) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        return NULL;
    }
    if (sp->set_entrypoint)
        json_object_set_new(cfg, "Entrypoint", strv_json(&sp->entrypoint));
    if (sp->set_cmd)
        json_object_set_new(cfg, "Cmd", strv_json(&sp->cmd));
    if (sp->user != NULL)
        json_object_set_new(cfg, "User", json_string(sp->user));
    if (sp->workdir != NULL)
        json_object_set_new(cfg, "WorkingDir", json_string(sp->workdir));
    if (sp->set_env)
        json_object_set_new(cfg, "Env", strv_json(&sp->env));
    if (sp->stop_signal != NULL)
        json_object_set_new(cfg, "StopSignal", json_string(sp->stop_signal));
    if (sp->stop_grace_s >= 0)
        json_object_set_new(cfg, "StopTimeout", json_integer(sp->stop_grace_s));
    labels = object_at(cfg, "Labels");
    if (sp->compose_labels && sp->service != NULL) {
        ph_kvv dc = { 0 };

        if (ph_backend_compose_labels(sp->compose, sp->service, sp->slot, &dc) < 0) {
            ph_kvv_free(&dc);
            json_decref(cfg);
            ph_fail(err, ENOMEM, "allocate");
            return NULL;
        }
        for (size_t i = 0; i < dc.n; i++)
            json_object_set_new(labels, dc.v[i].key, json_string(dc.v[i].value));
        ph_kvv_free(&dc);
    }
    for (size_t i = 0; i < sp->labels.n; i++)
        json_object_set_new(labels, sp->labels.v[i].key, json_string(sp->labels.v[i].value ? sp->labels.v[i].value : ""));
    host = object_at(cfg, "HostConfig");
    if (sp->pid_of != NULL) {
        char pid_mode[300];

        snprintf(pid_mode, sizeof pid_mode, "container:%s", sp->pid_of);
        json_object_set_new(host, "PidMode", json_string(pid_mode));
    }
    if (sp->net_of != NULL) {
        char net_mode[300];

        snprintf(net_mode, sizeof net_mode, "container:%s", sp->net_of);
        json_object_set_new(host, "NetworkMode", json_string(net_mode));
    } else if (sp->network_none) {
        json_object_set_new(host, "NetworkMode", json_string("none"));
    }
    {
        json_t *caps = array_at(host, "CapAdd"), *secopt = array_at(host, "SecurityOpt");

        for (size_t i = 0; i < sp->cap_add.n; i++)
            add_unique(caps, sp->cap_add.v[i]);
        for (size_t i = 0; i < sp->security_opt.n; i++)
            add_unique(secopt, sp->security_opt.v[i]);
    }
    /* The Engine must not restart it: a restart would start the profiler
     * over and its output with it. */
    if (sp->no_restart)
        json_object_set_new(host, "RestartPolicy", json_pack("{s:s, s:i}", "Name", "no", "MaximumRetryCount", 0));
    if (sp->readable_logs)
        json_object_set_new(host, "LogConfig", json_pack("{s:s, s:{}}", "Type", "json-file", "Config"));
    for (size_t i = 0; i < sp->n_mounts; i++) {
        const ph_spec_mount *m = &sp->mounts[i];

        json_t *o;

        if (m->kind == PH_MOUNT_SPEC_ANON) {
            json_object_set_new(object_at(cfg, "Volumes"), m->target, json_object());
            continue;
        }
        o = json_pack("{s:s, s:s, s:s, s:b}", "Type", m->kind == PH_MOUNT_SPEC_BIND ? "bind" : "volume", "Source",
                      m->source ? m->source : "", "Target", m->target, "ReadOnly", m->read_only);
        /* (the Engine refuses VolumeOptions on a bind) */
        if (o != NULL && m->kind == PH_MOUNT_SPEC_VOLUME && m->no_copy)
            json_object_set_new(o, "VolumeOptions", json_pack("{s:b}", "NoCopy", 1));
        json_array_append_new(array_at(host, "Mounts"), o);
    }
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
ensure_network(const ph_compose *c, ph_engine *e, const char *key, json_t *labels, ph_error_t *err)
{
    ph_network *n = ph_compose_network((ph_compose *)c, key);
    json_t *body;
    int found, rc;
    long st;

    if (n == NULL)
        return ph_bad_input(err, "%s: no network `%s`", c->path, key);
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
    body = ph_backend_engine_compose_network(c, n, labels);
    rc = ph_engine_request(e, "POST", "/networks/create", body, NULL, &st, err);
    json_decref(body);
    json_decref(labels);
    return rc < 0 ? ph_error_wrap(err, "create network `%s`", n->name) : 0;
}

static int
ensure_volume(const ph_compose *c, ph_engine *e, const char *key, json_t *labels, ph_error_t *err)
{
    ph_named_volume *v = ph_compose_volume((ph_compose *)c, key);
    json_t *body;
    int found, rc;
    long st;

    if (v == NULL)
        return ph_bad_input(err, "%s: no volume `%s`", c->path, key);
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
    body = ph_backend_engine_compose_volume(c, v, labels);
    rc = ph_engine_request(e, "POST", "/volumes/create", body, NULL, &st, err);
    json_decref(body);
    json_decref(labels);
    return rc < 0 ? ph_error_wrap(err, "create volume `%s`", v->name) : 0;
}

int
ph_backend_engine_prepare(ph_backend *b, const ph_compose *c, const ph_service *s, ph_error_t *err)
{
    ph_engine *e = E(b);
    json_t *labels;
    int rc = 0;

    /* compose's labels too: docker compose (v2 refuses a project network
     * without them) takes what it finds as its own. */
    labels = json_pack("{s:s, s:s, s:s}", PH_LABEL_PROJECT, c->project, PH_DC_PROJECT, c->project,
                       "com.docker.compose.version", DC_VERSION);
    if (s->network_mode == NULL && s->networks.n == 0)
        rc = ensure_network(c, e, "default", labels, err);
    for (size_t i = 0; rc == 0 && s->network_mode == NULL && i < s->networks.n; i++)
        rc = ensure_network(c, e, s->networks.v[i], labels, err);
    for (size_t i = 0; rc == 0 && i < s->n_volumes; i++)
        if (s->volumes[i].type == PH_MOUNT_VOLUME && s->volumes[i].source != NULL)
            rc = ensure_volume(c, e, s->volumes[i].source, labels, err);
    json_decref(labels);
    return rc;
}

/* Before API 1.44 only the first network goes in the create call. */
static int
connect_extra_networks(ph_backend *b, const ph_workload_spec *sp, const char *id, ph_error_t *err)
{
    const ph_service *s = sp->service;
    lookup_ctx lc;
    ph_backend_engine_runtime rt;

    runtime_for(b, sp->compose, NULL, sp->name, &lc, &rt);
    if (api_at_least(E(b), 1, 44) || s->network_mode != NULL)
        return 0;
    for (size_t i = 1; i < s->networks.n; i++) {
        ph_network *n = ph_compose_network((ph_compose *)sp->compose, s->networks.v[i]);
        char path[1024];
        json_t *body;
        long st;
        int rc;

        if (n == NULL)
            continue;
        snprintf(path, sizeof path, "/networks/%s/connect", n->name);
        body = json_pack("{s:s, s:o}", "Container", id, "EndpointConfig",
                         ph_backend_engine_compose_endpoint(sp->compose, s, i, &rt));
        rc = ph_engine_request(E(b), "POST", path, body, NULL, &st, err);
        json_decref(body);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Secrets and configs given as `environment` or `content`: compose copies
 * them into the created container before it starts. */
static int
inject_files(ph_backend *b, const ph_workload_spec *sp, const char *id, ph_error_t *err)
{
    const ph_service *s = sp->service;
    ph_backend_engine_file *files = NULL;
    ph_tar_extra *extra = NULL;
    size_t n = 0, tar_len = 0;
    void *tar = NULL;
    char path[256];
    ph_engine_mem m;
    long st = 0;
    int rc = -1;

    if (ph_backend_engine_compose_files(sp->compose, s, &files, &n, err) < 0)
        return -1;
    if (n == 0) {
        free(files);
        return 0;
    }
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
    m = (ph_engine_mem){ tar, tar_len, 0 };
    snprintf(path, sizeof path, "/containers/%s/archive?path=/", id);
    rc = ph_engine_stream(E(b), "PUT", path, "application/x-tar", ph_engine_mem_read_cb, &m, (long long)tar_len, NULL, NULL,
                          120, &st, err);
    if (rc < 0)
        ph_error_wrap(err, "%s: write secrets and configs into the container", s->name);
out:
    free(files);
    free(extra);
    free(tar);
    return rc;
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
ph_backend_engine_port_owner(const char *msg, json_t *containers, char *hint, size_t len)
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
ph_backend_engine_port_hint(ph_engine *e, ph_error_t *err)
{
    json_t *all = NULL;
    char hint[sizeof((ph_error *)0)->hint];

    if (err == NULL || *err == NULL || bound_port((*err)->msg) == 0)
        return -1;
    if (ph_engine_containers_all(e, 0, &all, NULL) < 0)
        return -1;
    if (ph_backend_engine_port_owner((*err)->msg, all, hint, sizeof hint))
        ph_error_hint(err, "%s", hint);
    json_decref(all);
    return -1;
}

/* ---- create and start -------------------------------------------------- */

/* POST /containers/create, with ?platform= when the service names one. */
static int
create_body(ph_engine *e, const ph_service *s, const char *name, json_t *cfg, char **id, ph_error_t *err)
{
    char path[512], plat[128] = "";
    json_t *resp = NULL;
    long st = 0;

    if (s == NULL || s->platform == NULL)
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

/* Whether USER ("name", "uid", "name:group"...; NULL or "" the image's,
 * which cfg carries when it has one) is root. */
static int
user_is_root(const char *user)
{
    size_t n = user ? strcspn(user, ":") : 0;

    return n == 0 || (n == 1 && user[0] == '0') || (n == 4 && strncmp(user, "root", 4) == 0);
}

/* The spec's open_dir, made in the created container ID before its start
 * for a workload that runs as another user than root (root's shim makes
 * it): the root of an anonymous volume only root may write.  This costs
 * the Engine a mount of the created container, about 0.4 s. */
static int
put_open_dir(ph_backend *b, const ph_workload_spec *sp, json_t *cfg, const char *id, ph_error_t *err)
{
    const char *slash = sp->open_dir ? strrchr(sp->open_dir, '/') : NULL;
    char parent[PATH_MAX];
    ph_tar_extra dir;
    void *tar = NULL;
    size_t tar_len = 0;
    int rc;

    if (slash == NULL || user_is_root(json_string_value(json_object_get(cfg, "User"))))
        return 0;
    snprintf(parent, sizeof parent, "%.*s", (int)(slash - sp->open_dir), sp->open_dir);
    dir = (ph_tar_extra){ .name = slash + 1, .mode = S_IFDIR | 01777 };
    if (ph_tar_context_build(NULL, &dir, 1, 1u << 20, &tar, &tar_len, err) < 0)
        return -1;
    {
        ph_engine_mem m = { tar, tar_len, 0 };

        rc = ph_engine_archive_put(E(b), id, parent[0] ? parent : "/", ph_engine_mem_read_cb, &m, (long long)tar_len,
                                   err);
    }
    free(tar);
    return rc < 0 ? ph_error_wrap(err, "make %s", sp->open_dir) : 0;
}

/* Created and ready to start: -1 create failed (nothing made), -2 after
 * (*id made). */
static int
create_cfg(ph_backend *b, const ph_workload_spec *sp, json_t *cfg, char **id, ph_error_t *err)
{
    if (create_body(E(b), sp->service, sp->name, cfg, id, err) < 0)
        return -1;
    if (sp->service != NULL && (connect_extra_networks(b, sp, *id, err) < 0 || inject_files(b, sp, *id, err) < 0))
        return -2;
    if (put_open_dir(b, sp, cfg, *id, err) < 0)
        return -2;
    return 0;
}

int
ph_backend_engine_create(ph_backend *b, const ph_workload_spec *sp, char **id, ph_error_t *err)
{
    json_t *cfg = ph_backend_engine_config(b, sp, err);
    int rc;

    *id = NULL;
    if (cfg == NULL)
        return -1;
    rc = create_cfg(b, sp, cfg, id, err);
    json_decref(cfg);
    if (rc == -2) {
        ph_engine_container_remove(E(b), *id, 1, NULL);
        free(*id);
        *id = NULL;
    }
    return rc < 0 ? -1 : 0;
}

static int
create_prepare_start(ph_backend *b, const ph_workload_spec *sp, json_t *cfg, char **id, ph_error_t *err)
{
    int rc = create_cfg(b, sp, cfg, id, err);

    if (rc < 0)
        return rc;
    return ph_engine_container_start(E(b), *id, err) < 0 ? -3 : 0;
}

/* Create and start a service's container; when the host refuses
 * `privileged` (it cannot grant every capability), fall back to the
 * explicit capabilities and say so. */
static int
service_create_and_start(ph_backend *b, const ph_workload_spec *sp, json_t *cfg, char **id_out, ph_error_t *err)
{
    const ph_service *s = sp->service;
    char *id = NULL;
    json_t *host = json_object_get(cfg, "HostConfig");
    int rc;

    rc = create_prepare_start(b, sp, cfg, &id, err);
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
    ph_engine_container_remove(E(b), id, 1, NULL);
    free(id);
    id = NULL;
    json_object_set_new(host, "Privileged", json_false());
    rc = create_prepare_start(b, sp, cfg, &id, err);
    if (rc == 0) {
        *id_out = id;
        return 0;
    }
    if (rc == -1)
        return -1;
fail:
    ph_engine_container_remove(E(b), id, 1, NULL);
    free(id);
    ph_backend_engine_port_hint(E(b), err); /* a port someone else holds: who */
    return ph_error_wrap(err, "start service `%s`", s->name);
}

/* A container of ours, not a service's (no compose networks to join, no
 * `privileged` to fall back from). */
static int
create_and_start(ph_backend *b, const ph_workload_spec *sp, json_t *cfg, char **id_out, ph_error_t *err)
{
    char *id = NULL;

    if (sp->service != NULL)
        return service_create_and_start(b, sp, cfg, id_out, err);
    if (ph_engine_container_create(E(b), sp->name, cfg, &id, err) < 0)
        return -1;
    if (ph_engine_container_start(E(b), id, err) < 0) {
        ph_engine_container_remove(E(b), id, 1, NULL);
        free(id);
        return -1;
    }
    *id_out = id;
    return 0;
}

/* Whether NOTE was said of this Engine before: it is looked up, and
 * added, in the user's cache ($XDG_CACHE_HOME or ~/.cache, profharness/
 * engine-<ID>), the Engine's ID from /info.  What an Engine lacks is its
 * own fact, the same for every start and attach on it: told once, on the
 * first, is enough.  Any failure (no cache, no ID) says it again. */
static int
said_before(ph_backend *b, const char *note)
{
    char id[256], dir[PATH_MAX], path[PATH_MAX], line[512];
    int said = 0;
    FILE *f;

    if (b->ops->host_id(b, id, sizeof id, NULL) < 0)
        return 0;
    if (ph_paths_cache_dir(dir, sizeof dir, 0) < 0 || strlen(note) >= sizeof line - 1)
        return 0;
    /* the ID's colons and any other byte but [A-Za-z0-9] become '-' */
    snprintf(path, sizeof path, "%s/engine-", dir);
    ph_paths_safe_name(path + strlen(path), sizeof path - strlen(path), id);
    if ((f = fopen(path, "re")) != NULL) {
        while (!said && fgets(line, sizeof line, f) != NULL) {
            line[strcspn(line, "\n")] = '\0';
            said = strcmp(line, note) == 0;
        }
        fclose(f);
    }
    if (!said && ph_paths_cache_dir(dir, sizeof dir, 1) == 0 && (f = fopen(path, "ae")) != NULL) {
        fprintf(f, "%s\n", note);
        fclose(f);
    }
    return said;
}

/* Create and start, with the capabilities IF_KNOWN added to CapAdd; where
 * the Engine refuses one as unknown, again without them (and said). */
int
ph_backend_engine_run(ph_backend *b, const ph_workload_spec *sp, char **id_out, ph_error_t *err)
{
    json_t *cfg = ph_backend_engine_config(b, sp, err);
    json_t *caps = json_object_get(json_object_get(cfg, "HostConfig"), "CapAdd");
    const char *who = sp->service ? sp->service->name : sp->name;
    size_t before = json_array_size(caps), added;
    char list[256] = "";
    int rc = -1;

    if (cfg == NULL)
        return -1;
    for (size_t i = 0; caps && i < sp->cap_add_if_known.n; i++)
        add_unique(caps, sp->cap_add_if_known.v[i]);
    added = json_array_size(caps) - before;
    if (create_and_start(b, sp, cfg, id_out, err) == 0) {
        rc = 0;
        goto out;
    }
    /* An Engine older than a capability refuses it by name at create. */
    if (added == 0 || strstr((*err)->msg, "unknown capability") == NULL)
        goto out;
    for (size_t i = before; i < before + added; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i > before ? ", " : "",
                 json_string_value(json_array_get(caps, i)));
    {
        char note[300];

        snprintf(note, sizeof note, "unknown capabilities: %s", list);
        if (said_before(b, note))
            ph_debug("%s: this Engine does not know %s; running without", who, list);
        else
            ph_info("%s: this Engine does not know %s; running without (%s; said once per Engine)", who, list,
                    (*err)->msg);
    }
    ph_error_free(err);
    while (json_array_size(caps) > before)
        json_array_remove(caps, json_array_size(caps) - 1);
    rc = create_and_start(b, sp, cfg, id_out, err);
out:
    json_decref(cfg);
    return rc;
}
