/* test_compose.c - the compose loader: every supported key, interpolation,
 * and the errors and warnings a user sees for bad files. */
#include "test_util.h"

#include "ph_compose.h"


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
    assert_int_equal(s->n_volumes, 3);
    assert_true(s->volumes[0].bind);
    assert_true(s->volumes[0].read_only);
    assert_non_null(strstr(s->volumes[0].source, "/data"));
    assert_int_equal(s->volumes[0].source[0], '/');
    assert_false(s->volumes[1].bind);
    assert_string_equal(s->volumes[1].source, "cache");
    assert_null(s->volumes[2].source);
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
    expect_error("services:\n  a:\n    image: x\n    depends_on: [ghost]\n", "depends on `ghost`", 2, 0);
    expect_error("services:\n  a:\n    command: run\n", "neither `image` nor `build`", 3, 5);
    expect_error("services:\n  a:\n    image: x\n    volumes: [\"vol:/data\"]\n", "does not declare", 4, 15);
    expect_error("services:\n  a:\n    image: x\n  a:\n    image: y\n", "duplicate key `a`", 4, 3);
    expect_error("services:\n  a:\n    image: ${REQUIRED_X:?set it}\n", "REQUIRED_X is not set: set it", 3, 0);
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
    assert_null(ph_interpolate("${unterminated", lookup, NULL, "f:1", &err));
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
    assert_int_equal(ph_duration_parse("10x", &ns), -1);
    assert_int_equal(ph_duration_parse("", &ns), -1);
}

static void
test_project_name(void **state)
{
    ph_compose *c = NULL;
    ph_error_t err = NULL;
    const char *path;

    (void)state;
    path = tu_write("p.yaml", "services:\n  a:\n    image: x\n");
    assert_int_equal(ph_compose_load(path, "Over.Ride", &c, &err), 0);
    assert_string_equal(c->project, "override");
    ph_compose_free(c);
    assert_int_equal(ph_compose_load("/nonexistent/compose.yaml", NULL, &c, &err), -1);
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_non_null(strstr(err->msg, "/nonexistent/compose.yaml"));
    ph_error_free(&err);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_service),
        cmocka_unit_test(test_malformed_yaml),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_bad_references),
        cmocka_unit_test(test_unknown_key_warns),
        cmocka_unit_test(test_interpolation),
        cmocka_unit_test(test_shell_split_and_durations),
        cmocka_unit_test(test_project_name),
    };
    return cmocka_run_group_tests_name("compose", tests, tu_setup, tu_teardown);
}
