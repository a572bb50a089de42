/* ph_otlp.c - stages as OpenTelemetry spans over OTLP/HTTP (see ph_otlp.h).
 *
 * Field numbers are those of opentelemetry-proto's
 * collector/trace/v1/trace_service.proto, trace/v1/trace.proto,
 * resource/v1/resource.proto and common/v1/common.proto.  A nested message
 * is encoded into a buffer of its own and appended with its length, which
 * costs a copy per level (five levels) and keeps the encoder obvious.
 */
#include "ph_otlp.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ph_log.h"

#define SCOPE_NAME "profharness"
#define SCOPE_VERSION "0.1.0"
#define DEFAULT_TIMEOUT_MS 10000L
#define REPLY_MAX 4096u

/* ---- configuration ------------------------------------------------------- */

/* The signal-specific variable, else the general one. */
static const char *
env2(const char *traces, const char *general)
{
    const char *v = getenv(traces);

    if (v && v[0])
        return v;
    v = getenv(general);
    return v && v[0] ? v : NULL;
}

static int
hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decode S[0..N) into a new string, trimming blanks around it. */
static char *
pct_decode(const char *s, size_t n)
{
    char *out, *o;

    while (n > 0 && isspace((unsigned char)*s))
        s++, n--;
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    out = o = malloc(n + 1);
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            *o++ = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            *o++ = s[i];
        }
    }
    *o = '\0';
    return out;
}

/* "k=v,k2=v2" (W3C baggage-like, as OTEL_RESOURCE_ATTRIBUTES and the
 * headers are specified) into OUT.  An entry without '=' or with an empty
 * key is bad input naming VAR. */
static int
parse_pairs(const char *var, const char *s, ph_kvv *out, ph_error_t *err)
{
    const char *p = s;

    while (p && *p) {
        const char *end = strchr(p, ','), *eq;
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char *k = NULL, *v = NULL;
        int rc;

        eq = memchr(p, '=', n);
        if (n > 0 && strspn(p, " \t") < n) {
            if (eq == NULL)
                return ph_bad_input(err, "%s=`%s`: `%.*s` is not key=value", var, s, (int)n, p);
            k = pct_decode(p, (size_t)(eq - p));
            v = pct_decode(eq + 1, n - (size_t)(eq - p) - 1);
            if (k == NULL || v == NULL) {
                free(k);
                free(v);
                return ph_fail(err, ENOMEM, "read %s", var);
            }
            if (k[0] == '\0' || strpbrk(k, "\r\n:") || strpbrk(v, "\r\n")) {
                free(k);
                free(v);
                return ph_bad_input(err, "%s=`%s`: `%.*s` has an empty key or a line break", var, s, (int)n, p);
            }
            rc = ph_kvv_set(out, k, v);
            free(k);
            free(v);
            if (rc < 0)
                return ph_fail(err, ENOMEM, "read %s", var);
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

int
ph_otlp_config_from_env(ph_otlp_config *c, ph_error_t *err)
{
    const char *disabled = getenv("OTEL_SDK_DISABLED"), *ep, *proto, *to, *v;
    char *endp = NULL;

    memset(c, 0, sizeof *c);
    if (disabled && strcasecmp(disabled, "true") == 0)
        return 0;
    if ((ep = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) && ep[0]) {
        if (strlen(ep) >= sizeof c->url)
            return ph_bad_input(err, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: longer than %zu bytes", sizeof c->url - 1);
        snprintf(c->url, sizeof c->url, "%s", ep);
    } else if ((ep = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) && ep[0]) {
        size_t l = strlen(ep);

        if (l + 11 >= sizeof c->url)
            return ph_bad_input(err, "OTEL_EXPORTER_OTLP_ENDPOINT: longer than %zu bytes", sizeof c->url - 12);
        snprintf(c->url, sizeof c->url, "%s%sv1/traces", ep, ep[l - 1] == '/' ? "" : "/");
    } else {
        return 0;
    }
    if (strncmp(c->url, "http://", 7) != 0 && strncmp(c->url, "https://", 8) != 0)
        return ph_bad_input(err, "OTLP endpoint `%s`: expected an http:// or https:// URL", c->url);
    proto = env2("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL");
    if (proto == NULL || strcmp(proto, "http/protobuf") == 0)
        c->json = 0;
    else if (strcmp(proto, "http/json") == 0)
        c->json = 1;
    else
        return ph_bad_input(err, "OTEL_EXPORTER_OTLP_PROTOCOL=`%s`: profharness exports over http/protobuf or "
                                 "http/json (not grpc)", proto);
    c->timeout_ms = DEFAULT_TIMEOUT_MS;
    if ((to = env2("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")) != NULL) {
        errno = 0;
        c->timeout_ms = strtol(to, &endp, 10);
        if (errno || endp == to || *endp != '\0' || c->timeout_ms < 0)
            return ph_bad_input(err, "OTEL_EXPORTER_OTLP_TIMEOUT=`%s`: expected milliseconds", to);
        if (c->timeout_ms == 0 || c->timeout_ms > 600000)
            c->timeout_ms = 600000; /* "no limit" is not for a CLI: ten minutes at most */
    }
    if ((v = env2("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE")) != NULL)
        snprintf(c->ca_file, sizeof c->ca_file, "%s", v);
    /* General headers first, then the signal's: the signal's win. */
    if (parse_pairs("OTEL_EXPORTER_OTLP_HEADERS", getenv("OTEL_EXPORTER_OTLP_HEADERS"), &c->headers, err) < 0 ||
        parse_pairs("OTEL_EXPORTER_OTLP_TRACES_HEADERS", getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS"), &c->headers,
                    err) < 0)
        goto fail;
    if (ph_kvv_set(&c->resource, "service.name", "profharness") < 0 ||
        parse_pairs("OTEL_RESOURCE_ATTRIBUTES", getenv("OTEL_RESOURCE_ATTRIBUTES"), &c->resource, err) < 0)
        goto fail;
    if ((v = getenv("OTEL_SERVICE_NAME")) && v[0] && ph_kvv_set(&c->resource, "service.name", v) < 0)
        goto fail;
    return 1;
fail:
    ph_otlp_config_free(c);
    if (err && *err == NULL)
        ph_fail(err, ENOMEM, "read the OpenTelemetry settings");
    return -1;
}

void
ph_otlp_config_free(ph_otlp_config *c)
{
    ph_kvv_free(&c->headers);
    ph_kvv_free(&c->resource);
}

/* ---- the trace ------------------------------------------------------------ */

void
ph_otlp_hex(const unsigned char *id, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
}

static int
unhex(const char *s, size_t n, unsigned char *out)
{
    int nonzero = 0;

    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

        /* Lowercase only, as the W3C specification says. */
        if (hi < 0 || lo < 0 || isupper((unsigned char)s[2 * i]) || isupper((unsigned char)s[2 * i + 1]))
            return -1;
        out[i] = (unsigned char)(hi * 16 + lo);
        nonzero |= out[i];
    }
    return nonzero ? 0 : -1; /* all zero is invalid */
}

int
ph_otlp_traceparent_parse(const char *s, ph_otlp_trace *t)
{
    unsigned char tid[16], pid[8], ver[1];

    /* version "-" trace-id(32) "-" parent-id(16) "-" flags(2); a version
     * above 00 may append "-..." fields, 00 may not; ff is invalid. */
    if (s == NULL || strlen(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-')
        return -1;
    if (hexval(s[0]) < 0 || hexval(s[1]) < 0 || (s[0] == 'f' && s[1] == 'f'))
        return -1;
    ver[0] = (unsigned char)(hexval(s[0]) * 16 + hexval(s[1]));
    if ((ver[0] == 0 && s[55] != '\0') || (ver[0] != 0 && s[55] != '\0' && s[55] != '-'))
        return -1;
    if (unhex(s + 3, 16, tid) < 0 || unhex(s + 36, 8, pid) < 0 || hexval(s[53]) < 0 || hexval(s[54]) < 0)
        return -1;
    memcpy(t->trace_id, tid, sizeof tid);
    memcpy(t->parent_span_id, pid, sizeof pid);
    return 0;
}

static ph_otlp_trace current_trace;
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;

static void
trace_init(void)
{
    const char *tp = getenv("TRACEPARENT"), *ts = getenv("TRACESTATE");

    if (tp && ph_otlp_traceparent_parse(tp, &current_trace) == 0) {
        if (ts && strlen(ts) < sizeof current_trace.trace_state && !strpbrk(ts, "\r\n"))
            snprintf(current_trace.trace_state, sizeof current_trace.trace_state, "%s", ts);
        return;
    }
    if (tp && tp[0])
        ph_debug("TRACEPARENT=`%.100s` is not a W3C traceparent; starting a new trace", tp);
    if (getrandom(current_trace.trace_id, sizeof current_trace.trace_id, GRND_NONBLOCK) != 16) {
        struct timespec ts2;

        clock_gettime(CLOCK_REALTIME, &ts2);
        for (int i = 0; i < 16; i++)
            current_trace.trace_id[i] = (unsigned char)((ts2.tv_nsec >> (i % 4 * 8)) ^ (getpid() >> (i % 2 * 8)) ^ i);
    }
    current_trace.trace_id[15] |= 1; /* never all zero */
}

const ph_otlp_trace *
ph_otlp_trace_current(void)
{
    pthread_once(&trace_once, trace_init);
    return &current_trace;
}

/* ---- protobuf ------------------------------------------------------------- */

typedef struct pb {
    unsigned char *d;
    size_t len, cap;
    int oom;
} pb;

static void
pb_raw(pb *b, const void *p, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        unsigned char *d;

        while (cap < b->len + n)
            cap *= 2;
        if ((d = realloc(b->d, cap)) == NULL) {
            b->oom = 1;
            return;
        }
        b->d = d;
        b->cap = cap;
    }
    memcpy(b->d + b->len, p, n);
    b->len += n;
}

static void
pb_varint(pb *b, uint64_t v)
{
    unsigned char buf[10];
    size_t n = 0;

    do {
        buf[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pb_raw(b, buf, n);
}

static void
pb_tag(pb *b, unsigned field, unsigned wire)
{
    pb_varint(b, (uint64_t)field << 3 | wire);
}

static void
pb_bytes(pb *b, unsigned field, const void *p, size_t n)
{
    pb_tag(b, field, 2);
    pb_varint(b, n);
    pb_raw(b, p, n);
}

static void
pb_str(pb *b, unsigned field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

static void
pb_fixed64(pb *b, unsigned field, uint64_t v)
{
    unsigned char le[8];

    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(v >> (8 * i));
    pb_tag(b, field, 1);
    pb_raw(b, le, 8);
}

/* Append SUB as field FIELD of B, and free SUB. */
static void
pb_msg(pb *b, unsigned field, pb *sub)
{
    if (sub->oom)
        b->oom = 1;
    else
        pb_bytes(b, field, sub->d, sub->len);
    free(sub->d);
    memset(sub, 0, sizeof *sub);
}

/* KeyValue{1 key, 2 AnyValue{1 string_value | 2 bool_value | 3 int_value}} */
enum { AV_STR, AV_BOOL, AV_INT };

static void
pb_kv(pb *b, unsigned field, const char *key, int type, const char *s, int64_t i)
{
    pb kv = { 0 }, av = { 0 };

    pb_str(&kv, 1, key);
    if (type == AV_STR) {
        pb_str(&av, 1, s);
    } else {
        pb_tag(&av, type == AV_BOOL ? 2 : 3, 0);
        pb_varint(&av, (uint64_t)i);
    }
    pb_msg(&kv, 2, &av);
    pb_msg(b, field, &kv);
}

/* ---- spans, as data both encodings share ---------------------------------- */

typedef struct span_attr {
    const char *key;
    int type;
    const char *s;
    int64_t i;
} span_attr;

#define SPAN_ATTRS (PH_STAGE_ATTRS + 8)

/* The attributes of S as a span's. */
static size_t
span_attrs(const ph_stage *s, span_attr *a)
{
    size_t n = 0;

    a[n++] = (span_attr){ "profharness.category", AV_STR, s->category, 0 };
    if (s->bytes_in)
        a[n++] = (span_attr){ "profharness.bytes_in", AV_INT, NULL, (int64_t)s->bytes_in };
    if (s->bytes_out)
        a[n++] = (span_attr){ "profharness.bytes_out", AV_INT, NULL, (int64_t)s->bytes_out };
    if (s->flags & PH_STAGE_CONCURRENT)
        a[n++] = (span_attr){ "profharness.concurrent", AV_BOOL, NULL, 1 };
    for (int i = 0; i < PH_STAGE_ATTRS && s->attr_key[i]; i++)
        if (s->attr_val[i])
            a[n++] = (span_attr){ s->attr_key[i], AV_STR, s->attr_val[i], 0 };
    return n;
}

static int
span_kind(const ph_stage *s)
{
    return strcmp(s->category, "engine") == 0 ? 3 /* CLIENT */ : 1 /* INTERNAL */;
}

static uint64_t
unix_ns(uint64_t mono)
{
    return (uint64_t)((int64_t)mono + ph_timing_epoch_offset_ns());
}

static void
pb_span(pb *b, const ph_stage *s, const ph_otlp_trace *t)
{
    static const unsigned char zero[8];
    pb sp = { 0 }, st = { 0 };
    span_attr a[SPAN_ATTRS];
    size_t n = span_attrs(s, a);

    pb_bytes(&sp, 1, t->trace_id, 16);
    pb_bytes(&sp, 2, s->span_id, 8);
    if (s->parent == NULL && t->trace_state[0])
        pb_str(&sp, 3, t->trace_state);
    if (s->parent)
        pb_bytes(&sp, 4, s->parent->span_id, 8);
    else if (memcmp(t->parent_span_id, zero, 8) != 0)
        pb_bytes(&sp, 4, t->parent_span_id, 8);
    pb_str(&sp, 5, s->name);
    pb_tag(&sp, 6, 0);
    pb_varint(&sp, (uint64_t)span_kind(s));
    pb_fixed64(&sp, 7, unix_ns(s->start_ns));
    pb_fixed64(&sp, 8, unix_ns(ph_stage_end_ns(s)));
    for (size_t i = 0; i < n; i++)
        pb_kv(&sp, 9, a[i].key, a[i].type, a[i].s, a[i].i);
    if (s->failed) { /* Status{2 message, 3 code = ERROR (2)} */
        if (s->error)
            pb_str(&st, 2, s->error);
        pb_tag(&st, 3, 0);
        pb_varint(&st, 2);
        pb_msg(&sp, 15, &st);
    }
    pb_msg(b, 2, &sp); /* ScopeSpans.spans */
    for (const ph_stage *c = s->first_child; c; c = c->next)
        pb_span(b, c, t);
}

static unsigned char *
encode_proto(const ph_stage *tree, const ph_otlp_config *c, const ph_otlp_trace *t, size_t *len)
{
    pb req = { 0 }, rs = { 0 }, res = { 0 }, ss = { 0 }, scope = { 0 };

    for (size_t i = 0; i < c->resource.n; i++)
        pb_kv(&res, 1, c->resource.v[i].key, AV_STR, c->resource.v[i].value ? c->resource.v[i].value : "", 0);
    pb_str(&scope, 1, SCOPE_NAME);
    pb_str(&scope, 2, SCOPE_VERSION);
    pb_msg(&ss, 1, &scope);
    pb_span(&ss, tree, t);
    pb_msg(&rs, 1, &res);  /* ResourceSpans.resource */
    pb_msg(&rs, 2, &ss);   /* ResourceSpans.scope_spans */
    pb_msg(&req, 1, &rs);  /* ExportTraceServiceRequest.resource_spans */
    if (req.oom) {
        free(req.d);
        return NULL;
    }
    *len = req.len;
    return req.d;
}

/* ---- JSON ----------------------------------------------------------------- */

static json_t *
json_kv(const char *key, int type, const char *s, int64_t i)
{
    char num[32];

    if (type == AV_STR)
        return json_pack("{s:s, s:{s:s}}", "key", key, "value", "stringValue", s);
    if (type == AV_BOOL)
        return json_pack("{s:s, s:{s:b}}", "key", key, "value", "boolValue", (int)i);
    snprintf(num, sizeof num, "%lld", (long long)i); /* int64 travels as a string */
    return json_pack("{s:s, s:{s:s}}", "key", key, "value", "intValue", num);
}

static int
json_spans(json_t *arr, const ph_stage *s, const ph_otlp_trace *t)
{
    static const unsigned char zero[8];
    char tid[33], sid[17], pid[17], start[32], end[32];
    span_attr a[SPAN_ATTRS];
    size_t n = span_attrs(s, a);
    json_t *attrs = json_array(), *span;

    if (attrs == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (json_array_append_new(attrs, json_kv(a[i].key, a[i].type, a[i].s, a[i].i)) < 0) {
            json_decref(attrs);
            return -1;
        }
    ph_otlp_hex(t->trace_id, 16, tid);
    ph_otlp_hex(s->span_id, 8, sid);
    snprintf(start, sizeof start, "%llu", (unsigned long long)unix_ns(s->start_ns));
    snprintf(end, sizeof end, "%llu", (unsigned long long)unix_ns(ph_stage_end_ns(s)));
    span = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:o}", "traceId", tid, "spanId", sid, "name", s->name, "kind",
                     span_kind(s), "startTimeUnixNano", start, "endTimeUnixNano", end, "attributes", attrs);
    if (span == NULL)
        return -1;
    pid[0] = '\0';
    if (s->parent)
        ph_otlp_hex(s->parent->span_id, 8, pid);
    else if (memcmp(t->parent_span_id, zero, 8) != 0)
        ph_otlp_hex(t->parent_span_id, 8, pid);
    if (pid[0])
        json_object_set_new(span, "parentSpanId", json_string(pid));
    if (s->parent == NULL && t->trace_state[0])
        json_object_set_new(span, "traceState", json_string(t->trace_state));
    if (s->failed)
        json_object_set_new(span, "status", json_pack("{s:i, s:s}", "code", 2, "message", s->error ? s->error : ""));
    if (json_array_append_new(arr, span) < 0)
        return -1;
    for (const ph_stage *c = s->first_child; c; c = c->next)
        if (json_spans(arr, c, t) < 0)
            return -1;
    return 0;
}

static unsigned char *
encode_json(const ph_stage *tree, const ph_otlp_config *c, const ph_otlp_trace *t, size_t *len)
{
    json_t *res = json_array(), *spans = json_array(), *doc = NULL;
    char *text = NULL;

    if (res == NULL || spans == NULL)
        goto out;
    for (size_t i = 0; i < c->resource.n; i++)
        if (json_array_append_new(res, json_kv(c->resource.v[i].key, AV_STR,
                                               c->resource.v[i].value ? c->resource.v[i].value : "", 0)) < 0)
            goto out;
    if (json_spans(spans, tree, t) < 0)
        goto out;
    doc = json_pack("{s:[{s:{s:o}, s:[{s:{s:s, s:s}, s:o}]}]}", "resourceSpans", "resource", "attributes", res,
                    "scopeSpans", "scope", "name", SCOPE_NAME, "version", SCOPE_VERSION, "spans", spans);
    res = spans = NULL;
    if (doc == NULL)
        goto out;
    text = json_dumps(doc, JSON_COMPACT);
    if (text)
        *len = strlen(text);
out:
    json_decref(res);
    json_decref(spans);
    json_decref(doc);
    return (unsigned char *)text;
}

unsigned char *
ph_otlp_encode(const ph_stage *tree, const ph_otlp_config *c, const ph_otlp_trace *t, size_t *len)
{
    *len = 0;
    if (tree == NULL)
        return NULL;
    return c->json ? encode_json(tree, c, t, len) : encode_proto(tree, c, t, len);
}

/* ---- export ---------------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_rc = CURLE_FAILED_INIT;

static void
curl_init_once(void)
{
    curl_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

typedef struct reply {
    char d[REPLY_MAX];
    size_t len;
} reply;

static size_t
reply_cb(char *p, size_t size, size_t nmemb, void *ud)
{
    reply *r = ud;
    size_t n = size * nmemb, room = sizeof r->d - 1 - r->len;

    memcpy(r->d + r->len, p, n < room ? n : room);
    r->len += n < room ? n : room;
    r->d[r->len] = '\0';
    return n; /* the rest is drained and dropped */
}

static int
post(const ph_otlp_config *c, const unsigned char *body, size_t len)
{
    char errbuf[CURL_ERROR_SIZE] = "", hdr[4096];
    struct curl_slist *hdrs = NULL, *l;
    reply r = { .len = 0 };
    long status = 0;
    CURL *h;
    CURLcode rc;

    pthread_once(&curl_once, curl_init_once);
    if (curl_rc != CURLE_OK || (h = curl_easy_init()) == NULL) {
        ph_warn("OpenTelemetry: no export to %s: libcurl did not initialise", c->url);
        return -1;
    }
    l = curl_slist_append(hdrs, c->json ? "Content-Type: application/json" : "Content-Type: application/x-protobuf");
    hdrs = l ? l : hdrs;
    l = curl_slist_append(hdrs, "Expect:");
    hdrs = l ? l : hdrs;
    for (size_t i = 0; i < c->headers.n; i++) {
        snprintf(hdr, sizeof hdr, "%s: %s", c->headers.v[i].key, c->headers.v[i].value ? c->headers.v[i].value : "");
        l = curl_slist_append(hdrs, hdr);
        hdrs = l ? l : hdrs;
    }
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, reply_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
    if (c->ca_file[0])
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    if (rc != CURLE_OK) {
        ph_warn("OpenTelemetry: the spans were not exported to %s: %s (the command's result stands)", c->url,
                errbuf[0] ? errbuf : curl_easy_strerror(rc));
        return -1;
    }
    if (status < 200 || status > 299) {
        while (r.len > 0 && (r.d[r.len - 1] == '\n' || r.d[r.len - 1] == '\r'))
            r.d[--r.len] = '\0';
        ph_warn("OpenTelemetry: the collector at %s answered HTTP %ld%s%.200s (the command's result stands)", c->url,
                status, r.len && c->json ? ": " : "", c->json ? r.d : "");
        return -1;
    }
    return 1;
}

int
ph_otlp_export(const ph_stage *tree)
{
    ph_otlp_config c;
    ph_error_t err = NULL;
    unsigned char *body;
    size_t len = 0;
    int rc;

    if (tree == NULL)
        return 0;
    rc = ph_otlp_config_from_env(&c, &err);
    if (rc <= 0) {
        if (rc < 0)
            ph_warn("OpenTelemetry: no export: %s", err->msg);
        ph_error_free(&err);
        return rc;
    }
    body = ph_otlp_encode(tree, &c, ph_otlp_trace_current(), &len);
    if (body == NULL) {
        ph_warn("OpenTelemetry: no export: out of memory encoding the spans");
        ph_otlp_config_free(&c);
        return -1;
    }
    rc = post(&c, body, len);
    free(body);
    ph_otlp_config_free(&c);
    return rc;
}
