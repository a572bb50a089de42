/* ph_run_runtimes.c - what a mode asks of the runtimes in a service, from
 * its profile's `runtimes:` (ph_profile_runtimes.c), done by the loop:
 *
 *   start    each `runtimes.environment` variable extended in the
 *            container's environment: the service's own value (compose's
 *            environment, else its image's ENV) first, then the mode's
 *            words, so `node --perf-basic-prof` and HotSpot's perf map
 *            flags are on with no change from the user, and what the
 *            user set stays as set.
 *   refresh  before a stop and before a snapshot: each step's command
 *            run in the service's container or the profiler's (the
 *            backend's exec, bounded by its wait, the sampler kept out of it).  A
 *            step that fails is a note and the stop goes on; one whose
 *            program the image does not have (exit 126/127: no shell in
 *            a distroless image) is skipped without a word: a runtime
 *            that is not there is not a fault of the run.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_escape.h"
#include "ph_log.h"

/* The value of KEY in ENV (a workload's `K=V` strings; the last wins, as
 * in the process's environment the orchestrator makes), or NULL.  *AT:
 * its index, -1 if none. */
static const char *
env_get(const ph_strv *env, const char *key, ssize_t *at)
{
    size_t kl = strlen(key);
    const char *v = NULL;

    if (at)
        *at = -1;
    for (size_t i = 0; env != NULL && i < env->n; i++) {
        const char *s = env->v[i];

        if (strncmp(s, key, kl) == 0 && s[kl] == '=') {
            v = s + kl + 1;
            if (at)
                *at = (ssize_t)i;
        }
    }
    return v;
}

int
ph_run_env_extend(ph_strv *env, const ph_strv *image_env, const ph_kvv *extend, ph_error_t *err)
{
    for (size_t i = 0; i < extend->n; i++) {
        const char *key = extend->v[i].key, *user;
        char *merged = NULL, *line = NULL;
        ssize_t at;

        user = env_get(env, key, &at);
        if (user == NULL)
            user = env_get(image_env, key, NULL);
        if ((merged = ph_profile_env_extend(user, extend->v[i].value)) == NULL ||
            asprintf(&line, "%s=%s", key, merged) < 0) {
            free(merged);
            return ph_fail(err, ENOMEM, "allocate");
        }
        free(merged);
        if (at >= 0) {
            free(env->v[at]);
            env->v[at] = line;
        } else {
            int rc = ph_strv_push(env, line);

            free(line);
            if (rc < 0)
                return ph_fail(err, ENOMEM, "allocate");
        }
    }
    return 0;
}

/* One step in container ID; 0, or -1 with *err (its exit status and
 * first words in it when it ran and failed). */
static int
run_step(ph_run *r, ph_backend *b, const char *id, const ph_profile *p, const ph_profile_refresh *st,
         const char *service, const char *run_id, ph_error_t *err)
{
    static const char *const no_preload[] = { "LD_PRELOAD=", NULL };
    char out[PATH_MAX];
    const char **argv = calloc(st->exec.n + 1, sizeof *argv);
    long code = -1, wait_s = st->wait_ns > 0 ? (long)((st->wait_ns + 999999999LL) / 1000000000LL) : 30;
    int rc = -1;

    if (argv == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, service);
    for (size_t i = 0; i < st->exec.n; i++)
        if ((argv[i] = ph_profile_expand(st->exec.v[i], out, service, p->name, run_id)) == NULL) {
            ph_fail(err, ENOMEM, "allocate");
            goto out;
        }
    if ((b == NULL && ph_run_backend(r, &b, err) < 0) ||
        b->ops->exec(b, id, argv, no_preload, wait_s, NULL, NULL, &code, err) < 0)
        goto out;
    if (code == 126 || code == 127) {
        /* no such program in the image (no shell: distroless): nothing
         * of the runtime to ask, not a fault to tell of at every stop */
        ph_debug("%s: `%s` is not in the container: step skipped", service, argv[0]);
    } else if (code != 0) {
        ph_fail(err, 0, "`%s` exited with %ld", argv[0], code);
        goto out;
    }
    rc = 0;
out:
    for (size_t i = 0; i < st->exec.n; i++)
        free((char *)argv[i]);
    free(argv);
    return rc;
}

void
ph_run_refresh(ph_run *r, const ph_workload *c, const ph_profile *p)
{
    ph_run_refresh_on(r, NULL, c, p);
}

void
ph_run_refresh_on(ph_run *r, ph_backend *b, const ph_workload *c, const ph_profile *p)
{
    const char *service = c->service, *run_id = c->run;
    const char *id = c->id, *attached = c->attached;

    /* P: the profile the run was started with.  A container that has ended has no runtime to ask */
    if (p == NULL || service == NULL || id == NULL || !ph_workload_running(c))
        return;
    for (size_t i = 0; i < p->n_refresh; i++) {
        const ph_profile_refresh *st = &p->refresh[i];
        ph_error_t err = NULL;
        char esc[2200];

        if (run_step(r, b, st->in_service && attached ? attached : id, p, st, service, run_id ? run_id : "", &err) <
            0)
            ph_info("%s: %s's refresh `%s` in the %s's container did not succeed (%s): runtime frames may stay "
                    "unnamed", service, p->name, st->exec.v[0], st->in_service ? "service" : "profiler",
                    ph_escape(esc, sizeof esc, err ? err->msg : "?"));
        ph_error_free(&err);
    }
}
