/* ph_timing.c - the stage tree, its flattening and its tables (see
 * ph_timing.h).
 *
 * One recording per process at a time (a command): a root stage and a
 * mutex in static storage.  Each thread keeps its current stage in a
 * thread-local pointer, so nesting needs no context passed around; a
 * helper thread adopts its parent explicitly.  Children are appended under
 * the mutex; a stage's own fields are written only by the thread that owns
 * it until it ends, and the tree is read only after ph_timing_finish.
 */
#include "ph_timing.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ph_stage *root;
static volatile int recording; /* read unlocked on every begin: the off path */
static int64_t epoch_offset;
static int threads;            /* thread numbers handed out */
static unsigned generation;    /* one per recording: a thread's pointers from an older one are stale */
static __thread ph_stage *current;
static __thread int thread_no;
static __thread unsigned thread_gen;

static uint64_t
now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Span ids need to be unique, not secret: a per-thread xorshift seeded
 * once from getrandom (a syscall per stage would be most of its cost). */
static __thread uint64_t rng;

static void
random_id(unsigned char *id, size_t n)
{
    if (rng == 0) {
        if (getrandom(&rng, sizeof rng, GRND_NONBLOCK) != (ssize_t)sizeof rng)
            rng = now_ns() ^ (uint64_t)(uintptr_t)&rng;
        rng |= 1;
    }
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v;

        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        v = rng * 0x2545f4914f6cdd1dULL;
        memcpy(id + i, &v, n - i < 8 ? n - i : 8);
    }
}

static void
stage_free(ph_stage *s)
{
    while (s) {
        ph_stage *next = s->next;

        stage_free(s->first_child);
        free(s->name);
        free(s->error);
        for (int i = 0; i < PH_STAGE_ATTRS; i++) {
            free(s->attr_key[i]);
            free(s->attr_val[i]);
        }
        free(s);
        s = next;
    }
}

/* This thread's number in the current recording (called with LOCK held
 * or from the recording thread). */
static int
my_thread_locked(void)
{
    if (thread_gen != generation) {
        thread_gen = generation;
        thread_no = ++threads;
        current = NULL;
    }
    return thread_no;
}

static ph_stage *
stage_new(const char *category, const char *name, unsigned flags)
{
    ph_stage *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    s->name = strdup(name ? name : "?");
    if (s->name == NULL) {
        free(s);
        return NULL;
    }
    snprintf(s->category, sizeof s->category, "%s", category ? category : "host");
    s->flags = flags;
    random_id(s->span_id, sizeof s->span_id);
    s->start_ns = now_ns();
    return s;
}

int
ph_timing_start(const char *command)
{
    struct timespec rt, mt;

    if (recording)
        return -1;
    ph_timing_reset();
    pthread_mutex_lock(&lock);
    threads = 0;
    generation++;
    pthread_mutex_unlock(&lock);
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mt);
    epoch_offset = ((int64_t)rt.tv_sec - (int64_t)mt.tv_sec) * 1000000000 + ((int64_t)rt.tv_nsec - (int64_t)mt.tv_nsec);
    root = stage_new("harness", command, 0);
    if (root == NULL)
        return -1;
    root->thread = my_thread_locked();
    current = root;
    recording = 1;
    return 0;
}

static void
close_open(ph_stage *s, uint64_t t)
{
    for (; s; s = s->next) {
        if (s->end_ns == 0)
            s->end_ns = t;
        close_open(s->first_child, t);
    }
}

void
ph_timing_finish(int failed, const char *msg)
{
    if (!recording || root == NULL)
        return;
    pthread_mutex_lock(&lock);
    recording = 0;
    if (failed) {
        root->failed = 1;
        if (msg && root->error == NULL)
            root->error = strdup(msg);
    }
    close_open(root, now_ns());
    pthread_mutex_unlock(&lock);
    current = NULL;
}

void
ph_timing_reset(void)
{
    pthread_mutex_lock(&lock);
    recording = 0;
    stage_free(root);
    root = NULL;
    pthread_mutex_unlock(&lock);
    current = NULL;
}

int
ph_timing_recording(void)
{
    return recording;
}

const ph_stage *
ph_timing_root(void)
{
    return root;
}

int64_t
ph_timing_epoch_offset_ns(void)
{
    return epoch_offset;
}

ph_stage *
ph_stage_begin(const char *category, const char *name, unsigned flags)
{
    ph_stage *s, *parent;

    if (!recording)
        return NULL;
    s = stage_new(category, name, flags);
    if (s == NULL)
        return NULL; /* timing is never worth failing the work for */
    pthread_mutex_lock(&lock);
    if (!recording) {
        pthread_mutex_unlock(&lock);
        stage_free(s);
        return NULL;
    }
    s->thread = my_thread_locked();
    parent = current ? current : root;
    if (parent->thread != s->thread)
        s->flags |= PH_STAGE_CONCURRENT;
    s->parent = parent;
    if (parent->last_child)
        parent->last_child->next = s;
    else
        parent->first_child = s;
    parent->last_child = s;
    pthread_mutex_unlock(&lock);
    if (!(flags & PH_STAGE_DETACHED))
        current = s;
    return s;
}

ph_stage *
ph_stage_beginf(const char *category, unsigned flags, const char *fmt, ...)
{
    char name[512];
    va_list ap;

    if (!recording)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return ph_stage_begin(category, name, flags);
}

void
ph_stage_bytes(ph_stage *s, uint64_t in, uint64_t out)
{
    if (s == NULL)
        return;
    s->bytes_in += in;
    s->bytes_out += out;
}

void
ph_stage_attr(ph_stage *s, const char *key, const char *value)
{
    if (s == NULL || key == NULL || value == NULL)
        return;
    for (int i = 0; i < PH_STAGE_ATTRS; i++) {
        if (s->attr_key[i] && strcmp(s->attr_key[i], key) != 0)
            continue;
        if (s->attr_key[i] == NULL && (s->attr_key[i] = strdup(key)) == NULL)
            return;
        free(s->attr_val[i]);
        s->attr_val[i] = strdup(value);
        return;
    }
}

void
ph_stage_fail(ph_stage *s, const char *msg)
{
    if (s == NULL)
        return;
    s->failed = 1;
    if (msg && s->error == NULL)
        s->error = strdup(msg);
}

void
ph_stage_end(ph_stage *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&lock);
    if (s->end_ns == 0) /* not closed by ph_timing_finish already */
        s->end_ns = now_ns();
    pthread_mutex_unlock(&lock);
    /* Back to the parent, also when a child of S was left open. */
    for (ph_stage *p = current; p; p = p->parent) {
        if (p == s) {
            current = s->parent;
            break;
        }
    }
}

ph_stage *
ph_stage_current(void)
{
    ph_stage *s;

    if (!recording)
        return NULL;
    pthread_mutex_lock(&lock);
    my_thread_locked();
    s = current ? current : root;
    pthread_mutex_unlock(&lock);
    return s;
}

void
ph_stage_adopt(ph_stage *parent)
{
    if (parent == NULL || !recording)
        return;
    pthread_mutex_lock(&lock);
    my_thread_locked();
    pthread_mutex_unlock(&lock);
    current = parent;
}

/* ---- flattening ---------------------------------------------------------- */

/* The instant this thread's reading of the tree is as of (0: none). */
static __thread uint64_t read_at;
static __thread int read_depth;

void
ph_timing_read_begin(void)
{
    if (read_depth++ == 0)
        read_at = now_ns();
}

void
ph_timing_read_end(void)
{
    if (read_depth > 0 && --read_depth == 0)
        read_at = 0;
}

uint64_t
ph_stage_end_ns(const ph_stage *s)
{
    uint64_t t = s->end_ns;

    /* Within a reading, a stage that ended after its instant is open. */
    if (read_at != 0 && (t == 0 || t > read_at))
        t = read_at;
    else if (t == 0)
        t = now_ns();
    return t < s->start_ns ? s->start_ns : t;
}

static uint64_t
dur(const ph_stage *s)
{
    uint64_t e = ph_stage_end_ns(s);

    return e > s->start_ns ? e - s->start_ns : 0;
}

static size_t
count(const ph_stage *s)
{
    size_t n = 0;

    for (; s; s = s->next)
        n += 1 + count(s->first_child);
    return n;
}

static int
by_start(const void *a, const void *b)
{
    const ph_stage *x = *(const ph_stage *const *)a, *y = *(const ph_stage *const *)b;

    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int
flatten(const ph_stage *s, int depth, int counted, ph_timing_row *rows, size_t *n)
{
    const ph_stage *c, **kids = NULL;
    uint64_t serial = 0;
    size_t nk = 0, i = *n;

    for (c = s->first_child; c; c = c->next)
        nk++;
    if (nk > 0 && (kids = malloc(nk * sizeof *kids)) == NULL)
        return -1;
    nk = 0;
    for (c = s->first_child; c; c = c->next) {
        kids[nk++] = c;
        if (!(c->flags & PH_STAGE_CONCURRENT))
            serial += dur(c);
    }
    /* Siblings from several threads were appended as they began; the
     * table follows the flow of the work, which is start order. */
    if (nk > 1)
        qsort(kids, nk, sizeof *kids, by_start);
    rows[i] = (ph_timing_row){ .stage = s, .depth = depth, .total_ns = dur(s),
                               .self_ns = dur(s) > serial ? dur(s) - serial : 0, .counted = counted };
    (*n)++;
    for (size_t k = 0; k < nk; k++) {
        if (flatten(kids[k], depth + 1, counted && !(kids[k]->flags & PH_STAGE_CONCURRENT), rows, n) < 0) {
            free(kids);
            return -1;
        }
    }
    free(kids);
    return 0;
}

ph_timing_row *
ph_timing_flatten(const ph_stage *tree, size_t *n)
{
    size_t total = tree ? 1 + count(tree->first_child) : 0;
    ph_timing_row *rows;

    *n = 0;
    if (total == 0)
        return NULL;
    rows = calloc(total, sizeof *rows);
    if (rows == NULL)
        return NULL;
    ph_timing_read_begin();
    if (flatten(tree, 0, !(tree->flags & PH_STAGE_CONCURRENT), rows, n) < 0) {
        free(rows);
        *n = 0;
        rows = NULL;
    }
    ph_timing_read_end();
    return rows;
}

static int
by_time_desc(const void *a, const void *b)
{
    const ph_timing_sum *x = a, *y = b;

    if (x->self_ns != y->self_ns)
        return x->self_ns > y->self_ns ? -1 : 1;
    return strcmp(x->category, y->category);
}

ph_timing_sum *
ph_timing_summarise(const ph_timing_row *rows, size_t n_rows, size_t *n)
{
    ph_timing_sum *sums = calloc(n_rows ? n_rows : 1, sizeof *sums);

    *n = 0;
    if (sums == NULL)
        return NULL;
    for (size_t i = 0; i < n_rows; i++) {
        const ph_stage *s = rows[i].stage;
        size_t k;

        if (!rows[i].counted)
            continue;
        for (k = 0; k < *n && strcmp(sums[k].category, s->category) != 0; k++)
            ;
        if (k == *n) {
            snprintf(sums[k].category, sizeof sums[k].category, "%s", s->category);
            (*n)++;
        }
        sums[k].self_ns += rows[i].self_ns;
        sums[k].bytes += s->bytes_in + s->bytes_out;
        sums[k].stages++;
    }
    qsort(sums, *n, sizeof *sums, by_time_desc);
    return sums;
}

/* ---- tables ---------------------------------------------------------------- */

const char *
ph_timing_fmt_ns(uint64_t ns, char *buf, size_t size)
{
    if (ns >= 10000000000u)
        snprintf(buf, size, "%.1f s", ns / 1e9);
    else if (ns >= 1000000000u)
        snprintf(buf, size, "%.2f s", ns / 1e9);
    else if (ns >= 10000000u)
        snprintf(buf, size, "%.0f ms", ns / 1e6);
    else if (ns >= 1000000u)
        snprintf(buf, size, "%.1f ms", ns / 1e6);
    else
        snprintf(buf, size, "%.0f us", ns / 1e3);
    return buf;
}

const char *
ph_timing_fmt_bytes(uint64_t b, char *buf, size_t size)
{
    static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB" };
    double v = (double)b;
    int u = -1;

    if (b == 0) {
        snprintf(buf, size, "-");
        return buf;
    }
    if (b < 1024) {
        snprintf(buf, size, "%llu B", (unsigned long long)b);
        return buf;
    }
    while (v >= 1024 && u < 3) {
        v /= 1024;
        u++;
    }
    snprintf(buf, size, v >= 100 ? "%.0f %s" : "%.1f %s", v, unit[u]);
    return buf;
}

/* A name on one line: control characters become spaces. */
static void
put_name(FILE *out, const char *name)
{
    for (const char *p = name; *p; p++)
        fputc((unsigned char)*p < ' ' || *p == 0x7f ? ' ' : *p, out);
}

static int
by_self_desc(const void *a, const void *b)
{
    const ph_timing_row *x = a, *y = b;

    if (x->self_ns != y->self_ns)
        return x->self_ns > y->self_ns ? -1 : 1;
    return x->stage->start_ns < y->stage->start_ns ? -1 : x->stage->start_ns > y->stage->start_ns;
}

int
ph_timing_print(FILE *out, const ph_stage *tree, unsigned flags, ph_error_t *err)
{
    size_t n = 0, ns = 0;
    ph_timing_row *rows = ph_timing_flatten(tree, &n);
    ph_timing_sum *sums = NULL;
    uint64_t wall, counted_bytes = 0;
    char t[32], b[32], p[16];

    if (tree == NULL)
        return 0;
    if (rows == NULL || (sums = ph_timing_summarise(rows, n, &ns)) == NULL) {
        free(rows);
        return ph_fail(err, ENOMEM, "tabulate the timings");
    }
    wall = rows[0].total_ns;
    if (flags & PH_TIMING_SORTED)
        qsort(rows, n, sizeof *rows, by_self_desc);
    /* Borderless, like the daemon's: self time, category, I/O, the stage
     * indented by depth in flow order (flat when sorted); a stage that ran
     * alongside its siblings is marked "||", and its time is not summed. */
    fprintf(out, "%10s  %-9s %10s  %s\n", "SELF", "CATEGORY", "I/O", "STAGE");
    for (size_t i = 0; i < n; i++) {
        const ph_stage *s = rows[i].stage;
        int indent = (flags & PH_TIMING_SORTED) ? 0 : 2 * rows[i].depth;

        fprintf(out, "%10s  %-9s %10s  %*s%s", ph_timing_fmt_ns(rows[i].self_ns, t, sizeof t), s->category,
                ph_timing_fmt_bytes(s->bytes_in + s->bytes_out, b, sizeof b), indent, "",
                (s->flags & PH_STAGE_CONCURRENT) ? "|| " : "");
        put_name(out, s->name);
        fprintf(out, "%s\n", s->failed ? "  (failed)" : "");
    }
    fprintf(out, "\n%10s  %6s %10s  %s\n", "SELF", "%", "I/O", "CATEGORY");
    for (size_t i = 0; i < ns; i++) {
        snprintf(p, sizeof p, "%.1f", wall ? 100.0 * (double)sums[i].self_ns / (double)wall : 0.0);
        fprintf(out, "%10s  %6s %10s  %s\n", ph_timing_fmt_ns(sums[i].self_ns, t, sizeof t), p,
                ph_timing_fmt_bytes(sums[i].bytes, b, sizeof b), sums[i].category);
        counted_bytes += sums[i].bytes;
    }
    fprintf(out, "%10s  %6s %10s  %s\n", ph_timing_fmt_ns(wall, t, sizeof t), "100.0",
            ph_timing_fmt_bytes(counted_bytes, b, sizeof b), "total (wall)");
    free(rows);
    free(sums);
    return ferror(out) ? ph_fail(err, EIO, "write the timing tables") : 0;
}

int
ph_timing_print_line(FILE *out, const ph_stage *tree, ph_error_t *err)
{
    size_t n = 0, ns = 0;
    ph_timing_row *rows;
    ph_timing_sum *sums = NULL;
    char t[32];

    if (tree == NULL)
        return 0;
    rows = ph_timing_flatten(tree, &n);
    if (rows == NULL || (sums = ph_timing_summarise(rows, n, &ns)) == NULL) {
        free(rows);
        return ph_fail(err, ENOMEM, "tabulate the timings");
    }
    fprintf(out, "%s: %s (", tree->name, ph_timing_fmt_ns(rows[0].total_ns, t, sizeof t));
    for (size_t i = 0; i < ns; i++)
        fprintf(out, "%s%s %s", i ? ", " : "", sums[i].category, ph_timing_fmt_ns(sums[i].self_ns, t, sizeof t));
    fprintf(out, ")\n");
    free(rows);
    free(sums);
    return ferror(out) ? ph_fail(err, EIO, "write the timings") : 0;
}
