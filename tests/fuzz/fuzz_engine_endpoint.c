/* fuzz_engine_endpoint.c - libFuzzer target for what profharness reads
 * about where to send things: DOCKER_HOST values (ph_engine_host_parse), a
 * Docker context's meta.json (ph_engine_endpoint_resolve over a store in a
 * temp DOCKER_CONFIG), W3C traceparent values and the OTEL_* key=value
 * lists (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS).
 *
 * The first byte picks the parser; the rest is its input.  Beyond "no
 * crash, no leak, no undefined behaviour":
 *   - a parsed host is unix://... or tcp://HOST:PORT[/PATH] with a port of
 *     1..65535, holds nothing that would change what curl makes of the URL
 *     ('@', '?', '#', blanks), and a tcp host is its own normal form;
 *   - a resolved endpoint's base URL is http://localhost for a socket and
 *     http(s)://HOST:PORT otherwise, TLS only over tcp;
 *   - a parsed traceparent's ids are the input's, and never all zero;
 *   - parsed headers and resource attributes have non-empty keys and no
 *     line breaks (they become HTTP header lines). */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_engine_endpoint.h"
#include "ph_otlp.h"

#define META_DIR "contexts/meta/b71199ebd070b36beab7317920c2c2f1d777df8d05e5527d8458fda57cb17a7a"

static char cfg[64];

static void
check_host(const char *in, const char *out)
{
    const char *hp, *colon, *end;
    char again[1024];
    long port;

    if (strncmp(out, "unix://", 7) == 0)
        return;
    if (strncmp(out, "tcp://", 6) != 0)
        abort();
    for (const char *p = out; *p; p++)
        if (*p == '@' || *p == '?' || *p == '#' || (unsigned char)*p <= ' ')
            abort();
    hp = out + 6;
    end = hp + strcspn(hp, "/");
    colon = end;
    while (colon > hp && colon[-1] != ':')
        colon--;
    if (colon == hp || colon == end)
        abort(); /* a port is always there */
    port = strtol(colon, NULL, 10);
    if (port < 1 || port > 65535 || (long)strspn(colon, "0123456789") != end - colon)
        abort();
    /* The normal form parses to itself. */
    if (ph_engine_host_parse(out, 0, again, sizeof again, NULL) < 0 || strcmp(again, out) != 0)
        abort();
    (void)in;
}

static void
fuzz_host(const char *s)
{
    char out[1024];

    if (ph_engine_host_parse(s, s[0] & 1, out, sizeof out, NULL) == 0)
        check_host(s, out);
}

static int
write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "w");

    if (f == NULL)
        return -1;
    fwrite(data, 1, len, f);
    return fclose(f);
}

static void
fuzz_meta(const uint8_t *data, size_t size)
{
    char path[256];
    ph_engine_endpoint ep;
    ph_error_t err = NULL;

    snprintf(path, sizeof path, "%s/" META_DIR "/meta.json", cfg);
    if (write_file(path, (const char *)data, size) < 0)
        return;
    if (ph_engine_endpoint_resolve("remote", &ep, &err) == 0) {
        if (strncmp(ep.host, "unix://", 7) == 0) {
            if (ep.tls || strcmp(ep.base_url, "http://localhost") != 0)
                abort();
        } else if (strncmp(ep.base_url, ep.tls ? "https://" : "http://", ep.tls ? 8 : 7) != 0) {
            abort();
        }
    } else if (err == NULL || err->msg[0] == '\0') {
        abort();
    }
    ph_error_free(&err);
}

static void
fuzz_traceparent(const char *s)
{
    ph_otlp_trace t;
    char hex[33];

    if (ph_otlp_traceparent_parse(s, &t) < 0)
        return;
    ph_otlp_hex(t.trace_id, 16, hex);
    if (strncmp(hex, s + 3, 32) != 0 || strcmp(hex, "00000000000000000000000000000000") == 0)
        abort();
    ph_otlp_hex(t.parent_span_id, 8, hex);
    if (strncmp(hex, s + 36, 16) != 0 || strcmp(hex, "0000000000000000") == 0)
        abort();
}

static void
check_pairs(const ph_kvv *v)
{
    for (size_t i = 0; i < v->n; i++) {
        if (v->v[i].key[0] == '\0' || strpbrk(v->v[i].key, "\r\n") || (v->v[i].value && strpbrk(v->v[i].value, "\r\n")))
            abort();
    }
}

static void
fuzz_pairs(const char *s)
{
    ph_otlp_config c;
    ph_error_t err = NULL;

    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9", 1);
    setenv("OTEL_RESOURCE_ATTRIBUTES", s, 1);
    setenv("OTEL_EXPORTER_OTLP_HEADERS", s, 1);
    if (ph_otlp_config_from_env(&c, &err) == 1) {
        check_pairs(&c.headers);
        check_pairs(&c.resource);
        ph_otlp_config_free(&c);
    }
    ph_error_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s;

    if (size < 1 || size > 8192)
        return 0;
    if (cfg[0] == '\0') {
        char dir[256];

        snprintf(cfg, sizeof cfg, "/tmp/fuzz-ph-endpoint-%d", (int)getpid());
        mkdir(cfg, 0700);
        snprintf(dir, sizeof dir, "%s/contexts", cfg);
        mkdir(dir, 0700);
        snprintf(dir, sizeof dir, "%s/contexts/meta", cfg);
        mkdir(dir, 0700);
        snprintf(dir, sizeof dir, "%s/" META_DIR, cfg);
        mkdir(dir, 0700);
        setenv("DOCKER_CONFIG", cfg, 1);
        unsetenv("DOCKER_HOST");
        unsetenv("DOCKER_CONTEXT");
    }
    if (data[0] % 4 == 1) {
        fuzz_meta(data + 1, size - 1);
        return 0;
    }
    s = malloc(size);
    if (s == NULL)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    if (data[0] % 4 == 0)
        fuzz_host(s);
    else if (data[0] % 4 == 2)
        fuzz_traceparent(s);
    else
        fuzz_pairs(s);
    free(s);
    return 0;
}
