/* ph_run_status.c - the `status` and `logs` commands: what runs of the
 * project, under which mode, since when, with which run dir; and what a
 * service printed.  On top of the loop's files: it calls the placed
 * backends' status and the kept service.log, which call nothing here.
 */
#include "ph_run_int.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_log.h"

int
ph_run_status(ph_run *r, FILE *out, ph_error_t *err)
{
    ph_workload_list list = { 0 };
    int placed = ph_run_placed(r, err);

    if (placed != 0)
        return placed < 0 ? -1 : ph_run_placed_status(r, out, err);
    if (ph_run_list(r, NULL, &list, err) < 0)
        return -1;
    fprintf(out, "%-16s %-10s %-10s %-21s %s\n", "SERVICE", "MODE", "STATE", "SINCE", "RUN DIR");
    for (size_t i = 0; i < r->compose->n_services; i++) {
        const ph_service *s = &r->compose->services[i];
        const ph_workload *c;
        size_t k;
        int shown = 0;

        for (k = 0; k < list.n && ((c = &list.v[k]), 1); k++) {
            const char *svc = c->service;
            const char *since = c->started;
            char dir[PATH_MAX], created[32] = "-", e_mode[64], e_state[32], e_since[64], e_dir[PATH_MAX];
            char who[160];
            ph_error_t bad = NULL;
            int mismatch;

            if (svc == NULL || strcmp(svc, s->name) != 0)
                continue;
            if (since == NULL) {
                time_t t = (time_t)c->created;
                struct tm tm;
                gmtime_r(&t, &tm);
                strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
                since = created;
            }
            /* The run dir is this command's (-o), not the label's. */
            mismatch = ph_run_outdir_check(r, c, dir, sizeof dir, &bad) < 0;
            ph_error_free(&bad);
            /* each replica by its number; a profiled one's run dir is its sub-dir */
            if ((s->replicas > 1 || c->replicas > 1) && c->slot > 0)
                snprintf(who, sizeof who, "%s/%d", s->name, c->slot);
            else
                snprintf(who, sizeof who, "%s", s->name);
            if (c->replicas > 1 && c->slot > 0 && strlen(dir) + 12 < sizeof dir)
                snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/%d", c->slot);
            /* Labels and states are the Engine's answer: escaped.  A run
             * dir appears when the run is collected: until then, say so. */
            fprintf(out, "%-16s %-10s %-10s %-21s %s%s\n", who,
                    c->by_compose ? "compose" : ph_escape(e_mode, sizeof e_mode, c->mode),
                    ph_escape(e_state, sizeof e_state, c->state_text),
                    ph_escape(e_since, sizeof e_since, since),
                    ph_workload_profiled(c) && !c->by_compose ? ph_escape(e_dir, sizeof e_dir, dir) : "-",
                    !ph_workload_profiled(c) || c->by_compose ? ""
                    : mismatch ? " (not profharness's labels: not collected)"
                    : access(dir, F_OK) != 0 ? " (written at stop)" : "");
            shown = 1;
        }
        if (!shown)
            fprintf(out, "%-16s %-10s %-10s %-21s %s\n", s->name, "-", "absent", "-", "-");
    }
    ph_workload_list_free(&list);
    return 0;
}

/* Who W is among a service's several workloads, for the line before its
 * output: "task 1 on n1" where the backend names a node, "replica 2"
 * where only a slot, else its id; its state when it is not running.  The
 * node and the state are the backend's answer: escaped. */
static void
workload_words(const ph_workload *w, char *out, size_t size)
{
    char node[128], state[32];
    size_t n;

    if (w->node != NULL && w->slot > 0)
        snprintf(out, size, "task %d on %s", w->slot, ph_escape(node, sizeof node, w->node));
    else if (w->slot > 0)
        snprintf(out, size, "replica %d", w->slot);
    else
        snprintf(out, size, "%.12s", w->id);
    n = strlen(out);
    if (!ph_workload_running(w) && w->state_text[0] != '\0' && n < size)
        snprintf(out + n, size - n, " (%s)", ph_escape(state, sizeof state, w->state_text));
}

int
ph_run_logs(ph_run *r, const char *service, int follow, ph_error_t *err)
{
    ph_workload_list list = { 0 };
    ph_error_t first = NULL;
    size_t k, failed = 0;
    ph_backend *b;

    if (ph_compose_service(r->compose, service) == NULL)
        return ph_run_bad_service(r, service, err);
    if (ph_run_backend(r, &b, err) < 0 || ph_run_list(r, service, &list, err) < 0)
        return -1;
    if (list.n == 0) { /* gone with its workloads: the last run kept it */
        ph_workload_list_free(&list);
        return ph_run_print_last_log(r, service, stdout, err);
    }
    /* Each workload's output asked of the backend by its id: the backend
     * reads it where the workload runs (a task's node).  One that cannot
     * be read (its node down) is said and the others are shown. */
    for (k = 0; k < list.n; k++) {
        const ph_workload *c = &list.v[k];
        ph_error_t sub = NULL;
        char who[200];

        workload_words(c, who, sizeof who);
        if (list.n > 1)
            ph_info("%s: %s:", service, who);
        if (b->ops->logs(b, c->id, follow, -1, 1, &sub) == 0)
            continue;
        failed++;
        if (list.n == 1) {
            first = sub;
            break;
        }
        ph_warn("%s: %s: its output is not read: %s%s", service, who, sub ? sub->msg : "?",
                b->ops->lost(b, c, NULL) == 1 ? " (its node is down)" : "");
        if (first == NULL)
            first = sub;
        else
            ph_error_free(&sub);
    }
    if (failed > 1 || (failed == 1 && list.n > 1)) {
        ph_error_free(&first);
        ph_fail(err, 0, "%s: the output of %zu of %zu of its workloads is not read (each said above)", service,
                failed, list.n);
    } else if (first != NULL) {
        *err = first;
    }
    ph_workload_list_free(&list);
    return failed > 0 ? -1 : 0;
}
