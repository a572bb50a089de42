/* ph_compose.c - the compose-spec subset profharness understands (see ph_compose.h).
 *
 * ph_yaml_load() hands over one libyaml document whose mappings are already
 * checked (scalar keys, no duplicates) and merged (`<<: *anchor`).  Then two
 * passes: every scalar *value* is interpolated in place (${VAR} from the
 * environment, then .env), once per node even when aliases share it, so
 * later code sees final strings and errors still point at the right line;
 * then the tree is read into structs.  Unknown keys warn with file:line;
 * wrong types and bad references are errors with file:line:col.  Nothing
 * is returned on error: the half-built ph_compose is freed whole.
 */
#include "ph_compose.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_strings.h"
#include "ph_util.h"
#include "ph_yaml.h"

/* ---- interpolation ----------------------------------------------------- */

/* `${A:-${B:-...}}` nests; real files nest two or three levels.  The
 * limit keeps the recursion (one level per nesting) off the stack's end. */
#define INTERP_MAX_DEPTH 32

/* A growable output string with a ceiling: a value that expands past it is
 * refused rather than eating memory (one variable holding a huge value,
 * repeated, is the way that happens). */
#define INTERP_MAX (1u << 20)

typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

static int
sbuf_put(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > INTERP_MAX)
        return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        char *ns;

        while (cap < b->len + n + 1)
            cap *= 2;
        ns = realloc(b->s, cap);
        if (ns == NULL)
            return -1;
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
    return 0;
}

static int
is_name_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static int
is_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* The `}` closing the `${` at P, counting nested `${...}`; NULL if none. */
static const char *
closing_brace(const char *p)
{
    int depth = 1;

    for (p += 2; *p; p++) {
        if (p[0] == '$' && p[1] == '$') {
            p++;
        } else if (p[0] == '$' && p[1] == '{') {
            depth++;
            p++;
        } else if (*p == '}' && --depth == 0) {
            return p;
        }
    }
    return NULL;
}

static int interp_into(sbuf *b, const char *in, ph_lookup_cb lookup, void *ud, const char *where, int depth,
                       ph_error_t *err);

/* One `${...}` whose inside is EXPR.  The word after the operator is itself
 * interpolated (compose does), but only when it is used, so that a `:?`
 * inside an unused default does not fire. */
static int
interp_braced(sbuf *b, const char *expr, ph_lookup_cb lookup, void *ud, const char *where, int depth,
              ph_error_t *err)
{
    char name[256];
    const char *op, *val, *arg;
    size_t nl = 0;
    int colon, unset;

    while (is_name_char(expr[nl]))
        nl++;
    if (nl == 0 || !is_name_start(expr[0]) || nl >= sizeof name)
        return ph_bad_input(err, "%s: bad variable name in `${%s}`", where, expr);
    memcpy(name, expr, nl);
    name[nl] = '\0';
    op = expr + nl;
    val = lookup(name, ud);
    if (*op == '\0')
        return val && sbuf_put(b, val, strlen(val)) < 0 ? ph_bad_input(err, "%s: `%s` expands too far", where, name)
                                                         : 0;
    colon = op[0] == ':';
    arg = op + colon + 1;
    unset = val == NULL || (colon && val[0] == '\0');
    switch (op[colon]) {
    case '-':
        if (unset)
            return interp_into(b, arg, lookup, ud, where, depth, err);
        break;
    case '+':
        if (!unset)
            return interp_into(b, arg, lookup, ud, where, depth, err);
        return 0;
    case '?':
        if (unset) {
            sbuf msg = { 0 };
            int rc = interp_into(&msg, arg, lookup, ud, where, depth, err);

            if (rc == 0)
                ph_bad_input(err, "%s: required variable %s is %s%s%s", where, name, val ? "empty" : "not set",
                             msg.len ? ": " : "", msg.len ? msg.s : "");
            free(msg.s);
            return -1;
        }
        break;
    default:
        return ph_bad_input(err, "%s: bad variable expression `${%s}` (expected ${%s}, ${%s:-default}, ${%s:?error})",
                            where, expr, name, name, name);
    }
    if (sbuf_put(b, val, strlen(val)) < 0)
        return ph_bad_input(err, "%s: `%s` expands too far", where, name);
    return 0;
}

static int
interp_into(sbuf *b, const char *in, ph_lookup_cb lookup, void *ud, const char *where, int depth, ph_error_t *err)
{
    const char *p = in;

    if (sbuf_put(b, "", 0) < 0)
        return ph_fail(err, ENOMEM, "allocate");
    while (*p) {
        size_t lit = strcspn(p, "$");
        int rc = 0;

        if (lit > 0) {
            rc = sbuf_put(b, p, lit);
            p += lit;
        } else if (p[1] == '$') {
            rc = sbuf_put(b, "$", 1);
            p += 2;
        } else if (p[1] == '{') {
            const char *close = closing_brace(p);
            char *expr;

            if (close == NULL)
                return ph_bad_input(err, "%s: unterminated `${` in `%.200s` (write `$$` for a literal `$`)", where, in);
            if (depth == INTERP_MAX_DEPTH)
                return ph_bad_input(err, "%s: `${...}` nested deeper than %d levels", where, INTERP_MAX_DEPTH);
            expr = strndup(p + 2, (size_t)(close - p - 2));
            if (expr == NULL)
                return ph_fail(err, ENOMEM, "allocate");
            rc = interp_braced(b, expr, lookup, ud, where, depth + 1, err);
            free(expr);
            if (rc < 0)
                return -1;
            p = close + 1;
            continue;
        } else if (is_name_start(p[1])) {
            char name[256];
            size_t n = 0;
            const char *val;

            for (p++; is_name_char(*p); p++)
                if (n + 1 < sizeof name)
                    name[n++] = *p;
            name[n] = '\0';
            val = lookup(name, ud);
            if (val)
                rc = sbuf_put(b, val, strlen(val));
        } else {
            /* `$` before anything else is kept, as compose does. */
            rc = sbuf_put(b, p, 1);
            p++;
        }
        if (rc < 0)
            return ph_bad_input(err, "%s: the value expands past %u bytes", where, INTERP_MAX);
    }
    return 0;
}

char *
ph_interpolate(const char *in, ph_lookup_cb lookup, void *ud, const char *where, ph_error_t *err)
{
    sbuf b = { 0 };

    if (interp_into(&b, in, lookup, ud, where ? where : "", 0, err) < 0) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* ---- loading ---------------------------------------------------------- */

typedef struct loader {
    ph_ynode *root;
    ph_kvv dotenv;
    ph_compose *c;
    ph_ynode **depends; /* per service: its depends_on node, checked once all services are known */
} loader;

#define KEY(k) (strcmp(key, (k)) == 0)

static const char *
lookup_cb(const char *name, void *ud)
{
    loader *l = ud;
    const char *v = getenv(name);

    return v ? v : ph_kvv_get(&l->dotenv, name);
}

static int
dup_str(const char *s, char **dst, ph_error_t *err)
{
    char *c = strdup(s);

    if (c == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    free(*dst);
    *dst = c;
    return 0;
}

static void
warn_unknown(loader *l, const ph_ypair *pair, const char *prefix, const char *service)
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
static char *
abs_path(const char *base_dir, const char *p)
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

/* KEY=VALUE lines, `export ` allowed, # comments and blank lines skipped;
 * a value in matching quotes is taken as is, an unquoted one ends at ` #`. */
static int
read_env_file(const char *path, ph_kvv *out, int must_exist, ph_error_t *err)
{
    char line[8192];
    FILE *f = NULL;
    struct stat st;
    int lineno = 0, rc = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; a FIFO or a
     * directory is then refused rather than blocked on or read as empty. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

    if (fd < 0) {
        if (!must_exist && errno == ENOENT)
            return 0;
        return ph_error_make(err, errno, errno == ENOENT ? PH_EXIT_USAGE : PH_EXIT_FAILURE, "open `%s`", path);
    }
    if (fstat(fd, &st) < 0) {
        rc = ph_fail(err, errno, "stat `%s`", path);
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ph_bad_input(err, "`%s` is not a regular file", path);
    }
    f = fdopen(fd, "r");
    if (f == NULL) {
        rc = ph_fail(err, errno, "open `%s`", path);
        close(fd);
        return rc;
    }
    while (rc == 0 && fgets(line, sizeof line, f)) {
        char *s = line, *eq, *v, *end;
        size_t len = strlen(line);

        lineno++;
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f)) {
            rc = ph_bad_input(err, "%s:%d: line longer than %zu bytes", path, lineno, sizeof line - 2);
            break;
        }
        s[strcspn(s, "\r\n")] = '\0';
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '\0' || *s == '#')
            continue;
        if (strncmp(s, "export ", 7) == 0)
            for (s += 7; isspace((unsigned char)*s); s++)
                ;
        eq = strchr(s, '=');
        if (eq == NULL) {
            rc = ph_bad_input(err, "%s:%d: expected KEY=VALUE, got `%s`", path, lineno, s);
            break;
        }
        for (end = eq; end > s && isspace((unsigned char)end[-1]); end--)
            ;
        *end = '\0';
        if (!is_name_start(*s) || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
                                      strlen(s)) {
            rc = ph_bad_input(err, "%s:%d: `%s` is not a variable name", path, lineno, s);
            break;
        }
        for (v = eq + 1; *v == ' ' || *v == '\t'; v++)
            ;
        end = v + strlen(v);
        if ((v[0] == '"' || v[0] == '\'') && strchr(v + 1, v[0]) != NULL) {
            end = strchr(v + 1, v[0]);
            v++;
        } else {
            char *hash = strstr(v, " #");
            if (hash)
                end = hash;
            while (end > v && isspace((unsigned char)end[-1]))
                end--;
        }
        *end = '\0';
        if (ph_kvv_set(out, s, v) < 0)
            rc = ph_fail(err, ENOMEM, "allocate");
    }
    fclose(f);
    return rc;
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
interpolate_values(loader *l, ph_ynode *n, unsigned key, unsigned done, ph_error_t *err)
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
interpolate_document(loader *l, ph_error_t *err)
{
    unsigned key = ph_yaml_next_mark(), seen = ph_yaml_next_mark();

    mark_keys(l->root, key, seen);
    return interpolate_values(l, l->root, key, ph_yaml_next_mark(), err);
}

static int
read_build(loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    s->has_build = 1;
    if (v->kind == PH_Y_SCALAR) {
        const char *ctx = ph_yaml_nonempty(v, "build", err);

        if (ctx == NULL)
            return -1;
        if ((s->build_context = abs_path(l->c->dir, ctx)) == NULL)
            return ph_fail(err, ENOMEM, "allocate");
    } else if (v->kind != PH_Y_MAP) {
        return ph_yaml_error(v, err, "`build` must be a path or a mapping, not a list");
    }
    if (v->kind == PH_Y_MAP) {
        PH_YAML_FOREACH_PAIR(v, pair) {
            ph_ynode *vn = pair->value;
            const char *key = ph_yaml_key(pair), *sv;
            int rc = 0;

            if (KEY("context")) {
                if ((sv = ph_yaml_nonempty(vn, "build.context", err)) == NULL)
                    return -1;
                free(s->build_context);
                s->build_context = abs_path(l->c->dir, sv);
                if (s->build_context == NULL)
                    rc = ph_fail(err, ENOMEM, "allocate");
            } else if (KEY("dockerfile")) {
                rc = ph_yaml_dup(vn, "build.dockerfile", &s->build_dockerfile, err);
            } else if (KEY("args")) {
                rc = ph_yaml_kvv(vn, "build.args", &s->build_args, err);
            } else {
                warn_unknown(l, pair, "build.", s->name);
            }
            if (rc < 0)
                return -1;
        }
    }
    if (s->build_context == NULL && (s->build_context = strdup(l->c->dir)) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (s->build_dockerfile == NULL && (s->build_dockerfile = strdup("Dockerfile")) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

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

/* Short syntax: [[IP:][HOST]:]CONTAINER[/PROTO], IPv6 in brackets. */
static int
parse_port(loader *l, ph_ynode *n, const char *spec, ph_port *p, ph_error_t *err)
{
    char buf[256], *proto, *rest = buf, *ip = NULL, *host = NULL, *ctr, *colon;

    if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
        return ph_yaml_error(n, err, "port `%.32s...` is too long", spec);
    proto = strrchr(buf, '/');
    if (proto)
        *proto++ = '\0';
    if (proto && strcmp(proto, "tcp") != 0 && strcmp(proto, "udp") != 0 && strcmp(proto, "sctp") != 0)
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
    if (dup_str(ctr, &p->container_port, err) < 0 || dup_str(proto ? proto : "tcp", &p->protocol, err) < 0 ||
        (host && host[0] && dup_str(host, &p->host_port, err) < 0) || (ip && dup_str(ip, &p->host_ip, err) < 0))
        return -1;
    return 0;
}

static int
read_port_long(loader *l, ph_service *s, ph_ynode *item, ph_port *p, ph_error_t *err)
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
            warn_unknown(l, pair, "ports.", s->name);
        if (dst && ph_yaml_dup(vn, key, dst, err) < 0)
            return -1;
        if (dst == &p->host_port && !valid_port_range(p->host_port))
            return ph_yaml_error(vn, err, "`published`: `%s` is not a port number (1-65535) or range",
                                 p->host_port);
        if (dst == &p->protocol && strcmp(p->protocol, "tcp") != 0 && strcmp(p->protocol, "udp") != 0 &&
            strcmp(p->protocol, "sctp") != 0)
            return ph_yaml_error(vn, err, "`protocol` must be tcp, udp or sctp, not `%s`", p->protocol);
    }
    if (target == NULL)
        return ph_yaml_error(item, err, "a port in the long syntax needs `target`");
    if (!valid_port_range(p->container_port))
        return ph_yaml_error(target, err, "`target`: `%s` is not a port number (1-65535)", p->container_port);
    if (p->protocol == NULL)
        return dup_str("tcp", &p->protocol, err);
    return 0;
}

static int
read_ports(loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
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
            if (parse_port(l, item, item->str, p, err) < 0)
                return -1;
        } else if (item->kind == PH_Y_MAP) {
            if (read_port_long(l, s, item, p, err) < 0)
                return -1;
        } else {
            return ph_yaml_error(item, err, "a port must be a string or a mapping, not a list");
        }
    }
    return 0;
}

/* What compose takes for a path rather than a volume name. */
static int
looks_like_path(const char *s)
{
    return s[0] == '/' || s[0] == '.' || s[0] == '~';
}

static int
valid_volume_name(const char *s)
{
    return isalnum((unsigned char)s[0]) &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == strlen(s);
}

static int
add_volume(loader *l, ph_service *s, ph_ynode *n, const char *source, const char *target, int ro, int bind,
           ph_error_t *err)
{
    ph_volume *nv, *v;

    if (target == NULL || target[0] != '/')
        return ph_yaml_error(n, err, "volume target `%s` must be an absolute path", target ? target : "");
    if (source != NULL && !bind) {
        int declared = 0;

        if (!valid_volume_name(source))
            return ph_yaml_error(n, err,
                                 "`%s` is neither a path (start it with ./ or /) nor a volume name", source);
        for (size_t i = 0; i < l->c->volumes.n; i++)
            declared |= strcmp(l->c->volumes.v[i], source) == 0;
        if (!declared)
            return ph_yaml_error(n, err,
                                 "service `%s` uses volume `%s`, which the top-level `volumes:` does not declare",
                                 s->name, source);
    }
    nv = realloc(s->volumes, (s->n_volumes + 1) * sizeof *nv);
    if (nv == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    s->volumes = nv;
    v = &s->volumes[s->n_volumes++];
    memset(v, 0, sizeof *v);
    v->bind = bind;
    v->read_only = ro;
    if ((v->target = strdup(target)) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (source != NULL) {
        v->source = bind ? abs_path(l->c->dir, source) : strdup(source);
        if (v->source == NULL)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

/* SRC:DST[:MODE] or DST; MODE is a comma list such as `ro,z`. */
static int
read_volume_short(loader *l, ph_service *s, ph_ynode *item, ph_error_t *err)
{
    static const char *const modes[] = { "ro", "rw", "z", "Z", "nocopy", "cached", "delegated", "consistent",
                                         "shared", "rshared", "slave", "rslave", "private", "rprivate" };
    const char *spec = item->str;
    char buf[PATH_MAX * 2], *f[4] = { 0 }, *save = NULL;
    int nf = 0, ro = 0;

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
    if (nf == 1)
        return add_volume(l, s, item, NULL, f[0], 0, 0, err);
    if (f[0][0] == '\0')
        return ph_yaml_error(item, err, "volume `%s`: empty source", spec);
    if (nf == 3) {
        for (char *m = strtok_r(f[2], ",", &save); m; m = strtok_r(NULL, ",", &save)) {
            size_t i;

            for (i = 0; i < PH_ARRAY_LEN(modes) && strcmp(m, modes[i]) != 0; i++)
                ;
            if (i == PH_ARRAY_LEN(modes))
                return ph_yaml_error(item, err, "volume `%s`: unknown mode `%s`", spec, m);
            if (strcmp(m, "ro") == 0)
                ro = 1;
            else if (strcmp(m, "rw") == 0)
                ro = 0;
        }
    }
    return add_volume(l, s, item, f[0], f[1], ro, looks_like_path(f[0]), err);
}

static int
read_volume_long(loader *l, ph_service *s, ph_ynode *item, ph_error_t *err)
{
    const char *src = NULL, *dst = NULL, *type = NULL;
    ph_ynode *type_node = NULL;
    int ro = 0;

    PH_YAML_FOREACH_PAIR(item, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);

        if (KEY("source")) {
            if ((src = ph_yaml_nonempty(vn, "volumes.source", err)) == NULL)
                return -1;
        } else if (KEY("target")) {
            if ((dst = ph_yaml_nonempty(vn, "volumes.target", err)) == NULL)
                return -1;
        } else if (KEY("type")) {
            if ((type = ph_yaml_nonempty(vn, "volumes.type", err)) == NULL)
                return -1;
            type_node = vn;
        } else if (KEY("read_only")) {
            if (ph_yaml_bool(vn, "volumes.read_only", &ro, err) < 0)
                return -1;
        } else {
            warn_unknown(l, pair, "volumes.", s->name);
        }
    }
    if (type == NULL)
        return ph_yaml_error(item, err, "a volume in the long syntax needs `type` (bind or volume)");
    if (strcmp(type, "bind") == 0) {
        if (src == NULL)
            return ph_yaml_error(item, err, "a bind mount needs `source`");
        return add_volume(l, s, item, src, dst, ro, 1, err);
    }
    if (strcmp(type, "volume") == 0)
        return add_volume(l, s, item, src, dst, ro, 0, err);
    return ph_yaml_error(type_node, err, "volume `type: %s` is not supported (bind or volume)", type);
}

static int
read_volumes(loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
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

static int
read_healthcheck(loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    ph_healthcheck *h = &s->healthcheck;

    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`healthcheck` must be a mapping");
    h->present = 1;
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("test")) {
            ph_strv_free(&h->test);
            if (vn->kind == PH_Y_SCALAR) {
                const char *cmd = ph_yaml_nonempty(vn, "healthcheck.test", err);

                if (cmd == NULL)
                    return -1;
                if (ph_strv_push(&h->test, "CMD-SHELL") < 0 || ph_strv_push(&h->test, cmd) < 0)
                    rc = ph_fail(err, ENOMEM, "allocate");
            } else if ((rc = ph_yaml_strv(vn, "healthcheck.test", 0, 0, &h->test, err)) == 0) {
                const char *first = h->test.n ? h->test.v[0] : "";

                if (strcmp(first, "NONE") == 0)
                    h->disable = 1;
                else if ((strcmp(first, "CMD") != 0 && strcmp(first, "CMD-SHELL") != 0) || h->test.n < 2)
                    rc = ph_yaml_error(vn, err,
                                       "`healthcheck.test` must start with CMD or CMD-SHELL and a command, or be [NONE]");
            }
        } else if (KEY("interval")) {
            rc = ph_yaml_duration(vn, "healthcheck.interval", &h->interval_ns, err);
        } else if (KEY("timeout")) {
            rc = ph_yaml_duration(vn, "healthcheck.timeout", &h->timeout_ns, err);
        } else if (KEY("start_period")) {
            rc = ph_yaml_duration(vn, "healthcheck.start_period", &h->start_period_ns, err);
        } else if (KEY("retries")) {
            const char *sv = ph_yaml_nonempty(vn, "healthcheck.retries", err);
            char *end;
            long r;

            if (sv == NULL)
                return -1;
            errno = 0;
            r = strtol(sv, &end, 10);
            if (*end != '\0' || errno || r < 0 || r > 1000000)
                rc = ph_yaml_error(vn, err, "`healthcheck.retries` must be a number, not `%s`", sv);
            h->retries = (int)r;
        } else if (KEY("disable")) {
            rc = ph_yaml_bool(vn, "healthcheck.disable", &h->disable, err);
        } else {
            warn_unknown(l, pair, "healthcheck.", s->name);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int
read_networks(loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    if (v->kind == PH_Y_MAP) {
        PH_YAML_FOREACH_PAIR(v, pair) {
            ph_ynode *vn = pair->value;

            /* Per-network settings (aliases, ipv4_address) are not supported. */
            if (!ph_yaml_is_null(vn) && vn->kind != PH_Y_MAP)
                return ph_yaml_error(vn, err, "`networks.%s` must be a mapping or empty",
                                     ph_yaml_key(pair));
            if (ph_strv_push(&s->networks, ph_yaml_key(pair)) < 0)
                return ph_fail(err, ENOMEM, "allocate");
        }
    } else if (ph_yaml_strv(v, "networks", 0, 0, &s->networks, err) < 0) {
        return -1;
    }
    for (size_t i = 0; i < s->networks.n; i++) {
        int declared = strcmp(s->networks.v[i], "default") == 0;

        for (size_t j = 0; j < l->c->networks.n; j++)
            declared |= strcmp(l->c->networks.v[j], s->networks.v[i]) == 0;
        if (!declared)
            return ph_yaml_error(v, err,
                                 "service `%s` uses network `%s`, which the top-level `networks:` does not declare",
                                 s->name, s->networks.v[i]);
    }
    return 0;
}

static int
read_depends_on(loader *l, ph_service *s, ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_strv(v, "depends_on", 0, 0, &s->depends_on, err);
    PH_YAML_FOREACH_PAIR(v, pair) {
        ph_ynode *vn = pair->value;
        const char *dep = ph_yaml_key(pair);

        if (vn->kind == PH_Y_MAP) {
            PH_YAML_FOREACH_PAIR(vn, cp) {
                ph_ynode *cv = cp->value;
                const char *key = ph_yaml_key(cp), *sv;
                int b;

                if (KEY("condition")) {
                    if ((sv = ph_yaml_scalar(cv, "depends_on.condition", err)) == NULL)
                        return -1;
                    if (strcmp(sv, "service_started") != 0 && strcmp(sv, "service_healthy") != 0 &&
                        strcmp(sv, "service_completed_successfully") != 0)
                        return ph_yaml_error(cv, err,
                                             "`depends_on.%s.condition` must be service_started, service_healthy "
                                             "or service_completed_successfully, not `%s`", dep, sv);
                } else if (KEY("restart") || KEY("required")) {
                    if (ph_yaml_bool(cv, key, &b, err) < 0)
                        return -1;
                } else {
                    warn_unknown(l, cp, "depends_on.", s->name);
                }
            }
        } else if (!ph_yaml_is_null(vn)) {
            return ph_yaml_error(vn, err, "`depends_on.%s` must be a mapping (condition: ...)", dep);
        }
        if (ph_strv_push(&s->depends_on, dep) < 0)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

/* A path, a list of paths, or a list of {path, required} (compose 2.24). */
static int
read_env_files(loader *l, ph_service *s, ph_ynode *v, ph_kvv *out, ph_error_t *err)
{
    ph_ynode *one[1] = { v }, **start = one, **top = one + 1;

    if (v->kind == PH_Y_SEQ) {
        start = v->items;
        top = v->items + v->n;
    } else if (v->kind != PH_Y_SCALAR) {
        return ph_yaml_error(v, err, "`env_file` must be a path or a list of paths");
    }
    for (ph_ynode **it = start; it < top; it++) {
        ph_ynode *item = *it, *path_node = item;
        const char *file = NULL;
        int required = 1, rc;
        char *p;

        if (item->kind == PH_Y_MAP) {
            PH_YAML_FOREACH_PAIR(item, pair) {
                ph_ynode *vn = pair->value;
                const char *key = ph_yaml_key(pair);

                if (KEY("path")) {
                    if ((file = ph_yaml_nonempty(vn, "env_file.path", err)) == NULL)
                        return -1;
                    path_node = vn;
                } else if (KEY("required")) {
                    if (ph_yaml_bool(vn, "env_file.required", &required, err) < 0)
                        return -1;
                } else {
                    warn_unknown(l, pair, "env_file.", s->name);
                }
            }
            if (file == NULL)
                return ph_yaml_error(item, err, "an `env_file` entry needs `path`");
        } else if ((file = ph_yaml_nonempty(item, "env_file", err)) == NULL) {
            return -1;
        }
        p = abs_path(l->c->dir, file);
        if (p == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        rc = read_env_file(p, out, required, err);
        free(p);
        if (rc < 0)
            return ph_error_wrap(err, "%s:%d:%d: env_file", ph_yaml_file(path_node), path_node->line,
                                 path_node->col);
    }
    return 0;
}

/* Like compose: a letter or digit, then letters, digits, `_`, `.`, `-`. */
static int
valid_service_name(const char *s)
{
    return isalnum((unsigned char)s[0]) &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == strlen(s);
}

static int
read_service(loader *l, ph_service *s, ph_ynode *map, ph_ynode **depends, ph_error_t *err)
{
    ph_kvv env_file = { 0 }, env = { 0 };
    int rc = 0;

    s->stop_grace_ns = -1;
    if (map->kind != PH_Y_MAP)
        return ph_yaml_error(map, err, "service `%s` must be a mapping", s->name);
    PH_YAML_FOREACH_PAIR(map, pair) {
        ph_ynode *v = pair->value;
        const char *key = ph_yaml_key(pair), *sv;

        if (KEY("image")) {
            rc = ph_yaml_dup(v, "image", &s->image, err);
        } else if (KEY("build")) {
            rc = read_build(l, s, v, err);
        } else if (KEY("command")) {
            s->has_command = 1;
            rc = ph_yaml_strv(v, "command", 1, 1, &s->command, err);
        } else if (KEY("entrypoint")) {
            s->has_entrypoint = 1;
            rc = ph_yaml_strv(v, "entrypoint", 1, 1, &s->entrypoint, err);
        } else if (KEY("environment")) {
            rc = ph_yaml_kvv(v, "environment", &env, err);
        } else if (KEY("env_file")) {
            rc = read_env_files(l, s, v, &env_file, err);
        } else if (KEY("working_dir")) {
            rc = ph_yaml_dup(v, "working_dir", &s->working_dir, err);
            if (rc == 0 && s->working_dir[0] != '/')
                rc = ph_yaml_error(v, err, "`working_dir` must be an absolute path, not `%s`", s->working_dir);
        } else if (KEY("user")) {
            rc = ph_yaml_dup(v, "user", &s->user, err);
        } else if (KEY("ports")) {
            rc = read_ports(l, s, v, err);
        } else if (KEY("volumes")) {
            rc = read_volumes(l, s, v, err);
        } else if (KEY("networks")) {
            rc = read_networks(l, s, v, err);
        } else if (KEY("depends_on")) {
            *depends = v;
            rc = read_depends_on(l, s, v, err);
        } else if (KEY("cap_add")) {
            rc = ph_yaml_strv(v, "cap_add", 0, 0, &s->cap_add, err);
        } else if (KEY("cap_drop")) {
            rc = ph_yaml_strv(v, "cap_drop", 0, 0, &s->cap_drop, err);
        } else if (KEY("security_opt")) {
            rc = ph_yaml_strv(v, "security_opt", 0, 0, &s->security_opt, err);
        } else if (KEY("privileged")) {
            rc = ph_yaml_bool(v, "privileged", &s->privileged, err);
        } else if (KEY("stop_signal")) {
            char buf[16];
            const char *norm;

            if ((sv = ph_yaml_nonempty(v, "stop_signal", err)) == NULL)
                goto fail;
            norm = ph_signal_normalise(sv, buf);
            if (norm == NULL)
                rc = ph_yaml_error(v, err, "`stop_signal`: `%s` is not a signal", sv);
            else
                rc = dup_str(norm, &s->stop_signal, err);
        } else if (KEY("stop_grace_period")) {
            rc = ph_yaml_duration(v, "stop_grace_period", &s->stop_grace_ns, err);
        } else if (KEY("healthcheck")) {
            rc = read_healthcheck(l, s, v, err);
        } else if (KEY("labels")) {
            rc = ph_yaml_kvv(v, "labels", &s->labels, err);
            /* A label without a value is an empty label, not an unset one. */
            for (size_t i = 0; rc == 0 && i < s->labels.n; i++)
                if (s->labels.v[i].value == NULL && (s->labels.v[i].value = strdup("")) == NULL)
                    rc = ph_fail(err, ENOMEM, "allocate");
        } else if (KEY("container_name")) {
            rc = ph_yaml_dup(v, "container_name", &s->container_name, err);
        } else {
            warn_unknown(l, pair, "", s->name);
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
        return ph_yaml_error(map, err, "service `%s` has neither `image` nor `build`", s->name);
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
read_top_names(loader *l, ph_ynode *v, const char *key, ph_strv *out, ph_error_t *err)
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
depends_entry(loader *l, size_t i, size_t k)
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
check_depends(loader *l, ph_error_t *err)
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
        abs = abs_path("/", path);
    } else {
        if (getcwd(cwd, sizeof cwd) == NULL) {
            ph_fail(err, errno, "getcwd");
            return NULL;
        }
        abs = abs_path(cwd, path);
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
    loader l = { 0 };
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
    if (read_env_file(envpath, &l.dotenv, 0, err) < 0)
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

        if (!valid_service_name(ph_yaml_key(pair))) {
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
        if (read_service(&l, s, v, &l.depends[c->n_services - 1], err) < 0)
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
