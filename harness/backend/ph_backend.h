/* ph_backend.h - what the loop asks of an orchestrator, and nothing more.
 *
 * The loop (harness/run/) starts a service under a profiler, signals it,
 * waits for it, copies the artifacts out and puts things back.  It does
 * that to *workloads*: one running instance of a compose service (a
 * container on a plain Engine; a task of a Swarm service; later a pod's
 * container).  A service may have several workloads (replicas, or a
 * Swarm service's tasks across nodes); each carries its slot and node.
 *
 * A backend is a table of operations (ph_backend_ops) behind a handle
 * (ph_backend).  One handle per thread, as ph_engine: the loop's worker
 * threads each open their own (ph_backend_ops.open through
 * ph_backend_open).  Every operation follows the house rules: 0 or -1 and
 * *err built at the failure site; none exits or prints errors (a warning
 * through ph_log where a fallback is taken, as the Engine backend's
 * `privileged` fallback).
 *
 * What a backend promises:
 *   - State lives on the workloads: labels (PH_LABEL_* below) set at
 *     create, which the workload cannot change, are read back by `list`
 *     and `inspect` into the typed fields of ph_workload.  Nothing else
 *     is kept on the host.
 *   - `list` gives this project's workloads of ours and, with
 *     PH_LIST_COMPOSE, those docker compose (or a stack deploy) made for
 *     it, marked by_compose, given service and mode "none".
 *   - `archive_get` streams a tar of a path in a stopped (or running)
 *     workload; `archive_put` unpacks a tar into a directory of a created
 *     or stopped one.  The loop extracts with harness/tar's limits; the
 *     backend never interprets the tar.
 *   - `wait_begin` registers a wait before the signal is sent, so "wait,
 *     then signal" from one thread can miss nothing.
 *   - `create` makes a workload from a neutral spec (ph_workload_spec):
 *     compose's service model plus what the loop overrides.  Turning that
 *     into an orchestrator's body (the Engine's create JSON, a Swarm
 *     ServiceSpec, a pod template) is the backend's business alone.
 *
 * Implementations: ph_backend_engine.c (a plain Engine: a container per
 * workload).  A Swarm backend (a service's tasks) implements the same
 * table.  A Kubernetes backend would too (docs/kubernetes.md).  The loop's
 * unit tests run it over ph_backend_fake.c, an orchestrator in memory
 * (built into the tests only), given through ph_run_opts.backend_new.
 */
#ifndef PH_BACKEND_H
#define PH_BACKEND_H

#include <stddef.h>
#include <sys/types.h>
#include "ph_compose.h"
#include "ph_error.h"
#include "ph_strings.h"

/* ---- the labels: where state lives ------------------------------------ */

#define PH_LABEL_PROJECT "io.profharness.project"
#define PH_LABEL_SERVICE "io.profharness.service"
#define PH_LABEL_MODE    "io.profharness.mode"     /* "none" when not profiled */
#define PH_LABEL_RUN     "io.profharness.run"
#define PH_LABEL_STARTED "io.profharness.started"
#define PH_LABEL_OUTDIR  "io.profharness.outdir"   /* host run dir it will land in */
#define PH_LABEL_PROFILE "io.profharness.profile"  /* the profile it was started with (ph_rundir.h) */
#define PH_LABEL_INPUTS  "io.profharness.inputs"   /* on profiling images: input hash */
#define PH_LABEL_PM      "io.profharness.pm"       /* on profiling images: its package manager */
#define PH_LABEL_LIBC    "io.profharness.libc"     /* ... and C library ("none" when none) */
#define PH_LABEL_PROBE   "io.profharness.probe"    /* on the containers that look into an image */
#define PH_LABEL_ATTACHED "io.profharness.attached" /* on attach workloads: the service's workload id */
#define PH_LABEL_CONVERT "io.profharness.convert"  /* on converters: the workload of the run */
#define PH_LABEL_TASK_SLOT "io.profharness.task.slot" /* on attach workloads beside a Swarm task: its slot */
#define PH_LABEL_TASK_NODE "io.profharness.task.node" /* ... and its node's hostname */
#define PH_LABEL_TOOLS   "io.profharness.tools"    /* on the tools volume, its mark, its keeper: the tools image's hash */
#define PH_LABEL_REPLICA "io.profharness.replica"  /* a profiled replica's number, from 1 */
#define PH_LABEL_REPLICAS "io.profharness.replicas" /* how many replicas its run started (2 or more: a sub-dir each) */

/* docker compose's own labels, which the loop reads and restore writes */
#define PH_DC_PROJECT "com.docker.compose.project"
#define PH_DC_SERVICE "com.docker.compose.service"
#define PH_DC_ONEOFF  "com.docker.compose.oneoff"
#define PH_DC_NUMBER  "com.docker.compose.container-number" /* the replica's number, from 1 */
#define PH_DC_VERSION "1.29.2" /* the compose whose labels these are (Debian's, the oracle's) */

/* The labels docker compose gives its container number SLOT (from 1; 0:
 * 1) of S in C (project, service, oneoff, number, version, working dir,
 * config files), set in OUT.  -1 on ENOMEM. */
int ph_backend_compose_labels(const ph_compose *c, const ph_service *s, int slot, ph_kvv *out);

/* ---- the record of a workload ------------------------------------------ */

typedef enum ph_workload_state {
    PH_WL_UNKNOWN = 0,
    PH_WL_CREATED,    /* made, never started */
    PH_WL_RUNNING,
    PH_WL_RESTARTING, /* counts as running */
    PH_WL_PAUSED,
    PH_WL_EXITED,
    PH_WL_DEAD,
    PH_WL_REMOVING,
} ph_workload_state;

/* What the loop knows of one workload.  Every string is owned by the
 * record (ph_workload_clear frees them); a label that is absent is NULL.
 * `id` is the handle every operation below takes. */
typedef struct ph_workload {
    char *id;          /* the backend's handle (Engine: the container id) */
    char *name;        /* its name, no leading '/' (NULL: none) */
    char *image;       /* the image it runs, as created */
    char *node;        /* the node it runs on; NULL on a single Engine */
    int slot;          /* replica number within its service, from 1; 0: unknown (a lone container) */
    int replicas;      /* the replicas its run started (PH_LABEL_REPLICAS); 0: unknown, one */

    /* the labels the loop reads, typed (PH_LABEL_*) */
    char *project;
    char *service;     /* ours, or compose's service label for compose's */
    char *mode;        /* "none" when not profiled */
    char *run;         /* run id */
    char *started;     /* the start's UTC stamp label */
    char *outdir;      /* the host run dir its labels name (never trusted: ph_run_outdir_check) */
    char *profile;     /* the profile's record as started (ph_rundir_profile_load) */
    char *attached;    /* attach workloads: the workload id of the service attached to */
    char *convert;     /* converters: the workload id of the run converted */
    int by_compose;    /* made by docker compose (or a stack), not by us: never removed */
    int compose_oneoff;/* `compose run`: not the service's (left out of lists) */

    /* state */
    ph_workload_state state;
    char state_text[24]; /* as the orchestrator says it ("running", "exited"), escaped when printed */
    long exit_code;    /* valid when state is EXITED or DEAD (from inspect; 0 from a listing) */
    int oom_killed;    /* from inspect */
    long long created; /* unix seconds; 0 unknown */
    char *started_at;  /* RFC 3339 from inspect; NULL from a listing */
    char *finished_at; /* RFC 3339 from inspect; NULL from a listing or while running */

    ph_kvv labels;     /* every label as the orchestrator has it */
} ph_workload;

typedef struct ph_workload_list {
    ph_workload *v;
    size_t n;
} ph_workload_list;

void ph_workload_clear(ph_workload *w);          /* frees the fields; NULL ok */
void ph_workload_list_free(ph_workload_list *l); /* frees each and the array; NULL ok */
/* running or restarting */
int ph_workload_running(const ph_workload *w);
/* profiled: a mode label that is not "none" */
int ph_workload_profiled(const ph_workload *w);
/* a label by key (from LABELS), NULL when absent */
const char *ph_workload_label(const ph_workload *w, const char *key);
/* Deep copy of SRC into DST (zeroed first); -1 on ENOMEM. */
int ph_workload_copy(ph_workload *dst, const ph_workload *src);
/* Append a deep copy of W to L; -1 on ENOMEM. */
int ph_workload_list_push(ph_workload_list *l, const ph_workload *w);
/* W, listed by docker compose's labels (its labels read), appended to L
 * as the loop sees it, and cleared: left out when it has no compose
 * service label, is a one-off (`compose run`) or is in L already (ours,
 * made with compose's labels by restore); given the service and mode
 * "none" and marked by_compose when it is not ours.  For backends.  -1 on
 * ENOMEM. */
int ph_workload_list_push_compose(ph_workload_list *l, ph_workload *w);
/* Fill the typed fields of W from W->labels (the PH_LABEL_* above, the
 * slot from PH_LABEL_REPLICA or compose's number when either is there,
 * and compose_oneoff from compose's; by_compose is the listing's to set).
 * For backends.  -1 on ENOMEM. */
int ph_workload_read_labels(ph_workload *w);
/* "running" → PH_WL_RUNNING ...; unknown text → PH_WL_UNKNOWN. */
ph_workload_state ph_workload_state_parse(const char *text);

/* ---- what an image says of itself ------------------------------------- */

typedef struct ph_image_config {
    char *id;          /* "sha256:..." */
    char *user;        /* NULL or "" : root */
    char *workdir;
    ph_strv env;       /* "K=V" */
    ph_strv entrypoint;
    ph_strv cmd;
    ph_kvv labels;
} ph_image_config;
void ph_image_config_clear(ph_image_config *c);

/* ---- the neutral create spec ------------------------------------------ */

/* A mount the loop asks for beyond compose's (the tools volume mounted
 * read-only into a service; an anonymous volume for the artifacts). */
typedef enum ph_mount_kind { PH_MOUNT_SPEC_BIND = 1, PH_MOUNT_SPEC_VOLUME, PH_MOUNT_SPEC_ANON } ph_mount_kind;
typedef struct ph_spec_mount {
    ph_mount_kind kind;
    char *source;      /* host path (bind), volume name (volume); NULL for ANON */
    char *target;      /* absolute path in the workload */
    int read_only;
    int no_copy;       /* VOLUME: never filled from the image's files at TARGET */
} ph_spec_mount;

/* What to create.  Zero it (PH_WORKLOAD_SPEC_INIT) and set what applies;
 * the strings are owned by the spec (ph_workload_spec_clear frees them).
 *
 * With SERVICE set, the workload is what compose would create for it in
 * COMPOSE (networks and aliases, ports, compose's mounts, resources,
 * healthcheck, restart, secrets and configs...; docs/compose.md), and each
 * field below that is set overrides compose's (a list replaces compose's
 * where its `set_` flag is on, adds to it otherwise as said).  Without
 * SERVICE it is a workload of ours (attach, converter, probe): only these
 * fields, on the orchestrator's default network unless NETWORK_NONE. */
typedef struct ph_workload_spec {
    const char *name;          /* NULL: the orchestrator picks one */
    const char *image;         /* required */
    const ph_compose *compose; /* with SERVICE */
    const ph_service *service; /* NULL: a workload of ours, not a service's */
    int compose_labels;        /* also compose's own labels (restore: `docker compose ps` sees it) */
    int slot;                  /* replica number to create (0: the only one); compose's number label */

    int set_entrypoint;        /* ENTRYPOINT replaces compose's and the image's */
    ph_strv entrypoint;
    int set_cmd;               /* CMD replaces (empty: none) */
    ph_strv cmd;
    int set_env;               /* ENV ("K=V", or "K": unset) replaces compose's environment */
    ph_strv env;
    char *user;                /* NULL: compose's, else the image's */
    char *workdir;             /* NULL: compose's, else the image's */
    ph_kvv labels;             /* added to (over) compose's labels: the PH_LABEL_* of the run */

    ph_strv cap_add;           /* added to compose's cap_add, no duplicates */
    ph_strv cap_add_if_known;  /* added where the orchestrator knows them; else left out and said */
    ph_strv security_opt;      /* added, no duplicates */
    char *stop_signal;         /* NULL: compose's */
    long stop_grace_s;         /* < 0: compose's */
    int no_restart;            /* never restarted by the orchestrator (a profiled run) */
    ph_spec_mount *mounts;     /* added to compose's */
    size_t n_mounts;
    char *open_dir;            /* made before the start, writable by anyone (mode 01777), when the
                                * workload runs as a user other than root: a directory in an ANON
                                * mount, whose root only root may write (the artifacts') */

    const char *pid_of;        /* join this workload's PID namespace (attach); NULL: own */
    int network_none;          /* no network at all (attach, converter, probe) */
    const char *net_of;        /* join this workload's network namespace instead (an attach whose
                                * profiler speaks to the service's loopback: a Node's inspector) */
    int readable_logs;         /* a log driver whose output can be read back (converter) */
} ph_workload_spec;

#define PH_WORKLOAD_SPEC_INIT { .stop_grace_s = -1 }
void ph_workload_spec_clear(ph_workload_spec *s);
/* Add a mount (copies); -1 on ENOMEM. */
int ph_workload_spec_mount(ph_workload_spec *s, ph_mount_kind kind, const char *source, const char *target,
                           int read_only);

/* ---- the operations ---------------------------------------------------- */

typedef struct ph_backend ph_backend;
typedef struct ph_backend_ops ph_backend_ops;
typedef struct ph_backend_wait ph_backend_wait;
struct ph_placement;
struct ph_engine; /* the Engine client (ph_engine.h), for floors that build images */

/* Streaming callbacks, the Engine client's contract: data as it arrives
 * (0 go on, -1 abort with the callback's error, PH_BACKEND_DATA_ENOUGH end
 * there with success); a body read in chunks (bytes, 0 at the end, -1). */
typedef int (*ph_backend_data_cb)(void *ud, const char *data, size_t len);
typedef ssize_t (*ph_backend_read_cb)(void *ud, char *buf, size_t len);
#define PH_BACKEND_DATA_ENOUGH 1

/* list flags */
#define PH_LIST_COMPOSE 1  /* docker compose's workloads of the project too */
#define PH_LIST_ALL_OF_HOST 2 /* every workload of the host, whoever made it (ports, images in use) */

/* Processes of a running workload as `ps` shows them (attach). */
typedef struct ph_proc_table {
    ph_strv titles;    /* "PID", ..., the last is the command line */
    ph_strv *rows;     /* each as many columns as titles */
    size_t n;
} ph_proc_table;
void ph_proc_table_clear(ph_proc_table *t);

struct ph_backend_ops {
    const char *name; /* "engine", "swarm" */

    /* A new handle of the same backend for another thread. */
    ph_backend *(*open)(ph_backend *b, ph_error_t *err);
    void (*close)(ph_backend *b);
    /* Where it talks to, for messages. */
    const char *(*describe)(ph_backend *b);
    /* A stable id of the orchestrator (the Engine's /info ID), for notes
     * said once per host; -1 when it has none. */
    int (*host_id)(ph_backend *b, char *buf, size_t len, ph_error_t *err);
    /* The Engine client images are built and pulled through (the Engine
     * backend's own; a Swarm manager's); NULL when there is none. */
    struct ph_engine *(*engine)(ph_backend *b);
    /* Where images are: the backend whose image_inspect finds them, whose
     * create/archive_stat/archive_get/remove look into one (a workload of
     * the image, never started) and whose engine builds them.  B itself,
     * or one B keeps and closes (a Swarm manager's Engine: a task is made
     * by its service, never one by one).  NULL and *err on a fault. */
    ph_backend *(*images)(ph_backend *b, ph_error_t *err);

    /* PROJECT's workloads (SERVICE's, when not NULL), FLAGS PH_LIST_*. */
    int (*list)(ph_backend *b, const char *project, const char *service, int flags, ph_workload_list *out,
                ph_error_t *err);
    /* One workload by id or name: *found 0 and 0 when there is none. */
    int (*inspect)(ph_backend *b, const char *id, ph_workload *out, int *found, ph_error_t *err);
    int (*image_inspect)(ph_backend *b, const char *image, ph_image_config *out, int *found, ph_error_t *err);

    /* The project's networks and volumes S needs (compose's definitions),
     * made when absent; external ones must exist. */
    int (*prepare)(ph_backend *b, const ph_compose *c, const ph_service *s, ph_error_t *err);
    /* Create (not started); *id. */
    int (*create)(ph_backend *b, const ph_workload_spec *spec, char **id, ph_error_t *err);
    int (*start)(ph_backend *b, const char *id, ph_error_t *err);
    /* Create and start with the fallbacks a service needs: capabilities
     * the host does not know left out (and said), `privileged` the host
     * refuses replaced by the explicit capabilities (and said), compose's
     * networks beyond the first connected, its secrets written in; a port
     * held by someone else named in the hint.  Nothing is left behind on
     * failure. */
    int (*run)(ph_backend *b, const ph_workload_spec *spec, char **id, ph_error_t *err);

    /* Send SIG ("SIGTERM"; NULL: the orchestrator's kill). */
    int (*signal)(ph_backend *b, const char *id, const char *sig, ph_error_t *err);
    /* Its stop signal, then a kill after GRACE_S. */
    int (*stop)(ph_backend *b, const char *id, long grace_s, ph_error_t *err);
    /* Wait for it to end, at most TIMEOUT_S (<= 0: no limit): *exit_code,
     * or *timed_out. */
    int (*wait)(ph_backend *b, const char *id, long timeout_s, long *exit_code, int *timed_out, ph_error_t *err);
    /* The race-free pair (see above); wait_end always frees W. */
    int (*wait_begin)(ph_backend *b, const char *id, ph_backend_wait **out, ph_error_t *err);
    int (*wait_end)(ph_backend_wait *w, long timeout_s, long *exit_code, int *timed_out, ph_error_t *err);
    void (*wait_free)(ph_backend_wait *w);
    /* Gone (a missing one is no error; NULL id a no-op). */
    int (*remove)(ph_backend *b, const char *id, int force, ph_error_t *err);

    /* Files: a tar of PATH to DATA_CB; PATH there or not; a tar (LEN
     * bytes, -1 unknown) unpacked into the directory PATH. */
    int (*archive_get)(ph_backend *b, const char *id, const char *path, ph_backend_data_cb cb, void *ud,
                       ph_error_t *err);
    int (*archive_stat)(ph_backend *b, const char *id, const char *path, int *found, ph_error_t *err);
    int (*archive_put)(ph_backend *b, const char *id, const char *path, ph_backend_read_cb cb, void *ud,
                       long long len, ph_error_t *err);

    /* ARGV in the running workload (ENV over its own, NULL none), output
     * to DATA_CB (NULL: dropped), TIMEOUT_S (<= 0 none): *exit_code. */
    int (*exec)(ph_backend *b, const char *id, const char *const *argv, const char *const *env, long timeout_s,
                ph_backend_data_cb cb, void *ud, long *exit_code, ph_error_t *err);
    /* Output: to FD, following (FOLLOW) from the last TAIL lines (< 0:
     * all); everything so far, each line led by its timestamp, to CB; one
     * stream (1 stdout, 2 stderr) of an ended one, to CB. */
    int (*logs)(ph_backend *b, const char *id, int follow, long tail, int fd, ph_error_t *err);
    int (*log_all)(ph_backend *b, const char *id, ph_backend_data_cb cb, void *ud, ph_error_t *err);
    int (*output)(ph_backend *b, const char *id, int stream, ph_backend_data_cb cb, void *ud, ph_error_t *err);
    /* Processes of a running workload, `ps PS_ARGS` as the host sees them. */
    int (*top)(ph_backend *b, const char *id, const char *ps_args, ph_proc_table *out, ph_error_t *err);

    /* ---- where workloads run -------------------------------------------
     * Every backend has these.  The profiling image TAG as the places
     * workloads run name it (*REF_OUT, the caller's: a single Engine's own
     * tag; a swarm's pushed to its registry).  The backend that reaches
     * workload ID where it runs (*OUT, the caller's to close before B
     * is) and its handle there (CID): what runs beside it (an
     * attached profiler) is made through *OUT.  Whether W is lost to this
     * collection (its node down or gone, the workload removed): 1 yes,
     * 0 no, -1 and *err. */
    int (*distribute)(ph_backend *b, const char *tag, char **ref_out, ph_error_t *err);
    int (*reach)(ph_backend *b, const char *id, ph_backend **out, char *cid, size_t len, ph_error_t *err);
    int (*lost)(ph_backend *b, const ph_workload *w, ph_error_t *err);

    /* ---- a service the orchestrator places (a stack's) ------------------
     * NULL on a backend whose loop makes each workload itself (a plain
     * Engine: ph_run_start creates and starts each replica, ph_run_stop
     * removes it); set, the loop puts a SERVICE of PROJECT under a spec as
     * a whole and the orchestrator makes its workloads (ph_run_placed.c).
     *   service_profile: every workload of the service replaced by one
     *     running SPEC (its compose and service not read), waited for at
     *     most TIMEOUT_S until converged; *OUT (may be NULL) where they
     *     run.  A service profiled already is refused.
     *   service_unprofile: back to the spec the user deployed, when the
     *     current one is RUN's (*ROLLED 1), waited for until RUN's
     *     workloads ended or are lost; *ROLLED 0: it was not profiled.
     *   service_run: the profiled run's labels (mode, run, outdir,
     *     profile), as the service carries them, into W; *FOUND 0: none.
     *   service_remove: the service gone, its workloads stopped with
     *     their stop signal and grace; *FOUND 0: there was none. */
    int (*service_profile)(ph_backend *b, const char *project, const char *service, const ph_workload_spec *spec,
                           long timeout_s, struct ph_placement *out, ph_error_t *err);
    int (*service_unprofile)(ph_backend *b, const char *project, const char *service, const char *run,
                             long timeout_s, int *rolled, ph_error_t *err);
    int (*service_run)(ph_backend *b, const char *project, const char *service, ph_workload *w, int *found,
                       ph_error_t *err);
    int (*service_remove)(ph_backend *b, const char *project, const char *service, int *found, ph_error_t *err);
};

/* Where the workloads of a service run, as service_profile left them. */
#define PH_PLACEMENT_NODES_MAX 64
typedef struct ph_placement {
    long tasks;                   /* workloads running the spec */
    size_t n_nodes;
    struct {
        char hostname[256];
        long tasks;
    } nodes[PH_PLACEMENT_NODES_MAX]; /* by hostname, in the order first seen */
} ph_placement;


/* The handle: implementations embed it first. */
struct ph_backend {
    const ph_backend_ops *ops;
};

/* Does B's orchestrator place a service's workloads itself (it has the
 * service_* operations)? */
static inline int ph_backend_places(const ph_backend *b) { return b->ops->service_profile != NULL; }

/* The backend this invocation uses for PROJECT, chosen once: each kind
 * (ph_backend_choose.c's table, crun's can_handle model) is asked in turn
 * whether it handles the project, on the Engine the environment names
 * (connected and checked that it answers); the plain Engine handles any.
 * PROJECT NULL: the plain Engine's. */
ph_backend *ph_backend_new(const char *project, ph_error_t *err);
/* Another handle for a worker thread. */
static inline ph_backend *ph_backend_open(ph_backend *b, ph_error_t *err) { return b->ops->open(b, err); }
static inline void ph_backend_close(ph_backend *b) { if (b != NULL) b->ops->close(b); }

#endif
