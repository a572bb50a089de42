/* ph_backend_engine_compose.c - a service as the Engine's container
 * configuration (see ph_backend_engine_compose.h).  The mapping follows
 * docker compose v2's create.go: each compose key to its Config or
 * HostConfig field; short volume syntax through Binds and the long syntax
 * through Mounts when it carries options Binds cannot say; every network
 * an endpoint with the container name, the service name and the aliases;
 * `service:X` and volumes_from resolved to X's running container.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_backend_engine_compose.h"
#include "ph_util.h"

static json_t *
strv_json(const ph_strv *v)
{
    json_t *a = json_array();

    for (size_t i = 0; a && i < v->n; i++)
        json_array_append_new(a, json_string(v->v[i]));
    return a;
}

/* KEY=VALUE pairs as an object; a NULL value as "". */
static json_t *
kvv_json(const ph_kvv *v)
{
    json_t *o = json_object();

    for (size_t i = 0; o && i < v->n; i++)
        json_object_set_new(o, v->v[i].key, json_string(v->v[i].value ? v->v[i].value : ""));
    return o;
}

static void
set_str(json_t *o, const char *key, const char *s)
{
    if (s != NULL)
        json_object_set_new(o, key, json_string(s));
}

static void
set_int(json_t *o, const char *key, long long v)
{
    if (v >= 0)
        json_object_set_new(o, key, json_integer(v));
}

static void
set_strv(json_t *o, const char *key, const ph_strv *v)
{
    if (v->n > 0)
        json_object_set_new(o, key, strv_json(v));
}

static void
set_kvv(json_t *o, const char *key, const ph_kvv *v)
{
    if (v->n > 0)
        json_object_set_new(o, key, kvv_json(v));
}

/* "service:X" -> "container:<X's container>". */
static int
resolve_mode(const char *mode, const ph_backend_engine_runtime *rt, const char *what, const ph_service *s, char **out,
             ph_error_t *err)
{
    const char *c;

    *out = NULL;
    if (mode == NULL)
        return 0;
    if (strncmp(mode, "service:", 8) != 0) {
        *out = strdup(mode);
        return *out ? 0 : ph_fail(err, ENOMEM, "allocate");
    }
    c = rt->container_of ? rt->container_of(rt->ud, mode + 8) : NULL;
    if (c == NULL)
        return ph_fail(err, 0, "service `%s`: `%s: %s` needs service `%s` running, and it is not", s->name, what,
                       mode, mode + 8);
    return asprintf(out, "container:%s", c) < 0 ? ph_fail(err, ENOMEM, "allocate") : 0;
}

static json_t *links_json(const ph_compose *c, const ph_service *s, const ph_backend_engine_runtime *rt);

/* ---- ports ------------------------------------------------------------- */

/* Every port of "8000-8002/udp" as "8000/udp", "8001/udp", ... */
static void
each_port(const char *range, const char *proto, void (*fn)(void *, const char *, long), void *ud)
{
    char *end;
    long lo = strtol(range, &end, 10), hi = *end == '-' ? strtol(end + 1, NULL, 10) : lo;

    for (long p = lo; p <= hi && p - lo < 65536; p++) {
        char key[32];

        snprintf(key, sizeof key, "%ld/%s", p, proto);
        fn(ud, key, p - lo);
    }
}

static void
expose_cb(void *ud, const char *key, long i)
{
    (void)i;
    json_object_set_new(ud, key, json_object());
}

typedef struct bind_ctx {
    json_t *bindings;
    const ph_port *port;
} bind_ctx;

static void
bind_cb(void *ud, const char *key, long i)
{
    bind_ctx *b = ud;
    json_t *arr = json_object_get(b->bindings, key), *one = json_object();
    char host[32] = "";

    if (arr == NULL) {
        arr = json_array();
        json_object_set_new(b->bindings, key, arr);
    }
    /* A host range maps onto the container range port by port. */
    if (b->port->host_port) {
        char *end;
        long lo = strtol(b->port->host_port, &end, 10);

        if (*end == '-' && strchr(b->port->container_port, '-') != NULL)
            snprintf(host, sizeof host, "%ld", lo + i);
        else
            snprintf(host, sizeof host, "%s", b->port->host_port);
    }
    json_object_set_new(one, "HostIp", json_string(b->port->host_ip ? b->port->host_ip : ""));
    json_object_set_new(one, "HostPort", json_string(host));
    json_array_append_new(arr, one);
}

static void
add_ports(const ph_service *s, json_t *cfg, json_t *host)
{
    json_t *exposed = json_object(), *bindings = json_object();

    for (size_t i = 0; i < s->n_ports; i++) {
        bind_ctx b = { bindings, &s->ports[i] };

        each_port(s->ports[i].container_port, s->ports[i].protocol, expose_cb, exposed);
        each_port(s->ports[i].container_port, s->ports[i].protocol, bind_cb, &b);
    }
    for (size_t i = 0; i < s->expose.n; i++) {
        char buf[64], *proto;

        snprintf(buf, sizeof buf, "%s", s->expose.v[i]);
        proto = strchr(buf, '/');
        if (proto)
            *proto++ = '\0';
        each_port(buf, proto ? proto : "tcp", expose_cb, exposed);
    }
    if (json_object_size(exposed) > 0)
        json_object_set_new(cfg, "ExposedPorts", exposed);
    else
        json_decref(exposed);
    json_object_set_new(host, "PortBindings", bindings);
}

/* ---- mounts ------------------------------------------------------------ */

/* Whether a long-syntax volume needs the Mounts API (Binds cannot say it). */
static int
needs_mount_api(const ph_volume *v)
{
    if (v->type == PH_MOUNT_TMPFS || v->type == PH_MOUNT_IMAGE)
        return 1;
    if (v->type == PH_MOUNT_BIND)
        return v->long_syntax && (!v->create_host_path || v->propagation != NULL);
    return v->subpath != NULL;
}

static json_t *
mount_json(const ph_compose *c, const ph_volume *v)
{
    json_t *m = json_object();
    ph_named_volume *nv = v->type == PH_MOUNT_VOLUME && v->source ? ph_compose_volume((ph_compose *)c, v->source) : NULL;
    static const char *const types[] = { "", "bind", "volume", "tmpfs", "image" };

    json_object_set_new(m, "Type", json_string(types[v->type]));
    set_str(m, "Source", nv ? nv->name : v->source);
    json_object_set_new(m, "Target", json_string(v->target));
    if (v->read_only)
        json_object_set_new(m, "ReadOnly", json_true());
    if (v->type == PH_MOUNT_BIND) {
        json_t *o = json_object();

        set_str(o, "Propagation", v->propagation);
        if (!v->create_host_path)
            json_object_set_new(o, "CreateMountpoint", json_false());
        json_object_set_new(m, "BindOptions", o);
    } else if (v->type == PH_MOUNT_VOLUME) {
        json_t *o = json_object();

        if (v->nocopy)
            json_object_set_new(o, "NoCopy", json_true());
        set_str(o, "Subpath", v->subpath);
        json_object_set_new(m, "VolumeOptions", o);
    } else if (v->type == PH_MOUNT_TMPFS) {
        json_t *o = json_object();

        set_int(o, "SizeBytes", v->tmpfs_size);
        set_int(o, "Mode", v->tmpfs_mode);
        json_object_set_new(m, "TmpfsOptions", o);
    } else if (v->type == PH_MOUNT_IMAGE && v->subpath) {
        json_object_set_new(m, "ImageOptions", json_pack("{s:s}", "Subpath", v->subpath));
    }
    return m;
}

/* "SRC:DST[:ro,z,rshared,nocopy]" for Binds. */
static char *
bind_string(const ph_compose *c, const ph_volume *v)
{
    ph_named_volume *nv = v->type == PH_MOUNT_VOLUME ? ph_compose_volume((ph_compose *)c, v->source) : NULL;
    char opts[128], *out = NULL;

    /* The access mode always, as compose writes it. */
    snprintf(opts, sizeof opts, ",%s", v->read_only ? "ro" : "rw");
    if (v->selinux)
        snprintf(opts + strlen(opts), sizeof opts - strlen(opts), ",%s", v->selinux);
    if (v->propagation)
        snprintf(opts + strlen(opts), sizeof opts - strlen(opts), ",%s", v->propagation);
    if (v->nocopy)
        strcat(opts, ",nocopy");
    if (asprintf(&out, "%s:%s%s%s", nv ? nv->name : v->source, v->target, opts[0] ? ":" : "",
                 opts[0] ? opts + 1 : "") < 0)
        return NULL;
    return out;
}

static int
add_mounts(const ph_compose *c, const ph_service *s, json_t *cfg, json_t *host, ph_error_t *err)
{
    json_t *binds = json_array(), *mounts = json_array(), *vols = json_object(), *tmpfs = json_object();

    for (size_t i = 0; i < s->n_volumes; i++) {
        const ph_volume *v = &s->volumes[i];

        if (v->type == PH_MOUNT_VOLUME && v->source == NULL && !needs_mount_api(v)) {
            json_object_set_new(vols, v->target, json_object());
        } else if (needs_mount_api(v)) {
            json_array_append_new(mounts, mount_json(c, v));
        } else {
            char *b = bind_string(c, v);

            if (b == NULL)
                goto oom;
            json_array_append_new(binds, json_string(b));
            free(b);
        }
    }
    /* Secrets and configs from files: read-only bind mounts. */
    for (int kind = 0; kind < 2; kind++) {
        const ph_file_ref *refs = kind ? s->configs : s->secrets;
        size_t n = kind ? s->n_configs : s->n_secrets;

        for (size_t i = 0; i < n; i++) {
            ph_file_object *o = kind ? ph_compose_config((ph_compose *)c, refs[i].source)
                                     : ph_compose_secret((ph_compose *)c, refs[i].source);

            if (o == NULL || o->has_content)
                continue;
            if (o->external || o->unsupported) {
                ph_bad_input(err, "service `%s`: %s `%s` is %s, which docker compose supports only on Swarm",
                             s->name, kind ? "config" : "secret", o->key,
                             o->external ? "external" : o->unsupported);
                goto fail;
            }
            json_array_append_new(mounts, json_pack("{s:s, s:s, s:s, s:b}", "Type", "bind", "Source", o->file,
                                                    "Target", refs[i].target, "ReadOnly", 1));
        }
    }
    for (size_t i = 0; i < s->tmpfs.n; i++) {
        const char *colon = strchr(s->tmpfs.v[i], ':');
        char *path = colon ? strndup(s->tmpfs.v[i], (size_t)(colon - s->tmpfs.v[i])) : strdup(s->tmpfs.v[i]);

        if (path == NULL)
            goto oom;
        json_object_set_new(tmpfs, path, json_string(colon ? colon + 1 : ""));
        free(path);
    }
    json_object_set_new(host, "Binds", binds);
    if (json_array_size(mounts) > 0)
        json_object_set_new(host, "Mounts", mounts);
    else
        json_decref(mounts);
    if (json_object_size(vols) > 0)
        json_object_set_new(cfg, "Volumes", vols);
    else
        json_decref(vols);
    if (json_object_size(tmpfs) > 0)
        json_object_set_new(host, "Tmpfs", tmpfs);
    else
        json_decref(tmpfs);
    return 0;
oom:
    ph_fail(err, ENOMEM, "allocate");
fail:
    json_decref(binds);
    json_decref(mounts);
    json_decref(vols);
    json_decref(tmpfs);
    return -1;
}

/* ---- resources --------------------------------------------------------- */

static void
add_resources(const ph_service *s, json_t *host)
{
    static const char *const blkio[] = { "BlkioWeightDevice", "BlkioDeviceReadBps", "BlkioDeviceReadIOps",
                                         "BlkioDeviceWriteBps", "BlkioDeviceWriteIOps" };

    set_int(host, "Memory", s->mem_limit);
    if (s->memswap_limit == -2)
        json_object_set_new(host, "MemorySwap", json_integer(-1));
    else
        set_int(host, "MemorySwap", s->memswap_limit);
    set_int(host, "MemoryReservation", s->mem_reservation);
    set_int(host, "MemorySwappiness", s->mem_swappiness);
    set_int(host, "NanoCpus", s->nano_cpus);
    set_int(host, "CpuShares", s->cpu_shares);
    set_int(host, "CpuPeriod", s->cpu_period);
    set_int(host, "CpuCount", s->cpu_count);
    set_int(host, "CpuPercent", s->cpu_percent);
    set_int(host, "CpuRealtimeRuntime", s->cpu_rt_runtime);
    set_int(host, "CpuRealtimePeriod", s->cpu_rt_period);
    set_int(host, "BlkioWeight", s->blkio_weight);
    set_int(host, "ShmSize", s->shm_size);
    /* 0 is "not set" for these, as in compose-go: -1 is a value (no limit). */
    if (s->cpu_quota != 0)
        json_object_set_new(host, "CpuQuota", json_integer(s->cpu_quota));
    if (s->pids_limit != 0)
        json_object_set_new(host, "PidsLimit", json_integer(s->pids_limit));
    set_str(host, "CpusetCpus", s->cpuset);
    set_str(host, "CgroupParent", s->cgroup_parent);
    if (s->oom_kill_disable)
        json_object_set_new(host, "OomKillDisable", json_true());
    set_strv(host, "DeviceCgroupRules", &s->device_cgroup_rules);
    for (size_t i = 0; i < s->n_blkio; i++) {
        const ph_throttle *t = &s->blkio[i];
        json_t *arr = json_object_get(host, blkio[t->kind]);

        if (arr == NULL) {
            arr = json_array();
            json_object_set_new(host, blkio[t->kind], arr);
        }
        json_array_append_new(arr, json_pack("{s:s, s:I}", "Path", t->path, t->kind == PH_BLKIO_WEIGHT ? "Weight" : "Rate",
                                             (json_int_t)t->value));
    }
    if (s->n_devices > 0) {
        json_t *d = json_array();

        for (size_t i = 0; i < s->n_devices; i++)
            json_array_append_new(d, json_pack("{s:s, s:s, s:s}", "PathOnHost", s->devices[i].source, "PathInContainer",
                                               s->devices[i].target, "CgroupPermissions", s->devices[i].permissions));
        json_object_set_new(host, "Devices", d);
    }
    if (s->n_device_requests > 0) {
        json_t *d = json_array();

        for (size_t i = 0; i < s->n_device_requests; i++) {
            const ph_device_request *r = &s->device_requests[i];
            json_t *o = json_object(), *caps = json_array();

            json_object_set_new(o, "Driver", json_string(r->driver ? r->driver : ""));
            json_object_set_new(o, "Count", json_integer(r->count));
            json_object_set_new(o, "DeviceIDs", strv_json(&r->ids));
            if (r->capabilities.n > 0)
                json_array_append_new(caps, strv_json(&r->capabilities));
            json_object_set_new(o, "Capabilities", caps);
            json_object_set_new(o, "Options", kvv_json(&r->options));
            json_array_append_new(d, o);
        }
        json_object_set_new(host, "DeviceRequests", d);
    }
    if (s->n_ulimits > 0) {
        json_t *u = json_array();

        for (size_t i = 0; i < s->n_ulimits; i++)
            json_array_append_new(u, json_pack("{s:s, s:I, s:I}", "Name", s->ulimits[i].name, "Soft",
                                               (json_int_t)s->ulimits[i].soft, "Hard", (json_int_t)s->ulimits[i].hard));
        json_object_set_new(host, "Ulimits", u);
    }
}

/* ---- networks ---------------------------------------------------------- */

json_t *
ph_backend_engine_compose_endpoint(const ph_compose *c, const ph_service *s, size_t i,
                                   const ph_backend_engine_runtime *rt)
{
    const ph_service_network *sn = i < s->networks.n && s->net ? &s->net[i] : NULL;
    json_t *ep = json_object(), *aliases = json_array();

    if (rt->container_name)
        json_array_append_new(aliases, json_string(rt->container_name));
    json_array_append_new(aliases, json_string(s->name));
    for (size_t k = 0; sn && k < sn->aliases.n; k++)
        json_array_append_new(aliases, json_string(sn->aliases.v[k]));
    json_object_set_new(ep, "Aliases", aliases);
    if (s->links.n || s->external_links.n)
        json_object_set_new(ep, "Links", links_json(c, s, rt));
    if (sn && (sn->ipv4_address || sn->ipv6_address || sn->link_local_ips.n)) {
        json_t *ipam = json_object();

        set_str(ipam, "IPv4Address", sn->ipv4_address);
        set_str(ipam, "IPv6Address", sn->ipv6_address);
        set_strv(ipam, "LinkLocalIPs", &sn->link_local_ips);
        json_object_set_new(ep, "IPAMConfig", ipam);
    }
    if (sn && sn->mac_address)
        set_str(ep, "MacAddress", sn->mac_address);
    else if (i == 0 && rt->mac_in_endpoint)
        set_str(ep, "MacAddress", s->mac_address);
    if (sn && (sn->driver_opts.n || sn->interface_name)) {
        json_t *o = kvv_json(&sn->driver_opts);

        /* interface_name is the endpoint's driver option, as compose sends it. */
        if (sn->interface_name)
            json_object_set_new(o, "com.docker.network.endpoint.ifname", json_string(sn->interface_name));
        json_object_set_new(ep, "DriverOpts", o);
    }
    if (sn && sn->gw_priority)
        json_object_set_new(ep, "GwPriority", json_integer(sn->gw_priority));
    return ep;
}

static int
add_network(const ph_compose *c, const ph_service *s, const ph_backend_engine_runtime *rt, json_t *cfg, json_t *host,
            ph_error_t *err)
{
    json_t *eps;
    char *mode = NULL;

    if (s->network_mode) {
        if (resolve_mode(s->network_mode, rt, "network_mode", s, &mode, err) < 0)
            return -1;
        json_object_set_new(host, "NetworkMode", json_string(mode));
        free(mode);
        return 0;
    }
    eps = json_object();
    for (size_t i = 0; i < (s->networks.n ? s->networks.n : 1); i++) {
        const char *key = s->networks.n ? s->networks.v[i] : "default";
        ph_network *n = ph_compose_network((ph_compose *)c, key);
        const char *name = n ? n->name : key;

        if (i == 0)
            json_object_set_new(host, "NetworkMode", json_string(name));
        if (i == 0 || rt->all_endpoints)
            json_object_set_new(eps, name, ph_backend_engine_compose_endpoint(c, s, i, rt));
    }
    json_object_set_new(cfg, "NetworkingConfig", json_pack("{s:o}", "EndpointsConfig", eps));
    return 0;
}

/* ---- the configuration ------------------------------------------------- */

static json_t *
healthcheck_json(const ph_healthcheck *h)
{
    json_t *hc = json_object();

    if (h->disable)
        json_object_set_new(hc, "Test", json_pack("[s]", "NONE"));
    else if (h->test.n > 0)
        json_object_set_new(hc, "Test", strv_json(&h->test));
    if (h->interval_ns)
        json_object_set_new(hc, "Interval", json_integer(h->interval_ns));
    if (h->timeout_ns)
        json_object_set_new(hc, "Timeout", json_integer(h->timeout_ns));
    if (h->start_period_ns)
        json_object_set_new(hc, "StartPeriod", json_integer(h->start_period_ns));
    if (h->start_interval_ns)
        json_object_set_new(hc, "StartInterval", json_integer(h->start_interval_ns));
    if (h->retries)
        json_object_set_new(hc, "Retries", json_integer(h->retries));
    return hc;
}

static json_t *
restart_json(const char *restart)
{
    const char *colon = restart ? strchr(restart, ':') : NULL;
    char name[32];

    snprintf(name, sizeof name, "%.*s", colon ? (int)(colon - restart) : 31, restart ? restart : "no");
    return json_pack("{s:s, s:i}", "Name", name, "MaximumRetryCount", colon ? atoi(colon + 1) : 0);
}

/* volumes_from: "service[:mode]" to that service's container. */
static int
add_volumes_from(const ph_service *s, const ph_backend_engine_runtime *rt, json_t *host, ph_error_t *err)
{
    json_t *vf = json_array();

    for (size_t i = 0; i < s->volumes_from.n; i++) {
        const char *v = s->volumes_from.v[i], *colon;
        char *name, *line = NULL;
        const char *ctr;

        if (strncmp(v, "container:", 10) == 0) {
            json_array_append_new(vf, json_string(v + 10));
            continue;
        }
        colon = strchr(v, ':');
        name = colon ? strndup(v, (size_t)(colon - v)) : strdup(v);
        ctr = name && rt->container_of ? rt->container_of(rt->ud, name) : NULL;
        if (ctr == NULL) {
            json_decref(vf);
            ph_fail(err, name ? 0 : ENOMEM, "service `%s`: `volumes_from: %s` needs service `%s` running, and it is not",
                    s->name, v, name ? name : "");
            free(name);
            return -1;
        }
        if (asprintf(&line, "%s%s", ctr, colon ? colon : "") >= 0)
            json_array_append_new(vf, json_string(line));
        free(line);
        free(name);
    }
    if (json_array_size(vf) > 0)
        json_object_set_new(host, "VolumesFrom", vf);
    else
        json_decref(vf);
    return 0;
}

/* links, as compose v2's getLinks: the linked container under the link's
 * name, SERVICE-1 and PROJECT-SERVICE-1; external_links as written. */
static json_t *
links_json(const ph_compose *c, const ph_service *s, const ph_backend_engine_runtime *rt)
{
    json_t *links = json_array();

    for (size_t i = 0; i < s->links.n; i++) {
        const char *l = s->links.v[i], *colon = strchr(l, ':');
        char *svc = colon ? strndup(l, (size_t)(colon - l)) : strdup(l), *line = NULL;
        const char *ctr = svc && rt->container_of ? rt->container_of(rt->ud, svc) : NULL;

        if (ctr && asprintf(&line, "%s:%s", ctr, colon ? colon + 1 : svc) >= 0) {
            json_array_append_new(links, json_string(line));
            free(line);
            if (asprintf(&line, "%s:%s-1", ctr, svc) >= 0)
                json_array_append_new(links, json_string(line));
            free(line);
            if (asprintf(&line, "%s:%s-%s-1", ctr, c->project, svc) >= 0)
                json_array_append_new(links, json_string(line));
        }
        free(line);
        free(svc);
    }
    for (size_t i = 0; i < s->external_links.n; i++) {
        const char *l = s->external_links.v[i];
        char *line = NULL;

        if (strchr(l, ':') == NULL && asprintf(&line, "%s:%s", l, l) >= 0)
            json_array_append_new(links, json_string(line));
        else if (strchr(l, ':') != NULL)
            json_array_append_new(links, json_string(l));
        free(line);
    }
    return links;
}

json_t *
ph_backend_engine_compose_config(const ph_compose *c, const ph_service *s, const ph_backend_engine_runtime *rt,
                                 ph_error_t *err)
{
    json_t *cfg = json_object(), *host = json_object(), *env = json_array();
    char *mode = NULL;

    if (cfg == NULL || host == NULL || env == NULL) {
        json_decref(cfg);
        json_decref(host);
        json_decref(env);
        ph_fail(err, ENOMEM, "build the container configuration");
        return NULL;
    }
    json_object_set_new(cfg, "HostConfig", host);
    json_object_set_new(cfg, "Image", json_string(rt->image));
    if (s->has_entrypoint)
        json_object_set_new(cfg, "Entrypoint", strv_json(&s->entrypoint));
    if (s->has_command)
        json_object_set_new(cfg, "Cmd", strv_json(&s->command));
    /* A variable without a value goes as `KEY`, as compose sends it: unset
     * in the container, whatever the image says. */
    for (size_t i = 0; i < s->environment.n; i++) {
        const ph_kv *kv = &s->environment.v[i];
        char *line = NULL;

        if (kv->value == NULL)
            json_array_append_new(env, json_string(kv->key));
        else if (asprintf(&line, "%s=%s", kv->key, kv->value) >= 0)
            json_array_append_new(env, json_string(line));
        free(line);
    }
    json_object_set_new(cfg, "Env", env);
    set_str(cfg, "WorkingDir", s->working_dir);
    set_str(cfg, "User", s->user);
    set_str(cfg, "Hostname", s->hostname);
    set_str(cfg, "Domainname", s->domainname);
    if (!rt->mac_in_endpoint || s->network_mode)
        set_str(cfg, "MacAddress", s->mac_address);
    json_object_set_new(cfg, "Labels", kvv_json(&s->labels));
    set_str(cfg, "StopSignal", s->stop_signal);
    if (s->stop_grace_ns >= 0)
        json_object_set_new(cfg, "StopTimeout", json_integer((s->stop_grace_ns + 999999999) / 1000000000));
    if (s->healthcheck.present)
        json_object_set_new(cfg, "Healthcheck", healthcheck_json(&s->healthcheck));
    if (s->tty)
        json_object_set_new(cfg, "Tty", json_true());
    if (s->stdin_open)
        json_object_set_new(cfg, "OpenStdin", json_true());
    json_object_set_new(cfg, "AttachStdout", json_true());
    json_object_set_new(cfg, "AttachStderr", json_true());

    add_ports(s, cfg, host);
    if (add_mounts(c, s, cfg, host, err) < 0 || add_network(c, s, rt, cfg, host, err) < 0 ||
        add_volumes_from(s, rt, host, err) < 0)
        goto fail;
    if (s->links.n || s->external_links.n)
        json_object_set_new(host, "Links", links_json(c, s, rt));
    add_resources(s, host);
    json_object_set_new(host, "CapAdd", strv_json(&s->cap_add));
    json_object_set_new(host, "CapDrop", strv_json(&s->cap_drop));
    json_object_set_new(host, "SecurityOpt", strv_json(&s->security_opt));
    json_object_set_new(host, "Privileged", json_boolean(s->privileged));
    if (s->read_only)
        json_object_set_new(host, "ReadonlyRootfs", json_true());
    if (s->has_init)
        json_object_set_new(host, "Init", json_boolean(s->init));
    json_object_set_new(host, "RestartPolicy", restart_json(s->restart));
    set_kvv(host, "Sysctls", &s->sysctls);
    set_kvv(host, "StorageOpt", &s->storage_opt);
    set_kvv(host, "Annotations", &s->annotations);
    set_strv(host, "Dns", &s->dns);
    set_strv(host, "DnsSearch", &s->dns_search);
    set_strv(host, "DnsOptions", &s->dns_opt);
    set_strv(host, "ExtraHosts", &s->extra_hosts);
    set_strv(host, "GroupAdd", &s->group_add);
    set_str(host, "UsernsMode", s->userns_mode);
    set_str(host, "UTSMode", s->uts);
    set_str(host, "CgroupnsMode", s->cgroup);
    set_str(host, "Isolation", s->isolation);
    set_str(host, "Runtime", s->runtime);
    if (s->has_oom_score_adj)
        json_object_set_new(host, "OomScoreAdj", json_integer(s->oom_score_adj));
    if (s->logging_driver || s->logging_options.n) {
        json_t *lc = json_object();

        json_object_set_new(lc, "Type", json_string(s->logging_driver ? s->logging_driver : ""));
        json_object_set_new(lc, "Config", kvv_json(&s->logging_options));
        json_object_set_new(host, "LogConfig", lc);
    }
    if (resolve_mode(s->pid, rt, "pid", s, &mode, err) < 0)
        goto fail;
    set_str(host, "PidMode", mode);
    free(mode);
    if (resolve_mode(s->ipc, rt, "ipc", s, &mode, err) < 0)
        goto fail;
    set_str(host, "IpcMode", mode);
    free(mode);
    return cfg;
fail:
    json_decref(cfg);
    return NULL;
}

/* ---- networks, volumes, files ------------------------------------------ */

static json_t *
labels_with(const ph_kvv *own, json_t *extra)
{
    json_t *l = kvv_json(own);

    if (extra)
        json_object_update(l, extra);
    return l;
}

json_t *
ph_backend_engine_compose_network(const ph_compose *c, const ph_network *n, json_t *labels)
{
    json_t *b = json_object();

    (void)c;
    json_object_set_new(b, "Name", json_string(n->name));
    json_object_set_new(b, "CheckDuplicate", json_true());
    set_str(b, "Driver", n->driver);
    set_kvv(b, "Options", &n->driver_opts);
    if (n->internal)
        json_object_set_new(b, "Internal", json_true());
    if (n->attachable)
        json_object_set_new(b, "Attachable", json_true());
    if (n->enable_ipv4 >= 0)
        json_object_set_new(b, "EnableIPv4", json_boolean(n->enable_ipv4));
    if (n->enable_ipv6 >= 0)
        json_object_set_new(b, "EnableIPv6", json_boolean(n->enable_ipv6));
    if (n->ipam_driver || n->n_ipam || n->ipam_options.n) {
        json_t *ipam = json_object(), *cfgs = json_array();

        set_str(ipam, "Driver", n->ipam_driver);
        set_kvv(ipam, "Options", &n->ipam_options);
        for (size_t i = 0; i < n->n_ipam; i++) {
            json_t *p = json_object();

            set_str(p, "Subnet", n->ipam[i].subnet);
            set_str(p, "IPRange", n->ipam[i].ip_range);
            set_str(p, "Gateway", n->ipam[i].gateway);
            set_kvv(p, "AuxiliaryAddresses", &n->ipam[i].aux_addresses);
            json_array_append_new(cfgs, p);
        }
        json_object_set_new(ipam, "Config", cfgs);
        json_object_set_new(b, "IPAM", ipam);
    }
    json_object_set_new(b, "Labels", labels_with(&n->labels, labels));
    return b;
}

json_t *
ph_backend_engine_compose_volume(const ph_compose *c, const ph_named_volume *v, json_t *labels)
{
    json_t *b = json_object();

    (void)c;
    json_object_set_new(b, "Name", json_string(v->name));
    set_str(b, "Driver", v->driver);
    set_kvv(b, "DriverOpts", &v->driver_opts);
    json_object_set_new(b, "Labels", labels_with(&v->labels, labels));
    return b;
}

int
ph_backend_engine_compose_files(const ph_compose *c, const ph_service *s, ph_backend_engine_file **out, size_t *n,
                                ph_error_t *err)
{
    ph_backend_engine_file *files = calloc(s->n_secrets + s->n_configs + 1, sizeof *files);

    *out = NULL;
    *n = 0;
    if (files == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    for (int kind = 0; kind < 2; kind++) {
        const ph_file_ref *refs = kind ? s->configs : s->secrets;
        size_t nr = kind ? s->n_configs : s->n_secrets;

        for (size_t i = 0; i < nr; i++) {
            ph_file_object *o = kind ? ph_compose_config((ph_compose *)c, refs[i].source)
                                     : ph_compose_secret((ph_compose *)c, refs[i].source);
            ph_backend_engine_file *f;

            if (o == NULL || !o->has_content)
                continue;
            if (o->content == NULL) {
                free(files);
                return ph_bad_input(err, "service `%s`: %s `%s` comes from the variable %s, which is not set",
                                    s->name, kind ? "config" : "secret", o->key, o->environment);
            }
            if (s->read_only) {
                free(files);
                return ph_bad_input(err, "service `%s` is read_only: %s `%s` can only come from a `file`", s->name,
                                    kind ? "config" : "secret", o->key);
            }
            f = &files[(*n)++];
            f->target = refs[i].target;
            f->content = o->content;
            f->uid = refs[i].uid;
            f->gid = refs[i].gid;
            f->mode = refs[i].mode >= 0 ? refs[i].mode : 0444;
        }
    }
    *out = files;
    return 0;
}
