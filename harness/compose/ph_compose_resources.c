/* ph_compose_resources.c - the service keys with structure of their own:
 * build, healthcheck, deploy (resources and restart policy), ulimits,
 * blkio_config, gpus, logging; and CPU counts (whole numbers and byte
 * sizes are ph_compose_common.c's).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_compose_int.h"
#include "ph_log.h"
#include "ph_util.h"

/* cpus: a decimal count of CPUs, as nano CPUs. */
static int
read_cpus(const ph_ynode *n, const char *key, long long *out, ph_error_t *err)
{
    const char *s = ph_yaml_nonempty(n, key, err);
    char *end;
    double v;

    if (s == NULL)
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (*end != '\0' || errno || end == s || !(v >= 0) || v > 1e6)
        return ph_yaml_error(n, err, "`%s` must be a number of CPUs (like 0.5 or 2), not `%s`", key, s);
    *out = llround(v * 1e9);
    return 0;
}

/* A count of microseconds, or a duration. */
static int
read_micros(const ph_ynode *n, const char *key, long long *out, ph_error_t *err)
{
    const char *s = ph_yaml_nonempty(n, key, err);
    long long ns;

    if (s == NULL)
        return -1;
    if (strspn(s, "0123456789") == strlen(s))
        return ph_compose_int(n, key, 0, LLONG_MAX, out, err);
    if (ph_duration_parse(s, &ns) < 0)
        return ph_yaml_error(n, err, "`%s` must be microseconds or a duration, not `%s`", key, s);
    *out = ns / 1000;
    return 0;
}

/* ---- build ------------------------------------------------------------- */

int
ph_compose_read_build(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    s->has_build = 1;
    if (v->kind == PH_Y_SCALAR) {
        const char *ctx = ph_yaml_nonempty(v, "build", err);

        if (ctx == NULL)
            return -1;
        if ((s->build_context = ph_compose_abs_path(ph_compose_base(l, v), ctx)) == NULL)
            return ph_fail(err, ENOMEM, "allocate");
    } else if (v->kind != PH_Y_MAP) {
        return ph_yaml_error(v, err, "`build` must be a path or a mapping, not a list");
    }
    for (size_t i = 0; v->kind == PH_Y_MAP && i < v->n; i++) {
        ph_ypair *pair = &v->pairs[i];
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair), *sv;
        int rc = 0;

        if (KEY("context")) {
            if ((sv = ph_yaml_nonempty(vn, "build.context", err)) == NULL)
                return -1;
            free(s->build_context);
            /* A Git or HTTP URL: the Engine fetches it (/build?remote=). */
            s->build_remote = strstr(sv, "://") != NULL || strncmp(sv, "git@", 4) == 0 ||
                              strncmp(sv, "github.com/", 11) == 0;
            s->build_context = s->build_remote ? strdup(sv) : ph_compose_abs_path(ph_compose_base(l, vn), sv);
            if (s->build_context == NULL)
                rc = ph_fail(err, ENOMEM, "allocate");
        } else if (KEY("dockerfile")) {
            rc = ph_yaml_dup(vn, "build.dockerfile", &s->build_dockerfile, err);
        } else if (KEY("dockerfile_inline")) {
            rc = ph_yaml_dup(vn, "build.dockerfile_inline", &s->build_dockerfile_inline, err);
        } else if (KEY("args")) {
            rc = ph_yaml_kvv(vn, "build.args", &s->build_args, err);
        } else if (KEY("labels")) {
            rc = ph_yaml_kvv(vn, "build.labels", &s->build_labels, err);
        } else if (KEY("target")) {
            rc = ph_yaml_dup(vn, "build.target", &s->build_target, err);
        } else if (KEY("network")) {
            rc = ph_yaml_dup(vn, "build.network", &s->build_network, err);
        } else if (KEY("extra_hosts")) {
            rc = ph_compose_read_extra_hosts(vn, "build.extra_hosts", &s->build_extra_hosts, err);
        } else if (KEY("shm_size")) {
            rc = ph_compose_bytes(vn, "build.shm_size", &s->build_shm_size, err);
        } else if (KEY("platforms")) {
            ph_strv p = { 0 };

            rc = ph_yaml_strv(vn, "build.platforms", 0, 0, &p, err);
            if (rc == 0 && p.n > 1)
                rc = ph_compose_unsupported(s, vn, "build.platforms: more than one platform");
            else if (rc == 0 && p.n == 1 && s->build_platform == NULL)
                rc = ph_compose_dup(p.v[0], &s->build_platform, err);
            ph_strv_free(&p);
        } else if (KEY("isolation")) {
            rc = ph_yaml_dup(vn, "build.isolation", &s->build_isolation, err);
        } else if (KEY("cache_from")) {
            rc = ph_yaml_strv(vn, "build.cache_from", 0, 0, &s->build_cache_from, err);
        } else if (KEY("tags")) {
            rc = ph_yaml_strv(vn, "build.tags", 0, 0, &s->build_tags, err);
        } else if (KEY("no_cache")) {
            rc = ph_yaml_bool(vn, "build.no_cache", &s->build_no_cache, err);
        } else if (KEY("pull")) {
            rc = ph_yaml_bool(vn, "build.pull", &s->build_pull, err);
        } else if (KEY("cache_to") || KEY("provenance") || KEY("sbom")) {
            /* What BuildKit exports or attests: no effect on the image that runs. */
        } else if (KEY("ssh") || KEY("secrets") || KEY("additional_contexts") || KEY("privileged") ||
                   KEY("entitlements") || KEY("ulimits")) {
            char what[64];

            snprintf(what, sizeof what, "build.%s (BuildKit only; the Engine's /build has no such option)", key);
            rc = ph_compose_unsupported(s, pair->key, what);
        } else {
            ph_compose_warn_unknown(pair, "build.", s->name);
        }
        if (rc < 0)
            return -1;
    }
    if (s->build_context == NULL && (s->build_context = strdup(ph_compose_base(l, v))) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (s->build_remote && s->build_dockerfile_inline)
        ph_compose_unsupported(s, v, "build.dockerfile_inline with a remote context");
    if (s->build_dockerfile == NULL && (s->build_dockerfile = strdup("Dockerfile")) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

/* ---- healthcheck ------------------------------------------------------- */

int
ph_compose_read_healthcheck(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    ph_healthcheck *h = &s->healthcheck;
    long long n;

    (void)l;
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`healthcheck` must be a mapping");
    h->present = 1;
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("test")) {
            ph_strv_free(&h->test);
            if (vn->kind == PH_Y_SCALAR) {
                const char *cmd = ph_yaml_nonempty(vn, "healthcheck.test", err);

                if (cmd == NULL)
                    return -1;
                if (ph_strv_push(&h->test, "CMD-SHELL") < 0 || ph_strv_push(&h->test, cmd) < 0)
                    rc = ph_fail(err, ENOMEM, "allocate");
            } else if ((rc = ph_yaml_strv(vn, "healthcheck.test", 0, 0, &h->test, err)) == 0) {
                const char *first = h->test.n ? h->test.v[0] : "";

                if (strcmp(first, "NONE") == 0)
                    h->disable = 1;
                else if ((strcmp(first, "CMD") != 0 && strcmp(first, "CMD-SHELL") != 0) || h->test.n < 2)
                    rc = ph_yaml_error(vn, err,
                                       "`healthcheck.test` must start with CMD or CMD-SHELL and a command, or be [NONE]");
            }
        } else if (KEY("interval")) {
            rc = ph_yaml_duration(vn, "healthcheck.interval", &h->interval_ns, err);
        } else if (KEY("timeout")) {
            rc = ph_yaml_duration(vn, "healthcheck.timeout", &h->timeout_ns, err);
        } else if (KEY("start_period")) {
            rc = ph_yaml_duration(vn, "healthcheck.start_period", &h->start_period_ns, err);
        } else if (KEY("start_interval")) {
            rc = ph_yaml_duration(vn, "healthcheck.start_interval", &h->start_interval_ns, err);
        } else if (KEY("retries")) {
            rc = ph_compose_int(vn, "healthcheck.retries", 0, 1000000, &n, err);
            h->retries = (int)n;
        } else if (KEY("disable")) {
            rc = ph_yaml_bool(vn, "healthcheck.disable", &h->disable, err);
        } else {
            ph_compose_warn_unknown(pair, "healthcheck.", s->name);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* ---- device requests (gpus, deploy reservations) ----------------------- */

static int
read_device_request(ph_service *s, ph_ynode *item, const char *what, int add_gpu, ph_error_t *err)
{
    ph_device_request *nr = realloc(s->device_requests, (s->n_device_requests + 1) * sizeof *nr), *r;
    int has_count = 0;

    if (nr == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    s->device_requests = nr;
    r = &s->device_requests[s->n_device_requests++];
    memset(r, 0, sizeof *r);
    if (item->kind != PH_Y_MAP)
        return ph_yaml_error(item, err, "`%s` entries must be mappings", what);
    PH_YAML_FOREACH_PAIR(item, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("driver")) {
            rc = ph_yaml_dup(vn, "driver", &r->driver, err);
        } else if (KEY("count")) {
            has_count = 1;
            if (vn->kind == PH_Y_SCALAR && strcmp(vn->str, "all") == 0)
                r->count = -1;
            else
                rc = ph_compose_int(vn, "count", 0, INT_MAX, &r->count, err);
        } else if (KEY("device_ids")) {
            rc = ph_yaml_strv(vn, "device_ids", 0, 0, &r->ids, err);
        } else if (KEY("capabilities")) {
            rc = ph_yaml_strv(vn, "capabilities", 0, 0, &r->capabilities, err);
        } else if (KEY("options")) {
            rc = ph_yaml_kvv(vn, "options", &r->options, err);
        } else {
            ph_compose_warn_unknown(pair, "devices.", s->name);
        }
        if (rc < 0)
            return -1;
    }
    /* Neither count nor ids: compose asks for all of them. */
    if (!has_count && r->ids.n == 0)
        r->count = -1;
    if (add_gpu && ph_strv_push(&r->capabilities, "gpu") < 0)
        return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

/* gpus: all, or a list of {driver, count, device_ids, capabilities, options}. */
int
ph_compose_read_gpus(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    if (v->kind == PH_Y_SCALAR && strcmp(v->str, "all") == 0) {
        ph_ynode *m = ph_ynode_new(PH_Y_MAP, v);
        int rc;

        if (m == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        rc = read_device_request(s, m, "gpus", 1, err);
        ph_ynode_unref(m);
        return rc;
    }
    if (v->kind != PH_Y_SEQ)
        return ph_yaml_error(v, err, "`gpus` must be `all` or a list");
    PH_YAML_FOREACH_ITEM(v, it)
        if (read_device_request(s, *it, "gpus", 1, err) < 0)
            return -1;
    return 0;
}

/* ---- deploy ------------------------------------------------------------ */

static int
read_resource(ph_service *s, ph_ynode *v, int limits, ph_error_t *err)
{
    const char *what = limits ? "deploy.resources.limits" : "deploy.resources.reservations";

    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`%s` must be a mapping", what);
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("memory"))
            rc = ph_compose_bytes(vn, "memory", limits ? &s->mem_limit : &s->mem_reservation, err);
        else if (KEY("cpus") && limits)
            rc = read_cpus(vn, "deploy.resources.limits.cpus", &s->nano_cpus, err);
        else if (KEY("cpus")) /* a Swarm scheduling hint: compose gives the container nothing for it */
            rc = read_cpus(vn, "deploy.resources.reservations.cpus", &(long long){ 0 }, err);
        else if (KEY("pids") && limits)
            rc = ph_compose_int(vn, "deploy.resources.limits.pids", -1, LLONG_MAX, &s->pids_limit, err);
        else if (KEY("devices") && !limits) {
            if (vn->kind != PH_Y_SEQ)
                return ph_yaml_error(vn, err, "`%s.devices` must be a list", what);
            PH_YAML_FOREACH_ITEM(vn, it)
                if (read_device_request(s, *it, "deploy.resources.reservations.devices", 0, err) < 0)
                    return -1;
        } else if (KEY("generic_resources"))
            rc = ph_compose_unsupported(s, pair->key, "deploy.resources.reservations.generic_resources (Swarm only)");
        else
            ph_compose_warn_unknown(pair, limits ? "deploy.resources.limits." : "deploy.resources.reservations.",
                                    s->name);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int
read_restart_policy(ph_service *s, ph_ynode *v, ph_error_t *err)
{
    const char *cond = "any";
    long long attempts = -1;
    char buf[64];

    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`deploy.restart_policy` must be a mapping");
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        long long ns;

        if (KEY("condition")) {
            if ((cond = ph_yaml_nonempty(vn, "condition", err)) == NULL)
                return -1;
            if (strcmp(cond, "none") && strcmp(cond, "on-failure") && strcmp(cond, "any"))
                return ph_yaml_error(vn, err, "`deploy.restart_policy.condition` must be none, on-failure or any, "
                                              "not `%s`", cond);
        } else if (KEY("max_attempts")) {
            if (ph_compose_int(vn, "max_attempts", 0, INT_MAX, &attempts, err) < 0)
                return -1;
        } else if (KEY("delay") || KEY("window")) {
            /* Swarm's; compose maps neither onto the Engine's policy. */
            if (ph_yaml_duration(vn, key, &ns, err) < 0)
                return -1;
        } else {
            ph_compose_warn_unknown(pair, "deploy.restart_policy.", s->name);
        }
    }
    snprintf(buf, sizeof buf, "%s", strcmp(cond, "any") == 0 ? "always" : strcmp(cond, "none") == 0 ? "no" : cond);
    if (attempts > 0 && strcmp(cond, "on-failure") == 0)
        snprintf(buf, sizeof buf, "on-failure:%lld", attempts);
    return ph_compose_dup(buf, &s->restart, err);
}

int
ph_compose_read_deploy(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    long long n;

    (void)l;
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`deploy` must be a mapping");
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("resources")) {
            if (vn->kind != PH_Y_MAP)
                return ph_yaml_error(vn, err, "`deploy.resources` must be a mapping");
            PH_YAML_FOREACH_PAIR(vn, rp) {
                if (strcmp(ph_yaml_key(rp), "limits") == 0 || strcmp(ph_yaml_key(rp), "reservations") == 0)
                    rc = read_resource(s, rp->value, ph_yaml_key(rp)[0] == 'l', err);
                else
                    ph_compose_warn_unknown(rp, "deploy.resources.", s->name);
                if (rc < 0)
                    return -1;
            }
        } else if (KEY("restart_policy")) {
            rc = read_restart_policy(s, vn, err);
        } else if (KEY("replicas")) {
            rc = ph_compose_int(vn, "deploy.replicas", 0, INT_MAX, &n, err);
            if (rc == 0) {
                s->deploy_replicas = (int)n;
                rc = ph_compose_replicas(s, vn, "deploy.replicas");
            }
        } else if (KEY("mode")) {
            const char *m = ph_yaml_nonempty(vn, "deploy.mode", err);

            if (m == NULL)
                return -1;
            if (strcmp(m, "replicated") != 0 && strcmp(m, "replicated-job") != 0)
                rc = ph_compose_unsupported(s, vn, "deploy.mode other than replicated");
        } else if (KEY("labels") || KEY("placement") || KEY("update_config") || KEY("rollback_config") ||
                   KEY("endpoint_mode")) {
            /* Swarm's; docker compose gives a container nothing for them either. */
        } else {
            ph_compose_warn_unknown(pair, "deploy.", s->name);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* ---- ulimits, blkio, logging ------------------------------------------- */

int
ph_compose_read_ulimits(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`ulimits` must be a mapping of names to limits");
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        ph_ulimit *nu = realloc(s->ulimits, (s->n_ulimits + 1) * sizeof *nu), *u;

        if (nu == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        s->ulimits = nu;
        u = &s->ulimits[s->n_ulimits++];
        memset(u, 0, sizeof *u);
        if ((u->name = strdup(ph_yaml_key(pair))) == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        if (vn->kind == PH_Y_MAP) {
            ph_ynode *soft = ph_yaml_get(vn, "soft"), *hard = ph_yaml_get(vn, "hard");

            if (soft == NULL || hard == NULL)
                return ph_yaml_error(vn, err, "`ulimits.%s` needs `soft` and `hard`", u->name);
            if (ph_compose_int(soft, "soft", -1, LLONG_MAX, &u->soft, err) < 0 ||
                ph_compose_int(hard, "hard", -1, LLONG_MAX, &u->hard, err) < 0)
                return -1;
            PH_YAML_FOREACH_PAIR(vn, up)
                if (strcmp(ph_yaml_key(up), "soft") != 0 && strcmp(ph_yaml_key(up), "hard") != 0)
                    ph_compose_warn_unknown(up, "ulimits.", s->name);
        } else {
            if (ph_compose_int(vn, "ulimits", -1, LLONG_MAX, &u->soft, err) < 0)
                return -1;
            u->hard = u->soft;
        }
    }
    return 0;
}

int
ph_compose_read_blkio(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    static const char *const lists[] = { "weight_device", "device_read_bps", "device_read_iops", "device_write_bps",
                                         "device_write_iops" };

    (void)l;
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`blkio_config` must be a mapping");
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        size_t k;

        if (KEY("weight")) {
            if (ph_compose_int(vn, "blkio_config.weight", 10, 1000, &s->blkio_weight, err) < 0)
                return -1;
            continue;
        }
        for (k = 0; k < PH_ARRAY_LEN(lists) && strcmp(key, lists[k]) != 0; k++)
            ;
        if (k == PH_ARRAY_LEN(lists)) {
            ph_compose_warn_unknown(pair, "blkio_config.", s->name);
            continue;
        }
        if (vn->kind != PH_Y_SEQ)
            return ph_yaml_error(vn, err, "`blkio_config.%s` must be a list", key);
        PH_YAML_FOREACH_ITEM(vn, it) {
            ph_ynode *path = ph_yaml_get(*it, "path"), *val = ph_yaml_get(*it, k == 0 ? "weight" : "rate");
            ph_throttle *nt = realloc(s->blkio, (s->n_blkio + 1) * sizeof *nt), *t;
            int rc;

            if (nt == NULL)
                return ph_fail(err, ENOMEM, "allocate");
            s->blkio = nt;
            t = &s->blkio[s->n_blkio++];
            memset(t, 0, sizeof *t);
            t->kind = (ph_throttle_kind)k;
            if (path == NULL || val == NULL)
                return ph_yaml_error(*it, err, "`blkio_config.%s` entries need `path` and `%s`", key,
                                     k == 0 ? "weight" : "rate");
            if (ph_yaml_dup(path, "path", &t->path, err) < 0)
                return -1;
            if (k == 0)
                rc = ph_compose_int(val, "weight", 10, 1000, &t->value, err);
            else if (k == 1 || k == 3)
                rc = ph_compose_bytes(val, "rate", &t->value, err);
            else
                rc = ph_compose_int(val, "rate", 0, LLONG_MAX, &t->value, err);
            if (rc < 0)
                return -1;
        }
    }
    return 0;
}

int
ph_compose_read_logging(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`logging` must be a mapping");
    PH_YAML_FOREACH_PAIR(v, pair) {
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("driver"))
            rc = ph_yaml_dup(pair->value, "logging.driver", &s->logging_driver, err);
        else if (KEY("options"))
            rc = ph_yaml_is_null(pair->value) ? 0 : ph_yaml_kvv(pair->value, "logging.options", &s->logging_options, err);
        else
            ph_compose_warn_unknown(pair, "logging.", s->name);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Every scalar and number key under the service's resources. */
int
ph_compose_read_cpus(const ph_ynode *n, const char *key, long long *out, ph_error_t *err)
{
    return read_cpus(n, key, out, err);
}

int
ph_compose_read_micros(const ph_ynode *n, const char *key, long long *out, ph_error_t *err)
{
    return read_micros(n, key, out, err);
}
