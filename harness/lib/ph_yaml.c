/* ph_yaml.c - libyaml document helpers (see ph_yaml.h). */
#include "ph_yaml.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int
ph_yaml_load(ph_yaml *y, const char *path, ph_error_t *err)
{
    yaml_parser_t p;
    FILE *f;
    int ok;

    memset(y, 0, sizeof *y);
    y->path = path;
    f = fopen(path, "re");
    if (f == NULL)
        return ph_error_make(err, errno, errno == ENOENT ? PH_EXIT_USAGE : PH_EXIT_FAILURE, "open `%s`", path);
    if (!yaml_parser_initialize(&p)) {
        fclose(f);
        return ph_fail(err, ENOMEM, "initialise libyaml");
    }
    yaml_parser_set_input_file(&p, f);
    ok = yaml_parser_load(&p, &y->doc);
    if (!ok) {
        ph_bad_input(err, "%s:%zu:%zu: %s%s%s", path, p.problem_mark.line + 1, p.problem_mark.column + 1,
                     p.problem ? p.problem : "malformed YAML", p.context ? " " : "", p.context ? p.context : "");
    } else {
        y->loaded = 1;
        if (yaml_document_get_root_node(&y->doc) == NULL) {
            ph_bad_input(err, "%s:1:1: the file is empty", path);
            ok = 0;
        }
    }
    yaml_parser_delete(&p);
    fclose(f);
    if (!ok) {
        ph_yaml_free(y);
        return -1;
    }
    return 0;
}

void
ph_yaml_free(ph_yaml *y)
{
    if (y->loaded)
        yaml_document_delete(&y->doc);
    y->loaded = 0;
}

yaml_node_t *
ph_yaml_root(ph_yaml *y)
{
    return yaml_document_get_root_node(&y->doc);
}

yaml_node_t *
ph_yaml_node(ph_yaml *y, int index)
{
    return yaml_document_get_node(&y->doc, index);
}

int
ph_yaml_line(const yaml_node_t *n)
{
    return (int)n->start_mark.line + 1;
}

int
ph_yaml_error(ph_yaml *y, const yaml_node_t *n, ph_error_t *err, const char *fmt, ...)
{
    char what[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ph_bad_input(err, "%s:%zu:%zu: %s", y->path, n->start_mark.line + 1, n->start_mark.column + 1, what);
}

static const char *
kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

const char *
ph_yaml_scalar(ph_yaml *y, yaml_node_t *n, const char *key, ph_error_t *err)
{
    if (n->type != YAML_SCALAR_NODE) {
        ph_yaml_error(y, n, err, "`%s` must be a string, not %s", key, kind(n));
        return NULL;
    }
    return (const char *)n->data.scalar.value;
}

int
ph_yaml_strv(ph_yaml *y, yaml_node_t *n, const char *key, int allow_scalar, int split, ph_strv *out,
             ph_error_t *err)
{
    if (n->type == YAML_SCALAR_NODE && allow_scalar) {
        const char *s = (const char *)n->data.scalar.value;

        if (split) {
            ph_strv tmp = { 0 };
            if (ph_shell_split(s, &tmp, err) < 0)
                return ph_error_wrap(err, "%s:%d: `%s`", y->path, ph_yaml_line(n), key);
            for (size_t i = 0; i < tmp.n; i++)
                if (ph_strv_push(out, tmp.v[i]) < 0) {
                    ph_strv_free(&tmp);
                    return ph_fail(err, ENOMEM, "allocate");
                }
            ph_strv_free(&tmp);
            return 0;
        }
        return ph_strv_push(out, s) < 0 ? ph_fail(err, ENOMEM, "allocate") : 0;
    }
    if (n->type != YAML_SEQUENCE_NODE)
        return ph_yaml_error(y, n, err, "`%s` must be a list%s, not %s", key, allow_scalar ? " or a string" : "",
                             kind(n));
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *item = ph_yaml_node(y, *it);

        if (item->type != YAML_SCALAR_NODE)
            return ph_yaml_error(y, item, err, "items of `%s` must be strings, not %s", key, kind(item));
        if (ph_strv_push(out, (const char *)item->data.scalar.value) < 0)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

int
ph_yaml_kvv(ph_yaml *y, yaml_node_t *n, const char *key, ph_kvv *out, ph_error_t *err)
{
    if (n->type == YAML_MAPPING_NODE) {
        PH_YAML_FOREACH_PAIR(n, pair) {
            yaml_node_t *k = ph_yaml_node(y, pair->key), *v = ph_yaml_node(y, pair->value);
            const char *ks = ph_yaml_scalar(y, k, key, err);
            const char *vs;

            if (ks == NULL)
                return -1;
            if (v->type != YAML_SCALAR_NODE)
                return ph_yaml_error(y, v, err, "`%s.%s` must be a string, number or boolean, not %s", key, ks,
                                     kind(v));
            vs = (const char *)v->data.scalar.value;
            /* `KEY:` with nothing after it is null: take it from the environment. */
            if (vs[0] == '\0' && v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
                vs = NULL;
            if (ph_kvv_set(out, ks, vs) < 0)
                return ph_fail(err, ENOMEM, "allocate");
        }
        return 0;
    }
    if (n->type != YAML_SEQUENCE_NODE)
        return ph_yaml_error(y, n, err, "`%s` must be a mapping or a list of KEY=VALUE, not %s", key, kind(n));
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *item = ph_yaml_node(y, *it);
        const char *s = ph_yaml_scalar(y, item, key, err);
        const char *eq;
        char *k;
        int rc;

        if (s == NULL)
            return -1;
        eq = strchr(s, '=');
        k = eq ? strndup(s, (size_t)(eq - s)) : strdup(s);
        if (k == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        if (k[0] == '\0') {
            free(k);
            return ph_yaml_error(y, item, err, "`%s` entry `%s` has no name", key, s);
        }
        rc = ph_kvv_set(out, k, eq ? eq + 1 : NULL);
        free(k);
        if (rc < 0)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

int
ph_yaml_bool(ph_yaml *y, yaml_node_t *n, const char *key, int *out, ph_error_t *err)
{
    const char *s = ph_yaml_scalar(y, n, key, err);

    if (s == NULL)
        return -1;
    if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on") || !strcmp(s, "1"))
        *out = 1;
    else if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off") || !strcmp(s, "0"))
        *out = 0;
    else
        return ph_yaml_error(y, n, err, "`%s` must be true or false, not `%s`", key, s);
    return 0;
}

int
ph_yaml_duration(ph_yaml *y, yaml_node_t *n, const char *key, long long *out, ph_error_t *err)
{
    const char *s = ph_yaml_scalar(y, n, key, err);

    if (s == NULL)
        return -1;
    if (ph_duration_parse(s, out) < 0)
        return ph_yaml_error(y, n, err, "`%s`: `%s` is not a duration (like 30s, 1m30s, 500ms)", key, s);
    return 0;
}

int
ph_yaml_check_dups(ph_yaml *y, yaml_node_t *map, ph_error_t *err)
{
    for (yaml_node_pair_t *a = map->data.mapping.pairs.start; a < map->data.mapping.pairs.top; a++) {
        yaml_node_t *ka = ph_yaml_node(y, a->key);

        if (ka->type != YAML_SCALAR_NODE)
            return ph_yaml_error(y, ka, err, "keys must be strings");
        for (yaml_node_pair_t *b = map->data.mapping.pairs.start; b < a; b++) {
            yaml_node_t *kb = ph_yaml_node(y, b->key);

            if (kb->type == YAML_SCALAR_NODE &&
                strcmp((const char *)ka->data.scalar.value, (const char *)kb->data.scalar.value) == 0)
                return ph_yaml_error(y, ka, err, "duplicate key `%s` (first at line %d)",
                                     (const char *)ka->data.scalar.value, ph_yaml_line(kb));
        }
    }
    return 0;
}

const char *
ph_signal_normalise(const char *s, char buf[16])
{
    static const char *const names[] = {
        "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2", "PIPE",
        "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ",
        "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS",
    };
    char *end;
    long n;

    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(s, names[i]) == 0) {
            snprintf(buf, 16, "SIG%s", names[i]);
            return buf;
        }
    }
    n = strtol(s, &end, 10);
    if (*s && *end == '\0' && n >= 1 && n <= (long)(sizeof names / sizeof names[0])) {
        snprintf(buf, 16, "SIG%s", names[n - 1]);
        return buf;
    }
    return NULL;
}
