/* ph_engine_int.h - inside the Engine client: one way to describe a request,
 * and the transport that carries it.  For harness/engine/ only.
 *
 * Every endpoint is a ph_engine_req filled in and handed to ph_engine_call:
 *
 *     ph_engine_req r = { .what = "start container `{}`", .method = "POST",
 *                         .path = "/containers/{id}/start", .arg = { id },
 *                         .kind = "container id", .ok = { 304 } };
 *     return ph_engine_call(e, &r, err);
 *
 * ph_engine_call checks the arguments, escapes them into the path template,
 * adds the query, pings once (API negotiation), sends the request over the
 * endpoint's transport (unix socket, tcp, TLS: ph_engine_transport.c),
 * bounds and decodes the answer, and makes the error in the caller's terms.
 * The path template with the method ("POST /containers/{id}/start") is what
 * the call is known by, in messages about our own limits and in timings.
 */
#ifndef PH_ENGINE_INT_H
#define PH_ENGINE_INT_H

#include <curl/curl.h>
#include <stddef.h>

#include "ph_engine.h"
#include "ph_engine_endpoint.h"
#include "ph_timing.h"

#define PH_ENGINE_DEFAULT_TIMEOUT_S 120L
#define PH_ENGINE_NO_TIMEOUT (-1L)  /* ph_engine_req.timeout_s: run until done */
#define PH_ENGINE_NAME_MAX 4096u    /* ids, names, container paths */

struct ph_engine {
    ph_engine_endpoint ep; /* where the Engine is and how to reach it */
    CURL *curl;            /* reset before each request, never closed: the connection is reused */
    char *base_url;        /* http://localhost (unix), http(s)://HOST:PORT[/PATH] (tcp) */
    char api[16];          /* negotiated version, "" until the first ping */
    size_t max_body;
    long stall_s;          /* a transfer moving less than a byte a second this long has stalled */
    char where[1400];      /* the host, and the context and TLS when they matter, for messages */
    char errbuf[CURL_ERROR_SIZE];
};

/* A growable buffer that refuses to pass MAX (and says so). */
typedef struct ph_engine_buf {
    char *data;
    size_t len, cap, max;
    int overflow, oom;
} ph_engine_buf;

int ph_engine_buf_append(ph_engine_buf *b, const char *p, size_t n);

typedef struct ph_engine_query {
    const char *key;
    const char *value; /* escaped; NULL leaves the pair out unless KIND is set */
    const char *kind;  /* set: the value is required and checked like a path argument */
} ph_engine_query;
#define PH_ENGINE_Q(k, v) ((ph_engine_query){ .key = (k), .value = (v), .kind = NULL })

typedef struct ph_engine_req {
    /* What is attempted, in the caller's terms; "{}" is replaced by arg[0]
     * (its first 200 bytes). */
    const char *what;
    const char *method; /* GET POST PUT DELETE HEAD */
    /* The endpoint template.  Each "{...}" takes the next arg, checked
     * (present, non-empty, at most PH_ENGINE_NAME_MAX bytes) and escaped.
     * RAW: the path is the caller's, taken as it is (ph_engine_request). */
    const char *path;
    int raw;
    const char *arg[2];
    const char *kind;          /* what arg[0] is, for messages ("container id") */
    ph_engine_query query[6];  /* ?key=value&..., in order */
    json_t *body;              /* a JSON request body, or NULL */
    const char *registry_auth; /* X-Registry-Auth (base64 of the credentials' JSON), or NULL */
    long timeout_s;            /* > 0 seconds; 0 PH_ENGINE_DEFAULT_TIMEOUT_S; PH_ENGINE_NO_TIMEOUT */
    /* The Engine works before it answers (a wait, a stop's grace, a build
     * step): silence is bounded by timeout_s, not by the stall limit. */
    int quiet;
    long ok[2];                /* statuses that are answers, not errors: 304 (already), 404 (gone) */
    int timeout_ok;            /* a timeout is an answer: timed_out = 1, returns 0 */
    json_t **resp;             /* the decoded JSON answer (NULL for an empty one); NULL: discarded */
    /* Streaming: a body read as it is sent, an answer handed on as it comes. */
    const char *content_type;
    ph_engine_read_cb read_cb;
    void *read_ud;
    long long body_len;        /* -1: unknown, sent chunked */
    ph_engine_data_cb data_cb; /* set: the answer is streamed, not decoded */
    void *data_ud;
    /* Results. */
    long status;               /* the HTTP status, 0 when none came */
    int timed_out;
} ph_engine_req;

/* Send R and take its answer.  0 on a 2xx answer or one of R->ok (then
 * R->status tells which), -1 and *err otherwise; R->status is set either
 * way.  On a streamed call whose data callback fails, an error the
 * callback made in *err is kept. */
int ph_engine_call(ph_engine *e, ph_engine_req *r, ph_error_t *err);

/* R's what with "{}" replaced ("start container `x`"). */
void ph_engine_req_what(const ph_engine_req *r, char *out, size_t size);

/* The full versioned URL of R (malloc'd), pinging first if need be; for
 * callers that drive their own handle (the race-free wait).  WHAT is R's
 * formatted what (at least 300 bytes). */
char *ph_engine_req_url(ph_engine *e, ph_engine_req *r, char *what, size_t what_size, ph_error_t *err);

/* The progress callback of every transfer: it ends one that an interrupt
 * came during (the count of ph_interrupt_count changed since SIGNALS) and,
 * unless STALL_S is 0, one that moved less than a byte a second for
 * STALL_S seconds.  Set with ph_engine_watch_setup; read the verdict in
 * interrupted (the signal) and stalled. */
typedef struct ph_engine_watch {
    int signals;
    long stall_s;
    double mark_t;              /* monotonic seconds of the window's start */
    unsigned long long mark_bytes;
    int interrupted, stalled;
} ph_engine_watch;

/* CLOCK_MONOTONIC in seconds. */
double ph_engine_now_mono(void);

void ph_engine_watch_setup(CURL *c, ph_engine_watch *w, long stall_s);
/* The error of a transfer the watch ended (the return value is -1), or 0
 * if it ended on its own. */
int ph_engine_watch_error(const ph_engine *e, const ph_engine_watch *w, const char *what, ph_error_t *err);

/* Point handle C at E's endpoint: unix socket or TCP, TLS material and
 * verification, protocol restrictions, connect timeout, no signals. */
void ph_engine_transport_setup(const ph_engine *e, CURL *c, char *errbuf);

/* curl's failure of a request, in the caller's terms, with a hint where the
 * user can act (start an Engine, fix DOCKER_HOST or the TLS material). */
int ph_engine_transport_error(const ph_engine *e, CURL *c, const char *errbuf, CURLcode rc, const char *what,
                              long timeout_s, ph_error_t *err);

/* A non-2xx answer: the Engine's JSON `message`, or the body's first bytes. */
int ph_engine_http_error(const ph_engine *e, const char *what, long status, const char *body, size_t len,
                         ph_error_t *err);

/* A data callback that drops what it is given. */
int ph_engine_discard_cb(void *ud, const char *data, size_t len);

/* The exit code out of a wait's answer {"StatusCode":N,"Error":{"Message":..}}. */
int ph_engine_wait_result(const char *what, json_t *resp, long *exit_code, ph_error_t *err);

/* Bad-input checks shared by the endpoints. */
int ph_engine_check(const ph_engine *e, const char *what, ph_error_t *err);
int ph_engine_check_str(const char *s, const char *what, const char *kind, ph_error_t *err);

int ph_engine_ensure_pinged(ph_engine *e, ph_error_t *err);

/* Every call is a timing stage ("engine", METHOD and the endpoint
 * template, bytes both ways, the status, what it is about); NULL when no
 * command is being timed.  _end records and ends it (FAILED: with *err's
 * message). */
ph_stage *ph_engine_stage_begin(const ph_engine_req *r, unsigned flags);
void ph_engine_stage_end(ph_stage *st, long status, unsigned long long in, unsigned long long out, int failed,
                         ph_error_t *err);

/* The stage name of a request: METHOD and the endpoint template, with the
 * ids of a raw path replaced by {id} and the query left out
 * ("POST /containers/{id}/start").  Always NUL-terminates OUT. */
void ph_engine_stage_name(const char *method, const char *path, char *out, size_t size);

#endif
