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
    ph_engine *e;
    ph_cleanup_free char *img = ph_run_service_image(r, s);
    ph_stage *st;

    if (img == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    st = ph_stage_beginf("image", 0, "service image %s", img);
    return ph_run_stage_done(st, ph_image_ensure_service(e, s, img, force_build, &r->compose->env, err), err);
}

/* One profiling image serves every mode (all the profiles' packages), so
 * switching modes never rebuilds.  MODE, when given, is checked against
 * what the image offers first. */
static int
ensure_profiling_image(ph_run *r, const ph_service *s, const ph_profile *mode, char **tag_out, char **volume_out,
                       ph_image_facts *facts, ph_error_t *err)
{
    ph_engine *e;
    ph_cleanup_free char *img = ph_run_service_image(r, s);
    ph_stage *st;
    int rc;

    if (img == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    st = ph_stage_beginf("image", 0, "profiling image of %s", img);
    rc = ph_run_stage_done(st, ph_image_ensure_profiling(e, img, r->data_dir, &r->profiles, mode, tag_out,
                                                         volume_out, facts, err), err);
    if (rc < 0)
        return ph_error_wrap(err, "%s", s->name);
    return 0;
}

static int static_program(ph_run *r, const ph_service *s, char *prog, size_t len, ph_error_t *err);

int
ph_run_setup(ph_run *r, char **services, int n, ph_error_t *err)
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
            rc = ensure_profiling_image(r, sl.v[i], NULL, &tag, &volume, &facts, err);
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
remove_plain(ph_run *r, json_t *c, ph_error_t *err)
{
    ph_engine *e;
    const char *id = json_string_value(json_object_get(c, "Id"));
    const char *svc = ph_run_label(c, PH_LABEL_SERVICE);
    long grace = 10;
    ph_service *s = ph_compose_service(r->compose, svc);

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    if (s != NULL && s->stop_grace_ns >= 0)
        grace = (long)(s->stop_grace_ns / 1000000000LL);
    if (ph_run_is_running(c) && ph_engine_container_stop(e, id, grace, err) < 0)
        return -1;
    if (ph_run_by_compose(c)) {
        if (ph_run_is_running(c))
            ph_info("%s: stopped docker compose's container %.12s; it is kept (`profharness restore %s` starts it "
                    "again)", svc, id, svc);
        return 0;
    }
    return ph_engine_container_remove(e, id, 1, err);
}

/* Start docker compose's own container of S again, if it has one: *done
 * says whether it did. */
static int
start_compose_own(ph_run *r, const ph_service *s, json_t *list, int *done, ph_error_t *err)
{
    ph_engine *e;
    size_t k;
    json_t *c;

    *done = 0;
    json_array_foreach(list, k, c) {
        const char *id = json_string_value(json_object_get(c, "Id"));

        if (!ph_run_by_compose(c))
            continue;
        if (!ph_run_is_running(c)) {
            if (ph_run_engine(r, &e, err) < 0 || ph_engine_container_start(e, id, err) < 0) {
                ph_run_port_hint(r, err);
                return ph_error_wrap(err, "start docker compose's container %.12s of `%s` again", id, s->name);
            }
            ph_info("%s: running unprofiled (docker compose's container %.12s, started again)", s->name, id);
        }
        *done = 1;
        return 0;
    }
    return 0;
}

/* Stop whatever runs for SERVICE: a profiled container is stopped and
 * collected (no data is lost by switching modes); a plain one of ours
 * removed; docker compose's stopped and kept (remove_plain). */
static int
clear_service(ph_run *r, const ph_service *s, ph_error_t *err)
{
    json_t *list = NULL, *c;
    size_t k;
    int rc = 0;

    if (ph_run_list(r, s->name, &list, err) < 0)
        return -1;
    json_array_foreach(list, k, c) {
        if (ph_run_is_profiled(c))
            rc = ph_run_stop_one(r, c, err);
        else
            rc = remove_plain(r, c, err);
        if (rc < 0)
            break;
    }
    json_decref(list);
    return rc;
}

static char *
container_name(ph_run *r, const ph_service *s, const char *mode)
{
    char *n = NULL;

    if (mode == NULL && s->container_name != NULL)
        return strdup(s->container_name);
    if (mode == NULL)
        asprintf(&n, "%s-%s-1", r->compose->project, s->name);
    else
        asprintf(&n, "%s-%s-%s", r->compose->project, s->name, mode);
    return n;
}

static int
start_plain(ph_run *r, const ph_service *s, ph_error_t *err)
{
    json_t *cfg;
    char *img = NULL, *name = NULL, *id = NULL;
    int rc = -1;

    if (s->unsupported != NULL)
        return ph_bad_input(err, "%s, which profharness cannot honour: service `%s` would not run as compose runs it",
                            s->unsupported, s->name);
    if (ensure_service_image(r, s, r->opts.build, err) < 0 || ph_run_ensure_networks(r, s, err) < 0)
        return -1;
    img = ph_run_service_image(r, s);
    name = container_name(r, s, NULL);
    cfg = img && name ? ph_run_base_config(r, s, img, name, err) : NULL;
    /* docker compose takes it for its own: ps, logs, down. */
    if (cfg != NULL)
        ph_run_compose_labels(r, s, json_object_get(cfg, "Labels"));
    if (cfg != NULL && name != NULL && ph_run_create_and_start(r, s, name, cfg, &id, err) == 0) {
        ph_info("%s: running unprofiled (container %s)", s->name, name);
        rc = 0;
    }
    json_decref(cfg);
    free(img);
    free(name);
    free(id);
    return rc;
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
        json_t *list = NULL, *c;
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
        json_array_foreach(list, k, c) running |= ph_run_is_running(c);
        if (!running) {
            int again = 0;

            json_array_foreach(list, k, c) {
                if (remove_plain(r, c, err) < 0) {
                    json_decref(list);
                    return -1;
                }
            }
            if (start_compose_own(r, d, list, &again, err) < 0 || (!again && start_plain(r, d, err) < 0)) {
                json_decref(list);
                return ph_error_wrap(err, "start `%s` (a dependency of `%s`)", d->name, s->name);
            }
        }
        json_decref(list);
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

json_t *
ph_run_shim_argv(const ph_profile *p, const char *target, const char *signal, const char *out)
{
    json_t *argv = json_array();
    char *grace = fmt_seconds(p->stop_grace_ns), *egrace = fmt_seconds(p->escalate_grace_ns);
    char esc[512] = "", rec[PATH_MAX];

    for (size_t i = 0; i < p->escalate.n; i++) {
        if (i)
            strncat(esc, ",", sizeof esc - strlen(esc) - 1);
        strncat(esc, p->escalate.v[i], sizeof esc - strlen(esc) - 1);
    }
    snprintf(rec, sizeof rec, "%s/%s", out, PH_RECORD_NAME);
    json_array_append_new(argv, json_string("/opt/profharness/bin/ph-init"));
    json_array_append_new(argv, json_string("--stop-target"));
    json_array_append_new(argv, json_string(target));
    json_array_append_new(argv, json_string("--stop-signal"));
    json_array_append_new(argv, json_string(signal));
    json_array_append_new(argv, json_string("--grace"));
    json_array_append_new(argv, json_string(grace ? grace : "30"));
    if (esc[0]) {
        json_array_append_new(argv, json_string("--escalate"));
        json_array_append_new(argv, json_string(esc));
        json_array_append_new(argv, json_string("--escalate-grace"));
        json_array_append_new(argv, json_string(egrace ? egrace : "10"));
    }
    json_array_append_new(argv, json_string("--record"));
    json_array_append_new(argv, json_string(rec));
    json_array_append_new(argv, json_string("--"));
    free(grace);
    free(egrace);
    return argv;
}

/* What the service runs, appended to ARGV: Docker's rule, an entrypoint
 * given by the service replaces the image's and drops the image's CMD. */
static void
service_command(const ph_service *s, json_t *image_cfg, json_t *argv)
{
    json_t *ep = s->has_entrypoint ? NULL : json_object_get(image_cfg, "Entrypoint");
    json_t *cmd = s->has_command ? NULL : (s->has_entrypoint ? NULL : json_object_get(image_cfg, "Cmd"));
    json_t *x;
    size_t i;

    if (s->has_entrypoint)
        for (i = 0; i < s->entrypoint.n; i++)
            json_array_append_new(argv, json_string(s->entrypoint.v[i]));
    json_array_foreach(ep, i, x) json_array_append(argv, x);
    if (s->has_command)
        for (i = 0; i < s->command.n; i++)
            json_array_append_new(argv, json_string(s->command.v[i]));
    json_array_foreach(cmd, i, x) json_array_append(argv, x);
}

/* The argv the profiled container runs: the shim, its stop protocol, the
 * profiler's wrap, then what the service would have run.  TOOLS_BIN: the
 * wrap's program comes from the tools tree there (the image has no
 * package manager to install it). */
static int
profiled_argv(ph_run *r, const ph_service *s, const ph_profile *p, json_t *image_cfg, const char *tools_bin,
              const char *out, const char *run_id, json_t **argv_out, ph_error_t *err)
{
    json_t *argv = ph_run_shim_argv(p, p->stop_target, p->stop_signal, out);
    size_t i, n0;

    for (i = 0; i < p->wrap.n; i++) {
        char *w = ph_profile_expand(p->wrap.v[i], out, s->name, p->name, run_id);

        if (w != NULL && i == 0 && tools_bin != NULL) {
            char *t = NULL;

            if (asprintf(&t, "%s/%s", tools_bin, w) < 0)
                t = NULL;
            free(w);
            w = t;
        }
        if (w == NULL) {
            json_decref(argv);
            return ph_fail(err, ENOMEM, "allocate");
        }
        json_array_append_new(argv, json_string(w));
        free(w);
    }
    n0 = json_array_size(argv);
    service_command(s, image_cfg, argv);
    if (json_array_size(argv) == n0) {
        json_decref(argv);
        return ph_bad_input(err, "%s: service `%s` has no command to profile (none in the compose file or the image)",
                            r->compose->path, s->name);
    }
    *argv_out = argv;
    return 0;
}

/* S == NULL: a container of ours, not a service's (no compose networks
 * to join, no `privileged` to fall back from). */
static int
create_and_start(ph_run *r, const ph_service *s, const char *name, json_t *cfg, char **id_out, ph_error_t *err)
{
    ph_engine *e;
    char *id = NULL;

    if (s != NULL)
        return ph_run_create_and_start(r, s, name, cfg, id_out, err);
    if (ph_run_engine(r, &e, err) < 0 || ph_engine_container_create(e, name, cfg, &id, err) < 0)
        return -1;
    if (ph_engine_container_start(e, id, err) < 0) {
        ph_engine_container_remove(e, id, 1, NULL);
        free(id);
        return -1;
    }
    *id_out = id;
    return 0;
}

/* Whether NOTE was said of this Engine before: it is looked up, and
 * added, in the user's cache ($XDG_CACHE_HOME or ~/.cache, profharness/
 * engine-<ID>), the Engine's ID from /info.  What an Engine lacks is its
 * own fact, the same for every start and attach on it: told once, on the
 * first, is enough.  Any failure (no cache, no ID) says it again. */
static int
engine_said_before(ph_run *r, const char *note)
{
    ph_engine *e;
    json_t *info = NULL;
    const char *id, *base = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[PATH_MAX], path[PATH_MAX], line[512];
    long status = 0;
    int said = 0;
    FILE *f;

    if (ph_run_engine(r, &e, NULL) < 0 || ph_engine_request(e, "GET", "/info", NULL, &info, &status, NULL) < 0)
        return 0;
    id = json_string_value(json_object_get(info, "ID"));
    if (base != NULL && base[0] == '/')
        snprintf(dir, sizeof dir, "%s/profharness", base);
    else if (home != NULL && home[0] == '/')
        snprintf(dir, sizeof dir, "%s/.cache/profharness", home);
    else
        dir[0] = '\0';
    if (id == NULL || id[0] == '\0' || dir[0] == '\0' || strlen(note) >= sizeof line - 1) {
        json_decref(info);
        return 0;
    }
    /* the ID's colons and any other byte but [A-Za-z0-9] become '-' */
    snprintf(path, sizeof path, "%s/engine-", dir);
    for (size_t n = strlen(path), i = 0; id[i] && n + 1 < sizeof path; i++, n++) {
        unsigned char ch = (unsigned char)id[i];
        path[n] = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ? (char)ch : '-';
        path[n + 1] = '\0';
    }
    json_decref(info);
    if ((f = fopen(path, "re")) != NULL) {
        while (!said && fgets(line, sizeof line, f) != NULL) {
            line[strcspn(line, "\n")] = '\0';
            said = strcmp(line, note) == 0;
        }
        fclose(f);
    }
    for (char *sl = dir + 1; !said && (sl = strchr(sl, '/')) != NULL; sl++) { /* mkdir -p */
        *sl = '\0';
        mkdir(dir, 0700);
        *sl = '/';
    }
    if (!said && (mkdir(dir, 0700) == 0 || errno == EEXIST) && (f = fopen(path, "ae")) != NULL) {
        fprintf(f, "%s\n", note);
        fclose(f);
    }
    return said;
}

int
ph_run_create_caps_if_known(ph_run *r, const ph_service *s, const char *name, json_t *cfg, const ph_strv *if_known,
                            char **id_out, ph_error_t *err)
{
    json_t *caps = json_object_get(json_object_get(cfg, "HostConfig"), "CapAdd");
    size_t before = json_array_size(caps), added;
    char list[256] = "";

    for (size_t i = 0; caps && i < if_known->n; i++)
        ph_run_array_add_unique(caps, if_known->v[i]);
    added = json_array_size(caps) - before;
    if (create_and_start(r, s, name, cfg, id_out, err) == 0)
        return 0;
    /* An Engine older than a capability refuses it by name at create. */
    if (added == 0 || strstr((*err)->msg, "unknown capability") == NULL)
        return -1;
    for (size_t i = before; i < before + added; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i > before ? ", " : "",
                 json_string_value(json_array_get(caps, i)));
    {
        char note[300];

        snprintf(note, sizeof note, "unknown capabilities: %s", list);
        if (engine_said_before(r, note))
            ph_debug("%s: this Engine does not know %s; running without", s ? s->name : name, list);
        else
            ph_info("%s: this Engine does not know %s; running without (%s; said once per Engine)",
                    s ? s->name : name, list, (*err)->msg);
    }
    ph_error_free(err);
    while (json_array_size(caps) > before)
        json_array_remove(caps, json_array_size(caps) - 1);
    return create_and_start(r, s, name, cfg, id_out, err);
}

/* ---- before anything is stopped ------------------------------------- */

/* What start needs of a service before anything of it is stopped. */
typedef struct prepared {
    char *prof_img;     /* the profiling image, or NULL: */
    char *tools_volume; /* the service's image with the tools volume mounted */
    ph_image_facts facts;
} prepared;

/* The program the service runs in its image (ph_image_program) into
 * *PROG; *ARGV_OUT its command and *ENV_OUT the image's environment (each
 * a new JSON array) when not NULL.  0, or -1 and *err. */
static int
service_program(ph_run *r, const ph_service *s, ph_image_program_t *prog, json_t **argv_out, json_t **env_out,
                ph_error_t *err)
{
    ph_engine *e;
    json_t *info = NULL, *argv = json_array(), *cfg, *x;
    ph_cleanup_free char *img = ph_run_service_image(r, s);
    const char *path_var = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", *workdir;
    char **words = NULL;
    size_t i, n;
    int found = 0, rc = -1;

    if (img == NULL || argv == NULL || ph_run_engine(r, &e, err) < 0 ||
        ph_engine_image_inspect(e, img, &info, &found, err) < 0 || !found)
        goto out;
    cfg = json_object_get(info, "Config");
    service_command(s, cfg, argv);
    json_array_foreach(json_object_get(cfg, "Env"), i, x) {
        const char *kv = json_string_value(x);
        if (kv != NULL && strncmp(kv, "PATH=", 5) == 0)
            path_var = kv + 5;
    }
    if (ph_kvv_get(&s->environment, "PATH") != NULL)
        path_var = ph_kvv_get(&s->environment, "PATH");
    workdir = s->working_dir ? s->working_dir : json_string_value(json_object_get(cfg, "WorkingDir"));
    n = json_array_size(argv);
    if ((words = calloc(n + 1, sizeof *words)) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    for (i = 0; i < n; i++)
        words[i] = (char *)(json_string_value(json_array_get(argv, i)) ? json_string_value(json_array_get(argv, i)) : "");
    if (ph_image_program(e, img, words, n, path_var, workdir, prog, err) < 0)
        goto out;
    if (env_out != NULL && (*env_out = json_deep_copy(json_object_get(cfg, "Env"))) == NULL)
        *env_out = json_array();
    if (argv_out != NULL) {
        *argv_out = argv;
        argv = NULL;
    }
    rc = 0;
out:
    if (rc < 0 && (err == NULL || *err == NULL))
        ph_fail(err, 0, "image `%s` of service `%s` vanished", img ? img : "?", s->name);
    free(words);
    json_decref(argv);
    json_decref(info);
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

/* Refuse mode P for S, before anything of S is stopped, when the mode
 * cannot work on its program: P preloads itself (`libc:`) and the program
 * is static (the dynamic loader, which honours LD_PRELOAD, never runs;
 * names a mode of the same report that needs no preloading), or P would
 * name none of its runtime's functions (`runtimes.unnamed`). */
static int
check_program(ph_run *r, const ph_service *s, const ph_profile *p, ph_error_t *err)
{
    ph_image_program_t prog;
    json_t *argv = NULL, *env = NULL;
    char alt[160] = "";
    int rc;

    if (p->libc.n == 0 && (r->opts.allow_unnamed || !ph_profile_unnamed_any(p, PH_UNNAMED_START)))
        return 0;
    if (service_program(r, s, &prog, &argv, &env, err) < 0)
        return -1;
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
        rc = ph_run_unnamed_start(r, s, p, prog.runs, argv, env, err);
    }
    json_decref(argv);
    json_decref(env);
    return rc;
}

static int
prepare(ph_run *r, const ph_service *s, const ph_profile *p, prepared *out, ph_error_t *err)
{
    if (s->unsupported != NULL)
        return ph_bad_input(err, "%s, which profharness cannot honour: service `%s` would not run as compose runs it",
                            s->unsupported, s->name);
    /* a mode that cannot work on the program is refused before its
     * profiling image is built */
    if (ensure_service_image(r, s, r->opts.build, err) < 0 || check_program(r, s, p, err) < 0)
        return -1;
    return ensure_profiling_image(r, s, p, &out->prof_img, &out->tools_volume, &out->facts, err);
}

/* The service's own image, profiled: the tools volume read-only at
 * /opt/profharness (the shim, the sampler, the tree), and where the
 * artifacts go, PH_CONTAINER_OUT, an anonymous volume (as for read_only:
 * it outlives the stop, goes with the container), whose <service>
 * directory any user may write (ph_run_config.c puts it there before the
 * start: the image has no such directory). */
static int
tools_mount(json_t *cfg, const char *volume, ph_error_t *err)
{
    json_t *host = json_object_get(cfg, "HostConfig"), *mounts = json_object_get(host, "Mounts");
    json_t *vols = json_object_get(cfg, "Volumes");

    if (mounts == NULL) {
        mounts = json_array();
        json_object_set_new(host, "Mounts", mounts);
    }
    if (vols == NULL) {
        vols = json_object();
        json_object_set_new(cfg, "Volumes", vols);
    }
    if (mounts == NULL || vols == NULL ||
        json_array_append_new(mounts, json_pack("{s:s, s:s, s:s, s:b, s:{s:b}}", "Type", "volume", "Source", volume,
                                                "Target", PH_TOOLS_MOUNT, "ReadOnly", 1, "VolumeOptions", "NoCopy",
                                                1)) < 0 ||
        json_object_set_new(vols, PH_CONTAINER_OUT, json_object()) < 0)
        return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

static int
start_profiled(ph_run *r, const ph_service *s, const ph_profile *p, const prepared *prep, ph_error_t *err)
{
    ph_engine *e;
    json_t *cfg = NULL, *img_info = NULL, *argv = NULL, *host, *labels, *env, *caps, *secopt;
    char *img = NULL, *name = NULL, *id = NULL;
    const char *tools_volume = prep->tools_volume;
    char run_id[64], stamp[17], started[32], out[PATH_MAX], host_dir[PATH_MAX];
    int found = 0, rc = -1;
    size_t i;

    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    if (ph_run_ensure_networks(r, s, err) < 0)
        goto out;
    img = ph_run_service_image(r, s);
    if (img == NULL || ph_engine_image_inspect(e, img, &img_info, &found, err) < 0)
        goto out;
    if (!found) {
        ph_fail(err, 0, "image `%s` vanished", img);
        goto out;
    }

    ph_run_utc_stamp(stamp);
    snprintf(run_id, sizeof run_id, "%s-%s", stamp, p->name);
    ph_run_utc_iso(started, sizeof started);
    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, s->name);
    snprintf(host_dir, sizeof host_dir, "%s/%s/%s", r->opts.out_dir, s->name, run_id);

    /* from the tree when it serves the mode, or when the profiling image
     * has it (an image with no package manager) */
    if (profiled_argv(r, s, p, json_object_get(img_info, "Config"),
                      tools_volume || !prep->facts.pm[0] ? PH_TOOLS_BIN : NULL, out, run_id, &argv, err) < 0)
        goto out;
    name = container_name(r, s, p->name);
    cfg = name ? ph_run_base_config(r, s, tools_volume ? img : prep->prof_img, name, err) : NULL;
    if (cfg == NULL || (tools_volume && tools_mount(cfg, tools_volume, err) < 0))
        goto out;
    json_object_set_new(cfg, "Entrypoint", argv);
    argv = NULL;
    json_object_set_new(cfg, "Cmd", json_array());
    /* The shim turns SIGTERM into the profile's stop protocol; Docker's own
     * stop timeout must outlast it so a manual `docker stop` loses nothing. */
    json_object_set_new(cfg, "StopSignal", json_string("SIGTERM"));
    json_object_set_new(cfg, "StopTimeout",
                        json_integer((p->stop_grace_ns + (long long)p->escalate.n * p->escalate_grace_ns) / 1000000000LL + 30));
    if (s->user == NULL) {
        const char *u = json_string_value(json_object_get(json_object_get(img_info, "Config"), "User"));
        if (u && u[0])
            json_object_set_new(cfg, "User", json_string(u));
    }
    if (s->working_dir == NULL) {
        const char *w = json_string_value(json_object_get(json_object_get(img_info, "Config"), "WorkingDir"));
        if (w && w[0])
            json_object_set_new(cfg, "WorkingDir", json_string(w));
    }
    env = json_object_get(cfg, "Env");
    for (i = 0; i < p->environment.n; i++) {
        char *v = ph_profile_expand(p->environment.v[i].value ? p->environment.v[i].value : "", out,
                                    s->name, p->name, run_id);
        char *line = NULL;

        if (v && asprintf(&line, "%s=%s", p->environment.v[i].key, v) >= 0)
            json_array_append_new(env, json_string(line));
        free(v);
        free(line);
    }
    /* what the runtimes offer the mode, added to what the user set */
    if (ph_run_env_extend(env, json_object_get(json_object_get(img_info, "Config"), "Env"), &p->env_extend, err) < 0)
        goto out;
    labels = json_object_get(cfg, "Labels");
    json_object_set_new(labels, PH_LABEL_MODE, json_string(p->name));
    json_object_set_new(labels, PH_LABEL_RUN, json_string(run_id));
    json_object_set_new(labels, PH_LABEL_STARTED, json_string(started));
    json_object_set_new(labels, PH_LABEL_OUTDIR, json_string(host_dir));
    /* the definition this run is stopped, collected and reported with */
    {
        char *rec = ph_rundir_profile_record(p);

        if (rec != NULL)
            json_object_set_new(labels, PH_LABEL_PROFILE, json_string(rec));
        free(rec);
    }
    host = json_object_get(cfg, "HostConfig");
    /* The Engine must not restart a profiled container mid-run: a restart
     * would start the profiler over and its output with it. */
    if (s->restart != NULL && strcmp(s->restart, "no") != 0)
        ph_info("%s: `restart: %s` is left to restore; the profiled container is not restarted by the Engine",
                s->name, s->restart);
    json_object_set_new(host, "RestartPolicy", json_pack("{s:s, s:i}", "Name", "no", "MaximumRetryCount", 0));
    /* read_only: the artifacts still need somewhere to go.  An anonymous
     * volume outlives the stop (collection reads the stopped container
     * through the archive endpoint, which a tmpfs would not survive) and
     * goes with the container when it is removed.  (With the tools
     * volume: tools_mount made it.) */
    if (s->read_only && !tools_volume) {
        json_t *vols = json_object_get(cfg, "Volumes");

        if (vols == NULL) {
            vols = json_object();
            json_object_set_new(cfg, "Volumes", vols);
        }
        json_object_set_new(vols, PH_CONTAINER_OUT, json_object());
    }
    caps = json_object_get(host, "CapAdd");
    secopt = json_object_get(host, "SecurityOpt");
    for (i = 0; i < p->cap_add.n; i++)
        ph_run_array_add_unique(caps, p->cap_add.v[i]);
    for (i = 0; i < p->security_opt.n; i++)
        ph_run_array_add_unique(secopt, p->security_opt.v[i]);

    ph_stage_attr(ph_stage_current(), "profharness.run.id", run_id);
    if (ph_run_create_caps_if_known(r, s, name, cfg, &p->cap_add_if_known, &id, err) < 0)
        goto out;
    ph_stage_attr(ph_stage_current(), "container.id", id);
    ph_info("%s: profiling under %s (container %s); its run dir is written when it stops "
            "(`profharness stop %s`): %s", s->name, p->name, name, s->name, host_dir);
    if (p->note != NULL)
        ph_info("%s: %s", s->name, p->note);
    printf("%s\t%s\t%s\n", s->name, p->name, host_dir);
    fflush(stdout);
    rc = 0;
out:
    json_decref(cfg);
    json_decref(argv);
    json_decref(img_info);
    free(img);
    free(name);
    free(id);
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

    prepared *prep;

    if (p == NULL || ph_run_select(r, services, n, &sl, err) < 0)
        return -1;
    keep_enabled(&sl, n);
    ph_run_order_by_deps(r, &sl);
    if ((rc = ph_run_swarm_active(r, err)) != 0) { /* a stack's services: their tasks across the swarm */
        if (rc > 0)
            rc = ph_run_swarm_start(r, p, &sl, err);
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
    json_t *list = NULL, *c;
    size_t k;
    int again = 0, rc = 0;

    if (ph_run_list(r, s->name, &list, err) < 0)
        return -1;
    json_array_foreach(list, k, c) again |= ph_run_by_compose(c);
    json_array_foreach(list, k, c) {
        if (again && rc == 0 && !ph_run_by_compose(c))
            rc = remove_plain(r, c, err);
    }
    if (rc == 0 && again)
        rc = start_compose_own(r, s, list, &again, err);
    json_decref(list);
    if (rc < 0 || again)
        return rc;
    if (clear_service(r, s, err) < 0)
        return -1;
    return start_plain(r, s, err);
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
    if ((rc = ph_run_swarm_active(r, err)) != 0) { /* a stack: stop (collect) is the rollback */
        int acted = 0;

        if (rc > 0 && (rc = ph_run_swarm_stop(r, &sl, &acted, err)) == 0 && !acted)
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
    /* a profiled run is collected first, as stop does: down never loses one */
    rc = ph_run_stop_services(r, &sl, 1, err);
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        json_t *list = NULL, *c;
        size_t k;

        if ((rc = ph_run_list(r, sl.v[i]->name, &list, err)) < 0)
            break;
        json_array_foreach(list, k, c) {
            const char *id = json_string_value(json_object_get(c, "Id"));
            int running = ph_run_is_running(c);

            if (!running && ph_run_by_compose(c))
                continue; /* compose's, already stopped */
            if ((rc = remove_plain(r, c, err)) < 0)
                break;
            if (!ph_run_by_compose(c))
                ph_info("%s: %s container %.12s", sl.v[i]->name, running ? "stopped and removed" : "removed", id);
            downed++;
        }
        json_decref(list);
    }
    if (rc == 0 && downed == 0)
        ph_info("nothing to take down: no container of %s runs in project `%s`", n > 0 ? "those services" : "its services",
                r->compose->project);
    free(sl.v);
    return rc;
}
