/* ph_report_int.h - what the files of the report share (not for other
 * floors):
 *   ph_rundata.c        a run dir read: metadata, artifacts by kind, parsed
 *   ph_rundata_common.c what its readers share: problems, artifacts of a kind, JSON
 *   ph_html.c           HTML and SVG writing: page, tables, cards, charts
 *   ph_report_run.c     report.html and summary.json of one run; headline
 *   ph_report_massif.c, ph_report_callgrind.c, ph_report_strace.c,
 *   ph_report_flame.c, ph_report_heap.c   one section per kind of artifact
 *   ph_report_growth.c  the heap's growth between two snapshots (pure)
 *   ph_report_index.c   index.html
 *   ph_compare.c        two runs side by side, --fail-if
 */
#ifndef PH_REPORT_INT_H
#define PH_REPORT_INT_H

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "ph_callgrind.h"
#include "ph_flame.h"
#include "ph_fmt.h"
#include "ph_folded.h"
#include "ph_v8heap.h"
#include "ph_langview.h"
#include "ph_markup.h"
#include "ph_massif.h"
#include "ph_report.h"
#include "ph_strace.h"

/* ---- ph_rundata.c ------------------------------------------------------ */

#define PH_RD_MAX_ARTIFACTS 4096
#define PH_RD_MAX_PROBLEMS 32

typedef struct ph_artifact {
    char *name;                /* file name in the run dir */
    char *path;
    const char *kind;          /* "massif", "callgrind", "strace", "folded", "flamegraph", "pprof", "perf", "heap", "" */
    unsigned long long size;
} ph_artifact;

/* What the sampler says about itself (the subtitle of its flamegraph). */
typedef struct ph_sampler_stats {
    int have;
    int delta;                 /* delta snapshots: add them all up */
    int wall;                  /* the wall clock (profiles/wall.yaml): no per-CPU-second rate */
    double requested_hz, timer_hz, delivered_hz, cpu_seconds;
    unsigned long long samples, dropped, truncated, no_perf, own;
    char source[64];           /* the timer's name */
    char text[600];            /* the subtitle as written */
} ph_sampler_stats;

typedef struct ph_flamedata {
    ph_folded *folded;         /* merged stacks, the root frame is the thread; the
                                * language view (ph_langview.h) when NATIVE is set */
    ph_folded *native;         /* the stacks as read, when they have language frames; else NULL */
    ph_langview_info lang;     /* the language of the view (PH_LANG_NONE: native stacks) */
    const ph_artifact *svg;    /* the sampler's last flamegraph (its subtitle is read, never shown), or NULL */
    size_t n_files;            /* stacks files read */
    ph_sampler_stats sampler;
} ph_flamedata;

/* The heap sampler's views (profiles/heap.yaml, kind "heap"): the newest
 * folded file of each, parsed; NULL where the run has none. */
enum {
    PH_HEAP_INUSE_SPACE, PH_HEAP_INUSE_OBJECTS, PH_HEAP_PEAK_SPACE, PH_HEAP_PEAK_OBJECTS,
    PH_HEAP_ALLOC_SPACE, PH_HEAP_ALLOC_OBJECTS, PH_HEAP_VIEWS
};
typedef struct ph_heapdata {
    ph_folded *view[PH_HEAP_VIEWS];
    const ph_artifact *art[PH_HEAP_VIEWS];
    /* Growth: in use at the newest snapshot (art[PH_HEAP_INUSE_SPACE])
     * minus in use at the process's first (growth_from), positive only;
     * NULL when the process wrote one snapshot. */
    ph_folded *growth;
    const ph_artifact *growth_from;
    ph_folded *growth_base;  /* growth_from read: what was in use then (compare's names) */
    /* The runtimes the processes ran (heap-*.json, the sampler's), each
     * once: [{runtime, objects, note, brief}]; NULL: none said. */
    json_t *runtimes;
    /* V8's objects (the *.heapprofile node wrote, each process's,
     * ph_v8heap.c): live at each process's exit, by JS stack; NULL: none. */
    ph_folded *v8;
    ph_v8heap_info v8_info; /* summed over the files */
    size_t v8_files;
} ph_heapdata;

typedef struct ph_rundata {
    char dir[PATH_MAX];
    char name[256];            /* the run dir's name */
    char service[128], mode[64];
    char report[32];           /* the mode's profile's `report:`, its main section ("" when none is known) */
    json_t *run;               /* run.json, NULL when absent or unreadable */
    json_t *exit;              /* ph-exit.json, NULL when absent or unreadable */
    json_t *convert;           /* convert.json: a conversion's facts (perf: event, samples, unit), or NULL */
    const char *attached_to;   /* run.json's: the service's container an attach joined, or NULL */
    ph_artifact *arts;
    size_t n_arts;
    /* parsed, NULL when the run has none of that kind */
    ph_massif *massif;
    ph_callgrind *cg;
    ph_strace *st;
    ph_flamedata flame;
    ph_heapdata heap;
    int has_massif, has_cg, has_st, has_flame; /* artifacts of the kind exist */
    int has_heap;
    char *problems[PH_RD_MAX_PROBLEMS];
    size_t n_problems;
} ph_rundata;

/* A run dir's small JSON files are read whole, with a cap checked before
 * a byte is read (ph_read_file_at): ph-exit.json and convert.json come out
 * of the container (PH_SMALL_JSON_MAX); run.json and summary.json are the
 * harness's own, bounded all the same so a planted one costs nothing. */
#define PH_RD_OWN_JSON_MAX (16u << 20)

/* ph_rundata_common.c: DIR/NAME parsed as a JSON object, at most MAX
 * bytes; NULL when it is missing, and when it is refused or broken, with
 * why into PROBLEM (LEN bytes; PROBLEM may be NULL). */
json_t *ph_report_load_json(const char *dir, const char *name, size_t max, char *problem, size_t len);

/* Read RUN_DIR: metadata and every artifact, parsed.  Bad artifacts are
 * problems (ph_rundata_problem), not errors; -1 only when RUN_DIR cannot
 * be listed, or on ENOMEM. */
int ph_rundata_load(const char *run_dir, const ph_profile_set *profiles, ph_rundata *rd, ph_error_t *err);
void ph_rundata_free(ph_rundata *rd);
/* ph_report_heap.c: the heap views of RD's "heap" artifacts; their free. */
void ph_rundata_read_heap(ph_rundata *rd);
void ph_heapdata_free(ph_heapdata *h);
/* ph_rundata_common.c: a problem the page shows (the first PH_RD_MAX_PROBLEMS). */
void ph_rundata_problem(ph_rundata *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The artifacts of KIND, in name order; returns how many (up to MAX). */
size_t ph_rundata_files(const ph_rundata *rd, const char *kind, const ph_artifact **out, size_t max);
/* Parse "requested 150 Hz, timer 150 Hz (...), delivered 149 Hz ...; N samples over X CPU-s; ..." */
void ph_sampler_stats_parse(const char *subtitle, ph_sampler_stats *s);

/* ---- ph_html.c --------------------------------------------------------- */

/* Pages are written through a markup writer (ph_markup.h): artifact text
 * reaches them only escaped, through ph_mw_text, ph_mw_attr, ph_mw_url or
 * a %s of PH_MW_FMT.
 *
 * The page: <head> with its Content-Security-Policy, the style sheet and
 * script, a header bar. */
void ph_html_begin(ph_mw *f, const char *title, const char *heading, const char *sub);
/* Close the header bar (after any headline and links) and open <main>. */
void ph_html_main(ph_mw *f);
void ph_html_end(ph_mw *f);
void ph_html_section(ph_mw *f, const char *id, const char *title);
void ph_html_section_end(ph_mw *f);
/* A visible notice: something is missing or wrong. */
void ph_html_problem(ph_mw *f, const char *text);
void ph_html_note(ph_mw *f, const char *text);
void ph_html_cards_begin(ph_mw *f);
void ph_html_card(ph_mw *f, const char *label, const char *value, const char *note);
void ph_html_cards_end(ph_mw *f);
/* <table class="data"> with header cells; a name ending in '#' is numeric. */
void ph_html_table(ph_mw *f, const char *const *heads, size_t n);
void ph_html_table_end(ph_mw *f);
/* A numeric cell: TEXT shown, V sorts. */
void ph_html_num(ph_mw *f, double v, const char *text);
/* A cell with a bar of FRAC (0..1) of the width. */
void ph_html_bar(ph_mw *f, double frac);
/* Render F with O (the harness's own renderer: never an SVG an artifact
 * holds) and show it in a sandboxed frame of its own; a notice instead
 * when nothing can be drawn. */
void ph_html_flame_render(ph_mw *f, const ph_folded *folded, const ph_flame_opts *o, const char *title);
/* The same, the SVG drawn kept in *SVG (*LEN bytes; the caller frees;
 * NULL when nothing was drawn). */
void ph_html_flame_render_kept(ph_mw *f, const ph_folded *folded, const ph_flame_opts *o, const char *title,
                               char **svg, size_t *len);
/* O bounded as every graph of a report is (ph_report_limits): minwidth at
 * least 1 px, narrow siblings merged, PH_REPORT_GRAPH_DEPTH deep, at most
 * PH_REPORT_GRAPH_MAX bytes. */
void ph_report_graph_bounds(ph_flame_opts *o);

/* Charts (inline SVG, drawn here: no script needed). */
typedef struct ph_chart_series {
    const char *name;
    const double *y;       /* one per x */
} ph_chart_series;
typedef const char *(*ph_chart_fmt)(char buf[PH_FMT_LEN], double v);
/* Stacked areas of SERIES over X (N points), and LINE (may be NULL) drawn
 * on top over LX (LN points), e.g. massif's total heap. */
enum { PH_CHART_X_BYTES = 1, PH_CHART_Y_BYTES = 2 }; /* ticks at powers of two */
void ph_svg_stacked(ph_mw *f, const double *x, size_t n, const ph_chart_series *series, size_t ns, const double *lx,
                    const double *ly, size_t ln, const char *line_name, ph_chart_fmt fx, ph_chart_fmt fy,
                    const char *x_label, int flags);
/* The colour of series I (a fixed palette; the last one is "other"). */
const char *ph_chart_color(size_t i);

/* ---- ph_report_out.c: files ------------------------------------------ */

/* Where one report's files go, and what holds them (ph_report_limits):
 * every file counts against max_bytes, and none may leave less than
 * min_free on the filesystem, looked at before each file and every MiB
 * of a stream.  Fields are the module's. */
typedef struct ph_report_out {
    char dir[PATH_MAX];
    uint64_t min_free;      /* as set (0: the default), then as resolved */
    int min_free_resolved;
    uint64_t max_bytes;
    uint64_t written;       /* by this report so far */
    uint64_t unchecked;     /* bytes since the last look at the free space */
    ph_strv made;           /* the files written so far (their paths) */
} ph_report_out;

/* The output of a report into DIR under LIM (NULL: the defaults). */
void ph_report_out_init(ph_report_out *o, const char *dir, const ph_report_limits *lim);
/* What max_bytes leaves. */
uint64_t ph_report_out_left(const ph_report_out *o);
/* A report that failed part way: the files it wrote so far removed, so
 * nothing of it is left (a run's graphs without the page that shows
 * them, written past min_free).  Then as ph_report_out_done. */
void ph_report_out_undo(ph_report_out *o);
/* What O holds freed (the files stay). */
void ph_report_out_done(ph_report_out *o);
/* Write PATH (in the dir) through a temporary file and a rename; a limit
 * it would pass is an error (EFBIG, or min_free's ENOSPC) and writes
 * nothing. */
int ph_report_out_write(ph_report_out *o, const char *path, const void *buf, size_t len, ph_error_t *err);
int ph_report_out_json(ph_report_out *o, const char *path, json_t *j, ph_error_t *err);
/* Write PATH as FILL writes it into F, streamed: the limits are checked
 * as it goes, and the first one passed is the error (the file removed). */
typedef int (*ph_report_fill_cb)(FILE *f, void *arg, ph_error_t *err);
int ph_report_out_stream(ph_report_out *o, const char *path, ph_report_fill_cb fill, void *arg, ph_error_t *err);
/* One file alone (the index, compare.html, a merged run's files), under
 * the default limits. */
int ph_report_write_file(const char *dir, const char *path, const char *buf, size_t len, ph_error_t *err);
int ph_report_write_json(const char *dir, const char *path, json_t *j, ph_error_t *err);

/* ---- the sections ------------------------------------------------------ */

/* What a section adds to the run's report. */
typedef struct ph_rctx {
    ph_mw *html;
    json_t *summary;           /* the run's summary.json object */
    ph_rundata *rd;
    char headline[512];        /* set by the section of the run's main kind */
    char *flame_svg;           /* the flamegraph section's graph (PH_REPORT_FLAME_SVG), or NULL */
    size_t flame_svg_len;
    char *flame_native_svg;    /* a language view's native graph (PH_REPORT_FLAME_NATIVE_SVG), or NULL */
    size_t flame_native_svg_len;
    char *heap_svg;            /* the heap section's growth graph (PH_REPORT_HEAP_GROWTH.svg), or NULL */
    size_t heap_svg_len;
    const char *toc[8];        /* the sections written, in order (the page's table of contents) */
    size_t n_toc;
} ph_rctx;

/* A function's name in a headline: about this long at most (ph_fmt_name). */
#define PH_HEADLINE_NAME 120
/* The native view's graph of a language service, beside PH_REPORT_FLAME_SVG. */
#define PH_REPORT_FLAME_NATIVE_SVG PH_REPORT_SVG_PREFIX "flamegraph-native.svg"

void ph_report_massif(ph_rctx *c);
void ph_report_callgrind(ph_rctx *c);
void ph_report_strace(ph_rctx *c);
void ph_report_flame(ph_rctx *c);
void ph_report_heap(ph_rctx *c);
/* Is NAME one of the allocator's functions (malloc, operator new...)? */
int ph_heap_is_allocator(const char *name);
/* Is NAME a Java object's class, as the sampler names it (`new C_[j]`)? */
int ph_heap_java_class(const char *name);
/* The heap's growth file (report-inuse_space_growth.folded) and its
 * graph (.svg), when the run has a growth, into RO (the growth's stacks
 * past what its bound leaves are a problem, not written): -1 and *ERR
 * when they cannot be written. */
int ph_report_heap_files(const ph_rctx *c, ph_report_out *ro, ph_error_t *err);
#define PH_REPORT_HEAP_GROWTH PH_REPORT_SVG_PREFIX "inuse_space_growth"

/* ph_report_growth.c: per stack (by its frames' names), LAST's count
 * minus BASE's (either may be NULL: nothing), the stacks whose
 * difference is positive into *OUT (new; the caller frees).  -1 only on
 * ENOMEM. */
int ph_heap_growth(const ph_folded *base, const ph_folded *last, ph_folded **out, ph_error_t *err);
/* FO as folded text, `a;b;c COUNT` a line, into *BUF (*LEN bytes; the
 * caller frees).  -1 only on ENOMEM. */
int ph_heap_growth_text(const ph_folded *fo, char **buf, size_t *len, ph_error_t *err);

/* Samples per frame name of FOLDED (ph_folded_n_names entries each, the
 * caller frees): SELF where the name is the leaf, TOTAL where it is on
 * the stack (once per stack, however deep the recursion).  SKIP_ROOT:
 * frame 0 is the thread, not a function (the sampler's stacks). */
int ph_flame_tally(const ph_folded *folded, int skip_root, double **self, double **total);
/* The renderer's options for the run's flamegraph: TITLE (CAP bytes)
 * names the run, the subtitle is what the sampler said of itself. */
void ph_report_flame_opts(const ph_rundata *rd, ph_flame_opts *o, char *title, size_t cap);
/* Draw report-<stem>.svg in the run dir for each of the run's folded
 * stacks files when it has more than one (PH_REPORT_FLAME_SVG has them
 * all), streamed into RO, keeping RESERVE bytes of its bound for the page;
 * those the bound leaves no room for are a problem of RD.  -1 when one
 * cannot be written. */
int ph_report_flame_files(ph_rundata *rd, ph_report_out *ro, uint64_t reserve, ph_error_t *err);
/* ph_report_merge.c: a merged run's hosts, each linking its run's
 * report (nothing for a run of one host). */
void ph_report_merged_section(ph_mw *f, const ph_rundata *rd);
/* The run's stacks with every frame (the native view): FD's native
 * stacks, or its only ones. */
const ph_folded *ph_flame_native(const ph_flamedata *fd);
/* Whether the run's folded stacks start with the thread's name. */
int ph_flame_has_thread_root(const ph_rundata *rd);
/* The wall clock's mark of a blocked thread, the leaf of its stack. */
#define PH_OFFCPU_FRAME "[off-cpu]"
/* Whether the run's stacks are the wall clock's (the sampler says so, or
 * a stack ends in PH_OFFCPU_FRAME). */
int ph_flame_is_wall(const ph_rundata *rd);
/* The samples (or bytes) of FO's stacks that have FN among their frames
 * (FN NULL: all of them), and with OFFCPU only those that end in
 * PH_OFFCPU_FRAME. */
double ph_folded_sum_with(const ph_folded *fo, const char *fn, int offcpu);

/* The name of a massif allocation site for people: "front_cache_put (front.c:88)". */
const char *ph_report_site_name(const char *details);

#endif
