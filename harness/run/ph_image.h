/* ph_image.h - service images and their profiling images.
 *
 * The profiling image of a service is its image plus the profiler tools,
 * the init shim and the sampler library, built from
 * images/profiling/Dockerfile through the Engine's /build.  It is tagged by
 * a hash of every input (the Dockerfile, the shim and sampler binaries, the
 * service image's id, the package list), so it is rebuilt exactly when one
 * of them changes.
 */
#ifndef PH_IMAGE_H
#define PH_IMAGE_H

#include <stdint.h>
#include <sys/types.h>
#include "ph_compose.h"
#include "ph_engine.h"
#include "ph_error.h"

/* Make sure IMAGE exists: build it when the service has `build` (always
 * when FORCE_BUILD or `pull_policy: build`, else only when missing), pull
 * it otherwise (as `pull_policy` says).  ENV resolves build args given
 * without a value. */
int ph_image_ensure_service(ph_engine *e, const ph_service *s, const char *image, int force_build, const ph_kvv *env,
                            ph_error_t *err);

/* Make sure the profiling image of SERVICE_IMAGE exists; *tag_out names it. */
int ph_image_ensure_profiling(ph_engine *e, const char *service_image, const char *data_dir,
                              const ph_strv *packages, char **tag_out, ph_error_t *err);

/* The profiling image of IMAGE is tagged <short name>-profiling:<inputs
 * hash>; the short name of "registry:5000/team/app:1.2" is "app". */
void ph_image_short_name(const char *image, char *out, size_t len);
#define PH_IMAGE_PROFILING_SUFFIX "-profiling"

/* A request body from memory, for ph_engine_stream. */
typedef struct ph_image_mem {
    const char *data;
    size_t len, off;
} ph_image_mem;
ssize_t ph_image_mem_read_cb(void *ud, char *buf, size_t len);

/* FNV-1a 64: change detection for build inputs, not security. */
uint64_t ph_image_hash(uint64_t h, const void *data, size_t len);
#define PH_IMAGE_HASH_INIT 0xcbf29ce484222325ULL

#endif
