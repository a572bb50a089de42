/* ph_run_placed_task.c - what the commands on placed services
 * (ph_run_placed.c) and attach on them (ph_run_placed_attach.c) share:
 * each service of a selection in its stage, one task collected into its
 * <slot>-<node> sub-dir of the run, an interrupt said, and the run a stop
 * holds (its service dir, lock, run dir, tasks.json).  Below both: it
 * calls neither.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_signal.h"
#include "ph_util.h"

int
ph_run_placed_each(ph_run *r, const ph_profile *p, ph_svc_list *sl, const char *what, ph_run_placed_one_cb one,
                  ph_error_t *err)
{
    ph_backend *b;
    int rc = 0;

    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    for (size_t i = 0; rc == 0 && i < sl->n; i++) {
        ph_stage *st = ph_run_service_stage(what, sl->v[i]->name, p->name);

        rc = ph_run_stage_done(st, one(r, b, sl->v[i], p, err), err);
    }
    return rc;
}

/* A directory name of W: "<slot>-<node>", the node's name made safe. */
static void
task_dir_name(const ph_workload *w, char *out, size_t size)
{
    char *p;

    snprintf(out, size, "%d-%s", w->slot, w->node ? w->node : "node");
    for (p = out; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_' || *p == '.'))
            *p = '_';
    if (out[0] == '.')
        out[0] = '_';
}

int
ph_run_placed_collect_task(ph_run *r, ph_backend *b, int runfd, const ph_service *s, const char *run, int snapshot,
                          const ph_profile *pp, const ph_workload *w, const char *why, json_t *summary)
{
    char name[NAME_MAX];
    ph_run_task_dir at = { .runfd = runfd, .parent = run, .dir = name, .snapshot = snapshot };
    ph_error_t sub = NULL;

    task_dir_name(w, name, sizeof name);
    /* perf: folded stacks, flamegraph, pprof beside perf.data, the
     * converter on the manager (an interrupt leaves the task as it is) */
    if (why == NULL && !snapshot && ph_run_convert_from(r, b, w, pp, &sub) < 0)
        why = sub->msg;
    if (why == NULL) {
        ph_stage *st = ph_stage_beginf("collect", 0, "collect task %d of %s on %s", w->slot, s->name, w->node);

        at.extra = json_pack("{s:s, s:s?, s:i, s:s}", "task", w->id, "node", w->node, "slot", w->slot, "task_state",
                             w->state_text);
        if (at.extra == NULL)
            ph_fail(&sub, ENOMEM, "allocate");
        if (ph_run_stage_done(st, at.extra == NULL ? -1 : ph_run_collect_task(r, b, w, pp, &at, &sub), &sub) < 0)
            why = sub->msg;
        json_decref(at.extra);
    }
    if (why == NULL)
        ph_info("%s: task %d on %s collected: %s/%s/%s/%s", s->name, w->slot, w->node, r->opts.out_dir, s->name, run,
                name);
    else
        ph_warn("%s: task %d on %s not collected: %s (%s %s: its container stays on the node)", s->name, w->slot,
                w->node, why, w->attached ? "container" : "task", w->id);
    if (ph_run_tasks_add(summary, w->slot, w->node, w->id, name, why) < 0)
        ph_warn("%s: task %d on %s: out of memory for tasks.json", s->name, w->slot, w->node);
    ph_error_free(&sub);
    return why == NULL;
}

int
ph_run_placed_interrupted(const ph_service *s, ph_error_t *err)
{
    int sig = ph_interrupted();

    if (sig == 0)
        return 0;
    ph_interrupt_fail(err, sig);
    ph_error_hint(err, "what is not collected stays on its node, the service as it is: `profharness stop %s` "
                  "again collects the rest", s->name);
    return 1;
}

int
ph_run_held_profile(ph_run_held *h, const ph_workload *w, ph_error_t *err)
{
    if (w->profile == NULL)
        return 0;
    if (ph_rundir_profile_load(w->profile, w->mode, &h->own, err) < 0)
        return -1;
    h->pp = &h->own;
    return 0;
}

int
ph_run_held_dir(ph_run *r, ph_run_held *h, const char *service, const char *mode, const char *name,
                ph_error_t *err)
{
    if (ph_run_open_run_dir(r, h->svcfd, service, name, &h->runfd, err) < 0)
        return -1;
    if ((h->summary = ph_run_tasks_new(service, mode, name)) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

void
ph_run_held_close(ph_run_held *h)
{
    json_decref(h->summary);
    if (h->pp)
        ph_profile_free(h->pp);
    if (h->runfd >= 0)
        close(h->runfd);
    if (h->lock >= 0)
        close(h->lock);
    if (h->svcfd >= 0)
        close(h->svcfd);
}
