/* ph_run_spec.c - what a profiled workload is made of, for every command
 * that makes one (start, a placed backend's start, attach): the order of
 * services by their dependencies, the init shim's argv and the mode's
 * wrap around what the service would run, the program it runs (checked
 * before anything is stopped), its environment and its spec, and how long
 * its stop may take.  Below start, placed and attach, which call it; it
 * calls none of them.
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
int
ph_run_static_program(ph_run *r, const ph_service *s, char *prog, size_t len, ph_error_t *err)
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

long
ph_run_stop_budget_s(const ph_profile *p)
{
    long long ns;

    if (p == NULL)
        return 600;
    ns = p->stop_grace_ns + (long long)p->escalate.n * p->escalate_grace_ns;
    return (long)(ns / 1000000000LL) + 30;
}

ph_profile *
ph_run_mode(ph_run *r, const char *mode, ph_error_t *err)
{
    ph_profile *p = ph_profiles_find(&r->profiles, mode);

    if (p == NULL)
        ph_run_bad_mode(r, mode, err); /* did you mean, and the modes there are */
    return p;
}
