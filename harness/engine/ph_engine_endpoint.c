/* ph_engine_endpoint.c - which Docker Engine to talk to, and how (the rules
 * are in ph_engine_endpoint.h; they follow docker/cli's resolveContextName,
 * resolveDefaultDockerEndpoint, opts.ParseHost and the context store).
 *
 * Everything read is bounded: config.json and meta.json by JSON_MAX, the
 * PEM files by PEM_MAX (they are only looked at, never parsed here: the
 * TLS library reads them from their paths when it connects).
 */
#include "ph_engine_endpoint.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "ph_log.h"
#include "ph_sha256.h"
#include "ph_util.h"

#define DEFAULT_UNIX "/var/run/docker.sock"
#define JSON_MAX (1u << 20)
#define PEM_MAX (1u << 20)
#define CONTEXT_HINT "list the contexts with `docker context ls`; pick one with --context NAME or DOCKER_CONTEXT"
#define TLS_HINT "DOCKER_CERT_PATH names the directory with ca.pem, cert.pem and key.pem (default: ~/.docker)"

/* ---- SHA-256, for the store's directory names ------------------------ */

void
ph_engine_sha256_hex(const char *s, char out[65])
{
    unsigned char d[PH_SHA256_LEN];

    ph_sha256(s, strlen(s), d);
    for (int i = 0; i < PH_SHA256_LEN; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* ---- DOCKER_HOST ------------------------------------------------------- */

/* Characters that may not appear in a tcp address: they would change what
 * curl makes of the URL (credentials, fragments, queries) or are no host. */
static int
bad_tcp_char(char c)
{
    return (unsigned char)c <= ' ' || c == 0x7f || c == '@' || c == '#' || c == '?' || c == '\\' || c == '"';
}

/* A host name (letters, digits, '.', '-', '_') or an IP address: IPv6
 * only as hex digits, ':' and '.', with a zone ("%eth0") when bracketed.
 * Anything else (Go's url.Parse refuses most of it) would make a URL that
 * means something else to curl, or that parses differently next time. */
static int
host_ok(const char *h, int v6, int bracketed)
{
    const char *zone = bracketed ? strchr(h, '%') : NULL;

    if (h[0] == '\0')
        return 1; /* localhost */
    for (const char *p = h; *p && (zone == NULL || p < zone); p++) {
        if (v6 ? !(isxdigit((unsigned char)*p) || *p == ':' || *p == '.')
               : !(isalnum((unsigned char)*p) || *p == '.' || *p == '-' || *p == '_'))
            return 0;
    }
    if (zone) {
        if (zone[1] == '\0')
            return 0;
        for (const char *p = zone + 1; *p; p++)
            if (!(isalnum((unsigned char)*p) || *p == '.' || *p == '-' || *p == '_'))
                return 0;
    }
    return !v6 || strchr(h, ':') != NULL;
}

/* opts.ParseTCPAddr with tcp://localhost:2375 as the default. */
static int
parse_tcp(const char *value, const char *addr, char *out, size_t size, ph_error_t *err)
{
    char host[512], port[16] = "";
    const char *path, *hp_end, *colon = NULL;
    size_t hl;
    int v6 = 0;

    if (addr[0] == '\0') {
        snprintf(out, size, "tcp://localhost:2375");
        return 0;
    }
    if (strstr(addr, "://") != NULL)
        return ph_bad_input(err, "DOCKER_HOST=`%s`: invalid proto, expected tcp", value);
    for (const char *c = addr; *c; c++)
        if (bad_tcp_char(*c))
            return ph_bad_input(err, "DOCKER_HOST=`%s`: `%c` has no place in a tcp address", value, *c);
    path = strchr(addr, '/');
    hp_end = path ? path : addr + strlen(addr);
    if (addr[0] == '[') {
        const char *close = memchr(addr, ']', (size_t)(hp_end - addr));

        if (close == NULL)
            return ph_bad_input(err, "DOCKER_HOST=`%s`: invalid bind address format", value);
        hl = (size_t)(close - addr - 1);
        if (hl >= sizeof host)
            return ph_bad_input(err, "DOCKER_HOST=`%s`: the host is too long", value);
        memcpy(host, addr + 1, hl);
        host[hl] = '\0';
        v6 = 1;
        if (close + 1 < hp_end) {
            if (close[1] != ':')
                return ph_bad_input(err, "DOCKER_HOST=`%s`: invalid bind address format", value);
            colon = close + 1;
        }
    } else {
        const char *first = memchr(addr, ':', (size_t)(hp_end - addr));

        colon = first;
        /* Go's SplitHostPort refuses "a:b:c"; docker then takes it all as
         * the host with the default port (an IPv6 address without brackets). */
        if (first && memchr(first + 1, ':', (size_t)(hp_end - first - 1)) != NULL) {
            colon = NULL;
            v6 = 1;
        }
        hl = (size_t)((colon ? colon : hp_end) - addr);
        if (hl >= sizeof host)
            return ph_bad_input(err, "DOCKER_HOST=`%s`: the host is too long", value);
        memcpy(host, addr, hl);
        host[hl] = '\0';
    }
    if (colon) {
        size_t pl = (size_t)(hp_end - colon - 1);

        if (pl >= sizeof port || strspn(colon + 1, "0123456789") < pl)
            return ph_bad_input(err, "DOCKER_HOST=`%s`: the port must be a number", value);
        memcpy(port, colon + 1, pl);
        port[pl] = '\0';
    }
    if (port[0] && (atol(port) < 1 || atol(port) > 65535))
        return ph_bad_input(err, "DOCKER_HOST=`%s`: port %s is out of range: 1 to 65535", value, port);
    if (host[0] == '\0')
        v6 = 0; /* "[]:2375" is the default host, as for Go's SplitHostPort */
    if (!host_ok(host, v6, addr[0] == '['))
        return ph_bad_input(err, "DOCKER_HOST=`%s`: `%s` is neither a host name nor an IP address", value, host);
    if (snprintf(out, size, "tcp://%s%s%s:%s%s", v6 ? "[" : "", host[0] ? host : "localhost", v6 ? "]" : "",
                 port[0] ? port : "2375", path ? path : "") >= (int)size)
        return ph_bad_input(err, "DOCKER_HOST=`%.200s...`: too long", value);
    return 0;
}

int
ph_engine_host_parse(const char *value, int default_tls, char *out, size_t size, ph_error_t *err)
{
    const char *v = value ? value : "", *sep, *addr;
    char buf[1024];
    size_t l;

    while (*v == ' ' || *v == '\t' || *v == '\n')
        v++;
    l = strlen(v);
    while (l > 0 && (v[l - 1] == ' ' || v[l - 1] == '\t' || v[l - 1] == '\n'))
        l--;
    if (l >= sizeof buf)
        return ph_bad_input(err, "DOCKER_HOST=`%.200s...`: longer than %zu bytes", v, sizeof buf - 1);
    memcpy(buf, v, l);
    buf[l] = '\0';
    if (buf[0] == '\0') {
        snprintf(out, size, "%s", default_tls ? "tcp://localhost:2376" : "unix://" DEFAULT_UNIX);
        return 0;
    }
    sep = strstr(buf, "://");
    if (sep == NULL) {
        if (buf[0] == '/')
            return ph_bad_input(err, "DOCKER_HOST=`%s`: a socket path needs its scheme: unix://%s", buf, buf);
        return parse_tcp(buf, buf, out, size, err);
    }
    addr = sep + 3;
    if (sep - buf == 3 && strncmp(buf, "tcp", 3) == 0)
        return parse_tcp(buf, addr, out, size, err);
    if (sep - buf == 4 && strncmp(buf, "unix", 4) == 0) {
        if (strstr(addr, "://") != NULL)
            return ph_bad_input(err, "DOCKER_HOST=`%s`: invalid proto, expected unix", buf);
        if (snprintf(out, size, "unix://%s", addr[0] ? addr : DEFAULT_UNIX) >= (int)size)
            return ph_bad_input(err, "DOCKER_HOST=`%.200s...`: too long", buf);
        return 0;
    }
    if ((sep - buf == 3 && (strncmp(buf, "ssh", 3) == 0)) || (sep - buf == 2 && strncmp(buf, "fd", 2) == 0) ||
        (sep - buf == 5 && strncmp(buf, "npipe", 5) == 0)) {
        ph_bad_input(err, "DOCKER_HOST=`%s`: profharness speaks to Engines over unix:// and tcp:// only", buf);
        return ph_error_hint(err, "for a remote Engine use tcp:// with TLS (DOCKER_TLS_VERIFY, DOCKER_CERT_PATH), "
                                  "or a context made with `docker context create`");
    }
    return ph_bad_input(err, "DOCKER_HOST=`%s`: invalid bind address format (expected unix:///PATH or "
                             "tcp://HOST:PORT)", buf);
}

/* ---- files ------------------------------------------------------------- */

/* The docker CLI's config directory: $DOCKER_CONFIG, else ~/.docker. */
static int
config_dir(char *out, size_t size, ph_error_t *err)
{
    const char *d = getenv("DOCKER_CONFIG"), *home;

    if (d && d[0]) {
        snprintf(out, size, "%s", d);
        return 0;
    }
    home = getenv("HOME");
    if (home == NULL || home[0] == '\0') {
        struct passwd *pw = getpwuid(getuid());

        home = pw ? pw->pw_dir : NULL;
    }
    if (home == NULL || home[0] == '\0')
        return ph_bad_input(err, "find the docker configuration: neither DOCKER_CONFIG nor HOME is set");
    snprintf(out, size, "%s/.docker", home);
    return 0;
}

/* Read PATH whole into a malloc'd string, at most MAX bytes.  *missing
 * (when given) is set instead of failing when PATH does not exist. */
static char *
read_small(const char *path, size_t max, int *missing, ph_error_t *err)
{
    ph_cleanup_close int fd = -1;
    char *buf = NULL;
    size_t len = 0;
    struct stat st;

    if (missing)
        *missing = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && missing) {
        *missing = 1;
        return NULL;
    }
    if (fd < 0) {
        ph_fail(err, errno, "read `%s`", path);
        return NULL;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
        ph_fail(err, S_ISREG(st.st_mode) ? 0 : EINVAL, "read `%s`: %s", path,
                S_ISREG(st.st_mode) ? "larger than expected" : "not a file");
        return NULL;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        ph_fail(err, errno, "read `%s`", path);
        return NULL;
    }
    while (len < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + len, (size_t)st.st_size - len);

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            ph_fail(err, errno, "read `%s`", path);
            free(buf);
            return NULL;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    return buf;
}

/* A JSON object from PATH; errors name file:line:col. */
static json_t *
load_json(const char *path, int *missing, ph_error_t *err)
{
    ph_cleanup_free char *text = read_small(path, JSON_MAX, missing, err);
    json_error_t je;
    json_t *j;

    if (text == NULL)
        return NULL;
    j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    if (j == NULL) {
        ph_bad_input(err, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        ph_bad_input(err, "%s:1:1: expected a JSON object", path);
        return NULL;
    }
    return j;
}

static int
exists(const char *path, ph_error_t *err)
{
    struct stat st;

    if (stat(path, &st) == 0)
        return 1;
    if (errno == ENOENT)
        return 0;
    return ph_fail(err, errno, "look at `%s`", path);
}

/* Look at the TLS material before any connection: a CA that is no
 * certificate and a key that is encrypted fail here, naming the file
 * (docker fails the same way; OpenSSL would prompt for a passphrase). */
static int
check_pem(const char *path, const char *what, const char *marker, ph_error_t *err)
{
    ph_cleanup_free char *pem = NULL;

    if (path[0] == '\0')
        return 0;
    if ((pem = read_small(path, PEM_MAX, NULL, err)) == NULL)
        return ph_error_wrap(err, "the %s", what);
    if (strstr(pem, marker) == NULL)
        return ph_bad_input(err, "the %s `%s` holds no `%s` PEM block", what, path, marker);
    if (strstr(pem, "ENCRYPTED") != NULL)
        return ph_bad_input(err, "the %s `%s` is encrypted; the docker CLI does not take encrypted keys either, "
                                 "and neither does profharness",
                            what, path);
    return 0;
}

/* ---- endpoints --------------------------------------------------------- */

static int
finish(ph_engine_endpoint *ep, ph_error_t *err)
{
    if (strncmp(ep->host, "unix://", 7) == 0) {
        /* Over a socket TLS means nothing (docker ignores it too). */
        ep->tls = ep->verify = 0;
        if (strlen(ep->host + 7) >= sizeof ep->socket_path)
            return ph_bad_input(err, "Engine socket `%s`: path too long", ep->host + 7);
        snprintf(ep->socket_path, sizeof ep->socket_path, "%s", ep->host + 7);
        /* The host part is ignored over a unix socket; the Engine wants one. */
        snprintf(ep->base_url, sizeof ep->base_url, "http://localhost");
        return 0;
    }
    {
        const char *hp = ep->host + 6; /* tcp:// */
        size_t l = strlen(hp);

        while (l > 0 && hp[l - 1] == '/')
            l--; /* paths are appended with their own '/' */
        snprintf(ep->base_url, sizeof ep->base_url, "%s://%.*s", ep->tls ? "https" : "http", (int)l, hp);
    }
    if (!ep->tls)
        return 0;
    /* A client certificate needs its key and the other way round; docker
     * uses neither when one is missing. */
    if (ep->cert[0] == '\0' || ep->key[0] == '\0') {
        if (ep->cert[0] || ep->key[0])
            ph_debug("engine: %s has %s but not %s; no client certificate is sent", ep->tls_from,
                     ep->cert[0] ? "cert.pem" : "key.pem", ep->cert[0] ? "key.pem" : "cert.pem");
        ep->cert[0] = ep->key[0] = '\0';
    }
    if (check_pem(ep->ca, "CA certificate", "CERTIFICATE", err) < 0 ||
        check_pem(ep->cert, "client certificate", "CERTIFICATE", err) < 0 ||
        check_pem(ep->key, "client key", "PRIVATE KEY", err) < 0)
        return ph_error_hint(err, "%s", ep->tls_from);
    return 0;
}

/* cert.pem or key.pem of DIR when it exists (docker resets a default path
 * that is not there); anything else wrong with it fails later, by name. */
static int
optional_file(const char *dir, const char *name, char *out, size_t size, ph_error_t *err)
{
    int e;

    snprintf(out, size, "%s/%s", dir, name);
    if ((e = exists(out, err)) < 0)
        return -1;
    if (e == 0)
        out[0] = '\0';
    return 0;
}

static int
default_endpoint(const char *cfg, ph_engine_endpoint *ep, ph_error_t *err)
{
    const char *verify = getenv("DOCKER_TLS_VERIFY"), *tls = getenv("DOCKER_TLS");
    const char *certs = getenv("DOCKER_CERT_PATH");
    int e;

    ep->verify = verify && verify[0];
    ep->tls = ep->verify || (tls && tls[0]);
    if (ph_engine_host_parse(getenv("DOCKER_HOST"), ep->tls, ep->host, sizeof ep->host, err) < 0)
        return -1;
    if (!ep->tls)
        return finish(ep, err);
    if (certs == NULL || certs[0] == '\0')
        certs = cfg;
    snprintf(ep->tls_from, sizeof ep->tls_from, "the TLS material is in DOCKER_CERT_PATH=%s; %s", certs, TLS_HINT);
    snprintf(ep->ca, sizeof ep->ca, "%s/ca.pem", certs);
    if ((e = exists(ep->ca, err)) < 0)
        return -1;
    if (e == 0) {
        ph_bad_input(err, "%s is set, but there is no CA certificate `%s`",
                     ep->verify ? "DOCKER_TLS_VERIFY" : "DOCKER_TLS", ep->ca);
        return ph_error_hint(err, "%s", TLS_HINT);
    }
    if (optional_file(certs, "cert.pem", ep->cert, sizeof ep->cert, err) < 0 ||
        optional_file(certs, "key.pem", ep->key, sizeof ep->key, err) < 0)
        return -1;
    return finish(ep, err);
}

static int
context_endpoint(const char *cfg, ph_engine_endpoint *ep, ph_error_t *err)
{
    char sha[65], meta[PATH_MAX], tls[PATH_MAX];
    json_t *j = NULL, *docker, *h, *skip;
    int missing = 0, rc = -1, e;

    ph_engine_sha256_hex(ep->context, sha);
    snprintf(meta, sizeof meta, "%s/contexts/meta/%s/meta.json", cfg, sha);
    j = load_json(meta, &missing, err);
    if (j == NULL) {
        if (missing)
            ph_bad_input(err, "Docker context `%s` (%s) does not exist: no `%s`", ep->context, ep->origin, meta);
        return ph_error_hint(err, CONTEXT_HINT);
    }
    docker = json_object_get(json_object_get(j, "Endpoints"), "docker");
    if (!json_is_object(docker)) {
        ph_bad_input(err, "%s: Docker context `%s` has no docker endpoint (Endpoints.docker)", meta, ep->context);
        goto out;
    }
    h = json_object_get(docker, "Host");
    skip = json_object_get(docker, "SkipTLSVerify");
    if ((h != NULL && !json_is_string(h)) || (skip != NULL && !json_is_boolean(skip))) {
        ph_bad_input(err, "%s: Endpoints.docker.%s must be a %s", meta, h && !json_is_string(h) ? "Host" : "SkipTLSVerify",
                     h && !json_is_string(h) ? "string" : "boolean");
        goto out;
    }
    /* An empty host is the client's default, the local socket. */
    if (ph_engine_host_parse(json_string_value(h), 0, ep->host, sizeof ep->host, err) < 0) {
        ph_error_wrap(err, "%s: Docker context `%s`", meta, ep->context);
        goto out;
    }
    if (strncmp(ep->host, "tcp://", 6) == 0 && json_string_value(h) != NULL) {
        const char *given = json_string_value(h) + (strncmp(json_string_value(h), "tcp://", 6) == 0 ? 6 : 0);
        const char *end = given + strcspn(given, "/");
        const char *colon = given[0] == '[' ? strstr(given, "]:") : memchr(given, ':', (size_t)(end - given));

        if (colon == NULL || colon >= end) {
            ph_bad_input(err, "%s: Docker context `%s`: host `%s` has no port", meta, ep->context,
                         json_string_value(h));
            goto out;
        }
    }
    snprintf(tls, sizeof tls, "%s/contexts/tls/%s/docker", cfg, sha);
    if ((e = exists(tls, err)) < 0)
        goto out;
    ep->verify = !json_is_true(skip);
    ep->tls = e || json_is_true(skip);
    if (e) {
        snprintf(ep->tls_from, sizeof ep->tls_from, "the TLS material of context `%s` is in %s", ep->context, tls);
        if (optional_file(tls, "ca.pem", ep->ca, sizeof ep->ca, err) < 0 ||
            optional_file(tls, "cert.pem", ep->cert, sizeof ep->cert, err) < 0 ||
            optional_file(tls, "key.pem", ep->key, sizeof ep->key, err) < 0)
            goto out;
    } else {
        snprintf(ep->tls_from, sizeof ep->tls_from, "context `%s` has no TLS material (%s)", ep->context, tls);
    }
    rc = finish(ep, err);
out:
    json_decref(j);
    return rc;
}

/* docker/cli resolveContextName: which context, and why. */
static int
context_name(const char *flag, const char *cfg, ph_engine_endpoint *ep, ph_error_t *err)
{
    const char *host = getenv("DOCKER_HOST"), *env = getenv("DOCKER_CONTEXT");
    const char *name = "default";
    char path[PATH_MAX];
    json_t *j = NULL;
    int missing = 0;

    if (flag && flag[0]) {
        name = flag;
        snprintf(ep->origin, sizeof ep->origin, "--context");
    } else if (host && host[0]) {
        snprintf(ep->origin, sizeof ep->origin, "DOCKER_HOST");
    } else if (env && env[0]) {
        name = env;
        snprintf(ep->origin, sizeof ep->origin, "DOCKER_CONTEXT");
    } else {
        json_t *cur;

        snprintf(path, sizeof path, "%s/config.json", cfg);
        j = load_json(path, &missing, err);
        if (j == NULL && !missing)
            return ph_error_hint(err, "the docker CLI's configuration; DOCKER_CONFIG names its directory");
        cur = json_object_get(j, "currentContext");
        if (cur != NULL && !json_is_string(cur)) {
            json_decref(j);
            return ph_bad_input(err, "%s: currentContext must be a string", path);
        }
        if (json_string_length(cur) > 0) {
            name = json_string_value(cur);
            snprintf(ep->origin, sizeof ep->origin, "currentContext in %s", path);
        } else {
            snprintf(ep->origin, sizeof ep->origin, "no context chosen");
        }
    }
    if (strlen(name) >= sizeof ep->context || strpbrk(name, "\n\r") != NULL) {
        json_decref(j);
        return ph_bad_input(err, "Docker context name `%.100s` (%s): too long or not one line", name, ep->origin);
    }
    snprintf(ep->context, sizeof ep->context, "%s", name);
    json_decref(j);
    return 0;
}

int
ph_engine_endpoint_resolve(const char *context, ph_engine_endpoint *ep, ph_error_t *err)
{
    char cfg[PATH_MAX - 64];

    memset(ep, 0, sizeof *ep);
    if (config_dir(cfg, sizeof cfg, err) < 0 || context_name(context, cfg, ep, err) < 0)
        return -1;
    if (strcmp(ep->context, "default") == 0)
        return default_endpoint(cfg, ep, err);
    return context_endpoint(cfg, ep, err);
}
