/* ph_engine_lists.c - every container and images by filter (see
 * ph_engine.h): for what the harness must see beyond its own labels, a
 * port held by someone else's container, images and volumes to prune. */
#include "ph_engine_int.h"

#include <errno.h>
#include <stdlib.h>

static int
list(ph_engine *e, ph_engine_req *r, json_t **out, ph_error_t *err)
{
    *out = NULL;
    r->resp = out;
    if (ph_engine_check(e, r->what, err) < 0 || ph_engine_call(e, r, err) < 0)
        return -1;
    if (*out == NULL)
        *out = json_array();
    if (!json_is_array(*out)) {
        json_decref(*out);
        *out = NULL;
        return ph_fail(err, 0, "%s: the Engine's answer is not a list", r->what);
    }
    return 0;
}

int
ph_engine_containers_all(ph_engine *e, int all, json_t **out, ph_error_t *err)
{
    ph_engine_req r = { .what = "list containers", .method = "GET", .path = "/containers/json",
                        .query = { PH_ENGINE_Q("all", all ? "1" : "0") } };

    return list(e, &r, out, err);
}

int
ph_engine_images_list(ph_engine *e, json_t *filters, json_t **out, ph_error_t *err)
{
    ph_engine_req r = { .what = "list images", .method = "GET", .path = "/images/json" };
    char *s = NULL;
    int rc;

    if (filters != NULL && (s = json_dumps(filters, JSON_COMPACT)) == NULL)
        return ph_fail(err, ENOMEM, "list images: encode the filter");
    r.query[0] = PH_ENGINE_Q("filters", s);
    rc = list(e, &r, out, err);
    free(s);
    return rc;
}

int
ph_engine_volumes_list(ph_engine *e, json_t *filters, json_t **out, ph_error_t *err)
{
    ph_engine_req r = { .what = "list volumes", .method = "GET", .path = "/volumes" };
    json_t *resp = NULL, *v;
    char *s = NULL;
    int rc;

    *out = NULL;
    if (filters != NULL && (s = json_dumps(filters, JSON_COMPACT)) == NULL)
        return ph_fail(err, ENOMEM, "list volumes: encode the filter");
    r.query[0] = PH_ENGINE_Q("filters", s);
    r.resp = &resp;
    rc = ph_engine_check(e, r.what, err) < 0 || ph_engine_call(e, &r, err) < 0 ? -1 : 0;
    free(s);
    if (rc < 0)
        return -1;
    /* {"Volumes": [...] or null, "Warnings": ...} */
    v = json_object_get(resp, "Volumes");
    if (resp != NULL && !json_is_object(resp)) {
        json_decref(resp);
        return ph_fail(err, 0, "list volumes: the Engine's answer is not an object");
    }
    *out = json_is_array(v) ? json_incref(v) : json_array();
    json_decref(resp);
    return *out != NULL ? 0 : ph_fail(err, ENOMEM, "allocate");
}
