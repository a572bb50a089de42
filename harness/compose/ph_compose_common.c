/* ph_compose_common.c - what every file of the compose loader calls:
 * strings and paths, the unknown-key warning, the project's lookups by
 * name, a service's base directory and unsupported mark, whole numbers
 * and byte sizes.  Its own file, at the bottom of the loader, so that the
 * project, the loading, the top level and the service's readers all call
 * down into it and none calls back up.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_compose_int.h"
#include "ph_log.h"
#include "ph_util.h"

/* ---- helpers shared by the loader -------------------------------------- */

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
    if (service)
        ph_warn("%s:%d: unknown key `%s%s` in service `%s` (ignored)", ph_yaml_file(pair->key), pair->key->line,
                prefix, key, service);
    else
        ph_warn("%s:%d: unknown key `%s%s` (ignored)", ph_yaml_file(pair->key), pair->key->line, prefix, key);
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

char *
ph_compose_dir_of(const char *path)
{
    char *d = strdup(path), *slash;

    if (d == NULL)
        return NULL;
    slash = strrchr(d, '/');
    if (slash == d)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    return d;
}

/* ---- lookups ------------------------------------------------------------ */

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

#define FIND_BY_KEY(arr, n, key)                      \
    do {                                              \
        for (size_t i_ = 0; i_ < (n); i_++)           \
            if (strcmp((arr)[i_].key, (key)) == 0)    \
                return &(arr)[i_];                    \
        return NULL;                                  \
    } while (0)

ph_network *
ph_compose_network(ph_compose *c, const char *key)
{
    FIND_BY_KEY(c->nets, c->networks.n, key);
}

ph_named_volume *
ph_compose_volume(ph_compose *c, const char *key)
{
    FIND_BY_KEY(c->vols, c->volumes.n, key);
}

ph_file_object *
ph_compose_secret(ph_compose *c, const char *key)
{
    FIND_BY_KEY(c->secrets, c->n_secrets, key);
}

ph_file_object *
ph_compose_config(ph_compose *c, const char *key)
{
    FIND_BY_KEY(c->configs, c->n_configs, key);
}

/* ---- shared helpers ---------------------------------------------------- */

const char *
ph_compose_base(ph_compose_loader *l, const ph_ynode *n)
{
    const char *b = ph_yaml_base(n);

    return b ? b : l->c->dir;
}

int
ph_compose_unsupported(ph_service *s, const ph_ynode *at, const char *what)
{
    if (s->unsupported == NULL &&
        asprintf(&s->unsupported, "%s:%d: `%s`", ph_yaml_file(at), at->line, what) < 0)
        s->unsupported = NULL;
    return 0;
}

int
ph_compose_replicas(ph_service *s, const ph_ynode *at, const char *key)
{
    int n = s->scale >= 0 ? s->scale : s->deploy_replicas;
    char what[128];

    if (s->scale >= 0 && s->deploy_replicas >= 0 && s->scale != s->deploy_replicas)
        return ph_compose_unsupported(s, at, "scale and deploy.replicas with distinct values (compose refuses them "
                                             "too)");
    if (n == 0 || n > PH_COMPOSE_REPLICAS_MAX) {
        snprintf(what, sizeof what, "%s: %d (profharness profiles 1 to %d replicas)", key, n,
                 PH_COMPOSE_REPLICAS_MAX);
        return ph_compose_unsupported(s, at, what);
    }
    s->replicas = n;
    return 0;
}

/* Like compose: a letter or digit, then letters, digits, `_`, `.`, `-`. */
int
ph_compose_valid_name(const char *s)
{
    return isalnum((unsigned char)s[0]) &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == strlen(s);
}

/* ---- values ------------------------------------------------------------ */

int
ph_compose_int(const ph_ynode *n, const char *key, long long min, long long max, long long *out, ph_error_t *err)
{
    const char *s = ph_yaml_nonempty(n, key, err);
    char *end;
    long long v;

    if (s == NULL)
        return -1;
    errno = 0;
    /* 0o440 is YAML 1.2's octal (compose reads YAML 1.2); 0440 and 0x1f too. */
    if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
        v = strtoll(s + 2, &end, 8);
    else
        v = strtoll(s, &end, 0);
    if (*end != '\0' || errno || end == s || v < min || v > max)
        return ph_yaml_error(n, err, "`%s` must be a whole number from %lld to %lld, not `%s`", key, min, max, s);
    *out = v;
    return 0;
}

int
ph_compose_parse_bytes(const char *s, long long *out)
{
    static const char units[] = "bkmgtp";
    char *end;
    double v;
    const char *u;
    int shift = 0;

    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s)
        return -1;
    if (*end == ' ')
        end++;
    if (*end && (u = strchr(units, tolower((unsigned char)*end))) != NULL) {
        shift = (int)(u - units) * 10;
        end++;
        if (shift && tolower((unsigned char)*end) == 'i')
            end++;
        if (shift && tolower((unsigned char)*end) == 'b')
            end++;
    }
    if (*end != '\0')
        return -1;
    v *= (double)(1ULL << shift);
    if (v >= 9.2e18)
        return -1;
    *out = (long long)v;
    return 0;
}

int
ph_compose_bytes(const ph_ynode *n, const char *key, long long *out, ph_error_t *err)
{
    const char *s = ph_yaml_nonempty(n, key, err);

    if (s == NULL)
        return -1;
    if (ph_compose_parse_bytes(s, out) < 0)
        return ph_yaml_error(n, err, "`%s`: `%s` is not a size (like 512m, 1.5g, 1024)", key, s);
    return 0;
}
