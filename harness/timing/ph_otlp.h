/* ph_otlp.h - a command's stages as OpenTelemetry spans, over OTLP/HTTP.
 *
 * Configured by the standard environment, as every OpenTelemetry SDK is:
 *   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it is) or
 *   OTEL_EXPORTER_OTLP_ENDPOINT (+ "/v1/traces"): export only when one is set;
 *   OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL: http/protobuf (default), http/json;
 *   OTEL_EXPORTER_OTLP_[TRACES_]HEADERS: "k=v,k2=v2", values percent-decoded;
 *   OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT: milliseconds (default 10000);
 *   OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE: a CA file for https;
 *   OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES ("k=v,..." percent-decoded);
 *   OTEL_SDK_DISABLED=true: nothing is exported.
 * The signal-specific variable wins over the general one.
 *
 * The trace: a TRACEPARENT in the environment (W3C trace context,
 * "00-<trace id>-<parent span id>-<flags>") makes the command's root span a
 * child of the caller's span (a CI job's), in the caller's trace;
 * TRACESTATE is carried along.  Otherwise the trace id is random.
 *
 * Spans carry the stage's category, bytes, concurrency and attributes
 * (service, mode, run id, container id, ...); a failed stage has status
 * ERROR with its message.  Engine calls are CLIENT spans, the rest INTERNAL.
 *
 * The protobuf encoding is written by hand: the messages are few, written
 * only, and fixed by the OTLP specification (opentelemetry-proto,
 * trace/v1/trace.proto and collector/trace/v1/trace_service.proto); a
 * protobuf library would bring generated code for the whole schema and a
 * dependency Debian does not package with these definitions.
 *
 * Export never fails the command: it is bounded by the timeout, and a
 * collector that is unreachable or says no costs one warning.
 */
#ifndef PH_OTLP_H
#define PH_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "ph_error.h"
#include "ph_strings.h"
#include "ph_timing.h"

#define PH_OTLP_HEADERS_MAX 32

typedef struct ph_otlp_config {
    char url[2048];
    int json;                 /* http/json; else http/protobuf */
    long timeout_ms;
    char ca_file[1024];       /* "" for the system's */
    ph_kvv headers;
    ph_kvv resource;          /* service.name first */
} ph_otlp_config;

/* The trace a command belongs to (TRACEPARENT, or a new one). */
typedef struct ph_otlp_trace {
    unsigned char trace_id[16];
    unsigned char parent_span_id[8]; /* all zero: the command's span is a root */
    char trace_state[512];
} ph_otlp_trace;

/* 1 and C filled when export is configured, 0 when it is not (no endpoint,
 * or OTEL_SDK_DISABLED), -1 and a PH_EXIT_USAGE error naming the variable
 * when a setting is malformed. */
int ph_otlp_config_from_env(ph_otlp_config *c, ph_error_t *err);
void ph_otlp_config_free(ph_otlp_config *c);

/* Parse a W3C traceparent; 0 or -1 (then T is untouched). */
int ph_otlp_traceparent_parse(const char *s, ph_otlp_trace *t);
/* The trace of this process's command: from TRACEPARENT/TRACESTATE when
 * valid, else a random trace id; decided on the first call. */
const ph_otlp_trace *ph_otlp_trace_current(void);
/* 32 lowercase hex digits. */
void ph_otlp_hex(const unsigned char *id, size_t n, char *out);

/* The request body for TREE: protobuf (ExportTraceServiceRequest) or JSON
 * (OTLP/JSON: hex ids, int64 as strings).  malloc'd, *LEN set; NULL on ENOMEM. */
unsigned char *ph_otlp_encode(const ph_stage *tree, const ph_otlp_config *c, const ph_otlp_trace *t, size_t *len);

/* Export TREE as configured by the environment.  Returns 1 when sent and
 * accepted, 0 when export is not configured, -1 after one warning on
 * stderr.  Never blocks longer than the configured timeout. */
int ph_otlp_export(const ph_stage *tree);

#endif
