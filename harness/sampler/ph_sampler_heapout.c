/* ph_sampler_heapout.c - the heap sampler's snapshot files (writer thread
 * only: allocates and blocks freely; its own allocations are never
 * sampled).
 *
 * A snapshot (<tag> and <n> as the CPU sampler's, ph_sampler_snap.c):
 *   <view>-<UTC><tag>-<n>.folded   `outer;...;leaf VALUE`, merged by text,
 *                                  for each view: inuse_space, inuse_objects
 *                                  (now), peak_inuse_space,
 *                                  peak_inuse_objects (at the peak of the
 *                                  bytes in use), alloc_space, alloc_objects
 *                                  (since start); bytes and objects are the
 *                                  samples' unbiased estimates
 *                                  (ph_sampler_heapmath.h), so they add up
 *                                  to what the program allocated, not to
 *                                  the samples
 *   <view>-<UTC><tag>-<n>.svg      the flamegraph of each view that has
 *                                  something to show
 *   heap-<UTC><tag>-<n>.pb.gz      pprof: alloc_objects/count,
 *                                  alloc_space/bytes, inuse_objects/count,
 *                                  inuse_space/bytes (Go's heap profile's
 *                                  types, already scaled, as Go writes
 *                                  them), period space/bytes = the mean
 *                                  interval, default inuse_space
 *   heap-<UTC><tag>-<n>.json       the runtimes in the process and what
 *                                  of their heaps is seen (write_runtimes)
 * Always cumulative (what is in use is a state, not a sum).  The first
 * final snapshot (SIGTERM, exit, exec) is the last: one at SIGTERM is
 * not followed by one at exit, which would show what is left once the
 * service has freed its data on the way out.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ph_sampler_int.h"

#define MAX_ROWS (1u << 15)

static int final_written;

int
phs_heap_final_written(void)
{
    return final_written;
}

static const char *const view_name[PHS_HEAP_VIEWS] = {
    [PHS_HEAP_ALLOC_OBJECTS] = "alloc_objects",      [PHS_HEAP_ALLOC_SPACE] = "alloc_space",
    [PHS_HEAP_INUSE_OBJECTS] = "inuse_objects",      [PHS_HEAP_INUSE_SPACE] = "inuse_space",
    [PHS_HEAP_PEAK_OBJECTS] = "peak_inuse_objects", [PHS_HEAP_PEAK_SPACE] = "peak_inuse_space",
};

typedef struct text {
    char *s;                /* the stack as folded frames */
    size_t row;
} text;

static int
cmp_text(const void *x, const void *y)
{
    return strcmp(((const text *)x)->s, ((const text *)y)->s);
}

/* "12.3 MiB" */
static const char *
fmt_bytes(char *b, size_t len, double v)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;

    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(b, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return b;
}

/* The folded text of view V over the sorted stacks T (N of them). */
static int
folded_view(const text *t, size_t n, const phs_heap_row *rows, int v, char **out, size_t *len)
{
    FILE *f = open_memstream(out, len);

    if (f == NULL)
        return -1;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        int64_t sum = 0;

        for (; j < n && strcmp(t[j].s, t[i].s) == 0; j++)
            sum += rows[t[j].row].v[v];
        if (sum > 0)
            fprintf(f, "%s %lld\n", t[i].s, (long long)sum);
        i = j;
    }
    return fclose(f) == 0 ? 0 : -1;
}

static int
has_py(const uintptr_t *w, uint32_t depth)
{
    for (uint32_t i = 0; i < depth; i++)
        if (phs_is_py(w[i]))
            return 1;
    return 0;
}

/* RAW[0..DEPTH) named into OUT (DEPTH words): a Java object's class and
 * frames, or the Python frames; the new depth. */
static uint32_t
resolve(phs_symbols *sym, const uintptr_t *raw, uint32_t depth, uintptr_t *out)
{
    if (phs_java_heap_word(raw[0]))
        return phs_java_heap_resolve(sym, raw, depth, out);
    memcpy(out, raw, depth * sizeof *raw);
    return phs_py_resolve(phs_symbols_py(sym), out, depth);
}

static uint32_t py_named; /* heap stacks looked at by phs_heap_name_py */

void
phs_heap_name_py(phs_agg *a)
{
    uintptr_t out[PHS_MAX_WORDS];
    uint32_t n = phs_heap_n_stacks();

    if (phs_heap_py_state(&(const char *){ NULL }) != 1)
        return;
    for (; py_named < n; py_named++) {
        const uintptr_t *w = NULL;
        uint32_t d = phs_heap_stack(py_named, &w);

        if (d > 0 && d <= PHS_MAX_WORDS && has_py(w, d))
            resolve(phs_agg_symbols(a), w, d, out);
    }
}

/* S as a JSON string into F. */
static void
put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* One runtime of the heap file: its name, whether its own objects are
 * sampled, the sentence for the report and the few words for a headline. */
static void
put_runtime(FILE *f, int *first, const char *runtime, int objects, const char *note, const char *brief)
{
    fputs(*first ? "\n  " : ",\n  ", f);
    *first = 0;
    fputs("{\"runtime\": ", f);
    put_json_string(f, runtime);
    fprintf(f, ", \"objects\": %s, \"note\": ", objects ? "true" : "false");
    put_json_string(f, note);
    fputs(", \"brief\": ", f);
    put_json_string(f, brief);
    fputc('}', f);
}

/* The program is node (by its file name: its heap, V8's, is not seen). */
static int
is_node(void)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *base;

    if (n <= 0)
        return 0;
    exe[n] = '\0';
    base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    return strcmp(base, "node") == 0 || strcmp(base, "nodejs") == 0 || strncmp(base, "node-", 5) == 0;
}

/* Node loads the heap mode's preload (images/tools/ph-heapprof.js, in
 * NODE_OPTIONS as the heap profile sets it), which samples V8's heap. */
static int
node_heap_prof(void)
{
    const char *o = getenv("NODE_OPTIONS");

    return o != NULL && strstr(o, "ph-heapprof.js") != NULL;
}

/* heap-<...>.json: what this process's heap profile sees of the
 * runtimes in it (a JVM, a CPython, node), for the report to say first.
 * {"runtimes": []} when there is none: every allocation is malloc's. */
static int
write_runtimes(const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    const char *java = phs_java_heap_describe(), *why = "";
    int first = 1, rc;

    if (f == NULL)
        return -1;
    fputs("{\"runtimes\": [", f);
    if (java[0])
        put_runtime(f, &first, "java", strstr(java, "are sampled") != NULL, java,
                    strstr(java, "are sampled") ? "Java objects sampled (JVMTI)"
                                                : "the JVM's heap not seen: its native allocations only");
    if (phs_py_describe()[0] && phs_heap_py_state(&why) == 1)
        put_runtime(f, &first, "python", 1,
                    "CPython's heap is mostly not malloc: its objects are sampled through its object allocator "
                    "(PyMem_SetAllocator, as tracemalloc hooks it) with their Python stacks; the other stacks are "
                    "the interpreter's own mallocs",
                    "CPython objects sampled (PyMem_SetAllocator)");
    else if (phs_py_describe()[0]) {
        char note[400];

        snprintf(note, sizeof note,
                 "CPython's heap is mostly not malloc: its objects of up to 512 bytes come from its own arenas "
                 "(pymalloc, mmap) and are not seen (%s); larger ones are, as the interpreter's calls of malloc "
                 "with native stacks",
                 why[0] ? why : !phs_py_active() ? "its frames are not read: see the status" : "not hooked yet");
        put_runtime(f, &first, "python", 0, note, "CPython's small objects not seen: malloc only");
    }
    if (is_node() && node_heap_prof())
        put_runtime(f, &first, "node", 1,
                    "V8's heap is not malloc: its JavaScript objects are sampled by V8's own heap profiler "
                    "(HeapProfiler.startSampling, started by the mode's preload in NODE_OPTIONS), written as node "
                    "exits: what is live at its exit, by JavaScript stack; the malloc figures are node's and V8's "
                    "own native allocations",
                    "V8 objects sampled (HeapProfiler)");
    else if (is_node())
        put_runtime(f, &first, "node", 0,
                    "V8's heap is not malloc: the JavaScript objects are not seen (node did not load the mode's "
                    "preload, ph-heapprof.js in NODE_OPTIONS: the service's own NODE_OPTIONS replaced it?); these are node's and V8's own native "
                    "allocations",
                    "V8's heap not seen: node's native allocations only");
    fputs(first ? "]}\n" : "\n]}\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return -1;
    }
    rc = phs_write_atomic(path, buf, len);
    free(buf);
    return rc;
}

int
phs_heap_snapshot(phs_agg *a, const char *dir, const char *title, const char *tag, int n, int final, char *folded_name,
                  size_t name_len)
{
    phs_symbols *sym = phs_agg_symbols(a);
    phs_heap_row *rows = malloc(MAX_ROWS * sizeof *rows);
    text *texts = NULL;
    phs_stack *stacks = NULL;
    uintptr_t **named = NULL;
    phs_heap_totals tot;
    phs_pprof_meta meta;
    char stamp[32], path[4200], sub[600], b1[32], b2[32], b3[32], counts[300], full[600];
    struct timespec now;
    struct tm tm;
    size_t nr = 0, nt = 0;
    int rc = -1;

    if (rows == NULL)
        return -1;
    nr = phs_heap_rows(rows, MAX_ROWS, &tot);
    if (tot.samples == 0) {
        free(rows);
        return 1;
    }
    phs_symbols_jit_refresh(sym);
    texts = calloc(nr ? nr : 1, sizeof *texts);
    stacks = calloc(nr ? nr : 1, sizeof *stacks);
    named = calloc(nr ? nr : 1, sizeof *named);
    if (texts == NULL || stacks == NULL || named == NULL)
        goto out;
    /* The JVM's objects: their class and Java frames named; CPython's:
     * their Python frames */
    for (size_t i = 0; i < nr; i++) {
        if (rows[i].depth == 0 || (!phs_java_heap_word(rows[i].pcs[0]) && !has_py(rows[i].pcs, rows[i].depth)))
            continue;
        if ((named[i] = malloc(rows[i].depth * sizeof *named[i])) == NULL)
            goto out;
        rows[i].depth = resolve(sym, rows[i].pcs, rows[i].depth, named[i]);
        rows[i].pcs = named[i];
    }
    for (size_t i = 0; i < nr; i++) {
        size_t len = 0;
        FILE *f = open_memstream(&texts[nt].s, &len);

        if (f == NULL)
            goto out;
        phs_put_stack(f, sym, rows[i].pcs, rows[i].depth);
        if (fclose(f) != 0)
            goto out;
        texts[nt++].row = i;
        /* pprof: alloc_objects, alloc_space, inuse_objects, inuse_space */
        stacks[i] = (phs_stack){ rows[i].depth, 0, rows[i].samples, rows[i].pcs, NULL, rows[i].v };
    }
    qsort(texts, nt, sizeof *texts, cmp_text);

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(counts, sizeof counts,
             "%llu samples, one per %s on average; in use %s, at the peak %s, allocated %s; %llu dropped "
             "(live table full)",
             (unsigned long long)tot.samples, fmt_bytes(b1, sizeof b1, tot.mean),
             fmt_bytes(b2, sizeof b2, (double)tot.v[PHS_HEAP_INUSE_SPACE]),
             fmt_bytes(b3, sizeof b3, (double)tot.v[PHS_HEAP_PEAK_SPACE]),
             fmt_bytes(full, sizeof full, (double)tot.v[PHS_HEAP_ALLOC_SPACE]), (unsigned long long)tot.dropped);

    for (int v = 0; v < PHS_HEAP_VIEWS; v++) {
        char *folded = NULL;
        size_t flen = 0;
        int w;

        if (folded_view(texts, nt, rows, v, &folded, &flen) < 0) {
            free(folded);
            goto out;
        }
        snprintf(path, sizeof path, "%s/%s-%s%s-%d.folded", dir, view_name[v], stamp, tag, n);
        w = phs_write_atomic(path, folded, flen);
        if (w == 0 && v == PHS_HEAP_INUSE_SPACE)
            snprintf(folded_name, name_len, "%s", strrchr(path, '/') + 1);
        if (w == 0 && flen > 0) {
            snprintf(sub, sizeof sub, "%s (%s): %s", view_name[v], final ? "final" : "interval", counts);
            snprintf(full, sizeof full, "%s: %s", title && title[0] ? title : "heap", view_name[v]);
            snprintf(path, sizeof path, "%s/%s-%s%s-%d.svg", dir, view_name[v], stamp, tag, n);
            w = phs_write_svg(path, folded, flen, full, sub, strstr(view_name[v], "space") ? "bytes" : "objects",
                              "mem");
        }
        free(folded);
        if (w < 0)
            goto out;
    }

    memset(&meta, 0, sizeof meta);
    meta.time_nanos = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
    meta.period_ns = (int64_t)tot.mean;
    meta.comments[0] = counts;
    meta.comments[1] = final ? "final snapshot" : "interval snapshot";
    meta.comments[2] = "heap: sampled allocations, their estimates unbiased (size / (1 - exp(-size / mean)))";
    meta.n_types = 4;
    meta.types[0][0] = "alloc_objects";
    meta.types[0][1] = "count";
    meta.types[1][0] = "alloc_space";
    meta.types[1][1] = "bytes";
    meta.types[2][0] = "inuse_objects";
    meta.types[2][1] = "count";
    meta.types[3][0] = "inuse_space";
    meta.types[3][1] = "bytes";
    meta.period_type[0] = "space";
    meta.period_type[1] = "bytes";
    meta.default_type = "inuse_space";
    snprintf(path, sizeof path, "%s/heap-%s%s-%d.pb.gz", dir, stamp, tag, n);
    if (phs_write_pprof(path, stacks, nr, sym, &meta) < 0)
        goto out;
    snprintf(path, sizeof path, "%s/heap-%s%s-%d.json", dir, stamp, tag, n);
    if (write_runtimes(path) < 0)
        goto out;
    final_written |= final;
    rc = 0;
out:
    for (size_t i = 0; texts != NULL && i < nr; i++)
        free(texts[i].s);
    free(texts);
    free(stacks);
    for (size_t i = 0; named != NULL && i < nr; i++)
        free(named[i]);
    free(named);
    free(rows);
    return rc;
}

void
phs_heap_reason(char *buf, size_t len)
{
    char b[32];

    if (phs_heap_samples() > 0) {
        buf[0] = '\0';
        return;
    }
    snprintf(buf, len,
             "no allocation sampled: the service allocated less than about %s (the mean interval) through malloc "
             "since sampling started, or its malloc is its own (linked into the program) and not interposed",
             fmt_bytes(b, sizeof b, phs_heap_mean()));
}

void
phs_heap_json(char *buf, size_t len)
{
    phs_heap_totals t;

    buf[0] = '\0';
    if (!phs_heap_wanted())
        return;
    phs_heap_rows(NULL, 0, &t);
    snprintf(buf, len,
             "{\"mean_bytes\": %.0f, \"samples\": %llu, \"dropped\": %llu, \"stacks\": %llu, \"live_samples\": %llu, "
             "\"inuse_bytes\": %lld, \"peak_inuse_bytes\": %lld, \"alloc_bytes\": %lld, "
             "\"malloc_exact\": %s, \"malloc_inuse_bytes\": %lld, \"malloc_peak_bytes\": %lld, \"tables_kb\": %llu}",
             t.mean, (unsigned long long)t.samples, (unsigned long long)t.dropped, (unsigned long long)t.stacks,
             (unsigned long long)t.live, (long long)t.v[PHS_HEAP_INUSE_SPACE], (long long)t.v[PHS_HEAP_PEAK_SPACE],
             (long long)t.v[PHS_HEAP_ALLOC_SPACE], t.exact ? "true" : "false", (long long)t.exact_live,
             (long long)t.exact_peak, (unsigned long long)t.tables_kb);
}
