/* ph_compose_env.c - the compose project's variables: `${VAR}`
 * interpolation (ph_interpolate) and env files (`.env`, `env_file:`).
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


/* ---- env files --------------------------------------------------------- */

#define ENV_FILE_MAX (4u << 20)

typedef struct env_lookup {
    ph_lookup_cb outer; /* the project's environment first, as compose-go */
    void *ud;
    const ph_kvv *file; /* then what this file defined above */
} env_lookup;

static const char *
env_lookup_cb(const char *name, void *ud)
{
    const env_lookup *el = ud;
    const char *v = el->outer ? el->outer(name, el->ud) : NULL;

    return v ? v : ph_kvv_get(el->file, name);
}

/* A double-quoted value's escapes, as compose-go's dotenv: \n \t \\ \" and
 * the others of Go, `\$` as `$$` (a literal `$` once interpolated), \0NNN
 * octal.  Any other backslash stays. */
static char *
expand_escapes(const char *s)
{
    char *out = malloc(strlen(s) * 2 + 1), *o = out;

    if (out == NULL)
        return NULL;
    while (*s) {
        const char *e = strchr("abfnrtv", s[1] ? s[1] : 'x');

        if (s[0] != '\\' || s[1] == '\0') {
            *o++ = *s++;
        } else if (e != NULL) {
            *o++ = "\a\b\f\n\r\t\v"[e - "abfnrtv"];
            s += 2;
        } else if (s[1] == '\\' || s[1] == '"') {
            *o++ = s[1];
            s += 2;
        } else if (s[1] == '$') {
            *o++ = '$';
            *o++ = '$';
            s += 2;
        } else if (s[1] == '0') {
            unsigned v = 0;
            int n = 0;

            for (s += 2; n < 3 && *s >= '0' && *s <= '7'; s++, n++)
                v = v * 8 + (unsigned)(*s - '0');
            *o++ = (char)v;
        } else {
            *o++ = *s++;
        }
    }
    *o = '\0';
    return out;
}

static int
is_key_char(unsigned char c)
{
    /* compose-go: letters and digits (any script), `_ . - [ ]` */
    return isalnum(c) || c >= 0x80 || c == '_' || c == '.' || c == '-' || c == '[' || c == ']';
}

/* compose-go's dotenv grammar: `[export ]KEY=VALUE` or `KEY: VALUE`; a bare
 * `KEY` takes the variable from the environment; comments from `#` at a
 * statement's start or after ` #` in an unquoted value; quoted values may
 * span lines (double quotes: escapes, then ${VAR}; single: as written);
 * unquoted and double-quoted values are interpolated. */
static int
parse_env(const char *path, const char *p, const char *end, ph_kvv *out, ph_lookup_cb lookup, void *ud,
          ph_error_t *err)
{
    env_lookup el = { lookup, ud, out };
    int line = 1;

    for (;;) {
        const char *k, *kend;
        char *key = NULL, *raw = NULL, *val = NULL, where[PATH_MAX + 32];
        int inherited = 0, rc = 0;

        while (p < end && isspace((unsigned char)*p))
            line += *p++ == '\n';
        if (p >= end)
            return 0;
        if (*p == '#') {
            while (p < end && *p != '\n')
                p++;
            continue;
        }
        if (end - p > 7 && strncmp(p, "export", 6) == 0 && (p[6] == ' ' || p[6] == '\t'))
            for (p += 6; p < end && (*p == ' ' || *p == '\t'); p++)
                ;
        for (k = p; p < end && *p != '=' && *p != ':' && *p != '\n'; p++)
            if (!is_key_char((unsigned char)*p) && *p != ' ' && *p != '\t' && *p != '\r')
                return ph_bad_input(err, "%s:%d: unexpected character `%c` in a variable name", path, line, *p);
        inherited = p >= end || *p == '\n';
        for (kend = p; kend > k && isspace((unsigned char)kend[-1]); kend--)
            ;
        if (kend == k)
            return ph_bad_input(err, "%s:%d: a variable without a name", path, line);
        if (memchr(k, ' ', (size_t)(kend - k)) || memchr(k, '\t', (size_t)(kend - k)))
            return ph_bad_input(err, "%s:%d: `%.*s`: a variable name cannot contain a space", path, line,
                                (int)(kend - k), k);
        if ((key = strndup(k, (size_t)(kend - k))) == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        if (inherited) {
            const char *v = lookup ? lookup(key, ud) : NULL;

            rc = v && ph_kvv_set(out, key, v) < 0 ? ph_fail(err, ENOMEM, "allocate") : 0;
            free(key);
            if (rc < 0)
                return -1;
            continue;
        }
        for (p++; p < end && (*p == ' ' || *p == '\t'); p++)
            ;
        snprintf(where, sizeof where, "%s:%d", path, line);
        if (p < end && (*p == '"' || *p == '\'')) {
            char q = *p, *o;
            int esc = 0;

            raw = malloc((size_t)(end - p) + 1);
            if (raw == NULL) {
                free(key);
                return ph_fail(err, ENOMEM, "allocate");
            }
            for (o = raw, p++; p < end && (*p != q || esc); p++) {
                line += *p == '\n';
                if (*p == '\\' && !esc) {
                    esc = 1;
                    continue;
                }
                if (esc && *p != q)
                    *o++ = '\\';
                esc = 0;
                *o++ = *p;
            }
            *o = '\0';
            if (p >= end) {
                ph_bad_input(err, "%s: `%s`: unterminated quoted value", where, key);
                free(key);
                free(raw);
                return -1;
            }
            p++;
            if (q == '"') {
                char *x = expand_escapes(raw);

                val = x ? ph_interpolate(x, env_lookup_cb, &el, where, err) : NULL;
                if (x == NULL)
                    ph_fail(err, ENOMEM, "allocate");
                free(x);
            } else {
                val = raw;
                raw = NULL;
            }
        } else {
            const char *v = p, *ve, *hash;

            while (p < end && *p != '\n')
                p++;
            ve = p;
            hash = memmem(v, (size_t)(ve - v), " #", 2);
            if (hash)
                ve = hash;
            while (ve > v && isspace((unsigned char)ve[-1]))
                ve--;
            raw = strndup(v, (size_t)(ve - v));
            val = raw ? ph_interpolate(raw, env_lookup_cb, &el, where, err) : NULL;
            if (raw == NULL)
                ph_fail(err, ENOMEM, "allocate");
        }
        if (val != NULL && ph_kvv_set(out, key, val) < 0)
            ph_fail(err, ENOMEM, "allocate");
        rc = val == NULL || *err != NULL ? -1 : 0;
        free(key);
        free(raw);
        free(val);
        if (rc < 0)
            return -1;
    }
}

/* PATH's bytes in *BUF (NULL when it is missing and need not exist). */
static int
read_env_bytes(const char *path, int must_exist, char **buf, size_t *len, ph_error_t *err)
{
    *buf = NULL;
    if (!must_exist && access(path, F_OK) < 0 && errno == ENOENT)
        return 0;
    return ph_read_file(path, ENV_FILE_MAX, 0, buf, len, err);
}

int
ph_compose_read_env_file(const char *path, ph_kvv *out, int must_exist, ph_lookup_cb lookup, void *ud,
                         ph_error_t *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;

    if (read_env_bytes(path, must_exist, &buf, &len, err) < 0)
        return -1;
    if (buf == NULL)
        return 0;
    if (memchr(buf, '\0', len) != NULL) {
        free(buf);
        return ph_bad_input(err, "%s: a NUL byte in an env file", path);
    }
    rc = parse_env(path, buf, buf + len, out, lookup, ud, err);
    free(buf);
    return rc;
}

static const char *
kvv_lookup(const char *name, void *ud)
{
    return ph_kvv_get(ud, name);
}

int
ph_compose_add_env_files(ph_kvv *env, const ph_strv *files, const char *base, int must_exist, ph_error_t *err)
{
    ph_kvv from_files = { 0 };
    int rc = 0;

    /* One mapping for all the files, as compose-go's GetEnvFromFile: a
     * later file's KEY replaces an earlier one's, and ${VAR} looks in ENV
     * first, then in what the files set so far. */
    for (size_t i = 0; rc == 0 && i < files->n; i++) {
        char *p = base ? ph_compose_abs_path(base, files->v[i]) : strdup(files->v[i]);

        rc = p ? ph_compose_read_env_file(p, &from_files, must_exist, kvv_lookup, env, err)
               : ph_fail(err, ENOMEM, "allocate");
        free(p);
    }
    /* Then Mapping.Merge: what ENV sets already stays. */
    for (size_t k = 0; rc == 0 && k < from_files.n; k++)
        if (ph_kvv_get(env, from_files.v[k].key) == NULL &&
            ph_kvv_set(env, from_files.v[k].key, from_files.v[k].value) < 0)
            rc = ph_fail(err, ENOMEM, "allocate");
    ph_kvv_free(&from_files);
    return rc;
}

/* `format: raw`: KEY=VALUE lines taken as they are, no quotes, no
 * escapes, no ${VAR}; blank lines and `#` lines skipped. */
int
ph_compose_read_env_raw(const char *path, ph_kvv *out, int must_exist, ph_error_t *err)
{
    char *buf = NULL, *save = NULL;
    size_t len = 0;
    int line = 0, rc = 0;

    if (read_env_bytes(path, must_exist, &buf, &len, err) < 0)
        return -1;
    for (char *l = buf; rc == 0 && l != NULL; l = save) {
        char *nl = strchr(l, '\n'), *eq;

        save = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        line++;
        if (*l == '\0' || *l == '#')
            continue;
        eq = strchr(l, '=');
        if (eq == NULL || eq == l) {
            rc = ph_bad_input(err, "%s:%d: expected KEY=VALUE", path, line);
            break;
        }
        *eq = '\0';
        if (ph_kvv_set(out, l, eq + 1) < 0)
            rc = ph_fail(err, ENOMEM, "allocate");
    }
    free(buf);
    return rc;
}
