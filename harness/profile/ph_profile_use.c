/* ph_profile_use.c - the keys of a profile about using its mode (see
 * ph_profile.h): other names it answers to, a note said when it starts,
 * and how `collect` makes a running profiler write what it has.
 *
 * Strict as the rest of the loader: an alias is a plain name, a snapshot
 * is a command or a signal (not both) or says why there is none. */
#include "ph_profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ph_log.h"

#define KEY(k) (strcmp(key, (k)) == 0)

static int
plain_name(const char *s)
{
    if (s[0] == '\0' || s[0] == '.' || s[0] == '-')
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-' ||
              *s == '_' || *s == '.'))
            return 0;
    return 1;
}

static int
read_aliases(ph_profile *p, const ph_ynode *v, ph_error_t *err)
{
    ph_strv_free(&p->aliases);
    if (ph_yaml_strv(v, "aliases", 1, 0, &p->aliases, err) < 0)
        return -1;
    for (size_t i = 0; i < p->aliases.n; i++)
        if (!plain_name(p->aliases.v[i]))
            return ph_yaml_error(v, err, "`aliases`: `%s` is not a mode name (letters, digits, `-`, `_`, `.`)",
                                 p->aliases.v[i]);
    return 0;
}

static int
read_snapshot(ph_profile *p, const ph_ynode *v, ph_error_t *err)
{
    ph_profile_snapshot *s = &p->snapshot;
    int has_exec = 0;

    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`snapshot` must be a mapping (exec or signal, wait; or unsupported)");
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair), *sv;
        int rc = 0;

        if (KEY("exec")) {
            has_exec = 1;
            ph_strv_free(&s->exec);
            rc = ph_yaml_strv(vn, "snapshot.exec", 0, 0, &s->exec, err);
            if (rc == 0 && (s->exec.n == 0 || s->exec.v[0][0] == '\0'))
                rc = ph_yaml_error(vn, err, "`snapshot.exec` must start with a program");
        } else if (KEY("signal")) {
            char buf[16];
            const char *norm;

            if ((sv = ph_yaml_scalar(vn, "snapshot.signal", err)) == NULL)
                return -1;
            if ((norm = ph_signal_normalise(sv, buf)) == NULL)
                return ph_yaml_error(vn, err, "`snapshot.signal`: `%s` is not a signal", sv);
            free(s->signal);
            if ((s->signal = strdup(norm)) == NULL)
                rc = ph_fail(err, ENOMEM, "allocate");
        } else if (KEY("wait")) {
            rc = ph_yaml_duration(vn, "snapshot.wait", &s->wait_ns, err);
        } else if (KEY("unsupported")) {
            rc = ph_yaml_dup(vn, "snapshot.unsupported", &s->unsupported, err);
        } else {
            ph_warn("%s:%d: unknown key `snapshot.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
        }
        if (rc < 0)
            return -1;
    }
    if (has_exec && s->signal != NULL)
        return ph_yaml_error(v, err, "`snapshot` takes `exec` or `signal`, not both");
    if (!has_exec && s->signal == NULL && s->unsupported == NULL)
        return ph_yaml_error(v, err, "`snapshot` needs `exec`, `signal` or `unsupported`");
    return 0;
}

int
ph_profile_read_use_key(ph_profile *p, const char *key, const ph_ynode *v, int *r, ph_error_t *err)
{
    if (KEY("aliases"))
        *r = read_aliases(p, v, err);
    else if (KEY("note"))
        *r = ph_yaml_dup(v, "note", &p->note, err);
    else if (KEY("snapshot"))
        *r = read_snapshot(p, v, err);
    else if (KEY("runtimes"))
        *r = ph_profile_read_runtimes(p, v, err);
    else
        return 0;
    return 1;
}

void
ph_profile_free_use(ph_profile *p)
{
    ph_strv_free(&p->aliases);
    free(p->note);
    ph_strv_free(&p->snapshot.exec);
    free(p->snapshot.signal);
    free(p->snapshot.unsupported);
    ph_profile_free_runtimes(p);
}
