/* ph_run_collect.c - stop, collect, discard, one container at a time (the
 * stop and collect commands over a selection are ph_run_stop.c's).
 *
 *   stop     flock(<out>/<service>/.lock) -> SIGTERM to the shim (which
 *            signals the profiled process and escalates only after the
 *            profile's grace) -> Engine wait -> stream the artifacts out
 *            through libarchive into a fresh temp dir -> hand it to the
 *            invoker -> rename into place -> links -> only then remove the
 *            container.
 *
 * The lock makes a second `stop` (or a `collect`) of the same service wait
 * for the first and then find nothing to stop.  On any failure the
 * container is kept, the temp dir removed, and the error's hint says how to
 * recover, including how to give the run up (`stop --discard`) when it
 * cannot be collected at all.  A collection is bounded (ph_tar_limits: the
 * flags of ph_run_opts.collect, else the mode's `collect:`, else the
 * defaults); over a limit the error says where it was set and how to
 * raise it.
 *
 * What the container wrote is hostile until proven otherwise, and so is
 * <out>/<service>/ itself, which belongs to the invoker under sudo:
 *   - everything below <out>/<service> is reached through directory fds
 *     (openat and friends with O_NOFOLLOW), never by a path that could
 *     cross a link planted between two calls; the temp dir is made fresh
 *     with a random name (never reused) and extracted through its fd;
 *   - temp entries are named `.incoming-*` and made only under the lock,
 *     so any found while holding it were left by a harness that died:
 *     they are removed (the container of that run was kept);
 *   - the completion record is read with a size cap and must have the
 *     shim's fields (ph_run_record.c), else the run is marked "no valid
 *     completion record";
 *   - every name and field printed is escaped (ph_escape.h);
 *   - from temp dir to rename, SIGINT/SIGTERM only set a flag
 *     (ph_signal.h) that the stream callback checks: the temp dir is
 *     removed and the container kept, exit 128+N.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_fs.h"
#include "ph_log.h"
#include "ph_signal.h"
#include "ph_util.h"
#include "ph_report.h"
#include "ph_rundir.h"
#include "ph_tar.h"
#include "ph_timing.h"
#include "ph_timing_out.h"

/* ---- collection: the run-dir store's steps ----------------------------- */

/* What one stop or collect knows of its container while the store
 * completes the run (ph_rundir_complete): the steps below fill it. */
typedef struct collect_run {
    ph_run *r;
    const ph_workload *c;     /* the workload as listed */
    const ph_profile *p;      /* the profile it was started with, or NULL */
    const char *service, *id;
    ph_backend *b;
    json_t *record;           /* the shim's completion record, or NULL ... */
    char record_problem[256]; /* ... and why */
    json_t *missing;          /* globs of the mode's artifacts that matched nothing */
    int oom_killed;           /* the Engine says the kernel's OOM killer struck */
    int runfd;                /* a replica of several: <out>/<service>/<run>/, its sub-dir's parent; else -1 */
    const char *task_dir;     /* a task's sub-dir of RUNFD, named by its caller; else NULL ... */
    const char *parent;       /* ... and RUNFD's name under <out>/<service> */
    json_t *extra;            /* keys run.json has besides (a task's node, slot...), or NULL */
    int snapshot;             /* collect of a running service: no record is expected */
    ph_rundir_done done;
} collect_run;

static void
collect_run_done(collect_run *cr)
{
    json_decref(cr->record);
    cr->record = NULL;
    json_decref(cr->missing);
    cr->missing = NULL;
}

typedef struct fetch_ctx {
    ph_rundir_feed_cb feed;
    void *feed_ud;
    ph_error_t *err;
} fetch_ctx;

static int
fetch_cb(void *ud, const char *data, size_t len)
{
    fetch_ctx *f = ud;

    return f->feed(f->feed_ud, data, len, f->err);
}

/* /opt/profiling/<service> out of the container, streamed into the store. */
static int
fetch_step(void *ud, ph_rundir_feed_cb feed, void *feed_ud, ph_error_t *err)
{
    collect_run *cr = ud;
    fetch_ctx f = { feed, feed_ud, err };
    char src[PATH_MAX];

    snprintf(src, sizeof src, "%s/%s", PH_CONTAINER_OUT, cr->service);
    return cr->b->ops->archive_get(cr->b, cr->id, src, fetch_cb, &f, err);
}

/* Whether an artifact of P other than the Ith, with the Ith's `latest`
 * name, is in DIRFD: the same file by another profiler's name (the
 * sampler's stacks-*.folded, perf's stacks.folded of an attached run). */
static int
alternative_there(const ph_profile *p, size_t i, int dirfd)
{
    const char *latest = p->artifacts[i].latest;
    char file[NAME_MAX + 1];

    for (size_t k = 0; latest != NULL && k < p->n_artifacts; k++)
        if (k != i && p->artifacts[k].latest != NULL && strcmp(p->artifacts[k].latest, latest) == 0 &&
            ph_rundir_newest_match(dirfd, p->artifacts[k].glob, file, sizeof file))
            return 1;
    return 0;
}

json_t *
ph_run_missing_artifacts(const ph_profile *p, int dirfd)
{
    json_t *missing = json_array();
    char file[NAME_MAX + 1];

    for (size_t i = 0; p != NULL && missing != NULL && i < p->n_artifacts; i++)
        if (strncmp(p->artifacts[i].glob, PH_REPORT_SVG_PREFIX, strlen(PH_REPORT_SVG_PREFIX)) != 0 && /* drawn later */
            !p->artifacts[i].optional && !ph_rundir_newest_match(dirfd, p->artifacts[i].glob, file, sizeof file) &&
            !alternative_there(p, i, dirfd))
            json_array_append_new(missing, json_string(p->artifacts[i].glob));
    return missing;
}

/* The names of the run's artifacts found in DIRFD ("strace.log"; a glob's
 * `latest` name, else the file's), joined with ", " into OUT. */
static void
present_artifacts(const ph_profile *p, int dirfd, char *out, size_t len)
{
    char file[NAME_MAX + 1], esc[NAME_MAX * 4 + 1];
    size_t o = 0;

    out[0] = '\0';
    for (size_t i = 0; p != NULL && i < p->n_artifacts && o < len; i++) {
        if (!ph_rundir_newest_match(dirfd, p->artifacts[i].glob, file, sizeof file))
            continue;
        ph_escape(esc, sizeof esc, p->artifacts[i].latest ? p->artifacts[i].latest : file);
        o += (size_t)snprintf(out + o, len - o, "%s%s", o ? ", " : "", esc);
    }
}

static void
describe_record(const collect_run *cr, int runfd)
{
    json_t *rec = cr->record, *esc_list, *g;
    const char *sig, *service = cr->service;
    char esc[128], globs[512] = "", present[512], story[1024];
    size_t i, o = 0;
    int level;

    json_array_foreach(cr->missing, i, g)
        o += (size_t)snprintf(globs + o, o < sizeof globs ? sizeof globs - o : 0, "%s`%s`", i ? ", " : "",
                              json_string_value(g));
    if (o > 0)
        ph_warn("%s: the profiler wrote no %s (listed in %s as missing_artifacts; %s says how the service ended)",
                service, globs, PH_RUN_META_NAME, PH_RECORD_NAME);
    /* The kernel's SIGKILL is no stop: whoever it hit had no chance to
     * flush, and the record (written by ph-init, which survived) may not
     * know it was the OOM killer. */
    if (cr->oom_killed && !(rec && json_is_string(json_object_get(rec, "outcome")) &&
                            strcmp(json_string_value(json_object_get(rec, "outcome")), "oom_killed") == 0))
        ph_warn("%s: the OOM killer struck in the container (its memory limit): what the profiler wrote may be "
                "incomplete", service);
    /* a running service has written none yet: nothing is wrong then */
    if (rec == NULL && cr->snapshot)
        return;
    if (rec == NULL) {
        ph_warn("%s: no valid completion record: %s; the profiled process may not have stopped through the "
                "shim, so output may be incomplete (marked in %s)", service, cr->record_problem, PH_RUN_META_NAME);
        return;
    }
    /* What happened, plainly, from the shim's outcome. */
    present_artifacts(cr->p, runfd, present, sizeof present);
    if ((level = ph_run_record_story(rec, present, story, sizeof story)) >= 0) {
        ph_log(level ? PH_LOG_WARN : PH_LOG_INFO, "%s: %s", service, story);
        return;
    }
    /* An older shim's record: no outcome. */
    sig = json_string_value(json_object_get(rec, "signal"));
    esc_list = json_object_get(rec, "escalations");
    if (sig != NULL)
        ph_info("%s: service ended by %s (exit %lld)", service, ph_escape(esc, sizeof esc, sig),
                (long long)json_integer_value(json_object_get(rec, "exit_code")));
    else
        ph_info("%s: service exited with status %lld", service,
                (long long)json_integer_value(json_object_get(rec, "exit_code")));
    if (json_array_size(esc_list) > 0)
        ph_warn("%s: the service did not stop on its stop signal; escalated (%zu step%s, see %s)", service,
                json_array_size(esc_list), json_array_size(esc_list) == 1 ? "" : "s", PH_RECORD_NAME);
    if (!ph_run_record_complete(rec) && !cr->oom_killed)
        ph_warn("%s: the profiler itself was killed before it could finish: what it wrote may be incomplete "
                "(see %s)", service, PH_RECORD_NAME);
}

/* After extraction: the record, what is missing, said. */
static void
examine_step(void *ud, ph_rundir *rd)
{
    collect_run *cr = ud;
    int fd = ph_rundir_fd(rd);

    ph_run_record_read(fd, PH_RECORD_NAME, &cr->record, cr->record_problem, sizeof cr->record_problem);
    cr->missing = ph_run_missing_artifacts(cr->p, fd);
    describe_record(cr, fd);
    ph_run_attach_describe(cr->r, cr->c, cr->record);
    ph_run_explain_samples(cr->service, fd);
}

/* Its output goes with the container: kept before it is removed. */
static int
service_log_step(void *ud, ph_rundir *rd, ph_error_t *err)
{
    collect_run *cr = ud;

    return ph_run_service_log(cr->r, cr->b, cr->service, cr->id, rd, err);
}

static json_t *
meta_step(void *ud, ph_rundir *rd)
{
    collect_run *cr = ud;
    const ph_workload *c = cr->c;
    json_t *meta;
    char ended[32];

    (void)rd;
    ph_run_utc_iso(ended, sizeof ended);
    meta = json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:s, s:O?, s:s?, s:O?, s:b}",
                     "service", c->service,
                     "mode", c->mode,
                     "run", c->run,
                     "started_at", c->started,
                     "container", cr->id,
                     "collected_at", ended,
                     "completion", cr->record,
                     "completion_problem", cr->record == NULL ? cr->record_problem : NULL,
                     "missing_artifacts", cr->missing,
                     "oom_killed", cr->oom_killed);
    /* attach: the service's container, which kept running (the report says so) */
    if (meta != NULL && c->attached != NULL)
        json_object_set_new(meta, "attached_to", json_string(c->attached));
    if (meta != NULL && cr->extra != NULL)
        json_object_update(meta, cr->extra);
    return meta;
}

/* Complete the run of container C under SVCFD (locked) as NAME, through
 * the store (ph_rundir_complete: its fixed order).  SNAPSHOT: a copy
 * while it runs (links untouched).  On failure nothing is left on the
 * host and CR->done says which limit stopped it, if one did. */
static int
collect_run_dir(collect_run *cr, int svcfd, int snapshot, ph_error_t *err)
{
    ph_run *r = cr->r;
    const char *run = cr->c->run;
    char name[NAME_MAX], stamp[17], esc[256], shown[PATH_MAX];
    ph_rundir_steps steps = { cr, fetch_step, examine_step, service_log_step, meta_step };
    ph_rundir_spec spec = { .svcfd = svcfd, .out_dir = r->opts.out_dir, .service = cr->service, .name = name,
                            .container = cr->id, .cmd = snapshot ? "collect" : "stop", .profile = cr->p,
                            .flags = &r->opts.collect, .links = !snapshot };
    int replica = cr->c->replicas > 1 ? cr->c->slot : 0;

    if (cr->b == NULL && ph_run_backend(r, &cr->b, err) < 0)
        return -1;
    if (cr->service == NULL || run == NULL || cr->c->mode == NULL)
        return ph_fail(err, 0, "container %.12s has no profharness labels", cr->id);
    if (!ph_run_safe_name(run))
        return ph_fail(err, 0, "container %.12s: its run label `%s` is no directory name", cr->id,
                       ph_escape(esc, sizeof esc, run));
    ph_run_utc_stamp(stamp);
    if (cr->task_dir != NULL) { /* <run>/<slot>-<node>/: as a replica's */
        snprintf(name, sizeof name, "%s", cr->task_dir);
        snprintf(shown, sizeof shown, "%s/%s", cr->service, cr->parent);
        spec.svcfd = cr->runfd;
        spec.service = shown;
        spec.links = 0;
    } else if (snapshot && replica > 0)
        snprintf(name, sizeof name, "%s-snapshot-%s-%d", run, stamp, replica);
    else if (snapshot)
        snprintf(name, sizeof name, "%s-snapshot-%s", run, stamp);
    else if (replica > 0) { /* <run>/<replica>/: `latest` is pointed at <run> after it (stop_one) */
        ph_run_replica_dir_name(replica, name, sizeof name);
        snprintf(shown, sizeof shown, "%s/%s", cr->service, run);
        spec.svcfd = cr->runfd;
        spec.service = shown;
        spec.links = 0;
    } else
        snprintf(name, sizeof name, "%s", run);
    return ph_rundir_complete(&spec, &steps, &cr->done, err);
}

int
ph_run_collect_task(ph_run *r, ph_backend *b, const ph_workload *w, const ph_profile *p, const ph_run_task_dir *at,
                    ph_error_t *err)
{
    collect_run cr = { .r = r, .c = w, .p = p, .service = w->service, .id = w->id, .b = b, .runfd = at->runfd,
                       .task_dir = at->dir, .parent = at->parent, .extra = at->extra, .snapshot = at->snapshot };
    int snapshot = at->snapshot;
    ph_workload fresh;
    ph_error_t sub = NULL;
    int found = 0, rc;

    /* the kernel's OOM killer, as the backend saw the workload end */
    if (b->ops->inspect(b, w->id, &fresh, &found, &sub) == 0 && found)
        cr.oom_killed = fresh.oom_killed;
    else if (sub != NULL)
        ph_debug("%s: inspect %s: %s", w->service, w->id, sub->msg);
    ph_error_free(&sub);
    if (found)
        ph_workload_clear(&fresh);
    ph_interrupt_begin(); /* a temp dir exists from here: signals only set a flag */
    rc = collect_run_dir(&cr, at->runfd, snapshot, err);
    if (rc < 0 && cr.done.stats.limit != PH_TAR_LIMIT_NONE)
        ph_rundir_limit_hint(&cr.done.limits, cr.done.stats.limit, cr.done.limit_value, snapshot ? "collect" : "stop",
                             w->service, w->id, err);
    ph_interrupt_end();
    if (rc == 0 && cr.done.reported)
        ph_report_print_headline(stderr, &cr.done.headline);
    collect_run_done(&cr);
    return rc;
}

/* ---- stop ------------------------------------------------------------- */

static int
is_created(const ph_workload *c)
{
    return c->state == PH_WL_CREATED;
}

/* The stop itself: the wait registered first (nothing can be missed),
 * then SIGTERM to the shim, then the wait for the profiler to flush and
 * exit within BUDGET seconds; a "profiler" stage, whose time is that. */
static int
signal_and_wait(ph_backend *b, const ph_workload *c, long budget, int signalled, int *timed_out, ph_error_t *err)
{
    const char *service = c->service, *mode = c->mode;
    const char *id = c->id;
    ph_stage *st = ph_stage_beginf("profiler", 0, "the %s profiler flushes and exits", mode ? mode : "?");
    ph_backend_wait *w = NULL;
    long code = 0;

    if (b->ops->wait_begin(b, id, &w, err) < 0)
        return ph_run_stage_done(st, -1, err);
    if (ph_workload_running(c) && !signalled) {
        ph_info("%s: stopping %s profiler (waiting up to %ld s for it to flush)", service, mode, budget);
        if (b->ops->signal(b, id, "SIGTERM", err) < 0) {
            /* It may have exited between the listing and now. */
            ph_debug("kill: %s", (*err)->msg);
            ph_error_free(err);
        }
    }
    return ph_run_stage_done(st, b->ops->wait_end(w, budget, &code, timed_out, err), err);
}

/* contrib/profiling/index.html, after a command collected something;
 * handed to the invoker like every file the harness writes. */
void
ph_run_write_index(ph_run *r)
{
    ph_stage *st = ph_stage_begin("report", "write the index of runs", 0);
    ph_cleanup_close int outfd = -1;
    ph_error_t rerr = NULL;
    struct stat sb;

    if (ph_report_write_index(r->opts.out_dir, &rerr) < 0) {
        ph_warn("the index of runs was not updated: %s (retry with `profharness report`)", rerr->msg);
        ph_run_stage_done(st, -1, &rerr);
        ph_error_free(&rerr);
        return;
    }
    outfd = open(r->opts.out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (outfd >= 0) {
        ph_rundir_give_at(outfd, PH_REPORT_INDEX);
        if (fstatat(outfd, PH_REPORT_INDEX, &sb, AT_SYMLINK_NOFOLLOW) == 0)
            ph_stage_bytes(st, 0, (uint64_t)sb.st_size);
    }
    ph_stage_end(st);
}

/* The run dir of replica C (one of several), under SVCFD (locked): made
 * when missing, what a dead harness left in it removed, *RUNFD. */
static int
replica_run_dir(ph_run *r, const ph_workload *c, int svcfd, int *runfd, ph_error_t *err)
{
    if (c->slot < 1 || c->slot > c->replicas)
        return ph_fail(err, 0, "container %.12s says it is replica %d of %d: not collected", c->id, c->slot,
                       c->replicas);
    if (!ph_run_safe_name(c->run))
        return ph_fail(err, 0, "container %.12s: its run label is no directory name", c->id);
    if (ph_run_open_run_dir(r, svcfd, c->service, c->run, runfd, err) < 0)
        return -1;
    return 0;
}

/* tasks.json of C's run again, after C's stop (WHY: its failure, or
 * NULL); a fault there is said, never the stop's. */
static void
replicas_said(ph_run *r, const ph_workload *c, int runfd, const char *why)
{
    ph_error_t e = NULL;
    if (ph_run_replicas_write(r, runfd, c, why, NULL, &e) < 0) {
        ph_warn("%s: %s of run %s not written: %s", c->service, PH_RUN_TASKS_NAME, c->run, e->msg);
        ph_error_free(&e);
        return;
    }
    if (why == NULL)
        ph_info("%s: replica %d of %d collected into %s/%s/%s/%d", c->service, c->slot, c->replicas,
                r->opts.out_dir, c->service, c->run, c->slot);
}

/* Gracefully stop one profiled container and collect it; SIGNALLED: it
 * was asked to stop already (with its runtimes refreshed first).  On any
 * failure the container is kept and the hint says how to recover. */
static int
stop_one(ph_run *r, const ph_workload *listed, int signalled, ph_error_t *err)
{
    const char *service = listed->service;
    const char *id = listed->id;
    ph_cleanup_close int lock = -1;
    ph_cleanup_close int svcfd = -1;
    const ph_workload *c;
    ph_workload fresh;
    collect_run cr = { .r = r, .c = listed, .service = service, .id = id, .runfd = -1 };
    ph_profile own;
    char expect[PATH_MAX];
    ph_backend *b;
    int found = 0, timed_out = 0, rc = -1;
    long budget;

    memset(&own, 0, sizeof own);
    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    if (ph_run_lock_service(r, service, &svcfd, &lock, err) < 0)
        return -1;
    /* Whoever held the lock may have collected it already. */
    if (b->ops->inspect(b, id, &fresh, &found, err) < 0)
        return -1;
    if (!found) {
        ph_info("%s: nothing to stop (already collected)", service);
        return 0;
    }
    ph_workload_clear(&fresh);
    c = listed;

    if (is_created(c)) {
        /* Made but never started (a start interrupted between create and
         * start): nothing ran, so there is nothing to collect. */
        if (b->ops->remove(b, id, 1, err) < 0)
            return ph_error_wrap(err, "remove the never-started container %.12s of `%s`", id, service);
        ph_info("%s: container %.12s was created but never started: nothing to collect; removed", service, id);
        return 0;
    }
    if (ph_run_outdir_check(r, c, expect, sizeof expect, err) < 0)
        return -1;
    /* The run is stopped, collected and reported as it was started. */
    if (ph_run_started_profile(r, c, &own, &cr.p, err) < 0)
        return -1;
    /* one of several replicas: into <run>/<replica>/ */
    if (c->replicas > 1 && replica_run_dir(r, c, svcfd, &cr.runfd, err) < 0) {
        ph_profile_free(&own);
        return -1;
    }

    if (!signalled)
        ph_run_refresh(r, c, cr.p); /* the runtimes' perf maps current and in the run */
    budget = ph_run_stop_budget_s(cr.p);
    if (signal_and_wait(b, c, budget, signalled, &timed_out, err) < 0)
        goto keep;
    if (timed_out) {
        ph_fail(err, 0, "%s: the profiled container did not exit within %ld s", service, budget);
        goto keep;
    }
    ph_run_after_exit(r, c, cr.p, svcfd); /* what runtimes wrote as they exited: HotSpot's perf map */
    if (ph_run_convert(r, c, cr.p, err) < 0) /* perf: folded stacks, flamegraph, pprof beside perf.data */
        goto keep;
    if (b->ops->inspect(b, id, &fresh, &found, err) < 0)
        goto keep;
    cr.oom_killed = found && fresh.oom_killed;
    ph_workload_clear(&fresh);

    /* Complete before the container goes: run.json, service.log, report. */
    ph_interrupt_begin(); /* a temp dir exists from here: signals only set a flag */
    if (collect_run_dir(&cr, svcfd, 0, err) < 0) {
        ph_interrupt_end();
        goto keep;
    }
    if (b->ops->remove(b, id, 0, err) < 0) {
        ph_interrupt_end();
        ph_error_wrap(err, "the run is complete in %s, but removing container %.12s failed", cr.done.run_dir, id);
        ph_error_hint(err, "remove it by hand: docker rm %.12s", id);
        goto out;
    }
    ph_interrupt_end();
    rc = 0;
    if (cr.done.reported)
        ph_report_print_headline(stderr, &cr.done.headline);
    printf("%s\t%s\n", service, cr.done.run_dir);
    fflush(stdout);
    goto out;
keep:
    if (c->replicas > 1)
        ph_error_wrap(err, "replica %d of %d", c->slot, c->replicas);
    if (cr.done.stats.limit != PH_TAR_LIMIT_NONE)
        ph_rundir_limit_hint(&cr.done.limits, cr.done.stats.limit, cr.done.limit_value, "stop", service, id, err);
    else
        ph_error_hint(err, "the container %.12s is kept with its artifacts; retry with `profharness stop %s` "
                      "(or `profharness collect %s`); if it cannot be collected, give the run up with "
                      "`profharness stop --discard %s`", id, service, service, service);
out:
    if (cr.runfd >= 0)
        replicas_said(r, c, cr.runfd, rc == 0 ? NULL : err != NULL && *err != NULL ? (*err)->msg : "failed");
    if (cr.runfd >= 0 && rc == 0) /* `latest` at the run, as a stack's stop points it */
        ph_rundir_link_latest(svcfd, r->opts.out_dir, service, c->run);
    collect_run_done(&cr);
    ph_profile_free(&own);
    if (cr.runfd >= 0)
        close(cr.runfd);
    return rc;
}

int
ph_run_stop_one(ph_run *r, const ph_workload *listed, ph_error_t *err)
{
    ph_stage *st = ph_run_container_stage(listed, "stop");

    return ph_run_stage_done(st, stop_one(r, listed, 0, err), err);
}

/* The running replicas of LIST (profiled, of several) asked to stop at
 * once, as compose stops a service's containers: their stop protocols
 * overlap, where one after the other each would wait for the one before;
 * each is then waited for and collected in turn.  Each is refreshed
 * first (its runtimes' maps), as a lone stop does; one that stop_one
 * would refuse (labels not ours, a profile that cannot be read) is not
 * signalled.  SIGNALLED[k]: LIST->v[k] was. */
static void
replicas_stop_at_once(ph_run *r, const ph_workload_list *list, unsigned char *signalled)
{
    ph_backend *b;
    ph_error_t e = NULL;
    const ph_workload **cs = calloc(list->n + 1, sizeof *cs);
    const ph_profile **ps = calloc(list->n + 1, sizeof *ps);
    ph_profile *own = calloc(list->n + 1, sizeof *own);
    size_t *at = calloc(list->n + 1, sizeof *at), n = 0;

    if (cs == NULL || ps == NULL || own == NULL || at == NULL || ph_run_backend(r, &b, &e) < 0) {
        ph_error_free(&e); /* each stop on its own, then */
        goto out;
    }
    for (size_t k = 0; k < list->n; k++) {
        const ph_workload *c = &list->v[k];
        char expect[PATH_MAX];

        if (!ph_workload_profiled(c) || c->replicas < 2 || !ph_workload_running(c))
            continue;
        if (ph_run_outdir_check(r, c, expect, sizeof expect, &e) < 0 ||
            ph_run_started_profile(r, c, &own[n], &ps[n], &e) < 0) {
            ph_error_free(&e); /* said by its own stop */
            continue;
        }
        cs[n] = c;
        at[n++] = k;
    }
    /* every replica's runtimes asked at once: a step that hangs costs its
     * wait once, not once per replica */
    ph_run_refresh_many(r, cs, ps, n);
    for (size_t i = 0; i < n; i++) {
        const ph_workload *c = cs[i];

        ph_info("%s: stopping replica %d's %s profiler (waiting up to %ld s for it to flush)", c->service, c->slot,
                c->mode, ph_run_stop_budget_s(ps[i]));
        if (b->ops->signal(b, c->id, "SIGTERM", &e) < 0) {
            ph_debug("kill: %s", e->msg); /* it may have exited: its stop finds out */
            ph_error_free(&e);
            continue;
        }
        signalled[at[i]] = 1;
    }
out:
    for (size_t i = 0; own != NULL && i < n; i++)
        ph_profile_free(&own[i]);
    free(cs);
    free(ps);
    free(own);
    free(at);
}

/* One job of a stop (or discard): every profiled container of service I. */
typedef struct stop_jobs {
    ph_svc_list *sl;
    size_t off; /* the wave's first service in SL */
    int discard;
    int *acted;
} stop_jobs;

static void
log_error(ph_error_t e)
{
    ph_log(PH_LOG_ERROR, "%s", e->msg);
    if (e->hint[0])
        ph_log(PH_LOG_ERROR, "hint: %s", e->hint);
}

/* A fault in one container does not strand the service's others (the
 * last fault is returned, earlier ones said); an interrupt ends the job. */
static int
stop_job(ph_run *r, size_t i, void *ud, ph_error_t *err)
{
    stop_jobs *j = ud;
    const char *name;

    i += j->off;
    name = j->sl->v[i]->name;
    ph_workload_list list = { 0 };
    const ph_workload *c;
    ph_error_t fault = NULL;
    unsigned char *signalled = NULL;
    size_t k;
    int rc, sig = ph_interrupted();

    if (sig != 0) {
        ph_interrupt_fail(err, sig);
        return ph_error_wrap(err, "stopped before `%s`", name);
    }
    if (ph_run_list(r, name, &list, err) < 0)
        return -1;
    if ((signalled = calloc(list.n + 1, 1)) == NULL) {
        ph_workload_list_free(&list);
        return ph_fail(err, ENOMEM, "allocate");
    }
    if (!j->discard)
        replicas_stop_at_once(r, &list, signalled);
    for (k = 0; k < list.n && ((c = &list.v[k]), 1); k++) {
        if (!ph_workload_profiled(c))
            continue;
        if ((sig = ph_interrupted()) != 0) {
            ph_interrupt_fail(err, sig);
            ph_error_wrap(err, "stopped before a container of `%s`", name);
            break;
        }
        /* a stage per container, named for its service (a job of its own
         * would only repeat the name), begun before the work it times: the
         * order a call's arguments are evaluated in is the compiler's */
        if (j->discard)
            rc = ph_run_discard_one(r, c, err); /* its own stage */
        else {
            ph_stage *st = ph_run_container_stage(c, "stop");

            rc = ph_run_stage_done(st, stop_one(r, c, signalled[k], err), err);
        }
        if (rc < 0) {
            if ((*err)->status > PH_EXIT_SIGNAL)
                break;
            if (fault != NULL) {
                log_error(fault);
                ph_error_free(&fault);
            }
            fault = *err;
            *err = NULL;
            continue;
        }
        j->acted[i]++;
    }
    ph_workload_list_free(&list);
    free(signalled);
    if (*err != NULL) { /* interrupted */
        if (fault != NULL)
            log_error(fault);
        ph_error_free(&fault);
        return -1;
    }
    *err = fault;
    return fault != NULL ? -1 : 0;
}

/* SL in waves, as compose stops a project: a service's wave comes after
 * that of every selected service depending on it, so dependants stop
 * before what they depend on; each wave's services stop at once.  Sorts
 * SL by wave (stable: the caller's order within one) into DEPTH. */
void
ph_run_stop_waves(ph_svc_list *sl, size_t *depth)
{
    for (size_t i = 0; i < sl->n; i++)
        depth[i] = 0;
    for (size_t pass = 0; pass < sl->n; pass++) { /* at most n: no cycle in a loaded project */
        int moved = 0;

        for (size_t i = 0; i < sl->n; i++)
            for (size_t j = 0; j < sl->n; j++)
                for (size_t k = 0; j != i && k < sl->v[j]->depends_on.n; k++)
                    if (strcmp(sl->v[j]->depends_on.v[k], sl->v[i]->name) == 0 && depth[i] <= depth[j]) {
                        depth[i] = depth[j] + 1;
                        moved = 1;
                    }
        if (!moved)
            break;
    }
    for (size_t i = 1; i < sl->n; i++) {
        for (size_t j = i; j > 0 && depth[j - 1] > depth[j]; j--) {
            ph_service *t = sl->v[j];
            size_t d = depth[j];

            sl->v[j] = sl->v[j - 1];
            depth[j] = depth[j - 1];
            sl->v[j - 1] = t;
            depth[j - 1] = d;
        }
    }
}

/* Stop (or discard) every profiled container of the services in SL,
 * wave by wave (ph_run_stop_waves), each wave concurrently (ph_run_parallel,
 * bounded): the time is the slowest service's of each wave, not the sum.
 * A fault in one service does not strand the others; an interrupt stops
 * every job before its next container.  One fault is returned as it is;
 * several are each said and summed up. */
static int
for_each_profiled(ph_run *r, ph_svc_list *caller, int discard, int *acted, ph_error_t *err)
{
    /* the waves' order is this function's: the caller's list is left as it is */
    ph_svc_list waves = { calloc(caller->n + 1, sizeof *waves.v), caller->n }, *sl = &waves;
    stop_jobs j = { .sl = sl, .discard = discard, .acted = calloc(sl->n + 1, sizeof *j.acted) };
    ph_error_t *errs = calloc(sl->n + 1, sizeof *errs);
    size_t *depth = calloc(sl->n + 1, sizeof *depth);
    ph_backend *b;
    size_t failed = 0, keep = sl->n;

    if (waves.v == NULL || j.acted == NULL || errs == NULL || depth == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    /* The first contact (and its errors) on this thread, before any job. */
    if (ph_run_backend(r, &b, err) < 0)
        goto out;
    /* The workers' sections nest in this one: only this (the main)
     * thread installs and restores the handlers. */
    memcpy(waves.v, caller->v, caller->n * sizeof *waves.v);
    ph_run_stop_waves(sl, depth);
    ph_interrupt_begin();
    for (size_t w = 0; w < sl->n;) {
        size_t end = w;

        while (end < sl->n && depth[end] == depth[w])
            end++;
        j.off = w;
        failed += ph_run_parallel(r, end - w, ph_run_jobs_max(), stop_job, NULL, &j, errs + w);
        w = end;
    }
    ph_interrupt_end();
    for (size_t i = 0; i < sl->n; i++) {
        *acted += j.acted[i];
        if (errs[i] != NULL && (keep == sl->n || errs[i]->status > PH_EXIT_SIGNAL))
            keep = i; /* the first fault, or an interrupt */
    }
    for (size_t i = 0; i < sl->n; i++) {
        if (errs[i] == NULL || (i == keep && (failed == 1 || errs[i]->status > PH_EXIT_SIGNAL)))
            continue;
        log_error(errs[i]);
        ph_error_free(&errs[i]);
    }
    if (failed == 1 || (keep < sl->n && errs[keep] != NULL)) {
        *err = errs[keep];
        errs[keep] = NULL;
    } else if (failed > 1) {
        ph_fail(err, 0, "%zu of %zu services could not be %s cleanly (each said above)", failed, sl->n,
                discard ? "discarded" : "stopped");
    }
out:
    free(j.acted);
    free(errs);
    free(depth);
    free(waves.v);
    return *err != NULL ? -1 : 0;
}

int
ph_run_stop_services(ph_run *r, ph_svc_list *sl, int quiet_if_none, ph_error_t *err)
{
    int stopped = 0;

    if (for_each_profiled(r, sl, 0, &stopped, err) < 0)
        return -1;
    if (stopped == 0 && !quiet_if_none)
        ph_info("nothing to stop: no profiled service is running in project `%s`", r->compose->project);
    if (stopped > 0)
        ph_run_write_index(r);
    return 0;
}

/* ---- discard ---------------------------------------------------------- */

int
ph_run_discard_one(ph_run *r, const ph_workload *c, ph_error_t *err)
{
    const char *service = c->service;
    const char *id = c->id;
    const char *run = c->run;
    const char *state = c->state_text[0] ? c->state_text : NULL;
    ph_cleanup_close int lock = -1;
    ph_cleanup_close int svcfd = -1;
    char esc[256];
    ph_backend *b;
    ph_stage *st = ph_run_container_stage(c, "discard");

    if (ph_run_backend(r, &b, err) < 0 || ph_run_lock_service(r, service, &svcfd, &lock, err) < 0)
        return ph_run_stage_done(st, -1, err);
    ph_warn("%s: discarding container %.12s (%s, run %s) without collecting it: whatever it holds in %s/%s "
            "is lost", service, id, state ? state : "?", ph_escape(esc, sizeof esc, run ? run : "?"),
            PH_CONTAINER_OUT, service);
    if (b->ops->remove(b, id, 1, err) < 0)
        return ph_run_stage_done(st, ph_error_wrap(err, "discard container %.12s of `%s`", id, service), err);
    ph_info("%s: container %.12s removed; nothing was collected", service, id);
    return ph_run_stage_done(st, 0, err);
}

int
ph_run_discard_services(ph_run *r, ph_svc_list *sl, int *discarded, ph_error_t *err)
{
    return for_each_profiled(r, sl, 1, discarded, err);
}

/* ---- collect ---------------------------------------------------------- */

/* A copy of what a running container has now, as a -snapshot- run. */
int
ph_run_snapshot_one(ph_run *r, const ph_workload *c, ph_error_t *err)
{
    const char *service = c->service;
    const char *id = c->id;
    ph_cleanup_close int lock = -1;
    ph_cleanup_close int svcfd = -1;
    ph_stage *st = ph_run_container_stage(c, "snapshot");
    collect_run cr = { .r = r, .c = c, .service = service, .id = id, .snapshot = 1 };
    ph_profile own;
    char expect[PATH_MAX];
    int rc;

    memset(&own, 0, sizeof own);
    if (ph_run_outdir_check(r, c, expect, sizeof expect, err) < 0 ||
        ph_run_started_profile(r, c, &own, &cr.p, err) < 0 ||
        ph_run_lock_service(r, service, &svcfd, &lock, err) < 0) {
        ph_profile_free(&own);
        return ph_run_stage_done(st, -1, err);
    }
    ph_run_snapshot_request(r, c, cr.p); /* what the profiler has now, not what it wrote last */
    ph_interrupt_begin();
    rc = collect_run_dir(&cr, svcfd, 1, err);
    if (rc < 0 && cr.done.stats.limit != PH_TAR_LIMIT_NONE)
        ph_rundir_limit_hint(&cr.done.limits, cr.done.stats.limit, cr.done.limit_value, "collect", service, id,
                             err);
    ph_interrupt_end();
    if (rc == 0) {
        if (cr.done.reported)
            ph_report_print_headline(stderr, &cr.done.headline);
        printf("%s\t%s\n", service, cr.done.run_dir);
    }
    collect_run_done(&cr);
    ph_profile_free(&own);
    return ph_run_stage_done(st, rc, err);
}
