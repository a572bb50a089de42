/* ph_callgrind.c - callgrind.out, streamed; see ph_callgrind.h for the
 * figures and why they are callgrind_annotate's.
 *
 * The hot path is the cost line (hundreds of millions of them in a large
 * --dump-instr=yes profile): positions are checked and skipped, counts
 * parsed digit by digit and added to the current function (or, after
 * `calls=`, to the current call edge) through the current file's event
 * map, without a lookup.  Functions are found by (file id, name id) and
 * edges by (caller, callee) in open-addressing tables; names are interned
 * once, compressed ids map to them per file.
 */
#include "ph_callgrind.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ph_callgrind_int.h"

static void
cmap_clear(cmap *c)
{
    if (c->v)
        memset(c->v, 0, c->cap * sizeof *c->v);
}

/* ---- the parser -------------------------------------------------------- */

static void
bad_line(ph_callgrind *cg, size_t lineno)
{
    if (cg->info.bad_lines < PH_CG_BAD_KEPT)
        cg->info.bad_line_numbers[cg->info.bad_lines] = lineno;
    cg->info.bad_lines++;
}

static void problem(ph_callgrind *cg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The first problem found is the one the report shows. */
static void
problem(ph_callgrind *cg, const char *fmt, ...)
{
    va_list ap;

    if (cg->info.problem[0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(cg->info.problem, sizeof cg->info.problem, fmt, ap);
    va_end(ap);
}

static int64_t
intern(ph_callgrind *cg, const char *s, size_t n)
{
    return ph_intern_add(cg->strings, s, n);
}

/* NAME of namespace C (`(id) name`, `(id)` or a plain name) -> string
 * id in *OUT.  0, or 1 when the line is bad, -1 on ENOMEM. */
static int
resolve(ph_callgrind *cg, cmap *c, const char *s, const char *e, uint32_t *out)
{
    const char *p = s;
    uint64_t id = 0;
    int64_t sid;

    if (p < e && *p == '(' && p + 1 < e && p[1] >= '0' && p[1] <= '9') {
        for (p++; p < e && *p >= '0' && *p <= '9'; p++) {
            id = id * 10 + (uint64_t)(*p - '0');
            if (id >= CG_MAX_COMPRESSED_ID)
                return 1;
        }
        if (p < e && *p == ')') {
            for (p++; p < e && (*p == ' ' || *p == '\t'); p++)
                ;
            if (p == e) {
                if (id >= c->cap || c->v[id] == 0)
                    return 1; /* a reference to a name never defined */
                *out = c->v[id] - 1;
                return 0;
            }
            sid = intern(cg, p, (size_t)(e - p));
            if (sid < 0)
                return errno == ENOMEM ? -1 : 1;
            if (id >= c->cap) {
                size_t nc = c->cap ? c->cap : 256;
                uint32_t *nv;
                while (nc <= id)
                    nc *= 2;
                nv = realloc(c->v, nc * sizeof *nv);
                if (nv == NULL)
                    return -1;
                memset(nv + c->cap, 0, (nc - c->cap) * sizeof *nv);
                c->v = nv;
                c->cap = nc;
            }
            c->v[id] = (uint32_t)sid + 1;
            *out = (uint32_t)sid;
            return 0;
        }
    }
    sid = intern(cg, s, (size_t)(e - s));
    if (sid < 0)
        return errno == ENOMEM ? -1 : 1;
    *out = (uint32_t)sid;
    return 0;
}

static int
grow(void **arr, size_t *cap, size_t size, size_t need)
{
    size_t nc = *cap ? *cap : 256;
    void *na;

    if (need <= *cap)
        return 0;
    while (nc < need)
        nc *= 2;
    na = realloc(*arr, nc * size);
    if (na == NULL)
        return -1;
    *arr = na;
    *cap = nc;
    return 0;
}

/* The function FILE:FN, made when new.  UINT32_MAX on ENOMEM. */
static uint32_t
func(ph_callgrind *cg, uint32_t file, uint32_t fn)
{
    uint64_t key = (uint64_t)file << 32 | fn;
    uint32_t i = ph_u64map_get(&cg->fn_map, key);
    size_t cap;

    if (i != UINT32_MAX)
        return i;
    if (cg->n_fns >= PH_CG_MAX_FUNCS) {
        if (cg->overflow_fn != UINT32_MAX)
            return cg->overflow_fn;
        problem(cg, "more than %u functions: the rest are counted as (other)", PH_CG_MAX_FUNCS);
        file = fn = (uint32_t)intern(cg, "(other)", 7);
        if ((int32_t)file < 0)
            return UINT32_MAX;
    }
    cap = cg->cap_fns;
    if (grow((void **)&cg->fns, &cap, sizeof *cg->fns, cg->n_fns + 1) < 0)
        return UINT32_MAX;
    if (cap != cg->cap_fns) {
        uint64_t *ns = realloc(cg->self, cap * cg->E * sizeof *ns);
        if (ns == NULL && cg->E > 0)
            return UINT32_MAX;
        cg->self = ns;
        cg->cap_fns = cap;
    }
    i = (uint32_t)cg->n_fns++;
    memset(cg->self + (size_t)i * cg->E, 0, cg->E * sizeof *cg->self);
    {
        const char *fs = ph_intern_get(cg->strings, file), *ns = ph_intern_get(cg->strings, fn);
        size_t fl = ph_intern_len(cg->strings, file), nl = ph_intern_len(cg->strings, fn);
        char stackbuf[512], *buf = fl + nl + 2 <= sizeof stackbuf ? stackbuf : malloc(fl + nl + 2);
        int64_t name;

        if (buf == NULL)
            return UINT32_MAX;
        memcpy(buf, fs, fl);
        buf[fl] = ':';
        memcpy(buf + fl + 1, ns, nl);
        name = intern(cg, buf, fl + 1 + nl);
        if (buf != stackbuf)
            free(buf);
        cg->fns[i] = (fn_rec){ file, fn, cg->empty, name < 0 ? fn : (uint32_t)name, UINT32_MAX, 0, 0, 0 };
    }
    if (cg->n_fns > PH_CG_MAX_FUNCS) {
        cg->overflow_fn = i;
        return i;
    }
    if (ph_u64map_put(&cg->fn_map, key, i) < 0)
        return UINT32_MAX;
    return i;
}

/* The edge CALLER -> CALLEE, made when new; UINT32_MAX when there is no
 * room (the edge is dropped), errno ENOMEM on failure. */
static uint32_t
call_edge(ph_callgrind *cg, uint32_t caller, uint32_t callee)
{
    uint64_t key = (uint64_t)caller << 32 | callee;
    uint32_t i = ph_u64map_get(&cg->call_map, key);
    size_t cap;

    errno = 0;
    if (i != UINT32_MAX)
        return i;
    if (cg->n_calls >= PH_CG_MAX_CALLS) {
        cg->info.dropped_calls++;
        return UINT32_MAX;
    }
    cap = cg->cap_calls;
    if (grow((void **)&cg->calls, &cap, sizeof *cg->calls, cg->n_calls + 1) < 0)
        goto enomem;
    if (cap != cg->cap_calls) {
        uint64_t *nc = realloc(cg->call_cost, cap * cg->E * sizeof *nc);
        if (nc == NULL && cg->E > 0)
            goto enomem;
        cg->call_cost = nc;
        cg->cap_calls = cap;
    }
    i = (uint32_t)cg->n_calls++;
    cg->calls[i] = (call_rec){ caller, callee, 0 };
    memset(cg->call_cost + (size_t)i * cg->E, 0, cg->E * sizeof *cg->call_cost);
    if (ph_u64map_put(&cg->call_map, key, i) < 0)
        goto enomem;
    return i;
enomem:
    errno = ENOMEM;
    return UINT32_MAX;
}

/* Space-separated counts of S..E into V (at most MAX); -1 when not counts. */
static int
parse_counts(const char *p, const char *e, uint64_t *v, size_t max)
{
    size_t n = 0;

    for (;;) {
        uint64_t x = 0;

        while (p < e && (*p == ' ' || *p == '\t'))
            p++;
        if (p == e)
            return (int)n;
        if (n == max || (unsigned)(*p - '0') > 9)
            return -1;
        while (p < e && (unsigned)(*p - '0') <= 9) {
            unsigned d = (unsigned)(*p++ - '0');
            if (x > (UINT64_MAX - d) / 10)
                return -1;
            x = x * 10 + d;
        }
        if (p < e && *p != ' ' && *p != '\t')
            return -1;
        v[n++] = x;
    }
}

/* Skip one position token: `*`, `+N`, `-N`, `N`, `0xHEX`.  NULL when bad. */
static const char *
skip_position(const char *p, const char *e)
{
    const char *s;

    if (p == e)
        return NULL;
    if (*p == '*') {
        p++;
    } else if (*p == '+' || *p == '-') {
        s = ++p;
        while (p < e && (unsigned)(*p - '0') <= 9)
            p++;
        if (p == s)
            return NULL;
    } else if (e - p > 2 && p[0] == '0' && p[1] == 'x') {
        s = p += 2;
        while (p < e && ((unsigned)(*p - '0') <= 9 || ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'f')))
            p++;
        if (p == s)
            return NULL;
    } else {
        s = p;
        while (p < e && (unsigned)(*p - '0') <= 9)
            p++;
        if (p == s)
            return NULL;
    }
    if (p < e && *p != ' ' && *p != '\t')
        return NULL;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

static int
cost_line(ph_callgrind *cg, const char *s, const char *e, size_t lineno, ph_error_t *err)
{
    uint64_t v[PH_CG_MAX_EVENTS];
    const char *p = s;
    uint64_t *dst;
    int n;

    for (int k = 0; k < cg->npos; k++)
        if ((p = skip_position(p, e)) == NULL) {
            bad_line(cg, lineno);
            return 0;
        }
    n = parse_counts(p, e, v, cg->fileE);
    if (n < 0 || !cg->have_fn || !cg->saw_events) {
        bad_line(cg, lineno);
        return 0;
    }
    cg->p_any = 1;
    if (cg->pending_calls > 0) {
        uint32_t c;

        if (!cg->have_callee) {
            cg->pending_calls = 0;
            bad_line(cg, lineno);
            return 0;
        }
        c = call_edge(cg, cg->cur_func, cg->callee);
        if (c == UINT32_MAX) {
            cg->pending_calls = 0;
            return errno == ENOMEM ? ph_fail(err, ENOMEM, "keep callgrind's call graph") : 0;
        }
        cg->calls[c].count += cg->pending_calls;
        cg->fns[cg->callee].called = 1;
        cg->pending_calls = 0;
        dst = cg->call_cost + (size_t)c * cg->E;
        for (int j = 0; j < n; j++)
            if (cg->map[j] >= 0)
                dst[cg->map[j]] += v[j];
        return 0;
    }
    dst = cg->self + (size_t)cg->cur_func * cg->E;
    if (cg->identity) {
        for (int j = 0; j < n; j++) {
            dst[j] += v[j];
            cg->p_self[j] += v[j];
        }
    } else {
        for (int j = 0; j < n; j++)
            if (cg->map[j] >= 0) {
                dst[cg->map[j]] += v[j];
                cg->p_self[cg->map[j]] += v[j];
            }
    }
    return 0;
}

/* `events:` of this file: the program's events come from the first file;
 * a later file's are matched by name. */
static int
set_events(ph_callgrind *cg, const char *p, const char *e, size_t lineno)
{
    size_t n = 0;

    if (cg->E > 0 && (cg->n_fns > 0 || cg->n_calls > 0)) {
        /* matched by name; events the first file did not have are dropped */
        while (p < e) {
            const char *w;
            int found = -1;
            while (p < e && (*p == ' ' || *p == '\t'))
                p++;
            if (p == e)
                break;
            w = p;
            while (p < e && *p != ' ' && *p != '\t')
                p++;
            if (n == PH_CG_MAX_EVENTS) {
                bad_line(cg, lineno);
                return 0;
            }
            for (size_t k = 0; k < cg->E; k++)
                if (strlen(cg->ev[k]) == (size_t)(p - w) && memcmp(cg->ev[k], w, (size_t)(p - w)) == 0)
                    found = (int)k;
            if (found < 0)
                problem(cg, "event %.*s of a later part is not in the first part's events: left out", (int)(p - w), w);
            cg->map[n++] = found;
        }
    } else {
        while (p < e) {
            const char *w;
            int64_t id;
            while (p < e && (*p == ' ' || *p == '\t'))
                p++;
            if (p == e)
                break;
            w = p;
            while (p < e && *p != ' ' && *p != '\t')
                p++;
            if (n == PH_CG_MAX_EVENTS) {
                bad_line(cg, lineno);
                return 0;
            }
            id = intern(cg, w, (size_t)(p - w));
            if (id < 0)
                return -1;
            cg->ev[n] = ph_intern_get(cg->strings, (uint32_t)id);
            cg->map[n] = (int)n;
            n++;
        }
        if (n == 0) {
            bad_line(cg, lineno);
            return 0;
        }
        if (n != cg->E && (cg->cap_fns > 0 || cg->cap_calls > 0)) {
            /* functions named before any events: their (empty) costs get room */
            uint64_t *ns = calloc(cg->cap_fns * n + 1, sizeof *ns), *nc = calloc(cg->cap_calls * n + 1, sizeof *nc);
            if (ns == NULL || nc == NULL) {
                free(ns);
                free(nc);
                return -1;
            }
            free(cg->self);
            free(cg->call_cost);
            cg->self = ns;
            cg->call_cost = nc;
        }
        cg->E = n;
    }
    cg->fileE = n;
    cg->identity = n == cg->E;
    for (size_t j = 0; j < n && cg->identity; j++)
        cg->identity = cg->map[j] == (int)j;
    cg->saw_events = 1;
    return 0;
}

static void
copy_field(char *dst, size_t cap, const char *p, const char *e)
{
    size_t n = (size_t)(e - p) < cap - 1 ? (size_t)(e - p) : cap - 1;

    memcpy(dst, p, n);
    dst[n] = '\0';
}

static void end_part(ph_callgrind *cg);

/* A `key: value` header line; 1 when it was one. */
static int
header_line(ph_callgrind *cg, const char *s, const char *e, size_t lineno, ph_error_t *err)
{
    const char *c = memchr(s, ':', (size_t)(e - s)), *v;
    size_t kl;

    if (c == NULL)
        return 0;
    kl = (size_t)(c - s);
    for (v = c + 1; v < e && (*v == ' ' || *v == '\t'); v++)
        ;
#define KEY(k) (kl == sizeof(k) - 1 && memcmp(s, k, kl) == 0)
    if (KEY("events")) {
        if (set_events(cg, v, e, lineno) < 0)
            return ph_fail(err, ENOMEM, "read callgrind's events");
    } else if (KEY("positions")) {
        int n = 0;
        for (const char *p = v; p < e;) {
            while (p < e && (*p == ' ' || *p == '\t'))
                p++;
            if (p == e)
                break;
            n++;
            while (p < e && *p != ' ' && *p != '\t')
                p++;
        }
        if (n < 1 || n > 3) {
            bad_line(cg, lineno);
        } else {
            cg->npos = n;
            copy_field(cg->positions, sizeof cg->positions, v, e);
        }
    } else if (KEY("summary") || KEY("totals")) {
        uint64_t x[PH_CG_MAX_EVENTS];
        int n = parse_counts(v, e, x, cg->fileE);
        int is_sum = KEY("summary");
        uint64_t *dst = is_sum ? cg->p_summary : cg->p_totals;
        if (n < 0 || !cg->saw_events) {
            bad_line(cg, lineno);
            return 1;
        }
        memset(dst, 0, sizeof cg->p_summary);
        for (int j = 0; j < n; j++)
            if (cg->map[j] >= 0)
                dst[cg->map[j]] = x[j];
        if (is_sum)
            cg->p_has_summary = 1;
        else
            cg->p_has_totals = 1;
    } else if (KEY("part") || KEY("pid") || KEY("thread")) {
        char *dst;
        if (KEY("part") && cg->p_any)
            end_part(cg); /* several parts in one file */
        dst = KEY("part") ? cg->cur_part.part : KEY("pid") ? cg->cur_part.pid : cg->cur_part.thread;
        copy_field(dst, sizeof cg->cur_part.part, v, e);
        cg->p_open = 1;
    } else if (KEY("cmd")) {
        copy_field(cg->cur_part.cmd, sizeof cg->cur_part.cmd, v, e);
        if (cg->cmd == NULL && (cg->cmd = strndup(v, (size_t)(e - v))) == NULL)
            return ph_fail(err, ENOMEM, "read callgrind's header");
    } else if (KEY("creator")) {
        if (cg->creator == NULL && (cg->creator = strndup(v, (size_t)(e - v))) == NULL)
            return ph_fail(err, ENOMEM, "read callgrind's header");
    } else if (!(KEY("version") || KEY("desc") || KEY("event"))) {
        return 0;
    }
#undef KEY
    cg->p_open = 1;
    return 1;
}

static int
body_line(ph_callgrind *cg, const char *s, const char *e, size_t lineno, ph_error_t *err)
{
    const char *eq = s, *v;
    size_t kl;
    uint32_t id;
    int r = 0;

    /* `key=`: a few lowercase letters; anything else is a `key:` header */
    while (eq < e && eq - s < 8 && *eq >= 'a' && *eq <= 'z')
        eq++;
    if (eq == e || *eq != '=') {
        int h = header_line(cg, s, e, lineno, err);
        if (h < 0)
            return -1;
        if (h == 0)
            bad_line(cg, lineno);
        return 0;
    }
    kl = (size_t)(eq - s);
    v = eq + 1;
    cg->p_open = 1;
#define KEY(k) (kl == sizeof(k) - 1 && memcmp(s, k, kl) == 0)
    if (KEY("fn")) {
        if ((r = resolve(cg, &cg->c_fn, v, e, &id)) == 0) {
            uint32_t f = func(cg, cg->cur_file, id);
            if (f == UINT32_MAX)
                return ph_fail(err, ENOMEM, "keep callgrind's functions");
            cg->cur_fn = id;
            cg->have_fn = 1;
            cg->cur_func = cg->cur_primary = f;
            cg->fns[f].defined = 1;
            cg->fns[f].obj = cg->cur_obj;
            cg->fns[f].primary = UINT32_MAX;
            cg->fns[f].own = 1;
        }
    } else if (KEY("fl")) {
        r = resolve(cg, &cg->c_fl, v, e, &cg->cur_file);
    } else if (KEY("fi") || KEY("fe")) {
        if (!cg->have_fn) {
            r = 1;
        } else if ((r = resolve(cg, &cg->c_fl, v, e, &id)) == 0) {
            uint32_t f = func(cg, id, cg->cur_fn);
            if (f == UINT32_MAX)
                return ph_fail(err, ENOMEM, "keep callgrind's functions");
            cg->cur_file = id;
            cg->cur_func = f;
            cg->fns[f].defined = 1;
            if (f != cg->cur_primary && cg->fns[f].primary == UINT32_MAX && !cg->fns[f].own)
                cg->fns[f].primary = cg->cur_primary;
        }
    } else if (KEY("ob")) {
        r = resolve(cg, &cg->c_ob, v, e, &cg->cur_obj);
    } else if (KEY("cob")) {
        r = resolve(cg, &cg->c_ob, v, e, &id);
    } else if (KEY("cfi") || KEY("cfl")) {
        if ((r = resolve(cg, &cg->c_fl, v, e, &cg->cfile)) == 0)
            cg->have_cfile = 1;
    } else if (KEY("cfn")) {
        if ((r = resolve(cg, &cg->c_fn, v, e, &id)) == 0) {
            uint32_t f = func(cg, cg->have_cfile ? cg->cfile : cg->cur_file, id);
            if (f == UINT32_MAX)
                return ph_fail(err, ENOMEM, "keep callgrind's functions");
            cg->callee = f;
            cg->have_callee = 1;
            cg->have_cfile = 0;
        }
    } else if (KEY("calls")) {
        uint64_t n = 0;
        const char *p = v;
        if (p == e || (unsigned)(*p - '0') > 9)
            r = 1;
        for (; p < e && (unsigned)(*p - '0') <= 9; p++)
            n = n * 10 + (uint64_t)(*p - '0');
        if (r == 0)
            cg->pending_calls = n; /* 0: the next cost line is the caller's own, as callgrind_annotate reads it */
    } else if (KEY("jump") || KEY("jcnd")) {
        /* jumps are not costs */
    } else if (KEY("jfi")) {
        r = resolve(cg, &cg->c_fl, v, e, &id);
    } else if (KEY("jfn")) {
        r = resolve(cg, &cg->c_fn, v, e, &id);
    } else {
        r = 1;
    }
#undef KEY
    if (r < 0)
        return ph_fail(err, ENOMEM, "keep callgrind's names");
    if (r > 0)
        bad_line(cg, lineno);
    return 0;
}

static int
line_cb(void *ctx, const char *s, size_t n, size_t lineno, ph_error_t *err)
{
    ph_callgrind *cg = ctx;
    const char *e = s + n;
    unsigned c;

    cg->info.lines++;
    if (s == NULL) {
        bad_line(cg, lineno);
        return 0;
    }
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    if (s == e || *s == '#')
        return 0;
    c = (unsigned char)*s;
    if ((c - '0') <= 9 || c == '+' || c == '-' || c == '*')
        return cost_line(cg, s, e, lineno, err);
    return body_line(cg, s, e, lineno, err);
}

/* ---- parts and files --------------------------------------------------- */

static void
end_part(ph_callgrind *cg)
{
    const uint64_t *t;
    char where[64];

    if (!cg->p_open)
        return;
    snprintf(where, sizeof where, "part %s", cg->cur_part.part[0] ? cg->cur_part.part : "1");
    if (cg->p_has_summary && memcmp(cg->p_summary, (uint64_t[PH_CG_MAX_EVENTS]){ 0 }, cg->E * 8) != 0)
        t = cg->p_summary;
    else if (cg->p_has_totals)
        t = cg->p_totals;
    else
        t = cg->p_self;
    /* callgrind ends every part with totals: */
    if (!cg->p_has_totals)
        problem(cg, "%s of the profile has no totals: line: the file is cut short", where);
    else if (cg->p_has_totals && memcmp(cg->p_totals, cg->p_self, cg->E * sizeof *cg->p_self) != 0)
        problem(cg, "%s: the costs do not add up to its totals: line (the file is damaged)", where);
    if (!cg->p_has_summary)
        cg->all_summary = 0;
    if (!cg->p_has_totals)
        cg->all_totals = 0;
    for (size_t j = 0; j < cg->E; j++)
        cg->totals[j] += t[j];
    cg->cur_part.first_event_total = cg->E ? t[0] : 0;
    if (cg->n_parts < PH_CG_MAX_PARTS) {
        ph_cg_part *np = realloc(cg->parts, (cg->n_parts + 1) * sizeof *np);
        if (np != NULL) {
            cg->parts = np;
            cg->parts[cg->n_parts++] = cg->cur_part;
        }
    }
    cg->parts_seen++;
    memset(cg->p_summary, 0, sizeof cg->p_summary);
    memset(cg->p_totals, 0, sizeof cg->p_totals);
    memset(cg->p_self, 0, sizeof cg->p_self);
    cg->p_has_summary = cg->p_has_totals = cg->p_any = cg->p_open = 0;
    {
        /* pid, thread and cmd carry on to the next part of the same file */
        ph_cg_part keep = cg->cur_part;
        memset(&cg->cur_part, 0, sizeof cg->cur_part);
        memcpy(cg->cur_part.pid, keep.pid, sizeof keep.pid);
        memcpy(cg->cur_part.thread, keep.thread, sizeof keep.thread);
        memcpy(cg->cur_part.cmd, keep.cmd, sizeof keep.cmd);
    }
}

int
ph_callgrind_next_file(ph_callgrind *cg, ph_error_t *err)
{
    if (ph_lines_finish(&cg->lines, err) < 0)
        return -1;
    if (cg->p_open && !cg->saw_events)
        problem(cg, "no events: line: not a callgrind profile");
    end_part(cg);
    cg->info.n_files++;
    memset(&cg->cur_part, 0, sizeof cg->cur_part);
    cmap_clear(&cg->c_fl);
    cmap_clear(&cg->c_fn);
    cmap_clear(&cg->c_ob);
    cg->cur_obj = cg->cur_file = cg->cur_fn = cg->empty;
    cg->have_fn = cg->have_cfile = cg->have_callee = 0;
    cg->pending_calls = 0;
    cg->saw_events = 0;
    cg->npos = 1;
    snprintf(cg->positions, sizeof cg->positions, "line");
    return 0;
}

ph_callgrind *
ph_callgrind_new(ph_error_t *err)
{
    ph_callgrind *cg = calloc(1, sizeof *cg);
    int64_t empty;

    if (cg == NULL || (cg->strings = ph_intern_new(CG_STRINGS_MAX)) == NULL ||
        (empty = ph_intern_add(cg->strings, "", 0)) < 0) {
        if (cg)
            ph_intern_free(cg->strings);
        free(cg);
        ph_fail(err, ENOMEM, "parse callgrind output");
        return NULL;
    }
    ph_lines_init(&cg->lines, PH_CG_MAX_LINE, 0, line_cb, cg);
    cg->empty = (uint32_t)empty;
    cg->npos = 1;
    snprintf(cg->positions, sizeof cg->positions, "line");
    cg->overflow_fn = UINT32_MAX;
    cg->all_summary = cg->all_totals = 1;
    return cg;
}

void
ph_callgrind_free(ph_callgrind *cg)
{
    if (cg == NULL)
        return;
    ph_lines_free(&cg->lines);
    ph_intern_free(cg->strings);
    free(cg->c_fl.v);
    free(cg->c_fn.v);
    free(cg->c_ob.v);
    free(cg->fns);
    free(cg->self);
    free(cg->incl);
    ph_u64map_free(&cg->fn_map);
    free(cg->calls);
    free(cg->call_cost);
    ph_u64map_free(&cg->call_map);
    free(cg->parts);
    free(cg->cmd);
    free(cg->creator);
    free(cg->out_start);
    free(cg->out_idx);
    free(cg);
}

int
ph_callgrind_feed(ph_callgrind *cg, const char *buf, size_t len, ph_error_t *err)
{
    return ph_lines_feed(&cg->lines, buf, len, err);
}

/* ---- inclusive costs ---------------------------------------------------- */

/* The strongly connected components of the call graph (Tarjan's, with
 * an explicit stack: a call chain may be as deep as there are
 * functions) into SCC (one id per function); their number, or -1 on
 * ENOMEM. */
static long
call_sccs(const ph_callgrind *cg, uint32_t *scc)
{
    size_t n = cg->n_fns, sp = 0, cp = 0;
    uint32_t *index = malloc((n ? n : 1) * sizeof *index), *low = malloc((n ? n : 1) * sizeof *low);
    uint32_t *stack = malloc((n ? n : 1) * sizeof *stack), *next = malloc((n ? n : 1) * sizeof *next);
    uint32_t *call = malloc((n ? n : 1) * sizeof *call);
    unsigned char *on = calloc(n ? n : 1, 1);
    uint32_t counter = 0;
    long nscc = -1;

    if (index == NULL || low == NULL || stack == NULL || next == NULL || call == NULL || on == NULL)
        goto out;
    for (size_t i = 0; i < n; i++)
        index[i] = UINT32_MAX;
    nscc = 0;
    for (uint32_t root = 0; root < n; root++) {
        if (index[root] != UINT32_MAX)
            continue;
        /* call[]: the DFS path; next[v]: v's next out-edge to look at */
        call[cp++] = root;
        index[root] = low[root] = counter++;
        next[root] = cg->out_start[root];
        stack[sp++] = root;
        on[root] = 1;
        while (cp > 0) {
            uint32_t v = call[cp - 1];

            if (next[v] < cg->out_start[v + 1]) {
                uint32_t w = cg->calls[cg->out_idx[next[v]++]].callee;

                if (index[w] == UINT32_MAX) {
                    index[w] = low[w] = counter++;
                    next[w] = cg->out_start[w];
                    stack[sp++] = w;
                    on[w] = 1;
                    call[cp++] = w;
                } else if (on[w] && index[w] < low[v]) {
                    low[v] = index[w];
                }
                continue;
            }
            if (low[v] == index[v]) {
                uint32_t w;
                do {
                    w = stack[--sp];
                    on[w] = 0;
                    scc[w] = (uint32_t)nscc;
                } while (w != v);
                nscc++;
            }
            cp--;
            if (cp > 0 && low[v] < low[call[cp - 1]])
                low[call[cp - 1]] = low[v];
        }
    }
out:
    free(index);
    free(low);
    free(stack);
    free(next);
    free(call);
    free(on);
    return nscc;
}

/* Inclusive costs as callgrind_annotate --inclusive=yes gives them: for a
 * function something calls, the sum of the calls' costs into it; for one
 * nothing calls, its self cost plus its calls' costs.  Except recursion,
 * which callgrind_annotate counts once per level (report_fib'2 at 3.0 M
 * inside report_fib's 0.41 M; a `start_thread'2` at 11.7 G of a 1.66 G
 * total): in a call cycle (a strongly connected component with more than
 * one function, or a function that calls itself) a call may run inside
 * another activation of the same function, so its cost is already in the
 * outer call's.  There, a call a function makes to itself is not counted,
 * and no function of the cycle costs more than the cycle as a whole: the
 * calls into it from outside (never nested in it: a caller outside that
 * called back in would be in the cycle), or, when nothing outside calls
 * it, its self costs and the calls it makes out of it.  And nothing costs
 * more than the program's totals.  Outside cycles the figures are
 * callgrind_annotate's to the digit.  0, or -1 on ENOMEM. */
static int
inclusive_costs(ph_callgrind *cg)
{
    size_t E = cg->E, n = cg->n_fns, ncyc = 0;
    uint32_t *scc = malloc((n ? n : 1) * sizeof *scc), *cyc = NULL;
    unsigned char *called = calloc(n ? n : 1, 1);
    uint64_t *entry = NULL, *inner = NULL;
    long nscc = scc != NULL ? call_sccs(cg, scc) : -1;
    int rc = -1;

    if (nscc < 0 || called == NULL || (cyc = malloc(((size_t)nscc + 1) * sizeof *cyc)) == NULL)
        goto out;
    /* the cycles: components of several functions, or of one that calls itself */
    {
        uint32_t *size = calloc((size_t)nscc + 1, sizeof *size);
        if (size == NULL)
            goto out;
        for (size_t f = 0; f < n; f++)
            size[scc[f]]++;
        for (long k = 0; k < nscc; k++)
            cyc[k] = size[k] > 1 ? 0 : UINT32_MAX;
        for (size_t c = 0; c < cg->n_calls; c++)
            if (cg->calls[c].caller == cg->calls[c].callee)
                cyc[scc[cg->calls[c].caller]] = 0;
        free(size);
        for (long k = 0; k < nscc; k++)
            if (cyc[k] == 0)
                cyc[k] = (uint32_t)ncyc++;
    }
    entry = calloc(ncyc * (E ? E : 1) + 1, sizeof *entry);
    inner = calloc(ncyc * (E ? E : 1) + 1, sizeof *inner);
    if (entry == NULL || inner == NULL)
        goto out;
    for (size_t c = 0; c < cg->n_calls; c++)
        if (cg->calls[c].caller != cg->calls[c].callee)
            called[cg->calls[c].callee] = 1;
    for (size_t c = 0; c < cg->n_calls; c++) {
        const call_rec *r = &cg->calls[c];
        const uint64_t *cost = cg->call_cost + c * E;
        uint32_t ka = cyc[scc[r->caller]], kb = cyc[scc[r->callee]];

        if (r->caller == r->callee)
            continue;
        for (size_t j = 0; j < E; j++) {
            cg->incl[(size_t)r->callee * E + j] += cost[j];
            if (!called[r->caller])
                cg->incl[(size_t)r->caller * E + j] += cost[j];
            if (kb != UINT32_MAX && scc[r->caller] != scc[r->callee])
                entry[(size_t)kb * E + j] += cost[j];
            if (ka != UINT32_MAX && scc[r->caller] != scc[r->callee])
                inner[(size_t)ka * E + j] += cost[j]; /* out of the cycle */
        }
    }
    for (size_t f = 0; f < n; f++) {
        uint32_t k = cyc[scc[f]];

        for (size_t j = 0; j < E; j++) {
            if (!called[f])
                cg->incl[f * E + j] += cg->self[f * E + j];
            if (k != UINT32_MAX)
                inner[(size_t)k * E + j] += cg->self[f * E + j];
        }
    }
    for (size_t f = 0; f < n; f++) {
        uint32_t k = cyc[scc[f]];

        for (size_t j = 0; j < E; j++) {
            uint64_t *v = &cg->incl[f * E + j];

            if (k != UINT32_MAX) {
                uint64_t whole = entry[(size_t)k * E + j] ? entry[(size_t)k * E + j] : inner[(size_t)k * E + j];
                if (*v > whole)
                    *v = whole;
            }
            if (*v > cg->totals[j])
                *v = cg->totals[j];
        }
    }
    rc = 0;
out:
    free(scc);
    free(cyc);
    free(called);
    free(entry);
    free(inner);
    return rc;
}

int
ph_callgrind_finish(ph_callgrind *cg, ph_error_t *err)
{
    size_t E;

    if (cg->finished)
        return 0;
    if ((cg->p_open || cg->lines.hold_len > 0) && ph_callgrind_next_file(cg, err) < 0)
        return -1;
    cg->finished = 1;
    E = cg->E;
    if (cg->info.lines == 0)
        problem(cg, "the file is empty");
    else if (E == 0)
        problem(cg, "no events: line: not a callgrind profile");

    cg->incl = calloc(cg->n_fns ? cg->n_fns * (E ? E : 1) : 1, sizeof *cg->incl);
    cg->out_start = calloc(cg->n_fns + 1, sizeof *cg->out_start);
    cg->out_idx = malloc((cg->n_calls ? cg->n_calls : 1) * sizeof *cg->out_idx);
    if (cg->incl == NULL || cg->out_start == NULL || cg->out_idx == NULL)
        return ph_fail(err, ENOMEM, "compute inclusive costs");
    for (size_t c = 0; c < cg->n_calls; c++)
        cg->out_start[cg->calls[c].caller + 1]++;
    for (size_t f = 0; f < cg->n_fns; f++)
        cg->out_start[f + 1] += cg->out_start[f];
    {
        uint32_t *fill = calloc(cg->n_fns + 1, sizeof *fill);
        if (fill == NULL)
            return ph_fail(err, ENOMEM, "compute inclusive costs");
        for (size_t c = 0; c < cg->n_calls; c++) {
            uint32_t a = cg->calls[c].caller;
            cg->out_idx[cg->out_start[a] + fill[a]++] = (uint32_t)c;
        }
        free(fill);
    }
    if (inclusive_costs(cg) < 0)
        return ph_fail(err, ENOMEM, "compute inclusive costs");

    cg->info.n_events = E;
    for (size_t j = 0; j < E; j++)
        cg->info.events[j] = cg->ev[j];
    cg->info.totals = cg->totals;
    cg->info.totals_from = cg->parts_seen == 0 ? "calculated"
                           : cg->all_summary  ? "summary:"
                           : cg->all_totals   ? "totals:"
                                              : "calculated";
    cg->info.cmd = cg->cmd ? cg->cmd : "";
    cg->info.creator = cg->creator ? cg->creator : "";
    cg->info.positions = cg->positions;
    cg->info.n_parts = cg->parts_seen;
    return 0;
}

static int
chunk_cb(void *ctx, const char *buf, size_t len, ph_error_t *err)
{
    return ph_callgrind_feed(ctx, buf, len, err);
}

ph_callgrind *
ph_callgrind_parse_files(const char *const *paths, size_t n, ph_error_t *err)
{
    ph_callgrind *cg = ph_callgrind_new(err);

    if (cg == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (ph_read_file_chunks(paths[i], chunk_cb, cg, NULL, err) < 0 || ph_callgrind_next_file(cg, err) < 0) {
            ph_callgrind_free(cg);
            return NULL;
        }
    }
    if (ph_callgrind_finish(cg, err) < 0) {
        ph_callgrind_free(cg);
        return NULL;
    }
    return cg;
}

/* ---- queries ----------------------------------------------------------- */

const ph_cg_info *
ph_callgrind_get_info(const ph_callgrind *cg)
{
    return &cg->info;
}

size_t
ph_callgrind_n_fns(const ph_callgrind *cg)
{
    return cg->n_fns;
}

ph_cg_fn
ph_callgrind_get_fn(const ph_callgrind *cg, uint32_t i)
{
    const fn_rec *r = &cg->fns[i];

    return (ph_cg_fn){
        ph_intern_get(cg->strings, r->name),
        ph_intern_get(cg->strings, r->fn),
        ph_intern_get(cg->strings, r->file),
        ph_intern_get(cg->strings, r->obj),
        cg->self + (size_t)i * cg->E,
        cg->incl ? cg->incl + (size_t)i * cg->E : NULL,
        r->called,
        r->defined,
    };
}

size_t
ph_callgrind_n_calls(const ph_callgrind *cg)
{
    return cg->n_calls;
}

ph_cg_call
ph_callgrind_get_call(const ph_callgrind *cg, size_t i)
{
    return (ph_cg_call){ cg->calls[i].caller, cg->calls[i].callee, cg->calls[i].count, cg->call_cost + i * cg->E };
}

const ph_cg_part *
ph_callgrind_get_part(const ph_callgrind *cg, size_t i)
{
    return i < cg->n_parts ? &cg->parts[i] : NULL;
}

int
ph_callgrind_event_index(const ph_callgrind *cg, const char *name)
{
    for (size_t j = 0; j < cg->E; j++)
        if (strcasecmp(cg->ev[j], name) == 0)
            return (int)j;
    return -1;
}

