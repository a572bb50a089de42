/* ph_image.c - building and pulling images through the Engine (see ph_image.h). */
#include "ph_image.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_log.h"
#include "ph_run.h"
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

static void
progress_cb(void *ud, const char *line)
{
    const char *who = ud;
    size_t n = strlen(line);
    char esc[2048];

    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
    /* What a Dockerfile's RUN prints comes through the Engine: escaped. */
    if (n > 0 && ph_escape_mem(esc, sizeof esc, line, n, 0) > 0)
        fprintf(stderr, "  [%s] %s\n", who, esc);
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

int
ph_image_ensure_service(ph_engine *e, const ph_service *s, const char *image, int force_build,
                        ph_error_t *err)
{
    json_t *info = NULL, *args = NULL;
    void *tar = NULL;
    size_t tar_len = 0;
    char *id = NULL;
    int found = 0, rc;

    if (ph_engine_image_inspect(e, image, &info, &found, err) < 0)
        return -1;
    json_decref(info);
    if (found && !(force_build && s->has_build))
        return 0;
    if (!s->has_build)
        return pull(e, image, err);

    ph_info("%s: building %s from %s", s->name, image, s->build_context);
    if (ph_tar_context_build(s->build_context, NULL, 0, PH_CONTEXT_MAX, &tar, &tar_len, err) < 0)
        return ph_error_wrap(err, "%s: build context", s->name);
    args = json_object();
    for (size_t i = 0; i < s->build_args.n; i++) {
        const char *v = s->build_args.v[i].value ? s->build_args.v[i].value : getenv(s->build_args.v[i].key);
        if (v != NULL)
            json_object_set_new(args, s->build_args.v[i].key, json_string(v));
    }
    rc = ph_engine_build(e, tar, tar_len, s->build_dockerfile ? s->build_dockerfile : "Dockerfile", image,
                         args, NULL, progress_cb, (void *)s->name, &id, err);
    json_decref(args);
    free(tar);
    free(id);
    if (rc < 0)
        return ph_error_wrap(err, "build the image of service `%s`", s->name);
    return 0;
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
static void
short_name(const char *image, char *out, size_t len)
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

int
ph_image_ensure_profiling(ph_engine *e, const char *service_image, const char *data_dir,
                          const ph_strv *packages, char **tag_out, ph_error_t *err)
{
    char dockerfile[4096], shim[4096], sampler[4096], name[128], tag[256], pkgs[2048] = "";
    json_t *info = NULL, *args = NULL, *labels = NULL;
    char *base_id = NULL;
    void *tar = NULL;
    size_t tar_len = 0;
    char *id = NULL;
    uint64_t h = PH_IMAGE_HASH_INIT;
    int found = 0, rc = -1;

    snprintf(dockerfile, sizeof dockerfile, "%s/images/profiling/Dockerfile", data_dir);
    snprintf(shim, sizeof shim, "%s/build/ph-init", data_dir);
    snprintf(sampler, sizeof sampler, "%s/build/libphsampler.so", data_dir);
    for (size_t i = 0; i < packages->n; i++) {
        if (i)
            strncat(pkgs, " ", sizeof pkgs - strlen(pkgs) - 1);
        strncat(pkgs, packages->v[i], sizeof pkgs - strlen(pkgs) - 1);
    }

    if (ph_engine_image_inspect(e, service_image, &info, &found, err) < 0)
        return -1;
    if (!found)
        return ph_fail(err, 0, "image `%s` not found (run `profharness setup`)", service_image);
    base_id = strdup(json_string_value(json_object_get(info, "Id")) ? json_string_value(json_object_get(info, "Id")) : "");
    if (base_id == NULL || base_id[0] == '\0') {
        ph_fail(err, 0, "image `%s` has no id", service_image);
        goto out;
    }

    {
        /* opt/ lands in /opt/profharness; the sampler only when it is built. */
        const ph_tar_extra extra[] = {
            { .name = "Dockerfile", .path = dockerfile, .mode = 0644 },
            { .name = "opt/bin/ph-init", .path = shim, .mode = 0755 },
            { .name = "opt/lib/libphsampler.so", .path = sampler, .mode = 0755 },
        };
        size_t n_extra = access(sampler, R_OK) == 0 ? 3 : 2;

        if (ph_tar_context_build(NULL, extra, n_extra, PH_CONTEXT_MAX, &tar, &tar_len, err) < 0) {
            ph_error_wrap(err, "profiling image context (is the harness built? run `make`)");
            goto out;
        }
    }
    /* The tag hashes what goes in, not the tar's bytes: relinking the shim
     * changes its mtime but not its content, and must not cost a rebuild. */
    {
        const char *inputs[] = { dockerfile, shim, sampler };
        for (size_t i = 0; i < PH_ARRAY_LEN(inputs); i++) {
            if (hash_file(inputs[i], &h) < 0 && i < 2) {
                ph_fail(err, errno, "read `%s`", inputs[i]);
                goto out;
            }
        }
    }
    h = ph_image_hash(h, base_id, strlen(base_id));
    h = ph_image_hash(h, pkgs, strlen(pkgs));
    short_name(service_image, name, sizeof name);
    snprintf(tag, sizeof tag, "%s-profiling:%016llx", name, (unsigned long long)h);

    json_decref(info);
    info = NULL;
    if (ph_engine_image_inspect(e, tag, &info, &found, err) < 0)
        goto out;
    if (found) {
        ph_debug("profiling image %s is current", tag);
    } else {
        ph_info("building profiling image %s (base %s; packages: %s)", tag, service_image, pkgs);
        args = json_pack("{s:s, s:s}", "BASE_IMAGE", base_id, "PACKAGES", pkgs);
        labels = json_pack("{s:s}", PH_LABEL_INPUTS, tag + strlen(name) + strlen("-profiling:"));
        if (ph_engine_build(e, tar, tar_len, "Dockerfile", tag, args, labels, progress_cb, "profiling", &id,
                            err) < 0) {
            ph_error_wrap(err, "build profiling image for `%s`", service_image);
            goto out;
        }
    }
    *tag_out = strdup(tag);
    rc = *tag_out ? 0 : ph_fail(err, errno, "allocate");
out:
    json_decref(info);
    json_decref(args);
    json_decref(labels);
    free(base_id);
    free(tar);
    free(id);
    return rc;
}
