/* ph_rundir.h - the run-dir store: <out>/<service>/<run>/, what it holds,
 * the order it is completed in, and the profile a run was started with.
 *
 * A run dir holds what the container wrote (its artifacts) and what the
 * harness adds.  The harness's own names are reserved here, in one place:
 * in a run dir (ph_rundir_reserved) run.json, summary.json, service.log,
 * index.html, latest, tasks.json (which makes a run dir one of several
 * workloads' for the index), and every name that starts with `report`
 * (report.html, the host-rendered report-<stem>.svg) or `harness.`
 * (harness.folded, harness.trace.json); a file the container wrote under
 * such a name is kept as `container-<name>` (`container-<k>-<name>`, k =
 * 2, 3, ... when that is taken too), and said.  In <out>/<service>/
 * (ph_rundir_reserved_run_name) the same, and the compatibility links the
 * run's profile declares (`latest:` of its artifacts, such as strace.log):
 * no run dir is named like one (inside a run dir those are the artifacts'
 * own names, not reserved).
 *
 * A run is completed in one fixed order (ph_rundir_complete):
 *   extract into a temp dir -> move the container's files off reserved
 *   names -> service.log -> run.json -> harness timing files -> report
 *   (report.html, summary.json, report-*.svg: harness/report) -> rename
 *   into place -> links (latest, compat links) -> hand to the invoker
 * and only then may the caller remove the container.  So a run dir found
 * at its final name is complete (run.json, service.log, report); a retry
 * after a crash past the rename finds its own run (run.json names the
 * container) and only redoes the links and the handing over.  Until the
 * rename, any failure removes the temp dir: nothing partial is left, and
 * the caller keeps the container.
 *
 * Space: service.log and run.json count against `min_free` like the
 * artifacts (the same error, the same limit).
 *
 * The profile a run was started with is recorded on its container at
 * create time (ph_rundir_profile_record: the profile's own text, bounded)
 * and read back at stop (ph_rundir_profile_load): editing the profile
 * between start and stop changes nothing for that run.
 */
#ifndef PH_RUNDIR_H
#define PH_RUNDIR_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ph_error.h"
#include "ph_profile.h"
#include "ph_report.h"
#include "ph_tar.h"

/* Temp entries under <out>/<service>: made only under the service's lock
 * (any found while holding it were left by a harness that died). */
#define PH_RUNDIR_TEMP_PREFIX ".incoming-"
/* What a container's file on a reserved name is kept under. */
#define PH_RUNDIR_KEPT_PREFIX "container-"

/* ---- reserved names --------------------------------------------------- */

/* Is NAME (an entry at the top of a run dir) the harness's own? */
int ph_rundir_reserved(const char *name);
/* May NAME not be a run dir's name in <out>/<service>/: reserved, or one
 * of the compatibility links of P (the run's profile, may be NULL)? */
int ph_rundir_reserved_run_name(const char *name, const ph_profile *p);
/* The K-th name (K >= 1) a container's file NAME is kept under when NAME
 * is reserved: "container-NAME", then "container-K-NAME"; cut to fit a
 * file name.  -1 when OUT is too small. */
int ph_rundir_kept_name(const char *name, unsigned k, char *out, size_t len);

/* ---- limits ------------------------------------------------------------ */

/* The limits one collection runs under and where each was set: a flag
 * wins over the profile's `collect:`, which wins over the default. */
typedef struct ph_rundir_limits {
    ph_tar_limits lim;                /* 0: the default (ph_tar.h) */
    char from[PH_TAR_LIMIT_FREE + 1]; /* per limit: 'f'lag, 'p'rofile, 'd'efault */
    char profile_path[PATH_MAX];      /* the mode's file, "" when none */
} ph_rundir_limits;

void ph_rundir_limits_of(const ph_tar_limits *flags, const ph_profile *p, ph_rundir_limits *out);
/* Room for NEED more bytes where AVAIL are available, keeping MIN_FREE
 * (PH_TAR_NO_LIMIT: the check is off): 1 or 0. */
int ph_rundir_room(uint64_t avail, uint64_t min_free, uint64_t need);
/* The --min-free a hint suggests after LIMIT stopped a collection: less
 * than LIMIT (half of it, whole KiB when over one).  0 for 0. */
uint64_t ph_rundir_min_free_hint(uint64_t limit);
/* A larger limit for a hint: twice V (V itself when doubling overflows). */
uint64_t ph_rundir_raise_hint(uint64_t v);
/* V for a flag: "32GiB" when exact in a binary unit, else bytes. */
const char *ph_rundir_size_arg(uint64_t v, char buf[32]);
/* After limit WHICH (of value VALUE, as it stopped the collection) stopped
 * a collection: ERR's message says where it was set, its hint how to
 * change it and retry with `profharness CMD SERVICE` (the container ID is
 * kept).  Returns -1. */
int ph_rundir_limit_hint(const ph_rundir_limits *l, ph_tar_limit which, uint64_t value, const char *cmd,
                         const char *service, const char *id, ph_error_t *err);

/* ---- the invoker -------------------------------------------------------- */

/* Under sudo (root with SUDO_UID/SUDO_GID): 1 and the invoker's ids. */
int ph_rundir_invoker(uid_t *uid, gid_t *gid);
/* Hand DIRFD/NAME (a link itself, never its target) to the invoker; best
 * effort, for single entries the harness created. */
void ph_rundir_give_at(int dirfd, const char *name);
/* Hand a whole tree over, any depth, links not followed (ph_fs.h). */
int ph_rundir_give_tree_at(int dirfd, const char *name, ph_error_t *err);

/* ---- files -------------------------------------------------------------- */

/* Replace SVCFD/LINK with a symlink to TARGET, atomically: made under a
 * fresh temp name, renamed over LINK (a link there is replaced, never
 * followed; anything else there is an error and stays). */
int ph_rundir_link_replace(int svcfd, const char *target, const char *link, ph_error_t *err);
/* Write J as DIRFD/NAME: a fresh temp file (O_EXCL, O_NOFOLLOW) renamed
 * over NAME; floats with 9 significant digits.  SHOWN names it in errors. */
int ph_rundir_write_json_at(int dirfd, const char *shown, const char *name, json_t *j, ph_error_t *err);

/* The newest regular file in the directory DIRFD matching GLOB (by mtime,
 * then name) into OUT: 1, or 0 when none. */
int ph_rundir_newest_match(int dirfd, const char *glob, char *out, size_t len);

/* ---- completing a run --------------------------------------------------- */

typedef struct ph_rundir ph_rundir; /* a run dir being completed */

/* The archive's bytes, fed as they come. */
typedef int (*ph_rundir_feed_cb)(void *feed_ud, const char *data, size_t len, ph_error_t *err);

typedef struct ph_rundir_spec {
    int svcfd;                      /* <out>/<service>, locked by the caller */
    const char *out_dir, *service;  /* for messages: <out_dir>/<service> */
    const char *name;               /* the run dir's name */
    const char *container;          /* its container's id: run.json records it */
    const char *cmd;                /* "stop", "collect": retried with */
    const ph_profile *profile;      /* the started definition, or NULL */
    const ph_tar_limits *flags;     /* limits set with flags, or NULL */
    int links;                      /* repoint latest and the compat links */
} ph_rundir_spec;

typedef struct ph_rundir_steps {
    void *ud;
    /* Stream the container's files: FEED(FEED_UD, ...) with the archive. */
    int (*fetch)(void *ud, ph_rundir_feed_cb feed, void *feed_ud, ph_error_t *err);
    /* After the reserved names are freed: look at the files (may be NULL). */
    void (*examine)(void *ud, ph_rundir *rd);
    /* Write service.log (ph_rundir_create, ph_rundir_write); -1 only for
     * what must keep the container (min_free). */
    int (*service_log)(void *ud, ph_rundir *rd, ph_error_t *err);
    /* run.json as the caller knows it; the store adds files, bytes,
     * refused_entries, renamed, the timings. */
    json_t *(*meta)(void *ud, ph_rundir *rd);
} ph_rundir_steps;

typedef struct ph_rundir_done {
    char run_dir[PATH_MAX];         /* <out>/<service>/<name>, as the user opens it */
    ph_tar_stats stats;             /* the extraction's (limit: which stopped it) */
    uint64_t limit_value;           /* the value of that limit */
    ph_rundir_limits limits;        /* what it ran under */
    int resumed;                    /* a retry found this container's run complete */
    int reported;                   /* headline is set */
    ph_report_headline headline;
} ph_rundir_done;

/* Complete a run in the order above.  0: the run is complete in place
 * (link problems are warnings); the caller may remove the container.  -1
 * and *err: nothing of it is left (OUT->stats.limit says when a limit
 * stopped it); the caller keeps the container. */
int ph_rundir_complete(const ph_rundir_spec *spec, const ph_rundir_steps *steps, ph_rundir_done *out,
                       ph_error_t *err);

/* Point SVCFD/latest at NAME, a run of several workloads whose sub-dirs
 * were completed without links, as a lone run's completion points it
 * (OUT_DIR/SERVICE in messages); a problem is a warning. */
void ph_rundir_link_latest(int svcfd, const char *out_dir, const char *service, const char *name);

/* For the steps: the run dir (its fd, its path as the user will see it). */
int ph_rundir_fd(const ph_rundir *rd);
const char *ph_rundir_path(const ph_rundir *rd);
const ph_tar_stats *ph_rundir_stats(const ph_rundir *rd);
/* Create NAME in the run dir (O_EXCL, O_NOFOLLOW), the invoker's later. */
int ph_rundir_create(ph_rundir *rd, const char *name, int *fd_out, ph_error_t *err);
/* Write to FD (made by ph_rundir_create), keeping min_free: over it, the
 * min_free error, as for the artifacts. */
int ph_rundir_write(ph_rundir *rd, int fd, const char *name, const void *data, size_t len, ph_error_t *err);

/* ---- the profile a run was started with -------------------------------- */

/* At most this many bytes of a profile's text are recorded. */
#define PH_RUNDIR_PROFILE_MAX 65536
/* P's record, as a container keeps it (a label): its path and its own
 * text, as JSON, malloc'd; NULL when P has no text or it is over
 * PH_RUNDIR_PROFILE_MAX. */
char *ph_rundir_profile_record(const ph_profile *p);
/* Load the record REC (from a container's label; untrusted) of the run of
 * MODE into *OUT.  -1 and *err when it is no profile of that name. */
int ph_rundir_profile_load(const char *rec, const char *mode, ph_profile *out, ph_error_t *err);

#endif
