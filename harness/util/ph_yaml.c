/* ph_yaml.c - libyaml document helpers (see ph_yaml.h). */
#include "ph_yaml.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ph_util.h"

/* Line and column of byte OFFSET in F, for reader errors (bad UTF-8), which
 * libyaml reports as an offset only. */
static void
offset_position(FILE *f, size_t offset, size_t *line, size_t *col)
{
    size_t at = 0;
    int ch;

    *line = 1;
    *col = 1;
    rewind(f);
    while (at < offset && (ch = getc(f)) != EOF) {
        at++;
        if (ch == '\n') {
            (*line)++;
            *col = 1;
        } else if ((ch & 0xc0) != 0x80) {
            (*col)++;
        }
    }
}

static int
parser_error(yaml_parser_t *p, FILE *f, const char *path, ph_error_t *err)
{
    size_t line = p->problem_mark.line + 1, col = p->problem_mark.column + 1;

    if (p->error == YAML_MEMORY_ERROR)
        return ph_fail(err, ENOMEM, "parse `%s`", path);
    if (p->error == YAML_READER_ERROR) {
        offset_position(f, p->problem_offset, &line, &col);
        return ph_bad_input(err, "%s:%zu:%zu: %s", path, line, col, p->problem ? p->problem : "unreadable input");
    }
    if (p->context)
        return ph_bad_input(err, "%s:%zu:%zu: %s (%s at %zu:%zu)", path, line, col,
                            p->problem ? p->problem : "malformed YAML", p->context, p->context_mark.line + 1,
                            p->context_mark.column + 1);
    return ph_bad_input(err, "%s:%zu:%zu: %s", path, line, col, p->problem ? p->problem : "malformed YAML");
}

static int
is_merge_key(const yaml_node_t *k)
{
    return k->type == YAML_SCALAR_NODE && k->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           strcmp((const char *)k->data.scalar.value, "<<") == 0;
}

static int
has_key(ph_yaml *y, const yaml_node_pair_t *start, const yaml_node_pair_t *end, const char *key)
{
    for (const yaml_node_pair_t *q = start; q < end; q++)
        if (strcmp(ph_yaml_key(y, q), key) == 0)
            return 1;
    return 0;
}

/* Replace the `<<` pairs of mapping IDX by the pairs of the mappings they
 * name, explicit keys first so that they win, then earlier sources before
 * later ones (the YAML merge-key rules).  STATE: 0 new, 1 in progress, 2
 * done; an anchor merged into itself is in progress when met again. */
static int
resolve_merges(ph_yaml *y, int idx, unsigned char *state, int depth, ph_error_t *err)
{
    yaml_node_t *m = ph_yaml_node(y, idx), *src[64];
    yaml_node_pair_t *pairs, *np;
    size_t nsrc = 0, cap;
    int any = 0;

    if (m == NULL || m->type != YAML_MAPPING_NODE || state[idx] == 2)
        return 0;
    if (state[idx] == 1 || depth > 32)
        return ph_yaml_error(y, m, err, "`<<` merges a mapping into itself");
    PH_YAML_FOREACH_PAIR(m, pair) {
        yaml_node_t *v;

        if (!is_merge_key(ph_yaml_node(y, pair->key)))
            continue;
        any = 1;
        v = ph_yaml_node(y, pair->value);
        if (v->type == YAML_MAPPING_NODE) {
            if (nsrc < PH_ARRAY_LEN(src))
                src[nsrc++] = v;
        } else if (v->type == YAML_SEQUENCE_NODE) {
            for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
                yaml_node_t *s = ph_yaml_node(y, *it);
                if (s->type != YAML_MAPPING_NODE)
                    return ph_yaml_error(y, s, err, "`<<` merges mappings, not %s",
                                         s->type == YAML_SCALAR_NODE ? "a scalar" : "a list");
                if (nsrc < PH_ARRAY_LEN(src))
                    src[nsrc++] = s;
            }
        } else {
            return ph_yaml_error(y, v, err, "`<<` merges a mapping or a list of mappings, not a scalar");
        }
    }
    if (!any) {
        state[idx] = 2;
        return 0;
    }
    state[idx] = 1;
    cap = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
    for (size_t i = 0; i < nsrc; i++) {
        if (resolve_merges(y, (int)(src[i] - y->doc.nodes.start) + 1, state, depth + 1, err) < 0)
            return -1;
        cap += (size_t)(src[i]->data.mapping.pairs.top - src[i]->data.mapping.pairs.start);
    }
    pairs = malloc((cap ? cap : 1) * sizeof *pairs);
    if (pairs == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    np = pairs;
    PH_YAML_FOREACH_PAIR(m, pair)
        if (!is_merge_key(ph_yaml_node(y, pair->key)))
            *np++ = *pair;
    for (size_t i = 0; i < nsrc; i++)
        PH_YAML_FOREACH_PAIR(src[i], pair)
            if (!has_key(y, pairs, np, ph_yaml_key(y, pair)))
                *np++ = *pair;
    /* libyaml allocates with malloc and frees the stack's start. */
    free(m->data.mapping.pairs.start);
    m->data.mapping.pairs.start = pairs;
    m->data.mapping.pairs.top = np;
    m->data.mapping.pairs.end = pairs + (cap ? cap : 1);
    state[idx] = 2;
    return 0;
}

/* What every mapping in the document must satisfy; see ph_yaml.h. */
static int
check_document(ph_yaml *y, ph_error_t *err)
{
    size_t n = (size_t)(y->doc.nodes.top - y->doc.nodes.start);
    unsigned char *state;
    int rc = 0;

    for (yaml_node_t *m = y->doc.nodes.start; m < y->doc.nodes.top; m++)
        if (m->type == YAML_MAPPING_NODE && ph_yaml_check_dups(y, m, err) < 0)
            return -1;
    state = calloc(n + 1, 1);
    if (state == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    for (size_t i = 1; rc == 0 && i <= n; i++)
        rc = resolve_merges(y, (int)i, state, 0, err);
    free(state);
    return rc;
}

int
ph_yaml_load(ph_yaml *y, const char *path, ph_error_t *err)
{
    yaml_parser_t p;
    yaml_document_t extra;
    FILE *f;
    int rc = -1;

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
    if (!yaml_parser_load(&p, &y->doc)) {
        parser_error(&p, f, path, err);
        goto out;
    }
    y->loaded = 1;
    if (ph_yaml_root(y) == NULL) {
        ph_bad_input(err, "%s:1:1: the file is empty", path);
        goto out;
    }
    /* A second document would be silently dropped: refuse it. */
    if (!yaml_parser_load(&p, &extra)) {
        parser_error(&p, f, path, err);
        goto out;
    }
    if (yaml_document_get_root_node(&extra) != NULL) {
        yaml_node_t *r = yaml_document_get_root_node(&extra);
        ph_bad_input(err, "%s:%zu:%zu: a second YAML document (`---`): one document per file", path,
                     r->start_mark.line + 1, r->start_mark.column + 1);
        yaml_document_delete(&extra);
        goto out;
    }
    yaml_document_delete(&extra);
    rc = check_document(y, err);
out:
    yaml_parser_delete(&p);
    fclose(f);
    if (rc < 0)
        ph_yaml_free(y);
    return rc;
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
ph_yaml_col(const yaml_node_t *n)
{
    return (int)n->start_mark.column + 1;
}

const char *
ph_yaml_key(ph_yaml *y, const yaml_node_pair_t *pair)
{
    return (const char *)ph_yaml_node(y, pair->key)->data.scalar.value;
}

int
ph_yaml_is_null(const yaml_node_t *n)
{
    const char *s = (const char *)n->data.scalar.value;

    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
           strcmp(s, "NULL") == 0;
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

const char *
ph_yaml_nonempty(ph_yaml *y, yaml_node_t *n, const char *key, ph_error_t *err)
{
    const char *s = ph_yaml_scalar(y, n, key, err);

    if (s != NULL && (s[0] == '\0' || ph_yaml_is_null(n))) {
        ph_yaml_error(y, n, err, "`%s` is empty", key);
        return NULL;
    }
    return s;
}

int
ph_yaml_dup(ph_yaml *y, yaml_node_t *n, const char *key, char **dst, ph_error_t *err)
{
    const char *s = ph_yaml_nonempty(y, n, key, err);
    char *c;

    if (s == NULL)
        return -1;
    c = strdup(s);
    if (c == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    free(*dst);
    *dst = c;
    return 0;
}

int
ph_yaml_strv(ph_yaml *y, yaml_node_t *n, const char *key, int allow_scalar, int split, ph_strv *out,
             ph_error_t *err)
{
    if (n->type == YAML_SCALAR_NODE && allow_scalar) {
        const char *s = (const char *)n->data.scalar.value;

        if (split) {
            ph_strv tmp = { 0 };
            if (ph_shell_split(s, &tmp, err) < 0) {
                ph_strv_free(&tmp);
                return ph_error_wrap(err, "%s:%d:%d: `%s`", y->path, ph_yaml_line(n), ph_yaml_col(n), key);
            }
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
            yaml_node_t *v = ph_yaml_node(y, pair->value);
            const char *ks = ph_yaml_key(y, pair);
            const char *vs;

            if (v->type != YAML_SCALAR_NODE)
                return ph_yaml_error(y, v, err, "`%s.%s` must be a string, number or boolean, not %s", key, ks,
                                     kind(v));
            /* `KEY:` with nothing after it is null: take it from the environment. */
            vs = ph_yaml_is_null(v) ? NULL : (const char *)v->data.scalar.value;
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
