/* ph_compose.c - the compose-spec subset profharness understands (see ph_compose.h).
 *
 * Two passes over one libyaml document: first every scalar *value* is
 * interpolated in place (${VAR} from the environment, then .env), so later
 * code sees final strings and errors still point at the right line; then
 * the tree is read into structs.  Unknown keys warn with file:line; wrong
 * types and bad references are errors with file:line:col.
 */
#include "ph_compose.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_yaml.h"

/* ---- string vectors --------------------------------------------------- */

void
ph_strv_free(ph_strv *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->v[i]);
    free(v->v);
    v->v = NULL;
    v->n = 0;
}

int
ph_strv_push(ph_strv *v, const char *s)
{
    char **nv = realloc(v->v, (v->n + 2) * sizeof *nv);
    char *c;

    if (nv == NULL)
        return -1;
    v->v = nv;
    c = strdup(s);
    if (c == NULL)
        return -1;
    v->v[v->n++] = c;
    v->v[v->n] = NULL;
    return 0;
}

void
ph_kvv_free(ph_kvv *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free(v->v[i].key);
        free(v->v[i].value);
    }
    free(v->v);
    v->v = NULL;
    v->n = 0;
}

int
ph_kvv_set(ph_kvv *v, const char *key, const char *value)
{
    char *val = value ? strdup(value) : NULL;
    ph_kv *nv;

    if (value && val == NULL)
        return -1;
    for (size_t i = 0; i < v->n; i++) {
        if (strcmp(v->v[i].key, key) == 0) {
            free(v->v[i].value);
            v->v[i].value = val;
            return 0;
        }
    }
    nv = realloc(v->v, (v->n + 1) * sizeof *nv);
    if (nv == NULL) {
        free(val);
        return -1;
    }
    v->v = nv;
    v->v[v->n].key = strdup(key);
    v->v[v->n].value = val;
    if (v->v[v->n].key == NULL) {
        free(val);
        return -1;
    }
    v->n++;
    return 0;
}

const char *
ph_kvv_get(const ph_kvv *v, const char *key)
{
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->v[i].key, key) == 0)
            return v->v[i].value;
    return NULL;
}

/* ---- durations, shell words, interpolation ---------------------------- */

int
ph_duration_parse(const char *s, long long *ns_out)
{
    long long total = 0;
    int any = 0;

    while (*s) {
        char *end;
        double v = strtod(s, &end);
        long long unit;

        if (end == s || v < 0)
            return -1;
        s = end;
        if (strncmp(s, "ms", 2) == 0) {
            unit = 1000000LL;
            s += 2;
        } else if (strncmp(s, "us", 2) == 0) {
            unit = 1000LL;
            s += 2;
        } else if (strncmp(s, "ns", 2) == 0) {
            unit = 1LL;
            s += 2;
        } else if (*s == 'h') {
            unit = 3600000000000LL;
            s++;
        } else if (*s == 'm') {
            unit = 60000000000LL;
            s++;
        } else if (*s == 's') {
            unit = 1000000000LL;
            s++;
        } else if (*s == '\0' && !any) {
            unit = 1000000000LL; /* a bare number: seconds */
        } else {
            return -1;
        }
        total += (long long)(v * (double)unit);
        any = 1;
    }
    if (!any)
        return -1;
    *ns_out = total;
    return 0;
}

int
ph_shell_split(const char *s, ph_strv *out, ph_error_t *err)
{
    char word[8192];
    size_t n = 0;
    int in_word = 0;
    char quote = 0;

    for (;; s++) {
        char c = *s;

        if (quote) {
            if (c == '\0')
                return ph_bad_input(err, "unterminated %c quote", quote);
            if (c == quote) {
                quote = 0;
                continue;
            }
            if (quote == '"' && c == '\\' && (s[1] == '"' || s[1] == '\\' || s[1] == '$' || s[1] == '`'))
                c = *++s;
        } else if (c == '\0' || c == ' ' || c == '\t' || c == '\n') {
            if (in_word) {
                word[n] = '\0';
                if (ph_strv_push(out, word) < 0)
                    return ph_fail(err, ENOMEM, "allocate");
                n = 0;
                in_word = 0;
            }
            if (c == '\0')
                return 0;
            continue;
        } else if (c == '\'' || c == '"') {
            quote = c;
            in_word = 1;
            continue;
        } else if (c == '\\') {
            if (s[1] == '\0')
                return ph_bad_input(err, "trailing backslash");
            c = *++s;
        }
        if (n + 1 >= sizeof word)
            return ph_bad_input(err, "a word longer than %zu bytes", sizeof word - 1);
        word[n++] = c;
        in_word = 1;
    }
}

char *
ph_interpolate(const char *in, ph_lookup_cb lookup, void *ud, const char *where, ph_error_t *err)
{
    size_t cap = strlen(in) + 64, len = 0;
    char *out = malloc(cap);

#define PUT(str, l)                                                    \
    do {                                                               \
        size_t _l = (l);                                               \
        if (len + _l + 1 > cap) {                                      \
            char *_n;                                                  \
            while (len + _l + 1 > cap)                                 \
                cap *= 2;                                              \
            _n = realloc(out, cap);                                    \
            if (_n == NULL)                                            \
                goto oom;                                              \
            out = _n;                                                  \
        }                                                              \
        memcpy(out + len, (str), _l);                                  \
        len += _l;                                                     \
    } while (0)

    if (out == NULL)
        goto oom;
    for (const char *p = in; *p;) {
        if (*p != '$') {
            PUT(p, 1);
            p++;
            continue;
        }
        if (p[1] == '$') {
            PUT("$", 1);
            p += 2;
            continue;
        }
        if (p[1] == '{') {
            const char *close = strchr(p + 2, '}');
            char expr[1024], name[256], *op;
            const char *val, *arg = NULL;
            size_t nl;

            if (close == NULL || (size_t)(close - p - 2) >= sizeof expr) {
                ph_bad_input(err, "%s: unterminated or overlong `${` in `%s`", where, in);
                free(out);
                return NULL;
            }
            memcpy(expr, p + 2, (size_t)(close - p - 2));
            expr[close - p - 2] = '\0';
            nl = strcspn(expr, ":-?+");
            if (nl == 0 || nl >= sizeof name) {
                ph_bad_input(err, "%s: bad variable expression `${%s}`", where, expr);
                free(out);
                return NULL;
            }
            memcpy(name, expr, nl);
            name[nl] = '\0';
            for (size_t i = 0; i < nl; i++) {
                if (!(isalnum((unsigned char)name[i]) || name[i] == '_')) {
                    ph_bad_input(err, "%s: bad variable name in `${%s}`", where, expr);
                    free(out);
                    return NULL;
                }
            }
            op = expr + nl;
            val = lookup(name, ud);
            if (*op == '\0') {
                if (val)
                    PUT(val, strlen(val));
            } else if (strncmp(op, ":-", 2) == 0 || op[0] == '-') {
                int colon = op[0] == ':';
                arg = op + (colon ? 2 : 1);
                if (val == NULL || (colon && val[0] == '\0'))
                    val = arg;
                PUT(val, strlen(val));
            } else if (strncmp(op, ":?", 2) == 0 || op[0] == '?') {
                int colon = op[0] == ':';
                arg = op + (colon ? 2 : 1);
                if (val == NULL || (colon && val[0] == '\0')) {
                    ph_bad_input(err, "%s: required variable %s is not set%s%s", where, name, arg[0] ? ": " : "",
                                 arg);
                    free(out);
                    return NULL;
                }
                PUT(val, strlen(val));
            } else if (strncmp(op, ":+", 2) == 0 || op[0] == '+') {
                int colon = op[0] == ':';
                arg = op + (colon ? 2 : 1);
                if (val != NULL && !(colon && val[0] == '\0'))
                    PUT(arg, strlen(arg));
            } else {
                ph_bad_input(err, "%s: bad variable expression `${%s}`", where, expr);
                free(out);
                return NULL;
            }
            p = close + 1;
            continue;
        }
        if (isalpha((unsigned char)p[1]) || p[1] == '_') {
            char name[256];
            size_t n = 0;
            const char *val;

            p++;
            while ((isalnum((unsigned char)*p) || *p == '_') && n + 1 < sizeof name)
                name[n++] = *p++;
            name[n] = '\0';
            val = lookup(name, ud);
            if (val)
                PUT(val, strlen(val));
            continue;
        }
        PUT(p, 1);
        p++;
    }
    PUT("", 1);
    return out;
oom:
    free(out);
    ph_fail(err, ENOMEM, "allocate");
    return NULL;
#undef PUT
}

/* ---- loading ---------------------------------------------------------- */

typedef struct loader {
    ph_yaml y;
    ph_kvv dotenv;
    ph_compose *c;
} loader;

static const char *
lookup_cb(const char *name, void *ud)
{
    loader *l = ud;
    const char *v = getenv(name);

    return v ? v : ph_kvv_get(&l->dotenv, name);
}

/* KEY=VALUE lines; # comments; optional quotes around the value. */
static int
read_env_file(const char *path, ph_kvv *out, int must_exist, ph_error_t *err)
{
    char line[8192];
    FILE *f = fopen(path, "re");
    int lineno = 0;

    if (f == NULL) {
        if (!must_exist && errno == ENOENT)
            return 0;
        return ph_error_make(err, errno, PH_EXIT_USAGE, "open `%s`", path);
    }
    while (fgets(line, sizeof line, f)) {
        char *s = line, *eq, *v, *end;

        lineno++;
        s[strcspn(s, "\r\n")] = '\0';
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '\0' || *s == '#')
            continue;
        if (strncmp(s, "export ", 7) == 0)
            s += 7;
        eq = strchr(s, '=');
        if (eq == NULL || eq == s) {
            fclose(f);
            return ph_bad_input(err, "%s:%d: expected KEY=VALUE", path, lineno);
        }
        *eq = '\0';
        v = eq + 1;
        end = v + strlen(v);
        if ((v[0] == '"' || v[0] == '\'') && end > v + 1 && end[-1] == v[0]) {
            end[-1] = '\0';
            v++;
        }
        if (ph_kvv_set(out, s, v) < 0) {
            fclose(f);
            return ph_fail(err, ENOMEM, "allocate");
        }
    }
    fclose(f);
    return 0;
}

static int
interpolate_tree(loader *l, yaml_node_t *n, ph_error_t *err)
{
    char where[PATH_MAX + 32];

    switch (n->type) {
    case YAML_SCALAR_NODE: {
        char *v;

        if (strchr((const char *)n->data.scalar.value, '$') == NULL)
            return 0;
        snprintf(where, sizeof where, "%s:%d", l->y.path, ph_yaml_line(n));
        v = ph_interpolate((const char *)n->data.scalar.value, lookup_cb, l, where, err);
        if (v == NULL)
            return -1;
        free(n->data.scalar.value);
        n->data.scalar.value = (yaml_char_t *)v;
        n->data.scalar.length = strlen(v);
        return 0;
    }
    case YAML_SEQUENCE_NODE:
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
            if (interpolate_tree(l, ph_yaml_node(&l->y, *it), err) < 0)
                return -1;
        return 0;
    case YAML_MAPPING_NODE:
        PH_YAML_FOREACH_PAIR(n, pair) {
            if (interpolate_tree(l, ph_yaml_node(&l->y, pair->value), err) < 0)
                return -1;
        }
        return 0;
    default:
        return 0;
    }
}

static char *
abs_path(const char *base_dir, const char *p)
{
    char *out = NULL, *real;

    if (p[0] == '/')
        out = strdup(p);
    else if (asprintf(&out, "%s/%s", base_dir, p) < 0)
        out = NULL;
    if (out == NULL)
        return NULL;
    real = realpath(out, NULL);
    if (real) {
        free(out);
        return real;
    }
    return out;
}

#define KEY(k) (strcmp(key, (k)) == 0)

static int
read_build(loader *l, ph_service *s, yaml_node_t *v, ph_error_t *err)
{
    s->has_build = 1;
    if (v->type == YAML_SCALAR_NODE) {
        s->build_context = abs_path(l->c->dir, (const char *)v->data.scalar.value);
        return s->build_context ? 0 : ph_fail(err, ENOMEM, "allocate");
    }
    if (v->type != YAML_MAPPING_NODE)
        return ph_yaml_error(&l->y, v, err, "`build` must be a path or a mapping");
    if (ph_yaml_check_dups(&l->y, v, err) < 0)
        return -1;
    PH_YAML_FOREACH_PAIR(v, pair) {
        yaml_node_t *kn = ph_yaml_node(&l->y, pair->key), *vn = ph_yaml_node(&l->y, pair->value);
        const char *key = (const char *)kn->data.scalar.value, *sv;

        if (KEY("context")) {
            if ((sv = ph_yaml_scalar(&l->y, vn, "build.context", err)) == NULL)
                return -1;
            free(s->build_context);
            s->build_context = abs_path(l->c->dir, sv);
        } else if (KEY("dockerfile")) {
            if ((sv = ph_yaml_scalar(&l->y, vn, "build.dockerfile", err)) == NULL)
                return -1;
            free(s->build_dockerfile);
            s->build_dockerfile = strdup(sv);
        } else if (KEY("args")) {
            if (ph_yaml_kvv(&l->y, vn, "build.args", &s->build_args, err) < 0)
                return -1;
        } else {
            ph_warn("%s:%d: unknown key `build.%s` in service `%s` (ignored)", l->y.path, ph_yaml_line(kn), key,
                    s->name);
        }
    }
    if (s->build_context == NULL)
        s->build_context = strdup(l->c->dir);
    return 0;
}

static int
parse_port(loader *l, yaml_node_t *n, const char *spec, ph_port *p, ph_error_t *err)
{
    char buf[256], *parts[3], *slash, *save = NULL, *tok;
    int np = 0;

    if (strlen(spec) >= sizeof buf)
        return ph_yaml_error(&l->y, n, err, "port `%s` is too long", spec);
    strcpy(buf, spec);
    slash = strchr(buf, '/');
    if (slash) {
        *slash = '\0';
        p->protocol = strdup(slash + 1);
    } else {
        p->protocol = strdup("tcp");
    }
    /* IPv6 host IPs in brackets are not supported here. */
    for (tok = strtok_r(buf, ":", &save); tok && np < 3; tok = strtok_r(NULL, ":", &save))
        parts[np++] = tok;
    if (tok != NULL || np == 0)
        return ph_yaml_error(&l->y, n, err, "port `%s`: expected [[IP:]HOST:]CONTAINER[/PROTO]", spec);
    for (int i = np == 3 ? 1 : 0; i < np; i++) {
        for (const char *c = parts[i]; *c; c++)
            if (!isdigit((unsigned char)*c) && *c != '-')
                return ph_yaml_error(&l->y, n, err, "port `%s`: `%s` is not a port number", spec, parts[i]);
    }
    p->container_port = strdup(parts[np - 1]);
    if (np >= 2)
        p->host_port = strdup(parts[np - 2]);
    if (np == 3)
        p->host_ip = strdup(parts[0]);
    return 0;
}

static int
read_ports(loader *l, ph_service *s, yaml_node_t *v, ph_error_t *err)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return ph_yaml_error(&l->y, v, err, "`ports` must be a list");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
        yaml_node_t *item = ph_yaml_node(&l->y, *it);
        ph_port *np = realloc(s->ports, (s->n_ports + 1) * sizeof *np), *p;

        if (np == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        s->ports = np;
        p = &s->ports[s->n_ports++];
        memset(p, 0, sizeof *p);
        if (item->type == YAML_SCALAR_NODE) {
            if (parse_port(l, item, (const char *)item->data.scalar.value, p, err) < 0)
                return -1;
        } else if (item->type == YAML_MAPPING_NODE) {
            PH_YAML_FOREACH_PAIR(item, pair) {
                yaml_node_t *kn = ph_yaml_node(&l->y, pair->key), *vn = ph_yaml_node(&l->y, pair->value);
                const char *key = (const char *)kn->data.scalar.value;
                const char *sv = ph_yaml_scalar(&l->y, vn, key, err);

                if (sv == NULL)
                    return -1;
                if (KEY("target"))
                    p->container_port = strdup(sv);
                else if (KEY("published"))
                    p->host_port = strdup(sv);
                else if (KEY("host_ip"))
                    p->host_ip = strdup(sv);
                else if (KEY("protocol"))
                    p->protocol = strdup(sv);
                else if (!KEY("mode") && !KEY("name") && !KEY("app_protocol"))
                    ph_warn("%s:%d: unknown key `ports.%s` in service `%s` (ignored)", l->y.path,
                            ph_yaml_line(kn), key, s->name);
            }
            if (p->container_port == NULL)
                return ph_yaml_error(&l->y, item, err, "a port needs `target`");
            if (p->protocol == NULL)
                p->protocol = strdup("tcp");
        } else {
            return ph_yaml_error(&l->y, item, err, "a port must be a string or a mapping");
        }
    }
    return 0;
}

static int
add_volume(loader *l, ph_service *s, yaml_node_t *n, const char *source, const char *target, int ro,
           const char *type, ph_error_t *err)
{
    ph_volume *nv = realloc(s->volumes, (s->n_volumes + 1) * sizeof *nv), *v;
    int bind;

    if (nv == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    s->volumes = nv;
    v = &s->volumes[s->n_volumes++];
    memset(v, 0, sizeof *v);
    if (target == NULL || target[0] != '/')
        return ph_yaml_error(&l->y, n, err, "volume target `%s` must be an absolute path", target ? target : "");
    bind = type ? strcmp(type, "bind") == 0
                : source && (source[0] == '/' || source[0] == '.' || source[0] == '~');
    v->bind = bind;
    v->read_only = ro;
    v->target = strdup(target);
    if (source != NULL) {
        if (bind && source[0] == '~') {
            const char *home = getenv("HOME");
            char *p = NULL;
            if (asprintf(&p, "%s%s", home ? home : "", source + 1) < 0)
                return ph_fail(err, ENOMEM, "allocate");
            v->source = p;
        } else {
            v->source = bind ? abs_path(l->c->dir, source) : strdup(source);
        }
        if (!bind) {
            int declared = 0;
            for (size_t i = 0; i < l->c->volumes.n; i++)
                declared |= strcmp(l->c->volumes.v[i], source) == 0;
            if (!declared)
                return ph_yaml_error(&l->y, n, err, "service `%s` uses volume `%s`, which the top-level `volumes:` does not declare",
                                     s->name, source);
        }
    }
    return 0;
}

static int
read_volumes(loader *l, ph_service *s, yaml_node_t *v, ph_error_t *err)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return ph_yaml_error(&l->y, v, err, "`volumes` must be a list");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
        yaml_node_t *item = ph_yaml_node(&l->y, *it);

        if (item->type == YAML_SCALAR_NODE) {
            char buf[PATH_MAX * 2], *f[3] = { 0 }, *save = NULL, *tok;
            int nf = 0;

            snprintf(buf, sizeof buf, "%s", (const char *)item->data.scalar.value);
            for (tok = strtok_r(buf, ":", &save); tok && nf < 3; tok = strtok_r(NULL, ":", &save))
                f[nf++] = tok;
            if (nf == 1) {
                if (add_volume(l, s, item, NULL, f[0], 0, NULL, err) < 0)
                    return -1;
            } else {
                int ro = nf == 3 && strstr(f[2], "ro") != NULL && strstr(f[2], "rw") == NULL;
                if (add_volume(l, s, item, f[0], f[1], ro, NULL, err) < 0)
                    return -1;
            }
        } else if (item->type == YAML_MAPPING_NODE) {
            const char *src = NULL, *dst = NULL, *type = NULL;
            int ro = 0;

            PH_YAML_FOREACH_PAIR(item, pair) {
                yaml_node_t *kn = ph_yaml_node(&l->y, pair->key), *vn = ph_yaml_node(&l->y, pair->value);
                const char *key = (const char *)kn->data.scalar.value;

                if (KEY("source")) {
                    if ((src = ph_yaml_scalar(&l->y, vn, "volumes.source", err)) == NULL)
                        return -1;
                } else if (KEY("target")) {
                    if ((dst = ph_yaml_scalar(&l->y, vn, "volumes.target", err)) == NULL)
                        return -1;
                } else if (KEY("type")) {
                    if ((type = ph_yaml_scalar(&l->y, vn, "volumes.type", err)) == NULL)
                        return -1;
                } else if (KEY("read_only")) {
                    if (ph_yaml_bool(&l->y, vn, "volumes.read_only", &ro, err) < 0)
                        return -1;
                } else {
                    ph_warn("%s:%d: unknown key `volumes.%s` in service `%s` (ignored)", l->y.path,
                            ph_yaml_line(kn), key, s->name);
                }
            }
            if (add_volume(l, s, item, src, dst, ro, type, err) < 0)
                return -1;
        } else {
            return ph_yaml_error(&l->y, item, err, "a volume must be a string or a mapping");
        }
    }
    return 0;
}

static int
read_healthcheck(loader *l, ph_service *s, yaml_node_t *v, ph_error_t *err)
{
    ph_healthcheck *h = &s->healthcheck;

    if (v->type != YAML_MAPPING_NODE)
        return ph_yaml_error(&l->y, v, err, "`healthcheck` must be a mapping");
    h->present = 1;
    PH_YAML_FOREACH_PAIR(v, pair) {
        yaml_node_t *kn = ph_yaml_node(&l->y, pair->key), *vn = ph_yaml_node(&l->y, pair->value);
        const char *key = (const char *)kn->data.scalar.value;
        int rc = 0;

        if (KEY("test")) {
            if (vn->type == YAML_SCALAR_NODE) {
                rc = ph_strv_push(&h->test, "CMD-SHELL") < 0 || ph_strv_push(&h->test, (const char *)vn->data.scalar.value) < 0
                         ? ph_fail(err, ENOMEM, "allocate")
                         : 0;
            } else {
                rc = ph_yaml_strv(&l->y, vn, "healthcheck.test", 0, 0, &h->test, err);
            }
        } else if (KEY("interval")) {
            rc = ph_yaml_duration(&l->y, vn, "healthcheck.interval", &h->interval_ns, err);
        } else if (KEY("timeout")) {
            rc = ph_yaml_duration(&l->y, vn, "healthcheck.timeout", &h->timeout_ns, err);
        } else if (KEY("start_period")) {
            rc = ph_yaml_duration(&l->y, vn, "healthcheck.start_period", &h->start_period_ns, err);
        } else if (KEY("retries")) {
            const char *sv = ph_yaml_scalar(&l->y, vn, "healthcheck.retries", err);
            char *end;
            if (sv == NULL)
                return -1;
            h->retries = (int)strtol(sv, &end, 10);
            if (*end != '\0' || h->retries < 0)
                rc = ph_yaml_error(&l->y, vn, err, "`healthcheck.retries` must be a number");
        } else if (KEY("disable")) {
            rc = ph_yaml_bool(&l->y, vn, "healthcheck.disable", &h->disable, err);
        } else {
            ph_warn("%s:%d: unknown key `healthcheck.%s` in service `%s` (ignored)", l->y.path, ph_yaml_line(kn),
                    key, s->name);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int
read_service(loader *l, ph_service *s, yaml_node_t *map, ph_error_t *err)
{
    ph_kvv env_file = { 0 }, env = { 0 };
    int rc = 0;

    s->stop_grace_ns = -1;
    if (map->type != YAML_MAPPING_NODE)
        return ph_yaml_error(&l->y, map, err, "service `%s` must be a mapping", s->name);
    if (ph_yaml_check_dups(&l->y, map, err) < 0)
        return -1;
    PH_YAML_FOREACH_PAIR(map, pair) {
        yaml_node_t *kn = ph_yaml_node(&l->y, pair->key), *v = ph_yaml_node(&l->y, pair->value);
        const char *key = (const char *)kn->data.scalar.value, *sv;

        if (KEY("image")) {
            if ((sv = ph_yaml_scalar(&l->y, v, "image", err)) == NULL)
                goto fail;
            s->image = strdup(sv);
        } else if (KEY("build")) {
            rc = read_build(l, s, v, err);
        } else if (KEY("command")) {
            s->has_command = 1;
            rc = ph_yaml_strv(&l->y, v, "command", 1, 1, &s->command, err);
        } else if (KEY("entrypoint")) {
            s->has_entrypoint = 1;
            rc = ph_yaml_strv(&l->y, v, "entrypoint", 1, 1, &s->entrypoint, err);
        } else if (KEY("environment")) {
            rc = ph_yaml_kvv(&l->y, v, "environment", &env, err);
        } else if (KEY("env_file")) {
            ph_strv files = { 0 };

            rc = ph_yaml_strv(&l->y, v, "env_file", 1, 0, &files, err);
            for (size_t i = 0; rc == 0 && i < files.n; i++) {
                char *p = abs_path(l->c->dir, files.v[i]);
                rc = p ? read_env_file(p, &env_file, 1, err) : ph_fail(err, ENOMEM, "allocate");
                if (rc < 0)
                    ph_error_wrap(err, "%s:%d: env_file", l->y.path, ph_yaml_line(v));
                free(p);
            }
            ph_strv_free(&files);
        } else if (KEY("working_dir")) {
            if ((sv = ph_yaml_scalar(&l->y, v, "working_dir", err)) == NULL)
                goto fail;
            s->working_dir = strdup(sv);
        } else if (KEY("user")) {
            if ((sv = ph_yaml_scalar(&l->y, v, "user", err)) == NULL)
                goto fail;
            s->user = strdup(sv);
        } else if (KEY("ports")) {
            rc = read_ports(l, s, v, err);
        } else if (KEY("volumes")) {
            rc = read_volumes(l, s, v, err);
        } else if (KEY("networks")) {
            if (v->type == YAML_MAPPING_NODE) {
                PH_YAML_FOREACH_PAIR(v, np) {
                    yaml_node_t *nk = ph_yaml_node(&l->y, np->key);
                    if (ph_strv_push(&s->networks, (const char *)nk->data.scalar.value) < 0)
                        rc = ph_fail(err, ENOMEM, "allocate");
                }
            } else {
                rc = ph_yaml_strv(&l->y, v, "networks", 0, 0, &s->networks, err);
            }
            for (size_t i = 0; rc == 0 && i < s->networks.n; i++) {
                int declared = strcmp(s->networks.v[i], "default") == 0;
                for (size_t j = 0; j < l->c->networks.n; j++)
                    declared |= strcmp(l->c->networks.v[j], s->networks.v[i]) == 0;
                if (!declared)
                    rc = ph_yaml_error(&l->y, v, err, "service `%s` uses network `%s`, which the top-level `networks:` does not declare",
                                       s->name, s->networks.v[i]);
            }
        } else if (KEY("depends_on")) {
            if (v->type == YAML_MAPPING_NODE) {
                PH_YAML_FOREACH_PAIR(v, dp) {
                    yaml_node_t *dk = ph_yaml_node(&l->y, dp->key);
                    if (ph_strv_push(&s->depends_on, (const char *)dk->data.scalar.value) < 0)
                        rc = ph_fail(err, ENOMEM, "allocate");
                }
            } else {
                rc = ph_yaml_strv(&l->y, v, "depends_on", 0, 0, &s->depends_on, err);
            }
        } else if (KEY("cap_add")) {
            rc = ph_yaml_strv(&l->y, v, "cap_add", 0, 0, &s->cap_add, err);
        } else if (KEY("cap_drop")) {
            rc = ph_yaml_strv(&l->y, v, "cap_drop", 0, 0, &s->cap_drop, err);
        } else if (KEY("security_opt")) {
            rc = ph_yaml_strv(&l->y, v, "security_opt", 0, 0, &s->security_opt, err);
        } else if (KEY("privileged")) {
            rc = ph_yaml_bool(&l->y, v, "privileged", &s->privileged, err);
        } else if (KEY("stop_signal")) {
            char buf[16];
            const char *norm;
            if ((sv = ph_yaml_scalar(&l->y, v, "stop_signal", err)) == NULL)
                goto fail;
            norm = ph_signal_normalise(sv, buf);
            if (norm == NULL)
                rc = ph_yaml_error(&l->y, v, err, "`stop_signal`: `%s` is not a signal", sv);
            else
                s->stop_signal = strdup(norm);
        } else if (KEY("stop_grace_period")) {
            rc = ph_yaml_duration(&l->y, v, "stop_grace_period", &s->stop_grace_ns, err);
        } else if (KEY("healthcheck")) {
            rc = read_healthcheck(l, s, v, err);
        } else if (KEY("labels")) {
            rc = ph_yaml_kvv(&l->y, v, "labels", &s->labels, err);
        } else if (KEY("container_name")) {
            if ((sv = ph_yaml_scalar(&l->y, v, "container_name", err)) == NULL)
                goto fail;
            s->container_name = strdup(sv);
        } else if (strncmp(key, "x-", 2) == 0) {
            /* extension fields: ignored, as compose does */
        } else {
            ph_warn("%s:%d: unknown key `%s` in service `%s` (ignored)", l->y.path, ph_yaml_line(kn), key, s->name);
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
        return ph_yaml_error(&l->y, map, err, "service `%s` has neither `image` nor `build`", s->name);
    return 0;
oom:
    ph_fail(err, ENOMEM, "allocate");
fail:
    ph_kvv_free(&env_file);
    ph_kvv_free(&env);
    return -1;
}

static void
service_free(ph_service *s)
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

void
ph_compose_free(ph_compose *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_services; i++)
        service_free(&c->services[i]);
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
    for (size_t i = 0; i < c->n_services; i++)
        if (strcmp(c->services[i].name, name) == 0)
            return &c->services[i];
    return NULL;
}

/* Like compose: lowercase, keep [a-z0-9_-], must start with a letter or digit. */
static char *
normalise_project(const char *in)
{
    char *out = malloc(strlen(in) + 1);
    size_t j = 0;

    if (out == NULL)
        return NULL;
    for (const char *p = in; *p; p++) {
        char ch = (char)tolower((unsigned char)*p);
        if (isalnum((unsigned char)ch) || ((ch == '_' || ch == '-') && j > 0))
            out[j++] = ch;
    }
    out[j] = '\0';
    return out;
}

static int
read_top_names(loader *l, yaml_node_t *v, const char *key, ph_strv *out, ph_error_t *err)
{
    if (v->type == YAML_SCALAR_NODE && v->data.scalar.length == 0)
        return 0;
    if (v->type != YAML_MAPPING_NODE)
        return ph_yaml_error(&l->y, v, err, "top-level `%s` must be a mapping", key);
    PH_YAML_FOREACH_PAIR(v, pair) {
        yaml_node_t *kn = ph_yaml_node(&l->y, pair->key);
        if (ph_strv_push(out, (const char *)kn->data.scalar.value) < 0)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

int
ph_compose_load(const char *path, const char *project_override, ph_compose **out, ph_error_t *err)
{
    loader l = { 0 };
    ph_compose *c;
    yaml_node_t *root, *services = NULL;
    char *tmp = NULL, envpath[PATH_MAX + 8];
    const char *name = NULL;

    *out = NULL;
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return ph_fail(err, errno, "allocate");
    l.c = c;
    c->path = strdup(path);
    tmp = realpath(path, NULL);
    if (tmp == NULL) {
        ph_error_make(err, errno, errno == ENOENT ? PH_EXIT_USAGE : PH_EXIT_FAILURE, "open `%s`", path);
        goto fail;
    }
    c->dir = strdup(dirname(tmp));
    free(tmp);
    tmp = NULL;
    snprintf(envpath, sizeof envpath, "%s/.env", c->dir);
    if (read_env_file(envpath, &l.dotenv, 0, err) < 0)
        goto fail;
    if (ph_yaml_load(&l.y, path, err) < 0)
        goto fail;
    root = ph_yaml_root(&l.y);
    if (root->type != YAML_MAPPING_NODE) {
        ph_yaml_error(&l.y, root, err, "a compose file is a mapping with `services:`");
        goto fail;
    }
    if (ph_yaml_check_dups(&l.y, root, err) < 0 || interpolate_tree(&l, root, err) < 0)
        goto fail;

    /* Top-level names first: services refer to them. */
    PH_YAML_FOREACH_PAIR(root, pair) {
        yaml_node_t *kn = ph_yaml_node(&l.y, pair->key), *v = ph_yaml_node(&l.y, pair->value);
        const char *key = (const char *)kn->data.scalar.value;

        if (KEY("services")) {
            services = v;
        } else if (KEY("name")) {
            if ((name = ph_yaml_scalar(&l.y, v, "name", err)) == NULL)
                goto fail;
        } else if (KEY("volumes")) {
            if (read_top_names(&l, v, "volumes", &c->volumes, err) < 0)
                goto fail;
        } else if (KEY("networks")) {
            if (read_top_names(&l, v, "networks", &c->networks, err) < 0)
                goto fail;
        } else if (KEY("version") || strncmp(key, "x-", 2) == 0) {
            /* obsolete / extension: accepted */
        } else {
            ph_warn("%s:%d: unknown top-level key `%s` (ignored)", path, ph_yaml_line(kn), key);
        }
    }
    if (services == NULL) {
        ph_yaml_error(&l.y, root, err, "no `services:`");
        goto fail;
    }
    if (services->type != YAML_MAPPING_NODE) {
        ph_yaml_error(&l.y, services, err, "`services` must be a mapping of service names");
        goto fail;
    }
    if (ph_yaml_check_dups(&l.y, services, err) < 0)
        goto fail;
    {
        size_t n = (size_t)(services->data.mapping.pairs.top - services->data.mapping.pairs.start);
        c->services = calloc(n ? n : 1, sizeof *c->services);
        if (c->services == NULL) {
            ph_fail(err, ENOMEM, "allocate");
            goto fail;
        }
    }
    PH_YAML_FOREACH_PAIR(services, pair) {
        yaml_node_t *kn = ph_yaml_node(&l.y, pair->key), *v = ph_yaml_node(&l.y, pair->value);
        ph_service *s = &c->services[c->n_services++];

        s->name = strdup((const char *)kn->data.scalar.value);
        s->line = ph_yaml_line(kn);
        if (s->name == NULL || read_service(&l, s, v, err) < 0)
            goto fail;
    }
    /* depends_on must name services of this file. */
    PH_YAML_FOREACH_PAIR(services, pair) {
        yaml_node_t *kn = ph_yaml_node(&l.y, pair->key);
        ph_service *s = ph_compose_service(c, (const char *)kn->data.scalar.value);

        for (size_t i = 0; i < s->depends_on.n; i++) {
            if (ph_compose_service(c, s->depends_on.v[i]) == NULL) {
                ph_bad_input(err, "%s:%d: service `%s` depends on `%s`, which is not a service in this file", path,
                             s->line, s->name, s->depends_on.v[i]);
                goto fail;
            }
        }
    }
    if (project_override)
        c->project = normalise_project(project_override);
    else if (name)
        c->project = normalise_project(name);
    else {
        const char *base = strrchr(c->dir, '/');
        c->project = normalise_project(base ? base + 1 : c->dir);
    }
    if (c->project == NULL || c->project[0] == '\0') {
        ph_bad_input(err, "%s: cannot make a project name (use `name:` or -p)", path);
        goto fail;
    }
    ph_yaml_free(&l.y);
    ph_kvv_free(&l.dotenv);
    *out = c;
    return 0;
fail:
    ph_yaml_free(&l.y);
    ph_kvv_free(&l.dotenv);
    ph_compose_free(c);
    return -1;
}
