/* ph_backend_fake_ops.c - the table of operations of the fake backend
 * (ph_backend_fake.h) over its world: each records its call, runs the
 * hooks, takes a fault when one is due, then acts as the Engine would
 * (its errors for a missing or stopped container, a name in use, a
 * running container removed without force).
 */
#include "ph_backend_fake_int.h"

#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static const ph_backend_ops fake_ops;

/* ---- the operations ---------------------------------------------------------- */

/* Every operation: the world locked, the call recorded and hooked, a
 * fault taken when one is due. */
#define BEGIN(op, target, arg, num)                                                                                  \
    ph_fake *f = F(b);                                                                                               \
    ph_fake_call *call;                                                                                              \
    const fault *flt;                                                                                                \
    int rc = -1;                                                                                                     \
    ph_fake_lock(f);                                                                                                 \
    if ((call = ph_fake_call_begin(f, (op), (target), (arg), (num))) == NULL) {                                      \
        ph_fake_unlock(f);                                                                                           \
        return ph_fail(err, ENOMEM, "fake backend: allocate");                                                       \
    }                                                                                                                \
    ph_fake_call_hooks(f, call);                                                                                     \
    flt = ph_fake_fault_take(f, (op), call->name);                                                                   \
    if (flt != NULL && flt->kind == PH_FAKE_FAIL) {                                                                  \
        ph_fail(err, 0, "fake backend: %s of `%s` failed (an injected fault)", (op),                                 \
                call->name ? call->name : (target) ? (target) : "-");                                                \
        goto out;                                                                                                    \
    }

#define END                                                                                                          \
    out:                                                                                                             \
    ph_fake_unlock(f);                                                                                               \
    return rc

/* The workload ID, or -1 and the Engine's "no such container". */
#define WL(w, id)                                                                                                    \
    ph_fake_wl *w = ph_fake_wl_find(f, (id));                                                                        \
    if (w == NULL) {                                                                                                 \
        ph_fail(err, 0, "fake backend: no such container: %.64s", (id) ? (id) : "");                                 \
        goto out;                                                                                                    \
    }                                                                                                                \
    if (node_down(f, w->node)) {                                                                                     \
        ph_fail(err, 0, "fake backend: node %s is down: its Engine is not reached", w->node);                        \
        goto out;                                                                                                    \
    }

#define RUNNING(w, what)                                                                                             \
    if (w->state != PH_WL_RUNNING) {                                                                                 \
        ph_fail(err, 0, "fake backend: %s: container %.12s is not running", (what), w->id);                          \
        goto out;                                                                                                    \
    }

static int
node_down(const ph_fake *f, const char *node)
{
    return node != NULL && ph_strv_has(&f->down, node);
}

static void fake_close(ph_backend *b);

static ph_backend *
fake_open(ph_backend *b, ph_error_t *err)
{
    ph_backend *o = ph_fake_backend(F(b), err);
    const char *node = ((fake_backend *)b)->node;

    if (o != NULL && node != NULL) {
        o->ops = b->ops;
        if ((((fake_backend *)o)->node = strdup(node)) == NULL) {
            fake_close(o);
            ph_fail(err, ENOMEM, "fake backend: allocate");
            return NULL;
        }
    }
    return o;
}

static void
fake_close(ph_backend *b)
{
    if (b != NULL)
        free(((fake_backend *)b)->node);
    free(b);
}

static const char *
fake_describe(ph_backend *b)
{
    (void)b;
    return "an orchestrator in memory";
}

static int
fake_host_id(ph_backend *b, char *buf, size_t len, ph_error_t *err)
{
    (void)b;
    (void)err;
    snprintf(buf, len, "fake");
    return 0;
}

static struct ph_engine *
fake_engine(ph_backend *b)
{
    (void)b;
    return NULL; /* it builds and pulls nothing */
}

static ph_backend *
fake_images(ph_backend *b, ph_error_t *err)
{
    (void)err;
    return b;
}

static int
label_is(const ph_fake_wl *w, const char *key, const char *value)
{
    const char *v = ph_kvv_get(&w->labels, key);

    return value == NULL || (v != NULL && strcmp(v, value) == 0);
}

static int
fake_list(ph_backend *b, const char *project, const char *service, int flags, ph_workload_list *out,
          ph_error_t *err)
{
    BEGIN("list", service, project, flags);
    memset(out, 0, sizeof *out);
    const char *node = ((fake_backend *)b)->node;
    int tasks_only = f->stack && node == NULL;

    if (tasks_only && !(flags & PH_LIST_ALL_OF_HOST))
        flags |= PH_LIST_COMPOSE; /* a stack's listing is every task of its services */
    /* ours, then (PH_LIST_COMPOSE) docker compose's, as the Engine's two listings */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < f->n_wls; i++) {
            ph_fake_wl *w = f->wls[i];
            ph_workload rec;
            int ours = label_is(w, PH_LABEL_PROJECT, project) && ph_kvv_get(&w->labels, PH_LABEL_PROJECT) &&
                       (service == NULL || label_is(w, PH_LABEL_SERVICE, service));
            int theirs = label_is(w, PH_DC_PROJECT, project) && ph_kvv_get(&w->labels, PH_DC_PROJECT) &&
                         (service == NULL || label_is(w, PH_DC_SERVICE, service));
            int take = flags & PH_LIST_ALL_OF_HOST ? pass == 0
                       : pass == 0                 ? ours
                                                   : (flags & PH_LIST_COMPOSE) && theirs;

            if (w->gone || !take)
                continue;
            if (node != NULL && (w->node == NULL || strcmp(w->node, node) != 0))
                continue; /* a node's Engine has its own only */
            if (tasks_only && (ph_kvv_get(&w->labels, PH_LABEL_ATTACHED) || ph_kvv_get(&w->labels, PH_LABEL_CONVERT)))
                continue; /* what runs beside a task is no task */
            ph_fake_wl_observe(f, w);
            if (tasks_only && ph_kvv_get(&w->labels, PH_LABEL_RUN) == NULL &&
                (w->state == PH_WL_EXITED || w->state == PH_WL_DEAD))
                continue; /* a task the swarm no longer wants running is listed only while a run's */
            if (ph_fake_wl_record(w, &rec) < 0 ||
                (pass == 0 ? ph_workload_list_push(out, &rec) : ph_workload_list_push_compose(out, &rec)) < 0) {
                ph_workload_clear(&rec);
                ph_workload_list_free(out);
                ph_fail(err, ENOMEM, "fake backend: allocate");
                goto out;
            }
            ph_workload_clear(&rec);
        }
    }
    rc = 0;
    END;
}

static int
fake_inspect(ph_backend *b, const char *id, ph_workload *out, int *found, ph_error_t *err)
{
    BEGIN("inspect", id, NULL, -1);
    ph_fake_wl *w = ph_fake_wl_find(f, id);

    memset(out, 0, sizeof *out);
    *found = w != NULL;
    if (w != NULL) {
        ph_fake_wl_observe(f, w);
        if (ph_fake_wl_record(w, out) < 0) {
            ph_fail(err, ENOMEM, "fake backend: allocate");
            goto out;
        }
    }
    rc = 0;
    END;
}

static int
fake_image_inspect(ph_backend *b, const char *image, ph_image_config *out, int *found, ph_error_t *err)
{
    BEGIN("image_inspect", NULL, image, -1);
    ph_fake_image *img = ph_fake_image_find(f, image);
    const ph_image_config *c = img ? &img->cfg : NULL;

    memset(out, 0, sizeof *out);
    *found = img != NULL;
    if (c != NULL &&
        ((out->id = ph_fake_dup(c->id)) == NULL || (c->user && (out->user = strdup(c->user)) == NULL) ||
         (c->workdir && (out->workdir = strdup(c->workdir)) == NULL) || ph_strv_push_all(&out->env, &c->env) < 0 ||
         ph_strv_push_all(&out->entrypoint, &c->entrypoint) < 0 || ph_strv_push_all(&out->cmd, &c->cmd) < 0)) {
        ph_image_config_clear(out);
        ph_fail(err, ENOMEM, "fake backend: allocate");
        goto out;
    }
    for (size_t i = 0; c != NULL && i < c->labels.n; i++)
        if (ph_kvv_set(&out->labels, c->labels.v[i].key, c->labels.v[i].value) < 0) {
            ph_image_config_clear(out);
            ph_fail(err, ENOMEM, "fake backend: allocate");
            goto out;
        }
    rc = 0;
    END;
}

static int
fake_prepare(ph_backend *b, const ph_compose *c, const ph_service *s, ph_error_t *err)
{
    BEGIN("prepare", s ? s->name : NULL, c ? c->project : NULL, -1);
    rc = 0;
    END;
}

static int make_locked(ph_fake *f, const ph_workload_spec *spec, char **id, ph_error_t *err);

/* A workload made from SPEC (the image's files, the matching template's
 * end, files and output), created: *ID; the call records it. */
static int
create_locked(ph_fake *f, ph_fake_call *call, const ph_workload_spec *spec, char **id, ph_error_t *err)
{
    *id = NULL;
    if (call->name == NULL && spec->name != NULL && (call->name = strdup(spec->name)) == NULL)
        return ph_fail(err, ENOMEM, "fake backend: allocate");
    if (ph_fake_spec_copy(&call->spec, spec) < 0)
        return ph_fail(err, ENOMEM, "fake backend: allocate");
    return make_locked(f, spec, id, err);
}

/* SPEC's workload made (the image's files, the template its name
 * matches: its end, files and output), created: *ID. */
static int
make_locked(ph_fake *f, const ph_workload_spec *spec, char **id, ph_error_t *err)
{
    ph_fake_image *img = ph_fake_image_find(f, spec->image);
    ph_fake_wl *w, *t = NULL;

    *id = NULL;
    if (img == NULL)
        return ph_fail(err, 0, "fake backend: create: no such image: %s", spec->image ? spec->image : "(none)");
    if (spec->name != NULL && ph_fake_wl_find(f, spec->name) != NULL)
        return ph_fail(err, 0, "fake backend: create: the container name \"/%s\" is already in use", spec->name);
    for (size_t i = f->n_templates; i > 0 && t == NULL; i--)
        if (fnmatch(f->templates[i - 1]->glob, spec->name ? spec->name : "", 0) == 0)
            t = f->templates[i - 1];
    if ((w = ph_fake_wl_new(spec->name, spec->image)) == NULL)
        return ph_fail(err, ENOMEM, "fake backend: allocate");
    for (size_t i = 0; i < spec->labels.n; i++)
        if (ph_kvv_set(&w->labels, spec->labels.v[i].key, spec->labels.v[i].value) < 0)
            goto nomem;
    if (spec->compose_labels && spec->service != NULL && spec->compose != NULL &&
        ph_backend_compose_labels(spec->compose, spec->service, spec->slot, &w->labels) < 0)
        goto nomem;
    w->state = PH_WL_CREATED;
    if (ph_fake_fs_copy(&w->files, &img->files) < 0)
        goto nomem;
    if (t != NULL) {
        w->end = t->end;
        if (ph_fake_fs_copy(&w->files, &t->files) < 0 || ph_fake_fs_copy(&w->end_files, &t->end_files) < 0 ||
            (t->log != NULL && (w->log = strdup(t->log)) == NULL) || ph_fake_table_copy(&w->top, &t->top) < 0)
            goto nomem;
    }
    if (ph_fake_wl_add(f, w) < 0 || (*id = strdup(w->id)) == NULL)
        goto nomem;
    return 0;
nomem:
    ph_fake_wl_free(w);
    return ph_fail(err, ENOMEM, "fake backend: allocate");
}

/* A workload made through a node's Engine runs there. */
static int
placed(ph_fake *f, ph_backend *b, const char *id, ph_error_t *err)
{
    const char *node = ((fake_backend *)b)->node;
    ph_fake_wl *w = ph_fake_wl_find(f, id);

    if (node == NULL || w == NULL)
        return 0;
    free(w->node);
    return (w->node = strdup(node)) != NULL ? 0 : ph_fail(err, ENOMEM, "fake backend: allocate");
}

static int
fake_create(ph_backend *b, const ph_workload_spec *spec, char **id, ph_error_t *err)
{
    BEGIN("create", spec->name, spec->image, -1);
    rc = create_locked(f, call, spec, id, err) < 0 ? -1 : placed(f, b, *id, err);
    END;
}

static int
fake_start(ph_backend *b, const char *id, ph_error_t *err)
{
    BEGIN("start", id, NULL, -1);
    WL(w, id);
    if (w->state != PH_WL_RUNNING)
        ph_fake_wl_started(f, w);
    rc = 0;
    END;
}

static int
fake_run(ph_backend *b, const ph_workload_spec *spec, char **id, ph_error_t *err)
{
    BEGIN("run", spec->name, spec->image, -1);
    if (create_locked(f, call, spec, id, err) < 0 || placed(f, b, *id, err) < 0)
        goto out;
    ph_fake_wl_started(f, ph_fake_wl_find(f, *id));
    rc = 0;
    END;
}

static int
fake_signal(ph_backend *b, const char *id, const char *sig, ph_error_t *err)
{
    BEGIN("signal", id, sig ? sig : "SIGKILL", -1);
    WL(w, id);
    RUNNING(w, "kill");
    if (sig == NULL || strcmp(sig, "SIGKILL") == 0 || strcmp(sig, "KILL") == 0 || strcmp(sig, "9") == 0)
        ph_fake_wl_finish(f, w, 137, 0);
    else
        ph_fake_wl_ask(f, w);
    rc = 0;
    END;
}

static int
fake_stop(ph_backend *b, const char *id, long grace_s, ph_error_t *err)
{
    BEGIN("stop", id, NULL, grace_s);
    WL(w, id);
    if (w->state == PH_WL_RUNNING) {
        /* the stop signal, GRACE_S seconds, then the kill */
        ph_fake_wl_ask(f, w);
        if (!ph_fake_wl_wait(f, w))
            ph_fake_wl_finish(f, w, 137, 0);
    }
    rc = 0;
    END;
}

typedef struct fake_wait {
    ph_fake *f;
    char id[65];
} fake_wait;

static int
wait_for(ph_fake *f, const char *id, long *exit_code, int *timed_out, ph_error_t *err)
{
    ph_fake_wl *w = ph_fake_wl_find(f, id);

    *timed_out = 0;
    if (w == NULL)
        return ph_fail(err, 0, "fake backend: wait: no such container: %.64s", id);
    if (!ph_fake_wl_wait(f, w)) {
        *timed_out = 1;
        return 0;
    }
    if (exit_code)
        *exit_code = w->exit_code;
    return 0;
}

static int
fake_wait_fn(ph_backend *b, const char *id, long timeout_s, long *exit_code, int *timed_out, ph_error_t *err)
{
    BEGIN("wait", id, NULL, timeout_s);
    rc = wait_for(f, id, exit_code, timed_out, err);
    END;
}

static int
fake_wait_begin(ph_backend *b, const char *id, ph_backend_wait **out, ph_error_t *err)
{
    BEGIN("wait_begin", id, NULL, -1);
    fake_wait *fw;

    WL(w, id);
    if ((fw = calloc(1, sizeof *fw)) == NULL) {
        ph_fail(err, ENOMEM, "fake backend: allocate");
        goto out;
    }
    fw->f = f;
    snprintf(fw->id, sizeof fw->id, "%s", w->id);
    *out = (ph_backend_wait *)fw;
    rc = 0;
    END;
}

static int
fake_wait_end(ph_backend_wait *bw, long timeout_s, long *exit_code, int *timed_out, ph_error_t *err)
{
    fake_wait *fw = (fake_wait *)bw;
    ph_fake *f = fw->f;
    ph_fake_call *call;
    const fault *flt;
    int rc = -1;

    ph_fake_lock(f);
    if ((call = ph_fake_call_begin(f, "wait_end", fw->id, NULL, timeout_s)) == NULL) {
        ph_fail(err, ENOMEM, "fake backend: allocate");
        goto out;
    }
    ph_fake_call_hooks(f, call);
    if ((flt = ph_fake_fault_take(f, "wait_end", call->name)) != NULL && flt->kind == PH_FAKE_FAIL) {
        ph_fail(err, 0, "fake backend: wait_end of `%s` failed (an injected fault)", call->name ? call->name : "-");
        goto out;
    }
    rc = wait_for(f, fw->id, exit_code, timed_out, err);
out:
    ph_fake_unlock(f);
    free(fw);
    return rc;
}

static void
fake_wait_free(ph_backend_wait *w)
{
    free(w);
}

static int
fake_remove(ph_backend *b, const char *id, int force, ph_error_t *err)
{
    BEGIN("remove", id, force ? "force" : NULL, -1);
    ph_fake_wl *w = ph_fake_wl_find(f, id);

    if (w != NULL && w->state == PH_WL_RUNNING && !force) {
        ph_fail(err, 0, "fake backend: remove: you cannot remove a running container %.12s; stop it first", w->id);
        goto out;
    }
    if (w != NULL)
        w->gone = 1;
    rc = 0;
    END;
}

static int
fake_archive_get(ph_backend *b, const char *id, const char *path, ph_backend_data_cb cb, void *ud, ph_error_t *err)
{
    BEGIN("archive_get", id, path, -1);
    membuf m = { 0 };
    size_t at = 0;

    WL(w, id);
    if (!ph_fake_fs_has(&w->files, path)) {
        ph_fail(err, 0, "fake backend: archive of container %.12s: could not find the file %s", w->id, path);
        goto out;
    }
    if (ph_fake_fs_tar(&w->files, path, &m) < 0) {
        ph_fail(err, ENOMEM, "fake backend: build the archive of %s", path);
        goto out;
    }
    while (at < m.n) {
        size_t n = m.n - at < f->chunk ? m.n - at : f->chunk;
        int r;

        if (flt != NULL && at >= flt->after) {
            if (flt->kind == PH_FAKE_STALL) {
                ph_fail(err, 0, "archive of %s: the Docker Engine at %s stalled: less than a byte a second for 60 s",
                        path, fake_describe(b));
                free(m.p);
                goto out;
            }
            if (flt->kind == PH_FAKE_INTERRUPT) {
                flt = NULL;
                raise(SIGINT);
            }
        }
        if ((r = cb(ud, m.p + at, n)) < 0) {
            free(m.p);
            goto out; /* the callback's error */
        }
        at += n;
        if (r == PH_BACKEND_DATA_ENOUGH)
            break;
    }
    free(m.p);
    rc = 0;
    END;
}

static int
fake_archive_stat(ph_backend *b, const char *id, const char *path, int *found, ph_error_t *err)
{
    BEGIN("archive_stat", id, path, -1);
    WL(w, id);
    *found = ph_fake_fs_has(&w->files, path);
    rc = 0;
    END;
}

static int
fake_archive_put(ph_backend *b, const char *id, const char *path, ph_backend_read_cb cb, void *ud, long long len,
                 ph_error_t *err)
{
    BEGIN("archive_put", id, path, len);
    membuf m = { 0 };
    char buf[65536];
    ssize_t n;

    WL(w, id);
    while ((n = cb(ud, buf, sizeof buf)) > 0) {
        if (m.n + (size_t)n > PUT_MAX) {
            ph_fail(err, EFBIG, "fake backend: archive_put: over %u bytes", PUT_MAX);
            free(m.p);
            goto out;
        }
        ph_fake_mem_write(NULL, &m, buf, (size_t)n);
        if (m.bad) {
            ph_fail(err, ENOMEM, "fake backend: allocate");
            free(m.p);
            goto out;
        }
    }
    if (n < 0) {
        free(m.p);
        if (err != NULL && *err == NULL)
            ph_fail(err, 0, "fake backend: archive_put: the body could not be read");
        goto out;
    }
    call->put = m.p;
    call->put_len = m.n;
    rc = ph_fake_fs_untar(&w->files, path, m.p ? m.p : "", m.n, err);
    END;
}

static int
fake_exec(ph_backend *b, const char *id, const char *const *argv, const char *const *env, long timeout_s,
          ph_backend_data_cb cb, void *ud, long *exit_code, ph_error_t *err)
{
    BEGIN("exec", id, argv && argv[0] ? argv[0] : NULL, timeout_s);
    const exec_rule *rule = NULL;

    WL(w, id);
    for (size_t i = 0; argv != NULL && argv[i] != NULL; i++)
        if (ph_strv_push(&call->argv, argv[i]) < 0)
            goto nomem;
    for (size_t i = 0; env != NULL && env[i] != NULL; i++)
        if (ph_strv_push(&call->env, env[i]) < 0)
            goto nomem;
    RUNNING(w, "exec");
    for (size_t i = f->n_rules; i > 0 && rule == NULL; i--)
        if (fnmatch(f->rules[i - 1].name_glob, w->name ? w->name : "", 0) == 0 && argv && argv[0] &&
            fnmatch(f->rules[i - 1].argv0_glob, argv[0], 0) == 0)
            rule = &f->rules[i - 1];
    if (rule != NULL && cb != NULL && rule->output[0] && cb(ud, rule->output, strlen(rule->output)) < 0)
        goto out;
    if (exit_code)
        *exit_code = rule ? rule->code : 0;
    rc = 0;
    goto out;
nomem:
    ph_fail(err, ENOMEM, "fake backend: allocate");
    END;
}

static int
fake_logs(ph_backend *b, const char *id, int follow, long tail, int fd, ph_error_t *err)
{
    BEGIN("logs", id, follow ? "follow" : NULL, tail);
    WL(w, id);
    if (w->log != NULL && write(fd, w->log, strlen(w->log)) < 0) {
        ph_fail(err, errno, "fake backend: logs: write");
        goto out;
    }
    rc = 0;
    END;
}

static int
give_text(const char *text, ph_backend_data_cb cb, void *ud)
{
    size_t n = text ? strlen(text) : 0;

    return n > 0 && cb(ud, text, n) < 0 ? -1 : 0;
}

static int
fake_log_all(ph_backend *b, const char *id, ph_backend_data_cb cb, void *ud, ph_error_t *err)
{
    BEGIN("log_all", id, NULL, -1);
    WL(w, id);
    rc = give_text(w->log, cb, ud);
    END;
}

static int
fake_output(ph_backend *b, const char *id, int stream, ph_backend_data_cb cb, void *ud, ph_error_t *err)
{
    BEGIN("output", id, stream == 2 ? "stderr" : "stdout", stream);
    WL(w, id);
    rc = stream == 2 ? 0 : give_text(w->log, cb, ud);
    END;
}

static int
fake_top(ph_backend *b, const char *id, const char *ps_args, ph_proc_table *out, ph_error_t *err)
{
    BEGIN("top", id, ps_args, -1);
    WL(w, id);
    RUNNING(w, "top");
    if (ph_fake_table_copy(out, &w->top) < 0) {
        ph_proc_table_clear(out);
        ph_fail(err, ENOMEM, "fake backend: allocate");
        goto out;
    }
    rc = 0;
    END;
}

/* ---- where workloads run ------------------------------------------------------ */

static int
fake_distribute(ph_backend *b, const char *tag, char **ref_out, ph_error_t *err)
{
    BEGIN("distribute", NULL, tag, -1);
    if ((*ref_out = strdup(tag)) == NULL) {
        ph_fail(err, ENOMEM, "fake backend: allocate");
        goto out;
    }
    rc = 0;
    END;
}

static int
fake_reach(ph_backend *b, const char *id, ph_backend **out_b, char *cid, size_t len, ph_error_t *err)
{
    BEGIN("reach", id, NULL, -1);
    WL(w, id);
    snprintf(cid, len, "%s", w->id);
    if ((*out_b = ph_fake_backend(f, err)) == NULL)
        goto out;
    ((fake_backend *)*out_b)->base.ops = &fake_ops; /* a node's Engine places nothing */
    if (w->node != NULL && (((fake_backend *)*out_b)->node = strdup(w->node)) == NULL) {
        ph_backend_close(*out_b);
        *out_b = NULL;
        ph_fail(err, ENOMEM, "fake backend: allocate");
        goto out;
    }
    rc = 0;
    END;
}

static int
fake_lost(ph_backend *b, const ph_workload *wl, ph_error_t *err)
{
    BEGIN("lost", wl->id, wl->node, -1);
    ph_fake_wl *w = ph_fake_wl_find(f, wl->id);

    rc = w == NULL || node_down(f, wl->node) || (w != NULL && node_down(f, w->node));
    END;
}

/* ---- a stack's services ----------------------------------------------------- */

static int
kvv_copy(ph_kvv *dst, const ph_kvv *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (ph_kvv_set(dst, src->v[i].key, src->v[i].value) < 0)
            return -1;
    return 0;
}

/* The service SERVICE of PROJECT (made when MAKE), or NULL. */
static fake_service *
service_of(ph_fake *f, const char *project, const char *service, int make)
{
    fake_service *fs;

    for (size_t i = 0; i < f->n_svcs; i++)
        if (strcmp(f->svcs[i].project, project) == 0 && strcmp(f->svcs[i].service, service) == 0)
            return &f->svcs[i];
    if (!make || GROW(f->svcs, f->n_svcs) < 0)
        return NULL;
    fs = &f->svcs[f->n_svcs];
    memset(fs, 0, sizeof *fs);
    if ((fs->project = strdup(project)) == NULL || (fs->service = strdup(service)) == NULL) {
        free(fs->project);
        return NULL;
    }
    f->n_svcs++;
    return fs;
}

/* W is a task of SERVICE: deployed (compose's labels) or of a run (ours),
 * never what runs beside one (attached, a converter). */
static int
task_of(const ph_fake_wl *w, const char *project, const char *service)
{
    if (w->gone)
        return 0;
    if (label_is(w, PH_DC_PROJECT, project) && ph_kvv_get(&w->labels, PH_DC_PROJECT) &&
        label_is(w, PH_DC_SERVICE, service))
        return 1;
    return label_is(w, PH_LABEL_PROJECT, project) && ph_kvv_get(&w->labels, PH_LABEL_PROJECT) &&
           label_is(w, PH_LABEL_SERVICE, service) && ph_kvv_get(&w->labels, PH_LABEL_ATTACHED) == NULL &&
           ph_kvv_get(&w->labels, PH_LABEL_CONVERT) == NULL;
}

static int
slot_of(const ph_fake_wl *w)
{
    const char *n = ph_kvv_get(&w->labels, PH_DC_NUMBER);

    return n ? atoi(n) : 1;
}

/* A task of SPEC in SLOT on NODE, running: the swarm's replacement. */
static int
task_new(ph_fake *f, const char *project, const char *service, const ph_workload_spec *spec, int slot,
         const char *node, ph_error_t *err)
{
    ph_workload_spec t = *spec;
    ph_fake_wl *w;
    char name[256], n[16];
    char *id = NULL;

    snprintf(name, sizeof name, "%s_%s.%d.%lu", project, service, slot, f->serial + 1);
    snprintf(n, sizeof n, "%d", slot);
    t.name = name;
    t.compose_labels = 0;
    if (make_locked(f, &t, &id, err) < 0)
        return -1;
    w = ph_fake_wl_find(f, id);
    free(id);
    free(w->node);
    if ((node != NULL && (w->node = strdup(node)) == NULL) || ph_kvv_set(&w->labels, PH_DC_NUMBER, n) < 0)
        return ph_fail(err, ENOMEM, "fake backend: allocate");
    ph_fake_wl_started(f, w);
    return 0;
}

static int
fake_service_profile(ph_backend *b, const char *project, const char *service, const ph_workload_spec *spec,
                     long timeout_s, ph_placement *pl, ph_error_t *err)
{
    BEGIN("service_profile", service, spec->image, timeout_s);
    fake_service *fs = service_of(f, project, service, 1);
    size_t n = f->n_wls;

    if (fs == NULL) {
        ph_fail(err, ENOMEM, "fake backend: allocate");
        goto out;
    }
    if (fs->run.n > 0) {
        ph_fail(err, 0, "fake backend: service %s_%s is profiled already", project, service);
        goto out;
    }
    if (ph_fake_spec_copy(&call->spec, spec) < 0 || kvv_copy(&fs->run, &spec->labels) < 0) {
        ph_fail(err, ENOMEM, "fake backend: allocate");
        goto out;
    }
    if (pl != NULL)
        memset(pl, 0, sizeof *pl);
    for (size_t i = 0; i < n; i++) { /* the tasks there before the update */
        ph_fake_wl *w = f->wls[i];

        if (!task_of(w, project, service) || w->state != PH_WL_RUNNING || node_down(f, w->node))
            continue;
        ph_fake_wl_finish(f, w, 0, 0); /* replaced */
        if (task_new(f, project, service, spec, slot_of(w), w->node, err) < 0)
            goto out;
        if (pl != NULL) {
            size_t k = 0;

            while (k < pl->n_nodes && strcmp(pl->nodes[k].hostname, w->node ? w->node : "") != 0)
                k++;
            if (k == pl->n_nodes && k < PH_PLACEMENT_NODES_MAX)
                snprintf(pl->nodes[pl->n_nodes++].hostname, sizeof pl->nodes[k].hostname, "%s",
                         w->node ? w->node : "");
            if (k < PH_PLACEMENT_NODES_MAX)
                pl->nodes[k].tasks++;
            pl->tasks++;
        }
    }
    rc = 0;
    END;
}

static int
fake_service_unprofile(ph_backend *b, const char *project, const char *service, const char *run, long timeout_s,
                       int *rolled, ph_error_t *err)
{
    BEGIN("service_unprofile", service, run, timeout_s);
    fake_service *fs = service_of(f, project, service, 0);
    const char *now = fs ? ph_kvv_get(&fs->run, PH_LABEL_RUN) : NULL;
    size_t n = f->n_wls;

    if (rolled != NULL)
        *rolled = 0;
    if (now == NULL) {
        rc = 0;
        goto out;
    }
    if (strcmp(now, run) != 0) {
        ph_fail(err, 0, "fake backend: service %s_%s is profiled by run %s, not %s", project, service, now, run);
        goto out;
    }
    for (size_t i = 0; i < n; i++) { /* the run's tasks stopped, each slot deployed again */
        ph_fake_wl *w = f->wls[i], *dep = NULL;
        ph_workload_spec again = PH_WORKLOAD_SPEC_INIT;

        if (!task_of(w, project, service) || !label_is(w, PH_LABEL_RUN, run))
            continue;
        if (w->state == PH_WL_RUNNING && !node_down(f, w->node)) {
            ph_fake_wl_ask(f, w);
            if (!ph_fake_wl_wait(f, w))
                ph_fake_wl_finish(f, w, 137, 0);
        }
        for (size_t k = 0; k < n; k++) /* the slot's task as deployed, the last one */
            if (task_of(f->wls[k], project, service) && ph_kvv_get(&f->wls[k]->labels, PH_LABEL_RUN) == NULL &&
                slot_of(f->wls[k]) == slot_of(w))
                dep = f->wls[k];
        if (dep == NULL)
            continue;
        again.image = dep->image;
        again.labels = dep->labels; /* borrowed: make_locked copies */
        if (task_new(f, project, service, &again, slot_of(w), w->node, err) < 0)
            goto out;
    }
    ph_kvv_free(&fs->run);
    if (rolled != NULL)
        *rolled = 1;
    rc = 0;
    END;
}

static int
fake_service_run(ph_backend *b, const char *project, const char *service, ph_workload *wl, int *found,
                 ph_error_t *err)
{
    BEGIN("service_run", service, project, -1);
    fake_service *fs = service_of(f, project, service, 0);

    memset(wl, 0, sizeof *wl);
    *found = fs != NULL && fs->run.n > 0;
    if (*found && (kvv_copy(&wl->labels, &fs->run) < 0 || ph_workload_read_labels(wl) < 0)) {
        ph_workload_clear(wl);
        ph_fail(err, ENOMEM, "fake backend: allocate");
        goto out;
    }
    rc = 0;
    END;
}

static int
fake_service_remove(ph_backend *b, const char *project, const char *service, int *found, ph_error_t *err)
{
    BEGIN("service_remove", service, project, -1);
    fake_service *fs = service_of(f, project, service, 0);

    *found = 0;
    for (size_t i = 0; i < f->n_wls; i++) {
        ph_fake_wl *w = f->wls[i];

        if (!task_of(w, project, service))
            continue;
        *found = 1;
        if (w->state == PH_WL_RUNNING && !node_down(f, w->node)) {
            ph_fake_wl_ask(f, w);
            if (!ph_fake_wl_wait(f, w))
                ph_fake_wl_finish(f, w, 137, 0);
        }
        w->gone = 1;
    }
    if (fs != NULL)
        ph_kvv_free(&fs->run);
    rc = 0;
    END;
}

static const ph_backend_ops fake_ops = {
    .name = "fake",
    .open = fake_open,
    .close = fake_close,
    .describe = fake_describe,
    .host_id = fake_host_id,
    .engine = fake_engine,
    .images = fake_images,
    .list = fake_list,
    .inspect = fake_inspect,
    .image_inspect = fake_image_inspect,
    .prepare = fake_prepare,
    .create = fake_create,
    .start = fake_start,
    .run = fake_run,
    .signal = fake_signal,
    .stop = fake_stop,
    .wait = fake_wait_fn,
    .wait_begin = fake_wait_begin,
    .wait_end = fake_wait_end,
    .wait_free = fake_wait_free,
    .remove = fake_remove,
    .archive_get = fake_archive_get,
    .archive_stat = fake_archive_stat,
    .archive_put = fake_archive_put,
    .exec = fake_exec,
    .logs = fake_logs,
    .log_all = fake_log_all,
    .output = fake_output,
    .top = fake_top,
    .distribute = fake_distribute,
    .reach = fake_reach,
    .lost = fake_lost,
};

/* A stack's: the same, and the service_* operations. */
static ph_backend_ops stack_ops;
static pthread_once_t stack_once = PTHREAD_ONCE_INIT;

static void
stack_ops_init(void)
{
    stack_ops = fake_ops;
    stack_ops.name = "fake-stack";
    stack_ops.service_profile = fake_service_profile;
    stack_ops.service_unprofile = fake_service_unprofile;
    stack_ops.service_run = fake_service_run;
    stack_ops.service_remove = fake_service_remove;
}

ph_backend *
ph_fake_backend(void *fake, ph_error_t *err)
{
    fake_backend *b = calloc(1, sizeof *b);

    if (b == NULL) {
        ph_fail(err, ENOMEM, "fake backend: allocate");
        return NULL;
    }
    pthread_once(&stack_once, stack_ops_init);
    b->base.ops = ((ph_fake *)fake)->stack ? &stack_ops : &fake_ops;
    b->f = fake;
    return &b->base;
}
