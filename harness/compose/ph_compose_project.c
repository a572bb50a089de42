/* ph_compose_project.c - a compose project as docker compose finds it:
 * which files, which environment, which name, which profiles (see
 * ph_compose.h for the order of each), then the files loaded
 * (ph_compose_load.c) and read (ph_compose_top.c).  Nothing is returned on
 * error: the half-built ph_compose is freed whole.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_compose_int.h"
#include "ph_log.h"
#include "ph_util.h"

extern char **environ;

/* In compose-go's order of preference. */
static const char *const default_files[] = { "compose.yaml", "compose.yml", "docker-compose.yml",
                                             "docker-compose.yaml" };
static const char *const default_overrides[] = { "compose.override.yml", "compose.override.yaml",
                                                 "docker-compose.override.yml", "docker-compose.override.yaml" };

static int
is_file(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

/* ---- profiles ----------------------------------------------------------- */

static int
profile_enabled(const ph_compose *c, const ph_service *s)
{
    if (s->profiles.n == 0)
        return 1;
    for (size_t i = 0; i < c->enabled_profiles.n; i++) {
        if (strcmp(c->enabled_profiles.v[i], "*") == 0)
            return 1;
        for (size_t j = 0; j < s->profiles.n; j++)
            if (strcmp(s->profiles.v[j], c->enabled_profiles.v[i]) == 0)
                return 1;
    }
    return 0;
}

static void
update_enabled(ph_compose *c)
{
    for (size_t i = 0; i < c->n_services; i++)
        c->services[i].enabled = profile_enabled(c, &c->services[i]);
}

void
ph_compose_enable(ph_compose *c, ph_service *s)
{
    for (size_t i = 0; !s->enabled && i < s->profiles.n; i++)
        if (ph_strv_push(&c->enabled_profiles, s->profiles.v[i]) < 0)
            s->enabled = 1; /* out of memory: at least the one asked for */
    update_enabled(c);
}

int
ph_compose_check_enabled(ph_compose *c, const ph_service *s, ph_error_t *err)
{
    for (size_t i = 0; i < s->depends_on.n; i++) {
        ph_service *d = ph_compose_service(c, s->depends_on.v[i]);

        if (d == NULL || d->enabled)
            continue;
        if (s->depends && !s->depends[i].required)
            continue;
        ph_bad_input(err, "%s:%d: service `%s` depends on `%s`, whose profile `%s` is not enabled", s->file, s->line,
                     s->name, d->name, d->profiles.v[0]);
        return ph_error_hint(err, "enable it with `--profile %s` (or COMPOSE_PROFILES=%s)", d->profiles.v[0],
                             d->profiles.v[0]);
    }
    return 0;
}

/* ---- the project's environment, files and name ------------------------- */

static const char *
kvv_lookup(const char *name, void *ud)
{
    return ph_kvv_get(ud, name);
}

/* The process environment, then ENV_FILES for what it does not set (of
 * two files setting one variable, the later wins). */
static int
build_env(ph_compose *c, const ph_strv *env_files, int must_exist, ph_error_t *err)
{
    ph_kvv_free(&c->env);
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        char *k;
        int rc;

        if (eq == NULL || eq == *e)
            continue;
        if ((k = strndup(*e, (size_t)(eq - *e))) == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        rc = ph_kvv_set(&c->env, k, eq + 1);
        free(k);
        if (rc < 0)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return ph_compose_add_env_files(&c->env, env_files, NULL, must_exist, err);
}

/* --env-file, or COMPOSE_ENV_FILES, or DIR/.env unless COMPOSE_DISABLE_ENV_FILE. */
static int
env_files_for(const ph_compose_opts *o, const char *cwd, const char *dir, ph_strv *out, int *explicit_,
              ph_error_t *err)
{
    const char *list = getenv("COMPOSE_ENV_FILES"), *disable = getenv("COMPOSE_DISABLE_ENV_FILE");
    char *dotenv = NULL;

    ph_strv_free(out);
    *explicit_ = 1;
    for (size_t i = 0; i < o->n_env_files; i++) {
        char *p = ph_compose_abs_path(cwd, o->env_files[i]);

        if (p == NULL || ph_strv_push(out, p) < 0) {
            free(p);
            return ph_fail(err, ENOMEM, "allocate");
        }
        free(p);
    }
    if (o->n_env_files > 0)
        return 0;
    if (list && *list) {
        char *copy = strdup(list), *save = NULL;

        for (char *f = copy ? strtok_r(copy, ",", &save) : NULL; f; f = strtok_r(NULL, ",", &save)) {
            char *p = ph_compose_abs_path(cwd, f);

            if (p == NULL || ph_strv_push(out, p) < 0) {
                free(p);
                free(copy);
                return ph_fail(err, ENOMEM, "allocate");
            }
            free(p);
        }
        free(copy);
        return copy ? 0 : ph_fail(err, ENOMEM, "allocate");
    }
    *explicit_ = 0;
    if (disable && (strcmp(disable, "1") == 0 || strcasecmp(disable, "true") == 0))
        return 0;
    if (asprintf(&dotenv, "%s/.env", dir) < 0)
        return ph_fail(err, ENOMEM, "allocate");
    if (ph_strv_push(out, dotenv) < 0) {
        free(dotenv);
        return ph_fail(err, ENOMEM, "allocate");
    }
    free(dotenv);
    return 0;
}

/* The first of NAMES that exists in DIR (a warning when several do). */
static char *
find_in(const char *dir, const char *const *names, size_t n)
{
    char *found = NULL;

    for (size_t i = 0; i < n; i++) {
        char *p = NULL;

        if (asprintf(&p, "%s/%s", dir, names[i]) < 0)
            return found;
        if (!is_file(p)) {
            free(p);
        } else if (found == NULL) {
            found = p;
        } else {
            ph_warn("found both %s and %s: using %s, as docker compose does", found, p, found);
            free(p);
        }
    }
    return found;
}

/* -f, else COMPOSE_FILE, else the default names from CWD upwards. */
static int
find_files(ph_compose *c, const ph_compose_opts *o, const char *cwd, ph_error_t *err)
{
    const char *list = ph_kvv_get(&c->env, "COMPOSE_FILE"), *sep = ph_kvv_get(&c->env, "COMPOSE_PATH_SEPARATOR");
    char *dir;

    for (size_t i = 0; i < o->n_files; i++) {
        char *p;

        if (strcmp(o->files[i], "-") == 0)
            return ph_bad_input(err, "-f -: reading the compose file from standard input is not supported");
        /* As given when relative to the process's directory: errors then
         * name the file the way the user wrote it. */
        p = o->cwd == NULL ? strdup(o->files[i]) : ph_compose_abs_path(cwd, o->files[i]);
        if (p == NULL || ph_strv_push(&c->files, p) < 0) {
            free(p);
            return ph_fail(err, ENOMEM, "allocate");
        }
        free(p);
    }
    if (o->n_files > 0)
        return 0;
    if (list && *list) {
        char *copy = strdup(list), *save = NULL;

        if (copy == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        for (char *f = strtok_r(copy, sep && *sep ? sep : ":", &save); f; f = strtok_r(NULL, sep && *sep ? sep : ":", &save)) {
            char *p = ph_compose_abs_path(cwd, f);

            if (p == NULL || ph_strv_push(&c->files, p) < 0) {
                free(p);
                free(copy);
                return ph_fail(err, ENOMEM, "allocate");
            }
            free(p);
        }
        free(copy);
        return 0;
    }
    if ((dir = strdup(cwd)) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    for (;;) {
        char *main_file = find_in(dir, default_files, PH_ARRAY_LEN(default_files)), *over, *slash;

        if (main_file != NULL) {
            over = find_in(dir, default_overrides, PH_ARRAY_LEN(default_overrides));
            if (ph_strv_push(&c->files, main_file) < 0 || (over && ph_strv_push(&c->files, over) < 0)) {
                free(main_file);
                free(over);
                free(dir);
                return ph_fail(err, ENOMEM, "allocate");
            }
            free(main_file);
            free(over);
            free(dir);
            return 0;
        }
        slash = strrchr(dir, '/');
        if (slash == NULL || strcmp(dir, "/") == 0)
            break;
        if (slash == dir)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
    free(dir);
    ph_bad_input(err, "no compose file in %s or any folder above it (looked for compose.yaml, compose.yml, "
                      "docker-compose.yml, docker-compose.yaml)", cwd);
    return ph_error_hint(err, "name one with -f FILE, or set COMPOSE_FILE");
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

/* A name given by -p or COMPOSE_PROJECT_NAME must already be one: compose
 * refuses rather than rewrites it. */
static int
valid_given_name(const char *name, const char *from, ph_error_t *err)
{
    char *n = normalise_project(name);
    int ok = n && n[0] && strcmp(n, name) == 0;

    if (!ok) {
        ph_bad_input(err, "%s `%s` is not a valid project name: lowercase letters, digits, `-` and `_`, starting "
                          "with a letter or digit", from, name);
        ph_error_hint(err, "for example `%s`", n && n[0] ? n : "myproject");
    }
    free(n);
    return ok ? 0 : -1;
}

/* The project's name (see ph_compose.h): DOCS are the files' documents,
 * whose last `name:` counts, interpolated from the environment. */
static int
name_project(ph_compose *c, const ph_compose_opts *o, ph_compose_docs *docs, ph_error_t *err)
{
    const char *given = ph_kvv_get(&c->env, "COMPOSE_PROJECT_NAME");
    ph_ynode *name_node = NULL;
    char *name = NULL;

    if (o->project)
        return valid_given_name(o->project, "-p", err) < 0 ? -1 : ph_compose_dup(o->project, &c->project, err);
    if (given && *given)
        return valid_given_name(given, "COMPOSE_PROJECT_NAME", err) < 0 ? -1
                                                                          : ph_compose_dup(given, &c->project, err);
    for (size_t f = 0; f < c->files.n; f++)
        for (size_t d = 0; d < docs[f].n; d++) {
            ph_ynode *n = ph_yaml_get(docs[f].docs[d], "name");

            if (n != NULL && n->kind == PH_Y_SCALAR && n->str[0])
                name_node = n;
        }
    if (name_node != NULL) {
        char where[PATH_MAX + 32], *raw;

        snprintf(where, sizeof where, "%s:%d:%d", ph_yaml_file(name_node), name_node->line, name_node->col);
        raw = ph_interpolate(name_node->str, kvv_lookup, &c->env, where, err);
        if (raw == NULL)
            return -1;
        name = normalise_project(raw);
        if (name && name[0] == '\0') {
            ph_yaml_error(name_node, err, "`name: %s` has no letter or digit to make a project name", raw);
            free(raw);
            free(name);
            return -1;
        }
        free(raw);
    } else {
        const char *base = strrchr(c->dir, '/');

        name = normalise_project(base && base[1] ? base + 1 : c->dir);
        if (name && name[0] == '\0') {
            free(name);
            ph_bad_input(err, "%s: cannot make a project name from the directory `%s`", c->files.v[0], c->dir);
            return ph_error_hint(err, "give one with `name:` or -p");
        }
    }
    if (name == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    free(c->project);
    c->project = name;
    return 0;
}

int
ph_compose_open(const ph_compose_opts *o, ph_compose **out, ph_error_t *err)
{
    ph_compose_loader l = { 0 };
    ph_compose_docs *docs = NULL;
    ph_strv env_files = { 0 };
    ph_ynode *root = NULL;
    char cwd[PATH_MAX];
    const char *profiles;
    int explicit_ = 0, rc = -1;
    ph_compose *c = calloc(1, sizeof *c);

    *out = NULL;
    if (c == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    l.c = c;
    if (getcwd(cwd, sizeof cwd) == NULL) {
        ph_fail(err, errno, "getcwd");
        goto out;
    }
    if (o->cwd != NULL) {
        char *abs = ph_compose_abs_path(cwd, o->cwd);

        if (abs == NULL) {
            ph_fail(err, ENOMEM, "allocate");
            goto out;
        }
        snprintf(cwd, sizeof cwd, "%s", abs);
        free(abs);
    }
    /* The project directory as far as it is known before the files: the
     * environment (and COMPOSE_FILE in it) comes from its .env. */
    if (o->project_dir)
        c->dir = ph_compose_abs_path(cwd, o->project_dir);
    else if (o->n_files > 0)
        c->dir = ph_compose_dir_of((c->path = ph_compose_abs_path(cwd, o->files[0])) ? c->path : "/");
    else
        c->dir = strdup(cwd);
    if (c->dir == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    if (env_files_for(o, cwd, c->dir, &env_files, &explicit_, err) < 0 || build_env(c, &env_files, explicit_, err) < 0)
        goto out;
    if (find_files(c, o, cwd, err) < 0)
        goto out;
    /* Found by COMPOSE_FILE or in a parent folder: that is the project's
     * directory, and its .env the one to read. */
    if (o->project_dir == NULL) {
        char *f0 = ph_compose_abs_path(cwd, c->files.v[0]), *d = f0 ? ph_compose_dir_of(f0) : NULL;

        free(f0);
        if (d == NULL) {
            ph_fail(err, ENOMEM, "allocate");
            goto out;
        }
        if (strcmp(d, c->dir) != 0) {
            free(c->dir);
            c->dir = d;
            if (!explicit_ && (env_files_for(o, cwd, c->dir, &env_files, &explicit_, err) < 0 ||
                               build_env(c, &env_files, 0, err) < 0))
                goto out;
        } else {
            free(d);
        }
    }
    free(c->path);
    if ((c->path = strdup(o->n_files > 0 ? o->files[0] : c->files.v[0])) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    docs = calloc(c->files.n, sizeof *docs);
    if (docs == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    for (size_t i = 0; i < c->files.n; i++)
        if (ph_yaml_load_all(c->files.v[i], &docs[i].docs, &docs[i].n, err) < 0)
            goto out;
    if (name_project(c, o, docs, err) < 0)
        goto out;
    /* ${COMPOSE_PROJECT_NAME} in the files is the project's name. */
    if (ph_kvv_set(&c->env, "COMPOSE_PROJECT_NAME", c->project) < 0) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    if (ph_compose_load_files(&l, &c->files, docs, NULL, &c->env, &root, err) < 0 ||
        ph_compose_read_top(&l, root, err) < 0)
        goto out;
    for (size_t i = 0; i < o->n_profiles; i++)
        if (ph_strv_push(&c->enabled_profiles, o->profiles[i]) < 0) {
            ph_fail(err, ENOMEM, "allocate");
            goto out;
        }
    profiles = ph_kvv_get(&c->env, "COMPOSE_PROFILES");
    if (o->n_profiles == 0 && profiles && *profiles) {
        char *copy = strdup(profiles), *save = NULL;

        for (char *p = copy ? strtok_r(copy, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save))
            if (ph_strv_push(&c->enabled_profiles, p) < 0)
                break;
        free(copy);
    }
    update_enabled(c);
    rc = 0;
out:
    for (size_t i = 0; docs && i < c->files.n; i++) {
        for (size_t d = 0; d < docs[i].n; d++)
            ph_ynode_unref(docs[i].docs[d]);
        free(docs[i].docs);
    }
    free(docs);
    ph_ynode_unref(root);
    ph_strv_free(&env_files);
    ph_strv_free(&l.loading);
    free(l.depends);
    free(l.svc_nodes);
    if (rc < 0) {
        ph_compose_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

int
ph_compose_load(const char *path, const char *project_override, ph_compose **out, ph_error_t *err)
{
    ph_compose_opts o = { .files = &path, .n_files = path ? 1 : 0, .project = project_override };

    return ph_compose_open(&o, out, err);
}

/* ---- freeing ------------------------------------------------------------ */

static void
file_object_free(ph_file_object *f)
{
    free(f->key);
    free(f->name);
    free(f->file);
    free(f->environment);
    free(f->content);
    free(f->unsupported);
}

void
ph_compose_free(ph_compose *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_services; i++)
        ph_compose_service_free(&c->services[i]);
    free(c->services);
    for (size_t i = 0; c->nets && i < c->networks.n; i++) {
        ph_network *n = &c->nets[i];

        free(n->key);
        free(n->name);
        free(n->driver);
        free(n->ipam_driver);
        ph_kvv_free(&n->driver_opts);
        ph_kvv_free(&n->labels);
        ph_kvv_free(&n->ipam_options);
        for (size_t k = 0; k < n->n_ipam; k++) {
            free(n->ipam[k].subnet);
            free(n->ipam[k].ip_range);
            free(n->ipam[k].gateway);
            ph_kvv_free(&n->ipam[k].aux_addresses);
        }
        free(n->ipam);
    }
    free(c->nets);
    for (size_t i = 0; c->vols && i < c->volumes.n; i++) {
        free(c->vols[i].key);
        free(c->vols[i].name);
        free(c->vols[i].driver);
        ph_kvv_free(&c->vols[i].driver_opts);
        ph_kvv_free(&c->vols[i].labels);
    }
    free(c->vols);
    for (size_t i = 0; i < c->n_secrets; i++)
        file_object_free(&c->secrets[i]);
    free(c->secrets);
    for (size_t i = 0; i < c->n_configs; i++)
        file_object_free(&c->configs[i]);
    free(c->configs);
    ph_strv_free(&c->volumes);
    ph_strv_free(&c->networks);
    ph_strv_free(&c->files);
    ph_strv_free(&c->enabled_profiles);
    ph_kvv_free(&c->env);
    free(c->path);
    free(c->dir);
    free(c->project);
    free(c);
}
