/* ph_engine.c - the Docker Engine API client over libcurl (see ph_engine.h).
 *
 * Design.  One CURL easy handle per ph_engine, reset before each request
 * but never closed, so the connection to the Engine (a unix socket or TCP)
 * is reused across calls.  Every request is synchronous and has a timeout
 * (ph_engine_request: DEFAULT_TIMEOUT_S); only a followed log stream and
 * ph_engine_stream with timeout_s = 0 may run unbounded, by the caller's
 * choice.  The API version is negotiated lazily: the first call pings, and
 * every path is then prefixed with /v<version>.
 *
 * Memory is bounded everywhere: buffered answers by e->max_body (default
 * PH_ENGINE_MAX_BODY), error bodies of streamed calls by ERR_BODY_MAX, a
 * build's JSON lines by LINE_MAX and its progress text by PROGRESS_MAX, and
 * URL paths by PATH_MAX_LEN.  Everything taken from the caller that goes
 * into a URL (ids, names, paths, JSON filters) is escaped with
 * curl_easy_escape.
 *
 * Errors are made where curl or the Engine says no, in three shapes:
 *  - transport: "cannot reach the Docker Engine at ADDRESS: <curl's words>
 *    (<errno text>)" with a hint naming engine-up.sh and DOCKER_HOST, or for
 *    other curl failures "<what>: talking to the Docker Engine at ADDRESS:
 *    <curl's error buffer>";
 *  - HTTP: "<what>: <the Engine's JSON message>", *http_status kept so that
 *    callers can treat 304/404/409 as answers rather than failures;
 *  - our own limits (body too large, malformed streams).
 * "<what>" names the attempt in the caller's terms ("create container `x`")
 * rather than the URL.  Nothing is printed and nothing exits.
 *
 * The race-free wait (ph_engine_container_wait_begin/_end) uses a second easy
 * handle driven by a curl multi handle, so that the wait request is
 * registered by the Engine before the caller signals the container; see the
 * comment above wait_header_cb for why the response headers prove that.
 */
#include "ph_engine.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ph_log.h"
#include "ph_util.h"

#define DEFAULT_HOST "unix:///var/run/docker.sock"
/* /containers/{id}/wait?condition=not-running and the immediate header
 * flush that the race-free wait relies on both came with API 1.30. */
#define MIN_API_MAJOR 1
#define MIN_API_MINOR 30
#define DEFAULT_TIMEOUT_S 120L
#define PING_TIMEOUT_S 15L
#define CONNECT_TIMEOUT_S 10L
#define BUILD_TIMEOUT_S 3600L
#define ARCHIVE_TIMEOUT_S 3600L
#define LOGS_TIMEOUT_S 600L
#define WAIT_BEGIN_TIMEOUT_S 30L
#define ERR_BODY_MAX (64u << 10)    /* a non-2xx answer of a streamed call */
#define PING_BODY_MAX 4096u
#define PATH_MAX_LEN (64u << 10)    /* build args and labels travel in the URL */
#define LINE_MAX_LEN (256u << 10)   /* one JSON line of a build's answer */
#define PROGRESS_MAX 4096u          /* one line of "stream" text */
#define NAME_MAX_LEN 4096u          /* ids, names, container paths */

#define ENGINE_HINT "is dockerd running? start one with scripts/engine-up.sh, or set DOCKER_HOST"

struct ph_engine {
    CURL *curl;
    char *host;        /* DOCKER_HOST as given, for messages */
    char *socket_path; /* unix:// only */
    char *base_url;    /* http://localhost or http://HOST:PORT */
    char api[16];      /* negotiated version, "" until the first ping */
    size_t max_body;
    char errbuf[CURL_ERROR_SIZE];
};

/* ---- small helpers ----------------------------------------------------- */

static void
curl_freep(char **p)
{
    curl_free(*p);
}
#define cleanup_curl_free __attribute__((cleanup(curl_freep)))

/* jansson's own json_decrefp (what json_auto_t uses). */
#define cleanup_json __attribute__((cleanup(json_decrefp)))

static void
slist_freep(struct curl_slist **l)
{
    curl_slist_free_all(*l);
}
#define cleanup_slist __attribute__((cleanup(slist_freep)))

/* curl_global_init is not thread-safe; ph_engine_new may be called from
 * several threads (one engine each), so it runs once. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void
curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* A growable buffer that refuses to pass MAX (and says so). */
typedef struct buf {
    char *data;
    size_t len, cap, max;
    int overflow, oom;
} buf;

static int
buf_append(buf *b, const char *p, size_t n)
{
    if (n > b->max || b->len > b->max - n) {
        b->overflow = 1;
        return -1;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *d;

        while (cap < b->len + n + 1)
            cap *= 2;
        d = realloc(b->data, cap);
        if (d == NULL) {
            b->oom = 1;
            return -1;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

static size_t
buf_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    size_t n = size * nmemb;

    return buf_append(ud, ptr, n) < 0 ? 0 : n;
}

/* malloc'd printf bounded by PATH_MAX_LEN: URL paths carry caller data. */
static char *path_fmt(ph_error_t *err, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static char *
path_fmt(ph_error_t *err, const char *what, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        ph_fail(err, ENOMEM, "%s: build the request path", what);
        return NULL;
    }
    if ((size_t)n > PATH_MAX_LEN) {
        free(s);
        ph_bad_input(err, "%s: the request path would be %d bytes (more than %u)", what, n, PATH_MAX_LEN);
        return NULL;
    }
    return s;
}

static int
check_engine(const ph_engine *e, const char *what, ph_error_t *err)
{
    if (e == NULL || e->curl == NULL)
        return ph_bad_input(err, "%s: no Engine client (NULL)", what);
    return 0;
}

/* Ids, names and paths: present, non-empty, of sane length, no NUL games. */
static int
check_str(const char *s, const char *what, const char *kind, ph_error_t *err)
{
    if (s == NULL || s[0] == '\0')
        return ph_bad_input(err, "%s: empty %s", what, kind);
    if (strlen(s) > NAME_MAX_LEN)
        return ph_bad_input(err, "%s: %s longer than %u bytes", what, kind, NAME_MAX_LEN);
    return 0;
}

static char *
escape(ph_engine *e, const char *s)
{
    return curl_easy_escape(e->curl, s, 0);
}

static int
is_2xx(long status)
{
    return status >= 200 && status < 300;
}

/* ---- construction ------------------------------------------------------ */

ph_engine *
ph_engine_new(ph_error_t *err)
{
    const char *host = getenv("DOCKER_HOST");
    ph_engine *e = NULL;

    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK) {
        ph_fail(err, 0, "initialise libcurl: %s", curl_easy_strerror(curl_init_rc));
        return NULL;
    }
    if (host == NULL || host[0] == '\0')
        host = DEFAULT_HOST;
    e = calloc(1, sizeof *e);
    if (e == NULL) {
        ph_fail(err, errno, "allocate the Engine client");
        return NULL;
    }
    e->max_body = PH_ENGINE_MAX_BODY;
    e->host = strdup(host);
    if (strncmp(host, "unix://", 7) == 0 && host[7] == '/') {
        e->socket_path = strdup(host + 7);
        /* The host part is ignored over a unix socket; the Engine wants one. */
        e->base_url = strdup("http://localhost");
    } else if (strncmp(host, "tcp://", 6) == 0 && host[6] != '\0' && host[6] != '/' &&
               strchr(host + 6, '@') == NULL && strlen(host) < 512) {
        const char *hp = host + 6;
        int l = (int)strlen(hp);
        int has_port;

        /* tcp://host:port means plain HTTP (no TLS: DOCKER_TLS_VERIFY is
         * not supported); a trailing slash is tolerated, and a missing port
         * is the Engine's plain-HTTP default, 2375, as for the docker CLI. */
        if (hp[l - 1] == '/')
            l--;
        has_port = hp[0] == '[' ? memmem(hp, (size_t)l, "]:", 2) != NULL : memchr(hp, ':', (size_t)l) != NULL;
        if (asprintf(&e->base_url, "http://%.*s%s", l, hp, has_port ? "" : ":2375") < 0)
            e->base_url = NULL;
    } else {
        ph_bad_input(err, "DOCKER_HOST=`%s`: expected unix:///PATH or tcp://HOST:PORT", host);
        ph_engine_free(e);
        return NULL;
    }
    e->curl = curl_easy_init();
    if (e->host == NULL || e->base_url == NULL || e->curl == NULL ||
        (strncmp(host, "unix://", 7) == 0 && e->socket_path == NULL)) {
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
    return e ? e->api : "";
}

void
ph_engine_set_max_body(ph_engine *e, size_t max)
{
    if (e)
        e->max_body = max ? max : PH_ENGINE_MAX_BODY;
}

/* ---- errors ------------------------------------------------------------ */

/* WHAT may be NULL (the ping: "cannot reach" needs no more context). */
static int
transport_error(ph_engine *e, CURL *c, const char *errbuf, CURLcode rc, const char *what, long timeout_s,
                ph_error_t *err)
{
    const char *why = errbuf && errbuf[0] ? errbuf : curl_easy_strerror(rc);
    long os = 0;

    curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os);
    if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
        /* curl's error buffer says "Failed to connect to localhost port 80"
         * even over a unix socket; its short text plus errno is truer. */
        char detail[160] = "";

        if (os != 0)
            snprintf(detail, sizeof detail, " (%s)", strerror((int)os));
        ph_fail(err, 0, "%s%scannot reach the Docker Engine at %s: %s%s", what ? what : "", what ? ": " : "",
                e->host, curl_easy_strerror(rc), detail);
        if (os == EACCES)
            return ph_error_hint(err, "no permission on the Engine's socket: run as root or join the docker group, "
                                      "or set DOCKER_HOST");
        return ph_error_hint(err, ENGINE_HINT);
    }
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return ph_fail(err, 0, "%s: the Docker Engine at %s did not finish within %ld s", what ? what : "request",
                       e->host, timeout_s);
    return ph_fail(err, 0, "%s: talking to the Docker Engine at %s: %s", what ? what : "request", e->host, why);
}

/* The Engine's error body is {"message": "..."}; anything else is shown raw,
 * trimmed and shortened (a proxy's HTML page is no error message). */
static int
http_error(const char *what, long status, const char *body, size_t len, ph_error_t *err)
{
    cleanup_json json_t *j = len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(j, "message"));

    if (msg != NULL && msg[0] != '\0') {
        size_t l = strlen(msg);

        while (l > 0 && (msg[l - 1] == '\n' || msg[l - 1] == '\r'))
            l--;
        return ph_fail(err, 0, "%s: %.*s", what, (int)l, msg);
    }
    while (len > 0 && (body[len - 1] == '\n' || body[len - 1] == '\r' || body[len - 1] == ' '))
        len--;
    if (len > 0)
        return ph_fail(err, 0, "%s: the Engine answered HTTP %ld: %.*s", what, status, (int)(len < 300 ? len : 300),
                       body);
    return ph_fail(err, 0, "%s: the Engine answered HTTP %ld", what, status);
}

/* ---- requests ---------------------------------------------------------- */

/* Reset the shared handle and point it at PATH (already versioned, or
 * unversioned for /_ping).  curl copies the URL, so it is freed here. */
static int
prepare(ph_engine *e, const char *what, const char *method, const char *path, int versioned, long timeout_s,
        ph_error_t *err)
{
    CURL *c = e->curl;
    ph_cleanup_free char *url = NULL;

    if (versioned)
        url = path_fmt(err, what, "%s/v%s%s", e->base_url, e->api, path);
    else
        url = path_fmt(err, what, "%s%s", e->base_url, path);
    if (url == NULL)
        return -1;
    curl_easy_reset(c);
    e->errbuf[0] = '\0';
    if (curl_easy_setopt(c, CURLOPT_URL, url) != CURLE_OK)
        return ph_fail(err, 0, "%s: curl refused the URL `%s`", what, url);
    if (e->socket_path)
        curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, e->socket_path);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, e->errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM games in a supervisor */
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s > 0 ? timeout_s : 0L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    return 0;
}

static int
check_method(const char *method, const char *what, ph_error_t *err)
{
    static const char *const ok[] = { "GET", "POST", "PUT", "DELETE", "HEAD" };

    if (method == NULL)
        return ph_bad_input(err, "%s: no HTTP method", what);
    for (size_t i = 0; i < PH_ARRAY_LEN(ok); i++)
        if (strcmp(method, ok[i]) == 0)
            return 0;
    return ph_bad_input(err, "%s: unsupported HTTP method `%s`", what, method);
}

static size_t
ping_header_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    char *api = ud; /* 16 bytes */
    size_t n = size * nmemb;

    /* Header data is not NUL-terminated: look at a bounded copy. */
    if (n > 12 && n < 64 && strncasecmp(ptr, "API-Version:", 12) == 0) {
        char line[64];
        const char *v = line + 12;
        size_t l;

        memcpy(line, ptr, n);
        line[n] = '\0';
        while (*v == ' ' || *v == '\t')
            v++;
        l = strcspn(v, "\r\n");
        if (l > 0 && l < 16) {
            memcpy(api, v, l);
            api[l] = '\0';
        }
    }
    return n;
}

/* "1.41" -> 1, 41; 0 on anything else. */
static int
parse_version(const char *v, int *maj, int *min)
{
    char tail;

    return sscanf(v, "%d.%d%c", maj, min, &tail) == 2 && *maj >= 0 && *min >= 0;
}

int
ph_engine_ping(ph_engine *e, ph_error_t *err)
{
    buf b = { .max = PING_BODY_MAX };
    char server[16] = "";
    int smaj, smin, mmaj, mmin;
    long status = 0;
    CURLcode rc;

    if (check_engine(e, "ping the Docker Engine", err) < 0)
        return -1;
    if (prepare(e, "ping the Docker Engine", "GET", "/_ping", 0, PING_TIMEOUT_S, err) < 0)
        return -1;
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, buf_write_cb);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e->curl, CURLOPT_HEADERFUNCTION, ping_header_cb);
    curl_easy_setopt(e->curl, CURLOPT_HEADERDATA, server);
    rc = curl_easy_perform(e->curl);
    if (rc != CURLE_OK) {
        free(b.data);
        if (rc == CURLE_WRITE_ERROR && b.overflow)
            return ph_fail(err, 0, "ping the Docker Engine at %s: the answer exceeds %u bytes; is that an Engine?",
                           e->host, PING_BODY_MAX);
        if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
            return transport_error(e, e->curl, e->errbuf, rc, NULL, PING_TIMEOUT_S, err);
        transport_error(e, e->curl, e->errbuf, rc, "ping the Docker Engine", PING_TIMEOUT_S, err);
        return ph_error_hint(err, ENGINE_HINT);
    }
    curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        char what[600];

        snprintf(what, sizeof what, "ping the Docker Engine at %s", e->host);
        http_error(what, status, b.data ? b.data : "", b.len, err);
        free(b.data);
        return ph_error_hint(err, "does DOCKER_HOST point at a Docker Engine?");
    }
    free(b.data);
    parse_version(PH_ENGINE_MAX_API, &mmaj, &mmin);
    if (server[0] == '\0' || !parse_version(server, &smaj, &smin)) {
        /* Engines have sent API-Version since 1.25; assume our maximum. */
        ph_debug("engine %s sent no usable API-Version (`%s`); using %s", e->host, server, PH_ENGINE_MAX_API);
        snprintf(e->api, sizeof e->api, "%s", PH_ENGINE_MAX_API);
        return 0;
    }
    if (smaj < MIN_API_MAJOR || (smaj == MIN_API_MAJOR && smin < MIN_API_MINOR))
        return ph_fail(err, 0, "the Docker Engine at %s speaks API %s; profharness needs %d.%d or later", e->host,
                       server, MIN_API_MAJOR, MIN_API_MINOR);
    if (smaj < mmaj || (smaj == mmaj && smin < mmin))
        snprintf(e->api, sizeof e->api, "%d.%d", smaj, smin);
    else
        snprintf(e->api, sizeof e->api, "%s", PH_ENGINE_MAX_API);
    ph_debug("engine %s: server API %s, using %s", e->host, server, e->api);
    return 0;
}

static int
ensure_pinged(ph_engine *e, ph_error_t *err)
{
    return e->api[0] ? 0 : ph_engine_ping(e, err);
}

/* The one buffered JSON call.  TIMED_OUT non-NULL: a timeout is an answer
 * (*timed_out = 1, return 0), not an error. */
static int
json_call(ph_engine *e, const char *what, const char *method, const char *path, json_t *body, long timeout_s,
          json_t **resp, long *http_status, int *timed_out, ph_error_t *err)
{
    ph_cleanup_free char *payload = NULL;
    cleanup_slist struct curl_slist *hdrs = NULL;
    buf b = { .max = e->max_body };
    long status = 0;
    CURLcode rc;
    int ret = -1;

    if (resp)
        *resp = NULL;
    if (http_status)
        *http_status = 0;
    if (timed_out)
        *timed_out = 0;
    if (ensure_pinged(e, err) < 0)
        return -1;
    if (prepare(e, what, method, path, 1, timeout_s, err) < 0)
        return -1;
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, buf_write_cb);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
    if (body != NULL) {
        payload = json_dumps(body, JSON_COMPACT);
        if (payload == NULL)
            return ph_fail(err, ENOMEM, "%s: encode the request as JSON", what);
        hdrs = curl_slist_append(NULL, "Content-Type: application/json");
        if (hdrs == NULL)
            return ph_fail(err, ENOMEM, "%s: allocate", what);
        curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, payload);
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(payload));
    } else if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE, 0L);
    }
    rc = curl_easy_perform(e->curl);
    curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
    if (http_status)
        *http_status = status;
    if (rc != CURLE_OK) {
        if (rc == CURLE_OPERATION_TIMEDOUT && timed_out) {
            *timed_out = 1;
            ret = 0;
        } else if (rc == CURLE_WRITE_ERROR && b.overflow) {
            ph_fail(err, 0, "%s: the Engine's answer exceeds %zu bytes", what, e->max_body);
        } else if (rc == CURLE_WRITE_ERROR && b.oom) {
            ph_fail(err, ENOMEM, "%s: buffer the Engine's answer", what);
        } else {
            transport_error(e, e->curl, e->errbuf, rc, what, timeout_s, err);
        }
        goto out;
    }
    if (!is_2xx(status)) {
        http_error(what, status, b.data ? b.data : "", b.len, err);
        goto out;
    }
    if (resp && b.len > 0) {
        json_error_t je;

        *resp = json_loadb(b.data, b.len, 0, &je);
        if (*resp == NULL) {
            ph_fail(err, 0, "%s: the Engine's answer is not JSON: %s (at byte %d)", what, je.text, je.position);
            goto out;
        }
    }
    ret = 0;
out:
    free(b.data);
    return ret;
}

int
ph_engine_request_timeout(ph_engine *e, const char *method, const char *path, json_t *body, long timeout_s,
                          json_t **resp, long *http_status, ph_error_t *err)
{
    char what[300];

    if (resp)
        *resp = NULL;
    if (http_status)
        *http_status = 0;
    snprintf(what, sizeof what, "%s %.200s", method ? method : "?", path ? path : "?");
    if (check_engine(e, what, err) < 0 || check_method(method, what, err) < 0)
        return -1;
    if (path == NULL || path[0] != '/')
        return ph_bad_input(err, "%s: the path must start with `/`", what);
    return json_call(e, what, method, path, body, timeout_s, resp, http_status, NULL, err);
}

int
ph_engine_request(ph_engine *e, const char *method, const char *path, json_t *body, json_t **resp,
                  long *http_status, ph_error_t *err)
{
    return ph_engine_request_timeout(e, method, path, body, DEFAULT_TIMEOUT_S, resp, http_status, err);
}

/* ---- streaming --------------------------------------------------------- */

typedef struct stream_ctx {
    CURL *curl;
    ph_engine_read_cb read_cb;
    void *read_ud;
    ph_engine_data_cb data_cb;
    void *data_ud;
    long status;
    int data_aborted, read_failed;
    buf errbody; /* the body of a non-2xx answer, bounded */
} stream_ctx;

static size_t
stream_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    stream_ctx *s = ud;
    size_t n = size * nmemb;

    if (s->status == 0)
        curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
    if (!is_2xx(s->status)) {
        /* Keep what fits of an error body; the rest is noise. */
        size_t room = s->errbody.max - s->errbody.len;

        buf_append(&s->errbody, ptr, n < room ? n : room);
        return n;
    }
    if (s->data_cb && s->data_cb(s->data_ud, ptr, n) < 0) {
        s->data_aborted = 1;
        return 0;
    }
    return n;
}

static size_t
stream_read_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    stream_ctx *s = ud;
    size_t want = size * nmemb;
    ssize_t n = s->read_cb(s->read_ud, ptr, want);

    if (n < 0 || (size_t)n > want) {
        s->read_failed = 1;
        return CURL_READFUNC_ABORT;
    }
    return (size_t)n;
}

static int
stream_call(ph_engine *e, const char *what, const char *method, const char *path, const char *content_type,
            ph_engine_read_cb body_read_cb, void *body_ud, long long body_len, ph_engine_data_cb data_cb,
            void *data_ud, long timeout_s, long *http_status, ph_error_t *err)
{
    cleanup_slist struct curl_slist *hdrs = NULL;
    stream_ctx s = { .read_cb = body_read_cb, .read_ud = body_ud, .data_cb = data_cb, .data_ud = data_ud,
                     .errbody = { .max = ERR_BODY_MAX } };
    CURLcode rc;
    int ret = -1;

    if (http_status)
        *http_status = 0;
    if (ensure_pinged(e, err) < 0)
        return -1;
    if (prepare(e, what, method, path, 1, timeout_s, err) < 0)
        return -1;
    s.curl = e->curl;
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, stream_write_cb);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &s);
    if (content_type) {
        char ct[256];
        struct curl_slist *l;

        if (strlen(content_type) > 200 || strpbrk(content_type, "\r\n"))
            return ph_bad_input(err, "%s: bad content type `%.200s`", what, content_type);
        snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
        if ((l = curl_slist_append(hdrs, ct)) == NULL)
            return ph_fail(err, ENOMEM, "%s: allocate", what);
        hdrs = l;
    }
    if (body_read_cb) {
        struct curl_slist *l;

        /* UPLOAD makes it a PUT; CUSTOMREQUEST (set in prepare) renames it. */
        curl_easy_setopt(e->curl, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e->curl, CURLOPT_READFUNCTION, stream_read_cb);
        curl_easy_setopt(e->curl, CURLOPT_READDATA, &s);
        if (body_len >= 0) {
            curl_easy_setopt(e->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body_len);
        } else {
            if ((l = curl_slist_append(hdrs, "Transfer-Encoding: chunked")) == NULL)
                return ph_fail(err, ENOMEM, "%s: allocate", what);
            hdrs = l;
        }
        /* The Engine does not send 100 Continue; don't wait a second for it. */
        if ((l = curl_slist_append(hdrs, "Expect:")) == NULL)
            return ph_fail(err, ENOMEM, "%s: allocate", what);
        hdrs = l;
    } else if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e->curl, CURLOPT_POSTFIELDSIZE, 0L);
    }
    if (hdrs)
        curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdrs);
    rc = curl_easy_perform(e->curl);
    if (s.status == 0)
        curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &s.status);
    if (http_status)
        *http_status = s.status;
    if (s.data_aborted) {
        /* The callback may have made the error itself (callers hand it
         * their err through the user data); keep theirs if so. */
        ph_fail(err, 0, "%s: the data callback gave up", what);
        goto out;
    }
    if (s.read_failed) {
        ph_fail(err, 0, "%s: reading the request body failed", what);
        goto out;
    }
    if (rc != CURLE_OK && (s.status == 0 || is_2xx(s.status))) {
        transport_error(e, e->curl, e->errbuf, rc, what, timeout_s, err);
        goto out;
    }
    if (!is_2xx(s.status)) {
        /* The Engine may answer an error before reading the whole upload;
         * its message matters more than curl's complaint about that. */
        http_error(what, s.status, s.errbody.data ? s.errbody.data : "", s.errbody.len, err);
        goto out;
    }
    ret = 0;
out:
    free(s.errbody.data);
    return ret;
}

int
ph_engine_stream(ph_engine *e, const char *method, const char *path, const char *content_type,
                 ph_engine_read_cb body_read_cb, void *body_ud, long long body_len, ph_engine_data_cb data_cb,
                 void *data_ud, long timeout_s, long *http_status, ph_error_t *err)
{
    char what[300];

    if (http_status)
        *http_status = 0;
    snprintf(what, sizeof what, "%s %.200s", method ? method : "?", path ? path : "?");
    if (check_engine(e, what, err) < 0 || check_method(method, what, err) < 0)
        return -1;
    if (path == NULL || path[0] != '/')
        return ph_bad_input(err, "%s: the path must start with `/`", what);
    return stream_call(e, what, method, path, content_type, body_read_cb, body_ud, body_len, data_cb, data_ud,
                       timeout_s, http_status, err);
}

/* ---- build ------------------------------------------------------------- */

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

/* The build answer is JSON lines: {"stream":"Step 1/2 : FROM x"},
 * {"stream":"\n"}, {"status":...,"progressDetail":{...}}, {"aux":{"ID":..}},
 * {"errorDetail":{"message":..},"error":..}.  Lines may be split anywhere
 * across chunks, and "stream" text is split across lines, so there are two
 * bounded buffers: one for the JSON line, one for the text line. */
typedef struct build_ctx {
    ph_engine_line_cb progress;
    void *ud;
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
    if (l > 0 && b->progress)
        b->progress(b->ud, b->text);
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
    if ((s = json_string_value(json_object_get(j, "status"))) != NULL && b->progress) {
        /* Pull progress inside a build: show the steps, not the bars. */
        detail = json_object_get(j, "progressDetail");
        if (detail == NULL || json_object_size(detail) == 0) {
            const char *id = json_string_value(json_object_get(j, "id"));
            char one[PROGRESS_MAX];

            snprintf(one, sizeof one, "%s%s%s", id ? id : "", id ? ": " : "", s);
            b->progress(b->ud, one);
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

int
ph_engine_build(ph_engine *e, const void *tar, size_t tar_len, const char *dockerfile, const char *tag,
                json_t *buildargs, json_t *labels, ph_engine_line_cb progress_cb, void *ud, char **image_id,
                ph_error_t *err)
{
    char what[600];
    ph_cleanup_free char *s_args = NULL, *s_labels = NULL, *path = NULL;
    cleanup_curl_free char *q_tag = NULL, *q_df = NULL, *q_args = NULL, *q_labels = NULL;
    mem_reader m = { .data = tar, .len = tar_len };
    build_ctx *b = NULL;
    int rc = -1;

    if (image_id)
        *image_id = NULL;
    snprintf(what, sizeof what, "build `%.500s`", tag ? tag : "");
    if (check_engine(e, what, err) < 0 || check_str(tag, what, "image tag", err) < 0)
        return -1;
    if (tar == NULL || tar_len == 0)
        return ph_bad_input(err, "%s: empty build context", what);
    if (dockerfile == NULL || dockerfile[0] == '\0')
        dockerfile = "Dockerfile";
    if ((buildargs && !json_is_object(buildargs)) || (labels && !json_is_object(labels)))
        return ph_bad_input(err, "%s: build args and labels must be JSON objects", what);
    if (ensure_pinged(e, err) < 0)
        return -1;
    s_args = buildargs ? json_dumps(buildargs, JSON_COMPACT) : strdup("{}");
    s_labels = labels ? json_dumps(labels, JSON_COMPACT) : strdup("{}");
    if (s_args == NULL || s_labels == NULL)
        return ph_fail(err, ENOMEM, "%s: encode build args and labels", what);
    q_tag = escape(e, tag);
    q_df = escape(e, dockerfile);
    q_args = escape(e, s_args);
    q_labels = escape(e, s_labels);
    if (!q_tag || !q_df || !q_args || !q_labels)
        return ph_fail(err, ENOMEM, "%s: escape the query", what);
    path = path_fmt(err, what, "/build?t=%s&dockerfile=%s&buildargs=%s&labels=%s&rm=1&forcerm=1", q_tag, q_df,
                    q_args, q_labels);
    if (path == NULL)
        return -1;
    b = calloc(1, sizeof *b); /* LINE_MAX_LEN is too much for the stack */
    if (b == NULL)
        return ph_fail(err, errno, "%s: allocate", what);
    b->progress = progress_cb;
    b->ud = ud;
    if (stream_call(e, what, "POST", path, "application/x-tar", mem_read_cb, &m, (long long)tar_len, build_data_cb,
                    b, BUILD_TIMEOUT_S, NULL, err) < 0)
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
    if (b) {
        free(b->error);
        free(b->image_id);
        free(b);
    }
    return rc;
}

/* ---- archive ----------------------------------------------------------- */

int
ph_engine_archive_get(ph_engine *e, const char *id, const char *path, ph_engine_data_cb data_cb, void *ud,
                      ph_error_t *err)
{
    char what[600];
    cleanup_curl_free char *q_id = NULL, *q_path = NULL;
    ph_cleanup_free char *p = NULL;
    ph_error_t sub = NULL;
    long status = 0;

    snprintf(what, sizeof what, "copy `%.200s` out of container `%.200s`", path ? path : "", id ? id : "");
    if (check_engine(e, what, err) < 0 || check_str(id, what, "container id", err) < 0 ||
        check_str(path, what, "path", err) < 0)
        return -1;
    if (data_cb == NULL)
        return ph_bad_input(err, "%s: no data callback", what);
    q_id = escape(e, id);
    q_path = escape(e, path);
    if (q_id == NULL || q_path == NULL)
        return ph_fail(err, ENOMEM, "%s: escape the path", what);
    p = path_fmt(err, what, "/containers/%s/archive?path=%s", q_id, q_path);
    if (p == NULL)
        return -1;
    /* A callback that fails makes its error in the caller's err; so the
     * call goes through a private one, and the callback's wins. */
    if (stream_call(e, what, "GET", p, NULL, NULL, NULL, -1, data_cb, ud, ARCHIVE_TIMEOUT_S, &status, &sub) == 0)
        return 0;
    if (err && *err) {
        ph_error_free(&sub);
        return -1;
    }
    /* 404 is both "no such container" and "no such path"; the Engine's
     * message says which, and the first is worth keeping verbatim. */
    if (status == 404 && strstr(sub->msg, "No such container") == NULL) {
        ph_error_free(&sub);
        return ph_fail(err, 0, "%s: no such path in the container", what);
    }
    if (err)
        *err = sub;
    else
        ph_error_free(&sub);
    return -1;
}

/* ---- convenience wrappers ---------------------------------------------- */

/* GET PATH; a 404 is "not found" (*found = 0), not an error. */
static int
inspect(ph_engine *e, const char *what, const char *path, json_t **out, int *found, ph_error_t *err)
{
    ph_error_t sub = NULL;
    long st = 0;

    if (json_call(e, what, "GET", path, NULL, DEFAULT_TIMEOUT_S, out, &st, NULL, &sub) == 0) {
        *found = 1;
        return 0;
    }
    if (st == 404) {
        ph_error_free(&sub);
        return 0;
    }
    if (err)
        *err = sub;
    else
        ph_error_free(&sub);
    return -1;
}

/* Shared front of the wrappers that act on one named object: validate,
 * ping, escape NAME.  Returns the escaped name (curl_free) or NULL. */
static char *
named(ph_engine *e, const char *what, const char *name, const char *kind, ph_error_t *err)
{
    char *q;

    if (check_engine(e, what, err) < 0 || check_str(name, what, kind, err) < 0)
        return NULL;
    if (ensure_pinged(e, err) < 0)
        return NULL;
    q = escape(e, name);
    if (q == NULL)
        ph_fail(err, ENOMEM, "%s: escape `%s`", what, name);
    return q;
}

int
ph_engine_image_inspect(ph_engine *e, const char *name, json_t **out, int *found, ph_error_t *err)
{
    char what[300];
    cleanup_curl_free char *q = NULL;
    ph_cleanup_free char *p = NULL;
    json_t *tmp = NULL;

    if (out)
        *out = NULL;
    if (found)
        *found = 0;
    snprintf(what, sizeof what, "inspect image `%.200s`", name ? name : "");
    if (found == NULL)
        return ph_bad_input(err, "%s: no place for the answer", what);
    if ((q = named(e, what, name, "image name", err)) == NULL)
        return -1;
    if ((p = path_fmt(err, what, "/images/%s/json", q)) == NULL)
        return -1;
    if (inspect(e, what, p, &tmp, found, err) < 0)
        return -1;
    if (out)
        *out = tmp;
    else
        json_decref(tmp);
    return 0;
}

int
ph_engine_image_remove(ph_engine *e, const char *name, int force, ph_error_t *err)
{
    char what[300];
    cleanup_curl_free char *q = NULL;
    ph_cleanup_free char *p = NULL;
    ph_error_t sub = NULL;
    long st = 0;

    snprintf(what, sizeof what, "remove image `%.200s`", name ? name : "");
    if ((q = named(e, what, name, "image name", err)) == NULL)
        return -1;
    if ((p = path_fmt(err, what, "/images/%s?force=%d", q, force ? 1 : 0)) == NULL)
        return -1;
    if (json_call(e, what, "DELETE", p, NULL, DEFAULT_TIMEOUT_S, NULL, &st, NULL, &sub) == 0)
        return 0;
    if (st == 404) {
        ph_error_free(&sub);
        return 0;
    }
    if (err)
        *err = sub;
    else
        ph_error_free(&sub);
    return -1;
}

int
ph_engine_container_create(ph_engine *e, const char *name, json_t *config, char **id, ph_error_t *err)
{
    char what[300];
    cleanup_curl_free char *q = NULL;
    ph_cleanup_free char *p = NULL;
    cleanup_json json_t *resp = NULL;
    const char *got;

    if (id)
        *id = NULL;
    snprintf(what, sizeof what, "create container `%.200s`", name ? name : "");
    if (check_engine(e, what, err) < 0)
        return -1;
    if (id == NULL || !json_is_object(config))
        return ph_bad_input(err, "%s: needs a JSON object config and a place for the id", what);
    if (name != NULL) {
        if ((q = named(e, what, name, "container name", err)) == NULL)
            return -1;
        p = path_fmt(err, what, "/containers/create?name=%s", q);
    } else {
        p = path_fmt(err, what, "/containers/create");
    }
    if (p == NULL)
        return -1;
    if (json_call(e, what, "POST", p, config, DEFAULT_TIMEOUT_S, &resp, NULL, NULL, err) < 0)
        return -1;
    got = json_string_value(json_object_get(resp, "Id"));
    if (got == NULL || got[0] == '\0')
        return ph_fail(err, 0, "%s: the Engine's answer has no Id", what);
    if ((*id = strdup(got)) == NULL)
        return ph_fail(err, errno, "%s: allocate", what);
    return 0;
}

/* POST to /containers/{id}/ACTION?QUERY; 304 ("already") counts as done
 * when ok_304. */
static int
container_post(ph_engine *e, const char *what, const char *id, const char *action, const char *query,
               long timeout_s, int ok_304, ph_error_t *err)
{
    cleanup_curl_free char *q = NULL;
    ph_cleanup_free char *p = NULL;
    ph_error_t sub = NULL;
    long st = 0;

    if ((q = named(e, what, id, "container id", err)) == NULL)
        return -1;
    if ((p = path_fmt(err, what, "/containers/%s/%s%s%s", q, action, query ? "?" : "", query ? query : "")) == NULL)
        return -1;
    if (json_call(e, what, "POST", p, NULL, timeout_s, NULL, &st, NULL, &sub) == 0)
        return 0;
    if (st == 304 && ok_304) {
        ph_error_free(&sub);
        return 0;
    }
    if (err)
        *err = sub;
    else
        ph_error_free(&sub);
    return -1;
}

int
ph_engine_container_start(ph_engine *e, const char *id, ph_error_t *err)
{
    char what[300];

    snprintf(what, sizeof what, "start container `%.200s`", id ? id : "");
    return container_post(e, what, id, "start", NULL, DEFAULT_TIMEOUT_S, 1, err);
}

int
ph_engine_container_kill(ph_engine *e, const char *id, const char *signal, ph_error_t *err)
{
    char what[300], query[128];
    cleanup_curl_free char *q = NULL;

    snprintf(what, sizeof what, "send %.20s to container `%.200s`", signal ? signal : "SIGKILL", id ? id : "");
    if (check_engine(e, what, err) < 0)
        return -1;
    if (signal == NULL)
        return container_post(e, what, id, "kill", NULL, DEFAULT_TIMEOUT_S, 0, err);
    if (signal[0] == '\0' || strlen(signal) > 32)
        return ph_bad_input(err, "%s: bad signal name `%.40s`", what, signal);
    if ((q = escape(e, signal)) == NULL)
        return ph_fail(err, ENOMEM, "%s: escape the signal", what);
    snprintf(query, sizeof query, "signal=%s", q);
    return container_post(e, what, id, "kill", query, DEFAULT_TIMEOUT_S, 0, err);
}

int
ph_engine_container_stop(ph_engine *e, const char *id, long timeout_s, ph_error_t *err)
{
    char what[300], query[64];

    snprintf(what, sizeof what, "stop container `%.200s`", id ? id : "");
    if (timeout_s < 0)
        return ph_bad_input(err, "%s: negative grace period", what);
    snprintf(query, sizeof query, "t=%ld", timeout_s);
    /* The Engine waits up to t seconds then kills; give it time to do so. */
    return container_post(e, what, id, "stop", query, timeout_s + 60, 1, err);
}

/* The exit code from a wait answer {"StatusCode":N,"Error":{"Message":..}}. */
static int
wait_result(const char *what, json_t *resp, long *exit_code, ph_error_t *err)
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
    char what[300];
    cleanup_curl_free char *q = NULL;
    ph_cleanup_free char *p = NULL;
    cleanup_json json_t *resp = NULL;
    int to = 0;

    if (exit_code)
        *exit_code = -1;
    if (timed_out)
        *timed_out = 0;
    snprintf(what, sizeof what, "wait for container `%.200s`", id ? id : "");
    if (timed_out == NULL)
        return ph_bad_input(err, "%s: no place for the timed-out flag", what);
    if ((q = named(e, what, id, "container id", err)) == NULL)
        return -1;
    if ((p = path_fmt(err, what, "/containers/%s/wait?condition=not-running", q)) == NULL)
        return -1;
    if (json_call(e, what, "POST", p, NULL, timeout_s > 0 ? timeout_s : 0, &resp, NULL, &to, err) < 0)
        return -1;
    if (to) {
        *timed_out = 1;
        return 0;
    }
    return wait_result(what, resp, exit_code, err);
}

int
ph_engine_container_remove(ph_engine *e, const char *id, int force, ph_error_t *err)
{
    char what[300];
    cleanup_curl_free char *q = NULL;
    ph_cleanup_free char *p = NULL;
    ph_error_t sub = NULL;
    long st = 0;

    if (id == NULL)
        return 0; /* like free(NULL): cleanup paths call this unconditionally */
    snprintf(what, sizeof what, "remove container `%.200s`", id);
    if ((q = named(e, what, id, "container id", err)) == NULL)
        return -1;
    if ((p = path_fmt(err, what, "/containers/%s?v=1%s", q, force ? "&force=1" : "")) == NULL)
        return -1;
    if (json_call(e, what, "DELETE", p, NULL, DEFAULT_TIMEOUT_S, NULL, &st, NULL, &sub) == 0)
        return 0;
    if (st == 404) { /* already gone: the goal is reached */
        ph_error_free(&sub);
        return 0;
    }
    if (err)
        *err = sub;
    else
        ph_error_free(&sub);
    return -1;
}

int
ph_engine_container_inspect(ph_engine *e, const char *id, json_t **out, int *found, ph_error_t *err)
{
    char what[300];
    cleanup_curl_free char *q = NULL;
    ph_cleanup_free char *p = NULL;
    json_t *tmp = NULL;

    if (out)
        *out = NULL;
    if (found)
        *found = 0;
    snprintf(what, sizeof what, "inspect container `%.200s`", id ? id : "");
    if (found == NULL)
        return ph_bad_input(err, "%s: no place for the answer", what);
    if ((q = named(e, what, id, "container id", err)) == NULL)
        return -1;
    if ((p = path_fmt(err, what, "/containers/%s/json", q)) == NULL)
        return -1;
    if (inspect(e, what, p, &tmp, found, err) < 0)
        return -1;
    if (out)
        *out = tmp;
    else
        json_decref(tmp);
    return 0;
}

int
ph_engine_containers_by_label(ph_engine *e, const char *const *labels, size_t n, json_t **out_array,
                              ph_error_t *err)
{
    const char *what = "list containers by label";
    cleanup_json json_t *filters = NULL;
    json_t *arr;
    ph_cleanup_free char *s = NULL, *p = NULL;
    cleanup_curl_free char *q = NULL;

    if (out_array)
        *out_array = NULL;
    if (check_engine(e, what, err) < 0)
        return -1;
    if (out_array == NULL || labels == NULL || n == 0)
        return ph_bad_input(err, "%s: no labels given", what);
    filters = json_object();
    arr = json_array();
    if (filters == NULL || arr == NULL || json_object_set_new(filters, "label", arr) < 0)
        return ph_fail(err, ENOMEM, "%s: allocate", what);
    for (size_t i = 0; i < n; i++) {
        if (check_str(labels[i], what, "label", err) < 0)
            return -1;
        if (json_array_append_new(arr, json_string(labels[i])) < 0)
            return ph_bad_input(err, "%s: label `%.200s` is not UTF-8", what, labels[i]);
    }
    if ((s = json_dumps(filters, JSON_COMPACT)) == NULL)
        return ph_fail(err, ENOMEM, "%s: encode the filter", what);
    if (ensure_pinged(e, err) < 0)
        return -1;
    if ((q = escape(e, s)) == NULL)
        return ph_fail(err, ENOMEM, "%s: escape the filter", what);
    if ((p = path_fmt(err, what, "/containers/json?all=1&filters=%s", q)) == NULL)
        return -1;
    if (json_call(e, what, "GET", p, NULL, DEFAULT_TIMEOUT_S, out_array, NULL, NULL, err) < 0)
        return -1;
    if (*out_array == NULL)
        *out_array = json_array();
    if (!json_is_array(*out_array)) {
        json_decref(*out_array);
        *out_array = NULL;
        return ph_fail(err, 0, "%s: the Engine's answer is not a list", what);
    }
    return 0;
}

/* Inspect; create if 404; a 409 on create means someone else created it
 * between our inspect and our create, which is what we wanted. */
static int
ensure_named(ph_engine *e, const char *kind, const char *noun, const char *name, json_t *labels, ph_error_t *err)
{
    char what[300];
    cleanup_curl_free char *q = NULL;
    ph_cleanup_free char *p = NULL;
    cleanup_json json_t *body = NULL;
    ph_error_t sub = NULL;
    int found = 0;
    long st = 0;

    snprintf(what, sizeof what, "inspect %s `%.200s`", noun, name ? name : "");
    if (labels != NULL && !json_is_object(labels))
        return ph_bad_input(err, "%s: labels must be a JSON object", what);
    if ((q = named(e, what, name, "name", err)) == NULL)
        return -1;
    if ((p = path_fmt(err, what, "/%s/%s", kind, q)) == NULL)
        return -1;
    if (inspect(e, what, p, NULL, &found, err) < 0)
        return -1;
    if (found)
        return 0;
    snprintf(what, sizeof what, "create %s `%.200s`", noun, name);
    body = json_pack("{s:s, s:O}", "Name", name, "Labels", labels ? labels : json_object());
    if (body == NULL)
        return ph_fail(err, ENOMEM, "%s: build the request", what);
    /* Networks may share a name unless asked not to (API < 1.44). */
    if (strcmp(kind, "networks") == 0 && json_object_set_new(body, "CheckDuplicate", json_true()) < 0)
        return ph_fail(err, ENOMEM, "%s: build the request", what);
    free(p);
    if ((p = path_fmt(err, what, "/%s/create", kind)) == NULL)
        return -1;
    if (json_call(e, what, "POST", p, body, DEFAULT_TIMEOUT_S, NULL, &st, NULL, &sub) == 0)
        return 0;
    if (st == 409) {
        ph_debug("%s: created concurrently (%s)", what, sub->msg);
        ph_error_free(&sub);
        return 0;
    }
    if (err)
        *err = sub;
    else
        ph_error_free(&sub);
    return -1;
}

int
ph_engine_network_ensure(ph_engine *e, const char *name, json_t *labels, ph_error_t *err)
{
    return ensure_named(e, "networks", "network", name, labels, err);
}

int
ph_engine_volume_ensure(ph_engine *e, const char *name, json_t *labels, ph_error_t *err)
{
    return ensure_named(e, "volumes", "volume", name, labels, err);
}

/* ---- logs -------------------------------------------------------------- */

int
ph_engine_demux_feed(ph_engine_demux *d, const char *data, size_t len, ph_engine_data_cb out_cb, void *ud,
                     ph_error_t *err)
{
    if (d == NULL || (data == NULL && len > 0) || out_cb == NULL)
        return ph_bad_input(err, "demultiplex a log stream: missing argument");
    while (len > 0) {
        if (d->remaining == 0 && d->hdr_len < 8) {
            size_t take = 8 - d->hdr_len < len ? 8 - d->hdr_len : len;

            memcpy(d->hdr + d->hdr_len, data, take);
            d->hdr_len += take;
            data += take;
            len -= take;
            d->offset += take;
            if (d->hdr_len < 8)
                break;
            /* [stream, 0, 0, 0, size32be]: stream 0 stdin, 1 stdout, 2 stderr. */
            if (d->hdr[0] > 2 || d->hdr[1] || d->hdr[2] || d->hdr[3])
                return ph_fail(err, 0, "demultiplex a log stream: bad frame header at byte %llu "
                                       "(%02x %02x %02x %02x); is it a TTY stream?",
                               d->offset - 8, d->hdr[0], d->hdr[1], d->hdr[2], d->hdr[3]);
            d->stream = d->hdr[0];
            d->remaining = ((size_t)d->hdr[4] << 24) | ((size_t)d->hdr[5] << 16) | ((size_t)d->hdr[6] << 8) |
                           (size_t)d->hdr[7];
            if (d->remaining == 0)
                d->hdr_len = 0; /* an empty frame: next header */
            continue;
        }
        {
            size_t take = d->remaining < len ? d->remaining : len;

            if (out_cb(ud, data, take) < 0)
                return -1; /* the callback's error */
            data += take;
            len -= take;
            d->offset += take;
            d->remaining -= take;
            if (d->remaining == 0)
                d->hdr_len = 0;
        }
    }
    return 0;
}

int
ph_engine_demux_finish(const ph_engine_demux *d, ph_error_t *err)
{
    if (d == NULL)
        return ph_bad_input(err, "demultiplex a log stream: missing argument");
    if (d->hdr_len != 0 || d->remaining != 0)
        return ph_fail(err, 0, "demultiplex a log stream: it ends inside a frame at byte %llu", d->offset);
    return 0;
}

typedef struct logs_ctx {
    int fd;
    int tty;
    ph_engine_demux demux;
    const char *what;
    ph_error_t *err;
} logs_ctx;

static int
write_all_cb(void *ud, const char *p, size_t n)
{
    logs_ctx *l = ud;

    while (n > 0) {
        ssize_t w = write(l->fd, p, n);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return ph_fail(l->err, errno, "%s: write to fd %d", l->what, l->fd);
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

    if (l->tty)
        return write_all_cb(l, data, len);
    return ph_engine_demux_feed(&l->demux, data, len, write_all_cb, l, l->err);
}

int
ph_engine_container_logs(ph_engine *e, const char *id, int follow, long tail, int fd, ph_error_t *err)
{
    char what[300], t[32];
    cleanup_curl_free char *q = NULL;
    ph_cleanup_free char *p = NULL;
    cleanup_json json_t *info = NULL;
    logs_ctx l = { .fd = fd, .err = err };
    int found = 0;

    snprintf(what, sizeof what, "logs of container `%.200s`", id ? id : "");
    l.what = what;
    if (fd < 0)
        return ph_bad_input(err, "%s: bad file descriptor %d", what, fd);
    if ((q = named(e, what, id, "container id", err)) == NULL)
        return -1;
    /* The stream is framed unless the container has a TTY; the Engine's
     * 1.41 answer does not say which (1.42 has a Content-Type for it), so
     * ask rather than guess from the first byte. */
    if (ph_engine_container_inspect(e, id, &info, &found, err) < 0)
        return ph_error_wrap(err, "%s", what);
    if (!found)
        return ph_fail(err, 0, "%s: No such container", what);
    l.tty = json_is_true(json_object_get(json_object_get(info, "Config"), "Tty"));
    if (tail >= 0)
        snprintf(t, sizeof t, "%ld", tail);
    else
        snprintf(t, sizeof t, "all");
    if ((p = path_fmt(err, what, "/containers/%s/logs?stdout=1&stderr=1&follow=%d&tail=%s", q, follow ? 1 : 0, t)) ==
        NULL)
        return -1;
    /* A followed stream lasts as long as the container: no timeout. */
    if (stream_call(e, what, "GET", p, NULL, NULL, NULL, -1, logs_cb, &l, follow ? 0 : LOGS_TIMEOUT_S, NULL, err) < 0)
        return -1;
    if (!l.tty && ph_engine_demux_finish(&l.demux, err) < 0)
        return ph_error_wrap(err, "%s", what);
    return 0;
}

/* ---- race-free wait ---------------------------------------------------- */

struct ph_engine_wait {
    ph_engine *e;
    CURL *curl;
    CURLM *multi;
    buf body;
    long status;
    int headers_done;  /* a final status line and its headers arrived */
    int done;
    CURLcode result;
    char what[300];
    char errbuf[CURL_ERROR_SIZE];
};

void
ph_engine_wait_free(ph_engine_wait *w)
{
    if (w == NULL)
        return;
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

static double
now_mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
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
            double left_s = deadline - now_mono();

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
    if (w->result == CURLE_WRITE_ERROR && w->body.overflow)
        return ph_fail(err, 0, "%s: the Engine's answer exceeds %zu bytes", w->what, w->body.max);
    if (w->result != CURLE_OK)
        return transport_error(w->e, w->curl, w->errbuf, w->result, w->what, 0, err);
    if (!is_2xx(w->status))
        return http_error(w->what, w->status, w->body.data ? w->body.data : "", w->body.len, err);
    return 0;
}

int
ph_engine_container_wait_begin(ph_engine *e, const char *id, ph_engine_wait **out, ph_error_t *err)
{
    char what[300];
    cleanup_curl_free char *q = NULL;
    ph_cleanup_free char *url = NULL;
    ph_engine_wait *w = NULL;
    int r;

    if (out)
        *out = NULL;
    snprintf(what, sizeof what, "wait for container `%.200s`", id ? id : "");
    if (out == NULL)
        return ph_bad_input(err, "%s: no place for the wait", what);
    if ((q = named(e, what, id, "container id", err)) == NULL)
        return -1;
    if ((url = path_fmt(err, what, "%s/v%s/containers/%s/wait?condition=not-running", e->base_url, e->api, q)) ==
        NULL)
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
    if (e->socket_path)
        curl_easy_setopt(w->curl, CURLOPT_UNIX_SOCKET_PATH, e->socket_path);
    curl_easy_setopt(w->curl, CURLOPT_ERRORBUFFER, w->errbuf);
    curl_easy_setopt(w->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(w->curl, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(w->curl, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(w->curl, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(w->curl, CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(w->curl, CURLOPT_HEADERFUNCTION, wait_header_cb);
    curl_easy_setopt(w->curl, CURLOPT_HEADERDATA, w);
    curl_easy_setopt(w->curl, CURLOPT_WRITEFUNCTION, buf_write_cb);
    curl_easy_setopt(w->curl, CURLOPT_WRITEDATA, &w->body);
    if (curl_multi_add_handle(w->multi, w->curl) != CURLM_OK) {
        ph_engine_wait_free(w);
        return ph_fail(err, 0, "%s: curl refused the transfer", what);
    }
    r = wait_drive(w, stop_at_headers, now_mono() + WAIT_BEGIN_TIMEOUT_S, err);
    if (r < 0) {
        ph_engine_wait_free(w);
        return -1;
    }
    if (r == 0) {
        ph_engine_wait_free(w);
        return ph_fail(err, 0, "%s: the Docker Engine at %s did not take the request within %ld s", what, e->host,
                       WAIT_BEGIN_TIMEOUT_S);
    }
    /* Done already: an error answer, a transport failure, or (possible
     * when the container had already stopped) the result itself. */
    if (w->done && wait_check_done(w, err) < 0) {
        ph_engine_wait_free(w);
        return -1;
    }
    *out = w;
    return 0;
}

int
ph_engine_container_wait_end(ph_engine_wait *w, long timeout_s, long *exit_code, int *timed_out, ph_error_t *err)
{
    cleanup_json json_t *resp = NULL;
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
    r = w->done ? 1 : wait_drive(w, stop_never, timeout_s > 0 ? now_mono() + (double)timeout_s : 0, err);
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
    rc = wait_result(w->what, resp, exit_code, err);
out:
    ph_engine_wait_free(w);
    return rc;
}
