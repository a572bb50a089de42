/* ph_image_prune.c - the profiling images no workload uses (`profharness
 * prune`): deciding is pure (ph_image_prune_plan: the Engine's image and
 * container lists in, the tags to remove out), so it is tested without an
 * Engine; removing is one DELETE per tag, and an image that turned out to
 * be in use is skipped with a note, not an error.
 */
#include "ph_image.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_engine.h"
#include "ph_escape.h"
#include "ph_log.h"

/* "repo:tag" -> does repo equal REPO? */
static int
tag_of(const char *tag, const char *repo)
{
    size_t n = strlen(repo);

    return strncmp(tag, repo, n) == 0 && tag[n] == ':';
}

static int
in_use(json_t *containers, const char *image_id)
{
    size_t k;
    json_t *c;

    json_array_foreach(containers, k, c) {
        const char *used = json_string_value(json_object_get(c, "ImageID"));

        if (used != NULL && strcmp(used, image_id) == 0)
            return 1;
    }
    return 0;
}

json_t *
ph_image_prune_plan(json_t *images, json_t *containers, const ph_strv *repos, int all)
{
    json_t *plan = json_array();

    for (size_t r = 0; plan != NULL && r < repos->n; r++) {
        const char *repo = repos->v[r];
        json_int_t newest = -1;
        const char *newest_id = NULL;
        size_t k, j;
        json_t *img, *t;

        /* The newest image of this repository, which a next start uses. */
        json_array_foreach(images, k, img) {
            json_int_t created = json_integer_value(json_object_get(img, "Created"));

            json_array_foreach(json_object_get(img, "RepoTags"), j, t) {
                if (json_is_string(t) && tag_of(json_string_value(t), repo) && created > newest) {
                    newest = created;
                    newest_id = json_string_value(json_object_get(img, "Id"));
                }
            }
        }
        json_array_foreach(images, k, img) {
            const char *id = json_string_value(json_object_get(img, "Id"));

            if (id == NULL || in_use(containers, id) || (!all && newest_id && strcmp(id, newest_id) == 0))
                continue;
            json_array_foreach(json_object_get(img, "RepoTags"), j, t) {
                if (json_is_string(t) && tag_of(json_string_value(t), repo))
                    json_array_append_new(plan, json_pack("{s:s, s:s, s:I}", "tag", json_string_value(t), "id",
                                                          id, "size",
                                                          json_integer_value(json_object_get(img, "Size"))));
            }
        }
    }
    return plan;
}

/* The Engine B's images and volumes are on (ops.engine), or -1 and an
 * error: a backend with none (the tests' in memory; one whose
 * orchestrator keeps images elsewhere) has nothing prune can remove. */
static int
prunable(ph_backend *b, ph_engine **e, ph_error_t *err)
{
    if ((*e = b->ops->engine(b)) != NULL)
        return 0;
    return ph_fail(err, 0, "prune: the %s backend (%s) keeps no images or volumes of ours to remove", b->ops->name,
                   b->ops->describe(b));
}

int
ph_image_prune(ph_backend *b, const char *project, const ph_strv *repos, int all, ph_error_t *err)
{
    ph_engine *e;
    json_t *images = NULL, *containers = NULL, *plan = NULL, *filters = NULL, *x;
    unsigned long long freed = 0;
    size_t k, removed = 0;
    int rc = -1;

    if (prunable(b, &e, err) < 0)
        return -1;
    filters = json_pack("{s:[s]}", "label", PH_LABEL_INPUTS);
    if (filters == NULL || ph_engine_images_list(e, filters, &images, err) < 0 ||
        ph_engine_containers_all(e, 1, &containers, err) < 0)
        goto out;
    plan = ph_image_prune_plan(images, containers, repos, all);
    if (plan == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    json_array_foreach(plan, k, x) {
        const char *tag = json_string_value(json_object_get(x, "tag"));
        ph_error_t e2 = NULL;
        char esc[300];

        ph_escape(esc, sizeof esc, tag);
        if (ph_engine_image_remove(e, tag, 0, &e2) < 0) {
            /* Taken into use since the listing, or shared: leave it. */
            ph_info("kept %s: %s", esc, e2->msg);
            ph_error_free(&e2);
            continue;
        }
        removed++;
        freed += (unsigned long long)json_integer_value(json_object_get(x, "size"));
        printf("removed\t%s\n", esc);
    }
    fflush(stdout);
    ph_info("prune: %zu profiling image%s of project `%s` removed (up to %.1f MB; layers other images share "
            "stay)%s", removed, removed == 1 ? "" : "s", project, (double)freed / 1e6,
            all ? "" : "; the newest of each service is kept (`prune --all` removes it too)");
    rc = 0;
out:
    json_decref(filters);
    json_decref(images);
    json_decref(containers);
    json_decref(plan);
    return rc;
}

/* ---- old tools volumes --------------------------------------------------- */

/* Does a container other than the keeper (named as the volume) mount
 * the volume NAME? */
static int
mounted_elsewhere(json_t *containers, const char *name)
{
    size_t k, j;
    json_t *c, *m;

    json_array_foreach(containers, k, c) {
        const char *first = json_string_value(json_array_get(json_object_get(c, "Names"), 0));

        if (first != NULL && first[0] == '/' && strcmp(first + 1, name) == 0)
            continue;
        json_array_foreach(json_object_get(c, "Mounts"), j, m) {
            const char *used = json_string_value(json_object_get(m, "Name"));

            if (used != NULL && strcmp(used, name) == 0)
                return 1;
        }
    }
    return 0;
}

/* The hash of a tools volume, its mark or its keeper: labelled
 * PH_LABEL_TOOLS and named after it (PH_TOOLS_VOLUME_PREFIX<hash>, then
 * nothing or PH_TOOLS_FILLED_SUFFIX for a volume); NULL for anything else
 * (a hand-made one with the label is not ours to remove). */
static const char *
tools_hash_of(json_t *labels, const char *name, int volume)
{
    const char *hash = json_string_value(json_object_get(labels, PH_LABEL_TOOLS));
    size_t np = strlen(PH_TOOLS_VOLUME_PREFIX), nh;

    if (hash == NULL || name == NULL || strncmp(name, PH_TOOLS_VOLUME_PREFIX, np) != 0)
        return NULL;
    nh = strlen(hash);
    if (strncmp(name + np, hash, nh) != 0)
        return NULL;
    if (name[np + nh] == '\0' || (volume && strcmp(name + np + nh, PH_TOOLS_FILLED_SUFFIX) == 0))
        return hash;
    return NULL;
}

/* Add HASH's entry to PLAN once. */
static void
plan_add(json_t *plan, json_t *containers, const char *hash)
{
    json_t *x;
    size_t k;
    char name[160];

    json_array_foreach(plan, k, x)
        if (strcmp(json_string_value(json_object_get(x, "hash")), hash) == 0)
            return;
    snprintf(name, sizeof name, "%s%s", PH_TOOLS_VOLUME_PREFIX, hash);
    json_array_append_new(plan, json_pack("{s:s, s:s, s:b}", "name", name, "hash", hash, "in_use",
                                          mounted_elsewhere(containers, name)));
}

json_t *
ph_image_tools_prune_plan(json_t *volumes, json_t *containers, const char *current)
{
    json_t *plan = json_array(), *v;
    size_t k;
    const char *hash;

    json_array_foreach(volumes, k, v)
        if (plan != NULL &&
            (hash = tools_hash_of(json_object_get(v, "Labels"), json_string_value(json_object_get(v, "Name")), 1)) !=
                NULL &&
            strcmp(hash, current) != 0)
            plan_add(plan, containers, hash);
    /* a keeper (an older profharness kept it) */
    json_array_foreach(containers, k, v) {
        const char *first = json_string_value(json_array_get(json_object_get(v, "Names"), 0));

        if (plan != NULL && first != NULL && first[0] == '/' &&
            (hash = tools_hash_of(json_object_get(v, "Labels"), first + 1, 0)) != NULL && strcmp(hash, current) != 0)
            plan_add(plan, containers, hash);
    }
    return plan;
}

int
ph_image_prune_tools(ph_backend *b, const char *current, ph_error_t *err)
{
    ph_engine *e;
    json_t *containers = NULL, *volumes = NULL, *plan = NULL, *x, *resp = NULL, *filters = NULL, *images = NULL;
    size_t k, removed = 0, images_removed = 0;
    int rc = -1;

    if (prunable(b, &e, err) < 0 || ph_engine_containers_all(e, 1, &containers, err) < 0)
        return -1;
    filters = json_pack("{s:[s]}", "label", PH_LABEL_TOOLS);
    if (filters == NULL || ph_engine_volumes_list(e, filters, &volumes, err) < 0)
        goto out;
    json_decref(filters);
    filters = NULL;
    plan = ph_image_tools_prune_plan(volumes, containers, current);
    if (plan == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    json_array_foreach(plan, k, x) {
        const char *name = json_string_value(json_object_get(x, "name"));
        const char *hash = json_string_value(json_object_get(x, "hash"));
        char path[256], tag[160], esc[200];
        ph_error_t e2 = NULL;
        long st = 0;

        ph_escape(esc, sizeof esc, name);
        if (json_is_true(json_object_get(x, "in_use"))) {
            ph_info("kept the old tools volume %s: a container still mounts it (prune again once it is removed)",
                    esc);
            continue;
        }
        /* the keeper (if one is left), the volume, then its mark: an
         * unmarked volume is never taken for a whole one */
        snprintf(path, sizeof path, "/volumes/%s", name);
        if (ph_engine_container_remove(e, name, 1, &e2) < 0 ||
            (ph_engine_request(e, "DELETE", path, NULL, &resp, &st, &e2) < 0 && st != 404)) {
            ph_info("kept the old tools volume %s: %s", esc, e2->msg);
            ph_error_free(&e2);
            json_decref(resp);
            resp = NULL;
            continue;
        }
        ph_error_free(&e2);
        json_decref(resp);
        resp = NULL;
        snprintf(path, sizeof path, "/volumes/%s" PH_TOOLS_FILLED_SUFFIX, name);
        if (ph_engine_request(e, "DELETE", path, NULL, &resp, &st, &e2) < 0)
            ph_error_free(&e2);
        json_decref(resp);
        resp = NULL;
        /* Its image, unless a container of it is left (one in use is
         * refused by the Engine and kept). */
        snprintf(tag, sizeof tag, "profharness-tools:%s", hash);
        if (ph_engine_image_remove(e, tag, 0, &e2) < 0)
            ph_error_free(&e2);
        removed++;
        printf("removed\t%s\n", esc);
    }
    /* Old tools images left without a volume (from before the volumes,
     * or a keeper removed by hand): no container of them is left. */
    filters = json_pack("{s:[s]}", "reference", "profharness-tools");
    if (filters == NULL || ph_engine_images_list(e, filters, &images, err) < 0)
        goto out;
    json_array_foreach(images, k, x) {
        const char *id = json_string_value(json_object_get(x, "Id"));
        json_t *t;
        size_t j;

        if (id == NULL || in_use(containers, id))
            continue;
        json_array_foreach(json_object_get(x, "RepoTags"), j, t) {
            const char *tag = json_string_value(t);
            ph_error_t e2 = NULL;
            char esc[200];

            if (tag == NULL || !tag_of(tag, "profharness-tools") || strcmp(tag + strlen("profharness-tools:"), current) == 0)
                continue;
            ph_escape(esc, sizeof esc, tag);
            if (ph_engine_image_remove(e, tag, 0, &e2) < 0) {
                ph_error_free(&e2);
                continue;
            }
            images_removed++;
            printf("removed\t%s\n", esc);
        }
    }
    fflush(stdout);
    if (removed + images_removed > 0)
        ph_info("prune: %zu old tools volume%s and %zu old tools image%s removed (the current ones are kept)", removed,
                removed == 1 ? "" : "s", images_removed, images_removed == 1 ? "" : "s");
    rc = 0;
out:
    json_decref(containers);
    json_decref(volumes);
    json_decref(plan);
    json_decref(filters);
    json_decref(images);
    return rc;
}
