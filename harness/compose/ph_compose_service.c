/* ph_compose_service.c - one service's mapping read into a ph_service:
 * every key checked for its type and value, errors at file:line:col,
 * unknown keys warned about (see ph_compose.h for what is kept).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_compose_int.h"
#include "ph_log.h"
#include "ph_util.h"

static int
read_build(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    s->has_build = 1;
    if (v->kind == PH_Y_SCALAR) {
        const char *ctx = ph_yaml_nonempty(v, "build", err);

        if (ctx == NULL)
            return -1;
        if ((s->build_context = ph_compose_abs_path(l->c->dir, ctx)) == NULL)
            return ph_fail(err, ENOMEM, "allocate");
    } else if (v->kind != PH_Y_MAP) {
        return ph_yaml_error(v, err, "`build` must be a path or a mapping, not a list");
    }
    if (v->kind == PH_Y_MAP) {
        PH_YAML_FOREACH_PAIR(v, pair) {
            ph_ynode *vn = pair->value;
            const char *key = ph_yaml_key(pair), *sv;
            int rc = 0;

            if (KEY("context")) {
                if ((sv = ph_yaml_nonempty(vn, "build.context", err)) == NULL)
                    return -1;
                free(s->build_context);
                s->build_context = ph_compose_abs_path(l->c->dir, sv);
                if (s->build_context == NULL)
                    rc = ph_fail(err, ENOMEM, "allocate");
            } else if (KEY("dockerfile")) {
                rc = ph_yaml_dup(vn, "build.dockerfile", &s->build_dockerfile, err);
            } else if (KEY("args")) {
                rc = ph_yaml_kvv(vn, "build.args", &s->build_args, err);
            } else {
                ph_compose_warn_unknown(pair, "build.", s->name);
            }
            if (rc < 0)
                return -1;
        }
    }
    if (s->build_context == NULL && (s->build_context = strdup(l->c->dir)) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (s->build_dockerfile == NULL && (s->build_dockerfile = strdup("Dockerfile")) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

/* "80" or "8000-8010", each 1..65535. */
static int
valid_port_range(const char *s)
{
    long lo, hi;
    char *end;

    if (!isdigit((unsigned char)*s))
        return 0;
    lo = strtol(s, &end, 10);
    hi = lo;
    if (*end == '-') {
        if (!isdigit((unsigned char)end[1]))
            return 0;
        hi = strtol(end + 1, &end, 10);
    }
    return *end == '\0' && lo >= 1 && lo <= 65535 && hi >= lo && hi <= 65535;
}

/* Short syntax: [[IP:][HOST]:]CONTAINER[/PROTO], IPv6 in brackets. */
static int
parse_port(ph_compose_loader *l, ph_ynode *n, const char *spec, ph_port *p, ph_error_t *err)
{
    char buf[256], *proto, *rest = buf, *ip = NULL, *host = NULL, *ctr, *colon;

    if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
        return ph_yaml_error(n, err, "port `%.32s...` is too long", spec);
    proto = strrchr(buf, '/');
    if (proto)
        *proto++ = '\0';
    if (proto && strcmp(proto, "tcp") != 0 && strcmp(proto, "udp") != 0 && strcmp(proto, "sctp") != 0)
        return ph_yaml_error(n, err, "port `%s`: protocol must be tcp, udp or sctp, not `%s`", spec, proto);
    if (buf[0] == '[') {
        char *close = strchr(buf, ']');

        if (close == NULL || close[1] != ':')
            return ph_yaml_error(n, err, "port `%s`: expected [IPV6]:HOST:CONTAINER", spec);
        *close = '\0';
        ip = buf + 1;
        rest = close + 2;
    }
    colon = strrchr(rest, ':');
    if (colon) {
        *colon = '\0';
        ctr = colon + 1;
        host = rest;
        if (ip == NULL && (colon = strrchr(rest, ':')) != NULL) {
            *colon = '\0';
            ip = rest;
            host = colon + 1;
            if (strchr(ip, ':'))
                return ph_yaml_error(n, err, "port `%s`: write an IPv6 address in brackets", spec);
        } else if (ip != NULL && strchr(rest, ':')) {
            return ph_yaml_error(n, err, "port `%s`: expected [IP:][HOST:]CONTAINER[/PROTO]", spec);
        }
    } else {
        ctr = rest;
        if (ip != NULL)
            return ph_yaml_error(n, err, "port `%s`: a host IP needs HOST:CONTAINER after it", spec);
    }
    if (!valid_port_range(ctr))
        return ph_yaml_error(n, err, "port `%s`: `%s` is not a port number (1-65535) or range", spec, ctr);
    if (host && host[0] != '\0' && !valid_port_range(host))
        return ph_yaml_error(n, err, "port `%s`: `%s` is not a port number (1-65535) or range", spec, host);
    if (ip && ip[0] == '\0')
        return ph_yaml_error(n, err, "port `%s`: empty host IP", spec);
    if (ph_compose_dup(ctr, &p->container_port, err) < 0 || ph_compose_dup(proto ? proto : "tcp", &p->protocol, err) < 0 ||
        (host && host[0] && ph_compose_dup(host, &p->host_port, err) < 0) || (ip && ph_compose_dup(ip, &p->host_ip, err) < 0))
        return -1;
    return 0;
}

static int
read_port_long(ph_compose_loader *l, ph_service *s, ph_ynode *item, ph_port *p, ph_error_t *err)
{
    ph_ynode *target = NULL;

    PH_YAML_FOREACH_PAIR(item, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        char **dst = NULL;

        if (KEY("target"))
            dst = &p->container_port, target = vn;
        else if (KEY("published"))
            dst = &p->host_port;
        else if (KEY("host_ip"))
            dst = &p->host_ip;
        else if (KEY("protocol"))
            dst = &p->protocol;
        else if (!KEY("mode") && !KEY("name") && !KEY("app_protocol")) /* no effect on one Engine */
            ph_compose_warn_unknown(pair, "ports.", s->name);
        if (dst && ph_yaml_dup(vn, key, dst, err) < 0)
            return -1;
        if (dst == &p->host_port && !valid_port_range(p->host_port))
            return ph_yaml_error(vn, err, "`published`: `%s` is not a port number (1-65535) or range",
                                 p->host_port);
        if (dst == &p->protocol && strcmp(p->protocol, "tcp") != 0 && strcmp(p->protocol, "udp") != 0 &&
            strcmp(p->protocol, "sctp") != 0)
            return ph_yaml_error(vn, err, "`protocol` must be tcp, udp or sctp, not `%s`", p->protocol);
    }
    if (target == NULL)
        return ph_yaml_error(item, err, "a port in the long syntax needs `target`");
    if (!valid_port_range(p->container_port))
        return ph_yaml_error(target, err, "`target`: `%s` is not a port number (1-65535)", p->container_port);
    if (p->protocol == NULL)
        return ph_compose_dup("tcp", &p->protocol, err);
    return 0;
}

static int
read_ports(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_SEQ)
        return ph_yaml_error(v, err, "`ports` must be a list");
    PH_YAML_FOREACH_ITEM(v, it) {
        ph_ynode *item = *it;
        ph_port *np = realloc(s->ports, (s->n_ports + 1) * sizeof *np), *p;

        if (np == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        s->ports = np;
        p = &s->ports[s->n_ports++];
        memset(p, 0, sizeof *p);
        if (item->kind == PH_Y_SCALAR) {
            if (parse_port(l, item, item->str, p, err) < 0)
                return -1;
        } else if (item->kind == PH_Y_MAP) {
            if (read_port_long(l, s, item, p, err) < 0)
                return -1;
        } else {
            return ph_yaml_error(item, err, "a port must be a string or a mapping, not a list");
        }
    }
    return 0;
}

/* What compose takes for a path rather than a volume name. */
static int
looks_like_path(const char *s)
{
    return s[0] == '/' || s[0] == '.' || s[0] == '~';
}

static int
add_volume(ph_compose_loader *l, ph_service *s, ph_ynode *n, const char *source, const char *target, int ro, int bind,
           ph_error_t *err)
{
    ph_volume *nv, *v;

    if (target == NULL || target[0] != '/')
        return ph_yaml_error(n, err, "volume target `%s` must be an absolute path", target ? target : "");
    if (source != NULL && !bind) {
        int declared = 0;

        if (!ph_compose_valid_name(source))
            return ph_yaml_error(n, err,
                                 "`%s` is neither a path (start it with ./ or /) nor a volume name", source);
        for (size_t i = 0; i < l->c->volumes.n; i++)
            declared |= strcmp(l->c->volumes.v[i], source) == 0;
        if (!declared)
            return ph_yaml_error(n, err,
                                 "service `%s` uses volume `%s`, which the top-level `volumes:` does not declare",
                                 s->name, source);
    }
    nv = realloc(s->volumes, (s->n_volumes + 1) * sizeof *nv);
    if (nv == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    s->volumes = nv;
    v = &s->volumes[s->n_volumes++];
    memset(v, 0, sizeof *v);
    v->bind = bind;
    v->read_only = ro;
    if ((v->target = strdup(target)) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (source != NULL) {
        v->source = bind ? ph_compose_abs_path(l->c->dir, source) : strdup(source);
        if (v->source == NULL)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

/* SRC:DST[:MODE] or DST; MODE is a comma list such as `ro,z`. */
static int
read_volume_short(ph_compose_loader *l, ph_service *s, ph_ynode *item, ph_error_t *err)
{
    static const char *const modes[] = { "ro", "rw", "z", "Z", "nocopy", "cached", "delegated", "consistent",
                                         "shared", "rshared", "slave", "rslave", "private", "rprivate" };
    const char *spec = item->str;
    char buf[PATH_MAX * 2], *f[4] = { 0 }, *save = NULL;
    int nf = 0, ro = 0;

    if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
        return ph_yaml_error(item, err, "volume `%.32s...` is too long", spec);
    f[nf++] = buf;
    for (char *c = buf; *c && nf < 4; c++)
        if (*c == ':') {
            *c = '\0';
            f[nf++] = c + 1;
        }
    if (nf > 3)
        return ph_yaml_error(item, err, "volume `%s`: expected SOURCE:TARGET[:MODE] or TARGET", spec);
    if (nf == 1)
        return add_volume(l, s, item, NULL, f[0], 0, 0, err);
    if (f[0][0] == '\0')
        return ph_yaml_error(item, err, "volume `%s`: empty source", spec);
    if (nf == 3) {
        for (char *m = strtok_r(f[2], ",", &save); m; m = strtok_r(NULL, ",", &save)) {
            size_t i;

            for (i = 0; i < PH_ARRAY_LEN(modes) && strcmp(m, modes[i]) != 0; i++)
                ;
            if (i == PH_ARRAY_LEN(modes))
                return ph_yaml_error(item, err, "volume `%s`: unknown mode `%s`", spec, m);
            if (strcmp(m, "ro") == 0)
                ro = 1;
            else if (strcmp(m, "rw") == 0)
                ro = 0;
        }
    }
    return add_volume(l, s, item, f[0], f[1], ro, looks_like_path(f[0]), err);
}

static int
read_volume_long(ph_compose_loader *l, ph_service *s, ph_ynode *item, ph_error_t *err)
{
    const char *src = NULL, *dst = NULL, *type = NULL;
    ph_ynode *type_node = NULL;
    int ro = 0;

    PH_YAML_FOREACH_PAIR(item, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);

        if (KEY("source")) {
            if ((src = ph_yaml_nonempty(vn, "volumes.source", err)) == NULL)
                return -1;
        } else if (KEY("target")) {
            if ((dst = ph_yaml_nonempty(vn, "volumes.target", err)) == NULL)
                return -1;
        } else if (KEY("type")) {
            if ((type = ph_yaml_nonempty(vn, "volumes.type", err)) == NULL)
                return -1;
            type_node = vn;
        } else if (KEY("read_only")) {
            if (ph_yaml_bool(vn, "volumes.read_only", &ro, err) < 0)
                return -1;
        } else {
            ph_compose_warn_unknown(pair, "volumes.", s->name);
        }
    }
    if (type == NULL)
        return ph_yaml_error(item, err, "a volume in the long syntax needs `type` (bind or volume)");
    if (strcmp(type, "bind") == 0) {
        if (src == NULL)
            return ph_yaml_error(item, err, "a bind mount needs `source`");
        return add_volume(l, s, item, src, dst, ro, 1, err);
    }
    if (strcmp(type, "volume") == 0)
        return add_volume(l, s, item, src, dst, ro, 0, err);
    return ph_yaml_error(type_node, err, "volume `type: %s` is not supported (bind or volume)", type);
}

static int
read_volumes(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_SEQ)
        return ph_yaml_error(v, err, "`volumes` must be a list");
    PH_YAML_FOREACH_ITEM(v, it) {
        ph_ynode *item = *it;
        int rc;

        if (item->kind == PH_Y_SCALAR)
            rc = read_volume_short(l, s, item, err);
        else if (item->kind == PH_Y_MAP)
            rc = read_volume_long(l, s, item, err);
        else
            rc = ph_yaml_error(item, err, "a volume must be a string or a mapping, not a list");
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int
read_healthcheck(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    ph_healthcheck *h = &s->healthcheck;

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
        } else if (KEY("retries")) {
            const char *sv = ph_yaml_nonempty(vn, "healthcheck.retries", err);
            char *end;
            long r;

            if (sv == NULL)
                return -1;
            errno = 0;
            r = strtol(sv, &end, 10);
            if (*end != '\0' || errno || r < 0 || r > 1000000)
                rc = ph_yaml_error(vn, err, "`healthcheck.retries` must be a number, not `%s`", sv);
            h->retries = (int)r;
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

static int
read_networks(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    if (v->kind == PH_Y_MAP) {
        PH_YAML_FOREACH_PAIR(v, pair) {
            ph_ynode *vn = pair->value;

            /* Per-network settings (aliases, ipv4_address) are not supported. */
            if (!ph_yaml_is_null(vn) && vn->kind != PH_Y_MAP)
                return ph_yaml_error(vn, err, "`networks.%s` must be a mapping or empty",
                                     ph_yaml_key(pair));
            if (ph_strv_push(&s->networks, ph_yaml_key(pair)) < 0)
                return ph_fail(err, ENOMEM, "allocate");
        }
    } else if (ph_yaml_strv(v, "networks", 0, 0, &s->networks, err) < 0) {
        return -1;
    }
    for (size_t i = 0; i < s->networks.n; i++) {
        int declared = strcmp(s->networks.v[i], "default") == 0;

        for (size_t j = 0; j < l->c->networks.n; j++)
            declared |= strcmp(l->c->networks.v[j], s->networks.v[i]) == 0;
        if (!declared)
            return ph_yaml_error(v, err,
                                 "service `%s` uses network `%s`, which the top-level `networks:` does not declare",
                                 s->name, s->networks.v[i]);
    }
    return 0;
}

static int
read_depends_on(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_strv(v, "depends_on", 0, 0, &s->depends_on, err);
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *dep = ph_yaml_key(pair);

        if (vn->kind == PH_Y_MAP) {
            PH_YAML_FOREACH_PAIR(vn, cp) {
                ph_ynode *cv = cp->value;
                const char *key = ph_yaml_key(cp), *sv;
                int b;

                if (KEY("condition")) {
                    if ((sv = ph_yaml_scalar(cv, "depends_on.condition", err)) == NULL)
                        return -1;
                    if (strcmp(sv, "service_started") != 0 && strcmp(sv, "service_healthy") != 0 &&
                        strcmp(sv, "service_completed_successfully") != 0)
                        return ph_yaml_error(cv, err,
                                             "`depends_on.%s.condition` must be service_started, service_healthy "
                                             "or service_completed_successfully, not `%s`", dep, sv);
                } else if (KEY("restart") || KEY("required")) {
                    if (ph_yaml_bool(cv, key, &b, err) < 0)
                        return -1;
                } else {
                    ph_compose_warn_unknown(cp, "depends_on.", s->name);
                }
            }
        } else if (!ph_yaml_is_null(vn)) {
            return ph_yaml_error(vn, err, "`depends_on.%s` must be a mapping (condition: ...)", dep);
        }
        if (ph_strv_push(&s->depends_on, dep) < 0)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

/* A path, a list of paths, or a list of {path, required} (compose 2.24). */
static int
read_env_files(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_kvv *out, ph_error_t *err)
{
    ph_ynode *one[1] = { v }, **start = one, **top = one + 1;

    if (v->kind == PH_Y_SEQ) {
        start = v->items;
        top = v->items + v->n;
    } else if (v->kind != PH_Y_SCALAR) {
        return ph_yaml_error(v, err, "`env_file` must be a path or a list of paths");
    }
    for (ph_ynode **it = start; it < top; it++) {
        ph_ynode *item = *it, *path_node = item;
        const char *file = NULL;
        int required = 1, rc;
        char *p;

        if (item->kind == PH_Y_MAP) {
            PH_YAML_FOREACH_PAIR(item, pair) {
                ph_ynode *vn = pair->value;
                const char *key = ph_yaml_key(pair);

                if (KEY("path")) {
                    if ((file = ph_yaml_nonempty(vn, "env_file.path", err)) == NULL)
                        return -1;
                    path_node = vn;
                } else if (KEY("required")) {
                    if (ph_yaml_bool(vn, "env_file.required", &required, err) < 0)
                        return -1;
                } else {
                    ph_compose_warn_unknown(pair, "env_file.", s->name);
                }
            }
            if (file == NULL)
                return ph_yaml_error(item, err, "an `env_file` entry needs `path`");
        } else if ((file = ph_yaml_nonempty(item, "env_file", err)) == NULL) {
            return -1;
        }
        p = ph_compose_abs_path(l->c->dir, file);
        if (p == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        rc = ph_compose_read_env_file(p, out, required, err);
        free(p);
        if (rc < 0)
            return ph_error_wrap(err, "%s:%d:%d: env_file", ph_yaml_file(path_node), path_node->line,
                                 path_node->col);
    }
    return 0;
}

/* Like compose: a letter or digit, then letters, digits, `_`, `.`, `-`. */
int
ph_compose_valid_name(const char *s)
{
    return isalnum((unsigned char)s[0]) &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == strlen(s);
}

int
ph_compose_read_service(ph_compose_loader *l, ph_service *s, ph_ynode *map, ph_ynode **depends, ph_error_t *err)
{
    ph_kvv env_file = { 0 }, env = { 0 };
    int rc = 0;

    s->stop_grace_ns = -1;
    if (map->kind != PH_Y_MAP)
        return ph_yaml_error(map, err, "service `%s` must be a mapping", s->name);
    PH_YAML_FOREACH_PAIR(map, pair) {
        ph_ynode *v = pair->value;
        const char *key = ph_yaml_key(pair), *sv;

        if (KEY("image")) {
            rc = ph_yaml_dup(v, "image", &s->image, err);
        } else if (KEY("build")) {
            rc = read_build(l, s, v, err);
        } else if (KEY("command")) {
            s->has_command = 1;
            rc = ph_yaml_strv(v, "command", 1, 1, &s->command, err);
        } else if (KEY("entrypoint")) {
            s->has_entrypoint = 1;
            rc = ph_yaml_strv(v, "entrypoint", 1, 1, &s->entrypoint, err);
        } else if (KEY("environment")) {
            rc = ph_yaml_kvv(v, "environment", &env, err);
        } else if (KEY("env_file")) {
            rc = read_env_files(l, s, v, &env_file, err);
        } else if (KEY("working_dir")) {
            rc = ph_yaml_dup(v, "working_dir", &s->working_dir, err);
            if (rc == 0 && s->working_dir[0] != '/')
                rc = ph_yaml_error(v, err, "`working_dir` must be an absolute path, not `%s`", s->working_dir);
        } else if (KEY("user")) {
            rc = ph_yaml_dup(v, "user", &s->user, err);
        } else if (KEY("ports")) {
            rc = read_ports(l, s, v, err);
        } else if (KEY("volumes")) {
            rc = read_volumes(l, s, v, err);
        } else if (KEY("networks")) {
            rc = read_networks(l, s, v, err);
        } else if (KEY("depends_on")) {
            *depends = v;
            rc = read_depends_on(l, s, v, err);
        } else if (KEY("cap_add")) {
            rc = ph_yaml_strv(v, "cap_add", 0, 0, &s->cap_add, err);
        } else if (KEY("cap_drop")) {
            rc = ph_yaml_strv(v, "cap_drop", 0, 0, &s->cap_drop, err);
        } else if (KEY("security_opt")) {
            rc = ph_yaml_strv(v, "security_opt", 0, 0, &s->security_opt, err);
        } else if (KEY("privileged")) {
            rc = ph_yaml_bool(v, "privileged", &s->privileged, err);
        } else if (KEY("stop_signal")) {
            char buf[16];
            const char *norm;

            if ((sv = ph_yaml_nonempty(v, "stop_signal", err)) == NULL)
                goto fail;
            norm = ph_signal_normalise(sv, buf);
            if (norm == NULL)
                rc = ph_yaml_error(v, err, "`stop_signal`: `%s` is not a signal", sv);
            else
                rc = ph_compose_dup(norm, &s->stop_signal, err);
        } else if (KEY("stop_grace_period")) {
            rc = ph_yaml_duration(v, "stop_grace_period", &s->stop_grace_ns, err);
        } else if (KEY("healthcheck")) {
            rc = read_healthcheck(l, s, v, err);
        } else if (KEY("labels")) {
            rc = ph_yaml_kvv(v, "labels", &s->labels, err);
            /* A label without a value is an empty label, not an unset one. */
            for (size_t i = 0; rc == 0 && i < s->labels.n; i++)
                if (s->labels.v[i].value == NULL && (s->labels.v[i].value = strdup("")) == NULL)
                    rc = ph_fail(err, ENOMEM, "allocate");
        } else if (KEY("container_name")) {
            rc = ph_yaml_dup(v, "container_name", &s->container_name, err);
        } else {
            ph_compose_warn_unknown(pair, "", s->name);
        }
        if (rc < 0)
            goto fail;
    }
    /* env_file first, then environment: the later wins. */
    for (size_t i = 0; i < env_file.n; i++)
        if (ph_kvv_set(&s->environment, env_file.v[i].key, env_file.v[i].value) < 0)
            goto oom;
    for (size_t i = 0; i < env.n; i++)
        if (ph_kvv_set(&s->environment, env.v[i].key, env.v[i].value) < 0)
            goto oom;
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
    free(s->name);
    free(s->image);
    free(s->build_context);
    free(s->build_dockerfile);
    ph_kvv_free(&s->build_args);
    ph_strv_free(&s->command);
    ph_strv_free(&s->entrypoint);
    ph_kvv_free(&s->environment);
    free(s->working_dir);
    free(s->user);
    for (size_t i = 0; i < s->n_ports; i++) {
        free(s->ports[i].host_ip);
        free(s->ports[i].host_port);
        free(s->ports[i].container_port);
        free(s->ports[i].protocol);
    }
    free(s->ports);
    for (size_t i = 0; i < s->n_volumes; i++) {
        free(s->volumes[i].source);
        free(s->volumes[i].target);
    }
    free(s->volumes);
    ph_strv_free(&s->networks);
    ph_strv_free(&s->depends_on);
    ph_strv_free(&s->cap_add);
    ph_strv_free(&s->cap_drop);
    ph_strv_free(&s->security_opt);
    free(s->stop_signal);
    ph_strv_free(&s->healthcheck.test);
    ph_kvv_free(&s->labels);
    free(s->container_name);
}

