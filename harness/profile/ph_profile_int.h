/* ph_profile_int.h - what the profile loader's two files share (not for
 * other floors): ph_profile.c reads the wrap, the stop protocol and the
 * artifacts; ph_profile_keys.c reads where a mode can run and what runs
 * beside and after it (packages per package manager, tools, libc, attach,
 * convert). */
#ifndef PH_PROFILE_INT_H
#define PH_PROFILE_INT_H

#include "ph_profile.h"
#include "ph_yaml.h"

/* Read the value V of top-level key KEY into P.  1 when KEY is one of
 * ph_profile_keys.c's, 0 when it is not (nothing read), -1 and *err when
 * its value is wrong. */
int ph_profile_read_key(ph_profile *p, const char *key, const ph_ynode *v, ph_error_t *err);

/* After every key was read: what only the whole profile can tell
 * (attach.command names {pids}, ...).  -1 and *err at ROOT. */
int ph_profile_check_keys(ph_profile *p, const ph_ynode *root, ph_error_t *err);

/* A signal name at N ("TERM", "SIGTERM", "15") into *OUT as "SIGTERM". */
int ph_profile_read_signal(const ph_ynode *n, const char *key, char **out, ph_error_t *err);

/* Free what ph_profile_read_key allocated. */
void ph_profile_free_keys(ph_profile *p);

#endif
