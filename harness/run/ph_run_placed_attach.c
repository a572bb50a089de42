/* ph_run_placed_attach.c - attach to a stack's service without a restart:
 * one tools container beside each running task, on the task's node.
 *
 *   attach   every running task of the service (the Swarm backend lists
 *            them), each on its node's Engine (the backend reaches it as
 *            it does for collection): the tools image made sure of there,
 *            a tools container in the task's container's PID namespace,
 *            labelled as the run, with the task's slot and node.  All
 *            tasks are checked first (node reached, nothing attached
 *            yet, the service not restarted under a mode), so a refusal
 *            attaches nothing.  The tasks keep running: the service's spec
 *            is not touched.
 *   stop     (ph_run_placed_stop_attached, from the stop of a service not
 *            restarted under a mode) each node the service's tasks ran on
 *            is asked for the tools containers attached to the service;
 *            every one is sent SIGTERM (ph-init detaches the profiler,
 *            which writes its end), waited for, collected into
 *            <run>/<slot>-<node>/ like a profiled task, and removed; one
 *            that could not be collected stays on its node.
 *   discard  (ph_run_placed_discard_attached, `stop --discard`) every one
 *            found so removed from its node, nothing collected.
 *
 * Tasks that start after the attach (a node joins, a task is replaced)
 * are not attached to: attach again after a stop.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_image.h"
#include "ph_log.h"

/* A task to attach to: its node's backend and its container there. */
typedef struct beside {
    const ph_workload *task;
    ph_backend *nb;
    char cid[80];
} beside;

/* Is something attached to SERVICE on NB already?  1 yes (*WHICH names
 * it), 0 no, -1. */
static int
attached_on(ph_run *r, ph_backend *nb, const char *service, char *which, size_t len, ph_error_t *err)
{
    ph_workload_list l = { 0 };
    int found = 0;

    if (nb->ops->list(nb, r->compose->project, service, 0, &l, err) < 0)
        return -1;
    for (size_t i = 0; i < l.n && !found; i++)
        if (l.v[i].attached != NULL) {
            snprintf(which, len, "%s", l.v[i].name ? l.v[i].name : l.v[i].id);
            found = 1;
        }
    ph_workload_list_free(&l);
    return found;
}

static int
attach_service(ph_run *r, ph_backend *b, const ph_service *s, const ph_profile *p, ph_error_t *err)
{
    ph_workload_list tasks = { 0 };
    ph_workload run = { 0 };
    beside *bs = NULL;
    size_t n = 0, made = 0;
    char run_id[64], stamp[17], host_dir[PATH_MAX];
    int found = 0, rc = -1;

    if (b->ops->service_run(b, r->compose->project, s->name, &run, &found, err) < 0)
        return -1;
    if (found) {
        ph_bad_input(err, "`%s` is already being profiled under %s (its tasks restarted for it)", s->name,
                     run.mode ? run.mode : "?");
        ph_error_hint(err, "stop it first: `profharness stop %s` (it is collected), then attach with `--mode %s`",
                      s->name, p->name);
        goto out;
    }
    if (b->ops->list(b, r->compose->project, s->name, 0, &tasks, err) < 0)
        goto out;
    if ((bs = calloc(tasks.n ? tasks.n : 1, sizeof *bs)) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    /* every running task reached, and none attached to, before any is */
    for (size_t i = 0; i < tasks.n; i++) {
        char which[256];
        int already;

        if (!ph_workload_running(&tasks.v[i]))
            continue;
        bs[n].task = &tasks.v[i];
        if (b->ops->reach(b, tasks.v[i].id, &bs[n].nb, bs[n].cid, sizeof bs[n].cid, err) < 0) {
            ph_error_wrap(err, "%s: task %d on %s", s->name, tasks.v[i].slot, tasks.v[i].node);
            goto out;
        }
        n++;
        if ((already = attached_on(r, bs[n - 1].nb, s->name, which, sizeof which, err)) < 0)
            goto out;
        if (already) {
            ph_bad_input(err, "`%s` is already attached to on %s (container %s): one profiler at a time", s->name,
                         tasks.v[i].node, which);
            ph_error_hint(err, "stop it first: `profharness stop %s`", s->name);
            goto out;
        }
        /* a runtime the mode would name nothing of, as on one Engine */
        if (ph_run_unnamed_attach(r, bs[n - 1].nb, s, p, bs[n - 1].cid, err) < 0) {
            ph_error_wrap(err, "task %d on %s", tasks.v[i].slot, tasks.v[i].node);
            goto out;
        }
    }
    if (n == 0) {
        ph_bad_input(err, "`%s` has no running task: there is nothing to attach to", s->name);
        ph_error_hint(err, "see where its tasks are with `profharness status`");
        goto out;
    }
    ph_run_utc_stamp(stamp);
    snprintf(run_id, sizeof run_id, "%s-%s", stamp, p->name);
    snprintf(host_dir, sizeof host_dir, "%s/%s/%s", r->opts.out_dir, s->name, run_id);
    for (size_t i = 0; i < n; i++) {
        const ph_workload *t = bs[i].task;
        ph_kvv labels = { 0 };
        char *tools = NULL, *name = NULL, slot[16];

        snprintf(slot, sizeof slot, "%d", t->slot);
        /* each node's Engine has its own images: the tools image is made
         * sure of there */
        if (asprintf(&name, "%s-%s-attach-%s-%d", r->compose->project, s->name, p->name, t->slot) < 0)
            name = NULL; /* asprintf leaves it undefined */
        if (name == NULL || ph_image_ensure_tools(bs[i].nb, r->data_dir, &r->profiles, &tools, err) < 0 ||
            ph_kvv_set(&labels, PH_LABEL_TASK_SLOT, slot) < 0 ||
            ph_kvv_set(&labels, PH_LABEL_TASK_NODE, t->node ? t->node : "") < 0) {
            if (err && *err == NULL)
                ph_fail(err, ENOMEM, "allocate");
        } else {
            ph_run_attach_to to = { .service = s, .profile = p, .target = bs[i].cid, .tools = tools, .name = name,
                                    .run_id = run_id, .host_dir = host_dir, .labels = &labels };

            if (ph_run_attach_make(r, bs[i].nb, &to, err) == 0)
                made++;
        }
        ph_kvv_free(&labels);
        free(tools);
        free(name);
        if (made != i + 1) {
            if (made > 0)
                ph_error_hint(err, "%zu task%s of `%s` %s attached to already: `profharness stop %s` detaches "
                              "and collects them", made, made == 1 ? "" : "s", s->name, made == 1 ? "is" : "are",
                              s->name);
            goto out;
        }
        ph_info("%s: attached %s to task %d on %s (container %.12s), which keeps running", s->name, p->name, t->slot,
                t->node, bs[i].cid);
    }
    ph_info("%s: attached %s to %zu task%s, run %s; `profharness stop %s` detaches and collects each", s->name,
            p->name, made, made == 1 ? "" : "s", run_id, s->name);
    printf("%s\t%s\t%s\n", s->name, p->name, host_dir);
    fflush(stdout);
    rc = 0;
out:
    for (size_t i = 0; bs != NULL && i < n; i++)
        ph_backend_close(bs[i].nb);
    free(bs);
    ph_workload_list_free(&tasks);
    ph_workload_clear(&run);
    return rc;
}

int
ph_run_placed_attach(ph_run *r, const ph_profile *p, ph_svc_list *sl, ph_error_t *err)
{
    return ph_run_placed_each(r, p, sl, "attach", attach_service, err);
}

/* ---- stop: detach, collect, remove --------------------------------------- */

/* A tools container found on a node. */
typedef struct found_attach {
    ph_backend *nb; /* its node's (owned by the set) */
    ph_workload w;
} found_attach;

#define NODES_MAX PH_PLACEMENT_NODES_MAX

/* What is attached to a service's tasks, found on each node they ran on. */
typedef struct attached_set {
    ph_backend *nodes[NODES_MAX];
    const char *node_names[NODES_MAX]; /* the tasks' */
    size_t n_nodes, unreached;
    found_attach *fa;
    size_t n, cap;
    ph_workload_list tasks;
} attached_set;

static void
attached_free(attached_set *as)
{
    for (size_t i = 0; i < as->n; i++)
        ph_workload_clear(&as->fa[i].w);
    free(as->fa);
    for (size_t j = 0; j < as->n_nodes; j++)
        ph_backend_close(as->nodes[j]);
    ph_workload_list_free(&as->tasks);
}

/* Every tools container attached to S's tasks into AS (zeroed by the
 * caller), each node reached once through B (ops.reach); a node not
 * reached is said and counted. */
static int
attached_find(ph_run *r, ph_backend *b, const ph_service *s, attached_set *as, ph_error_t *err)
{
    if (b->ops->list(b, r->compose->project, s->name, 0, &as->tasks, err) < 0)
        return -1;
    /* every node the service's tasks ran on, once */
    for (size_t i = 0; i < as->tasks.n; i++) {
        const char *node = as->tasks.v[i].node ? as->tasks.v[i].node : "";
        ph_backend *nb = NULL;
        ph_error_t sub = NULL;
        char cid[80];
        int seen = 0;

        for (size_t j = 0; j < as->n_nodes; j++)
            seen |= strcmp(as->node_names[j], node) == 0;
        if (seen || as->n_nodes == NODES_MAX)
            continue;
        /* a task with no container (yet, or any more) does not say where
         * its node's Engine is: another task of the node will */
        if (b->ops->reach(b, as->tasks.v[i].id, &nb, cid, sizeof cid, &sub) < 0) {
            ph_debug("%s: task %d on %s: %s", s->name, as->tasks.v[i].slot, node, sub->msg);
            ph_error_free(&sub);
            continue;
        }
        as->node_names[as->n_nodes] = node;
        as->nodes[as->n_nodes++] = nb;
    }
    for (size_t j = 0; j < as->n_nodes; j++) {
        ph_workload_list l = { 0 };
        ph_error_t sub = NULL;

        if (as->nodes[j]->ops->list(as->nodes[j], r->compose->project, s->name, 0, &l, &sub) < 0) {
            ph_warn("%s: node %s not reached: %s; a profiler attached there stays (stop again once it is back)",
                    s->name, as->node_names[j], sub->msg);
            ph_error_free(&sub);
            as->unreached++;
            continue;
        }
        for (size_t i = 0; i < l.n; i++) {
            if (l.v[i].attached == NULL)
                continue;
            if (as->n == as->cap) {
                found_attach *g = realloc(as->fa, (as->cap = as->cap ? as->cap * 2 : 4) * sizeof *as->fa);

                if (g == NULL) {
                    ph_workload_list_free(&l);
                    return ph_fail(err, ENOMEM, "allocate");
                }
                as->fa = g;
            }
            as->fa[as->n].nb = as->nodes[j];
            as->fa[as->n].w = l.v[i]; /* moved */
            memset(&l.v[i], 0, sizeof l.v[i]);
            as->n++;
        }
        ph_workload_list_free(&l);
    }
    return 0;
}

/* The task an attached container W stands beside, as a task dir names
 * it (its slot and node labels), into SHOWN: a shallow copy of W. */
static void
beside_task(const ph_workload *w, ph_workload *shown)
{
    const char *slot = ph_kvv_get(&w->labels, PH_LABEL_TASK_SLOT);

    *shown = *w;
    shown->slot = slot ? atoi(slot) : 0;
    shown->node = (char *)ph_kvv_get(&w->labels, PH_LABEL_TASK_NODE);
}

/* An attached run being stopped or copied: what is attached to the
 * service, the run it belongs to, and the run held (its profile, the
 * service's dir locked, the run dir and its tasks.json). */
typedef struct attached_run {
    attached_set as;
    const char *run; /* the first container's run label, in as */
    ph_run_held h;
} attached_run;

/* What is attached to S found into AR, the service's dir locked and, to
 * COLLECT it, its run label checked and its profile read: 1 (*ACTED set),
 * 0 when nothing is attached, -1.  attached_run_close(AR) in every case. */
static int
attached_run_open(ph_run *r, ph_backend *b, const ph_service *s, attached_run *ar, int collect, int *acted,
                  ph_error_t *err)
{
    const ph_workload *w;

    *ar = (attached_run){ .h = PH_RUN_HELD_INIT };
    if (attached_find(r, b, s, &ar->as, err) < 0)
        return -1;
    if (ar->as.n == 0)
        return 0;
    *acted = 1;
    w = &ar->as.fa[0].w;
    ar->run = w->run;
    if (collect && (ar->run == NULL || !ph_run_safe_name(ar->run)))
        return ph_fail(err, 0, "%s: an attached container's run label is no directory name", s->name);
    if ((collect && ph_run_held_profile(&ar->h, w, err) < 0) ||
        ph_run_lock_service(r, s->name, &ar->h.svcfd, &ar->h.lock, err) < 0)
        return -1;
    return 1;
}

/* The run dir NAME of S opened in AR, and its tasks.json begun. */
static int
attached_run_dir(ph_run *r, const ph_service *s, attached_run *ar, const char *name, ph_error_t *err)
{
    if (ph_run_held_dir(r, &ar->h, s->name, ar->as.fa[0].w.mode, name, err) < 0)
        return -1;
    if (json_object_set_new(ar->h.summary, "attached", json_true()) < 0)
        return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

static void
attached_run_close(attached_run *ar)
{
    attached_free(&ar->as);
    ph_run_held_close(&ar->h);
}

int
ph_run_placed_stop_attached(ph_run *r, ph_backend *b, const ph_service *s, int *acted, ph_error_t *err)
{
    attached_run ar;
    found_attach *fa;
    size_t n, collected = 0, lost = 0;
    long budget;
    int rc;

    if ((rc = attached_run_open(r, b, s, &ar, 1, acted, err)) <= 0)
        goto out;
    rc = -1;
    fa = ar.as.fa;
    n = ar.as.n;
    budget = ph_run_stop_budget_s(ar.h.pp);
    /* the runtimes' perf maps current and in the run (jcmd
     * Compiler.perfmap), each through its node */
    for (size_t i = 0; i < n; i++)
        ph_run_refresh_on(r, fa[i].nb, &fa[i].w, ar.h.pp);
    /* detach them all at once: each profiler writes its end */
    for (size_t i = 0; i < n; i++) {
        ph_error_t sub = NULL;

        if (fa[i].nb->ops->signal(fa[i].nb, fa[i].w.id, "SIGTERM", &sub) < 0) {
            ph_debug("%s: signal %s: %s", s->name, fa[i].w.name, sub->msg);
            ph_error_free(&sub);
        }
    }
    if (attached_run_dir(r, s, &ar, ar.run, err) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        ph_workload shown;
        const char *why = NULL;
        ph_error_t sub = NULL;
        long code = 0;
        int timed_out = 0;

        beside_task(&fa[i].w, &shown);
        if (fa[i].nb->ops->wait(fa[i].nb, fa[i].w.id, budget, &code, &timed_out, &sub) < 0 || timed_out) {
            why = sub ? sub->msg : "it did not end within its stop budget";
        } else if (fa[i].w.run == NULL || strcmp(fa[i].w.run, ar.run) != 0) {
            why = "it belongs to another run";
        }
        if (ph_run_placed_collect_task(r, fa[i].nb, ar.h.runfd, s, ar.run, 0, ar.h.pp, &shown, why,
                                       ar.h.summary) == 1) {
            ph_error_t e2 = NULL;

            collected++;
            if (fa[i].nb->ops->remove(fa[i].nb, fa[i].w.id, 0, &e2) < 0) {
                ph_warn("%s: tools container %s collected but not removed: %s", s->name, fa[i].w.name, e2->msg);
                ph_error_free(&e2);
            }
        } else {
            lost++;
        }
        ph_error_free(&sub);
        if (ph_run_placed_interrupted(s, err))
            goto out;
    }
    if (ph_rundir_write_json_at(ar.h.runfd, PH_RUN_TASKS_NAME, PH_RUN_TASKS_NAME, ar.h.summary, err) < 0)
        goto out;
    if (collected > 0)
        ph_rundir_link_latest(ar.h.svcfd, r->opts.out_dir, s->name, ar.run);
    ph_info("%s: detached from %zu task%s, collected into %s/%s/%s", s->name, collected, collected == 1 ? "" : "s",
            r->opts.out_dir, s->name, ar.run);
    if (lost)
        rc = ph_fail(err, 0, "%s: %zu of %zu attached tasks not collected (tasks.json says which; their tools "
                     "containers stay on their nodes: `profharness stop %s` again)", s->name, lost, n, s->name);
    else if (ar.as.unreached)
        rc = ph_fail(err, 0, "%s: %zu node%s not reached (said above): what is attached there is not collected",
                     s->name, ar.as.unreached, ar.as.unreached == 1 ? "" : "s");
    else
        rc = 0;
out:
    attached_run_close(&ar);
    return rc;
}

/* ---- discard: every tools container removed, nothing collected --------- */

int
ph_run_placed_discard_attached(ph_run *r, ph_backend *b, const ph_service *s, int *acted, ph_error_t *err)
{
    attached_run ar;
    size_t removed = 0, kept = 0;
    char esc[256];
    int rc;

    if ((rc = attached_run_open(r, b, s, &ar, 0, acted, err)) <= 0)
        goto out;
    ph_escape(esc, sizeof esc, ar.run ? ar.run : "?");
    ph_warn("%s: discarding what is attached to its tasks (run %s) without collecting it: whatever it holds in "
            "%s/%s is lost", s->name, esc, PH_CONTAINER_OUT, s->name);
    for (size_t i = 0; i < ar.as.n; i++) {
        const found_attach *fa = &ar.as.fa[i];
        ph_error_t sub = NULL;
        char name[256];

        if (fa->nb->ops->remove(fa->nb, fa->w.id, 1, &sub) == 0) {
            removed++;
            continue;
        }
        kept++;
        ph_warn("%s: tools container %s not removed: %s", s->name,
                ph_escape(name, sizeof name, fa->w.name ? fa->w.name : fa->w.id), sub ? sub->msg : "?");
        ph_error_free(&sub);
    }
    ph_info("%s: %zu tools container%s removed from beside its tasks; nothing was collected", s->name, removed,
            removed == 1 ? "" : "s");
    if (kept)
        rc = ph_fail(err, 0, "%s: %zu of %zu attached tools containers not removed (said above)", s->name, kept,
                     ar.as.n);
    else if (ar.as.unreached)
        rc = ph_fail(err, 0, "%s: %zu node%s not reached (said above): what is attached there stays", s->name,
                     ar.as.unreached, ar.as.unreached == 1 ? "" : "s");
    else
        rc = 0;
out:
    attached_run_close(&ar);
    return rc;
}

/* ---- collect: a copy of each attached task's files --------------------- */

int
ph_run_placed_snapshot_attached(ph_run *r, ph_backend *b, const ph_service *s, int *acted, ph_error_t *err)
{
    attached_run ar;
    char name[NAME_MAX], stamp[17];
    size_t collected = 0, lost = 0;
    int rc;

    if ((rc = attached_run_open(r, b, s, &ar, 1, acted, err)) <= 0)
        goto out;
    rc = -1;
    /* laid out as stop lays the run out, a sub-dir per task */
    ph_run_utc_stamp(stamp);
    snprintf(name, sizeof name, "%s-snapshot-%s", ar.run, stamp);
    if (attached_run_dir(r, s, &ar, name, err) < 0)
        goto out;
    for (size_t i = 0; i < ar.as.n; i++) {
        const found_attach *fa = &ar.as.fa[i];
        const char *why = NULL;
        ph_workload shown;

        beside_task(&fa->w, &shown);
        if (fa->w.run == NULL || strcmp(fa->w.run, ar.run) != 0)
            why = "it belongs to another run";
        else if (!ph_workload_running(&fa->w))
            why = "it is not running";
        else /* what the profiler has now, not what it wrote last */
            ph_run_snapshot_request_on(r, fa->nb, &fa->w, ar.h.pp);
        if (ph_run_placed_collect_task(r, fa->nb, ar.h.runfd, s, name, 1, ar.h.pp, &shown, why, ar.h.summary) == 1)
            collected++;
        else
            lost++;
        if (ph_run_placed_interrupted(s, err))
            goto out;
    }
    if (ph_rundir_write_json_at(ar.h.runfd, PH_RUN_TASKS_NAME, PH_RUN_TASKS_NAME, ar.h.summary, err) < 0)
        goto out;
    ph_rundir_give_at(ar.h.runfd, PH_RUN_TASKS_NAME);
    if (collected > 0)
        printf("%s\t%s/%s/%s\n", s->name, r->opts.out_dir, s->name, name);
    fflush(stdout);
    ph_info("%s: %zu attached task%s copied into %s/%s/%s; they run on, attached", s->name, collected,
            collected == 1 ? "" : "s", r->opts.out_dir, s->name, name);
    rc = lost ? ph_fail(err, 0, "%s: %zu of %zu attached tasks not copied (tasks.json says which)", s->name, lost,
                        lost + collected)
              : 0;
out:
    attached_run_close(&ar);
    return rc;
}
