/* ph_sampler_snap.c - the writer thread's side of the sample tables: the
 * heap aggregate every drained table is merged into, and the snapshot files
 * written from it.
 *
 * Writer thread only; nothing here runs in signal context, everything may
 * allocate and block.  The signal path's tables (ph_sampler_int.h) are
 * double-buffered: phs_agg_drain flips phs.active, waits until no handler
 * is still inside the old table (a handler takes microseconds), merges it
 * and clears it for its next turn.
 *
 * A snapshot is three files, each written to a temporary name and renamed
 * (<tag> is empty for the service's first process, -<pid> for a process
 * it started that is followed; see ph_sampler_proc.c):
 *   stacks-<UTC><tag>-<n>.folded   `thread;outer;...;leaf COUNT`, sorted, merged
 *   profile-<UTC><tag>-<n>.pb.gz   pprof (ph_sampler_out.c)
 *   flamegraph-<UTC><tag>-<n>.svg  ph_flame_render_folded() of the folded text
 * A snapshot with no sample writes none of them.
 * Cumulative by default; in delta mode each holds only the samples since
 * the previous snapshot.  Requested, timer and delivered rates go into the
 * SVG subtitle and the pprof comments.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ph_flame.h"
#include "ph_sampler_int.h"

#define MAX_STACKS (1u << 20) /* distinct (thread, stack) pairs kept; more are dropped */

typedef struct entry {
    uint64_t hash;
    uint32_t tid, depth;
    uintptr_t *pcs;         /* NULL: empty */
    uint64_t count, reported;
} entry;

typedef struct thread_name {
    uint32_t tid;
    char name[20];
} thread_name;

struct phs_agg {
    int delta;
    entry *v;
    size_t n, cap;
    uint64_t pending;       /* samples merged since the last snapshot */
    uint64_t dropped;       /* over MAX_STACKS or out of memory */
    thread_name *threads;
    size_t n_threads, cap_threads;
    phs_symbols *sym;
    phs_pytab *py;          /* the Python frames' table sym names from */
    struct timespec wall0, wall_last;
    double cpu0, cpu_last;           /* process CPU at start / last snapshot */
    uint64_t samples_last, dropped_last;
};

double
phs_cpu_seconds(clockid_t c)
{
    struct timespec ts;

    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Process CPU the sampler could have sampled: not the writer's own (it
 * blocks SIGPROF). */
static double
sampled_cpu(void)
{
    return phs_cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - phs_cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
}

phs_agg *
phs_agg_new(int delta, int debuginfo)
{
    phs_agg *a = calloc(1, sizeof *a);

    if (a == NULL)
        return NULL;
    a->delta = delta;
    a->cap = 4096;
    a->v = calloc(a->cap, sizeof *a->v);
    a->py = phs_pytab_new();
    a->sym = a->py != NULL ? phs_symbols_new(debuginfo, a->py) : NULL;
    if (a->v == NULL || a->sym == NULL) {
        phs_agg_free(a);
        return NULL;
    }
    clock_gettime(CLOCK_REALTIME, &a->wall0);
    a->wall_last = a->wall0;
    a->cpu0 = a->cpu_last = phs_cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    return a;
}

void
phs_agg_free(phs_agg *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; a->v && i < a->cap; i++)
        free(a->v[i].pcs);
    free(a->v);
    free(a->threads);
    phs_symbols_free(a->sym);
    phs_pytab_free(a->py);
    free(a);
}

phs_symbols *
phs_agg_symbols(phs_agg *a)
{
    return a->sym;
}

uint64_t
phs_agg_pending(const phs_agg *a)
{
    return a->pending;
}

static int
grow(phs_agg *a)
{
    size_t cap = a->cap * 2;
    entry *nv = calloc(cap, sizeof *nv);

    if (nv == NULL)
        return -1;
    for (size_t i = 0; i < a->cap; i++) {
        size_t k;

        if (a->v[i].pcs == NULL)
            continue;
        for (k = a->v[i].hash & (cap - 1); nv[k].pcs; k = (k + 1) & (cap - 1))
            ;
        nv[k] = a->v[i];
    }
    free(a->v);
    a->v = nv;
    a->cap = cap;
    return 0;
}

static void
merge(phs_agg *a, uint64_t hash, uint32_t tid, const uintptr_t *pcs, uint32_t depth, uint64_t count)
{
    size_t k;

    if (a->n * 2 >= a->cap && a->n < MAX_STACKS && grow(a) < 0) {
        a->dropped += count;
        return;
    }
    for (k = hash & (a->cap - 1); a->v[k].pcs; k = (k + 1) & (a->cap - 1)) {
        entry *e = &a->v[k];
        if (e->hash == hash && e->tid == tid && e->depth == depth && memcmp(e->pcs, pcs, depth * sizeof *pcs) == 0) {
            e->count += count;
            a->pending += count;
            return;
        }
    }
    if (a->n >= MAX_STACKS || a->n * 2 >= a->cap) {
        a->dropped += count;
        return;
    }
    a->v[k].pcs = malloc(depth * sizeof *pcs);
    if (a->v[k].pcs == NULL) {
        a->dropped += count;
        return;
    }
    memcpy(a->v[k].pcs, pcs, depth * sizeof *pcs);
    a->v[k].hash = hash;
    a->v[k].tid = tid;
    a->v[k].depth = depth;
    a->v[k].count = count;
    a->v[k].reported = 0;
    a->n++;
    a->pending += count;
}

/* Thread names come from /proc while the thread lives; a thread that ended
 * before its first drain keeps "thread-TID". */
static void
note_thread(phs_agg *a, uint32_t tid, int refresh)
{
    char path[64], name[20] = "";
    thread_name *t = NULL;
    int fd;
    ssize_t n;

    for (size_t i = 0; i < a->n_threads; i++)
        if (a->threads[i].tid == tid) {
            if (!refresh)
                return;
            t = &a->threads[i];
            break;
        }
    if (t == NULL) {
        if (a->n_threads == a->cap_threads) {
            size_t cap = a->cap_threads ? a->cap_threads * 2 : 16;
            thread_name *nt = realloc(a->threads, cap * sizeof *nt);
            if (nt == NULL)
                return;
            a->threads = nt;
            a->cap_threads = cap;
        }
        t = &a->threads[a->n_threads++];
        t->tid = tid;
        snprintf(t->name, sizeof t->name, "thread-%u", tid);
    }
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    n = read(fd, name, sizeof name - 1);
    close(fd);
    if (n <= 0)
        return;
    name[n] = '\0';
    name[strcspn(name, "\n")] = '\0';
    for (char *p = name; *p; p++)
        if (*p == ';')
            *p = ':'; /* the folded separator */
    if (name[0])
        snprintf(t->name, sizeof t->name, "%s", name);
}

static const char *
thread_of(const phs_agg *a, uint32_t tid)
{
    for (size_t i = 0; i < a->n_threads; i++)
        if (a->threads[i].tid == tid)
            return a->threads[i].name;
    return "thread";
}

void
phs_agg_prepare(phs_agg *a)
{
    phs_py_detect(a->sym);
    phs_go_detect(a->sym);
}

/* Merge a stack of the signal path's, its Python and Java frames named
 * first (now, while their code objects live). */
static void
merge_slot(phs_agg *a, const phs_slot *s, const uintptr_t *pcs, uint64_t count)
{
    uintptr_t words[PHS_MAX_WORDS];
    uint32_t depth = s->depth;
    uint64_t h = 1469598103934665603ULL ^ s->tid;
    int py = 0, java = 0;

    for (uint32_t i = 0; i < depth; i++) {
        py |= phs_is_py(pcs[i]);
        java |= phs_is_java_mark(pcs[i]);
    }
    if ((!py && !java) || depth > PHS_MAX_WORDS) {
        merge(a, s->hash, s->tid, pcs, depth, count);
        return;
    }
    memcpy(words, pcs, depth * sizeof *pcs);
    if (py)
        depth = phs_py_resolve(phs_symbols_py(a->sym), words, depth);
    if (java) /* (named through JVMTI now: the ids may go stale) */
        depth = phs_java_resolve(a->sym, words, depth);
    for (uint32_t i = 0; i < depth; i++) {
        h ^= words[i];
        h *= 1099511628211ULL;
    }
    merge(a, h, s->tid, words, depth, count);
}

/* T's slots empty and its arena free again.  A memset kept every page
 * of the slots (128 kB a table) resident after each drain, and the
 * arena's pages stayed once touched: their whole pages go instead (a
 * private anonymous page comes back zeroed when next touched), the
 * slots' partial pages at either end are zeroed in place; the page with
 * T's counters is never dropped (an increment there would be lost). */
static void
clear_table(phs_table *t)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t s = (uintptr_t)t->slots, e = (uintptr_t)(t->slots + PHS_SLOTS);
    uintptr_t lo = (s + page - 1) & ~(page - 1), hi = e & ~(page - 1);
    uintptr_t alo = ((uintptr_t)t->arena + page - 1) & ~(page - 1);
    uintptr_t ahi = (uintptr_t)(t->arena + atomic_load(&t->used)) & ~(page - 1);

    if (lo < hi && madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0) {
        memset((void *)s, 0, lo - s);
        memset((void *)hi, 0, e - hi);
    } else {
        memset(t->slots, 0, sizeof t->slots);
    }
    if (alo < ahi)
        (void)madvise((void *)alo, ahi - alo, MADV_DONTNEED);
    atomic_store(&t->used, 0);
}

void
phs_agg_drain(phs_agg *a)
{
    int old = atomic_load(&phs.active);
    phs_table *t = phs.tables[old];
    struct timespec ms = { 0, 1000 * 1000 };
    uint32_t tids[64];
    size_t n_tids = 0;

    if (t == NULL)
        return;
    phs_py_detect(a->sym); /* a libpython dlopen'd since */
    phs_java_detect(a->sym);
    atomic_store(&phs.active, 1 - old);
    /* Handlers already inside finish in microseconds; one stuck for a
     * second means something else is wrong: leave the table for later. */
    for (int i = 0; atomic_load(&t->inflight) != 0; i++) {
        if (i == 1000) {
            atomic_store(&phs.active, old);
            return;
        }
        phs_nap(&ms);
    }
    for (size_t i = 0; i < PHS_SLOTS; i++) {
        phs_slot *s = &t->slots[i];
        uint64_t c;

        if (atomic_load_explicit(&s->state, memory_order_acquire) != 2)
            continue;
        c = atomic_load_explicit(&s->count, memory_order_relaxed);
        if (s->depth > 0 && c > 0) {
            int seen = 0;

            merge_slot(a, s, &t->arena[s->off], c);
            for (size_t k = 0; k < n_tids; k++)
                seen |= tids[k] == s->tid;
            if (!seen && n_tids < sizeof tids / sizeof *tids)
                tids[n_tids++] = s->tid;
            else if (!seen)
                note_thread(a, s->tid, 0);
        }
    }
    /* Names are read again each drain: services name threads after they
     * start them. */
    for (size_t k = 0; k < n_tids; k++)
        note_thread(a, tids[k], 1);
    clear_table(t);
}

/* ---- snapshot files ------------------------------------------------------ */

typedef struct line {
    char *text;             /* "thread;outer;...;leaf" */
    uint64_t count;
} line;

static int
cmp_line(const void *x, const void *y)
{
    return strcmp(((const line *)x)->text, ((const line *)y)->text);
}

int
phs_write_atomic(const char *path, const char *data, size_t len)
{
    char tmp[4200];
    int fd;
    size_t off = 0;

    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    /* O_NOFOLLOW: the directory is the service's; a link planted at our
     * temporary name must not redirect the write. */
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -1;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    if (close(fd) < 0 || off != len || rename(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Append a frame name: ';' separates frames and the last space the count,
 * so a ';' inside a name (rare; some C++ templates) becomes ':'. */
static void
put_frame(FILE *f, const char *name)
{
    for (const char *p = name; *p; p++)
        fputc(*p == ';' ? ':' : (*p == '\n' ? ' ' : *p), f);
}

void
phs_put_stack(FILE *f, phs_symbols *sym, const uintptr_t *pcs, uint32_t depth)
{
    for (uint32_t k = depth; k-- > 0;) {
        const phs_frame *fr;
        int nf = phs_frames(sym, phs_call_pc(pcs, k), &fr, NULL);

        for (int j = 0; j < nf; j++) {
            if (k + 1 < depth || j > 0)
                fputc(';', f);
            put_frame(f, fr[j].name);
            if (fr[j].kind == PHS_KIND_PYTHON) {
                /* `qualname (file.py:line)_[p]`, as py-spy names them;
                 * the renderer colours the kind. */
                const char *base = fr[j].file ? strrchr(fr[j].file, '/') : NULL;
                fputs(" (", f);
                put_frame(f, base ? base + 1 : fr[j].file ? fr[j].file : "?");
                fprintf(f, ":%d)_[p]", fr[j].line);
            }
            if (fr[j].kind == PHS_KIND_JAVA)
                fputs("_[j]", f); /* Java, as the JIT's frames named from the perf map */
            if (fr[j].inlined)
                fputs(" (inlined)", f);
        }
    }
}

int
phs_write_svg(const char *path, const char *folded, size_t flen, const char *title, const char *subtitle,
              const char *countname, const char *palette)
{
    ph_flame_opts o;
    ph_error_t err = NULL;
    char *svg = NULL;
    size_t slen = 0;
    FILE *f = open_memstream(&svg, &slen);
    int r;

    if (f == NULL)
        return -1;
    ph_flame_opts_init(&o);
    o.title = title;
    o.subtitle = subtitle;
    if (countname)
        o.countname = countname;
    if (palette)
        o.palette = palette;
    /* ===== the flamegraph renderer (harness/flame/ph_flame.c) ===== */
    r = ph_flame_render_folded(folded, flen, &o, f, NULL, &err);
    ph_error_free(&err);
    if (fclose(f) != 0)
        r = -1;
    if (r >= 0)
        r = phs_write_atomic(path, svg, slen);
    free(svg);
    return r < 0 ? -1 : 0;
}

/* The wall clock's views beside the whole (stacks-*: every sample):
 * offcpu-* (the stacks that end in [off-cpu]: blocked in a call) and
 * oncpu-* (the others), from the folded text FOLDED (LEN).  0 or -1. */
static int
write_wall_views(const char *dir, const char *stamp, const char *tag, int n, const char *folded, size_t len)
{
    static const char *const kinds[] = { "offcpu", "oncpu" };

    for (int k = 0; k < 2; k++) {
        char path[4200], *text = NULL;
        size_t tlen = 0;
        FILE *f = open_memstream(&text, &tlen);
        int r;

        if (f == NULL)
            return -1;
        for (const char *p = folded; p < folded + len;) {
            const char *nl = memchr(p, '\n', (size_t)(folded + len - p));
            size_t l = nl ? (size_t)(nl - p) + 1 : (size_t)(folded + len - p);
            const char *sp = memrchr(p, ' ', l);
            int off = sp != NULL && sp - p >= 10 && memcmp(sp - 10, ";[off-cpu]", 10) == 0;

            if (off == (k == 0))
                fwrite(p, 1, l, f);
            p += l;
        }
        if (fclose(f) != 0) {
            free(text);
            return -1;
        }
        snprintf(path, sizeof path, "%s/%s-%s%s-%d.folded", dir, kinds[k], stamp, tag, n);
        r = phs_write_atomic(path, text ? text : "", tlen);
        free(text);
        if (r < 0)
            return -1;
    }
    return 0;
}

int
phs_agg_snapshot(phs_agg *a, const char *dir, const char *title, const char *tag, int n, int final, char *folded_name,
                 size_t name_len)
{
    phs_stack *stacks = NULL;
    line *lines = NULL;
    entry **used = NULL;
    char *folded = NULL, stamp[32], path[4200], sub[1024], rates[400], counts[320], unwinder[160] = "unwinding: ";
    size_t flen = 0, ns = 0, nl = 0;
    FILE *f = NULL;
    struct timespec now, since;
    struct tm tm;
    double cpu = sampled_cpu(), window, delivered;
    uint64_t got = atomic_load(&phs.samples), lost = atomic_load(&phs.dropped), own = atomic_load(&phs.own), total = 0;
    phs_pprof_meta meta;
    int rc = -1;

    phs_symbols_jit_refresh(a->sym); /* JIT code named as the runtime has it now */
    stacks = malloc((a->n ? a->n : 1) * sizeof *stacks);
    lines = malloc((a->n ? a->n : 1) * sizeof *lines);
    used = malloc((a->n ? a->n : 1) * sizeof *used);
    if (stacks == NULL || lines == NULL || used == NULL)
        goto out;
    for (size_t i = 0; i < a->cap; i++) {
        entry *e = &a->v[i];
        uint64_t c;

        if (e->pcs == NULL)
            continue;
        c = a->delta ? e->count - e->reported : e->count;
        if (c == 0)
            continue;
        used[ns] = e;
        stacks[ns] = (phs_stack){ e->depth, e->tid, c, e->pcs, thread_of(a, e->tid), NULL };
        total += c;
        ns++;
    }
    if (total == 0) {
        /* Nothing sampled: no files (the status says why). */
        rc = 1;
        goto out;
    }

    /* Folded text, one line per (thread, stack), merged by text: the same
     * names on different tids or different pcs of one function are one
     * line. */
    for (size_t i = 0; i < ns; i++) {
        char *text = NULL;
        size_t tlen = 0;

        f = open_memstream(&text, &tlen);
        if (f == NULL)
            goto out;
        put_frame(f, stacks[i].thread);
        fputc(';', f);
        phs_put_stack(f, a->sym, stacks[i].pcs, stacks[i].depth);
        if (fclose(f) != 0) {
            f = NULL;
            free(text);
            goto out;
        }
        f = NULL;
        lines[nl++] = (line){ text, stacks[i].count };
    }
    qsort(lines, nl, sizeof *lines, cmp_line);
    f = open_memstream(&folded, &flen);
    if (f == NULL)
        goto out;
    for (size_t i = 0; i < nl;) {
        size_t j = i + 1;
        uint64_t c = lines[i].count;

        while (j < nl && strcmp(lines[j].text, lines[i].text) == 0)
            c += lines[j++].count;
        fprintf(f, "%s %llu\n", lines[i].text, (unsigned long long)c);
        i = j;
    }
    if (fclose(f) != 0) {
        f = NULL;
        goto out;
    }
    f = NULL;

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    since = a->delta ? a->wall_last : a->wall0;
    window = a->delta ? cpu - a->cpu_last : cpu - a->cpu0;
    /* Per CPU-second the service could be sampled in: the writer's own
     * samples, whose CPU the window leaves out, are left out too. */
    delivered = window > 0 ? (double)(a->delta ? (got + lost) - (a->samples_last + a->dropped_last) : got + lost) / window
                           : 0;
    snprintf(rates, sizeof rates, "requested %d Hz, timer %d Hz (%s), delivered %.0f Hz per CPU-second", phs.hz,
             phs.hz_nominal, phs.source, delivered);
    snprintf(counts, sizeof counts,
             "%llu samples over %.2f CPU-s; %llu dropped, %llu truncated, %llu threads without perf events, "
             "%llu in the sampler's own work (left out)",
             (unsigned long long)total, window, (unsigned long long)(lost + a->dropped),
             (unsigned long long)atomic_load(&phs.truncated), (unsigned long long)atomic_load(&phs.perf_failed),
             (unsigned long long)own);

    snprintf(path, sizeof path, "%s/stacks-%s%s-%d.folded", dir, stamp, tag, n);
    if (phs_write_atomic(path, folded, flen) < 0)
        goto out;
    snprintf(folded_name, name_len, "%s", strrchr(path, '/') + 1);
    if (phs.wall && write_wall_views(dir, stamp, tag, n, folded, flen) < 0)
        goto out;

    memset(&meta, 0, sizeof meta);
    meta.time_nanos = (int64_t)since.tv_sec * 1000000000LL + since.tv_nsec;
    meta.duration_nanos = ((int64_t)now.tv_sec - since.tv_sec) * 1000000000LL + (now.tv_nsec - since.tv_nsec);
    meta.period_ns = 1000000000LL / (phs.hz_nominal > 0 ? phs.hz_nominal : 1);
    meta.type = phs.wall ? "wall" : NULL; /* a sample stands for a period of wall time, or of CPU time */
    meta.comments[0] = rates;
    meta.comments[1] = counts;
    meta.comments[2] = final ? "final snapshot" : "interval snapshot";
    meta.comments[3] = a->delta ? "delta: samples since the previous snapshot" : "cumulative since start";
    phs_cfi_describe(unwinder + 11, sizeof unwinder - 11);
    meta.comments[4] = unwinder;
    meta.comments[5] = phs_py_describe()[0] ? phs_py_describe() : NULL;
    meta.comments[6] = phs_java_describe()[0] ? phs_java_describe() : NULL;
    snprintf(path, sizeof path, "%s/profile-%s%s-%d.pb.gz", dir, stamp, tag, n);
    if (phs_write_pprof(path, stacks, ns, a->sym, &meta) < 0)
        goto out;

    snprintf(sub, sizeof sub, "%s%s: %s; %s%s%s%s%s", final ? "final" : "interval", a->delta ? " (delta)" : "", counts,
             rates, phs_py_describe()[0] ? "; " : "", phs_py_describe(), phs_java_describe()[0] ? "; " : "",
             phs_java_describe());
    snprintf(path, sizeof path, "%s/flamegraph-%s%s-%d.svg", dir, stamp, tag, n);
    if (phs_write_svg(path, folded, flen, title && title[0] ? title : phs.wall ? "wall clock" : "CPU", sub, NULL, NULL) < 0)
        goto out;

    for (size_t i = 0; i < ns; i++)
        used[i]->reported = used[i]->count;
    a->pending = 0;
    a->wall_last = now;
    a->cpu_last = cpu;
    a->samples_last = got;
    a->dropped_last = lost;
    rc = 0;
out:
    if (f)
        fclose(f);
    for (size_t i = 0; i < nl; i++)
        free(lines[i].text);
    free(lines);
    free(stacks);
    free(used);
    free(folded);
    return rc;
}
