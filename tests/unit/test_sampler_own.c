/* test_sampler_own.c - the profile never holds the sampler's own frames,
 * in any mode (flamegraph below and above the tick, wall, heap): a
 * service (tests/unit/helpers/sampler_stops.c) makes the sampler work on
 * its threads round after round (its stop handler waiting for the final
 * snapshot, flushes through the C API, every malloc and free through the
 * interposers, new threads' stacks noted, the service's own SIGTERM
 * handler run from ours), and then no view the sampler wrote (every
 * folded file, every SVG's frames, every pprof profile's functions)
 * names a function of the library: none of its own (its local symbols,
 * phs_*, ph_sampler*, the library's file name for an unnamed frame), and
 * no function whose source is the sampler's but the interposed call a
 * wall or heap sample stands for (`poll;[off-cpu]`, `malloc`); in the
 * CPU modes none at all.  Before the fix the wall mode's off-CPU view
 * held `on_stop_signal;request_and_wait;phs_nap (inlined);syscall` (the
 * handler's wait), the CPU mode the service's handler under
 * `on_stop_signal;chain`, and the heap views the service's thread
 * allocations under `thread_start;phs_note_stack`. */
#include "sampler_test_util.h"

#include <dlfcn.h>
#include <stdint.h>

#define STOPS "build/tests/helpers/sampler_stops"

/* The library's function names: its own (local symbols) and those it
 * exports (the API and the interposers), sorted; the names the workload
 * or libc define are not its own to tell by name. */
typedef struct names {
    char *v[4096];
    size_t n;
} names;

static names own, exported, theirs;

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
has(const names *s, const char *name)
{
    return bsearch(&name, s->v, s->n, sizeof *s->v, cmp_str) != NULL;
}

/* The text symbols `nm CMD` prints, local ones into LOCAL and global
 * ones into GLOBAL (either NULL: skipped); compiler suffixes (.cold,
 * .constprop.0) cut. */
static void
nm_names(const char *cmd, names *local, names *global)
{
    FILE *p = popen(cmd, "r");
    char line[1024], type, name[900];

    assert_non_null(p);
    while (fgets(line, sizeof line, p)) {
        names *to;

        if (sscanf(line, "%*s %c %899s", &type, name) != 2 || strchr("tTwWi", type) == NULL)
            continue;
        to = type == 't' ? local : global;
        name[strcspn(name, ".@")] = '\0';
        if (to != NULL && to->n < 4096 && name[0])
            to->v[to->n++] = strdup(name);
    }
    assert_int_equal(pclose(p), 0);
}

static void
load_names(void)
{
    char cmd[1200];
    Dl_info libc;

    if (own.n > 0)
        return;
    assert_true(dladdr((void *)printf, &libc) != 0 && libc.dli_fname != NULL);
    nm_names("nm --defined-only " LIB, &own, &exported);
    snprintf(cmd, sizeof cmd, "nm --defined-only %s; nm -D --defined-only '%s'", STOPS, libc.dli_fname);
    nm_names(cmd, &theirs, &theirs);
    qsort(theirs.v, theirs.n, sizeof *theirs.v, cmp_str);
    qsort(exported.v, exported.n, sizeof *exported.v, cmp_str);
    /* theirs out of our own */
    {
        size_t k = 0;

        for (size_t i = 0; i < own.n; i++)
            if (!has(&theirs, own.v[i]))
                own.v[k++] = own.v[i];
        own.n = k;
    }
    qsort(own.v, own.n, sizeof *own.v, cmp_str);
    assert_true(has(&own, "on_stop_signal") && has(&own, "request_and_wait") && has(&exported, "malloc"));
}

/* Why the frame NAME (as a view writes it) is the sampler's, or NULL. */
static const char *
own_frame(const char *name)
{
    char n[512];

    snprintf(n, sizeof n, "%s", name);
    if (strlen(n) > 10 && strcmp(n + strlen(n) - 10, " (inlined)") == 0)
        n[strlen(n) - 10] = '\0';
    if (strstr(n, "libphsampler"))
        return "an unnamed frame of the library";
    if (strncmp(n, "phs_", 4) == 0 || strncmp(n, "ph_sampler", 10) == 0)
        return "a sampler function";
    n[strcspn(n, ".")] = '\0';
    return has(&own, n) ? "a function of the library's own" : NULL;
}

/* Lines of the folded text T (a view: `a;b;c COUNT`) with a frame of the
 * sampler's, the first of them into BAD. */
static int
folded_own(const char *t, char *bad, size_t len)
{
    int found = 0;

    for (const char *p = t; *p;) {
        size_t n = strcspn(p, "\n");
        char line[8192], *sp, *save = NULL;

        snprintf(line, sizeof line, "%.*s", (int)n, p);
        p += n + (p[n] == '\n');
        if ((sp = strrchr(line, ' ')) == NULL)
            continue;
        *sp = '\0';
        for (char *f = strtok_r(line, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
            const char *why = own_frame(f);

            if (why != NULL) {
                if (found++ == 0)
                    snprintf(bad, len, "%s (%s) in `%.*s`", f, why, (int)n, p - n - 1);
                break;
            }
        }
    }
    return found;
}

/* Frames of the SVG text T (each `<title>NAME (N samples, P%)</title>`)
 * that are the sampler's, the first into BAD. */
static int
svg_own(const char *t, char *bad, size_t len)
{
    int found = 0;

    for (const char *p = strstr(t, "<title>"); p; p = strstr(p + 7, "<title>")) {
        const char *end = strstr(p, "</title>");
        char name[600], *paren;
        const char *why;

        if (end == NULL)
            break;
        snprintf(name, sizeof name, "%.*s", (int)(end - p - 7), p + 7);
        if ((paren = strrchr(name, '(')) != NULL && paren > name)
            paren[-1] = '\0';
        if ((why = own_frame(name)) != NULL && found++ == 0)
            snprintf(bad, len, "%s (%s)", name, why);
    }
    return found;
}

/* Functions of the pprof profile PATH that are the sampler's: by name,
 * or by a source file of the sampler's (allowed, where LEAVES, for the
 * interposed calls wall and heap samples end in); the first into BAD. */
static int
pprof_own(const char *path, int leaves, char *bad, size_t len)
{
    static ppdec d;
    static char text[4 << 20];
    char cmd[900];
    FILE *p;
    size_t n;
    int found = 0;

    snprintf(cmd, sizeof cmd, "gunzip -c '%s' | protoc --decode_raw", path);
    assert_non_null(p = popen(cmd, "r"));
    n = fread(text, 1, sizeof text - 1, p);
    assert_int_equal(pclose(p), 0);
    text[n] = '\0';
    pp_parse(&d, text);
    assert_true(d.n_fn > 0);
    for (size_t i = 0; i < d.n_fn; i++) {
        const char *file = "", *name = pp_fn_name(&d, d.fn_id[i], &file), *why = own_frame(name);

        if (why == NULL && strstr(file, "harness/sampler/") && !(leaves && has(&exported, name)))
            why = "a function of the sampler's source";
        if (why != NULL && found++ == 0)
            snprintf(bad, len, "%s (%s, %s)", name, file, why);
    }
    pp_free(&d);
    return found;
}

/* The whole file PATH (malloc'd). */
static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char chunk[65536];
    size_t n;

    assert_non_null(f);
    assert_non_null(m);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, m);
    fclose(f);
    fclose(m);
    return buf;
}

typedef struct mode {
    const char *name, *hz, *clock, *heap;
    int leaves;             /* its samples may end in an interposed call */
} mode;

/* Every view in outdir checked; how many files were. */
static int
check_views(const mode *m)
{
    DIR *dir = opendir(outdir);
    struct dirent *de;
    int files = 0, bad_n = 0;
    char bad[1200] = "", first[1400] = "";

    assert_non_null(dir);
    while ((de = readdir(dir)) != NULL) {
        const char *dot = strrchr(de->d_name, '.');
        char path[700];
        int k = 0;

        if (dot == NULL || strstr(de->d_name, ".tmp"))
            continue;
        snprintf(path, sizeof path, "%s/%s", outdir, de->d_name);
        if (strcmp(dot, ".folded") == 0 || strcmp(dot, ".svg") == 0) {
            char *t = slurp(path);

            k = dot[1] == 'f' ? folded_own(t, bad, sizeof bad) : svg_own(t, bad, sizeof bad);
            free(t);
        } else if (strcmp(dot, ".gz") == 0)
            k = pprof_own(path, m->leaves, bad, sizeof bad);
        else
            continue;
        files++;
        if (k > 0 && bad_n++ == 0)
            snprintf(first, sizeof first, "%s: %s", de->d_name, bad);
        if (k > 0)
            print_message("# %s: %d frames of the sampler's, first %s\n", de->d_name, k, bad);
    }
    closedir(dir);
    if (bad_n > 0)
        fail_msg("%s: %d of %d views hold the sampler's frames; %s", m->name, bad_n, files, first);
    return files;
}

static void
run_mode(const mode *m)
{
    char *args[] = { "30", NULL }, log[400];
    run_opts o = { .hz = m->hz, .interval = "0", .clock = m->clock, .prog = STOPS, .out = log };
    int st;
    pid_t p;

    load_names();
    clear_outdir();
    snprintf(log, sizeof log, "%s/%s.log", test_dir, m->name);
    if (m->heap)
        setenv("PH_SAMPLER_HEAP", m->heap, 1);
    p = start_opts(&o, args);
    unsetenv("PH_SAMPLER_HEAP");
    st = finish(p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("%s: the service ended with status %#x: %s", m->name, st, read_text(log));
    assert_non_null(strstr(read_text(log), "rounds=30 terms=30 flush=api"));
    assert_true(check_views(m) >= 3);
}

static void
test_flamegraph_holds_no_sampler_frame(void **state)
{
    static const mode m = { "flamegraph", "250", NULL, NULL, 0 };

    (void)state;
    run_mode(&m);
}

static void
test_flamegraph_above_the_tick_holds_no_sampler_frame(void **state)
{
    static const mode m = { "flamegraph at 1000 Hz", "1000", NULL, NULL, 0 };

    (void)state;
    run_mode(&m);
}

static void
test_wall_holds_no_sampler_frame(void **state)
{
    static const mode m = { "wall", "1000", "wall", NULL, 1 };

    (void)state;
    run_mode(&m);
}

static void
test_heap_holds_no_sampler_frame(void **state)
{
    static const mode m = { "heap", "150", NULL, "64", 1 };

    (void)state;
    run_mode(&m);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_flamegraph_holds_no_sampler_frame, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_flamegraph_above_the_tick_holds_no_sampler_frame, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_wall_holds_no_sampler_frame, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_heap_holds_no_sampler_frame, setup, tu_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
