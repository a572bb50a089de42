/* ph_profile_runtimes.c - a profile's `runtimes:` key (ph_profile.h):
 * what the mode asks of the runtimes a service may run on, as data, so no
 * C code knows a runtime's name.
 *
 *   environment  variables extended, never replaced: the JIT of Node
 *                writes a perf map with --perf-basic-prof in NODE_OPTIONS,
 *                HotSpot with its -XX flags in JAVA_TOOL_OPTIONS; a value
 *                the user set (in compose or in the image) stays first.
 *   refresh      commands run before a stop and before a snapshot, in
 *                the service's container or the profiler's: a JVM asked
 *                for its map now (jcmd Compiler.perfmap), the maps copied
 *                into the run (perf-maps/).
 */
#include "ph_profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ph_log.h"

#define KEY(k) (strcmp(key, (k)) == 0)

static int
read_step(ph_profile_refresh *st, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`runtimes.refresh` items must be mappings (in, exec, wait)");
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair), *sv;
        int rc = 0;

        if (KEY("in")) {
            if ((sv = ph_yaml_scalar(vn, "runtimes.refresh.in", err)) == NULL)
                return -1;
            if (strcmp(sv, "service") != 0 && strcmp(sv, "profiler") != 0)
                return ph_yaml_error(vn, err, "`runtimes.refresh.in` is `service` or `profiler`, not `%s`", sv);
            st->in_service = strcmp(sv, "service") == 0;
        } else if (KEY("exec")) {
            ph_strv_free(&st->exec);
            rc = ph_yaml_strv(vn, "runtimes.refresh.exec", 0, 0, &st->exec, err);
        } else if (KEY("wait")) {
            rc = ph_yaml_duration(vn, "runtimes.refresh.wait", &st->wait_ns, err);
        } else {
            ph_warn("%s:%d: unknown key `runtimes.refresh.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
        }
        if (rc < 0)
            return -1;
    }
    if (st->exec.n == 0 || st->exec.v[0][0] == '\0')
        return ph_yaml_error(v, err, "`runtimes.refresh` items need `exec`, starting with a program");
    return 0;
}

int
ph_profile_read_runtimes(ph_profile *p, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`runtimes` must be a mapping (environment, refresh)");
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair);

        if (KEY("environment")) {
            if (ph_yaml_kvv(vn, "runtimes.environment", &p->env_extend, err) < 0)
                return -1;
            for (size_t i = 0; i < p->env_extend.n; i++)
                if (p->env_extend.v[i].value == NULL || p->env_extend.v[i].value[0] == '\0')
                    return ph_yaml_error(vn, err, "`runtimes.environment.%s` needs a value", p->env_extend.v[i].key);
        } else if (KEY("refresh")) {
            size_t n = vn->kind == PH_Y_SEQ ? vn->n : 0;

            if (vn->kind != PH_Y_SEQ)
                return ph_yaml_error(vn, err, "`runtimes.refresh` must be a list of steps (in, exec, wait)");
            for (size_t i = 0; i < p->n_refresh; i++)
                ph_strv_free(&p->refresh[i].exec);
            free(p->refresh);
            p->n_refresh = 0;
            if (n == 0) {
                p->refresh = NULL;
                continue;
            }
            if ((p->refresh = calloc(n, sizeof *p->refresh)) == NULL)
                return ph_fail(err, ENOMEM, "allocate");
            PH_YAML_FOREACH_ITEM(vn, item) {
                ph_profile_refresh *st = &p->refresh[p->n_refresh++];

                if (read_step(st, *item, err) < 0)
                    return -1;
            }
        } else {
            ph_warn("%s:%d: unknown key `runtimes.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
        }
    }
    return 0;
}

void
ph_profile_free_runtimes(ph_profile *p)
{
    ph_kvv_free(&p->env_extend);
    for (size_t i = 0; i < p->n_refresh; i++)
        ph_strv_free(&p->refresh[i].exec);
    free(p->refresh);
    p->refresh = NULL;
    p->n_refresh = 0;
}

/* Whether the word W (N bytes) is one of S's words (spaces between). */
static int
has_word(const char *s, const char *w, size_t n)
{
    for (const char *p = s; *p;) {
        size_t k;

        while (*p == ' ' || *p == '\t')
            p++;
        k = strcspn(p, " \t");
        if (k == n && memcmp(p, w, n) == 0)
            return 1;
        p += k;
    }
    return 0;
}

char *
ph_profile_env_extend(const char *user, const char *ours)
{
    size_t ul = user ? strlen(user) : 0, ol = strlen(ours), o = 0;
    char *out = malloc(ul + ol + 2);

    if (out == NULL)
        return NULL;
    while (ul > 0 && (user[ul - 1] == ' ' || user[ul - 1] == '\t'))
        ul--;
    if (ul > 0)
        memcpy(out, user, ul);
    o = ul;
    for (const char *p = ours; *p;) {
        size_t k;

        while (*p == ' ' || *p == '\t')
            p++;
        if ((k = strcspn(p, " \t")) == 0)
            break;
        if (ul == 0 || !has_word(user, p, k)) {
            if (o > 0)
                out[o++] = ' ';
            memcpy(out + o, p, k);
            o += k;
        }
        p += k;
    }
    out[o] = '\0';
    return out;
}
