/* ph_run.c - the profiling loop (see ph_run.h for the contract).
 *
 * Design.  Every command is "find the containers by label, then act":
 *
 *   start    deps up (unprofiled) -> old container of the service stopped
 *            (collected first if it was profiled) -> profiling image ensured
 *            -> container created with the init shim as PID 1 -> started.
 *   stop     flock(<out>/<service>/.lock) -> SIGTERM to the shim (which
 *            signals the profiled process and escalates only after the
 *            profile's grace) -> Engine wait -> stream the artifacts out
 *            through libarchive into a temp dir -> rename into place ->
 *            links -> only then remove the container.
 *
 * Single-threaded; what blocks is the Engine (every call has a timeout) and
 * the disk.  The lock makes a second `stop` of the same service wait for the
 * first and then find nothing to stop.
 */
#include "ph_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ph_image.h"
#include "ph_log.h"
#include "ph_tar.h"
#include "ph_util.h"

struct ph_run {
    ph_run_opts opts;
    char *data_dir;
    ph_compose *compose;
    ph_profile_set profiles;
    ph_engine *engine;
};

/* ---- small helpers ---------------------------------------------------- */

static double
now_s(void)
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

static void
utc_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int
mkdir_p(const char *path, ph_error_t *err)
{
    char tmp[PATH_MAX];
    size_t len;

    len = strlen(path);
    if (len == 0 || len >= sizeof tmp)
        return ph_fail(err, ENAMETOOLONG, "mkdir `%s`", path);
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return ph_fail(err, errno, "mkdir `%s`", tmp);
        *p = '/';
    }
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
        return ph_fail(err, errno, "mkdir `%s`", tmp);
    return 0;
}

/* Files we write belong to the person who asked: under sudo that is
 * SUDO_UID, not root (the setup we replace left root-owned files). */
static void
give_to_invoker(const char *path)
{
    const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
    char *end;
    long uid, gid;

    if (geteuid() != 0 || u == NULL || g == NULL)
        return;
    uid = strtol(u, &end, 10);
    if (*end != '\0')
        return;
    gid = strtol(g, &end, 10);
    if (*end != '\0')
        return;
    if (lchown(path, (uid_t)uid, (gid_t)gid) < 0)
        ph_debug("chown `%s`: %s", path, strerror(errno));
}

static void
give_tree_to_invoker(const char *dir)
{
    DIR *d;
    struct dirent *de;
    char p[PATH_MAX];

    if (getenv("SUDO_UID") == NULL || geteuid() != 0)
        return;
    give_to_invoker(dir);
    d = opendir(dir);
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (de->d_type == DT_DIR)
            give_tree_to_invoker(p);
        else
            give_to_invoker(p);
    }
    closedir(d);
}

static int
engine(ph_run *r, ph_engine **out, ph_error_t *err)
{
    if (r->engine == NULL) {
        r->engine = ph_engine_new(err);
        if (r->engine == NULL)
            return -1;
        if (ph_engine_ping(r->engine, err) < 0) {
            ph_engine_free(r->engine);
            r->engine = NULL;
            return -1;
        }
    }
    *out = r->engine;
    return 0;
}

static const char *
label_of(json_t *container, const char *key)
{
    json_t *labels = json_object_get(container, "Labels");

    return json_string_value(json_object_get(labels, key));
}

/* ---- lifecycle -------------------------------------------------------- */

static char *
find_data_dir(const char *given)
{
    char exe[PATH_MAX], cand[PATH_MAX + 32];
    ssize_t n;
    char *slash;
    const char *env = getenv("PH_DATA_DIR");

    if (given != NULL)
        return strdup(given);
    if (env != NULL && env[0] != '\0')
        return strdup(env);
    /* build/profharness -> the repository (images/, build/). */
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        for (int up = 0; up < 2; up++) {
            slash = strrchr(exe, '/');
            if (slash == NULL)
                break;
            *slash = '\0';
            snprintf(cand, sizeof cand, "%s/images/profiling/Dockerfile", exe);
            if (access(cand, R_OK) == 0)
                return strdup(exe);
        }
    }
    return strdup(".");
}

ph_run *
ph_run_new(const ph_run_opts *o, ph_error_t *err)
{
    ph_run *r;

    r = calloc(1, sizeof *r);
    if (r == NULL) {
        ph_fail(err, errno, "allocate run context");
        return NULL;
    }
    r->opts = *o;
    r->data_dir = find_data_dir(o->data_dir);
    if (r->data_dir == NULL) {
        ph_fail(err, errno, "allocate");
        goto fail;
    }
    if (ph_compose_load(o->compose_file, o->project, &r->compose, err) < 0)
        goto fail;
    if (ph_profiles_load_dir(o->profiles_dir, &r->profiles, err) < 0)
        goto fail;
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
    ph_engine_free(r->engine);
    ph_compose_free(r->compose);
    ph_profiles_free(&r->profiles);
    free(r->data_dir);
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

/* ---- service selection ------------------------------------------------ */

typedef struct svc_list {
    ph_service **v;
    size_t n;
} svc_list;

static int
select_services(ph_run *r, char **names, int n, svc_list *out, ph_error_t *err)
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
            ph_bad_input(err, "%s: no service `%s`", c->path, names[i]);
            return ph_error_hint(err, "services in %s: run `profharness status`", c->path);
        }
        for (size_t j = 0; j < out->n; j++)
            dup |= out->v[j] == s;
        if (!dup)
            out->v[out->n++] = s;
    }
    return 0;
}

/* Containers of this project (and SERVICE, when not NULL). */
static int
list_containers(ph_run *r, const char *service, json_t **out, ph_error_t *err)
{
    char l1[512], l2[512];
    const char *labels[2] = { l1, l2 };
    ph_engine *e;

    if (engine(r, &e, err) < 0)
        return -1;
    snprintf(l1, sizeof l1, "%s=%s", PH_LABEL_PROJECT, r->compose->project);
    snprintf(l2, sizeof l2, "%s=%s", PH_LABEL_SERVICE, service ? service : "");
    return ph_engine_containers_by_label(e, labels, service ? 2 : 1, out, err);
}

static int
is_running(json_t *c)
{
    const char *state = json_string_value(json_object_get(c, "State"));

    return state != NULL && (strcmp(state, "running") == 0 || strcmp(state, "restarting") == 0);
}

static int
is_profiled(json_t *c)
{
    const char *mode = label_of(c, PH_LABEL_MODE);

    return mode != NULL && strcmp(mode, "none") != 0;
}

/* ---- container configuration ------------------------------------------ */

static json_t *
strv_json(const ph_strv *v)
{
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < v->n; i++)
        json_array_append_new(a, json_string(v->v[i]));
    return a;
}

static void
array_add_unique(json_t *a, const char *s)
{
    size_t i;
    json_t *x;

    json_array_foreach(a, i, x) {
        if (json_string_value(x) && strcmp(json_string_value(x), s) == 0)
            return;
    }
    json_array_append_new(a, json_string(s));
}

static char *
project_name(ph_run *r, const char *name)
{
    char *s = NULL;

    if (asprintf(&s, "%s_%s", r->compose->project, name) < 0)
        return NULL;
    return s;
}

static char *
service_image(ph_run *r, const ph_service *s)
{
    char *img = NULL;

    if (s->image != NULL)
        return strdup(s->image);
    if (asprintf(&img, "%s-%s", r->compose->project, s->name) < 0)
        return NULL;
    return img;
}

/* The configuration compose would give the service; the profiled variant
 * is derived from it by the caller.  Returns a new object or NULL. */
static json_t *
base_config(ph_run *r, const ph_service *s, const char *image, ph_error_t *err)
{
    json_t *cfg, *host, *env, *labels, *binds, *vols, *ports, *exposed, *eps;
    char *net;

    cfg = json_object();
    host = json_object();
    env = json_array();
    labels = json_object();
    binds = json_array();
    vols = json_object();
    ports = json_object();
    exposed = json_object();
    eps = json_object();
    if (!cfg || !host || !env || !labels || !binds || !vols || !ports || !exposed || !eps) {
        json_decref(cfg); json_decref(host); json_decref(env); json_decref(labels);
        json_decref(binds); json_decref(vols); json_decref(ports); json_decref(exposed);
        json_decref(eps);
        ph_fail(err, ENOMEM, "build container config");
        return NULL;
    }
    json_object_set_new(cfg, "Image", json_string(image));
    if (s->has_entrypoint)
        json_object_set_new(cfg, "Entrypoint", strv_json(&s->entrypoint));
    if (s->has_command)
        json_object_set_new(cfg, "Cmd", strv_json(&s->command));
    for (size_t i = 0; i < s->environment.n; i++) {
        const ph_kv *kv = &s->environment.v[i];
        const char *val = kv->value ? kv->value : getenv(kv->key);
        char *line = NULL;

        if (val == NULL)
            continue;
        if (asprintf(&line, "%s=%s", kv->key, val) >= 0) {
            json_array_append_new(env, json_string(line));
            free(line);
        }
    }
    json_object_set_new(cfg, "Env", env);
    if (s->working_dir)
        json_object_set_new(cfg, "WorkingDir", json_string(s->working_dir));
    if (s->user)
        json_object_set_new(cfg, "User", json_string(s->user));
    for (size_t i = 0; i < s->labels.n; i++)
        json_object_set_new(labels, s->labels.v[i].key, json_string(s->labels.v[i].value ? s->labels.v[i].value : ""));
    json_object_set_new(labels, PH_LABEL_PROJECT, json_string(r->compose->project));
    json_object_set_new(labels, PH_LABEL_SERVICE, json_string(s->name));
    json_object_set_new(labels, PH_LABEL_MODE, json_string("none"));
    json_object_set_new(cfg, "Labels", labels);
    if (s->stop_signal)
        json_object_set_new(cfg, "StopSignal", json_string(s->stop_signal));
    if (s->stop_grace_ns >= 0)
        json_object_set_new(cfg, "StopTimeout", json_integer((s->stop_grace_ns + 999999999) / 1000000000));
    if (s->healthcheck.present) {
        json_t *hc = json_object();

        if (s->healthcheck.disable)
            json_object_set_new(hc, "Test", json_pack("[s]", "NONE"));
        else
            json_object_set_new(hc, "Test", strv_json(&s->healthcheck.test));
        if (s->healthcheck.interval_ns)
            json_object_set_new(hc, "Interval", json_integer(s->healthcheck.interval_ns));
        if (s->healthcheck.timeout_ns)
            json_object_set_new(hc, "Timeout", json_integer(s->healthcheck.timeout_ns));
        if (s->healthcheck.start_period_ns)
            json_object_set_new(hc, "StartPeriod", json_integer(s->healthcheck.start_period_ns));
        if (s->healthcheck.retries)
            json_object_set_new(hc, "Retries", json_integer(s->healthcheck.retries));
        json_object_set_new(cfg, "Healthcheck", hc);
    }

    for (size_t i = 0; i < s->n_volumes; i++) {
        const ph_volume *v = &s->volumes[i];
        char *b = NULL, *src = NULL;

        if (v->source == NULL) {
            json_object_set_new(vols, v->target, json_object());
            continue;
        }
        src = v->bind ? strdup(v->source) : project_name(r, v->source);
        if (src && asprintf(&b, "%s:%s%s", src, v->target, v->read_only ? ":ro" : "") >= 0) {
            json_array_append_new(binds, json_string(b));
            free(b);
        }
        free(src);
    }
    json_object_set_new(cfg, "Volumes", vols);
    json_object_set_new(host, "Binds", binds);

    for (size_t i = 0; i < s->n_ports; i++) {
        const ph_port *p = &s->ports[i];
        char key[64];
        json_t *bind, *arr;

        snprintf(key, sizeof key, "%s/%s", p->container_port, p->protocol ? p->protocol : "tcp");
        json_object_set_new(exposed, key, json_object());
        if (p->host_port == NULL && p->host_ip == NULL)
            continue;
        arr = json_object_get(ports, key);
        if (arr == NULL) {
            arr = json_array();
            json_object_set_new(ports, key, arr);
        }
        bind = json_object();
        json_object_set_new(bind, "HostIp", json_string(p->host_ip ? p->host_ip : ""));
        json_object_set_new(bind, "HostPort", json_string(p->host_port ? p->host_port : ""));
        json_array_append_new(arr, bind);
    }
    json_object_set_new(cfg, "ExposedPorts", exposed);
    json_object_set_new(host, "PortBindings", ports);
    json_object_set_new(host, "CapAdd", strv_json(&s->cap_add));
    json_object_set_new(host, "CapDrop", strv_json(&s->cap_drop));
    json_object_set_new(host, "SecurityOpt", strv_json(&s->security_opt));
    json_object_set_new(host, "Privileged", json_boolean(s->privileged));

    /* The first network goes in the create call (API < 1.44 takes one);
     * the rest are connected before start. */
    net = s->networks.n > 0 ? project_name(r, s->networks.v[0]) : project_name(r, "default");
    if (net == NULL) {
        json_decref(cfg); json_decref(host); json_decref(eps);
        ph_fail(err, ENOMEM, "build container config");
        return NULL;
    }
    json_object_set_new(host, "NetworkMode", json_string(net));
    json_object_set_new(eps, net, json_pack("{s:[s]}", "Aliases", s->name));
    json_object_set_new(cfg, "NetworkingConfig", json_pack("{s:o}", "EndpointsConfig", eps));
    json_object_set_new(cfg, "HostConfig", host);
    free(net);
    return cfg;
}

static int
ensure_networks(ph_run *r, const ph_service *s, ph_error_t *err)
{
    ph_engine *e;
    json_t *labels;
    int rc = 0;

    if (engine(r, &e, err) < 0)
        return -1;
    labels = json_pack("{s:s}", PH_LABEL_PROJECT, r->compose->project);
    if (s->networks.n == 0) {
        char *n = project_name(r, "default");
        rc = n ? ph_engine_network_ensure(e, n, labels, err) : ph_fail(err, ENOMEM, "allocate");
        free(n);
    }
    for (size_t i = 0; rc == 0 && i < s->networks.n; i++) {
        char *n = project_name(r, s->networks.v[i]);
        rc = n ? ph_engine_network_ensure(e, n, labels, err) : ph_fail(err, ENOMEM, "allocate");
        free(n);
    }
    for (size_t i = 0; rc == 0 && i < s->n_volumes; i++) {
        const ph_volume *v = &s->volumes[i];
        char *n;

        if (v->bind || v->source == NULL)
            continue;
        n = project_name(r, v->source);
        rc = n ? ph_engine_volume_ensure(e, n, labels, err) : ph_fail(err, ENOMEM, "allocate");
        free(n);
    }
    json_decref(labels);
    return rc;
}

static int
connect_extra_networks(ph_run *r, const ph_service *s, const char *id, ph_error_t *err)
{
    ph_engine *e;

    if (engine(r, &e, err) < 0)
        return -1;
    for (size_t i = 1; i < s->networks.n; i++) {
        char *n = project_name(r, s->networks.v[i]), path[1024];
        json_t *body;
        long st;
        int rc;

        if (n == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        snprintf(path, sizeof path, "/networks/%s/connect", n);
        body = json_pack("{s:s, s:{s:[s]}}", "Container", id, "EndpointConfig", "Aliases", s->name);
        rc = ph_engine_request(e, "POST", path, body, NULL, &st, err);
        json_decref(body);
        free(n);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Create and start; when the host refuses `privileged` (it cannot grant
 * every capability), fall back to the explicit capabilities and say so. */
static int
create_and_start(ph_run *r, const ph_service *s, const char *name, json_t *cfg, char **id_out,
                 ph_error_t *err)
{
    ph_engine *e;
    char *id = NULL;
    json_t *host = json_object_get(cfg, "HostConfig");

    if (engine(r, &e, err) < 0)
        return -1;
    if (ph_engine_container_create(e, name, cfg, &id, err) < 0)
        return -1;
    if (connect_extra_networks(r, s, id, err) < 0)
        goto fail;
    if (ph_engine_container_start(e, id, err) == 0) {
        *id_out = id;
        return 0;
    }
    if (!json_is_true(json_object_get(host, "Privileged")))
        goto fail;
    ph_warn("%s: the host refused `privileged: true` (%s); running with the explicit capabilities instead",
            s->name, (*err)->msg);
    ph_error_free(err);
    ph_engine_container_remove(e, id, 1, NULL);
    free(id);
    id = NULL;
    json_object_set_new(host, "Privileged", json_false());
    if (ph_engine_container_create(e, name, cfg, &id, err) < 0)
        return -1;
    if (connect_extra_networks(r, s, id, err) < 0)
        goto fail;
    if (ph_engine_container_start(e, id, err) < 0)
        goto fail;
    *id_out = id;
    return 0;
fail:
    ph_engine_container_remove(e, id, 1, NULL);
    free(id);
    return ph_error_wrap(err, "start service `%s`", s->name);
}

/* ---- images ----------------------------------------------------------- */

static int
ensure_service_image(ph_run *r, const ph_service *s, int force_build, ph_error_t *err)
{
    ph_engine *e;
    ph_cleanup_free char *img = service_image(r, s);

    if (img == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (engine(r, &e, err) < 0)
        return -1;
    return ph_image_ensure_service(e, s, img, force_build, err);
}

/* The union of every profile's packages: one profiling image serves every
 * mode, so switching modes never rebuilds. */
static int
all_packages(ph_run *r, ph_strv *out)
{
    for (size_t i = 0; i < r->profiles.n; i++) {
        ph_profile *p = &r->profiles.v[i];

        for (size_t j = 0; j < p->packages.n; j++) {
            int seen = 0;

            for (size_t k = 0; k < out->n; k++)
                seen |= strcmp(out->v[k], p->packages.v[j]) == 0;
            if (!seen && ph_strv_push(out, p->packages.v[j]) < 0)
                return -1;
        }
    }
    return 0;
}

static int
ensure_profiling_image(ph_run *r, const ph_service *s, char **tag_out, ph_error_t *err)
{
    ph_engine *e;
    ph_strv pkgs = { 0 };
    ph_cleanup_free char *img = service_image(r, s);
    int rc;

    if (img == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if (engine(r, &e, err) < 0)
        return -1;
    if (all_packages(r, &pkgs) < 0) {
        ph_strv_free(&pkgs);
        return ph_fail(err, ENOMEM, "allocate");
    }
    rc = ph_image_ensure_profiling(e, img, r->data_dir, &pkgs, tag_out, err);
    ph_strv_free(&pkgs);
    return rc;
}

int
ph_run_setup(ph_run *r, char **services, int n, ph_error_t *err)
{
    svc_list sl;
    int rc = 0;

    if (select_services(r, services, n, &sl, err) < 0)
        return -1;
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        char *tag = NULL;

        rc = ensure_service_image(r, sl.v[i], 1, err);
        if (rc == 0)
            rc = ensure_profiling_image(r, sl.v[i], &tag, err);
        if (rc == 0)
            ph_info("%s: ready (profiling image %s)", sl.v[i]->name, tag);
        free(tag);
    }
    free(sl.v);
    return rc;
}

/* ---- collection ------------------------------------------------------- */

typedef struct stage {
    const char *name;
    double seconds;
} stage;

typedef struct collect_result {
    char run_dir[PATH_MAX];
    ph_tar_stats stats;
    json_t *record;      /* the shim's completion record, or NULL */
} collect_result;

static int
remove_entry_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    remove(path);
    return 0;
}

static void
remove_tree(const char *dir)
{
    nftw(dir, remove_entry_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static int
extract_cb(void *ud, const char *data, size_t len)
{
    void **a = ud;
    ph_tar_extract *x = a[0];
    ph_error_t *err = a[1];

    return ph_tar_extract_feed(x, data, len, err);
}

/* Replace LINK with a symlink to TARGET, atomically. */
static int
link_replace(const char *target, const char *link, ph_error_t *err)
{
    char tmp[PATH_MAX];

    snprintf(tmp, sizeof tmp, "%s.tmp-%d", link, (int)getpid());
    unlink(tmp);
    if (symlink(target, tmp) < 0)
        return ph_fail(err, errno, "symlink `%s`", tmp);
    give_to_invoker(tmp);
    if (rename(tmp, link) < 0) {
        int e = errno;
        unlink(tmp);
        return ph_fail(err, e, "rename `%s` to `%s`", tmp, link);
    }
    return 0;
}

/* The newest file in DIR matching GLOB, by mtime then name. */
static int
newest_match(const char *dir, const char *glob, char *out, size_t len)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    struct stat st;
    time_t best = 0;
    char p[PATH_MAX];
    int found = 0;

    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        if (fnmatch(glob, de->d_name, 0) != 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (!found || st.st_mtime > best || (st.st_mtime == best && strcmp(de->d_name, out) > 0)) {
            snprintf(out, len, "%s", de->d_name);
            best = st.st_mtime;
            found = 1;
        }
    }
    closedir(d);
    return found;
}

static int
update_links(ph_run *r, const char *svc_dir, const char *run_name, const char *mode, ph_error_t *err)
{
    char link[PATH_MAX], target[PATH_MAX], run_dir[PATH_MAX], file[NAME_MAX + 1];
    ph_profile *p = ph_profiles_find(&r->profiles, mode);

    snprintf(link, sizeof link, "%s/latest", svc_dir);
    if (link_replace(run_name, link, err) < 0)
        return -1;
    if (p == NULL)
        return 0;
    snprintf(run_dir, sizeof run_dir, "%s/%s", svc_dir, run_name);
    for (size_t i = 0; i < p->n_artifacts; i++) {
        const ph_artifact_spec *a = &p->artifacts[i];

        if (a->latest == NULL || !newest_match(run_dir, a->glob, file, sizeof file))
            continue;
        snprintf(link, sizeof link, "%s/%s", svc_dir, a->latest);
        snprintf(target, sizeof target, "%s/%s", run_name, file);
        if (link_replace(target, link, err) < 0)
            return -1;
    }
    return 0;
}

static int
write_json_file(const char *path, json_t *j, ph_error_t *err)
{
    char tmp[PATH_MAX];

    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (json_dump_file(j, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) < 0)
        return ph_fail(err, errno, "write `%s`", tmp);
    if (rename(tmp, path) < 0)
        return ph_fail(err, errno, "rename `%s`", tmp);
    give_to_invoker(path);
    return 0;
}

/* Stream /opt/profiling/<service> out of container C into a new run dir.
 * SNAPSHOT: a copy while it runs (a distinct name, links untouched). */
static int
collect_into_run_dir(ph_run *r, json_t *c, int snapshot, stage *stages, size_t *n_stages,
                     collect_result *res, ph_error_t *err)
{
    const char *id = json_string_value(json_object_get(c, "Id"));
    const char *service = label_of(c, PH_LABEL_SERVICE);
    const char *mode = label_of(c, PH_LABEL_MODE);
    const char *run = label_of(c, PH_LABEL_RUN);
    char svc_dir[PATH_MAX], tmp[PATH_MAX], src[PATH_MAX], run_name[NAME_MAX], stamp[17], rec[PATH_MAX];
    ph_tar_extract *x = NULL;
    void *args[2];
    double t0;
    ph_engine *e;
    struct stat st;

    if (engine(r, &e, err) < 0)
        return -1;
    if (service == NULL || run == NULL || mode == NULL)
        return ph_fail(err, 0, "container %.12s has no profharness labels", id);
    snprintf(svc_dir, sizeof svc_dir, "%s/%s", r->opts.out_dir, service);
    if (mkdir_p(svc_dir, err) < 0)
        return -1;
    give_to_invoker(r->opts.out_dir);
    give_to_invoker(svc_dir);
    ph_run_utc_stamp(stamp);
    if (snapshot)
        snprintf(run_name, sizeof run_name, "%s-snapshot-%s", run, stamp);
    else
        snprintf(run_name, sizeof run_name, "%s", run);
    snprintf(tmp, sizeof tmp, "%s/.incoming-%s-%d", svc_dir, run_name, (int)getpid());
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
        return ph_fail(err, errno, "mkdir `%s`", tmp);

    t0 = now_s();
    x = ph_tar_extract_new(tmp, 1, err);
    if (x == NULL)
        goto fail;
    args[0] = x;
    args[1] = err;
    snprintf(src, sizeof src, "%s/%s", PH_CONTAINER_OUT, service);
    if (ph_engine_archive_get(e, id, src, extract_cb, args, err) < 0)
        goto fail;
    if (ph_tar_extract_finish(x, &res->stats, err) < 0)
        goto fail;
    ph_tar_extract_free(x);
    x = NULL;
    stages[(*n_stages)++] = (stage){ "stream and extract artifacts", now_s() - t0 };

    t0 = now_s();
    snprintf(rec, sizeof rec, "%s/%s", tmp, PH_RECORD_NAME);
    res->record = json_load_file(rec, 0, NULL);
    snprintf(res->run_dir, sizeof res->run_dir, "%s/%s", svc_dir, run_name);
    for (int k = 2; lstat(res->run_dir, &st) == 0 && k < 1000; k++)
        snprintf(res->run_dir, sizeof res->run_dir, "%s/%s.%d", svc_dir, run_name, k);
    give_tree_to_invoker(tmp);
    if (rename(tmp, res->run_dir) < 0) {
        ph_fail(err, errno, "rename `%s` to `%s`", tmp, res->run_dir);
        goto fail;
    }
    if (!snapshot && update_links(r, svc_dir, strrchr(res->run_dir, '/') + 1, mode, err) < 0)
        return -1; /* the artifacts are in place; only the links failed */
    stages[(*n_stages)++] = (stage){ "rename into place and link", now_s() - t0 };
    return 0;
fail:
    ph_tar_extract_free(x);
    /* Keep nothing half-written: the container still has everything. */
    remove_tree(tmp);
    return ph_error_wrap(err, "collect the artifacts of `%s`", service);
}

static void
print_stages(const char *service, const stage *st, size_t n)
{
    double total = 0;

    for (size_t i = 0; i < n; i++)
        total += st[i].seconds;
    fprintf(stderr, "%s: stage timings\n", service);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "  %9.3f s  %5.1f%%  %s\n", st[i].seconds,
                total > 0 ? 100.0 * st[i].seconds / total : 0.0, st[i].name);
    fprintf(stderr, "  %9.3f s  total\n", total);
}

static void
describe_record(const char *service, json_t *rec)
{
    json_t *esc;
    const char *sig;

    if (rec == NULL) {
        ph_warn("%s: no completion record (%s): the profiled process did not stop through the shim; "
                "output may be incomplete", service, PH_RECORD_NAME);
        return;
    }
    sig = json_string_value(json_object_get(rec, "signal"));
    esc = json_object_get(rec, "escalations");
    if (sig != NULL)
        ph_info("%s: service ended by %s (exit %lld)", service, sig,
                (long long)json_integer_value(json_object_get(rec, "exit_code")));
    else
        ph_info("%s: service exited with status %lld", service,
                (long long)json_integer_value(json_object_get(rec, "exit_code")));
    if (json_array_size(esc) > 0)
        ph_warn("%s: the service did not stop on its stop signal; escalated (%zu step%s, see %s)",
                service, json_array_size(esc), json_array_size(esc) == 1 ? "" : "s", PH_RECORD_NAME);
}

static int
write_run_meta(json_t *c, const collect_result *res, const stage *st, size_t n, ph_error_t *err)
{
    json_t *meta, *stages = json_array();
    char path[PATH_MAX], ended[32];

    utc_iso(ended, sizeof ended);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(stages, json_pack("{s:s, s:f}", "name", st[i].name, "seconds", st[i].seconds));
    meta = json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:s, s:I, s:I, s:I, s:o, s:O?}",
                     "service", label_of(c, PH_LABEL_SERVICE),
                     "mode", label_of(c, PH_LABEL_MODE),
                     "run", label_of(c, PH_LABEL_RUN),
                     "started_at", label_of(c, PH_LABEL_STARTED),
                     "container", json_string_value(json_object_get(c, "Id")),
                     "collected_at", ended,
                     "files", (json_int_t)res->stats.files,
                     "bytes", (json_int_t)res->stats.bytes,
                     "refused_entries", (json_int_t)res->stats.refused,
                     "stages", stages,
                     "completion", res->record);
    if (meta == NULL)
        return ph_fail(err, ENOMEM, "build %s", PH_RUN_META_NAME);
    snprintf(path, sizeof path, "%s/%s", res->run_dir, PH_RUN_META_NAME);
    {
        int rc = write_json_file(path, meta, err);
        json_decref(meta);
        return rc;
    }
}

/* ---- stop ------------------------------------------------------------- */

static long
stop_budget_s(ph_run *r, json_t *c)
{
    ph_profile *p = ph_profiles_find(&r->profiles, label_of(c, PH_LABEL_MODE));
    long long ns;

    if (p == NULL)
        return 600;
    ns = p->stop_grace_ns + (long long)p->escalate.n * p->escalate_grace_ns;
    return (long)(ns / 1000000000LL) + 30;
}

static int
lock_service(ph_run *r, const char *service, int *fd_out, ph_error_t *err)
{
    char dir[PATH_MAX], path[PATH_MAX];
    int fd;

    snprintf(dir, sizeof dir, "%s/%s", r->opts.out_dir, service);
    if (mkdir_p(dir, err) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/.lock", dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return ph_fail(err, errno, "open `%s`", path);
    give_to_invoker(path);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK) {
            close(fd);
            return ph_fail(err, errno, "lock `%s`", path);
        }
        ph_info("%s: another profharness is stopping this service; waiting for it", service);
        if (flock(fd, LOCK_EX) < 0) {
            close(fd);
            return ph_fail(err, errno, "lock `%s`", path);
        }
    }
    *fd_out = fd;
    return 0;
}

/* Gracefully stop one profiled container and collect it.  On any failure
 * the container is kept and the hint says how to recover. */
static int
stop_one(ph_run *r, json_t *listed, ph_error_t *err)
{
    const char *service = label_of(listed, PH_LABEL_SERVICE);
    const char *id = json_string_value(json_object_get(listed, "Id"));
    ph_cleanup_close int lock = -1;
    json_t *fresh = NULL, *c;
    stage stages[8];
    size_t n_stages = 0;
    collect_result res = { 0 };
    ph_engine *e;
    int found = 0, timed_out = 0, rc = -1;
    long code = 0, budget;
    double t0;

    if (engine(r, &e, err) < 0)
        return -1;
    if (lock_service(r, service, &lock, err) < 0)
        return -1;
    /* Whoever held the lock may have collected it already. */
    if (ph_engine_container_inspect(e, id, &fresh, &found, err) < 0)
        return -1;
    if (!found) {
        ph_info("%s: nothing to stop (already collected)", service);
        return 0;
    }
    json_decref(fresh);
    c = listed;

    budget = stop_budget_s(r, c);
    t0 = now_s();
    if (is_running(c)) {
        ph_info("%s: stopping %s profiler (waiting up to %ld s for it to flush)", service,
                label_of(c, PH_LABEL_MODE), budget);
        if (ph_engine_container_kill(e, id, "SIGTERM", err) < 0) {
            /* It may have exited between the listing and now. */
            ph_debug("kill: %s", (*err)->msg);
            ph_error_free(err);
        }
    }
    if (ph_engine_container_wait(e, id, budget, &code, &timed_out, err) < 0)
        goto keep;
    if (timed_out) {
        ph_fail(err, 0, "%s: the profiled container did not exit within %ld s", service, budget);
        goto keep;
    }
    stages[n_stages++] = (stage){ "signal until the profiler exited", now_s() - t0 };

    if (collect_into_run_dir(r, c, 0, stages, &n_stages, &res, err) < 0)
        goto keep;
    describe_record(service, res.record);

    t0 = now_s();
    if (ph_engine_container_remove(e, id, 0, err) < 0) {
        ph_error_wrap(err, "artifacts are safe in %s, but removing container %.12s failed", res.run_dir, id);
        ph_error_hint(err, "remove it by hand: docker rm %.12s", id);
        goto out;
    }
    stages[n_stages++] = (stage){ "remove the container", now_s() - t0 };
    if (write_run_meta(c, &res, stages, n_stages, err) < 0)
        goto out;
    print_stages(service, stages, n_stages);
    printf("%s\t%s\n", service, res.run_dir);
    fflush(stdout);
    rc = 0;
    goto out;
keep:
    ph_error_hint(err, "the container %.12s is kept with its artifacts; retry with `profharness stop %s` "
                  "or `profharness collect %s`", id, service, service);
out:
    json_decref(res.record);
    return rc;
}

static int
stop_services(ph_run *r, svc_list *sl, int quiet_if_none, ph_error_t *err)
{
    int stopped = 0, failed = 0;

    for (size_t i = 0; i < sl->n; i++) {
        json_t *list = NULL, *c;
        size_t k;

        if (list_containers(r, sl->v[i]->name, &list, err) < 0)
            return -1;
        json_array_foreach(list, k, c) {
            if (!is_profiled(c))
                continue;
            if (stop_one(r, c, err) < 0) {
                /* Keep going: one service's fault must not strand the others. */
                if (sl->n > 1) {
                    ph_log(PH_LOG_ERROR, "%s", (*err)->msg);
                    if ((*err)->hint[0])
                        ph_log(PH_LOG_ERROR, "hint: %s", (*err)->hint);
                    if (i + 1 < sl->n)
                        ph_error_free(err);
                }
                failed++;
                continue;
            }
            stopped++;
        }
        json_decref(list);
    }
    if (failed > 0) {
        if (*err == NULL)
            ph_fail(err, 0, "%d service%s could not be stopped cleanly", failed, failed == 1 ? "" : "s");
        return -1;
    }
    if (stopped == 0 && !quiet_if_none)
        ph_info("nothing to stop: no profiled service is running in project `%s`", r->compose->project);
    return 0;
}

int
ph_run_stop(ph_run *r, char **services, int n, ph_error_t *err)
{
    svc_list sl;
    int rc;

    if (select_services(r, services, n, &sl, err) < 0)
        return -1;
    rc = stop_services(r, &sl, 0, err);
    free(sl.v);
    return rc;
}

int
ph_run_collect(ph_run *r, char **services, int n, ph_error_t *err)
{
    svc_list sl;
    int rc = 0, any = 0;

    if (select_services(r, services, n, &sl, err) < 0)
        return -1;
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        json_t *list = NULL, *c;
        size_t k;

        if (list_containers(r, sl.v[i]->name, &list, err) < 0) {
            rc = -1;
            break;
        }
        json_array_foreach(list, k, c) {
            if (!is_profiled(c))
                continue;
            any = 1;
            if (!is_running(c)) {
                /* A stopped profiled container: a stop that failed half way. */
                rc = stop_one(r, c, err);
            } else {
                stage st[4];
                size_t ns = 0;
                collect_result res = { 0 };

                rc = collect_into_run_dir(r, c, 1, st, &ns, &res, err);
                if (rc == 0) {
                    rc = write_run_meta(c, &res, st, ns, err);
                    printf("%s\t%s\n", sl.v[i]->name, res.run_dir);
                }
                json_decref(res.record);
            }
            if (rc < 0)
                break;
        }
        json_decref(list);
    }
    if (rc == 0 && !any)
        ph_info("nothing to collect: no profiled container in project `%s`", r->compose->project);
    free(sl.v);
    return rc;
}

/* ---- start and restore ------------------------------------------------ */

static int
remove_plain(ph_run *r, json_t *c, ph_error_t *err)
{
    ph_engine *e;
    const char *id = json_string_value(json_object_get(c, "Id"));
    long grace = 10;
    ph_service *s = ph_compose_service(r->compose, label_of(c, PH_LABEL_SERVICE));

    if (engine(r, &e, err) < 0)
        return -1;
    if (s != NULL && s->stop_grace_ns >= 0)
        grace = (long)(s->stop_grace_ns / 1000000000LL);
    if (is_running(c) && ph_engine_container_stop(e, id, grace, err) < 0)
        return -1;
    return ph_engine_container_remove(e, id, 1, err);
}

/* Stop whatever runs for SERVICE: a profiled container is stopped and
 * collected (no data is lost by switching modes); a plain one removed. */
static int
clear_service(ph_run *r, const ph_service *s, ph_error_t *err)
{
    json_t *list = NULL, *c;
    size_t k;
    int rc = 0;

    if (list_containers(r, s->name, &list, err) < 0)
        return -1;
    json_array_foreach(list, k, c) {
        if (is_profiled(c))
            rc = stop_one(r, c, err);
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

    if (ensure_service_image(r, s, 0, err) < 0 || ensure_networks(r, s, err) < 0)
        return -1;
    img = service_image(r, s);
    name = container_name(r, s, NULL);
    cfg = img ? base_config(r, s, img, err) : NULL;
    if (cfg != NULL && name != NULL && create_and_start(r, s, name, cfg, &id, err) == 0) {
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
start_deps(ph_run *r, const ph_service *s, svc_list *targets, int depth, ph_error_t *err)
{
    if (depth > 32)
        return ph_bad_input(err, "%s: depends_on of `%s` is circular", r->compose->path, s->name);
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
        if (list_containers(r, d->name, &list, err) < 0)
            return -1;
        json_array_foreach(list, k, c) running |= is_running(c);
        if (!running) {
            json_array_foreach(list, k, c) {
                if (remove_plain(r, c, err) < 0) {
                    json_decref(list);
                    return -1;
                }
            }
            if (start_plain(r, d, err) < 0) {
                json_decref(list);
                return ph_error_wrap(err, "start `%s` (a dependency of `%s`)", d->name, s->name);
            }
        }
        json_decref(list);
    }
    return 0;
}

/* Order TARGETS so dependencies come first (stable otherwise). */
static void
order_by_deps(ph_run *r, svc_list *sl)
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

static char *
fmt_seconds(long long ns)
{
    char *s = NULL;

    asprintf(&s, "%.3f", (double)ns / 1e9);
    return s;
}

/* The argv the profiled container runs: the shim, its stop protocol, the
 * profiler's wrap, then what the service would have run. */
static int
profiled_argv(ph_run *r, const ph_service *s, const ph_profile *p, json_t *image_cfg,
              const char *out, const char *run_id, json_t **argv_out, ph_error_t *err)
{
    json_t *argv = json_array(), *ep, *cmd;
    char *grace = fmt_seconds(p->stop_grace_ns), *egrace = fmt_seconds(p->escalate_grace_ns);
    char esc[512] = "", rec[PATH_MAX];
    size_t i, n0;
    json_t *x;

    for (i = 0; i < p->escalate.n; i++) {
        if (i)
            strncat(esc, ",", sizeof esc - strlen(esc) - 1);
        strncat(esc, p->escalate.v[i], sizeof esc - strlen(esc) - 1);
    }
    snprintf(rec, sizeof rec, "%s/%s", out, PH_RECORD_NAME);
    json_array_append_new(argv, json_string("/opt/profharness/bin/ph-init"));
    json_array_append_new(argv, json_string("--stop-target"));
    json_array_append_new(argv, json_string(p->stop_target));
    json_array_append_new(argv, json_string("--stop-signal"));
    json_array_append_new(argv, json_string(p->stop_signal));
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
    for (i = 0; i < p->wrap.n; i++) {
        char *w = ph_profile_expand(p->wrap.v[i], out, s->name, p->name, run_id);
        if (w == NULL) {
            json_decref(argv);
            return ph_fail(err, ENOMEM, "allocate");
        }
        json_array_append_new(argv, json_string(w));
        free(w);
    }
    n0 = json_array_size(argv);
    /* Docker's rule: an entrypoint given by the service replaces the
     * image's and drops the image's CMD. */
    ep = s->has_entrypoint ? NULL : json_object_get(image_cfg, "Entrypoint");
    cmd = s->has_command ? NULL : (s->has_entrypoint ? NULL : json_object_get(image_cfg, "Cmd"));
    if (s->has_entrypoint)
        for (i = 0; i < s->entrypoint.n; i++)
            json_array_append_new(argv, json_string(s->entrypoint.v[i]));
    json_array_foreach(ep, i, x) json_array_append(argv, x);
    if (s->has_command)
        for (i = 0; i < s->command.n; i++)
            json_array_append_new(argv, json_string(s->command.v[i]));
    json_array_foreach(cmd, i, x) json_array_append(argv, x);
    if (json_array_size(argv) == n0) {
        json_decref(argv);
        return ph_bad_input(err, "%s: service `%s` has no command to profile (none in the compose file or the image)",
                            r->compose->path, s->name);
    }
    *argv_out = argv;
    return 0;
}

static int
start_profiled(ph_run *r, const ph_service *s, const ph_profile *p, ph_error_t *err)
{
    ph_engine *e;
    json_t *cfg = NULL, *img_info = NULL, *argv = NULL, *host, *labels, *env, *caps, *secopt;
    char *img = NULL, *prof_img = NULL, *name = NULL, *id = NULL;
    char run_id[64], stamp[17], started[32], out[PATH_MAX], host_dir[PATH_MAX];
    int found = 0, rc = -1;
    size_t i;

    if (engine(r, &e, err) < 0)
        return -1;
    if (ensure_service_image(r, s, 0, err) < 0)
        return -1;
    if (ensure_profiling_image(r, s, &prof_img, err) < 0)
        return -1;
    if (ensure_networks(r, s, err) < 0)
        goto out;
    img = service_image(r, s);
    if (img == NULL || ph_engine_image_inspect(e, img, &img_info, &found, err) < 0)
        goto out;
    if (!found) {
        ph_fail(err, 0, "image `%s` vanished", img);
        goto out;
    }

    ph_run_utc_stamp(stamp);
    snprintf(run_id, sizeof run_id, "%s-%s", stamp, p->name);
    utc_iso(started, sizeof started);
    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, s->name);
    snprintf(host_dir, sizeof host_dir, "%s/%s/%s", r->opts.out_dir, s->name, run_id);

    if (profiled_argv(r, s, p, json_object_get(img_info, "Config"), out, run_id, &argv, err) < 0)
        goto out;
    cfg = base_config(r, s, prof_img, err);
    if (cfg == NULL)
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
    labels = json_object_get(cfg, "Labels");
    json_object_set_new(labels, PH_LABEL_MODE, json_string(p->name));
    json_object_set_new(labels, PH_LABEL_RUN, json_string(run_id));
    json_object_set_new(labels, PH_LABEL_STARTED, json_string(started));
    json_object_set_new(labels, PH_LABEL_OUTDIR, json_string(host_dir));
    host = json_object_get(cfg, "HostConfig");
    caps = json_object_get(host, "CapAdd");
    secopt = json_object_get(host, "SecurityOpt");
    for (i = 0; i < p->cap_add.n; i++)
        array_add_unique(caps, p->cap_add.v[i]);
    for (i = 0; i < p->security_opt.n; i++)
        array_add_unique(secopt, p->security_opt.v[i]);

    name = container_name(r, s, p->name);
    if (name == NULL || create_and_start(r, s, name, cfg, &id, err) < 0)
        goto out;
    ph_info("%s: profiling under %s (container %s, run %s)", s->name, p->name, name, run_id);
    printf("%s\t%s\t%s\n", s->name, p->name, host_dir);
    fflush(stdout);
    rc = 0;
out:
    json_decref(cfg);
    json_decref(argv);
    json_decref(img_info);
    free(img);
    free(prof_img);
    free(name);
    free(id);
    return rc;
}

int
ph_run_start(ph_run *r, const char *mode, char **services, int n, ph_error_t *err)
{
    ph_profile *p = ph_profiles_find(&r->profiles, mode);
    svc_list sl;
    int rc = 0;

    if (p == NULL) {
        ph_bad_input(err, "no mode `%s` in %s", mode, r->opts.profiles_dir);
        return ph_error_hint(err, "list the modes with `profharness modes`");
    }
    if (select_services(r, services, n, &sl, err) < 0)
        return -1;
    order_by_deps(r, &sl);
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        rc = start_deps(r, sl.v[i], &sl, 0, err);
        if (rc == 0)
            rc = clear_service(r, sl.v[i], err);
        if (rc == 0)
            rc = start_profiled(r, sl.v[i], p, err);
    }
    free(sl.v);
    return rc;
}

int
ph_run_restore(ph_run *r, char **services, int n, ph_error_t *err)
{
    svc_list sl;
    int rc = 0;

    if (select_services(r, services, n, &sl, err) < 0)
        return -1;
    order_by_deps(r, &sl);
    /* Collect every profiled one first: restoring must never lose a run. */
    rc = stop_services(r, &sl, 1, err);
    for (size_t i = 0; rc == 0 && i < sl.n; i++) {
        rc = start_deps(r, sl.v[i], &sl, 0, err);
        if (rc == 0)
            rc = clear_service(r, sl.v[i], err);
        if (rc == 0)
            rc = start_plain(r, sl.v[i], err);
    }
    free(sl.v);
    return rc;
}

/* ---- status and logs -------------------------------------------------- */

int
ph_run_status(ph_run *r, FILE *out, ph_error_t *err)
{
    json_t *list = NULL;

    if (list_containers(r, NULL, &list, err) < 0)
        return -1;
    fprintf(out, "%-16s %-10s %-10s %-21s %s\n", "SERVICE", "MODE", "STATE", "SINCE", "RUN DIR");
    for (size_t i = 0; i < r->compose->n_services; i++) {
        const ph_service *s = &r->compose->services[i];
        json_t *c;
        size_t k;
        int shown = 0;

        json_array_foreach(list, k, c) {
            const char *svc = label_of(c, PH_LABEL_SERVICE);
            const char *since = label_of(c, PH_LABEL_STARTED);
            const char *dir = label_of(c, PH_LABEL_OUTDIR);
            char created[32] = "-";

            if (svc == NULL || strcmp(svc, s->name) != 0)
                continue;
            if (since == NULL) {
                time_t t = (time_t)json_integer_value(json_object_get(c, "Created"));
                struct tm tm;
                gmtime_r(&t, &tm);
                strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
                since = created;
            }
            fprintf(out, "%-16s %-10s %-10s %-21s %s\n", s->name, label_of(c, PH_LABEL_MODE),
                    json_string_value(json_object_get(c, "State")), since, dir ? dir : "-");
            shown = 1;
        }
        if (!shown)
            fprintf(out, "%-16s %-10s %-10s %-21s %s\n", s->name, "-", "absent", "-", "-");
    }
    json_decref(list);
    return 0;
}

int
ph_run_logs(ph_run *r, const char *service, int follow, ph_error_t *err)
{
    json_t *list = NULL, *c;
    size_t k;
    ph_engine *e;
    int rc = 0, any = 0;

    if (ph_compose_service(r->compose, service) == NULL)
        return ph_bad_input(err, "%s: no service `%s`", r->compose->path, service);
    if (engine(r, &e, err) < 0 || list_containers(r, service, &list, err) < 0)
        return -1;
    json_array_foreach(list, k, c) {
        any = 1;
        rc = ph_engine_container_logs(e, json_string_value(json_object_get(c, "Id")), follow, -1, 1, err);
        if (rc < 0)
            break;
    }
    json_decref(list);
    if (!any)
        ph_info("%s: no container", service);
    return rc;
}
