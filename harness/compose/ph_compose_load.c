/* ph_compose_load.c - a project's files into one tree, then its top level.
 *
 * Each file is read as YAML documents (already parsed by the caller for
 * the main files, so the project's name could be found first).  Each
 * document, in order: its values are interpolated from the environment it
 * was loaded with (never its keys); its `include` entries are loaded as
 * projects of their own (own directory, own env files) and their services,
 * networks, volumes, secrets and configs imported, a local definition
 * merged over an imported one; its services' `extends` are resolved (the
 * base from the same document or from `file:`, itself extended first) and
 * merged under the service; then the document is merged onto the project
 * so far (ph_compose_merge).
 *
 * Then the top level is read: networks, volumes, secrets and configs
 * first, since services refer to them, then each service.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_compose_int.h"
#include "ph_log.h"
#include "ph_util.h"

#define INCLUDE_MAX_DEPTH 16
#define EXTENDS_MAX_DEPTH 32

/* ---- interpolation ----------------------------------------------------- */

static const char *
env_lookup(const char *name, void *ud)
{
    return ph_kvv_get(ud, name);
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
interpolate_values(ph_ynode *n, const ph_kvv *env, unsigned key, unsigned done, ph_error_t *err)
{
    char where[PATH_MAX + 32], *v;

    if (n->mark == done || n->mark == key)
        return 0;
    n->mark = done;
    if (n->kind == PH_Y_SEQ) {
        for (size_t i = 0; i < n->n; i++)
            if (interpolate_values(n->items[i], env, key, done, err) < 0)
                return -1;
        return 0;
    }
    if (n->kind == PH_Y_MAP) {
        for (size_t i = 0; i < n->n; i++)
            if (interpolate_values(n->pairs[i].value, env, key, done, err) < 0)
                return -1;
        return 0;
    }
    if (strchr(n->str, '$') == NULL)
        return 0;
    snprintf(where, sizeof where, "%s:%d:%d", ph_yaml_file(n), n->line, n->col);
    v = ph_interpolate(n->str, env_lookup, (void *)env, where, err);
    if (v == NULL)
        return -1;
    free(n->str);
    n->str = v;
    n->len = strlen(v);
    return 0;
}

int
ph_compose_interpolate(ph_ynode *root, const ph_kvv *env, ph_error_t *err)
{
    unsigned key = ph_yaml_next_mark(), seen = ph_yaml_next_mark();

    mark_keys(root, key, seen);
    return interpolate_values(root, env, key, ph_yaml_next_mark(), err);
}

/* ---- extends ----------------------------------------------------------- */

typedef struct ext_frame {
    const char *file, *service;
} ext_frame;

typedef struct ext_stack {
    ext_frame f[EXTENDS_MAX_DEPTH];
    size_t n;
} ext_stack;

static int resolve_extends(ph_compose_loader *l, ph_ynode *services, const char *name, const ph_kvv *env,
                           ext_stack *st, ph_ynode **out, ph_error_t *err);

/* The services mapping of FILE (relative to the extending file's base),
 * loaded and interpolated with ENV, its paths relative to its own dir. */
static int
load_extends_file(ph_compose_loader *l, ph_ynode *at, const char *file, const ph_kvv *env, ph_ynode **services,
                  ph_error_t *err)
{
    char *path = ph_compose_abs_path(ph_compose_base(l, at), file), *dir = NULL;
    ph_ynode *root = NULL;
    int rc = -1;

    *services = NULL;
    if (path == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (ph_yaml_load(path, &root, err) < 0) {
        ph_error_wrap(err, "%s:%d:%d: extends", ph_yaml_file(at), at->line, at->col);
        goto out;
    }
    dir = strdup(path);
    if (dir == NULL || ph_yaml_set_base(root, (*strrchr(dir, '/') = '\0', dir[0] ? dir : "/")) < 0) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    if (root->kind != PH_Y_MAP || ph_compose_interpolate(root, env, err) < 0) {
        if (root->kind != PH_Y_MAP)
            ph_yaml_error(root, err, "a compose file is a mapping");
        goto out;
    }
    *services = ph_ynode_ref(ph_yaml_get(root, "services"));
    if (*services == NULL || (*services)->kind != PH_Y_MAP) {
        ph_yaml_error(at, err, "`extends`: `%s` has no `services:` mapping", file);
        goto out;
    }
    rc = 0;
out:
    free(path);
    free(dir);
    ph_ynode_unref(root);
    if (rc < 0) {
        ph_ynode_unref(*services);
        *services = NULL;
    }
    return rc;
}

/* Service NAME of SERVICES with its `extends` resolved: *OUT is a new
 * reference (the node itself when it extends nothing). */
static int
resolve_extends(ph_compose_loader *l, ph_ynode *services, const char *name, const ph_kvv *env, ext_stack *st,
                ph_ynode **out, ph_error_t *err)
{
    ph_ynode *svc = ph_yaml_get(services, name), *ext, *ref_node, *file_node = NULL, *base_map = services;
    ph_ynode *base = NULL, *merged = NULL, *without = NULL;
    const char *ref, *file = ph_yaml_file(svc);
    int rc = -1;

    *out = NULL;
    if (svc->kind != PH_Y_MAP || (ext = ph_yaml_get(svc, "extends")) == NULL) {
        *out = ph_ynode_ref(svc);
        return 0;
    }
    ref_node = ext;
    if (ext->kind == PH_Y_MAP) {
        ref_node = ph_yaml_get(ext, "service");
        file_node = ph_yaml_get(ext, "file");
        if (ref_node == NULL)
            return ph_yaml_error(ext, err, "`extends` needs `service`");
        PH_YAML_FOREACH_PAIR(ext, pair)
            if (strcmp(ph_yaml_key(pair), "service") != 0 && strcmp(ph_yaml_key(pair), "file") != 0)
                ph_compose_warn_unknown(pair, "extends.", name);
    }
    if ((ref = ph_yaml_nonempty(ref_node, "extends.service", err)) == NULL)
        return -1;
    if (file_node && ph_yaml_nonempty(file_node, "extends.file", err) == NULL)
        return -1;
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->f[i].service, name) == 0 && strcmp(st->f[i].file, file) == 0)
            return ph_yaml_error(ref_node, err, "`extends` comes back to service `%s` of %s (a cycle)", name, file);
    if (st->n == EXTENDS_MAX_DEPTH)
        return ph_yaml_error(ref_node, err, "`extends` chains more than %d services", EXTENDS_MAX_DEPTH);
    st->f[st->n].file = file;
    st->f[st->n].service = name;
    st->n++;
    if (file_node && load_extends_file(l, file_node, file_node->str, env, &base_map, err) < 0)
        goto out;
    if (ph_yaml_get(base_map, ref) == NULL) {
        ph_yaml_error(ref_node, err, "`extends`: no service `%s` in %s", ref,
                      file_node ? file_node->str : ph_yaml_file(services));
        goto out;
    }
    if (resolve_extends(l, base_map, ref, env, st, &base, err) < 0)
        goto out;
    if (base->kind != PH_Y_MAP) {
        ph_yaml_error(base, err, "service `%s` must be a mapping", ref);
        goto out;
    }
    merged = ph_compose_merge(base, svc, "services.x", err);
    if (merged == NULL)
        goto out;
    /* The result extends nothing more. */
    if ((without = ph_ynode_new(PH_Y_MAP, svc)) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    PH_YAML_FOREACH_PAIR(merged, pair) {
        if (strcmp(ph_yaml_key(pair), "extends") == 0)
            continue;
        if (ph_ynode_put(without, ph_ynode_ref(pair->key), ph_ynode_ref(pair->value)) < 0) {
            ph_fail(err, ENOMEM, "allocate");
            goto out;
        }
    }
    *out = without;
    without = NULL;
    rc = 0;
out:
    st->n--;
    if (base_map != services)
        ph_ynode_unref(base_map);
    ph_ynode_unref(base);
    ph_ynode_unref(merged);
    ph_ynode_unref(without);
    return rc;
}

/* ROOT with every service's `extends` resolved; *OUT a new reference. */
static int
apply_extends(ph_compose_loader *l, ph_ynode *root, const ph_kvv *env, ph_ynode **out, ph_error_t *err)
{
    ph_ynode *services = ph_yaml_get(root, "services"), *ns = NULL, *nr = NULL;
    int any = 0;

    *out = NULL;
    if (services == NULL || services->kind != PH_Y_MAP) {
        *out = ph_ynode_ref(root);
        return 0;
    }
    PH_YAML_FOREACH_PAIR(services, pair)
        any |= pair->value->kind == PH_Y_MAP && ph_yaml_get(pair->value, "extends") != NULL;
    if (!any) {
        *out = ph_ynode_ref(root);
        return 0;
    }
    if ((ns = ph_ynode_new(PH_Y_MAP, services)) == NULL || (nr = ph_ynode_new(PH_Y_MAP, root)) == NULL)
        goto oom;
    PH_YAML_FOREACH_PAIR(services, pair) {
        ext_stack st = { .n = 0 };
        ph_ynode *svc = NULL;

        if (resolve_extends(l, services, ph_yaml_key(pair), env, &st, &svc, err) < 0)
            goto fail;
        if (ph_ynode_put(ns, ph_ynode_ref(pair->key), svc) < 0)
            goto oom;
    }
    PH_YAML_FOREACH_PAIR(root, pair) {
        ph_ynode *v = pair->value == services ? ph_ynode_ref(ns) : ph_ynode_ref(pair->value);

        if (ph_ynode_put(nr, ph_ynode_ref(pair->key), v) < 0)
            goto oom;
    }
    ph_ynode_unref(ns);
    *out = nr;
    return 0;
oom:
    ph_fail(err, ENOMEM, "allocate");
fail:
    ph_ynode_unref(ns);
    ph_ynode_unref(nr);
    return -1;
}

/* ---- include ----------------------------------------------------------- */

/* One `include` entry: its files loaded as a project of their own. */
static int
load_include(ph_compose_loader *l, ph_ynode *entry, const ph_kvv *env, ph_ynode **out, ph_error_t *err)
{
    ph_ynode *paths = entry, *pdir = NULL, *envf = NULL;
    ph_strv files = { 0 }, env_files = { 0 };
    ph_kvv inc_env = { 0 };
    char *dir = NULL;
    const char *base = ph_compose_base(l, entry);
    int rc = -1;

    *out = NULL;
    if (entry->kind == PH_Y_MAP) {
        paths = ph_yaml_get(entry, "path");
        pdir = ph_yaml_get(entry, "project_directory");
        envf = ph_yaml_get(entry, "env_file");
        if (paths == NULL)
            return ph_yaml_error(entry, err, "an `include` entry needs `path`");
        PH_YAML_FOREACH_PAIR(entry, pair)
            if (strcmp(ph_yaml_key(pair), "path") && strcmp(ph_yaml_key(pair), "project_directory") &&
                strcmp(ph_yaml_key(pair), "env_file"))
                ph_compose_warn_unknown(pair, "include.", NULL);
    }
    if (ph_yaml_strv(paths, "include.path", 1, 0, &files, err) < 0 ||
        (envf && ph_yaml_strv(envf, "include.env_file", 1, 0, &env_files, err) < 0))
        goto out;
    if (files.n == 0) {
        ph_yaml_error(paths, err, "`include.path` names no file");
        goto out;
    }
    for (size_t i = 0; i < files.n; i++) {
        char *abs = ph_compose_abs_path(base, files.v[i]);

        if (abs == NULL)
            goto oom;
        free(files.v[i]);
        files.v[i] = abs;
    }
    if (pdir != NULL) {
        if (ph_yaml_nonempty(pdir, "include.project_directory", err) == NULL)
            goto out;
        dir = ph_compose_abs_path(base, pdir->str);
    } else {
        dir = ph_compose_dir_of(files.v[0]);
    }
    if (dir == NULL)
        goto oom;
    /* The including project's environment, then the include's env files
     * (default: its directory's .env, which may be absent) for what it
     * does not set. */
    for (size_t i = 0; i < env->n; i++)
        if (ph_kvv_set(&inc_env, env->v[i].key, env->v[i].value) < 0)
            goto oom;
    if (envf == NULL) {
        char *dotenv = NULL;

        if (asprintf(&dotenv, "%s/.env", dir) < 0 || ph_strv_push(&env_files, dotenv) < 0) {
            free(dotenv);
            goto oom;
        }
        free(dotenv);
    }
    if (ph_compose_add_env_files(&inc_env, &env_files, base, envf != NULL, err) < 0) {
        ph_error_wrap(err, "%s:%d:%d: include", ph_yaml_file(entry), entry->line, entry->col);
        goto out;
    }
    rc = ph_compose_load_files(l, &files, NULL, dir, &inc_env, out, err);
    if (rc < 0)
        ph_error_wrap(err, "%s:%d:%d: include", ph_yaml_file(entry), entry->line, entry->col);
    goto out;
oom:
    ph_fail(err, ENOMEM, "allocate");
out:
    ph_strv_free(&files);
    ph_strv_free(&env_files);
    ph_kvv_free(&inc_env);
    free(dir);
    return rc;
}

/* ROOT with its `include` entries imported (and the key gone); *OUT a new
 * reference. */
static int
apply_include(ph_compose_loader *l, ph_ynode *root, const ph_kvv *env, ph_ynode **out, ph_error_t *err)
{
    static const char *const kinds[] = { "services", "networks", "volumes", "secrets", "configs" };
    ph_ynode *inc = ph_yaml_get(root, "include"), *imported = NULL, *nr = NULL;
    int rc = -1;

    *out = NULL;
    if (inc == NULL) {
        *out = ph_ynode_ref(root);
        return 0;
    }
    if (inc->kind != PH_Y_SEQ)
        return ph_yaml_error(inc, err, "`include` must be a list");
    if (l->include_depth == INCLUDE_MAX_DEPTH)
        return ph_yaml_error(inc, err, "`include` nested deeper than %d files", INCLUDE_MAX_DEPTH);
    l->include_depth++;
    PH_YAML_FOREACH_ITEM(inc, it) {
        ph_ynode *one = NULL, *m;

        if (load_include(l, *it, env, &one, err) < 0)
            goto out;
        m = ph_compose_merge(imported, one, "", err);
        ph_ynode_unref(one);
        ph_ynode_unref(imported);
        if ((imported = m) == NULL)
            goto out;
    }
    if ((nr = ph_ynode_new(PH_Y_MAP, root)) == NULL)
        goto oom;
    /* The resources the include brings in, the local definitions merged
     * over them; everything else of the include stays its own. */
    for (size_t k = 0; k < PH_ARRAY_LEN(kinds); k++) {
        ph_ynode *from = ph_yaml_get(imported, kinds[k]), *local = ph_yaml_get(root, kinds[k]), *m, *key;

        if (from == NULL || from->kind != PH_Y_MAP)
            continue;
        if (local != NULL && local->kind != PH_Y_MAP && !ph_yaml_is_null(local)) {
            ph_yaml_error(local, err, "`%s` must be a mapping", kinds[k]);
            goto out;
        }
        m = local && local->kind == PH_Y_MAP ? ph_compose_merge(from, local, kinds[k], err) : ph_ynode_ref(from);
        if (m == NULL || (key = ph_ynode_new_scalar(kinds[k], local ? local : from)) == NULL ||
            ph_ynode_put(nr, key, m) < 0) {
            ph_ynode_unref(m);
            goto oom;
        }
    }
    PH_YAML_FOREACH_PAIR(root, pair) {
        const char *key = ph_yaml_key(pair);

        if (strcmp(key, "include") == 0 || ph_yaml_get(nr, key) != NULL)
            continue;
        if (ph_ynode_put(nr, ph_ynode_ref(pair->key), ph_ynode_ref(pair->value)) < 0)
            goto oom;
    }
    *out = nr;
    nr = NULL;
    rc = 0;
    goto out;
oom:
    ph_fail(err, ENOMEM, "allocate");
out:
    l->include_depth--;
    ph_ynode_unref(imported);
    ph_ynode_unref(nr);
    return rc;
}

/* ---- files ------------------------------------------------------------- */

/* One document: interpolated, includes imported, extends resolved, merged
 * onto *ACC. */
static int
add_document(ph_compose_loader *l, ph_ynode *doc, const ph_kvv *env, ph_ynode **acc, ph_error_t *err)
{
    ph_ynode *a = NULL, *b = NULL, *m;

    if (doc->kind != PH_Y_MAP)
        return ph_yaml_error(doc, err, "a compose file is a mapping with `services:`, not %s", ph_yaml_kind(doc));
    if (ph_compose_interpolate(doc, env, err) < 0 || apply_include(l, doc, env, &a, err) < 0)
        return -1;
    if (apply_extends(l, a, env, &b, err) < 0) {
        ph_ynode_unref(a);
        return -1;
    }
    m = ph_compose_merge(*acc, b, "", err);
    ph_ynode_unref(a);
    ph_ynode_unref(b);
    if (m == NULL)
        return -1;
    ph_ynode_unref(*acc);
    *acc = m;
    return 0;
}

int
ph_compose_load_files(ph_compose_loader *l, const ph_strv *files, ph_compose_docs *preloaded, const char *base,
                      const ph_kvv *env, ph_ynode **out, ph_error_t *err)
{
    ph_ynode *acc = NULL;

    *out = NULL;
    for (size_t i = 0; i < files->n; i++) {
        ph_ynode **docs = NULL;
        size_t n = 0;
        int rc = 0, pushed = 0;

        for (size_t k = 0; k < l->loading.n; k++)
            if (strcmp(l->loading.v[k], files->v[i]) == 0) {
                ph_ynode_unref(acc);
                return ph_bad_input(err, "%s: included again while it is being loaded (an include cycle)",
                                    files->v[i]);
            }
        if (preloaded != NULL) {
            docs = preloaded[i].docs;
            n = preloaded[i].n;
        } else if (ph_yaml_load_all(files->v[i], &docs, &n, err) < 0) {
            ph_ynode_unref(acc);
            return -1;
        }
        if (ph_strv_push(&l->loading, files->v[i]) < 0)
            rc = ph_fail(err, ENOMEM, "allocate");
        else
            pushed = 1;
        for (size_t d = 0; rc == 0 && d < n; d++) {
            if (base != NULL && ph_yaml_set_base(docs[d], base) < 0)
                rc = ph_fail(err, ENOMEM, "allocate");
            if (rc == 0)
                rc = add_document(l, docs[d], env, &acc, err);
        }
        if (pushed) {
            free(l->loading.v[--l->loading.n]);
            l->loading.v[l->loading.n] = NULL;
        }
        if (preloaded == NULL) {
            for (size_t d = 0; d < n; d++)
                ph_ynode_unref(docs[d]);
            free(docs);
        }
        if (rc < 0) {
            ph_ynode_unref(acc);
            return -1;
        }
    }
    *out = acc;
    return 0;
}
