/* ph_run_runtimes.c - what a mode asks of the runtimes in a service, from
 * its profile's `runtimes:` (ph_profile_runtimes.c), done by the loop:
 *
 *   start    each `runtimes.environment` variable extended in the
 *            container's environment: the service's own value (compose's
 *            environment, else its image's ENV) first, then the mode's
 *            words, so `node --perf-basic-prof` and HotSpot's perf map
 *            flags are on with no change from the user, and what the
 *            user set stays as set.
 *   refresh  before a stop and before a snapshot: each step's command
 *            run in the service's container or the profiler's (the
 *            backend's exec, bounded by its wait, the sampler kept out of it).  A
 *            step that fails is a note and the stop goes on; one whose
 *            program the image does not have (exit 126/127: no shell in
 *            a distroless image) is skipped without a word: a runtime
 *            that is not there is not a fault of the run.
 *   after_exit  once the profiled container has exited, before the
 *            conversion and the collection: what the runtimes wrote as
 *            they exited (HotSpot's perf map under DumpPerfMapAtExit,
 *            after the last refresh) read from the stopped container's
 *            `from` through the archive endpoint, bounded, only the
 *            entries the rule takes extracted into a temp dir on the
 *            host, and put back into the container's {out}/<into>, where
 *            the conversion and the collection find the run's files.  Not
 *            for an attached run: its service runs on, its files are its
 *            own.  A fault is a note; the stop goes on.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_fs.h"
#include "ph_log.h"
#include "ph_tar.h"

/* The value of KEY in ENV (a workload's `K=V` strings; the last wins, as
 * in the process's environment the orchestrator makes), or NULL.  *AT:
 * its index, -1 if none. */
static const char *
env_get(const ph_strv *env, const char *key, ssize_t *at)
{
    size_t kl = strlen(key);
    const char *v = NULL;

    if (at)
        *at = -1;
    for (size_t i = 0; env != NULL && i < env->n; i++) {
        const char *s = env->v[i];

        if (strncmp(s, key, kl) == 0 && s[kl] == '=') {
            v = s + kl + 1;
            if (at)
                *at = (ssize_t)i;
        }
    }
    return v;
}

int
ph_run_env_extend(ph_strv *env, const ph_strv *image_env, const ph_kvv *extend, ph_error_t *err)
{
    for (size_t i = 0; i < extend->n; i++) {
        const char *key = extend->v[i].key, *user;
        char *merged = NULL, *line = NULL;
        ssize_t at;

        user = env_get(env, key, &at);
        if (user == NULL)
            user = env_get(image_env, key, NULL);
        if ((merged = ph_profile_env_extend(user, extend->v[i].value)) == NULL ||
            asprintf(&line, "%s=%s", key, merged) < 0) {
            free(merged);
            return ph_fail(err, ENOMEM, "allocate");
        }
        free(merged);
        if (at >= 0) {
            free(env->v[at]);
            env->v[at] = line;
        } else {
            int rc = ph_strv_push(env, line);

            free(line);
            if (rc < 0)
                return ph_fail(err, ENOMEM, "allocate");
        }
    }
    return 0;
}

/* One step in container ID; 0, or -1 with *err (its exit status and
 * what it said in it when it ran and failed). */
static int
run_step(ph_run *r, ph_backend *b, const char *id, const ph_profile *p, const ph_profile_refresh *st,
         const char *service, const char *run_id, ph_error_t *err)
{
    static const char *const no_preload[] = { "LD_PRELOAD=", NULL };
    char out[PATH_MAX];
    const char **argv = calloc(st->exec.n + 1, sizeof *argv);
    long code = -1, wait_s = st->wait_ns > 0 ? (long)((st->wait_ns + 999999999LL) / 1000000000LL) : 30;
    ph_run_output said = { .len = 0 };
    int rc = -1;

    if (argv == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, service);
    for (size_t i = 0; i < st->exec.n; i++)
        if ((argv[i] = ph_profile_expand(st->exec.v[i], out, service, p->name, run_id)) == NULL) {
            ph_fail(err, ENOMEM, "allocate");
            goto out;
        }
    if ((b == NULL && ph_run_backend(r, &b, err) < 0) ||
        b->ops->exec(b, id, argv, no_preload, wait_s, ph_run_output_cb, &said, &code, err) < 0)
        goto out;
    if (code == 126 || code == 127) {
        /* no such program in the image (no shell: distroless): nothing
         * of the runtime to ask, not a fault to tell of at every stop */
        ph_debug("%s: `%s` is not in the container: step skipped", service, argv[0]);
    } else if (code != 0) {
        /* its lines on one line (escaped where it is printed) */
        while (said.len > 0 && (said.buf[said.len - 1] == '\n' || said.buf[said.len - 1] == ' '))
            said.buf[--said.len] = '\0';
        for (size_t i = 0; i < said.len; i++)
            if (said.buf[i] == '\n')
                said.buf[i] = ';';
        ph_fail(err, 0, "`%s` exited with %ld%s%.600s", argv[0], code, said.len ? ": " : "", said.buf);
        goto out;
    }
    rc = 0;
out:
    for (size_t i = 0; i < st->exec.n; i++)
        free((char *)argv[i]);
    free(argv);
    return rc;
}

void
ph_run_refresh(ph_run *r, const ph_workload *c, const ph_profile *p)
{
    ph_run_refresh_on(r, NULL, c, p);
}

/* C's step ST through B (NULL: R's): 0, or -1 and *WHY.  A container
 * that has ended has no runtime to ask: 0.  P: the profile the run was
 * started with. */
static int
refresh_step(ph_run *r, ph_backend *b, const ph_workload *c, const ph_profile *p, const ph_profile_refresh *st,
             ph_error_t *why)
{
    if (c->service == NULL || c->id == NULL || !ph_workload_running(c))
        return 0;
    return run_step(r, b, st->in_service && c->attached ? c->attached : c->id, p, st, c->service,
                    c->run ? c->run : "", why);
}

/* C's steps; how many did not succeed, the first one in *WHAT and *WHY
 * (the caller's to free). */
static size_t
refresh_steps(ph_run *r, ph_backend *b, const ph_workload *c, const ph_profile *p, const ph_profile_refresh **what,
              ph_error_t *why)
{
    size_t failed = 0;

    for (size_t i = 0; p != NULL && i < p->n_refresh; i++) {
        ph_error_t err = NULL;

        if (refresh_step(r, b, c, p, &p->refresh[i], &err) < 0 && failed++ == 0) {
            *what = &p->refresh[i];
            *why = err;
            err = NULL;
        }
        ph_error_free(&err);
    }
    return failed;
}

static void
refresh_said(const ph_workload *c, const ph_profile *p, const ph_profile_refresh *st, ph_error_t why,
             const char *of)
{
    char esc[2200];

    ph_info("%s: %s's refresh `%s` in the %s's container did not succeed%s (%s): runtime frames may stay unnamed",
            c->service, p->name, st->exec.v[0], st->in_service ? "service" : "profiler", of,
            ph_escape(esc, sizeof esc, why ? why->msg : "?"));
}

void
ph_run_refresh_on(ph_run *r, ph_backend *b, const ph_workload *c, const ph_profile *p)
{
    /* each step that does not succeed said as it ends */
    for (size_t i = 0; p != NULL && i < p->n_refresh; i++) {
        ph_error_t why = NULL;

        if (refresh_step(r, b, c, p, &p->refresh[i], &why) < 0)
            refresh_said(c, p, &p->refresh[i], why, "");
        ph_error_free(&why);
    }
}

typedef struct refresh_jobs {
    const ph_workload *const *cs;
    const ph_profile *const *ps;
    const ph_profile_refresh **what;
    ph_error_t *why;
} refresh_jobs;

static int
refresh_job(ph_run *r, size_t i, void *ud, ph_error_t *err)
{
    refresh_jobs *j = ud;

    (void)err; /* never fails: what it found is in WHY */
    refresh_steps(r, NULL, j->cs[i], j->ps[i], &j->what[i], &j->why[i]);
    return 0;
}

void
ph_run_refresh_many(ph_run *r, const ph_workload *const *cs, const ph_profile *const *ps, size_t n)
{
    refresh_jobs j = { cs, ps, calloc(n + 1, sizeof *j.what), calloc(n + 1, sizeof *j.why) };
    ph_error_t *errs = calloc(n + 1, sizeof *errs);
    size_t failed = 0, first = n;
    char of[64];

    if (j.what == NULL || j.why == NULL || errs == NULL) { /* no memory for threads: one after the other */
        for (size_t i = 0; i < n; i++)
            ph_run_refresh(r, cs[i], ps[i]);
        goto out;
    }
    ph_run_parallel(r, n, n, refresh_job, NULL, &j, errs);
    for (size_t i = 0; i < n; i++)
        if (j.why[i] != NULL && failed++ == 0)
            first = i;
    if (failed > 0) {
        snprintf(of, sizeof of, " in %zu of %zu replicas", failed, n);
        refresh_said(cs[first], ps[first], j.what[first], j.why[first], n > 1 ? of : "");
    }
out:
    for (size_t i = 0; j.why != NULL && i < n; i++)
        ph_error_free(&j.why[i]);
    for (size_t i = 0; errs != NULL && i < n; i++)
        ph_error_free(&errs[i]);
    free(j.what);
    free(j.why);
    free(errs);
}

/* ---- after_exit -------------------------------------------------------- */

/* What one rule took, or left as over its max_bytes (names for the note,
 * bounded). */
typedef struct exit_pick {
    const ph_profile_exit_files *x;
    size_t n_taken, n_over;
    uint64_t taken_bytes;
    char taken[512], over[512];
} exit_pick;

static void
pick_add(char *list, size_t len, const char *name)
{
    size_t at = strlen(list);

    if (at + 2 < len)
        snprintf(list + at, len - at, "%s%s", at ? ", " : "", name);
}

/* On the extraction's thread: the rule decides (ph_profile_exit_file). */
static int
pick_cb(void *ud, const char *rel, unsigned type, uint64_t size)
{
    exit_pick *k = ud;

    switch (ph_profile_exit_file(k->x, rel, type, size)) {
    case PH_EXIT_FILE_TAKE:
        k->n_taken++;
        k->taken_bytes += size;
        pick_add(k->taken, sizeof k->taken, rel);
        return 1;
    case PH_EXIT_FILE_OVER:
        k->n_over++;
        pick_add(k->over, sizeof k->over, rel);
        return 0;
    }
    return 0;
}

static int
exit_feed_cb(void *ud, const char *data, size_t len)
{
    void **a = ud;

    return ph_tar_extract_feed(a[0], data, len, a[1]);
}

static ssize_t
exit_read_cb(void *ud, char *buf, size_t len)
{
    FILE *f = ud;
    size_t n = fread(buf, 1, len, f);

    return n == 0 && ferror(f) ? -1 : (ssize_t)n;
}

/* Rule X on stopped container C: its files out of `from`, through WFD
 * (a fresh temp dir of ours, mode 0700, named WORK below the service's
 * dir), into C's {out}/<into>. */
static int
exit_files(ph_run *r, ph_backend *b, const ph_workload *c, const ph_profile_exit_files *x, int wfd, exit_pick *k,
           ph_error_t *err)
{
    ph_tar_limits lim = { .max_bytes = PH_EXIT_FILES_READ_MAX, .min_free_bytes = r->opts.collect.min_free_bytes };
    char self[64], out[PATH_MAX];
    ph_tar_extract *tx = NULL;
    void *tar = NULL;
    size_t tar_len = 0;
    FILE *in = NULL;
    int fd = -1, there = 0, rc = -1;

    if (b->ops->archive_stat(b, c->id, x->from, &there, err) < 0)
        return -1;
    if (!there)
        return 0;
    if (mkdirat(wfd, x->into, 0755) < 0 || (fd = openat(wfd, x->into, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                                          O_CLOEXEC)) < 0)
        return ph_fail(err, errno, "create `%s` in a temp dir", x->into);
    /* `from` comes as its own name and what is in it: strip that name */
    if ((tx = ph_tar_extract_new_select_at(fd, 1, &lim, pick_cb, k, err)) == NULL)
        goto out;
    {
        void *a[2] = { tx, err };

        if (b->ops->archive_get(b, c->id, x->from, exit_feed_cb, a, err) < 0 ||
            ph_tar_extract_finish(tx, NULL, err) < 0) {
            ph_error_wrap(err, "read `%s` of the stopped container (at most %" PRIu64 " MiB of it)", x->from,
                          (uint64_t)(PH_EXIT_FILES_READ_MAX >> 20));
            goto out;
        }
    }
    if (k->n_taken == 0) {
        rc = 0;
        goto out;
    }
    /* the temp dir as a tar, <into>/ and its files, into {out}; read
     * through its fd (the service's dir is the invoker's to rename in) */
    snprintf(self, sizeof self, "/proc/self/fd/%d", wfd);
    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, c->service);
    if (ph_tar_context_build(self, NULL, 0, PH_EXIT_FILES_READ_MAX + (1u << 20), &tar, &tar_len, err) < 0)
        goto out;
    if ((in = fmemopen(tar, tar_len, "r")) == NULL) {
        ph_fail(err, errno, "allocate");
        goto out;
    }
    if (b->ops->archive_put(b, c->id, out, exit_read_cb, in, (long long)tar_len, err) < 0) {
        ph_error_wrap(err, "put them into `%s/%s` of the stopped container", out, x->into);
        goto out;
    }
    rc = 0;
out:
    if (in != NULL)
        fclose(in);
    ph_tar_extract_free(tx);
    free(tar);
    if (fd >= 0)
        close(fd);
    return rc;
}

void
ph_run_after_exit(ph_run *r, const ph_workload *c, const ph_profile *p, int svcfd)
{
    const char *service = c->service;
    ph_backend *b = NULL;
    ph_error_t err = NULL;

    /* an attached run's service runs on: its files are not the run's */
    if (p == NULL || p->n_after_exit == 0 || c->attached != NULL || service == NULL || c->id == NULL)
        return;
    if (ph_run_backend(r, &b, &err) < 0) {
        ph_error_free(&err);
        return;
    }
    for (size_t i = 0; i < p->n_after_exit; i++) {
        const ph_profile_exit_files *x = &p->after_exit[i];
        exit_pick k = { .x = x };
        char work[NAME_MAX + 1] = "", esc[1200], esc2[600];
        ph_stage *st = ph_stage_beginf("host", 0, "take what the runtimes wrote as they exited (%s)", x->from);
        int wfd = -1, rc;

        /* under the stop's lock: one a dead harness left is removed with the other temps */
        rc = ph_fs_mkdtemp_at(svcfd, PH_RUNDIR_TEMP_PREFIX "exit-", 0700, work, sizeof work, &err);
        if (rc == 0 && (wfd = openat(svcfd, work, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            rc = ph_fail(&err, errno, "open the temp dir `%s`", work);
        if (rc == 0)
            rc = exit_files(r, b, c, x, wfd, &k, &err);
        if (wfd >= 0)
            close(wfd);
        if (work[0] != '\0')
            ph_fs_remove_tree_at(svcfd, work, NULL);
        ph_stage_bytes(st, 0, k.taken_bytes);
        ph_run_stage_done(st, rc, &err);
        if (k.n_over > 0)
            ph_warn("%s: `%s` in `%s` of the container %s over %s's `runtimes.after_exit` max_bytes (%" PRIu64
                    " bytes): left out of the run; JIT frames it would name stay unnamed", service,
                    ph_escape(esc2, sizeof esc2, k.over), x->from, k.n_over == 1 ? "is" : "are", p->name,
                    x->max_bytes);
        if (rc < 0) {
            ph_info("%s: `%s` that the runtimes wrote as they exited not taken into the run (%s): JIT frames may "
                    "stay unnamed", service, x->files, ph_escape(esc, sizeof esc, err ? err->msg : "?"));
            ph_error_free(&err);
        } else if (k.n_taken > 0) {
            ph_info("%s: %s, written as the runtimes exited, taken from `%s` into %s/ (%" PRIu64 " bytes)", service,
                    ph_escape(esc, sizeof esc, k.taken), x->from, x->into, k.taken_bytes);
        }
    }
}
