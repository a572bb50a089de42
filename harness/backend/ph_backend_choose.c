/* ph_backend_choose.c - which backend runs a project: asked once, per
 * invocation (ph_backend_new, ph_backend.h).
 *
 * crun's model (can_handle_container over its table of handlers): each
 * kind below, in order, is asked whether it handles the project, on the
 * plain Engine backend the environment names; the first that says yes
 * makes the backend.  The plain Engine handles anything, so it is last.
 * A Kubernetes backend would be one more row (docs/kubernetes.md).
 */
#include "ph_backend.h"

#include "ph_backend_engine.h"
#include "ph_backend_swarm.h"
#include "ph_log.h"

typedef struct backend_kind {
    const char *name;
    /* 1 it handles PROJECT, 0 no, -1 and *err; asked of PROBE */
    int (*handles)(ph_backend *probe, const char *project, ph_error_t *err);
    /* its backend (PROBE closed by it when not kept) */
    ph_backend *(*make)(ph_backend *probe, ph_error_t *err);
} backend_kind;

static int
engine_handles(ph_backend *probe, const char *project, ph_error_t *err)
{
    (void)probe;
    (void)project;
    (void)err;
    return 1;
}

static ph_backend *
engine_make(ph_backend *probe, ph_error_t *err)
{
    (void)err;
    return probe;
}

static ph_backend *
swarm_make(ph_backend *probe, ph_error_t *err)
{
    ph_backend_close(probe);
    return ph_backend_swarm_new(err);
}

static const backend_kind kinds[] = {
    { "swarm", ph_backend_swarm_handles, swarm_make },
    { "engine", engine_handles, engine_make },
};

ph_backend *
ph_backend_new(const char *project, ph_error_t *err)
{
    ph_backend *probe = ph_backend_engine_new(err);

    if (probe == NULL || project == NULL)
        return probe;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        ph_error_t sub = NULL;
        int rc = kinds[i].handles(probe, project, &sub);

        /* an Engine that cannot say is not that kind: the command's own
         * calls make the error that matters */
        if (rc < 0)
            ph_debug("backend %s: %s", kinds[i].name, sub->msg);
        ph_error_free(&sub);
        if (rc > 0)
            return kinds[i].make(probe, err);
    }
    return probe; /* not reached: the Engine handles any */
}
