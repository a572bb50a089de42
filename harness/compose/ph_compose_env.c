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

/* KEY=VALUE lines, `export ` allowed, # comments and blank lines skipped;
 * a value in matching quotes is taken as is, an unquoted one ends at ` #`. */
int
ph_compose_read_env_file(const char *path, ph_kvv *out, int must_exist, ph_error_t *err)
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

