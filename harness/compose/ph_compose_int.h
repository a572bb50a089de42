/* ph_compose_int.h - what the files of the compose loader share (not for
 * other floors).
 *
 *   ph_compose_project.c  the project: files, environment, name, profiles
 *   ph_compose_load.c     a file's documents into one tree: interpolation,
 *                         include, extends, merging; then the top level
 *   ph_compose_merge.c    compose's merge rules for trees
 *   ph_compose_service.c  one service's keys into a ph_service
 *   ph_compose_mounts.c   ports, volumes, tmpfs, devices, secrets, configs,
 *                         a service's networks, extra_hosts
 *   ph_compose_resources.c build, healthcheck, deploy, ulimits, blkio,
 *                         gpus, logging; CPU counts
 *   ph_compose_env.c      ${VAR} interpolation and env files
 *   ph_compose_common.c   what they all call: paths, lookups, the unknown
 *                         key warning, a service's base dir, numbers
 *
 * A service as the Engine's container configuration is the Engine
 * backend's (harness/backend/ph_backend_engine_compose.c).
 */
#ifndef PH_COMPOSE_INT_H
#define PH_COMPOSE_INT_H

#include "ph_compose.h"
#include "ph_yaml.h"

typedef struct ph_compose_loader {
    ph_compose *c;
    ph_ynode **depends; /* per service: its depends_on node, checked once all services are known */
    ph_ynode **svc_nodes; /* per service: its key, for errors about the whole service */
    ph_strv loading;    /* files being loaded, outermost first: an include cycle comes back to one */
    int include_depth;
} ph_compose_loader;

/* A file's YAML documents, parsed before loading (to find the name). */
typedef struct ph_compose_docs {
    ph_ynode **docs;
    size_t n;
} ph_compose_docs;

#define KEY(k) (strcmp(key, (k)) == 0)

/* ph_compose_common.c */
int ph_compose_dup(const char *s, char **dst, ph_error_t *err);
/* An unknown key: a warning naming file:line; x-* extensions pass silently. */
void ph_compose_warn_unknown(const ph_ypair *pair, const char *prefix, const char *service);
/* P made absolute against BASE_DIR (or $HOME for `~`), cleaned; malloc'd or NULL. */
char *ph_compose_abs_path(const char *base_dir, const char *p);
/* The directory of PATH (malloc'd), "/" for a file at the root. */
char *ph_compose_dir_of(const char *path);
/* Where relative paths in N's file are relative to. */
const char *ph_compose_base(ph_compose_loader *l, const ph_ynode *n);
/* Note the first key S has that profharness cannot honour (always 0). */
int ph_compose_unsupported(ph_service *s, const ph_ynode *at, const char *what);
/* After `scale` or `deploy.replicas` (KEY, at AT) was read into S: its
 * replicas, or S refused (0, over PH_COMPOSE_REPLICAS_MAX, the two keys
 * disagreeing).  Returns 0. */
int ph_compose_replicas(ph_service *s, const ph_ynode *at, const char *key);
int ph_compose_valid_name(const char *s);
int ph_compose_int(const ph_ynode *n, const char *key, long long min, long long max, long long *out, ph_error_t *err);
int ph_compose_bytes(const ph_ynode *n, const char *key, long long *out, ph_error_t *err);

/* ph_compose_load.c */
/* Interpolate ROOT's values (not its keys) from ENV. */
int ph_compose_interpolate(ph_ynode *root, const ph_kvv *env, ph_error_t *err);
/* FILES (absolute) merged into one tree with include and extends applied.
 * PRELOADED: their documents, parsed already (or NULL); BASE: the directory
 * relative paths in them are relative to (NULL: the project's). */
int ph_compose_load_files(ph_compose_loader *l, const ph_strv *files, ph_compose_docs *preloaded, const char *base,
                          const ph_kvv *env, ph_ynode **out, ph_error_t *err);

/* ph_compose_merge.c */
/* OVER merged onto BASE (which may be NULL), as compose merges them at AT
 * ("" for whole files, "services.x" for a service): a new reference. */
ph_ynode *ph_compose_merge(ph_ynode *base, ph_ynode *over, const char *at, ph_error_t *err);

/* ph_compose_top.c */
/* The merged tree's top level into L->c: networks, volumes, secrets,
 * configs, services; references checked. */
int ph_compose_read_top(ph_compose_loader *l, ph_ynode *root, ph_error_t *err);

/* ph_compose_service.c */
/* Add NAME to S's dependencies (service_started, required) unless there. */
int ph_compose_add_depend(ph_service *s, const char *name, ph_error_t *err);
int ph_compose_read_service(ph_compose_loader *l, ph_service *s, ph_ynode *map, ph_ynode **depends, ph_error_t *err);
void ph_compose_service_free(ph_service *s);

/* ph_compose_mounts.c */
int ph_compose_read_ports(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_expose(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_volumes(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_tmpfs(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_devices(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_file_refs(ph_compose_loader *l, ph_service *s, ph_ynode *v, int secrets, ph_error_t *err);
int ph_compose_read_networks(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_extra_hosts(ph_ynode *v, const char *key, ph_strv *out, ph_error_t *err);
void ph_compose_volume_free(ph_volume *v);
void ph_compose_file_ref_free(ph_file_ref *r);
void ph_compose_service_network_free(ph_service_network *sn);

/* ph_compose_resources.c */
int ph_compose_read_cpus(const ph_ynode *n, const char *key, long long *out, ph_error_t *err);
int ph_compose_read_micros(const ph_ynode *n, const char *key, long long *out, ph_error_t *err);
int ph_compose_read_build(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_healthcheck(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_gpus(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_deploy(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_ulimits(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_blkio(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);
int ph_compose_read_logging(ph_compose_loader *l, ph_service *s, ph_ynode *v, ph_error_t *err);

/* ph_compose_env.c */
/* The variables of env file PATH set in OUT, as compose-go's dotenv reads
 * them; LOOKUP (may be NULL) resolves ${VAR} and bare `KEY` lines before
 * what the file defined above.  A missing file is no error unless
 * MUST_EXIST; anything but a regular file is refused. */
int ph_compose_read_env_file(const char *path, ph_kvv *out, int must_exist, ph_lookup_cb lookup, void *ud,
                             ph_error_t *err);
/* ENV_FILES (relative to BASE, or as they are when BASE is NULL) added to
 * ENV as compose-go reads a project's or an include's env files: what ENV
 * sets wins, then the later file; a missing file is an error only when
 * MUST_EXIST. */
int ph_compose_add_env_files(ph_kvv *env, const ph_strv *files, const char *base, int must_exist,
                             ph_error_t *err);
/* The same for `format: raw`: lines taken as written. */
int ph_compose_read_env_raw(const char *path, ph_kvv *out, int must_exist, ph_error_t *err);

#endif
