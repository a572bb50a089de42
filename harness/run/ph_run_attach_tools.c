/* ph_run_attach_tools.c - the tools container an attach makes beside a
 * running service (ph-init, then ph-attach with the mode's attach
 * command, in the service's PID namespace), and what a stop says of it
 * once collected.  Below attach on one Engine (ph_run_attach.c), attach
 * on a stack's nodes (ph_run_placed_attach.c) and collect, which all call
 * it; it calls none of them.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_log.h"
#include "ph_tar.h"
#include "ph_util.h"

/* ph-init, then ph-attach with the mode's attach command, onto ARGV.
 * The files it copies are held to what the run's collection will take
 * (the profile's max_bytes, else the default: attach has no limit flags,
 * stop does). */
static int
attach_argv(const ph_profile *p, const char *service, const char *out, const char *run_id, ph_strv *argv)
{
    const ph_profile_attach *a = &p->attach;

    if (ph_run_shim_argv(p, "wrapper", a->signal, out, argv) < 0 ||
        ph_strv_push(argv, "/opt/profharness/bin/ph-attach") < 0)
        return -1;
    if (a->copy_mapped) {
        char dir[PATH_MAX], max[32];
        uint64_t m = p->collect.max_bytes ? p->collect.max_bytes : PH_TAR_DEFAULT_MAX_BYTES;

        snprintf(dir, sizeof dir, "%s/%s", out, a->copy_mapped);
        snprintf(max, sizeof max, "%" PRIu64, m == PH_TAR_NO_LIMIT ? (uint64_t)INT64_MAX : m);
        if (ph_strv_push(argv, "--copy-mapped") < 0 || ph_strv_push(argv, dir) < 0 ||
            ph_strv_push(argv, "--copy-max") < 0 || ph_strv_push(argv, max) < 0)
            return -1;
    }
    if (ph_strv_push(argv, "--") < 0)
        return -1;
    for (size_t i = 0; i < a->command.n; i++) {
        char *w = ph_profile_expand(a->command.v[i], out, service, p->name, run_id);
        int rc = w == NULL ? -1 : ph_strv_push(argv, w);

        free(w);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int
ph_run_attach_make(ph_run *r, ph_backend *b, const ph_run_attach_to *to, ph_error_t *err)
{
    const ph_service *s = to->service;
    const ph_profile *p = to->profile;
    ph_workload_spec spec = PH_WORKLOAD_SPEC_INIT;
    char *rec = NULL, *id = NULL, started[32], out[PATH_MAX];
    int rc = -1;

    ph_run_utc_iso(started, sizeof started);
    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, s->name);
    rec = ph_rundir_profile_record(p);
    /* No network: the profiler reads the service's processes, nothing
     * else (unless the mode joins the service's own, for what listens on
     * its loopback: `attach.network: service`).  The stop timeout outlasts the shim's protocol, as for a
     * profiled workload. */
    spec.name = to->name; /* the spec's name, image, pid_of and net_of are the caller's */
    spec.image = to->tools;
    spec.set_entrypoint = spec.set_cmd = 1;
    spec.stop_signal = strdup("SIGTERM");
    spec.stop_grace_s = ph_run_stop_budget_s(p);
    spec.pid_of = to->target;
    spec.network_none = 1;
    if (p->attach.network_service) /* the profile's `attach.network: service` */
        spec.net_of = to->target;
    spec.no_restart = 1;
    if (spec.stop_signal == NULL || attach_argv(p, s->name, out, to->run_id, &spec.entrypoint) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_PROJECT, r->compose->project) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_SERVICE, s->name) < 0 || ph_kvv_set(&spec.labels, PH_LABEL_MODE, p->name) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_RUN, to->run_id) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_STARTED, started) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_OUTDIR, to->host_dir) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_ATTACHED, to->target) < 0 ||
        (rec != NULL && ph_kvv_set(&spec.labels, PH_LABEL_PROFILE, rec) < 0))
        goto nomem;
    for (size_t i = 0; to->labels != NULL && i < to->labels->n; i++)
        if (ph_kvv_set(&spec.labels, to->labels->v[i].key, to->labels->v[i].value) < 0)
            goto nomem;
    for (size_t i = 0; i < p->attach.cap_add.n; i++)
        if (ph_strv_push(&spec.cap_add, p->attach.cap_add.v[i]) < 0)
            goto nomem;
    for (size_t i = 0; i < p->attach.security_opt.n; i++)
        if (ph_strv_push(&spec.security_opt, p->attach.security_opt.v[i]) < 0)
            goto nomem;
    for (size_t i = 0; i < p->attach.cap_add_if_known.n; i++)
        if (ph_strv_push(&spec.cap_add_if_known, p->attach.cap_add_if_known.v[i]) < 0)
            goto nomem;
    if (b->ops->run(b, &spec, &id, err) < 0) {
        ph_error_wrap(err, "attach %s to `%s`", p->name, s->name);
        goto out;
    }
    rc = 0;
    goto out;
nomem:
    ph_fail(err, ENOMEM, "build the tools container's spec");
out:
    ph_workload_spec_clear(&spec);
    free(rec);
    free(id);
    return rc;
}

void
ph_run_attach_describe(ph_run *r, const ph_workload *c, json_t *record)
{
    const char *target = c->attached;
    const char *service = c->service, *mode = c->mode;
    ph_workload info;
    ph_backend *b;
    ph_error_t err = NULL;
    int found = 0, running;

    if (target == NULL || (record != NULL && json_is_true(json_object_get(record, "stop_requested"))))
        return; /* not attached, or detached by stop as it should be */
    if (ph_run_backend(r, &b, &err) < 0 || b->ops->inspect(b, target, &info, &found, &err) < 0) {
        ph_error_free(&err);
        return;
    }
    running = found && (ph_workload_running(&info) || info.state == PH_WL_PAUSED);
    ph_workload_clear(&info);
    if (running)
        return;
    if (record == NULL)
        ph_warn("%s: the service exited while %s was attached: the kernel ends every process of a PID namespace "
                "when its first process exits, so %s was killed with it, before it could write its end; what it "
                "wrote until then is collected, its last lines may be missing", service, mode, mode);
    else
        ph_info("%s: the service exited while %s was attached; %s ended with it and wrote its end", service, mode,
                mode);
}
