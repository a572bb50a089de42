/* ph_engine_build.c - POST /build: an in-memory tar context up (its bytes
 * counted as the Engine takes them), the builder's JSON lines down (see
 * ph_engine_build in ph_engine.h).
 *
 * The answer is parsed as it streams, in two bounded buffers (the JSON line,
 * LINE_MAX_LEN; one line of "stream" text, PROGRESS_MAX): lines may be split
 * anywhere across chunks, and text across lines.  The first error line wins;
 * the image id comes from {"aux":{"ID":...}} or, for an older builder that
 * sends none, from inspecting the tag when no line was lost. */
#include "ph_engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_util.h"

#define BUILD_TIMEOUT_S 3600L
#define LINE_MAX_LEN (256u << 10)   /* one JSON line of a build's answer */
#define PROGRESS_MAX 4096u          /* one line of "stream" text */

#define cleanup_json __attribute__((cleanup(json_decrefp)))

ssize_t
ph_engine_mem_read_cb(void *ud, char *out, size_t len)
{
    ph_engine_mem *m = ud;
    size_t n = m->len - m->off < len ? m->len - m->off : len;

    memcpy(out, m->data + m->off, n);
    m->off += n;
    return (ssize_t)n;
}

/* The build answer is JSON lines: {"stream":"Step 1/2 : FROM x"},
 * {"stream":"\n"}, {"status":...,"progressDetail":{...}}, {"aux":{"ID":..}},
 * {"errorDetail":{"message":..},"error":..}.  Lines may be split anywhere
 * across chunks, and "stream" text is split across lines, so there are two
 * bounded buffers: one for the JSON line, one for the text line. */
typedef struct build_ctx {
    const ph_engine_build_watch *w; /* NULL: nothing told */
    char line[LINE_MAX_LEN];
    size_t len;
    int overlong;          /* the current JSON line passed LINE_MAX_LEN */
    unsigned long dropped; /* lines too long or not JSON */
    char text[PROGRESS_MAX];
    size_t text_len;
    char *error;           /* the first error's text */
    char *image_id;        /* from {"aux":{"ID":...}} */
    int oom;
} build_ctx;

static void
build_emit_text(build_ctx *b)
{
    size_t l = b->text_len;

    while (l > 0 && b->text[l - 1] == '\r')
        l--;
    b->text[l] = '\0';
    if (l > 0 && b->w && b->w->line_cb)
        b->w->line_cb(b->w->ud, b->text);
    b->text_len = 0;
}

static void
build_add_text(build_ctx *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\n') {
            build_emit_text(b);
        } else {
            if (b->text_len == sizeof b->text - 1)
                build_emit_text(b); /* an endless line is shown in pieces */
            b->text[b->text_len++] = *s;
        }
    }
}

static void
build_keep(char **slot, const char *s, build_ctx *b)
{
    char *d = strdup(s);

    if (d == NULL) {
        b->oom = 1;
        return;
    }
    free(*slot);
    *slot = d;
}

static void
build_line(build_ctx *b, const char *line, size_t len)
{
    cleanup_json json_t *j = NULL;
    json_t *detail;
    const char *s;

    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
        len--;
    if (len == 0)
        return;
    j = json_loadb(line, len, 0, NULL);
    if (!json_is_object(j)) {
        b->dropped++;
        return;
    }
    if ((s = json_string_value(json_object_get(j, "stream"))) != NULL)
        build_add_text(b, s);
    if ((s = json_string_value(json_object_get(j, "status"))) != NULL && b->w && b->w->line_cb) {
        /* Pull progress inside a build: show the steps, not the bars. */
        detail = json_object_get(j, "progressDetail");
        if (detail == NULL || json_object_size(detail) == 0) {
            const char *id = json_string_value(json_object_get(j, "id"));
            char one[PROGRESS_MAX];

            snprintf(one, sizeof one, "%s%s%s", id ? id : "", id ? ": " : "", s);
            b->w->line_cb(b->w->ud, one);
        }
    }
    if (b->error == NULL) {
        s = json_string_value(json_object_get(json_object_get(j, "errorDetail"), "message"));
        if (s == NULL)
            s = json_string_value(json_object_get(j, "error"));
        if (s != NULL)
            build_keep(&b->error, s[0] ? s : "the Engine reported an empty error", b);
    }
    if ((s = json_string_value(json_object_get(json_object_get(j, "aux"), "ID"))) != NULL)
        build_keep(&b->image_id, s, b);
}

static int
build_data_cb(void *ud, const char *data, size_t len)
{
    build_ctx *b = ud;

    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;

        if (!b->overlong) {
            if (take > sizeof b->line - b->len) {
                /* Only progress text grows this long; dropped and counted. */
                b->overlong = 1;
            } else {
                memcpy(b->line + b->len, data, take);
                b->len += take;
            }
        }
        if (nl == NULL)
            break;
        if (b->overlong)
            b->dropped++;
        else
            build_line(b, b->line, b->len);
        b->len = 0;
        b->overlong = 0;
        data += take + 1;
        len -= take + 1;
    }
    return 0;
}

/* The context as the Engine reads it, its bytes told. */
typedef struct build_upload {
    ph_engine_mem m;
    const ph_engine_build_watch *w;
} build_upload;

static ssize_t
build_upload_cb(void *ud, char *out, size_t len)
{
    build_upload *u = ud;
    ssize_t n = ph_engine_mem_read_cb(&u->m, out, len);

    if (n > 0 && u->w && u->w->sent_cb)
        u->w->sent_cb(u->w->ud, u->m.off, u->m.len);
    return n;
}

/* Send R (POST /build, its query set), its context TAR, and read the
 * builder's answer: the image TAG built, its id into *IMAGE_ID. */
static int
build_run(ph_engine *e, ph_engine_req *r, const char *tag, const void *tar, size_t tar_len,
          const ph_engine_build_watch *w, char **image_id, ph_error_t *err)
{
    char what[600];
    build_upload up = { .m = { .data = tar, .len = tar_len }, .w = w };
    build_ctx *b = NULL;
    int rc = -1;

    if (image_id)
        *image_id = NULL;
    snprintf(what, sizeof what, "build `%.500s`", tag ? tag : "");
    r->what = what;
    r->method = "POST";
    r->data_cb = build_data_cb;
    r->timeout_s = BUILD_TIMEOUT_S;
    r->quiet = 1;
    if (tar != NULL) {
        r->content_type = "application/x-tar";
        r->read_cb = build_upload_cb;
        r->read_ud = &up;
        r->body_len = (long long)tar_len;
    } else {
        r->body_len = -1;
    }
    b = calloc(1, sizeof *b); /* LINE_MAX_LEN is too much for the stack */
    if (b == NULL)
        return ph_fail(err, errno, "%s: allocate", what);
    b->w = w;
    r->data_ud = b;
    if (ph_engine_call(e, r, err) < 0)
        goto out;
    if (b->len > 0 && !b->overlong)
        build_line(b, b->line, b->len); /* a last line without its newline */
    if (b->text_len > 0)
        build_emit_text(b);
    if (b->oom) {
        ph_fail(err, ENOMEM, "%s: keep the Engine's answer", what);
        goto out;
    }
    if (b->error != NULL) {
        ph_fail(err, 0, "%s: %s", what, b->error);
        goto out;
    }
    if (b->image_id == NULL) {
        /* An older builder sends no aux ID.  Inspecting TAG is only safe
         * when no line was lost: a dropped error line would otherwise turn
         * a failed build into an earlier image of the same tag. */
        cleanup_json json_t *info = NULL;
        const char *id;
        int found = 0;

        if (b->dropped > 0) {
            ph_fail(err, 0, "%s: no image id, and %lu lines of the Engine's answer were unreadable", what,
                    b->dropped);
            goto out;
        }
        if (ph_engine_image_inspect(e, tag, &info, &found, err) < 0) {
            ph_error_wrap(err, "%s: find the image built", what);
            goto out;
        }
        id = json_string_value(json_object_get(info, "Id"));
        if (!found || id == NULL) {
            ph_fail(err, 0, "%s: the Engine reported no image", what);
            goto out;
        }
        build_keep(&b->image_id, id, b);
        if (b->oom) {
            ph_fail(err, ENOMEM, "%s: allocate", what);
            goto out;
        }
    }
    if (image_id) {
        *image_id = b->image_id;
        b->image_id = NULL;
    }
    rc = 0;
out:
    free(b->error);
    free(b->image_id);
    free(b);
    return rc;
}

int
ph_engine_build(ph_engine *e, const void *tar, size_t tar_len, const char *dockerfile, const char *tag,
                json_t *buildargs, json_t *labels, const ph_engine_build_watch *watch, char **image_id,
                ph_error_t *err)
{
    char what[600];
    ph_cleanup_free char *s_args = NULL, *s_labels = NULL;
    ph_engine_req r = { .path = "/build" };

    if (image_id)
        *image_id = NULL;
    snprintf(what, sizeof what, "build `%.500s`", tag ? tag : "");
    if (ph_engine_check(e, what, err) < 0 || ph_engine_check_str(tag, what, "image tag", err) < 0)
        return -1;
    if (tar == NULL || tar_len == 0)
        return ph_bad_input(err, "%s: empty build context", what);
    if (dockerfile == NULL || dockerfile[0] == '\0')
        dockerfile = "Dockerfile";
    if ((buildargs && !json_is_object(buildargs)) || (labels && !json_is_object(labels)))
        return ph_bad_input(err, "%s: build args and labels must be JSON objects", what);
    s_args = buildargs ? json_dumps(buildargs, JSON_COMPACT) : strdup("{}");
    s_labels = labels ? json_dumps(labels, JSON_COMPACT) : strdup("{}");
    if (s_args == NULL || s_labels == NULL)
        return ph_fail(err, ENOMEM, "%s: encode build args and labels", what);
    r.query[0] = PH_ENGINE_Q("t", tag);
    r.query[1] = PH_ENGINE_Q("dockerfile", dockerfile);
    r.query[2] = PH_ENGINE_Q("buildargs", s_args);
    r.query[3] = PH_ENGINE_Q("labels", s_labels);
    r.query[4] = PH_ENGINE_Q("rm", "1");
    r.query[5] = PH_ENGINE_Q("forcerm", "1");
    return build_run(e, &r, tag, tar, tar_len, watch, image_id, err);
}

int
ph_engine_build_query(ph_engine *e, const char *query, const char *tag, const void *tar, size_t tar_len,
                      const ph_engine_build_watch *watch, char **image_id, ph_error_t *err)
{
    char what[600];
    ph_cleanup_free char *path = NULL;
    ph_engine_req r = { .raw = 1 };

    if (image_id)
        *image_id = NULL;
    snprintf(what, sizeof what, "build `%.500s`", tag ? tag : "");
    if (ph_engine_check(e, what, err) < 0 || ph_engine_check_str(tag, what, "image tag", err) < 0)
        return -1;
    if ((tar == NULL) != (tar_len == 0))
        return ph_bad_input(err, "%s: a build context without its bytes, or of none", what);
    if (asprintf(&path, "/build?%s", query ? query : "") < 0) {
        path = NULL;
        return ph_fail(err, ENOMEM, "%s: allocate", what);
    }
    r.path = path;
    return build_run(e, &r, tag, tar, tar_len, watch, image_id, err);
}

int
ph_engine_image_tag(ph_engine *e, const char *image, const char *repo, const char *tag, ph_error_t *err)
{
    ph_engine_req r = { .what = "tag image `{}`", .method = "POST", .path = "/images/{name}/tag", .arg = { image },
                        .kind = "image name", .query = { { "repo", repo, "repository" }, PH_ENGINE_Q("tag", tag) } };

    if (ph_engine_check(e, "tag an image", err) < 0)
        return -1;
    return ph_engine_call(e, &r, err);
}

int
ph_engine_image_push(ph_engine *e, const char *repo, const char *tag, ph_error_t *err)
{
    char what[600];
    /* the registry may be silent while it takes a layer: bounded by the
     * timeout, as a build */
    ph_engine_req r = { .what = what, .method = "POST", .path = "/images/{name}/push", .arg = { repo },
                        .kind = "image name", .query = { PH_ENGINE_Q("tag", tag) }, .data_cb = build_data_cb,
                        .timeout_s = BUILD_TIMEOUT_S, .quiet = 1,
                        /* the Engine wants the header, credentials or not: "{}" */
                        .registry_auth = "e30=" };
    build_ctx *b = NULL;
    int rc = -1;

    snprintf(what, sizeof what, "push `%.300s:%.200s`", repo ? repo : "", tag ? tag : "latest");
    if (ph_engine_check(e, what, err) < 0)
        return -1;
    if ((b = calloc(1, sizeof *b)) == NULL)
        return ph_fail(err, errno, "%s: allocate", what);
    r.data_ud = b;
    if (ph_engine_call(e, &r, err) < 0)
        goto out;
    if (b->len > 0 && !b->overlong)
        build_line(b, b->line, b->len);
    if (b->oom) {
        ph_fail(err, ENOMEM, "%s: keep the Engine's answer", what);
        goto out;
    }
    if (b->error != NULL) {
        ph_fail(err, 0, "%s: %s", what, b->error);
        goto out;
    }
    rc = 0;
out:
    free(b->error);
    free(b->image_id);
    free(b);
    return rc;
}
