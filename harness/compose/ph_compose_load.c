/* ph_compose_load.c - loading a compose project: the file read into a
 * YAML tree, its values interpolated from the environment and `.env`, the
 * top-level keys and every service read, references checked, the project
 * named.  Nothing is returned on error: the half-built ph_compose is freed
 * whole.
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

static const char *
lookup_cb(const char *name, void *ud)
{
    ph_compose_loader *l = ud;
    const char *v = getenv(name);

    return v ? v : ph_kvv_get(&l->dotenv, name);
}

int
ph_compose_dup(const char *s, char **dst, ph_error_t *err)
{
    char *c = strdup(s);

    if (c == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    free(*dst);
    *dst = c;
    return 0;
}

void
ph_compose_warn_unknown(const ph_ypair *pair, const char *prefix, const char *service)
{
    const char *key = ph_yaml_key(pair);

    /* x-* are extension fields: compose ignores them without a word. */
    if (strncmp(key, "x-", 2) == 0)
        return;
    ph_warn("%s:%d: unknown key `%s%s` in service `%s` (ignored)", ph_yaml_file(pair->key), pair->key->line, prefix,
            key, service);
}

/* Lexically clean an absolute path: no `.`, no `..`, no `//`.  Symlinks
 * are not resolved, as compose does not resolve them either. */
static void
clean_path(char *p)
{
    char *src = p, *dst = p;

    while (*src) {
        while (*src == '/')
            src++;
        if (*src == '\0')
            break;
        if (src[0] == '.' && (src[1] == '/' || src[1] == '\0')) {
            src++;
        } else if (src[0] == '.' && src[1] == '.' && (src[2] == '/' || src[2] == '\0')) {
            src += 2;
            while (dst > p && *--dst != '/')
                ;
        } else {
            *dst++ = '/';
            while (*src && *src != '/')
                *dst++ = *src++;
        }
    }
    if (dst == p)
        *dst++ = '/';
    *dst = '\0';
}

/* P made absolute against BASE_DIR (or $HOME for `~`), cleaned; malloc'd. */
char *
ph_compose_abs_path(const char *base_dir, const char *p)
{
    char *out = NULL;
    int rc;

    if (p[0] == '/')
        rc = asprintf(&out, "%s", p);
    else if (p[0] == '~' && (p[1] == '/' || p[1] == '\0'))
        rc = asprintf(&out, "%s/%s", getenv("HOME") ? getenv("HOME") : "/", p + 1);
    else
        rc = asprintf(&out, "%s/%s", base_dir, p);
    if (rc < 0)
        return NULL;
    clean_path(out);
    return out;
}

/* Keys are names, never templates: mark every key scalar KEY so that the
 * interpolation pass leaves it alone even when an alias makes it a value
 * elsewhere too. */
static void
mark_keys(ph_ynode *n, unsigned key, unsigned seen)
{
    if (n->kind == PH_Y_SCALAR || n->mark == seen)
        return;
    n->mark = seen;
    for (size_t i = 0; n->kind == PH_Y_SEQ && i < n->n; i++)
        mark_keys(n->items[i], key, seen);
    for (size_t i = 0; n->kind == PH_Y_MAP && i < n->n; i++) {
        n->pairs[i].key->mark = key;
        mark_keys(n->pairs[i].value, key, seen);
    }
}

/* Every scalar that is a value (not a key), once: aliases share nodes, and
 * interpolating `$$X` twice would expand it the second time. */
static int
interpolate_values(ph_compose_loader *l, ph_ynode *n, unsigned key, unsigned done, ph_error_t *err)
{
    char where[PATH_MAX + 32], *v;

    if (n->mark == done || n->mark == key)
        return 0;
    n->mark = done;
    if (n->kind == PH_Y_SEQ) {
        for (size_t i = 0; i < n->n; i++)
            if (interpolate_values(l, n->items[i], key, done, err) < 0)
                return -1;
        return 0;
    }
    if (n->kind == PH_Y_MAP) {
        for (size_t i = 0; i < n->n; i++)
            if (interpolate_values(l, n->pairs[i].value, key, done, err) < 0)
                return -1;
        return 0;
    }
    if (strchr(n->str, '$') == NULL)
        return 0;
    snprintf(where, sizeof where, "%s:%d:%d", ph_yaml_file(n), n->line, n->col);
    v = ph_interpolate(n->str, lookup_cb, l, where, err);
    if (v == NULL)
        return -1;
    free(n->str);
    n->str = v;
    n->len = strlen(v);
    return 0;
}

static int
interpolate_document(ph_compose_loader *l, ph_error_t *err)
{
    unsigned key = ph_yaml_next_mark(), seen = ph_yaml_next_mark();

    mark_keys(l->root, key, seen);
    return interpolate_values(l, l->root, key, ph_yaml_next_mark(), err);
}

void
ph_compose_free(ph_compose *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_services; i++)
        ph_compose_service_free(&c->services[i]);
    free(c->services);
    ph_strv_free(&c->volumes);
    ph_strv_free(&c->networks);
    free(c->path);
    free(c->dir);
    free(c->project);
    free(c);
}

ph_service *
ph_compose_service(ph_compose *c, const char *name)
{
    if (c == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < c->n_services; i++)
        if (strcmp(c->services[i].name, name) == 0)
            return &c->services[i];
    return NULL;
}

/* Like compose's NormalizeProjectName: lowercase, keep [a-z0-9_-], and
 * drop what comes before the first letter or digit. */
static char *
normalise_project(const char *in)
{
    char *out = malloc(strlen(in) + 1);
    size_t j = 0;

    if (out == NULL)
        return NULL;
    for (const char *p = in; *p; p++) {
        char ch = (char)tolower((unsigned char)*p);
        if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ((ch == '_' || ch == '-') && j > 0))
            out[j++] = ch;
    }
    out[j] = '\0';
    return out;
}

static int
read_top_names(ph_compose_loader *l, ph_ynode *v, const char *key, ph_strv *out, ph_error_t *err)
{
    if (ph_yaml_is_null(v))
        return 0;
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "top-level `%s` must be a mapping of names", key);
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;

        if (!ph_yaml_is_null(vn) && vn->kind != PH_Y_MAP)
            return ph_yaml_error(vn, err, "`%s.%s` must be a mapping or empty", key, ph_yaml_key(pair));
        if (ph_strv_push(out, ph_yaml_key(pair)) < 0)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

/* The node of service I's Kth depends_on entry: the list item or the map
 * key, so that errors point at the name itself. */
static ph_ynode *
depends_entry(ph_compose_loader *l, size_t i, size_t k)
{
    ph_ynode *d = l->depends[i];

    if (d->kind == PH_Y_SEQ && k < d->n)
        return d->items[k];
    if (d->kind == PH_Y_MAP && k < d->n)
        return d->pairs[k].key;
    return d;
}

/* Every depends_on entry names a service of this file, and following them
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
            if (ph_compose_service(c, dep) == NULL)
                return ph_yaml_error(at, err, "service `%s` depends on `%s`, which is not a service in this file",
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

            if (next[i] < s->depends_on.n) {
                size_t j = (size_t)(ph_compose_service(c, s->depends_on.v[next[i]++]) - c->services);

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

/* The directory of PATH, absolute (against the working directory) but
 * with symlinks kept, as compose names projects after it. */
static char *
compose_dir(const char *path, ph_error_t *err)
{
    char cwd[PATH_MAX], *abs, *slash;

    if (path[0] == '/') {
        abs = ph_compose_abs_path("/", path);
    } else {
        if (getcwd(cwd, sizeof cwd) == NULL) {
            ph_fail(err, errno, "getcwd");
            return NULL;
        }
        abs = ph_compose_abs_path(cwd, path);
    }
    if (abs == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        return NULL;
    }
    slash = strrchr(abs, '/');
    if (slash == abs)
        slash[1] = '\0';
    else
        *slash = '\0';
    return abs;
}

int
ph_compose_load(const char *path, const char *project_override, ph_compose **out, ph_error_t *err)
{
    ph_compose_loader l = { 0 };
    ph_compose *c;
    ph_ynode *root, *services = NULL, *name_node = NULL;
    char envpath[PATH_MAX + 8];
    const char *name = NULL;

    *out = NULL;
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return ph_fail(err, errno, "allocate");
    l.c = c;
    if ((c->path = strdup(path)) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto fail;
    }
    if ((c->dir = compose_dir(path, err)) == NULL)
        goto fail;
    /* .env first: its variables are needed to interpolate the file. */
    snprintf(envpath, sizeof envpath, "%s/.env", c->dir);
    if (ph_compose_read_env_file(envpath, &l.dotenv, 0, err) < 0)
        goto fail;
    if (ph_yaml_load(path, &l.root, err) < 0)
        goto fail;
    root = l.root;
    if (root->kind != PH_Y_MAP) {
        ph_yaml_error(root, err, "a compose file is a mapping with `services:`");
        goto fail;
    }
    if (interpolate_document(&l, err) < 0)
        goto fail;

    /* Top-level names first: services refer to them. */
    PH_YAML_FOREACH_PAIR(root, pair) {
        ph_ynode *v = pair->value;
        const char *key = ph_yaml_key(pair);

        if (KEY("services")) {
            services = v;
        } else if (KEY("name")) {
            if ((name = ph_yaml_nonempty(v, "name", err)) == NULL)
                goto fail;
            name_node = v;
        } else if (KEY("volumes")) {
            if (read_top_names(&l, v, "volumes", &c->volumes, err) < 0)
                goto fail;
        } else if (KEY("networks")) {
            if (read_top_names(&l, v, "networks", &c->networks, err) < 0)
                goto fail;
        } else if (KEY("version") || strncmp(key, "x-", 2) == 0) {
            /* `version` is obsolete and x-* are extensions: compose accepts both. */
        } else {
            ph_warn("%s:%d: unknown top-level key `%s` (ignored)", path, pair->key->line,
                    key);
        }
    }
    if (services == NULL) {
        ph_yaml_error(root, err, "no `services:`");
        goto fail;
    }
    if (services->kind != PH_Y_MAP || services->n == 0) {
        ph_yaml_error(services, err, "`services` must be a mapping of service names to services");
        goto fail;
    }
    {
        size_t n = services->n;

        c->services = calloc(n, sizeof *c->services);
        l.depends = calloc(n, sizeof *l.depends);
        if (c->services == NULL || l.depends == NULL) {
            ph_fail(err, ENOMEM, "allocate");
            goto fail;
        }
    }
    PH_YAML_FOREACH_PAIR(services, pair) {
        ph_ynode *kn = pair->key, *v = pair->value;
        ph_service *s = &c->services[c->n_services];

        if (!ph_compose_valid_name(ph_yaml_key(pair))) {
            ph_yaml_error(kn, err, "`%s` is not a service name (letters, digits, `_`, `.`, `-`)",
                          ph_yaml_key(pair));
            goto fail;
        }
        c->n_services++;
        s->name = strdup(ph_yaml_key(pair));
        s->line = kn->line;
        if (s->name == NULL) {
            ph_fail(err, ENOMEM, "allocate");
            goto fail;
        }
        if (ph_compose_read_service(&l, s, v, &l.depends[c->n_services - 1], err) < 0)
            goto fail;
    }
    if (check_depends(&l, err) < 0)
        goto fail;
    if (project_override)
        c->project = normalise_project(project_override);
    else if (name)
        c->project = normalise_project(name);
    else
        c->project = normalise_project(strrchr(c->dir, '/') + 1);
    if (c->project == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto fail;
    }
    if (c->project[0] == '\0') {
        if (name_node && !project_override)
            ph_yaml_error(name_node, err, "`name: %s` has no letter or digit to make a project name", name);
        else
            ph_bad_input(err, "%s: cannot make a project name from `%s` (use `name:` or -p)", path,
                         project_override ? project_override : c->dir);
        goto fail;
    }
    ph_ynode_unref(l.root);
    ph_kvv_free(&l.dotenv);
    free(l.depends);
    *out = c;
    return 0;
fail:
    ph_ynode_unref(l.root);
    ph_kvv_free(&l.dotenv);
    free(l.depends);
    ph_compose_free(c);
    return -1;
}
