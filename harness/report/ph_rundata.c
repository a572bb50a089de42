/* ph_rundata.c - a run dir read for a report or a comparison: run.json,
 * ph-exit.json, the artifacts sorted into kinds, each kind parsed.
 *
 * Nothing here fails on a bad artifact: what is missing, empty or broken
 * becomes a problem text the report shows, with what the person can do
 * about it where we know.
 */
#include "ph_report_int.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ph_lines.h"
#include "ph_util.h"

/* Names a run dir has that are not artifacts. */
static const char *const not_artifacts[] = { PH_RUN_META_NAME,  "ph-exit.json",       PH_REPORT_HTML,
                                             PH_REPORT_SUMMARY,   PH_COMPARE_HTML,      PH_HARNESS_FOLDED,
                                             PH_HARNESS_TRACE,    "convert.json" };

/* Without a profile, the usual names (the shipped profiles use the same):
 * the heap sampler's views before any other folded file, or a heap run
 * reported without its profile is read as CPU samples. */
static const struct {
    const char *glob, *kind;
} default_kinds[] = {
    { "massif.out*", "massif" },
    { "callgrind.out*", "callgrind" },
    { "strace.log*", "strace" },
    { "inuse_space-*.folded", "heap" },
    { "inuse_objects-*.folded", "heap" },
    { "peak_inuse_space-*.folded", "heap" },
    { "peak_inuse_objects-*.folded", "heap" },
    { "alloc_space-*.folded", "heap" },
    { "alloc_objects-*.folded", "heap" },
    { "heap-*.pb.gz", "pprof" },
    { "heap-*.json", "heapinfo" },
    { "*.heapprofile", "v8heap" },
    { "stacks-*.folded", "folded" },
    { "*.folded", "folded" },
    { "flamegraph-*.svg", "flamegraph" },
    { "profile-*.pb.gz", "pprof" },
};

/* The kinds we read, interned so that kind pointers compare. */
static const char *const known_kinds[] = { "massif",     "callgrind", "strace", "folded",  "flamegraph",
                                           "pprof",      "perf",      "heap",   "heapinfo", "v8heap" };

static const char *
known_kind(const char *k)
{
    for (size_t i = 0; k != NULL && i < sizeof known_kinds / sizeof known_kinds[0]; i++)
        if (strcmp(k, known_kinds[i]) == 0)
            return known_kinds[i];
    return "";
}

static int
cmp_art(const void *a, const void *b)
{
    return strverscmp(((const ph_artifact *)a)->name, ((const ph_artifact *)b)->name);
}

static json_t *
load_json(ph_rundata *rd, const char *name, size_t max)
{
    char problem[PATH_MAX + 512];
    json_t *j = ph_report_load_json(rd->dir, name, max, problem, sizeof problem);

    if (j == NULL && problem[0])
        ph_rundata_problem(rd, "%s", problem);
    return j;
}

int
ph_report_run_dir_info(const char *dir, ph_run_dir_info *out)
{
    json_t *j = ph_report_load_json(dir, PH_RUN_META_NAME, PH_RD_OWN_JSON_MAX, NULL, 0);
    const char *mode = json_string_value(json_object_get(j, "mode"));
    const char *when = json_string_value(json_object_get(j, "collected_at"));

    memset(out, 0, sizeof *out);
    if (mode != NULL) {
        out->kind = PH_RUN_DIR_ONE;
        snprintf(out->mode, sizeof out->mode, "%s", mode);
        snprintf(out->collected, sizeof out->collected, "%s", when ? when : "");
    }
    json_decref(j);
    if (out->kind == PH_RUN_DIR_NONE) {
        j = ph_report_load_json(dir, PH_TASKS_NAME, PH_RD_OWN_JSON_MAX, NULL, 0);
        if (json_is_array(json_object_get(j, "tasks"))) {
            out->kind = PH_RUN_DIR_SEVERAL;
            mode = json_string_value(json_object_get(j, "mode"));
            snprintf(out->mode, sizeof out->mode, "%s", mode ? mode : "");
        }
        json_decref(j);
    }
    return out->kind;
}

/* ---- the sampler's own figures ---------------------------------------- */

static double
number_before(const char *s, const char *word)
{
    const char *w = strstr(s, word);

    if (w == NULL)
        return -1;
    while (w > s && w[-1] == ' ')
        w--;
    while (w > s && (w[-1] == '.' || (w[-1] >= '0' && w[-1] <= '9')))
        w--;
    return strtod(w, NULL);
}

void
ph_sampler_stats_parse(const char *sub, ph_sampler_stats *s)
{
    const char *p;
    double v;

    memset(s, 0, sizeof *s);
    snprintf(s->text, sizeof s->text, "%s", sub);
    s->delta = strstr(sub, "(delta)") != NULL;
    /* per CPU-second means nothing on the wall clock: left out of the text */
    if ((s->wall = strstr(sub, ": wall clock)") != NULL) && (p = strstr(s->text, ", delivered ")) != NULL)
        *(char *)p = '\0';
    if ((p = strstr(sub, "requested ")) != NULL)
        s->requested_hz = strtod(p + 10, NULL);
    if ((p = strstr(sub, "timer ")) != NULL) {
        const char *o, *c;
        s->timer_hz = strtod(p + 6, NULL);
        if ((o = strchr(p, '(')) != NULL && (c = strstr(o, "), delivered")) != NULL)
            snprintf(s->source, sizeof s->source, "%.*s", (int)(c - o - 1), o + 1);
    }
    if ((p = strstr(sub, "delivered ")) != NULL)
        s->delivered_hz = strtod(p + 10, NULL);
    if ((v = number_before(sub, " samples over")) >= 0)
        s->samples = (unsigned long long)v;
    if ((p = strstr(sub, "samples over ")) != NULL)
        s->cpu_seconds = strtod(p + 13, NULL);
    if ((v = number_before(sub, " dropped")) >= 0)
        s->dropped = (unsigned long long)v;
    if ((v = number_before(sub, " truncated")) >= 0)
        s->truncated = (unsigned long long)v;
    if ((v = number_before(sub, " threads without perf")) >= 0)
        s->no_perf = (unsigned long long)v;
    if ((v = number_before(sub, " in the sampler")) >= 0)
        s->own = (unsigned long long)v;
    s->have = s->requested_hz > 0 || s->samples > 0;
}

/* The text of <text id="subtitle">...</text> in SVG, unescaped; the
 * lines of a wrapped subtitle (<tspan>s) joined with a blank. */
static void
svg_subtitle(const char *svg, size_t len, char *out, size_t cap)
{
    static const struct {
        const char *ent;
        char c;
    } ents[] = { { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' } };
    const char *p = memmem(svg, len, "id=\"subtitle\"", 13), *e = svg + len;
    size_t o = 0;

    out[0] = '\0';
    if (p == NULL || (p = memchr(p, '>', (size_t)(e - p))) == NULL)
        return;
    for (p++; p < e && o + 1 < cap;) {
        if (*p == '<') {
            const char *gt = memchr(p, '>', (size_t)(e - p));
            if (gt == NULL || (e - p >= 7 && memcmp(p, "</text>", 7) == 0))
                break;
            if (e - p >= 6 && memcmp(p, "<tspan", 6) == 0 && o > 0 && out[o - 1] != ' ')
                out[o++] = ' ';
            p = gt + 1;
            continue;
        }
        if (*p == '&') {
            size_t i;
            for (i = 0; i < sizeof ents / sizeof ents[0]; i++) {
                size_t n = strlen(ents[i].ent);
                if ((size_t)(e - p) >= n && memcmp(p, ents[i].ent, n) == 0) {
                    out[o++] = ents[i].c;
                    p += n;
                    break;
                }
            }
            if (i < sizeof ents / sizeof ents[0])
                continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
}

/* ---- reading each kind ------------------------------------------------- */

/* What a parser found wrong with WHAT, as the report's problems. */
static void
parse_problems(ph_rundata *rd, const char *what, const char *format, const char *problem, size_t bad, size_t first)
{
    if (problem[0])
        ph_rundata_problem(rd, "%s: %s", what, problem);
    if (bad > 0)
        ph_rundata_problem(rd, "%s: %zu line%s not in %s's format (first at line %zu), skipped", what, bad,
                           bad == 1 ? "" : "s", format, first);
}

/* The paths of the artifacts of KIND (up to MAX) into PATHS; the name to
 * call them by into *WHAT.  Returns how many. */
static size_t
paths_of(ph_rundata *rd, const char *kind, const char *glob, const char **paths, size_t max, const char **what)
{
    const ph_artifact *a[4096];
    size_t n = ph_rundata_files(rd, kind, a, max < 4096 ? max : 4096);

    for (size_t i = 0; i < n; i++)
        paths[i] = a[i]->path;
    *what = n == 1 ? a[0]->name : glob;
    return n;
}

static void
read_massif(ph_rundata *rd)
{
    const char *paths[8], *what;
    size_t n = paths_of(rd, "massif", "massif.out*", paths, 8, &what);
    ph_error_t err = NULL;
    const ph_massif_info *info;
    const char *slash;

    if (n == 0)
        return;
    rd->has_massif = 1;
    slash = strrchr(paths[n - 1], '/');
    what = slash ? slash + 1 : paths[n - 1];
    if (n > 1)
        ph_rundata_problem(rd, "%zu massif files; the report shows %s", n, what);
    rd->massif = ph_massif_parse_file(paths[n - 1], &err);
    if (rd->massif == NULL) {
        ph_rundata_problem(rd, "%s: %s", what, err->msg);
        ph_error_free(&err);
        return;
    }
    info = ph_massif_get_info(rd->massif);
    parse_problems(rd, what, "massif", info->problem, info->bad_lines, info->bad_line_numbers[0]);
}

static void
read_callgrind(ph_rundata *rd)
{
    const char *paths[256], *what;
    size_t n = paths_of(rd, "callgrind", "callgrind.out*", paths, 256, &what);
    ph_error_t err = NULL;
    const ph_cg_info *info;

    if (n == 0)
        return;
    rd->has_cg = 1;
    rd->cg = ph_callgrind_parse_files(paths, n, &err);
    if (rd->cg == NULL) {
        ph_rundata_problem(rd, "callgrind: %s", err->msg);
        ph_error_free(&err);
        return;
    }
    info = ph_callgrind_get_info(rd->cg);
    parse_problems(rd, what, "callgrind", info->problem, info->bad_lines, info->bad_line_numbers[0]);
}

static void
read_strace(ph_rundata *rd)
{
    const char **paths = malloc(4096 * sizeof *paths), *what;
    size_t n = paths ? paths_of(rd, "strace", "strace.log*", paths, 4096, &what) : 0;
    ph_error_t err = NULL;
    const ph_strace_info *info;

    if (n == 0) {
        free(paths);
        return;
    }
    rd->has_st = 1;
    rd->st = ph_strace_parse_files(paths, n, &err);
    free(paths);
    if (rd->st == NULL) {
        ph_rundata_problem(rd, "strace: %s", err->msg);
        ph_error_free(&err);
        return;
    }
    info = ph_strace_get_info(rd->st);
    /* Attached: strace let go of a running service, whose calls in
     * progress then had not returned; that is no fault of the log. */
    parse_problems(rd, what, "strace",
                   rd->attached_to != NULL && info->in_flight > 0 && info->calls > 0
                       ? (info->with_times ? "" : "no timestamps: strace ran without -tt")
                       : info->problem,
                   info->bad_lines, info->bad_line_numbers[0]);
}

static int
folded_chunk(void *ctx, const char *buf, size_t len, ph_error_t *err)
{
    return ph_folded_feed(ctx, buf, len, err);
}

/* ---- samples without a function name ---------------------------------- */

#define UNNAMED_MODS 8
#define UNNAMED_PROBLEM_PERCENT 10.0

/* Whether NAME is a namer's placeholder for a frame it could not name,
 * and whose code that is: the collapser's `[dso]`, `[dso <addr>]`,
 * `[perf-N.map]` (not `[truncated]`, `[off-cpu]`: marks of the sampler's);
 * the sampler's `[unknown]+0xPC` (no file: anonymous
 * memory) and `module+0xOFF`.  *JIT: code outside any file, or in a perf
 * map's range (a JIT's, whose map the run did not have). */
static int
unnamed_module(const char *name, char *mod, size_t len, int *jit)
{
    const char *end, *plus;

    *jit = 0;
    if (name[0] == '[') {
        size_t n;

        if ((end = strchr(name, ']')) == NULL || (end[1] != '\0' && strncmp(end + 1, "+0x", 3) != 0))
            return 0;
        n = (size_t)(end - name - 1);
        for (size_t i = 1; i + 1 < (size_t)(end - name); i++)
            if (name[i] == ' ' && name[i + 1] == '<') {
                n = i - 1;
                break;
            }
        if (n == 0 || (n == 9 && strncmp(name + 1, "truncated", 9) == 0) ||
            (n == 7 && strncmp(name + 1, "off-cpu", 7) == 0)) /* the wall clock's mark of a blocked thread */
            return 0;
        if (n == 7 && strncmp(name + 1, "unknown", 7) == 0) {
            *jit = 1;
            snprintf(mod, len, "code in no file");
        } else {
            *jit = n > 9 && strncmp(name + 1, "perf-", 5) == 0 && strncmp(name + 1 + n - 4, ".map", 4) == 0;
            snprintf(mod, len, "%.*s", (int)n, name + 1);
        }
        return 1;
    }
    if ((plus = strstr(name, "+0x")) == NULL || plus == name || plus[3] == '\0' ||
        strspn(plus + 3, "0123456789abcdef") != strlen(plus + 3) || strpbrk(name, " (<") != NULL)
        return 0;
    snprintf(mod, len, "%.*s", (int)(plus - name), name);
    return 1;
}

/* Which piece of a language runtime module MOD is, for a person: "" for
 * none we know.  In a language view these samples are outside any of
 * the language's functions (start-up, the collector, a runtime thread). */
static const char *
runtime_piece(const char *mod)
{
    static const struct {
        const char *prefix, *piece;
    } pieces[] = {
        { "python", "the CPython interpreter" }, { "libpython", "the CPython interpreter" },
        { "libjvm.so", "the JVM (HotSpot)" },   { "libjava.so", "the JVM's native library" },
        { "node", "node (V8 and libuv)" },      { "libnode.so", "node (V8 and libuv)" },
    };

    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++)
        if (strncmp(mod, pieces[i].prefix, strlen(pieces[i].prefix)) == 0)
            return pieces[i].piece;
    return "";
}

/* A problem when much of the CPU went to frames without a function name:
 * the report would otherwise show `[lang_go_static] 100 %` and no word. */
static void
unnamed_problem(ph_rundata *rd, const ph_folded *fo, int skip_root)
{
    struct {
        char name[128];
        int jit;
        double count;
    } m[UNNAMED_MODS];
    size_t nm = 0, ns = ph_folded_n_stacks(fo);
    double total = ph_folded_get_stats(fo)->total, unnamed = 0;
    char text[1024], pct[PH_FMT_LEN];
    size_t o = 0;

    for (size_t i = 0; i < ns; i++) {
        ph_folded_stack st = ph_folded_get_stack(fo, i);
        char mod[128];
        int jit;
        size_t k;

        if ((skip_root && st.depth < 2) ||
            !unnamed_module(ph_folded_name(fo, st.frames[st.depth - 1], NULL), mod, sizeof mod, &jit))
            continue;
        unnamed += st.count;
        for (k = 0; k < nm && strcmp(m[k].name, mod) != 0; k++)
            ;
        if (k == nm && nm < UNNAMED_MODS) {
            snprintf(m[nm].name, sizeof m[nm].name, "%s", mod);
            m[nm].jit = jit;
            m[nm++].count = 0;
        }
        if (k < nm)
            m[k].count += st.count;
    }
    if (!(total > 0) || 100 * unnamed / total < UNNAMED_PROBLEM_PERCENT)
        return;
    for (size_t i = 0; i < nm; i++) /* largest first; a few, insertion */
        for (size_t j = i; j > 0 && m[j].count > m[j - 1].count; j--) {
            __typeof__(m[0]) t = m[j];
            m[j] = m[j - 1];
            m[j - 1] = t;
        }
    for (size_t i = 0; i < nm && i < 3 && o < sizeof text; i++) {
        const char *piece = m[i].jit ? "" : runtime_piece(m[i].name), *lang = ph_langview_lang_name(rd->flame.lang.lang);
        char what[200] = "";

        if (piece[0] && lang[0])
            snprintf(what, sizeof what, ", %s outside any %s function,", piece, lang);
        else if (piece[0])
            snprintf(what, sizeof what, ", %s,", piece);
        o += (size_t)snprintf(text + o, sizeof text - o, "%s%s (%s)%s %s", i ? "; " : "", m[i].name,
                              ph_fmt_percent(pct, m[i].count, total), what,
                              m[i].jit ? "is JIT code without a perf map (the runtime wrote none, or the run did not "
                                         "carry it)"
                                       : "has no symbols (stripped, or its symbols were not found)");
    }
    ph_rundata_problem(rd, "%s of the samples have no function name: %s", ph_fmt_percent(pct, unnamed, total), text);
}

static void
read_flame(ph_rundata *rd)
{
    const ph_artifact *folded[4096], *svgs[4096];
    size_t nf = ph_rundata_files(rd, "folded", folded, 4096), ns = ph_rundata_files(rd, "flamegraph", svgs, 4096);
    ph_flamedata *fd = &rd->flame;
    ph_error_t err = NULL;
    size_t first;

    if (nf == 0 && ns == 0)
        return;
    rd->has_flame = 1;
    if (ns > 0) {
        /* the last snapshot's graph: its subtitle has the sampler's figures */
        FILE *f = fopen(svgs[ns - 1]->path, "re");
        char head[65536], sub[600];
        size_t n = f ? fread(head, 1, sizeof head, f) : 0;

        if (f)
            fclose(f);
        svg_subtitle(head, n, sub, sizeof sub);
        if (sub[0])
            ph_sampler_stats_parse(sub, &fd->sampler);
        fd->svg = svgs[ns - 1];
    }
    if (nf == 0) {
        ph_rundata_problem(rd, "no folded stacks (stacks-*.folded): tables by function cannot be made");
        return;
    }
    fd->folded = ph_folded_new(0, &err);
    if (fd->folded == NULL) {
        ph_rundata_problem(rd, "folded stacks: %s", err->msg);
        ph_error_free(&err);
        return;
    }
    /* cumulative snapshots: the last one has everything; delta ones add up */
    first = fd->sampler.delta ? 0 : nf - 1;
    for (size_t i = first; i < nf; i++) {
        if (ph_read_file_chunks(folded[i]->path, folded_chunk, fd->folded, NULL, &err) < 0 ||
            ph_folded_finish(fd->folded, &err) < 0) {
            ph_rundata_problem(rd, "%s", err->msg);
            ph_error_free(&err);
            continue;
        }
        fd->n_files++;
    }
    {
        const ph_folded_stats *st = ph_folded_get_stats(fd->folded);
        if (st->stacks == 0)
            ph_rundata_problem(rd, "%s: no samples (the service used no CPU while it was sampled, or the file is empty)",
                               folded[nf - 1]->name);
        if (st->bad_lines > 0)
            ph_rundata_problem(rd, "%s: %zu line%s not in the folded format (first at line %zu), skipped",
                               folded[nf - 1]->name, st->bad_lines, st->bad_lines == 1 ? "" : "s",
                               st->bad_line_numbers[0]);
    }
    /* a language service: its tables, headline and figures at the level
     * of its language, the stacks as read kept for the native view */
    {
        ph_folded *view = NULL;
        int r = ph_langview_build(fd->folded, ph_flame_has_thread_root(rd), &view, &fd->lang, &err);

        if (r < 0) {
            ph_rundata_problem(rd, "%s", err->msg);
            ph_error_free(&err);
        } else if (r > 0) {
            fd->native = fd->folded;
            fd->folded = view;
        } else {
            fd->lang.lang = PH_LANG_NONE;
        }
    }
    unnamed_problem(rd, fd->folded, ph_flame_has_thread_root(rd));
}

/* The sampler's word on each runtime it found in a process (its
 * sampler-status-<pid>.json, ph_sampler.h: "python", "java"): one whose
 * frames it did not read (a JVM that did not load it as its agent, a
 * CPython of a version it has no layout for) leaves that process's samples
 * with the interpreter's or VM's native frames only, which the tables
 * would show without a word.  Each distinct statement is one problem,
 * with the first process that made it and how many more did.  The files
 * are the container's: each read whole only under a bound, each text cut
 * to what a problem holds (escaped where it is shown). */
#define STATUS_MAX (64u << 10)
#define STATUS_TEXTS 8
static void
runtime_problems(ph_rundata *rd)
{
    static const char *const keys[] = { "java", "python" };
    struct {
        char text[400], program[256];
        long long pid;
        size_t more;
    } seen[STATUS_TEXTS];
    size_t n = 0;

    for (size_t i = 0; i < rd->n_arts; i++) {
        json_t *j;

        if (fnmatch("sampler-status-*.json", rd->arts[i].name, 0) != 0 ||
            (j = ph_report_load_json(rd->dir, rd->arts[i].name, STATUS_MAX, NULL, 0)) == NULL)
            continue;
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            const char *v = json_string_value(json_object_get(j, keys[k]));
            const char *prog = json_string_value(json_object_get(j, "program"));
            size_t m;

            if (v == NULL || strstr(v, ": frames not read") == NULL)
                continue;
            for (m = 0; m < n && strncmp(seen[m].text, v, sizeof seen[m].text - 1) != 0; m++)
                ;
            if (m < n) {
                seen[m].more++;
                continue;
            }
            if (n == STATUS_TEXTS)
                continue;
            snprintf(seen[n].text, sizeof seen[n].text, "%s", v);
            snprintf(seen[n].program, sizeof seen[n].program, "%s", prog ? prog : "a process");
            seen[n].pid = (long long)json_integer_value(json_object_get(j, "pid"));
            seen[n++].more = 0;
        }
        json_decref(j);
    }
    for (size_t m = 0; m < n; m++) {
        char more[64] = "";

        if (seen[m].more > 0)
            snprintf(more, sizeof more, ", and %zu more process%s", seen[m].more, seen[m].more == 1 ? "" : "es");
        ph_rundata_problem(rd, "%s, in %s (pid %lld%s): its samples have the runtime's native frames only",
                           seen[m].text, seen[m].program, seen[m].pid, more);
    }
}

/* The kinds the mode's profile promises that the run does not have. */
static void
check_expected(ph_rundata *rd, const ph_profile_set *profiles)
{
    ph_profile *p = profiles ? ph_profiles_find((ph_profile_set *)profiles, rd->mode) : NULL;
    const char *ended = rd->exit ? json_string_value(json_object_get(rd->exit, "signal")) : NULL;
    char why[256];

    if (json_object_get(rd->run, PH_MERGED_FROM) != NULL)
        return; /* a merged run holds what the merge wrote, not the mode's files */
    if (rd->exit == NULL)
        snprintf(why, sizeof why, "there is no ph-exit.json either: the profiled process did not stop through the "
                                  "init shim (a snapshot, or the container was killed)");
    else if (ended != NULL && strcmp(ended, "SIGKILL") == 0)
        snprintf(why, sizeof why, "the service was killed (SIGKILL), which leaves the profiler no time to write");
    else
        snprintf(why, sizeof why, "the profiler wrote nothing there");
    for (size_t i = 0; p != NULL && i < p->n_artifacts; i++) {
        const ph_artifact_spec *s = &p->artifacts[i];
        const char *k = known_kind(s->kind);
        int found = 0;

        if (k[0] == '\0' || strcmp(k, "pprof") == 0 || s->optional ||
            strncmp(s->glob, PH_REPORT_SVG_PREFIX, strlen(PH_REPORT_SVG_PREFIX)) == 0) /* the report draws it */
            continue;
        for (size_t j = 0; j < rd->n_arts && !found; j++)
            found = fnmatch(s->glob, rd->arts[j].name, 0) == 0;
        if (!found)
            ph_rundata_problem(rd, "no %s in the run: %s", s->glob, why);
        else if (strcmp(k, "heap") != 0) /* an empty heap view: nothing of that kind (in use at the end) */
            for (size_t j = 0; j < rd->n_arts; j++)
                if (fnmatch(s->glob, rd->arts[j].name, 0) == 0 && rd->arts[j].size == 0)
                    ph_rundata_problem(rd, "%s is empty: %s", rd->arts[j].name, why);
    }
}

static void
guess_names(ph_rundata *rd)
{
    const char *s = rd->run ? json_string_value(json_object_get(rd->run, "service")) : NULL;
    const char *m = rd->run ? json_string_value(json_object_get(rd->run, "mode")) : NULL;
    char parent[PATH_MAX], *slash;

    if (s == NULL) {
        snprintf(parent, sizeof parent, "%s", rd->dir);
        slash = strrchr(parent, '/');
        if (slash != NULL) {
            *slash = '\0';
            slash = strrchr(parent, '/');
            s = slash ? slash + 1 : parent;
        }
    }
    snprintf(rd->service, sizeof rd->service, "%s", s ? s : "");
    if (m != NULL) {
        snprintf(rd->mode, sizeof rd->mode, "%s", m);
    } else {
        /* <UTC>-<mode>[-snapshot-<UTC>][.N] */
        const char *d = strchr(rd->name, '-');
        size_t n;
        if (d != NULL) {
            d++;
            n = strcspn(d, "-.");
            snprintf(rd->mode, sizeof rd->mode, "%.*s", (int)n, d);
        }
    }
}

int
ph_rundata_load(const char *run_dir, const ph_profile_set *profiles, ph_rundata *rd, ph_error_t *err)
{
    DIR *d;
    struct dirent *de;
    const char *slash;
    size_t cap = 0;

    memset(rd, 0, sizeof *rd);
    snprintf(rd->dir, sizeof rd->dir, "%s", run_dir);
    while (strlen(rd->dir) > 1 && rd->dir[strlen(rd->dir) - 1] == '/')
        rd->dir[strlen(rd->dir) - 1] = '\0';
    slash = strrchr(rd->dir, '/');
    snprintf(rd->name, sizeof rd->name, "%s", slash ? slash + 1 : rd->dir);
    d = opendir(rd->dir);
    if (d == NULL)
        return ph_error_make(err, errno, errno == ENOENT || errno == ENOTDIR ? PH_EXIT_USAGE : PH_EXIT_FAILURE,
                             "open the run dir `%s`", run_dir);
    while ((de = readdir(d)) != NULL) {
        char path[PATH_MAX + 256];
        struct stat st;
        int skip = de->d_name[0] == '.';
        size_t nl = strlen(de->d_name);

        for (size_t i = 0; i < sizeof not_artifacts / sizeof not_artifacts[0] && !skip; i++)
            skip = strcmp(de->d_name, not_artifacts[i]) == 0;
        /* the report's own graphs (a container's file by that name is
         * kept under another by the run dir's store) */
        skip |= strncmp(de->d_name, PH_REPORT_SVG_PREFIX, strlen(PH_REPORT_SVG_PREFIX)) == 0;
        if (skip || (nl > 4 && strcmp(de->d_name + nl - 4, ".tmp") == 0))
            continue;
        snprintf(path, sizeof path, "%s/%s", rd->dir, de->d_name);
        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (rd->n_arts == PH_RD_MAX_ARTIFACTS)
            break;
        if (rd->n_arts == cap) {
            ph_artifact *na = realloc(rd->arts, (cap ? cap * 2 : 16) * sizeof *na);
            if (na == NULL)
                goto enomem;
            rd->arts = na;
            cap = cap ? cap * 2 : 16;
        }
        rd->arts[rd->n_arts] = (ph_artifact){ strdup(de->d_name), strdup(path), "", (unsigned long long)st.st_size };
        if (rd->arts[rd->n_arts].name == NULL || rd->arts[rd->n_arts].path == NULL) {
            rd->n_arts++;
            goto enomem;
        }
        rd->n_arts++;
    }
    closedir(d);
    d = NULL;
    if (rd->n_arts > 1) /* qsort takes no NULL, even for none */
        qsort(rd->arts, rd->n_arts, sizeof *rd->arts, cmp_art);

    rd->run = load_json(rd, PH_RUN_META_NAME, PH_RD_OWN_JSON_MAX);
    /* a run reported before it is renamed into place: its name to be */
    if (json_is_string(json_object_get(rd->run, "dir")) &&
        strchr(json_string_value(json_object_get(rd->run, "dir")), '/') == NULL)
        snprintf(rd->name, sizeof rd->name, "%s", json_string_value(json_object_get(rd->run, "dir")));
    rd->exit = load_json(rd, "ph-exit.json", PH_SMALL_JSON_MAX);
    rd->convert = load_json(rd, "convert.json", PH_SMALL_JSON_MAX);
    rd->attached_to = rd->run ? json_string_value(json_object_get(rd->run, "attached_to")) : NULL;
    guess_names(rd);

    /* kinds: the profile's globs first, then the usual names */
    {
        ph_profile *p = profiles ? ph_profiles_find((ph_profile_set *)profiles, rd->mode) : NULL;

        if (p != NULL && p->report != NULL)
            snprintf(rd->report, sizeof rd->report, "%s", p->report);
        for (size_t i = 0; i < rd->n_arts; i++) {
            ph_artifact *a = &rd->arts[i];
            for (size_t k = 0; p != NULL && k < p->n_artifacts && a->kind[0] == '\0'; k++)
                if (fnmatch(p->artifacts[k].glob, a->name, 0) == 0)
                    a->kind = known_kind(p->artifacts[k].kind);
            for (size_t k = 0; k < sizeof default_kinds / sizeof default_kinds[0] && a->kind[0] == '\0'; k++)
                if (fnmatch(default_kinds[k].glob, a->name, 0) == 0)
                    a->kind = known_kind(default_kinds[k].kind);
        }
    }
    check_expected(rd, profiles);
    read_massif(rd);
    read_callgrind(rd);
    read_strace(rd);
    read_flame(rd);
    runtime_problems(rd);
    ph_rundata_read_heap(rd);
    return 0;
enomem:
    if (d)
        closedir(d);
    ph_rundata_free(rd);
    return ph_fail(err, ENOMEM, "read the run dir `%s`", run_dir);
}

void
ph_rundata_free(ph_rundata *rd)
{
    for (size_t i = 0; i < rd->n_arts; i++) {
        free(rd->arts[i].name);
        free(rd->arts[i].path);
    }
    free(rd->arts);
    json_decref(rd->run);
    json_decref(rd->exit);
    json_decref(rd->convert);
    ph_massif_free(rd->massif);
    ph_callgrind_free(rd->cg);
    ph_strace_free(rd->st);
    ph_folded_free(rd->flame.folded);
    ph_folded_free(rd->flame.native);
    ph_heapdata_free(&rd->heap);
    for (size_t i = 0; i < rd->n_problems; i++)
        free(rd->problems[i]);
    memset(rd, 0, sizeof *rd);
}
