/* ph_backend_engine.c - the loop's operations on a plain Docker Engine
 * (ph_backend_engine.h): a workload is a container, its id the
 * container's, its record read from the Engine's listing or inspect.
 * Everything but making containers (ph_backend_engine_create.c, with who
 * holds a port a create could not bind) is a thin turn of
 * harness/engine/'s calls; listing also takes docker compose's containers
 * of the project, as the loop sees them beside its own.
 */
#include "ph_backend_engine.h"
#include "ph_backend_engine_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


/* ---- records from the Engine's JSON ------------------------------------ */

static char *
dup_str(json_t *s, int *bad)
{
    const char *v = json_string_value(s);
    char *d;

    if (v == NULL)
        return NULL;
    if ((d = strdup(v)) == NULL)
        *bad = 1;
    return d;
}

static int
labels_in(json_t *labels, ph_kvv *out)
{
    const char *k;
    json_t *v;

    json_object_foreach(labels, k, v) {
        if (json_is_string(v) && ph_kvv_set(out, k, json_string_value(v)) < 0)
            return -1;
    }
    return 0;
}

static int
strv_in(json_t *a, ph_strv *out)
{
    size_t i;
    json_t *x;

    json_array_foreach(a, i, x) {
        if (json_is_string(x) && ph_strv_push(out, json_string_value(x)) < 0)
            return -1;
    }
    return 0;
}

static void
set_state(ph_workload *w, const char *text)
{
    w->state = ph_workload_state_parse(text);
    snprintf(w->state_text, sizeof w->state_text, "%s", text ? text : "");
}

int
ph_backend_engine_listed(json_t *c, ph_workload *w)
{
    const char *name = json_string_value(json_array_get(json_object_get(c, "Names"), 0));
    int bad = 0;

    memset(w, 0, sizeof *w);
    w->id = dup_str(json_object_get(c, "Id"), &bad);
    if (name != NULL && (w->name = strdup(name[0] == '/' ? name + 1 : name)) == NULL)
        bad = 1;
    w->image = dup_str(json_object_get(c, "Image"), &bad);
    set_state(w, json_string_value(json_object_get(c, "State")));
    w->created = (long long)json_integer_value(json_object_get(c, "Created"));
    if (bad || labels_in(json_object_get(c, "Labels"), &w->labels) < 0 || ph_workload_read_labels(w) < 0) {
        ph_workload_clear(w);
        return -1;
    }
    return 0;
}

/* A container as GET /containers/{id}/json has it. */
static int
inspected(json_t *c, ph_workload *w)
{
    json_t *state = json_object_get(c, "State"), *cfg = json_object_get(c, "Config");
    const char *name = json_string_value(json_object_get(c, "Name"));
    int bad = 0;

    memset(w, 0, sizeof *w);
    w->id = dup_str(json_object_get(c, "Id"), &bad);
    if (name != NULL && (w->name = strdup(name[0] == '/' ? name + 1 : name)) == NULL)
        bad = 1;
    w->image = dup_str(json_object_get(cfg, "Image"), &bad);
    set_state(w, json_string_value(json_object_get(state, "Status")));
    w->exit_code = (long)json_integer_value(json_object_get(state, "ExitCode"));
    w->oom_killed = json_is_true(json_object_get(state, "OOMKilled"));
    w->started_at = dup_str(json_object_get(state, "StartedAt"), &bad);
    w->finished_at = dup_str(json_object_get(state, "FinishedAt"), &bad);
    if (bad || labels_in(json_object_get(cfg, "Labels"), &w->labels) < 0 || ph_workload_read_labels(w) < 0) {
        ph_workload_clear(w);
        return -1;
    }
    return 0;
}

static int
push_listed(ph_workload_list *out, json_t *c, int compose)
{
    ph_workload w;
    int rc;

    if (ph_backend_engine_listed(c, &w) < 0)
        return -1;
    if (compose)
        return ph_workload_list_push_compose(out, &w);
    rc = ph_workload_list_push(out, &w);
    ph_workload_clear(&w);
    return rc;
}

int
ph_backend_engine_merge_compose(json_t *ours, json_t *theirs, ph_workload_list *out)
{
    size_t k;
    json_t *c;

    json_array_foreach(ours, k, c) {
        if (push_listed(out, c, 0) < 0)
            return -1;
    }
    json_array_foreach(theirs, k, c) {
        if (json_is_object(json_object_get(c, "Labels")) && push_listed(out, c, 1) < 0)
            return -1;
    }
    return 0;
}

/* ---- the table ---------------------------------------------------------- */

#define E(b) (((ph_backend_eng *)(b))->e)

static ph_backend *eng_open(ph_backend *b, ph_error_t *err);

static void
eng_close(ph_backend *b)
{
    if (b == NULL)
        return;
    if (!((ph_backend_eng *)b)->borrowed)
        ph_engine_free(E(b));
    free(b);
}

static const char *
eng_describe(ph_backend *b)
{
    return ph_engine_describe(E(b));
}

static int
eng_host_id(ph_backend *b, char *buf, size_t len, ph_error_t *err)
{
    json_t *info = NULL;
    const char *id;
    long status = 0;
    int rc = -1;

    if (ph_engine_request(E(b), "GET", "/info", NULL, &info, &status, err) < 0)
        return -1;
    id = json_string_value(json_object_get(info, "ID"));
    if (id != NULL && id[0] != '\0' && strlen(id) < len) {
        snprintf(buf, len, "%s", id);
        rc = 0;
    } else
        ph_fail(err, 0, "the Engine gave no ID");
    json_decref(info);
    return rc;
}

static struct ph_engine *
eng_engine(ph_backend *b)
{
    return E(b);
}

static ph_backend *
eng_images(ph_backend *b, ph_error_t *err)
{
    (void)err;
    return b; /* the images are the Engine's own */
}

static int
by_labels(ph_engine *e, const char *k1, const char *project, const char *k2, const char *service, json_t **out,
          ph_error_t *err)
{
    char l1[512], l2[512];
    const char *labels[2] = { l1, l2 };

    snprintf(l1, sizeof l1, "%s=%s", k1, project);
    snprintf(l2, sizeof l2, "%s=%s", k2, service ? service : "");
    return ph_engine_containers_by_label(e, labels, service ? 2 : 1, out, err);
}

static int
eng_list(ph_backend *b, const char *project, const char *service, int flags, ph_workload_list *out,
         ph_error_t *err)
{
    json_t *ours = NULL, *theirs = NULL;
    int rc = -1;

    memset(out, 0, sizeof *out);
    if (flags & PH_LIST_ALL_OF_HOST) {
        if (ph_engine_containers_all(E(b), 1, &ours, err) < 0)
            return -1;
    } else {
        if (by_labels(E(b), PH_LABEL_PROJECT, project, PH_LABEL_SERVICE, service, &ours, err) < 0)
            return -1;
        /* And what docker compose runs for the project. */
        if ((flags & PH_LIST_COMPOSE) &&
            by_labels(E(b), PH_DC_PROJECT, project, PH_DC_SERVICE, service, &theirs, err) < 0)
            goto out;
    }
    if (ph_backend_engine_merge_compose(ours, theirs, out) < 0) {
        ph_workload_list_free(out);
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    rc = 0;
out:
    json_decref(ours);
    json_decref(theirs);
    return rc;
}

static int
eng_inspect(ph_backend *b, const char *id, ph_workload *out, int *found, ph_error_t *err)
{
    json_t *c = NULL;
    int rc;

    memset(out, 0, sizeof *out);
    if (ph_engine_container_inspect(E(b), id, &c, found, err) < 0)
        return -1;
    if (!*found)
        return 0;
    rc = inspected(c, out) < 0 ? ph_fail(err, ENOMEM, "allocate") : 0;
    json_decref(c);
    return rc;
}

int
ph_backend_engine_image_config(ph_engine *e, const char *image, ph_image_config *out, int *found, ph_error_t *err)
{
    json_t *info = NULL, *cfg;
    int bad = 0;

    memset(out, 0, sizeof *out);
    if (ph_engine_image_inspect(e, image, &info, found, err) < 0)
        return -1;
    if (!*found)
        return 0;
    cfg = json_object_get(info, "Config");
    out->id = dup_str(json_object_get(info, "Id"), &bad);
    out->user = dup_str(json_object_get(cfg, "User"), &bad);
    out->workdir = dup_str(json_object_get(cfg, "WorkingDir"), &bad);
    if (bad || strv_in(json_object_get(cfg, "Env"), &out->env) < 0 ||
        strv_in(json_object_get(cfg, "Entrypoint"), &out->entrypoint) < 0 ||
        strv_in(json_object_get(cfg, "Cmd"), &out->cmd) < 0 || labels_in(json_object_get(cfg, "Labels"), &out->labels) < 0) {
        ph_image_config_clear(out);
        json_decref(info);
        return ph_fail(err, ENOMEM, "allocate");
    }
    json_decref(info);
    return 0;
}

static int
eng_image_inspect(ph_backend *b, const char *image, ph_image_config *out, int *found, ph_error_t *err)
{
    return ph_backend_engine_image_config(E(b), image, out, found, err);
}

/* A port someone else holds: who, in the hint. */
static int
eng_start(ph_backend *b, const char *id, ph_error_t *err)
{
    if (ph_engine_container_start(E(b), id, err) < 0)
        return ph_backend_engine_port_hint(E(b), err);
    return 0;
}

static int
eng_signal(ph_backend *b, const char *id, const char *sig, ph_error_t *err)
{
    return ph_engine_container_kill(E(b), id, sig, err);
}

static int
eng_stop(ph_backend *b, const char *id, long grace_s, ph_error_t *err)
{
    return ph_engine_container_stop(E(b), id, grace_s, err);
}

static int
eng_wait(ph_backend *b, const char *id, long timeout_s, long *exit_code, int *timed_out, ph_error_t *err)
{
    return ph_engine_container_wait(E(b), id, timeout_s, exit_code, timed_out, err);
}

/* The Engine's begun wait is the backend's. */
static int
eng_wait_begin(ph_backend *b, const char *id, ph_backend_wait **out, ph_error_t *err)
{
    return ph_engine_container_wait_begin(E(b), id, (ph_engine_wait **)out, err);
}

static int
eng_wait_end(ph_backend_wait *w, long timeout_s, long *exit_code, int *timed_out, ph_error_t *err)
{
    return ph_engine_container_wait_end((ph_engine_wait *)w, timeout_s, exit_code, timed_out, err);
}

static void
eng_wait_free(ph_backend_wait *w)
{
    ph_engine_wait_free((ph_engine_wait *)w);
}

static int
eng_remove(ph_backend *b, const char *id, int force, ph_error_t *err)
{
    return ph_engine_container_remove(E(b), id, force, err);
}

static int
eng_archive_get(ph_backend *b, const char *id, const char *path, ph_backend_data_cb cb, void *ud, ph_error_t *err)
{
    return ph_engine_archive_get(E(b), id, path, cb, ud, err);
}

static int
eng_archive_stat(ph_backend *b, const char *id, const char *path, int *found, ph_error_t *err)
{
    return ph_engine_archive_stat(E(b), id, path, found, err);
}

static int
eng_archive_put(ph_backend *b, const char *id, const char *path, ph_backend_read_cb cb, void *ud, long long len,
                ph_error_t *err)
{
    return ph_engine_archive_put(E(b), id, path, cb, ud, len, err);
}

static int
eng_exec(ph_backend *b, const char *id, const char *const *argv, const char *const *env, long timeout_s,
         ph_backend_data_cb cb, void *ud, long *exit_code, ph_error_t *err)
{
    return ph_engine_exec(E(b), id, argv, env, timeout_s, cb, ud, exit_code, err);
}

static int
eng_logs(ph_backend *b, const char *id, int follow, long tail, int fd, ph_error_t *err)
{
    return ph_engine_container_logs(E(b), id, follow, tail, fd, err);
}

static int
eng_log_all(ph_backend *b, const char *id, ph_backend_data_cb cb, void *ud, ph_error_t *err)
{
    return ph_engine_container_log_all(E(b), id, cb, ud, err);
}

static int
eng_output(ph_backend *b, const char *id, int stream, ph_backend_data_cb cb, void *ud, ph_error_t *err)
{
    return ph_engine_container_output(E(b), id, stream, cb, ud, err);
}

static int
eng_top(ph_backend *b, const char *id, const char *ps_args, ph_proc_table *out, ph_error_t *err)
{
    json_t *top = NULL, *row;
    size_t i;

    memset(out, 0, sizeof *out);
    if (ph_engine_container_top(E(b), id, ps_args, &top, err) < 0)
        return -1;
    if (strv_in(json_object_get(top, "Titles"), &out->titles) < 0)
        goto nomem;
    out->rows = calloc(json_array_size(json_object_get(top, "Processes")) + 1, sizeof *out->rows);
    if (out->rows == NULL)
        goto nomem;
    json_array_foreach(json_object_get(top, "Processes"), i, row) {
        if (strv_in(row, &out->rows[out->n]) < 0)
            goto nomem;
        out->n++;
    }
    json_decref(top);
    return 0;
nomem:
    json_decref(top);
    ph_proc_table_clear(out);
    return ph_fail(err, ENOMEM, "allocate");
}

/* One Engine: the image is where its workloads run, a workload is
 * reached where it is, and lost only when it is gone. */
static int
eng_distribute(ph_backend *b, const char *tag, char **ref_out, ph_error_t *err)
{
    (void)b;
    if ((*ref_out = strdup(tag)) == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    return 0;
}

static int
eng_reach(ph_backend *b, const char *id, ph_backend **out, char *cid, size_t len, ph_error_t *err)
{
    snprintf(cid, len, "%s", id);
    *out = ph_backend_engine_borrow(E(b), err);
    return *out ? 0 : -1;
}

static int
eng_lost(ph_backend *b, const ph_workload *w, ph_error_t *err)
{
    ph_workload now = { 0 };
    int found = 0;

    if (eng_inspect(b, w->id, &now, &found, err) < 0)
        return -1;
    ph_workload_clear(&now);
    return !found;
}

static const ph_backend_ops engine_ops = {
    .name = "engine",
    .open = eng_open,
    .close = eng_close,
    .describe = eng_describe,
    .host_id = eng_host_id,
    .engine = eng_engine,
    .images = eng_images,
    .list = eng_list,
    .inspect = eng_inspect,
    .image_inspect = eng_image_inspect,
    .prepare = ph_backend_engine_prepare,
    .create = ph_backend_engine_create,
    .start = eng_start,
    .run = ph_backend_engine_run,
    .signal = eng_signal,
    .stop = eng_stop,
    .wait = eng_wait,
    .wait_begin = eng_wait_begin,
    .wait_end = eng_wait_end,
    .wait_free = eng_wait_free,
    .remove = eng_remove,
    .archive_get = eng_archive_get,
    .archive_stat = eng_archive_stat,
    .archive_put = eng_archive_put,
    .exec = eng_exec,
    .logs = eng_logs,
    .log_all = eng_log_all,
    .output = eng_output,
    .top = eng_top,
    .distribute = eng_distribute,
    .reach = eng_reach,
    .lost = eng_lost,
    /* no service_*: the loop creates, starts and removes each replica */
};

ph_backend *
ph_backend_engine_new(ph_error_t *err)
{
    ph_backend_eng *b = calloc(1, sizeof *b);

    if (b == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        return NULL;
    }
    b->base.ops = &engine_ops;
    if ((b->e = ph_engine_new(err)) == NULL || ph_engine_ping(b->e, err) < 0) {
        eng_close(&b->base);
        return NULL;
    }
    return &b->base;
}

ph_backend *
ph_backend_engine_borrow(ph_engine *e, ph_error_t *err)
{
    ph_backend_eng *b = calloc(1, sizeof *b);

    if (b == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        return NULL;
    }
    b->base.ops = &engine_ops;
    b->e = e;
    b->borrowed = 1;
    return &b->base;
}

static ph_backend *
eng_open(ph_backend *b, ph_error_t *err)
{
    (void)b;
    return ph_backend_engine_new(err);
}

ph_engine *
ph_backend_engine_client(ph_backend *b)
{
    return b != NULL && b->ops == &engine_ops ? E(b) : NULL;
}

