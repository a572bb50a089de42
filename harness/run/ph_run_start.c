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

static int static_program(ph_run *r, const ph_service *s, char *prog, size_t len, ph_error_t *err);

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
            int st = static_program(r, sl.v[i], prog, sizeof prog, err);

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

/* Order TARGETS so dependencies come first (stable otherwise). */
void
ph_run_order_by_deps(ph_run *r, ph_svc_list *sl)
{
    for (size_t pass = 0; pass < sl->n; pass++) {
        int moved = 0;

        for (size_t i = 0; i < sl->n; i++) {
            for (size_t j = i + 1; j < sl->n; j++) {
                for (size_t k = 0; k < sl->v[i]->depends_on.n; k++) {
                    if (strcmp(sl->v[i]->depends_on.v[k], sl->v[j]->name) == 0) {
                        ph_service *t = sl->v[i];
                        memmove(&sl->v[i], &sl->v[i + 1], (j - i) * sizeof *sl->v);
                        sl->v[j] = t;
                        moved = 1;
                        break;
                    }
                }
            }
        }
        if (!moved)
            break;
    }
    (void)r;
}

void
ph_run_order_dependants_first(ph_run *r, ph_svc_list *sl)
{
    ph_run_order_by_deps(r, sl);
    for (size_t i = 0; i < sl->n / 2; i++) {
        ph_service *t = sl->v[i];

        sl->v[i] = sl->v[sl->n - 1 - i];
        sl->v[sl->n - 1 - i] = t;
    }
}

static char *
fmt_seconds(long long ns)
{
    char *s = NULL;

    asprintf(&s, "%.3f", (double)ns / 1e9);
    return s;
}

int
ph_run_shim_argv(const ph_profile *p, const char *target, const char *signal, const char *out, ph_strv *argv)
{
    char *grace = fmt_seconds(p->stop_grace_ns), *egrace = fmt_seconds(p->escalate_grace_ns);
    char esc[512] = "", rec[PATH_MAX];
    int bad = 0;

    for (size_t i = 0; i < p->escalate.n; i++) {
        if (i)
            strncat(esc, ",", sizeof esc - strlen(esc) - 1);
        strncat(esc, p->escalate.v[i], sizeof esc - strlen(esc) - 1);
    }
    snprintf(rec, sizeof rec, "%s/%s", out, PH_RECORD_NAME);
    bad |= ph_strv_push(argv, "/opt/profharness/bin/ph-init");
    bad |= ph_strv_push(argv, "--stop-target");
    bad |= ph_strv_push(argv, target);
    bad |= ph_strv_push(argv, "--stop-signal");
    bad |= ph_strv_push(argv, signal);
    bad |= ph_strv_push(argv, "--grace");
    bad |= ph_strv_push(argv, grace ? grace : "30");
    if (esc[0]) {
        bad |= ph_strv_push(argv, "--escalate");
        bad |= ph_strv_push(argv, esc);
        bad |= ph_strv_push(argv, "--escalate-grace");
        bad |= ph_strv_push(argv, egrace ? egrace : "10");
    }
    bad |= ph_strv_push(argv, "--record");
    bad |= ph_strv_push(argv, rec);
    bad |= ph_strv_push(argv, "--");
    free(grace);
    free(egrace);
    return bad ? -1 : 0;
}

/* What the service runs, appended to ARGV: Docker's rule, an entrypoint
 * given by the service replaces the image's and drops the image's CMD. */
static int
service_command(const ph_service *s, const ph_image_config *image, ph_strv *argv)
{
    const ph_strv *parts[4] = { s->has_entrypoint ? &s->entrypoint : NULL,
                                s->has_entrypoint ? NULL : &image->entrypoint,
                                s->has_command ? &s->command : NULL,
                                s->has_command || s->has_entrypoint ? NULL : &image->cmd };

    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; parts[k] != NULL && i < parts[k]->n; i++)
            if (ph_strv_push(argv, parts[k]->v[i]) < 0)
                return -1;
    return 0;
}

char *
ph_run_tool_word(const ph_profile *p, size_t i, char *w, const char *tools_bin)
{
    int tool = i == 0;
    char *t = NULL;

    for (size_t k = 0; w != NULL && !tool && k < p->tools.n; k++)
        tool = strcmp(w, p->tools.v[k]) == 0;
    if (w == NULL || tools_bin == NULL || !tool)
        return w;
    if (asprintf(&t, "%s/%s", tools_bin, w) < 0)
        t = NULL;
    free(w);
    return t;
}

/* The argv the profiled container runs, onto ARGV: the shim, its stop
 * protocol, the profiler's WRAP (the profile's, or its runtime's), then
 * what the service would have run.  TOOLS_BIN: the wrap's program comes
 * from the tools tree there (the image has no package manager to install
 * it). */
static int
profiled_argv(ph_run *r, const ph_service *s, const ph_profile *p, const ph_strv *wrap, const ph_image_config *image,
              const char *tools_bin, const char *out, const char *run_id, ph_strv *argv, ph_error_t *err)
{
    size_t i, n0;

    if (ph_run_shim_argv(p, p->stop_target, p->stop_signal, out, argv) < 0)
        return ph_fail(err, ENOMEM, "allocate");
    for (i = 0; i < wrap->n; i++) {
        char *w = ph_run_tool_word(p, i, ph_profile_expand(wrap->v[i], out, s->name, p->name, run_id), tools_bin);
        int rc;

        rc = w == NULL ? -1 : ph_strv_push(argv, w);
        free(w);
        if (rc < 0)
            return ph_fail(err, ENOMEM, "allocate");
    }
    n0 = argv->n;
    if (service_command(s, image, argv) < 0)
        return ph_fail(err, ENOMEM, "allocate");
    if (argv->n == n0)
        return ph_bad_input(err, "%s: service `%s` has no command to profile (none in the compose file or the image)",
                            r->compose->path, s->name);
    return 0;
}

/* ---- before anything is stopped ------------------------------------- */

/* The program the service runs in its image (ph_image_program) into
 * *PROG; ARGV_OUT its command and ENV_OUT the image's environment (pushed
 * onto each) when not NULL.  0, or -1 and *err. */
static int
service_program(ph_run *r, const ph_service *s, ph_image_program_t *prog, ph_strv *argv_out, ph_strv *env_out,
                ph_error_t *err)
{
    ph_backend *b;
    ph_image_config info = { 0 };
    ph_strv argv = { 0 };
    ph_cleanup_free char *img = ph_run_service_image(r, s);
    const char *path_var = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", *workdir;
    int found = 0, rc = -1;

    if (img == NULL || ph_run_backend(r, &b, err) < 0 || b->ops->image_inspect(b, img, &info, &found, err) < 0 ||
        !found)
        goto out;
    if (service_command(s, &info, &argv) < 0) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    for (size_t i = 0; i < info.env.n; i++)
        if (strncmp(info.env.v[i], "PATH=", 5) == 0)
            path_var = info.env.v[i] + 5;
    if (ph_kvv_get(&s->environment, "PATH") != NULL)
        path_var = ph_kvv_get(&s->environment, "PATH");
    workdir = s->working_dir ? s->working_dir : info.workdir;
    if (ph_image_program(b, img, argv.v, argv.n, path_var, workdir, prog, err) < 0)
        goto out;
    for (size_t i = 0; env_out != NULL && i < info.env.n; i++)
        if (ph_strv_push(env_out, info.env.v[i]) < 0) {
            ph_fail(err, ENOMEM, "allocate");
            goto out;
        }
    if (argv_out != NULL) {
        *argv_out = argv;
        memset(&argv, 0, sizeof argv);
    }
    rc = 0;
out:
    if (rc < 0 && (err == NULL || *err == NULL))
        ph_fail(err, 0, "image `%s` of service `%s` vanished", img ? img : "?", s->name);
    ph_strv_free(&argv);
    ph_image_config_clear(&info);
    return rc;
}

/* The program the service runs in its image, when it is static (no ELF
 * interpreter): 1 and its path in PROG; 0 when not (dynamic, a script,
 * not found: nothing to say). */
static int
static_program(ph_run *r, const ph_service *s, char *prog, size_t len, ph_error_t *err)
{
    ph_image_program_t prog_out;

    if (service_program(r, s, &prog_out, NULL, NULL, err) < 0)
        return -1;
    snprintf(prog, len, "%s", prog_out.path);
    return prog_out.linked == 0;
}

int
ph_run_check_program(ph_run *r, const ph_service *s, const ph_profile *p, const ph_profile_rewrap **rewrap,
              ph_error_t *err)
{
    ph_image_program_t prog;
    ph_strv argv = { 0 }, env = { 0 };
    char alt[160] = "";
    const char *base;
    int rc;

    *rewrap = NULL;
    if (p->libc.n == 0 && p->n_rewrap == 0 && !ph_profile_unnamed_any(p, PH_UNNAMED_START, r->opts.allow_unnamed))
        return 0;
    if (service_program(r, s, &prog, &argv, &env, err) < 0) {
        ph_strv_free(&argv);
        ph_strv_free(&env);
        return -1;
    }
    if (p->libc.n > 0 && prog.linked == 0) {
        for (size_t i = 0; i < r->profiles.n && alt[0] == '\0'; i++) {
            const ph_profile *q = &r->profiles.v[i];
            if (q != p && q->libc.n == 0 && q->wrap.n > 0 && q->report && p->report &&
                strcmp(q->report, p->report) == 0)
                snprintf(alt, sizeof alt, "; mode `%s` samples any program", q->name);
        }
        rc = ph_bad_input(err, "service `%s`: mode `%s` cannot profile `%s`: it is statically linked (no ELF "
                          "interpreter), and the mode is loaded into the program with LD_PRELOAD, which only the "
                          "dynamic loader honours%s", s->name, p->name, prog.path, alt);
    } else {
        rc = ph_run_unnamed_start(r, s, p, prog.runs, &argv, &env, err);
    }
    base = strrchr(prog.runs, '/') ? strrchr(prog.runs, '/') + 1 : prog.runs;
    if (rc == 0 && (*rewrap = ph_profile_rewrap_find(p, base)) != NULL)
        ph_info("%s: %s %s", s->name, base, (*rewrap)->why);
    ph_strv_free(&argv);
    ph_strv_free(&env);
    return rc;
}

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

/* Whether compose mounts something of S's at TARGET (a volume or a tmpfs). */
static int
mounts_at(const ph_service *s, const char *target)
{
    for (size_t i = 0; i < s->n_volumes; i++)
        if (s->volumes[i].target != NULL && strcmp(s->volumes[i].target, target) == 0)
            return 1;
    for (size_t i = 0; i < s->tmpfs.n; i++)
        if (strncmp(s->tmpfs.v[i], target, strlen(target)) == 0 &&
            (s->tmpfs.v[i][strlen(target)] == '\0' || s->tmpfs.v[i][strlen(target)] == ':'))
            return 1;
    return 0;
}

/* Where the artifacts go, PH_CONTAINER_OUT, as an anonymous volume of
 * its own (a read-only service, or the service's own image with the
 * tools volume, which has no such directory): it outlives the stop
 * (collection reads the stopped workload's files, which a tmpfs would not
 * survive) and goes with the workload when it is removed; its <service>
 * directory OUT any user may write (the backend makes it before the
 * start).  With VOLUME, the tools volume too, read-only at PH_TOOLS_MOUNT
 * (the shim, the sampler, the tree), never filled from the image.  -1 on
 * ENOMEM. */
static int
own_out_volume(ph_workload_spec *spec, const char *volume, const char *out)
{
    if (volume != NULL) {
        if (ph_workload_spec_mount(spec, PH_MOUNT_SPEC_VOLUME, volume, PH_TOOLS_MOUNT, 1) < 0)
            return -1;
        spec->mounts[spec->n_mounts - 1].no_copy = 1;
    }
    if (ph_workload_spec_mount(spec, PH_MOUNT_SPEC_ANON, NULL, PH_CONTAINER_OUT, 0) < 0)
        return -1;
    spec->open_dir = strdup(out);
    return spec->open_dir ? 0 : -1;
}

int
ph_run_profiled_env(const ph_service *s, const ph_profile *p, const char *out, const char *run_id, ph_strv *env)
{
    for (size_t i = 0; i < s->environment.n; i++) {
        const ph_kv *kv = &s->environment.v[i];
        char *line = NULL;
        int rc;

        if (kv->value == NULL)
            rc = ph_strv_push(env, kv->key);
        else if (asprintf(&line, "%s=%s", kv->key, kv->value) < 0)
            rc = -1;
        else
            rc = ph_strv_push(env, line);
        free(line);
        if (rc < 0)
            return -1;
    }
    for (size_t i = 0; i < p->environment.n; i++) {
        char *v = ph_profile_expand(p->environment.v[i].value ? p->environment.v[i].value : "", out, s->name,
                                    p->name, run_id);
        char *line = NULL;
        int rc = 0;

        if (v && asprintf(&line, "%s=%s", p->environment.v[i].key, v) >= 0)
            rc = ph_strv_push(env, line);
        free(v);
        free(line);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int
ph_run_profiled_spec(ph_run *r, const ph_service *s, const ph_profile *p, const ph_run_prepared *prep,
                     const ph_image_config *img_info, const char *img, const char *run_id, const char *started,
                     const char *host_dir, int slot, const char *name, ph_workload_spec *spec, ph_error_t *err)
{
    const char *tools_volume = prep->tools_volume;
    char out[PATH_MAX], num[16];
    char *rec = NULL;
    int rc = -1;

    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, s->name);
    if ((slot == PH_RUN_SLOT_ORCHESTRATED ? ph_run_orchestrated_spec : ph_run_base_spec)(
            r, s, tools_volume ? img : prep->prof_img, name, spec, err) < 0)
        return -1;
    spec->set_entrypoint = spec->set_cmd = 1; /* the shim's argv; no CMD */
    /* from the tree when it serves the mode, or when the profiling image
     * has it (an image with no package manager) */
    if (profiled_argv(r, s, p, prep->rewrap ? &prep->rewrap->wrap : &p->wrap, img_info,
                      tools_volume || !prep->facts.pm[0] ? PH_TOOLS_BIN : NULL, out, run_id, &spec->entrypoint,
                      err) < 0)
        goto out;
    /* The shim turns SIGTERM into the profile's stop protocol; the
     * orchestrator's own stop timeout must outlast it so a manual `docker
     * stop` loses nothing. */
    spec->stop_signal = strdup("SIGTERM");
    spec->stop_grace_s = ph_run_stop_budget_s(p);
    if (s->user == NULL && img_info->user != NULL && img_info->user[0])
        spec->user = strdup(img_info->user);
    if (s->working_dir == NULL && img_info->workdir != NULL && img_info->workdir[0])
        spec->workdir = strdup(img_info->workdir);
    spec->set_env = 1;
    if (spec->stop_signal == NULL || ph_run_profiled_env(s, p, out, run_id, &spec->env) < 0) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    /* what the runtimes offer the mode, added to what the user set */
    if (ph_run_env_extend(&spec->env, &img_info->env, &p->env_extend, err) < 0)
        goto out;
    if (ph_image_sampler_env(&spec->env, prep->facts.libc) < 0) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    /* the definition this run is stopped, collected and reported with */
    rec = ph_rundir_profile_record(p);
    if (ph_kvv_set(&spec->labels, PH_LABEL_MODE, p->name) < 0 || ph_kvv_set(&spec->labels, PH_LABEL_RUN, run_id) < 0 ||
        ph_kvv_set(&spec->labels, PH_LABEL_STARTED, started) < 0 ||
        ph_kvv_set(&spec->labels, PH_LABEL_OUTDIR, host_dir) < 0 ||
        (rec != NULL && ph_kvv_set(&spec->labels, PH_LABEL_PROFILE, rec) < 0)) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    /* a replica of several: collected into a sub-dir of the run, by
     * number (an orchestrator's tasks carry their own slots) */
    snprintf(num, sizeof num, "%d", s->replicas);
    if (slot >= 0 && s->replicas > 1 && ph_kvv_set(&spec->labels, PH_LABEL_REPLICAS, num) < 0) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    snprintf(num, sizeof num, "%d", slot);
    if (slot >= 0 && s->replicas > 1 && ph_kvv_set(&spec->labels, PH_LABEL_REPLICA, num) < 0) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    /* The orchestrator must not restart a profiled workload mid-run: a
     * restart would start the profiler over and its output with it. */
    spec->no_restart = 1;
    /* read_only: the artifacts still need somewhere to go.  An image with
     * no /tmp (FROM scratch) gets an empty one of its own, where the
     * tree's programs write (valgrind its files, vgdb its FIFOs), as any
     * other image has: made by root for root (0755), removed with the
     * workload. */
    if (((s->read_only || tools_volume) && own_out_volume(spec, tools_volume, out) < 0) ||
        (tools_volume && !prep->facts.tmp && !mounts_at(s, "/tmp") &&
         ph_workload_spec_mount(spec, PH_MOUNT_SPEC_ANON, NULL, "/tmp", 0) < 0) ||
        ph_strv_push_all(&spec->cap_add, &p->cap_add) < 0 || ph_strv_push_all(&spec->security_opt, &p->security_opt) < 0 ||
        ph_strv_push_all(&spec->cap_add_if_known, &p->cap_add_if_known) < 0) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    rc = 0;
out:
    free(rec);
    return rc;
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

ph_profile *
ph_run_mode(ph_run *r, const char *mode, ph_error_t *err)
{
    ph_profile *p = ph_profiles_find(&r->profiles, mode);

    if (p == NULL)
        ph_run_bad_mode(r, mode, err); /* did you mean, and the modes there are */
    return p;
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
