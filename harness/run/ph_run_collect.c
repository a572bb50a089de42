/* ph_run_collect.c - stop and collect.
 *
 *   stop     flock(<out>/<service>/.lock) -> SIGTERM to the shim (which
 *            signals the profiled process and escalates only after the
 *            profile's grace) -> Engine wait -> stream the artifacts out
 *            through libarchive into a temp dir -> rename into place ->
 *            links -> only then remove the container.
 *
 * The lock makes a second `stop` of the same service wait for the first and
 * then find nothing to stop.  On any failure the container is kept and the
 * error's hint says how to recover.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <sys/file.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_util.h"
#include "ph_tar.h"

/* ---- collection ------------------------------------------------------- */

typedef struct stage {
    const char *name;
    double seconds;
} stage;

typedef struct collect_result {
    char run_dir[PATH_MAX];
    ph_tar_stats stats;
    json_t *record;      /* the shim's completion record, or NULL */
} collect_result;

static int
remove_entry_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    remove(path);
    return 0;
}

static void
remove_tree(const char *dir)
{
    nftw(dir, remove_entry_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static int
extract_cb(void *ud, const char *data, size_t len)
{
    void **a = ud;
    ph_tar_extract *x = a[0];
    ph_error_t *err = a[1];

    return ph_tar_extract_feed(x, data, len, err);
}

/* Replace LINK with a symlink to TARGET, atomically. */
static int
link_replace(const char *target, const char *link, ph_error_t *err)
{
    char tmp[PATH_MAX];

    snprintf(tmp, sizeof tmp, "%s.tmp-%d", link, (int)getpid());
    unlink(tmp);
    if (symlink(target, tmp) < 0)
        return ph_fail(err, errno, "symlink `%s`", tmp);
    ph_run_give(tmp);
    if (rename(tmp, link) < 0) {
        int e = errno;
        unlink(tmp);
        return ph_fail(err, e, "rename `%s` to `%s`", tmp, link);
    }
    return 0;
}

/* The newest file in DIR matching GLOB, by mtime then name. */
static int
newest_match(const char *dir, const char *glob, char *out, size_t len)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    struct stat st;
    time_t best = 0;
    char p[PATH_MAX];
    int found = 0;

    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        if (fnmatch(glob, de->d_name, 0) != 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (!found || st.st_mtime > best || (st.st_mtime == best && strcmp(de->d_name, out) > 0)) {
            snprintf(out, len, "%s", de->d_name);
            best = st.st_mtime;
            found = 1;
        }
    }
    closedir(d);
    return found;
}

static int
update_links(ph_run *r, const char *svc_dir, const char *run_name, const char *mode, ph_error_t *err)
{
    char link[PATH_MAX], target[PATH_MAX], run_dir[PATH_MAX], file[NAME_MAX + 1];
    ph_profile *p = ph_profiles_find(&r->profiles, mode);

    snprintf(link, sizeof link, "%s/latest", svc_dir);
    if (link_replace(run_name, link, err) < 0)
        return -1;
    if (p == NULL)
        return 0;
    snprintf(run_dir, sizeof run_dir, "%s/%s", svc_dir, run_name);
    for (size_t i = 0; i < p->n_artifacts; i++) {
        const ph_artifact_spec *a = &p->artifacts[i];

        if (a->latest == NULL || !newest_match(run_dir, a->glob, file, sizeof file))
            continue;
        snprintf(link, sizeof link, "%s/%s", svc_dir, a->latest);
        snprintf(target, sizeof target, "%s/%s", run_name, file);
        if (link_replace(target, link, err) < 0)
            return -1;
    }
    return 0;
}

static int
write_json_file(const char *path, json_t *j, ph_error_t *err)
{
    char tmp[PATH_MAX];

    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (json_dump_file(j, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) < 0)
        return ph_fail(err, errno, "write `%s`", tmp);
    if (rename(tmp, path) < 0)
        return ph_fail(err, errno, "rename `%s`", tmp);
    ph_run_give(path);
    return 0;
}

/* Stream /opt/profiling/<service> out of container C into a new run dir.
 * SNAPSHOT: a copy while it runs (a distinct name, links untouched). */
static int
collect_into_run_dir(ph_run *r, json_t *c, int snapshot, stage *stages, size_t *n_stages,
                     collect_result *res, ph_error_t *err)
{
    const char *id = json_string_value(json_object_get(c, "Id"));
    const char *service = ph_run_label(c, PH_LABEL_SERVICE);
    const char *mode = ph_run_label(c, PH_LABEL_MODE);
    const char *run = ph_run_label(c, PH_LABEL_RUN);
    char svc_dir[PATH_MAX], tmp[PATH_MAX], src[PATH_MAX], run_name[NAME_MAX], stamp[17], rec[PATH_MAX];
    ph_tar_extract *x = NULL;
    void *args[2];
    double t0;
    ph_engine *e;
    struct stat st;

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    if (service == NULL || run == NULL || mode == NULL)
        return ph_fail(err, 0, "container %.12s has no profharness labels", id);
    snprintf(svc_dir, sizeof svc_dir, "%s/%s", r->opts.out_dir, service);
    if (ph_run_mkdir_p(svc_dir, err) < 0)
        return -1;
    ph_run_give(r->opts.out_dir);
    ph_run_give(svc_dir);
    ph_run_utc_stamp(stamp);
    if (snapshot)
        snprintf(run_name, sizeof run_name, "%s-snapshot-%s", run, stamp);
    else
        snprintf(run_name, sizeof run_name, "%s", run);
    snprintf(tmp, sizeof tmp, "%s/.incoming-%s-%d", svc_dir, run_name, (int)getpid());
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
        return ph_fail(err, errno, "mkdir `%s`", tmp);

    t0 = ph_run_now();
    x = ph_tar_extract_new(tmp, 1, err);
    if (x == NULL)
        goto fail;
    args[0] = x;
    args[1] = err;
    snprintf(src, sizeof src, "%s/%s", PH_CONTAINER_OUT, service);
    if (ph_engine_archive_get(e, id, src, extract_cb, args, err) < 0)
        goto fail;
    if (ph_tar_extract_finish(x, &res->stats, err) < 0)
        goto fail;
    ph_tar_extract_free(x);
    x = NULL;
    stages[(*n_stages)++] = (stage){ "stream and extract artifacts", ph_run_now() - t0 };

    t0 = ph_run_now();
    snprintf(rec, sizeof rec, "%s/%s", tmp, PH_RECORD_NAME);
    res->record = json_load_file(rec, 0, NULL);
    snprintf(res->run_dir, sizeof res->run_dir, "%s/%s", svc_dir, run_name);
    for (int k = 2; lstat(res->run_dir, &st) == 0 && k < 1000; k++)
        snprintf(res->run_dir, sizeof res->run_dir, "%s/%s.%d", svc_dir, run_name, k);
    ph_run_give_tree(tmp);
    if (rename(tmp, res->run_dir) < 0) {
        ph_fail(err, errno, "rename `%s` to `%s`", tmp, res->run_dir);
        goto fail;
    }
    if (!snapshot && update_links(r, svc_dir, strrchr(res->run_dir, '/') + 1, mode, err) < 0)
        return -1; /* the artifacts are in place; only the links failed */
    stages[(*n_stages)++] = (stage){ "rename into place and link", ph_run_now() - t0 };
    return 0;
fail:
    ph_tar_extract_free(x);
    /* Keep nothing half-written: the container still has everything. */
    remove_tree(tmp);
    return ph_error_wrap(err, "collect the artifacts of `%s`", service);
}

static void
print_stages(const char *service, const stage *st, size_t n)
{
    double total = 0;

    flockfile(stderr); /* one table, whole, when services stop at once */
    for (size_t i = 0; i < n; i++)
        total += st[i].seconds;
    fprintf(stderr, "%s: stage timings\n", service);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "  %9.3f s  %5.1f%%  %s\n", st[i].seconds,
                total > 0 ? 100.0 * st[i].seconds / total : 0.0, st[i].name);
    fprintf(stderr, "  %9.3f s  total\n", total);
    funlockfile(stderr);
}

static void
describe_record(const char *service, json_t *rec)
{
    json_t *esc;
    const char *sig;

    if (rec == NULL) {
        ph_warn("%s: no completion record (%s): the profiled process did not stop through the shim; "
                "output may be incomplete", service, PH_RECORD_NAME);
        return;
    }
    sig = json_string_value(json_object_get(rec, "signal"));
    esc = json_object_get(rec, "escalations");
    if (sig != NULL)
        ph_info("%s: service ended by %s (exit %lld)", service, sig,
                (long long)json_integer_value(json_object_get(rec, "exit_code")));
    else
        ph_info("%s: service exited with status %lld", service,
                (long long)json_integer_value(json_object_get(rec, "exit_code")));
    if (json_array_size(esc) > 0)
        ph_warn("%s: the service did not stop on its stop signal; escalated (%zu step%s, see %s)",
                service, json_array_size(esc), json_array_size(esc) == 1 ? "" : "s", PH_RECORD_NAME);
}

static int
write_run_meta(json_t *c, const collect_result *res, const stage *st, size_t n, ph_error_t *err)
{
    json_t *meta, *stages = json_array();
    char path[PATH_MAX], ended[32];

    ph_run_utc_iso(ended, sizeof ended);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(stages, json_pack("{s:s, s:f}", "name", st[i].name, "seconds", st[i].seconds));
    meta = json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:s, s:I, s:I, s:I, s:o, s:O?}",
                     "service", ph_run_label(c, PH_LABEL_SERVICE),
                     "mode", ph_run_label(c, PH_LABEL_MODE),
                     "run", ph_run_label(c, PH_LABEL_RUN),
                     "started_at", ph_run_label(c, PH_LABEL_STARTED),
                     "container", json_string_value(json_object_get(c, "Id")),
                     "collected_at", ended,
                     "files", (json_int_t)res->stats.files,
                     "bytes", (json_int_t)res->stats.bytes,
                     "refused_entries", (json_int_t)res->stats.refused,
                     "stages", stages,
                     "completion", res->record);
    if (meta == NULL)
        return ph_fail(err, ENOMEM, "build %s", PH_RUN_META_NAME);
    snprintf(path, sizeof path, "%s/%s", res->run_dir, PH_RUN_META_NAME);
    {
        int rc = write_json_file(path, meta, err);
        json_decref(meta);
        return rc;
    }
}

/* ---- stop ------------------------------------------------------------- */

static long
stop_budget_s(ph_run *r, json_t *c)
{
    ph_profile *p = ph_profiles_find(&r->profiles, ph_run_label(c, PH_LABEL_MODE));
    long long ns;

    if (p == NULL)
        return 600;
    ns = p->stop_grace_ns + (long long)p->escalate.n * p->escalate_grace_ns;
    return (long)(ns / 1000000000LL) + 30;
}

static int
lock_service(ph_run *r, const char *service, int *fd_out, ph_error_t *err)
{
    char dir[PATH_MAX], path[PATH_MAX];
    int fd;

    snprintf(dir, sizeof dir, "%s/%s", r->opts.out_dir, service);
    if (ph_run_mkdir_p(dir, err) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/.lock", dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return ph_fail(err, errno, "open `%s`", path);
    ph_run_give(path);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK) {
            close(fd);
            return ph_fail(err, errno, "lock `%s`", path);
        }
        ph_info("%s: another profharness is stopping this service; waiting for it", service);
        if (flock(fd, LOCK_EX) < 0) {
            close(fd);
            return ph_fail(err, errno, "lock `%s`", path);
        }
    }
    *fd_out = fd;
    return 0;
}

/* Gracefully stop one profiled container and collect it.  On any failure
 * the container is kept and the hint says how to recover. */
int
ph_run_stop_one(ph_run *r, json_t *listed, ph_error_t *err)
{
    const char *service = ph_run_label(listed, PH_LABEL_SERVICE);
    const char *id = json_string_value(json_object_get(listed, "Id"));
    ph_cleanup_close int lock = -1;
    json_t *fresh = NULL, *c;
    stage stages[8];
    size_t n_stages = 0;
    collect_result res = { 0 };
    ph_engine *e;
    int found = 0, timed_out = 0, rc = -1;
    long code = 0, budget;
    double t0;

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    if (lock_service(r, service, &lock, err) < 0)
        return -1;
    /* Whoever held the lock may have collected it already. */
    if (ph_engine_container_inspect(e, id, &fresh, &found, err) < 0)
        return -1;
    if (!found) {
        ph_info("%s: nothing to stop (already collected)", service);
        return 0;
    }
    json_decref(fresh);
    c = listed;

    budget = stop_budget_s(r, c);
    t0 = ph_run_now();
    if (ph_run_is_running(c)) {
        ph_info("%s: stopping %s profiler (waiting up to %ld s for it to flush)", service,
                ph_run_label(c, PH_LABEL_MODE), budget);
        if (ph_engine_container_kill(e, id, "SIGTERM", err) < 0) {
            /* It may have exited between the listing and now. */
            ph_debug("kill: %s", (*err)->msg);
            ph_error_free(err);
        }
    }
    if (ph_engine_container_wait(e, id, budget, &code, &timed_out, err) < 0)
        goto keep;
    if (timed_out) {
        ph_fail(err, 0, "%s: the profiled container did not exit within %ld s", service, budget);
        goto keep;
    }
    stages[n_stages++] = (stage){ "signal until the profiler exited", ph_run_now() - t0 };
    ph_run_convert(r, c); /* perf: folded stacks, flamegraph, pprof beside perf.data */

    if (collect_into_run_dir(r, c, 0, stages, &n_stages, &res, err) < 0)
        goto keep;
    describe_record(service, res.record);
    ph_run_attach_describe(r, c, res.record);

    t0 = ph_run_now();
    if (ph_engine_container_remove(e, id, 0, err) < 0) {
        ph_error_wrap(err, "artifacts are safe in %s, but removing container %.12s failed", res.run_dir, id);
        ph_error_hint(err, "remove it by hand: docker rm %.12s", id);
        goto out;
    }
    stages[n_stages++] = (stage){ "remove the container", ph_run_now() - t0 };
    if (write_run_meta(c, &res, stages, n_stages, err) < 0)
        goto out;
    print_stages(service, stages, n_stages);
    printf("%s\t%s\n", service, res.run_dir);
    fflush(stdout);
    rc = 0;
    goto out;
keep:
    ph_error_hint(err, "the container %.12s is kept with its artifacts; retry with `profharness stop %s` "
                  "or `profharness collect %s`", id, service, service);
out:
    json_decref(res.record);
    return rc;
}

/* One job of a stop: every profiled container of service I. */
typedef struct stop_jobs {
    ph_svc_list *sl;
    int *stopped;
    char (*what)[96];
} stop_jobs;

static const char *
stop_what(void *ud, size_t i)
{
    return ((stop_jobs *)ud)->what[i];
}

static int
stop_job(ph_run *r, size_t i, void *ud, ph_error_t *err)
{
    stop_jobs *j = ud;
    json_t *list = NULL, *c;
    size_t k;
    int rc = 0;

    if (ph_run_list(r, j->sl->v[i]->name, &list, err) < 0)
        return -1;
    json_array_foreach(list, k, c) {
        if (!ph_run_is_profiled(c))
            continue;
        if ((rc = ph_run_stop_one(r, c, err)) < 0)
            break;
        j->stopped[i]++;
    }
    json_decref(list);
    return rc;
}

/* The services are stopped concurrently (ph_run_parallel, bounded): the
 * time is the slowest one's, not the sum.  One service's fault does not
 * strand the others; each fault is said, the last one is returned. */
int
ph_run_stop_services(ph_run *r, ph_svc_list *sl, int quiet_if_none, ph_error_t *err)
{
    stop_jobs j = { .sl = sl, .stopped = calloc(sl->n + 1, sizeof *j.stopped),
                    .what = calloc(sl->n + 1, sizeof *j.what) };
    ph_error_t *errs = calloc(sl->n + 1, sizeof *errs);
    ph_engine *e;
    size_t failed;
    int stopped = 0, last = -1;

    if (j.stopped == NULL || j.what == NULL || errs == NULL) {
        free(j.stopped);
        free(j.what);
        free(errs);
        return ph_fail(err, ENOMEM, "allocate");
    }
    /* The first contact (and its errors) on this thread, before any job. */
    if (ph_run_engine(r, &e, err) < 0) {
        free(j.stopped);
        free(j.what);
        free(errs);
        return -1;
    }
    for (size_t i = 0; i < sl->n; i++)
        snprintf(j.what[i], sizeof j.what[i], "stop %s", sl->v[i]->name);
    failed = ph_run_parallel(r, sl->n, ph_run_jobs_max(), stop_job, stop_what, &j, errs);
    for (size_t i = 0; i < sl->n; i++) {
        stopped += j.stopped[i];
        if (errs[i] != NULL)
            last = (int)i;
    }
    for (size_t i = 0; i < sl->n; i++) {
        if (errs[i] == NULL || (int)i == last)
            continue;
        ph_log(PH_LOG_ERROR, "%s", errs[i]->msg);
        if (errs[i]->hint[0])
            ph_log(PH_LOG_ERROR, "hint: %s", errs[i]->hint);
        ph_error_free(&errs[i]);
    }
    if (last >= 0)
        *err = errs[last];
    free(j.stopped);
    free(j.what);
    free(errs);
    if (failed > 0)
        return -1;
    if (stopped == 0 && !quiet_if_none)
        ph_info("nothing to stop: no profiled service is running in project `%s`", r->compose->project);
    return 0;
}

int
ph_run_stop(ph_run *r, char **services, int n, ph_error_t *err)
{
    ph_svc_list sl;
    int rc;

    if (ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    rc = ph_run_stop_services(r, &sl, 0, err);
    free(sl.v);
    return rc;
}

int
ph_run_collect(ph_run *r, char **services, int n, ph_error_t *err)
{
    ph_svc_list sl;
    int rc = 0, any = 0;

    if (ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        json_t *list = NULL, *c;
        size_t k;

        if (ph_run_list(r, sl.v[i]->name, &list, err) < 0) {
            rc = -1;
            break;
        }
        json_array_foreach(list, k, c) {
            if (!ph_run_is_profiled(c))
                continue;
            any = 1;
            if (!ph_run_is_running(c)) {
                /* A stopped profiled container: a stop that failed half way. */
                rc = ph_run_stop_one(r, c, err);
            } else {
                stage st[4];
                size_t ns = 0;
                collect_result res = { 0 };

                rc = collect_into_run_dir(r, c, 1, st, &ns, &res, err);
                if (rc == 0) {
                    rc = write_run_meta(c, &res, st, ns, err);
                    printf("%s\t%s\n", sl.v[i]->name, res.run_dir);
                }
                json_decref(res.record);
            }
            if (rc < 0)
                break;
        }
        json_decref(list);
    }
    if (rc == 0 && !any)
        ph_info("nothing to collect: no profiled container in project `%s`", r->compose->project);
    free(sl.v);
    return rc;
}

