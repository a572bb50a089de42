/* ph_run_prune.c - `profharness prune`: the profiling images a project
 * no longer needs.
 *
 * A profiling image is tagged by a hash of its inputs (ph_image.h), so
 * every change of a service's image, of a profile's packages or of the
 * shim makes a new one of some hundred MB and leaves the old one.  Prune
 * removes, for the project's services only (another project's images are
 * none of its business), the profiling images no container uses, all but
 * the newest of each service image unless ALL.  Removing one by its tag
 * lets the Engine drop its untagged parents as well: the old service
 * image a `--build` left behind goes with it.
 *
 * The tools volumes are the Engine's, not a project's: each change of the
 * tools (a new harness, a profile's packages) fills a new one of some 40
 * MB beside the old.  Prune removes the old ones no container mounts any
 * more (their marks and tools images with them), whichever project made
 * them; the current one stays.
 *
 * The loop names the repositories; the images floor decides and removes
 * (ph_image_prune, ph_image_prune_tools).
 */
#include "ph_run_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_image.h"

/* The profiling repositories of the project's services, each once. */
static int
project_repos(ph_run *r, ph_strv *out)
{
    for (size_t i = 0; i < r->compose->n_services; i++) {
        char *img = ph_run_service_image(r, &r->compose->services[i]), name[128], repo[160];
        int seen = 0;

        if (img == NULL)
            return -1;
        ph_image_short_name(img, name, sizeof name);
        free(img);
        snprintf(repo, sizeof repo, "%s%s", name, PH_IMAGE_PROFILING_SUFFIX);
        for (size_t j = 0; j < out->n; j++)
            seen |= strcmp(out->v[j], repo) == 0;
        if (!seen && ph_strv_push(out, repo) < 0)
            return -1;
    }
    return 0;
}

int
ph_run_prune(ph_run *r, int all, ph_error_t *err)
{
    ph_strv repos = { 0 };
    ph_backend *b;
    int rc;

    if (ph_run_backend(r, &b, err) < 0)
        return -1;
    if (project_repos(r, &repos) < 0) {
        ph_strv_free(&repos);
        return ph_fail(err, ENOMEM, "allocate");
    }
    rc = ph_image_prune(b, r->compose->project, &repos, all, err);
    ph_strv_free(&repos);
    if (rc == 0) {
        char hash[64];

        rc = ph_image_tools_hash(r->data_dir, &r->profiles, hash, sizeof hash, err);
        if (rc == 0)
            rc = ph_image_prune_tools(b, hash, err);
    }
    return rc;
}
