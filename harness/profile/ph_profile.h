/* ph_profile.h - profiling modes are data: one YAML file per mode.
 *
 * A profile file (profiles/<name>.yaml) says how to wrap a service's
 * command, what the container needs, how to stop it so the profiler
 * flushes, and what it produces.  No C code knows a mode's name.
 *
 *   name: strace                    # must equal the file's base name
 *   description: syscalls of the service and its threads
 *   wrap: [strace, -f, -tt, -T, -o, "{out}/strace.log", --]
 *                                   # prepended to the service's entrypoint+command;
 *                                   # {out} = the run's output dir in the container
 *                                   # ({service}, {mode}, {run_id} also expand)
 *   environment: {KEY: value}       # added to the service's environment ({out} expands)
 *   cap_add: [SYS_PTRACE]
 *   security_opt: [seccomp=unconfined]
 *   packages: [strace]              # Debian packages the profiling image needs, or per
 *                                   # package manager of the service's image:
 *                                   # {apt: [strace], apk: [strace], dnf: [strace]}
 *                                   # (dnf also serves microdnf and yum)
 *   tools: [strace]                 # an image with no package manager (FROM scratch,
 *                                   # distroless) gets these programs from the tools
 *                                   # tree instead (/opt/profharness/tools: its own
 *                                   # loader and libraries); no `tools`: the mode
 *                                   # needs the image's package manager
 *   tools_libc: [glibc]             # the tree serves the mode only in an image with this
 *                                   # C library's loader (what the tree's programs load
 *                                   # into the service runs on it: valgrind's preloads);
 *                                   # elsewhere the image's package manager is needed
 *   libc: [glibc]                   # the service must be dynamically linked against one
 *                                   # of these (glibc, musl): an LD_PRELOAD mode
 *   limits: "..."                   # one sentence: which images cannot have the mode
 *                                   # and why (`profharness modes`, and the error)
 *   cap_add_if_known: [PERFMON]     # added where the Engine knows the capability,
 *                                   # left out (and said) where it does not
 *   convert:                        # after the run, before collection: COMMAND runs
 *     command: [perf, script, -i, "{out}/perf.data"]   # in the tools image on a copy of
 *     collapse: perf                # {out}; its stdout goes through the collapser and
 *                                   # becomes stacks.folded, flamegraph.svg, profile.pb.gz
 *     symfs:                        # files perf named no frame of that carry no GNU
 *       dir: symfs                  # build-id (a static Go binary: perf's build-id
 *       command: [...]              # cache has no copy) are copied from the profiled
 *                                   # container to {out}/<dir>/<path>, kept with the run,
 *                                   # and this command runs instead, on a fresh copy
 *                                   # (refused under attach.convert: an attach never
 *                                   # stops the service's container; copy_mapped is its way)
 *   attach:                         # `profharness attach`: a tools container in the
 *     command: [strace, -p, "{pids}", -o, "{out}/strace.log"]   # running service's PID
 *                                   # namespace runs COMMAND; {pids}: its processes
 *     cap_add: [SYS_PTRACE]         # (comma-separated); the least it needs
 *     cap_add_if_known: []
 *     security_opt: []
 *     signal: SIGINT                # detaches COMMAND (the service runs on)
 *     copy_mapped: symfs            # copy the files the processes map to {out}/symfs,
 *                                   # for symbols (the service's files are not the tools')
 *     network: service              # in the service's network namespace (its loopback:
 *                                   # a Node's inspector); default none, no network
 *     ready: "ph-attach: joined"    # COMMAND says so once it has joined: attach waits
 *                                   # for it (and fails when COMMAND ends first)
 *     convert: {command: [...], collapse: perf}   # as above, for attached runs
 *     needs: {program: [java, "python3*"], why: "...", use: "..."}   # COMMAND joins
 *                                   # only these programs: a service none of whose
 *                                   # processes runs one is refused (--allow-unnamed: not)
 *   attach: {unsupported: "valgrind must start the process"}   # or why it cannot
 *   swarm: {unsupported: "..."}   # why `start` cannot run the mode in a Swarm
 *                                 # task (refused there, before any update)
 *   stop:
 *     target: tracee                # who gets the stop signal: "wrapper" (the
 *                                   # process the wrap starts) or "tracee" (that
 *                                   # process's first child: strace's program)
 *     signal: SIGTERM
 *     grace: 120s                   # wait this long for a clean exit
 *     escalate: [SIGUSR2, SIGKILL]  # then each in turn, escalate_grace apart
 *     escalate_grace: 30s
 *   artifacts:                      # globs in {out}; `latest` names a link kept
 *     - {glob: strace.log*, latest: strace.log, kind: strace}   # at <service>/<latest>
 *     - {glob: "*.heapprofile", kind: v8heap, optional: true}  # only some services
 *                                   # write it: missing is no fault, said nowhere
 *   report: strace                  # which report renders it (optional): one
 *                                   # of PH_PROFILE_REPORTS
 *   aliases: [valgrind]             # other names the mode answers to
 *   note: "..."                     # said when the mode starts: what to expect
 *   snapshot:                       # what `collect` does first, so that it copies
 *     exec: [callgrind_control, --dump]   # what the profiler has now: a command
 *                                   # run in the container ({out}, {service} ...
 *                                   # expand), or
 *     signal: SIGUSR2               # a signal to the stop target (through ph-init)
 *     wait: 60s                     # how long the command may take, or how long
 *                                   # to let the profiler write after the signal
 *   snapshot: {unsupported: "why"}  # or why the mode cannot dump while it runs
 *   runtimes:                       # what a runtime offers the mode, with no change
 *                                   # from the user (ph_profile_runtimes.c):
 *     environment:                  # appended to the service's own value of each
 *       NODE_OPTIONS: "--perf-basic-prof"   # (compose's, else its image's; the
 *                                   # user's first, a space between), never replacing it
 *     refresh:                      # before a stop and before a snapshot, in turn:
 *       - in: service               # run in the service's container (an attached
 *         exec: [sh, -c, "..."]     # run's service; else the profiled one), or
 *         wait: 20s                 # `in: profiler`: the profiler's (the tools
 *                                   # container of an attach); a failure is a note
 *     unnamed:                      # where the mode would name none of a runtime's
 *       - program: [node, nodejs]   # functions: its program (the file's name, links
 *                                   # followed; globs); start and attach refuse it
 *         on: [start, attach]       # before anything is restarted or attached, unless
 *         unless: [NODE_OPTIONS=--perf-basic-prof, --perf-basic-prof]
 *                                   # one of these holds: `VAR=WORD`, WORD is a word
 *                                   # of the variable (at start: as the container
 *                                   # will have it, `environment` above included),
 *                                   # else words of its arguments; or --allow-unnamed
 *         if: [-XX:+DisableAttachMechanism]  # and only when one of these holds (same form)
 *         why: "was started without --perf-basic-prof: its JavaScript would be unnamed"
 *         use: "`start --mode perf`"  # what works instead
 *         anyway: perf              # the mode whose --allow-unnamed goes on anyway
 *                                   # (native frames only; `none`: none does): the
 *                                   # hint names it, and this mode's --allow-unnamed
 *                                   # refuses still (default: this mode's goes on)
 *     after_exit:                   # files a runtime writes as it exits, after the
 *       - from: /tmp                # last refresh: taken from the stopped container
 *         files: "perf-[0-9]*.map"  # (a glob on the regular files directly in `from`;
 *         into: perf-maps           # at most 1 GiB of `from` is read) into {out}/<into>
 *         max_bytes: 64MiB          # (a name) before the conversion and the collection;
 *                                   # a file over max_bytes is left, said (default
 *                                   # 64MiB); not for an attached run (its service runs on)
 *     wrap:                         # a runtime the mode records otherwise: its
 *       - program: ["python3.1[2-9]"]   # program (as `unnamed`) started under this
 *         wrap: [perf, record, --call-graph, dwarf, --]  # wrap instead of the
 *         why: "..."                # profile's (the same program first); said at start
 *   collect:                        # limits on what stop/collect take out of the
 *     max_bytes: 16GiB              # container (the defaults): files' full sizes,
 *                                   # holes included (a sparse file counts whole);
 *     max_entries: 200000           # archive entries;
 *     min_free: 1GiB                # space left available on the host's disk
 *                                   # (default: 1GiB, or 5 % of the disk if less).
 *                                   # Sizes: bytes or 512MiB, 16GiB, 2TB (KiB..TiB,
 *                                   # kB..TB); `unlimited` turns a limit off;
 *                                   # the flags --max-bytes, --max-entries and
 *                                   # --min-free of stop/collect/restore win
 */
#ifndef PH_PROFILE_H
#define PH_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include "ph_strings.h"
#include "ph_error.h"
#include "ph_tar.h"
#include "ph_yaml.h"

/* The reports a profile's `report:` may name: the main section of its
 * runs' report.html (harness/report/ draws each; a mode is data, so a new
 * one with `report: flamegraph` gets that report with no code). */
#define PH_PROFILE_REPORTS { "massif", "callgrind", "strace", "flamegraph", "heap" }
#define PH_PROFILE_N_REPORTS 5

typedef struct ph_artifact_spec {
    char *glob;
    char *latest; /* NULL = no compatibility link */
    char *kind;   /* free text used by reports, may be NULL */
    int optional; /* only some services write it (node's heap profile): its absence is no fault */
} ph_artifact_spec;

/* `snapshot:` - how a running profiler is made to write what it has. */
typedef struct ph_profile_snapshot {
    ph_strv exec;                /* a command run in the container; empty: none */
    char *signal;                /* or a signal for the stop target; NULL: none */
    long long wait_ns;           /* bound on the command, or the wait after the signal */
    char *unsupported;           /* why the mode cannot dump while it runs (may be NULL) */
} ph_profile_snapshot;
/* `convert:` - a command run on the run's files after the run. */
typedef struct ph_profile_convert {
    ph_strv command;             /* empty: nothing to convert */
    char *collapse;              /* the collapser its stdout goes through ("perf") */
    char *symfs;                 /* `symfs.dir`: NULL, or a plain directory name under {out} */
    ph_strv symfs_command;       /* `symfs.command`: the second pass, reading them there */
} ph_profile_convert;

/* `attach:` - how the mode joins a running service, or why it cannot. */
typedef struct ph_profile_attach {
    ph_strv command;             /* empty: the mode cannot attach */
    char *unsupported;           /* why not, in one sentence (may be NULL) */
    ph_strv cap_add, cap_add_if_known, security_opt;
    char *signal;                /* what detaches the command; "SIGINT" by default */
    char *copy_mapped;           /* NULL, or a plain directory name under {out} */
    int network_service;         /* `network: service`: in the service's network namespace (else none) */
    /* `ready`: text a line of the command's output holds once it has
     * joined the service; attach returns when it is said and the command
     * is still up a second later, and fails when the command ends first.
     * NULL: up a second after its start is joined. */
    char *ready;
    ph_profile_convert convert;
    /* `needs: {program, why, use}`: the runtimes the command can join
     * (globs on program file names); a service none of whose processes
     * runs one is refused before its tools container is made ("its
     * processes run sh, lang-c, <why>; use <use>").  Empty: any
     * service. */
    ph_strv needs;
    char *needs_why, *needs_use;
} ph_profile_attach;

/* `runtimes.unnamed:` one runtime the mode would name nothing of. */
typedef struct ph_profile_unnamed {
    ph_strv program;             /* globs on the program file's name */
    int on;                      /* PH_UNNAMED_START | PH_UNNAMED_ATTACH */
    ph_strv unless;              /* `VAR=WORD`, or words of the arguments */
    ph_strv if_any;              /* `if`: only when one of these holds (as unless's) */
    char *why, *use;
    char *anyway;                /* `anyway`: the mode whose --allow-unnamed goes on (its
                                  * native frames), "none"; NULL: this one */
} ph_profile_unnamed;
#define PH_UNNAMED_START 1
#define PH_UNNAMED_ATTACH 2

/* `runtimes.wrap:` a runtime whose start is wrapped otherwise. */
typedef struct ph_profile_rewrap {
    ph_strv program;             /* globs on the program file's name */
    ph_strv wrap;                /* instead of the profile's `wrap` */
    char *why;
} ph_profile_rewrap;

/* `runtimes.refresh:` one step. */
typedef struct ph_profile_refresh {
    int in_service;              /* 1: the service's container; 0: the profiler's */
    ph_strv exec;
    long long wait_ns;
} ph_profile_refresh;

/* `runtimes.after_exit:` files a runtime writes as it exits. */
typedef struct ph_profile_exit_files {
    char *from;                  /* a directory of the stopped container */
    char *files;                 /* a glob on the names directly in it */
    char *into;                  /* a directory's name in {out} */
    uint64_t max_bytes;          /* each file at most */
} ph_profile_exit_files;
#define PH_EXIT_FILES_MAX_DEFAULT (64ull << 20)
#define PH_EXIT_FILES_READ_MAX (1ull << 30)  /* of `from`, taken or not */

typedef struct ph_profile {
    char *name;
    char *path;
    char *source;                /* the file's text as loaded (what a run records) */
    char *description;
    ph_strv wrap;
    ph_kvv environment;
    ph_strv cap_add, security_opt, packages;
    ph_strv packages_apk, packages_dnf; /* packages: per package manager (packages is apt's) */
    int has_tools;               /* `tools:` given: the mode runs from the tools tree too */
    ph_strv tools, libc, cap_add_if_known;
    ph_strv tools_libc;          /* `tools_libc:` the tree serves the mode only for these C libraries */
    char *limits;
    char *swarm_unsupported;     /* `swarm.unsupported`: why a Swarm task cannot run it; NULL: it can */
    ph_profile_convert convert;
    ph_profile_attach attach;
    char *stop_target;           /* "wrapper" or "tracee" */
    char *stop_signal;           /* "SIGTERM" */
    long long stop_grace_ns;
    ph_strv escalate;            /* signal names */
    long long escalate_grace_ns;
    ph_artifact_spec *artifacts;
    size_t n_artifacts;
    char *report;                /* `report:`, one of PH_PROFILE_REPORTS; NULL = none */
    ph_tar_limits collect;       /* `collect:`; a field of 0 = the default */
    ph_strv aliases;             /* `aliases:` */
    char *note;                  /* `note:`; NULL = none */
    ph_profile_snapshot snapshot;
    ph_kvv env_extend;           /* `runtimes.environment` */
    ph_profile_refresh *refresh; /* `runtimes.refresh` */
    size_t n_refresh;
    ph_profile_unnamed *unnamed; /* `runtimes.unnamed` */
    size_t n_unnamed;
    ph_profile_rewrap *rewrap;   /* `runtimes.wrap` */
    size_t n_rewrap;
    ph_profile_exit_files *after_exit; /* `runtimes.after_exit` */
    size_t n_after_exit;
} ph_profile;

typedef struct ph_profile_set {
    ph_profile *v;
    size_t n;
} ph_profile_set;

/* A profile file is at most this long. */
#define PH_PROFILE_MAX_BYTES 65536
/* Load one file; errors name file:line:col (PH_EXIT_USAGE). */
int ph_profile_load(const char *path, ph_profile *out, ph_error_t *err);
/* The same from LEN bytes of BUF, which PATH names (its base name must
 * be the profile's name). */
int ph_profile_load_buf(const char *path, const char *buf, size_t len, ph_profile *out, ph_error_t *err);
/* Load every *.yaml in DIR, sorted by name. */
int ph_profiles_load_dir(const char *dir, ph_profile_set *out, ph_error_t *err);
/* The mode named NAME, else the one with NAME among its aliases; NULL. */
ph_profile *ph_profiles_find(ph_profile_set *set, const char *name);
void ph_profile_free(ph_profile *p);
void ph_profiles_free(ph_profile_set *set);

/* ---- ph_profile_set.c: layers, names ----------------------------------- */

typedef struct ph_profile_dir {
    const char *path;
    int optional;  /* a directory that is not there, or holds no *.yaml, is skipped */
} ph_profile_dir;

/* Load DIRS in order into *OUT: a profile in a later directory replaces
 * the one of the same name from an earlier one (a project's own profiles
 * over the shipped ones); the same directory twice is read once.  Sorted
 * by name.  Errors as ph_profiles_load_dir; an empty result is one. */
int ph_profiles_load_dirs(const ph_profile_dir *dirs, size_t n, ph_profile_set *out, ph_error_t *err);

/* The names and aliases of SET as a NULL-terminated array into NAMES
 * (room for CAP entries, the NULL included); returns how many.  For
 * did-you-mean (ph_suggest.h). */
size_t ph_profiles_names(const ph_profile_set *set, const char **names, size_t cap, int with_aliases);

/* ---- ph_profile_use.c: aliases, note, snapshot ------------------------ */

/* Read KEY (a top-level key) into P when it is one of these: 1 when it
 * was (0 read, -1 and *err when malformed: r < 0), 0 when it is not. */
int ph_profile_read_use_key(ph_profile *p, const char *key, const ph_ynode *v, int *r, ph_error_t *err);
void ph_profile_free_use(ph_profile *p);
/* The packages P lists for package manager PM ("apt", "apk", "dnf",
 * "microdnf", "yum"); NULL for a manager it cannot name packages for. */
const ph_strv *ph_profile_packages(const ph_profile *p, const char *pm);

/* ---- ph_profile_runtimes.c: what runtimes are asked for ----------------- */

int ph_profile_read_runtimes(ph_profile *p, const ph_ynode *v, ph_error_t *err);
void ph_profile_free_runtimes(ph_profile *p);
/* USER (the service's own value, NULL if none) extended by OURS: "USER
 * OURS", or OURS alone; each of OURS's words that USER already has (the
 * same word) is left out, so a user who set it keeps their own place for
 * it and nothing is said twice.  malloc'd, NULL on ENOMEM. */
char *ph_profile_env_extend(const char *user, const char *ours);

/* The rule of P's `runtimes.unnamed` that refuses PROGRAM (the program
 * file's name, no directory) when it is run as ARGS (its argument words,
 * spaces between, the program's own first) with ENV ("K=V" strings, the
 * last of a name wins) on WHEN (PH_UNNAMED_START or _ATTACH): the first
 * rule whose `on` has WHEN, a glob of which matches PROGRAM, none of
 * whose `unless` holds and, when it has an `if`, one of whose `if` items
 * holds.  NULL when none.  Pure. */
const ph_profile_unnamed *ph_profile_unnamed_find(const ph_profile *p, int when, const char *program,
                                                  const char *args, const ph_strv *env);
/* Whether P has a `runtimes.unnamed` rule for WHEN at all; with
 * ANYWAY_ONLY, one that --allow-unnamed does not pass (an `anyway`). */
int ph_profile_unnamed_any(const ph_profile *p, int when, int anyway_only);
/* Whether PROGRAM (a file name) is one `attach.needs` asks for: 1 also
 * when P's attach needs none.  Pure. */
int ph_profile_attach_needs(const ph_profile *p, const char *program);
/* The first rule of P's `runtimes.wrap` a glob of which matches PROGRAM
 * (the program file's name, no directory); NULL when none.  Pure. */
const ph_profile_rewrap *ph_profile_rewrap_find(const ph_profile *p, const char *program);

/* What `runtimes.after_exit` rule X does with an entry of its `from`
 * directory: NAME as it is below `from`, its TYPE (S_IFREG...) and SIZE.
 * Taken: a regular file directly in `from` (no `/` in NAME) whose name
 * the glob `files` matches, at most max_bytes; over that it is
 * PH_EXIT_FILE_OVER (left, and said); anything else is passed over.
 * Pure. */
enum { PH_EXIT_FILE_PASS = 0, PH_EXIT_FILE_TAKE = 1, PH_EXIT_FILE_OVER = 2 };
int ph_profile_exit_file(const ph_profile_exit_files *x, const char *name, unsigned type, uint64_t size);

/* Expand {out}, {service}, {mode}, {run_id} in TEMPLATE.  malloc'd or NULL. */
char *ph_profile_expand(const char *template_, const char *out, const char *service,
                        const char *mode, const char *run_id);

#endif
