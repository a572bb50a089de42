/* ph_langview.c - a run's stacks as their language frames (ph_langview.h). */
#include "ph_langview.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFFCPU "[off-cpu]"

static int
ends_with(const char *s, size_t n, const char *tail)
{
    size_t t = strlen(tail);

    return n >= t && memcmp(s + n - t, tail, t) == 0;
}

static int
starts_with(const char *s, size_t n, const char *head)
{
    size_t h = strlen(head);

    return n >= h && memcmp(s, head, h) == 0;
}

/* OUT = the pieces A[0..AN) B[0..BN) C[0..CN), cut at CAP. */
static void
put3(char *out, size_t cap, const char *a, size_t an, const char *b, size_t bn, const char *c, size_t cn)
{
    size_t o = 0;
    const char *p[3] = { a, b, c };
    size_t l[3] = { an, bn, cn };

    if (cap == 0)
        return;
    for (int i = 0; i < 3; i++) {
        size_t k = l[i] < cap - 1 - o ? l[i] : cap - 1 - o;
        memcpy(out + o, p[i], k);
        o += k;
    }
    out[o] = '\0';
}

/* `qualname (file.py:LINE)`: the line dropped. */
static ph_lang
python_frame(const char *s, size_t n, char *out, size_t cap)
{
    size_t colon = n;

    if (n > 0 && s[n - 1] == ')') {
        size_t i = n - 1;
        while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
            i--;
        if (i > 0 && s[i - 1] == '-')
            i--;
        if (i > 0 && i < n - 1 && s[i - 1] == ':')
            colon = i - 1;
    }
    if (colon < n)
        put3(out, cap, s, colon, ")", 1, "", 0);
    else
        put3(out, cap, s, n, "", 0, "", 0);
    return PH_LANG_PYTHON;
}

/* V8's code tags (its log's CodeTag names, as --perf-basic-prof writes
 * them before a ':'): the program's functions, or the engine's own code. */
static const struct {
    const char *tag;
    const char *unnamed; /* the name of a function without one */
    int js;              /* the program's code (else V8's: native here) */
} v8_tags[] = {
    { "LazyCompile", "(anonymous)", 1 }, { "Function", "(anonymous)", 1 }, { "JS", "(anonymous)", 1 },
    { "Eval", "(eval)", 1 },             { "Script", "(script)", 1 },      { "RegExp", NULL, 1 },
    { "NativeFunction", "(anonymous)", 1 }, { "NativeLazyCompile", "(anonymous)", 1 },
    { "NativeScript", "(script)", 1 },
    { "Builtin", NULL, 0 },  { "BytecodeHandler", NULL, 0 }, { "Stub", NULL, 0 },    { "Handler", NULL, 0 },
    { "Callback", NULL, 0 }, { "KeyedLoadIC", NULL, 0 },     { "KeyedStoreIC", NULL, 0 }, { "LoadIC", NULL, 0 },
    { "StoreIC", NULL, 0 },  { "LoadGlobalIC", NULL, 0 },    { "StoreGlobalIC", NULL, 0 },
    { "StoreInArrayLiteralIC", NULL, 0 }, { "Shared", NULL, 0 },
};

/* A V8 perf-map name `Tag:[tier]name location`: 1 with *LANG set, 0
 * when S is not one. */
static int
v8_frame(const char *s, size_t n, char *out, size_t cap, ph_lang *lang)
{
    const char *colon = memchr(s, ':', n), *body, *sp;
    size_t tn, bn;

    if (colon == NULL || colon == s)
        return 0;
    tn = (size_t)(colon - s);
    for (size_t i = 0; i < sizeof v8_tags / sizeof v8_tags[0]; i++) {
        if (strlen(v8_tags[i].tag) != tn || memcmp(s, v8_tags[i].tag, tn) != 0)
            continue;
        *lang = v8_tags[i].js ? PH_LANG_JS : PH_LANG_NONE;
        if (!v8_tags[i].js)
            return 1;
        body = colon + 1;
        bn = n - tn - 1;
        if (v8_tags[i].unnamed == NULL) { /* RegExp:PATTERN */
            put3(out, cap, "/", 1, body, bn, "/ (regexp)", 10);
            return 1;
        }
        if (bn > 0 && strchr("~^+*", body[0]) != NULL) { /* the tier: a detail */
            body++;
            bn--;
        }
        sp = memrchr(body, ' ', bn);
        if (sp == NULL) {
            put3(out, cap, bn ? body : v8_tags[i].unnamed, bn ? bn : strlen(v8_tags[i].unnamed), "", 0, "", 0);
        } else {
            size_t fn = (size_t)(sp - body), ln = bn - fn - 1;
            const char *f = fn ? body : v8_tags[i].unnamed;

            fn = fn ? fn : strlen(v8_tags[i].unnamed);
            if (ln == 0)
                put3(out, cap, f, fn, "", 0, "", 0);
            else {
                char loc[512];
                put3(loc, sizeof loc, " (", 2, sp + 1, ln, ")", 1);
                put3(out, cap, f, fn, loc, strlen(loc), "", 0);
            }
        }
        return 1;
    }
    return 0;
}

/* HotSpot's code that is no Java method (its perf map has it beside the
 * methods): the interpreter, stubs, adapters. */
static int
hotspot_stub(const char *s, size_t n)
{
    static const char *const stubs[] = { "Interpreter", "StubRoutines", "I2C/C2I", "RuntimeStub", "BufferBlob",
                                         "AdapterBlob", "MethodHandles", "vtable", "itable", "DeoptimizationBlob",
                                         "UncommonTrapBlob", "ExceptionBlob", "SafepointBlob", "Stub<", "flush_icache" };

    for (size_t i = 0; i < sizeof stubs / sizeof stubs[0]; i++)
        if (starts_with(s, n, stubs[i]))
            return 1;
    /* a method is Class.method, pkg/Class;::method or Class::method */
    return memchr(s, '.', n) == NULL && memmem(s, n, "::", 2) == NULL;
}

ph_lang
ph_langview_frame(const char *name, size_t n, char *out, size_t cap)
{
    ph_lang l = PH_LANG_NONE;

    if (ends_with(name, n, " (inlined)")) /* the sampler's mark on a Java method the JIT inlined */
        n -= 10;
    if (ends_with(name, n, "_[p]"))
        return python_frame(name, n - 4, out, cap);
    if (!ends_with(name, n, "_[j]"))
        return PH_LANG_NONE;
    n -= 4;
    if (starts_with(name, n, "py::")) { /* CPython 3.12+'s perf trampolines: `py::qualname:path` */
        const char *q = name + 4, *colon = memchr(q, ':', n - 4), *file, *slash;
        size_t qn = colon ? (size_t)(colon - q) : n - 4, fn;

        if (colon == NULL) {
            snprintf(out, cap, "%.*s", (int)qn, q);
            return PH_LANG_PYTHON;
        }
        file = colon + 1;
        fn = n - 4 - qn - 1;
        if ((slash = memrchr(file, '/', fn)) != NULL) { /* the file's name, as the sampler writes it */
            fn -= (size_t)(slash + 1 - file);
            file = slash + 1;
        }
        snprintf(out, cap, "%.*s (%.*s)", (int)qn, q, (int)fn, file);
        return PH_LANG_PYTHON;
    }
    if (v8_frame(name, n, out, cap, &l))
        return l;
    if (n == 0 || hotspot_stub(name, n))
        return PH_LANG_NONE;
    {
        /* HotSpot's own perf map writes `long LangJava.hot(long, long)`:
         * the arguments (the perf conversion drops them, the sampler's
         * map reader does not) and the return type go */
        const char *sp;

        if (n > 0 && name[n - 1] == ')') {
            const char *open = memchr(name, '(', n);
            if (open != NULL && open > name)
                n = (size_t)(open - name);
        }
        sp = memrchr(name, ' ', n);
        if (sp != NULL && memchr(sp + 1, '.', (size_t)(name + n - sp - 1)) != NULL) {
            n -= (size_t)(sp + 1 - name);
            name = sp + 1;
        }
    }
    put3(out, cap, name, n, "", 0, "", 0);
    return PH_LANG_JAVA;
}

const char *
ph_langview_lang_name(ph_lang l)
{
    switch (l) {
    case PH_LANG_PYTHON: return "Python";
    case PH_LANG_JAVA: return "Java";
    case PH_LANG_JS: return "JavaScript";
    default: return "";
    }
}

/* Each name of FROM: its id in the view (interned there) and language,
 * or UINT32_MAX for a native frame.  NULL on ENOMEM. */
static uint32_t *
map_names(const ph_folded *from, ph_folded *to, uint8_t **langs, ph_error_t *err)
{
    size_t nn = ph_folded_n_names(from);
    uint32_t *map = malloc((nn ? nn : 1) * sizeof *map);
    uint8_t *lang = calloc(nn ? nn : 1, 1);
    char buf[4096];

    if (map == NULL || lang == NULL)
        goto enomem;
    for (uint32_t i = 0; i < nn; i++) {
        size_t len;
        const char *s = ph_folded_name(from, i, &len);
        ph_lang l = ph_langview_frame(s, len, buf, sizeof buf);
        int64_t id;

        map[i] = UINT32_MAX;
        if (l == PH_LANG_NONE)
            continue;
        if ((id = ph_folded_intern(to, buf, strlen(buf), err)) < 0)
            goto out;
        map[i] = (uint32_t)id;
        lang[i] = (uint8_t)l;
    }
    *langs = lang;
    return map;
enomem:
    ph_fail(err, ENOMEM, "the language view: out of memory");
out:
    free(map);
    free(lang);
    return NULL;
}

/* The id of FROM's name ID in TO, interned as it is. */
static int64_t
same_name(const ph_folded *from, uint32_t id, ph_folded *to, ph_error_t *err)
{
    size_t len;
    const char *s = ph_folded_name(from, id, &len);

    return ph_folded_intern(to, s, len, err);
}

int
ph_langview_build(const ph_folded *from, int skip_root, ph_folded **out, ph_langview_info *info, ph_error_t *err)
{
    ph_langview_info in = { 0 };
    ph_folded *to = NULL;
    uint32_t *map = NULL, *ids = NULL, cap = 0;
    uint8_t *lang = NULL;
    size_t ns = ph_folded_n_stacks(from);
    int rc = -1;

    *out = NULL;
    if ((to = ph_folded_new(0, err)) == NULL || (map = map_names(from, to, &lang, err)) == NULL)
        goto out;
    for (size_t i = 0; i < ns; i++) {
        ph_folded_stack s = ph_folded_get_stack(from, i);
        uint32_t first = skip_root && s.depth > 1 ? 1 : 0, d, inner = UINT32_MAX;

        in.total += s.count;
        for (d = first; d < s.depth; d++)
            if (map[s.frames[d]] != UINT32_MAX)
                inner = d;
        if (inner == UINT32_MAX)
            continue;
        in.with_lang += s.count;
        in.per_lang[lang[s.frames[inner]]] += s.count;
    }
    for (int l = 1; l < PH_LANG_N; l++)
        if (in.per_lang[l] > in.per_lang[in.lang])
            in.lang = (ph_lang)l;
    if (in.lang == PH_LANG_NONE || ph_folded_get_stats(from)->differential) {
        rc = 0;
        goto out;
    }
    for (size_t i = 0; i < ns; i++) {
        ph_folded_stack s = ph_folded_get_stack(from, i);
        uint32_t first = skip_root && s.depth > 1 ? 1 : 0, n = 0;
        int has = 0;
        int64_t id;

        if (s.depth + 1 > cap) {
            uint32_t *ni = realloc(ids, (s.depth + 1) * sizeof *ni);
            if (ni == NULL) {
                ph_fail(err, ENOMEM, "the language view: out of memory");
                goto out;
            }
            ids = ni;
            cap = s.depth + 1;
        }
        for (uint32_t d = first; d < s.depth && !has; d++)
            has = map[s.frames[d]] != UINT32_MAX;
        if (!has) { /* no language frame: the stack as it is */
            for (uint32_t d = 0; d < s.depth; d++) {
                if ((id = same_name(from, s.frames[d], to, err)) < 0)
                    goto out;
                ids[n++] = (uint32_t)id;
            }
        } else {
            if (first == 1) {
                if ((id = same_name(from, s.frames[0], to, err)) < 0)
                    goto out;
                ids[n++] = (uint32_t)id;
            }
            for (uint32_t d = first; d < s.depth; d++)
                if (map[s.frames[d]] != UINT32_MAX)
                    ids[n++] = map[s.frames[d]];
            if (strcmp(ph_folded_name(from, s.frames[s.depth - 1], NULL), OFFCPU) == 0) {
                if ((id = same_name(from, s.frames[s.depth - 1], to, err)) < 0)
                    goto out;
                ids[n++] = (uint32_t)id;
            }
        }
        if (ph_folded_add(to, ids, n, s.count, err) < 0)
            goto out;
    }
    *out = to;
    to = NULL;
    rc = 1;
out:
    if (info != NULL)
        *info = in;
    ph_folded_free(to);
    free(map);
    free(lang);
    free(ids);
    return rc;
}
