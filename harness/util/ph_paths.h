/* ph_paths.h - where profharness's own files are, so that it runs from any
 * folder: installed, or straight from its build tree.
 *
 *   installed (make install PREFIX=P)    build tree (a clone R)
 *   P/bin/profharness                    R/build/profharness
 *   P/lib/profharness/ph-init            R/build/ph-init
 *   P/lib/profharness/libphsampler.so    R/build/libphsampler.so
 *   P/share/profharness/profiles/        R/profiles/
 *   P/share/profharness/images/          R/images/
 *   P/share/profharness/profharness.just R/profharness.just
 *
 * The data directory (profiles/, images/) is found from the binary's own
 * location, never from the working directory; PH_DATA_DIR overrides it.
 * The library directory (ph-init, libphsampler.so) follows from the data
 * directory: DATA/build in a build tree, DATA/../../lib/profharness when
 * installed.  Also: a path as the user gave it, made absolute. */
#ifndef PH_PATHS_H
#define PH_PATHS_H

#include <limits.h>
#include <stddef.h>
#include "ph_error.h"

typedef struct ph_layout {
    char data[PATH_MAX]; /* profiles/, images/ */
    char lib[PATH_MAX];  /* ph-init, libphsampler.so */
} ph_layout;

/* The layout for the binary EXE (NULL: this process's own, from
 * /proc/self/exe) with PH_DATA_DIR's value DATA_ENV (NULL or "": unset).
 * -1 and *err (naming where it looked, with a hint) when EXE is in neither
 * layout and no DATA_ENV is given. */
int ph_paths_layout(const char *exe, const char *data_env, ph_layout *out, ph_error_t *err);

/* The library directory for data directory DATA into BUF: DATA/build when
 * DATA/build/ph-init is there, else DATA/../../lib/profharness when its
 * ph-init is there, else DATA/build (for the error naming what is
 * missing). */
void ph_paths_lib_dir(const char *data, char *buf, size_t len);

/* LIB_DIR(DATA)/NAME into BUF: where the shim or the sampler is. */
void ph_paths_lib_file(const char *data, const char *name, char *buf, size_t len);

/* The user's cache folder for profharness into BUF: $XDG_CACHE_HOME/profharness
 * when XDG_CACHE_HOME is absolute, else $HOME/.cache/profharness; made (mode
 * 0700, its parents too) when MAKE.  -1 when there is none, or it cannot be
 * made. */
int ph_paths_cache_dir(char *buf, size_t len, int make);

/* S as a part of a file name into BUF: every byte but [A-Za-z0-9] made
 * '-' (always terminated, cut to fit). */
void ph_paths_safe_name(char *buf, size_t len, const char *s);

/* PATH made absolute against the working directory (nothing resolved, "."
 * and ".." segments folded, no trailing '/').  -1 and *err when it does not
 * fit or the working directory cannot be had. */
int ph_paths_absolute(const char *path, char *buf, size_t len, ph_error_t *err);

#endif
