/* ph_run.c - the profiling loop (see ph_run.h for the contract): the run
 * context, service selection, containers found by label (status and logs
 * are ph_run_status.c's).
 *
 * Design.  Every command is "find the containers by label, then act":
 *
 *   start    deps up (unprofiled) -> old container of the service stopped
 *            (collected first if it was profiled) -> profiling image ensured
 *            -> container created with the init shim as PID 1 -> started
 *            (ph_run_start.c, configuration in ph_run_config.c).
 *   stop     SIGTERM to the shim -> wait -> stream the artifacts out ->
 *            rename into place -> only then remove the container
 *            (ph_run_collect.c).
 *
 * Beside docker compose.  A user's stack often runs under `docker compose
 * up -d` when they reach for profharness: "restart *this* service under a
 * profiler, then put it back".  So the listing takes compose's workloads
 * of the project too (the backend marks them by_compose, one-off ones
 * left out, given the service and mode "none"), and status, start,
 * restore and `service:` references treat one as the service's; start
 * stops compose's and keeps it (its name, anonymous volumes and config
 * hash are compose's), then runs the profiled one in its place on the same
 * networks, aliases and ports; restore starts compose's again when there
 * is one, else creates one with compose's labels (compose_labels), so
 * `docker compose ps/logs/down` take it as their own.  Nothing removes a
 * workload compose made.
 *
 * Every orchestrator call goes through the backend (ph_backend.h): no
 * Engine path or Engine JSON here; tests/check-floors.sh keeps it so.
 *
 * Single-threaded; what blocks is the backend (every call has a timeout) and
 * the disk.
 *
 * Timing (ph_timing.h): each command is a tree of stages.  The Engine
 * transport times every call; the loop adds a stage where its own work
 * crosses a boundary: per service ("stop front", with service, mode, run
 * id and container id as attributes), images, the profiler's flush (the
 * Engine's wait runs alongside the signal), stream and extract (the
 * extractor's thread is a concurrent stage of its own), handing files to
 * the invoker, rename and links, and writing run.json, which keeps the
 * tree so far with its trace id next to harness.folded and
 * harness.trace.json.  A stage is a few lines at the boundary, nothing
 * between.
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

#include "ph_escape.h"
#include "ph_fs.h"
#include "ph_log.h"
#include "ph_paths.h"
#include "ph_suggest.h"
#include "ph_util.h"

/* ---- small helpers ---------------------------------------------------- */

double
ph_run_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
ph_run_utc_stamp(char buf[17])
{
    time_t t = time(NULL);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(buf, 17, "%Y%m%dT%H%M%SZ", &tm);
}

void
ph_run_utc_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Files we write belong to the person who asked: under sudo that is
 * SUDO_UID, not root (the setup we replace left root-owned files).  Only
 * what the harness itself creates is handed over: `sudo profharness -o
 * /tmp` must not give /tmp away. */
int
ph_run_output_cb(void *ud, const char *data, size_t len)
{
    ph_run_output *o = ud;
    size_t room = sizeof o->buf - 1 - o->len;

    if (len > room)
        len = room;
    memcpy(o->buf + o->len, data, len);
    o->len += len;
    o->buf[o->len] = '\0';
    return 0;
}

/* mkdir -p PATH; the directories it creates are the invoker's. */
int
ph_run_mkdir_p(const char *path, ph_error_t *err)
{
    char tmp[PATH_MAX];
    size_t len;

    len = strlen(path);
    if (len == 0 || len >= sizeof tmp)
        return ph_fail(err, ENAMETOOLONG, "mkdir `%s`", path);
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1;; p++) {
        char c = *p;

        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) == 0)
            ph_rundir_give_at(AT_FDCWD, tmp);
        else if (errno != EEXIST)
            return ph_fail(err, errno, "mkdir `%s`", tmp);
        *p = c;
        if (c == '\0')
            break;
    }
    return 0;
}

int
ph_run_backend(ph_run *r, ph_backend **out, ph_error_t *err)
{
    ph_backend **slot = ph_run_backend_slot(r); /* a worker thread has its own */

    if (*slot != NULL) {
        *out = *slot;
        return 0;
    }
    /* chosen once: a worker opens another handle of the run's kind */
    if (slot != &r->backend && r->backend != NULL)
        *slot = ph_backend_open(r->backend, err);
    else
        *slot = r->opts.backend_new ? r->opts.backend_new(r->opts.backend_ud, err)
                                    : ph_backend_new(r->compose->project, err);
    if (*slot == NULL)
        return -1;
    *out = *slot;
    return 0;
}

/* ---- lifecycle -------------------------------------------------------- */

int
ph_run_load_profiles(const ph_run_opts *o, const char *data_dir, const char *project_dir, ph_profile_set *out,
                     ph_error_t *err)
{
    char shipped[PATH_MAX + 16], own[PATH_MAX + 16];
    ph_profile_dir dirs[3] = { { shipped, 0 }, { NULL, 1 }, { o->profiles_dir, 0 } };

    snprintf(shipped, sizeof shipped, "%s/profiles", data_dir);
    if (project_dir != NULL) {
        snprintf(own, sizeof own, "%s/profiles", project_dir);
        dirs[1].path = own;
    }
    return ph_profiles_load_dirs(dirs, PH_ARRAY_LEN(dirs), out, err);
}

ph_run *
ph_run_new(const ph_run_opts *o, ph_error_t *err)
{
    ph_run *r;
    ph_layout lay;
    char out[PATH_MAX];

    r = calloc(1, sizeof *r);
    if (r == NULL) {
        ph_fail(err, errno, "allocate run context");
        return NULL;
    }
    r->opts = *o;
    if (o->data_dir != NULL)
        r->data_dir = strdup(o->data_dir);
    else if (ph_paths_layout(NULL, getenv("PH_DATA_DIR"), &lay, err) == 0)
        r->data_dir = strdup(lay.data);
    else
        goto fail;
    if (r->data_dir == NULL) {
        ph_fail(err, errno, "allocate");
        goto fail;
    }
    if ((o->compose ? ph_compose_open(o->compose, &r->compose, err)
                    : ph_compose_load(o->compose_file, o->project, &r->compose, err)) < 0)
        goto fail;
    if (ph_run_load_profiles(o, r->data_dir, r->compose->dir, &r->profiles, err) < 0)
        goto fail;
    /* Runs land beside the project, wherever the command is run from; a
     * relative -o is the user's, from where they stand.  Absolute either
     * way: it is printed, and kept in labels `status` reads elsewhere. */
    if (o->out_dir == NULL)
        snprintf(out, sizeof out, "%s/%s", r->compose->dir, PH_OUT_DEFAULT);
    else if (ph_paths_absolute(o->out_dir, out, sizeof out, err) < 0)
        goto fail;
    if ((r->out_dir = strdup(out)) == NULL) {
        ph_fail(err, errno, "allocate");
        goto fail;
    }
    r->opts.out_dir = r->out_dir;
    return r;
fail:
    ph_run_free(r);
    return NULL;
}

void
ph_run_free(ph_run *r)
{
    if (r == NULL)
        return;
    ph_backend_close(r->backend);
    ph_compose_free(r->compose);
    ph_profiles_free(&r->profiles);
    free(r->data_dir);
    free(r->out_dir);
    free(r);
}

ph_compose *
ph_run_compose(ph_run *r)
{
    return r->compose;
}

ph_profile_set *
ph_run_profiles(ph_run *r)
{
    return &r->profiles;
}

const char *
ph_run_out_dir(ph_run *r)
{
    return r->out_dir;
}

/* ---- service selection ------------------------------------------------ */

const char *
ph_run_compose_path(ph_run *r)
{
    return r->compose->files.n > 0 ? r->compose->files.v[0] : r->compose->path;
}

int
ph_run_bad_service(ph_run *r, const char *name, ph_error_t *err)
{
    ph_compose *c = r->compose;
    const char **names = calloc(c->n_services + 1, sizeof *names);
    const char *near;
    char list[1024];

    if (names == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    for (size_t i = 0; i < c->n_services; i++)
        names[i] = c->services[i].name;
    near = ph_suggest(name, names, c->n_services);
    if (near != NULL)
        ph_bad_input(err, "%s: no service `%s`; did you mean `%s`?", ph_run_compose_path(r), name, near);
    else
        ph_bad_input(err, "%s: no service `%s`", ph_run_compose_path(r), name);
    ph_error_hint(err, "its services: %s", ph_suggest_list(list, sizeof list, names, c->n_services));
    free(names);
    return -1;
}

int
ph_run_bad_mode(ph_run *r, const char *mode, ph_error_t *err)
{
    const char *names[128];
    const char *near;
    char list[1024];
    size_t n = ph_profiles_names(&r->profiles, names, PH_ARRAY_LEN(names), 1), o = 0;

    near = ph_suggest(mode, names, n);
    if (near != NULL)
        ph_bad_input(err, "no mode `%s`; did you mean `%s`?", mode, near);
    else
        ph_bad_input(err, "no mode `%s`", mode);
    list[0] = '\0';
    for (size_t i = 0; i < r->profiles.n && o < sizeof list; i++) {
        const ph_profile *p = &r->profiles.v[i];

        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", p->name);
        for (size_t j = 0; j < p->aliases.n && o < sizeof list; j++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s%s", j ? ", " : " (also ", p->aliases.v[j],
                                  j + 1 == p->aliases.n ? ")" : "");
    }
    return ph_error_hint(err, "the modes: %s; `profharness modes` says what each does", list);
}

int
ph_run_select(ph_run *r, char **names, int n, ph_svc_list *out, ph_error_t *err)
{
    ph_compose *c = r->compose;

    out->v = calloc(c->n_services + 1, sizeof *out->v);
    out->n = 0;
    if (out->v == NULL)
        return ph_fail(err, errno, "allocate");
    if (n == 0) {
        for (size_t i = 0; i < c->n_services; i++)
            out->v[out->n++] = &c->services[i];
        return 0;
    }
    for (int i = 0; i < n; i++) {
        ph_service *s = ph_compose_service(c, names[i]);
        int dup = 0;

        if (s == NULL) {
            free(out->v);
            out->v = NULL;
            return ph_run_bad_service(r, names[i], err);
        }
        for (size_t j = 0; j < out->n; j++)
            dup |= out->v[j] == s;
        if (!dup)
            out->v[out->n++] = s;
        /* Naming a service enables its profiles, as compose does. */
        ph_compose_enable(c, s);
    }
    return 0;
}

int
ph_run_list(ph_run *r, const char *service, ph_workload_list *out, ph_error_t *err)
{
    ph_backend *b;

    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    return b->ops->list(b, r->compose->project, service, PH_LIST_COMPOSE, out, err);
}

/* ---- what a container of ours says of itself ------------------------- */

int
ph_run_outdir_check(ph_run *r, const ph_workload *c, char *expect, size_t len, ph_error_t *err)
{
    const char *service = c->service, *run = c->run;
    const char *label = c->outdir, *id = c->id;
    char e1[PATH_MAX], e2[PATH_MAX];

    size_t ll, tl;
    char tail[PATH_MAX];

    snprintf(expect, len, "%s/%s/%s", r->opts.out_dir, service ? service : "?", run ? run : "?");
    /* The run goes where this command writes runs (-o), never where a
     * label says; a label that disagrees with the container's own service
     * and run labels was not written by profharness. */
    snprintf(tail, sizeof tail, "/%s/%s", service ? service : "?", run ? run : "?");
    ll = label ? strlen(label) : 0;
    tl = strlen(tail);
    if (c->by_compose || label == NULL ||
        (label[0] == '/' && ll > tl && strcmp(label + ll - tl, tail) == 0))
        return 0;
    ph_fail(err, 0, "container %.12s says its run goes to `%s`, which is not a run dir of service `%s`, run `%s`: "
            "its labels were not written by profharness; not collected", id ? id : "?",
            ph_escape(e1, sizeof e1, label), ph_escape(e2, sizeof e2, service ? service : "?"),
            ph_escape(tail, sizeof tail, run ? run : "?"));
    return ph_error_hint(err, "runs are written to `%s` (-o); a container that only carries profharness's labels "
                         "is not collected: remove it with `docker rm -f %.12s`", r->opts.out_dir, id ? id : "?");
}

int
ph_run_started_profile(ph_run *r, const ph_workload *c, ph_profile *own, const ph_profile **out, ph_error_t *err)
{
    const char *rec = c->profile, *mode = c->mode;
    const char *id = c->id;

    memset(own, 0, sizeof *own);
    if (rec == NULL) {
        /* a container of an older profharness: the mode as it is now */
        *out = ph_profiles_find(&r->profiles, mode);
        return 0;
    }
    if (ph_rundir_profile_load(rec, mode, own, err) < 0) {
        ph_error_wrap(err, "container %.12s: the profile it was started with cannot be read", id ? id : "?");
        return ph_error_hint(err, "give the run up with `profharness stop --discard %s`",
                             c->service ? c->service : "SERVICE");
    }
    *out = own;
    return 0;
}

/* ---- timing ------------------------------------------------------------ */

ph_stage *
ph_run_service_stage(const char *verb, const char *service, const char *mode)
{
    ph_stage *st = ph_stage_beginf("harness", 0, "%s %s", verb, service ? service : "?");

    ph_stage_attr(st, "profharness.service", service);
    ph_stage_attr(st, "profharness.mode", mode);
    return st;
}

ph_stage *
ph_run_container_stage(const ph_workload *c, const char *verb)
{
    ph_stage *st = ph_run_service_stage(verb, c->service, c->mode);

    ph_stage_attr(st, "profharness.run.id", c->run);
    ph_stage_attr(st, "container.id", c->id);
    return st;
}

int
ph_run_stage_done(ph_stage *st, int rc, ph_error_t *err)
{
    if (rc < 0)
        ph_stage_fail(st, err != NULL && *err != NULL ? (*err)->msg : "failed");
    ph_stage_end(st);
    return rc;
}
