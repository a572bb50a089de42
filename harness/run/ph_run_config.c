/* ph_run_config.c - the Engine container configuration of a service: what
 * compose would create (ph_run_base_config), its networks and volumes, and
 * create-and-start with the `privileged` fallback.  The profiled variant is
 * derived from the base one in ph_run_start.c.
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

#include "ph_log.h"
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

/* The configuration compose would give the service; the profiled variant
 * is derived from it by the caller.  Returns a new object or NULL. */
json_t *
ph_run_base_config(ph_run *r, const ph_service *s, const char *image, ph_error_t *err)
{
    json_t *cfg, *host, *env, *labels, *binds, *vols, *ports, *exposed, *eps;
    char *net;

    cfg = json_object();
    host = json_object();
    env = json_array();
    labels = json_object();
    binds = json_array();
    vols = json_object();
    ports = json_object();
    exposed = json_object();
    eps = json_object();
    if (!cfg || !host || !env || !labels || !binds || !vols || !ports || !exposed || !eps) {
        json_decref(cfg); json_decref(host); json_decref(env); json_decref(labels);
        json_decref(binds); json_decref(vols); json_decref(ports); json_decref(exposed);
        json_decref(eps);
        ph_fail(err, ENOMEM, "build container config");
        return NULL;
    }
    json_object_set_new(cfg, "Image", json_string(image));
    if (s->has_entrypoint)
        json_object_set_new(cfg, "Entrypoint", ph_run_strv_json(&s->entrypoint));
    if (s->has_command)
        json_object_set_new(cfg, "Cmd", ph_run_strv_json(&s->command));
    for (size_t i = 0; i < s->environment.n; i++) {
        const ph_kv *kv = &s->environment.v[i];
        const char *val = kv->value ? kv->value : getenv(kv->key);
        char *line = NULL;

        if (val == NULL)
            continue;
        if (asprintf(&line, "%s=%s", kv->key, val) >= 0) {
            json_array_append_new(env, json_string(line));
            free(line);
        }
    }
    json_object_set_new(cfg, "Env", env);
    if (s->working_dir)
        json_object_set_new(cfg, "WorkingDir", json_string(s->working_dir));
    if (s->user)
        json_object_set_new(cfg, "User", json_string(s->user));
    for (size_t i = 0; i < s->labels.n; i++)
        json_object_set_new(labels, s->labels.v[i].key, json_string(s->labels.v[i].value ? s->labels.v[i].value : ""));
    json_object_set_new(labels, PH_LABEL_PROJECT, json_string(r->compose->project));
    json_object_set_new(labels, PH_LABEL_SERVICE, json_string(s->name));
    json_object_set_new(labels, PH_LABEL_MODE, json_string("none"));
    json_object_set_new(cfg, "Labels", labels);
    if (s->stop_signal)
        json_object_set_new(cfg, "StopSignal", json_string(s->stop_signal));
    if (s->stop_grace_ns >= 0)
        json_object_set_new(cfg, "StopTimeout", json_integer((s->stop_grace_ns + 999999999) / 1000000000));
    if (s->healthcheck.present) {
        json_t *hc = json_object();

        if (s->healthcheck.disable)
            json_object_set_new(hc, "Test", json_pack("[s]", "NONE"));
        else
            json_object_set_new(hc, "Test", ph_run_strv_json(&s->healthcheck.test));
        if (s->healthcheck.interval_ns)
            json_object_set_new(hc, "Interval", json_integer(s->healthcheck.interval_ns));
        if (s->healthcheck.timeout_ns)
            json_object_set_new(hc, "Timeout", json_integer(s->healthcheck.timeout_ns));
        if (s->healthcheck.start_period_ns)
            json_object_set_new(hc, "StartPeriod", json_integer(s->healthcheck.start_period_ns));
        if (s->healthcheck.retries)
            json_object_set_new(hc, "Retries", json_integer(s->healthcheck.retries));
        json_object_set_new(cfg, "Healthcheck", hc);
    }

    for (size_t i = 0; i < s->n_volumes; i++) {
        const ph_volume *v = &s->volumes[i];
        char *b = NULL, *src = NULL;

        if (v->source == NULL) {
            json_object_set_new(vols, v->target, json_object());
            continue;
        }
        src = v->bind ? strdup(v->source) : ph_run_project_name(r, v->source);
        if (src && asprintf(&b, "%s:%s%s", src, v->target, v->read_only ? ":ro" : "") >= 0) {
            json_array_append_new(binds, json_string(b));
            free(b);
        }
        free(src);
    }
    json_object_set_new(cfg, "Volumes", vols);
    json_object_set_new(host, "Binds", binds);

    for (size_t i = 0; i < s->n_ports; i++) {
        const ph_port *p = &s->ports[i];
        char key[64];
        json_t *bind, *arr;

        snprintf(key, sizeof key, "%s/%s", p->container_port, p->protocol ? p->protocol : "tcp");
        json_object_set_new(exposed, key, json_object());
        if (p->host_port == NULL && p->host_ip == NULL)
            continue;
        arr = json_object_get(ports, key);
        if (arr == NULL) {
            arr = json_array();
            json_object_set_new(ports, key, arr);
        }
        bind = json_object();
        json_object_set_new(bind, "HostIp", json_string(p->host_ip ? p->host_ip : ""));
        json_object_set_new(bind, "HostPort", json_string(p->host_port ? p->host_port : ""));
        json_array_append_new(arr, bind);
    }
    json_object_set_new(cfg, "ExposedPorts", exposed);
    json_object_set_new(host, "PortBindings", ports);
    json_object_set_new(host, "CapAdd", ph_run_strv_json(&s->cap_add));
    json_object_set_new(host, "CapDrop", ph_run_strv_json(&s->cap_drop));
    json_object_set_new(host, "SecurityOpt", ph_run_strv_json(&s->security_opt));
    json_object_set_new(host, "Privileged", json_boolean(s->privileged));

    /* The first network goes in the create call (API < 1.44 takes one);
     * the rest are connected before start. */
    net = s->networks.n > 0 ? ph_run_project_name(r, s->networks.v[0]) : ph_run_project_name(r, "default");
    if (net == NULL) {
        json_decref(cfg); json_decref(host); json_decref(eps);
        ph_fail(err, ENOMEM, "build container config");
        return NULL;
    }
    json_object_set_new(host, "NetworkMode", json_string(net));
    json_object_set_new(eps, net, json_pack("{s:[s]}", "Aliases", s->name));
    json_object_set_new(cfg, "NetworkingConfig", json_pack("{s:o}", "EndpointsConfig", eps));
    json_object_set_new(cfg, "HostConfig", host);
    free(net);
    return cfg;
}

int
ph_run_ensure_networks(ph_run *r, const ph_service *s, ph_error_t *err)
{
    ph_engine *e;
    json_t *labels;
    int rc = 0;

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    labels = json_pack("{s:s}", PH_LABEL_PROJECT, r->compose->project);
    if (s->networks.n == 0) {
        char *n = ph_run_project_name(r, "default");
        rc = n ? ph_engine_network_ensure(e, n, labels, err) : ph_fail(err, ENOMEM, "allocate");
        free(n);
    }
    for (size_t i = 0; rc == 0 && i < s->networks.n; i++) {
        char *n = ph_run_project_name(r, s->networks.v[i]);
        rc = n ? ph_engine_network_ensure(e, n, labels, err) : ph_fail(err, ENOMEM, "allocate");
        free(n);
    }
    for (size_t i = 0; rc == 0 && i < s->n_volumes; i++) {
        const ph_volume *v = &s->volumes[i];
        char *n;

        if (v->bind || v->source == NULL)
            continue;
        n = ph_run_project_name(r, v->source);
        rc = n ? ph_engine_volume_ensure(e, n, labels, err) : ph_fail(err, ENOMEM, "allocate");
        free(n);
    }
    json_decref(labels);
    return rc;
}

static int
connect_extra_networks(ph_run *r, const ph_service *s, const char *id, ph_error_t *err)
{
    ph_engine *e;

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    for (size_t i = 1; i < s->networks.n; i++) {
        char *n = ph_run_project_name(r, s->networks.v[i]), path[1024];
        json_t *body;
        long st;
        int rc;

        if (n == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        snprintf(path, sizeof path, "/networks/%s/connect", n);
        body = json_pack("{s:s, s:{s:[s]}}", "Container", id, "EndpointConfig", "Aliases", s->name);
        rc = ph_engine_request(e, "POST", path, body, NULL, &st, err);
        json_decref(body);
        free(n);
        if (rc < 0)
            return -1;
    }
    return 0;
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

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    if (ph_engine_container_create(e, name, cfg, &id, err) < 0)
        return -1;
    if (connect_extra_networks(r, s, id, err) < 0)
        goto fail;
    if (ph_engine_container_start(e, id, err) == 0) {
        *id_out = id;
        return 0;
    }
    if (!json_is_true(json_object_get(host, "Privileged")))
        goto fail;
    ph_warn("%s: the host refused `privileged: true` (%s); running with the explicit capabilities instead",
            s->name, (*err)->msg);
    ph_error_free(err);
    ph_engine_container_remove(e, id, 1, NULL);
    free(id);
    id = NULL;
    json_object_set_new(host, "Privileged", json_false());
    if (ph_engine_container_create(e, name, cfg, &id, err) < 0)
        return -1;
    if (connect_extra_networks(r, s, id, err) < 0)
        goto fail;
    if (ph_engine_container_start(e, id, err) < 0)
        goto fail;
    *id_out = id;
    return 0;
fail:
    ph_engine_container_remove(e, id, 1, NULL);
    free(id);
    return ph_error_wrap(err, "start service `%s`", s->name);
}

