/* test_compose_project.c - a compose project as docker compose reads it:
 * which files (defaults, overrides, -f, COMPOSE_FILE), which environment
 * (.env, --env-file), which name (-p, COMPOSE_PROJECT_NAME, `name:`, the
 * folder), merging (compose's rules, !reset, !override), multi-document
 * files, include, extends, profiles, env files as compose-go's dotenv. */
#include "test_util.h"

#include <sys/stat.h>

#include "ph_compose.h"

/* Write TEXT to test_dir/REL, making its folders. */
static const char *
wr(const char *rel, const char *text)
{
    static char path[1024];
    char dir[1024], *slash;
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", test_dir, rel);
    snprintf(dir, sizeof dir, "%s", path);
    for (slash = strchr(dir + strlen(test_dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(dir, 0755);
        *slash = '/';
    }
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static const char *
at(const char *rel)
{
    static char path[1024];

    snprintf(path, sizeof path, "%s/%s", test_dir, rel);
    return path;
}

/* Open a project from CWD (relative to test_dir) with FILES (NULL-ended). */
static ph_compose *
open_ok(const char *cwd, const char *const *files, const char *project)
{
    ph_compose_opts o = { .files = files, .project = project };
    char dir[1024];
    ph_compose *c = NULL;
    ph_error_t err = NULL;

    snprintf(dir, sizeof dir, "%s/%s", test_dir, cwd);
    o.cwd = dir;
    while (files && files[o.n_files])
        o.n_files++;
    if (ph_compose_open(&o, &c, &err) < 0)
        fail_msg("open failed: %s", err->msg);
    return c;
}

static ph_error_t
open_bad(const char *cwd, const char *const *files, const char *project)
{
    ph_compose_opts o = { .files = files, .project = project };
    char dir[1024];
    ph_compose *c = (ph_compose *)&o;
    ph_error_t err = NULL;

    snprintf(dir, sizeof dir, "%s/%s", test_dir, cwd);
    o.cwd = dir;
    while (files && files[o.n_files])
        o.n_files++;
    assert_int_equal(ph_compose_open(&o, &c, &err), -1);
    assert_null(c);
    assert_non_null(err);
    return err;
}

static void
expect_open_error(const char *cwd, const char *const *files, const char *fragment)
{
    ph_error_t err = open_bad(cwd, files, NULL);

    if (strstr(err->msg, fragment) == NULL)
        fail_msg("error `%s` lacks `%s`", err->msg, fragment);
    ph_error_free(&err);
}

static void
clear_env(void)
{
    static const char *const vars[] = { "COMPOSE_FILE", "COMPOSE_PROJECT_NAME", "COMPOSE_PROFILES",
                                        "COMPOSE_ENV_FILES", "COMPOSE_PATH_SEPARATOR", "COMPOSE_DISABLE_ENV_FILE",
                                        "PH_T_TAG", "PH_T_WHO" };

    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

static int
setup(void **state)
{
    (void)state;
    clear_env();
    tu_mkdtemp();
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    clear_env();
    tu_rmdir();
    return 0;
}

/* A folder with docker-compose.yml (not compose.yaml) is found, with its
 * override; the preferred name wins when both are there; a sub-folder
 * finds its parent's project, and the parent's .env. */
static void
test_default_files(void **state)
{
    ph_compose *c;
    const char *out;

    (void)state;
    wr("p/docker-compose.yml", "services:\n  a:\n    image: base:${PH_T_TAG}\n    environment: [X=1]\n");
    wr("p/docker-compose.override.yml", "services:\n  a:\n    environment: [Y=2]\n");
    wr("p/.env", "PH_T_TAG=from-dotenv\n");
    mkdir(at("p/sub"), 0755);
    c = open_ok("p", NULL, NULL);
    assert_int_equal(c->files.n, 2);
    assert_string_equal(c->files.v[0], at("p/docker-compose.yml"));
    assert_string_equal(c->files.v[1], at("p/docker-compose.override.yml"));
    assert_string_equal(c->services[0].image, "base:from-dotenv");
    assert_string_equal(ph_kvv_get(&c->services[0].environment, "X"), "1");
    assert_string_equal(ph_kvv_get(&c->services[0].environment, "Y"), "2");
    assert_string_equal(c->project, "p");
    ph_compose_free(c);

    /* A relative working folder is the process's folder's. */
    {
        ph_compose_opts o = { .cwd = "p/sub" };
        char here[1024];

        assert_non_null(getcwd(here, sizeof here));
        assert_int_equal(chdir(test_dir), 0);
        c = NULL;
        assert_int_equal(ph_compose_open(&o, &c, &(ph_error_t){ NULL }), 0);
        assert_int_equal(chdir(here), 0);
        assert_string_equal(c->dir, at("p"));
        ph_compose_free(c);
    }
    c = open_ok("p/sub", NULL, NULL);
    assert_string_equal(c->dir, at("p"));
    assert_string_equal(c->project, "p");
    assert_string_equal(c->services[0].image, "base:from-dotenv");
    ph_compose_free(c);

    /* Overrides are looked for on their own, as compose-go does. */
    unlink(at("p/docker-compose.override.yml"));
    wr("p/compose.yaml", "services:\n  b:\n    image: preferred\n");
    tu_capture_begin();
    c = open_ok("p", NULL, NULL);
    out = tu_capture_end();
    assert_non_null(strstr(out, "found both"));
    assert_non_null(ph_compose_service(c, "b"));
    assert_string_equal(c->files.v[0], at("p/compose.yaml"));
    ph_compose_free(c);

    mkdir(at("empty"), 0755);
    {
        ph_error_t err = open_bad("empty", NULL, NULL);

        assert_int_equal(err->status, PH_EXIT_USAGE);
        assert_non_null(strstr(err->msg, "no compose file in"));
        assert_non_null(strstr(err->msg, "docker-compose.yml"));
        assert_non_null(strstr(err->hint, "-f FILE"));
        ph_error_free(&err);
    }
}

/* -f a -f b: b merged onto a with compose's rules. */
static void
test_merge_rules(void **state)
{
    const char *files[] = { "a.yaml", "b.yaml", NULL };
    ph_compose *c;
    ph_service *s;

    (void)state;
    wr("a.yaml", "services:\n"
                 "  web:\n"
                 "    image: web:1\n"
                 "    command: [run, --old]\n"
                 "    environment: {A: a, B: b}\n"
                 "    labels: [one=1]\n"
                 "    ports: [\"80\"]\n"
                 "    volumes: [\"./a:/data\", \"/keep\"]\n"
                 "    dns: 1.1.1.1\n"
                 "    cap_add: [NET_ADMIN]\n"
                 "    healthcheck: {test: [CMD, a], interval: 5s}\n"
                 "    depends_on: [db]\n"
                 "    build: ./ctx\n"
                 "    ulimits: {nofile: {soft: 10, hard: 20}}\n"
                 "    logging: {driver: json-file, options: {max-size: 1m}}\n"
                 "  db:\n"
                 "    image: db\n"
                 "    ports: [\"5432\"]\n"
                 "    user: postgres\n");
    wr("b.yaml", "services:\n"
                 "  web:\n"
                 "    image: web:2\n"
                 "    command: run --new\n"
                 "    environment: [B=bb, C=c]\n"
                 "    labels: {two: \"2\"}\n"
                 "    ports: [\"81\", \"80\"]\n"
                 "    volumes: [\"./b:/data\"]\n"
                 "    dns: [8.8.8.8]\n"
                 "    healthcheck: {test: [CMD, b]}\n"
                 "    depends_on: {cache: {condition: service_healthy}}\n"
                 "    build: {dockerfile: Other}\n"
                 "    ulimits: {nofile: 99}\n"
                 "    logging: {options: {max-file: \"3\"}}\n"
                 "  db:\n"
                 "    ports: !reset []\n"
                 "    user: !reset null\n"
                 "  cache:\n"
                 "    image: cache\n");
    c = open_ok("", files, "merged");
    s = ph_compose_service(c, "web");
    assert_string_equal(s->image, "web:2");
    /* command is replaced, not appended */
    assert_int_equal(s->command.n, 2);
    assert_string_equal(s->command.v[1], "--new");
    assert_string_equal(ph_kvv_get(&s->environment, "A"), "a");
    assert_string_equal(ph_kvv_get(&s->environment, "B"), "bb");
    assert_string_equal(ph_kvv_get(&s->environment, "C"), "c");
    assert_string_equal(ph_kvv_get(&s->labels, "one"), "1");
    assert_string_equal(ph_kvv_get(&s->labels, "two"), "2");
    /* ports append, the repeated 80 once */
    assert_int_equal(s->n_ports, 2);
    /* volumes: one per target, the later one */
    assert_int_equal(s->n_volumes, 2);
    assert_string_equal(s->volumes[1].target, "/data");
    assert_string_equal(s->volumes[1].source, at("b"));
    assert_int_equal(s->dns.n, 2);
    assert_int_equal(s->cap_add.n, 1);
    assert_int_equal(s->healthcheck.test.n, 2);
    assert_string_equal(s->healthcheck.test.v[1], "b");
    assert_true(s->healthcheck.interval_ns == 5000000000LL);
    assert_int_equal(s->depends_on.n, 2);
    assert_string_equal(s->depends_on.v[1], "cache");
    assert_string_equal(s->depends[1].condition, "service_healthy");
    assert_string_equal(s->build_context, at("ctx"));
    assert_string_equal(s->build_dockerfile, "Other");
    assert_int_equal(s->n_ulimits, 1);
    assert_true(s->ulimits[0].soft == 99 && s->ulimits[0].hard == 99);
    assert_string_equal(s->logging_driver, "json-file");
    assert_int_equal(s->logging_options.n, 2);
    s = ph_compose_service(c, "db");
    assert_int_equal(s->n_ports, 0);
    assert_null(s->user);
    ph_compose_free(c);

    /* !override replaces where a merge would append; another logging driver replaces its options. */
    wr("b.yaml", "services:\n  web:\n    ports: !override [\"90\"]\n    logging: {driver: syslog}\n");
    c = open_ok("", files, "merged");
    s = ph_compose_service(c, "web");
    assert_int_equal(s->n_ports, 1);
    assert_string_equal(s->ports[0].container_port, "90");
    assert_string_equal(s->logging_driver, "syslog");
    assert_int_equal(s->logging_options.n, 0);
    ph_compose_free(c);

    wr("b.yaml", "services:\n  web:\n    environment: [X]\n    ports: {a: b}\n");
    {
        ph_error_t err = open_bad("", files, "merged");

        assert_non_null(strstr(err->msg, "b.yaml:4:12: cannot merge a mapping into a list"));
        ph_error_free(&err);
    }
}

/* The entry for KEY in S's environment (its value NULL when the variable
 * is sent without one), or NULL when S has none. */
static const ph_kv *
env_entry(const ph_service *s, const char *key)
{
    for (size_t i = 0; i < s->environment.n; i++)
        if (strcmp(s->environment.v[i].key, key) == 0)
            return &s->environment.v[i];
    return NULL;
}

/* An override's empty keys, as compose-go's MergeYaml takes them: `image:`,
 * `environment:`, `ports:`, `labels:` and a service with nothing under it
 * keep what the base says; `command` and `entrypoint`, which an override
 * replaces whole, are replaced by nothing: the image's own again. */
static void
test_override_empty_keys(void **state)
{
    const char *files[] = { "a.yaml", "b.yaml", NULL };
    ph_compose *c;
    ph_service *s;

    (void)state;
    wr("a.yaml", "services:\n"
                 "  web:\n"
                 "    image: web:1\n"
                 "    command: [run]\n"
                 "    entrypoint: [/init]\n"
                 "    environment: {A: a}\n"
                 "    ports: [\"8080:80\"]\n"
                 "    labels: [one=1]\n"
                 "    healthcheck: {test: [CMD, a], interval: 5s}\n"
                 "  db:\n"
                 "    image: db\n"
                 "    user: postgres\n");
    wr("b.yaml", "services:\n"
                 "  web:\n"
                 "    image:\n"
                 "    environment:\n"
                 "    ports:\n"
                 "    labels:\n"
                 "    command:\n"
                 "    entrypoint:\n"
                 "  db:\n");
    c = open_ok("", files, "p");
    s = ph_compose_service(c, "web");
    assert_string_equal(s->image, "web:1");
    assert_int_equal(s->environment.n, 1);
    assert_string_equal(ph_kvv_get(&s->environment, "A"), "a");
    assert_int_equal(s->n_ports, 1);
    assert_string_equal(s->ports[0].host_port, "8080");
    assert_string_equal(ph_kvv_get(&s->labels, "one"), "1");
    assert_false(s->has_command);
    assert_int_equal(s->command.n, 0);
    assert_false(s->has_entrypoint);
    assert_int_equal(s->entrypoint.n, 0);
    assert_int_equal(s->healthcheck.test.n, 2);
    s = ph_compose_service(c, "db");
    assert_string_equal(s->image, "db");
    assert_string_equal(s->user, "postgres");
    ph_compose_free(c);
    /* a healthcheck without a test is invalid, merged or not (compose's schema) */
    wr("b.yaml", "services:\n  web:\n    healthcheck: {test: }\n");
    expect_open_error("", files, "`healthcheck.test` is empty");
}

/* A variable without a value, in an override's mapping (`KEY:`), comes
 * from the project's environment; unset there, it is sent without a value
 * (`KEY`), which the Engine takes as unset: so it hides the base's
 * env_file value, as docker compose sends it. */
static void
test_override_inherit(void **state)
{
    const char *files[] = { "a.yaml", "b.yaml", NULL };
    ph_compose *c;
    ph_service *s;
    const ph_kv *kv;

    (void)state;
    wr("web.env", "PH_T_TAG=from-env-file\nFILE_ONLY=file\n");
    wr("a.yaml", "services:\n  web:\n    image: web\n    env_file: [web.env]\n    environment: {A: a}\n");
    wr("b.yaml", "services:\n  web:\n    environment:\n      PH_T_WHO:\n      PH_T_TAG:\n      B: b\n");
    setenv("PH_T_WHO", "shell", 1);
    c = open_ok("", files, "p");
    s = ph_compose_service(c, "web");
    assert_string_equal(ph_kvv_get(&s->environment, "A"), "a");
    assert_string_equal(ph_kvv_get(&s->environment, "B"), "b");
    assert_string_equal(ph_kvv_get(&s->environment, "FILE_ONLY"), "file");
    assert_string_equal(ph_kvv_get(&s->environment, "PH_T_WHO"), "shell");
    kv = env_entry(s, "PH_T_TAG");
    assert_non_null(kv);
    assert_null(kv->value);
    ph_compose_free(c);
    /* the list form too */
    wr("b.yaml", "services:\n  web:\n    environment: [PH_T_WHO, PH_T_TAG]\n");
    c = open_ok("", files, "p");
    s = ph_compose_service(c, "web");
    assert_string_equal(ph_kvv_get(&s->environment, "PH_T_WHO"), "shell");
    assert_null(env_entry(s, "PH_T_TAG")->value);
    ph_compose_free(c);
}

/* Two publishes of one container port, one per file: both kept (compose
 * settles duplicates by ip, host port, port and protocol); the same one
 * again is one. */
static void
test_override_ports(void **state)
{
    const char *files[] = { "a.yaml", "b.yaml", NULL };
    ph_compose *c;
    ph_service *s;

    (void)state;
    wr("a.yaml", "services:\n  web:\n    image: web\n    ports: [\"8080:80\"]\n");
    wr("b.yaml", "services:\n  web:\n    ports: [\"9090:80\", \"8080:80\", \"127.0.0.1:8080:80\", \"8080:80/udp\"]\n");
    c = open_ok("", files, "p");
    s = ph_compose_service(c, "web");
    assert_int_equal(s->n_ports, 4);
    assert_string_equal(s->ports[0].host_port, "8080");
    assert_string_equal(s->ports[1].host_port, "9090");
    assert_string_equal(s->ports[1].container_port, "80");
    assert_string_equal(s->ports[2].host_ip, "127.0.0.1");
    assert_string_equal(s->ports[3].protocol, "udp");
    ph_compose_free(c);
}

/* COMPOSE_FILE (from the environment or .env), COMPOSE_PATH_SEPARATOR. */
static void
test_compose_file_env(void **state)
{
    ph_compose *c;

    (void)state;
    wr("q/one.yaml", "services:\n  a:\n    image: one\n");
    wr("q/two.yaml", "services:\n  a:\n    image: two\n");
    wr("q/.env", "COMPOSE_FILE=one.yaml;two.yaml\nCOMPOSE_PATH_SEPARATOR=;\n");
    c = open_ok("q", NULL, NULL);
    assert_int_equal(c->files.n, 2);
    assert_string_equal(c->services[0].image, "two");
    ph_compose_free(c);
    setenv("COMPOSE_FILE", "one.yaml", 1);
    c = open_ok("q", NULL, NULL);
    assert_int_equal(c->files.n, 1);
    assert_string_equal(c->services[0].image, "one");
    ph_compose_free(c);
    unsetenv("COMPOSE_FILE");
}

/* -p, then COMPOSE_PROJECT_NAME (environment, then .env), then `name:`,
 * then the folder; the first two are refused when not valid names, and
 * ${COMPOSE_PROJECT_NAME} is the project's name. */
static void
test_project_names(void **state)
{
    const char *files[] = { "n/compose.yaml", NULL };
    ph_compose *c;
    ph_error_t err;

    (void)state;
    wr("n/compose.yaml", "name: From_File\nservices:\n  web:\n    image: x\n    container_name: ${COMPOSE_PROJECT_NAME}-web\n");
    c = open_ok("", files, NULL);
    assert_string_equal(c->project, "from_file");
    assert_string_equal(c->services[0].container_name, "from_file-web");
    ph_compose_free(c);
    wr("n/.env", "COMPOSE_PROJECT_NAME=from-dotenv\n");
    c = open_ok("", files, NULL);
    assert_string_equal(c->project, "from-dotenv");
    assert_string_equal(c->services[0].container_name, "from-dotenv-web");
    ph_compose_free(c);
    setenv("COMPOSE_PROJECT_NAME", "from-env", 1);
    c = open_ok("", files, NULL);
    assert_string_equal(c->project, "from-env");
    ph_compose_free(c);
    c = open_ok("", files, "from-flag");
    assert_string_equal(c->project, "from-flag");
    assert_string_equal(c->services[0].container_name, "from-flag-web");
    ph_compose_free(c);
    err = open_bad("", files, "My Proj!");
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_non_null(strstr(err->msg, "-p `My Proj!` is not a valid project name"));
    ph_error_free(&err);
    setenv("COMPOSE_PROJECT_NAME", "Bad.Name", 1);
    err = open_bad("", files, NULL);
    assert_non_null(strstr(err->msg, "COMPOSE_PROJECT_NAME `Bad.Name` is not a valid project name"));
    ph_error_free(&err);
    unsetenv("COMPOSE_PROJECT_NAME");
    wr("n/.env", "\n");
    wr("n/compose.yaml", "services:\n  web:\n    image: x\n");
    c = open_ok("", files, NULL);
    assert_string_equal(c->project, "n");
    ph_compose_free(c);
}

/* The environment wins over .env; --env-file replaces .env. */
static void
test_env_files(void **state)
{
    const char *files[] = { "e/compose.yaml", NULL };
    const char *envs[] = { "e/other.env", NULL };
    ph_compose_opts o = { .files = files, .n_files = 1, .env_files = envs, .n_env_files = 1, .cwd = test_dir };
    ph_compose *c = NULL;
    ph_error_t err = NULL;

    (void)state;
    wr("e/compose.yaml", "services:\n  a:\n    image: ${PH_T_TAG:-none}-${PH_T_WHO:-nobody}\n"
                         "    environment: [PH_T_WHO]\n");
    wr("e/.env", "PH_T_TAG=dotenv\nPH_T_WHO=dotenv-who\n");
    wr("e/other.env", "PH_T_TAG=other\n");
    setenv("PH_T_WHO", "process", 1);
    c = open_ok("", files, "p");
    assert_string_equal(c->services[0].image, "dotenv-process");
    /* A bare variable comes from the project's environment. */
    assert_string_equal(ph_kvv_get(&c->services[0].environment, "PH_T_WHO"), "process");
    ph_compose_free(c);
    unsetenv("PH_T_WHO");
    o.project = "p";
    assert_int_equal(ph_compose_open(&o, &c, &err), 0);
    assert_string_equal(c->services[0].image, "other-nobody");
    ph_compose_free(c);
    /* several: the later wins, as compose-go's GetEnvFromFile reads them */
    {
        const char *two[] = { "e/other.env", "e/later.env", NULL };
        ph_compose_opts o2 = o;

        wr("e/later.env", "PH_T_TAG=later\nPH_T_WHO=${PH_T_TAG}\n");
        o2.env_files = two;
        o2.n_env_files = 2;
        assert_int_equal(ph_compose_open(&o2, &c, &err), 0);
        assert_string_equal(c->services[0].image, "later-later");
        ph_compose_free(c);
    }
    setenv("COMPOSE_ENV_FILES", "e/other.env", 1);
    c = open_ok("", files, "p");
    assert_string_equal(c->services[0].image, "other-nobody");
    ph_compose_free(c);
    unsetenv("COMPOSE_ENV_FILES");
    envs[0] = "e/missing.env";
    assert_int_equal(ph_compose_open(&o, &c, &err), -1);
    assert_non_null(strstr(err->msg, "missing.env"));
    ph_error_free(&err);
}

/* compose-go's dotenv: `KEY: value`, export, bare keys, quotes over
 * lines, escapes in double quotes, ${VAR} from the file and the
 * environment. */
static void
test_dotenv_grammar(void **state)
{
    const char *files[] = { "d/compose.yaml", NULL };
    ph_compose *c;
    ph_service *s;

    (void)state;
    setenv("PH_T_WHO", "process", 1);
    setenv("PH_T_TAG", "only-in-the-environment", 1);
    wr("d/vars.env", "export A=1\n"
                     "B: two\n"
                     "PH_T_WHO\n"
                     "C=${A}-${PH_T_WHO}-${UNSET_X:-d}\n"
                     "D='$A literal'\n"
                     "E=\"line1\\nline2 \\$A\"\n"
                     "F=\"multi\n"
                     "line\"\n"
                     "G = spaced # comment\n"
                     "H=\n"
                     "I=${PH_T_TAG}\n");
    wr("d/raw.env", "# raw\nR1=\"kept\" ${A} \\n\n\nR2=a=b\n");
    wr("d/compose.yaml", "services:\n  a:\n    image: x\n    env_file: [vars.env, {path: raw.env, format: raw}]\n");
    c = open_ok("", files, "p");
    s = &c->services[0];
    assert_string_equal(ph_kvv_get(&s->environment, "A"), "1");
    assert_string_equal(ph_kvv_get(&s->environment, "B"), "two");
    assert_string_equal(ph_kvv_get(&s->environment, "PH_T_WHO"), "process");
    assert_string_equal(ph_kvv_get(&s->environment, "C"), "1-process-d");
    assert_string_equal(ph_kvv_get(&s->environment, "D"), "$A literal");
    assert_string_equal(ph_kvv_get(&s->environment, "E"), "line1\nline2 $A");
    assert_string_equal(ph_kvv_get(&s->environment, "F"), "multi\nline");
    assert_string_equal(ph_kvv_get(&s->environment, "G"), "spaced");
    assert_string_equal(ph_kvv_get(&s->environment, "H"), "");
    assert_string_equal(ph_kvv_get(&s->environment, "I"), "only-in-the-environment");
    assert_string_equal(ph_kvv_get(&s->environment, "R1"), "\"kept\" ${A} \\n");
    assert_string_equal(ph_kvv_get(&s->environment, "R2"), "a=b");
    ph_compose_free(c);
    unsetenv("PH_T_WHO");
}

/* Several documents in one file merge in order. */
static void
test_multi_document(void **state)
{
    const char *files[] = { "m.yaml", NULL };
    ph_compose *c;

    (void)state;
    wr("m.yaml", "services:\n  a:\n    image: x\n    ports: [\"80\"]\n---\nservices:\n  a:\n    ports: [\"81\"]\n"
                 "  b:\n    image: y\n");
    c = open_ok("", files, "p");
    assert_int_equal(c->n_services, 2);
    assert_int_equal(c->services[0].n_ports, 2);
    ph_compose_free(c);
}

/* include: another project's services, its paths relative to its own
 * folder, its own .env; a local definition wins; a cycle is refused. */
static void
test_include(void **state)
{
    const char *files[] = { "main/compose.yaml", NULL };
    ph_compose *c;
    ph_service *s;

    (void)state;
    wr("lib/compose.yaml", "services:\n"
                           "  db:\n"
                           "    image: db:${DB_TAG}\n"
                           "    volumes: [\"./data:/data\"]\n"
                           "    environment: [KEEP=1]\n"
                           "  cache:\n"
                           "    image: lib-cache\n"
                           "    build: ./cache\n"
                           "volumes:\n  shared:\n");
    wr("lib/.env", "DB_TAG=from-lib-env\n");
    wr("main/compose.yaml", "include:\n"
                            "  - ../lib/compose.yaml\n"
                            "services:\n"
                            "  web:\n"
                            "    image: web\n"
                            "    depends_on: [db]\n"
                            "    volumes: [\"shared:/s\"]\n"
                            "  cache:\n"
                            "    image: local-cache\n");
    c = open_ok("", files, "p");
    assert_int_equal(c->n_services, 3);
    s = ph_compose_service(c, "db");
    assert_string_equal(s->image, "db:from-lib-env");
    assert_string_equal(s->volumes[0].source, at("lib/data"));
    s = ph_compose_service(c, "cache");
    assert_string_equal(s->image, "local-cache");
    assert_string_equal(s->build_context, at("lib/cache"));
    assert_non_null(ph_compose_volume(c, "shared"));
    ph_compose_free(c);

    /* long form: project_directory and env_file */
    wr("other/vars.env", "DB_TAG=from-env-file\n");
    wr("main/compose.yaml", "include:\n"
                            "  - path: [../lib/compose.yaml]\n"
                            "    project_directory: ../other\n"
                            "    env_file: ../other/vars.env\n"
                            "services:\n  web:\n    image: web\n");
    c = open_ok("", files, "p");
    s = ph_compose_service(c, "db");
    assert_string_equal(s->image, "db:from-env-file");
    assert_string_equal(s->volumes[0].source, at("other/data"));
    ph_compose_free(c);

    wr("lib/compose.yaml", "include: [../main/compose.yaml]\nservices:\n  db:\n    image: db\n");
    wr("main/compose.yaml", "include: [../lib/compose.yaml]\nservices:\n  web:\n    image: web\n");
    expect_open_error("", files, "include");
}

/* An include's environment, as compose-go's ApplyInclude: the including
 * project's (the process's, then its .env) wins over the included .env;
 * the default .env may be absent, an `env_file` named must exist; of
 * several env files the later wins. */
static void
test_include_env(void **state)
{
    ph_compose *c;

    (void)state;
    wr("lib/compose.yaml", "services:\n  db:\n    image: db-${DB_TAG}-${PH_T_WHO}-${LIB_ONLY:-none}\n");
    wr("lib/.env", "DB_TAG=lib\nPH_T_WHO=lib\nLIB_ONLY=lib\n");
    wr("main/compose.yaml", "include: [../lib/compose.yaml]\nservices:\n  web:\n    image: web\n");
    wr("main/.env", "DB_TAG=main\n");
    setenv("PH_T_WHO", "shell", 1);
    c = open_ok("main", NULL, "p");
    assert_string_equal(ph_compose_service(c, "db")->image, "db-main-shell-lib");
    ph_compose_free(c);
    /* no .env beside the included file: nothing is missing */
    assert_int_equal(unlink(at("lib/.env")), 0);
    c = open_ok("main", NULL, "p");
    assert_string_equal(ph_compose_service(c, "db")->image, "db-main-shell-none");
    ph_compose_free(c);
    /* env files named: the later wins, the including project's still first */
    wr("lib/one.env", "LIB_ONLY=one\nDB_TAG=one\n");
    wr("lib/two.env", "LIB_ONLY=two\n");
    wr("main/compose.yaml", "include:\n  - path: ../lib/compose.yaml\n    env_file: [../lib/one.env, ../lib/two.env]\n"
                            "services:\n  web:\n    image: web\n");
    c = open_ok("main", NULL, "p");
    assert_string_equal(ph_compose_service(c, "db")->image, "db-main-shell-two");
    ph_compose_free(c);
    /* a named env file must be there */
    wr("main/compose.yaml", "include:\n  - path: ../lib/compose.yaml\n    env_file: ../lib/missing.env\n"
                            "services:\n  web:\n    image: web\n");
    expect_open_error("main", NULL, "missing.env");
}

/* extends: from the same file and from another (paths relative to it),
 * chained, merged with compose's rules; cycles and missing bases refused. */
static void
test_extends(void **state)
{
    const char *files[] = { "x/compose.yaml", NULL };
    ph_compose *c;
    ph_service *s;

    (void)state;
    wr("base/common.yaml", "services:\n"
                           "  root:\n"
                           "    image: root\n"
                           "    environment: [R=1]\n"
                           "    volumes: [\"./conf:/conf\"]\n"
                           "    command: [root]\n"
                           "  app:\n"
                           "    extends: root\n"
                           "    build: ./app\n"
                           "    environment: [A=1]\n");
    wr("x/compose.yaml", "services:\n"
                         "  web:\n"
                         "    extends:\n"
                         "      file: ../base/common.yaml\n"
                         "      service: app\n"
                         "    environment: [W=1, A=2]\n"
                         "    command: [web]\n"
                         "  local:\n"
                         "    extends: web\n"
                         "    ports: [\"80\"]\n");
    c = open_ok("", files, "p");
    s = ph_compose_service(c, "web");
    assert_string_equal(s->image, "root");
    assert_string_equal(s->build_context, at("base/app"));
    assert_string_equal(s->volumes[0].source, at("base/conf"));
    assert_string_equal(ph_kvv_get(&s->environment, "R"), "1");
    assert_string_equal(ph_kvv_get(&s->environment, "A"), "2");
    assert_string_equal(ph_kvv_get(&s->environment, "W"), "1");
    assert_int_equal(s->command.n, 1);
    assert_string_equal(s->command.v[0], "web");
    s = ph_compose_service(c, "local");
    assert_string_equal(s->image, "root");
    assert_int_equal(s->n_ports, 1);
    ph_compose_free(c);

    wr("x/compose.yaml", "services:\n  a:\n    extends: b\n  b:\n    extends: a\n");
    expect_open_error("", files, "a cycle");
    wr("x/compose.yaml", "services:\n  a:\n    extends: {service: nope}\n");
    expect_open_error("", files, "x/compose.yaml:3:24: `extends`: no service `nope`");
}

/* A service with profiles runs only when one is enabled; naming it
 * enables its profiles; depending on a disabled service is an error. */
static void
test_profiles(void **state)
{
    const char *files[] = { "pr.yaml", NULL };
    const char *prof[] = { "debug" };
    ph_compose_opts o = { .files = files, .n_files = 1, .project = "p", .cwd = test_dir, .profiles = prof,
                          .n_profiles = 1 };
    ph_compose *c = NULL;
    ph_error_t err = NULL;

    (void)state;
    wr("pr.yaml", "services:\n"
                  "  web:\n    image: web\n"
                  "  db:\n    image: db\n    profiles: [dev]\n"
                  "  mock:\n    image: mock\n    profiles: [dev]\n    depends_on: [db]\n"
                  "  admin:\n    image: admin\n    profiles: [debug]\n    depends_on: [db]\n");
    c = open_ok("", files, "p");
    assert_true(ph_compose_service(c, "web")->enabled);
    assert_false(ph_compose_service(c, "db")->enabled);
    assert_false(ph_compose_service(c, "admin")->enabled);
    /* docker compose up mock: enables `dev`, db with it */
    ph_compose_enable(c, ph_compose_service(c, "mock"));
    assert_true(ph_compose_service(c, "db")->enabled);
    assert_int_equal(ph_compose_check_enabled(c, ph_compose_service(c, "mock"), &err), 0);
    ph_compose_free(c);
    /* --profile debug: admin runs, but its db is in `dev` */
    assert_int_equal(ph_compose_open(&o, &c, &err), 0);
    assert_true(ph_compose_service(c, "admin")->enabled);
    assert_int_equal(ph_compose_check_enabled(c, ph_compose_service(c, "admin"), &err), -1);
    assert_non_null(strstr(err->msg, "depends on `db`, whose profile `dev` is not enabled"));
    assert_non_null(strstr(err->hint, "--profile dev"));
    ph_error_free(&err);
    ph_compose_free(c);
    setenv("COMPOSE_PROFILES", "dev,debug", 1);
    c = open_ok("", files, "p");
    assert_true(ph_compose_service(c, "mock")->enabled);
    assert_true(ph_compose_service(c, "admin")->enabled);
    ph_compose_free(c);
    setenv("COMPOSE_PROFILES", "*", 1);
    c = open_ok("", files, "p");
    assert_true(ph_compose_service(c, "db")->enabled);
    ph_compose_free(c);
    unsetenv("COMPOSE_PROFILES");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_default_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_override_empty_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_override_inherit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_override_ports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compose_file_env, setup, teardown),
        cmocka_unit_test_setup_teardown(test_project_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dotenv_grammar, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multi_document, setup, teardown),
        cmocka_unit_test_setup_teardown(test_include, setup, teardown),
        cmocka_unit_test_setup_teardown(test_include_env, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profiles, setup, teardown),
    };
    return cmocka_run_group_tests_name("compose_project", tests, NULL, NULL);
}
