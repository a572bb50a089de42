/* ph_run.h - the profiling loop: start services under a mode, stop them so
 * the profiler flushes, collect the artifacts, restore, report status.
 *
 * Docker is the state: every container profharness makes carries labels
 * (PH_LABEL_*), and every command finds its containers by them.  Nothing is
 * kept on the host but the artifacts and a lock file per service that
 * serialises two stops of one service.
 *
 * Data is never lost on a fault: a profiled container is removed only after
 * its artifacts are renamed into place on the host; when collection fails
 * the container is kept and the error's hint says how to retry (or, when
 * nothing can be collected, how to give the run up with ph_run_discard).
 * A container and its Engine are not trusted: see ph_run_collect.c.
 */
#ifndef PH_RUN_H
#define PH_RUN_H

#include <stdio.h>
#include "ph_backend.h"
#include "ph_compose.h"
#include "ph_error.h"
#include "ph_image.h"
#include "ph_profile.h"
#include "ph_report.h"
#include "ph_tar.h"
#include "ph_util.h"

/* The labels state lives in (PH_LABEL_*, compose's PH_DC_*): ph_backend.h. */
#define PH_RECORD_NAME   "ph-exit.json"            /* the shim's completion record */
#define PH_RECORD_MAX    PH_SMALL_JSON_MAX         /* larger is no record of ours */
#define PH_CONVERT_META  "convert.json"            /* a conversion's facts (perf: event, samples, unit) */
#define PH_PERF_MAPS     "perf-maps"               /* in OUT/<service>: the run's JIT maps, perf-<pid>.map */
#define PH_SERVICE_LOG_MAX (256u << 20)            /* service.log keeps up to this many bytes */
/* The run dir's own names (run.json, service.log, ...): ph_report.h, and
 * reserved by the store (ph_rundir.h). */

#define PH_OUT_DEFAULT   "contrib/profiling"       /* under the project directory */

typedef struct ph_run_opts {
    const ph_compose_opts *compose; /* files, project, env files, profiles; when NULL: */
    const char *compose_file;
    /* Modes: the shipped profiles (DATA/profiles), then the project's own
     * (<project dir>/profiles, when there), then this directory (may be
     * NULL); a later one replaces an earlier one's mode of the same name. */
    const char *profiles_dir;
    const char *out_dir;    /* NULL = <project dir>/PH_OUT_DEFAULT; relative: from the cwd */
    const char *project;    /* NULL = from the compose file */
    const char *data_dir;   /* profiles/ and images/ (ph_paths.h); NULL = found from the binary */
    int build;              /* start, restore: build the images of services with `build` first
                             * (compose's --build; the builder's cache keeps an unchanged one) */
    int allow_unnamed;      /* start, attach: go on where the mode would name none of a
                             * runtime's functions (a profile's `runtimes.unnamed`) */
    /* Limits on what one collection takes out of a container (stop,
     * collect, restore and a start that collects first): a field set here
     * (the flags --max-bytes, --max-entries, --min-free) wins over the
     * mode's `collect:`, which wins over the defaults of ph_tar.h.  0 =
     * not set.  Over a limit the temp dir is removed, the container kept,
     * and the error names the limit, where it was set and how to raise it. */
    ph_tar_limits collect;
    /* The orchestrator: NULL, the one this invocation reaches
     * (ph_backend_new); else BACKEND_NEW(BACKEND_UD) makes each handle the
     * run uses (its own, and one per worker thread of a parallel stop),
     * closed by the run: the unit tests' in-memory backend
     * (harness/backend/ph_backend_fake.h). */
    ph_backend *(*backend_new)(void *ud, ph_error_t *err);
    void *backend_ud;
} ph_run_opts;

typedef struct ph_run ph_run;

/* Load the compose file and the profiles; nothing is contacted yet. */
ph_run *ph_run_new(const ph_run_opts *o, ph_error_t *err);
/* The modes O gives (see profiles_dir) for DATA_DIR and PROJECT_DIR (NULL:
 * no project's own). */
int ph_run_load_profiles(const ph_run_opts *o, const char *data_dir, const char *project_dir, ph_profile_set *out,
                         ph_error_t *err);
void ph_run_free(ph_run *r);

ph_compose *ph_run_compose(ph_run *r);
ph_profile_set *ph_run_profiles(ph_run *r);
/* Where runs land: -o made absolute, else <project dir>/PH_OUT_DEFAULT. */
const char *ph_run_out_dir(ph_run *r);

/* SERVICES/N select services by name (N == 0: all of them, in file order).
 * An unknown name is a PH_EXIT_USAGE error before anything is touched. */
/* setup: each service's image, its tools volume, and the profiling image
 * a mode the tools tree cannot serve needs; PROFILING_IMAGE: that image
 * even where the tree serves (what a Swarm's nodes run). */
int ph_run_setup(ph_run *r, char **services, int n, int profiling_image, ph_error_t *err);
int ph_run_start(ph_run *r, const char *mode, char **services, int n, ph_error_t *err);
/* Stop and collect.  Fails (container kept, hint set) when a service
 * cannot be collected; status PH_EXIT_SIGNAL + N when interrupted. */
int ph_run_stop(ph_run *r, char **services, int n, ph_error_t *err);
/* Give runs up: remove the profiled containers of SERVICES without
 * collecting, after saying what is lost.  For a container whose artifacts
 * are gone or cannot be read, which `stop` would keep forever. */
int ph_run_discard(ph_run *r, char **services, int n, ph_error_t *err);
int ph_run_collect(ph_run *r, char **services, int n, ph_error_t *err);
int ph_run_restore(ph_run *r, char **services, int n, ph_error_t *err);
/* The way down after restore: stop SERVICES, whatever runs them, as
 * `docker compose stop` would (dependants first; the service's stop
 * signal and grace): a profiled container is stopped and collected as
 * `stop` does, a plain one of ours (restore's) stopped and removed,
 * docker compose's own stopped and kept. */
int ph_run_down(ph_run *r, char **services, int n, ph_error_t *err);
int ph_run_status(ph_run *r, FILE *out, ph_error_t *err);
/* The service's output: its workloads' (compose's too; a stack's tasks,
 * each read where it runs); several read at once (FOLLOW: each followed),
 * each line led by which it is ("task 1 on n1 | "), one that cannot be
 * read said and the rest shown (then -1); with none, the newest run's
 * service.log (a run of several: each workload's, from its sub-dir). */
int ph_run_logs(ph_run *r, const char *service, int follow, ph_error_t *err);
/* Remove the profiling images of the project's services that no container
 * uses, keeping the newest of each unless ALL (ph_run_prune.c). */
int ph_run_prune(ph_run *r, int all, ph_error_t *err);
/* Profile running SERVICES without restarting them: a tools container in
 * each one's PID namespace runs MODE's attach command; ph_run_stop
 * detaches (the service keeps running) and collects.  A service already
 * profiled, or not running, is refused (PH_EXIT_USAGE), as is a mode that
 * cannot attach. */
int ph_run_attach(ph_run *r, const char *mode, char **services, int n, ph_error_t *err);

/* "20261122T101500Z" for now (UTC).  BUF must hold 17 bytes. */
void ph_run_utc_stamp(char buf[17]);

#endif
