/* ph_backend_fake.h - an orchestrator in memory, for the loop's unit
 * tests.  Built into the unit tests only (Makefile: FAKE_OBJ), never into
 * libprofharness or the shipped binary.
 *
 * A world (ph_fake) holds what an orchestrator would answer from:
 *   - images, by name (a glob: "*-profiling:*") or id: their config
 *     (user, workdir, env, entrypoint, cmd) and their files, which every
 *     workload of the image has from its creation (so the image floor's
 *     probes, ph_image_probe and ph_image_program, read them as they read
 *     a real image's: the "program facts" are files, an ELF head each);
 *   - workloads: labels (read back as the Engine backend reads them),
 *     state, how each ends when asked to stop (ph_fake_end), its files
 *     (what archive_get streams as a tar, the top directory named as the
 *     path's last part, as the Engine does; what archive_put unpacks),
 *     its output (log_all, output), its process table (top);
 *   - exec results by workload and program;
 *   - faults: an operation failing, an archive_get that stalls or is
 *     interrupted part way;
 *   - every call made to it, in order, with its arguments (the create
 *     spec copied whole), and hooks that run before a call acts, so a
 *     test can look at the host at that moment.
 * Handles onto one world come from ph_fake_backend, the signature of
 * ph_run_opts.backend_new: the run's own, and one per worker thread of a
 * parallel stop.  One recursive lock per world around every operation.
 *
 * Deterministic: no clock and no thread of its own.  Time is what the
 * loop observes: a workload asked to stop (a signal other than SIGKILL,
 * or a stop) that exits after N polls is still seen running by the next
 * N listings or inspects; a wait is the time passing, so it returns at
 * once with the end that is coming, or timed out when none is (one that
 * ignores SIGTERM).  Nothing sleeps.
 *
 * A world made a stack (ph_fake_stack) is a Swarm-like orchestrator that
 * places services itself: its backend has the service_* operations (a
 * service put under a spec: each running task replaced by one of the
 * spec on the same node and slot; taken back: the run's tasks stopped, the
 * deployed ones made again; removed), its listings hold the deployed
 * tasks (docker compose's labels, placed with ph_fake_wl_place) while they
 * run and a run's tasks ended or not, as the Swarm backend lists them, and a
 * node can be down: every per-workload operation on a workload there
 * fails as an Engine not reached, `lost` says so.
 */
#ifndef PH_BACKEND_FAKE_H
#define PH_BACKEND_FAKE_H

#include <stddef.h>
#include "ph_backend.h"

typedef struct ph_fake ph_fake;             /* the world */
typedef struct ph_fake_wl ph_fake_wl;       /* a workload, or what those created start with */
typedef struct ph_fake_image ph_fake_image;

ph_fake *ph_fake_new(void);
void ph_fake_free(ph_fake *f);   /* NULL ok; its handles must be closed first */
/* A new handle onto the world FAKE (a ph_fake *): ph_run_opts.backend_new. */
ph_backend *ph_fake_backend(void *fake, ph_error_t *err);

/* ---- images ------------------------------------------------------------ */

/* An image for the names matching GLOB (fnmatch) and for its ID; the last
 * added that matches wins.  Its config is the test's to fill (id set). */
ph_fake_image *ph_fake_image_add(ph_fake *f, const char *glob, const char *id);
ph_image_config *ph_fake_image_config(ph_fake_image *img);
/* A file of the image (MODE: its permissions; S_IFDIR for a directory),
 * a link, or the facts the image floor probes for: a package manager PM
 * ("apt", "apk" or NULL: none; a shell and /tmp come with one), the loader of LIBC
 * ("glibc", "musl" or NULL: none), and PATH an ELF program that is
 * DYNAMIC (it asks for an interpreter) or static.  -1 on ENOMEM. */
int ph_fake_image_file(ph_fake_image *img, const char *path, const void *data, size_t len, unsigned mode);
int ph_fake_image_link(ph_fake_image *img, const char *path, const char *target);
int ph_fake_image_facts(ph_fake_image *img, const char *pm, const char *libc);
int ph_fake_image_program(ph_fake_image *img, const char *path, int dynamic);

/* ---- workloads ---------------------------------------------------------- */

typedef enum ph_fake_end_kind {
    PH_FAKE_EXITS_ON_TERM = 0, /* asked to stop, exits with CODE after POLLS (the default: 0 at once) */
    PH_FAKE_IGNORES_TERM,      /* only a kill ends it (137); a wait for it times out */
    PH_FAKE_CRASHES,           /* asked to stop, it dies of SIGSEGV (139) */
    PH_FAKE_EXITS_BY_ITSELF,   /* ends with CODE POLLS observations after its start, unasked */
    PH_FAKE_OOM,               /* the same, killed by the OOM killer: 137, oom_killed */
} ph_fake_end_kind;

typedef struct ph_fake_end {
    ph_fake_end_kind kind;
    long code;
    int polls;
} ph_fake_end;

/* A workload there already (docker compose's container, a run of an
 * earlier start): running, no labels yet. */
ph_fake_wl *ph_fake_workload(ph_fake *f, const char *name, const char *image);
/* What each workload the loop creates with a name matching GLOB starts
 * with: its end, files, output, processes (the last added that matches
 * wins; none: the defaults, no files). */
ph_fake_wl *ph_fake_on_create(ph_fake *f, const char *glob);
int ph_fake_wl_label(ph_fake_wl *w, const char *key, const char *value);
void ph_fake_wl_end(ph_fake_wl *w, ph_fake_end end);
/* Its state as listed (EXITED: with EXIT_CODE). */
void ph_fake_wl_state(ph_fake_wl *w, ph_workload_state state, long exit_code);
/* A file there from its creation, or one written as it ends (the shim's
 * record).  -1 on ENOMEM. */
int ph_fake_wl_file(ph_fake_wl *w, const char *path, const void *data, size_t len, unsigned mode);
int ph_fake_wl_file_at_end(ph_fake_wl *w, const char *path, const char *text);
/* Its output (log_all; output's stdout), and one row of its `ps` (top). */
int ph_fake_wl_log(ph_fake_wl *w, const char *text);
int ph_fake_wl_ps(ph_fake_wl *w, const char *pid, const char *args);
const char *ph_fake_wl_id(const ph_fake_wl *w);
/* The workload of ID or NAME (not removed) into OUT as inspect has it,
 * nothing observed: 1, or 0 (none; OUT zeroed). */
int ph_fake_look(ph_fake *f, const char *id_or_name, ph_workload *out);
/* The files of ID or NAME (not removed) under PATH: how many; -1 none. */
long ph_fake_files_under(ph_fake *f, const char *id_or_name, const char *path);
/* Workloads there (not removed) with label KEY=VALUE (KEY NULL: all). */
size_t ph_fake_count(ph_fake *f, const char *key, const char *value);

/* ---- a stack ------------------------------------------------------------- */

/* The world is a stack (see above). */
void ph_fake_stack(ph_fake *f);
/* Workload W (a deployed task) runs on NODE in SLOT (compose's number
 * label).  -1 on ENOMEM. */
int ph_fake_wl_place(ph_fake_wl *w, const char *node, int slot);
/* NODE is down from now on.  -1 on ENOMEM. */
int ph_fake_node_down(ph_fake *f, const char *node);

/* ---- exec ---------------------------------------------------------------- */

/* An exec of a program matching ARGV0_GLOB in a workload whose name
 * matches NAME_GLOB prints OUTPUT and exits CODE (the last added that
 * matches wins; none: 0, nothing printed).  -1 on ENOMEM. */
int ph_fake_exec_rule(ph_fake *f, const char *name_glob, const char *argv0_glob, long code, const char *output);

/* ---- faults -------------------------------------------------------------- */

typedef enum ph_fake_fault_kind {
    PH_FAKE_FAIL = 1,      /* the operation fails before it acts */
    PH_FAKE_STALL,         /* archive_get: AFTER bytes, then the Engine's stall error */
    PH_FAKE_INTERRUPT,     /* archive_get: AFTER bytes, then SIGINT raised (the user's Ctrl-C), and on */
} ph_fake_fault_kind;

/* OP ("archive_get", "remove", ...) on a workload whose name matches GLOB
 * (NULL: any) goes wrong so, TIMES times.  -1 on ENOMEM. */
int ph_fake_fault(ph_fake *f, const char *op, const char *glob, ph_fake_fault_kind kind, size_t after, int times);
/* archive_get's tar goes to its callback CHUNK bytes at a time (default 4096). */
void ph_fake_chunk(ph_fake *f, size_t chunk);

/* ---- what the loop asked ------------------------------------------------- */

typedef struct ph_fake_call {
    char op[24];               /* the ph_backend_ops member: "run", "signal", "stop", "archive_get"... */
    char *target;              /* the id or name it was given (NULL: none) */
    char *name;                /* that workload's name then, a create's the spec's (NULL: none) */
    char *arg;                 /* its argument as text: the signal, the path, ps's arguments (NULL: none) */
    long num;                  /* stop: the grace; wait, wait_end, exec: the timeout; list: the flags; else -1 */
    ph_workload_spec spec;     /* create, run: the spec as given (its own copy; service and compose are the
                                * caller's) */
    ph_strv argv, env;         /* exec */
    char *put;                 /* archive_put: the tar it received */
    size_t put_len;
} ph_fake_call;

size_t ph_fake_n_calls(ph_fake *f);
const ph_fake_call *ph_fake_call_at(ph_fake *f, size_t i);
/* The N-th call (from 0) of OP, or NULL; how many there are. */
const ph_fake_call *ph_fake_call_nth(ph_fake *f, const char *op, size_t n);
size_t ph_fake_call_count(ph_fake *f, const char *op);
/* Every call so far, "op target arg" a line each (malloc'd; for messages). */
char *ph_fake_call_log(ph_fake *f);
/* HOOK(UD, CALL) before each call of OP (NULL: every call) acts. */
typedef void (*ph_fake_hook_cb)(void *ud, const ph_fake_call *c);
void ph_fake_hook(ph_fake *f, const char *op, ph_fake_hook_cb hook, void *ud);

#endif
