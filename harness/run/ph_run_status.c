/* ph_run_status.c - the `status` command: what runs of the project,
 * under which mode, since when, with which run dir.  On top of the loop's
 * files: it calls the placed backends' status, which calls nothing here.
 */
#include "ph_run_int.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ph_escape.h"

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
