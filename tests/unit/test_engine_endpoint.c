/* test_engine_endpoint.c - which Engine, and how: DOCKER_HOST parsing, the
 * Docker context store and the TLS environment, resolved as the docker CLI
 * resolves them (docker/cli: cli/command/cli.go resolveContextName and
 * resolveDefaultDockerEndpoint, cli/flags/options.go, opts/hosts.go,
 * cli/context/store).  Pure: a temp DOCKER_CONFIG or HOME per test, the
 * store written by hand with its real layout (the directory of a context
 * is the SHA-256 of its name, spelled out below rather than computed by the
 * code under test).  tests/50-engine-tls.bats checks the same layout as
 * `docker context create` writes it, against a real TLS Engine. */
#include "test_util.h"

#include <sys/stat.h>

#include "ph_engine_endpoint.h"
#include "ph_util.h"

#define REMOTE_SHA "b71199ebd070b36beab7317920c2c2f1d777df8d05e5527d8458fda57cb17a7a" /* "remote" */
#define CERT_PEM "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
#define KEY_PEM "-----BEGIN PRIVATE KEY-----\nMIIBfake\n-----END PRIVATE KEY-----\n"

static const char *const env_vars[] = { "DOCKER_HOST",      "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_TLS_VERIFY",
                                        "DOCKER_TLS",       "DOCKER_CERT_PATH", "HOME" };
static char *saved_env[PH_ARRAY_LEN(env_vars)];

static int
setup(void **state)
{
    (void)state;
    for (size_t i = 0; i < PH_ARRAY_LEN(env_vars); i++) {
        const char *v = getenv(env_vars[i]);

        saved_env[i] = v ? strdup(v) : NULL;
        if (strcmp(env_vars[i], "HOME") != 0)
            unsetenv(env_vars[i]);
    }
    tu_mkdtemp();
    setenv("DOCKER_CONFIG", test_dir, 1);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    tu_rmdir();
    for (size_t i = 0; i < PH_ARRAY_LEN(env_vars); i++) {
        if (saved_env[i])
            setenv(env_vars[i], saved_env[i], 1);
        else
            unsetenv(env_vars[i]);
        free(saved_env[i]);
        saved_env[i] = NULL;
    }
    return 0;
}

/* mkdir -p under test_dir. */
static void
mkdirs(const char *rel)
{
    char p[1024];

    snprintf(p, sizeof p, "%s/%s", test_dir, rel);
    for (char *s = p + strlen(test_dir) + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    }
    mkdir(p, 0755);
}

static void
write_file(const char *rel, const char *text)
{
    char dir[1024];
    const char *slash = strrchr(rel, '/');

    if (slash) {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - rel), rel);
        mkdirs(dir);
    }
    tu_write(rel, text);
}

static const char *
in_dir(const char *rel)
{
    static char p[1024];

    snprintf(p, sizeof p, "%s/%s", test_dir, rel);
    return p;
}

static void
resolve_ok(const char *flag, ph_engine_endpoint *ep)
{
    ph_error_t err = NULL;

    if (ph_engine_endpoint_resolve(flag, ep, &err) < 0)
        fail_msg("resolve: %s (hint: %s)", err->msg, err->hint);
}

/* Resolution fails as bad input (or FAILURE) with WANT in the message. */
static void
resolve_bad(const char *flag, int status, const char *want, const char *hint)
{
    ph_engine_endpoint ep;
    ph_error_t err = NULL;

    assert_int_equal(ph_engine_endpoint_resolve(flag, &ep, &err), -1);
    assert_non_null(err);
    if (strstr(err->msg, want) == NULL)
        fail_msg("message `%s` lacks `%s`", err->msg, want);
    if (hint && strstr(err->hint, hint) == NULL)
        fail_msg("hint `%s` lacks `%s`", err->hint, hint);
    assert_int_equal(err->status, status);
    ph_error_free(&err);
}

/* ---- SHA-256 ----------------------------------------------------------- */

static void
test_sha256(void **state)
{
    /* 'a' * N across the padding boundaries (55/56, 63/64, 119/120). */
    static const struct {
        size_t n;
        const char *hex;
    } v[] = {
        { 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
        { 1, "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb" },
        { 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
        { 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
        { 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
        { 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
        { 65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0" },
        { 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb" },
        { 120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c" },
        { 200, "c2a908d98f5df987ade41b5fce213067efbcc21ef2240212a41e54b5e7c28ae5" },
    };
    char s[256], hex[65];

    (void)state;
    for (size_t i = 0; i < PH_ARRAY_LEN(v); i++) {
        memset(s, 'a', v[i].n);
        s[v[i].n] = '\0';
        ph_engine_sha256_hex(s, hex);
        assert_string_equal(hex, v[i].hex);
    }
    ph_engine_sha256_hex("abc", hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    ph_engine_sha256_hex("remote", hex);
    assert_string_equal(hex, REMOTE_SHA);
}

/* ---- DOCKER_HOST ------------------------------------------------------- */

static void
test_host_parse(void **state)
{
    /* What docker's opts.ParseHost makes of each (opts/hosts.go). */
    static const struct {
        const char *in;
        int tls;
        const char *out;
    } ok[] = {
        { "", 0, "unix:///var/run/docker.sock" },
        { NULL, 0, "unix:///var/run/docker.sock" },
        { "", 1, "tcp://localhost:2376" }, /* TLS on, no host: the TLS port */
        { "unix://", 0, "unix:///var/run/docker.sock" },
        { "unix:///tmp/x.sock", 1, "unix:///tmp/x.sock" },
        { "unix://relative.sock", 0, "unix://relative.sock" },
        { "tcp://", 0, "tcp://localhost:2375" },
        { "tcp://1.2.3.4", 1, "tcp://1.2.3.4:2375" }, /* no port: 2375 even with TLS, as docker */
        { "tcp://1.2.3.4:2376", 0, "tcp://1.2.3.4:2376" },
        { "tcp://:2376", 0, "tcp://localhost:2376" },
        { "1.2.3.4:5", 0, "tcp://1.2.3.4:5" },
        { "engine.example", 0, "tcp://engine.example:2375" },
        { "tcp://[::1]:2376", 0, "tcp://[::1]:2376" },
        { "tcp://[::1]", 0, "tcp://[::1]:2375" },
        { "tcp://[fe80::1%eth0]:2376", 0, "tcp://[fe80::1%eth0]:2376" },
        { "tcp://[]:2376/base/", 0, "tcp://localhost:2376/base/" }, /* found by fuzzing */
        { "tcp://::1", 0, "tcp://[::1]:2375" }, /* too many colons: all host, as docker */
        { "tcp://my_host.example-1:5", 0, "tcp://my_host.example-1:5" },
        { "tcp://h:1/base/", 0, "tcp://h:1/base/" },
        { "tcp://h:65535", 0, "tcp://h:65535" },
        { "  tcp://h:1 \n", 0, "tcp://h:1" },
    };
    static const struct {
        const char *in;
        const char *want;
    } bad[] = {
        { "ftp://nope", "invalid bind address format" },
        { "tcp://h:abc", "the port must be a number" },
        { "tcp://h:99999", "out of range" },
        { "tcp://h:0", "port 0 is out of range: 1 to 65535" },
        { "tcp://h:65536", "port 65536 is out of range" },
        { "tcp://a://b", "invalid proto" },
        { "unix://a://b", "invalid proto" },
        { "tcp://user@h:1", "`@` has no place" },
        { "tcp://h:1/x?y", "`?` has no place" },
        { "tcp://[::1", "invalid bind address format" },
        { "ssh://me@host", "unix:// and tcp:// only" },
        { "fd://", "unix:// and tcp:// only" },
        { "/var/run/x", "needs its scheme: unix:///var/run/x" },
        /* Found by fuzzing: a "host" that was neither, bracketed into a
         * normal form that did not parse again. */
        { "\xdatcp:.0au::1]:e/", "is neither a host name nor an IP address" },
        { "tcp://h\xc3\xa9:1", "is neither a host name nor an IP address" },
        { "tcp://[::1%]:1", "is neither a host name nor an IP address" },
        { "tcp://[fe80::zz]:1", "is neither a host name nor an IP address" },
    };
    char out[1024];
    ph_error_t err = NULL;

    (void)state;
    for (size_t i = 0; i < PH_ARRAY_LEN(ok); i++) {
        if (ph_engine_host_parse(ok[i].in, ok[i].tls, out, sizeof out, &err) < 0)
            fail_msg("`%s`: %s", ok[i].in, err->msg);
        if (strcmp(out, ok[i].out) != 0)
            fail_msg("`%s` -> `%s`, want `%s`", ok[i].in, out, ok[i].out);
    }
    for (size_t i = 0; i < PH_ARRAY_LEN(bad); i++) {
        assert_int_equal(ph_engine_host_parse(bad[i].in, 0, out, sizeof out, &err), -1);
        if (strstr(err->msg, bad[i].want) == NULL || strstr(err->msg, "DOCKER_HOST=") == NULL)
            fail_msg("`%s`: message `%s` lacks `%s`", bad[i].in, err->msg, bad[i].want);
        assert_int_equal(err->status, PH_EXIT_USAGE);
        ph_error_free(&err);
    }
}

/* ---- which context ------------------------------------------------------ */

static void
write_remote(const char *host, int tls_dir, const char *extra)
{
    char meta[512];

    snprintf(meta, sizeof meta,
             "{\"Name\":\"remote\",\"Metadata\":{},\"Endpoints\":{\"docker\":{\"Host\":\"%s\"%s}}}", host,
             extra ? extra : "");
    write_file("contexts/meta/" REMOTE_SHA "/meta.json", meta);
    if (tls_dir) {
        write_file("contexts/tls/" REMOTE_SHA "/docker/ca.pem", CERT_PEM);
        write_file("contexts/tls/" REMOTE_SHA "/docker/cert.pem", CERT_PEM);
        write_file("contexts/tls/" REMOTE_SHA "/docker/key.pem", KEY_PEM);
    }
}

static void
test_context_precedence(void **state)
{
    ph_engine_endpoint ep;
    char want[1024];

    (void)state;
    /* Nothing anywhere: the local socket. */
    resolve_ok(NULL, &ep);
    assert_string_equal(ep.context, "default");
    assert_string_equal(ep.host, "unix:///var/run/docker.sock");
    assert_string_equal(ep.socket_path, "/var/run/docker.sock");
    assert_string_equal(ep.base_url, "http://localhost");
    assert_false(ep.tls);

    /* currentContext picks the store entry... */
    write_remote("tcp://10.1.2.3:2376", 1, NULL);
    write_file("config.json", "{\"auths\":{},\"currentContext\":\"remote\"}");
    resolve_ok(NULL, &ep);
    assert_string_equal(ep.context, "remote");
    assert_string_equal(ep.host, "tcp://10.1.2.3:2376");
    assert_string_equal(ep.base_url, "https://10.1.2.3:2376");
    assert_true(ep.tls);
    assert_true(ep.verify);
    assert_string_equal(ep.ca, in_dir("contexts/tls/" REMOTE_SHA "/docker/ca.pem"));
    assert_string_equal(ep.cert, in_dir("contexts/tls/" REMOTE_SHA "/docker/cert.pem"));
    assert_string_equal(ep.key, in_dir("contexts/tls/" REMOTE_SHA "/docker/key.pem"));
    snprintf(want, sizeof want, "currentContext in %s/config.json", test_dir);
    assert_string_equal(ep.origin, want);

    /* ...DOCKER_CONTEXT wins over it... */
    setenv("DOCKER_CONTEXT", "default", 1);
    resolve_ok(NULL, &ep);
    assert_string_equal(ep.context, "default");
    assert_string_equal(ep.host, "unix:///var/run/docker.sock");
    setenv("DOCKER_CONTEXT", "nope", 1);
    resolve_bad(NULL, PH_EXIT_USAGE, "Docker context `nope` (DOCKER_CONTEXT) does not exist", "docker context ls");

    /* ...DOCKER_HOST wins over both: the default context... */
    setenv("DOCKER_HOST", "tcp://127.0.0.1:1234", 1);
    resolve_ok(NULL, &ep);
    assert_string_equal(ep.context, "default");
    assert_string_equal(ep.origin, "DOCKER_HOST");
    assert_string_equal(ep.base_url, "http://127.0.0.1:1234");
    assert_string_equal(ep.socket_path, "");

    /* ...and --context wins over everything, "default" included. */
    resolve_ok("remote", &ep);
    assert_string_equal(ep.context, "remote");
    assert_string_equal(ep.origin, "--context");
    resolve_ok("default", &ep);
    assert_string_equal(ep.host, "tcp://127.0.0.1:1234");
    resolve_bad("other", PH_EXIT_USAGE, "Docker context `other` (--context) does not exist", NULL);

    /* An empty currentContext is no choice. */
    unsetenv("DOCKER_HOST");
    unsetenv("DOCKER_CONTEXT");
    write_file("config.json", "{\"currentContext\":\"\"}");
    resolve_ok(NULL, &ep);
    assert_string_equal(ep.context, "default");
}

static void
test_config_dir_from_home(void **state)
{
    ph_engine_endpoint ep;

    (void)state;
    unsetenv("DOCKER_CONFIG");
    setenv("HOME", test_dir, 1);
    write_file(".docker/config.json", "{\"currentContext\":\"remote\"}");
    write_file(".docker/contexts/meta/" REMOTE_SHA "/meta.json",
               "{\"Name\":\"remote\",\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h:2375\",\"SkipTLSVerify\":false}}}");
    resolve_ok(NULL, &ep);
    assert_string_equal(ep.context, "remote");
    assert_string_equal(ep.base_url, "http://h:2375"); /* no TLS directory, no SkipTLSVerify: plain */
    assert_false(ep.tls);
}

static void
test_context_tls_variants(void **state)
{
    ph_engine_endpoint ep;

    (void)state;
    /* SkipTLSVerify alone: TLS without checking, no material. */
    write_remote("tcp://h:2376", 0, ",\"SkipTLSVerify\":true");
    resolve_ok("remote", &ep);
    assert_true(ep.tls);
    assert_false(ep.verify);
    assert_string_equal(ep.ca, "");
    assert_string_equal(ep.base_url, "https://h:2376");

    /* A CA only: verified against it, no client certificate. */
    write_remote("tcp://h:2376", 0, NULL);
    write_file("contexts/tls/" REMOTE_SHA "/docker/ca.pem", CERT_PEM);
    resolve_ok("remote", &ep);
    assert_true(ep.tls);
    assert_true(ep.verify);
    assert_string_equal(ep.ca, in_dir("contexts/tls/" REMOTE_SHA "/docker/ca.pem"));
    assert_string_equal(ep.cert, "");
    assert_string_equal(ep.key, "");

    /* A certificate without its key is no client certificate. */
    write_file("contexts/tls/" REMOTE_SHA "/docker/cert.pem", CERT_PEM);
    resolve_ok("remote", &ep);
    assert_string_equal(ep.cert, "");

    /* An empty TLS directory: TLS with the system's roots. */
    tu_rmdir();
    mkdir(test_dir, 0700);
    write_remote("tcp://h:2376", 0, NULL);
    mkdirs("contexts/tls/" REMOTE_SHA "/docker");
    resolve_ok("remote", &ep);
    assert_true(ep.tls);
    assert_true(ep.verify);
    assert_string_equal(ep.ca, "");

    /* Over a unix socket TLS means nothing. */
    write_remote("unix:///run/other.sock", 1, NULL);
    resolve_ok("remote", &ep);
    assert_false(ep.tls);
    assert_string_equal(ep.socket_path, "/run/other.sock");

    /* An empty host is the local socket, as the Go client's default. */
    write_remote("", 0, NULL);
    resolve_ok("remote", &ep);
    assert_string_equal(ep.host, "unix:///var/run/docker.sock");
}

static void
test_context_bad_store(void **state)
{
    (void)state;
    write_file("config.json", "{\"currentContext\": \"remote\",\n  \"auths\": {,}}");
    resolve_bad(NULL, PH_EXIT_USAGE, "config.json:2:", NULL);
    write_file("config.json", "{\"currentContext\": 3}");
    resolve_bad(NULL, PH_EXIT_USAGE, "currentContext must be a string", NULL);
    write_file("config.json", "[]");
    resolve_bad(NULL, PH_EXIT_USAGE, "expected a JSON object", NULL);
    unlink(in_dir("config.json"));

    write_file("contexts/meta/" REMOTE_SHA "/meta.json", "{\"Name\":\"remote\",\"Endpoints\":{}}");
    resolve_bad("remote", PH_EXIT_USAGE, "has no docker endpoint", NULL);
    write_file("contexts/meta/" REMOTE_SHA "/meta.json", "{\"Endpoints\":{\"docker\":{\"Host\":7}}}");
    resolve_bad("remote", PH_EXIT_USAGE, "Endpoints.docker.Host must be a string", NULL);
    write_file("contexts/meta/" REMOTE_SHA "/meta.json", "{\"Endpoints\":{\"docker\":{\"SkipTLSVerify\":\"yes\"}}}");
    resolve_bad("remote", PH_EXIT_USAGE, "SkipTLSVerify must be a boolean", NULL);
    write_file("contexts/meta/" REMOTE_SHA "/meta.json", "{\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h\"}}}");
    resolve_bad("remote", PH_EXIT_USAGE, "host `tcp://h` has no port", NULL);
    write_file("contexts/meta/" REMOTE_SHA "/meta.json", "{\"Endpoints\":{\"docker\":{\"Host\":\"ssh://h\"}}}");
    resolve_bad("remote", PH_EXIT_USAGE, "unix:// and tcp:// only", NULL);
    write_file("contexts/meta/" REMOTE_SHA "/meta.json", "{\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h:1\"}}} x");
    resolve_bad("remote", PH_EXIT_USAGE, "meta.json:1:", NULL);
    resolve_bad("a\nb", PH_EXIT_USAGE, "not one line", NULL);
}

/* ---- the default context's TLS environment ------------------------------ */

static void
test_default_tls_env(void **state)
{
    ph_engine_endpoint ep;
    char want[1024];

    (void)state;
    mkdirs("certs");
    write_file("certs/ca.pem", CERT_PEM);
    write_file("certs/cert.pem", CERT_PEM);
    write_file("certs/key.pem", KEY_PEM);
    setenv("DOCKER_CERT_PATH", in_dir("certs"), 1);

    /* DOCKER_TLS_VERIFY: any non-empty value, "0" too, means verify. */
    setenv("DOCKER_TLS_VERIFY", "0", 1);
    resolve_ok(NULL, &ep);
    assert_true(ep.tls);
    assert_true(ep.verify);
    assert_string_equal(ep.host, "tcp://localhost:2376"); /* no DOCKER_HOST, TLS on */
    assert_string_equal(ep.base_url, "https://localhost:2376");
    assert_string_equal(ep.ca, in_dir("certs/ca.pem"));
    assert_string_equal(ep.cert, in_dir("certs/cert.pem"));
    assert_string_equal(ep.key, in_dir("certs/key.pem"));
    snprintf(want, sizeof want, "DOCKER_CERT_PATH=%s", in_dir("certs"));
    assert_non_null(strstr(ep.tls_from, want));

    /* An empty value is unset. */
    setenv("DOCKER_TLS_VERIFY", "", 1);
    setenv("DOCKER_HOST", "tcp://e:2376", 1);
    resolve_ok(NULL, &ep);
    assert_false(ep.tls);
    assert_string_equal(ep.base_url, "http://e:2376");

    /* DOCKER_TLS: TLS without verification. */
    setenv("DOCKER_TLS", "1", 1);
    resolve_ok(NULL, &ep);
    assert_true(ep.tls);
    assert_false(ep.verify);
    assert_string_equal(ep.base_url, "https://e:2376");

    /* No client key: no client certificate either. */
    unlink(in_dir("certs/key.pem"));
    resolve_ok(NULL, &ep);
    assert_string_equal(ep.cert, "");
    assert_string_equal(ep.key, "");

    /* The CA is required, as docker requires it. */
    unlink(in_dir("certs/ca.pem"));
    unsetenv("DOCKER_TLS");
    setenv("DOCKER_TLS_VERIFY", "1", 1);
    snprintf(want, sizeof want, "DOCKER_TLS_VERIFY is set, but there is no CA certificate `%s`",
             in_dir("certs/ca.pem"));
    resolve_bad(NULL, PH_EXIT_USAGE, want, "DOCKER_CERT_PATH");
    /* Even for a socket, as docker reads the files before it looks at the host. */
    setenv("DOCKER_HOST", "unix:///var/run/docker.sock", 1);
    resolve_bad(NULL, PH_EXIT_USAGE, want, NULL);

    /* DOCKER_CERT_PATH defaults to the config directory. */
    unsetenv("DOCKER_CERT_PATH");
    write_file("ca.pem", CERT_PEM);
    setenv("DOCKER_HOST", "tcp://e:2376", 1);
    resolve_ok(NULL, &ep);
    assert_string_equal(ep.ca, in_dir("ca.pem"));
    assert_string_equal(ep.cert, "");
    /* The socket is reached without TLS, whatever the environment says. */
    setenv("DOCKER_HOST", "unix:///run/x.sock", 1);
    resolve_ok(NULL, &ep);
    assert_false(ep.tls);
    assert_string_equal(ep.base_url, "http://localhost");
}

static void
test_tls_material_checked(void **state)
{
    (void)state;
    setenv("DOCKER_TLS_VERIFY", "1", 1);
    setenv("DOCKER_HOST", "tcp://e:2376", 1);
    write_file("ca.pem", "not a certificate\n");
    resolve_bad(NULL, PH_EXIT_USAGE, "holds no `CERTIFICATE` PEM block", "DOCKER_CERT_PATH");
    write_file("ca.pem", CERT_PEM);
    write_file("cert.pem", CERT_PEM);
    write_file("key.pem", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n");
    resolve_bad(NULL, PH_EXIT_USAGE, "is encrypted", NULL);
    write_file("key.pem", "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES\n\nMIIB\n"
                          "-----END RSA PRIVATE KEY-----\n");
    resolve_bad(NULL, PH_EXIT_USAGE, "is encrypted", NULL);
    /* Unreadable is a failure, not bad input (and names the file). */
    if (geteuid() != 0) {
        write_file("key.pem", KEY_PEM);
        chmod(in_dir("key.pem"), 0);
        resolve_bad(NULL, PH_EXIT_FAILURE, "key.pem", NULL);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_host_parse),
        cmocka_unit_test_setup_teardown(test_context_precedence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_dir_from_home, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context_tls_variants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_context_bad_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_tls_env, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_material_checked, setup, teardown),
    };
    return cmocka_run_group_tests_name("engine_endpoint", tests, NULL, NULL);
}
