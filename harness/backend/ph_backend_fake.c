/* ph_backend_fake.c - an orchestrator in memory (ph_backend_fake.h), for
 * the loop's unit tests: its world.
 *
 * Everything is in one world behind one recursive lock (a hook a test
 * runs may look at the world from inside an operation): images,
 * workloads (kept when removed, marked gone, so the pointers a test holds
 * stay good) and how each lives and ends, exec rules, faults, the calls
 * made and the hooks.  The operations over it: ph_backend_fake_ops.c.
 */
#include "ph_backend_fake_int.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <sys/stat.h>

/* ---- the world -------------------------------------------------------------- */

ph_fake *
ph_fake_new(void)
{
    ph_fake *f = calloc(1, sizeof *f);
    pthread_mutexattr_t at;

    if (f == NULL)
        return NULL;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_settype(&at, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&f->lock, &at);
    pthread_mutexattr_destroy(&at);
    f->chunk = 4096;
    return f;
}

void
ph_fake_wl_free(ph_fake_wl *w)
{
    if (w == NULL)
        return;
    free(w->name);
    free(w->image);
    free(w->node);
    free(w->glob);
    ph_kvv_free(&w->labels);
    ph_fake_fs_clear(&w->files);
    ph_fake_fs_clear(&w->end_files);
    free(w->log);
    ph_proc_table_clear(&w->top);
    free(w);
}

static void
ph_fake_call_free(ph_fake_call *c)
{
    if (c == NULL)
        return;
    free(c->target);
    free(c->name);
    free(c->arg);
    free((char *)c->spec.name);
    free((char *)c->spec.image);
    free((char *)c->spec.pid_of);
    free((char *)c->spec.net_of);
    c->spec.name = c->spec.image = c->spec.pid_of = c->spec.net_of = NULL;
    ph_workload_spec_clear(&c->spec);
    ph_strv_free(&c->argv);
    ph_strv_free(&c->env);
    free(c->put);
    free(c);
}

void
ph_fake_free(ph_fake *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->n_images; i++) {
        free(f->images[i]->glob);
        ph_image_config_clear(&f->images[i]->cfg);
        ph_fake_fs_clear(&f->images[i]->files);
        free(f->images[i]);
    }
    free(f->images);
    for (size_t i = 0; i < f->n_wls; i++)
        ph_fake_wl_free(f->wls[i]);
    free(f->wls);
    for (size_t i = 0; i < f->n_templates; i++)
        ph_fake_wl_free(f->templates[i]);
    free(f->templates);
    for (size_t i = 0; i < f->n_rules; i++) {
        free(f->rules[i].name_glob);
        free(f->rules[i].argv0_glob);
        free(f->rules[i].output);
    }
    free(f->rules);
    for (size_t i = 0; i < f->n_faults; i++)
        free(f->faults[i].glob);
    free(f->faults);
    for (size_t i = 0; i < f->n_svcs; i++) {
        free(f->svcs[i].project);
        free(f->svcs[i].service);
        ph_kvv_free(&f->svcs[i].run);
    }
    free(f->svcs);
    ph_strv_free(&f->down);
    free(f->hooks);
    for (size_t i = 0; i < f->n_calls; i++)
        ph_fake_call_free(f->calls[i]);
    free(f->calls);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

void
ph_fake_chunk(ph_fake *f, size_t chunk)
{
    f->chunk = chunk > 0 ? chunk : 4096;
}

/* ---- images ---------------------------------------------------------------- */

ph_fake_image *
ph_fake_image_add(ph_fake *f, const char *glob, const char *id)
{
    ph_fake_image *img = calloc(1, sizeof *img);

    if (img == NULL || (img->glob = strdup(glob)) == NULL || (img->cfg.id = strdup(id)) == NULL ||
        GROW(f->images, f->n_images) < 0) {
        if (img != NULL) {
            free(img->glob);
            free(img->cfg.id);
        }
        free(img);
        return NULL;
    }
    ph_fake_lock(f);
    f->images[f->n_images++] = img;
    ph_fake_unlock(f);
    return img;
}

ph_image_config *
ph_fake_image_config(ph_fake_image *img)
{
    return &img->cfg;
}

int
ph_fake_image_file(ph_fake_image *img, const char *path, const void *data, size_t len, unsigned mode)
{
    return ph_fake_fs_set(&img->files, path, data, len, mode, NULL);
}

int
ph_fake_image_link(ph_fake_image *img, const char *path, const char *target)
{
    return ph_fake_fs_set(&img->files, path, NULL, 0, 0777, target);
}

int
ph_fake_image_facts(ph_fake_image *img, const char *pm, const char *libc)
{
    static const struct {
        const char *name, *path;
    } pms[] = { { "apt", "/usr/bin/apt-get" }, { "apk", "/sbin/apk" }, { "dnf", "/usr/bin/dnf" },
                { "microdnf", "/usr/bin/microdnf" }, { "yum", "/usr/bin/yum" } },
      loaders[] = { { "glibc", "/lib64/ld-linux-x86-64.so.2" }, { "musl", "/lib/ld-musl-x86_64.so.1" } };

    for (size_t i = 0; pm != NULL && i < sizeof pms / sizeof pms[0]; i++)
        if (strcmp(pm, pms[i].name) == 0 &&
            (ph_fake_fs_set(&img->files, pms[i].path, "#!", 2, 0755, NULL) < 0 ||
             ph_fake_fs_set(&img->files, "/bin/sh", "#!", 2, 0755, NULL) < 0 ||
             ph_fake_fs_set(&img->files, "/tmp", NULL, 0, S_IFDIR | 01777, NULL) < 0))
            return -1;
    for (size_t i = 0; libc != NULL && i < sizeof loaders / sizeof loaders[0]; i++)
        if (strcmp(libc, loaders[i].name) == 0 &&
            ph_fake_fs_set(&img->files, loaders[i].path, "\177ELF", 4, 0755, NULL) < 0)
            return -1;
    return 0;
}

int
ph_fake_image_program(ph_fake_image *img, const char *path, int dynamic)
{
    /* An ELF64 little-endian header and one program header: PT_INTERP
     * for a program the dynamic loader runs, PT_LOAD for a static one. */
    unsigned char b[64 + 56] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };

    b[16] = 2;                 /* ET_EXEC */
    b[18] = 62;                /* EM_X86_64 */
    b[20] = 1;                 /* EV_CURRENT */
    b[32] = 64;                /* e_phoff */
    b[52] = 64;                /* e_ehsize */
    b[54] = 56;                /* e_phentsize */
    b[56] = 1;                 /* e_phnum */
    b[64] = dynamic ? 3 : 1;   /* p_type */
    return ph_fake_fs_set(&img->files, path, b, sizeof b, 0755, NULL);
}

/* The image NAME (a glob's match, or an id), or NULL. */
ph_fake_image *
ph_fake_image_find(ph_fake *f, const char *name)
{
    for (size_t i = f->n_images; name != NULL && i > 0; i--) {
        ph_fake_image *img = f->images[i - 1];

        if (fnmatch(img->glob, name, 0) == 0 || strcmp(img->cfg.id, name) == 0)
            return img;
    }
    return NULL;
}

/* ---- workloads -------------------------------------------------------------- */

ph_fake_wl *
ph_fake_wl_new(const char *name, const char *image)
{
    ph_fake_wl *w = calloc(1, sizeof *w);

    if (w == NULL || (name != NULL && (w->name = strdup(name)) == NULL) ||
        (image != NULL && (w->image = strdup(image)) == NULL)) {
        ph_fake_wl_free(w);
        return NULL;
    }
    return w;
}

void
ph_fake_wl_started(ph_fake *f, ph_fake_wl *w)
{
    w->state = PH_WL_RUNNING;
    snprintf(w->started_at, sizeof w->started_at, "2026-01-01T00:%02lu:%02luZ", f->serial / 60 % 60,
             f->serial % 60);
    f->serial++;
    w->finished_at[0] = '\0';
    if (w->end.kind == PH_FAKE_EXITS_BY_ITSELF || w->end.kind == PH_FAKE_OOM)
        w->polls_left = w->end.polls;
}

/* W ends with CODE: the files written at the end appear. */
void
ph_fake_wl_finish(ph_fake *f, ph_fake_wl *w, long code, int oom)
{
    w->state = PH_WL_EXITED;
    w->exit_code = code;
    w->oom_killed = oom;
    w->asked = 0;
    snprintf(w->finished_at, sizeof w->finished_at, "2026-01-01T01:%02lu:%02luZ", f->serial / 60 % 60,
             f->serial % 60);
    f->serial++;
    ph_fake_fs_copy(&w->files, &w->end_files);
}

/* Time passes for W by one look at it (a listing, an inspect). */
void
ph_fake_wl_observe(ph_fake *f, ph_fake_wl *w)
{
    int by_itself = w->end.kind == PH_FAKE_EXITS_BY_ITSELF || w->end.kind == PH_FAKE_OOM;

    if (w->state != PH_WL_RUNNING || (!w->asked && !by_itself))
        return;
    if (w->polls_left > 0) {
        w->polls_left--;
        return;
    }
    if (w->asked && w->end.kind == PH_FAKE_EXITS_ON_TERM)
        ph_fake_wl_finish(f, w, w->end.code, 0);
    else if (w->end.kind == PH_FAKE_OOM)
        ph_fake_wl_finish(f, w, 137, 1);
    else if (by_itself)
        ph_fake_wl_finish(f, w, w->end.code, 0);
}

/* Asked to stop (a signal but SIGKILL, or a stop). */
void
ph_fake_wl_ask(ph_fake *f, ph_fake_wl *w)
{
    switch (w->end.kind) {
    case PH_FAKE_IGNORES_TERM:
        return;
    case PH_FAKE_CRASHES:
        ph_fake_wl_finish(f, w, 139, 0);
        return;
    case PH_FAKE_EXITS_ON_TERM:
        w->asked = 1;
        w->polls_left = w->end.polls;
        if (w->polls_left == 0)
            ph_fake_wl_finish(f, w, w->end.code, 0);
        return;
    default: /* one that would end by itself stops when asked */
        ph_fake_wl_finish(f, w, 0, 0);
        return;
    }
}

/* The end that is coming now that one waits for W: 1 ended, 0 none comes. */
int
ph_fake_wl_wait(ph_fake *f, ph_fake_wl *w)
{
    if (w->state != PH_WL_RUNNING && w->state != PH_WL_RESTARTING)
        return 1;
    if (w->asked && w->end.kind == PH_FAKE_EXITS_ON_TERM) {
        ph_fake_wl_finish(f, w, w->end.code, 0);
        return 1;
    }
    if (w->end.kind == PH_FAKE_EXITS_BY_ITSELF || w->end.kind == PH_FAKE_OOM) {
        ph_fake_wl_finish(f, w, w->end.kind == PH_FAKE_OOM ? 137 : w->end.code, w->end.kind == PH_FAKE_OOM);
        return 1;
    }
    return 0;
}

ph_fake_wl *
ph_fake_wl_find(ph_fake *f, const char *id_or_name)
{
    for (size_t i = 0; id_or_name != NULL && i < f->n_wls; i++) {
        ph_fake_wl *w = f->wls[i];

        if (!w->gone && (strcmp(w->id, id_or_name) == 0 || (w->name != NULL && strcmp(w->name, id_or_name) == 0)))
            return w;
    }
    return NULL;
}

int
ph_fake_wl_add(ph_fake *f, ph_fake_wl *w)
{
    if (GROW(f->wls, f->n_wls) < 0)
        return -1;
    /* an id as long as the Engine's: 64 hex digits */
    snprintf(w->id, sizeof w->id, "fa%014lx%048x", (unsigned long)f->n_wls + 1, 0);
    w->created = FAKE_MTIME + (long long)f->n_wls;
    f->wls[f->n_wls++] = w;
    return 0;
}

ph_fake_wl *
ph_fake_workload(ph_fake *f, const char *name, const char *image)
{
    ph_fake_wl *w = ph_fake_wl_new(name, image);

    if (w == NULL)
        return NULL;
    ph_fake_lock(f);
    if (ph_fake_wl_add(f, w) < 0) {
        ph_fake_unlock(f);
        ph_fake_wl_free(w);
        return NULL;
    }
    ph_fake_wl_started(f, w);
    ph_fake_unlock(f);
    return w;
}

ph_fake_wl *
ph_fake_on_create(ph_fake *f, const char *glob)
{
    ph_fake_wl *w = ph_fake_wl_new(NULL, NULL);

    if (w == NULL || (w->glob = strdup(glob)) == NULL || GROW(f->templates, f->n_templates) < 0) {
        ph_fake_wl_free(w);
        return NULL;
    }
    ph_fake_lock(f);
    f->templates[f->n_templates++] = w;
    ph_fake_unlock(f);
    return w;
}

int
ph_fake_wl_label(ph_fake_wl *w, const char *key, const char *value)
{
    return ph_kvv_set(&w->labels, key, value);
}

void
ph_fake_wl_end(ph_fake_wl *w, ph_fake_end end)
{
    w->end = end;
    if (w->state == PH_WL_RUNNING && (end.kind == PH_FAKE_EXITS_BY_ITSELF || end.kind == PH_FAKE_OOM))
        w->polls_left = end.polls;
}

void
ph_fake_wl_state(ph_fake_wl *w, ph_workload_state state, long exit_code)
{
    w->state = state;
    w->exit_code = exit_code;
}

int
ph_fake_wl_file(ph_fake_wl *w, const char *path, const void *data, size_t len, unsigned mode)
{
    return ph_fake_fs_set(&w->files, path, data, len, mode, NULL);
}

int
ph_fake_wl_file_at_end(ph_fake_wl *w, const char *path, const char *text)
{
    return ph_fake_fs_set(&w->end_files, path, text, strlen(text), 0644, NULL);
}

int
ph_fake_wl_log(ph_fake_wl *w, const char *text)
{
    char *l = strdup(text);

    if (l == NULL)
        return -1;
    free(w->log);
    w->log = l;
    return 0;
}

int
ph_fake_wl_ps(ph_fake_wl *w, const char *pid, const char *args)
{
    ph_strv *rows;

    if (w->top.titles.n == 0 &&
        (ph_strv_push(&w->top.titles, "PID") < 0 || ph_strv_push(&w->top.titles, "COMMAND") < 0))
        return -1;
    if ((rows = realloc(w->top.rows, (w->top.n + 1) * sizeof *rows)) == NULL)
        return -1;
    w->top.rows = rows;
    memset(&rows[w->top.n], 0, sizeof rows[0]);
    if (ph_strv_push(&rows[w->top.n], pid) < 0 || ph_strv_push(&rows[w->top.n], args) < 0)
        return -1;
    w->top.n++;
    return 0;
}

const char *
ph_fake_wl_id(const ph_fake_wl *w)
{
    return w->id;
}

int
ph_fake_table_copy(ph_proc_table *dst, const ph_proc_table *src)
{
    memset(dst, 0, sizeof *dst);
    if (ph_strv_push_all(&dst->titles, &src->titles) < 0 || (dst->rows = calloc(src->n + 1, sizeof *dst->rows)) == NULL)
        return -1;
    for (size_t i = 0; i < src->n; i++, dst->n++)
        if (ph_strv_push_all(&dst->rows[i], &src->rows[i]) < 0)
            return -1;
    return 0;
}

/* W as inspect gives it, into OUT. */
int
ph_fake_wl_record(const ph_fake_wl *w, ph_workload *out)
{
    int bad = 0;

    memset(out, 0, sizeof *out);
    bad |= (out->id = strdup(w->id)) == NULL;
    bad |= w->name != NULL && (out->name = strdup(w->name)) == NULL;
    bad |= w->image != NULL && (out->image = strdup(w->image)) == NULL;
    bad |= w->node != NULL && (out->node = strdup(w->node)) == NULL;
    for (size_t i = 0; !bad && i < w->labels.n; i++)
        bad |= ph_kvv_set(&out->labels, w->labels.v[i].key, w->labels.v[i].value) < 0;
    out->state = w->state;
    snprintf(out->state_text, sizeof out->state_text, "%s",
             w->state == PH_WL_CREATED ? "created" : w->state == PH_WL_RUNNING ? "running"
             : w->state == PH_WL_EXITED ? "exited" : w->state == PH_WL_PAUSED ? "paused"
             : w->state == PH_WL_DEAD ? "dead" : w->state == PH_WL_RESTARTING ? "restarting" : "");
    out->exit_code = w->exit_code;
    out->oom_killed = w->oom_killed;
    out->created = w->created;
    bad |= w->started_at[0] && (out->started_at = strdup(w->started_at)) == NULL;
    bad |= w->finished_at[0] && (out->finished_at = strdup(w->finished_at)) == NULL;
    if (bad || ph_workload_read_labels(out) < 0) {
        ph_workload_clear(out);
        return -1;
    }
    return 0;
}

int
ph_fake_look(ph_fake *f, const char *id_or_name, ph_workload *out)
{
    ph_fake_wl *w;
    int rc = 0;

    memset(out, 0, sizeof *out);
    ph_fake_lock(f);
    if ((w = ph_fake_wl_find(f, id_or_name)) != NULL)
        rc = ph_fake_wl_record(w, out) == 0;
    ph_fake_unlock(f);
    return rc;
}

long
ph_fake_files_under(ph_fake *f, const char *id_or_name, const char *path)
{
    ph_fake_wl *w;
    long n = -1;

    ph_fake_lock(f);
    if ((w = ph_fake_wl_find(f, id_or_name)) != NULL) {
        n = 0;
        for (size_t i = 0; i < w->files.n; i++)
            n += ph_fake_fs_under(w->files.v[i].path, path);
    }
    ph_fake_unlock(f);
    return n;
}

size_t
ph_fake_count(ph_fake *f, const char *key, const char *value)
{
    size_t n = 0;

    ph_fake_lock(f);
    for (size_t i = 0; i < f->n_wls; i++) {
        const char *v = key ? ph_kvv_get(&f->wls[i]->labels, key) : NULL;

        n += !f->wls[i]->gone && (key == NULL || (v != NULL && strcmp(v, value) == 0));
    }
    ph_fake_unlock(f);
    return n;
}

/* ---- exec rules, faults, calls, hooks ------------------------------------------ */

int
ph_fake_exec_rule(ph_fake *f, const char *name_glob, const char *argv0_glob, long code, const char *output)
{
    exec_rule r = { ph_fake_dup(name_glob), ph_fake_dup(argv0_glob), ph_fake_dup(output ? output : ""), code };
    int rc = -1;

    ph_fake_lock(f);
    if (r.name_glob && r.argv0_glob && r.output && GROW(f->rules, f->n_rules) == 0) {
        f->rules[f->n_rules++] = r;
        rc = 0;
    }
    ph_fake_unlock(f);
    if (rc < 0) {
        free(r.name_glob);
        free(r.argv0_glob);
        free(r.output);
    }
    return rc;
}

int
ph_fake_fault(ph_fake *f, const char *op, const char *glob, ph_fake_fault_kind kind, size_t after, int times)
{
    fault x = { .kind = kind, .after = after, .times = times };
    int rc = -1;

    snprintf(x.op, sizeof x.op, "%s", op);
    if (glob != NULL && (x.glob = strdup(glob)) == NULL)
        return -1;
    ph_fake_lock(f);
    if (GROW(f->faults, f->n_faults) == 0) {
        f->faults[f->n_faults++] = x;
        rc = 0;
    }
    ph_fake_unlock(f);
    if (rc < 0)
        free(x.glob);
    return rc;
}

/* The fault due for OP on the workload NAME, taken (one time fewer), or NULL. */
const fault *
ph_fake_fault_take(ph_fake *f, const char *op, const char *name)
{
    for (size_t i = 0; i < f->n_faults; i++) {
        fault *x = &f->faults[i];

        if (x->times > 0 && strcmp(x->op, op) == 0 &&
            (x->glob == NULL || (name != NULL && fnmatch(x->glob, name, 0) == 0))) {
            x->times--;
            return x;
        }
    }
    return NULL;
}

void
ph_fake_hook(ph_fake *f, const char *op, ph_fake_hook_cb cb, void *ud)
{
    ph_fake_lock(f);
    if (GROW(f->hooks, f->n_hooks) == 0) {
        f->hooks[f->n_hooks] = (hook){ .cb = cb, .ud = ud };
        snprintf(f->hooks[f->n_hooks].op, sizeof f->hooks[f->n_hooks].op, "%s", op ? op : "");
        f->n_hooks++;
    }
    ph_fake_unlock(f);
}

/* A deep copy of SRC (its own strings; service and compose the caller's). */
int
ph_fake_spec_copy(ph_workload_spec *dst, const ph_workload_spec *src)
{
    int bad = 0;

    *dst = *src;
    dst->name = ph_fake_dup(src->name);
    dst->image = ph_fake_dup(src->image);
    dst->pid_of = ph_fake_dup(src->pid_of);
    dst->net_of = ph_fake_dup(src->net_of);
    dst->user = ph_fake_dup(src->user);
    dst->workdir = ph_fake_dup(src->workdir);
    dst->stop_signal = ph_fake_dup(src->stop_signal);
    dst->open_dir = ph_fake_dup(src->open_dir);
    memset(&dst->entrypoint, 0, sizeof dst->entrypoint);
    memset(&dst->cmd, 0, sizeof dst->cmd);
    memset(&dst->env, 0, sizeof dst->env);
    memset(&dst->labels, 0, sizeof dst->labels);
    memset(&dst->cap_add, 0, sizeof dst->cap_add);
    memset(&dst->cap_add_if_known, 0, sizeof dst->cap_add_if_known);
    memset(&dst->security_opt, 0, sizeof dst->security_opt);
    dst->mounts = NULL;
    dst->n_mounts = 0;
    bad |= ph_strv_push_all(&dst->entrypoint, &src->entrypoint) < 0 || ph_strv_push_all(&dst->cmd, &src->cmd) < 0 ||
           ph_strv_push_all(&dst->env, &src->env) < 0 || ph_strv_push_all(&dst->cap_add, &src->cap_add) < 0 ||
           ph_strv_push_all(&dst->cap_add_if_known, &src->cap_add_if_known) < 0 ||
           ph_strv_push_all(&dst->security_opt, &src->security_opt) < 0;
    for (size_t i = 0; !bad && i < src->labels.n; i++)
        bad |= ph_kvv_set(&dst->labels, src->labels.v[i].key, src->labels.v[i].value) < 0;
    for (size_t i = 0; !bad && i < src->n_mounts; i++) {
        bad |= ph_workload_spec_mount(dst, src->mounts[i].kind, src->mounts[i].source, src->mounts[i].target,
                                      src->mounts[i].read_only) < 0;
        if (!bad)
            dst->mounts[i].no_copy = src->mounts[i].no_copy;
    }
    return bad ? -1 : 0;
}

/* Record a call of OP (TARGET: an id or name; ARG its argument as text;
 * NUM a number of it) and run the hooks: the call, or NULL on ENOMEM. */
ph_fake_call *
ph_fake_call_begin(ph_fake *f, const char *op, const char *target, const char *arg, long num)
{
    ph_fake_call *c = calloc(1, sizeof *c);
    ph_fake_wl *w = ph_fake_wl_find(f, target);

    if (c == NULL)
        return NULL;
    snprintf(c->op, sizeof c->op, "%s", op);
    c->target = ph_fake_dup(target);
    c->name = w != NULL ? ph_fake_dup(w->name) : NULL;
    c->arg = ph_fake_dup(arg);
    c->num = num;
    c->spec.stop_grace_s = -1;
    if (GROW(f->calls, f->n_calls) < 0) {
        ph_fake_call_free(c);
        return NULL;
    }
    f->calls[f->n_calls++] = c;
    return c;
}

void
ph_fake_call_hooks(ph_fake *f, const ph_fake_call *c)
{
    for (size_t i = 0; i < f->n_hooks; i++)
        if (f->hooks[i].op[0] == '\0' || strcmp(f->hooks[i].op, c->op) == 0)
            f->hooks[i].cb(f->hooks[i].ud, c);
}

size_t
ph_fake_n_calls(ph_fake *f)
{
    return f->n_calls;
}

const ph_fake_call *
ph_fake_call_at(ph_fake *f, size_t i)
{
    return i < f->n_calls ? f->calls[i] : NULL;
}

const ph_fake_call *
ph_fake_call_nth(ph_fake *f, const char *op, size_t n)
{
    for (size_t i = 0; i < f->n_calls; i++)
        if (strcmp(f->calls[i]->op, op) == 0 && n-- == 0)
            return f->calls[i];
    return NULL;
}

size_t
ph_fake_call_count(ph_fake *f, const char *op)
{
    size_t n = 0;

    for (size_t i = 0; i < f->n_calls; i++)
        n += strcmp(f->calls[i]->op, op) == 0;
    return n;
}

char *
ph_fake_call_log(ph_fake *f)
{
    char *out = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&out, &len);

    if (m == NULL)
        return NULL;
    ph_fake_lock(f);
    for (size_t i = 0; i < f->n_calls; i++) {
        const ph_fake_call *c = f->calls[i];

        fprintf(m, "%s %s %s", c->op, c->name ? c->name : c->target ? c->target : "-", c->arg ? c->arg : "");
        if (c->num >= 0)
            fprintf(m, " %ld", c->num);
        fputc('\n', m);
    }
    ph_fake_unlock(f);
    fclose(m);
    return out;
}

/* ---- a stack --------------------------------------------------------------- */

void
ph_fake_stack(ph_fake *f)
{
    f->stack = 1;
}

int
ph_fake_node_down(ph_fake *f, const char *node)
{
    int rc;

    ph_fake_lock(f);
    rc = ph_strv_push(&f->down, node);
    ph_fake_unlock(f);
    return rc;
}

int
ph_fake_wl_place(ph_fake_wl *w, const char *node, int slot)
{
    char n[16];

    snprintf(n, sizeof n, "%d", slot);
    free(w->node);
    if ((w->node = strdup(node)) == NULL)
        return -1;
    return ph_kvv_set(&w->labels, PH_DC_NUMBER, n);
}
