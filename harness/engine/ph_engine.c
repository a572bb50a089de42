/* ph_engine.c - the Engine's endpoints (see ph_engine.h).
 *
 * Each endpoint describes its request (ph_engine_int.h) and hands it to
 * ph_engine_call, which checks and escapes the arguments, sends, bounds and
 * decodes the answer and makes the error.  What is left here is what each
 * endpoint means: which statuses are answers rather than failures (304
 * "already", 404 "not found"), and what to take out of the answer.
 * The build (ph_engine_build.c), the logs (ph_engine_logs.c) and the
 * race-free wait (ph_engine_wait.c) have files of their own.
 */
#include "ph_engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_log.h"
#include "ph_util.h"

#define ARCHIVE_TIMEOUT_S 3600L

/* ---- generic ----------------------------------------------------------- */

int
ph_engine_request_timeout(ph_engine *e, const char *method, const char *path, json_t *body, long timeout_s,
                          json_t **resp, long *http_status, ph_error_t *err)
{
    char what[300];
    ph_engine_req r = { .what = what, .method = method, .path = path, .raw = 1, .body = body,
                        .timeout_s = timeout_s > 0 ? timeout_s : PH_ENGINE_NO_TIMEOUT, .resp = resp };
    int rc;

    snprintf(what, sizeof what, "%s %.200s", method ? method : "?", path ? path : "?");
    rc = ph_engine_call(e, &r, err);
    if (http_status)
        *http_status = r.status;
    return rc;
}

int
ph_engine_request(ph_engine *e, const char *method, const char *path, json_t *body, json_t **resp,
                  long *http_status, ph_error_t *err)
{
    return ph_engine_request_timeout(e, method, path, body, PH_ENGINE_DEFAULT_TIMEOUT_S, resp, http_status, err);
}

int
ph_engine_stream(ph_engine *e, const char *method, const char *path, const char *content_type,
                 ph_engine_read_cb body_read_cb, void *body_ud, long long body_len, ph_engine_data_cb data_cb,
                 void *data_ud, long timeout_s, long *http_status, ph_error_t *err)
{
    char what[300];
    ph_engine_req r = { .what = what, .method = method, .path = path, .raw = 1, .content_type = content_type,
                        .read_cb = body_read_cb, .read_ud = body_ud, .body_len = body_len, .data_cb = data_cb,
                        .data_ud = data_ud, .timeout_s = timeout_s > 0 ? timeout_s : PH_ENGINE_NO_TIMEOUT };
    int rc;

    snprintf(what, sizeof what, "%s %.200s", method ? method : "?", path ? path : "?");
    /* The Engine's own long jobs: a build step or a registry may be silent
     * for minutes, and their progress comes at the Engine's pace. */
    r.quiet = path != NULL && (strncmp(path, "/build?", 7) == 0 || strncmp(path, "/images/create?", 15) == 0);
    if (r.data_cb == NULL) /* streamed all the same: the answer is not kept */
        r.data_cb = ph_engine_discard_cb;
    rc = ph_engine_call(e, &r, err);
    if (http_status)
        *http_status = r.status;
    return rc;
}

int
ph_engine_discard_cb(void *ud, const char *data, size_t len)
{
    (void)ud;
    (void)data;
    (void)len;
    return 0;
}

/* ---- archive ----------------------------------------------------------- */

int
ph_engine_archive_get(ph_engine *e, const char *id, const char *path, ph_engine_data_cb data_cb, void *ud,
                      ph_error_t *err)
{
    char what[600];
    ph_engine_req r = { .what = what, .method = "GET", .path = "/containers/{id}/archive", .arg = { id },
                        .kind = "container id", .query = { { "path", path, "path" } }, .data_cb = data_cb,
                        .data_ud = ud, .timeout_s = ARCHIVE_TIMEOUT_S };
    ph_error_t sub = NULL;

    snprintf(what, sizeof what, "copy `%.200s` out of container `%.200s`", path ? path : "", id ? id : "");
    if (data_cb == NULL)
        return ph_bad_input(err, "%s: no data callback", what);
    /* A callback that fails makes its error in the caller's err; so the
     * call goes through a private one, and the callback's wins. */
    if (ph_engine_call(e, &r, &sub) == 0)
        return 0;
    if (err && *err) {
        ph_error_free(&sub);
        return -1;
    }
    /* 404 is both "no such container" and "no such path"; the Engine's
     * message says which, and the first is worth keeping verbatim. */
    if (r.status == 404 && strstr(sub->msg, "No such container") == NULL) {
        ph_error_free(&sub);
        return ph_fail(err, 0, "%s: no such path in the container", what);
    }
    if (err)
        *err = sub;
    else
        ph_error_free(&sub);
    return -1;
}

static int inspect(ph_engine *e, ph_engine_req *r, json_t **out, int *found, ph_error_t *err);

int
ph_engine_archive_stat(ph_engine *e, const char *id, const char *path, int *found, ph_error_t *err)
{
    char what[600];
    ph_engine_req r = { .what = what, .method = "HEAD", .path = "/containers/{id}/archive", .arg = { id },
                        .kind = "container id", .query = { { "path", path, "path" } }, .ok = { 404 } };

    snprintf(what, sizeof what, "look for `%.200s` in container `%.200s`", path ? path : "", id ? id : "");
    if (found == NULL)
        return ph_bad_input(err, "%s: no place for the answer", what);
    *found = 0;
    if (ph_engine_call(e, &r, err) < 0)
        return -1;
    if (r.status != 404) {
        *found = 1;
        return 0;
    }
    /* A HEAD answer has no body to say which of the path and the
     * container is missing: ask for the container. */
    {
        ph_engine_req c = { .what = what, .path = "/containers/{id}/json", .arg = { id }, .kind = "container id" };
        int there = 0;

        if (inspect(e, &c, NULL, &there, err) < 0)
            return -1;
        if (!there)
            return ph_fail(err, 0, "%s: No such container", what);
    }
    return 0;
}

int
ph_engine_archive_put(ph_engine *e, const char *id, const char *path, ph_engine_read_cb read_cb, void *ud,
                      long long len, ph_error_t *err)
{
    char what[600];
    ph_engine_req r = { .what = what, .method = "PUT", .path = "/containers/{id}/archive", .arg = { id },
                        .kind = "container id", .query = { { "path", path, "path" } },
                        .content_type = "application/x-tar", .read_cb = read_cb, .read_ud = ud, .body_len = len,
                        .data_cb = ph_engine_discard_cb, .timeout_s = ARCHIVE_TIMEOUT_S };

    snprintf(what, sizeof what, "copy a tar into `%.200s` of container `%.200s`", path ? path : "", id ? id : "");
    if (read_cb == NULL)
        return ph_bad_input(err, "%s: no body", what);
    return ph_engine_call(e, &r, err);
}

/* ---- images ------------------------------------------------------------ */

/* GET an object; a 404 is "not found" (*found = 0), not an error. */
static int
inspect(ph_engine *e, ph_engine_req *r, json_t **out, int *found, ph_error_t *err)
{
    json_t *tmp = NULL;
    char what[300];

    if (out)
        *out = NULL;
    if (found)
        *found = 0;
    ph_engine_req_what(r, what, sizeof what);
    if (found == NULL)
        return ph_bad_input(err, "%s: no place for the answer", what);
    r->method = "GET";
    r->ok[0] = 404;
    r->resp = &tmp;
    if (ph_engine_call(e, r, err) < 0)
        return -1;
    *found = r->status != 404;
    if (out)
        *out = tmp;
    else
        json_decref(tmp);
    return 0;
}

int
ph_engine_image_inspect(ph_engine *e, const char *name, json_t **out, int *found, ph_error_t *err)
{
    ph_engine_req r = { .what = "inspect image `{}`", .path = "/images/{name}/json", .arg = { name },
                        .kind = "image name" };

    return inspect(e, &r, out, found, err);
}

int
ph_engine_image_remove(ph_engine *e, const char *name, int force, ph_error_t *err)
{
    ph_engine_req r = { .what = "remove image `{}`", .method = "DELETE", .path = "/images/{name}", .arg = { name },
                        .kind = "image name", .query = { { "force", force ? "1" : "0" } }, .ok = { 404 } };

    return ph_engine_call(e, &r, err);
}

/* ---- containers -------------------------------------------------------- */

int
ph_engine_container_create(ph_engine *e, const char *name, json_t *config, char **id, ph_error_t *err)
{
    json_t *resp = NULL;
    ph_engine_req r = { .what = "create container `{}`", .method = "POST", .path = "/containers/create",
                        .arg = { name }, .query = { { "name", name } }, .body = config, .resp = &resp };
    const char *got;
    char what[300];
    int rc = -1;

    if (id)
        *id = NULL;
    snprintf(what, sizeof what, "create container `%.200s`", name ? name : "");
    if (ph_engine_check(e, what, err) < 0)
        return -1;
    if (id == NULL || !json_is_object(config))
        return ph_bad_input(err, "%s: needs a JSON object config and a place for the id", what);
    if (name != NULL && ph_engine_check_str(name, what, "container name", err) < 0)
        return -1;
    if (ph_engine_call(e, &r, err) < 0)
        return -1;
    got = json_string_value(json_object_get(resp, "Id"));
    if (got == NULL || got[0] == '\0')
        ph_fail(err, 0, "%s: the Engine's answer has no Id", what);
    else if ((*id = strdup(got)) == NULL)
        ph_fail(err, errno, "%s: allocate", what);
    else
        rc = 0;
    json_decref(resp);
    return rc;
}

int
ph_engine_container_start(ph_engine *e, const char *id, ph_error_t *err)
{
    ph_engine_req r = { .what = "start container `{}`", .method = "POST", .path = "/containers/{id}/start",
                        .arg = { id }, .kind = "container id", .ok = { 304 } };

    return ph_engine_call(e, &r, err);
}

int
ph_engine_container_kill(ph_engine *e, const char *id, const char *signal, ph_error_t *err)
{
    char what[300];
    ph_engine_req r = { .what = what, .method = "POST", .path = "/containers/{id}/kill", .arg = { id },
                        .kind = "container id", .query = { { "signal", signal } } };

    snprintf(what, sizeof what, "send %.20s to container `%.200s`", signal ? signal : "SIGKILL", id ? id : "");
    if (signal != NULL && (signal[0] == '\0' || strlen(signal) > 32))
        return ph_bad_input(err, "%s: bad signal name `%.40s`", what, signal);
    return ph_engine_call(e, &r, err);
}

int
ph_engine_container_stop(ph_engine *e, const char *id, long timeout_s, ph_error_t *err)
{
    char t[32];
    /* The Engine waits up to t seconds then kills; give it time to do so. */
    ph_engine_req r = { .what = "stop container `{}`", .method = "POST", .path = "/containers/{id}/stop",
                        .arg = { id }, .kind = "container id", .query = { { "t", t } }, .ok = { 304 },
                        .timeout_s = timeout_s + 60, .quiet = 1 };

    if (timeout_s < 0)
        return ph_bad_input(err, "stop container `%.200s`: negative grace period", id ? id : "");
    snprintf(t, sizeof t, "%ld", timeout_s);
    return ph_engine_call(e, &r, err);
}

int
ph_engine_wait_result(const char *what, json_t *resp, long *exit_code, ph_error_t *err)
{
    json_t *code = json_object_get(resp, "StatusCode");
    const char *msg = json_string_value(json_object_get(json_object_get(resp, "Error"), "Message"));

    if (msg != NULL && msg[0] != '\0')
        return ph_fail(err, 0, "%s: %s", what, msg);
    if (!json_is_integer(code))
        return ph_fail(err, 0, "%s: the Engine's answer has no StatusCode", what);
    if (exit_code)
        *exit_code = (long)json_integer_value(code);
    return 0;
}

int
ph_engine_container_wait(ph_engine *e, const char *id, long timeout_s, long *exit_code, int *timed_out,
                         ph_error_t *err)
{
    json_t *resp = NULL;
    ph_engine_req r = { .what = "wait for container `{}`", .method = "POST", .path = "/containers/{id}/wait",
                        .arg = { id }, .kind = "container id", .query = { { "condition", "not-running" } },
                        .timeout_s = timeout_s > 0 ? timeout_s : PH_ENGINE_NO_TIMEOUT, .timeout_ok = 1,
                        .resp = &resp, .quiet = 1 };
    char what[300];
    int rc;

    if (exit_code)
        *exit_code = -1;
    if (timed_out)
        *timed_out = 0;
    snprintf(what, sizeof what, "wait for container `%.200s`", id ? id : "");
    if (timed_out == NULL)
        return ph_bad_input(err, "%s: no place for the timed-out flag", what);
    if (ph_engine_call(e, &r, err) < 0)
        return -1;
    *timed_out = r.timed_out;
    rc = r.timed_out ? 0 : ph_engine_wait_result(what, resp, exit_code, err);
    json_decref(resp);
    return rc;
}

int
ph_engine_container_remove(ph_engine *e, const char *id, int force, ph_error_t *err)
{
    ph_engine_req r = { .what = "remove container `{}`", .method = "DELETE", .path = "/containers/{id}",
                        .arg = { id }, .kind = "container id",
                        .query = { { "v", "1" }, { "force", force ? "1" : NULL } }, .ok = { 404 },
                        .quiet = 1 /* a large writable layer takes its time */ };

    if (id == NULL)
        return 0; /* like free(NULL): cleanup paths call this unconditionally */
    return ph_engine_call(e, &r, err); /* 404: already gone, the goal is reached */
}

int
ph_engine_container_inspect(ph_engine *e, const char *id, json_t **out, int *found, ph_error_t *err)
{
    ph_engine_req r = { .what = "inspect container `{}`", .path = "/containers/{id}/json", .arg = { id },
                        .kind = "container id" };

    return inspect(e, &r, out, found, err);
}

int
ph_engine_container_top(ph_engine *e, const char *id, const char *ps_args, json_t **out, ph_error_t *err)
{
    ph_engine_req r = { .what = "list the processes of container `{}`", .method = "GET",
                        .path = "/containers/{id}/top", .arg = { id }, .kind = "container id",
                        .query = { { "ps_args", ps_args } }, .resp = out };

    if (out == NULL)
        return ph_bad_input(err, "list the processes of container `%.200s`: no place for the answer", id ? id : "");
    *out = NULL;
    return ph_engine_call(e, &r, err);
}

int
ph_engine_containers_by_label(ph_engine *e, const char *const *labels, size_t n, json_t **out_array,
                              ph_error_t *err)
{
    const char *what = "list containers by label";
    json_t *filters = NULL, *arr = NULL;
    ph_cleanup_free char *s = NULL;
    ph_engine_req r = { .what = what, .method = "GET", .path = "/containers/json", .resp = out_array };
    int rc = -1;

    if (out_array)
        *out_array = NULL;
    if (ph_engine_check(e, what, err) < 0)
        return -1;
    if (out_array == NULL || labels == NULL || n == 0)
        return ph_bad_input(err, "%s: no labels given", what);
    filters = json_object();
    arr = json_array();
    if (filters == NULL || arr == NULL || json_object_set_new(filters, "label", arr) < 0) {
        ph_fail(err, ENOMEM, "%s: allocate", what);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (ph_engine_check_str(labels[i], what, "label", err) < 0)
            goto out;
        if (json_array_append_new(arr, json_string(labels[i])) < 0) {
            ph_bad_input(err, "%s: label `%.200s` is not UTF-8", what, labels[i]);
            goto out;
        }
    }
    if ((s = json_dumps(filters, JSON_COMPACT)) == NULL) {
        ph_fail(err, ENOMEM, "%s: encode the filter", what);
        goto out;
    }
    r.query[0] = PH_ENGINE_Q("all", "1");
    r.query[1] = PH_ENGINE_Q("filters", s);
    if (ph_engine_call(e, &r, err) < 0)
        goto out;
    if (*out_array == NULL)
        *out_array = json_array();
    if (!json_is_array(*out_array)) {
        json_decref(*out_array);
        *out_array = NULL;
        ph_fail(err, 0, "%s: the Engine's answer is not a list", what);
        goto out;
    }
    rc = 0;
out:
    json_decref(filters);
    return rc;
}

/* ---- networks and volumes ---------------------------------------------- */

/* Inspect; create if 404; a 409 on create means someone else created it
 * between our inspect and our create, which is what we wanted. */
static int
ensure_named(ph_engine *e, const char *noun, const char *inspect_path, const char *create_path, const char *name,
             json_t *labels, ph_error_t *err)
{
    char what[300];
    ph_engine_req look = { .what = what, .path = inspect_path, .arg = { name }, .kind = "name" };
    ph_engine_req make = { .what = what, .method = "POST", .path = create_path, .ok = { 409 } };
    json_t *body = NULL;
    int found = 0, rc;

    snprintf(what, sizeof what, "inspect %s `%.200s`", noun, name ? name : "");
    if (labels != NULL && !json_is_object(labels))
        return ph_bad_input(err, "%s: labels must be a JSON object", what);
    if (inspect(e, &look, NULL, &found, err) < 0)
        return -1;
    if (found)
        return 0;
    snprintf(what, sizeof what, "create %s `%.200s`", noun, name);
    body = json_pack("{s:s, s:O}", "Name", name, "Labels", labels ? labels : json_object());
    /* Networks may share a name unless asked not to (API < 1.44). */
    if (body == NULL ||
        (strcmp(noun, "network") == 0 && json_object_set_new(body, "CheckDuplicate", json_true()) < 0)) {
        json_decref(body);
        return ph_fail(err, ENOMEM, "%s: build the request", what);
    }
    make.body = body;
    rc = ph_engine_call(e, &make, err);
    if (rc == 0 && make.status == 409)
        ph_debug("%s: created concurrently", what);
    json_decref(body);
    return rc;
}

int
ph_engine_network_ensure(ph_engine *e, const char *name, json_t *labels, ph_error_t *err)
{
    return ensure_named(e, "network", "/networks/{name}", "/networks/create", name, labels, err);
}

int
ph_engine_volume_ensure(ph_engine *e, const char *name, json_t *labels, ph_error_t *err)
{
    return ensure_named(e, "volume", "/volumes/{name}", "/volumes/create", name, labels, err);
}
