/* ph_engine_transport.c - the Engine client's transport and its one call
 * (see ph_engine_int.h for the request description, ph_engine.h for the
 * promises).
 *
 * Design.  One CURL easy handle per ph_engine, reset before each request
 * but never closed, so the connection to the Engine (a unix socket, TCP or
 * TLS) is reused across calls.  Where the Engine is and how to reach it is
 * resolved once, in ph_engine_new (ph_engine_endpoint.c); how a handle is
 * pointed at it is ph_engine_transport_setup, the only place that knows
 * about sockets and certificates.  Every request is synchronous and has a
 * timeout; only a followed log stream and ph_engine_stream with timeout 0
 * may run unbounded, by the caller's choice.  The API version is negotiated
 * lazily: the first call pings, and every path is then prefixed with
 * /v<version>.
 *
 * Memory is bounded everywhere: buffered answers by e->max_body (default
 * PH_ENGINE_MAX_BODY), error bodies of streamed calls by ERR_BODY_MAX, URL
 * paths by PATH_MAX_LEN.  Everything taken from the caller that goes into a
 * URL (ids, names, paths, JSON filters) is escaped with curl_easy_escape.
 *
 * Errors are made where curl or the Engine says no, in three shapes:
 *  - transport: "cannot reach the Docker Engine at ADDRESS: <curl's words>
 *    (<errno text>)" with a hint naming engine-up.sh and DOCKER_HOST, or for
 *    other curl failures "<what>: talking to the Docker Engine at ADDRESS:
 *    <curl's error buffer>";
 *  - HTTP: "<what>: <the Engine's JSON message>", the status kept so that
 *    callers can treat 304/404/409 as answers rather than failures;
 *  - our own limits (body too large, malformed streams).
 * "<what>" names the attempt in the caller's terms ("create container `x`")
 * rather than the URL.  Nothing is printed and nothing exits.
 */
#include "ph_engine_int.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ph_log.h"
#include "ph_signal.h"
#include "ph_strings.h"
#include "ph_timing.h"
#include "ph_util.h"

/* /containers/{id}/wait?condition=not-running and the immediate header
 * flush that the race-free wait relies on both came with API 1.30. */
#define MIN_API_MAJOR 1
#define MIN_API_MINOR 30
#define PING_TIMEOUT_S 15L
#define CONNECT_TIMEOUT_S 10L
#define ERR_BODY_MAX (64u << 10)  /* a non-2xx answer of a streamed call */
#define PING_BODY_MAX 4096u
#define PATH_MAX_LEN (64u << 10)  /* build args and labels travel in the URL */

#define ENGINE_HINT "is dockerd running? start one with scripts/engine-up.sh, or set DOCKER_HOST"

static void
slist_freep(struct curl_slist **l)
{
    curl_slist_free_all(*l);
}
#define cleanup_slist __attribute__((cleanup(slist_freep)))

/* --context, for every engine made after ph_engine_set_context. */
static char context_flag[256];

void
ph_engine_set_context(const char *name)
{
    snprintf(context_flag, sizeof context_flag, "%s", name ? name : "");
}

/* --engine-stall, for every engine made after ph_engine_set_stall. */
static long stall_flag;

void
ph_engine_set_stall(long seconds)
{
    stall_flag = seconds;
}

int
ph_engine_stall_parse(const char *s, long *seconds, ph_error_t *err)
{
    long long ns = 0;
    char *end = NULL;
    long v;

    if (s == NULL || s[0] == '\0')
        return ph_bad_input(err, "an empty stall limit");
    v = strtol(s, &end, 10);
    if (end != s && *end == '\0') {
        ns = (long long)v * 1000000000LL;
    } else if (ph_duration_parse(s, &ns) < 0) {
        return ph_bad_input(err, "`%.40s` is no stall limit: seconds (60) or a duration (1m30s)", s);
    }
    if (ns < 1000000000LL || ns > PH_ENGINE_STALL_MAX_S * 1000000000LL)
        return ph_bad_input(err, "stall limit `%.40s`: from 1 s to %ld s", s, PH_ENGINE_STALL_MAX_S);
    *seconds = (long)(ns / 1000000000LL);
    return 0;
}

static int
stall_of_environment(long *out, ph_error_t *err)
{
    const char *v = getenv("PH_ENGINE_STALL");

    *out = PH_ENGINE_STALL_DEFAULT_S;
    if (stall_flag > 0) {
        *out = stall_flag;
        return 0;
    }
    if (v == NULL || v[0] == '\0')
        return 0;
    if (ph_engine_stall_parse(v, out, err) < 0)
        return ph_error_wrap(err, "PH_ENGINE_STALL");
    return 0;
}

/* curl_global_init is not thread-safe; ph_engine_new may be called from
 * several threads (one engine each), so it runs once. */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void
curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int
ph_engine_buf_append(ph_engine_buf *b, const char *p, size_t n)
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

    return ph_engine_buf_append(ud, ptr, n) < 0 ? 0 : n;
}

static int
is_2xx(long status)
{
    return status >= 200 && status < 300;
}

int
ph_engine_check(const ph_engine *e, const char *what, ph_error_t *err)
{
    if (e == NULL || e->curl == NULL)
        return ph_bad_input(err, "%s: no Engine client (NULL)", what);
    return 0;
}

/* Ids, names and paths: present, non-empty, of sane length. */
int
ph_engine_check_str(const char *s, const char *what, const char *kind, ph_error_t *err)
{
    if (s == NULL || s[0] == '\0')
        return ph_bad_input(err, "%s: empty %s", what, kind);
    if (strlen(s) > PH_ENGINE_NAME_MAX)
        return ph_bad_input(err, "%s: %s longer than %u bytes", what, kind, PH_ENGINE_NAME_MAX);
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

/* ---- construction ------------------------------------------------------ */

ph_engine *
ph_engine_new(ph_error_t *err)
{
    return ph_engine_new_context(NULL, err);
}

ph_engine *
ph_engine_new_context(const char *context, ph_error_t *err)
{
    ph_engine *e = NULL;

    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK) {
        ph_fail(err, 0, "initialise libcurl: %s", curl_easy_strerror(curl_init_rc));
        return NULL;
    }
    e = calloc(1, sizeof *e);
    if (e == NULL) {
        ph_fail(err, errno, "allocate the Engine client");
        return NULL;
    }
    e->max_body = PH_ENGINE_MAX_BODY;
    if (stall_of_environment(&e->stall_s, err) < 0) {
        free(e);
        return NULL;
    }
    if (context == NULL && context_flag[0])
        context = context_flag;
    if (ph_engine_endpoint_resolve(context, &e->ep, err) < 0) {
        free(e);
        return NULL;
    }
    if (strcmp(e->ep.context, "default") != 0)
        snprintf(e->where, sizeof e->where, "%s (context `%s`%s)", e->ep.host, e->ep.context,
                 e->ep.tls ? ", TLS" : "");
    else
        snprintf(e->where, sizeof e->where, "%s%s", e->ep.host, e->ep.tls ? " (TLS)" : "");
    ph_debug("engine: %s, chosen by %s", e->where, e->ep.origin);
    e->base_url = strdup(e->ep.base_url);
    e->curl = curl_easy_init();
    if (e->base_url == NULL || e->curl == NULL) {
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
    free(e->base_url);
    free(e);
}

const char *
ph_engine_describe(ph_engine *e)
{
    return e ? e->where : "";
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

/* ---- the transport ----------------------------------------------------- */

void
ph_engine_transport_setup(const ph_engine *e, CURL *c, char *errbuf)
{
    const ph_engine_endpoint *ep = &e->ep;

    if (ep->socket_path[0])
        curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, ep->socket_path);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM games in a supervisor */
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, ep->tls ? "https" : "http");
    if (!ep->tls)
        return;
    /* As docker's tlsconfig.ClientDefault: TLS 1.2 at least; a CA given is
     * the only one trusted (the built-in CA directory is switched off too);
     * no verification at all when asked for none. */
    curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (ep->ca[0]) {
        curl_easy_setopt(c, CURLOPT_CAINFO, ep->ca);
        curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
    }
    if (ep->cert[0] && ep->key[0]) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, ep->cert);
        curl_easy_setopt(c, CURLOPT_SSLKEY, ep->key);
    }
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, ep->verify ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, ep->verify ? 2L : 0L);
}

/* ---- the watch: stalls and interrupts ---------------------------------- */

double
ph_engine_now_mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
watch_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    ph_engine_watch *w = ud;
    unsigned long long moved = (unsigned long long)dlnow + (unsigned long long)ulnow;
    double now;

    (void)dltotal;
    (void)ultotal;
    if (ph_interrupt_count() != w->signals) {
        w->interrupted = ph_interrupted();
        return 1;
    }
    if (w->stall_s <= 0)
        return 0;
    now = ph_engine_now_mono();
    /* A byte a second on average over the window: a drip slower than
     * that is as stalled as silence. */
    if (moved - w->mark_bytes >= (unsigned long long)w->stall_s) {
        w->mark_t = now;
        w->mark_bytes = moved;
    } else if (now - w->mark_t >= (double)w->stall_s) {
        w->stalled = 1;
        return 1;
    }
    return 0;
}

void
ph_engine_watch_setup(CURL *c, ph_engine_watch *w, long stall_s)
{
    *w = (ph_engine_watch){ .signals = ph_interrupt_count(), .stall_s = stall_s, .mark_t = ph_engine_now_mono() };
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, watch_cb);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, w);
}

int
ph_engine_watch_error(const ph_engine *e, const ph_engine_watch *w, const char *what, ph_error_t *err)
{
    if (w->interrupted) {
        ph_interrupt_fail(err, w->interrupted);
        return ph_error_wrap(err, "%s", what);
    }
    if (!w->stalled)
        return 0;
    ph_fail(err, 0, "%s: the Docker Engine at %s stalled: less than a byte a second for %ld s", what, e->where,
            w->stall_s);
    return ph_error_hint(err, "a busy or wedged Engine; if it is only slow, allow it more with PH_ENGINE_STALL=SECONDS "
                              "or --engine-stall SECONDS (default %ld)",
                         PH_ENGINE_STALL_DEFAULT_S);
}

/* The host name in "tcp://HOST:PORT[/PATH]" ("[::1]" as "::1"): what the
 * certificate must be issued for. */
static void
host_name_of(const char *host, char *out, size_t size)
{
    const char *h = strncmp(host, "tcp://", 6) == 0 ? host + 6 : host, *end = h + strcspn(h, "/");
    const char *colon = NULL;

    for (const char *p = h; p < end; p++)
        if (*p == ':')
            colon = p;
    if (h < end && *h == '[') {
        const char *close = memchr(h, ']', (size_t)(end - h));

        if (close != NULL) {
            h++;
            colon = close;
        }
    }
    if (colon != NULL)
        end = colon;
    snprintf(out, size, "%.*s", (int)(end - h), h);
}

/* A TLS failure: which file, and where the material came from. */
static int
tls_error(const ph_engine *e, CURLcode rc, const char *why, const char *what, ph_error_t *err)
{
    const ph_engine_endpoint *ep = &e->ep;
    const char *w = what ? what : "connect";

    switch (rc) {
    case CURLE_SSL_CACERT_BADFILE:
        ph_fail(err, 0, "%s: the CA certificate `%s` cannot be used: %s", w, ep->ca[0] ? ep->ca : "(system)", why);
        break;
    case CURLE_SSL_CERTPROBLEM:
        ph_fail(err, 0, "%s: the client certificate `%s` or its key `%s` cannot be used: %s", w, ep->cert, ep->key,
                why);
        break;
    case CURLE_PEER_FAILED_VERIFICATION: {
        char name[512];

        /* curl's words (OpenSSL's) differ by version; ours name the cause. */
        host_name_of(ep->host, name, sizeof name);
        if (strcasestr(why, "host name") != NULL || strcasestr(why, "subject name") != NULL ||
            strcasestr(why, "does not match") != NULL)
            ph_fail(err, 0, "%s: the Docker Engine at %s is not trusted: its certificate is not issued for the host "
                            "name `%s` (a certificate for another host, or DOCKER_HOST names the wrong one): %s",
                    w, e->where, name, why);
        else if (strcasestr(why, "expired") != NULL)
            ph_fail(err, 0, "%s: the Docker Engine at %s is not trusted: its certificate has expired: %s", w, e->where,
                    why);
        else if (strcasestr(why, "not yet valid") != NULL)
            ph_fail(err, 0, "%s: the Docker Engine at %s is not trusted: its certificate is not valid yet (is the "
                            "clock right?): %s",
                    w, e->where, why);
        else
            ph_fail(err, 0, "%s: the Docker Engine at %s is not trusted: its certificate does not verify against "
                            "%s%s%s: %s",
                    w, e->where, ep->ca[0] ? "the CA `" : "the system's CAs", ep->ca, ep->ca[0] ? "`" : "", why);
        break;
    }
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR: {
        /* TLS 1.3: the server's verdict on our certificate comes as an
         * alert on the first read, after the handshake "succeeded". */
        char detail[PATH_MAX + 64];

        if (ep->cert[0])
            snprintf(detail, sizeof detail, "it does not accept the client certificate `%s`", ep->cert);
        else
            snprintf(detail, sizeof detail, "it wants a client certificate, and none was sent");
        ph_fail(err, 0, "%s: the Docker Engine at %s refused the TLS connection (%s): %s", w, e->where, detail, why);
        break;
    }
    default:
        ph_fail(err, 0, "%s: the TLS handshake with the Docker Engine at %s failed: %s", w, e->where, why);
        if (ep->cert[0] == '\0')
            return ph_error_hint(err, "an Engine started with --tlsverify wants a client certificate, and none was "
                                      "sent: %s", ep->tls_from);
        break;
    }
    return ph_error_hint(err, "%s", ep->tls_from);
}

/* WHAT may be NULL (the ping: "cannot reach" needs no more context). */
int
ph_engine_transport_error(const ph_engine *e, CURL *c, const char *errbuf, CURLcode rc, const char *what,
                          long timeout_s, ph_error_t *err)
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
                e->where, curl_easy_strerror(rc), detail);
        if (os == EACCES)
            return ph_error_hint(err, "no permission on the Engine's socket: run as root or join the docker group, "
                                      "or set DOCKER_HOST");
        return ph_error_hint(err, ENGINE_HINT);
    }
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return ph_fail(err, 0, "%s: the Docker Engine at %s did not finish within %ld s", what ? what : "request",
                       e->where, timeout_s);
    if (e->ep.tls && (rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION ||
                      rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CIPHER ||
                      rc == CURLE_SSL_ENGINE_INITFAILED || rc == CURLE_USE_SSL_FAILED ||
                      ((rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR) && strstr(why, " alert ") != NULL)))
        return tls_error(e, rc, why, what, err);
    return ph_fail(err, 0, "%s: talking to the Docker Engine at %s: %s", what ? what : "request", e->where, why);
}

/* The Engine's error body is {"message": "..."}; anything else is shown raw,
 * trimmed and shortened (a proxy's HTML page is no error message). */
int
ph_engine_http_error(const ph_engine *e, const char *what, long status, const char *body, size_t len,
                     ph_error_t *err)
{
    json_t *j = len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *msg = json_string_value(json_object_get(j, "message"));

    (void)e;
    if (msg != NULL && msg[0] != '\0') {
        size_t l = strlen(msg);

        while (l > 0 && (msg[l - 1] == '\n' || msg[l - 1] == '\r'))
            l--;
        ph_fail(err, 0, "%s: %.*s", what, (int)l, msg);
        json_decref(j);
        return -1;
    }
    json_decref(j);
    while (len > 0 && (body[len - 1] == '\n' || body[len - 1] == '\r' || body[len - 1] == ' '))
        len--;
    if (len > 0)
        return ph_fail(err, 0, "%s: the Engine answered HTTP %ld: %.*s", what, status, (int)(len < 300 ? len : 300),
                       body);
    return ph_fail(err, 0, "%s: the Engine answered HTTP %ld", what, status);
}

/* Reset the shared handle and point it at URL. */
static int
prepare(ph_engine *e, const char *what, const char *method, const char *url, long timeout_s, ph_error_t *err)
{
    CURL *c = e->curl;

    curl_easy_reset(c);
    e->errbuf[0] = '\0';
    if (curl_easy_setopt(c, CURLOPT_URL, url) != CURLE_OK)
        return ph_fail(err, 0, "%s: curl refused the URL `%s`", what, url);
    ph_engine_transport_setup(e, c, e->errbuf);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s > 0 ? timeout_s : 0L);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    return 0;
}

/* ---- ping and negotiation ---------------------------------------------- */

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
ph_engine_version_at_least(const char *v, int major, int minor)
{
    int ma, mi;

    return v != NULL && parse_version(v, &ma, &mi) && (ma > major || (ma == major && mi >= minor));
}

/* One ping: the answer's status, headers and body checked, the version
 * negotiated.  *STATUS and *BYTES for the stage. */
static int
ping_once(ph_engine *e, long *status_out, size_t *bytes, ph_error_t *err)
{
    ph_engine_buf b = { .max = PING_BODY_MAX };
    ph_cleanup_free char *url = NULL;
    char server[16] = "";
    int smaj, smin, mmaj, mmin;
    long status = 0;
    ph_engine_watch watch;
    CURLcode rc;

    if (asprintf(&url, "%s/_ping", e->base_url) < 0) {
        url = NULL;
        return ph_fail(err, ENOMEM, "ping the Docker Engine: build the URL");
    }
    if (prepare(e, "ping the Docker Engine", "GET", url, PING_TIMEOUT_S, err) < 0)
        return -1;
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, buf_write_cb);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e->curl, CURLOPT_HEADERFUNCTION, ping_header_cb);
    curl_easy_setopt(e->curl, CURLOPT_HEADERDATA, server);
    ph_engine_watch_setup(e->curl, &watch, e->stall_s);
    rc = curl_easy_perform(e->curl);
    curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
    *status_out = status;
    *bytes = b.len;
    if (rc != CURLE_OK) {
        free(b.data);
        if (rc == CURLE_ABORTED_BY_CALLBACK && ph_engine_watch_error(e, &watch, "ping the Docker Engine", err) < 0)
            return -1;
        if (rc == CURLE_WRITE_ERROR && b.overflow)
            return ph_fail(err, 0, "ping the Docker Engine at %s: the answer exceeds %u bytes; is that an Engine?",
                           e->where, PING_BODY_MAX);
        if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
            return ph_engine_transport_error(e, e->curl, e->errbuf, rc, NULL, PING_TIMEOUT_S, err);
        ph_engine_transport_error(e, e->curl, e->errbuf, rc, "ping the Docker Engine", PING_TIMEOUT_S, err);
        if (err && *err && (*err)->hint[0])
            return -1; /* a TLS failure has said what to fix */
        return ph_error_hint(err, ENGINE_HINT);
    }
    if (status != 200) {
        char what[1200];

        snprintf(what, sizeof what, "ping the Docker Engine at %s", e->where);
        ph_engine_http_error(e, what, status, b.data ? b.data : "", b.len, err);
        /* Go's TLS server answers plain HTTP with this 400. */
        if (status == 400 && b.data && strstr(b.data, "HTTPS server") != NULL) {
            free(b.data);
            return ph_error_hint(err, "that Engine speaks TLS: set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH (the "
                                      "directory with ca.pem, cert.pem, key.pem), or use a Docker context");
        }
        free(b.data);
        return ph_error_hint(err, "does %s point at a Docker Engine?",
                             strcmp(e->ep.context, "default") ? "the Docker context" : "DOCKER_HOST");
    }
    free(b.data);
    parse_version(PH_ENGINE_MAX_API, &mmaj, &mmin);
    if (server[0] == '\0' || !parse_version(server, &smaj, &smin)) {
        /* Engines have sent API-Version since 1.25; assume our maximum. */
        ph_debug("engine %s sent no usable API-Version (`%s`); using %s", e->ep.host, server, PH_ENGINE_MAX_API);
        snprintf(e->api, sizeof e->api, "%s", PH_ENGINE_MAX_API);
        return 0;
    }
    if (smaj < MIN_API_MAJOR || (smaj == MIN_API_MAJOR && smin < MIN_API_MINOR))
        return ph_fail(err, 0, "the Docker Engine at %s speaks API %s; profharness needs %d.%d or later", e->where,
                       server, MIN_API_MAJOR, MIN_API_MINOR);
    if (smaj < mmaj || (smaj == mmaj && smin < mmin))
        snprintf(e->api, sizeof e->api, "%d.%d", smaj, smin);
    else
        snprintf(e->api, sizeof e->api, "%s", PH_ENGINE_MAX_API);
    ph_debug("engine %s: server API %s, using %s", e->ep.host, server, e->api);
    return 0;
}

int
ph_engine_ping(ph_engine *e, ph_error_t *err)
{
    static const ph_engine_req ping_req = { .method = "GET", .path = "/_ping" };
    ph_stage *st;
    size_t bytes = 0;
    long status = 0;
    int rc;

    if (ph_engine_check(e, "ping the Docker Engine", err) < 0)
        return -1;
    st = ph_engine_stage_begin(&ping_req, 0);
    rc = ping_once(e, &status, &bytes, err);
    ph_engine_stage_end(st, status, bytes, 0, rc < 0, err);
    return rc;
}

int
ph_engine_ensure_pinged(ph_engine *e, ph_error_t *err)
{
    return e->api[0] ? 0 : ph_engine_ping(e, err);
}

/* ---- describing a request ---------------------------------------------- */

void
ph_engine_req_what(const ph_engine_req *r, char *out, size_t size)
{
    const char *w = r->what ? r->what : "request";
    const char *b = strstr(w, "{}");

    if (b == NULL)
        snprintf(out, size, "%s", w);
    else
        snprintf(out, size, "%.*s%.200s%s", (int)(b - w), w, r->arg[0] ? r->arg[0] : "", b + 2);
}

/* Append S (escaped when ESC) to the growing path; bounded by PATH_MAX_LEN. */
static int
path_add(ph_engine *e, ph_engine_buf *p, const char *s, size_t n, int esc, const char *what, ph_error_t *err)
{
    char *q = NULL;
    int rc;

    if (esc) {
        q = curl_easy_escape(e->curl, s, (int)n);
        if (q == NULL)
            return ph_fail(err, ENOMEM, "%s: escape `%.200s`", what, s);
        s = q;
        n = strlen(q);
    }
    rc = ph_engine_buf_append(p, s, n);
    curl_free(q);
    if (rc < 0 && p->overflow)
        return ph_bad_input(err, "%s: the request path would be more than %u bytes", what, PATH_MAX_LEN);
    if (rc < 0)
        return ph_fail(err, ENOMEM, "%s: build the request path", what);
    return 0;
}

/* The path of R with its arguments and query, unversioned, checked. */
static char *
req_path(ph_engine *e, const ph_engine_req *r, const char *what, ph_error_t *err)
{
    ph_engine_buf p = { .max = PATH_MAX_LEN };
    const char *t = r->path, *open;
    size_t next = 0;
    int first = 1;

    if (t == NULL || t[0] != '/') {
        ph_bad_input(err, "%s: the path must start with `/`", what);
        return NULL;
    }
    while (!r->raw && (open = strchr(t, '{')) != NULL) {
        const char *close = strchr(open, '}');
        const char *a = next < PH_ARRAY_LEN(r->arg) ? r->arg[next] : NULL;

        if (close == NULL)
            break;
        if (ph_engine_check_str(a, what, next == 0 && r->kind ? r->kind : "argument", err) < 0 ||
            path_add(e, &p, t, (size_t)(open - t), 0, what, err) < 0 ||
            path_add(e, &p, a, strlen(a), 1, what, err) < 0)
            goto fail;
        next++;
        t = close + 1;
    }
    if (path_add(e, &p, t, strlen(t), 0, what, err) < 0)
        goto fail;
    for (size_t i = 0; i < PH_ARRAY_LEN(r->query) && r->query[i].key; i++) {
        const ph_engine_query *q = &r->query[i];

        if (q->kind && ph_engine_check_str(q->value, what, q->kind, err) < 0)
            goto fail;
        if (q->value == NULL)
            continue;
        if (path_add(e, &p, first ? "?" : "&", 1, 0, what, err) < 0 ||
            path_add(e, &p, q->key, strlen(q->key), 0, what, err) < 0 || path_add(e, &p, "=", 1, 0, what, err) < 0 ||
            path_add(e, &p, q->value, strlen(q->value), 1, what, err) < 0)
            goto fail;
        first = 0;
    }
    return p.data;
fail:
    free(p.data);
    return NULL;
}

static int
req_check(ph_engine *e, ph_engine_req *r, char *what, size_t what_size, ph_error_t *err)
{
    ph_engine_req_what(r, what, what_size);
    r->status = 0;
    r->timed_out = 0;
    if (r->resp)
        *r->resp = NULL;
    if (ph_engine_check(e, what, err) < 0 || check_method(r->method, what, err) < 0)
        return -1;
    if (r->body != NULL && r->read_cb != NULL)
        return ph_bad_input(err, "%s: both a JSON body and a streamed one", what);
    return 0;
}

char *
ph_engine_req_url(ph_engine *e, ph_engine_req *r, char *what, size_t what_size, ph_error_t *err)
{
    ph_cleanup_free char *path = NULL;
    char *url = NULL;

    if (req_check(e, r, what, what_size, err) < 0 || (path = req_path(e, r, what, err)) == NULL)
        return NULL;
    if (ph_engine_ensure_pinged(e, err) < 0) {
        ph_error_wrap(err, "%s", what);
        return NULL;
    }
    if (asprintf(&url, "%s/v%s%s", e->base_url, e->api, path) < 0) {
        ph_fail(err, ENOMEM, "%s: build the URL", what);
        return NULL;
    }
    return url;
}

void
ph_engine_stage_name(const char *method, const char *path, char *out, size_t size)
{
    static const char *const collections[] = { "containers", "images", "networks", "volumes", "exec", "plugins" };
    static const char *const verbs[] = { "json", "create", "prune", "load", "search", "get" };
    size_t o = 0;
    const char *p = path ? path : "";
    int after_collection = 0;

    if (size == 0)
        return;
    o = (size_t)snprintf(out, size, "%s ", method ? method : "?");
    if (o >= size)
        return;
    while (*p && *p != '?' && o + 1 < size) {
        size_t seg = strcspn(p + 1, "/?") + 1; /* "/name" */
        int replace = 0;

        if (p[0] != '/') { /* a path not starting with '/': copy as it is */
            seg = strcspn(p, "?");
        } else if (after_collection && p[1] != '{') {
            replace = 1;
            for (size_t i = 0; i < PH_ARRAY_LEN(verbs); i++)
                if (seg - 1 == strlen(verbs[i]) && strncmp(p + 1, verbs[i], seg - 1) == 0)
                    replace = 0;
        }
        after_collection = 0;
        if (p[0] == '/' && !replace)
            for (size_t i = 0; i < PH_ARRAY_LEN(collections); i++)
                if (seg - 1 == strlen(collections[i]) && strncmp(p + 1, collections[i], seg - 1) == 0)
                    after_collection = 1;
        if (replace)
            o += (size_t)snprintf(out + o, size - o, "/{id}");
        else
            o += (size_t)snprintf(out + o, size - o, "%.*s", (int)seg, p);
        if (o >= size)
            o = size - 1;
        p += seg;
    }
    out[o] = '\0';
}

/* ---- the call ---------------------------------------------------------- */

typedef struct call_ctx {
    CURL *curl;
    ph_engine_req *r;
    ph_engine_buf body;  /* a buffered answer, or the error body of a streamed one */
    long status;
    int data_aborted, read_failed, enough;
    unsigned long long bytes_in, bytes_out;
    ph_engine_watch watch;
} call_ctx;

static size_t
call_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    call_ctx *s = ud;
    size_t n = size * nmemb;

    s->bytes_in += n;
    if (s->r->data_cb == NULL)
        return ph_engine_buf_append(&s->body, ptr, n) < 0 ? 0 : n;
    if (s->status == 0)
        curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
    if (!is_2xx(s->status)) {
        /* Keep what fits of an error body; the rest is noise. */
        size_t room = s->body.max - s->body.len;

        ph_engine_buf_append(&s->body, ptr, n < room ? n : room);
        return n;
    }
    switch (s->r->data_cb(s->r->data_ud, ptr, n)) {
    case 0:
        return n;
    case PH_ENGINE_DATA_ENOUGH:
        s->enough = 1;
        return 0; /* curl ends the transfer and closes the connection */
    default:
        s->data_aborted = 1;
        return 0;
    }
}

static size_t
call_read_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
    call_ctx *s = ud;
    size_t want = size * nmemb;
    ssize_t n = s->r->read_cb(s->r->read_ud, ptr, want);

    if (n < 0 || (size_t)n > want) {
        s->read_failed = 1;
        return CURL_READFUNC_ABORT;
    }
    s->bytes_out += (size_t)n;
    return (size_t)n;
}

static int
is_ok(const ph_engine_req *r, long status)
{
    if (is_2xx(status))
        return 1;
    for (size_t i = 0; i < PH_ARRAY_LEN(r->ok); i++)
        if (r->ok[i] != 0 && r->ok[i] == status)
            return 1;
    return 0;
}

/* Headers, body and callbacks of the request on the prepared handle. */
static int
set_body(ph_engine *e, ph_engine_req *r, call_ctx *s, const char *what, char **payload, struct curl_slist **hdrs,
         ph_error_t *err)
{
    CURL *c = e->curl;
    struct curl_slist *l;

    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, call_write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
    if (r->content_type) {
        char ct[256];

        if (strlen(r->content_type) > 200 || strpbrk(r->content_type, "\r\n"))
            return ph_bad_input(err, "%s: bad content type `%.200s`", what, r->content_type);
        snprintf(ct, sizeof ct, "Content-Type: %s", r->content_type);
        if ((l = curl_slist_append(*hdrs, ct)) == NULL)
            return ph_fail(err, ENOMEM, "%s: allocate", what);
        *hdrs = l;
    }
    if (r->registry_auth) {
        char ra[1100];

        if (strlen(r->registry_auth) > 1024 || strpbrk(r->registry_auth, "\r\n"))
            return ph_bad_input(err, "%s: bad registry credentials header", what);
        snprintf(ra, sizeof ra, "X-Registry-Auth: %s", r->registry_auth);
        if ((l = curl_slist_append(*hdrs, ra)) == NULL)
            return ph_fail(err, ENOMEM, "%s: allocate", what);
        *hdrs = l;
    }
    if (r->body != NULL) {
        *payload = json_dumps(r->body, JSON_COMPACT);
        if (*payload == NULL)
            return ph_fail(err, ENOMEM, "%s: encode the request as JSON", what);
        if ((l = curl_slist_append(*hdrs, "Content-Type: application/json")) == NULL)
            return ph_fail(err, ENOMEM, "%s: allocate", what);
        *hdrs = l;
        s->bytes_out = strlen(*payload);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, *payload);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->bytes_out);
    } else if (r->read_cb != NULL) {
        /* UPLOAD makes it a PUT; CUSTOMREQUEST (set in prepare) renames it. */
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, call_read_cb);
        curl_easy_setopt(c, CURLOPT_READDATA, s);
        if (r->body_len >= 0) {
            curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
        } else {
            if ((l = curl_slist_append(*hdrs, "Transfer-Encoding: chunked")) == NULL)
                return ph_fail(err, ENOMEM, "%s: allocate", what);
            *hdrs = l;
        }
        /* The Engine does not send 100 Continue; don't wait a second for it. */
        if ((l = curl_slist_append(*hdrs, "Expect:")) == NULL)
            return ph_fail(err, ENOMEM, "%s: allocate", what);
        *hdrs = l;
    } else if (strcmp(r->method, "POST") == 0 || strcmp(r->method, "PUT") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
    }
    if (*hdrs)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
    return 0;
}

/* What the finished transfer means. */
static int
call_result(ph_engine *e, ph_engine_req *r, call_ctx *s, CURLcode rc, const char *what, long timeout_s,
            ph_error_t *err)
{
    if (s->status == 0)
        curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &s->status);
    r->status = s->status;
    if (rc == CURLE_ABORTED_BY_CALLBACK && ph_engine_watch_error(e, &s->watch, what, err) < 0)
        return -1;
    if (s->enough && is_2xx(s->status))
        return 0;
    if (s->data_aborted) {
        /* The callback may have made the error itself (callers hand it
         * their err through the user data); keep theirs if so. */
        return ph_fail(err, 0, "%s: the data callback gave up", what);
    }
    if (s->read_failed)
        return ph_fail(err, 0, "%s: reading the request body failed", what);
    if (rc == CURLE_OPERATION_TIMEDOUT && r->timeout_ok) {
        r->timed_out = 1;
        return 0;
    }
    if (rc == CURLE_WRITE_ERROR && s->body.overflow)
        return ph_fail(err, 0, "%s: the Engine's answer exceeds %zu bytes", what, s->body.max);
    if (rc == CURLE_WRITE_ERROR && s->body.oom)
        return ph_fail(err, ENOMEM, "%s: buffer the Engine's answer", what);
    /* The Engine may answer an error before reading the whole upload; its
     * message matters more than curl's complaint about that. */
    if (rc != CURLE_OK && (r->data_cb == NULL || s->status == 0 || is_2xx(s->status)))
        return ph_engine_transport_error(e, e->curl, e->errbuf, rc, what, timeout_s, err);
    if (!is_ok(r, s->status))
        return ph_engine_http_error(e, what, s->status, s->body.data ? s->body.data : "", s->body.len, err);
    if (!is_2xx(s->status))
        return 0; /* an answer the caller asked for: 304, 404 */
    if (r->resp && r->data_cb == NULL && s->body.len > 0) {
        json_error_t je;

        *r->resp = json_loadb(s->body.data, s->body.len, 0, &je);
        if (*r->resp == NULL)
            return ph_fail(err, 0, "%s: the Engine's answer is not JSON: %s (at byte %d)", what, je.text,
                           je.position);
    }
    return 0;
}

/* ---- timing: every call a stage --------------------------------------------- */

ph_stage *
ph_engine_stage_begin(const ph_engine_req *r, unsigned flags)
{
    char name[300];
    ph_stage *st;

    if (!ph_timing_recording())
        return NULL;
    if (r->raw)
        ph_engine_stage_name(r->method, r->path, name, sizeof name);
    else
        snprintf(name, sizeof name, "%s %s", r->method, r->path);
    if ((st = ph_stage_begin("engine", name, flags)) == NULL)
        return NULL;
    ph_stage_attr(st, "http.request.method", r->method);
    if (r->kind && r->arg[0]) {
        /* What the call is about, for exporters. */
        if (strncmp(r->kind, "container", 9) == 0)
            ph_stage_attr(st, strstr(r->kind, "name") ? "container.name" : "container.id", r->arg[0]);
        else if (strncmp(r->kind, "image", 5) == 0)
            ph_stage_attr(st, "container.image.name", r->arg[0]);
    }
    return st;
}

void
ph_engine_stage_end(ph_stage *st, long status, unsigned long long in, unsigned long long out, int failed,
                    ph_error_t *err)
{
    char code[16];

    if (st == NULL)
        return;
    ph_stage_bytes(st, in, out);
    if (status) {
        snprintf(code, sizeof code, "%ld", status);
        ph_stage_attr(st, "http.response.status_code", code);
    }
    if (failed)
        ph_stage_fail(st, err && *err ? (*err)->msg : "failed");
    ph_stage_end(st);
}

int
ph_engine_call(ph_engine *e, ph_engine_req *r, ph_error_t *err)
{
    char what[600];
    ph_cleanup_free char *url = NULL, *payload = NULL;
    cleanup_slist struct curl_slist *hdrs = NULL;
    call_ctx s = { .r = r };
    ph_stage *st = NULL;
    long timeout_s;
    CURLcode rc;
    int ret;

    if ((url = ph_engine_req_url(e, r, what, sizeof what, err)) == NULL)
        return -1;
    timeout_s = r->timeout_s == 0 ? PH_ENGINE_DEFAULT_TIMEOUT_S : r->timeout_s > 0 ? r->timeout_s : 0;
    s.curl = e->curl;
    s.body.max = r->data_cb ? ERR_BODY_MAX : e->max_body;
    if (prepare(e, what, r->method, url, timeout_s, err) < 0)
        return -1;
    if (set_body(e, r, &s, what, &payload, &hdrs, err) < 0)
        return -1;
    ph_engine_watch_setup(e->curl, &s.watch, r->quiet ? 0 : e->stall_s);
    st = ph_engine_stage_begin(r, 0);
    rc = curl_easy_perform(e->curl);
    ret = call_result(e, r, &s, rc, what, timeout_s, err);
    ph_engine_stage_end(st, r->status, s.bytes_in, s.bytes_out, ret < 0, err);
    free(s.body.data);
    return ret;
}
