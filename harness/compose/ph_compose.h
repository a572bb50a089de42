/* ph_compose.h - the compose-spec subset profharness understands.
 *
 * ph_compose_load() reads a compose file with libyaml into plain structs.
 * `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?msg}` and `$$` are
 * interpolated from the process environment and the `.env` file beside the
 * compose file (the environment wins).  Unknown keys produce a warning
 * naming file:line (through ph_warn), never silence.  Malformed YAML or a
 * wrong type is an error naming file:line:col; nothing is returned then.
 */
#ifndef PH_COMPOSE_H
#define PH_COMPOSE_H

#include <stddef.h>
#include "ph_error.h"
#include "ph_strings.h"

typedef struct ph_volume {
    char *source;   /* host path (bind, made absolute against the compose dir) or volume name; NULL for anonymous */
    char *target;   /* path in the container */
    int bind;       /* 1 bind mount, 0 named/anonymous volume */
    int read_only;
} ph_volume;

typedef struct ph_port {
    char *host_ip;          /* NULL for all */
    char *host_port;        /* NULL when not published on a fixed port */
    char *container_port;   /* "80" */
    char *protocol;         /* "tcp" or "udp" */
} ph_port;

typedef struct ph_healthcheck {
    int present;
    int disable;
    ph_strv test;            /* e.g. ["CMD-SHELL", "curl -f localhost"] */
    long long interval_ns, timeout_ns, start_period_ns; /* 0 = Engine default */
    int retries;             /* 0 = Engine default */
} ph_healthcheck;

typedef struct ph_service {
    char *name;
    int line;                /* line of the service's key in the compose file */
    char *image;             /* may be NULL when build is given */
    int has_build;
    char *build_context;     /* absolute */
    char *build_dockerfile;  /* relative to the context, default "Dockerfile" */
    ph_kvv build_args;
    int has_command, has_entrypoint;
    ph_strv command;         /* string form is split like a shell (quotes, backslashes) */
    ph_strv entrypoint;
    ph_kvv environment;      /* env_file entries first, then `environment` (later wins) */
    char *working_dir, *user;
    ph_port *ports;
    size_t n_ports;
    ph_volume *volumes;
    size_t n_volumes;
    ph_strv networks;        /* empty = the project's default network */
    ph_strv depends_on;      /* list and map forms */
    ph_strv cap_add, cap_drop, security_opt;
    int privileged;
    char *stop_signal;       /* NULL = image default */
    long long stop_grace_ns; /* -1 = not set (compose default 10 s) */
    ph_healthcheck healthcheck;
    ph_kvv labels;
    char *container_name;
} ph_service;

typedef struct ph_compose {
    char *path;              /* as given */
    char *dir;               /* absolute directory of the file */
    char *project;           /* `name:` or the directory's base name, normalised like compose */
    ph_service *services;    /* in file order */
    size_t n_services;
    ph_strv volumes;         /* top-level named volumes */
    ph_strv networks;        /* top-level networks */
} ph_compose;

/* Load and validate PATH.  project_override (may be NULL) replaces the
 * project name.  Returns 0 and *out, or -1 and *err (status PH_EXIT_USAGE
 * for bad input, with "PATH:LINE:COL: what is wrong"). */
int ph_compose_load(const char *path, const char *project_override, ph_compose **out, ph_error_t *err);
void ph_compose_free(ph_compose *c);

/* The service named NAME, or NULL. */
ph_service *ph_compose_service(ph_compose *c, const char *name);

/* Interpolate ${...} in IN using lookup(name, ud) (NULL = unset).  Returns a
 * malloc'd string or NULL and *err (PH_EXIT_USAGE) for a bad expression or a
 * `${VAR:?msg}` on an unset variable.  `where` prefixes the error ("file:line"). */
typedef const char *(*ph_lookup_cb)(const char *name, void *ud);
char *ph_interpolate(const char *in, ph_lookup_cb lookup, void *ud, const char *where, ph_error_t *err);

#endif
