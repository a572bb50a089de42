/* ph_compose.h - a compose project read as docker compose reads it.
 *
 * ph_compose_open() finds the files (-f in order; else COMPOSE_FILE; else
 * compose.yaml, compose.yml, docker-compose.yml, docker-compose.yaml in the
 * working directory or the nearest parent, plus its compose.override.*),
 * builds the project's environment (the process environment, then the env
 * files: --env-file, COMPOSE_ENV_FILES or <project dir>/.env, the process
 * winning), names the project (-p, COMPOSE_PROJECT_NAME, `name:`, the
 * directory; the first two must already be valid names), then reads each
 * file's YAML documents, interpolates their values (`${VAR}`, `${VAR:-d}`,
 * `${VAR-d}`, `${VAR:?msg}`, `${VAR:+alt}`, `$$`; COMPOSE_PROJECT_NAME is
 * the project's name), resolves `include` and `extends`, and merges them
 * with compose's rules (mappings merge, most sequences append, `command`,
 * `entrypoint` and `healthcheck.test` are replaced, `!reset` and
 * `!override` tags).  Services whose `profiles:` are not enabled (--profile,
 * COMPOSE_PROFILES, `*`) are loaded but not `enabled`.
 *
 * Every key that changes how a container runs is read into the structs
 * below, checked, and translated by the backend (the Engine's:
 * ph_backend_engine_compose_config()); a key that
 * compose accepts but profharness cannot honour sets `unsupported`, which
 * the loop reports when it is asked to run that service.  Unknown keys
 * warn with file:line.  Malformed YAML or a wrong value is an error naming
 * file:line:col (PH_EXIT_USAGE); nothing is returned then.
 *
 * Relative paths are resolved against the project directory, or, for what
 * an `include` or an `extends: {file:}` brings in, against that file's own.
 * Sizes are bytes, durations nanoseconds; -1 (or NULL) means not set.
 */
#ifndef PH_COMPOSE_H
#define PH_COMPOSE_H

#include <stddef.h>
#include "ph_error.h"
#include "ph_strings.h"

typedef enum ph_mount_type {
    PH_MOUNT_BIND = 1,
    PH_MOUNT_VOLUME,
    PH_MOUNT_TMPFS,
    PH_MOUNT_IMAGE,
} ph_mount_type;

typedef struct ph_volume {
    ph_mount_type type;
    char *source;           /* bind: absolute host path; volume: top-level name (NULL: anonymous); image: reference */
    char *target;           /* absolute path in the container */
    int read_only;
    int bind;               /* type == PH_MOUNT_BIND (kept for the loop's older callers) */
    int long_syntax;        /* written as a mapping: compose passes it to the Mounts API */
    char *propagation;      /* bind: rprivate, shared, ... */
    int create_host_path;   /* bind: 1 unless `create_host_path: false` */
    char *selinux;          /* bind: "z" or "Z" */
    int nocopy;             /* volume */
    char *subpath;          /* volume and image */
    long long tmpfs_size;   /* tmpfs: bytes, -1 */
    int tmpfs_mode;         /* tmpfs: -1 */
} ph_volume;

typedef struct ph_port {
    char *host_ip;          /* NULL for all */
    char *host_port;        /* NULL when not published on a fixed port */
    char *container_port;   /* "80" or "8000-8010" */
    char *protocol;         /* "tcp", "udp" or "sctp" */
} ph_port;

typedef struct ph_healthcheck {
    int present;
    int disable;
    ph_strv test;           /* e.g. ["CMD-SHELL", "curl -f localhost"]; empty: the image's */
    long long interval_ns, timeout_ns, start_period_ns, start_interval_ns; /* 0 = Engine default */
    int retries;            /* 0 = Engine default */
} ph_healthcheck;

typedef struct ph_ulimit {
    char *name;
    long long soft, hard;
} ph_ulimit;

typedef struct ph_device {
    char *source, *target, *permissions; /* permissions default "rwm" */
} ph_device;

typedef struct ph_device_request { /* gpus and deploy.resources.reservations.devices */
    char *driver;
    long long count;        /* -1: all */
    ph_strv ids, capabilities;
    ph_kvv options;
} ph_device_request;

typedef enum ph_throttle_kind {
    PH_BLKIO_WEIGHT = 0, PH_BLKIO_READ_BPS, PH_BLKIO_READ_IOPS, PH_BLKIO_WRITE_BPS, PH_BLKIO_WRITE_IOPS,
} ph_throttle_kind;

typedef struct ph_throttle { /* blkio_config.weight_device, device_read_bps, ... */
    ph_throttle_kind kind;
    char *path;
    long long value;
} ph_throttle;

typedef struct ph_file_ref { /* a service's `secrets:` or `configs:` entry */
    char *source;           /* the top-level name */
    char *target;           /* absolute: /run/secrets/<source> or /<source> by default */
    char *uid, *gid;
    int mode;               /* -1 */
} ph_file_ref;

typedef struct ph_service_network {
    char *name;             /* the top-level key */
    ph_strv aliases;
    char *ipv4_address, *ipv6_address, *mac_address, *interface_name;
    ph_strv link_local_ips;
    ph_kvv driver_opts;
    int priority, gw_priority;
} ph_service_network;

typedef struct ph_depend {
    char *service;
    char *condition;        /* service_started, service_healthy, service_completed_successfully */
    int required, restart;
} ph_depend;

#define PH_COMPOSE_REPLICAS_MAX 64

typedef struct ph_service {
    char *name;
    int line;               /* line of the service's key in its file */
    char *file;             /* the file that defines it */
    int enabled;            /* no profiles, or one of them is enabled */
    ph_strv profiles;
    char *unsupported;      /* "FILE:LINE: `key` ...": set when a valid key cannot be honoured */

    char *image;            /* may be NULL when build is given */
    char *pull_policy;      /* always, never, missing, build, daily...; NULL = missing */
    int has_build;
    char *build_context;    /* absolute, or the URL of a remote context */
    int build_remote;       /* build_context is a Git or HTTP URL the Engine fetches */
    char *build_dockerfile; /* relative to the context, default "Dockerfile" */
    char *build_dockerfile_inline;
    char *build_target, *build_network, *build_platform, *build_isolation;
    ph_kvv build_args, build_labels;
    ph_strv build_extra_hosts, build_cache_from, build_tags;
    long long build_shm_size;
    int build_no_cache, build_pull;

    int has_command, has_entrypoint;
    ph_strv command;        /* the string form is split like a shell */
    ph_strv entrypoint;
    ph_kvv environment;     /* env_file entries first, then `environment`; resolved, none NULL */
    char *working_dir, *user, *hostname, *domainname, *mac_address;
    ph_port *ports;
    size_t n_ports;
    ph_strv expose;         /* "80", "8000-8010/udp" */
    ph_volume *volumes;     /* volumes, then long tmpfs/image mounts */
    size_t n_volumes;
    ph_strv tmpfs;          /* short form: "/run" or "/run:size=64m" */
    ph_strv networks;       /* names, by priority; empty = the project's default network */
    ph_service_network *net; /* per network settings, parallel to `networks` */
    char *network_mode;     /* host, none, bridge, service:NAME, container:NAME */
    ph_strv depends_on;     /* service names (list and map forms) */
    ph_depend *depends;     /* parallel to depends_on */
    ph_strv links;          /* "service[:alias]" */
    ph_strv external_links;
    ph_strv volumes_from;   /* "service[:ro]" or "container:NAME[:ro]" */
    ph_strv cap_add, cap_drop, security_opt, group_add, dns, dns_search, dns_opt, extra_hosts;
    ph_strv device_cgroup_rules;
    ph_device *devices;
    size_t n_devices;
    ph_device_request *device_requests;
    size_t n_device_requests;
    ph_ulimit *ulimits;
    size_t n_ulimits;
    ph_kvv sysctls, labels, annotations, storage_opt;
    ph_kvv logging_options;
    char *logging_driver;
    ph_file_ref *secrets, *configs;
    size_t n_secrets, n_configs;
    int privileged, read_only, init, tty, stdin_open, oom_kill_disable;
    int has_init, has_oom_score_adj;
    int oom_score_adj;
    char *pid, *ipc, *uts, *userns_mode, *cgroup, *cgroup_parent, *runtime, *platform, *isolation;
    char *restart;          /* "no", "always", "on-failure[:N]", "unless-stopped"; NULL = no */
    char *stop_signal;      /* NULL = image default */
    long long stop_grace_ns; /* -1 = not set (compose default 10 s) */
    ph_healthcheck healthcheck;
    char *container_name;
    int replicas;           /* the containers compose runs for it (`scale`, `deploy.replicas`): 1 unless said,
                             * at most PH_COMPOSE_REPLICAS_MAX */
    int scale, deploy_replicas; /* as written; -1: not */
    /* resources: -1 = not set (pids_limit and cpu_quota: 0, as -1 means no limit) */
    long long mem_limit, memswap_limit, mem_reservation, shm_size, pids_limit; /* memswap_limit -2: unlimited */
    long long nano_cpus, cpu_shares, cpu_quota, cpu_period, cpu_count, cpu_percent;
    long long cpu_rt_runtime, cpu_rt_period, mem_swappiness, blkio_weight;
    char *cpuset;
    ph_throttle *blkio;
    size_t n_blkio;
} ph_service;

typedef struct ph_ipam_pool {
    char *subnet, *ip_range, *gateway;
    ph_kvv aux_addresses;
} ph_ipam_pool;

typedef struct ph_network {
    char *key;              /* the top-level key */
    char *name;             /* the Engine's name: `name:`, or <project>_<key>; the external name */
    int external, internal, attachable;
    int enable_ipv4, enable_ipv6; /* -1 = Engine default */
    char *driver, *ipam_driver;
    ph_kvv driver_opts, labels, ipam_options;
    ph_ipam_pool *ipam;
    size_t n_ipam;
} ph_network;

typedef struct ph_named_volume {
    char *key;
    char *name;             /* `name:`, or <project>_<key>; the external name */
    int external;
    char *driver;
    ph_kvv driver_opts, labels;
} ph_named_volume;

typedef struct ph_file_object { /* top-level secrets and configs */
    char *key;
    char *name;
    char *file;             /* absolute; NULL unless the source is a file */
    char *environment;      /* the variable's name */
    char *content;          /* inline content, or the variable's value once resolved */
    int external;
    int has_content;        /* environment or content: the loop writes it into the container */
    char *unsupported;      /* a Swarm-only key it has (driver, template_driver): refused when used */
} ph_file_object;

typedef struct ph_compose {
    char *path;              /* the first file, as given */
    ph_strv files;           /* every file read, in order (absolute) */
    char *dir;               /* the project directory (absolute) */
    char *project;           /* a valid project name */
    ph_kvv env;              /* the project's environment: process, then env files */
    ph_strv enabled_profiles;
    ph_service *services;    /* in file order; check `enabled` */
    size_t n_services;
    ph_strv volumes;         /* top-level volume keys */
    ph_strv networks;        /* top-level network keys (plus `default` when used) */
    ph_network *nets;        /* parallel to `networks` */
    ph_named_volume *vols;   /* parallel to `volumes` */
    ph_file_object *secrets, *configs;
    size_t n_secrets, n_configs;
} ph_compose;

typedef struct ph_compose_opts {
    const char *const *files;     /* -f, in order (NULL or none: as described above) */
    size_t n_files;
    const char *project_dir;      /* --project-directory; NULL: the first file's */
    const char *project;          /* -p; NULL: as described above */
    const char *const *env_files; /* --env-file, in order */
    size_t n_env_files;
    const char *const *profiles;  /* --profile */
    size_t n_profiles;
    const char *cwd;              /* where to look for files; NULL: the working directory */
} ph_compose_opts;

int ph_compose_open(const ph_compose_opts *o, ph_compose **out, ph_error_t *err);
/* ph_compose_open with PATH as the one file and PROJECT_OVERRIDE as -p
 * (either may be NULL). */
int ph_compose_load(const char *path, const char *project_override, ph_compose **out, ph_error_t *err);
void ph_compose_free(ph_compose *c);

/* The service named NAME (enabled or not), or NULL. */
ph_service *ph_compose_service(ph_compose *c, const char *name);
ph_network *ph_compose_network(ph_compose *c, const char *key);
ph_named_volume *ph_compose_volume(ph_compose *c, const char *key);
ph_file_object *ph_compose_secret(ph_compose *c, const char *key);
ph_file_object *ph_compose_config(ph_compose *c, const char *key);

/* Enable S's profiles, as compose does for a service named on the command
 * line: S and every service sharing one of them become enabled. */
void ph_compose_enable(ph_compose *c, ph_service *s);
/* Every service S depends on (depends_on, links, volumes_from, network_mode,
 * pid and ipc `service:`) is enabled; otherwise an error naming the
 * profile to enable. */
int ph_compose_check_enabled(ph_compose *c, const ph_service *s, ph_error_t *err);

/* Interpolate ${...} in IN using lookup(name, ud) (NULL = unset).  Returns a
 * malloc'd string or NULL and *err (PH_EXIT_USAGE) for a bad expression or a
 * `${VAR:?msg}` on an unset variable.  `where` prefixes the error ("file:line"). */
typedef const char *(*ph_lookup_cb)(const char *name, void *ud);
char *ph_interpolate(const char *in, ph_lookup_cb lookup, void *ud, const char *where, ph_error_t *err);

/* "512m", "1.5g", "1024" -> bytes, as compose (go-units RAMInBytes).  -1 on error. */
int ph_compose_parse_bytes(const char *s, long long *out);

#endif
