/* ph_run_start.c - images, start, restore: the services' own images and the
 * profiling image, the profiled container's argv (the init shim, the mode's
 * wrap, then what the service would run), dependencies started unprofiled,
 * and restore (collect first, then run as compose describes).
 */
#include "ph_run_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_util.h"
#include "ph_image.h"

/* ---- selection ---------------------------------------------------------- */

/* With no service named, what to run is what compose would start: the
 * services whose profiles are enabled.  (stop and collect still reach
 * every service, so a run started by naming a profiled one is never
 * left behind.) */
static void
keep_enabled(ph_svc_list *sl, int named)
{
    size_t j = 0;

    if (named)
        return;
    for (size_t i = 0; i < sl->n; i++)
        if (sl->v[i]->enabled)
            sl->v[j++] = sl->v[i];
    sl->n = j;
}

/* ---- images ----------------------------------------------------------- */

static int
ensure_service_image(ph_run *r, const ph_service *s, int force_build, ph_error_t *err)
{
    ph_backend *b;
    ph_cleanup_free char *img = ph_run_service_image(r, s);
    ph_stage *st;

    if (img == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    st = ph_stage_beginf("image", 0, "service image %s", img);
    return ph_run_stage_done(st, ph_image_ensure_service(b, s, img, force_build, &r->compose->env, err), err);
}

/* One profiling image serves every mode (all the profiles' packages), so
 * switching modes never rebuilds.  MODE, when given, is checked against
 * what the image offers first. */
static int
ensure_profiling_image(ph_run *r, const ph_service *s, const ph_profile *mode, int force_image, char **tag_out,
                       char **volume_out, ph_image_facts *facts, ph_error_t *err)
{
    ph_backend *b;
    ph_cleanup_free char *img = ph_run_service_image(r, s);
    ph_stage *st;
    int rc;

    if (img == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    st = ph_stage_beginf("image", 0, "profiling image of %s", img);
    rc = ph_run_stage_done(st, force_image ? ph_image_ensure_profiling_image(b, img, r->data_dir, &r->profiles,
                                                                              mode, tag_out, facts, err)
                                           : ph_image_ensure_profiling(b, img, r->data_dir, &r->profiles, mode,
                                                                       tag_out, volume_out, facts, err), err);
    if (rc < 0)
        return ph_error_wrap(err, "%s", s->name);
    return 0;
}

int
ph_run_setup(ph_run *r, char **services, int n, int profiling_image, ph_error_t *err)
{
    ph_svc_list sl;
    int rc = 0;

    if (ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    keep_enabled(&sl, n);
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        char *tag = NULL, *volume = NULL, what[512];
        ph_image_facts facts;

        rc = ensure_service_image(r, sl.v[i], 1, err);
        if (rc == 0)
            rc = ensure_profiling_image(r, sl.v[i], NULL, profiling_image, &tag, &volume, &facts, err);
        snprintf(what, sizeof what, "%s%s%s%s", volume ? "tools volume " : "", volume ? volume : "",
                 volume && tag ? ", profiling image " : tag ? "profiling image " : "", tag ? tag : "");
        if (rc == 0) {
            char prog[PATH_MAX], modes[256] = "";
            int st = ph_run_static_program(r, sl.v[i], prog, sizeof prog, err);

            for (size_t k = 0; st > 0 && k < r->profiles.n; k++)
                if (r->profiles.v[k].libc.n > 0)
                    snprintf(modes + strlen(modes), sizeof modes - strlen(modes), "%s%s", modes[0] ? ", " : "",
                             r->profiles.v[k].name);
            if (st < 0)
                rc = -1;
            else
                ph_info("%s: ready (%s; package manager %s, C library %s%s%s%s%s)", sl.v[i]->name,
                        what, ph_image_facts_pm(&facts), ph_image_facts_libc(&facts),
                        st > 0 ? "; its program " : "", st > 0 ? prog : "",
                        st > 0 ? " is static: not for modes that preload, " : "", st > 0 ? modes : "");
        }
        free(tag);
        free(volume);
    }
    free(sl.v);
    return rc;
}

/* ---- start and restore ------------------------------------------------ */

/* Make way for another container of the service: ours is stopped and
 * removed; docker compose's is stopped and kept, with its name, volumes and
 * config (restore starts it again). */
static int
remove_plain(ph_run *r, const ph_workload *c, ph_error_t *err)
{
    ph_backend *b;
    const char *id = c->id;
    const char *svc = c->service;
    long grace = 10;
    ph_service *s = ph_compose_service(r->compose, svc);

    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    if (s != NULL && s->stop_grace_ns >= 0)
        grace = (long)(s->stop_grace_ns / 1000000000LL);
    if (ph_workload_running(c) && b->ops->stop(b, id, grace, err) < 0)
        return -1;
    if (c->by_compose) {
        if (ph_workload_running(c))
            ph_info("%s: stopped docker compose's container %.12s; it is kept (`profharness restore %s` starts it "
                    "again)", svc, id, svc);
        return 0;
    }
    return b->ops->remove(b, id, 1, err);
}

/* Start docker compose's own containers of S again: *done says whether
 * it has any; HAVE[k] is set for each replica number k they are (a lone
 * container without one is number 1). */
static int
start_compose_own(ph_run *r, const ph_service *s, const ph_workload_list *list, int *done, unsigned char *have,
                  ph_error_t *err)
{
    ph_backend *b;
    size_t k;
    const ph_workload *c;

    *done = 0;
    for (k = 0; k < list->n && ((c = &list->v[k]), 1); k++) {
        const char *id = c->id;
        int slot = c->slot > 0 ? c->slot : 1;

        if (!c->by_compose)
            continue;
        if (!ph_workload_running(c)) {
            /* a port someone else holds is named in the hint */
            if (ph_run_backend(r, &b, err) < 0 || b->ops->start(b, id, err) < 0)
                return ph_error_wrap(err, "start docker compose's container %.12s of `%s` again", id, s->name);
            ph_info("%s: running unprofiled (docker compose's container %.12s, started again)", s->name, id);
        }
        *done = 1;
        if (slot <= PH_COMPOSE_REPLICAS_MAX)
            have[slot] = 1;
    }
    return 0;
}

/* Stop whatever runs for SERVICE: a profiled container is stopped and
 * collected (no data is lost by switching modes); a plain one of ours
 * removed; docker compose's stopped and kept (remove_plain). */
static int
clear_service(ph_run *r, const ph_service *s, ph_error_t *err)
{
    ph_workload_list list = { 0 };
    const ph_workload *c;
    size_t k;
    int rc = 0;

    if (ph_run_list(r, s->name, &list, err) < 0)
        return -1;
    for (k = 0; k < list.n && ((c = &list.v[k]), 1); k++) {
        if (ph_workload_profiled(c))
            rc = ph_run_stop_one(r, c, err);
        else
            rc = remove_plain(r, c, err);
        if (rc < 0)
            break;
    }
    ph_workload_list_free(&list);
    return rc;
}

/* The container's name: compose's for an unprofiled one
 * (`container_name`, else <project>-<service>-<slot>), ours for a
 * profiled one (<project>-<service>-<mode>, and -<slot> when the service
 * runs several replicas). */
static char *
container_name(ph_run *r, const ph_service *s, const char *mode, int slot)
{
    char *n = NULL;

    if (mode == NULL && s->container_name != NULL)
        return strdup(s->container_name);
    if (mode == NULL)
        asprintf(&n, "%s-%s-%d", r->compose->project, s->name, slot > 0 ? slot : 1);
    else if (s->replicas > 1)
        asprintf(&n, "%s-%s-%s-%d", r->compose->project, s->name, mode, slot);
    else
        asprintf(&n, "%s-%s-%s", r->compose->project, s->name, mode);
    return n;
}

static int start_compose_own(ph_run *r, const ph_service *s, const ph_workload_list *list, int *done,
                             unsigned char *have, ph_error_t *err);

/* Replica SLOT of S, unprofiled, as compose runs it. */
static int
start_plain(ph_run *r, const ph_service *s, int slot, ph_error_t *err)
{
    ph_workload_spec spec = PH_WORKLOAD_SPEC_INIT;
    char *img = NULL, *name = NULL, *id = NULL;
    int rc = -1;

    if (s->unsupported != NULL)
        return ph_bad_input(err, "%s, which profharness cannot honour: service `%s` would not run as compose runs it",
                            s->unsupported, s->name);
    if (ensure_service_image(r, s, r->opts.build, err) < 0 || ph_run_ensure_networks(r, s, err) < 0)
        return -1;
    img = ph_run_service_image(r, s);
    name = container_name(r, s, NULL, slot);
    if (img == NULL || name == NULL)
        ph_fail(err, ENOMEM, "allocate");
    else if (ph_run_base_spec(r, s, img, name, &spec, err) == 0) {
        spec.compose_labels = 1; /* docker compose takes it for its own: ps, logs, down */
        spec.slot = slot;
        if (ph_run_create_and_start(r, &spec, &id, err) == 0) {
            ph_info("%s: running unprofiled (container %s)", s->name, name);
            rc = 0;
        }
    }
    ph_workload_spec_clear(&spec);
    free(img);
    free(name);
    free(id);
    return rc;
}

/* Every replica of S compose runs, unprofiled: compose's own containers
 * of LIST started again where they are stopped, then those of the
 * service's replicas none of them is, made (compose's number label each). */
static int
start_plain_replicas(ph_run *r, const ph_service *s, const ph_workload_list *list, ph_error_t *err)
{
    int again = 0;
    unsigned char have[PH_COMPOSE_REPLICAS_MAX + 1] = { 0 };

    if (start_compose_own(r, s, list, &again, have, err) < 0)
        return -1;
    for (int k = 1; k <= s->replicas && k <= PH_COMPOSE_REPLICAS_MAX; k++)
        if (!have[k] && !(again && s->replicas == 1) && start_plain(r, s, k, err) < 0)
            return ph_error_wrap(err, "replica %d of `%s`", k, s->name);
    return 0;
}

/* Start the services SERVICE depends on that are not running, unprofiled. */
static int
start_deps(ph_run *r, const ph_service *s, ph_svc_list *targets, int depth, ph_error_t *err)
{
    if (depth > 32)
        return ph_bad_input(err, "%s: depends_on of `%s` is circular", r->compose->path, s->name);
    if (ph_compose_check_enabled(r->compose, s, err) < 0)
        return -1;
    for (size_t i = 0; i < s->depends_on.n; i++) {
        ph_service *d = ph_compose_service(r->compose, s->depends_on.v[i]);
        ph_workload_list list = { 0 };
        const ph_workload *c;
        size_t k;
        int running = 0, targeted = 0;

        if (d == NULL)
            continue;
        for (size_t j = 0; j < targets->n; j++)
            targeted |= targets->v[j] == d;
        if (targeted)
            continue;
        if (start_deps(r, d, targets, depth + 1, err) < 0)
            return -1;
        if (ph_run_list(r, d->name, &list, err) < 0)
            return -1;
        for (k = 0; k < list.n && ((c = &list.v[k]), 1); k++) running |= ph_workload_running(c);
        if (!running) {
            for (k = 0; k < list.n && ((c = &list.v[k]), 1); k++) {
                if (remove_plain(r, c, err) < 0) {
                    ph_workload_list_free(&list);
                    return -1;
                }
            }
            if (start_plain_replicas(r, d, &list, err) < 0) {
                ph_workload_list_free(&list);
                return ph_error_wrap(err, "start `%s` (a dependency of `%s`)", d->name, s->name);
            }
        }
        ph_workload_list_free(&list);
    }
    return 0;
}

/* ---- before anything is stopped ------------------------------------- */

static int
prepare(ph_run *r, const ph_service *s, const ph_profile *p, ph_run_prepared *out, ph_error_t *err)
{
    if (s->unsupported != NULL)
        return ph_bad_input(err, "%s, which profharness cannot honour: service `%s` would not run as compose runs it",
                            s->unsupported, s->name);
    /* a mode that cannot work on the program is refused before its
     * profiling image is built */
    if (ensure_service_image(r, s, r->opts.build, err) < 0 || ph_run_check_program(r, s, p, &out->rewrap, err) < 0)
        return -1;
    return ensure_profiling_image(r, s, p, 0, &out->prof_img, &out->tools_volume, &out->facts, err);
}

/* Every replica of S under P: one run (one run id, one run dir), a
 * container per replica.  A replica that cannot start leaves the ones
 * before it running profiled, and the error says how to collect them. */
static int
start_profiled(ph_run *r, const ph_service *s, const ph_profile *p, const ph_run_prepared *prep, ph_error_t *err)
{
    ph_backend *b;
    ph_image_config img_info = { 0 };
    char *img = NULL;
    char run_id[64], stamp[17], started[32], host_dir[PATH_MAX], names[512] = "";
    int found = 0, rc = -1, slot, n = s->replicas > 1 ? s->replicas : 1;

    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    if (ph_run_ensure_networks(r, s, err) < 0)
        goto out;
    img = ph_run_service_image(r, s);
    if (img == NULL || b->ops->image_inspect(b, img, &img_info, &found, err) < 0)
        goto out;
    if (!found) {
        ph_fail(err, 0, "image `%s` vanished", img);
        goto out;
    }

    ph_run_utc_stamp(stamp);
    snprintf(run_id, sizeof run_id, "%s-%s", stamp, p->name);
    ph_run_utc_iso(started, sizeof started);
    snprintf(host_dir, sizeof host_dir, "%s/%s/%s", r->opts.out_dir, s->name, run_id);
    ph_stage_attr(ph_stage_current(), "profharness.run.id", run_id);
    if (s->restart != NULL && strcmp(s->restart, "no") != 0)
        ph_info("%s: `restart: %s` is left to restore; the profiled container is not restarted by the Engine",
                s->name, s->restart);
    for (slot = 1; slot <= n; slot++) {
        ph_workload_spec spec = PH_WORKLOAD_SPEC_INIT;
        char *name = container_name(r, s, p->name, slot), *id = NULL;
        size_t l = strlen(names);
        int ok;

        if (name == NULL) {
            ph_fail(err, ENOMEM, "allocate");
            break;
        }
        ok = ph_run_profiled_spec(r, s, p, prep, &img_info, img, run_id, started, host_dir, n > 1 ? slot : 0, name,
                                  &spec, err) == 0 &&
             ph_run_create_and_start(r, &spec, &id, err) == 0;
        if (ok) {
            ph_stage_attr(ph_stage_current(), "container.id", id);
            snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", name);
        }
        ph_workload_spec_clear(&spec);
        free(name);
        free(id);
        if (!ok)
            break;
    }
    if (slot <= n) {
        if (n > 1)
            ph_error_wrap(err, "replica %d of %d of `%s`", slot, n, s->name);
        if (slot > 1)
            ph_error_hint(err, "replica%s %s run%s profiled: `profharness stop %s` collects %s", slot > 2 ? "s" : "",
                          names, slot > 2 ? "" : "s", s->name, slot > 2 ? "them" : "it");
        goto out;
    }
    if (n > 1)
        ph_info("%s: profiling under %s: %d replicas (containers %s); its run dir, a sub-dir per replica, is written "
                "when it stops (`profharness stop %s`): %s", s->name, p->name, n, names, s->name, host_dir);
    else
        ph_info("%s: profiling under %s (container %s); its run dir is written when it stops "
                "(`profharness stop %s`): %s", s->name, p->name, names, s->name, host_dir);
    if (p->note != NULL)
        ph_info("%s: %s", s->name, p->note);
    printf("%s\t%s\t%s\n", s->name, p->name, host_dir);
    fflush(stdout);
    rc = 0;
out:
    ph_image_config_clear(&img_info);
    free(img);
    return rc;
}

int
ph_run_start(ph_run *r, const char *mode, char **services, int n, ph_error_t *err)
{
    ph_profile *p = ph_run_mode(r, mode, err);
    ph_svc_list sl;
    int rc = 0;

    ph_run_prepared *prep;

    if (p == NULL || ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    keep_enabled(&sl, n);
    ph_run_order_by_deps(r, &sl);
    if ((rc = ph_run_placed(r, err)) != 0) { /* a stack's services: their tasks across the swarm */
        if (rc > 0)
            rc = ph_run_placed_start(r, p, &sl, err);
        free(sl.v);
        return rc;
    }
    if ((prep = calloc(sl.n ? sl.n : 1, sizeof *prep)) == NULL) {
        free(sl.v);
        return ph_fail(err, ENOMEM, "allocate");
    }
    /* every service's images, and whether the mode can run its program,
     * before anything is stopped: a refusal restarts nothing */
    for (size_t i = 0; rc == 0 && i < sl.n; i++)
        rc = prepare(r, sl.v[i], p, &prep[i], err);
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        rc = start_deps(r, sl.v[i], &sl, 0, err);
        if (rc == 0)
            rc = clear_service(r, sl.v[i], err);
        if (rc == 0) {
            ph_stage *st = ph_run_service_stage("start", sl.v[i]->name, p->name);

            rc = ph_run_stage_done(st, start_profiled(r, sl.v[i], p, &prep[i], err), err);
        }
    }
    for (size_t i = 0; i < sl.n; i++) {
        free(prep[i].prof_img);
        free(prep[i].tools_volume);
    }
    free(prep);
    free(sl.v);
    return rc;
}

/* Docker compose's own container of S when there is one (started again,
 * ours made way for it), else a fresh one compose takes for its own. */
static int
restore_one(ph_run *r, const ph_service *s, ph_error_t *err)
{
    ph_workload_list list = { 0 };
    const ph_workload *c;
    size_t k;
    int again = 0, rc = 0;

    if (ph_run_list(r, s->name, &list, err) < 0)
        return -1;
    for (k = 0; k < list.n && ((c = &list.v[k]), 1); k++) again |= c->by_compose;
    for (k = 0; k < list.n && ((c = &list.v[k]), 1); k++) {
        if (again && rc == 0 && !c->by_compose)
            rc = remove_plain(r, c, err);
    }
    if (rc == 0 && again)
        rc = start_plain_replicas(r, s, &list, err);
    ph_workload_list_free(&list);
    if (rc < 0 || again)
        return rc;
    if (clear_service(r, s, err) < 0)
        return -1;
    return start_plain_replicas(r, s, &(ph_workload_list){ 0 }, err);
}

int
ph_run_restore(ph_run *r, char **services, int n, ph_error_t *err)
{
    ph_svc_list sl;
    int rc = 0;

    if (ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    keep_enabled(&sl, n);
    ph_run_order_by_deps(r, &sl);
    if ((rc = ph_run_placed(r, err)) != 0) { /* a stack: stop (collect) is the rollback */
        int acted = 0;

        if (rc > 0 && (rc = ph_run_placed_stop(r, &sl, &acted, err)) == 0 && !acted)
            ph_info("nothing to restore: no service of stack `%s` is profiled", r->compose->project);
        free(sl.v);
        return rc;
    }
    /* Collect every profiled one first: restoring must never lose a run. */
    rc = ph_run_stop_services(r, &sl, 1, err);
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        rc = start_deps(r, sl.v[i], &sl, 0, err);
        if (rc == 0) {
            ph_stage *st = ph_run_service_stage("start", sl.v[i]->name, NULL);

            /* compose's own container again, else a fresh plain one */
            rc = ph_run_stage_done(st, restore_one(r, sl.v[i], err), err);
        }
    }
    free(sl.v);
    return rc;
}


int
ph_run_down(ph_run *r, char **services, int n, ph_error_t *err)
{
    ph_svc_list sl;
    int rc, downed = 0;

    if (ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    ph_run_order_dependants_first(r, &sl); /* as compose stops them */
    if ((rc = ph_run_placed(r, err)) != 0) { /* a stack: its services removed */
        if (rc > 0)
            rc = ph_run_placed_down(r, &sl, err);
        free(sl.v);
        return rc;
    }
    /* a profiled run is collected first, as stop does: down never loses one */
    rc = ph_run_stop_services(r, &sl, 1, err);
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        ph_workload_list list = { 0 };
        const ph_workload *c;
        size_t k;

        if ((rc = ph_run_list(r, sl.v[i]->name, &list, err)) < 0)
            break;
        for (k = 0; k < list.n && ((c = &list.v[k]), 1); k++) {
            const char *id = c->id;
            int running = ph_workload_running(c);

            if (!running && c->by_compose)
                continue; /* compose's, already stopped */
            if ((rc = remove_plain(r, c, err)) < 0)
                break;
            if (!c->by_compose)
                ph_info("%s: %s container %.12s", sl.v[i]->name, running ? "stopped and removed" : "removed", id);
            downed++;
        }
        ph_workload_list_free(&list);
    }
    if (rc == 0 && downed == 0)
        ph_info("nothing to take down: no container of %s runs in project `%s`", n > 0 ? "those services" : "its services",
                r->compose->project);
    free(sl.v);
    return rc;
}
