/* ph_run_snapshot.c - make a running profiler write what it has, and say
 * why a run is empty.
 *
 * `collect` of a running service copied the files there were, and a
 * profiler that writes only at its end (valgrind, the sampler between its
 * intervals) had none: a run with "files": 0, or a 0-byte callgrind.out,
 * and exit 0.  So collect first does what the mode's `snapshot:` says
 * (ph_profile.h): a command run in the container through the Engine's
 * exec endpoint (callgrind_control --dump, massif's vgdb snapshot, the
 * sampler's snapshot request), bounded by `wait`, or says plainly that
 * the mode cannot dump while it runs.  A command that fails or times out
 * is a warning, and what there is is still copied: a collect never stops
 * or harms the service.
 *
 * And after a stop or a collect, the sampler's status files
 * (sampler-status-<pid>.json, ph_sampler.h) are read: a run in which no
 * process recorded a sample says so, with the sampler's reasons, instead
 * of leaving an empty stacks file to be found later.
 */
#include "ph_run_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ph_escape.h"
#include "ph_log.h"
#include "ph_util.h"

/* Whether the workload ID runs P's programs from the tools tree: 1 when
 * P has `tools` and the tree there holds the first of P's snapshot
 * command (the tools volume, or a profiling image with the tree), 0 when
 * not (the image's own, from its package manager), -1 and *err. */
static int
tree_has(ph_backend *b, const char *id, const ph_profile *p, ph_error_t *err)
{
    char path[PATH_MAX];
    int found = 0;

    if (p->tools.n == 0 || p->snapshot.exec.n == 0 || strchr(p->snapshot.exec.v[0], '/') != NULL)
        return 0;
    snprintf(path, sizeof path, "%s/%s", PH_TOOLS_BIN, p->snapshot.exec.v[0]);
    return b->ops->archive_stat(b, id, path, &found, err) < 0 ? -1 : found;
}

int
ph_run_snapshot_request(ph_run *r, const ph_workload *c, const ph_profile *p)
{
    return ph_run_snapshot_request_on(r, NULL, c, p);
}

int
ph_run_snapshot_request_on(ph_run *r, ph_backend *b, const ph_workload *c, const ph_profile *p)
{
    const char *service = c->service;
    const char *run_id = c->run, *id = c->id;
    /* The dump command is not the service: the sampler stays out of it. */
    static const char *const no_preload[] = { "LD_PRELOAD=", NULL };
    char out[PATH_MAX], esc[PH_RUN_OUTPUT_MAX * 4];
    const char **argv = NULL;
    ph_run_output o = { .len = 0 };
    ph_error_t err = NULL;
    long code = -1, wait_s;
    int rc = -1, tree = 0;

    if (p == NULL || service == NULL || id == NULL)
        return 0;
    ph_run_refresh_on(r, b, c, p); /* the runtimes' perf maps current and in the run */
    if (p->snapshot.unsupported != NULL) {
        ph_info("%s: %s cannot dump while it runs (%s): collect copies what it has written so far", service,
                p->name, p->snapshot.unsupported);
        return 0;
    }
    if (p->snapshot.exec.n == 0)
        return 0;
    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, service);
    if ((b == NULL && ph_run_backend(r, &b, &err) < 0) || (tree = tree_has(b, id, p, &err)) < 0) {
        ph_warn("%s: could not make %s dump: %s; collecting what there is", service, p->name, err ? err->msg : "?");
        goto out;
    }
    argv = calloc(p->snapshot.exec.n + 1, sizeof *argv);
    for (size_t i = 0; argv != NULL && i < p->snapshot.exec.n; i++) {
        char *w = ph_profile_expand(p->snapshot.exec.v[i], out, service, p->name, run_id ? run_id : "");

        /* the dump command from the tree when the run's program is */
        if ((argv[i] = ph_run_tool_word(p, i, w, tree ? PH_TOOLS_BIN : NULL)) == NULL)
            goto out;
    }
    if (argv == NULL)
        goto out;
    wait_s = p->snapshot.wait_ns > 0 ? (long)((p->snapshot.wait_ns + 999999999LL) / 1000000000LL) : 60;
    if (b->ops->exec(b, id, argv, no_preload, wait_s, ph_run_output_cb, &o, &code, &err) < 0) {
        ph_warn("%s: could not make %s dump (`%s`): %s; collecting what there is", service, p->name, argv[0],
                err ? err->msg : "?");
        goto out;
    }
    if (code != 0) {
        while (o.len > 0 && (o.buf[o.len - 1] == '\n' || o.buf[o.len - 1] == '\r'))
            o.buf[--o.len] = '\0'; /* the line's end, not part of what it said */
        ph_warn("%s: `%s` (%s's dump) exited with %ld: %s; collecting what there is", service, argv[0], p->name,
                code, o.len ? ph_escape(esc, sizeof esc, o.buf) : "no output");
        goto out;
    }
    ph_debug("%s: %s dumped (`%s`)", service, p->name, argv[0]);
    rc = 0;
out:
    for (size_t i = 0; argv != NULL && i < p->snapshot.exec.n; i++)
        free((char *)argv[i]);
    free(argv);
    ph_error_free(&err);
    return rc;
}

/* ---- a run with no samples ---------------------------------------------- */

/* A sampler-status-<pid>.json, written in the container: bounded and
 * never a link, FIFO or device (ph_read_file_at); NULL when it is none of
 * the sampler's. */
static json_t *
read_status(int dirfd, const char *name)
{
    ph_cleanup_free char *buf = NULL;
    size_t len = 0;
    ph_error_t err = NULL;

    if (ph_read_file_at(dirfd, name, PH_SMALL_JSON_MAX, &buf, &len, &err) < 0) {
        ph_error_free(&err);
        return NULL;
    }
    return json_loadb(buf, len, 0, NULL);
}

int
ph_run_sample_verdict(int runfd, char *why, size_t len)
{
    DIR *d;
    struct dirent *de;
    long long samples = 0;
    int statuses = 0, dupfd = dup(runfd);
    size_t o = 0;

    why[0] = '\0';
    if (dupfd < 0 || (d = fdopendir(dupfd)) == NULL) {
        if (dupfd >= 0)
            close(dupfd);
        return -1;
    }
    rewinddir(d);
    while ((de = readdir(d)) != NULL) {
        json_t *st;
        const char *reason, *prog;
        char e_reason[256], e_prog[256];

        if (fnmatch("sampler-status-*.json", de->d_name, 0) != 0)
            continue;
        st = read_status(runfd, de->d_name);
        if (!json_is_object(st)) {
            json_decref(st);
            continue;
        }
        statuses++;
        samples += json_integer_value(json_object_get(st, "samples"));
        reason = json_string_value(json_object_get(st, "reason"));
        prog = json_string_value(json_object_get(st, "program"));
        if (reason != NULL && reason[0] != '\0' && o < len)
            o += (size_t)snprintf(why + o, len - o, "%s%s (pid %lld): %s", o ? "; " : "",
                                  ph_escape(e_prog, sizeof e_prog, prog ? prog : "?"),
                                  (long long)json_integer_value(json_object_get(st, "pid")),
                                  ph_escape(e_reason, sizeof e_reason, reason));
        json_decref(st);
    }
    closedir(d);
    if (statuses == 0)
        return 0;
    if (samples > 0)
        return 1;
    if (why[0] == '\0')
        snprintf(why, len, "no process says why");
    return 2;
}

void
ph_run_explain_samples(const char *service, int runfd)
{
    char why[1024];

    if (ph_run_sample_verdict(runfd, why, sizeof why) == 2)
        ph_warn("%s: the sampler recorded no samples, so there is no profile to draw: %s (the sampler-status-*.json "
                "files in the run dir say more)", service, why);
}
