/* ph_run_int.h - what the files of the loop share (not for other floors).
 *
 *   ph_run.c          the run context, service selection, workloads
 *                     listed by label (docker compose's too)
 *   ph_run_status.c   status
 *   ph_run_logs.c     logs: several workloads read at once, each line led
 *   ph_run_config.c   a service's workload spec, as compose would make it
 *   ph_run_start.c    images, start, restore
 *   ph_run_spec.c     a profiled workload's argv, program, environment,
 *                     spec and stop budget; services by dependencies
 *   ph_run_stop.c     the stop and collect commands
 *   ph_run_collect.c  a container stopped and collected, or copied
 *   ph_run_servicelog.c  service.log: the service's output kept per run
 *   ph_run_prune.c    profiling images the project no longer needs
 *   ph_run_snapshot.c a running profiler made to dump; why a run is empty
 *   ph_run_record.c   the shim's completion record: read, checked, told
 *   ph_run_runtimes.c what a mode asks of the runtimes: environment, refresh
 *   ph_run_unnamed.c  a mode refused where it would name nothing of a runtime
 *   ph_run_replicas.c a run of several workloads: a sub-dir each, tasks.json
 *   ph_run_svcdir.c   <out>/<service>: opened, locked, leftovers removed
 *   ph_run_attach.c   attach to a running service on one Engine
 *   ph_run_attach_tools.c  the tools container an attach makes, told after
 *   ph_run_placed.c   the commands on services an orchestrator places
 *   ph_run_placed_task.c  what they and attach on them share: a task collected
 */
#ifndef PH_RUN_INT_H
#define PH_RUN_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include "ph_run.h"
#include "ph_rundir.h"
#include "ph_timing.h"

struct ph_run {
    ph_run_opts opts;
    char *data_dir;
    char *out_dir;        /* absolute; opts.out_dir points here */
    ph_compose *compose;
    ph_profile_set profiles;
    ph_backend *backend;  /* this thread's is ph_run_backend's */
};

/* Services selected by name, in the order asked (all: file order). */
typedef struct ph_svc_list {
    ph_service **v;
    size_t n;
} ph_svc_list;

/* ph_run_parallel.c: jobs on several services at once, bounded.  A job
 * is CB(r, i, ud, err) for i in [0, N), on up to MAX_JOBS threads, each
 * with an Engine of its own; WHAT names job i for the timing tree (may be
 * NULL).  ERRS[i] (N of them) gets job i's error or NULL.  Returns the
 * number of jobs that failed. */
#define PH_RUN_JOBS_MAX 8
typedef int (*ph_run_job_cb)(ph_run *r, size_t i, void *ud, ph_error_t *err);
typedef const char *(*ph_run_job_what_cb)(void *ud, size_t i);
size_t ph_run_parallel(ph_run *r, size_t n, size_t max_jobs, ph_run_job_cb cb, ph_run_job_what_cb what, void *ud,
                       ph_error_t *errs);
/* PH_RUN_JOBS_MAX, or PH_JOBS from the environment (1..64). */
size_t ph_run_jobs_max(void);
/* Where ph_run_backend keeps this thread's backend: a worker's own. */
ph_backend **ph_run_backend_slot(ph_run *r);

/* ph_run_svcdir.c: a run label that names a directory: nothing but
 * [A-Za-z0-9._-], no leading dot, under 128 bytes. */
int ph_run_safe_name(const char *s);
/* ph_run_svcdir.c: the temp entries under DIRFD (SHOWN in messages),
 * locked: each a leftover of a harness that died, removed and said. */
void ph_run_remove_stale_temps(ph_run *r, int dirfd, const char *shown);
/* ph_run_collect.c: where a workload of a run of several lands: RUNFD
 * (<out>/<service>/PARENT, opened by ph_run_open_run_dir) / DIR, run.json
 * with EXTRA's keys too (may be NULL); SNAPSHOT: a copy of what the
 * workload, running, has now (as `collect` copies: no record expected). */
typedef struct ph_run_task_dir {
    int runfd;
    const char *parent, *dir;
    json_t *extra;
    int snapshot;
} ph_run_task_dir;
/* ph_run_collect.c: workload W (ended, unless a snapshot; B reaches it),
 * started as P (may be NULL), collected as a lone container's stop or
 * collect collects it (the shim's record examined, the missing artifacts
 * and the OOM killer said, service.log, run.json, the report; an
 * interrupt section around it) into AT.  0, or -1 and *err (nothing left
 * on the host). */
int ph_run_collect_task(ph_run *r, ph_backend *b, const ph_workload *w, const ph_profile *p, const ph_run_task_dir *at,
                        ph_error_t *err);

/* <out>/index.html rewritten after a command collected something (a
 * failure is warned of, never fatal). */
void ph_run_write_index(ph_run *r);

/* ph_run_placed.c: the run's backend places the project's services
 * itself (1: ph_backend_places, a stack on a swarm; 0 a plain Engine's
 * project; -1 and *err), and the commands there. */
int ph_run_placed(ph_run *r, ph_error_t *err);
int ph_run_placed_start(ph_run *r, const ph_profile *p, ph_svc_list *sl, ph_error_t *err);
/* *ACTED: some service was profiled (stopped, collected). */
int ph_run_placed_stop(ph_run *r, ph_svc_list *sl, int *acted, ph_error_t *err);
int ph_run_placed_status(ph_run *r, FILE *out, ph_error_t *err);
/* collect: what every running task of each profiled service of SL has
 * now, one run <run>-snapshot-<stamp>/ with a sub-dir per task and
 * tasks.json, as stop lays a run out; the tasks run on.  *ACTED: some
 * service was profiled. */
int ph_run_placed_collect(ph_run *r, ph_svc_list *sl, int *acted, ph_error_t *err);
/* down: each service of SL stopped (collected, rolled back) when
 * profiled, then removed from the stack. */
int ph_run_placed_down(ph_run *r, ph_svc_list *sl, ph_error_t *err);
/* attach P to every running task of each service, a tools container
 * beside each on the task's node; `stop` detaches and collects them. */
int ph_run_placed_attach(ph_run *r, const ph_profile *p, ph_svc_list *sl, ph_error_t *err);
/* stop: the tools containers attached to SERVICE's tasks (on each node
 * the backend B reaches (ops.reach)), stopped, collected per task and removed;
 * *ACTED when there was one. */
int ph_run_placed_stop_attached(ph_run *r, ph_backend *b, const ph_service *s, int *acted, ph_error_t *err);
/* discard (`stop --discard`): each profiled service of SL given up, nothing
 * collected: taken back as deployed (ops.service_unprofile), or, not
 * restarted, the tools containers attached to its tasks removed from
 * their nodes.  *ACTED: some service was profiled. */
int ph_run_placed_discard(ph_run *r, ph_svc_list *sl, int *acted, ph_error_t *err);
int ph_run_placed_discard_attached(ph_run *r, ph_backend *b, const ph_service *s, int *acted, ph_error_t *err);
/* collect: a copy of what each tools container attached to SERVICE's
 * tasks has now, one run <run>-snapshot-<stamp>/ with a sub-dir per task
 * and tasks.json, as stop lays it out; they run on.  *ACTED when there
 * was one. */
int ph_run_placed_snapshot_attached(ph_run *r, ph_backend *b, const ph_service *s, int *acted, ph_error_t *err);
/* ph_run_placed_task.c: what both placed files share.  A stack's run
 * being stopped or copied: the
 * profile it was started with, the service's dir locked, the run dir and
 * its tasks.json.  PH_RUN_HELD_INIT, then ph_run_held_close in every case. */
typedef struct ph_run_held {
    ph_profile own, *pp; /* pp: &own, or NULL for a run that names none */
    json_t *summary;     /* tasks.json */
    int svcfd, lock, runfd;
} ph_run_held;
#define PH_RUN_HELD_INIT { .svcfd = -1, .lock = -1, .runfd = -1 }
/* The profile the labels of W (a run's) name, read into H. */
int ph_run_held_profile(ph_run_held *h, const ph_workload *w, ph_error_t *err);
/* SERVICE's run dir NAME opened in H (locked already: ph_run_lock_service
 * into svcfd and lock), what a dead harness left there swept, and its
 * tasks.json begun for MODE. */
int ph_run_held_dir(ph_run *r, ph_run_held *h, const char *service, const char *mode, const char *name,
                    ph_error_t *err);
void ph_run_held_close(ph_run_held *h);
/* ONE(r, b, service, p) for each service of SL in turn, on the run's
 * backend, each a stage named WHAT; the first failure ends it. */
typedef int (*ph_run_placed_one_cb)(ph_run *r, ph_backend *b, const ph_service *s, const ph_profile *p,
                                   ph_error_t *err);
int ph_run_placed_each(ph_run *r, const ph_profile *p, ph_svc_list *sl, const char *what, ph_run_placed_one_cb one,
                      ph_error_t *err);
/* W's files (a task, or a tools container attached to one; B reaches it;
 * converted first when its mode says so: ph_run_convert_from, unless
 * SNAPSHOT: a copy of a running task's) into RUNFD/<slot>-<node>/, RUNFD
 * being <out>/<service>/RUN, completed as a run dir, unless WHY (then it
 * is lost for that reason); said, and added to SUMMARY's "tasks".  1 when
 * collected. */
int ph_run_placed_collect_task(ph_run *r, ph_backend *b, int runfd, const ph_service *s, const char *run, int snapshot,
                              const ph_profile *pp, const ph_workload *w, const char *why, json_t *summary);
/* After a task's collection: 1 and *err ("interrupted by SIG…", its
 * status 128+N, a hint to stop S again) when an interrupt came during
 * one, so the stop goes no further (no rollback: a retry finds the run
 * as it was); else 0. */
int ph_run_placed_interrupted(const ph_service *s, ph_error_t *err);

/* ph_run_replicas.c: a run of several workloads of one service (replicas
 * on one Engine, a Swarm service's tasks): <out>/<service>/<run>/ holds a
 * run dir per workload and PH_RUN_TASKS_NAME, which lists them. */
#define PH_RUN_TASKS_NAME PH_TASKS_NAME
/* <out>/<service>/RUN under SVCFD (locked), made when missing (the
 * invoker's), a link there refused, what a dead harness left in it
 * removed: *RUNFD_OUT. */
int ph_run_open_run_dir(ph_run *r, int svcfd, const char *service, const char *run, int *runfd_out, ph_error_t *err);
/* tasks.json's object, {service, mode, run, tasks: []} (NULL on ENOMEM),
 * and one entry of it: SLOT, NODE (NULL on one Engine), the workload ID,
 * its sub-dir DIR, collected or LOST and why.  -1 on ENOMEM. */
json_t *ph_run_tasks_new(const char *service, const char *mode, const char *run);
int ph_run_tasks_add(json_t *tasks, int slot, const char *node, const char *id, const char *dir, const char *lost);
/* The sub-dir of replica SLOT on one Engine: "<slot>". */
void ph_run_replica_dir_name(int slot, char *out, size_t size);
/* After a stop of replica C (C->replicas of them) into RUNFD: tasks.json
 * written again from what is there (each replica's sub-dir, or its kept
 * container; WHY_THIS: why C's collection failed, NULL when it did not);
 * *LOST_OUT (may be NULL): how many are not collected. */
int ph_run_replicas_write(ph_run *r, int runfd, const ph_workload *c, const char *why_this, size_t *lost_out,
                          ph_error_t *err);

/* ph_run_start.c: what start needs of a service before anything of it is
 * stopped. */
typedef struct ph_run_prepared {
    char *prof_img;     /* the profiling image (as the nodes name it, on a swarm), or NULL: */
    char *tools_volume; /* the service's image with the tools volume mounted */
    ph_image_facts facts;
    const ph_profile_rewrap *rewrap; /* the program's `runtimes.wrap`, or NULL */
} ph_run_prepared;
/* A slot of ph_run_profiled_spec: the orchestrator numbers the workloads
 * (a Swarm service's tasks). */
#define PH_RUN_SLOT_ORCHESTRATED (-1)
/* ph_run_spec.c: the one spec of a profiled workload: S under P, into
 * SPEC (zeroed first), replica SLOT of S's replicas (0: the only one;
 * PH_RUN_SLOT_ORCHESTRATED), named NAME: PREP's image, the shim, the
 * mode's wrap (PREP's rewrap when the program has one), the service's
 * command (Docker's rule: an entrypoint given drops IMG_INFO's CMD),
 * IMG_INFO's user and workdir where compose sets none, compose's
 * environment, the mode's and what it asks of the runtimes, the stop
 * budget as the stop grace, a volume of its own for the artifacts (a
 * read-only service, the tools volume), the run's labels (RUN_ID, started
 * STARTED, landing in HOST_DIR), never restarted. */
int ph_run_profiled_spec(ph_run *r, const ph_service *s, const ph_profile *p, const ph_run_prepared *prep,
                         const ph_image_config *img_info, const char *img, const char *run_id, const char *started,
                         const char *host_dir, int slot, const char *name, ph_workload_spec *spec, ph_error_t *err);

/* ph_run_spec.c: the profile of MODE, or NULL and a PH_EXIT_USAGE error. */
ph_profile *ph_run_mode(ph_run *r, const char *mode, ph_error_t *err);

/* ph_run_spec.c: the init shim's argv up to `--`, pushed onto ARGV: P's
 * grace and escalation, the stop signal SIGNAL to TARGET ("wrapper",
 * "tracee"), the completion record in OUT.  -1 on ENOMEM. */
int ph_run_shim_argv(const ph_profile *p, const char *target, const char *signal, const char *out, ph_strv *argv);

/* ph_run_attach_tools.c: after collecting attach container C, say so
 * when the service exited while attached (and why the profiler's end may
 * be missing).  Nothing for other containers. */
void ph_run_attach_describe(ph_run *r, const ph_workload *c, json_t *record);
/* ph_run_attach_tools.c: a tools container attached to TARGET (a
 * workload id B knows: the container's PID namespace is joined), made and
 * started on B, labelled as a run of SERVICE under PROFILE (RUN_ID,
 * HOST_DIR) plus LABELS (may be NULL). */
typedef struct ph_run_attach_to {
    const ph_service *service;
    const ph_profile *profile;
    const char *target, *tools, *name, *run_id, *host_dir;
    const ph_kvv *labels;
} ph_run_attach_to;
int ph_run_attach_make(ph_run *r, ph_backend *b, const ph_run_attach_to *to, ph_error_t *err);
/* ph_run_attach.c: of LIST (SERVICE's containers, as listed), the one to
 * attach MODE to: the first running one (*ID_OUT, LIST's), when none is
 * profiled already; else -1 and a PH_EXIT_USAGE error that says why. */
int ph_run_attach_pick(const ph_workload_list *list, const char *service, const char *mode, const char **id_out, ph_error_t *err);

/* ph_run_spec.c: refuse mode P for S, before anything of S is stopped,
 * when the mode cannot work on its program: P preloads itself (`libc:`)
 * and the program is static (the dynamic loader, which honours
 * LD_PRELOAD, never runs; names a mode of the same report that needs no
 * preloading), or P would name none of its runtime's functions
 * (`runtimes.unnamed`).  *REWRAP: the rule of `runtimes.wrap` the program
 * is started under, or NULL.  The service's image must be on R's
 * backend. */
int ph_run_check_program(ph_run *r, const ph_service *s, const ph_profile *p, const ph_profile_rewrap **rewrap,
                         ph_error_t *err);
/* ph_run_spec.c: the program S runs in its image, when it is static (no
 * ELF interpreter): 1 and its path in PROG; 0 when not. */
int ph_run_static_program(ph_run *r, const ph_service *s, char *prog, size_t len, ph_error_t *err);
/* ph_run_spec.c: compose's environment of S as the workload gets it (a
 * variable without a value goes as `KEY`: unset, whatever the image
 * says), then P's own, expanded for OUT and RUN_ID: onto ENV.  -1 only on
 * ENOMEM. */
int ph_run_profiled_env(const ph_service *s, const ph_profile *p, const char *out, const char *run_id, ph_strv *env);
/* ph_run_runtimes.c: EXTEND (a profile's `runtimes.environment`) into
 * ENV, a container's `K=V` strings: each variable's value in ENV, else
 * in IMAGE_ENV (the image's, may be NULL), extended by ph_profile_env_extend.
 * -1 only on ENOMEM. */
int ph_run_env_extend(ph_strv *env, const ph_strv *image_env, const ph_kvv *extend, ph_error_t *err);
/* ph_run_runtimes.c: the `runtimes.refresh` steps of C's mode, before a
 * stop or a snapshot of C (a profiled or attach container).  Never fails:
 * a step that does not succeed is said as a note. */
void ph_run_refresh(ph_run *r, const ph_workload *c, const ph_profile *p);
/* The same through B, which reaches C (a Swarm task, a container on a
 * node); NULL: R's backend. */
void ph_run_refresh_on(ph_run *r, ph_backend *b, const ph_workload *c, const ph_profile *p);
/* The steps of N containers at once (the replicas of one service, CS[i]
 * started with PS[i]), each on a worker with a backend of its own, so N
 * steps that hang take one step's wait, not N; what did not succeed is
 * said once, with how many of the N. */
void ph_run_refresh_many(ph_run *r, const ph_workload *const *cs, const ph_profile *const *ps, size_t n);

/* ph_run_runtimes.c: C (a profiled container that has exited, not an
 * attached one) gets the files of its profile P's `runtimes.after_exit`
 * in its {out}, before the conversion and the collection, through a temp
 * dir in SVCFD (its service's run dir, locked).  Never fails: what could
 * not be taken is said as a note. */
void ph_run_after_exit(ph_run *r, const ph_workload *c, const ph_profile *p, int svcfd);

/* ph_run_unnamed.c: refuse mode P for SERVICE when a `runtimes.unnamed`
 * rule holds for PROGRAM (a path; its file name is what rules match) run
 * as ARGS with ENV on WHEN: -1 and a PH_EXIT_USAGE error (one line: the
 * program, why, what works; the hint: --allow-unnamed); else 0.  Pure. */
int ph_run_unnamed_refuse(const char *service, const ph_profile *p, int when, const char *program, const char *args,
                          const ph_strv *env, ph_error_t *err);
/* The same for a process that set its title (TITLE: its first argument
 * as ps shows it, from the container: escaped in the message), which
 * hides the program's name and arguments: the message names both. */
int ph_run_unnamed_refuse_titled(const char *service, const ph_profile *p, int when, const char *program,
                                 const char *title, const char *args, const ph_strv *env, ph_error_t *err);
/* ph_run_unnamed.c: which program a running process runs, from `ps -o
 * exe` (EXE: the kernel's /proc/PID/exe as the container sees it, "-"
 * when ps could not read it, " (deleted)" after it when the file was
 * replaced since; NULL when ps has no such field) and the program its
 * first argument names (FOUND: ph_image_program's `runs`, "" when none):
 * the exe's path when ps gave one, else FOUND, into OUT (LEN bytes).
 * 1 when the arguments are not the ones it was started with (a node's
 * process.title, a redis's): the first names no program, or another
 * than runs; else 0.  Pure. */
int ph_run_unnamed_program(const char *exe, const char *found, char *out, size_t len);
/* ph_run_unnamed.c: the environment in WITH_ENV, a process's line of `ps
 * -o args e` whose `ps -o args` line is ARGS: the `K=V` strings after
 * ARGS (a word with no `NAME=` belongs to the value before it), pushed
 * onto ENV; nothing when WITH_ENV does not start with ARGS.  -1 only on
 * ENOMEM.  Pure. */
int ph_run_ps_env(const char *args, const char *with_env, ph_strv *env);
/* ph_run_unnamed.c: before S is started under P (unless --allow-unnamed):
 * its program PROGRAM (as ph_image_program's `runs`), ARGV (the service's
 * command) and the environment the container will have
 * (IMAGE_ENV, then compose's, the mode's, the runtimes' extensions). */
int ph_run_unnamed_start(ph_run *r, const ph_service *s, const ph_profile *p, const char *program,
                         const ph_strv *argv, const ph_strv *image_env, ph_error_t *err);
/* ph_run_unnamed.c: before P is attached to S's running container ID
 * (unless --allow-unnamed): each of its processes, as the Engine's `ps`
 * sees it, and its program in the container's files; B reaches ID (NULL:
 * R's backend; a Swarm task's node). */
int ph_run_unnamed_attach(ph_run *r, ph_backend *b, const ph_service *s, const ph_profile *p, const char *id,
                          ph_error_t *err);

/* ph_run_convert.c: C (a profiled or attach container that has exited)
 * gets its profile P's (the started one) `convert` outputs in its {out} before collection
 * (stacks.folded, flamegraph.svg, profile.pb.gz).  A failed conversion
 * does not fail the stop: the run is collected as it is and a warning says
 * how to convert by hand.  An interrupt (SIGINT, SIGTERM, SIGHUP) ends it
 * at the next line of the converter's output, its temp dir removed, and
 * does: -1, *ERR "interrupted by SIG…" (the caller keeps the container). */
int ph_run_convert(ph_run *r, const ph_workload *c, const ph_profile *p, ph_error_t *err);
/* The same for C on another backend, SRC (a Swarm task, or a container
 * on a node): its files are read and the outputs put back through SRC,
 * the converter runs on R's own backend (the manager).  SRC NULL: R's. */
int ph_run_convert_from(ph_run *r, ph_backend *src, const ph_workload *c, const ph_profile *p, ph_error_t *err);

/* Where the tools tree's programs are, in a profiling image or the tools image. */
#define PH_TOOLS_BIN "/opt/profharness/tools/bin"
/* Word I of a command of P (its wrap, its snapshot), W (owned, expanded),
 * as it runs where the tree is at TOOLS_BIN (NULL: not there): the first
 * word, and any word that is one of P's `tools` (`env ... valgrind`), is
 * the tree's program.  W itself or a new string (W freed); NULL (W freed)
 * on ENOMEM. */
char *ph_run_tool_word(const ph_profile *p, size_t i, char *w, const char *tools_bin);

/* ph_run.c: what a command run in a workload printed (exec's output),
 * its first PH_RUN_OUTPUT_MAX - 1 bytes kept for a warning or a note,
 * always terminated.  ph_run_output_cb is exec's data callback for it. */
#define PH_RUN_OUTPUT_MAX 1024
typedef struct ph_run_output {
    char buf[PH_RUN_OUTPUT_MAX];
    size_t len;
} ph_run_output;
int ph_run_output_cb(void *ud, const char *data, size_t len);

/* ph_run.c */
double ph_run_now(void);                       /* CLOCK_MONOTONIC seconds */
void ph_run_utc_iso(char *buf, size_t len);    /* "2026-11-22T10:15:00Z" */
/* mkdir -p; only the directories it creates are handed to the invoker
 * (ph_rundir_give_at). */
int ph_run_mkdir_p(const char *path, ph_error_t *err);
int ph_run_backend(ph_run *r, ph_backend **out, ph_error_t *err); /* connect once, lazily */
int ph_run_select(ph_run *r, char **names, int n, ph_svc_list *out, ph_error_t *err);
/* The first compose file, absolute: what messages name. */
const char *ph_run_compose_path(ph_run *r);
/* PH_EXIT_USAGE errors for an unknown service or mode: did-you-mean, and
 * a hint listing what there is.  Return -1. */
int ph_run_bad_service(ph_run *r, const char *name, ph_error_t *err);
int ph_run_bad_mode(ph_run *r, const char *mode, ph_error_t *err);
/* The project's workloads (SERVICE's, when not NULL): ours, and those
 * docker compose made for it (by_compose). */
int ph_run_list(ph_run *r, const char *service, ph_workload_list *out, ph_error_t *err);
/* The run dir this invocation writes container C's run to (EXPECT, from
 * -o, never from the label): 0, or -1 and an error when C's outdir label
 * disagrees with its service and run labels (labels profharness did not
 * write: the container is not collected). */
int ph_run_outdir_check(ph_run *r, const ph_workload *c, char *expect, size_t len, ph_error_t *err);
/* The profile container C was started with: its record (PH_LABEL_PROFILE)
 * loaded into OWN (freed by the caller with ph_profile_free), or for a
 * container of an older profharness the mode as it is loaded now; *OUT
 * (NULL for an unknown mode).  -1 and *err when the record is no profile. */
int ph_run_started_profile(ph_run *r, const ph_workload *c, ph_profile *own, const ph_profile **out, ph_error_t *err);
/* Timing (ph_timing.h): a stage about container C ("stop front") with
 * what exporters want of it: service, mode, run id, container id. */
ph_stage *ph_run_container_stage(const ph_workload *c, const char *verb);
/* A stage for SERVICE under MODE (NULL: unprofiled), before a container. */
ph_stage *ph_run_service_stage(const char *verb, const char *service, const char *mode);
/* End ST with the outcome RC (*ERR's message when RC < 0); returns RC. */
int ph_run_stage_done(ph_stage *st, int rc, ph_error_t *err);

/* ph_run_config.c */
char *ph_run_project_name(ph_run *r, const char *name);
char *ph_run_service_image(ph_run *r, const ph_service *s);
/* What compose would create for S running IMAGE as NAME, with our
 * labels (mode "none"), into SPEC (zeroed first).  A service compose
 * options profharness cannot honour is refused (PH_EXIT_USAGE). */
int ph_run_base_spec(ph_run *r, const ph_service *s, const char *image, const char *name, ph_workload_spec *spec,
                     ph_error_t *err);
/* The same for a service an orchestrator runs as deployed (a stack's: its
 * own spec is kept by the update), so what one Engine could not honour
 * is not refused. */
int ph_run_orchestrated_spec(ph_run *r, const ph_service *s, const char *image, const char *name,
                             ph_workload_spec *spec, ph_error_t *err);
/* The project's networks and volumes S needs. */
int ph_run_ensure_networks(ph_run *r, const ph_service *s, ph_error_t *err);
/* Create and start SPEC (ph_backend_ops.run: its fallbacks); *ID_OUT. */
int ph_run_create_and_start(ph_run *r, const ph_workload_spec *spec, char **id_out, ph_error_t *err);

/* ph_run_spec.c */
/* Order SL so that a service comes after those it depends on (stable). */
void ph_run_order_by_deps(ph_run *r, ph_svc_list *sl);
/* The reverse: dependants first, as compose stops them. */
void ph_run_order_dependants_first(ph_run *r, ph_svc_list *sl);

/* ph_run_servicelog.c */
/* Write what container ID printed as service.log into the run dir RD
 * being completed; B reaches ID (NULL: R's backend).  Best effort (a
 * warning when it cannot), but the space it takes counts against
 * min_free: over it, -1 and the limit's error (the run is not completed,
 * the container kept). */
int ph_run_service_log(ph_run *r, ph_backend *b, const char *service, const char *id, ph_rundir *rd,
                       ph_error_t *err);
/* Copy the newest run's service.log of SERVICE to OUT (a run of several
 * workloads: each sub-dir's, in slot order), each led by a line naming
 * it; an error with a hint when there is none. */
int ph_run_print_last_log(ph_run *r, const char *service, FILE *out, ph_error_t *err);

/* ph_run_snapshot.c */
/* Make the profiler of the running profiled container C write what it
 * has (`snapshot:` of P, the profile it was started with), or say it cannot.  Best effort: 0 when it
 * did or there is nothing to do, -1 after a warning. */
int ph_run_snapshot_request(ph_run *r, const ph_workload *c, const ph_profile *p);
/* The same through B, the backend that reaches C (NULL: R's). */
int ph_run_snapshot_request_on(ph_run *r, ph_backend *b, const ph_workload *c, const ph_profile *p);
/* From the sampler's status files in RUNFD: 0 none there, 1 samples were
 * recorded, 2 none were (WHY says why, from the statuses), -1 on error. */
int ph_run_sample_verdict(int runfd, char *why, size_t len);
/* A warning with the reasons when ph_run_sample_verdict says 2. */
void ph_run_explain_samples(const char *service, int runfd);

/* ph_run_record.c */
/* The completion record DIRFD/NAME, untrusted: at most PH_RECORD_MAX
 * bytes, a regular file (no link followed), a JSON object with the shim's
 * fields (ph_run_record_check).  0 and *out, or -1 and why in PROBLEM. */
int ph_run_record_read(int dirfd, const char *name, json_t **out, char *problem, size_t len);
/* version >= 1, exit_code integer, signal a string or null, escalations a
 * list of strings, wrapper_killed (when there) a boolean. */
int ph_run_record_check(json_t *rec, char *problem, size_t len);
/* Did the profiler get to finish writing?  Records that have `complete`
 * say so; older ones only tell that ph-init had to kill the wrapper. */
int ph_run_record_complete(json_t *rec);
/* What happened, in one sentence from the record's `outcome`: "the
 * service ignored SIGTERM; escalated to SIGKILL after 3.00 s; strace.log
 * complete" (PRESENT: the artifacts found, "" for none; leftovers and an
 * incomplete profiler said too; every field escaped).  1 when it is worth
 * a warning, 0 when all went as asked, -1 and "" for a record without an
 * outcome (an older shim). */
int ph_run_record_story(json_t *rec, const char *present, char *out, size_t len);

/* ph_run_collect.c */
int ph_run_stop_one(ph_run *r, const ph_workload *listed, ph_error_t *err);
int ph_run_discard_one(ph_run *r, const ph_workload *listed, ph_error_t *err);
/* A copy of what running container C has now, as a -snapshot- run. */
int ph_run_snapshot_one(ph_run *r, const ph_workload *c, ph_error_t *err);
/* ph_run_svcdir.c: open <out>/<service> (made when missing, a link there
 * refused) and flock its .lock; remove the .incoming-* entries dead
 * harnesses left.  *svcfd_out: the service dir, through which everything
 * below is reached. */
int ph_run_lock_service(ph_run *r, const char *service, int *svcfd_out, int *lock_out, ph_error_t *err);
int ph_run_stop_services(ph_run *r, ph_svc_list *sl, int quiet_if_none, ph_error_t *err);
/* ph_run_collect.c: every profiled container of SL removed uncollected
 * (`stop --discard`), *DISCARDED counting them. */
int ph_run_discard_services(ph_run *r, ph_svc_list *sl, int *discarded, ph_error_t *err);
/* ph_run_spec.c: how long a stop waits for the profiler of a run of P
 * (NULL: unknown) to flush and exit, in seconds: its grace, each
 * escalation's, and 30 s. */
long ph_run_stop_budget_s(const ph_profile *p);
/* SL in waves, as compose stops a project: a service's wave comes after
 * that of every selected service depending on it.  Sorts SL by wave
 * (stable) and sets DEPTH[i], the wave of SL->v[i]. */
void ph_run_stop_waves(ph_svc_list *sl, size_t *depth);
/* The globs of P's artifacts that match no regular file in DIRFD: what
 * the profiler did not write (a process killed by SIGKILL, a sampler that
 * never reached its first write); the report's own (report-*) are drawn
 * later and never missing.  A JSON array, NULL on ENOMEM. */
json_t *ph_run_missing_artifacts(const ph_profile *p, int dirfd);
#endif
