/* cli_many.c - one command on several Docker Engines at once (see
 * cli_many.h).
 *
 * Why processes and not threads: the library keeps process-wide state
 * for one Engine (the --context of every ph_engine_new, the interrupt
 * section, the timing tree, the log sink), and a host that crashes or
 * hangs its process must not take the others with it.  A member runs in
 * a process group of its own, so a Ctrl-C reaches it once, from here:
 * every new signal this process catches is passed on to each member
 * still running (a second one ends their cleanups, as it would alone).
 */
#include "cli_many.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_common.h"
#include "ph_escape.h"
#include "ph_fs.h"
#include "ph_log.h"
#include "ph_report.h"
#include "ph_rundir.h"
#include "ph_signal.h"
#include "ph_strings.h"
#include "ph_util.h"

#define LINE_MAX_HELD 8192 /* a longer line is passed on in pieces */
#define MAX_RUNS_SEEN 100000

/* ---- the list of contexts ------------------------------------------------ */

static int
context_name_ok(const char *s)
{
    /* docker/cli's restrictedNamePattern, and so a safe directory name */
    if (s == NULL || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= '0' && s[0] <= '9')))
        return 0;
    if (strlen(s) > 200)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              *p == '.' || *p == '+' || *p == '-'))
            return 0;
    return 1;
}

int
ph_cli_many_add(ph_cli_many *m, const char *name, ph_error_t *err)
{
    if (!context_name_ok(name)) {
        ph_bad_input(err, "`%.100s` is no Docker context name (letters, digits, `_.+-`, a letter or digit first)",
                     name ? name : "");
        return ph_error_hint(err, "list the contexts with `docker context ls`");
    }
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->contexts[i], name) == 0)
            return 0;
    if (m->n == PH_CLI_MANY_MAX)
        return ph_bad_input(err, "more than %d Docker contexts", PH_CLI_MANY_MAX);
    m->contexts[m->n++] = name;
    return 0;
}

int
ph_cli_many_add_list(ph_cli_many *m, const char *list, ph_error_t *err)
{
    /* the names stay pointed at: kept for the process's life */
    static char buf[4096];
    char *save = NULL, *tok;

    if (strlen(list) >= sizeof buf)
        return ph_bad_input(err, "PH_CONTEXTS: longer than %zu bytes", sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", list);
    for (tok = strtok_r(buf, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save))
        if (ph_cli_many_add(m, tok, err) < 0)
            return ph_error_wrap(err, "PH_CONTEXTS");
    return 0;
}

int
ph_cli_many_fans_out(const char *cmd)
{
    static const char *const engine_cmds[] = { "setup", "start", "attach", "stop",  "restore",
                                               "down",  "collect", "status", "logs", "prune" };

    for (size_t i = 0; i < PH_ARRAY_LEN(engine_cmds); i++)
        if (strcmp(cmd, engine_cmds[i]) == 0)
            return 1;
    return 0;
}

/* The commands whose members may leave new runs to merge. */
static int
collects(const char *cmd)
{
    return strcmp(cmd, "stop") == 0 || strcmp(cmd, "collect") == 0 || strcmp(cmd, "restore") == 0 ||
           strcmp(cmd, "down") == 0;
}

/* ---- the runs a host's output dir holds --------------------------------- */

/* "<service>/<run>", sorted */
typedef ph_strv runset;

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

#define runset_free ph_strv_free

static int
is_dir_at(int dfd, const char *name)
{
    struct stat st;

    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* Every OUT/@HOST/<service>/<run> directory; a host with none has none. */
static int
runset_read(const char *host_dir, runset *s, ph_error_t *err)
{
    DIR *d = opendir(host_dir), *sd;
    struct dirent *de, *re;

    memset(s, 0, sizeof *s);
    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        int fd;

        if (de->d_name[0] == '.' || !is_dir_at(dirfd(d), de->d_name))
            continue;
        if ((fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0 ||
            (sd = fdopendir(fd)) == NULL) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        while ((re = readdir(sd)) != NULL && s->n < MAX_RUNS_SEEN) {
            char key[2 * NAME_MAX + 2];

            if (re->d_name[0] == '.' || strcmp(re->d_name, PH_LATEST_LINK) == 0 || !is_dir_at(dirfd(sd), re->d_name))
                continue;
            snprintf(key, sizeof key, "%s/%s", de->d_name, re->d_name);
            if (ph_strv_push(s, key) < 0)
                goto enomem;
        }
        closedir(sd);
    }
    closedir(d);
    if (s->n > 1)
        qsort(s->v, s->n, sizeof *s->v, cmp_str);
    return 0;
enomem:
    closedir(sd);
    closedir(d);
    runset_free(s);
    return ph_fail(err, ENOMEM, "list the runs in `%s`", host_dir);
}

static int
runset_has(const runset *s, const char *key)
{
    return s->n > 0 && bsearch(&key, s->v, s->n, sizeof *s->v, cmp_str) != NULL;
}

/* ---- the members --------------------------------------------------------- */

typedef struct stream {
    int fd;
    FILE *to;
    char held[LINE_MAX_HELD];
    size_t len;
} stream;

typedef struct member {
    const char *context;
    char out[PATH_MAX];     /* OUT/@context */
    pid_t pid;              /* 0: not started yet; -1: done */
    int status;             /* its exit status */
    stream io[2];           /* its stdout, its stderr */
    runset before;
} member;

static int prefix_width;

static void
put_line(const member *mb, stream *s, const char *p, size_t n)
{
    fprintf(s->to, "%-*s | %.*s\n", prefix_width, mb->context, (int)n, p);
}

/* Lines of what arrived on S, each prefixed; a line longer than the
 * buffer goes on in pieces. */
static void
relay(const member *mb, stream *s, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n' || s->len == sizeof s->held) {
            put_line(mb, s, s->held, s->len);
            s->len = 0;
            if (buf[i] == '\n')
                continue;
        }
        s->held[s->len++] = buf[i];
    }
    fflush(s->to);
}

static int
member_start(const ph_global_opts *g, member *mb, int argc, char **argv, int first, ph_error_t *err)
{
    int out[2] = { -1, -1 }, errp[2] = { -1, -1 };
    char **args = calloc((size_t)argc + 8, sizeof *args);
    int k = 0;
    pid_t pid;

    (void)g;
    if (args == NULL)
        return ph_fail(err, ENOMEM, "start the command on `%s`", mb->context);
    args[k++] = argv[0];
    for (int i = 1; i < first; i++)
        args[k++] = argv[i];
    args[k++] = "--" PH_CLI_MANY_MEMBER;
    args[k++] = (char *)mb->context;
    args[k++] = "-o";
    args[k++] = mb->out;
    for (int i = first; i < argc; i++)
        args[k++] = argv[i];
    args[k] = NULL;
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        ph_fail(err, errno, "start the command on `%s`: pipe", mb->context);
        goto fail;
    }
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        ph_fail(err, errno, "start the command on `%s`: fork", mb->context);
        goto fail;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

        /* a group of its own: a Ctrl-C reaches it once, from the parent */
        setpgid(0, 0);
        if (null >= 0)
            dup2(null, STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        dup2(errp[1], STDERR_FILENO);
        execv("/proc/self/exe", args);
        dprintf(STDERR_FILENO, "profharness: exec /proc/self/exe: %s\n", strerror(errno));
        _exit(PH_EXIT_FAILURE);
    }
    close(out[1]);
    close(errp[1]);
    mb->pid = pid;
    mb->io[0] = (stream){ .fd = out[0], .to = stdout };
    mb->io[1] = (stream){ .fd = errp[0], .to = stderr };
    free(args);
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    free(args);
    return -1;
}

static int
exit_status(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return PH_EXIT_SIGNAL + WTERMSIG(st);
    return PH_EXIT_FAILURE;
}

/* Pass on what the running members write until every one has ended,
 * starting the waiting ones as others end (at most JOBS at once). */
static void
members_run(const ph_global_opts *g, member *v, size_t n, size_t jobs, int argc, char **argv, int first)
{
    struct pollfd pfd[2 * PH_CLI_MANY_MAX];
    stream *of[2 * PH_CLI_MANY_MAX];
    member *mof[2 * PH_CLI_MANY_MAX];
    size_t next = 0, running = 0;
    int signals_seen = ph_interrupt_count();

    for (;;) {
        size_t np = 0;
        char buf[65536];

        while (running < jobs && next < n && !ph_interrupted()) {
            ph_error_t err = NULL;
            member *mb = &v[next++];

            if (member_start(g, mb, argc, argv, first, &err) < 0) {
                ph_error_report(&err);
                mb->pid = -1;
                mb->status = PH_EXIT_FAILURE;
                continue;
            }
            running++;
        }
        if (running == 0)
            break;
        for (size_t i = 0; i < next; i++)
            for (int s = 0; s < 2; s++)
                if (v[i].pid > 0 && v[i].io[s].fd >= 0) {
                    pfd[np] = (struct pollfd){ .fd = v[i].io[s].fd, .events = POLLIN };
                    of[np] = &v[i].io[s];
                    mof[np++] = &v[i];
                }
        if (poll(pfd, np, 250) < 0 && errno != EINTR)
            break;
        if (ph_interrupt_count() != signals_seen) {
            signals_seen = ph_interrupt_count();
            for (size_t i = 0; i < next; i++)
                if (v[i].pid > 0)
                    kill(v[i].pid, ph_interrupted());
        }
        for (size_t i = 0; i < np; i++) {
            ssize_t got;

            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            got = read(of[i]->fd, buf, sizeof buf);
            if (got > 0) {
                relay(mof[i], of[i], buf, (size_t)got);
                continue;
            }
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (of[i]->len > 0)
                put_line(mof[i], of[i], of[i]->held, of[i]->len);
            of[i]->len = 0;
            close(of[i]->fd);
            of[i]->fd = -1;
        }
        /* a member whose output has ended is waited for */
        for (size_t i = 0; i < next; i++) {
            member *mb = &v[i];
            int st = 0;

            if (mb->pid <= 0 || mb->io[0].fd >= 0 || mb->io[1].fd >= 0)
                continue;
            while (waitpid(mb->pid, &st, 0) < 0 && errno == EINTR) {
            }
            mb->status = exit_status(st);
            mb->pid = -1;
            running--;
        }
    }
    /* not started (interrupted before their turn) */
    for (size_t i = next; i < n; i++)
        v[i].status = PH_EXIT_SIGNAL + ph_interrupted();
}

/* ---- merging ------------------------------------------------------------- */

static int
merge_name_free(int svcfd, const char *name)
{
    struct stat st;

    return fstatat(svcfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
}

/* SERVICE's runs SRC[0..N) into OUT/SERVICE/<first run>-merged/. */
static int
merge_service(const char *out, const char *service, const ph_merge_src *src, size_t n,
              const ph_profile_set *profiles, ph_error_t *err)
{
    char sdir[PATH_MAX], tmp[PATH_MAX + 32], name[NAME_MAX + 1], final[PATH_MAX + NAME_MAX + 2], why[512];
    const char *first = NULL;
    ph_report_headline h;
    int svcfd = -1, rc = -1, r;

    for (size_t i = 0; i < n; i++) {
        const char *base = strrchr(src[i].run_dir, '/') + 1;
        if (first == NULL || strcmp(base, first) < 0)
            first = base;
    }
    snprintf(sdir, sizeof sdir, "%s/%s", out, service);
    if (mkdir(sdir, 0755) == 0)
        ph_rundir_give_at(AT_FDCWD, sdir);
    else if (errno != EEXIST)
        return ph_fail(err, errno, "mkdir `%s`", sdir);
    if ((svcfd = open(sdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0)
        return ph_fail(err, errno, "open `%s`", sdir);
    snprintf(name, sizeof name, "%.200s-merged", first);
    for (unsigned k = 2; !merge_name_free(svcfd, name) && k < 1000; k++)
        snprintf(name, sizeof name, "%.200s-merged.%u", first, k);
    snprintf(tmp, sizeof tmp, "%s/.merge-XXXXXX", sdir);
    ph_interrupt_begin();
    if (mkdtemp(tmp) == NULL) {
        ph_fail(err, errno, "mkdir in `%s`", sdir);
        goto out;
    }
    r = ph_report_merge_runs(tmp, name, src, n, profiles, why, sizeof why, err);
    if (r == 0 && ph_report_write_run(tmp, profiles, &h, err) < 0)
        r = -1;
    snprintf(final, sizeof final, "%s/%s", sdir, name);
    if (r == 0 && ph_interrupted())
        r = ph_interrupt_fail(err, ph_interrupted());
    if (r == 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) < 0)
        r = ph_fail(err, errno, "rename `%s` to `%s`", tmp, final);
    if (r != 0) {
        ph_fs_remove_tree_at(AT_FDCWD, tmp, NULL);
        if (r == 1)
            ph_escape_printf(stdout, "%s: not merged: %s\n", service, why);
        rc = r == 1 ? 0 : -1;
        goto out;
    }
    ph_rundir_give_tree_at(svcfd, name, NULL);
    if (ph_rundir_link_replace(svcfd, name, PH_LATEST_LINK, err) < 0)
        goto out;
    ph_escape_printf(stdout, "%s (merged:", service);
    for (size_t i = 0; i < n; i++)
        ph_escape_printf(stdout, "%s %s", i ? "," : "", src[i].host);
    ph_escape_printf(stdout, "): %s\n  report: %s/%s%s\n", h.text, final, PH_REPORT_HTML,
                     h.problems > 0 ? " (it says what is missing)" : "");
    rc = 0;
out:
    ph_interrupt_end();
    close(svcfd);
    return rc;
}

/* Each service with new runs on two hosts or more: merged. */
static int
merge_new_runs(const char *out, member *v, size_t n, const ph_profile_set *profiles)
{
    runset *after = calloc(n, sizeof *after);
    ph_merge_src *src = calloc(n, sizeof *src);
    char **paths = calloc(n, sizeof *paths);
    int failed = 0;

    if (after == NULL || src == NULL || paths == NULL) {
        ph_log(PH_LOG_ERROR, "out of memory merging the runs");
        failed = 1;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        ph_error_t err = NULL;
        if (runset_read(v[i].out, &after[i], &err) < 0) {
            ph_error_report(&err);
            failed = 1;
        }
    }
    /* the services, in the first host's order that made a new run */
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < after[i].n; j++) {
            const char *key = after[i].v[j], *slash = strchr(key, '/');
            size_t sl = (size_t)(slash - key), m = 0;
            int done = 0;
            char service[256];
            ph_error_t err = NULL;

            if (runset_has(&v[i].before, key) || sl >= sizeof service)
                continue;
            snprintf(service, sizeof service, "%.*s", (int)sl, key);
            /* merged already from an earlier host's list */
            for (size_t p = 0; p < i && !done; p++)
                for (size_t q = 0; q < after[p].n && !done; q++)
                    done = strncmp(after[p].v[q], service, sl) == 0 && after[p].v[q][sl] == '/' &&
                           !runset_has(&v[p].before, after[p].v[q]);
            /* ... and from this host's own earlier new run of it */
            for (size_t q = 0; q < j && !done; q++)
                done = strncmp(after[i].v[q], service, sl) == 0 && after[i].v[q][sl] == '/' &&
                       !runset_has(&v[i].before, after[i].v[q]);
            if (done)
                continue;
            /* every host's newest new run of SERVICE */
            for (size_t p = i; p < n; p++) {
                const char *newest = NULL;
                for (size_t q = 0; q < after[p].n; q++)
                    if (strncmp(after[p].v[q], service, sl) == 0 && after[p].v[q][sl] == '/' &&
                        !runset_has(&v[p].before, after[p].v[q]))
                        newest = after[p].v[q];
                if (newest == NULL)
                    continue;
                if (asprintf(&paths[m], "%s/%s", v[p].out, newest) < 0) {
                    failed = 1;
                    break;
                }
                src[m].host = v[p].context;
                src[m].run_dir = paths[m];
                m++;
            }
            if (m == 1)
                ph_escape_printf(stdout, "%s: a run on %s only: nothing to merge\n", service, src[0].host);
            else if (m > 1 && merge_service(out, service, src, m, profiles, &err) < 0) {
                ph_error_wrap(&err, "%s: merge the runs of %zu hosts", service, m);
                ph_error_report(&err);
                failed = 1;
            }
            for (size_t p = 0; p < m; p++) {
                free(paths[p]);
                paths[p] = NULL;
            }
        }
    }
out:
    for (size_t i = 0; after != NULL && i < n; i++)
        runset_free(&after[i]);
    free(after);
    free(src);
    free(paths);
    return failed ? -1 : 0;
}

/* ---- the command ----------------------------------------------------------- */

static size_t
jobs_of_environment(size_t n)
{
    const char *s = getenv("PH_JOBS");
    char *end = NULL;
    long j = s ? strtol(s, &end, 10) : 0;

    if (s == NULL || end == s || *end != '\0' || j < 1)
        j = 8;
    return (size_t)j < n ? (size_t)j : n;
}

int
ph_cli_many_run(const ph_global_opts *g, const ph_cli_many *m, int argc, char **argv, int first)
{
    member *v = calloc(m->n, sizeof *v);
    ph_error_t err = NULL;
    ph_run *r = NULL;
    const char *out;
    int worst = 0;

    if (v == NULL) {
        ph_fail(&err, ENOMEM, "allocate");
        return ph_error_report(&err);
    }
    /* the project, its output dir and modes: read once, here */
    if ((r = ph_cli_run_open(g, &err)) == NULL) {
        free(v);
        return ph_error_report(&err);
    }
    out = ph_run_out_dir(r);
    prefix_width = 0;
    for (size_t i = 0; i < m->n; i++) {
        int w = (int)strlen(m->contexts[i]);

        prefix_width = w > prefix_width ? w : prefix_width;
        v[i].context = m->contexts[i];
        v[i].io[0].fd = v[i].io[1].fd = -1;
        if ((size_t)snprintf(v[i].out, sizeof v[i].out, "%s/@%s", out, m->contexts[i]) >= sizeof v[i].out) {
            ph_bad_input(&err, "`%s/@%s`: path too long", out, m->contexts[i]);
            goto out;
        }
        if (runset_read(v[i].out, &v[i].before, &err) < 0)
            goto out;
    }
    ph_interrupt_begin();
    members_run(g, v, m->n, jobs_of_environment(m->n), argc, argv, first);
    ph_interrupt_end();
    for (size_t i = 0; i < m->n; i++)
        worst = v[i].status > worst ? v[i].status : worst;
    for (size_t i = 0; i < m->n; i++) {
        if (v[i].status == 0)
            continue;
        ph_log(PH_LOG_ERROR, "%s: `%s` ended with status %d; the other Engines went on", v[i].context, argv[first],
               v[i].status);
        ph_escape_printf(stderr, "  hint: retry on it alone, its runs in its own output dir: profharness --context %s "
                                 "-o %s",
                         v[i].context, v[i].out);
        for (int k = first; k < argc; k++)
            ph_escape_printf(stderr, " %s", argv[k]);
        ph_escape_printf(stderr, "\n");
    }
    if (collects(argv[first]) && !ph_interrupted()) {
        if (merge_new_runs(out, v, m->n, ph_run_profiles(r)) < 0 && worst == 0)
            worst = PH_EXIT_FAILURE;
        if (ph_report_write_index(out, &err) < 0) {
            ph_error_report(&err);
            worst = worst ? worst : PH_EXIT_FAILURE;
        } else {
            ph_escape_printf(stdout, "index: %s/%s\n", out, PH_REPORT_INDEX);
        }
    }
out:
    for (size_t i = 0; i < m->n; i++)
        runset_free(&v[i].before);
    free(v);
    ph_run_free(r);
    if (err != NULL)
        return ph_error_report(&err);
    return worst;
}
