/* ph_sampler_proc.c - the sampler across processes: which programs a
 * profiled service starts are profiled too (PH_SAMPLER_FOLLOW), the exec
 * family interposed to hand them the settings, the status file each
 * profiled process keeps, and the snapshot requests the harness drops
 * into the output directory.
 *
 * Following.  The settings (PH_SAMPLER_* and our LD_PRELOAD entry) leave
 * the environment at start, so nothing the service runs sees them unless
 * we hand them on: execve, execv, execvp, execvpe, execl, execlp, execle,
 * fexecve, posix_spawn and posix_spawnp are interposed, and when the
 * policy says so the program is started with them added back.
 * PH_SAMPLER_FOLLOW:
 *   auto (default)  hand them on from a wrapper: a shell or a program
 *                   that only starts another (sh, bash, env, su-exec,
 *                   tini... by name, see WRAPPERS) that has taken fewer
 *                   samples than a tenth of a second's worth, whether it
 *                   execs the service or forks a child that does; a
 *                   service keeps the programs it starts unprofiled, and
 *                   so does a shell script doing real work
 *   exec            hand them on to every program started, in the
 *                   process and in its children
 *   all             the same, and forked children are profiled too, each
 *                   with a writer of its own
 *   none            hand nothing on
 *   anything else   a pattern (* and ?) for the programs to profile,
 *                   matched against the path and the name of the
 *                   executable (python3*): every program started gets the
 *                   settings, those that match sample, the others only
 *                   hand them on
 * A followed program writes files of its own, named with its pid
 * (stacks-<UTC>-<pid>-<n>.folded); one that replaced its process (exec in
 * place) carries the snapshot count on, so no name is used twice.  An
 * exec in place always stops the profiling timer first (setitimer's
 * timers survive execve: a program without a SIGPROF handler yet would
 * be killed by the next tick) and writes the final snapshot.  Calls that
 * do not go through these functions (system(), popen(), a raw syscall)
 * hand nothing on.  _exit() and _Exit() are interposed too: shells leave
 * with them, skipping atexit, and the final snapshot is written as at
 * exit().
 *
 * The exec interposers may run in a vfork child (dash starts commands
 * so), which borrows the parent's memory and stack: they only read our
 * state, build the new environment on the stack and call the real
 * function, resolved at load time.  No malloc, no lock, no stdio there.
 *
 * Status: sampler-status-<pid>.json in the output directory, rewritten
 * (through a temporary name and a rename) when sampling starts, at every
 * snapshot, when a snapshot request is served, at the end, before an
 * exec and when profiling is disabled: what the harness reads to say what
 * a run got, and why it got nothing when it did.  One JSON object:
 *   pid, ppid, program (the executable), followed (started by a profiled
 *   process, not the service's first), state (running, terminated: the
 *   SIGTERM/SIGINT snapshot is written; exited; exec: replaced by another
 *   program; disabled; not-sampled: a program the pattern does not
 *   match), samples, dropped, truncated (stacks cut at the
 *   unwinder's bounds, ending in a [truncated] frame), cpu_seconds (the process's, less the
 *   writer's), children_cpu_seconds (its reaped children's), hz, timer,
 *   snapshots, last_snapshot (the newest folded file, "" if none),
 *   snapshot_request (the last request served), reason ("" when there
 *   are samples; else why not), updated (UTC).
 * A process with no samples writes no snapshot files, only its status.
 *
 * A process whose final snapshot comes from SIGTERM/SIGINT or exit first
 * asks its followed children that still run for a snapshot the same way,
 * and waits for them (at most 3 s): a shell wrapper that dies of the stop
 * signal leaves its child to be killed without one, and the child's
 * samples would be lost.
 *
 * Snapshot on demand: the harness writes a decimal number and a newline
 * to .snapshot-request in the output directory, bigger than the last one
 * (the Engine's archive PUT can drop it in from outside the container).
 * Every profiled process's writer reads that file each tick (250 ms),
 * writes a snapshot when the number is new, and then rewrites its status
 * with snapshot_request set to it: the snapshot is complete when every
 * status file whose state is running says so (the others wrote their
 * last already).  A process that starts later counts the number it finds
 * as served.  Nothing else changes for the service.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ph_sampler_int.h"

#define MAX_ENV 1024  /* environment entries rebuilt on the stack; more: not handed on */
#define MAX_ARGS 1024 /* execl*'s arguments */

enum { FOLLOW_NONE, FOLLOW_AUTO, FOLLOW_EXEC, FOLLOW_ALL, FOLLOW_GLOB };

/* Programs whose job is to start another: shells and exec wrappers. */
static const char *const WRAPPERS[] = { "sh",      "dash",    "bash",     "ash",       "ksh",     "mksh",
                                        "zsh",     "busybox", "env",      "nohup",     "nice",    "ionice",
                                        "taskset", "numactl", "chrt",     "stdbuf",    "timeout", "setsid",
                                        "setpriv", "runuser", "su",       "su-exec",   "gosu",    "tini",
                                        "dumb-init", "catatonit", "chpst", "s6-setuidgid" };

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);
typedef void (*exit_fn)(int);

static struct {
    int carrier;           /* the settings are saved: what we start may get them */
    int follow;
    char glob[256];
    int followed;          /* started by a profiled process (PH_SAMPLER_ROOT was set) */
    int wrapper;           /* this program is one of WRAPPERS */
    int root;              /* the tree's first profiled process */
    int seq0;              /* snapshots an earlier image of this pid wrote */
    char preload[1024];    /* "LD_PRELOAD=" and our entry */
    char env[8192];        /* "PH_SAMPLER_X=value\0"..., what we hand on */
    size_t env_len;
    execve_fn real_execve, real_execvpe;
    fexecve_fn real_fexecve;
    spawn_fn real_spawn, real_spawnp;
    exit_fn real_exit, real_Exit;
} P;

/* The sampler's side of an exec and of _exit (ph_sampler.c sets it at
 * load): NULL before, when nothing samples. */
static const phs_proc_hooks *volatile hooks;

void
phs_proc_hooks_set(const phs_proc_hooks *h)
{
    hooks = h;
}

/* Resolved before anything can call them, in every process the library
 * is loaded into (inert or not): a vfork child must not need dlsym. */
__attribute__((constructor(101))) static void
resolve_real(void)
{
    P.real_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
    P.real_execvpe = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
    P.real_fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
    P.real_spawn = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
    P.real_spawnp = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
    P.real_exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
    P.real_Exit = (exit_fn)dlsym(RTLD_NEXT, "_Exit");
}

/* * and ?, nothing else: no locale, no allocation. */
static int
glob_match(const char *p, const char *s)
{
    const char *star = NULL, *back = NULL;

    while (*s) {
        if (*p == '*') {
            star = p++;
            back = s;
        } else if (*p == '?' || *p == *s) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++back;
        } else {
            return 0;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

static void
program(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);

    buf[n > 0 ? n : 0] = '\0';
}

static void
save_setting(const char *name)
{
    const char *v = getenv(name);
    size_t need;

    if (v == NULL)
        return;
    need = strlen(name) + 1 + strlen(v) + 1;
    if (P.env_len + need > sizeof P.env) {
        P.carrier = 0; /* cannot hand them all on: hand none on */
        return;
    }
    snprintf(P.env + P.env_len, need, "%s=%s", name, v);
    P.env_len += need;
}

const char *
phs_proc_init(char *bad, size_t len, int *sample)
{
    static const char *const names[] = { "PH_SAMPLER_DIR",     "PH_SAMPLER_HZ",     "PH_SAMPLER_INTERVAL",
                                         "PH_SAMPLER_TITLE",   "PH_SAMPLER_MODE",   "PH_SAMPLER_UNWIND",
                                         "PH_SAMPLER_DEBUGINFO", "PH_SAMPLER_FOLLOW",
                                         "PH_SAMPLER_HEAP", "PH_SAMPLER_CLOCK" };
    const char *f = getenv("PH_SAMPLER_FOLLOW"), *root = getenv("PH_SAMPLER_ROOT"), *seq = getenv("PH_SAMPLER_SEQ");
    const char *pre = getenv("LD_PRELOAD");
    char exe[4096];

    *sample = 1;
    if (f == NULL || *f == '\0' || strcmp(f, "auto") == 0)
        P.follow = FOLLOW_AUTO;
    else if (strcmp(f, "none") == 0)
        P.follow = FOLLOW_NONE;
    else if (strcmp(f, "exec") == 0)
        P.follow = FOLLOW_EXEC;
    else if (strcmp(f, "all") == 0)
        P.follow = FOLLOW_ALL;
    else if (strlen(f) < sizeof P.glob && strchr(f, '=') == NULL)
        P.follow = FOLLOW_GLOB;
    else {
        snprintf(bad, len, "PH_SAMPLER_FOLLOW=%.40s: want auto, exec, all, none or a program name pattern", f);
        return bad;
    }
    if (P.follow == FOLLOW_GLOB)
        snprintf(P.glob, sizeof P.glob, "%s", f);
    P.followed = root != NULL && atoi(root) > 0;
    P.root = P.followed ? atoi(root) : (int)getpid();
    P.seq0 = seq != NULL && atoi(seq) > 0 ? atoi(seq) : 0;
    /* Our own LD_PRELOAD entry, as it was given, to hand on. */
    snprintf(P.preload, sizeof P.preload, "LD_PRELOAD=");
    while (pre != NULL && *pre) {
        size_t n = strcspn(pre, ": ");
        const char *base = pre;

        for (size_t i = 0; i < n; i++)
            if (pre[i] == '/')
                base = pre + i + 1;
        if (n > 0 && (size_t)(pre + n - base) >= 12 && strncmp(base, "libphsampler", 12) == 0 &&
            n + 12 < sizeof P.preload) {
            memcpy(P.preload + 11, pre, n);
            P.preload[11 + n] = '\0';
            break;
        }
        pre += n;
        pre += strspn(pre, ": ");
    }
    P.carrier = P.preload[11] != '\0' && P.real_execve != NULL;
    P.env_len = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        save_setting(names[i]);
    program(exe, sizeof exe);
    for (size_t i = 0; i < sizeof WRAPPERS / sizeof *WRAPPERS; i++)
        P.wrapper |= strcmp(strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe, WRAPPERS[i]) == 0;
    if (P.follow == FOLLOW_GLOB)
        *sample = glob_match(P.glob, exe) || glob_match(P.glob, strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe);
    return NULL;
}

int
phs_proc_followed(void)
{
    return P.followed;
}

void
phs_proc_forked(void)
{
    P.followed = 1;
    P.seq0 = 0;
}

int
phs_proc_root(void)
{
    return P.root;
}

int
phs_proc_seq0(void)
{
    return P.seq0;
}

int
phs_proc_follows_forks(void)
{
    return P.carrier && P.follow == FOLLOW_ALL;
}

const char *
phs_proc_follow_name(void)
{
    switch (P.follow) {
    case FOLLOW_NONE: return "none";
    case FOLLOW_AUTO: return "auto";
    case FOLLOW_EXEC: return "exec";
    case FOLLOW_ALL: return "all";
    default: return P.glob;
    }
}

/* Does a program this process (or its child) starts now get the settings? */
static int
hands_on(void)
{
    uint64_t taken, wrapper;

    if (!P.carrier)
        return 0;
    switch (P.follow) {
    case FOLLOW_AUTO:
        /* A wrapper, with less than a tenth of a second's samples so far
         * (a vfork child reads its parent's count; a fork child its copy). */
        taken = atomic_load_explicit(&phs.samples, memory_order_relaxed) +
                atomic_load_explicit(&phs.dropped, memory_order_relaxed);
        wrapper = phs.hz_nominal > 10 ? (uint64_t)phs.hz_nominal / 10 : 1;
        return P.wrapper && taken < wrapper;
    case FOLLOW_NONE: return 0;
    default: return 1;
    }
}

/* ---- the environment handed on (async-signal-safe) ------------------------ */

typedef struct handoff {
    char *envp[MAX_ENV + 16];
    char preload[4096 + sizeof P.preload];
    char root[40], seq[40];
} handoff;

static int
is_ours(const char *e)
{
    return strncmp(e, "PH_SAMPLER_", 11) == 0 || strncmp(e, "LD_PRELOAD=", 11) == 0;
}

/* "NAME=" and the decimal V into BUF. */
static void
put_number(char *buf, size_t len, const char *name, long v)
{
    char digits[24];
    size_t n = 0, k = strlen(name);

    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0 && n < sizeof digits);
    if (k + n + 1 > len) {
        buf[0] = '\0';
        return;
    }
    memcpy(buf, name, k);
    while (n > 0)
        buf[k++] = digits[--n];
    buf[k] = '\0';
}

/* ENVP with the settings added back (SEQ >= 0: the snapshots this image
 * wrote, for an exec in place), or ENVP itself when it does not fit. */
static char *const *
hand_on(handoff *h, char *const envp[], int seq)
{
    static char *const empty[] = { NULL };
    const char *theirs = NULL;
    size_t n = 0, k = 0, o;

    if (envp == NULL)
        envp = empty;
    while (envp[n] != NULL)
        if (++n > MAX_ENV)
            return envp;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(envp[i], "LD_PRELOAD=", 11) == 0)
            theirs = envp[i] + 11;
        if (!is_ours(envp[i]))
            h->envp[k++] = envp[i];
    }
    /* Ours first, then the others the program had (never ours twice). */
    o = strlen(P.preload);
    memcpy(h->preload, P.preload, o + 1);
    while (theirs != NULL && *theirs) {
        size_t len = strcspn(theirs, ": ");

        if (len > 0 && memmem(theirs, len, "libphsampler", 12) == NULL && o + 1 + len < sizeof h->preload) {
            h->preload[o++] = ':';
            memcpy(h->preload + o, theirs, len);
            o += len;
            h->preload[o] = '\0';
        }
        theirs += len;
        theirs += strspn(theirs, ": ");
    }
    h->envp[k++] = h->preload;
    for (size_t at = 0; at < P.env_len; at += strlen(P.env + at) + 1)
        h->envp[k++] = P.env + at;
    put_number(h->root, sizeof h->root, "PH_SAMPLER_ROOT=", P.root);
    h->envp[k++] = h->root;
    if (seq >= 0) {
        put_number(h->seq, sizeof h->seq, "PH_SAMPLER_SEQ=", seq);
        h->envp[k++] = h->seq;
    }
    h->envp[k] = NULL;
    return h->envp;
}

/* ---- the exec family -------------------------------------------------------- */

static int
no_real(void)
{
    errno = ENOSYS;
    return -1;
}

/* An exec by this process of PATH (NULL: unknown): the environment to
 * give it, after stopping our timer and writing our last snapshot when
 * the exec is in place (hooks->exec_begin); *IN_PLACE says whether it was. */
static char *const *
before_exec(handoff *h, const char *path, char *const envp[], int *in_place)
{
    int give, seq;
    char *const *env;

    /* The sampler's work (a phs_own section), over before the real exec:
     * in a vfork child the section's count is the parent's. */
    phs_own_begin();
    give = hands_on();
    seq = hooks != NULL ? hooks->exec_begin(path, give) : -1;
    *in_place = seq >= 0;
    env = give ? hand_on(h, envp, seq) : envp;
    phs_own_end();
    return env;
}

/* ENVP, or with the settings added back when they are handed on. */
static char *const *
before_spawn(handoff *h, char *const envp[])
{
    char *const *env;

    phs_own_begin();
    env = hands_on() ? hand_on(h, envp, -1) : envp;
    phs_own_end();
    return env;
}

static void
after_failed_exec(int in_place)
{
    int e = errno;

    if (in_place)
        hooks->exec_failed(); /* (in_place: hooks set; a phs_own section of its own) */
    errno = e;
}

/* PATH (or FILE, for execvpe) through REAL, the settings handed on. */
static int
do_exec(execve_fn real, const char *target, char *const argv[], char *const envp[])
{
    handoff h;
    int in_place, r;

    if (real == NULL)
        return no_real();
    envp = before_exec(&h, target, envp, &in_place);
    r = real(target, argv, envp);
    after_failed_exec(in_place);
    return r;
}

int phs_execve(const char *path, char *const argv[], char *const envp[]) PHS_LIBC(execve);
int
phs_execve(const char *path, char *const argv[], char *const envp[])
{
    return do_exec(P.real_execve, path, argv, envp);
}

int phs_execv(const char *path, char *const argv[]) PHS_LIBC(execv);
int
phs_execv(const char *path, char *const argv[])
{
    return do_exec(P.real_execve, path, argv, environ);
}

int phs_execvpe(const char *file, char *const argv[], char *const envp[]) PHS_LIBC(execvpe);
int
phs_execvpe(const char *file, char *const argv[], char *const envp[])
{
    return do_exec(P.real_execvpe, file, argv, envp);
}

int phs_execvp(const char *file, char *const argv[]) PHS_LIBC(execvp);
int
phs_execvp(const char *file, char *const argv[])
{
    return do_exec(P.real_execvpe, file, argv, environ);
}

int phs_fexecve(int fd, char *const argv[], char *const envp[]) PHS_LIBC(fexecve);
int
phs_fexecve(int fd, char *const argv[], char *const envp[])
{
    handoff h;
    int in_place, r;

    if (P.real_fexecve == NULL)
        return no_real();
    envp = before_exec(&h, NULL, envp, &in_place);
    r = P.real_fexecve(fd, argv, envp);
    after_failed_exec(in_place);
    return r;
}

/* execl*: the arguments up to the NULL (and, WITH_ENV, the environment
 * after it) to REAL. */
static int
exec_list(execve_fn real, const char *target, int with_env, const char *arg0, va_list ap)
{
    char *argv[MAX_ARGS + 1];
    char *const *envp = environ;
    size_t n = 0;

    argv[n++] = (char *)arg0;
    while (arg0 != NULL && (argv[n] = va_arg(ap, char *)) != NULL)
        if (++n == MAX_ARGS) {
            errno = E2BIG;
            return -1;
        }
    argv[n] = NULL;
    if (with_env)
        envp = va_arg(ap, char *const *);
    return do_exec(real, target, argv, envp);
}

int phs_execl(const char *path, const char *arg, ...) PHS_LIBC(execl);
int
phs_execl(const char *path, const char *arg, ...)
{
    va_list ap;
    int r;

    va_start(ap, arg);
    r = exec_list(P.real_execve, path, 0, arg, ap);
    va_end(ap);
    return r;
}

int phs_execle(const char *path, const char *arg, ...) PHS_LIBC(execle);
int
phs_execle(const char *path, const char *arg, ...)
{
    va_list ap;
    int r;

    va_start(ap, arg);
    r = exec_list(P.real_execve, path, 1, arg, ap);
    va_end(ap);
    return r;
}

int phs_execlp(const char *file, const char *arg, ...) PHS_LIBC(execlp);
int
phs_execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    int r;

    va_start(ap, arg);
    r = exec_list(P.real_execvpe, file, 0, arg, ap);
    va_end(ap);
    return r;
}

int phs_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
    const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) PHS_LIBC(posix_spawn);
int
phs_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
            char *const argv[], char *const envp[])
{
    handoff h;

    if (P.real_spawn == NULL)
        return ENOSYS;
    return P.real_spawn(pid, path, fa, attr, argv, before_spawn(&h, envp));
}

int phs_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
    const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) PHS_LIBC(posix_spawnp);
int
phs_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
             char *const argv[], char *const envp[])
{
    handoff h;

    if (P.real_spawnp == NULL)
        return ENOSYS;
    return P.real_spawnp(pid, file, fa, attr, argv, before_spawn(&h, envp));
}

/* ---- _exit ------------------------------------------------------------------ */

/* Shells (dash) leave with _exit(), which skips atexit: without this a
 * wrapper's status would say "running" for ever.  A vfork child's _exit
 * (after a failed exec) is not ours: hooks->exit_begin looks at the pid. */
static __attribute__((noreturn)) void
leave(exit_fn real, int status)
{
    if (hooks != NULL)
        hooks->exit_begin();
    if (real != NULL)
        real(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

void phs__exit(int status) PHS_LIBC(_exit);
void
phs__exit(int status)
{
    leave(P.real_exit, status);
}

void phs__Exit(int status) PHS_LIBC(_Exit);
void
phs__Exit(int status)
{
    leave(P.real_Exit, status);
}

/* ---- status and requests (writer thread, start) ------------------------------ */

/* S as a JSON string (quotes added) into the memstream F. */
static void
json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

int
phs_status_write(const char *dir, const phs_status *st)
{
    char path[4200], exe[4096], stamp[32];
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct timespec now;
    struct tm tm;
    int rc;

    if (f == NULL)
        return -1;
    program(exe, sizeof exe);
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    fprintf(f, "{\"pid\": %d, \"ppid\": %d, \"program\": ", (int)getpid(), (int)getppid());
    json_str(f, exe);
    fprintf(f, ", \"followed\": %s, \"state\": ", P.followed ? "true" : "false");
    json_str(f, st->state);
    fprintf(f,
            ", \"samples\": %llu, \"dropped\": %llu, \"truncated\": %llu, \"cpu_seconds\": %.3f, "
            "\"children_cpu_seconds\": %.3f, \"hz\": %d, \"timer\": ",
            (unsigned long long)st->samples, (unsigned long long)st->dropped, (unsigned long long)st->truncated,
            st->cpu_s, st->children_cpu_s, st->hz);
    json_str(f, st->timer ? st->timer : "");
    fprintf(f, ", \"snapshots\": %d, \"last_snapshot\": ", st->snapshots);
    json_str(f, st->last_snapshot ? st->last_snapshot : "");
    fprintf(f, ", \"snapshot_request\": %ld, \"reason\": ", st->request);
    json_str(f, st->reason ? st->reason : "");
    fprintf(f, ", \"python\": ");
    json_str(f, st->python ? st->python : "");
    if (st->heap != NULL && st->heap[0])
        fprintf(f, ", \"heap\": %s", st->heap);
    fprintf(f, ", \"java\": ");
    json_str(f, st->java ? st->java : "");
    fprintf(f, ", \"updated\": \"%s\"}\n", stamp);
    if (fclose(f) != 0) {
        free(text);
        return -1;
    }
    snprintf(path, sizeof path, "%s/sampler-status-%d.json", dir, (int)getpid());
    rc = phs_write_atomic(path, text, len);
    free(text);
    return rc;
}

long
phs_request_read(const char *dir)
{
    char path[4200], buf[32];
    struct stat sb;
    ssize_t n;
    long v = 0;
    int fd;

    snprintf(path, sizeof path, "%s/.snapshot-request", dir);
    /* Non-blocking: a FIFO planted there must not stall the writer. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    n = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? read(fd, buf, sizeof buf - 1) : -1;
    close(fd);
    /* Digits and a newline: a file still being written is not a request. */
    if (n < 2 || buf[n - 1] != '\n')
        return -1;
    for (ssize_t i = 0; i < n - 1; i++) {
        if (buf[i] < '0' || buf[i] > '9' || v > 100000000000L)
            return -1;
        v = v * 10 + (buf[i] - '0');
    }
    return v;
}

/* The followed children of this process (status files with our pid as
 * ppid) that are running, and how many of them have served request N
 * (N < 0: do not count). */
static int
running_children(const char *dir, long n, int *served)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char want[48];
    int running = 0;

    *served = 0;
    if (d == NULL)
        return 0;
    snprintf(want, sizeof want, "\"ppid\": %d,", (int)getpid());
    while ((de = readdir(d)) != NULL) {
        char path[4400], buf[4096];
        const char *r;
        ssize_t len;
        int fd;

        if (strncmp(de->d_name, "sampler-status-", 15) != 0 || strstr(de->d_name, ".tmp") != NULL)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0)
            continue;
        len = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (len <= 0)
            continue;
        buf[len] = '\0';
        if (strstr(buf, want) == NULL || strstr(buf, "\"state\": \"running\"") == NULL)
            continue;
        running++;
        r = strstr(buf, "\"snapshot_request\": ");
        if (n >= 0 && r != NULL && atol(r + 20) >= n)
            (*served)++;
    }
    closedir(d);
    return running;
}

void
phs_proc_children_snapshot(const char *dir, long last, int timeout_ms)
{
    struct timespec ts = { 0, 20 * 1000 * 1000 };
    char path[4200], text[32];
    long n = (phs_request_read(dir) > last ? phs_request_read(dir) : last) + 1;
    int served, len;

    if (running_children(dir, -1, &served) == 0)
        return;
    snprintf(path, sizeof path, "%s/.snapshot-request", dir);
    len = snprintf(text, sizeof text, "%ld\n", n);
    if (phs_write_atomic(path, text, (size_t)len) < 0)
        return;
    for (int waited = 0; waited < timeout_ms; waited += 20) {
        int running = running_children(dir, n, &served);

        if (running == served)
            return;
        phs_nap(&ts);
    }
}

/* The status of a process that does not sample (its program does not
 * match the pattern), written once by the tree's first process so that a
 * pattern that matches nothing is not silent. */
void
phs_proc_not_sampled(const char *dir)
{
    char reason[400], exe[4096];
    phs_status st = { 0 };

    if (P.followed)
        return;
    program(exe, sizeof exe);
    snprintf(reason, sizeof reason,
             "not sampled: %.200s does not match PH_SAMPLER_FOLLOW=%.100s; the programs it starts get the settings",
             exe, P.glob);
    st.state = "not-sampled";
    st.reason = reason;
    st.request = -1;
    phs_status_write(dir, &st);
}
