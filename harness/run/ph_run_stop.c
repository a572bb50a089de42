/* ph_run_stop.c - the stop, discard and collect commands: the services selected,
 * then handed to the placed backend when the run's orchestrator places
 * them (ph_run_placed.c), else each profiled container stopped or copied
 * by ph_run_collect.c, and the index rewritten.  On top of both: neither
 * calls back here.
 */
#include "ph_run_int.h"

#include <stdlib.h>

#include "ph_log.h"

/* FN (ph_run_placed_stop, _collect) over a stack's services SL, said when
 * none was profiled (VERB: what was asked); the index rewritten when one
 * was. */
static int
on_stack(ph_run *r, ph_svc_list *sl, int (*fn)(ph_run *, ph_svc_list *, int *, ph_error_t *), const char *verb,
         ph_error_t *err)
{
    int acted = 0, rc = fn(r, sl, &acted, err);

    if (rc == 0 && !acted)
        ph_info("nothing to %s: no service of stack `%s` is profiled", verb, r->compose->project);
    if (acted)
        ph_run_write_index(r);
    return rc;
}

int
ph_run_stop(ph_run *r, char **services, int n, ph_error_t *err)
{
    ph_svc_list sl;
    int rc;

    if (ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    ph_run_order_dependants_first(r, &sl); /* as compose stops them */
    if ((rc = ph_run_placed(r, err)) != 0) { /* a stack's services */
        if (rc > 0)
            rc = on_stack(r, &sl, ph_run_placed_stop, "stop", err);
        free(sl.v);
        return rc;
    }
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
    if ((rc = ph_run_placed(r, err)) != 0) { /* a stack's services: one run, a sub-dir per task */
        if (rc > 0)
            rc = on_stack(r, &sl, ph_run_placed_collect, "collect", err);
        free(sl.v);
        return rc;
    }
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        ph_workload_list list = { 0 };
        const ph_workload *c;
        size_t k;

        if (ph_run_list(r, sl.v[i]->name, &list, err) < 0) {
            rc = -1;
            break;
        }
        for (k = 0; k < list.n && ((c = &list.v[k]), 1); k++) {
            if (!ph_workload_profiled(c))
                continue;
            any = 1;
            /* A stopped profiled container: a stop that failed half way. */
            rc = ph_workload_running(c) ? ph_run_snapshot_one(r, c, err) : ph_run_stop_one(r, c, err);
            if (rc < 0)
                break;
        }
        ph_workload_list_free(&list);
    }
    if (rc == 0 && !any)
        ph_info("nothing to collect: no profiled container in project `%s`", r->compose->project);
    if (any)
        ph_run_write_index(r);
    free(sl.v);
    return rc;
}

int
ph_run_discard(ph_run *r, char **services, int n, ph_error_t *err)
{
    ph_svc_list sl;
    int rc, discarded = 0;

    if (ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    /* a stack's services: each run given up by the orchestrator (rolled
     * back), or what is attached to its tasks removed; nothing collected,
     * so the index stays as it is */
    if ((rc = ph_run_placed(r, err)) > 0) {
        rc = ph_run_placed_discard(r, &sl, &discarded, err);
        if (rc == 0 && !discarded)
            ph_info("nothing to discard: no service of stack `%s` is profiled", r->compose->project);
    } else if (rc == 0) {
        rc = ph_run_discard_services(r, &sl, &discarded, err);
        if (rc == 0 && discarded == 0)
            ph_info("nothing to discard: no profiled container in project `%s`", r->compose->project);
    }
    free(sl.v);
    return rc;
}
