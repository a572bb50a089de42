/* ph_image.c - building and pulling images through the Engine (see ph_image.h). */
#include "ph_image.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_log.h"
#include "ph_paths.h"
#include "ph_backend.h"
#include "ph_engine.h"
#include "ph_tar.h"
#include "ph_util.h"

#define PH_CONTEXT_MAX (1u << 30) /* a build context larger than 1 GiB is a mistake */

uint64_t
ph_image_hash(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* The Engine B's images are built and pulled on (ops.images' Engine), or
 * -1 and an error saying that WHAT needs one: a backend of its own images
 * (the tests' in memory) finds them but makes none. */
static int
builder(ph_backend *b, const char *what, ph_engine **e, ph_error_t *err)
{
    if ((*e = b->ops->engine(b)) != NULL)
        return 0;
    ph_fail(err, 0, "%s: the %s backend (%s) builds and pulls no images", what, b->ops->name, b->ops->describe(b));
    return ph_error_hint(err, "build or pull it where the images are, then retry");
}

/* IMAGE on B (where the images are): *FOUND, and its id into *ID when ID
 * is not NULL (the caller's to free). */
static int
image_there(ph_backend *b, const char *image, int *found, char **id, ph_error_t *err)
{
    ph_image_config cfg = { 0 };

    if (b->ops->image_inspect(b, image, &cfg, found, err) < 0)
        return -1;
    if (id != NULL) {
        *id = cfg.id;
        cfg.id = NULL;
    }
    ph_image_config_clear(&cfg);
    return 0;
}

/* ---- what a build shows -------------------------------------------------- */

#define BUILD_LOG_MAX (64ull << 20) /* of one build's log kept */

/* A build as it goes: its progress on stderr (ph_image_progress.c, a
 * status line on a terminal), its whole log in the user's cache
 * (build-WHO-XXXXXX.log, else in TMPDIR), removed once the build
 * succeeded and named in the error's hint when it failed. */
typedef struct build_view {
    ph_image_progress *p;
    ph_engine_build_watch w;
    FILE *log;
    unsigned long long logged;
    char path[PATH_MAX];
} build_view;

static void
view_out_cb(void *ud, const char *s, size_t n)
{
    (void)ud;
    fwrite(s, 1, n, stderr);
    fflush(stderr);
}

static void
view_log_cb(void *ud, const char *s, size_t n)
{
    static const char rest[] = "... (the log goes on: only its first 64 MiB are kept)\n";
    build_view *v = ud;

    if (v->log == NULL || v->logged > BUILD_LOG_MAX)
        return;
    if (v->logged + n > BUILD_LOG_MAX) {
        s = rest;
        n = sizeof rest - 1;
        v->logged = BUILD_LOG_MAX;
    }
    fwrite(s, 1, n, v->log);
    v->logged += n;
}

static void
view_line_cb(void *ud, const char *line)
{
    ph_image_progress_line(((build_view *)ud)->p, line);
}

static void
view_sent_cb(void *ud, unsigned long long sent, unsigned long long total)
{
    ph_image_progress_sent(((build_view *)ud)->p, sent, total);
}

/* The terminal's columns, 0 when unknown (the progress takes 80). */
static int
view_width(void)
{
    struct winsize ws;
    const char *c = getenv("COLUMNS");
    char *end = NULL;
    long n;

    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    n = c ? strtol(c, &end, 10) : 0;
    return c && end != c && *end == '\0' && n > 0 && n < 10000 ? (int)n : 0;
}

/* The build of WHO's image begins; SAY is the status line's first text. */
static int
view_open(build_view *v, const char *who, const char *say, ph_error_t *err)
{
    ph_image_progress_opts o = { .who = who, .tty = isatty(STDERR_FILENO), .quiet = ph_log_get_level() < PH_LOG_INFO,
                                 .out = view_out_cb, .log = view_log_cb, .log_ud = v };
    char dir[PATH_MAX - 64], name[64];
    const char *tmp = getenv("TMPDIR");
    int fd;

    memset(v, 0, sizeof *v);
    o.width = o.tty ? view_width() : 0;
    if ((v->p = ph_image_progress_new(&o)) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    v->w = (ph_engine_build_watch){ .line_cb = view_line_cb, .sent_cb = view_sent_cb, .ud = v };
    /* No log file is no fault: the tail is still shown. */
    if (ph_paths_cache_dir(dir, sizeof dir, 1) < 0)
        snprintf(dir, sizeof dir, "%s", tmp && tmp[0] == '/' ? tmp : "/tmp");
    ph_paths_safe_name(name, sizeof name, who);
    snprintf(v->path, sizeof v->path, "%s/build-%s-XXXXXX.log", dir, name);
    if ((fd = mkostemps(v->path, 4, O_CLOEXEC)) >= 0 && (v->log = fdopen(fd, "w")) == NULL)
        close(fd);
    if (v->log == NULL) {
        ph_debug("keep no build log in %s: %s", dir, strerror(errno));
        v->path[0] = '\0';
    }
    if (say != NULL)
        ph_image_progress_say(v->p, say);
    return 0;
}

/* The build ended with RC (0: IMAGE made).  A failure's tail is shown and
 * its log kept, ended by the error, the hint naming it after any the
 * error has. */
static int
view_close(build_view *v, int rc, const char *image, ph_error_t *err)
{
    int kept = 0;

    if (v->log != NULL && rc < 0 && v->logged > 0 && err && *err) {
        char esc[2 * sizeof (*err)->msg];
        size_t n = ph_escape_mem(esc, sizeof esc - 1, (*err)->msg, strlen((*err)->msg), 0);

        esc[n++] = '\n';
        view_log_cb(v, esc, n);
    }
    if (v->log != NULL && fclose(v->log) == 0)
        kept = rc < 0 && v->logged > 0;
    v->log = NULL;
    if (rc == 0) {
        ph_image_progress_done(v->p, image);
    } else {
        ph_image_progress_failed(v->p);
        if (kept && err && *err && (*err)->hint[0] != '\0') {
            char was[sizeof (*err)->hint];

            snprintf(was, sizeof was, "%s", (*err)->hint);
            ph_error_hint(err, "%s; the whole build log: %s", was, v->path);
        } else if (kept) {
            ph_error_hint(err, "the whole build log: %s", v->path);
        }
    }
    if (!kept && v->path[0] != '\0')
        unlink(v->path);
    ph_image_progress_free(v->p);
    v->p = NULL;
    return rc;
}

static int
pull_cb(void *ud, const char *data, size_t len)
{
    char **last_error = ud;
    const char *p = memmem(data, len, "\"error\"", 7);

    if (p != NULL && *last_error == NULL)
        *last_error = strndup(data, len);
    return 0;
}

static int
pull(ph_engine *e, const char *image, ph_error_t *err)
{
    char path[1024], *img = NULL, *tag, *esc_err = NULL;
    long st = 0;
    int rc;

    img = strdup(image);
    if (img == NULL)
        return ph_fail(err, errno, "allocate");
    tag = strrchr(img, ':');
    if (tag != NULL && strchr(tag, '/') == NULL)
        *tag++ = '\0';
    else
        tag = "latest";
    snprintf(path, sizeof path, "/images/create?fromImage=%s&tag=%s", img, tag);
    ph_info("pulling %s", image);
    rc = ph_engine_stream(e, "POST", path, NULL, NULL, NULL, -1, pull_cb, &esc_err, 600, &st, err);
    free(img);
    if (rc == 0 && esc_err != NULL) {
        json_t *j = json_loads(esc_err, 0, NULL);
        ph_fail(err, 0, "pull `%s`: %s", image,
                j ? json_string_value(json_object_get(j, "error")) : esc_err);
        json_decref(j);
        rc = -1;
    }
    free(esc_err);
    if (rc < 0)
        ph_error_hint(err, "no registry answers? build or load `%s` locally (scripts/base-image.sh does "
                      "this for debian:bookworm-slim)", image);
    return rc;
}

/* ---- building a service's image ---------------------------------------- */

/* Percent-encode S for a query string (unreserved characters kept). */
static int
q_add(char **q, size_t *len, size_t *cap, const char *key, const char *s)
{
    size_t need = strlen(key) + 3 * strlen(s) + 3;

    if (*len + need + 1 > *cap) {
        size_t nc = (*cap + need + 1) * 2;
        char *nq = realloc(*q, nc);

        if (nq == NULL)
            return -1;
        *q = nq;
        *cap = nc;
    }
    *len += (size_t)sprintf(*q + *len, "%s%s=", *len ? "&" : "", key);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-_.~", *p))
            (*q)[(*len)++] = (char)*p;
        else
            *len += (size_t)sprintf(*q + *len, "%%%02X", *p);
    }
    (*q)[*len] = '\0';
    return 0;
}

#define INLINE_DOCKERFILE ".profharness-dockerfile-inline"

/* POST /build with every option of the service's `build:` the Engine's
 * builder takes (target, network, extra_hosts, shm_size, platform, labels,
 * cache_from, no_cache, pull, isolation), `dockerfile_inline` sent in the
 * context under a name of its own, `tags` added after. */
static int
build_service(ph_engine *e, const ph_service *s, const char *image, const ph_kvv *env, ph_error_t *err)
{
    ph_tar_extra inl = { .name = INLINE_DOCKERFILE, .data = s->build_dockerfile_inline,
                         .len = s->build_dockerfile_inline ? strlen(s->build_dockerfile_inline) : 0, .mode = 0644 };
    json_t *args = json_object(), *labels = json_object(), *cache = json_array();
    char *q = NULL, *sa = NULL, *sl = NULL, *sc = NULL, hosts[4096] = "", num[32], say[PATH_MAX + 600];
    size_t qlen = 0, qcap = 0, tar_len = 0;
    void *tar = NULL;
    build_view view = { 0 };
    long st = 0;
    int rc = -1, built;

    if (args == NULL || labels == NULL || cache == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    snprintf(say, sizeof say, "building %s from %s%s%s", image, s->build_context, s->build_target ? ", target " : "",
             s->build_target ? s->build_target : "");
    if (view_open(&view, s->name, say, err) < 0)
        goto out;
    if (!s->build_remote && ph_tar_context_build(s->build_context, &inl, s->build_dockerfile_inline ? 1 : 0,
                                                 PH_CONTEXT_MAX, &tar, &tar_len, err) < 0) {
        ph_error_wrap(err, "%s: build context", s->name);
        view_close(&view, -1, image, err);
        goto out;
    }
    /* A build arg with no value comes from the project's environment. */
    for (size_t i = 0; i < s->build_args.n; i++) {
        const char *v = s->build_args.v[i].value ? s->build_args.v[i].value : ph_kvv_get(env, s->build_args.v[i].key);

        if (v != NULL)
            json_object_set_new(args, s->build_args.v[i].key, json_string(v));
    }
    for (size_t i = 0; i < s->build_labels.n; i++)
        json_object_set_new(labels, s->build_labels.v[i].key,
                            json_string(s->build_labels.v[i].value ? s->build_labels.v[i].value : ""));
    for (size_t i = 0; i < s->build_cache_from.n; i++)
        json_array_append_new(cache, json_string(s->build_cache_from.v[i]));
    for (size_t i = 0; i < s->build_extra_hosts.n; i++)
        snprintf(hosts + strlen(hosts), sizeof hosts - strlen(hosts), "%s%s", i ? "," : "", s->build_extra_hosts.v[i]);
    sa = json_dumps(args, JSON_COMPACT);
    sl = json_dumps(labels, JSON_COMPACT);
    sc = json_dumps(cache, JSON_COMPACT);
    if (sa == NULL || sl == NULL || sc == NULL || q_add(&q, &qlen, &qcap, "t", image) < 0 ||
        q_add(&q, &qlen, &qcap, "dockerfile", s->build_dockerfile_inline ? INLINE_DOCKERFILE : s->build_dockerfile) < 0 ||
        q_add(&q, &qlen, &qcap, "buildargs", sa) < 0 || q_add(&q, &qlen, &qcap, "labels", sl) < 0 ||
        q_add(&q, &qlen, &qcap, "rm", "1") < 0 || q_add(&q, &qlen, &qcap, "forcerm", "1") < 0 ||
        (s->build_remote && q_add(&q, &qlen, &qcap, "remote", s->build_context) < 0) ||
        (s->build_target && q_add(&q, &qlen, &qcap, "target", s->build_target) < 0) ||
        (s->build_network && q_add(&q, &qlen, &qcap, "networkmode", s->build_network) < 0) ||
        (hosts[0] && q_add(&q, &qlen, &qcap, "extrahosts", hosts) < 0) ||
        (s->build_platform && q_add(&q, &qlen, &qcap, "platform", s->build_platform) < 0) ||
        (s->build_isolation && q_add(&q, &qlen, &qcap, "isolation", s->build_isolation) < 0) ||
        (s->build_cache_from.n && q_add(&q, &qlen, &qcap, "cachefrom", sc) < 0) ||
        (s->build_no_cache && q_add(&q, &qlen, &qcap, "nocache", "1") < 0) ||
        (s->build_pull && q_add(&q, &qlen, &qcap, "pull", "1") < 0) ||
        (s->build_shm_size >= 0 && (snprintf(num, sizeof num, "%lld", s->build_shm_size),
                                    q_add(&q, &qlen, &qcap, "shmsize", num) < 0))) {
        ph_fail(err, ENOMEM, "allocate");
        view_close(&view, -1, image, err);
        goto out;
    }
    built = ph_engine_build_query(e, q, image, tar, tar_len, &view.w, NULL, err);
    if (view_close(&view, built, image, err) < 0)
        goto out;
    for (size_t i = 0; i < s->build_tags.n; i++) {
        char tpath[1200], *repo = strdup(s->build_tags.v[i]), *colon;

        if (repo == NULL)
            break;
        colon = strrchr(repo, ':');
        if (colon && strchr(colon, '/') == NULL)
            *colon++ = '\0';
        snprintf(tpath, sizeof tpath, "/images/%s/tag?repo=%s&tag=%s", image, repo, colon ? colon : "latest");
        if (ph_engine_request(e, "POST", tpath, NULL, NULL, &st, err) < 0) {
            free(repo);
            goto out;
        }
        free(repo);
    }
    rc = 0;
out:
    if (rc < 0)
        ph_error_wrap(err, "build the image of service `%s`", s->name);
    json_decref(args);
    json_decref(labels);
    json_decref(cache);
    free(sa);
    free(sl);
    free(sc);
    free(q);
    free(tar);
    return rc;
}

int
ph_image_ensure_service(ph_backend *b, const ph_service *s, const char *image, int force_build, const ph_kvv *env,
                        ph_error_t *err)
{
    const char *policy = s->pull_policy ? s->pull_policy : "missing";
    ph_engine *e;
    int found = 0;

    if ((b = b->ops->images(b, err)) == NULL || image_there(b, image, &found, NULL, err) < 0)
        return -1;
    /* pull_policy: `build` builds every time, `always` pulls every time,
     * `never` uses what is there; the rest act as `missing`. */
    if (s->has_build && (strcmp(policy, "build") == 0 || force_build || !found))
        return builder(b, image, &e, err) < 0 ? -1 : build_service(e, s, image, env, err);
    if (strcmp(policy, "always") == 0 && !s->has_build)
        return builder(b, image, &e, err) < 0 ? -1 : pull(e, image, err);
    if (found)
        return 0;
    if (strcmp(policy, "never") == 0) {
        ph_bad_input(err, "service `%s`: image `%s` is not here and `pull_policy: never` forbids pulling it", s->name,
                     image);
        return ph_error_hint(err, "load or build it first");
    }
    return builder(b, image, &e, err) < 0 ? -1 : pull(e, image, err);
}

/* Fold PATH's content into *H.  -1 when it cannot be read. */
static int
hash_file(const char *path, uint64_t *h)
{
    char buf[65536];
    size_t n;
    FILE *f = fopen(path, "re");

    if (f == NULL)
        return -1;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        *h = ph_image_hash(*h, buf, n);
    fclose(f);
    *h = ph_image_hash(*h, path, strlen(path)); /* which input it was */
    return 0;
}

/* "registry:5000/team/app:1.2" -> "app" */
void
ph_image_short_name(const char *image, char *out, size_t len)
{
    const char *slash = strrchr(image, '/'), *base = slash ? slash + 1 : image;
    size_t n = strcspn(base, ":@");
    size_t j = 0;

    for (size_t i = 0; i < n && j + 1 < len; i++) {
        char c = base[i];
        out[j++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ? c : '-';
    }
    out[j] = '\0';
}

/* The union of what PROFILES list for package manager PM (NULL: the
 * programs of their `tools`), in order, each once. */
static int
union_of(const ph_profile_set *profiles, const char *pm, ph_strv *out)
{
    for (size_t i = 0; i < profiles->n; i++) {
        const ph_strv *l = pm ? ph_profile_packages(&profiles->v[i], pm) : &profiles->v[i].tools;

        for (size_t j = 0; l && j < l->n; j++) {
            int seen = 0;

            for (size_t k = 0; k < out->n; k++)
                seen |= strcmp(out->v[k], l->v[j]) == 0;
            if (!seen && ph_strv_push(out, l->v[j]) < 0)
                return -1;
        }
    }
    return 0;
}

static void
join(const ph_strv *v, char *out, size_t len)
{
    out[0] = '\0';
    for (size_t i = 0; i < v->n; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? " " : "", v->v[i]);
}

/* ---- the tools image ----------------------------------------------------- */

#define TOOLS_BASE "debian:bookworm-slim"

#define TOOLS_FILES 11

typedef struct tools_inputs {
    char files[TOOLS_FILES][4096]; /* Dockerfile, assemble.sh, ph-attach, node's preload, the shim, ph-jattach,
                                    * the sampler's attach script, ph-pyattach, ph-nodeinsp, the samplers */
    size_t n_files;                /* the samplers (glibc's, musl's) only when they are built */
    char packages[2048];           /* Debian's names of what the tools need */
    char tools[1024];              /* the programs of the tree */
    char tag[128];
} tools_inputs;

static const char *const tools_names[TOOLS_FILES] = { "Dockerfile",           "assemble.sh",
                                                      "ph-attach",            "opt/lib/ph-heapprof.js",
                                                      "opt/bin/ph-init",      "opt/bin/ph-jattach",
                                                      "opt/bin/ph-attach-sampler", "opt/bin/ph-pyattach",
                                                      "opt/bin/ph-nodeinsp",
                                                      "opt/lib/libphsampler.so", "opt/lib/" PH_SAMPLER_MUSL };

/* What the tools image is made of, and the tag that names it. */
static int
tools_inputs_get(const char *data_dir, const ph_profile_set *profiles, tools_inputs *ti, ph_error_t *err)
{
    ph_strv pkgs = { 0 }, tools = { 0 };
    uint64_t h = PH_IMAGE_HASH_INIT;
    int rc = 0;

    for (int i = 0; i < 3; i++)
        snprintf(ti->files[i], sizeof ti->files[i], "%s/images/tools/%s", data_dir, tools_names[i]);
    snprintf(ti->files[3], sizeof ti->files[3], "%s/images/tools/ph-heapprof.js", data_dir);
    ph_paths_lib_file(data_dir, "ph-init", ti->files[4], sizeof ti->files[4]);
    ph_paths_lib_file(data_dir, "ph-jattach", ti->files[5], sizeof ti->files[5]);
    snprintf(ti->files[6], sizeof ti->files[6], "%s/images/tools/ph-attach-sampler", data_dir);
    ph_paths_lib_file(data_dir, "ph-pyattach", ti->files[7], sizeof ti->files[7]);
    ph_paths_lib_file(data_dir, "ph-nodeinsp", ti->files[8], sizeof ti->files[8]);
    ph_paths_lib_file(data_dir, "libphsampler.so", ti->files[9], sizeof ti->files[9]);
    ph_paths_lib_file(data_dir, PH_SAMPLER_MUSL, ti->files[10], sizeof ti->files[10]);
    ti->n_files = access(ti->files[9], R_OK) != 0 ? 9 : access(ti->files[10], R_OK) != 0 ? 10 : 11;
    /* Debian's packages of the modes that can run from the tree. */
    for (size_t i = 0; rc == 0 && i < profiles->n; i++) {
        const ph_profile *p = &profiles->v[i];

        for (size_t j = 0; p->tools.n > 0 && j < p->packages.n; j++) {
            int seen = 0;

            for (size_t k = 0; k < pkgs.n; k++)
                seen |= strcmp(pkgs.v[k], p->packages.v[j]) == 0;
            if (!seen && ph_strv_push(&pkgs, p->packages.v[j]) < 0)
                rc = -1;
        }
    }
    if (rc < 0 || union_of(profiles, NULL, &tools) < 0) {
        ph_strv_free(&pkgs);
        ph_strv_free(&tools);
        return ph_fail(err, ENOMEM, "allocate");
    }
    join(&pkgs, ti->packages, sizeof ti->packages);
    join(&tools, ti->tools, sizeof ti->tools);
    ph_strv_free(&pkgs);
    ph_strv_free(&tools);
    for (size_t i = 0; i < ti->n_files; i++)
        if (hash_file(ti->files[i], &h) < 0)
            return ph_fail(err, errno, "read `%s` (is the harness built? run `make`)", ti->files[i]);
    h = ph_image_hash(h, ti->packages, strlen(ti->packages) + 1);
    h = ph_image_hash(h, ti->tools, strlen(ti->tools) + 1);
    snprintf(ti->tag, sizeof ti->tag, "profharness-tools:%016llx", (unsigned long long)h);
    return 0;
}

int
ph_image_tools_hash(const char *data_dir, const ph_profile_set *profiles, char *hash, size_t len, ph_error_t *err)
{
    tools_inputs *ti = calloc(1, sizeof *ti);
    int rc;

    if (ti == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    rc = tools_inputs_get(data_dir, profiles, ti, err);
    if (rc == 0)
        snprintf(hash, len, "%s", ti->tag + strlen("profharness-tools:"));
    free(ti);
    return rc;
}

int
ph_image_ensure_tools(ph_backend *b, const char *data_dir, const ph_profile_set *profiles, char **tag_out,
                      ph_error_t *err)
{
    tools_inputs *ti = calloc(1, sizeof *ti);
    json_t *args = NULL, *labels = NULL;
    void *tar = NULL;
    size_t tar_len = 0;
    char *id = NULL;
    build_view v;
    ph_engine *e;
    int found = 0, rc = -1;

    if (ti == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    if ((b = b->ops->images(b, err)) == NULL || tools_inputs_get(data_dir, profiles, ti, err) < 0 ||
        image_there(b, ti->tag, &found, NULL, err) < 0)
        goto out;
    if (!found) {
        ph_tar_extra extra[TOOLS_FILES];

        if (builder(b, ti->tag, &e, err) < 0)
            goto out;

        for (size_t i = 0; i < ti->n_files; i++)
            extra[i] = (ph_tar_extra){ .name = tools_names[i], .path = ti->files[i], .mode = i ? 0755 : 0644 };
        if (ph_tar_context_build(NULL, extra, ti->n_files, PH_CONTEXT_MAX, &tar, &tar_len, err) < 0)
            goto out;
        ph_info("building the tools image %s (from %s; tools: %s)", ti->tag, TOOLS_BASE, ti->tools);
        args = json_pack("{s:s, s:s, s:s}", "BASE_IMAGE", TOOLS_BASE, "PACKAGES", ti->packages, "TOOLS", ti->tools);
        labels = json_pack("{s:s}", PH_LABEL_INPUTS, ti->tag + strlen("profharness-tools:"));
        if (view_open(&v, "tools image", NULL, err) < 0)
            goto out;
        if (ph_engine_build(e, tar, tar_len, "Dockerfile", ti->tag, args, labels, &v.w, &id, err) < 0) {
            ph_error_wrap(err, "build the tools image");
            ph_error_hint(err, "it is built from %s, which must be on the Engine (scripts/base-image.sh makes it), "
                          "and installs Debian packages (%s)", TOOLS_BASE, ti->packages);
            view_close(&v, -1, ti->tag, err);
            goto out;
        }
        view_close(&v, 0, ti->tag, err);
    }
    *tag_out = strdup(ti->tag);
    rc = *tag_out ? 0 : ph_fail(err, ENOMEM, "allocate");
out:
    json_decref(args);
    json_decref(labels);
    free(tar);
    free(id);
    free(ti);
    return rc;
}

/* ---- the tools volume ---------------------------------------------------- */

/* The tools volume is filled by creating its keeper: a container of the
 * tools image, never started, that mounts the new, empty volume at
 * /opt/profharness, which the Engine fills from the image at create
 * (copy-up) before create returns, and registers the container only
 * then.  Once it is there the volume is complete: a second, empty volume
 * named PH_TOOLS_FILLED_SUFFIX after it says so, and the keeper is
 * removed (a Created container of ours left after `down` was all a user
 * saw of it).  A volume without its mark may be partial (the Engine died
 * while it copied): made again, unless something uses it.  Two harnesses
 * making it at once: the keeper's name is the lock; the second's create
 * is refused while the first's runs, and it tries again until the
 * volume is marked or the keeper is there (a harness killed after the
 * create, or a keeper of an older profharness: it marks it itself). */
static int
tools_keeper(ph_backend *b, const char *name, int *found, ph_error_t *err)
{
    ph_workload w;
    int rc = b->ops->inspect(b, name, &w, found, err);

    ph_workload_clear(&w);
    return rc;
}

/* Whether the volume NAME exists into *FOUND. */
static int
volume_found(ph_engine *e, const char *name, int *found, ph_error_t *err)
{
    char path[256];
    json_t *resp = NULL;
    ph_error_t sub = NULL;
    long st = 0;

    snprintf(path, sizeof path, "/volumes/%s", name);
    *found = ph_engine_request(e, "GET", path, NULL, &resp, &st, &sub) == 0;
    json_decref(resp);
    if (*found || st == 404) {
        ph_error_free(&sub);
        return 0;
    }
    *err = sub;
    return -1;
}

/* Whether the volume NAME is there and marked complete. */
static int
tools_volume_filled(ph_engine *e, const char *name, int *filled, ph_error_t *err)
{
    char mark[200];
    int found = 0;

    *filled = 0;
    snprintf(mark, sizeof mark, "%s" PH_TOOLS_FILLED_SUFFIX, name);
    if (volume_found(e, mark, &found, err) < 0 || (found && volume_found(e, name, &found, err) < 0))
        return -1;
    *filled = found;
    return 0;
}

/* The keeper NAME exists: its volume is complete.  Marked, the keeper
 * removed (another harness marking it at once may be removing it: its
 * "removal already in progress" is no fault). */
static int
tools_volume_mark(ph_engine *e, const char *name, json_t *labels, ph_error_t *err)
{
    char mark[200];
    ph_error_t sub = NULL;

    snprintf(mark, sizeof mark, "%s" PH_TOOLS_FILLED_SUFFIX, name);
    if (ph_engine_volume_ensure(e, mark, labels, err) < 0)
        return ph_error_wrap(err, "mark the tools volume `%s` complete", name);
    if (ph_engine_container_remove(e, name, 1, &sub) < 0) {
        ph_debug("%s", sub->msg);
        ph_error_free(&sub);
    }
    return 0;
}

/* The keeper NAME of the tools of HASH is there: its volume marked. */
static int
tools_keeper_marked(ph_engine *e, const char *name, const char *hash, ph_error_t *err)
{
    json_t *labels = json_pack("{s:s}", PH_LABEL_TOOLS, hash);
    int rc;

    if (labels == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    rc = tools_volume_mark(e, name, labels, err);
    json_decref(labels);
    return rc;
}

static int
tools_volume_make(ph_backend *b, const char *tools_tag, const char *name, const char *hash, ph_error_t *err)
{
    ph_engine *e = b->ops->engine(b);
    json_t *labels = json_pack("{s:s}", PH_LABEL_TOOLS, hash), *cfg = NULL, *resp = NULL;
    char path[256], *id = NULL;
    ph_error_t sub = NULL;
    long st = 0;
    int found = 0, rc = -1;

    if (labels == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    /* A volume left unmarked may be partial: made again, unless in use
     * (by a keeper left there too: the loop below marks it). */
    snprintf(path, sizeof path, "/volumes/%s", name);
    if (ph_engine_request(e, "DELETE", path, NULL, &resp, &st, &sub) < 0)
        ph_error_free(&sub);
    json_decref(resp);
    if (ph_engine_volume_ensure(e, name, labels, err) < 0)
        goto out;
    /* the mount labels the volume too, should it be made there */
    cfg = json_pack("{s:s, s:[s,s], s:O, s:b, s:{s:[{s:s, s:s, s:s, s:{s:O}}]}}", "Image", tools_tag, "Entrypoint",
                    PH_TOOLS_MOUNT "/tools/bin/busybox", "true", "Labels", labels, "NetworkDisabled", 1,
                    "HostConfig", "Mounts", "Type", "volume", "Source", name, "Target", PH_TOOLS_MOUNT,
                    "VolumeOptions", "Labels", labels);
    if (cfg == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    ph_info("filling the tools volume %s from %s (once per Engine and tools)", name, tools_tag);
    /* The name taken: someone else's keeper, being made (tried again
     * until it is done) or left there (its create ended: complete). */
    for (int i = 0; i < 600; i++) {
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        int filled = 0;

        if (ph_engine_container_create(e, name, cfg, &id, &sub) == 0) {
            rc = tools_volume_mark(e, name, labels, err);
            goto out;
        }
        if (tools_keeper(b, name, &found, NULL) == 0 && found) {
            ph_error_free(&sub);
            rc = tools_volume_mark(e, name, labels, err);
            goto out;
        }
        if (tools_volume_filled(e, name, &filled, NULL) == 0 && filled) {
            ph_error_free(&sub);
            rc = 0;
            goto out;
        }
        if (i + 1 < 600)
            ph_error_free(&sub);
        nanosleep(&ts, NULL);
    }
    *err = sub;
    ph_error_wrap(err, "fill the tools volume `%s`", name);
out:
    json_decref(labels);
    json_decref(cfg);
    free(id);
    return rc;
}

int
ph_image_ensure_tools_volume(ph_backend *b, const char *data_dir, const ph_profile_set *profiles, char **volume_out,
                             ph_error_t *err)
{
    char *tag = NULL, name[160];
    const char *hash;
    ph_engine *e;
    int found = 0, rc = -1;

    if ((b = b->ops->images(b, err)) == NULL || ph_image_ensure_tools(b, data_dir, profiles, &tag, err) < 0)
        return -1;
    hash = strchr(tag, ':') + 1;
    snprintf(name, sizeof name, "%s%s", PH_TOOLS_VOLUME_PREFIX, hash);
    /* A keeper there (an older profharness's): its volume is complete,
     * marked where images are made; otherwise the mark says. */
    if (tools_keeper(b, name, &found, err) < 0)
        goto out;
    if (found) {
        if ((e = b->ops->engine(b)) != NULL && tools_keeper_marked(e, name, hash, err) < 0)
            goto out;
    } else if (builder(b, name, &e, err) < 0 || tools_volume_filled(e, name, &found, err) < 0 ||
               (!found && tools_volume_make(b, tag, name, hash, err) < 0))
        goto out;
    *volume_out = strdup(name);
    rc = *volume_out ? 0 : ph_fail(err, ENOMEM, "allocate");
out:
    free(tag);
    return rc;
}

/* ---- the profiling image ------------------------------------------------- */

/* Every package manager the generator writes for, and none (""). */
static const char *const pms[] = { "apt", "apk", "dnf", "microdnf", "yum", "" };

/* Fold into *H every Dockerfile the generator would write for PROFILES
 * (placeholders for the images): a change to the generator, or to any
 * profile's packages, names a new profiling image. */
static int
hash_generated(const ph_profile_set *profiles, uint64_t *h, ph_error_t *err)
{
    for (size_t i = 0; i < PH_ARRAY_LEN(pms); i++) {
        ph_image_facts f = { .shell = pms[i][0] != '\0' };
        ph_strv pkgs = { 0 };
        char *text = NULL;
        int rc;

        snprintf(f.pm, sizeof f.pm, "%s", pms[i]);
        if (pms[i][0] && union_of(profiles, pms[i], &pkgs) < 0) {
            ph_strv_free(&pkgs);
            return ph_fail(err, ENOMEM, "allocate");
        }
        rc = ph_image_dockerfile(&f, "BASE", "TOOLS", &pkgs, &text, err);
        ph_strv_free(&pkgs);
        if (rc < 0)
            return -1;
        *h = ph_image_hash(*h, text, strlen(text) + 1);
        free(text);
    }
    return 0;
}

static int
check_mode(const ph_profile *mode, const ph_image_facts *f, const char *service_image, ph_error_t *err)
{
    char why[1024];

    if (mode == NULL || ph_image_unfit(mode, f, why, sizeof why) == NULL)
        return 0;
    ph_bad_input(err, "image `%s` (package manager: %s, C library: %s): %s", service_image, ph_image_facts_pm(f),
                 ph_image_facts_libc(f), why);
    return ph_error_hint(err, "`profharness modes` says which modes run in which images");
}

/* The profiling image of SERVICE_IMAGE (its id BASE_ID), which offers
 * F: built when its inputs changed. */
static int
profiling_image(ph_backend *b, const char *service_image, const char *base_id, const char *data_dir,
                const ph_profile_set *profiles, const ph_image_facts *facts, char **tag_out, ph_error_t *err)
{
    ph_engine *e;
    build_view v;
    char shim[4096], sampler[4096], sampler_musl[4096], name[128], tag[256];
    json_t *labels = NULL;
    char *dockerfile = NULL, *tools = NULL, *id = NULL;
    tools_inputs *ti = calloc(1, sizeof *ti);
    ph_strv pkgs = { 0 };
    void *tar = NULL;
    size_t tar_len = 0;
    uint64_t h = PH_IMAGE_HASH_INIT;
    int found = 0, rc = -1;

    if (ti == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    ph_paths_lib_file(data_dir, "ph-init", shim, sizeof shim);
    ph_paths_lib_file(data_dir, "libphsampler.so", sampler, sizeof sampler);
    /* The tag hashes what goes in, not the tar's bytes: relinking the shim
     * changes its mtime but not its content, and must not cost a rebuild. */
    if (hash_file(shim, &h) < 0) {
        ph_fail(err, errno, "read `%s` (is the harness built? run `make`)", shim);
        goto out;
    }
    hash_file(sampler, &h); /* optional: the sampler only when it is built */
    ph_paths_lib_file(data_dir, PH_SAMPLER_MUSL, sampler_musl, sizeof sampler_musl);
    hash_file(sampler_musl, &h);
    h = ph_image_hash(h, base_id, strlen(base_id) + 1);
    if (hash_generated(profiles, &h, err) < 0 || tools_inputs_get(data_dir, profiles, ti, err) < 0)
        goto out;
    h = ph_image_hash(h, ti->tag, strlen(ti->tag) + 1);
    ph_image_short_name(service_image, name, sizeof name);
    snprintf(tag, sizeof tag, "%s-profiling:%016llx", name, (unsigned long long)h);
    if (image_there(b, tag, &found, NULL, err) < 0)
        goto out;
    if (found) {
        ph_debug("profiling image %s is current (package manager %s)", tag, ph_image_facts_pm(facts));
    } else {
        if (builder(b, tag, &e, err) < 0)
            goto out;
        if (facts->pm[0] == '\0' && ph_image_ensure_tools(b, data_dir, profiles, &tools, err) < 0)
            goto out;
        if (facts->pm[0] != '\0' && union_of(profiles, facts->pm, &pkgs) < 0) {
            ph_fail(err, ENOMEM, "allocate");
            goto out;
        }
        if (ph_image_dockerfile(facts, base_id, tools, &pkgs, &dockerfile, err) < 0)
            goto out;
        {
            /* opt/ lands in /opt/profharness, as in the tools volume (ph-jattach
             * hashed with the tools' inputs); the sampler only when it is built. */
            const ph_tar_extra extra[] = {
                { .name = "Dockerfile", .data = dockerfile, .len = strlen(dockerfile), .mode = 0644 },
                { .name = "opt/bin/ph-init", .path = shim, .mode = 0755 },
                { .name = tools_names[5], .path = ti->files[5], .mode = 0755 },
                { .name = tools_names[3], .path = ti->files[3], .mode = 0644 },
                { .name = "opt/lib/libphsampler.so", .path = sampler, .mode = 0755 },
                { .name = tools_names[10], .path = sampler_musl, .mode = 0755 },
            };
            size_t n_extra = access(sampler, R_OK) != 0 ? 4 : access(sampler_musl, R_OK) != 0 ? 5 : 6;

            if (ph_tar_context_build(NULL, extra, n_extra, PH_CONTEXT_MAX, &tar, &tar_len, err) < 0) {
                ph_error_wrap(err, "profiling image context (is the harness built? run `make`)");
                goto out;
            }
        }
        if (facts->pm[0] != '\0') {
            char list[2048];

            join(&pkgs, list, sizeof list);
            ph_info("building profiling image %s (base %s; %s packages: %s)", tag, service_image, facts->pm, list);
        } else {
            ph_info("building profiling image %s (base %s, which has no package manager: the tools tree of %s)", tag,
                    service_image, tools);
        }
        labels = json_pack("{s:s, s:s, s:s}", PH_LABEL_INPUTS, tag + strlen(name) + strlen("-profiling:"),
                           PH_LABEL_PM, ph_image_facts_pm(facts), PH_LABEL_LIBC, ph_image_facts_libc(facts));
        if (view_open(&v, "profiling image", NULL, err) < 0)
            goto out;
        if (view_close(&v, ph_engine_build(e, tar, tar_len, "Dockerfile", tag, NULL, labels, &v.w, &id, err), tag,
                       err) < 0) {
            ph_error_wrap(err, "build profiling image for `%s`", service_image);
            goto out;
        }
    }
    *tag_out = strdup(tag);
    rc = *tag_out ? 0 : ph_fail(err, errno, "allocate");
out:
    json_decref(labels);
    ph_strv_free(&pkgs);
    free(dockerfile);
    free(tools);
    free(tar);
    free(id);
    free(ti);
    return rc;
}

static int
ensure_profiling(ph_backend *b, const char *service_image, const char *data_dir, const ph_profile_set *profiles,
                 const ph_profile *mode, int force_image, char **tag_out, char **volume_out, ph_image_facts *facts,
                 ph_error_t *err)
{
    char *base_id = NULL;
    int found = 0, need_image = 0, rc = -1;

    memset(facts, 0, sizeof *facts);
    *tag_out = *volume_out = NULL;
    if ((b = b->ops->images(b, err)) == NULL || image_there(b, service_image, &found, &base_id, err) < 0)
        return -1;
    if (!found || base_id == NULL || base_id[0] == '\0') {
        ph_fail(err, 0, "image `%s` %s (run `profharness setup`)", service_image, found ? "has no id" : "not found");
        goto out;
    }
    if (ph_image_probe(b, base_id, facts, err) < 0 || check_mode(mode, facts, service_image, err) < 0)
        goto out;
    /* The modes the tree serves need only the tools volume; a profiling
     * image is built for the others (setup: for any of them that fits). */
    if (force_image) {
        need_image = 1;
    } else if (mode != NULL) {
        need_image = !ph_image_tree_serves(mode, facts);
    } else {
        char why[1024];

        for (size_t i = 0; i < profiles->n; i++)
            need_image |= !ph_image_tree_serves(&profiles->v[i], facts) &&
                          ph_image_unfit(&profiles->v[i], facts, why, sizeof why) == NULL;
    }
    if (!force_image && (mode == NULL || !need_image) && ph_image_ensure_tools_volume(b, data_dir, profiles, volume_out, err) < 0)
        goto out;
    if (need_image && profiling_image(b, service_image, base_id, data_dir, profiles, facts, tag_out, err) < 0)
        goto out;
    rc = 0;
out:
    if (rc < 0) {
        free(*tag_out);
        free(*volume_out);
        *tag_out = *volume_out = NULL;
    }
    free(base_id);
    return rc;
}

int
ph_image_ensure_profiling(ph_backend *b, const char *service_image, const char *data_dir,
                          const ph_profile_set *profiles, const ph_profile *mode, char **tag_out, char **volume_out,
                          ph_image_facts *facts, ph_error_t *err)
{
    return ensure_profiling(b, service_image, data_dir, profiles, mode, 0, tag_out, volume_out, facts, err);
}

int
ph_image_ensure_profiling_image(ph_backend *b, const char *service_image, const char *data_dir,
                                const ph_profile_set *profiles, const ph_profile *mode, char **tag_out,
                                ph_image_facts *facts, ph_error_t *err)
{
    char *volume = NULL;
    int rc = ensure_profiling(b, service_image, data_dir, profiles, mode, 1, tag_out, &volume, facts, err);

    free(volume);
    return rc;
}
