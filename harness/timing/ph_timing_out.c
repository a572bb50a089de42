/* ph_timing_out.c - the stage tree as folded stacks, a Chrome trace and
 * JSON (see ph_timing_out.h). */
#include "ph_timing_out.h"

#include "ph_fs.h"
#include "ph_otlp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A lane: the thread a stretch of time ran on.  A stage concurrent with
 * its parent on the parent's own thread (a detached wait) gets a lane of
 * its own, since one lane cannot hold two things at once. */
typedef struct lane {
    int thread;
    const ph_stage *owner; /* the concurrent stage that opened it, NULL for a thread's lane */
    uint64_t first;        /* when it began, to order the lanes */
} lane;

typedef struct seg {
    int lane;
    uint64_t start, ns;
    const ph_stage *stage; /* the innermost stage of the stretch */
} seg;

typedef struct folder {
    lane *lanes;
    size_t n_lanes, cap_lanes;
    seg *segs;
    size_t n_segs, cap_segs;
    int oom;
} folder;

static int
lane_of(folder *f, int thread, const ph_stage *owner, uint64_t first)
{
    for (size_t i = 0; i < f->n_lanes; i++)
        if (f->lanes[i].thread == thread && f->lanes[i].owner == owner)
            return (int)i;
    if (f->n_lanes == f->cap_lanes) {
        size_t cap = f->cap_lanes ? 2 * f->cap_lanes : 8;
        lane *l = realloc(f->lanes, cap * sizeof *l);

        if (l == NULL) {
            f->oom = 1;
            return 0;
        }
        f->lanes = l;
        f->cap_lanes = cap;
    }
    f->lanes[f->n_lanes] = (lane){ .thread = thread, .owner = owner, .first = first };
    return (int)f->n_lanes++;
}

static void
add_seg(folder *f, int ln, uint64_t start, uint64_t ns, const ph_stage *s)
{
    if (ns == 0)
        return;
    if (f->n_segs == f->cap_segs) {
        size_t cap = f->cap_segs ? 2 * f->cap_segs : 64;
        seg *g = realloc(f->segs, cap * sizeof *g);

        if (g == NULL) {
            f->oom = 1;
            return;
        }
        f->segs = g;
        f->cap_segs = cap;
    }
    f->segs[f->n_segs++] = (seg){ .lane = ln, .start = start, .ns = ns, .stage = s };
}

static int
by_start(const void *a, const void *b)
{
    const ph_stage *x = *(const ph_stage *const *)a, *y = *(const ph_stage *const *)b;

    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* S's own time on lane LN, cut where its serial children run; concurrent
 * children go to their own lanes. */
static void
fold(folder *f, const ph_stage *s, int ln)
{
    const ph_stage *c, **kids = NULL;
    size_t nk = 0;
    uint64_t cursor = s->start_ns;

    for (c = s->first_child; c; c = c->next)
        nk++;
    if (nk && (kids = malloc(nk * sizeof *kids)) == NULL) {
        f->oom = 1;
        return;
    }
    nk = 0;
    for (c = s->first_child; c; c = c->next)
        kids[nk++] = c;
    if (nk > 1)
        qsort(kids, nk, sizeof *kids, by_start);
    for (size_t i = 0; i < nk; i++) {
        c = kids[i];
        if (c->flags & PH_STAGE_CONCURRENT) {
            fold(f, c, lane_of(f, c->thread, c->thread == s->thread ? c : NULL, c->start_ns));
            continue;
        }
        if (c->start_ns > cursor)
            add_seg(f, ln, cursor, c->start_ns - cursor, s);
        fold(f, c, ln);
        if (ph_stage_end_ns(c) > cursor)
            cursor = ph_stage_end_ns(c);
    }
    if (ph_stage_end_ns(s) > cursor)
        add_seg(f, ln, cursor, ph_stage_end_ns(s) - cursor, s);
    free(kids);
}

static int
by_lane_then_start(const void *a, const void *b, void *ud)
{
    const seg *x = a, *y = b;
    const folder *f = ud;
    uint64_t lx = f->lanes[x->lane].first, ly = f->lanes[y->lane].first;

    if (x->lane != y->lane) {
        if (lx != ly)
            return lx < ly ? -1 : 1;
        return x->lane < y->lane ? -1 : 1;
    }
    return x->start < y->start ? -1 : x->start > y->start;
}

static void
lane_label(const folder *f, int ln, char *out, size_t size)
{
    const lane *l = &f->lanes[ln];

    if (l->owner)
        snprintf(out, size, "ThreadId(%d)-concurrent-%d", l->thread, ln);
    else if (l->thread == 1)
        snprintf(out, size, "ThreadId(1)-main");
    else
        snprintf(out, size, "ThreadId(%d)", l->thread);
}

/* NAME with the folded format's separators made harmless. */
static void
put_frame(FILE *out, const char *name)
{
    for (const char *p = name; *p; p++)
        fputc(*p == ';' ? ',' : (*p == '\n' || *p == '\r') ? ' ' : *p, out);
}

static void
put_path(FILE *out, const ph_stage *s)
{
    if (s->parent)
        put_path(out, s->parent);
    fputs("; ", out);
    put_frame(out, s->name);
}

static int
write_folded(FILE *out, const ph_stage *tree, ph_error_t *err)
{
    folder f = { 0 };
    char label[64];

    if (tree == NULL)
        return 0;
    fold(&f, tree, lane_of(&f, tree->thread, NULL, tree->start_ns));
    if (f.oom) {
        free(f.lanes);
        free(f.segs);
        return ph_fail(err, ENOMEM, "fold the timings");
    }
    qsort_r(f.segs, f.n_segs, sizeof *f.segs, by_lane_then_start, &f);
    for (size_t i = 0; i < f.n_segs; i++) {
        lane_label(&f, f.segs[i].lane, label, sizeof label);
        fputs(label, out);
        put_path(out, f.segs[i].stage);
        fprintf(out, " %llu\n", (unsigned long long)f.segs[i].ns);
    }
    free(f.lanes);
    free(f.segs);
    return ferror(out) ? ph_fail(err, EIO, "write the folded timings") : 0;
}

/* ---- Chrome trace -------------------------------------------------------- */

static json_t *
attrs_json(const ph_stage *s)
{
    json_t *a = json_object();

    for (int i = 0; a && i < PH_STAGE_ATTRS && s->attr_key[i]; i++)
        if (s->attr_val[i])
            json_object_set_new(a, s->attr_key[i], json_string(s->attr_val[i]));
    return a;
}

static int
trace_events(json_t *events, folder *f, const ph_stage *s, int ln, uint64_t t0)
{
    json_t *args = attrs_json(s), *ev;
    const ph_stage *c;

    if (args == NULL)
        return -1;
    if (s->bytes_in)
        json_object_set_new(args, "bytes_in", json_integer((json_int_t)s->bytes_in));
    if (s->bytes_out)
        json_object_set_new(args, "bytes_out", json_integer((json_int_t)s->bytes_out));
    if (s->flags & PH_STAGE_CONCURRENT)
        json_object_set_new(args, "concurrent", json_true());
    if (s->error)
        json_object_set_new(args, "error", json_string(s->error));
    ev = json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", s->name, "cat", s->category, "ph", "X", "ts",
                   (double)(s->start_ns - t0) / 1e3,
                   "dur", (double)(ph_stage_end_ns(s) - s->start_ns) / 1e3, "pid", (int)getpid(),
                   "tid", ln + 1, "args", args);
    if (ev == NULL || json_array_append_new(events, ev) < 0)
        return -1;
    for (c = s->first_child; c; c = c->next) {
        int cl = ln;

        if (c->flags & PH_STAGE_CONCURRENT)
            cl = lane_of(f, c->thread, c->thread == s->thread ? c : NULL, c->start_ns);
        if (f->oom || trace_events(events, f, c, cl, t0) < 0)
            return -1;
    }
    return 0;
}

static json_t *
trace_json(const ph_stage *tree)
{
    folder f = { 0 };
    json_t *events = json_array(), *doc = NULL;
    char label[64];

    if (events == NULL || tree == NULL)
        goto fail;
    if (trace_events(events, &f, tree, lane_of(&f, tree->thread, NULL, tree->start_ns), tree->start_ns) < 0)
        goto fail;
    if (json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "process_name", "ph", "M",
                                                "pid", (int)getpid(), "tid", 1, "args", "name", "profharness")) < 0)
        goto fail;
    for (size_t i = 0; i < f.n_lanes; i++) {
        lane_label(&f, (int)i, label, sizeof label);
        if (json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph", "M",
                                                    "pid", (int)getpid(), "tid", (int)i + 1, "args", "name",
                                                    label)) < 0)
            goto fail;
    }
    doc = json_pack("{s:o, s:s}", "traceEvents", events, "displayTimeUnit", "ms");
    events = NULL;
fail:
    json_decref(events);
    free(f.lanes);
    free(f.segs);
    return doc;
}

/* ---- run.json ------------------------------------------------------------ */

static json_t *
tree_json(const ph_stage *s, uint64_t t0)
{
    json_t *kids = json_array(), *j;
    uint64_t d = ph_stage_end_ns(s) - s->start_ns, serial = 0;

    if (kids == NULL)
        return NULL;
    for (const ph_stage *c = s->first_child; c; c = c->next) {
        json_t *k = tree_json(c, t0);

        if (k == NULL || json_array_append_new(kids, k) < 0) {
            json_decref(kids);
            return NULL;
        }
        if (!(c->flags & PH_STAGE_CONCURRENT))
            serial += ph_stage_end_ns(c) - c->start_ns;
    }
    j = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:b, s:b, s:o, s:o}", "name", s->name, "category",
                  s->category, "start_ns", (json_int_t)(s->start_ns - t0), "duration_ns", (json_int_t)d, "self_ns",
                  (json_int_t)(d > serial ? d - serial : 0), "bytes_in", (json_int_t)s->bytes_in, "bytes_out",
                  (json_int_t)s->bytes_out, "concurrent", (s->flags & PH_STAGE_CONCURRENT) != 0, "failed", s->failed,
                  "attributes", attrs_json(s), "children", kids);
    if (j && s->error)
        json_object_set_new(j, "error", json_string(s->error));
    return j;
}

/* The public readers read the tree as of one instant (ph_timing.h). */
int
ph_timing_write_folded(FILE *out, const ph_stage *tree, ph_error_t *err)
{
    int rc;

    ph_timing_read_begin();
    rc = write_folded(out, tree, err);
    ph_timing_read_end();
    return rc;
}

json_t *
ph_timing_trace_json(const ph_stage *tree)
{
    json_t *j;

    ph_timing_read_begin();
    j = trace_json(tree);
    ph_timing_read_end();
    return j;
}

json_t *
ph_timing_tree_json(const ph_stage *tree)
{
    json_t *j;

    ph_timing_read_begin();
    j = tree ? tree_json(tree, tree->start_ns) : NULL;
    ph_timing_read_end();
    return j;
}

int
ph_timing_run_json(json_t *meta)
{
    const ph_stage *tree = ph_timing_root();
    char hex[33];
    json_t *t;

    if (tree == NULL || meta == NULL)
        return 0;
    ph_otlp_hex(ph_otlp_trace_current()->trace_id, 16, hex);
    if ((t = ph_timing_tree_json(tree)) == NULL || json_object_set_new(meta, "timing", t) < 0 ||
        json_object_set_new(meta, "trace_id", json_string(hex)) < 0)
        return -1;
    return 0;
}

/* ---- files ----------------------------------------------------------------- */

static int
fill_folded(FILE *f, const void *ud, ph_error_t *err)
{
    return ph_timing_write_folded(f, ud, err);
}

static int
fill_trace(FILE *f, const void *ud, ph_error_t *err)
{
    json_t *doc = ph_timing_trace_json(ud);
    int rc;

    if (doc == NULL)
        return ph_fail(err, ENOMEM, "build the trace");
    rc = json_dumpf(doc, f, JSON_COMPACT);
    json_decref(doc);
    if (rc < 0 || fputc('\n', f) == EOF)
        return ph_fail(err, EIO, "write the trace");
    return 0;
}

int
ph_timing_write_files(const char *dir, ph_error_t *err)
{
    const ph_stage *tree = ph_timing_root();

    if (tree == NULL)
        return 0;
    if (ph_fs_write_atomic(dir, "harness.folded", fill_folded, tree, err) < 0 ||
        ph_fs_write_atomic(dir, "harness.trace.json", fill_trace, tree, err) < 0)
        return -1;
    return 0;
}
