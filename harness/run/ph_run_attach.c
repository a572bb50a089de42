/* ph_run_attach.c - profile a running service without restarting it.
 *
 *   attach   the service's running container is found (by its labels) ->
 *            the tools image is made sure of -> a tools container is
 *            created in the service's PID namespace (`PidMode:
 *            container:<id>`), with the least the mode's `attach` asks
 *            (its cap_add, security_opt, no network) and started: ph-init
 *            runs ph-attach, which finds the service's processes and
 *            becomes the mode's attach command (`strace -p`, `perf record
 *            -p`).
 *   detach   is `stop`: the tools container carries the labels of a
 *            profiled container of the service (mode, run, out dir) and
 *            io.profharness.attached, so ph_run_stop_one stops it like any
 *            other (SIGTERM to ph-init, which sends the attach signal to
 *            the profiler: strace and perf detach and write their end),
 *            collects its /opt/profiling/<service> into the usual
 *            <UTC>-<mode> run dir with `latest` and the compatibility
 *            links, and removes it.  The service's container is never
 *            signalled, so it keeps its id and its uptime.
 *
 * One profiler at a time per service: attaching to a service that is
 * already profiled (restarted under a mode, or attached) is refused, as is
 * attaching to one that does not run.  A service that exits while
 * attached takes the profiler's targets with it: the profiler ends, the
 * tools container exits, and `stop` collects what it wrote.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_image.h"
#include "ph_log.h"
#include "ph_tar.h"
#include "ph_util.h"

int
ph_run_attach_pick(const ph_workload_list *list, const char *service, const char *mode_name, const char **id_out,
                   ph_error_t *err)
{
    const ph_workload *c, *target = NULL;
    size_t k;

    *id_out = NULL;
    for (k = 0; k < list->n && ((c = &list->v[k]), 1); k++) {
        const char *mode = c->mode;
        const char *name = c->name;

        if (!ph_workload_profiled(c))
            continue;
        if (c->attached != NULL)
            ph_bad_input(err, "`%s` is already attached to under %s (container %s): one profiler at a time", service,
                         mode, name ? name : "?");
        else
            ph_bad_input(err, "`%s` is already being profiled under %s (container %s, restarted for it)", service,
                         mode, name ? name : "?");
        return ph_error_hint(err, "stop it first: `profharness stop %s` (it is collected), then attach with "
                             "`--mode %s`", service, mode_name);
    }
    for (k = 0; k < list->n && ((c = &list->v[k]), 1); k++) {
        if (ph_workload_running(c)) {
            target = c;
            break;
        }
    }
    if (target == NULL || target->id == NULL) {
        ph_bad_input(err, "`%s` is not running: there is nothing to attach to", service);
        return ph_error_hint(err, "run it with `profharness restore %s`, or start it under the mode with "
                             "`profharness start --mode %s %s`", service, mode_name, service);
    }
    *id_out = target->id;
    return 0;
}

/* The service's running, unprofiled container, or why there is none to
 * attach to.  *id_out is malloc'd. */
static int
find_target(ph_run *r, const ph_service *s, const ph_profile *p, char **id_out, ph_error_t *err)
{
    ph_workload_list list = { 0 };
    const char *id;
    int rc = -1;

    *id_out = NULL;
    if (ph_run_list(r, s->name, &list, err) < 0)
        return -1;
    if (ph_run_attach_pick(&list, s->name, p->name, &id, err) == 0) {
        *id_out = strdup(id);
        rc = *id_out ? 0 : ph_fail(err, ENOMEM, "allocate");
    }
    ph_workload_list_free(&list);
    return rc;
}

/* Attach to one running container of S (TARGET; SLOT of REPLICAS when it
 * is one of several) under RUN_ID. */
static int
attach_to(ph_run *r, ph_backend *b, const ph_service *s, const ph_profile *p, const char *tools, const char *target,
          int slot, int replicas, const char *run_id, const char *host_dir, ph_error_t *err)
{
    ph_kvv labels = { 0 };
    char *name = NULL, num[16];
    int rc = -1;

    if ((replicas > 1 ? asprintf(&name, "%s-%s-attach-%s-%d", r->compose->project, s->name, p->name, slot)
                      : asprintf(&name, "%s-%s-attach-%s", r->compose->project, s->name, p->name)) < 0) {
        name = NULL;
        return ph_fail(err, ENOMEM, "allocate");
    }
    /* one of several replicas: collected into its sub-dir of the run, as
     * a replica started under the mode */
    if (replicas > 1) {
        snprintf(num, sizeof num, "%d", slot);
        if (ph_kvv_set(&labels, PH_LABEL_REPLICA, num) < 0)
            goto nomem;
        snprintf(num, sizeof num, "%d", replicas);
        if (ph_kvv_set(&labels, PH_LABEL_REPLICAS, num) < 0)
            goto nomem;
    }
    {
        ph_run_attach_to to = { .service = s, .profile = p, .target = target, .tools = tools, .name = name,
                                .run_id = run_id, .host_dir = host_dir, .labels = &labels };

        rc = ph_run_attach_make(r, b, &to, err);
    }
    if (rc == 0)
        ph_info("%s: attached %s to container %.12s, which keeps running (tools container %s, run %s); "
                "`profharness stop %s` detaches and collects", s->name, p->name, target, name, run_id, s->name);
    goto out;
nomem:
    ph_fail(err, ENOMEM, "allocate");
out:
    ph_kvv_free(&labels);
    free(name);
    return rc;
}

/* Every running replica of S (one, mostly), each a tools container of
 * one run. */
static int
attach_one(ph_run *r, const ph_service *s, const ph_profile *p, ph_error_t *err)
{
    ph_workload_list list = { 0 };
    ph_backend *b;
    const char *first;
    char *tools = NULL;
    char run_id[64], stamp[17], host_dir[PATH_MAX];
    size_t n = 0, made = 0;
    int rc = -1;

    if (ph_run_backend(r, &b, err) < 0 || ph_run_list(r, s->name, &list, err) < 0)
        return -1;
    if (ph_run_attach_pick(&list, s->name, p->name, &first, err) < 0 ||
        ph_image_ensure_tools(b, r->data_dir, &r->profiles, &tools, err) < 0)
        goto out;
    for (size_t k = 0; k < list.n; k++)
        n += ph_workload_running(&list.v[k]) && list.v[k].id != NULL;
    ph_run_utc_stamp(stamp);
    snprintf(run_id, sizeof run_id, "%s-%s", stamp, p->name);
    snprintf(host_dir, sizeof host_dir, "%s/%s/%s", r->opts.out_dir, s->name, run_id);
    for (size_t k = 0; k < list.n; k++) {
        const ph_workload *c = &list.v[k];

        if (!ph_workload_running(c) || c->id == NULL)
            continue;
        if (attach_to(r, b, s, p, tools, c->id, c->slot > 0 ? c->slot : (int)made + 1, n, run_id, host_dir,
                      err) < 0) {
            if (made > 0)
                ph_error_hint(err, "%zu replica%s of `%s` %s attached to already: `profharness stop %s` detaches "
                              "and collects them", made, made == 1 ? "" : "s", s->name, made == 1 ? "is" : "are",
                              s->name);
            goto out;
        }
        made++;
    }
    if (made > 1)
        ph_info("%s: attached %s to %zu replicas, run %s", s->name, p->name, made, run_id);
    printf("%s\t%s\t%s\n", s->name, p->name, host_dir);
    fflush(stdout);
    rc = 0;
out:
    ph_workload_list_free(&list);
    free(tools);
    return rc;
}

int
ph_run_attach(ph_run *r, const char *mode, char **services, int n, ph_error_t *err)
{
    ph_profile *p = ph_run_mode(r, mode, err);
    ph_svc_list sl;
    int rc = 0;

    if (p == NULL)
        return -1;
    if (p->attach.command.n == 0) {
        ph_bad_input(err, "mode `%s` cannot attach to a running service%s%s", p->name,
                     p->attach.unsupported ? ": " : "", p->attach.unsupported ? p->attach.unsupported : "");
        return ph_error_hint(err, "the modes that can attach are marked in `profharness modes`");
    }
    if (ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    if ((rc = ph_run_placed(r, err)) != 0) { /* a stack: every running task, on its node */
        if (rc > 0)
            rc = ph_run_placed_attach(r, p, &sl, err);
        free(sl.v);
        return rc;
    }
    /* every service's target, and whether the mode names its runtimes,
     * before anything is attached: a refusal attaches nothing */
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        char *target = NULL;

        rc = find_target(r, sl.v[i], p, &target, err);
        if (rc == 0)
            rc = ph_run_unnamed_attach(r, NULL, sl.v[i], p, target, err);
        free(target);
    }
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        ph_stage *st = ph_run_service_stage("attach", sl.v[i]->name, p->name);

        rc = ph_run_stage_done(st, attach_one(r, sl.v[i], p, err), err);
    }
    free(sl.v);
    return rc;
}
