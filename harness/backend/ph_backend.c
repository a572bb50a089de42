/* ph_backend.c - the records every backend shares: workloads, specs,
 * image configurations, process tables (ph_backend.h).  Pure. */
#include "ph_backend.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
dup_or_null(const char *s, int *bad)
{
    char *d;

    if (s == NULL)
        return NULL;
    d = strdup(s);
    if (d == NULL)
        *bad = 1;
    return d;
}

void
ph_workload_clear(ph_workload *w)
{
    if (w == NULL)
        return;
    free(w->id);
    free(w->name);
    free(w->image);
    free(w->node);
    free(w->project);
    free(w->service);
    free(w->mode);
    free(w->run);
    free(w->started);
    free(w->outdir);
    free(w->profile);
    free(w->attached);
    free(w->convert);
    free(w->started_at);
    free(w->finished_at);
    ph_kvv_free(&w->labels);
    memset(w, 0, sizeof *w);
}

void
ph_workload_list_free(ph_workload_list *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n; i++)
        ph_workload_clear(&l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

int
ph_workload_running(const ph_workload *w)
{
    return w != NULL && (w->state == PH_WL_RUNNING || w->state == PH_WL_RESTARTING);
}

int
ph_workload_profiled(const ph_workload *w)
{
    return w != NULL && w->mode != NULL && strcmp(w->mode, "none") != 0;
}

const char *
ph_workload_label(const ph_workload *w, const char *key)
{
    return w == NULL ? NULL : ph_kvv_get(&w->labels, key);
}

ph_workload_state
ph_workload_state_parse(const char *text)
{
    static const struct {
        const char *text;
        ph_workload_state state;
    } states[] = {
        { "created", PH_WL_CREATED }, { "running", PH_WL_RUNNING }, { "restarting", PH_WL_RESTARTING },
        { "paused", PH_WL_PAUSED },   { "exited", PH_WL_EXITED },   { "dead", PH_WL_DEAD },
        { "removing", PH_WL_REMOVING },
    };

    for (size_t i = 0; text != NULL && i < sizeof states / sizeof states[0]; i++)
        if (strcmp(text, states[i].text) == 0)
            return states[i].state;
    return PH_WL_UNKNOWN;
}

/* A label's positive number (a replica's), else DFLT: a label anyone
 * could have written, so anything but 1..100000 is none. */
static int
label_number(const char *v, int dflt)
{
    char *end;
    long n;

    if (v == NULL || *v < '0' || *v > '9')
        return dflt;
    errno = 0;
    n = strtol(v, &end, 10);
    return errno == 0 && *end == '\0' && n >= 1 && n <= 100000 ? (int)n : dflt;
}

int
ph_workload_read_labels(ph_workload *w)
{
    static const struct {
        const char *key;
        size_t off;
    } typed[] = {
        { PH_LABEL_PROJECT, offsetof(ph_workload, project) }, { PH_LABEL_SERVICE, offsetof(ph_workload, service) },
        { PH_LABEL_MODE, offsetof(ph_workload, mode) },       { PH_LABEL_RUN, offsetof(ph_workload, run) },
        { PH_LABEL_STARTED, offsetof(ph_workload, started) }, { PH_LABEL_OUTDIR, offsetof(ph_workload, outdir) },
        { PH_LABEL_PROFILE, offsetof(ph_workload, profile) }, { PH_LABEL_ATTACHED, offsetof(ph_workload, attached) },
        { PH_LABEL_CONVERT, offsetof(ph_workload, convert) },
    };
    const char *oneoff = ph_kvv_get(&w->labels, PH_DC_ONEOFF);
    int bad = 0;

    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++) {
        char **field = (char **)((char *)w + typed[i].off);

        free(*field);
        *field = dup_or_null(ph_kvv_get(&w->labels, typed[i].key), &bad);
    }
    w->compose_oneoff = oneoff != NULL && strcmp(oneoff, "True") == 0;
    w->replicas = label_number(ph_kvv_get(&w->labels, PH_LABEL_REPLICAS), 0);
    w->slot = label_number(ph_kvv_get(&w->labels, PH_LABEL_REPLICA),
                           label_number(ph_kvv_get(&w->labels, PH_DC_NUMBER), w->slot));
    return bad ? -1 : 0;
}

static int
listed_already(const ph_workload_list *l, const char *id)
{
    for (size_t i = 0; id != NULL && i < l->n; i++)
        if (l->v[i].id != NULL && strcmp(l->v[i].id, id) == 0)
            return 1;
    return 0;
}

int
ph_workload_list_push_compose(ph_workload_list *l, ph_workload *w)
{
    const char *svc = ph_kvv_get(&w->labels, PH_DC_SERVICE);
    int rc = 0;

    /* One-off containers (`compose run`) are not the service's. */
    if (svc == NULL || w->compose_oneoff || listed_already(l, w->id)) {
        ph_workload_clear(w); /* or ours, made with compose's labels by restore */
        return 0;
    }
    if (w->service == NULL) {
        w->service = strdup(svc);
        free(w->mode);
        w->mode = strdup("none");
        w->by_compose = 1;
        if (w->service == NULL || w->mode == NULL)
            rc = -1;
    }
    if (rc == 0)
        rc = ph_workload_list_push(l, w);
    ph_workload_clear(w);
    return rc;
}

int
ph_workload_copy(ph_workload *dst, const ph_workload *src)
{
    int bad = 0;

    memset(dst, 0, sizeof *dst);
    dst->id = dup_or_null(src->id, &bad);
    dst->name = dup_or_null(src->name, &bad);
    dst->image = dup_or_null(src->image, &bad);
    dst->node = dup_or_null(src->node, &bad);
    for (size_t i = 0; !bad && i < src->labels.n; i++)
        bad = ph_kvv_set(&dst->labels, src->labels.v[i].key, src->labels.v[i].value) < 0;
    if (!bad)
        bad = ph_workload_read_labels(dst) < 0;
    /* the typed fields may differ from the labels (compose's, given the
     * loop's service and mode): copy them as they are */
#define COPY(f)                                                                                                   \
    do {                                                                                                          \
        free(dst->f);                                                                                             \
        dst->f = dup_or_null(src->f, &bad);                                                                       \
    } while (0)
    COPY(project);
    COPY(service);
    COPY(mode);
    COPY(run);
    COPY(started);
    COPY(outdir);
    COPY(profile);
    COPY(attached);
    COPY(convert);
    COPY(started_at);
    COPY(finished_at);
#undef COPY
    dst->slot = src->slot;
    dst->replicas = src->replicas;
    dst->by_compose = src->by_compose;
    dst->compose_oneoff = src->compose_oneoff;
    dst->state = src->state;
    memcpy(dst->state_text, src->state_text, sizeof dst->state_text);
    dst->exit_code = src->exit_code;
    dst->oom_killed = src->oom_killed;
    dst->created = src->created;
    if (bad) {
        ph_workload_clear(dst);
        return -1;
    }
    return 0;
}

int
ph_workload_list_push(ph_workload_list *l, const ph_workload *w)
{
    ph_workload *v = realloc(l->v, (l->n + 1) * sizeof *v);

    if (v == NULL)
        return -1;
    l->v = v;
    if (ph_workload_copy(&l->v[l->n], w) < 0)
        return -1;
    l->n++;
    return 0;
}

void
ph_image_config_clear(ph_image_config *c)
{
    if (c == NULL)
        return;
    free(c->id);
    free(c->user);
    free(c->workdir);
    ph_strv_free(&c->env);
    ph_strv_free(&c->entrypoint);
    ph_strv_free(&c->cmd);
    ph_kvv_free(&c->labels);
    memset(c, 0, sizeof *c);
}

void
ph_workload_spec_clear(ph_workload_spec *s)
{
    if (s == NULL)
        return;
    ph_strv_free(&s->entrypoint);
    ph_strv_free(&s->cmd);
    ph_strv_free(&s->env);
    free(s->user);
    free(s->workdir);
    ph_kvv_free(&s->labels);
    ph_strv_free(&s->cap_add);
    ph_strv_free(&s->cap_add_if_known);
    ph_strv_free(&s->security_opt);
    free(s->stop_signal);
    for (size_t i = 0; i < s->n_mounts; i++) {
        free(s->mounts[i].source);
        free(s->mounts[i].target);
    }
    free(s->mounts);
    free(s->open_dir);
    memset(s, 0, sizeof *s);
    s->stop_grace_s = -1;
}

int
ph_workload_spec_mount(ph_workload_spec *s, ph_mount_kind kind, const char *source, const char *target,
                       int read_only)
{
    ph_spec_mount *v = realloc(s->mounts, (s->n_mounts + 1) * sizeof *v);
    int bad = 0;

    if (v == NULL)
        return -1;
    s->mounts = v;
    v[s->n_mounts] = (ph_spec_mount){ .kind = kind, .source = dup_or_null(source, &bad),
                                      .target = dup_or_null(target, &bad), .read_only = read_only };
    if (bad) {
        free(v[s->n_mounts].source);
        free(v[s->n_mounts].target);
        return -1;
    }
    s->n_mounts++;
    return 0;
}

void
ph_proc_table_clear(ph_proc_table *t)
{
    if (t == NULL)
        return;
    ph_strv_free(&t->titles);
    for (size_t i = 0; i < t->n; i++)
        ph_strv_free(&t->rows[i]);
    free(t->rows);
    memset(t, 0, sizeof *t);
}

int
ph_backend_compose_labels(const ph_compose *c, const ph_service *s, int slot, ph_kvv *out)
{
    char files[4096] = "", number[16];
    size_t o = 0;

    for (size_t i = 0; i < c->files.n && o < sizeof files; i++)
        o += (size_t)snprintf(files + o, sizeof files - o, "%s%s", i ? "," : "", c->files.v[i]);
    snprintf(number, sizeof number, "%d", slot > 0 ? slot : 1);
    if (ph_kvv_set(out, PH_DC_PROJECT, c->project) < 0 || ph_kvv_set(out, PH_DC_SERVICE, s->name) < 0 ||
        ph_kvv_set(out, PH_DC_ONEOFF, "False") < 0 || ph_kvv_set(out, PH_DC_NUMBER, number) < 0 ||
        ph_kvv_set(out, "com.docker.compose.version", PH_DC_VERSION) < 0 ||
        ph_kvv_set(out, "com.docker.compose.project.working_dir", c->dir) < 0 ||
        ph_kvv_set(out, "com.docker.compose.project.config_files", files) < 0)
        return -1;
    return 0;
}
