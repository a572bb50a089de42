/* ph_engine_wait.c - the race-free wait (see ph_engine.h).
 *
 * ph_engine_container_wait sends its request when called, so "kill, then
 * wait" can miss nothing, but "wait, then kill" from one thread needs the
 * wait registered first.  _wait_begin sends the wait on a second easy handle
 * of its own, driven by a curl multi handle, and returns once the Engine has
 * answered the headers (see wait_header_cb for why that proves the wait is
 * registered); _wait_end drives it to the end. */
#include "ph_engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ph_util.h"

#define WAIT_BEGIN_TIMEOUT_S 30L
#define ERR_BODY_MAX (64u << 10)

static int
is_2xx(long status)
{
    return status >= 200 && status < 300;
}

struct ph_engine_wait {
    ph_engine *e;
    CURL *curl;
    CURLM *multi;
    ph_engine_buf body;
    long status;
    int headers_done;  /* a final status line and its headers arrived */
    int done;
    CURLcode result;
    char what[300];
    char errbuf[CURL_ERROR_SIZE];
    ph_engine_watch watch; /* no stall limit (the wait is silent by nature); interrupts end it */
    ph_stage *stage; /* from begin to end: concurrent with the signal sent meanwhile */
};

void
ph_engine_wait_free(ph_engine_wait *w)
{
    if (w == NULL)
        return;
    ph_engine_stage_end(w->stage, w->status, w->body.len, 0, 0, NULL);
    if (w->multi && w->curl)
        curl_multi_remove_handle(w->multi, w->curl);
    if (w->curl)
        curl_easy_cleanup(w->curl);
    if (w->multi)
        curl_multi_cleanup(w->multi);
    free(w->body.data);
    free(w);
}

/* The Engine's wait handler (API >= 1.30) registers the wait, then writes
 * and flushes the 200 status and headers before blocking for the exit: see
 * postContainersWait in moby's api/server/router/container/container_routes.go
 * ("Write response header immediately").  So the end of the headers is proof
 * that the wait is registered. */
static size_t
wait_header_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    ph_engine_wait *w = ud;
    size_t n = size * nmemb;
    int code;

    if (n >= 12 && n < 256 && strncmp(ptr, "HTTP/", 5) == 0) {
        char line[256]; /* header data is not NUL-terminated */

        memcpy(line, ptr, n);
        line[n] = '\0';
        if (sscanf(line, "HTTP/%*s %d", &code) == 1)
            w->status = code;
    } else if ((n == 2 && ptr[0] == '\r' && ptr[1] == '\n') || (n == 1 && ptr[0] == '\n'))
        w->headers_done = w->status >= 200;
    return n;
}

/* Drive the transfer until STOP(w) or the deadline (<= 0: none).
 * Returns 1 when stopped, 0 at the deadline, -1 on a multi error. */
static int
wait_drive(ph_engine_wait *w, int (*stop)(const ph_engine_wait *), double deadline, ph_error_t *err)
{
    for (;;) {
        int running = 0, left = 0, ms = 1000;
        CURLMcode mc = curl_multi_perform(w->multi, &running);
        CURLMsg *msg;

        if (mc != CURLM_OK)
            return ph_fail(err, 0, "%s: curl: %s", w->what, curl_multi_strerror(mc));
        while ((msg = curl_multi_info_read(w->multi, &left)) != NULL) {
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == w->curl) {
                w->done = 1;
                w->result = msg->data.result;
            }
        }
        if (stop(w) || w->done)
            return 1;
        if (deadline > 0) {
            double left_s = deadline - ph_engine_now_mono();

            if (left_s <= 0)
                return 0;
            if (left_s * 1000 < ms)
                ms = (int)(left_s * 1000) + 1;
        }
        mc = curl_multi_poll(w->multi, NULL, 0, ms, NULL);
        if (mc != CURLM_OK)
            return ph_fail(err, 0, "%s: curl: %s", w->what, curl_multi_strerror(mc));
    }
}

static int
stop_at_headers(const ph_engine_wait *w)
{
    return w->headers_done && is_2xx(w->status);
}

static int
stop_never(const ph_engine_wait *w)
{
    (void)w;
    return 0;
}

/* After the transfer ended: curl's or the Engine's failure, if any. */
static int
wait_check_done(ph_engine_wait *w, ph_error_t *err)
{
    if (w->result == CURLE_ABORTED_BY_CALLBACK && ph_engine_watch_error(w->e, &w->watch, w->what, err) < 0)
        return -1;
    if (w->result == CURLE_WRITE_ERROR && w->body.overflow)
        return ph_fail(err, 0, "%s: the Engine's answer exceeds %zu bytes", w->what, w->body.max);
    if (w->result != CURLE_OK)
        return ph_engine_transport_error(w->e, w->curl, w->errbuf, w->result, w->what, 0, err);
    if (!is_2xx(w->status))
        return ph_engine_http_error(w->e, w->what, w->status, w->body.data ? w->body.data : "", w->body.len, err);
    return 0;
}

static size_t
wait_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    size_t n = size * nmemb;

    return ph_engine_buf_append(ud, ptr, n) < 0 ? 0 : n;
}

int
ph_engine_container_wait_begin(ph_engine *e, const char *id, ph_engine_wait **out, ph_error_t *err)
{
    char what[300];
    ph_engine_req r = { .what = "wait for container `{}`", .method = "POST", .path = "/containers/{id}/wait",
                        .arg = { id }, .kind = "container id", .query = { { "condition", "not-running" } } };
    ph_cleanup_free char *url = NULL;
    ph_engine_wait *w = NULL;
    int rc;

    if (out)
        *out = NULL;
    ph_engine_req_what(&r, what, sizeof what);
    if (out == NULL)
        return ph_bad_input(err, "%s: no place for the wait", what);
    if ((url = ph_engine_req_url(e, &r, what, sizeof what, err)) == NULL)
        return -1;
    w = calloc(1, sizeof *w);
    if (w == NULL)
        return ph_fail(err, errno, "%s: allocate", what);
    w->e = e;
    w->body.max = ERR_BODY_MAX;
    snprintf(w->what, sizeof w->what, "%s", what);
    w->curl = curl_easy_init();
    w->multi = curl_multi_init();
    if (w->curl == NULL || w->multi == NULL) {
        ph_engine_wait_free(w);
        return ph_fail(err, ENOMEM, "%s: initialise curl", what);
    }
    curl_easy_setopt(w->curl, CURLOPT_URL, url);
    ph_engine_transport_setup(e, w->curl, w->errbuf);
    curl_easy_setopt(w->curl, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(w->curl, CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(w->curl, CURLOPT_HEADERFUNCTION, wait_header_cb);
    curl_easy_setopt(w->curl, CURLOPT_HEADERDATA, w);
    curl_easy_setopt(w->curl, CURLOPT_WRITEFUNCTION, wait_write_cb);
    curl_easy_setopt(w->curl, CURLOPT_WRITEDATA, &w->body);
    ph_engine_watch_setup(w->curl, &w->watch, 0);
    if (curl_multi_add_handle(w->multi, w->curl) != CURLM_OK) {
        ph_engine_wait_free(w);
        return ph_fail(err, 0, "%s: curl refused the transfer", what);
    }
    /* The signal the caller sends next is not inside the wait: detached. */
    w->stage = ph_engine_stage_begin(&r, PH_STAGE_DETACHED | PH_STAGE_CONCURRENT);
    rc = wait_drive(w, stop_at_headers, ph_engine_now_mono() + WAIT_BEGIN_TIMEOUT_S, err);
    if (rc < 0) {
        ph_engine_wait_free(w);
        return -1;
    }
    if (rc == 0) {
        ph_engine_wait_free(w);
        return ph_fail(err, 0, "%s: the Docker Engine at %s did not take the request within %ld s", what,
                       e->where, WAIT_BEGIN_TIMEOUT_S);
    }
    /* Done already: an error answer, a transport failure, or (possible
     * when the container had already stopped) the result itself. */
    if (w->done && wait_check_done(w, err) < 0) {
        ph_stage_fail(w->stage, err && *err ? (*err)->msg : "failed");
        ph_engine_wait_free(w);
        return -1;
    }
    *out = w;
    return 0;
}

int
ph_engine_container_wait_end(ph_engine_wait *w, long timeout_s, long *exit_code, int *timed_out, ph_error_t *err)
{
    json_t *resp = NULL;
    json_error_t je;
    int r, rc = -1;

    if (exit_code)
        *exit_code = -1;
    if (timed_out)
        *timed_out = 0;
    if (w == NULL)
        return 0;
    if (timed_out == NULL) {
        ph_bad_input(err, "%s: no place for the timed-out flag", w->what);
        goto out;
    }
    r = w->done ? 1 : wait_drive(w, stop_never, timeout_s > 0 ? ph_engine_now_mono() + (double)timeout_s : 0, err);
    if (r < 0)
        goto out;
    if (r == 0) {
        *timed_out = 1;
        rc = 0;
        goto out;
    }
    if (wait_check_done(w, err) < 0)
        goto out;
    resp = json_loadb(w->body.data ? w->body.data : "", w->body.len, 0, &je);
    if (resp == NULL) {
        ph_fail(err, 0, "%s: the Engine's answer is not JSON: %s", w->what, je.text);
        goto out;
    }
    rc = ph_engine_wait_result(w->what, resp, exit_code, err);
out:
    if (rc < 0)
        ph_stage_fail(w->stage, err && *err ? (*err)->msg : "failed");
    else if (*timed_out)
        ph_stage_attr(w->stage, "profharness.timed_out", "true");
    json_decref(resp);
    ph_engine_wait_free(w);
    return rc;
}
