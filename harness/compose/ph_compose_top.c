/* ph_compose_top.c - the merged tree's top level: networks, volumes,
 * secrets and configs (read first: services refer to them), then every
 * service, then the references between services (depends_on, links,
 * volumes_from, `service:` modes), which must exist and never come back
 * round.
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

/* `external: true`, or the legacy `external: {name: N}`. */
static int
read_external(ph_ynode *v, int *external, char **name, ph_error_t *err)
{
    if (v->kind == PH_Y_MAP) {
        ph_ynode *n = ph_yaml_get(v, "name");

        *external = 1;
        return n ? ph_yaml_dup(n, "external.name", name, err) : 0;
    }
    return ph_yaml_bool(v, "external", external, err);
}

/* A label written without a value is an empty label. */
static int
empty_labels(ph_kvv *labels, ph_error_t *err)
{
    for (size_t i = 0; i < labels->n; i++)
        if (labels->v[i].value == NULL && (labels->v[i].value = strdup("")) == NULL)
            return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

/* An unknown key under a top-level entry: `SECTION.ENTRY.KEY`. */
static void
warn_top(const ph_ypair *pair, const char *section, const char *entry)
{
    char prefix[256];

    snprintf(prefix, sizeof prefix, "%s.%s.", section, entry);
    ph_compose_warn_unknown(pair, prefix, NULL);
}

static char *
project_name(const ph_compose *c, const char *key)
{
    char *s = NULL;

    return asprintf(&s, "%s_%s", c->project, key) < 0 ? NULL : s;
}

static int
read_ipam(ph_network *n, ph_ynode *v, const char *ctx, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`networks.%s.ipam` must be a mapping", ctx);
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("driver")) {
            rc = ph_yaml_dup(vn, "ipam.driver", &n->ipam_driver, err);
        } else if (KEY("options")) {
            rc = ph_yaml_kvv(vn, "ipam.options", &n->ipam_options, err);
        } else if (KEY("config")) {
            if (vn->kind != PH_Y_SEQ)
                return ph_yaml_error(vn, err, "`ipam.config` must be a list");
            PH_YAML_FOREACH_ITEM(vn, it) {
                ph_ipam_pool *np = realloc(n->ipam, (n->n_ipam + 1) * sizeof *np), *pool;

                if (np == NULL)
                    return ph_fail(err, ENOMEM, "allocate");
                n->ipam = np;
                pool = &n->ipam[n->n_ipam++];
                memset(pool, 0, sizeof *pool);
                if ((*it)->kind != PH_Y_MAP)
                    return ph_yaml_error(*it, err, "`ipam.config` entries must be mappings");
                PH_YAML_FOREACH_PAIR(*it, cp) {
                    const char *ck = ph_yaml_key(cp);

                    if (strcmp(ck, "subnet") == 0)
                        rc = ph_yaml_dup(cp->value, "subnet", &pool->subnet, err);
                    else if (strcmp(ck, "ip_range") == 0)
                        rc = ph_yaml_dup(cp->value, "ip_range", &pool->ip_range, err);
                    else if (strcmp(ck, "gateway") == 0)
                        rc = ph_yaml_dup(cp->value, "gateway", &pool->gateway, err);
                    else if (strcmp(ck, "aux_addresses") == 0)
                        rc = ph_yaml_kvv(cp->value, "aux_addresses", &pool->aux_addresses, err);
                    else
                        warn_top(cp, "networks", ctx);
                    if (rc < 0)
                        return -1;
                }
            }
        } else {
            warn_top(pair, "networks", ctx);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The keys networks and volumes share.  *HANDLED says whether KEY was one. */
typedef struct named_common {
    char **name, **driver;
    ph_kvv *driver_opts, *labels;
    int *external;
} named_common;

static int
read_common(const ph_ypair *pair, const named_common *nc, int *handled, ph_error_t *err)
{
    ph_ynode *vn = pair->value;
    const char *key = ph_yaml_key(pair);

    *handled = 1;
    if (KEY("name"))
        return ph_yaml_dup(vn, "name", nc->name, err);
    if (KEY("driver"))
        return ph_yaml_dup(vn, "driver", nc->driver, err);
    if (KEY("driver_opts"))
        return ph_yaml_kvv(vn, "driver_opts", nc->driver_opts, err);
    if (KEY("labels"))
        return ph_yaml_kvv(vn, "labels", nc->labels, err);
    if (KEY("external"))
        return read_external(vn, nc->external, nc->name, err);
    *handled = 0;
    return 0;
}

/* Labels without a value are empty; the name is `name:`, the key for an
 * external one, else <project>_<key>. */
static int
finish_common(ph_compose_loader *l, const char *key, const named_common *nc, ph_error_t *err)
{
    if (empty_labels(nc->labels, err) < 0)
        return -1;
    if (*nc->name == NULL)
        *nc->name = *nc->external ? strdup(key) : project_name(l->c, key);
    return *nc->name ? 0 : ph_fail(err, ENOMEM, "allocate");
}

static int
read_network(ph_compose_loader *l, ph_network *n, ph_ynode *v, ph_error_t *err)
{
    named_common nc = { &n->name, &n->driver, &n->driver_opts, &n->labels, &n->external };

    n->enable_ipv4 = n->enable_ipv6 = -1;
    if (!ph_yaml_is_null(v) && v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`networks.%s` must be a mapping or empty", n->key);
    for (size_t i = 0; v->kind == PH_Y_MAP && i < v->n; i++) {
        ph_ypair *pair = &v->pairs[i];
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc, handled;

        if (ph_yaml_is_null(vn))
            continue;
        rc = read_common(pair, &nc, &handled, err);
        if (handled) {
            /* name, driver, driver_opts, labels, external: done */
        } else if (KEY("ipam")) {
            rc = read_ipam(n, vn, n->key, err);
        } else if (KEY("internal")) {
            rc = ph_yaml_bool(vn, "internal", &n->internal, err);
        } else if (KEY("attachable")) {
            rc = ph_yaml_bool(vn, "attachable", &n->attachable, err);
        } else if (KEY("enable_ipv4")) {
            rc = ph_yaml_bool(vn, "enable_ipv4", &n->enable_ipv4, err);
        } else if (KEY("enable_ipv6")) {
            rc = ph_yaml_bool(vn, "enable_ipv6", &n->enable_ipv6, err);
        } else {
            warn_top(pair, "networks", n->key);
        }
        if (rc < 0)
            return -1;
    }
    return finish_common(l, n->key, &nc, err);
}

static int
read_volume(ph_compose_loader *l, ph_named_volume *vol, ph_ynode *v, ph_error_t *err)
{
    named_common nc = { &vol->name, &vol->driver, &vol->driver_opts, &vol->labels, &vol->external };

    if (!ph_yaml_is_null(v) && v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`volumes.%s` must be a mapping or empty", vol->key);
    for (size_t i = 0; v->kind == PH_Y_MAP && i < v->n; i++) {
        int handled;

        if (ph_yaml_is_null(v->pairs[i].value))
            continue;
        if (read_common(&v->pairs[i], &nc, &handled, err) < 0)
            return -1;
        if (!handled)
            warn_top(&v->pairs[i], "volumes", vol->key);
    }
    return finish_common(l, vol->key, &nc, err);
}

/* A secret or config: `file`, `environment` or `content` (configs only). */
static int
read_file_object(ph_compose_loader *l, ph_file_object *o, ph_ynode *v, int secret, ph_error_t *err)
{
    const char *what = secret ? "secrets" : "configs";
    int sources = 0;

    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`%s.%s` must be a mapping", what, o->key);
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("file")) {
            const char *f = ph_yaml_nonempty(vn, "file", err);

            sources++;
            if (f == NULL)
                return -1;
            if ((o->file = ph_compose_abs_path(ph_compose_base(l, vn), f)) == NULL)
                rc = ph_fail(err, ENOMEM, "allocate");
        } else if (KEY("environment")) {
            sources++;
            o->has_content = 1;
            rc = ph_yaml_dup(vn, "environment", &o->environment, err);
        } else if (KEY("content")) {
            sources++;
            o->has_content = 1;
            rc = ph_yaml_scalar(vn, "content", err) ? ph_compose_dup(vn->str, &o->content, err) : -1;
        } else if (KEY("external")) {
            rc = read_external(vn, &o->external, &o->name, err);
            sources += o->external;
        } else if (KEY("name")) {
            rc = ph_yaml_dup(vn, "name", &o->name, err);
        } else if (KEY("driver") || KEY("template_driver") || KEY("driver_opts")) {
            /* Swarm's: docker compose refuses them when a service uses one. */
            rc = ph_compose_dup(key, &o->unsupported, err);
        } else if (KEY("labels")) {
            /* Swarm object labels: nothing on a container. */
        } else {
            warn_top(pair, secret ? "secrets" : "configs", o->key);
        }
        if (rc < 0)
            return -1;
    }
    if (sources != 1)
        return ph_yaml_error(v, err, "`%s.%s` needs exactly one of `file`, `environment`%s or `external`", what,
                             o->key, secret ? "" : ", `content`");
    if (o->environment) {
        const char *val = ph_kvv_get(&l->c->env, o->environment);

        if (val && ph_compose_dup(val, &o->content, err) < 0)
            return -1;
    }
    return 0;
}

/* TOP's entries into an array of ELEM-sized structs whose first field is
 * the key (char *), read one by one. */
static int
read_section(ph_compose_loader *l, ph_ynode *top, const char *what, ph_strv *keys, void **arr, size_t *n,
             size_t elem, int (*read_one)(ph_compose_loader *, void *, ph_ynode *, ph_error_t *), ph_error_t *err)
{
    if (top == NULL || ph_yaml_is_null(top))
        return 0;
    if (top->kind != PH_Y_MAP)
        return ph_yaml_error(top, err, "top-level `%s` must be a mapping of names", what);
    *arr = calloc(top->n + 1, elem);
    if (*arr == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    PH_YAML_FOREACH_PAIR(top, pair) {
        void *e = (char *)*arr + *n * elem;

        if ((*(char **)e = strdup(ph_yaml_key(pair))) == NULL || (keys && ph_strv_push(keys, ph_yaml_key(pair)) < 0))
            return ph_fail(err, ENOMEM, "allocate");
        (*n)++;
        if (read_one(l, e, pair->value, err) < 0)
            return -1;
    }
    return 0;
}

static int
read_network_cb(ph_compose_loader *l, void *e, ph_ynode *v, ph_error_t *err)
{
    return read_network(l, e, v, err);
}

static int
read_volume_cb(ph_compose_loader *l, void *e, ph_ynode *v, ph_error_t *err)
{
    return read_volume(l, e, v, err);
}

static int
read_secret_cb(ph_compose_loader *l, void *e, ph_ynode *v, ph_error_t *err)
{
    return read_file_object(l, e, v, 1, err);
}

static int
read_config_cb(ph_compose_loader *l, void *e, ph_ynode *v, ph_error_t *err)
{
    return read_file_object(l, e, v, 0, err);
}

/* The project's `default` network, when a service uses it and the top
 * level does not define it. */
static int
add_default_network(ph_compose *c, ph_error_t *err)
{
    ph_network *nn;

    if (ph_compose_network(c, "default") != NULL)
        return 0;
    nn = realloc(c->nets, (c->networks.n + 1) * sizeof *nn);
    if (nn == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    c->nets = nn;
    memset(&nn[c->networks.n], 0, sizeof *nn);
    nn[c->networks.n].enable_ipv4 = nn[c->networks.n].enable_ipv6 = -1;
    nn[c->networks.n].key = strdup("default");
    nn[c->networks.n].name = project_name(c, "default");
    if (nn[c->networks.n].key == NULL || nn[c->networks.n].name == NULL || ph_strv_push(&c->networks, "default") < 0)
        return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

/* ---- references between services --------------------------------------- */

/* "service:NAME" in a mode: NAME, else NULL. */
static const char *
service_ref(const char *mode)
{
    return mode && strncmp(mode, "service:", 8) == 0 ? mode + 8 : NULL;
}

/* links, volumes_from and `service:` modes name services that must exist,
 * and are dependencies too (compose starts them first). */
static int
check_service_refs(ph_compose_loader *l, size_t i, ph_error_t *err)
{
    ph_compose *c = l->c;
    ph_service *s = &c->services[i];
    ph_ynode *at = l->svc_nodes[i];
    const char *modes[3] = { service_ref(s->network_mode), service_ref(s->pid), service_ref(s->ipc) };
    ph_strv refs = { 0 };
    int rc = 0;

    for (size_t k = 0; k < 3; k++)
        if (modes[k] && ph_strv_push(&refs, modes[k]) < 0)
            goto oom;
    for (size_t k = 0; k < s->links.n; k++) {
        char *name = strndup(s->links.v[k], strcspn(s->links.v[k], ":"));
        int r = name ? ph_strv_push(&refs, name) : -1;

        free(name);
        if (r < 0)
            goto oom;
    }
    for (size_t k = 0; k < s->volumes_from.n; k++) {
        const char *v = s->volumes_from.v[k];
        char *name;
        int r;

        if (strncmp(v, "container:", 10) == 0)
            continue;
        if ((name = strndup(v, strcspn(v, ":"))) == NULL)
            goto oom;
        r = ph_strv_push(&refs, name);
        free(name);
        if (r < 0)
            goto oom;
    }
    for (size_t k = 0; rc == 0 && k < refs.n; k++) {
        if (ph_compose_service(c, refs.v[k]) == NULL)
            rc = ph_yaml_error(at, err, "service `%s` refers to `%s` (links, volumes_from or a `service:` mode), "
                                        "which is not a service of the project", s->name, refs.v[k]);
        else if (strcmp(refs.v[k], s->name) == 0)
            rc = ph_yaml_error(at, err, "service `%s` refers to itself", s->name);
        else
            rc = ph_compose_add_depend(s, refs.v[k], err);
    }
    ph_strv_free(&refs);
    return rc;
oom:
    ph_strv_free(&refs);
    return ph_fail(err, ENOMEM, "allocate");
}

/* The node of service I's Kth dependency: the list item or the map key,
 * so that errors point at the name itself; the service for implicit ones. */
static ph_ynode *
depends_entry(ph_compose_loader *l, size_t i, size_t k)
{
    ph_ynode *d = l->depends[i];

    if (d && d->kind == PH_Y_SEQ && k < d->n)
        return d->items[k];
    if (d && d->kind == PH_Y_MAP && k < d->n)
        return d->pairs[k].key;
    return d ? d : l->svc_nodes[i];
}

/* Every dependency names a service of the project, and following them
 * never comes back: compose refuses both, and a cycle would deadlock the
 * start order. */
static int
check_depends(ph_compose_loader *l, ph_error_t *err)
{
    ph_compose *c = l->c;
    unsigned char *colour;
    size_t *stack, *next, depth;

    for (size_t i = 0; i < c->n_services; i++) {
        ph_service *s = &c->services[i];

        for (size_t k = 0; k < s->depends_on.n; k++) {
            const char *dep = s->depends_on.v[k];
            ph_ynode *at = depends_entry(l, i, k);

            if (strcmp(dep, s->name) == 0)
                return ph_yaml_error(at, err, "service `%s` depends on itself", s->name);
            if (ph_compose_service(c, dep) == NULL && s->depends[k].required)
                return ph_yaml_error(at, err, "service `%s` depends on `%s`, which is not a service of the project",
                                     s->name, dep);
        }
    }
    /* Depth-first search, iterative: 0 unseen, 1 on the path, 2 done. */
    colour = calloc(c->n_services, 1);
    stack = calloc(c->n_services, sizeof *stack);
    next = calloc(c->n_services, sizeof *next);
    if (colour == NULL || stack == NULL || next == NULL) {
        free(colour);
        free(stack);
        free(next);
        return ph_fail(err, ENOMEM, "allocate");
    }
    for (size_t root = 0; root < c->n_services; root++) {
        if (colour[root])
            continue;
        depth = 0;
        stack[depth++] = root;
        colour[root] = 1;
        next[root] = 0;
        while (depth > 0) {
            size_t i = stack[depth - 1];
            ph_service *s = &c->services[i];
            ph_service *d;

            if (next[i] < s->depends_on.n) {
                size_t j;

                if ((d = ph_compose_service(c, s->depends_on.v[next[i]++])) == NULL)
                    continue; /* an optional dependency that is not there */
                j = (size_t)(d - c->services);
                if (colour[j] == 1) {
                    ph_yaml_error(depends_entry(l, i, next[i] - 1), err,
                                  "service `%s` depends on `%s`, which depends on it in turn (a cycle)", s->name,
                                  c->services[j].name);
                    free(colour);
                    free(stack);
                    free(next);
                    return -1;
                }
                if (colour[j] == 0) {
                    colour[j] = 1;
                    next[j] = 0;
                    stack[depth++] = j;
                }
            } else {
                colour[i] = 2;
                depth--;
            }
        }
    }
    free(colour);
    free(stack);
    free(next);
    return 0;
}

/* ---- the top level ---------------------------------------------------- */

int
ph_compose_read_top(ph_compose_loader *l, ph_ynode *root, ph_error_t *err)
{
    ph_compose *c = l->c;
    ph_ynode *services = ph_yaml_get(root, "services");

    PH_YAML_FOREACH_PAIR(root, pair) {
        const char *key = ph_yaml_key(pair);

        if (!KEY("services") && !KEY("name") && !KEY("volumes") && !KEY("networks") && !KEY("secrets") &&
            !KEY("configs") && !KEY("version") && !KEY("models") && strncmp(key, "x-", 2) != 0)
            ph_warn("%s:%d: unknown top-level key `%s` (ignored)", ph_yaml_file(pair->key), pair->key->line, key);
    }
    if (read_section(l, ph_yaml_get(root, "networks"), "networks", &c->networks, (void **)&c->nets,
                     &(size_t){ 0 }, sizeof *c->nets, read_network_cb, err) < 0 ||
        read_section(l, ph_yaml_get(root, "volumes"), "volumes", &c->volumes, (void **)&c->vols, &(size_t){ 0 },
                     sizeof *c->vols, read_volume_cb, err) < 0 ||
        read_section(l, ph_yaml_get(root, "secrets"), "secrets", NULL, (void **)&c->secrets, &c->n_secrets,
                     sizeof *c->secrets, read_secret_cb, err) < 0 ||
        read_section(l, ph_yaml_get(root, "configs"), "configs", NULL, (void **)&c->configs, &c->n_configs,
                     sizeof *c->configs, read_config_cb, err) < 0)
        return -1;
    if (services == NULL)
        return ph_yaml_error(root, err, "no `services:`");
    if (services->kind != PH_Y_MAP || services->n == 0)
        return ph_yaml_error(services, err, "`services` must be a mapping of service names to services");
    c->services = calloc(services->n, sizeof *c->services);
    l->depends = calloc(services->n, sizeof *l->depends);
    l->svc_nodes = calloc(services->n, sizeof *l->svc_nodes);
    if (c->services == NULL || l->depends == NULL || l->svc_nodes == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    PH_YAML_FOREACH_PAIR(services, pair) {
        ph_ynode *kn = pair->key;
        ph_service *s = &c->services[c->n_services];

        if (!ph_compose_valid_name(ph_yaml_key(pair)))
            return ph_yaml_error(kn, err, "`%s` is not a service name (letters, digits, `_`, `.`, `-`)",
                                 ph_yaml_key(pair));
        l->svc_nodes[c->n_services] = kn;
        c->n_services++;
        s->name = strdup(ph_yaml_key(pair));
        s->file = strdup(ph_yaml_file(kn));
        s->line = kn->line;
        if (s->name == NULL || s->file == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        if (ph_compose_read_service(l, s, pair->value, &l->depends[c->n_services - 1], err) < 0)
            return -1;
        if (s->networks.n == 0 && s->network_mode == NULL && add_default_network(c, err) < 0)
            return -1;
    }
    for (size_t i = 0; i < c->n_services; i++)
        if (check_service_refs(l, i, err) < 0)
            return -1;
    return check_depends(l, err);
}
