/* ph_run_placed.c - the loop's commands on services an orchestrator
 * places itself (a stack deployed to a swarm, `docker stack deploy -c
 * FILE PROJECT`; later a Kubernetes deployment), over the service_*
 * operations of the backend (ph_backend.h) the run chose: its workloads
 * are called tasks here, each on a node with a slot.
 *
 *   start    the profiling image (built or found where images are, then
 *            made available where the tasks run: ops.distribute), the
 *            service put under the profiling spec (ops.service_profile)
 *            and waited for; says how many tasks run where.
 *   stop     every profiled task stopped at once on its node (the shim's
 *            stop protocol: each profiler flushes), the service taken
 *            back as deployed (ops.service_unprofile), then each task's files read from its node's
 *            Engine into <out>/<service>/<run>/<slot>-<node>/, each
 *            collected as a lone container's stop collects it
 *            (ph_run_collect_task: the record examined, an interrupt
 *            section), tasks.json at <run>/ saying which were collected
 *            and which were lost (ops.lost: a node down, an Engine not
 *            reached: its container stays there), `latest` at the run, the index
 *            rewritten (ph_run_stop).  An interrupt ends the stop before
 *            the rollback: `stop` again finds the run as it was.
 *   discard  (`stop --discard`) the service taken back as deployed
 *            (ops.service_unprofile), nothing collected; one not restarted,
 *            the tools containers attached to its tasks removed.
 *   restore  stop, when the service is profiled.
 *   status   the stack's tasks, per node.
 *
 * ph_run_start/stop/collect/restore/down/status/attach come here when
 * the run's backend places its services (ph_run_placed): the plain
 * Engine's loop makes each replica itself.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_image.h"
#include "ph_log.h"
#include "ph_escape.h"
#include "ph_signal.h"
#include "ph_util.h"

#define CONVERGE_TIMEOUT_S 600L

int
ph_run_placed(ph_run *r, ph_error_t *err)
{
    ph_backend *b;

    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    return ph_backend_places(b);
}

static int
start_one(ph_run *r, ph_backend *b, const ph_service *s, const ph_profile *p, ph_error_t *err)
{
    ph_workload_spec spec = PH_WORKLOAD_SPEC_INIT;
    ph_placement pl;
    ph_run_prepared prep;
    ph_image_config img_info = { 0 };
    char *img = NULL, *tag = NULL;
    char run_id[64], stamp[17], started[32], host_dir[PATH_MAX], where[2048] = "";
    int found = 0, rc = -1;

    memset(&prep, 0, sizeof prep);
    if (p->swarm_unsupported != NULL) {
        ph_bad_input(err, "service `%s`: mode `%s` cannot run in a task of %s: %s", s->name, p->name,
                     b->ops->describe(b), p->swarm_unsupported);
        goto out;
    }
    if ((img = ph_run_service_image(r, s)) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    if (b->ops->image_inspect(b, img, &img_info, &found, err) < 0)
        goto out;
    if (!found) {
        ph_fail(err, 0, "%s: image `%s` is not on the manager", s->name, img);
        goto out;
    }
    /* refused where it cannot work, as on one Engine, before any image
     * is built; the manager builds it (its nodes run no tools volume of
     * ours) */
    if (ph_run_check_program(r, s, p, &prep.rewrap, err) < 0 ||
        ph_image_ensure_profiling_image(b, img, r->data_dir, &r->profiles, p, &tag, &prep.facts, err) < 0)
        goto out;
    if (b->ops->distribute(b, tag, &prep.prof_img, err) < 0)
        goto out;
    ph_run_utc_stamp(stamp);
    snprintf(run_id, sizeof run_id, "%s-%s", stamp, p->name);
    ph_run_utc_iso(started, sizeof started);
    snprintf(host_dir, sizeof host_dir, "%s/%s/%s", r->opts.out_dir, s->name, run_id);
    /* the spec a start on one Engine gives, the service's own (its
     * networks, its mounts, its resources) kept by the update */
    if (ph_run_profiled_spec(r, s, p, &prep, &img_info, img, run_id, started, host_dir, PH_RUN_SLOT_ORCHESTRATED,
                             NULL, &spec, err) < 0)
        goto out;
    if (b->ops->service_profile(b, r->compose->project, s->name, &spec, CONVERGE_TIMEOUT_S, &pl, err) < 0) {
        ph_error_wrap(err, "%s", s->name);
        goto out;
    }
    for (size_t i = 0; i < pl.n_nodes; i++) {
        size_t l = strlen(where);

        snprintf(where + l, sizeof where - l, "%s%s (%ld)", i ? ", " : "", pl.nodes[i].hostname, pl.nodes[i].tasks);
    }
    ph_info("%s: profiling under %s: %ld task%s on %s; its run dir is written when it stops (`profharness stop %s`): "
            "%s", s->name, p->name, pl.tasks, pl.tasks == 1 ? "" : "s", where, s->name, host_dir);
    printf("%s\t%s\t%s\n", s->name, p->name, host_dir);
    fflush(stdout);
    rc = 0;
out:
    ph_workload_spec_clear(&spec);
    ph_image_config_clear(&img_info);
    free(img);
    free(tag);
    free(prep.prof_img);
    return rc;
}

int
ph_run_placed_start(ph_run *r, const ph_profile *p, ph_svc_list *sl, ph_error_t *err)
{
    return ph_run_placed_each(r, p, sl, "start", start_one, err);
}

/* ---- stop and collect --------------------------------------------------- */

static int
of_run(const ph_workload *w, const char *run)
{
    return w->run != NULL && strcmp(w->run, run) == 0;
}

/* SIGTERM to the task's ph-init, as the swarm's own stop would send it:
 * the stop protocol flushes the profiler.  One not reached is the
 * rollback's to stop. */
static void
stop_task(ph_backend *b, const ph_service *s, const ph_workload *w)
{
    ph_error_t sub = NULL;

    if (b->ops->signal(b, w->id, "SIGTERM", &sub) < 0) {
        ph_debug("%s: task %d: %s", s->name, w->slot, sub->msg);
        ph_error_free(&sub);
    }
}

/* The task ID in LIST, or NULL. */
static const ph_workload *
find_task(const ph_workload_list *list, const char *id)
{
    for (size_t i = 0; i < list->n; i++)
        if (strcmp(list->v[i].id, id) == 0)
            return &list->v[i];
    return NULL;
}

/* W was placed on a node and got as far as a container there (a task
 * still pending, or refused, has no files to collect). */
static int
had_container(const ph_workload *w)
{
    static const char *const before[] = { "new", "pending", "assigned", "accepted", "preparing", "rejected" };

    if (w->node == NULL || w->node[0] == '\0')
        return 0;
    for (size_t i = 0; i < sizeof before / sizeof before[0]; i++)
        if (strcmp(w->state_text, before[i]) == 0)
            return 0;
    return 1;
}

/* A profiled service's run, as a stop or a collect holds it. */
typedef struct stack_run {
    ph_workload run;        /* the run's labels, as the service's spec carries them */
    ph_run_held h;          /* its profile, lock, run dir and tasks.json */
    ph_workload_list tasks; /* the service's tasks */
    size_t collected, lost; /* tasks so far */
    char lost_on[256];      /* the nodes of the lost ones, ", " between */
} stack_run;

#define STACK_RUN_INIT { .h = PH_RUN_HELD_INIT }

/* S's profiled run into SR: *FOUND 0 when S is not profiled now. */
static int
stack_run_find(ph_run *r, ph_backend *b, const ph_service *s, stack_run *sr, int *found, ph_error_t *err)
{
    *found = 0;
    if (b->ops->service_run(b, r->compose->project, s->name, &sr->run, found, err) < 0)
        return -1;
    if (!*found)
        return 0;
    if (!ph_run_safe_name(sr->run.run))
        return ph_fail(err, 0, "service %s: its run label is no directory name", s->name);
    return ph_run_held_profile(&sr->h, &sr->run, err);
}

/* Then S locked, its tasks listed, the run dir NAME made or opened (what a
 * dead harness left there swept), SR's tasks.json begun. */
static int
stack_run_hold(ph_run *r, ph_backend *b, const ph_service *s, stack_run *sr, const char *name, ph_error_t *err)
{
    if (ph_run_lock_service(r, s->name, &sr->h.svcfd, &sr->h.lock, err) < 0 ||
        b->ops->list(b, r->compose->project, s->name, 0, &sr->tasks, err) < 0)
        return -1;
    return ph_run_held_dir(r, &sr->h, s->name, sr->run.mode, name, err);
}

/* Task W of SR collected into SR's run dir PARENT (a copy when SNAPSHOT),
 * or lost for WHY, and counted: -1 and *err when an interrupt came, so
 * the caller goes no further. */
static int
stack_run_take(ph_run *r, ph_backend *b, stack_run *sr, const ph_service *s, const char *parent, int snapshot,
               const ph_workload *w, const char *why, ph_error_t *err)
{
    if (ph_run_placed_collect_task(r, b, sr->h.runfd, s, parent, snapshot, sr->h.pp, w, why, sr->h.summary) == 1) {
        sr->collected++;
    } else {
        size_t l = strlen(sr->lost_on);
        const char *node = w->node ? w->node : "?";

        sr->lost++;
        if (strstr(sr->lost_on, node) == NULL && l + strlen(node) + 3 < sizeof sr->lost_on)
            snprintf(sr->lost_on + l, sizeof sr->lost_on - l, "%s%s", l ? ", " : "", node);
    }
    return ph_run_placed_interrupted(s, err) ? -1 : 0;
}

static void
stack_run_close(stack_run *sr)
{
    ph_run_held_close(&sr->h);
    ph_workload_list_free(&sr->tasks);
    ph_workload_clear(&sr->run);
}

static int
stop_one(ph_run *r, ph_backend *b, const ph_service *s, int *acted, ph_error_t *err)
{
    stack_run sr = STACK_RUN_INIT;
    ph_workload_list after = { 0 };
    ph_strv done = { 0 };
    int found = 0, rolled = 0, rc = -1;
    size_t i;
    long budget;

    if (stack_run_find(r, b, s, &sr, &found, err) < 0)
        goto out;
    if (!found) { /* not restarted under a profiler; attached to, maybe */
        rc = ph_run_placed_stop_attached(r, b, s, acted, err);
        goto out;
    }
    *acted = 1;
    budget = ph_run_stop_budget_s(sr.h.pp);
    /* Every task's profiler is stopped and its files collected BEFORE
     * the rollback: a rollback can drop a slot (the service was scaled
     * down meanwhile), and the swarm deletes that slot's tasks, and their
     * containers on the nodes, with it. */
    if (stack_run_hold(r, b, s, &sr, sr.run.run, err) < 0)
        goto out;
    {
        ph_stage *st = ph_stage_beginf("profiler", 0, "stop the profiled tasks of %s", s->name);

        unsigned char *up = calloc(sr.tasks.n ? sr.tasks.n : 1, 1);

        if (up == NULL) {
            ph_fail(err, ENOMEM, "allocate");
            ph_stage_end(st);
            goto out;
        }
        for (i = 0; i < sr.tasks.n; i++) {
            up[i] = of_run(&sr.tasks.v[i], sr.run.run) && ph_workload_running(&sr.tasks.v[i]) &&
                    b->ops->lost(b, &sr.tasks.v[i], NULL) != 1;
            if (up[i]) /* the runtimes' perf maps current and in the run */
                ph_run_refresh_on(r, b, &sr.tasks.v[i], sr.h.pp);
        }
        for (i = 0; i < sr.tasks.n; i++) /* all at once */
            if (up[i])
                stop_task(b, s, &sr.tasks.v[i]);
        free(up);
        for (i = 0; i < sr.tasks.n; i++) {
            const ph_workload *w = &sr.tasks.v[i];
            ph_error_t sub = NULL;
            long code = 0;
            int timed_out = 0;

            if (!of_run(w, sr.run.run) || b->ops->lost(b, w, NULL) == 1)
                continue;
            /* one that outlasts its budget is the rollback's to end: collected after it */
            if (b->ops->wait(b, w->id, budget, &code, &timed_out, &sub) < 0 || timed_out) {
                ph_debug("%s: task %d: %s", s->name, w->slot, sub ? sub->msg : "still running");
                ph_error_free(&sub);
                continue;
            }
            if (stack_run_take(r, b, &sr, s, sr.run.run, 0, w, NULL, err) < 0) {
                ph_stage_end(st);
                goto out;
            }
            if (ph_strv_push(&done, w->id) < 0) {
                ph_fail(err, ENOMEM, "allocate");
                ph_stage_end(st);
                goto out;
            }
        }
        ph_stage_end(st);
    }
    {
        ph_stage *st = ph_stage_beginf("rollback", 0, "roll %s back as deployed", s->name);

        if (ph_run_stage_done(st, b->ops->service_unprofile(b, r->compose->project, s->name, sr.run.run, budget,
                                                             &rolled, err), err) < 0)
            goto out;
    }
    /* What was not collected before: a task that outlasted its budget
     * (the rollback ended it), one on a node that is down.  Each is looked
     * for among the tasks after the rollback, which may have removed it
     * with its slot (a node down, the slot rescheduled and dropped): lost
     * then, and said, never left out.  Then any task of the run that only
     * the second listing has. */
    if (b->ops->list(b, r->compose->project, s->name, 0, &after, err) < 0)
        goto out;
    for (i = 0; i < sr.tasks.n + after.n; i++) {
        const ph_workload *w = i < sr.tasks.n ? &sr.tasks.v[i] : &after.v[i - sr.tasks.n];
        const ph_workload *now = i < sr.tasks.n ? find_task(&after, w->id) : w;
        const char *why = NULL;

        if (!of_run(w, sr.run.run) || ph_strv_has(&done, w->id) || !had_container(w) ||
            (i >= sr.tasks.n && find_task(&sr.tasks, w->id) != NULL))
            continue;
        if (now != NULL)
            w = now;
        if (b->ops->lost(b, w, NULL) == 1)
            why = "its node is down";
        else if (now == NULL)
            why = "the rollback removed it with its slot";
        if (stack_run_take(r, b, &sr, s, sr.run.run, 0, w, why, err) < 0)
            goto out;
    }
    if (ph_rundir_write_json_at(sr.h.runfd, PH_RUN_TASKS_NAME, PH_RUN_TASKS_NAME, sr.h.summary, err) < 0)
        goto out;
    if (sr.collected > 0)
        ph_rundir_link_latest(sr.h.svcfd, r->opts.out_dir, s->name, sr.run.run);
    ph_info("%s: %zu task%s collected into %s/%s/%s%s", s->name, sr.collected, sr.collected == 1 ? "" : "s",
            r->opts.out_dir, s->name, sr.run.run, rolled ? "; the service is rolled back as deployed" : "");
    if (sr.collected == 0 && sr.lost == 0) {
        ph_fail(err, 0, "%s: no task of run %s had a container to collect", s->name, sr.run.run);
        goto out;
    }
    if (sr.lost) {
        /* the service runs as deployed again: a second stop finds no run,
         * but each lost task's container stays on its node with its files */
        ph_fail(err, 0, "%s: %zu of %zu tasks lost (tasks.json says which)", s->name, sr.lost,
                sr.lost + sr.collected);
        ph_error_hint(err, "a lost task's container stays on its node (%s) with what it wrote: once the node is "
                      "back, copy %s/%s out of it with `docker cp` (tasks.json names each task)", sr.lost_on,
                      PH_CONTAINER_OUT, s->name);
        goto out;
    }
    rc = 0;
out:
    ph_strv_free(&done);
    ph_workload_list_free(&after);
    stack_run_close(&sr);
    return rc;
}

/* ONE for each service of SL on the run's backend, each a stage named
 * WHAT; a failure is kept (the first) and the others go on.  *ACTED: some
 * service was profiled. */
typedef int (*acting_cb)(ph_run *r, ph_backend *b, const ph_service *s, int *acted, ph_error_t *err);

static int
each_acting(ph_run *r, ph_svc_list *sl, const char *what, acting_cb one, int *acted, ph_error_t *err)
{
    ph_backend *b;
    int rc = 0;

    *acted = 0;
    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    for (size_t i = 0; i < sl->n; i++) {
        ph_error_t sub = NULL;
        ph_stage *st = ph_run_service_stage(what, sl->v[i]->name, NULL);

        if (ph_run_stage_done(st, one(r, b, sl->v[i], acted, &sub), &sub) < 0) {
            if (rc == 0 && err)
                *err = sub;
            else
                ph_error_free(&sub);
            rc = -1;
        }
    }
    return rc;
}

int
ph_run_placed_stop(ph_run *r, ph_svc_list *sl, int *acted, ph_error_t *err)
{
    return each_acting(r, sl, "stop", stop_one, acted, err);
}

/* ---- discard ------------------------------------------------------------ */

/* S's run given up, nothing collected: the service taken back as
 * deployed, which ends the run's tasks (what they wrote stays in their
 * containers on the nodes, for as long as the orchestrator keeps them);
 * not restarted, what is attached to its tasks removed.  It needs
 * nothing a collection needs (a run label that names a directory, a
 * profile that loads): it is the way out when those are wrong. */
static int
discard_one(ph_run *r, ph_backend *b, const ph_service *s, int *acted, ph_error_t *err)
{
    stack_run sr = STACK_RUN_INIT;
    ph_error_t sub = NULL;
    int found = 0, rolled = 0, rc = -1;
    char esc[256];

    if (b->ops->service_run(b, r->compose->project, s->name, &sr.run, &found, err) < 0)
        goto out;
    if (found && sr.run.run == NULL) {
        ph_fail(err, 0, "%s: the service is profiled, under no run label", s->name);
        goto out;
    }
    if (found && ph_run_held_profile(&sr.h, &sr.run, &sub) < 0) { /* its grace only: the default then */
        ph_debug("%s: %s", s->name, sub->msg);
        ph_error_free(&sub);
    }
    if (!found) { /* not restarted under a profiler; attached to, maybe */
        rc = ph_run_placed_discard_attached(r, b, s, acted, err);
        goto out;
    }
    *acted = 1;
    /* as a stop holds it: a stop of the same service waits, then finds no run */
    if (ph_run_lock_service(r, s->name, &sr.h.svcfd, &sr.h.lock, err) < 0)
        goto out;
    ph_escape(esc, sizeof esc, sr.run.run);
    ph_warn("%s: discarding run %s without collecting it: whatever its tasks hold in %s/%s is lost", s->name, esc,
            PH_CONTAINER_OUT, s->name);
    if (b->ops->service_unprofile(b, r->compose->project, s->name, sr.run.run, ph_run_stop_budget_s(sr.h.pp),
                                  &rolled, err) < 0) {
        ph_error_wrap(err, "discard run %s of `%s`", esc, s->name);
        goto out;
    }
    ph_info("%s: %s; nothing was collected", s->name,
            rolled ? "taken back as deployed" : "under no run any more");
    rc = 0;
out:
    stack_run_close(&sr);
    return rc;
}

int
ph_run_placed_discard(ph_run *r, ph_svc_list *sl, int *acted, ph_error_t *err)
{
    return each_acting(r, sl, "discard", discard_one, acted, err);
}

/* ---- collect ------------------------------------------------------------ */

static int
snapshot_one(ph_run *r, ph_backend *b, const ph_service *s, int *acted, ph_error_t *err)
{
    stack_run sr = STACK_RUN_INIT;
    char name[NAME_MAX], stamp[17];
    int found = 0, rc = -1;
    size_t i;

    if (stack_run_find(r, b, s, &sr, &found, err) < 0)
        goto out;
    if (!found) { /* not restarted under a profiler; attached to, maybe */
        rc = ph_run_placed_snapshot_attached(r, b, s, acted, err);
        goto out;
    }
    *acted = 1;
    ph_run_utc_stamp(stamp);
    snprintf(name, sizeof name, "%s-snapshot-%s", sr.run.run, stamp);
    if (stack_run_hold(r, b, s, &sr, name, err) < 0)
        goto out;
    for (i = 0; i < sr.tasks.n; i++) {
        const ph_workload *w = &sr.tasks.v[i];

        if (!of_run(w, sr.run.run) || !ph_workload_running(w))
            continue;
        if (b->ops->lost(b, w, NULL) == 1) {
            stack_run_take(r, b, &sr, s, name, 1, w, "its node is down", err);
            continue;
        }
        ph_run_snapshot_request_on(r, b, w, sr.h.pp); /* what the profiler has now, not what it wrote last */
        if (stack_run_take(r, b, &sr, s, name, 1, w, NULL, err) < 0)
            goto out;
    }
    if (ph_rundir_write_json_at(sr.h.runfd, PH_RUN_TASKS_NAME, PH_RUN_TASKS_NAME, sr.h.summary, err) < 0)
        goto out;
    ph_rundir_give_at(sr.h.runfd, PH_RUN_TASKS_NAME);
    if (sr.collected > 0)
        printf("%s\t%s/%s/%s\n", s->name, r->opts.out_dir, s->name, name);
    fflush(stdout);
    ph_info("%s: %zu running task%s copied into %s/%s/%s; they run on", s->name, sr.collected,
            sr.collected == 1 ? "" : "s", r->opts.out_dir, s->name, name);
    if (sr.collected == 0 && sr.lost == 0) {
        ph_fail(err, 0, "%s: no task of run %s is running", s->name, sr.run.run);
        goto out;
    }
    rc = sr.lost ? ph_fail(err, 0, "%s: %zu of %zu tasks not copied (tasks.json says which)", s->name, sr.lost,
                           sr.lost + sr.collected)
                 : 0;
out:
    stack_run_close(&sr);
    return rc;
}

int
ph_run_placed_collect(ph_run *r, ph_svc_list *sl, int *acted, ph_error_t *err)
{
    return each_acting(r, sl, "collect", snapshot_one, acted, err);
}

/* ---- down --------------------------------------------------------------- */

int
ph_run_placed_down(ph_run *r, ph_svc_list *sl, ph_error_t *err)
{
    ph_backend *b;
    int acted = 0, removed = 0, rc = 0;

    /* a profiled run is collected and rolled back first: down never loses
     * one; the index then lists it, as a plain down's stop does */
    rc = ph_run_placed_stop(r, sl, &acted, err);
    if (acted)
        ph_run_write_index(r);
    if (rc < 0)
        return -1;
    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    for (size_t i = 0; i < sl->n; i++) {
        int found = 0;

        if ((rc = b->ops->service_remove(b, r->compose->project, sl->v[i]->name, &found, err)) < 0) {
            ph_error_wrap(err, "%s", sl->v[i]->name);
            break;
        }
        if (found)
            ph_info("%s: service %s_%s removed (%s stops its tasks)", sl->v[i]->name, r->compose->project,
                    sl->v[i]->name, b->ops->describe(b));
        removed += found;
    }
    if (rc == 0 && removed == 0)
        ph_info("nothing to take down: no service of stack `%s` is there", r->compose->project);
    else if (rc == 0)
        ph_info("stack `%s`: %d service%s removed; its networks stay (`docker stack rm %s` removes them)",
                r->compose->project, removed, removed == 1 ? "" : "s", r->compose->project);
    return rc;
}

/* ---- status ------------------------------------------------------------- */

/* Tasks per node: by node, then service, then slot. */
static int
by_node(const void *a, const void *b)
{
    const ph_workload *x = a, *y = b;
    int c = strcmp(x->node ? x->node : "", y->node ? y->node : "");

    if (c == 0)
        c = strcmp(x->service ? x->service : "", y->service ? y->service : "");
    return c != 0 ? c : (x->slot > y->slot) - (x->slot < y->slot);
}

int
ph_run_placed_status(ph_run *r, FILE *out, ph_error_t *err)
{
    ph_backend *b;
    ph_workload_list l = { 0 };

    if (ph_run_backend(r, &b, err) < 0 || b->ops->list(b, r->compose->project, NULL, 0, &l, err) < 0)
        return -1;
    if (l.n > 1)
        qsort(l.v, l.n, sizeof *l.v, by_node);
    fprintf(out, "%-24s %-16s %-5s %-10s %-10s %s\n", "NODE", "SERVICE", "SLOT", "MODE", "STATE", "RUN DIR");
    for (size_t i = 0; i < l.n; i++) {
        const ph_workload *w = &l.v[i];

        ph_escape_printf(out, "%-24s %-16s %-5d %-10s %-10s %s\n", w->node ? w->node : "?",
                         w->service ? w->service : "?", w->slot, w->mode ? w->mode : "none", w->state_text,
                         w->outdir && !w->by_compose ? w->outdir : "-");
    }
    ph_workload_list_free(&l);
    return 0;
}
