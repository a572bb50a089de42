/* ph_compose_mounts.c - what a service sees of the host and the project:
 * ports and expose, volumes (bind, volume, tmpfs, image), tmpfs, devices,
 * secrets and configs, its networks, extra_hosts.  Each is checked where
 * it is written; references to the top level are checked once it is read.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_compose_int.h"
#include "ph_log.h"
#include "ph_util.h"

/* ---- ports ------------------------------------------------------------- */

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

static int
valid_protocol(const char *p)
{
    return strcmp(p, "tcp") == 0 || strcmp(p, "udp") == 0 || strcmp(p, "sctp") == 0;
}

/* Short syntax: [[IP:][HOST]:]CONTAINER[/PROTO], IPv6 in brackets. */
static int
parse_port(ph_ynode *n, const char *spec, ph_port *p, ph_error_t *err)
{
    char buf[256], *proto, *rest = buf, *ip = NULL, *host = NULL, *ctr, *colon;

    if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
        return ph_yaml_error(n, err, "port `%.32s...` is too long", spec);
    proto = strrchr(buf, '/');
    if (proto)
        *proto++ = '\0';
    if (proto && !valid_protocol(proto))
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
        (host && host[0] && ph_compose_dup(host, &p->host_port, err) < 0) ||
        (ip && ph_compose_dup(ip, &p->host_ip, err) < 0))
        return -1;
    return 0;
}

static int
read_port_long(ph_service *s, ph_ynode *item, ph_port *p, ph_error_t *err)
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
        if (dst == &p->protocol && !valid_protocol(p->protocol))
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
same_port(const ph_port *a, const ph_port *b)
{
    return strcmp(a->container_port, b->container_port) == 0 && strcmp(a->protocol, b->protocol) == 0 &&
           strcmp(a->host_port ? a->host_port : "", b->host_port ? b->host_port : "") == 0 &&
           strcmp(a->host_ip ? a->host_ip : "", b->host_ip ? b->host_ip : "") == 0;
}

static void
port_free(ph_port *p)
{
    free(p->host_ip);
    free(p->host_port);
    free(p->container_port);
    free(p->protocol);
}

int
ph_compose_read_ports(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
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
            if (parse_port(item, item->str, p, err) < 0)
                return -1;
        } else if (item->kind == PH_Y_MAP) {
            if (read_port_long(s, item, p, err) < 0)
                return -1;
        } else {
            return ph_yaml_error(item, err, "a port must be a string or a mapping, not a list");
        }
        /* Files merged in order may repeat a port: compose keeps one. */
        for (size_t i = 0; i + 1 < s->n_ports; i++) {
            if (same_port(&s->ports[i], p)) {
                port_free(p);
                s->n_ports--;
                break;
            }
        }
    }
    return 0;
}

/* expose: ports or ranges with an optional protocol, numbers or strings. */
int
ph_compose_read_expose(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    if (ph_yaml_strv(v, "expose", 0, 0, &s->expose, err) < 0)
        return -1;
    for (size_t i = 0; i < s->expose.n; i++) {
        char buf[64], *proto;

        snprintf(buf, sizeof buf, "%s", s->expose.v[i]);
        proto = strchr(buf, '/');
        if (proto)
            *proto++ = '\0';
        if (!valid_port_range(buf) || (proto && !valid_protocol(proto)))
            return ph_yaml_error(v->items[i], err, "`expose`: `%s` is not PORT[-PORT][/PROTOCOL]", s->expose.v[i]);
    }
    return 0;
}

/* ---- volumes ----------------------------------------------------------- */

/* What compose takes for a path rather than a volume name. */
static int
looks_like_path(const char *s)
{
    return s[0] == '/' || s[0] == '.' || s[0] == '~';
}

static ph_volume *
new_volume(ph_service *s, ph_error_t *err)
{
    ph_volume *nv = realloc(s->volumes, (s->n_volumes + 1) * sizeof *nv), *v;

    if (nv == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        return NULL;
    }
    s->volumes = nv;
    v = &s->volumes[s->n_volumes++];
    memset(v, 0, sizeof *v);
    v->create_host_path = 1;
    v->tmpfs_size = -1;
    v->tmpfs_mode = -1;
    return v;
}

/* A named volume must be declared at the top level; a bind source is made
 * absolute against the base directory of the file that wrote it. */
static int
check_source(ph_compose_loader *l, ph_service *s, ph_ynode *n, ph_volume *v, const char *source, ph_error_t *err)
{
    if (source == NULL)
        return 0;
    if (v->type == PH_MOUNT_BIND) {
        v->source = ph_compose_abs_path(ph_compose_base(l, n), source);
        return v->source ? 0 : ph_fail(err, ENOMEM, "allocate");
    }
    if (v->type == PH_MOUNT_VOLUME) {
        if (!ph_compose_valid_name(source))
            return ph_yaml_error(n, err, "`%s` is neither a path (start it with ./ or /) nor a volume name", source);
        if (ph_compose_volume(l->c, source) == NULL)
            return ph_yaml_error(n, err,
                                 "service `%s` uses volume `%s`, which the top-level `volumes:` does not declare",
                                 s->name, source);
    }
    return ph_compose_dup(source, &v->source, err);
}

/* Files merged in order may mount the same target twice: the later wins. */
static void
drop_earlier_target(ph_service *s)
{
    ph_volume *last = &s->volumes[s->n_volumes - 1];

    for (size_t i = 0; i + 1 < s->n_volumes; i++) {
        if (strcmp(s->volumes[i].target, last->target) == 0) {
            ph_volume old = s->volumes[i];

            memmove(&s->volumes[i], &s->volumes[i + 1], (s->n_volumes - i - 1) * sizeof *s->volumes);
            s->n_volumes--;
            ph_compose_volume_free(&old);
            return;
        }
    }
}

/* SRC:DST[:MODE] or DST; MODE is a comma list such as `ro,z`. */
static int
read_volume_short(ph_compose_loader *l, ph_service *s, ph_ynode *item, ph_error_t *err)
{
    static const char *const modes[] = { "ro", "rw", "z", "Z", "nocopy", "cached", "delegated", "consistent",
                                         "shared", "rshared", "slave", "rslave", "private", "rprivate" };
    const char *spec = item->str;
    char buf[PATH_MAX * 2], *f[4] = { 0 }, *save = NULL;
    int nf = 0;
    ph_volume *v;

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
    if (nf > 1 && f[0][0] == '\0')
        return ph_yaml_error(item, err, "volume `%s`: empty source", spec);
    if ((v = new_volume(s, err)) == NULL)
        return -1;
    v->type = nf > 1 && looks_like_path(f[0]) ? PH_MOUNT_BIND : PH_MOUNT_VOLUME;
    v->bind = v->type == PH_MOUNT_BIND;
    if (f[nf > 1][0] != '/')
        return ph_yaml_error(item, err, "volume target `%s` must be an absolute path", f[nf > 1]);
    if (ph_compose_dup(f[nf > 1], &v->target, err) < 0)
        return -1;
    for (char *m = nf == 3 ? strtok_r(f[2], ",", &save) : NULL; m; m = strtok_r(NULL, ",", &save)) {
        size_t i;

        for (i = 0; i < PH_ARRAY_LEN(modes) && strcmp(m, modes[i]) != 0; i++)
            ;
        if (i == PH_ARRAY_LEN(modes))
            return ph_yaml_error(item, err, "volume `%s`: unknown mode `%s`", spec, m);
        if (strcmp(m, "ro") == 0 || strcmp(m, "rw") == 0)
            v->read_only = m[1] == 'o';
        else if ((m[0] == 'z' || m[0] == 'Z') && ph_compose_dup(m, &v->selinux, err) < 0)
            return -1;
        else if (strcmp(m, "nocopy") == 0)
            v->nocopy = 1;
        else if (strstr(m, "shared") || strstr(m, "slave") || strstr(m, "private"))
            if (ph_compose_dup(m, &v->propagation, err) < 0)
                return -1;
    }
    if (check_source(l, s, item, v, nf > 1 ? f[0] : NULL, err) < 0)
        return -1;
    drop_earlier_target(s);
    return 0;
}

static int
read_volume_options(ph_service *s, ph_volume *v, ph_ynode *opts, const char *kind, ph_error_t *err)
{
    if (opts->kind != PH_Y_MAP)
        return ph_yaml_error(opts, err, "`volumes.%s` must be a mapping", kind);
    PH_YAML_FOREACH_PAIR(opts, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        long long n;
        int rc = 0;

        if (strcmp(kind, "bind") == 0 && KEY("propagation"))
            rc = ph_yaml_dup(vn, "bind.propagation", &v->propagation, err);
        else if (strcmp(kind, "bind") == 0 && KEY("create_host_path"))
            rc = ph_yaml_bool(vn, "bind.create_host_path", &v->create_host_path, err);
        else if (strcmp(kind, "bind") == 0 && KEY("selinux"))
            rc = ph_yaml_dup(vn, "bind.selinux", &v->selinux, err);
        else if (strcmp(kind, "bind") == 0 && KEY("recursive"))
            rc = ph_compose_unsupported(s, pair->key, "volumes.bind.recursive");
        else if (strcmp(kind, "volume") == 0 && KEY("nocopy"))
            rc = ph_yaml_bool(vn, "volume.nocopy", &v->nocopy, err);
        else if ((strcmp(kind, "volume") == 0 || strcmp(kind, "image") == 0) && KEY("subpath"))
            rc = ph_yaml_dup(vn, "subpath", &v->subpath, err);
        else if (strcmp(kind, "volume") == 0 && KEY("labels"))
            rc = ph_compose_unsupported(s, pair->key, "volumes.volume.labels");
        else if (strcmp(kind, "tmpfs") == 0 && KEY("size"))
            rc = ph_compose_bytes(vn, "tmpfs.size", &v->tmpfs_size, err);
        else if (strcmp(kind, "tmpfs") == 0 && KEY("mode")) {
            rc = ph_compose_int(vn, "tmpfs.mode", 0, 07777, &n, err);
            v->tmpfs_mode = (int)n;
        } else
            ph_compose_warn_unknown(pair, "volumes.", s->name);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int
read_volume_long(ph_compose_loader *l, ph_service *s, ph_ynode *item, ph_error_t *err)
{
    ph_ynode *type_node = ph_yaml_get(item, "type"), *src = NULL;
    const char *type, *source = NULL;
    ph_volume *v;

    if (type_node == NULL)
        return ph_yaml_error(item, err, "a volume in the long syntax needs `type` (bind, volume, tmpfs or image)");
    if ((type = ph_yaml_nonempty(type_node, "volumes.type", err)) == NULL)
        return -1;
    if ((v = new_volume(s, err)) == NULL)
        return -1;
    v->long_syntax = 1;
    if (strcmp(type, "bind") == 0)
        v->type = PH_MOUNT_BIND;
    else if (strcmp(type, "volume") == 0)
        v->type = PH_MOUNT_VOLUME;
    else if (strcmp(type, "tmpfs") == 0)
        v->type = PH_MOUNT_TMPFS;
    else if (strcmp(type, "image") == 0)
        v->type = PH_MOUNT_IMAGE;
    else if (strcmp(type, "npipe") == 0 || strcmp(type, "cluster") == 0)
        return ph_compose_unsupported(s, type_node, "volumes.type: npipe or cluster (Windows and Swarm only)");
    else
        return ph_yaml_error(type_node, err, "volume `type: %s`: expected bind, volume, tmpfs or image", type);
    v->bind = v->type == PH_MOUNT_BIND;
    PH_YAML_FOREACH_PAIR(item, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("source")) {
            if ((source = ph_yaml_nonempty(vn, "volumes.source", err)) == NULL)
                return -1;
            src = vn;
        } else if (KEY("target")) {
            rc = ph_yaml_dup(vn, "volumes.target", &v->target, err);
            if (rc == 0 && v->target[0] != '/')
                rc = ph_yaml_error(vn, err, "volume target `%s` must be an absolute path", v->target);
        } else if (KEY("read_only")) {
            rc = ph_yaml_bool(vn, "volumes.read_only", &v->read_only, err);
        } else if (KEY("bind") || KEY("volume") || KEY("tmpfs") || KEY("image")) {
            if (strcmp(key, type) != 0)
                rc = ph_yaml_error(pair->key, err, "`%s` options on a volume of type `%s`", key, type);
            else
                rc = read_volume_options(s, v, vn, key, err);
        } else if (!KEY("type") && !KEY("consistency")) { /* consistency: Docker Desktop for Mac only */
            ph_compose_warn_unknown(pair, "volumes.", s->name);
        }
        if (rc < 0)
            return -1;
    }
    if (v->target == NULL)
        return ph_yaml_error(item, err, "a volume in the long syntax needs `target`");
    if ((v->type == PH_MOUNT_BIND || v->type == PH_MOUNT_IMAGE) && source == NULL)
        return ph_yaml_error(item, err, "a mount of type `%s` needs `source`", type);
    if (v->type == PH_MOUNT_TMPFS && source != NULL)
        return ph_yaml_error(src, err, "a tmpfs mount has no `source`");
    if (v->type == PH_MOUNT_IMAGE ? ph_compose_dup(source, &v->source, err) < 0
                                  : check_source(l, s, src ? src : item, v, source, err) < 0)
        return -1;
    drop_earlier_target(s);
    return 0;
}

int
ph_compose_read_volumes(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
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

void
ph_compose_volume_free(ph_volume *v)
{
    free(v->source);
    free(v->target);
    free(v->propagation);
    free(v->selinux);
    free(v->subpath);
}

/* tmpfs: a path or a list of paths, each with optional `:options`. */
int
ph_compose_read_tmpfs(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    size_t first = s->tmpfs.n;

    (void)l;
    if (ph_yaml_strv(v, "tmpfs", 1, 0, &s->tmpfs, err) < 0)
        return -1;
    for (size_t i = first; i < s->tmpfs.n; i++)
        if (s->tmpfs.v[i][0] != '/')
            return ph_yaml_error(v->kind == PH_Y_SEQ ? v->items[i - first] : v, err,
                                 "`tmpfs`: `%s` must be an absolute path", s->tmpfs.v[i]);
    return 0;
}

/* ---- devices ----------------------------------------------------------- */

static int
add_device(ph_service *s, const char *src, const char *dst, const char *perms, ph_error_t *err)
{
    ph_device *nd = realloc(s->devices, (s->n_devices + 1) * sizeof *nd), *d;

    if (nd == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    s->devices = nd;
    d = &s->devices[s->n_devices++];
    d->source = strdup(src);
    d->target = strdup(dst && *dst ? dst : src);
    d->permissions = strdup(perms && *perms ? perms : "rwm");
    if (!d->source || !d->target || !d->permissions)
        return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

/* A CDI device name: vendor.com/class=name. */
static int
is_cdi(const char *s)
{
    const char *slash = strchr(s, '/'), *eq = strchr(s, '=');

    return slash && eq && slash < eq && !strchr(s, ':') && s[0] != '/';
}

static int
add_cdi(ph_service *s, const char *name, ph_error_t *err)
{
    ph_device_request *nr, *r = NULL;

    for (size_t i = 0; i < s->n_device_requests; i++)
        if (s->device_requests[i].driver && strcmp(s->device_requests[i].driver, "cdi") == 0)
            r = &s->device_requests[i];
    if (r == NULL) {
        nr = realloc(s->device_requests, (s->n_device_requests + 1) * sizeof *nr);
        if (nr == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        s->device_requests = nr;
        r = &s->device_requests[s->n_device_requests++];
        memset(r, 0, sizeof *r);
        r->count = 0;
        if ((r->driver = strdup("cdi")) == NULL)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return ph_strv_push(&r->ids, name) < 0 ? ph_fail(err, ENOMEM, "allocate") : 0;
}

int
ph_compose_read_devices(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    (void)l;
    if (v->kind != PH_Y_SEQ)
        return ph_yaml_error(v, err, "`devices` must be a list");
    PH_YAML_FOREACH_ITEM(v, it) {
        ph_ynode *item = *it;
        int rc;

        if (item->kind == PH_Y_MAP) {
            ph_ynode *src = ph_yaml_get(item, "source"), *dst = ph_yaml_get(item, "target"),
                     *perm = ph_yaml_get(item, "permissions");

            if (src == NULL || ph_yaml_nonempty(src, "devices.source", err) == NULL)
                return src ? -1 : ph_yaml_error(item, err, "a device needs `source`");
            if ((dst && ph_yaml_nonempty(dst, "devices.target", err) == NULL) ||
                (perm && ph_yaml_nonempty(perm, "devices.permissions", err) == NULL))
                return -1;
            rc = add_device(s, src->str, dst ? dst->str : NULL, perm ? perm->str : NULL, err);
        } else {
            char buf[PATH_MAX * 2], *f[3] = { 0 };
            const char *spec = ph_yaml_nonempty(item, "devices", err);
            int nf = 0;

            if (spec == NULL)
                return -1;
            if (is_cdi(spec)) {
                rc = add_cdi(s, spec, err);
            } else {
                snprintf(buf, sizeof buf, "%s", spec);
                f[nf++] = buf;
                for (char *c = buf; *c && nf < 3; c++)
                    if (*c == ':') {
                        *c = '\0';
                        f[nf++] = c + 1;
                    }
                if (buf[0] != '/' || (f[1] && f[1][0] != '/' && nf == 3) || strchr(f[nf - 1], ':'))
                    return ph_yaml_error(item, err, "`devices`: `%s` is not HOST[:CONTAINER[:PERMISSIONS]]", spec);
                if (nf == 2 && f[1][0] != '/') { /* /dev/x:rwm */
                    f[2] = f[1];
                    f[1] = NULL;
                }
                rc = add_device(s, f[0], f[1], f[2], err);
            }
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* ---- secrets and configs ---------------------------------------------- */

/* `- NAME` or `- {source, target, uid, gid, mode}`; the target defaults to
 * /run/secrets/NAME for secrets and /NAME for configs, and a relative
 * secret target goes under /run/secrets, as compose mounts them. */
int
ph_compose_read_file_refs(ph_compose_loader *l, ph_service *s, ph_ynode *v, int secrets, ph_error_t *err)
{
    const char *what = secrets ? "secrets" : "configs";
    ph_file_ref **refs = secrets ? &s->secrets : &s->configs;
    size_t *n = secrets ? &s->n_secrets : &s->n_configs;

    if (v->kind != PH_Y_SEQ)
        return ph_yaml_error(v, err, "`%s` must be a list", what);
    PH_YAML_FOREACH_ITEM(v, it) {
        ph_ynode *item = *it, *at = item;
        ph_file_ref *nr = realloc(*refs, (*n + 1) * sizeof *nr), *r;
        const char *target = NULL;
        char *t = NULL;

        if (nr == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        *refs = nr;
        r = &(*refs)[(*n)++];
        memset(r, 0, sizeof *r);
        r->mode = -1;
        if (item->kind == PH_Y_SCALAR) {
            if (ph_yaml_dup(item, what, &r->source, err) < 0)
                return -1;
        } else if (item->kind == PH_Y_MAP) {
            PH_YAML_FOREACH_PAIR(item, pair) {
                ph_ynode *vn = pair->value;
                const char *key = ph_yaml_key(pair);
                long long mode;
                int rc = 0;

                if (KEY("source")) {
                    rc = ph_yaml_dup(vn, "source", &r->source, err);
                    at = vn;
                } else if (KEY("target")) {
                    target = ph_yaml_nonempty(vn, "target", err);
                    rc = target ? 0 : -1;
                } else if (KEY("uid")) {
                    rc = ph_yaml_dup(vn, "uid", &r->uid, err);
                } else if (KEY("gid")) {
                    rc = ph_yaml_dup(vn, "gid", &r->gid, err);
                } else if (KEY("mode")) {
                    rc = ph_compose_int(vn, "mode", 0, 07777, &mode, err);
                    r->mode = (int)mode;
                } else {
                    ph_compose_warn_unknown(pair, secrets ? "secrets." : "configs.", s->name);
                }
                if (rc < 0)
                    return -1;
            }
            if (r->source == NULL)
                return ph_yaml_error(item, err, "a `%s` entry needs `source`", what);
        } else {
            return ph_yaml_error(item, err, "`%s` entries are names or mappings, not lists", what);
        }
        if ((secrets ? ph_compose_secret(l->c, r->source) : ph_compose_config(l->c, r->source)) == NULL)
            return ph_yaml_error(at, err, "service `%s` uses %s `%s`, which the top-level `%s:` does not declare",
                                 s->name, secrets ? "secret" : "config", r->source, what);
        if (target && target[0] == '/')
            t = strdup(target);
        else if (asprintf(&t, "%s/%s", secrets ? "/run/secrets" : "", target ? target : r->source) < 0)
            t = NULL;
        if (t == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        r->target = t;
    }
    return 0;
}

void
ph_compose_file_ref_free(ph_file_ref *r)
{
    free(r->source);
    free(r->target);
    free(r->uid);
    free(r->gid);
}

/* ---- networks ---------------------------------------------------------- */

static int
read_service_network(ph_service *s, ph_service_network *sn, ph_ynode *v, ph_error_t *err)
{
    long long n;

    if (ph_yaml_is_null(v))
        return 0;
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`networks.%s` must be a mapping or empty", sn->name);
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("aliases"))
            rc = ph_yaml_strv(vn, "aliases", 0, 0, &sn->aliases, err);
        else if (KEY("ipv4_address"))
            rc = ph_yaml_dup(vn, "ipv4_address", &sn->ipv4_address, err);
        else if (KEY("ipv6_address"))
            rc = ph_yaml_dup(vn, "ipv6_address", &sn->ipv6_address, err);
        else if (KEY("mac_address"))
            rc = ph_yaml_dup(vn, "mac_address", &sn->mac_address, err);
        else if (KEY("interface_name"))
            rc = ph_yaml_dup(vn, "interface_name", &sn->interface_name, err);
        else if (KEY("link_local_ips"))
            rc = ph_yaml_strv(vn, "link_local_ips", 0, 0, &sn->link_local_ips, err);
        else if (KEY("driver_opts"))
            rc = ph_yaml_kvv(vn, "driver_opts", &sn->driver_opts, err);
        else if (KEY("priority") || KEY("gw_priority")) {
            rc = ph_compose_int(vn, key, INT_MIN, INT_MAX, &n, err);
            *(KEY("priority") ? &sn->priority : &sn->gw_priority) = (int)n;
        } else
            ph_compose_warn_unknown(pair, "networks.", s->name);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* A list of names or a mapping of names to settings; ordered by priority
 * (highest first, then by name, as compose picks the primary network). */
int
ph_compose_read_networks(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    size_t n = v->kind == PH_Y_SEQ || v->kind == PH_Y_MAP ? v->n : 0;

    if (v->kind != PH_Y_SEQ && v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`networks` must be a list or a mapping");
    s->net = calloc(n ? n : 1, sizeof *s->net);
    if (s->net == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    for (size_t i = 0; i < n; i++) {
        ph_ynode *kn = v->kind == PH_Y_SEQ ? v->items[i] : v->pairs[i].key;
        ph_service_network *sn = &s->net[i];

        if (kn->kind != PH_Y_SCALAR)
            return ph_yaml_error(kn, err, "items of `networks` must be names");
        if ((sn->name = strdup(kn->str)) == NULL || ph_strv_push(&s->networks, kn->str) < 0)
            return ph_fail(err, ENOMEM, "allocate");
        if (strcmp(kn->str, "default") != 0 && ph_compose_network(l->c, kn->str) == NULL)
            return ph_yaml_error(kn, err,
                                 "service `%s` uses network `%s`, which the top-level `networks:` does not declare",
                                 s->name, kn->str);
        if (v->kind == PH_Y_MAP && read_service_network(s, sn, v->pairs[i].value, err) < 0)
            return -1;
    }
    /* Stable insertion sort: priority descending, then name. */
    for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0; j--) {
            ph_service_network *a = &s->net[j - 1], *b = &s->net[j];
            ph_service_network t;
            char *tn;

            if (a->priority > b->priority || (a->priority == b->priority && strcmp(a->name, b->name) <= 0))
                break;
            t = *a;
            *a = *b;
            *b = t;
            tn = s->networks.v[j - 1];
            s->networks.v[j - 1] = s->networks.v[j];
            s->networks.v[j] = tn;
        }
    }
    return 0;
}

void
ph_compose_service_network_free(ph_service_network *sn)
{
    free(sn->name);
    ph_strv_free(&sn->aliases);
    free(sn->ipv4_address);
    free(sn->ipv6_address);
    free(sn->mac_address);
    free(sn->interface_name);
    ph_strv_free(&sn->link_local_ips);
    ph_kvv_free(&sn->driver_opts);
}

/* ---- extra_hosts ------------------------------------------------------- */

static int
add_host(ph_strv *out, ph_ynode *at, const char *host, const char *ip, ph_error_t *err)
{
    char *line = NULL;
    size_t n = strlen(ip);
    int rc;

    if (host[0] == '\0' || n == 0)
        return ph_yaml_error(at, err, "`extra_hosts`: `%s` needs HOST and IP", host);
    if (ip[0] == '[' && ip[n - 1] == ']') { /* [::1] as the Engine wants it: bare */
        ip++;
        n -= 2;
    }
    if (asprintf(&line, "%s:%.*s", host, (int)n, ip) < 0)
        return ph_fail(err, ENOMEM, "allocate");
    rc = ph_strv_push(out, line);
    free(line);
    return rc < 0 ? ph_fail(err, ENOMEM, "allocate") : 0;
}

/* "host=ip", "host:ip" (several IPs with commas), or a mapping of hosts to
 * an IP or a list of them; the Engine takes "host:ip". */
int
ph_compose_read_extra_hosts(ph_ynode *v, const char *key, ph_strv *out, ph_error_t *err)
{
    if (v->kind == PH_Y_MAP) {
        PH_YAML_FOREACH_PAIR(v, pair) {
            ph_ynode *vn = pair->value;

            if (vn->kind == PH_Y_SEQ) {
                PH_YAML_FOREACH_ITEM(vn, it)
                    if (ph_yaml_scalar(*it, key, err) == NULL || add_host(out, *it, ph_yaml_key(pair), (*it)->str, err) < 0)
                        return -1;
            } else if (ph_yaml_scalar(vn, key, err) == NULL || add_host(out, vn, ph_yaml_key(pair), vn->str, err) < 0) {
                return -1;
            }
        }
        return 0;
    }
    if (v->kind != PH_Y_SEQ)
        return ph_yaml_error(v, err, "`%s` must be a list or a mapping", key);
    PH_YAML_FOREACH_ITEM(v, it) {
        const char *s = ph_yaml_scalar(*it, key, err), *sep;
        char *host, *ips, *save = NULL;
        int rc = 0;

        if (s == NULL)
            return -1;
        sep = strchr(s, '=');
        if (sep == NULL)
            sep = strchr(s, ':');
        if (sep == NULL)
            return ph_yaml_error(*it, err, "`%s`: `%s` has no IP (HOST=IP or HOST:IP)", key, s);
        host = strndup(s, (size_t)(sep - s));
        ips = strdup(sep + 1);
        if (host == NULL || ips == NULL)
            rc = ph_fail(err, ENOMEM, "allocate");
        for (char *ip = rc == 0 ? strtok_r(ips, ",", &save) : NULL; ip && rc == 0; ip = strtok_r(NULL, ",", &save))
            rc = add_host(out, *it, host, ip, err);
        free(host);
        free(ips);
        if (rc < 0)
            return -1;
    }
    return 0;
}
