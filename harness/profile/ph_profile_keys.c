/* ph_profile_keys.c - the keys of a profile that say where its mode can
 * run and what runs beside and after it (see ph_profile.h for the schema):
 * package names per package manager, the tools tree, the C library an
 * LD_PRELOAD mode needs, capabilities the Engine may not know, the
 * conversion after a run and the attach form.
 *
 * Strict where a slip would misbehave quietly: a tool or directory name
 * that could climb out of its directory, an attach command that does not
 * say where the service's processes go ({pids}), a collapser nobody wrote.
 * Unknown keys inside these mappings warn, as elsewhere in a profile. */
#include "ph_profile_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ph_log.h"
#include "ph_util.h"

#define KEY(k) (strcmp(key, (k)) == 0)

/* The collapsers there are: a converter's stdout goes through one. */
static const char *const collapsers[] = { "perf" };
static const char *const libcs[] = { "glibc", "musl" };

static int
one_of(const char *s, const char *const *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, set[i]) == 0)
            return 1;
    return 0;
}

/* A file or program name that stays where it is put: no '/', no leading
 * '.', not empty. */
static int
plain_name(const char *s)
{
    return s[0] != '\0' && s[0] != '.' && strchr(s, '/') == NULL;
}

int
ph_profile_read_signal(const ph_ynode *n, const char *key, char **out, ph_error_t *err)
{
    char buf[16];
    const char *s = ph_yaml_scalar(n, key, err), *norm;

    if (s == NULL)
        return -1;
    norm = ph_signal_normalise(s, buf);
    if (norm == NULL)
        return ph_yaml_error(n, err, "`%s`: `%s` is not a signal", key, s);
    free(*out);
    *out = strdup(norm);
    return *out ? 0 : ph_fail(err, ENOMEM, "allocate");
}

static int
read_list(const ph_ynode *v, const char *key, ph_strv *out, ph_error_t *err)
{
    ph_strv_free(out);
    return ph_yaml_strv(v, key, 0, 0, out, err);
}

static int
read_packages(ph_profile *p, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind == PH_Y_SEQ)
        return read_list(v, "packages", &p->packages, err); /* the first form: Debian's names */
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`packages` must be a list (Debian's names) or a mapping "
                                        "{apt: [...], apk: [...], dnf: [...]}");
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("apt"))
            rc = read_list(vn, "packages.apt", &p->packages, err);
        else if (KEY("apk"))
            rc = read_list(vn, "packages.apk", &p->packages_apk, err);
        else if (KEY("dnf"))
            rc = read_list(vn, "packages.dnf", &p->packages_dnf, err);
        else
            ph_warn("%s:%d: unknown package manager `packages.%s` (ignored; known: apt, apk, dnf)",
                    ph_yaml_file(kn), kn->line, key);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int
read_names(const ph_ynode *v, const char *key, ph_strv *out, ph_error_t *err)
{
    if (read_list(v, key, out, err) < 0)
        return -1;
    for (size_t i = 0; i < out->n; i++)
        if (!plain_name(out->v[i]))
            return ph_yaml_error(v, err, "`%s`: `%s` must be a plain name (no `/`, not starting with `.`)", key,
                                 out->v[i]);
    return 0;
}

static int
read_libc(ph_strv *out, const char *key, const ph_ynode *v, ph_error_t *err)
{
    if (read_list(v, key, out, err) < 0)
        return -1;
    for (size_t i = 0; i < out->n; i++)
        if (!one_of(out->v[i], libcs, PH_ARRAY_LEN(libcs)))
            return ph_yaml_error(v, err, "`%s`: `%s` is not a C library profharness tells apart (glibc, musl)", key,
                                 out->v[i]);
    return 0;
}

/* `convert.symfs: {dir: NAME, command: [...]}`: where the files perf had
 * no copy of go, and the command that reads them there. */
static int
read_symfs(ph_profile_convert *c, const ph_ynode *v, const char *where, ph_error_t *err)
{
    char key_buf[80];

    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`%s` must be a mapping {dir: symfs, command: [...]}", where);
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        snprintf(key_buf, sizeof key_buf, "%s.%s", where, key);
        if (KEY("dir")) {
            rc = ph_yaml_dup(vn, key_buf, &c->symfs, err);
            if (rc == 0 && !plain_name(c->symfs))
                rc = ph_yaml_error(vn, err, "`%s` must be a plain directory name under {out}, not `%s`", key_buf,
                                   c->symfs);
        } else if (KEY("command")) {
            rc = read_list(vn, key_buf, &c->symfs_command, err);
            if (rc == 0 && (c->symfs_command.n == 0 || c->symfs_command.v[0][0] == '\0'))
                rc = ph_yaml_error(vn, err, "`%s` must start with a program", key_buf);
        } else {
            ph_warn("%s:%d: unknown key `%s` (ignored)", ph_yaml_file(kn), kn->line, key_buf);
        }
        if (rc < 0)
            return -1;
    }
    if (c->symfs == NULL || c->symfs_command.n == 0)
        return ph_yaml_error(v, err, "`%s` needs `dir` and `command`", where);
    return 0;
}

static int
read_convert(ph_profile_convert *c, const ph_ynode *v, const char *where, int attached, ph_error_t *err)
{
    char key_buf[64];

    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`%s` must be a mapping {command: [...], collapse: perf}", where);
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        snprintf(key_buf, sizeof key_buf, "%s.%s", where, key);
        if (KEY("command")) {
            rc = read_list(vn, key_buf, &c->command, err);
            if (rc == 0 && (c->command.n == 0 || c->command.v[0][0] == '\0'))
                rc = ph_yaml_error(vn, err, "`%s` must start with a program", key_buf);
        } else if (KEY("symfs")) {
            /* symfs copies from the stopped service container; an attach
             * stops only its tools container (copy_mapped is its way) */
            rc = attached ? ph_yaml_error(kn, err, "`%s` can do nothing: an attach never stops the service's "
                                          "container, whose files it would copy; `attach.copy_mapped` copies what "
                                          "its processes map while they run", key_buf)
                          : read_symfs(c, vn, key_buf, err);
        } else if (KEY("collapse")) {
            rc = ph_yaml_dup(vn, key_buf, &c->collapse, err);
            if (rc == 0 && !one_of(c->collapse, collapsers, PH_ARRAY_LEN(collapsers)))
                rc = ph_yaml_error(vn, err, "`%s`: no collapser `%s` (there is: perf)", key_buf, c->collapse);
        } else {
            ph_warn("%s:%d: unknown key `%s` (ignored)", ph_yaml_file(kn), kn->line, key_buf);
        }
        if (rc < 0)
            return -1;
    }
    if (c->command.n == 0)
        return ph_yaml_error(v, err, "`%s` needs `command`", where);
    if (c->collapse == NULL)
        return ph_yaml_error(v, err, "`%s` needs `collapse` (what reads the command's output: perf)", where);
    return 0;
}

/* `attach.needs: {program: [globs], why, use}` */
static int
read_needs(ph_profile_attach *a, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`attach.needs` must be a mapping: {program: [...], why, use}");
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("program"))
            rc = read_list(vn, "attach.needs.program", &a->needs, err);
        else if (KEY("why"))
            rc = ph_yaml_dup(vn, "attach.needs.why", &a->needs_why, err);
        else if (KEY("use"))
            rc = ph_yaml_dup(vn, "attach.needs.use", &a->needs_use, err);
        else
            ph_warn("%s:%d: unknown key `attach.needs.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
        if (rc < 0)
            return -1;
    }
    if (a->needs.n == 0 || a->needs_why == NULL || a->needs_use == NULL)
        return ph_yaml_error(v, err, "`attach.needs` needs `program`, `why` and `use`: a refusal says what the "
                             "service runs, why that cannot be joined and what works");
    for (size_t i = 0; i < a->needs.n; i++)
        if (a->needs.v[i][0] == '\0' || strchr(a->needs.v[i], '/') != NULL)
            return ph_yaml_error(v, err, "`attach.needs.program` holds file names (globs), not `%s`", a->needs.v[i]);
    return 0;
}

static int
read_attach(ph_profile *p, const ph_ynode *v, ph_error_t *err)
{
    ph_profile_attach *a = &p->attach;

    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`attach` must be a mapping: {command: [...]} or {unsupported: why}");
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("command")) {
            rc = read_list(vn, "attach.command", &a->command, err);
            if (rc == 0 && (a->command.n == 0 || a->command.v[0][0] == '\0'))
                rc = ph_yaml_error(vn, err, "`attach.command` must start with a program");
        } else if (KEY("unsupported")) {
            rc = ph_yaml_dup(vn, "attach.unsupported", &a->unsupported, err);
        } else if (KEY("cap_add")) {
            rc = read_list(vn, "attach.cap_add", &a->cap_add, err);
        } else if (KEY("cap_add_if_known")) {
            rc = read_list(vn, "attach.cap_add_if_known", &a->cap_add_if_known, err);
        } else if (KEY("security_opt")) {
            rc = read_list(vn, "attach.security_opt", &a->security_opt, err);
        } else if (KEY("signal")) {
            rc = ph_profile_read_signal(vn, "attach.signal", &a->signal, err);
        } else if (KEY("copy_mapped")) {
            rc = ph_yaml_dup(vn, "attach.copy_mapped", &a->copy_mapped, err);
            if (rc == 0 && !plain_name(a->copy_mapped))
                rc = ph_yaml_error(vn, err, "`attach.copy_mapped` must be a plain directory name under {out}, "
                                               "not `%s`", a->copy_mapped);
        } else if (KEY("network")) {
            const char *sv = ph_yaml_scalar(vn, "attach.network", err);

            if (sv == NULL)
                rc = -1;
            else if (strcmp(sv, "service") != 0 && strcmp(sv, "none") != 0)
                rc = ph_yaml_error(vn, err, "`attach.network` is `none` or `service`, not `%s`", sv);
            else
                a->network_service = strcmp(sv, "service") == 0;
        } else if (KEY("ready")) {
            rc = ph_yaml_dup(vn, "attach.ready", &a->ready, err); /* refuses "" */
        } else if (KEY("convert")) {
            rc = read_convert(&a->convert, vn, "attach.convert", 1, err);
        } else if (KEY("needs")) {
            rc = read_needs(a, vn, err);
        } else {
            ph_warn("%s:%d: unknown key `attach.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
        }
        if (rc < 0)
            return -1;
    }
    if (a->command.n > 0 && a->unsupported != NULL)
        return ph_yaml_error(v, err, "`attach` has a `command` and says it is `unsupported`: one or the other");
    if (a->command.n == 0 && a->unsupported == NULL)
        return ph_yaml_error(v, err, "`attach` needs `command` (how to join a running service) or "
                                        "`unsupported` (why the mode cannot)");
    if (a->command.n > 0) {
        int named = 0;

        for (size_t i = 0; i < a->command.n; i++)
            named |= strstr(a->command.v[i], "{pids}") != NULL;
        if (!named)
            return ph_yaml_error(v, err, "`attach.command` must name the service's processes with `{pids}`");
        if (a->signal == NULL && (a->signal = strdup("SIGINT")) == NULL)
            return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

/* `swarm: {unsupported: why}`: the mode cannot run in a Swarm task. */
static int
read_swarm(ph_profile *p, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`swarm` must be a mapping: {unsupported: why}");
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair);

        if (KEY("unsupported")) {
            if (ph_yaml_dup(vn, "swarm.unsupported", &p->swarm_unsupported, err) < 0)
                return -1;
        } else {
            ph_warn("%s:%d: unknown key `swarm.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
        }
    }
    if (p->swarm_unsupported == NULL || p->swarm_unsupported[0] == '\0')
        return ph_yaml_error(v, err, "`swarm` needs `unsupported` (why the mode cannot run in a Swarm task)");
    return 0;
}

int
ph_profile_read_key(ph_profile *p, const char *key, const ph_ynode *v, ph_error_t *err)
{
    int rc;

    if (KEY("packages")) {
        rc = read_packages(p, v, err);
    } else if (KEY("tools")) {
        p->has_tools = 1;
        rc = read_names(v, "tools", &p->tools, err);
    } else if (KEY("libc")) {
        rc = read_libc(&p->libc, "libc", v, err);
    } else if (KEY("tools_libc")) {
        rc = read_libc(&p->tools_libc, "tools_libc", v, err);
    } else if (KEY("limits")) {
        rc = ph_yaml_dup(v, "limits", &p->limits, err);
    } else if (KEY("cap_add_if_known")) {
        rc = read_list(v, "cap_add_if_known", &p->cap_add_if_known, err);
    } else if (KEY("convert")) {
        rc = read_convert(&p->convert, v, "convert", 0, err);
    } else if (KEY("attach")) {
        rc = read_attach(p, v, err);
    } else if (KEY("swarm")) {
        rc = read_swarm(p, v, err);
    } else {
        return 0;
    }
    return rc < 0 ? -1 : 1;
}

int
ph_profile_check_keys(ph_profile *p, const ph_ynode *root, ph_error_t *err)
{
    /* A program run from the tools tree is run by its name there; a wrap
     * that names a path cannot be. */
    if (p->has_tools && p->wrap.n > 0 && strchr(p->wrap.v[0], '/') != NULL)
        return ph_yaml_error(root, err, "`tools` is given, so `wrap` must start with a program name from it, "
                                           "not the path `%s`", p->wrap.v[0]);
    for (size_t i = 0; p->has_tools && p->wrap.n > 0 && i <= p->tools.n; i++) {
        if (i == p->tools.n)
            return ph_yaml_error(root, err, "`wrap` runs `%s`, which `tools` does not list", p->wrap.v[0]);
        if (strcmp(p->tools.v[i], p->wrap.v[0]) == 0)
            break;
    }
    /* a runtime's own wrap runs the same program: the profiling image
     * and the tools tree hold only that one */
    for (size_t i = 0; i < p->n_rewrap; i++)
        if (p->wrap.n == 0 || strcmp(p->rewrap[i].wrap.v[0], p->wrap.v[0]) != 0)
            return ph_yaml_error(root, err, "`runtimes.wrap` runs `%s`, not `wrap`'s program `%s`",
                                 p->rewrap[i].wrap.v[0], p->wrap.n ? p->wrap.v[0] : "");
    return 0;
}

static void
convert_free(ph_profile_convert *c)
{
    ph_strv_free(&c->command);
    free(c->collapse);
    c->collapse = NULL;
    free(c->symfs);
    c->symfs = NULL;
    ph_strv_free(&c->symfs_command);
}

void
ph_profile_free_keys(ph_profile *p)
{
    ph_strv_free(&p->packages_apk);
    ph_strv_free(&p->packages_dnf);
    ph_strv_free(&p->tools);
    ph_strv_free(&p->libc);
    ph_strv_free(&p->tools_libc);
    ph_strv_free(&p->cap_add_if_known);
    free(p->limits);
    p->limits = NULL;
    free(p->swarm_unsupported);
    p->swarm_unsupported = NULL;
    convert_free(&p->convert);
    ph_strv_free(&p->attach.command);
    free(p->attach.unsupported);
    ph_strv_free(&p->attach.cap_add);
    ph_strv_free(&p->attach.cap_add_if_known);
    ph_strv_free(&p->attach.security_opt);
    ph_strv_free(&p->attach.needs);
    free(p->attach.needs_why);
    free(p->attach.needs_use);
    free(p->attach.signal);
    free(p->attach.copy_mapped);
    free(p->attach.ready);
    convert_free(&p->attach.convert);
    memset(&p->attach, 0, sizeof p->attach);
}

const ph_strv *
ph_profile_packages(const ph_profile *p, const char *pm)
{
    if (pm == NULL)
        return NULL;
    if (strcmp(pm, "apt") == 0)
        return &p->packages;
    if (strcmp(pm, "apk") == 0)
        return &p->packages_apk;
    if (strcmp(pm, "dnf") == 0 || strcmp(pm, "microdnf") == 0 || strcmp(pm, "yum") == 0)
        return &p->packages_dnf;
    return NULL;
}
