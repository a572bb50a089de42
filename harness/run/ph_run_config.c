/* ph_run_config.c - the loop's side of a service's workload: the spec
 * compose would create (ph_backend.h: compose's service model, the image,
 * our labels), the project's networks and volumes as the compose file
 * defines them, and create-and-start through the backend (which keeps
 * the fallbacks: extra networks, secrets and configs written in, the
 * `privileged` one).  The profiled variant is derived from the base one
 * in ph_run_start.c.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *
ph_run_project_name(ph_run *r, const char *name)
{
    char *s = NULL;

    if (asprintf(&s, "%s_%s", r->compose->project, name) < 0)
        return NULL;
    return s;
}

char *
ph_run_service_image(ph_run *r, const ph_service *s)
{
    char *img = NULL;

    if (s->image != NULL)
        return strdup(s->image);
    if (asprintf(&img, "%s-%s", r->compose->project, s->name) < 0)
        return NULL;
    return img;
}

int
ph_run_base_spec(ph_run *r, const ph_service *s, const char *image, const char *name, ph_workload_spec *spec,
                 ph_error_t *err)
{
    *spec = (ph_workload_spec)PH_WORKLOAD_SPEC_INIT;
    if (s->unsupported != NULL)
        return ph_bad_input(err, "%s, which profharness cannot honour: service `%s` would not run as compose runs it",
                            s->unsupported, s->name);
    return ph_run_orchestrated_spec(r, s, image, name, spec, err);
}

int
ph_run_orchestrated_spec(ph_run *r, const ph_service *s, const char *image, const char *name, ph_workload_spec *spec,
                         ph_error_t *err)
{
    *spec = (ph_workload_spec)PH_WORKLOAD_SPEC_INIT;
    spec->name = name;
    spec->image = image;
    spec->compose = r->compose;
    spec->service = s;
    if (ph_kvv_set(&spec->labels, PH_LABEL_PROJECT, r->compose->project) < 0 ||
        ph_kvv_set(&spec->labels, PH_LABEL_SERVICE, s->name) < 0 || ph_kvv_set(&spec->labels, PH_LABEL_MODE, "none") < 0) {
        ph_workload_spec_clear(spec);
        return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

int
ph_run_ensure_networks(ph_run *r, const ph_service *s, ph_error_t *err)
{
    ph_backend *b;

    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    return b->ops->prepare(b, r->compose, s, err);
}

int
ph_run_create_and_start(ph_run *r, const ph_workload_spec *spec, char **id_out, ph_error_t *err)
{
    ph_backend *b;

    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    return b->ops->run(b, spec, id_out, err);
}
