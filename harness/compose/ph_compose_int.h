/* ph_compose_int.h - what the files of the compose loader share (not for
 * other floors).
 *
 *   ph_compose_load.c     the project: file, interpolation, top-level keys,
 *                         references, the project name
 *   ph_compose_service.c  one service's keys into a ph_service
 *   ph_compose_env.c      ${VAR} interpolation and env files
 */
#ifndef PH_COMPOSE_INT_H
#define PH_COMPOSE_INT_H

#include "ph_compose.h"
#include "ph_yaml.h"

typedef struct ph_compose_loader {
    ph_ynode *root;
    ph_kvv dotenv;
    ph_compose *c;
    ph_ynode **depends; /* per service: its depends_on node, checked once all services are known */
} ph_compose_loader;

#define KEY(k) (strcmp(key, (k)) == 0)

/* ph_compose_load.c */
int ph_compose_dup(const char *s, char **dst, ph_error_t *err);
/* An unknown key: a warning naming file:line; x-* extensions pass silently. */
void ph_compose_warn_unknown(const ph_ypair *pair, const char *prefix, const char *service);
/* P made absolute against BASE_DIR (or $HOME for `~`), cleaned; malloc'd or NULL. */
char *ph_compose_abs_path(const char *base_dir, const char *p);

/* ph_compose_service.c */
int ph_compose_valid_name(const char *s);
int ph_compose_read_service(ph_compose_loader *l, ph_service *s, ph_ynode *map, ph_ynode **depends, ph_error_t *err);
void ph_compose_service_free(ph_service *s);

/* ph_compose_env.c */
/* KEY=VALUE lines of PATH set in OUT; a missing file is no error unless
 * MUST_EXIST; anything but a regular file is refused. */
int ph_compose_read_env_file(const char *path, ph_kvv *out, int must_exist, ph_error_t *err);

#endif
