/* test_backend_engine_compose.c - a service as the Engine's container
 * configuration (ph_backend_engine_compose_config), compared field by
 * field with the JSON docker compose v2 sends for the same service;
 * networks, volumes, and the files written into a container. */
#include "test_util.h"

#include <jansson.h>

#include "ph_backend_engine.h"
#include "ph_compose.h"
#include "ph_backend_engine_compose.h"

static ph_compose *
load(const char *yaml)
{
    const char *path = tu_write("compose.yaml", yaml);
    ph_compose *c = NULL;
    ph_error_t err = NULL;

    if (ph_compose_load(path, "proj", &c, &err) < 0)
        fail_msg("load: %s", err->msg);
    return c;
}

static const char *
container_of(void *ud, const char *service)
{
    (void)ud;
    if (strcmp(service, "db") == 0)
        return "db-id";
    return NULL;
}

static const ph_backend_engine_runtime rt = {
    .image = "img:1", .container_name = "proj-web-1", .all_endpoints = 1, .mac_in_endpoint = 1,
    .container_of = container_of,
};

/* Every key of EXPECT (JSON text) is in GOT with an equal value; GOT may
 * have more only where ALLOW_MORE. */
static void
expect_json(json_t *got, const char *expect, int allow_more)
{
    json_error_t je;
    json_t *want = json_loads(expect, 0, &je);
    const char *key;
    json_t *v;

    if (want == NULL)
        fail_msg("bad expected JSON at %d: %s", je.line, je.text);
    json_object_foreach(want, key, v) {
        json_t *g = json_object_get(got, key);

        if (g == NULL || !json_equal(g, v)) {
            char *gs = g ? json_dumps(g, JSON_SORT_KEYS) : NULL, *ws = json_dumps(v, JSON_SORT_KEYS);

            fail_msg("`%s`: got %s, want %s", key, gs ? gs : "(none)", ws);
        }
    }
    if (!allow_more) {
        json_object_foreach(got, key, v) {
            if (json_object_get(want, key) == NULL) {
                char *gs = json_dumps(v, JSON_SORT_KEYS);

                fail_msg("unexpected `%s`: %s", key, gs);
            }
        }
    }
    json_decref(want);
}

static void
test_full_service(void **state)
{
    ph_compose *c;
    json_t *cfg, *host;
    ph_error_t err = NULL;
    char *ctx = NULL;

    (void)state;
    c = load("services:\n"
             "  db:\n"
             "    image: db\n"
             "  web:\n"
             "    image: web\n"
             "    command: [serve, --port, \"80\"]\n"
             "    entrypoint: /init\n"
             "    environment: {A: \"1\", EMPTY: \"\"}\n"
             "    working_dir: /srv\n"
             "    user: \"1000\"\n"
             "    hostname: web1\n"
             "    domainname: example.org\n"
             "    mac_address: \"02:42:ac:11:00:02\"\n"
             "    labels: {role: web}\n"
             "    stop_signal: SIGINT\n"
             "    stop_grace_period: 1m30s\n"
             "    tty: true\n"
             "    stdin_open: true\n"
             "    ports: [\"127.0.0.1:8080:80\", \"9000-9001:9000-9001/udp\"]\n"
             "    expose: [\"3000\", \"4000-4001/udp\"]\n"
             "    healthcheck:\n"
             "      test: curl -f localhost\n"
             "      interval: 10s\n"
             "      timeout: 2s\n"
             "      retries: 3\n"
             "      start_period: 30s\n"
             "      start_interval: 1s\n"
             "    volumes:\n"
             "      - ./data:/data:ro,z\n"
             "      - cache:/cache:nocopy\n"
             "      - /anon\n"
             "      - type: bind\n"
             "        source: ./conf\n"
             "        target: /conf\n"
             "        bind: {propagation: rshared, create_host_path: false}\n"
             "      - type: tmpfs\n"
             "        target: /scratch\n"
             "        tmpfs: {size: 64m, mode: 01777}\n"
             "      - type: volume\n"
             "        source: cache\n"
             "        target: /sub\n"
             "        volume: {subpath: part}\n"
             "    tmpfs: [\"/run\", \"/tmp:size=1m\"]\n"
             "    cap_add: [NET_ADMIN]\n"
             "    cap_drop: [MKNOD]\n"
             "    security_opt: [no-new-privileges]\n"
             "    privileged: false\n"
             "    read_only: true\n"
             "    init: true\n"
             "    restart: on-failure:3\n"
             "    sysctls: [net.core.somaxconn=1024]\n"
             "    ulimits: {nofile: {soft: 1024, hard: 2048}, nproc: 512}\n"
             "    shm_size: 128m\n"
             "    mem_limit: 1g\n"
             "    memswap_limit: -1\n"
             "    mem_reservation: 256m\n"
             "    cpus: 1.5\n"
             "    cpu_shares: 512\n"
             "    pids_limit: 100\n"
             "    oom_score_adj: -500\n"
             "    devices: [\"/dev/fuse\", \"/dev/sda:/dev/xvda:r\"]\n"
             "    extra_hosts: [\"host.docker.internal=host-gateway\", \"v6:[::1]\"]\n"
             "    dns: 8.8.8.8\n"
             "    dns_search: [example.org]\n"
             "    dns_opt: [ndots:2]\n"
             "    group_add: [audio, \"1001\"]\n"
             "    pid: service:db\n"
             "    ipc: shareable\n"
             "    userns_mode: host\n"
             "    cgroup_parent: parent.slice\n"
             "    runtime: runc\n"
             "    logging: {driver: json-file, options: {max-size: 10m}}\n"
             "    annotations: {com.example.a: b}\n"
             "    volumes_from: [\"db:ro\", \"container:other\"]\n"
             "    links: [\"db:database\"]\n"
             "    gpus: all\n"
             "    networks:\n"
             "      front:\n"
             "        aliases: [www]\n"
             "        ipv4_address: 172.28.0.10\n"
             "        priority: 10\n"
             "      back:\n"
             "        interface_name: eth7\n"
             "volumes:\n"
             "  cache:\n"
             "networks:\n"
             "  front:\n"
             "  back:\n");
    cfg = ph_backend_engine_compose_config(c, ph_compose_service(c, "web"), &rt, &err);
    if (cfg == NULL)
        fail_msg("%s", err->msg);
    assert_true(asprintf(&ctx, "%s", test_dir) > 0);
    /* Config first, HostConfig after it. */
    host = json_incref(json_object_get(cfg, "HostConfig"));
    json_object_del(cfg, "HostConfig");
    expect_json(cfg,
                "{\"Image\": \"img:1\", \"Cmd\": [\"serve\", \"--port\", \"80\"], \"Entrypoint\": [\"/init\"],"
                " \"Env\": [\"A=1\", \"EMPTY=\"], \"WorkingDir\": \"/srv\", \"User\": \"1000\","
                " \"Hostname\": \"web1\", \"Domainname\": \"example.org\", \"Labels\": {\"role\": \"web\"},"
                " \"StopSignal\": \"SIGINT\", \"StopTimeout\": 90, \"Tty\": true, \"OpenStdin\": true,"
                " \"AttachStdout\": true, \"AttachStderr\": true,"
                " \"ExposedPorts\": {\"80/tcp\": {}, \"9000/udp\": {}, \"9001/udp\": {}, \"3000/tcp\": {},"
                "   \"4000/udp\": {}, \"4001/udp\": {}},"
                " \"Healthcheck\": {\"Test\": [\"CMD-SHELL\", \"curl -f localhost\"], \"Interval\": 10000000000,"
                "   \"Timeout\": 2000000000, \"Retries\": 3, \"StartPeriod\": 30000000000, \"StartInterval\": 1000000000},"
                " \"Volumes\": {\"/anon\": {}},"
                " \"NetworkingConfig\": {\"EndpointsConfig\": {"
                "   \"proj_front\": {\"Aliases\": [\"proj-web-1\", \"web\", \"www\"],"
                "     \"IPAMConfig\": {\"IPv4Address\": \"172.28.0.10\"}, \"MacAddress\": \"02:42:ac:11:00:02\","
                "     \"Links\": [\"db-id:database\", \"db-id:db-1\", \"db-id:proj-db-1\"]},"
                "   \"proj_back\": {\"Aliases\": [\"proj-web-1\", \"web\"],"
                "     \"DriverOpts\": {\"com.docker.network.endpoint.ifname\": \"eth7\"},"
                "     \"Links\": [\"db-id:database\", \"db-id:db-1\", \"db-id:proj-db-1\"]}}}}",
                0);
    json_object_set_new(cfg, "HostConfig", host);
    {
        char *want = NULL;

        assert_true(asprintf(&want,
                             "{\"Binds\": [\"%s/data:/data:ro,z\", \"proj_cache:/cache:rw,nocopy\"],"
                             " \"Mounts\": [{\"Type\": \"bind\", \"Source\": \"%s/conf\", \"Target\": \"/conf\","
                             "   \"BindOptions\": {\"Propagation\": \"rshared\", \"CreateMountpoint\": false}},"
                             "  {\"Type\": \"tmpfs\", \"Target\": \"/scratch\","
                             "   \"TmpfsOptions\": {\"SizeBytes\": 67108864, \"Mode\": 1023}},"
                             "  {\"Type\": \"volume\", \"Source\": \"proj_cache\", \"Target\": \"/sub\","
                             "   \"VolumeOptions\": {\"Subpath\": \"part\"}}],"
                             " \"Tmpfs\": {\"/run\": \"\", \"/tmp\": \"size=1m\"},"
                             " \"PortBindings\": {\"80/tcp\": [{\"HostIp\": \"127.0.0.1\", \"HostPort\": \"8080\"}],"
                             "   \"9000/udp\": [{\"HostIp\": \"\", \"HostPort\": \"9000\"}],"
                             "   \"9001/udp\": [{\"HostIp\": \"\", \"HostPort\": \"9001\"}]},"
                             " \"NetworkMode\": \"proj_front\","
                             " \"CapAdd\": [\"NET_ADMIN\"], \"CapDrop\": [\"MKNOD\"],"
                             " \"SecurityOpt\": [\"no-new-privileges\"], \"Privileged\": false,"
                             " \"ReadonlyRootfs\": true, \"Init\": true,"
                             " \"RestartPolicy\": {\"Name\": \"on-failure\", \"MaximumRetryCount\": 3},"
                             " \"Sysctls\": {\"net.core.somaxconn\": \"1024\"},"
                             " \"Ulimits\": [{\"Name\": \"nofile\", \"Soft\": 1024, \"Hard\": 2048},"
                             "   {\"Name\": \"nproc\", \"Soft\": 512, \"Hard\": 512}],"
                             " \"ShmSize\": 134217728, \"Memory\": 1073741824, \"MemorySwap\": -1,"
                             " \"MemoryReservation\": 268435456, \"NanoCpus\": 1500000000, \"CpuShares\": 512,"
                             " \"PidsLimit\": 100, \"OomScoreAdj\": -500,"
                             " \"Devices\": [{\"PathOnHost\": \"/dev/fuse\", \"PathInContainer\": \"/dev/fuse\","
                             "   \"CgroupPermissions\": \"rwm\"}, {\"PathOnHost\": \"/dev/sda\","
                             "   \"PathInContainer\": \"/dev/xvda\", \"CgroupPermissions\": \"r\"}],"
                             " \"DeviceRequests\": [{\"Driver\": \"\", \"Count\": -1, \"DeviceIDs\": [],"
                             "   \"Capabilities\": [[\"gpu\"]], \"Options\": {}}],"
                             " \"ExtraHosts\": [\"host.docker.internal:host-gateway\", \"v6:::1\"],"
                             " \"Dns\": [\"8.8.8.8\"], \"DnsSearch\": [\"example.org\"], \"DnsOptions\": [\"ndots:2\"],"
                             " \"GroupAdd\": [\"audio\", \"1001\"], \"PidMode\": \"container:db-id\","
                             " \"IpcMode\": \"shareable\", \"UsernsMode\": \"host\", \"CgroupParent\": \"parent.slice\","
                             " \"Runtime\": \"runc\","
                             " \"LogConfig\": {\"Type\": \"json-file\", \"Config\": {\"max-size\": \"10m\"}},"
                             " \"Annotations\": {\"com.example.a\": \"b\"},"
                             " \"VolumesFrom\": [\"db-id:ro\", \"other\"],"
                             " \"Links\": [\"db-id:database\", \"db-id:db-1\", \"db-id:proj-db-1\"]}",
                             ctx, ctx) > 0);
        expect_json(host, want, 0);
        free(want);
    }
    free(ctx);
    json_decref(cfg);
    ph_compose_free(c);
}

/* A plain service: only what compose always sends. */
static void
test_minimal_service(void **state)
{
    ph_compose *c = load("services:\n  web:\n    image: web\n");
    ph_error_t err = NULL;
    json_t *cfg = ph_backend_engine_compose_config(c, &c->services[0], &rt, &err);

    (void)state;
    assert_non_null(cfg);
    expect_json(cfg,
                "{\"Image\": \"img:1\", \"Env\": [], \"Labels\": {}, \"AttachStdout\": true, \"AttachStderr\": true,"
                " \"NetworkingConfig\": {\"EndpointsConfig\": {\"proj_default\": {\"Aliases\": [\"proj-web-1\", \"web\"]}}},"
                " \"HostConfig\": {\"Binds\": [], \"PortBindings\": {}, \"NetworkMode\": \"proj_default\", \"CapAdd\": [],"
                "   \"CapDrop\": [], \"SecurityOpt\": [], \"Privileged\": false,"
                "   \"RestartPolicy\": {\"Name\": \"no\", \"MaximumRetryCount\": 0}}}",
                0);
    json_decref(cfg);
    ph_compose_free(c);
}

/* network_mode replaces the networks; service: needs the other running;
 * deploy resources and restart_policy; memswap unset when not given. */
static void
test_modes_and_deploy(void **state)
{
    ph_compose *c = load("services:\n"
                         "  db:\n    image: db\n"
                         "  a:\n    image: a\n    network_mode: host\n"
                         "  b:\n    image: b\n    network_mode: service:db\n"
                         "  c:\n    image: c\n    network_mode: service:a\n"
                         "  d:\n    image: d\n"
                         "    deploy:\n"
                         "      resources:\n"
                         "        limits: {cpus: \"0.5\", memory: 50M, pids: 10}\n"
                         "        reservations:\n"
                         "          memory: 20M\n"
                         "          devices: [{capabilities: [gpu], count: 1, driver: nvidia}]\n"
                         "      restart_policy: {condition: on-failure, max_attempts: 2}\n");
    ph_error_t err = NULL;
    json_t *cfg;

    (void)state;
    cfg = ph_backend_engine_compose_config(c, ph_compose_service(c, "a"), &rt, &err);
    assert_string_equal(json_string_value(json_object_get(json_object_get(cfg, "HostConfig"), "NetworkMode")), "host");
    assert_null(json_object_get(cfg, "NetworkingConfig"));
    json_decref(cfg);
    cfg = ph_backend_engine_compose_config(c, ph_compose_service(c, "b"), &rt, &err);
    assert_string_equal(json_string_value(json_object_get(json_object_get(cfg, "HostConfig"), "NetworkMode")),
                        "container:db-id");
    json_decref(cfg);
    assert_null(ph_backend_engine_compose_config(c, ph_compose_service(c, "c"), &rt, &err));
    assert_int_equal(err->status, PH_EXIT_FAILURE);
    assert_non_null(strstr(err->msg, "`network_mode: service:a` needs service `a` running"));
    ph_error_free(&err);
    /* the implicit dependency: `c` depends on `a` */
    assert_string_equal(ph_compose_service(c, "c")->depends_on.v[0], "a");
    cfg = ph_backend_engine_compose_config(c, ph_compose_service(c, "d"), &rt, &err);
    expect_json(json_object_get(cfg, "HostConfig"),
                "{\"NanoCpus\": 500000000, \"Memory\": 52428800, \"PidsLimit\": 10, \"MemoryReservation\": 20971520,"
                " \"DeviceRequests\": [{\"Driver\": \"nvidia\", \"Count\": 1, \"DeviceIDs\": [],"
                "   \"Capabilities\": [[\"gpu\"]], \"Options\": {}}],"
                " \"RestartPolicy\": {\"Name\": \"on-failure\", \"MaximumRetryCount\": 2}}",
                1);
    assert_null(json_object_get(json_object_get(cfg, "HostConfig"), "MemorySwap"));
    json_decref(cfg);
    ph_compose_free(c);
}

/* Secrets and configs: files are read-only binds where compose mounts
 * them; environment and content are written into the container. */
static void
test_secrets_and_configs(void **state)
{
    ph_compose *c;
    ph_error_t err = NULL;
    ph_backend_engine_file *files = NULL;
    size_t n = 0;
    json_t *cfg, *mounts;
    char *want = NULL;

    (void)state;
    setenv("PH_T_SECRET", "s3cret", 1);
    tu_write("pw.txt", "pw");
    c = load("services:\n"
             "  web:\n"
             "    image: web\n"
             "    secrets: [pw, {source: token, target: tok, mode: 0o400}]\n"
             "    configs: [conf, {source: inline, target: /etc/app.conf}]\n"
             "secrets:\n"
             "  pw: {file: ./pw.txt}\n"
             "  token: {environment: PH_T_SECRET}\n"
             "configs:\n"
             "  conf: {file: ./pw.txt}\n"
             "  inline: {content: \"key=${PH_T_SECRET}\"}\n");
    cfg = ph_backend_engine_compose_config(c, &c->services[0], &rt, &err);
    assert_non_null(cfg);
    mounts = json_object_get(json_object_get(cfg, "HostConfig"), "Mounts");
    assert_true(asprintf(&want,
                         "[{\"Type\": \"bind\", \"Source\": \"%s/pw.txt\", \"Target\": \"/run/secrets/pw\", \"ReadOnly\": true},"
                         " {\"Type\": \"bind\", \"Source\": \"%s/pw.txt\", \"Target\": \"/conf\", \"ReadOnly\": true}]",
                         test_dir, test_dir) > 0);
    {
        json_t *w = json_loads(want, 0, NULL);

        if (!json_equal(mounts, w))
            fail_msg("mounts: %s", json_dumps(mounts, 0));
        json_decref(w);
    }
    free(want);
    json_decref(cfg);
    assert_int_equal(ph_backend_engine_compose_files(c, &c->services[0], &files, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(files[0].target, "/run/secrets/tok");
    assert_string_equal(files[0].content, "s3cret");
    assert_int_equal(files[0].mode, 0400);
    assert_string_equal(files[1].target, "/etc/app.conf");
    assert_string_equal(files[1].content, "key=s3cret");
    assert_int_equal(files[1].mode, 0444);
    free(files);
    ph_compose_free(c);
    unsetenv("PH_T_SECRET");
    /* Swarm's secrets are refused by name, as compose refuses them. */
    c = load("services:\n  web:\n    image: web\n    secrets: [ext]\nsecrets:\n  ext: {external: true}\n");
    assert_null(ph_backend_engine_compose_config(c, &c->services[0], &rt, &err));
    assert_int_equal(err->status, PH_EXIT_USAGE);
    assert_non_null(strstr(err->msg, "secret `ext` is external, which docker compose supports only on Swarm"));
    ph_error_free(&err);
    ph_compose_free(c);
    c = load("services:\n  web:\n    image: web\n    secrets: [token]\nsecrets:\n  token: {environment: PH_T_SECRET}\n");
    assert_int_equal(ph_backend_engine_compose_files(c, &c->services[0], &files, &n, &err), -1);
    assert_non_null(strstr(err->msg, "secret `token` comes from the variable PH_T_SECRET, which is not set"));
    ph_error_free(&err);
    ph_compose_free(c);
}

static void
test_networks_and_volumes(void **state)
{
    ph_compose *c = load("services:\n  web:\n    image: web\n    networks: [front, ext]\n    volumes: [\"data:/d\"]\n"
                         "networks:\n"
                         "  front:\n"
                         "    driver: bridge\n"
                         "    driver_opts: {com.docker.network.bridge.name: br-front}\n"
                         "    internal: true\n"
                         "    attachable: true\n"
                         "    enable_ipv6: true\n"
                         "    labels: [tier=front]\n"
                         "    ipam:\n"
                         "      driver: default\n"
                         "      config: [{subnet: 172.28.0.0/16, ip_range: 172.28.5.0/24, gateway: 172.28.5.254,"
                         " aux_addresses: {host1: 172.28.1.5}}]\n"
                         "  ext:\n    external: true\n    name: shared-net\n"
                         "volumes:\n  data:\n    driver: local\n    driver_opts: {type: tmpfs, device: tmpfs}\n"
                         "    name: my-data\n");
    json_t *labels = json_pack("{s:s}", "io.profharness.project", "proj"), *b;

    (void)state;
    b = ph_backend_engine_compose_network(c, ph_compose_network(c, "front"), labels);
    expect_json(b,
                "{\"Name\": \"proj_front\", \"CheckDuplicate\": true, \"Driver\": \"bridge\","
                " \"Options\": {\"com.docker.network.bridge.name\": \"br-front\"}, \"Internal\": true,"
                " \"Attachable\": true, \"EnableIPv6\": true,"
                " \"IPAM\": {\"Driver\": \"default\", \"Config\": [{\"Subnet\": \"172.28.0.0/16\","
                "   \"IPRange\": \"172.28.5.0/24\", \"Gateway\": \"172.28.5.254\","
                "   \"AuxiliaryAddresses\": {\"host1\": \"172.28.1.5\"}}]},"
                " \"Labels\": {\"tier\": \"front\", \"io.profharness.project\": \"proj\"}}",
                0);
    json_decref(b);
    assert_true(ph_compose_network(c, "ext")->external);
    assert_string_equal(ph_compose_network(c, "ext")->name, "shared-net");
    b = ph_backend_engine_compose_volume(c, ph_compose_volume(c, "data"), labels);
    expect_json(b,
                "{\"Name\": \"my-data\", \"Driver\": \"local\", \"DriverOpts\": {\"type\": \"tmpfs\","
                " \"device\": \"tmpfs\"}, \"Labels\": {\"io.profharness.project\": \"proj\"}}",
                0);
    json_decref(b);
    json_decref(labels);
    ph_compose_free(c);
}

/* A Git or HTTP build context is the Engine's to fetch: kept as written. */
static void
test_remote_context(void **state)
{
    ph_compose *c = load("services:\n"
                         "  a:\n    build: {context: \"https://github.com/docker/compose.git#main\", target: t}\n"
                         "  b:\n    build: ./local\n");

    (void)state;
    assert_true(ph_compose_service(c, "a")->build_remote);
    assert_string_equal(ph_compose_service(c, "a")->build_context, "https://github.com/docker/compose.git#main");
    assert_null(ph_compose_service(c, "a")->unsupported);
    assert_false(ph_compose_service(c, "b")->build_remote);
    assert_int_equal(ph_compose_service(c, "b")->build_context[0], '/');
    ph_compose_free(c);
}

/* Two publishes of one container port are two bindings of it; a variable
 * without a value, unset in the environment, goes as `KEY` (unset in the
 * container, over the env_file's value), as compose v2 sends them. */
static void
test_ports_and_bare_env(void **state)
{
    ph_compose *c;
    ph_error_t err = NULL;
    json_t *cfg;

    (void)state;
    unsetenv("PH_T_BARE");
    setenv("PH_T_SET", "shell", 1);
    tu_write("web.env", "PH_T_BARE=from-file\nFILE=1\n");
    c = load("services:\n"
             "  web:\n"
             "    image: web\n"
             "    env_file: web.env\n"
             "    environment: [PH_T_BARE, PH_T_SET, A=1]\n"
             "    ports: [\"8080:80\", \"9090:80\", \"127.0.0.1:8080:80\"]\n");
    cfg = ph_backend_engine_compose_config(c, &c->services[0], &rt, &err);
    assert_non_null(cfg);
    expect_json(cfg, "{\"Env\": [\"PH_T_BARE\", \"FILE=1\", \"PH_T_SET=shell\", \"A=1\"],"
                     " \"ExposedPorts\": {\"80/tcp\": {}}}", 1);
    expect_json(json_object_get(cfg, "HostConfig"),
                "{\"PortBindings\": {\"80/tcp\": [{\"HostIp\": \"\", \"HostPort\": \"8080\"},"
                "  {\"HostIp\": \"\", \"HostPort\": \"9090\"}, {\"HostIp\": \"127.0.0.1\", \"HostPort\": \"8080\"}]}}",
                1);
    json_decref(cfg);
    ph_compose_free(c);
    unsetenv("PH_T_SET");
}

/* Valid keys profharness cannot honour mark the service, not the project. */
static void
test_unsupported(void **state)
{
    ph_compose *c = load("services:\n"
                         "  a:\n    image: a\n    deploy: {mode: global}\n"
                         "  b:\n    provider: {type: model}\n    image: b\n"
                         "  ok:\n    image: ok\n    deploy: {replicas: 1, placement: {constraints: []}}\n"
                         "  r3:\n    image: r\n    deploy: {replicas: 3}\n"
                         "  s2:\n    image: s\n    scale: 2\n"
                         "  both:\n    image: s\n    scale: 2\n    deploy: {replicas: 2}\n"
                         "  differ:\n    image: s\n    deploy: {replicas: 3}\n    scale: 2\n"
                         "  zero:\n    image: s\n    scale: 0\n"
                         "  many:\n    image: s\n    deploy: {replicas: 65}\n"
                         "  named:\n    image: s\n    container_name: one\n    scale: 2\n");

    (void)state;
    assert_non_null(strstr(ph_compose_service(c, "a")->unsupported, "compose.yaml:4: `deploy.mode other than replicated"));
    assert_non_null(strstr(ph_compose_service(c, "b")->unsupported, "`provider"));
    assert_null(ph_compose_service(c, "ok")->unsupported);
    assert_int_equal(ph_compose_service(c, "ok")->replicas, 1);
    /* replicas as docker compose runs them: a container each */
    assert_null(ph_compose_service(c, "r3")->unsupported);
    assert_int_equal(ph_compose_service(c, "r3")->replicas, 3);
    assert_null(ph_compose_service(c, "s2")->unsupported);
    assert_int_equal(ph_compose_service(c, "s2")->replicas, 2);
    assert_null(ph_compose_service(c, "both")->unsupported);
    assert_int_equal(ph_compose_service(c, "both")->replicas, 2);
    /* what compose refuses too, and what there is nothing to profile of */
    assert_non_null(strstr(ph_compose_service(c, "differ")->unsupported, "`scale and deploy.replicas with distinct"));
    assert_non_null(strstr(ph_compose_service(c, "zero")->unsupported, "`scale: 0"));
    assert_non_null(strstr(ph_compose_service(c, "many")->unsupported, "`deploy.replicas: 65"));
    assert_non_null(strstr(ph_compose_service(c, "named")->unsupported, "`container_name with more than one replica"));
    ph_compose_free(c);
}

/* The loop's own mounts (ph_workload_spec.mounts) as the Engine's create
 * body: the tools volume read-only and never filled from the service
 * image (NoCopy), a bind without VolumeOptions (the Engine refuses them
 * there), an anonymous volume for the artifacts. */
static void
test_spec_mounts(void **state)
{
    ph_workload_spec sp = PH_WORKLOAD_SPEC_INIT;
    ph_error_t err = NULL;
    json_t *cfg, *mounts, *m;

    (void)state;
    sp.image = "app:1";
    assert_int_equal(ph_workload_spec_mount(&sp, PH_MOUNT_SPEC_VOLUME, "profharness-tools-x", "/opt/profharness", 1), 0);
    sp.mounts[0].no_copy = 1;
    assert_int_equal(ph_workload_spec_mount(&sp, PH_MOUNT_SPEC_BIND, "/host", "/in", 0), 0);
    sp.mounts[1].no_copy = 1; /* asked of a bind: not sent */
    assert_int_equal(ph_workload_spec_mount(&sp, PH_MOUNT_SPEC_VOLUME, "data", "/data", 0), 0);
    assert_int_equal(ph_workload_spec_mount(&sp, PH_MOUNT_SPEC_ANON, NULL, "/opt/profiling", 0), 0);
    cfg = ph_backend_engine_config(NULL, &sp, &err);
    assert_non_null(cfg);
    mounts = json_object_get(json_object_get(cfg, "HostConfig"), "Mounts");
    assert_int_equal(json_array_size(mounts), 3);
    m = json_array_get(mounts, 0);
    assert_string_equal(json_string_value(json_object_get(m, "Source")), "profharness-tools-x");
    assert_true(json_is_true(json_object_get(m, "ReadOnly")));
    assert_true(json_is_true(json_object_get(json_object_get(m, "VolumeOptions"), "NoCopy")));
    assert_null(json_object_get(json_array_get(mounts, 1), "VolumeOptions"));
    assert_null(json_object_get(json_array_get(mounts, 2), "VolumeOptions"));
    assert_true(json_is_false(json_object_get(json_array_get(mounts, 2), "ReadOnly")));
    assert_non_null(json_object_get(json_object_get(cfg, "Volumes"), "/opt/profiling"));
    json_decref(cfg);
    ph_workload_spec_clear(&sp);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_service),
        cmocka_unit_test(test_minimal_service),
        cmocka_unit_test(test_modes_and_deploy),
        cmocka_unit_test(test_secrets_and_configs),
        cmocka_unit_test(test_networks_and_volumes),
        cmocka_unit_test(test_remote_context),
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_ports_and_bare_env),
        cmocka_unit_test(test_spec_mounts),
    };
    return cmocka_run_group_tests_name("backend_engine_compose", tests, tu_setup, tu_teardown);
}
