/* ph_cdp.c - the inspector session's pure parts (ph_cdp.h). */
#include "ph_cdp.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int
say(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    if (why != NULL && len > 0) {
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- WebSocket ---------------------------------------------------------- */

ssize_t
ph_cdp_ws_encode(int opcode, const void *payload, size_t len, const uint8_t mask[4], uint8_t *out, size_t cap)
{
    size_t h = 2;
    const uint8_t *p = payload;

    if (len > cap || cap - len < PH_CDP_WS_HEADER_MAX)
        return -1;
    out[0] = (uint8_t)(0x80 | (opcode & 0x0f));
    if (len < 126) {
        out[1] = (uint8_t)(0x80 | len);
    } else if (len <= 0xffff) {
        out[1] = 0x80 | 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        h = 4;
    } else {
        out[1] = 0x80 | 127;
        for (int i = 0; i < 8; i++)
            out[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
        h = 10;
    }
    memcpy(out + h, mask, 4);
    h += 4;
    for (size_t i = 0; i < len; i++)
        out[h + i] = p[i] ^ mask[i & 3];
    return (ssize_t)(h + len);
}

int
ph_cdp_ws_decode(uint8_t *buf, size_t n, size_t max, ph_cdp_ws_frame *f, char *why, size_t why_len)
{
    size_t h = 2;
    uint64_t len;
    int masked;

    if (n < 2)
        return 0;
    if (buf[0] & 0x70)
        return say(why, why_len, "a WebSocket frame with reserved bits set (0x%02x)", buf[0]);
    f->fin = (buf[0] & 0x80) != 0;
    f->opcode = buf[0] & 0x0f;
    if (f->opcode != PH_CDP_WS_CONT && f->opcode != PH_CDP_WS_TEXT && f->opcode != 0x2 && f->opcode != PH_CDP_WS_CLOSE &&
        f->opcode != PH_CDP_WS_PING && f->opcode != PH_CDP_WS_PONG)
        return say(why, why_len, "a WebSocket frame of unknown opcode %d", f->opcode);
    masked = (buf[1] & 0x80) != 0;
    len = buf[1] & 0x7f;
    if (len == 126) {
        if (n < 4)
            return 0;
        len = (uint64_t)buf[2] << 8 | buf[3];
        h = 4;
    } else if (len == 127) {
        if (n < 10)
            return 0;
        len = 0;
        for (int i = 0; i < 8; i++)
            len = len << 8 | buf[2 + i];
        h = 10;
    }
    if ((f->opcode & 0x8) && (len > 125 || !f->fin))
        return say(why, why_len, "a WebSocket control frame of %llu bytes or in pieces", (unsigned long long)len);
    if (len > max)
        return say(why, why_len, "a WebSocket frame of %llu bytes (more than %zu)", (unsigned long long)len, max);
    if (masked)
        h += 4;
    if (n < h || n - h < len)
        return 0;
    if (masked)
        for (size_t i = 0; i < len; i++)
            buf[h + i] ^= buf[h - 4 + (i & 3)];
    f->header = h;
    f->len = (size_t)len;
    return 1;
}

/* ---- JSON --------------------------------------------------------------- */

typedef struct jp {
    const char *s;
    size_t n, i;
} jp;

static void
ws(jp *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static int
eat(jp *p, char c)
{
    ws(p);
    if (p->i < p->n && p->s[p->i] == c) {
        p->i++;
        return 1;
    }
    return 0;
}

static int
hex4(const char *s, unsigned *v)
{
    *v = 0;
    for (int k = 0; k < 4; k++) {
        char c = s[k];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;
        if (d == 16)
            return -1;
        *v = *v << 4 | d;
    }
    return 0;
}

static void
put(char *out, size_t cap, size_t *o, int *cut, const char *b, size_t k)
{
    if (*o + k >= cap) {
        *cut = 1;
        return;
    }
    memcpy(out + *o, b, k);
    *o += k;
}

/* A string: decoded into OUT (NUL-ended, cut at CAP; OUT may be NULL to
 * skip it), escapes and \u (surrogate pairs too; a lone half is U+FFFD). */
static int
jstring(jp *p, char *out, size_t cap, size_t *olen)
{
    size_t o = 0;
    int cut = 0;

    if (!eat(p, '"'))
        return -1;
    while (p->i < p->n) {
        char c = p->s[p->i++];
        char u[4];
        unsigned v, lo;

        if (c == '"') {
            if (out != NULL && cap > 0)
                out[o] = '\0';
            if (olen != NULL)
                *olen = o;
            return 0;
        }
        if ((unsigned char)c < 0x20)
            return -1;
        if (c != '\\') {
            if (out != NULL)
                put(out, cap, &o, &cut, &c, 1);
            continue;
        }
        if (p->i >= p->n)
            return -1;
        c = p->s[p->i++];
        switch (c) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case '"': case '\\': case '/': break;
        case 'u':
            if (p->n - p->i < 4 || hex4(p->s + p->i, &v) < 0)
                return -1;
            p->i += 4;
            if (v >= 0xd800 && v < 0xdc00 && p->n - p->i >= 6 && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u' &&
                hex4(p->s + p->i + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
                p->i += 6;
                v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
            } else if (v >= 0xd800 && v < 0xe000) {
                v = 0xfffd;
            } else if (v == 0) {
                v = '?'; /* a C string ends at a NUL: the rest of the name would be lost */
            }
            if (out == NULL)
                continue;
            if (v < 0x80) {
                u[0] = (char)v;
                put(out, cap, &o, &cut, u, 1);
            } else if (v < 0x800) {
                u[0] = (char)(0xc0 | v >> 6);
                u[1] = (char)(0x80 | (v & 0x3f));
                put(out, cap, &o, &cut, u, 2);
            } else if (v < 0x10000) {
                u[0] = (char)(0xe0 | v >> 12);
                u[1] = (char)(0x80 | (v >> 6 & 0x3f));
                u[2] = (char)(0x80 | (v & 0x3f));
                put(out, cap, &o, &cut, u, 3);
            } else {
                u[0] = (char)(0xf0 | v >> 18);
                u[1] = (char)(0x80 | (v >> 12 & 0x3f));
                u[2] = (char)(0x80 | (v >> 6 & 0x3f));
                u[3] = (char)(0x80 | (v & 0x3f));
                put(out, cap, &o, &cut, u, 4);
            }
            continue;
        default:
            return -1;
        }
        if (out != NULL)
            put(out, cap, &o, &cut, &c, 1);
    }
    return -1;
}

/* A number, as an integer (a fraction or exponent dropped; beyond
 * long long: -1). */
static int
jint(jp *p, long long *v)
{
    size_t st;
    int neg = 0;
    unsigned long long a = 0;

    ws(p);
    st = p->i;
    if (p->i < p->n && p->s[p->i] == '-') {
        neg = 1;
        p->i++;
    }
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
        return -1;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        unsigned d = (unsigned)(p->s[p->i++] - '0');
        if (a > ((unsigned long long)LLONG_MAX - d) / 10)
            return -1;
        a = a * 10 + d;
    }
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
            p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E'))
        return -1; /* no count or id is written so */
    (void)st;
    *v = neg ? -(long long)a : (long long)a;
    return 0;
}

/* Any value, skipped, nested at most PH_CDP_NESTING_MAX deep. */
static int
jskip(jp *p, int depth)
{
    ws(p);
    if (p->i >= p->n || depth > PH_CDP_NESTING_MAX)
        return -1;
    switch (p->s[p->i]) {
    case '"':
        return jstring(p, NULL, 0, NULL);
    case '{':
        p->i++;
        if (eat(p, '}'))
            return 0;
        do {
            if (jstring(p, NULL, 0, NULL) < 0 || !eat(p, ':') || jskip(p, depth + 1) < 0)
                return -1;
        } while (eat(p, ','));
        return eat(p, '}') ? 0 : -1;
    case '[':
        p->i++;
        if (eat(p, ']'))
            return 0;
        do {
            if (jskip(p, depth + 1) < 0)
                return -1;
        } while (eat(p, ','));
        return eat(p, ']') ? 0 : -1;
    default: {
        static const char *const words[] = { "true", "false", "null" };
        long long v;

        for (size_t k = 0; k < 3; k++) {
            size_t l = strlen(words[k]);
            if (p->n - p->i >= l && memcmp(p->s + p->i, words[k], l) == 0) {
                p->i += l;
                return 0;
            }
        }
        if (p->s[p->i] == '-' || (p->s[p->i] >= '0' && p->s[p->i] <= '9')) {
            /* any number: digits, sign, fraction, exponent */
            (void)v;
            p->i++;
            while (p->i < p->n && strchr("0123456789.eE+-", p->s[p->i]) != NULL && p->s[p->i] != '\0')
                p->i++;
            return 0;
        }
        return -1;
    }
    }
}

/* The next key of an object being read: 1 with KEY set, 0 at its end,
 * -1 on bad input.  *FIRST: no comma before the first. */
static int
jkey(jp *p, int *first, char *key, size_t cap)
{
    if (eat(p, '}'))
        return 0;
    if (!*first && !eat(p, ','))
        return -1;
    *first = 0;
    if (jstring(p, key, cap, NULL) < 0 || !eat(p, ':'))
        return -1;
    return 1;
}

int
ph_cdp_find(const char *json, size_t n, const char *const *keys, size_t *off, size_t *len)
{
    jp p = { json, n, 0 };
    char key[64];

    for (; *keys != NULL; keys++) {
        int first = 1, r, found = 0;

        if (!eat(&p, '{'))
            return -1;
        while ((r = jkey(&p, &first, key, sizeof key)) == 1) {
            if (strcmp(key, *keys) == 0) {
                found = 1;
                break;
            }
            if (jskip(&p, 1) < 0)
                return -1;
        }
        if (!found)
            return -1;
    }
    ws(&p);
    *off = p.i;
    if (jskip(&p, 0) < 0)
        return -1;
    *len = p.i - *off;
    return 0;
}

int
ph_cdp_reply(const char *msg, size_t n, long long *id, int *error, char *errmsg, size_t errmsg_len)
{
    static const char *const idk[] = { "id", NULL }, *const errk[] = { "error", NULL },
                             *const msgk[] = { "error", "message", NULL };
    size_t off, len;
    jp p = { msg, n, 0 };

    *id = -1;
    *error = 0;
    if (errmsg_len > 0)
        errmsg[0] = '\0';
    if (jskip(&p, 0) < 0 || p.s[0] != '{')
        return -1;
    if (ph_cdp_find(msg, n, idk, &off, &len) == 0) {
        jp q = { msg + off, len, 0 };
        if (jint(&q, id) < 0)
            *id = -1;
    }
    if (ph_cdp_find(msg, n, errk, &off, &len) == 0) {
        *error = 1;
        if (ph_cdp_find(msg, n, msgk, &off, &len) == 0) {
            jp q = { msg + off, len, 0 };
            if (jstring(&q, errmsg, errmsg_len, NULL) < 0 && errmsg_len > 0)
                errmsg[0] = '\0';
        }
    }
    return 0;
}

int
ph_cdp_ws_path(const char *body, size_t n, char *out, size_t cap)
{
    static const char key[] = "\"webSocketDebuggerUrl\"";
    const char *k = memmem(body, n, key, sizeof key - 1), *path;
    char url[1024];
    jp p;

    if (k == NULL)
        return -1;
    p = (jp){ body, n, (size_t)(k - body) + sizeof key - 1 };
    if (!eat(&p, ':') || jstring(&p, url, sizeof url, NULL) < 0 || strncmp(url, "ws://", 5) != 0)
        return -1;
    if ((path = strchr(url + 5, '/')) == NULL || strlen(path) >= cap)
        return -1;
    for (const char *c = path; *c; c++)
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
            return -1;
    strcpy(out, path);
    return 0;
}

/* ---- the profile -------------------------------------------------------- */

typedef struct node {
    long long id;
    size_t parent;     /* an index; SIZE_MAX: none */
    size_t count;
    long long line;
    char *name;        /* the frame, as written */
} node;

typedef struct edge {
    long long parent, child;
} edge;

typedef struct fold {
    node *v;
    size_t n, cap;
    edge *e;
    size_t ne, ecap;
    long long *samples;
    size_t ns, scap;
} fold;

static int
grow(void **v, size_t *cap, size_t n, size_t size)
{
    void *nv;
    size_t nc;

    if (n < *cap)
        return 0;
    nc = *cap ? *cap * 2 : 64;
    if (nc > SIZE_MAX / size || (nv = realloc(*v, nc * size)) == NULL)
        return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

/* A frame's name as the folded stacks may hold it: no `;` (the frame
 * separator), no control byte (a line's end), cut at PH_CDP_NAME_MAX. */
static void
clean(char *s)
{
    for (; *s; s++)
        if (*s == ';')
            *s = ',';
        else if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

static int
frame_name(const char *fn, const char *url, long long line, char **out)
{
    int r;

    /* a module's URL: its path, as V8's perf map names the file */
    if (strncmp(url, "file://", 7) == 0 && url[7] == '/')
        url += 7;
    /* no script: V8's (root), (program), (idle), (garbage collector), or
     * a native function JavaScript called (a binding's writev): native
     * frames, as the start mode has the C++ they run, so that the
     * language view gives their time to the JavaScript calling them */
    if (url[0] == '\0')
        r = asprintf(out, "%s", fn[0] ? fn : "(native)");
    else if (line >= 0 && line < INT_MAX)
        r = asprintf(out, "JS:%s %s:%lld_[j]", fn, url, line + 1);
    else
        r = asprintf(out, "JS:%s %s_[j]", fn, url);
    if (r < 0) {
        *out = NULL;
        return -1;
    }
    clean(*out);
    return 0;
}

static int
read_ints(jp *p, long long **v, size_t *n, size_t *cap, long long parent, edge **e, size_t *ne, size_t *ecap)
{
    long long x;

    if (!eat(p, '['))
        return -1;
    if (eat(p, ']'))
        return 0;
    do {
        if (jint(p, &x) < 0)
            return -1;
        if (e != NULL) {
            if (grow((void **)e, ecap, *ne, sizeof **e) < 0)
                return -2;
            (*e)[(*ne)++] = (edge){ parent, x };
        } else {
            if (grow((void **)v, cap, *n, sizeof **v) < 0)
                return -2;
            (*v)[(*n)++] = x;
        }
    } while (eat(p, ','));
    return eat(p, ']') ? 0 : -1;
}

static int
read_node(jp *p, fold *f, char *why, size_t why_len)
{
    char key[32], fn[PH_CDP_NAME_MAX], url[PH_CDP_NAME_MAX];
    long long id = 0, line = -1, parent = -1;
    int first = 1, r, has_id = 0, ok;
    size_t e0 = f->ne;

    fn[0] = url[0] = '\0';
    if (!eat(p, '{'))
        return say(why, why_len, "a node that is no object at byte %zu", p->i);
    while ((r = jkey(p, &first, key, sizeof key)) == 1) {
        if (strcmp(key, "id") == 0) {
            if (jint(p, &id) < 0)
                return say(why, why_len, "a node id that is no integer at byte %zu", p->i);
            has_id = 1;
        } else if (strcmp(key, "parent") == 0) {
            if (jint(p, &parent) < 0)
                return say(why, why_len, "a parent that is no integer at byte %zu", p->i);
        } else if (strcmp(key, "callFrame") == 0) {
            int cf = 1, rr;

            if (!eat(p, '{'))
                return say(why, why_len, "a callFrame that is no object at byte %zu", p->i);
            while ((rr = jkey(p, &cf, key, sizeof key)) == 1) {
                if (strcmp(key, "functionName") == 0)
                    ok = jstring(p, fn, sizeof fn, NULL) == 0;
                else if (strcmp(key, "url") == 0)
                    ok = jstring(p, url, sizeof url, NULL) == 0;
                else if (strcmp(key, "lineNumber") == 0)
                    ok = jint(p, &line) == 0;
                else
                    ok = jskip(p, 3) == 0;
                if (!ok)
                    return say(why, why_len, "a bad callFrame.%s at byte %zu", key, p->i);
            }
            if (rr < 0)
                return say(why, why_len, "a bad callFrame at byte %zu", p->i);
        } else if (strcmp(key, "children") == 0) {
            /* the edges are kept with a parent id set below, once it is known */
            if ((r = read_ints(p, NULL, NULL, NULL, 0, &f->e, &f->ne, &f->ecap)) < 0)
                return r == -2 ? say(why, why_len, "out of memory") : say(why, why_len, "bad children at byte %zu", p->i);
        } else if (jskip(p, 2) < 0) {
            return say(why, why_len, "a bad node.%s at byte %zu", key, p->i);
        }
    }
    if (r < 0)
        return say(why, why_len, "a bad node at byte %zu", p->i);
    if (!has_id)
        return say(why, why_len, "a node without an id at byte %zu", p->i);
    for (size_t k = e0; k < f->ne; k++)
        f->e[k].parent = id;
    if (parent >= 0) {
        if (grow((void **)&f->e, &f->ecap, f->ne, sizeof *f->e) < 0)
            return say(why, why_len, "out of memory");
        f->e[f->ne++] = (edge){ parent, id };
    }
    if (grow((void **)&f->v, &f->cap, f->n, sizeof *f->v) < 0)
        return say(why, why_len, "out of memory");
    f->v[f->n] = (node){ .id = id, .parent = SIZE_MAX, .line = line };
    if (frame_name(fn, url, line, &f->v[f->n].name) < 0)
        return say(why, why_len, "out of memory");
    f->n++;
    return 0;
}

static int
by_id(const void *a, const void *b)
{
    long long x = ((const node *)a)->id, y = ((const node *)b)->id;
    return (x > y) - (x < y);
}

static size_t
find(const fold *f, long long id)
{
    size_t lo = 0, hi = f->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->v[mid].id == id)
            return mid;
        if (f->v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SIZE_MAX;
}

static void
fold_free(fold *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->v[i].name);
    free(f->v);
    free(f->e);
    free(f->samples);
}

static int
write_stacks(fold *f, const ph_cdp_fold_opts *o, FILE *out, ph_cdp_fold_stats *st, char *why, size_t why_len)
{
    size_t path[PH_CDP_DEPTH_MAX];

    for (size_t i = 0; i < f->n; i++) {
        size_t d = 0, k = i;
        int idle;

        if (f->v[i].count == 0)
            continue;
        idle = strcmp(f->v[i].name, "(idle)") == 0;
        if (idle)
            st->idle += f->v[i].count;
        if (idle && !o->wall)
            continue;
        /* leaf to root; a cycle never reaches one: cut at the bound */
        while (k != SIZE_MAX && d < PH_CDP_DEPTH_MAX) {
            if (f->v[k].parent != SIZE_MAX || strcmp(f->v[k].name, "(root)") != 0)
                path[d++] = k;
            k = f->v[k].parent;
        }
        if (k != SIZE_MAX)
            st->cut++;
        fputs(o->root != NULL ? o->root : "node", out);
        if (k != SIZE_MAX)
            fputs(";[truncated]", out);
        while (d > 0)
            fprintf(out, ";%s", f->v[path[--d]].name);
        if (idle)
            fputs(";[off-cpu]", out);
        fprintf(out, " %zu\n", f->v[i].count);
        st->kept += f->v[i].count;
        st->stacks++;
    }
    if (ferror(out))
        return say(why, why_len, "write the folded stacks: %s", strerror(errno));
    return 0;
}

int
ph_cdp_fold(const char *profile, size_t n, const ph_cdp_fold_opts *o, FILE *out, ph_cdp_fold_stats *st, char *why,
            size_t why_len)
{
    jp p = { profile, n, 0 };
    fold f = { 0 };
    char key[32];
    int first = 1, r, rc = -1;

    memset(st, 0, sizeof *st);
    if (!eat(&p, '{')) {
        say(why, why_len, "the profile is no JSON object");
        goto out;
    }
    while ((r = jkey(&p, &first, key, sizeof key)) == 1) {
        if (strcmp(key, "nodes") == 0) {
            if (!eat(&p, '[')) {
                say(why, why_len, "`nodes` is no array");
                goto out;
            }
            if (!eat(&p, ']')) {
                do {
                    if (read_node(&p, &f, why, why_len) < 0)
                        goto out;
                } while (eat(&p, ','));
                if (!eat(&p, ']')) {
                    say(why, why_len, "`nodes` does not end at byte %zu", p.i);
                    goto out;
                }
            }
        } else if (strcmp(key, "samples") == 0) {
            if ((r = read_ints(&p, &f.samples, &f.ns, &f.scap, 0, NULL, NULL, NULL)) < 0) {
                say(why, why_len, r == -2 ? "out of memory" : "`samples` is no array of integers");
                goto out;
            }
        } else if (jskip(&p, 1) < 0) {
            say(why, why_len, "a bad `%s` at byte %zu", key, p.i);
            goto out;
        }
    }
    if (r < 0) {
        say(why, why_len, "the profile does not parse at byte %zu", p.i);
        goto out;
    }
    qsort(f.v, f.n, sizeof *f.v, by_id);
    for (size_t i = 1; i < f.n; i++)
        if (f.v[i].id == f.v[i - 1].id) {
            say(why, why_len, "node id %lld is there twice", f.v[i].id);
            goto out;
        }
    for (size_t k = 0; k < f.ne; k++) {
        size_t pa = find(&f, f.e[k].parent), ch = find(&f, f.e[k].child);

        if (pa == SIZE_MAX || ch == SIZE_MAX) {
            st->bad_ids++;
        } else if (pa == ch || (f.v[ch].parent != SIZE_MAX && f.v[ch].parent != pa)) {
            st->reparented++;
        } else {
            f.v[ch].parent = pa;
        }
    }
    for (size_t k = 0; k < f.ns; k++) {
        size_t i = find(&f, f.samples[k]);

        if (i == SIZE_MAX)
            st->bad_ids++;
        else
            f.v[i].count++;
    }
    st->nodes = f.n;
    st->samples = f.ns;
    rc = write_stacks(&f, o, out, st, why, why_len);
out:
    fold_free(&f);
    return rc;
}
