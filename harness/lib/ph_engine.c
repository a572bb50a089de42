/* ph_engine.c - Docker Engine API client over libcurl (see ph_engine.h).
 *
 * One CURL easy handle per ph_engine, reused for connection reuse over the
 * unix socket.  Responses are collected into a buffer bounded by
 * PH_ENGINE_MAX_BODY; streaming calls hand chunks to a callback instead.
 * Errors: a transport failure becomes "cannot reach the Docker Engine at
 * ADDRESS: <curl's text>" with a hint; an HTTP error becomes "<what>: <the
 * Engine's JSON message>" with the status kept for callers (404, 304, 409).
 */
#include "ph_engine.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ph_log.h"

struct ph_engine {
    CURL *curl;
    char *host;          /* as given: unix:///... or tcp://... */
    char *socket_path;   /* for unix:// */
    char *base_url;      /* http://localhost or http://HOST:PORT */
    char api[16];        /* negotiated, "" before ping */
    char errbuf[CURL_ERROR_SIZE];
};

typedef struct buf {
    char *data;
    size_t len, cap, max;
    int overflow;
} buf;

static int curl_ready = 0;

static size_t
buf_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    buf *b = ud;
    size_t n = size * nmemb;

    if (b->len + n + 1 > b->max) {
        b->overflow = 1;
        return 0;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *d;

        while (cap < b->len + n + 1)
            cap *= 2;
        d = realloc(b->data, cap);
        if (d == NULL)
            return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

ph_engine *
ph_engine_new(ph_error_t *err)
{
    const char *host = getenv("DOCKER_HOST");
    ph_engine *e;

    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            ph_fail(err, 0, "initialise libcurl");
            return NULL;
        }
        curl_ready = 1;
    }
    if (host == NULL || host[0] == '\0')
        host = "unix:///var/run/docker.sock";
    e = calloc(1, sizeof *e);
    if (e == NULL) {
        ph_fail(err, errno, "allocate");
        return NULL;
    }
    e->host = strdup(host);
    if (strncmp(host, "unix://", 7) == 0 && host[7] != '\0') {
        e->socket_path = strdup(host + 7);
        e->base_url = strdup("http://localhost");
    } else if (strncmp(host, "tcp://", 6) == 0 && host[6] != '\0') {
        if (asprintf(&e->base_url, "http://%s", host + 6) < 0)
            e->base_url = NULL;
        if (e->base_url && e->base_url[strlen(e->base_url) - 1] == '/')
            e->base_url[strlen(e->base_url) - 1] = '\0';
    } else {
        ph_bad_input(err, "DOCKER_HOST=`%s`: expected unix:///PATH or tcp://HOST:PORT", host);
        ph_engine_free(e);
        return NULL;
    }
    e->curl = curl_easy_init();
    if (e->host == NULL || e->base_url == NULL || e->curl == NULL) {
        ph_fail(err, ENOMEM, "initialise the Engine client");
        ph_engine_free(e);
        return NULL;
    }
    return e;
}

void
ph_engine_free(ph_engine *e)
{
    if (e == NULL)
        return;
    if (e->curl)
        curl_easy_cleanup(e->curl);
    free(e->host);
    free(e->socket_path);
    free(e->base_url);
    free(e);
}

const char *
ph_engine_api_version(ph_engine *e)
{
    return e->api;
}

static void
prepare(ph_engine *e, const char *method, const char *url, long timeout_s)
{
    CURL *c = e->curl;

    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (e->socket_path)
        curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, e->socket_path);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, e->errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    e->errbuf[0] = '\0';
}

static int
transport_error(ph_engine *e, CURLcode rc, const char *what, ph_error_t *err)
{
    const char *why = e->errbuf[0] ? e->errbuf : curl_easy_strerror(rc);

    if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
        ph_fail(err, 0, "cannot reach the Docker Engine at %s: %s", e->host, why);
        return ph_error_hint(err, "is dockerd running? start one with scripts/engine-up.sh, or set DOCKER_HOST");
    }
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return ph_fail(err, 0, "%s: the Docker Engine at %s did not answer in time: %s", what, e->host, why);
    return ph_fail(err, 0, "%s: talking to the Docker Engine at %s: %s", what, e->host, why);
}

/* The Engine's error body is {"message": "..."}; fall back to the raw text. */
static int
http_error(const char *what, long status, const buf *b, ph_error_t *err)
{
    json_t *j = b->len ? json_loadb(b->data, b->len, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(j, "message"));
    int rc;

    if (msg != NULL)
        rc = ph_fail(err, 0, "%s: %s (HTTP %ld)", what, msg, status);
    else
        rc = ph_fail(err, 0, "%s: HTTP %ld %.200s", what, status, b->len ? b->data : "");
    json_decref(j);
    return rc;
}

static size_t
header_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    ph_engine *e = ud;
    size_t n = size * nmemb;

    if (n > 12 && strncasecmp(ptr, "API-Version:", 12) == 0) {
        const char *v = ptr + 12;
        size_t l;

        while (*v == ' ')
            v++;
        l = strcspn(v, "\r\n");
        if (l < sizeof e->api) {
            memcpy(e->api, v, l);
            e->api[l] = '\0';
        }
    }
    return n;
}

static int
version_less(const char *a, const char *b)
{
    int amaj = 0, amin = 0, bmaj = 0, bmin = 0;

    sscanf(a, "%d.%d", &amaj, &amin);
    sscanf(b, "%d.%d", &bmaj, &bmin);
    return amaj < bmaj || (amaj == bmaj && amin < bmin);
}

int
ph_engine_ping(ph_engine *e, ph_error_t *err)
{
    char url[1024];
    buf b = { .max = 4096 };
    long status = 0;
    CURLcode rc;

    snprintf(url, sizeof url, "%s/_ping", e->base_url);
    prepare(e, "GET", url, 15);
    e->api[0] = '\0';
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, buf_write_cb);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e->curl, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(e->curl, CURLOPT_HEADERDATA, e);
    rc = curl_easy_perform(e->curl);
    if (rc != CURLE_OK) {
        free(b.data);
        return transport_error(e, rc, "ping", err);
    }
    curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        http_error("ping the Docker Engine", status, &b, err);
        free(b.data);
        return -1;
    }
    free(b.data);
    if (e->api[0] == '\0' || !version_less(e->api, PH_ENGINE_MAX_API)) {
        if (e->api[0] != '\0' && version_less(e->api, "1.24"))
            return ph_fail(err, 0, "the Docker Engine at %s speaks API %s; profharness needs 1.24 or later",
                           e->host, e->api);
        snprintf(e->api, sizeof e->api, "%s", PH_ENGINE_MAX_API);
    }
    ph_debug("engine %s, API %s", e->host, e->api);
    return 0;
}

static int
ensure_pinged(ph_engine *e, ph_error_t *err)
{
    return e->api[0] ? 0 : ph_engine_ping(e, err);
}

static void
make_url(ph_engine *e, const char *path, char *url, size_t len)
{
    snprintf(url, len, "%s/v%s%s", e->base_url, e->api, path);
}

int
ph_engine_request_timeout(ph_engine *e, const char *method, const char *path, json_t *body,
                          long timeout_s, json_t **resp, long *http_status, ph_error_t *err)
{
    char url[4096], what[512];
    char *payload = NULL;
    struct curl_slist *hdrs = NULL;
    buf b = { .max = PH_ENGINE_MAX_BODY };
    long status = 0;
    CURLcode rc;
    int ret = -1;

    if (resp)
        *resp = NULL;
    if (http_status)
        *http_status = 0;
    if (ensure_pinged(e, err) < 0)
        return -1;
    snprintf(what, sizeof what, "%s %s", method, path);
    make_url(e, path, url, sizeof url);
    prepare(e, method, url, timeout_s);
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, buf_write_cb);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
    if (body != NULL) {
        payload = json_dumps(body, JSON_COMPACT);
        if (payload == NULL)
            return ph_fail(err, ENOMEM, "%s: encode the request", what);
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, payload);
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE, 0L);
    }
    rc = curl_easy_perform(e->curl);
    if (rc != CURLE_OK) {
        if (b.overflow)
            ph_fail(err, 0, "%s: the Engine's answer exceeds %u bytes", what, PH_ENGINE_MAX_BODY);
        else
            transport_error(e, rc, what, err);
        goto out;
    }
    curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
    if (http_status)
        *http_status = status;
    if (status < 200 || status >= 300) {
        http_error(what, status, &b, err);
        goto out;
    }
    if (resp && b.len > 0) {
        json_error_t je;

        *resp = json_loadb(b.data, b.len, 0, &je);
        if (*resp == NULL) {
            ph_fail(err, 0, "%s: the Engine's answer is not JSON: %s", what, je.text);
            goto out;
        }
    }
    ret = 0;
out:
    curl_slist_free_all(hdrs);
    free(payload);
    free(b.data);
    return ret;
}

int
ph_engine_request(ph_engine *e, const char *method, const char *path, json_t *body, json_t **resp,
                  long *http_status, ph_error_t *err)
{
    return ph_engine_request_timeout(e, method, path, body, 120, resp, http_status, err);
}

/* ---- streaming -------------------------------------------------------- */

typedef struct stream_ctx {
    ph_engine_read_cb read_cb;
    void *read_ud;
    ph_engine_data_cb data_cb;
    void *data_ud;
    int aborted;
    buf errbody; /* the body of a non-2xx answer, bounded */
    long status;
    CURL *curl;
} stream_ctx;

static size_t
stream_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    stream_ctx *s = ud;
    size_t n = size * nmemb;

    if (s->status == 0)
        curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status < 200 || s->status >= 300) {
        buf_write_cb(ptr, 1, n < 8192 ? n : 8192, &s->errbody);
        return n;
    }
    if (s->data_cb && s->data_cb(s->data_ud, ptr, n) < 0) {
        s->aborted = 1;
        return 0;
    }
    return n;
}

static size_t
stream_read_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    stream_ctx *s = ud;
    ssize_t n = s->read_cb(s->read_ud, ptr, size * nmemb);

    if (n < 0)
        return CURL_READFUNC_ABORT;
    return (size_t)n;
}

int
ph_engine_stream(ph_engine *e, const char *method, const char *path, const char *content_type,
                 ph_engine_read_cb body_read_cb, void *body_ud, long long body_len,
                 ph_engine_data_cb data_cb, void *data_ud, long timeout_s, long *http_status,
                 ph_error_t *err)
{
    char url[8192], what[512], ct[256];
    struct curl_slist *hdrs = NULL;
    stream_ctx s = { .read_cb = body_read_cb, .read_ud = body_ud, .data_cb = data_cb, .data_ud = data_ud,
                     .errbody = { .max = 8192 } };
    CURLcode rc;
    int ret = -1;

    if (http_status)
        *http_status = 0;
    if (ensure_pinged(e, err) < 0)
        return -1;
    snprintf(what, sizeof what, "%s %.200s", method, path);
    make_url(e, path, url, sizeof url);
    prepare(e, method, url, timeout_s);
    s.curl = e->curl;
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, stream_write_cb);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &s);
    if (content_type) {
        snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
        hdrs = curl_slist_append(hdrs, ct);
    }
    if (body_read_cb) {
        curl_easy_setopt(e->curl, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e->curl, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(e->curl, CURLOPT_READFUNCTION, stream_read_cb);
        curl_easy_setopt(e->curl, CURLOPT_READDATA, &s);
        if (body_len >= 0)
            curl_easy_setopt(e->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body_len);
        hdrs = curl_slist_append(hdrs, "Expect:");
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE, 0L);
    }
    curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdrs);
    rc = curl_easy_perform(e->curl);
    if (s.status == 0)
        curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &s.status);
    if (http_status)
        *http_status = s.status;
    if (s.aborted) {
        /* The callback made the error (err was handed to it by the caller). */
        if (err && *err == NULL)
            ph_fail(err, 0, "%s: aborted", what);
        goto out;
    }
    if (rc != CURLE_OK) {
        transport_error(e, rc, what, err);
        goto out;
    }
    if (s.status < 200 || s.status >= 300) {
        http_error(what, s.status, &s.errbody, err);
        goto out;
    }
    ret = 0;
out:
    curl_slist_free_all(hdrs);
    free(s.errbody.data);
    return ret;
}

/* ---- build ------------------------------------------------------------ */

typedef struct mem_reader {
    const char *data;
    size_t len, off;
} mem_reader;

static ssize_t
mem_read_cb(void *ud, char *out, size_t len)
{
    mem_reader *m = ud;
    size_t n = m->len - m->off < len ? m->len - m->off : len;

    memcpy(out, m->data + m->off, n);
    m->off += n;
    return (ssize_t)n;
}

#define PH_LINE_MAX (64u << 10)

typedef struct build_ctx {
    char line[PH_LINE_MAX];
    size_t len;
    ph_engine_line_cb progress;
    void *ud;
    char *error;      /* the first "error" line's text */
    char *image_id;   /* from {"aux":{"ID":...}} */
} build_ctx;

static void
build_line(build_ctx *b, const char *line, size_t len)
{
    json_t *j = json_loadb(line, len, 0, NULL);
    const char *s;

    if (j == NULL)
        return;
    if ((s = json_string_value(json_object_get(j, "stream"))) != NULL) {
        if (b->progress) {
            /* A "stream" value may hold several lines. */
            const char *p = s;
            while (*p) {
                size_t l = strcspn(p, "\n");
                char one[2048];

                snprintf(one, sizeof one, "%.*s", (int)(l < sizeof one - 1 ? l : sizeof one - 1), p);
                if (one[0])
                    b->progress(b->ud, one);
                p += l;
                if (*p == '\n')
                    p++;
            }
        }
    } else if ((s = json_string_value(json_object_get(j, "status"))) != NULL) {
        if (b->progress && json_object_get(j, "progressDetail") == NULL)
            b->progress(b->ud, s);
    }
    if ((s = json_string_value(json_object_get(j, "error"))) != NULL && b->error == NULL)
        b->error = strdup(s);
    if ((s = json_string_value(json_object_get(json_object_get(j, "aux"), "ID"))) != NULL) {
        free(b->image_id);
        b->image_id = strdup(s);
    }
    json_decref(j);
}

static int
build_data_cb(void *ud, const char *data, size_t len)
{
    build_ctx *b = ud;

    for (size_t i = 0; i < len; i++) {
        if (data[i] == '\n') {
            build_line(b, b->line, b->len);
            b->len = 0;
        } else if (b->len < sizeof b->line - 1) {
            b->line[b->len++] = data[i];
        }
        /* A longer line is truncated; it is progress text, not data. */
    }
    return 0;
}

static char *
url_escape(ph_engine *e, const char *s)
{
    char *x = curl_easy_escape(e->curl, s, 0);
    char *out = x ? strdup(x) : NULL;

    curl_free(x);
    return out;
}

int
ph_engine_build(ph_engine *e, const void *tar, size_t tar_len, const char *dockerfile, const char *tag,
                json_t *buildargs, json_t *labels, ph_engine_line_cb progress_cb, void *ud,
                char **image_id, ph_error_t *err)
{
    char path[8192];
    char *q_tag = NULL, *q_df = NULL, *q_args = NULL, *q_labels = NULL, *s_args = NULL, *s_labels = NULL;
    mem_reader m = { .data = tar, .len = tar_len };
    build_ctx *b;
    int rc = -1;

    if (ensure_pinged(e, err) < 0)
        return -1;
    b = calloc(1, sizeof *b);
    if (b == NULL)
        return ph_fail(err, errno, "allocate");
    b->progress = progress_cb;
    b->ud = ud;
    s_args = json_dumps(buildargs ? buildargs : json_object(), JSON_COMPACT);
    s_labels = json_dumps(labels ? labels : json_object(), JSON_COMPACT);
    q_tag = url_escape(e, tag);
    q_df = url_escape(e, dockerfile);
    q_args = s_args ? url_escape(e, s_args) : NULL;
    q_labels = s_labels ? url_escape(e, s_labels) : NULL;
    if (!q_tag || !q_df || !q_args || !q_labels) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    snprintf(path, sizeof path, "/build?t=%s&dockerfile=%s&buildargs=%s&labels=%s&rm=1&forcerm=1", q_tag, q_df,
             q_args, q_labels);
    if (ph_engine_stream(e, "POST", path, "application/x-tar", mem_read_cb, &m, (long long)tar_len,
                         build_data_cb, b, 3600, NULL, err) < 0) {
        ph_error_wrap(err, "build `%s`", tag);
        goto out;
    }
    if (b->len > 0)
        build_line(b, b->line, b->len);
    if (b->error != NULL) {
        ph_fail(err, 0, "build `%s`: %s", tag, b->error);
        goto out;
    }
    if (b->image_id == NULL) {
        json_t *info = NULL;
        int found = 0;

        if (ph_engine_image_inspect(e, tag, &info, &found, err) < 0)
            goto out;
        if (found)
            b->image_id = strdup(json_string_value(json_object_get(info, "Id")));
        json_decref(info);
        if (b->image_id == NULL) {
            ph_fail(err, 0, "build `%s`: the Engine reported no image", tag);
            goto out;
        }
    }
    if (image_id) {
        *image_id = b->image_id;
        b->image_id = NULL;
    }
    rc = 0;
out:
    free(q_tag); free(q_df); free(q_args); free(q_labels); free(s_args); free(s_labels);
    free(b->error);
    free(b->image_id);
    free(b);
    return rc;
}

int
ph_engine_archive_get(ph_engine *e, const char *id, const char *path, ph_engine_data_cb data_cb, void *ud,
                      ph_error_t *err)
{
    char p[4096];
    char *q = NULL;
    long status = 0;
    int rc;

    if (ensure_pinged(e, err) < 0)
        return -1;
    q = url_escape(e, path);
    if (q == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    snprintf(p, sizeof p, "/containers/%s/archive?path=%s", id, q);
    free(q);
    rc = ph_engine_stream(e, "GET", p, NULL, NULL, NULL, -1, data_cb, ud, 3600, &status, err);
    if (rc < 0 && status == 404) {
        ph_error_free(err);
        return ph_fail(err, 0, "container %.12s has no `%s` (the profiler wrote nothing there)", id, path);
    }
    return rc;
}

/* ---- wrappers --------------------------------------------------------- */

/* GET PATH; a 404 is "not found", not an error. */
static int
inspect(ph_engine *e, const char *path, json_t **out, int *found, ph_error_t *err)
{
    long st = 0;
    int rc;

    *found = 0;
    *out = NULL;
    rc = ph_engine_request(e, "GET", path, NULL, out, &st, err);
    if (rc < 0 && st == 404) {
        ph_error_free(err);
        return 0;
    }
    if (rc == 0)
        *found = 1;
    return rc;
}

int
ph_engine_image_inspect(ph_engine *e, const char *name, json_t **out, int *found, ph_error_t *err)
{
    char p[1024];
    char *q;

    if (ensure_pinged(e, err) < 0)
        return -1;
    q = url_escape(e, name);
    if (q == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    snprintf(p, sizeof p, "/images/%s/json", q);
    free(q);
    return inspect(e, p, out, found, err);
}

int
ph_engine_container_create(ph_engine *e, const char *name, json_t *config, char **id, ph_error_t *err)
{
    char p[1024];
    char *q = NULL;
    json_t *resp = NULL;
    long st = 0;

    q = name ? url_escape(e, name) : NULL;
    snprintf(p, sizeof p, "/containers/create%s%s", q ? "?name=" : "", q ? q : "");
    free(q);
    if (ph_engine_request(e, "POST", p, config, &resp, &st, err) < 0)
        return ph_error_wrap(err, "create container `%s`", name ? name : "");
    *id = strdup(json_string_value(json_object_get(resp, "Id")) ? json_string_value(json_object_get(resp, "Id")) : "");
    json_decref(resp);
    return *id && (*id)[0] ? 0 : ph_fail(err, 0, "create container `%s`: no id in the answer", name);
}

int
ph_engine_container_start(ph_engine *e, const char *id, ph_error_t *err)
{
    char p[512];
    long st = 0;

    snprintf(p, sizeof p, "/containers/%s/start", id);
    if (ph_engine_request(e, "POST", p, NULL, NULL, &st, err) < 0)
        return st == 304 ? (ph_error_free(err), 0) : -1;
    return 0;
}

int
ph_engine_container_kill(ph_engine *e, const char *id, const char *signal, ph_error_t *err)
{
    char p[512];
    long st = 0;

    snprintf(p, sizeof p, "/containers/%s/kill?signal=%s", id, signal);
    return ph_engine_request(e, "POST", p, NULL, NULL, &st, err);
}

int
ph_engine_container_stop(ph_engine *e, const char *id, long timeout_s, ph_error_t *err)
{
    char p[512];
    long st = 0;

    snprintf(p, sizeof p, "/containers/%s/stop?t=%ld", id, timeout_s);
    if (ph_engine_request_timeout(e, "POST", p, NULL, timeout_s + 60, NULL, &st, err) < 0)
        return st == 304 ? (ph_error_free(err), 0) : -1;
    return 0;
}

int
ph_engine_container_wait(ph_engine *e, const char *id, long timeout_s, long *exit_code, int *timed_out,
                         ph_error_t *err)
{
    char p[512];
    json_t *resp = NULL;
    long st = 0;
    int rc;

    *timed_out = 0;
    snprintf(p, sizeof p, "/containers/%s/wait?condition=not-running", id);
    rc = ph_engine_request_timeout(e, "POST", p, NULL, timeout_s, &resp, &st, err);
    if (rc < 0 && st == 0 && *err && strstr((*err)->msg, "did not answer in time")) {
        ph_error_free(err);
        *timed_out = 1;
        return 0;
    }
    if (rc == 0 && exit_code)
        *exit_code = (long)json_integer_value(json_object_get(resp, "StatusCode"));
    json_decref(resp);
    return rc;
}

int
ph_engine_container_remove(ph_engine *e, const char *id, int force, ph_error_t *err)
{
    char p[512];
    long st = 0;

    if (id == NULL)
        return 0;
    snprintf(p, sizeof p, "/containers/%s?v=1%s", id, force ? "&force=1" : "");
    if (ph_engine_request(e, "DELETE", p, NULL, NULL, &st, err) < 0)
        return st == 404 ? (ph_error_free(err), 0) : -1;
    return 0;
}

int
ph_engine_container_inspect(ph_engine *e, const char *id, json_t **out, int *found, ph_error_t *err)
{
    char p[512];

    snprintf(p, sizeof p, "/containers/%s/json", id);
    return inspect(e, p, out, found, err);
}

int
ph_engine_containers_by_label(ph_engine *e, const char *const *labels, size_t n, json_t **out_array,
                              ph_error_t *err)
{
    json_t *filters = json_object(), *arr = json_array();
    char *s = NULL, *q = NULL, p[4096];
    int rc;

    *out_array = NULL;
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_string(labels[i]));
    json_object_set_new(filters, "label", arr);
    s = json_dumps(filters, JSON_COMPACT);
    json_decref(filters);
    if (ensure_pinged(e, err) < 0) {
        free(s);
        return -1;
    }
    q = s ? url_escape(e, s) : NULL;
    free(s);
    if (q == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    snprintf(p, sizeof p, "/containers/json?all=1&filters=%s", q);
    free(q);
    rc = ph_engine_request(e, "GET", p, NULL, out_array, NULL, err);
    if (rc == 0 && *out_array == NULL)
        *out_array = json_array();
    return rc;
}

static int
ensure_named(ph_engine *e, const char *kind, const char *name, json_t *labels, ph_error_t *err)
{
    char p[1024];
    json_t *resp = NULL, *body;
    long st = 0;
    char *q = url_escape(e, name);

    if (q == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    snprintf(p, sizeof p, "/%s/%s", kind, q);
    free(q);
    if (ph_engine_request(e, "GET", p, NULL, &resp, &st, err) == 0) {
        json_decref(resp);
        return 0;
    }
    if (st != 404)
        return -1;
    ph_error_free(err);
    body = json_pack("{s:s, s:O}", "Name", name, "Labels", labels ? labels : json_object());
    snprintf(p, sizeof p, "/%s/create", kind);
    if (ph_engine_request(e, "POST", p, body, NULL, &st, err) < 0 && st != 409) {
        json_decref(body);
        return ph_error_wrap(err, "create %s `%s`", kind, name);
    }
    ph_error_free(err);
    json_decref(body);
    return 0;
}

int
ph_engine_network_ensure(ph_engine *e, const char *name, json_t *labels, ph_error_t *err)
{
    return ensure_named(e, "networks", name, labels, err);
}

int
ph_engine_volume_ensure(ph_engine *e, const char *name, json_t *labels, ph_error_t *err)
{
    return ensure_named(e, "volumes", name, labels, err);
}

/* Logs come multiplexed (8-byte header: stream, 0, 0, 0, big-endian size)
 * when the container has no TTY. */
typedef struct logs_ctx {
    int fd;
    unsigned char hdr[8];
    size_t hdr_len;
    size_t remaining;
    int raw;     /* decided on the first byte: not 0/1/2 means a TTY stream */
    int decided;
} logs_ctx;

static int
write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int
logs_cb(void *ud, const char *data, size_t len)
{
    logs_ctx *l = ud;

    if (!l->decided && len > 0) {
        l->raw = (unsigned char)data[0] > 2;
        l->decided = 1;
    }
    if (l->raw)
        return write_all(l->fd, data, len);
    while (len > 0) {
        if (l->remaining == 0) {
            size_t take = 8 - l->hdr_len < len ? 8 - l->hdr_len : len;

            memcpy(l->hdr + l->hdr_len, data, take);
            l->hdr_len += take;
            data += take;
            len -= take;
            if (l->hdr_len == 8) {
                l->remaining = ((size_t)l->hdr[4] << 24) | ((size_t)l->hdr[5] << 16) | ((size_t)l->hdr[6] << 8) |
                               l->hdr[7];
                l->hdr_len = 0;
            }
        } else {
            size_t take = l->remaining < len ? l->remaining : len;

            if (write_all(l->fd, data, take) < 0)
                return -1;
            data += take;
            len -= take;
            l->remaining -= take;
        }
    }
    return 0;
}

int
ph_engine_container_logs(ph_engine *e, const char *id, int follow, long tail, int fd, ph_error_t *err)
{
    char p[512], t[32];
    logs_ctx l = { .fd = fd };

    if (tail >= 0)
        snprintf(t, sizeof t, "%ld", tail);
    else
        snprintf(t, sizeof t, "all");
    snprintf(p, sizeof p, "/containers/%s/logs?stdout=1&stderr=1&follow=%d&tail=%s", id, follow ? 1 : 0, t);
    return ph_engine_stream(e, "GET", p, NULL, NULL, NULL, -1, logs_cb, &l, 0, NULL, err);
}
