/* test_compose.c - the compose loader: every supported key, interpolation,
 * and the errors and warnings a user sees for bad files.  Fixtures live in
 * tests/unit/data/compose (or $PH_TEST_DATA/compose); the tests run from
 * the repository root. */
#include "test_util.h"

#include <ctype.h>
#include <sys/stat.h>

#include "ph_compose.h"

static const char *
data_path(const char *rel)
{
    static char path[1024];
    const char *root = getenv("PH_TEST_DATA");

    snprintf(path, sizeof path, "%s/compose/%s", root ? root : "tests/unit/data", rel);
    return path;
}

static char *
cwd_join(const char *rel)
{
    char cwd[1024], *out = NULL;

    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_true(asprintf(&out, "%s/%s", cwd, rel) > 0);
    return out;
}

#define NS(s) ((long long)(s) * 1000000000LL)

static void
test_fixture_full(void **state)
{
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    ph_service *s;
    char *dir, *want;
    const char *out;

    (void)state;
    setenv("OVERRIDDEN_IN_FIXTURE", "from-environment", 1);
    unsetenv("UNSET_IN_FIXTURE");
    tu_capture_begin();
    assert_int_equal(ph_compose_load(data_path("full/compose.yaml"), NULL, &c, &err), 0);
    out = tu_capture_end();
    unsetenv("OVERRIDDEN_IN_FIXTURE");
    if (err)
        fail_msg("%s", err->msg);
    /* version, x-* at both levels, and merged keys: all without a word. */
    assert_string_equal(out, "");
    dir = cwd_join(data_path("full"));
    assert_string_equal(c->dir, dir);
    assert_string_equal(c->project, "full");
    assert_int_equal(c->n_services, 3);
    assert_string_equal(c->services[0].name, "api");
    assert_string_equal(c->services[1].name, "db");
    assert_string_equal(c->services[2].name, "worker");
    assert_int_equal(c->volumes.n, 1);
    assert_string_equal(c->volumes.v[0], "cache");
    /* backend, and default for `worker`, which names no network. */
    assert_int_equal(c->networks.n, 2);
    assert_string_equal(c->networks.v[0], "backend");
    assert_string_equal(c->networks.v[1], "default");
    assert_string_equal(ph_compose_network(c, "default")->name, "full_default");
    assert_string_equal(ph_compose_network(c, "backend")->name, "full_backend");

    s = ph_compose_service(c, "api");
    assert_int_equal(s->line, 10);
    assert_string_equal(s->image, "example/api:1.2");
    assert_false(s->has_build);
    assert_true(s->has_command);
    assert_int_equal(s->command.n, 5);
    assert_string_equal(s->command.v[0], "demo");
    assert_string_equal(s->command.v[1], "--flag");
    assert_string_equal(s->command.v[2], "two words");
    assert_string_equal(s->command.v[3], "x y");
    assert_string_equal(s->command.v[4], "back slash");
    assert_null(s->command.v[5]);
    assert_true(s->has_entrypoint);
    assert_int_equal(s->entrypoint.n, 2);
    assert_string_equal(s->entrypoint.v[0], "/bin/entry");
    /* env_file entries first, then `environment` overrides. */
    assert_string_equal(s->environment.v[0].key, "A");
    assert_string_equal(ph_kvv_get(&s->environment, "A"), "overridden");
    assert_string_equal(ph_kvv_get(&s->environment, "B"), "quoted # not a comment");
    assert_string_equal(ph_kvv_get(&s->environment, "C"), "exported");
    assert_string_equal(ph_kvv_get(&s->environment, "D"), "plain value");
    assert_string_equal(ph_kvv_get(&s->environment, "E"), "single");
    assert_string_equal(ph_kvv_get(&s->environment, "PLAIN"), "fallback");
    assert_string_equal(ph_kvv_get(&s->environment, "NESTED"), "1.2-nested");
    assert_string_equal(ph_kvv_get(&s->environment, "DOLLAR"), "$HOME");
    assert_string_equal(ph_kvv_get(&s->environment, "DOT"), "dot");
    assert_string_equal(ph_kvv_get(&s->environment, "WHICH"), "from-environment");
    /* BARE is set nowhere: kept without a value, sent as `BARE` (unset in
     * the container), as docker compose sends it. */
    assert_string_equal(s->environment.v[10].key, "BARE");
    assert_null(s->environment.v[10].value);
    assert_int_equal(s->environment.n, 11);
    assert_string_equal(s->working_dir, "/srv");
    assert_string_equal(s->user, "1000:1000");

    assert_int_equal(s->n_ports, 6);
    assert_null(s->ports[0].host_ip);
    assert_null(s->ports[0].host_port);
    assert_string_equal(s->ports[0].container_port, "8080");
    assert_string_equal(s->ports[0].protocol, "tcp");
    assert_string_equal(s->ports[1].host_ip, "127.0.0.1");
    assert_string_equal(s->ports[1].host_port, "18080");
    assert_string_equal(s->ports[1].container_port, "8080");
    assert_null(s->ports[2].host_ip);
    assert_string_equal(s->ports[2].host_port, "8081");
    assert_string_equal(s->ports[2].container_port, "80");
    assert_string_equal(s->ports[2].protocol, "udp");
    assert_string_equal(s->ports[3].host_ip, "127.0.0.1");
    assert_null(s->ports[3].host_port);
    assert_string_equal(s->ports[3].container_port, "9090");
    assert_string_equal(s->ports[4].host_ip, "::1");
    assert_string_equal(s->ports[4].host_port, "5353");
    assert_string_equal(s->ports[4].container_port, "53");
    assert_string_equal(s->ports[4].protocol, "udp");
    assert_string_equal(s->ports[5].host_ip, "0.0.0.0");
    assert_string_equal(s->ports[5].host_port, "8443");
    assert_string_equal(s->ports[5].container_port, "443");
    assert_string_equal(s->ports[5].protocol, "tcp");

    assert_int_equal(s->n_volumes, 6);
    assert_true(asprintf(&want, "%s/src", dir) > 0);
    assert_string_equal(s->volumes[0].source, want);
    free(want);
    assert_string_equal(s->volumes[0].target, "/dst");
    assert_true(s->volumes[0].bind);
    assert_true(s->volumes[0].read_only);
    /* ../shared/./cfg, cleaned: the sibling of full/, no `..` or `.` left. */
    assert_true(asprintf(&want, "%.*s/shared/cfg", (int)(strrchr(dir, '/') - dir), dir) > 0);
    assert_string_equal(s->volumes[1].source, want);
    free(want);
    assert_false(s->volumes[1].read_only);
    assert_string_equal(s->volumes[2].source, "cache");
    assert_false(s->volumes[2].bind);
    assert_null(s->volumes[3].source);
    assert_string_equal(s->volumes[3].target, "/anon");
    assert_false(s->volumes[3].bind);
    assert_true(asprintf(&want, "%s/logs", dir) > 0);
    assert_string_equal(s->volumes[4].source, want);
    free(want);
    assert_true(s->volumes[4].bind);
    assert_true(s->volumes[4].read_only);
    assert_string_equal(s->volumes[5].source, "cache");
    assert_string_equal(s->volumes[5].target, "/cache2");
    assert_false(s->volumes[5].bind);

    assert_int_equal(s->networks.n, 2);
    assert_string_equal(s->networks.v[0], "backend");
    assert_string_equal(s->networks.v[1], "default");
    assert_int_equal(s->depends_on.n, 2);
    assert_string_equal(s->depends_on.v[0], "db");
    assert_string_equal(s->depends_on.v[1], "worker");
    assert_int_equal(s->cap_add.n, 2);
    assert_string_equal(s->cap_add.v[1], "NET_ADMIN");
    assert_int_equal(s->cap_drop.n, 1); /* from the x-common anchor */
    assert_string_equal(s->cap_drop.v[0], "MKNOD");
    assert_false(s->privileged);
    assert_string_equal(s->security_opt.v[0], "seccomp=unconfined");
    assert_string_equal(s->stop_signal, "SIGINT");
    assert_true(s->stop_grace_ns == NS(90));
    assert_true(s->healthcheck.present);
    assert_false(s->healthcheck.disable);
    assert_int_equal(s->healthcheck.test.n, 2);
    assert_string_equal(s->healthcheck.test.v[0], "CMD-SHELL");
    assert_string_equal(s->healthcheck.test.v[1], "curl -f http://localhost/ || exit 1");
    assert_true(s->healthcheck.interval_ns == NS(5));
    assert_true(s->healthcheck.timeout_ns == 500000000LL);
    assert_true(s->healthcheck.start_period_ns == NS(60));
    assert_int_equal(s->healthcheck.retries, 3);
    assert_int_equal(s->labels.n, 1);
    assert_string_equal(ph_kvv_get(&s->labels, "team"), "core");
    assert_string_equal(s->container_name, "api-1");

    s = ph_compose_service(c, "db");
    assert_null(s->image);
    assert_true(s->has_build);
    assert_true(asprintf(&want, "%s/db", dir) > 0);
    assert_string_equal(s->build_context, want);
    free(want);
    assert_string_equal(s->build_dockerfile, "Dockerfile.db");
    assert_string_equal(ph_kvv_get(&s->build_args, "VERSION"), "15");
    assert_int_equal(s->build_args.n, 2);
    assert_null(ph_kvv_get(&s->build_args, "FROM_ENV"));
    assert_false(s->has_command);
    assert_int_equal(s->healthcheck.test.n, 2);
    assert_string_equal(s->healthcheck.test.v[0], "CMD");
    assert_true(s->stop_grace_ns == NS(10));
    assert_string_equal(ph_kvv_get(&s->labels, "role"), "database");
    assert_string_equal(ph_kvv_get(&s->labels, "bare"), "");
    assert_null(s->stop_signal);

    s = ph_compose_service(c, "worker");
    assert_true(asprintf(&want, "%s/worker", dir) > 0);
    assert_string_equal(s->build_context, want);
    free(want);
    assert_string_equal(s->build_dockerfile, "Dockerfile");
    assert_int_equal(s->command.n, 3);
    assert_string_equal(s->command.v[2], "4");
    assert_string_equal(ph_kvv_get(&s->environment, "MODE"), "batch");
    assert_string_equal(ph_kvv_get(&s->environment, "EMPTY"), "");
    /* set nowhere: kept without a value (sent as `FROM_PROCESS`) */
    assert_null(ph_kvv_get(&s->environment, "FROM_PROCESS"));
    assert_int_equal(s->environment.n, 3);
    assert_true(s->privileged);
    assert_true(s->healthcheck.present);
    assert_true(s->healthcheck.disable);
    assert_true(s->stop_grace_ns == -1);
    assert_int_equal(s->n_ports, 0);
    assert_int_equal(s->networks.n, 0);
    assert_null(ph_compose_service(c, "nope"));
    free(dir);
    ph_compose_free(c);
    ph_compose_free(NULL);
}

static void
test_fixture_bad(void **state)
{
    static const struct {
        const char *file, *fragment;
        int line, col;
    } cases[] = {
        { "malformed.yaml", "did not find expected ',' or ']'", 5, 1 },
        { "tab.yaml", "found character that cannot start any token", 3, 1 },
        { "ports-scalar.yaml", "`ports` must be a list", 4, 12 },
        { "cap-add-string.yaml", "`cap_add` must be a list, not a scalar", 4, 14 },
        { "bad-bool.yaml", "`privileged` must be true or false, not `maybe`", 4, 17 },
        { "bad-duration.yaml", "`1m30` is not a duration", 4, 24 },
        { "bad-port.yaml", "`70000` is not a port number", 4, 13 },
        { "command-quote.yaml", "`command`: unterminated ' quote", 4, 14 },
        { "healthcheck-test.yaml", "must start with CMD or CMD-SHELL", 5, 13 },
        { "depends-unknown.yaml", "service `a` depends on `ghost`, which is not a service", 6, 22 },
        { "depends-unknown-map.yaml", "service `a` depends on `ghost`", 5, 7 },
        { "depends-cycle.yaml", "service `c` depends on `a`, which depends on it in turn", 10, 18 },
        { "depends-condition.yaml", "not `service_ready`", 5, 23 },
        { "no-image.yaml", "service `a` has neither `image` nor `build`", 3, 5 },
        { "duplicate-key.yaml", "duplicate key `image` (first at line 3)", 5, 5 },
        { "required-var.yaml", "required variable PH_TEST_REQUIRED_UNSET is not set: set the token", 5, 9 },
        { "bad-interpolation.yaml", "unterminated `${`", 4, 18 },
        { "env-file-missing.yaml", "bad/missing.env`: No such file or directory", 4, 16 },
        { "undeclared-volume.yaml", "volume `data`, which the top-level `volumes:` does not declare", 4, 15 },
        { "undeclared-network.yaml", "network `front`, which the top-level `networks:` does not declare", 4, 16 },
    };

    (void)state;
    unsetenv("PH_TEST_REQUIRED_UNSET");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rel[256], where[1200];
        ph_compose *c = (ph_compose *)&c; /* must come back NULL */
        ph_error_t err = NULL;
        const char *path;

        snprintf(rel, sizeof rel, "bad/%s", cases[i].file);
        path = data_path(rel);
        if (ph_compose_load(path, NULL, &c, &err) != -1)
            fail_msg("%s loaded", cases[i].file);
        assert_null(c);
        assert_non_null(err);
        assert_int_equal(err->status, PH_EXIT_USAGE);
        snprintf(where, sizeof where, "%s:%d:%d: ", path, cases[i].line, cases[i].col);
        if (strncmp(err->msg, where, strlen(where)) != 0 || strstr(err->msg, cases[i].fragment) == NULL)
            fail_msg("%s: error `%s` does not start with `%s` or lacks `%s`", cases[i].file, err->msg, where,
                     cases[i].fragment);
        ph_error_free(&err);
    }
}

/* Aliases share one node: `$$` in it must be unescaped once, not twice,
 * and explicit keys beat merged ones. */
static void
test_anchors_and_merges(void **state)
{
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    const char *path;
    ph_service *s;

    (void)state;
    setenv("PH_TEST_SECRET", "leaked", 1);
    path = tu_write("anchors.yaml", "x-env: &env\n"
                                    "  PRICE: $$PH_TEST_SECRET\n"
                                    "x-base: &base\n"
                                    "  image: base\n"
                                    "  user: nobody\n"
                                    "services:\n"
                                    "  a:\n"
                                    "    <<: *base\n"
                                    "    user: root\n"
                                    "    environment: *env\n"
                                    "  b:\n"
                                    "    <<: [*base]\n"
                                    "    environment: *env\n");
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), 0);
    s = ph_compose_service(c, "a");
    assert_string_equal(s->image, "base");
    assert_string_equal(s->user, "root");
    assert_string_equal(ph_kvv_get(&s->environment, "PRICE"), "$PH_TEST_SECRET");
    s = ph_compose_service(c, "b");
    assert_string_equal(s->user, "nobody");
    assert_string_equal(ph_kvv_get(&s->environment, "PRICE"), "$PH_TEST_SECRET");
    ph_compose_free(c);
    unsetenv("PH_TEST_SECRET");
    path = tu_write("selfmerge.yaml", "services:\n  a: &a\n    image: x\n    <<: 5\n");
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), -1);
    assert_non_null(strstr(err->msg, ":4:9: `<<` merges a mapping"));
    ph_error_free(&err);
}


static void
test_full_service(void **state)
{
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    ph_service *s;
    const char *path;

    (void)state;
    tu_write(".env", "# comment\nTAG=1.2\nFROM_DOTENV=dot\nOVERRIDDEN=dotenv\n");
    tu_write("app.env", "A=from-file\nB=\"quoted value\"\n");
    setenv("OVERRIDDEN", "environment", 1);
    unsetenv("UNSET_VAR");
    path = tu_write("compose.yaml",
                    "name: My_Project\n"
                    "services:\n"
                    "  api:\n"
                    "    image: \"example/api:${TAG}\"\n"
                    "    command: demo --flag 'two words' \"x y\"\n"
                    "    entrypoint: [\"/bin/entry\", \"-v\"]\n"
                    "    environment:\n"
                    "      - A=overridden\n"
                    "      - PLAIN=${UNSET_VAR:-fallback}\n"
                    "      - DOLLAR=$$HOME\n"
                    "      - WHICH=${OVERRIDDEN}\n"
                    "      - DOT=${FROM_DOTENV}\n"
                    "      - BARE\n"
                    "    env_file: app.env\n"
                    "    working_dir: /srv\n"
                    "    user: \"1000:1000\"\n"
                    "    ports: [\"8080\", \"127.0.0.1:18080:80\", \"53:53/udp\"]\n"
                    "    volumes:\n"
                    "      - ./data:/data:ro\n"
                    "      - ./..data:/dotdot\n"
                    "      - cache:/cache\n"
                    "      - /anon\n"
                    "    networks: [backend]\n"
                    "    depends_on:\n"
                    "      db: {condition: service_started}\n"
                    "    cap_add: [NET_ADMIN]\n"
                    "    cap_drop: [MKNOD]\n"
                    "    privileged: true\n"
                    "    security_opt: [no-new-privileges]\n"
                    "    stop_signal: INT\n"
                    "    stop_grace_period: 1m30s\n"
                    "    healthcheck:\n"
                    "      test: curl -f localhost\n"
                    "      interval: 5s\n"
                    "      retries: 3\n"
                    "    labels: {team: core}\n"
                    "    container_name: api-1\n"
                    "    x-custom: ignored\n"
                    "  db:\n"
                    "    build:\n"
                    "      context: ./db\n"
                    "      dockerfile: Dockerfile.db\n"
                    "      args: [VERSION=15]\n"
                    "volumes:\n"
                    "  cache:\n"
                    "networks:\n"
                    "  backend:\n");
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), 0);
    assert_null(err);
    assert_string_equal(c->project, "my_project");
    assert_int_equal(c->n_services, 2);
    s = ph_compose_service(c, "api");
    assert_non_null(s);
    assert_int_equal(s->line, 3);
    assert_string_equal(s->image, "example/api:1.2");
    assert_int_equal(s->command.n, 4);
    assert_string_equal(s->command.v[2], "two words");
    assert_string_equal(s->command.v[3], "x y");
    assert_int_equal(s->entrypoint.n, 2);
    assert_string_equal(ph_kvv_get(&s->environment, "A"), "overridden");
    assert_string_equal(ph_kvv_get(&s->environment, "B"), "quoted value");
    assert_string_equal(ph_kvv_get(&s->environment, "PLAIN"), "fallback");
    assert_string_equal(ph_kvv_get(&s->environment, "DOLLAR"), "$HOME");
    assert_string_equal(ph_kvv_get(&s->environment, "WHICH"), "environment");
    assert_string_equal(ph_kvv_get(&s->environment, "DOT"), "dot");
    assert_null(ph_kvv_get(&s->environment, "BARE"));
    assert_string_equal(s->working_dir, "/srv");
    assert_string_equal(s->user, "1000:1000");
    assert_int_equal(s->n_ports, 3);
    assert_null(s->ports[0].host_port);
    assert_string_equal(s->ports[1].host_ip, "127.0.0.1");
    assert_string_equal(s->ports[1].host_port, "18080");
    assert_string_equal(s->ports[1].container_port, "80");
    assert_string_equal(s->ports[2].protocol, "udp");
    assert_int_equal(s->n_volumes, 4);
    assert_true(s->volumes[0].bind);
    assert_true(s->volumes[0].read_only);
    assert_non_null(strstr(s->volumes[0].source, "/data"));
    assert_int_equal(s->volumes[0].source[0], '/');
    {
        /* `..data` is a name, not the parent directory. */
        char *want = NULL;

        assert_true(asprintf(&want, "%s/..data", test_dir) > 0);
        assert_string_equal(s->volumes[1].source, want);
        free(want);
    }
    assert_false(s->volumes[2].bind);
    assert_string_equal(s->volumes[2].source, "cache");
    assert_null(s->volumes[3].source);
    assert_string_equal(s->networks.v[0], "backend");
    assert_string_equal(s->depends_on.v[0], "db");
    assert_string_equal(s->cap_add.v[0], "NET_ADMIN");
    assert_string_equal(s->cap_drop.v[0], "MKNOD");
    assert_true(s->privileged);
    assert_string_equal(s->security_opt.v[0], "no-new-privileges");
    assert_string_equal(s->stop_signal, "SIGINT");
    assert_true(s->stop_grace_ns == 90LL * 1000000000LL);
    assert_true(s->healthcheck.present);
    assert_string_equal(s->healthcheck.test.v[0], "CMD-SHELL");
    assert_true(s->healthcheck.interval_ns == 5LL * 1000000000LL);
    assert_int_equal(s->healthcheck.retries, 3);
    assert_string_equal(ph_kvv_get(&s->labels, "team"), "core");
    assert_string_equal(s->container_name, "api-1");
    s = ph_compose_service(c, "db");
    assert_true(s->has_build);
    assert_non_null(strstr(s->build_context, "/db"));
    assert_string_equal(s->build_dockerfile, "Dockerfile.db");
    assert_string_equal(ph_kvv_get(&s->build_args, "VERSION"), "15");
    assert_null(s->image);
    ph_compose_free(c);
    unsetenv("OVERRIDDEN");
}

static void
expect_error(const char *yaml, const char *fragment, int line, int col)
{
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    const char *path = tu_write("bad.yaml", yaml);
    char where[600];

    assert_int_equal(ph_compose_load(path, NULL, &c, &err), -1);
    assert_null(c);
    assert_non_null(err);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    if (col > 0)
        snprintf(where, sizeof where, "%s:%d:%d:", path, line, col);
    else
        snprintf(where, sizeof where, "%s:%d", path, line);
    if (strstr(err->msg, where) == NULL || strstr(err->msg, fragment) == NULL)
        fail_msg("error `%s` lacks `%s` or `%s`", err->msg, where, fragment);
    ph_error_free(&err);
}

static void
test_malformed_yaml(void **state)
{
    (void)state;
    expect_error("services:\n  a:\n    image: x\n    ports: [unterminated\n", "", 5, 1);
    expect_error("services:\n  a:\n\timage: x\n", "", 3, 1);
}

static void
test_wrong_types(void **state)
{
    (void)state;
    expect_error("services:\n  a:\n    image: x\n    cap_add: NET_ADMIN\n", "`cap_add` must be a list", 4, 14);
    expect_error("services:\n  a:\n    image: [x]\n", "`image` must be a string", 3, 12);
    expect_error("services:\n  a:\n    image: x\n    privileged: maybe\n", "true or false", 4, 17);
    expect_error("services:\n  a:\n    image: x\n    stop_grace_period: soon\n", "not a duration", 4, 24);
    expect_error("services:\n  a:\n    image: x\n    ports: [\"80:abc\"]\n", "not a port number", 4, 13);
    expect_error("services: [a, b]\n", "`services` must be a mapping", 1, 11);
    expect_error("services:\n  a:\n    image: x\n    stop_signal: SIGNOPE\n", "not a signal", 4, 18);
}

static void
test_bad_references(void **state)
{
    (void)state;
    expect_error("services:\n  a:\n    image: x\n    depends_on: [ghost]\n", "depends on `ghost`", 4, 18);
    expect_error("services:\n  a:\n    image: x\n    depends_on: [a]\n", "depends on itself", 4, 18);
    expect_error("services:\n  a b:\n    image: x\n", "not a service name", 2, 3);
    expect_error("services:\n  a:\n    image: x\n    ports: [\"1.2.3.4:80\"]\n", "", 4, 13);
    expect_error("services:\n  a:\n    image: x\n    ports: [\"80/icmp\"]\n", "tcp, udp or sctp", 4, 13);
    expect_error("services:\n  a:\n    image: x\n    volumes: [\"./a:/b:rox\"]\n", "unknown mode `rox`", 4, 15);
    expect_error("services:\n  a:\n    image: x\n    volumes: [\"./a:rel\"]\n", "must be an absolute path", 4, 15);
    expect_error("services:\n  a:\n    image: x\n    volumes:\n      - {source: ./a, target: /b}\n",
                 "needs `type`", 5, 9);
    expect_error("services:\n  a:\n    image: \"\"\n", "`image` is empty", 3, 12);
    expect_error("services:\n  a:\n    image: x\n    env_file: [{required: false}]\n", "needs `path`", 4, 16);
    expect_error("services:\n  a:\n    command: run\n", "neither `image` nor `build`", 3, 5);
    expect_error("services:\n  a:\n    image: x\n    volumes: [\"vol:/data\"]\n", "does not declare", 4, 15);
    expect_error("services:\n  a:\n    image: x\n    volumes: [\"vol:/data\"]\nvolumes:\n  other:\n", "does not declare", 4, 15);
    expect_error("services:\n  a:\n    image: x\n  a:\n    image: y\n", "duplicate key `a`", 4, 3);
    expect_error("services:\n  a:\n    image: ${REQUIRED_X:?set it}\n", "REQUIRED_X is not set: set it", 3, 0);
    expect_error("services:\n  a:\n    image: x\n    working_dir: srv\n", "must be an absolute path", 4, 18);
    {
        /* A value may not grow past 1 MiB, however it is built up. */
        char *big = malloc(600001);

        assert_non_null(big);
        memset(big, 'b', 600000);
        big[600000] = '\0';
        setenv("PH_TEST_BIG", big, 1);
        free(big);
        expect_error("services:\n  a:\n    image: x\n    user: ${PH_TEST_BIG}${PH_TEST_BIG}\n", "expands", 4, 11);
        unsetenv("PH_TEST_BIG");
    }
}

static void
test_unknown_key_warns(void **state)
{
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    const char *path, *out;
    char want[600];

    (void)state;
    path = tu_write("warn.yaml", "services:\n  a:\n    image: x\n    imagee: typo\nfrobnicate: 1\n");
    tu_capture_begin();
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), 0);
    out = tu_capture_end();
    snprintf(want, sizeof want, "%s:4: unknown key `imagee` in service `a`", path);
    assert_non_null(strstr(out, want));
    snprintf(want, sizeof want, "%s:5: unknown top-level key `frobnicate`", path);
    assert_non_null(strstr(out, want));
    ph_compose_free(c);
}

static const char *
lookup(const char *name, void *ud)
{
    (void)ud;
    if (strcmp(name, "SET") == 0)
        return "v";
    if (strcmp(name, "EMPTY") == 0)
        return "";
    return NULL;
}

static void
test_interpolation(void **state)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        { "${SET}", "v" }, { "$SET-x", "v-x" }, { "${UNSET}", "" }, { "${UNSET:-d}", "d" },
        { "${EMPTY:-d}", "d" }, { "${EMPTY-d}", "" }, { "${UNSET-d}", "d" }, { "${SET:+alt}", "alt" },
        { "${UNSET:+alt}", "" }, { "$$SET", "$SET" }, { "a$", "a$" }, { "${SET}${SET}", "vv" },
        { "${UNSET:-${SET}x}", "vx" }, { "${UNSET:-a${UNSET:-b}c}", "abc" }, { "${SET:-${UNSET:?no}}", "v" },
        { "$$", "$" }, { "$$$$", "$$" }, { "$1", "$1" }, { "100$ off", "100$ off" }, { "${EMPTY?x}", "" },
        { "${SET?x}", "v" }, { "pre${SET}post", "prevpost" }, { "$SET$SET", "vv" }, { "${UNSET-}", "" },
    };
    ph_error_t err = NULL;

    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *r = ph_interpolate(cases[i].in, lookup, NULL, "t", &err);
        assert_non_null(r);
        if (strcmp(r, cases[i].out) != 0)
            fail_msg("`%s` gave `%s`, want `%s`", cases[i].in, r, cases[i].out);
        free(r);
    }
    assert_null(ph_interpolate("${UNSET:?need it}", lookup, NULL, "f:3", &err));
    assert_non_null(strstr(err->msg, "f:3: required variable UNSET is not set: need it"));
    ph_error_free(&err);
    assert_null(ph_interpolate("${EMPTY:?}", lookup, NULL, "f:4", &err));
    assert_string_equal(err->msg, "f:4: required variable EMPTY is empty");
    ph_error_free(&err);
    assert_null(ph_interpolate("${UNSET?why ${SET}}", lookup, NULL, "f:5", &err));
    assert_string_equal(err->msg, "f:5: required variable UNSET is not set: why v");
    ph_error_free(&err);
    assert_null(ph_interpolate("${unterminated", lookup, NULL, "f:1", &err));
    assert_int_equal(err->status, PH_EXIT_USAGE);
    ph_error_free(&err);
    assert_null(ph_interpolate("${1X}", lookup, NULL, "f:1", &err));
    ph_error_free(&err);
    assert_null(ph_interpolate("${SET/x/y}", lookup, NULL, "f:1", &err));
    ph_error_free(&err);
    assert_null(ph_interpolate("${bad name}", lookup, NULL, "f:1", &err));
    ph_error_free(&err);
}

static void
test_shell_split_and_durations(void **state)
{
    ph_strv v = { 0 };
    ph_error_t err = NULL;
    long long ns;

    (void)state;
    assert_int_equal(ph_shell_split("a 'b c' \"d \\\"e\\\"\" f\\ g", &v, &err), 0);
    assert_int_equal(v.n, 4);
    assert_string_equal(v.v[1], "b c");
    assert_string_equal(v.v[2], "d \"e\"");
    assert_string_equal(v.v[3], "f g");
    ph_strv_free(&v);
    assert_int_equal(ph_shell_split("  sh -c 'echo \"$X\"; exit 3'  ''  x\"y\" ", &v, &err), 0);
    assert_int_equal(v.n, 5);
    assert_string_equal(v.v[0], "sh");
    assert_string_equal(v.v[2], "echo \"$X\"; exit 3");
    assert_string_equal(v.v[3], "");
    assert_string_equal(v.v[4], "xy");
    assert_null(v.v[5]);
    ph_strv_free(&v);
    assert_int_equal(ph_shell_split("", &v, &err), 0);
    assert_int_equal(v.n, 0);
    assert_int_equal(ph_shell_split("a\\\\ b\\", &v, &err), -1); /* a trailing backslash */
    ph_error_free(&err);
    ph_strv_free(&v);
    assert_int_equal(ph_shell_split("a\\\\", &v, &err), 0);
    assert_string_equal(v.v[0], "a\\");
    ph_strv_free(&v);
    assert_int_equal(ph_shell_split("a \"open", &v, &err), -1);
    assert_non_null(strstr(err->msg, "unterminated \" quote"));
    ph_error_free(&err);
    ph_strv_free(&v);
    assert_int_equal(ph_shell_split("a 'open", &v, &err), -1);
    ph_error_free(&err);
    ph_strv_free(&v);
    assert_int_equal(ph_duration_parse("1m30s", &ns), 0);
    assert_true(ns == 90000000000LL);
    assert_int_equal(ph_duration_parse("500ms", &ns), 0);
    assert_true(ns == 500000000LL);
    assert_int_equal(ph_duration_parse("2h", &ns), 0);
    assert_true(ns == 7200000000000LL);
    assert_int_equal(ph_duration_parse("10", &ns), 0);
    assert_true(ns == 10000000000LL);
    assert_int_equal(ph_duration_parse("1h2m3.5s", &ns), 0);
    assert_true(ns == 3723500000000LL);
    assert_int_equal(ph_duration_parse("1.5s", &ns), 0);
    assert_true(ns == 1500000000LL);
    assert_int_equal(ph_duration_parse("250us", &ns), 0);
    assert_true(ns == 250000LL);
    assert_int_equal(ph_duration_parse("7ns", &ns), 0);
    assert_true(ns == 7LL);
    assert_int_equal(ph_duration_parse("0", &ns), 0);
    assert_true(ns == 0);
    ns = 42;
    assert_int_equal(ph_duration_parse("10x", &ns), -1);
    assert_int_equal(ph_duration_parse("", &ns), -1);
    assert_int_equal(ph_duration_parse("1m30", &ns), -1);
    assert_int_equal(ph_duration_parse("-5s", &ns), -1);
    assert_int_equal(ph_duration_parse("s", &ns), -1);
    assert_int_equal(ph_duration_parse(" 5s", &ns), -1);
    assert_int_equal(ph_duration_parse("0x10s", &ns), -1);
    assert_int_equal(ph_duration_parse("99999999999h", &ns), -1);
    assert_int_equal(ph_duration_parse("2562047h48m", &ns), -1); /* past LLONG_MAX ns */
    assert_true(ns == 42); /* untouched on error */
}

static void
test_project_name(void **state)
{
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    const char *path;

    (void)state;
    path = tu_write("p.yaml", "services:\n  a:\n    image: x\n");
    /* -p must already be a valid name: compose refuses, never rewrites. */
    assert_int_equal(ph_compose_load(path, "Over.Ride", &c, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_non_null(strstr(err->msg, "-p `Over.Ride` is not a valid project name"));
    assert_string_equal(err->hint, "for example `override`");
    ph_error_free(&err);
    assert_int_equal(ph_compose_load(path, "over_ride-2", &c, &err), 0);
    assert_string_equal(c->project, "over_ride-2");
    ph_compose_free(c);
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), 0);
    /* No `name:`: the directory's base name, "ph-unit-XXXXXX", lowercased. */
    {
        char want[64];
        size_t i;

        for (i = 0; strrchr(test_dir, '/')[1 + i] && i + 1 < sizeof want; i++)
            want[i] = (char)tolower((unsigned char)strrchr(test_dir, '/')[1 + i]);
        want[i] = '\0';
        assert_string_equal(c->project, want);
    }
    ph_compose_free(c);
    path = tu_write("n.yaml", "name: __9_Lives.Of-${PH_TEST_PROJ:-Cat}\nservices:\n  a:\n    image: x\n");
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), 0);
    assert_string_equal(c->project, "9_livesof-cat");
    ph_compose_free(c);
    path = tu_write("e.yaml", "name: \"..\"\nservices:\n  a:\n    image: x\n");
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), -1);
    assert_non_null(strstr(err->msg, "e.yaml:1:7: "));
    ph_error_free(&err);
    assert_int_equal(ph_compose_load("/nonexistent/compose.yaml", NULL, &c, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_non_null(strstr(err->msg, "/nonexistent/compose.yaml"));
    ph_error_free(&err);
}

/* ---- limits (issue 14) --------------------------------------------------- */

/* A load that went quadratic or blocked would outlast this by far; the
 * linear one takes well under a second.  SIGALRM's default action ends the
 * test binary, which run-unit.sh counts as a failure. */
#define LIMIT_DEADLINE_S 60

/* Write N copies of UNIT between HEAD and TAIL into test_dir/NAME. */
static const char *
write_repeated(const char *name, const char *head, const char *unit, size_t n, const char *mid, const char *tail,
               size_t n_tail)
{
    static char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", test_dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(head, f);
    for (size_t i = 0; i < n; i++)
        fputs(unit, f);
    fputs(mid, f);
    for (size_t i = 0; i < n_tail; i++)
        fputs(tail, f);
    fputs("\"\n", f);
    fclose(f);
    return path;
}

static void
expect_load_error_at(const char *path, const char *where_suffix, const char *fragment)
{
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    char where[700];

    assert_int_equal(ph_compose_load(path, NULL, &c, &err), -1);
    assert_null(c);
    assert_non_null(err);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    snprintf(where, sizeof where, "%s:%s", path, where_suffix);
    if (strncmp(err->msg, where, strlen(where)) != 0 || strstr(err->msg, fragment) == NULL)
        fail_msg("error `%.300s` does not start with `%s` or lacks `%s`", err->msg, where, fragment);
    ph_error_free(&err);
}

/* `${A:-${A:-...}}` 60,000 deep overflowed the stack: now a clear error at
 * the value, and the deepest nesting allowed still works. */
static void
test_limit_nested_interpolation(void **state)
{
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    const char *path;

    (void)state;
    unsetenv("A");
    alarm(LIMIT_DEADLINE_S);
    path = write_repeated("nest.yaml", "services:\n  a:\n    image: \"", "${A:-", 60000, "x", "}", 60000);
    expect_load_error_at(path, "3:12: ", "nested deeper than");
    path = write_repeated("nest32.yaml", "services:\n  a:\n    image: \"", "${A:-", 32, "x", "}", 32);
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), 0);
    assert_string_equal(c->services[0].image, "x");
    ph_compose_free(c);
    path = write_repeated("nest33.yaml", "services:\n  a:\n    image: \"", "${A:-", 33, "x", "}", 33);
    expect_load_error_at(path, "3:12: ", "nested deeper than 32");
    alarm(0);
}

/* 200,000 keys: the duplicate check and the key/value lists are linear, and
 * a duplicate at the very end is still reported where it is. */
static void
test_limit_many_keys(void **state)
{
    static char path[512];
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    const size_t n = 200000;
    FILE *f;

    (void)state;
    alarm(LIMIT_DEADLINE_S);
    snprintf(path, sizeof path, "%s/keys.yaml", test_dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("services:\n  a:\n    image: x\n    labels:\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "      k%zu: v%zu\n", i, i);
    fputs("    environment:\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "      - E%zu=%zu\n", i, i);
    fclose(f);
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), 0);
    assert_int_equal(c->services[0].labels.n, n);
    assert_string_equal(ph_kvv_get(&c->services[0].labels, "k199999"), "v199999");
    assert_int_equal(c->services[0].environment.n, n);
    assert_string_equal(c->services[0].environment.v[n - 1].value, "199999");
    ph_compose_free(c);
    f = fopen(path, "a");
    assert_non_null(f);
    fputs("    labels: {}\n", f);
    fclose(f);
    expect_load_error_at(path, "400006:5: ", "duplicate key `labels` (first at line 4)");
    alarm(0);
}

/* `[[[...]]]` 100,000 deep took minutes inside libyaml: refused where the
 * nesting passes the limit. */
static void
test_limit_deep_nesting(void **state)
{
    const char *path;

    (void)state;
    alarm(LIMIT_DEADLINE_S);
    path = write_repeated("deep.yaml", "services:\n  a:\n    image: x\n    x-deep: \"\"\n    x-list: ", "[", 100000,
                          "", "]", 100000);
    expect_load_error_at(path, "5:", "nested deeper than");
    alarm(0);
}

/* An env_file that is a FIFO blocked forever, a directory read as empty:
 * both are refused, naming the entry. */
static void
test_env_file_not_regular(void **state)
{
    char fifo[600];

    (void)state;
    alarm(LIMIT_DEADLINE_S);
    snprintf(fifo, sizeof fifo, "%s/fifo.env", test_dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(mkdir(strcat(strcpy((char[600]){ 0 }, test_dir), "/dir.env"), 0700), 0);
    expect_error("services:\n  a:\n    image: x\n    env_file: fifo.env\n", "is not a regular file", 4, 15);
    expect_error("services:\n  a:\n    image: x\n    env_file: [dir.env]\n", "is not a regular file", 4, 16);
    alarm(0);
}

/* Keys are names, not templates: `$` in a key stays as written. */
static void
test_dollar_keys_literal(void **state)
{
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    const char *path;
    ph_service *s;

    (void)state;
    setenv("PH_TEST_KEYVAR", "expanded", 1);
    path = tu_write("keys.yaml", "services:\n  a:\n    image: x\n    labels:\n      $PH_TEST_KEYVAR: v\n"
                                 "      ${PH_TEST_KEYVAR}: w\n    environment:\n      $PH_TEST_KEYVAR: $PH_TEST_KEYVAR\n");
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), 0);
    s = ph_compose_service(c, "a");
    assert_string_equal(ph_kvv_get(&s->labels, "$PH_TEST_KEYVAR"), "v");
    assert_string_equal(ph_kvv_get(&s->labels, "${PH_TEST_KEYVAR}"), "w");
    assert_null(ph_kvv_get(&s->labels, "expanded"));
    assert_string_equal(ph_kvv_get(&s->environment, "$PH_TEST_KEYVAR"), "expanded");
    ph_compose_free(c);
    /* An alias used as a key shares its node with a value: still a key. */
    path = tu_write("keys.yaml", "x-k: &k $PH_TEST_KEYVAR\nservices:\n  a:\n    image: x\n    labels:\n      *k : v\n");
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), 0);
    s = ph_compose_service(c, "a");
    assert_string_equal(ph_kvv_get(&s->labels, "$PH_TEST_KEYVAR"), "v");
    ph_compose_free(c);
    unsetenv("PH_TEST_KEYVAR");
}

/* A byte that is not UTF-8 is reported at its own line and column. */
static void
test_invalid_utf8_position(void **state)
{
    (void)state;
    expect_error("services:\n  a:\n    image: x\n    user: \"ab\xff\"\n", "invalid", 4, 14);
    /* A broken sequence is reported at its first byte, not at the octet after it. */
    expect_error("services:\n  a:\n    image: x\xc3\n", "invalid", 3, 13);
    expect_error("services:\n  a:\n    image: \xc3\xa9\xe2\x82z\n", "invalid", 3, 13);
}

/* Port 0 is not a port, in any position or syntax. */
static void
test_port_zero(void **state)
{
    (void)state;
    expect_error("services:\n  a:\n    image: x\n    ports: [\"0\"]\n", "`0` is not a port number", 4, 13);
    expect_error("services:\n  a:\n    image: x\n    ports: [\"0:80\"]\n", "`0` is not a port number", 4, 13);
    expect_error("services:\n  a:\n    image: x\n    ports: [\"80:0\"]\n", "`0` is not a port number", 4, 13);
    expect_error("services:\n  a:\n    image: x\n    ports: [\"0-5:80\"]\n", "is not a port number", 4, 13);
    expect_error("services:\n  a:\n    image: x\n    ports: [\"65536\"]\n", "is not a port number", 4, 13);
    expect_error("services:\n  a:\n    image: x\n    ports: [\"8000-70000\"]\n", "is not a port number", 4, 13);
    expect_error("services:\n  a:\n    image: x\n    ports: [\"10-5:80\"]\n", "is not a port number", 4, 13);
    expect_error("services:\n  a:\n    image: x\n    ports:\n      - target: 0\n", "`target`: `0`", 5, 17);
    expect_error("services:\n  a:\n    image: x\n    ports:\n      - {target: 80, published: 0}\n",
                 "`published`: `0`", 5, 33);
}

/* In an env file only ` #` starts a comment: a `#` inside a value stays. */
static void
test_env_file_hash(void **state)
{
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    const char *path;
    ph_service *s;

    (void)state;
    /* compose-go's dotenv: only ` #` ends an unquoted value, not a tab. */
    tu_write("hash.env", "URL=http://x/#frag\nC=a #comment\nT=b\t#tab\nQ='#q' #c\nH=#start\nS=trailing  \t\n");
    path = tu_write("hash.yaml", "services:\n  a:\n    image: x\n    env_file: hash.env\n");
    assert_int_equal(ph_compose_load(path, NULL, &c, &err), 0);
    s = ph_compose_service(c, "a");
    assert_string_equal(ph_kvv_get(&s->environment, "URL"), "http://x/#frag");
    assert_string_equal(ph_kvv_get(&s->environment, "C"), "a");
    assert_string_equal(ph_kvv_get(&s->environment, "T"), "b\t#tab");
    assert_string_equal(ph_kvv_get(&s->environment, "Q"), "#q");
    assert_string_equal(ph_kvv_get(&s->environment, "H"), "#start");
    assert_string_equal(ph_kvv_get(&s->environment, "S"), "trailing");
    ph_compose_free(c);
    /* An unterminated quote is an error, as in compose-go's dotenv. */
    tu_write("open.env", "OK=1\nU=\"open\n");
    expect_error("services:\n  a:\n    image: x\n    env_file: open.env\n", "open.env:2: `U`: unterminated quoted value",
                 4, 15);
    /* compose-go's names: letters and digits of any script, `_ . - [ ]`. */
    tu_write("bad.env", "OK=1\n1A=x\nA$B=x\n");
    expect_error("services:\n  a:\n    image: x\n    env_file: bad.env\n",
                 "bad.env:3: unexpected character `$` in a variable name", 4, 15);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_full),
        cmocka_unit_test(test_fixture_bad),
        cmocka_unit_test(test_anchors_and_merges),
        cmocka_unit_test(test_full_service),
        cmocka_unit_test(test_malformed_yaml),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_bad_references),
        cmocka_unit_test(test_unknown_key_warns),
        cmocka_unit_test(test_interpolation),
        cmocka_unit_test(test_shell_split_and_durations),
        cmocka_unit_test(test_project_name),
        cmocka_unit_test(test_limit_nested_interpolation),
        cmocka_unit_test(test_limit_many_keys),
        cmocka_unit_test(test_limit_deep_nesting),
        cmocka_unit_test(test_env_file_not_regular),
        cmocka_unit_test(test_dollar_keys_literal),
        cmocka_unit_test(test_invalid_utf8_position),
        cmocka_unit_test(test_port_zero),
        cmocka_unit_test(test_env_file_hash),
    };
    return cmocka_run_group_tests_name("compose", tests, tu_setup, tu_teardown);
}
