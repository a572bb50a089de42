/* ph_profile.c - loading the mode files in profiles/ (see ph_profile.h).
 *
 * A profile is trusted to run tools inside the service's container, so the
 * loader is strict where a slip would misbehave quietly: the name must be
 * the file's, signals and durations must parse, artifact globs stay inside
 * the output directory.  Unknown keys only warn, so that a newer profile
 * still loads with an older harness. */
#include "ph_profile.h"
#include "ph_profile_int.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_log.h"
#include "ph_util.h"
#include "ph_yaml.h"

#define KEY(k) (strcmp(key, (k)) == 0)

static int
dup_target(const char *s, char **dst, ph_error_t *err)
{
    char *c = strdup(s);

    if (c == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    free(*dst);
    *dst = c;
    return 0;
}

static int
read_stop(ph_profile *p, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`stop` must be a mapping");
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair), *sv;
        int rc = 0;

        if (KEY("target")) {
            if ((sv = ph_yaml_scalar(vn, "stop.target", err)) == NULL)
                return -1;
            if (strcmp(sv, "wrapper") != 0 && strcmp(sv, "tracee") != 0)
                return ph_yaml_error(vn, err, "`stop.target` must be `wrapper` or `tracee`, not `%s`", sv);
            if (dup_target(sv, &p->stop_target, err) < 0)
                return -1;
        } else if (KEY("signal")) {
            rc = ph_profile_read_signal(vn, "stop.signal", &p->stop_signal, err);
        } else if (KEY("grace")) {
            rc = ph_yaml_duration(vn, "stop.grace", &p->stop_grace_ns, err);
        } else if (KEY("escalate")) {
            ph_strv raw = { 0 };

            ph_strv_free(&p->escalate);
            rc = ph_yaml_strv(vn, "stop.escalate", 1, 0, &raw, err);
            for (size_t i = 0; rc == 0 && i < raw.n; i++) {
                char buf[16];
                const char *norm = ph_signal_normalise(raw.v[i], buf);
                const ph_ynode *at = vn->kind == PH_Y_SEQ ? vn->items[i] : vn;

                if (norm == NULL)
                    rc = ph_yaml_error(at, err, "`stop.escalate`: `%s` is not a signal", raw.v[i]);
                else if (ph_strv_push(&p->escalate, norm) < 0)
                    rc = ph_fail(err, ENOMEM, "allocate");
            }
            ph_strv_free(&raw);
        } else if (KEY("escalate_grace")) {
            rc = ph_yaml_duration(vn, "stop.escalate_grace", &p->escalate_grace_ns, err);
        } else {
            ph_warn("%s:%d: unknown key `stop.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int
read_artifacts(ph_profile *p, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_SEQ)
        return ph_yaml_error(v, err, "`artifacts` must be a list");
    PH_YAML_FOREACH_ITEM(v, it) {
        const ph_ynode *item = *it;
        ph_artifact_spec *na, *a;

        if (item->kind != PH_Y_MAP)
            return ph_yaml_error(item, err, "an artifact must be a mapping with `glob`");
        na = realloc(p->artifacts, (p->n_artifacts + 1) * sizeof *na);
        if (na == NULL)
            return ph_fail(err, ENOMEM, "allocate");
        p->artifacts = na;
        a = &p->artifacts[p->n_artifacts++];
        memset(a, 0, sizeof *a);
        PH_YAML_FOREACH_PAIR(item, pair) {
            const ph_ynode *kn = pair->key, *vn = pair->value;
            const char *key = ph_yaml_key(pair);
            char **dst = NULL;

            if (KEY("glob"))
                dst = &a->glob;
            else if (KEY("latest"))
                dst = &a->latest;
            else if (KEY("kind"))
                dst = &a->kind;
            else if (KEY("optional")) {
                if (ph_yaml_bool(vn, "artifacts.optional", &a->optional, err) < 0)
                    return -1;
            } else
                ph_warn("%s:%d: unknown key `artifacts.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
            if (dst && ph_yaml_dup(vn, key, dst, err) < 0)
                return -1;
            /* Both name files under {out} and <service>/: nothing may climb out. */
            if (dst == &a->glob && (a->glob[0] == '/' || strstr(a->glob, "..") != NULL))
                return ph_yaml_error(vn, err, "`glob` must be relative to the output directory, not `%s`", a->glob);
            if (dst == &a->latest && (strchr(a->latest, '/') || a->latest[0] == '.'))
                return ph_yaml_error(vn, err, "`latest` must be a plain file name, not `%s`", a->latest);
        }
        if (a->glob == NULL)
            return ph_yaml_error(item, err, "an artifact needs `glob`");
    }
    return 0;
}

static int
read_collect(ph_profile *p, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`collect` must be a mapping (max_bytes, max_entries, min_free)");
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair), *sv;
        ph_error_t why = NULL;
        ph_tar_limit which;
        uint64_t *dst;
        char full[64];

        if (KEY("max_bytes")) {
            which = PH_TAR_LIMIT_BYTES;
            dst = &p->collect.max_bytes;
        } else if (KEY("max_entries")) {
            which = PH_TAR_LIMIT_ENTRIES;
            dst = &p->collect.max_entries;
        } else if (KEY("min_free")) {
            which = PH_TAR_LIMIT_FREE;
            dst = &p->collect.min_free_bytes;
        } else {
            ph_warn("%s:%d: unknown key `collect.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
            continue;
        }
        snprintf(full, sizeof full, "collect.%s", key);
        if ((sv = ph_yaml_scalar(vn, full, err)) == NULL)
            return -1;
        if (ph_tar_limit_parse(which, sv, dst, &why) < 0) {
            ph_yaml_error(vn, err, "`%s`: %s", full, why->msg);
            ph_error_free(&why);
            return -1;
        }
    }
    return 0;
}

int
ph_profile_load(const char *path, ph_profile *p, ph_error_t *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;

    memset(p, 0, sizeof *p);
    if (ph_read_file(path, PH_PROFILE_MAX_BYTES, 1, &buf, &len, err) < 0)
        return -1;
    rc = ph_profile_load_buf(path, buf, len, p, err);
    free(buf);
    return rc;
}

int
ph_profile_load_buf(const char *path, const char *buf, size_t len, ph_profile *p, ph_error_t *err)
{
    ph_ynode *root = NULL, **docs = NULL;
    size_t n_docs = 0;
    const char *base;
    char expect[NAME_MAX + 1];
    int rc = -1, has_wrap = 0;
    const ph_ynode *name_node = NULL;

    memset(p, 0, sizeof *p);
    p->stop_grace_ns = 30LL * 1000000000LL;
    p->escalate_grace_ns = 10LL * 1000000000LL;
    p->path = strdup(path);
    if (len > PH_PROFILE_MAX_BYTES) {
        ph_error_make(err, EFBIG, PH_EXIT_USAGE, "`%s`: a profile is at most %d bytes", path, PH_PROFILE_MAX_BYTES);
        goto out;
    }
    /* what the run records: this text, as it was read */
    p->source = malloc(len + 1);
    if (p->source == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    memcpy(p->source, buf, len);
    p->source[len] = '\0';
    if (ph_yaml_load_buf(path, buf, len, 0, &docs, &n_docs, err) < 0)
        goto out;
    root = docs[0];
    free(docs);
    if (root->kind != PH_Y_MAP) {
        ph_yaml_error(root, err, "a profile is a mapping (name, wrap, stop, artifacts, ...)");
        goto out;
    }
    PH_YAML_FOREACH_PAIR(root, pair) {
        const ph_ynode *kn = pair->key, *v = pair->value;
        const char *key = ph_yaml_key(pair);
        int r = 0;

        if (KEY("name")) {
            name_node = v;
            r = ph_yaml_dup(v, "name", &p->name, err);
        } else if (KEY("description")) {
            r = ph_yaml_dup(v, "description", &p->description, err);
        } else if (KEY("wrap")) {
            has_wrap = 1;
            r = ph_yaml_strv(v, "wrap", 0, 0, &p->wrap, err);
            if (r == 0 && p->wrap.n > 0 && p->wrap.v[0][0] == '\0')
                r = ph_yaml_error(v, err, "`wrap` must start with a program, not an empty string");
        } else if (KEY("environment")) {
            r = ph_yaml_kvv(v, "environment", &p->environment, err);
            /* Nothing to inherit from: the harness's own environment is not the service's. */
            for (size_t i = 0; r == 0 && i < p->environment.n; i++)
                if (p->environment.v[i].value == NULL)
                    r = ph_yaml_error(v, err, "`environment.%s` needs a value", p->environment.v[i].key);
        } else if (KEY("cap_add")) {
            r = ph_yaml_strv(v, "cap_add", 0, 0, &p->cap_add, err);
        } else if (KEY("security_opt")) {
            r = ph_yaml_strv(v, "security_opt", 0, 0, &p->security_opt, err);
        } else if (KEY("stop")) {
            r = read_stop(p, v, err);
        } else if (KEY("artifacts")) {
            r = read_artifacts(p, v, err);
        } else if (KEY("report")) {
            static const char *const reports[] = PH_PROFILE_REPORTS;
            size_t k = 0;

            r = ph_yaml_dup(v, "report", &p->report, err);
            while (r == 0 && k < PH_PROFILE_N_REPORTS && strcmp(p->report, reports[k]) != 0)
                k++;
            if (r == 0 && k == PH_PROFILE_N_REPORTS) {
                char names[128] = "";

                for (k = 0; k < PH_PROFILE_N_REPORTS; k++)
                    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", reports[k]);
                r = ph_yaml_error(v, err, "`report: %s`: there is no such report (the reports: %s)", p->report, names);
            }
        } else if (KEY("collect")) {
            r = read_collect(p, v, err);
        } else if (ph_profile_read_use_key(p, key, v, &r, err)) {
            /* aliases, note, snapshot: ph_profile_use.c */
        } else if ((r = ph_profile_read_key(p, key, v, err)) != 0) {
            r = r < 0 ? -1 : 0; /* packages, tools, attach, ...: ph_profile_keys.c */
        } else {
            ph_warn("%s:%d: unknown key `%s` (ignored)", path, kn->line, key);
        }
        if (r < 0)
            goto out;
    }
    base = strrchr(path, '/');
    base = base ? base + 1 : path;
    {
        size_t bl = strlen(base);

        if (bl > 5 && strcmp(base + bl - 5, ".yaml") == 0)
            bl -= 5;
        else if (bl > 4 && strcmp(base + bl - 4, ".yml") == 0)
            bl -= 4;
        snprintf(expect, sizeof expect, "%.*s", (int)bl, base);
    }
    if (p->name == NULL) {
        ph_yaml_error(root, err, "a profile needs `name:` (here: `%s`)", expect);
        goto out;
    }
    if (strcmp(p->name, expect) != 0) {
        ph_yaml_error(name_node, err, "`name: %s` must match the file name `%s`", p->name, expect);
        goto out;
    }
    if (!has_wrap) {
        /* An empty list is fine (an LD_PRELOAD mode); a missing key is a slip. */
        ph_yaml_error(root, err, "a profile needs `wrap:` (use `wrap: []` for none)");
        goto out;
    }
    if (p->wrap.n == 0 && p->environment.n == 0) {
        ph_yaml_error(root, err, "the profile changes nothing: `wrap` and `environment` are both empty");
        goto out;
    }
    if (ph_profile_check_keys(p, root, err) < 0)
        goto out;
    if ((p->stop_target == NULL && (p->stop_target = strdup("wrapper")) == NULL) ||
        (p->stop_signal == NULL && (p->stop_signal = strdup("SIGTERM")) == NULL) || p->path == NULL ||
        (p->escalate.n == 0 && ph_strv_push(&p->escalate, "SIGKILL") < 0)) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    rc = 0;
out:
    ph_ynode_unref(root);
    if (rc < 0)
        ph_profile_free(p);
    return rc;
}

void
ph_profile_free(ph_profile *p)
{
    if (p == NULL)
        return;
    free(p->name);
    free(p->path);
    free(p->source);
    free(p->description);
    ph_strv_free(&p->wrap);
    ph_kvv_free(&p->environment);
    ph_strv_free(&p->cap_add);
    ph_strv_free(&p->security_opt);
    ph_strv_free(&p->packages);
    ph_profile_free_keys(p);
    free(p->stop_target);
    free(p->stop_signal);
    ph_strv_free(&p->escalate);
    for (size_t i = 0; i < p->n_artifacts; i++) {
        free(p->artifacts[i].glob);
        free(p->artifacts[i].latest);
        free(p->artifacts[i].kind);
    }
    free(p->artifacts);
    free(p->report);
    ph_profile_free_use(p);
    memset(p, 0, sizeof *p);
}

void
ph_profiles_free(ph_profile_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        ph_profile_free(&set->v[i]);
    free(set->v);
    set->v = NULL;
    set->n = 0;
}

static int
yaml_filter(const struct dirent *de)
{
    size_t n = strlen(de->d_name);

    return de->d_name[0] != '.' && n > 5 && strcmp(de->d_name + n - 5, ".yaml") == 0;
}

int
ph_profiles_load_dir(const char *dir, ph_profile_set *out, ph_error_t *err)
{
    struct dirent **list = NULL;
    int n, rc = 0;

    out->v = NULL;
    out->n = 0;
    n = scandir(dir, &list, yaml_filter, alphasort);
    if (n < 0)
        return ph_error_make(err, errno, PH_EXIT_USAGE, "read the profiles directory `%s`", dir);
    out->v = calloc((size_t)n + 1, sizeof *out->v);
    if (out->v == NULL)
        rc = ph_fail(err, ENOMEM, "allocate");
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];

        if (rc == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
            rc = ph_profile_load(path, &out->v[out->n], err);
            if (rc == 0)
                out->n++;
        }
        free(list[i]);
    }
    free(list);
    if (rc == 0 && out->n == 0)
        rc = ph_bad_input(err, "no profiles (*.yaml) in `%s`", dir);
    if (rc < 0)
        ph_profiles_free(out);
    return rc;
}

ph_profile *
ph_profiles_find(ph_profile_set *set, const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->v[i].name, name) == 0)
            return &set->v[i];
    for (size_t i = 0; i < set->n; i++)
        for (size_t j = 0; j < set->v[i].aliases.n; j++)
            if (strcmp(set->v[i].aliases.v[j], name) == 0)
                return &set->v[i];
    return NULL;
}

char *
ph_profile_expand(const char *t, const char *out, const char *service, const char *mode, const char *run_id)
{
    static const char *const keys[] = { "{out}", "{service}", "{mode}", "{run_id}" };
    const char *vals[] = { out, service, mode, run_id };
    size_t cap = 1, len = 0;
    char *r = NULL;

    /* Measure first, so one allocation of the exact size does. */
    for (int pass = 0; pass < 2; pass++) {
        const char *p = t;

        if (pass == 1 && (r = malloc(cap)) == NULL)
            return NULL;
        while (*p) {
            size_t k;

            for (k = 0; k < PH_ARRAY_LEN(keys); k++) {
                size_t kl = strlen(keys[k]);

                if (strncmp(p, keys[k], kl) == 0) {
                    const char *v = vals[k] ? vals[k] : "";
                    size_t vl = strlen(v);

                    if (pass == 1)
                        memcpy(r + len, v, vl);
                    len += vl;
                    p += kl;
                    break;
                }
            }
            if (k == PH_ARRAY_LEN(keys)) {
                if (pass == 1)
                    r[len] = *p;
                len++;
                p++;
            }
        }
        if (pass == 0) {
            cap = len + 1;
            len = 0;
        }
    }
    r[len] = '\0';
    return r;
}
