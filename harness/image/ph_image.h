/* ph_image.h - service images, their profiling images, the tools image.
 *
 * The profiling image of a service is its image plus the profiler tools,
 * the init shim and the sampler library, built through the Engine's /build
 * from a Dockerfile written for what the image offers (ph_image_facts.c):
 * the profiles' packages through its own package manager (apt, apk, dnf,
 * microdnf, yum), or where it has none, the self-contained tools tree of
 * the tools image (images/tools/).  Both are tagged by a hash of every
 * input (the service image's id, every profile's packages and tools, the
 * Dockerfiles the generator writes, the shim and sampler binaries, the
 * tools image's files), so each is rebuilt exactly when one changes; the
 * profiling image carries what was found as labels, so it is looked for
 * once, when it is built.
 *
 * A floor of its own between the backend and the loop: it builds and
 * pulls, and makes the tools volume (and its mark), through the Engine
 * client the backend gives (ph_backend_ops.engine), so the loop never
 * calls the Engine itself.
 */
#ifndef PH_IMAGE_H
#define PH_IMAGE_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>
#include "ph_compose.h"
#include "ph_backend.h"
#include "ph_error.h"
#include "ph_profile.h"
#include "ph_tar.h"

#define PH_CONTAINER_OUT "/opt/profiling" /* artifacts live in OUT/<service> */

/* Make sure IMAGE exists: build it when the service has `build` (always
 * when FORCE_BUILD or `pull_policy: build`, else only when missing), pull
 * it otherwise (as `pull_policy` says).  ENV resolves build args given
 * without a value. */
int ph_image_ensure_service(ph_backend *b, const ph_service *s, const char *image, int force_build, const ph_kvv *env,
                            ph_error_t *err);

/* What an image offers a profiler. */
typedef struct ph_image_facts {
    char pm[16];   /* apt, apk, dnf, microdnf, yum; "" when none (or no /bin/sh to run it) */
    char libc[8];  /* glibc, musl: whose loader is there; "" when none (static programs only) */
    int shell;     /* /bin/sh is there */
    int tmp;       /* /tmp is there (FROM scratch has none) */
} ph_image_facts;

/* What SERVICE_IMAGE needs to be profiled under MODE (*facts: what it
 * offers, asked of the image).  MODE, when not NULL, is checked against
 * the image first (a PH_EXIT_USAGE error saying why it cannot run there).
 * A mode the tools tree serves (ph_image_tree_serves) runs the service's
 * own image with the tools volume mounted: *volume_out names it, *tag_out
 * is NULL.  Any other mode runs the profiling image (the service image +
 * the profiles' packages through its package manager): *tag_out names it,
 * *volume_out is NULL.  MODE NULL (setup): the tools volume, and the
 * profiling image when a mode that fits the image needs it. */
int ph_image_ensure_profiling(ph_backend *b, const char *service_image, const char *data_dir,
                              const ph_profile_set *profiles, const ph_profile *mode, char **tag_out,
                              char **volume_out, ph_image_facts *facts, ph_error_t *err);

/* As ph_image_ensure_profiling with the profiling image whatever the mode:
 * for orchestrators whose nodes pull an image and have no tools volume of
 * ours (a Swarm service's tasks). */
int ph_image_ensure_profiling_image(ph_backend *b, const char *service_image, const char *data_dir,
                                    const ph_profile_set *profiles, const ph_profile *mode, char **tag_out,
                                    ph_image_facts *facts, ph_error_t *err);

/* The profiling image of IMAGE is tagged <short name>-profiling:<inputs
 * hash>; the short name of "registry:5000/team/app:1.2" is "app". */
void ph_image_short_name(const char *image, char *out, size_t len);
#define PH_IMAGE_PROFILING_SUFFIX "-profiling"

/* FNV-1a 64: change detection for build inputs, not security. */
uint64_t ph_image_hash(uint64_t h, const void *data, size_t len);
#define PH_IMAGE_HASH_INIT 0xcbf29ce484222325ULL

/* Make sure the tools image exists (images/tools/Dockerfile, from Debian;
 * its packages and programs from the profiles' `packages` and `tools`);
 * *tag_out names it. */
int ph_image_ensure_tools(ph_backend *b, const char *data_dir, const ph_profile_set *profiles, char **tag_out,
                          ph_error_t *err);

/* The tools volume: the tools image's /opt/profharness (the tree, the
 * shim, ph-attach, the sampler) in a volume named after the tools image's
 * inputs (PH_TOOLS_VOLUME_PREFIX<hash>), filled once per Engine; a
 * profiled container mounts it read-only at PH_TOOLS_MOUNT and runs the
 * service's own image, unchanged.  *volume_out names it. */
#define PH_TOOLS_MOUNT "/opt/profharness"
#define PH_TOOLS_VOLUME_PREFIX "profharness-tools-"
/* The empty volume <volume>PH_TOOLS_FILLED_SUFFIX says the volume is
 * complete (its keeper, which filled it, is gone: ph_image.c). */
#define PH_TOOLS_FILLED_SUFFIX "-filled"
int ph_image_ensure_tools_volume(ph_backend *b, const char *data_dir, const ph_profile_set *profiles, char **volume_out,
                                 ph_error_t *err);
/* The hash the current tools image and volume are named by (HASH: 17
 * bytes or more): what prune keeps. */
int ph_image_tools_hash(const char *data_dir, const ph_profile_set *profiles, char *hash, size_t len, ph_error_t *err);

/* ---- ph_image_facts.c ---------------------------------------------------- */

/* Ask IMAGE what it offers: a container is created from it (never
 * started) and the Engine is asked which package managers and loaders are
 * there; the container is removed. */
int ph_image_probe(ph_backend *b, const char *image, ph_image_facts *out, ph_error_t *err);

/* Whether the ELF file whose first LEN bytes are HEAD asks for an
 * interpreter (PT_INTERP): 1, the dynamic loader runs it and an
 * LD_PRELOAD reaches it; 0, static (static-pie too); -1 not an ELF
 * program, or its program headers lie past LEN.  Pure. */
int ph_image_elf_interp(const void *head, size_t len);
/* Whether that ELF program carries a GNU build-id note (in a PT_NOTE
 * segment): 1; 0 none (a static Go binary: perf's build-id cache cannot
 * hold it); -1 not an ELF program, or its notes lie past LEN.  Pure. */
int ph_image_elf_build_id(const void *head, size_t len);

/* What runs a service's command ARGV (ARGC words) in IMAGE: ARGV[0] found
 * as the kernel would (PATH_VAR, WORKDIR), symlinks followed, its first
 * bytes read through the archive endpoint of a created, never started
 * container; for a shell wrapper (`sh -c "exec prog"`) the program it
 * runs, when that is static.  out->linked as ph_image_elf_interp; -1 too
 * when the program is not found.  out->runs: the ELF program that runs,
 * the wrapper's when there is one (its links followed; "" when not
 * found): what tells a runtime (python3 -> /usr/bin/python3.11). */
typedef struct ph_image_program_t {
    char path[4096]; /* the file, its links followed ("" when not found) */
    char runs[4096];
    int linked;
    size_t path_skipped; /* PATH_VAR's entries not looked in: past PH_IMAGE_PATH_DIRS distinct directories */
} ph_image_program_t;
/* A PATH is looked in up to this many distinct directories (one Engine
 * request each): a process's environment is the container's to write
 * (a 43,000-entry PATH made an attach take 39 s per process). */
#define PH_IMAGE_PATH_DIRS 32
int ph_image_program(ph_backend *b, const char *image, char *const *argv, size_t argc, const char *path_var,
                     const char *workdir, ph_image_program_t *out, ph_error_t *err);
/* The same in the container ID as it is (created, or running: its files
 * now), no container made. */
int ph_image_program_in(ph_backend *b, const char *id, char *const *argv, size_t argc, const char *path_var,
                        const char *workdir, ph_image_program_t *out, ph_error_t *err);

/* The first bytes of the file PATH in container ID (created, running or
 * stopped), through the archive endpoint, the rest not transferred: up to
 * CAP into BUF, T as ph_tar_peek says (a file's T->len bytes, or a link's
 * target).  0; -1 when it is not there or not a tar's member; -2 and *err
 * on a fault. */
int ph_image_file_head(ph_backend *b, const char *id, const char *path, ph_tar_peek_t *t, void *buf, size_t cap,
                       ph_error_t *err);

/* Whether mode P runs from the tools tree (mounted) in an image offering
 * F: it names its `tools` (the tree carries them; `tools: []`, the
 * sampler, needs none but the library), and F's C library is one of its
 * `tools_libc` when it names any.  Pure. */
int ph_image_tree_serves(const ph_profile *p, const ph_image_facts *f);

/* "apt" ... or "none"; "glibc", "musl" or "none". */
const char *ph_image_facts_pm(const ph_image_facts *f);
const char *ph_image_facts_libc(const ph_image_facts *f);

/* The sampler's builds, in the tools volume's lib/: the profiles name
 * glibc's (LD_PRELOAD, -agentpath); musl's loads where musl's loader is. */
#define PH_SAMPLER_GLIBC "libphsampler.so"
#define PH_SAMPLER_MUSL "libphsampler-musl.so"
/* The sampler for an image with C library LIBC (ph_image_facts.libc): in
 * each "KEY=VALUE" of ENV, PH_TOOLS_MOUNT/lib/PH_SAMPLER_GLIBC becomes
 * musl's build when LIBC is "musl"; nothing changes otherwise.  0, or -1
 * on ENOMEM (ENV as it was, but for the entries already rewritten).
 * Pure. */
int ph_image_sampler_env(ph_strv *env, const char *libc);

/* NULL when mode P can run in an image offering F; else why not, in BUF
 * (the profile's `limits` sentence included). */
const char *ph_image_unfit(const ph_profile *p, const ph_image_facts *f, char *buf, size_t len);

/* The Dockerfile of a profiling image (malloc'd into *out): FROM BASE, the
 * PACKAGES through F's package manager, or with none the tools tree from
 * TOOLS_IMAGE; then the shim and sampler (the context's opt/) and the
 * artifacts directory.  A package name that is not one is refused. */
int ph_image_dockerfile(const ph_image_facts *f, const char *base, const char *tools_image, const ph_strv *packages,
                        char **out, ph_error_t *err);

/* ---- ph_image_progress.c ------------------------------------------------- */

/* What an image build shows while it runs, made of what it is given: the
 * context's bytes sent and the builder's text lines in, text out through
 * OUT.  On a terminal (TTY) one status line per build, redrawn in place
 * ("\r", the text cut to WIDTH - 1 columns, ESC[K) only when its text
 * changes: "front: sending build context 34 MiB / 80 MiB", then "front:
 * step 3/8 RUN apt-get ..."; at the end one line is left: "front: built
 * IMAGE (8 steps: 3 run, 5 from the build cache)", or for a build that ran
 * no step "front: IMAGE up to date, from the build cache (8 steps)".  Off
 * a terminal no carriage return: a line per step that runs (cut to
 * PH_IMAGE_PROGRESS_LINE_MAX columns), then that last line.  QUIET shows
 * nothing but a failure.  Every line of the builder's text goes to LOG (a
 * line a call, "\n" ended; may be NULL) and its last PH_IMAGE_PROGRESS_TAIL
 * are kept: a failure clears the status line and shows them, its step's
 * line first.  All of it is escaped (ph_escape.h): a Dockerfile's line,
 * and what its RUN printed, are untrusted.  A code point of U+1100 or
 * above counts two columns (it may be wide).  Pure: no I/O but OUT and
 * LOG; not thread-safe. */
#define PH_IMAGE_PROGRESS_TAIL 20
#define PH_IMAGE_PROGRESS_LINE_MAX 200
typedef void (*ph_image_progress_out_cb)(void *ud, const char *text, size_t len);
typedef struct ph_image_progress_opts {
    const char *who;   /* what leads each line: "front", "tools image" */
    int tty;
    int width;         /* the terminal's columns (< 20: 80) */
    int quiet;
    ph_image_progress_out_cb out, log;
    void *out_ud, *log_ud;
} ph_image_progress_opts;
typedef struct ph_image_progress ph_image_progress;

/* NULL when out of memory. */
ph_image_progress *ph_image_progress_new(const ph_image_progress_opts *o);
void ph_image_progress_free(ph_image_progress *p);
/* The status line's text until there is more to say (a terminal only). */
void ph_image_progress_say(ph_image_progress *p, const char *what);
/* SENT of the context's TOTAL bytes have gone (a terminal only). */
void ph_image_progress_sent(ph_image_progress *p, unsigned long long sent, unsigned long long total);
/* One line of the builder's text, without its newline. */
void ph_image_progress_line(ph_image_progress *p, const char *line);
/* The build made IMAGE: the last line. */
void ph_image_progress_done(ph_image_progress *p, const char *image);
/* The build failed: the status line cleared, the tail shown. */
void ph_image_progress_failed(ph_image_progress *p);

/* ---- ph_image_prune.c ---------------------------------------------------- */

/* What prune removes, from the Engine's IMAGES (GET /images/json) and
 * CONTAINERS (all of them): [{"tag", "id", "size"}] for the tags in
 * REPOS of images no container uses, the newest of each repository
 * left out unless ALL.  NULL on allocation failure. */
json_t *ph_image_prune_plan(json_t *images, json_t *containers, const ph_strv *repos, int all);
/* Remove what ph_image_prune_plan says for REPOS (the profiling
 * repositories of PROJECT's services), saying each on stdout. */
int ph_image_prune(ph_backend *b, const char *project, const ph_strv *repos, int all, ph_error_t *err);
/* The old tools volumes, from the Engine's VOLUMES (those labelled
 * PH_LABEL_TOOLS) and CONTAINERS (all of them): each hash other than
 * CURRENT of a volume, a volume's mark (PH_TOOLS_FILLED_SUFFIX) or a
 * keeper an older profharness left (labelled with the hash and named
 * PH_TOOLS_VOLUME_PREFIX<hash>, as the volume), once, with whether a
 * container other than its keeper mounts the volume ("name", "hash",
 * "in_use").  NULL on allocation failure. */
json_t *ph_image_tools_prune_plan(json_t *volumes, json_t *containers, const char *current);
/* Remove each old tools volume ph_image_tools_prune_plan names: its
 * keeper if one is left, the volume and its mark, and its tools image
 * where nothing else uses it; one a container still mounts is kept and
 * said. */
int ph_image_prune_tools(ph_backend *b, const char *current, ph_error_t *err);

#endif
