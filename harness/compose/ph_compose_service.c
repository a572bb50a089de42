/* ph_compose_service.c - one service's mapping read into a ph_service.
 *
 * Keys are looked up in one table: plain values (strings, booleans,
 * numbers, sizes, lists, mappings) go straight into their field, the rest
 * to a reader of their own (here, in ph_compose_mounts.c and in
 * ph_compose_resources.c).  Each value is checked where it is written;
 * a key compose accepts but profharness cannot honour marks the service
 * `unsupported` rather than failing the whole project; an unknown key
 * warns with file:line.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_compose_int.h"
#include "ph_log.h"
#include "ph_util.h"

static const char *
env_cb(const char *name, void *ud)
{
    return ph_kvv_get(ud, name);
}

/* A path, a list of paths, or a list of {path, required} (compose 2.24). */
static int
read_env_files(ph_compose_loader *l, ph_service *s, ph_ynode *v, const char *what, ph_kvv *out, ph_error_t *err)
{
    ph_ynode *one[1] = { v }, **start = one, **top = one + 1;

    if (v->kind == PH_Y_SEQ) {
        start = v->items;
        top = v->items + v->n;
    } else if (v->kind != PH_Y_SCALAR) {
        return ph_yaml_error(v, err, "`%s` must be a path or a list of paths", what);
    }
    for (ph_ynode **it = start; it < top; it++) {
        ph_ynode *item = *it, *path_node = item;
        const char *file = NULL, *format = NULL;
        int required = 1, rc;
        char *p;

        if (item->kind == PH_Y_MAP) {
            PH_YAML_FOREACH_PAIR(item, pair) {
                ph_ynode *vn = pair->value;
                const char *key = ph_yaml_key(pair);

                if (KEY("path")) {
                    if ((file = ph_yaml_nonempty(vn, "path", err)) == NULL)
                        return -1;
                    path_node = vn;
                } else if (KEY("required")) {
                    if (ph_yaml_bool(vn, "required", &required, err) < 0)
                        return -1;
                } else if (KEY("format")) {
                    if ((format = ph_yaml_nonempty(vn, "format", err)) == NULL)
                        return -1;
                    if (strcmp(format, "raw") != 0)
                        return ph_yaml_error(vn, err, "`%s.format` must be `raw` (or absent), not `%s`", what, format);
                } else {
                    ph_compose_warn_unknown(pair, "env_file.", s->name);
                }
            }
            if (file == NULL)
                return ph_yaml_error(item, err, "an `%s` entry needs `path`", what);
        } else if ((file = ph_yaml_nonempty(item, what, err)) == NULL) {
            return -1;
        }
        p = ph_compose_abs_path(ph_compose_base(l, path_node), file);
        if (p == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        rc = format ? ph_compose_read_env_raw(p, out, required, err)
                    : ph_compose_read_env_file(p, out, required, env_cb, &l->c->env, err);
        free(p);
        if (rc < 0)
            return ph_error_wrap(err, "%s:%d:%d: %s", ph_yaml_file(path_node), path_node->line, path_node->col,
                                 what);
    }
    return 0;
}

int
ph_compose_add_depend(ph_service *s, const char *name, ph_error_t *err)
{
    ph_depend *nd;

    for (size_t i = 0; i < s->depends_on.n; i++)
        if (strcmp(s->depends_on.v[i], name) == 0)
            return 0;
    nd = realloc(s->depends, (s->depends_on.n + 1) * sizeof *nd);
    if (nd == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    s->depends = nd;
    memset(&nd[s->depends_on.n], 0, sizeof *nd);
    nd[s->depends_on.n].required = 1;
    if ((nd[s->depends_on.n].service = strdup(name)) == NULL ||
        (nd[s->depends_on.n].condition = strdup("service_started")) == NULL || ph_strv_push(&s->depends_on, name) < 0)
        return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

static int
read_depends_on(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    if (v->kind == PH_Y_SEQ) {
        PH_YAML_FOREACH_ITEM(v, it)
            if (ph_yaml_nonempty(*it, "depends_on", err) == NULL || ph_compose_add_depend(s, (*it)->str, err) < 0)
                return -1;
        return 0;
    }
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`depends_on` must be a list or a mapping");
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *dep = ph_yaml_key(pair);
        ph_depend *d;

        if (ph_compose_add_depend(s, dep, err) < 0)
            return -1;
        d = &s->depends[s->depends_on.n - 1];
        if (vn->kind == PH_Y_MAP) {
            PH_YAML_FOREACH_PAIR(vn, cp) {
                ph_ynode *cv = cp->value;
                const char *key = ph_yaml_key(cp), *sv;

                if (KEY("condition")) {
                    if ((sv = ph_yaml_scalar(cv, "depends_on.condition", err)) == NULL)
                        return -1;
                    if (strcmp(sv, "service_started") != 0 && strcmp(sv, "service_healthy") != 0 &&
                        strcmp(sv, "service_completed_successfully") != 0)
                        return ph_yaml_error(cv, err,
                                             "`depends_on.%s.condition` must be service_started, service_healthy "
                                             "or service_completed_successfully, not `%s`", dep, sv);
                    if (ph_compose_dup(sv, &d->condition, err) < 0)
                        return -1;
                } else if (KEY("restart") || KEY("required")) {
                    if (ph_yaml_bool(cv, key, KEY("restart") ? &d->restart : &d->required, err) < 0)
                        return -1;
                } else {
                    ph_compose_warn_unknown(cp, "depends_on.", s->name);
                }
            }
        } else if (!ph_yaml_is_null(vn)) {
            return ph_yaml_error(vn, err, "`depends_on.%s` must be a mapping (condition: ...)", dep);
        }
    }
    return 0;
}

/* ---- the keys ---------------------------------------------------------- */

typedef enum key_kind {
    K_STR = 1,   /* a non-empty string */
    K_BOOL,
    K_STRV,      /* a list of strings */
    K_STRV1,     /* a list or one string */
    K_KVV,       /* a mapping or a list of KEY=VALUE */
    K_BYTES,     /* a size */
    K_INT,       /* a whole number in [min, max] */
    K_FN,        /* a reader of its own */
    K_IGNORE,    /* accepted: no effect on the container (said in docs/compose.md) */
    K_UNSUPPORTED,
} key_kind;

typedef int (*key_fn)(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);

typedef struct svc_key {
    const char *name;
    key_kind kind;
    size_t off;
    key_fn fn;
    long long min, max;
    const char *why; /* K_UNSUPPORTED */
} svc_key;

#define F(field) offsetof(ph_service, field)

static int read_command(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_entrypoint(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_stop_signal(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_stop_grace(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_working_dir(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_restart(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_pull_policy(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_cpus_key(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_rt_runtime(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_rt_period(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_secrets(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_configs(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_extra_hosts(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_scale(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_init(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_oom_score_adj(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_label_file(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_depends_on(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
static int read_memswap(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);

/* Sorted by name (looked up with bsearch). */
static const svc_key svc_keys[] = {
    { "annotations", K_KVV, F(annotations), NULL, 0, 0, NULL },
    { "attach", K_BOOL, 0, NULL, 0, 0, NULL }, /* whether `up` attaches to the logs */
    { "blkio_config", K_FN, 0, ph_compose_read_blkio, 0, 0, NULL },
    { "build", K_FN, 0, ph_compose_read_build, 0, 0, NULL },
    { "cap_add", K_STRV, F(cap_add), NULL, 0, 0, NULL },
    { "cap_drop", K_STRV, F(cap_drop), NULL, 0, 0, NULL },
    { "cgroup", K_STR, F(cgroup), NULL, 0, 0, NULL },
    { "cgroup_parent", K_STR, F(cgroup_parent), NULL, 0, 0, NULL },
    { "command", K_FN, 0, read_command, 0, 0, NULL },
    { "configs", K_FN, 0, read_configs, 0, 0, NULL },
    { "container_name", K_STR, F(container_name), NULL, 0, 0, NULL },
    { "cpu_count", K_INT, F(cpu_count), NULL, 0, LLONG_MAX, NULL },
    { "cpu_percent", K_INT, F(cpu_percent), NULL, 0, 100, NULL },
    { "cpu_period", K_INT, F(cpu_period), NULL, 0, LLONG_MAX, NULL },
    { "cpu_quota", K_INT, F(cpu_quota), NULL, -1, LLONG_MAX, NULL },
    { "cpu_rt_period", K_FN, 0, read_rt_period, 0, 0, NULL },
    { "cpu_rt_runtime", K_FN, 0, read_rt_runtime, 0, 0, NULL },
    { "cpu_shares", K_INT, F(cpu_shares), NULL, 0, LLONG_MAX, NULL },
    { "cpus", K_FN, 0, read_cpus_key, 0, 0, NULL },
    { "cpuset", K_STR, F(cpuset), NULL, 0, 0, NULL },
    { "credential_spec", K_UNSUPPORTED, 0, NULL, 0, 0, "credential_spec (Windows containers only)" },
    { "depends_on", K_FN, 0, read_depends_on, 0, 0, NULL },
    { "deploy", K_FN, 0, ph_compose_read_deploy, 0, 0, NULL },
    { "develop", K_IGNORE, 0, NULL, 0, 0, NULL }, /* `docker compose watch`: not how the container runs */
    { "device_cgroup_rules", K_STRV, F(device_cgroup_rules), NULL, 0, 0, NULL },
    { "devices", K_FN, 0, ph_compose_read_devices, 0, 0, NULL },
    { "dns", K_STRV1, F(dns), NULL, 0, 0, NULL },
    { "dns_opt", K_STRV, F(dns_opt), NULL, 0, 0, NULL },
    { "dns_search", K_STRV1, F(dns_search), NULL, 0, 0, NULL },
    { "domainname", K_STR, F(domainname), NULL, 0, 0, NULL },
    { "entrypoint", K_FN, 0, read_entrypoint, 0, 0, NULL },
    { "env_file", K_IGNORE, 0, NULL, 0, 0, NULL },     /* read with `environment`, below */
    { "environment", K_IGNORE, 0, NULL, 0, 0, NULL },
    { "expose", K_FN, 0, ph_compose_read_expose, 0, 0, NULL },
    { "extends", K_IGNORE, 0, NULL, 0, 0, NULL },      /* resolved while loading */
    { "external_links", K_STRV, F(external_links), NULL, 0, 0, NULL },
    { "extra_hosts", K_FN, 0, read_extra_hosts, 0, 0, NULL },
    { "gpus", K_FN, 0, ph_compose_read_gpus, 0, 0, NULL },
    { "group_add", K_STRV, F(group_add), NULL, 0, 0, NULL },
    { "healthcheck", K_FN, 0, ph_compose_read_healthcheck, 0, 0, NULL },
    { "hostname", K_STR, F(hostname), NULL, 0, 0, NULL },
    { "image", K_STR, F(image), NULL, 0, 0, NULL },
    { "init", K_FN, 0, read_init, 0, 0, NULL },
    { "ipc", K_STR, F(ipc), NULL, 0, 0, NULL },
    { "isolation", K_STR, F(isolation), NULL, 0, 0, NULL },
    { "label_file", K_FN, 0, read_label_file, 0, 0, NULL },
    { "labels", K_KVV, F(labels), NULL, 0, 0, NULL },
    { "links", K_STRV, F(links), NULL, 0, 0, NULL },
    { "logging", K_FN, 0, ph_compose_read_logging, 0, 0, NULL },
    { "mac_address", K_STR, F(mac_address), NULL, 0, 0, NULL },
    { "mem_limit", K_BYTES, F(mem_limit), NULL, 0, 0, NULL },
    { "mem_reservation", K_BYTES, F(mem_reservation), NULL, 0, 0, NULL },
    { "mem_swappiness", K_INT, F(mem_swappiness), NULL, 0, 100, NULL },
    { "memswap_limit", K_FN, 0, read_memswap, 0, 0, NULL },
    { "models", K_UNSUPPORTED, 0, NULL, 0, 0, "models (Docker Model Runner)" },
    { "network_mode", K_STR, F(network_mode), NULL, 0, 0, NULL },
    { "networks", K_FN, 0, ph_compose_read_networks, 0, 0, NULL },
    { "oom_kill_disable", K_BOOL, F(oom_kill_disable), NULL, 0, 0, NULL },
    { "oom_score_adj", K_FN, 0, read_oom_score_adj, 0, 0, NULL },
    { "pid", K_STR, F(pid), NULL, 0, 0, NULL },
    { "pids_limit", K_INT, F(pids_limit), NULL, -1, LLONG_MAX, NULL },
    { "platform", K_STR, F(platform), NULL, 0, 0, NULL },
    { "ports", K_FN, 0, ph_compose_read_ports, 0, 0, NULL },
    { "post_start", K_UNSUPPORTED, 0, NULL, 0, 0, "post_start (lifecycle hooks)" },
    { "pre_start", K_UNSUPPORTED, 0, NULL, 0, 0, "pre_start (lifecycle hooks)" },
    { "pre_stop", K_UNSUPPORTED, 0, NULL, 0, 0, "pre_stop (lifecycle hooks)" },
    { "privileged", K_BOOL, F(privileged), NULL, 0, 0, NULL },
    { "profiles", K_STRV, F(profiles), NULL, 0, 0, NULL },
    { "provider", K_UNSUPPORTED, 0, NULL, 0, 0, "provider (a service run by an external provider)" },
    { "pull_policy", K_FN, 0, read_pull_policy, 0, 0, NULL },
    { "read_only", K_BOOL, F(read_only), NULL, 0, 0, NULL },
    { "restart", K_FN, 0, read_restart, 0, 0, NULL },
    { "runtime", K_STR, F(runtime), NULL, 0, 0, NULL },
    { "scale", K_FN, 0, read_scale, 0, 0, NULL },
    { "secrets", K_FN, 0, read_secrets, 0, 0, NULL },
    { "security_opt", K_STRV, F(security_opt), NULL, 0, 0, NULL },
    { "shm_size", K_BYTES, F(shm_size), NULL, 0, 0, NULL },
    { "stdin_open", K_BOOL, F(stdin_open), NULL, 0, 0, NULL },
    { "stop_grace_period", K_FN, 0, read_stop_grace, 0, 0, NULL },
    { "stop_signal", K_FN, 0, read_stop_signal, 0, 0, NULL },
    { "storage_opt", K_KVV, F(storage_opt), NULL, 0, 0, NULL },
    { "sysctls", K_KVV, F(sysctls), NULL, 0, 0, NULL },
    { "tmpfs", K_FN, 0, ph_compose_read_tmpfs, 0, 0, NULL },
    { "tty", K_BOOL, F(tty), NULL, 0, 0, NULL },
    { "ulimits", K_FN, 0, ph_compose_read_ulimits, 0, 0, NULL },
    { "use_api_socket", K_UNSUPPORTED, 0, NULL, 0, 0, "use_api_socket" },
    { "user", K_STR, F(user), NULL, 0, 0, NULL },
    { "userns_mode", K_STR, F(userns_mode), NULL, 0, 0, NULL },
    { "uts", K_STR, F(uts), NULL, 0, 0, NULL },
    { "volume_driver", K_UNSUPPORTED, 0, NULL, 0, 0, "volume_driver (use a top-level volume's `driver`)" },
    { "volumes", K_FN, 0, ph_compose_read_volumes, 0, 0, NULL },
    { "volumes_from", K_STRV, F(volumes_from), NULL, 0, 0, NULL },
    { "working_dir", K_FN, 0, read_working_dir, 0, 0, NULL },
};

static int
key_cmp(const void *k, const void *e)
{
    return strcmp(k, ((const svc_key *)e)->name);
}

static int
read_command(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    if (ph_yaml_is_null(v))
        return 0;
    ph_strv_free(&s->command);
    s->has_command = 1;
    return ph_yaml_strv(v, "command", 1, 1, &s->command, err);
}

static int
read_entrypoint(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    if (ph_yaml_is_null(v))
        return 0;
    ph_strv_free(&s->entrypoint);
    s->has_entrypoint = 1;
    return ph_yaml_strv(v, "entrypoint", 1, 1, &s->entrypoint, err);
}

static int
read_stop_signal(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    char buf[16];
    const char *sv = ph_yaml_nonempty(v, "stop_signal", err), *norm;

    (void)l;
    if (sv == NULL)
        return -1;
    norm = ph_signal_normalise(sv, buf);
    if (norm == NULL)
        return ph_yaml_error(v, err, "`stop_signal`: `%s` is not a signal", sv);
    return ph_compose_dup(norm, &s->stop_signal, err);
}

static int
read_stop_grace(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    return ph_yaml_duration(v, "stop_grace_period", &s->stop_grace_ns, err);
}

static int
read_working_dir(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    if (ph_yaml_dup(v, "working_dir", &s->working_dir, err) < 0)
        return -1;
    if (s->working_dir[0] != '/')
        return ph_yaml_error(v, err, "`working_dir` must be an absolute path, not `%s`", s->working_dir);
    return 0;
}

static int
read_restart(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    const char *r = ph_yaml_nonempty(v, "restart", err);
    char *end;

    (void)l;
    if (r == NULL)
        return -1;
    if (strcmp(r, "no") != 0 && strcmp(r, "always") != 0 && strcmp(r, "unless-stopped") != 0 &&
        strcmp(r, "on-failure") != 0 &&
        !(strncmp(r, "on-failure:", 11) == 0 && isdigit((unsigned char)r[11]) && (strtol(r + 11, &end, 10), *end == '\0')))
        return ph_yaml_error(v, err, "`restart` must be no, always, on-failure[:N] or unless-stopped, not `%s`", r);
    return ph_compose_dup(r, &s->restart, err);
}

static int
read_pull_policy(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    static const char *const ok[] = { "always", "never", "missing", "if_not_present", "build", "daily", "weekly" };
    const char *p = ph_yaml_nonempty(v, "pull_policy", err);

    (void)l;
    if (p == NULL)
        return -1;
    for (size_t i = 0; i < PH_ARRAY_LEN(ok); i++)
        if (strcmp(p, ok[i]) == 0)
            return ph_compose_dup(p, &s->pull_policy, err);
    if (strncmp(p, "every_", 6) == 0)
        return ph_compose_dup(p, &s->pull_policy, err);
    return ph_yaml_error(v, err, "`pull_policy` must be always, never, missing, build, daily, weekly or every_<duration>, "
                                 "not `%s`", p);
}

static int
read_cpus_key(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    return ph_compose_read_cpus(v, "cpus", &s->nano_cpus, err);
}

static int
read_rt_runtime(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    return ph_compose_read_micros(v, "cpu_rt_runtime", &s->cpu_rt_runtime, err);
}

static int
read_rt_period(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    return ph_compose_read_micros(v, "cpu_rt_period", &s->cpu_rt_period, err);
}

static int
read_secrets(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    return ph_compose_read_file_refs(l, s, v, 1, err);
}

static int
read_configs(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    return ph_compose_read_file_refs(l, s, v, 0, err);
}

static int
read_extra_hosts(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    return ph_compose_read_extra_hosts(v, "extra_hosts", &s->extra_hosts, err);
}

static int
read_scale(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    long long n;

    (void)l;
    if (ph_compose_int(v, "scale", 0, INT_MAX, &n, err) < 0)
        return -1;
    s->scale = (int)n;
    return ph_compose_replicas(s, v, "scale");
}

static int
read_init(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    s->has_init = 1;
    return ph_yaml_bool(v, "init", &s->init, err);
}

static int
read_oom_score_adj(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    long long n;

    (void)l;
    if (ph_compose_int(v, "oom_score_adj", -1000, 1000, &n, err) < 0)
        return -1;
    s->oom_score_adj = (int)n;
    s->has_oom_score_adj = 1;
    return 0;
}

/* label_file: files of KEY=VALUE lines, read like env files; `labels` win. */
static int
read_label_file(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    ph_kvv from_file = { 0 };
    int rc = read_env_files(l, s, v, "label_file", &from_file, err);

    for (size_t i = 0; rc == 0 && i < from_file.n; i++)
        if (ph_kvv_get(&s->labels, from_file.v[i].key) == NULL &&
            ph_kvv_set(&s->labels, from_file.v[i].key, from_file.v[i].value) < 0)
            rc = ph_fail(err, ENOMEM, "allocate");
    ph_kvv_free(&from_file);
    return rc;
}

/* A size, or -1 for unlimited swap (kept as -2: -1 is "not set" here). */
static int
read_memswap(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    if (v->kind == PH_Y_SCALAR && strcmp(v->str, "-1") == 0) {
        s->memswap_limit = -2;
        return 0;
    }
    return ph_compose_bytes(v, "memswap_limit", &s->memswap_limit, err);
}

static int
read_key(ph_compose_loader *l, ph_service *s, const svc_key *k, ph_ynode *v, ph_error_t *err)
{
    char *base = (char *)s;

    switch (k->kind) {
    case K_STR:
        return ph_yaml_dup(v, k->name, (char **)(base + k->off), err);
    case K_BOOL:
        return k->off ? ph_yaml_bool(v, k->name, (int *)(base + k->off), err) : ph_yaml_bool(v, k->name, &(int){ 0 }, err);
    case K_STRV:
        return ph_yaml_strv(v, k->name, 0, 0, (ph_strv *)(base + k->off), err);
    case K_STRV1:
        return ph_yaml_strv(v, k->name, 1, 0, (ph_strv *)(base + k->off), err);
    case K_KVV:
        return ph_yaml_kvv(v, k->name, (ph_kvv *)(base + k->off), err);
    case K_BYTES:
        return ph_compose_bytes(v, k->name, (long long *)(base + k->off), err);
    case K_INT:
        return ph_compose_int(v, k->name, k->min, k->max, (long long *)(base + k->off), err);
    case K_FN:
        return k->fn(l, s, v, err);
    case K_UNSUPPORTED:
        return ph_compose_unsupported(s, v, k->why);
    default:
        return 0;
    }
}

int
ph_compose_read_service(ph_compose_loader *l, ph_service *s, ph_ynode *map, ph_ynode **depends, ph_error_t *err)
{
    ph_kvv env_file = { 0 }, env = { 0 };
    ph_ynode *v;
    int rc = 0;

    s->stop_grace_ns = -1;
    s->replicas = 1;
    s->scale = s->deploy_replicas = -1;
    s->mem_limit = s->memswap_limit = s->mem_reservation = s->shm_size = -1;
    s->nano_cpus = s->cpu_shares = s->cpu_period = s->cpu_count = s->cpu_percent = -1;
    s->cpu_rt_runtime = s->cpu_rt_period = s->mem_swappiness = s->blkio_weight = s->build_shm_size = -1;
    if (map->kind != PH_Y_MAP)
        return ph_yaml_error(map, err, "service `%s` must be a mapping", s->name);
    PH_YAML_FOREACH_PAIR(map, pair) {
        const char *key = ph_yaml_key(pair);
        const svc_key *k = bsearch(key, svc_keys, PH_ARRAY_LEN(svc_keys), sizeof *svc_keys, key_cmp);

        if (k == NULL) {
            ph_compose_warn_unknown(pair, "", s->name);
            continue;
        }
        /* `key: null` leaves the default, as compose reads it. */
        if (ph_yaml_is_null(pair->value) && k->kind != K_UNSUPPORTED)
            continue;
        if (KEY("depends_on"))
            *depends = pair->value;
        if (read_key(l, s, k, pair->value, err) < 0)
            goto fail;
    }
    /* compose refuses it too: a container name is unique */
    if (s->replicas > 1 && s->container_name != NULL)
        ph_compose_unsupported(s, map, "container_name with more than one replica");
    /* A label without a value is an empty label, not an unset one. */
    for (size_t i = 0; i < s->labels.n; i++)
        if (s->labels.v[i].value == NULL && (s->labels.v[i].value = strdup("")) == NULL)
            goto oom;
    /* env_file first, then environment: the later wins.  A variable with no
     * value comes from the project's environment; unset there, it is kept
     * without a value (sent as `KEY`, which the Engine takes as unset), so
     * it still hides an env_file's value, as compose-go's OverrideBy. */
    if ((v = ph_yaml_get(map, "env_file")) != NULL && !ph_yaml_is_null(v))
        rc = read_env_files(l, s, v, "env_file", &env_file, err);
    if (rc == 0 && (v = ph_yaml_get(map, "environment")) != NULL && !ph_yaml_is_null(v))
        rc = ph_yaml_kvv(v, "environment", &env, err);
    if (rc < 0)
        goto fail;
    for (size_t i = 0; i < env_file.n + env.n; i++) {
        const ph_kv *kv = i < env_file.n ? &env_file.v[i] : &env.v[i - env_file.n];
        const char *val = kv->value ? kv->value : ph_kvv_get(&l->c->env, kv->key);

        if (ph_kvv_set(&s->environment, kv->key, val) < 0)
            goto oom;
    }
    ph_kvv_free(&env_file);
    ph_kvv_free(&env);
    if (s->image == NULL && !s->has_build)
        return ph_yaml_error(map, err, "service `%s` has neither `image` nor `build`", s->name);
    return 0;
oom:
    ph_fail(err, ENOMEM, "allocate");
fail:
    ph_kvv_free(&env_file);
    ph_kvv_free(&env);
    return -1;
}

void
ph_compose_service_free(ph_service *s)
{
    char **strs[] = {
        &s->name, &s->file, &s->unsupported, &s->image, &s->pull_policy, &s->build_context, &s->build_dockerfile,
        &s->build_dockerfile_inline, &s->build_target, &s->build_network, &s->build_platform, &s->build_isolation,
        &s->working_dir, &s->user, &s->hostname, &s->domainname, &s->mac_address, &s->network_mode,
        &s->logging_driver, &s->pid, &s->ipc, &s->uts, &s->userns_mode, &s->cgroup, &s->cgroup_parent,
        &s->runtime, &s->platform, &s->isolation, &s->restart, &s->stop_signal, &s->container_name, &s->cpuset,
    };
    ph_strv *strvs[] = {
        &s->profiles, &s->build_extra_hosts, &s->build_cache_from, &s->build_tags, &s->command, &s->entrypoint,
        &s->expose, &s->tmpfs, &s->networks, &s->depends_on, &s->links, &s->external_links, &s->volumes_from,
        &s->cap_add, &s->cap_drop, &s->security_opt, &s->group_add, &s->dns, &s->dns_search, &s->dns_opt,
        &s->extra_hosts, &s->device_cgroup_rules, &s->healthcheck.test,
    };
    ph_kvv *kvvs[] = {
        &s->build_args, &s->build_labels, &s->environment, &s->sysctls, &s->labels, &s->annotations,
        &s->storage_opt, &s->logging_options,
    };

    /* net and depends run parallel to networks and depends_on: first. */
    for (size_t i = 0; s->net && i < s->networks.n; i++)
        ph_compose_service_network_free(&s->net[i]);
    free(s->net);
    for (size_t i = 0; i < s->depends_on.n && s->depends; i++) {
        free(s->depends[i].service);
        free(s->depends[i].condition);
    }
    free(s->depends);
    for (size_t i = 0; i < PH_ARRAY_LEN(strs); i++)
        free(*strs[i]);
    for (size_t i = 0; i < PH_ARRAY_LEN(strvs); i++)
        ph_strv_free(strvs[i]);
    for (size_t i = 0; i < PH_ARRAY_LEN(kvvs); i++)
        ph_kvv_free(kvvs[i]);
    for (size_t i = 0; i < s->n_ports; i++) {
        free(s->ports[i].host_ip);
        free(s->ports[i].host_port);
        free(s->ports[i].container_port);
        free(s->ports[i].protocol);
    }
    free(s->ports);
    for (size_t i = 0; i < s->n_volumes; i++)
        ph_compose_volume_free(&s->volumes[i]);
    free(s->volumes);
    for (size_t i = 0; i < s->n_devices; i++) {
        free(s->devices[i].source);
        free(s->devices[i].target);
        free(s->devices[i].permissions);
    }
    free(s->devices);
    for (size_t i = 0; i < s->n_device_requests; i++) {
        free(s->device_requests[i].driver);
        ph_strv_free(&s->device_requests[i].ids);
        ph_strv_free(&s->device_requests[i].capabilities);
        ph_kvv_free(&s->device_requests[i].options);
    }
    free(s->device_requests);
    for (size_t i = 0; i < s->n_ulimits; i++)
        free(s->ulimits[i].name);
    free(s->ulimits);
    for (size_t i = 0; i < s->n_blkio; i++)
        free(s->blkio[i].path);
    free(s->blkio);
    for (size_t i = 0; i < s->n_secrets; i++)
        ph_compose_file_ref_free(&s->secrets[i]);
    free(s->secrets);
    for (size_t i = 0; i < s->n_configs; i++)
        ph_compose_file_ref_free(&s->configs[i]);
    free(s->configs);
}
