/* sampler_test_util.h - what the sampler tests share: running a workload
 * (tests/unit/helpers/sampler_work.c) with libphsampler preloaded, and
 * reading what it wrote (snapshots, pprof profiles, status files). */
#ifndef PH_SAMPLER_TEST_UTIL_H
#define PH_SAMPLER_TEST_UTIL_H

#include "test_util.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define WORK "build/tests/helpers/sampler_work"
#define LIB "build/libphsampler.so"
#define NOFP "build/tests/helpers/sampler_nofp"

static char outdir[300];

TU_UNUSED static int
setup(void **state)
{
    tu_setup(state);
    snprintf(outdir, sizeof outdir, "%s/out", test_dir);
    return 0;
}

typedef struct run_opts {
    const char *hz, *interval, *mode;
    const char *dir;        /* NULL: outdir; "": PH_SAMPLER_DIR unset */
    const char *out;        /* file for stdout+stderr, NULL: inherit */
    const char *prog;       /* NULL: WORK */
    const char *lib;        /* the sampler preloaded, NULL: LIB */
    const char *unwind;     /* PH_SAMPLER_UNWIND, NULL: unset */
    const char *debuginfo;  /* PH_SAMPLER_DEBUGINFO, NULL: unset */
    const char *strace;     /* run under strace -f, its log here (NULL: not) */
    const char *follow;     /* PH_SAMPLER_FOLLOW, NULL: unset */
    const char *clock;      /* PH_SAMPLER_CLOCK, NULL: unset */
} run_opts;

/* Start WORK ARGS with the sampler preloaded; returns the pid. */
TU_UNUSED static pid_t
start_opts(const run_opts *o, char *const args[])
{
    pid_t p = fork();

    assert_true(p >= 0);
    if (p == 0) {
        const char *prog = o->prog ? o->prog : WORK;
        char *argv[16] = { (char *)prog };
        int a = 1;

        if (o->strace) {
            /* strace itself must not load the sampler: -E gives the
             * preload to the traced program only. */
            char *pre[] = { "strace", "-f", "-qq", "-o", (char *)o->strace, "-e", "trace=ioctl,read,write",
                            "-E", "LD_PRELOAD=" LIB, (char *)prog };
            memcpy(argv, pre, sizeof pre);
            a = sizeof pre / sizeof *pre;
            prog = "/usr/bin/strace";
        } else {
            setenv("LD_PRELOAD", o->lib ? o->lib : LIB, 1);
        }
        for (int i = 0; args[i] && i < 6; i++)
            argv[a + i] = args[i];
        if (o->dir == NULL)
            setenv("PH_SAMPLER_DIR", outdir, 1);
        else if (*o->dir)
            setenv("PH_SAMPLER_DIR", o->dir, 1);
        else
            unsetenv("PH_SAMPLER_DIR");
        setenv("PH_SAMPLER_HZ", o->hz ? o->hz : "150", 1);
        setenv("PH_SAMPLER_INTERVAL", o->interval ? o->interval : "1", 1);
        if (o->mode)
            setenv("PH_SAMPLER_MODE", o->mode, 1);
        if (o->unwind)
            setenv("PH_SAMPLER_UNWIND", o->unwind, 1);
        if (o->debuginfo)
            setenv("PH_SAMPLER_DEBUGINFO", o->debuginfo, 1);
        if (o->follow)
            setenv("PH_SAMPLER_FOLLOW", o->follow, 1);
        if (o->clock)
            setenv("PH_SAMPLER_CLOCK", o->clock, 1);
        if (o->out) {
            int fd = open(o->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(prog, argv);
        _exit(99);
    }
    return p;
}

TU_UNUSED static pid_t
start(const char *hz, char *const args[])
{
    run_opts o = { .hz = hz };
    return start_opts(&o, args);
}

/* Wait for P at most 180 s: a bound for a hang, not a time the work
 * must take (niced next to a CPU hog, the fork workload took over 30 s). */
TU_UNUSED static int
finish(pid_t p)
{
    int st;

    for (int i = 0; i < 18000; i++) {
        pid_t r = waitpid(p, &st, WNOHANG);
        if (r == p)
            return st;
        usleep(10000);
    }
    kill(p, SIGKILL);
    waitpid(p, &st, 0);
    fail_msg("the workload did not end within 180 s");
    return -1;
}

TU_UNUSED static int
count_files(const char *prefix)
{
    DIR *d = opendir(outdir);
    struct dirent *de;
    int n = 0;

    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL)
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0 && strstr(de->d_name, ".tmp") == NULL;
    closedir(d);
    return n;
}

/* Poll until a snapshot exists (the sampler has been sampling for a
 * while); never a bare sleep.  The bound is a hang bound, not a pace:
 * 10 s was missed on a loaded 2-CPU machine, where the workload's first
 * CPU-second takes that long in wall time. */
TU_UNUSED static void
wait_for_snapshot(void)
{
    for (int i = 0; i < 12000 && count_files("stacks-") == 0; i++)
        usleep(10000);
    assert_true(count_files("stacks-") > 0);
}

/* The file PREFIX*-N with the largest N (or the Nth with WHICH > 0), read
 * whole into a static buffer; NULL if none. */
TU_UNUSED static const char *
read_snapshot(const char *prefix, int which)
{
    static char buf[4 << 20];
    char best[256] = "", path[600];
    DIR *d = opendir(outdir);
    struct dirent *de;
    FILE *f;
    size_t n;
    int nbest = -1;

    if (d == NULL)
        return NULL;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0 && strstr(de->d_name, ".tmp") == NULL) {
            int nb = atoi(strrchr(de->d_name, '-') + 1);
            if (which > 0 ? nb == which : nb > nbest) {
                nbest = nb;
                snprintf(best, sizeof best, "%s", de->d_name);
            }
        }
    }
    closedir(d);
    if (best[0] == '\0')
        return NULL;
    snprintf(path, sizeof path, "%s/%s", outdir, best);
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

TU_UNUSED static const char *
newest(const char *prefix)
{
    return read_snapshot(prefix, 0);
}

/* Sum of counts of the folded lines whose stack contains FRAME ("" for
 * all); the deepest line's frame count goes to *MAX_DEPTH. */
TU_UNUSED static double
samples_with(const char *folded, const char *frame, double *total, int *max_depth)
{
    double in = 0, all = 0;
    const char *p = folded;

    if (max_depth)
        *max_depth = 0;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char *line = strndup(p, n), *sp = strrchr(line, ' ');

        if (sp) {
            double c = atof(sp + 1);
            int depth = 1;

            *sp = '\0';
            for (char *q = line; *q; q++)
                depth += *q == ';';
            if (max_depth && depth > *max_depth)
                *max_depth = depth;
            all += c;
            if (strstr(line, frame))
                in += c;
        }
        free(line);
        p += n + (nl ? 1 : 0);
    }
    if (total)
        *total = all;
    return in;
}

/* The pprof profile PREFIX*-WHICH.pb.gz (WHICH 0: the largest number),
 * gunzipped, through FILTER (a shell pipeline tail, "" for none) into OUT
 * (CAP bytes); NULs become newlines, so the text can be searched.
 * Returns OUT. */
TU_UNUSED static char *
pprof_of(const char *prefix, int which, const char *filter, char *out, size_t cap)
{
    char cmd[1000], pick[40] = "tail -1", drop[4096];
    FILE *p;
    size_t n;

    if (which > 0)
        snprintf(pick, sizeof pick, "awk '$1 + 0 == %d'", which);
    snprintf(cmd, sizeof cmd,
             "f=$(ls %s/%s*.pb.gz | awk -F- '{print $NF, $0}' | sort -n | %s | cut -d' ' -f2); "
             "gunzip -c \"$f\" %s",
             outdir, prefix, pick, filter);
    p = popen(cmd, "r");
    assert_non_null(p);
    n = fread(out, 1, cap - 1, p);
    /* the rest read and dropped: a profile longer than CAP must not end
     * its writer on SIGPIPE (pclose 141: once, a JVM's heap profile) */
    while (fread(drop, 1, sizeof drop, p) > 0)
        ;
    assert_int_equal(pclose(p), 0);
    for (size_t i = 0; i < n; i++)
        out[i] = out[i] ? out[i] : '\n';
    out[n] = '\0';
    return out;
}

/* The newest pprof profile through protoc --decode_raw. */
TU_UNUSED static const char *
decoded_pprof(void)
{
    static char out[1 << 20];

    return pprof_of("profile-", 0, "| protoc --decode_raw 2>&1", out, sizeof out);
}

/* The newest pprof profile's bytes: its strings (the comments with rates
 * and counts) read as text.  protoc --decode_raw cannot be trusted with
 * them: a string that happens to parse as a message is printed as one
 * (any comment 103 bytes long that starts "re" does). */
TU_UNUSED static const char *
pprof_text(void)
{
    static char out[1 << 20];

    return pprof_of("profile-", 0, "", out, sizeof out);
}

/* What protoc --decode_raw printed of a pprof profile, read back: the
 * string table, functions (id, name, file) and locations (their lines,
 * innermost first). */
typedef struct pp_line {
    long fn, line;
} pp_line;
typedef struct ppdec {
    char *str[20000];
    size_t n_str;
    long fn_id[5000], fn_name[5000], fn_file[5000];
    size_t n_fn;
    pp_line loc[5000][8];
    int loc_n[5000];
    size_t n_loc;
} ppdec;

TU_UNUSED static void
pp_parse(ppdec *p, const char *text)
{
    enum { TOP, FN, LOC, LINE } at = TOP;
    const char *s = text;

    memset(p, 0, sizeof *p);
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        char l[512];
        long v;

        snprintf(l, sizeof l, "%.*s", (int)n, s);
        s += n + (nl != NULL);
        if (at == TOP && strncmp(l, "6: \"", 4) == 0 && p->n_str < 20000) {
            l[strlen(l) - 1] = '\0';
            p->str[p->n_str++] = strdup(l + 4);
        } else if (at == TOP && strcmp(l, "5 {") == 0 && p->n_fn < 5000) {
            at = FN;
        } else if (at == TOP && strcmp(l, "4 {") == 0 && p->n_loc < 5000) {
            at = LOC;
        } else if (at == FN && strcmp(l, "}") == 0) {
            p->n_fn++;
            at = TOP;
        } else if (at == FN && sscanf(l, "  1: %ld", &v) == 1) {
            p->fn_id[p->n_fn] = v;
        } else if (at == FN && sscanf(l, "  2: %ld", &v) == 1) {
            p->fn_name[p->n_fn] = v;
        } else if (at == FN && sscanf(l, "  4: %ld", &v) == 1) {
            p->fn_file[p->n_fn] = v;
        } else if (at == LOC && strcmp(l, "}") == 0) {
            p->n_loc++;
            at = TOP;
        } else if (at == LOC && strcmp(l, "  4 {") == 0) {
            at = LINE;
        } else if (at == LINE && strcmp(l, "  }") == 0) {
            if (p->loc_n[p->n_loc] < 7)
                p->loc_n[p->n_loc]++;
            at = LOC;
        } else if (at == LINE && sscanf(l, "    1: %ld", &v) == 1) {
            p->loc[p->n_loc][p->loc_n[p->n_loc]].fn = v;
        } else if (at == LINE && sscanf(l, "    2: %ld", &v) == 1) {
            p->loc[p->n_loc][p->loc_n[p->n_loc]].line = v;
        }
    }
}

TU_UNUSED static void
pp_free(ppdec *p)
{
    for (size_t i = 0; i < p->n_str; i++)
        free(p->str[i]);
}

/* The name of function FN, "" if there is none. */
TU_UNUSED static const char *
pp_fn_name(const ppdec *p, long fn, const char **file)
{
    for (size_t i = 0; i < p->n_fn; i++)
        if (p->fn_id[i] == fn && (size_t)p->fn_name[i] < p->n_str) {
            if (file)
                *file = (size_t)p->fn_file[i] < p->n_str ? p->str[p->fn_file[i]] : "";
            return p->str[p->fn_name[i]];
        }
    return "";
}

TU_UNUSED static const char *
read_text(const char *path)
{
    static char buf[65536];
    FILE *f = fopen(path, "r");
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The newest VIEW-*.folded of the heap mode, read whole (the caller
 * frees); NULL if none. */
TU_UNUSED static char *
heap_folded(const char *view)
{
    char cmd[800], path[700] = "";
    FILE *p;

    snprintf(cmd, sizeof cmd, "ls %s/%s-*.folded 2>/dev/null | sort | tail -1", outdir, view);
    p = popen(cmd, "r");
    assert_non_null(p);
    if (fgets(path, sizeof path, p) == NULL)
        path[0] = '\0';
    pclose(p);
    path[strcspn(path, "\n")] = '\0';
    return path[0] ? strdup(read_text(path)) : NULL;
}

/* The status file of the process whose program ends in SUFFIX (the
 * newest such), read into a static buffer; NULL if there is none. */
TU_UNUSED static const char *
status_of(const char *suffix)
{
    static char buf[8192];
    DIR *d = opendir(outdir);
    struct dirent *de;
    int found = 0;

    if (d == NULL)
        return NULL;
    while ((de = readdir(d)) != NULL) {
        char path[600], want[300];
        const char *text;

        if (strncmp(de->d_name, "sampler-status-", 15) != 0 || strstr(de->d_name, ".tmp"))
            continue;
        snprintf(path, sizeof path, "%s/%s", outdir, de->d_name);
        text = read_text(path);
        snprintf(want, sizeof want, "%s\", \"followed\"", suffix);
        if (strstr(text, want) && strlen(text) < sizeof buf) {
            snprintf(buf, sizeof buf, "%s", text);
            found = 1;
        }
    }
    closedir(d);
    return found ? buf : NULL;
}

/* The number after "KEY": in JSON, or -1. */
TU_UNUSED static double
json_num(const char *json, const char *key)
{
    char k[64];
    const char *p;

    snprintf(k, sizeof k, "\"%s\": ", key);
    p = json ? strstr(json, k) : NULL;
    return p ? atof(p + strlen(k)) : -1;
}

TU_UNUSED static int
json_has(const char *json, const char *key, const char *value)
{
    char kv[300];

    snprintf(kv, sizeof kv, "\"%s\": %s", key, value);
    return json != NULL && strstr(json, kv) != NULL;
}

TU_UNUSED static void
clear_outdir(void)
{
    char cmd[400];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", outdir);
    assert_int_equal(system(cmd), 0);
}

#endif
