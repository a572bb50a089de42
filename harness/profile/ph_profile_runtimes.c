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
 *                for its map now (ph-jattach: Compiler.perfmap over its
 *                attach socket), the maps copied into the run (perf-maps/).
 *   unnamed      the runtimes the mode would name nothing of (Python 3.11
 *                under perf: only its eval loop; a node started without
 *                --perf-basic-prof, attached to), told by the program's
 *                file name and what it was started with: start and attach
 *                refuse them, saying why and what works.
 *   after_exit   what a runtime writes as it exits, after the last
 *                refresh (HotSpot's perf map with DumpPerfMapAtExit): the
 *                files taken from the stopped container into the run.
 *   wrap         the runtimes the mode records otherwise, told by the
 *                program's file name: a start runs them under the rule's
 *                wrap instead of the profile's (trixie's python3.13 has no
 *                frame pointers: perf unwinds it with DWARF).
 */
#include "ph_profile.h"

#include <errno.h>
#include <fnmatch.h>
#include <sys/stat.h>
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

/* `runtimes.after_exit.from`: an absolute path in the container, no `..`. */
static int
exit_from(const ph_ynode *v, char **dst, ph_error_t *err)
{
    const char *sv = ph_yaml_scalar(v, "runtimes.after_exit.from", err);
    size_t n;

    if (sv == NULL)
        return -1;
    n = strlen(sv);
    if (sv[0] != '/' || strstr(sv, "/../") != NULL || (n >= 3 && strcmp(sv + n - 3, "/..") == 0))
        return ph_yaml_error(v, err, "`runtimes.after_exit.from` is an absolute path in the container with no "
                             "`..`, not `%s`", sv);
    free(*dst);
    return (*dst = strdup(sv)) != NULL ? 0 : ph_fail(err, ENOMEM, "allocate");
}

static int
read_exit_files(ph_profile_exit_files *x, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`runtimes.after_exit` items must be mappings (from, files, into, max_bytes)");
    x->max_bytes = PH_EXIT_FILES_MAX_DEFAULT;
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair), *sv;
        ph_error_t why = NULL;
        int rc = 0;

        if (KEY("from")) {
            rc = exit_from(vn, &x->from, err);
        } else if (KEY("into")) {
            if ((sv = ph_yaml_scalar(vn, "runtimes.after_exit.into", err)) == NULL)
                return -1;
            if (sv[0] == '\0' || sv[0] == '.' || strchr(sv, '/') != NULL)
                return ph_yaml_error(vn, err, "`runtimes.after_exit.into` is the name of a directory in {out} "
                                     "(no `/`, no leading `.`), not `%s`", sv);
            rc = ph_yaml_dup(vn, "runtimes.after_exit.into", &x->into, err);
        } else if (KEY("files")) {
            if ((sv = ph_yaml_scalar(vn, "runtimes.after_exit.files", err)) == NULL)
                return -1;
            if (sv[0] == '\0' || strchr(sv, '/') != NULL)
                return ph_yaml_error(vn, err, "`runtimes.after_exit.files` is a glob on names directly in `from` "
                                     "(no `/`), not `%s`", sv);
            rc = ph_yaml_dup(vn, "runtimes.after_exit.files", &x->files, err);
        } else if (KEY("max_bytes")) {
            if ((sv = ph_yaml_scalar(vn, "runtimes.after_exit.max_bytes", err)) == NULL)
                return -1;
            if (ph_tar_limit_parse(PH_TAR_LIMIT_BYTES, sv, &x->max_bytes, &why) < 0) {
                ph_yaml_error(vn, err, "`runtimes.after_exit.max_bytes`: %s", why->msg);
                ph_error_free(&why);
                return -1;
            }
        } else {
            ph_warn("%s:%d: unknown key `runtimes.after_exit.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
        }
        if (rc < 0)
            return -1;
    }
    if (x->from == NULL || x->files == NULL || x->into == NULL)
        return ph_yaml_error(v, err, "`runtimes.after_exit` items need `from`, `files` and `into`");
    return 0;
}

static void
free_after_exit(ph_profile *p)
{
    for (size_t i = 0; i < p->n_after_exit; i++) {
        free(p->after_exit[i].from);
        free(p->after_exit[i].files);
        free(p->after_exit[i].into);
    }
    free(p->after_exit);
    p->after_exit = NULL;
    p->n_after_exit = 0;
}

static int
read_on(ph_profile_unnamed *u, const ph_ynode *v, ph_error_t *err)
{
    ph_strv on = { 0 };
    int rc = 0;

    if (ph_yaml_strv(v, "runtimes.unnamed.on", 1, 0, &on, err) < 0)
        return -1;
    u->on = 0;
    for (size_t i = 0; rc == 0 && i < on.n; i++) {
        if (strcmp(on.v[i], "start") == 0)
            u->on |= PH_UNNAMED_START;
        else if (strcmp(on.v[i], "attach") == 0)
            u->on |= PH_UNNAMED_ATTACH;
        else
            rc = ph_yaml_error(v, err, "`runtimes.unnamed.on` holds `start` and `attach`, not `%s`", on.v[i]);
    }
    ph_strv_free(&on);
    if (rc == 0 && u->on == 0)
        rc = ph_yaml_error(v, err, "`runtimes.unnamed.on` needs `start`, `attach` or both");
    return rc;
}

/* PROGRAM of `runtimes.WHAT` holds file names (globs), no paths. */
static int
check_programs(const ph_ynode *v, const char *what, const ph_strv *program, ph_error_t *err)
{
    for (size_t i = 0; i < program->n; i++)
        if (program->v[i][0] == '\0' || strchr(program->v[i], '/') != NULL)
            return ph_yaml_error(v, err, "`runtimes.%s.program` holds file names (globs), not `%s`", what,
                                 program->v[i]);
    return 0;
}

static int
read_unnamed(ph_profile_unnamed *u, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`runtimes.unnamed` items must be mappings (program, on, unless, if, why, use, "
                             "anyway)");
    u->on = PH_UNNAMED_START | PH_UNNAMED_ATTACH;
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("program"))
            rc = ph_yaml_strv(vn, "runtimes.unnamed.program", 1, 0, &u->program, err);
        else if (KEY("on"))
            rc = read_on(u, vn, err);
        else if (KEY("unless"))
            rc = ph_yaml_strv(vn, "runtimes.unnamed.unless", 1, 0, &u->unless, err);
        else if (KEY("if"))
            rc = ph_yaml_strv(vn, "runtimes.unnamed.if", 1, 0, &u->if_any, err);
        else if (KEY("why"))
            rc = ph_yaml_dup(vn, "runtimes.unnamed.why", &u->why, err);
        else if (KEY("use"))
            rc = ph_yaml_dup(vn, "runtimes.unnamed.use", &u->use, err);
        else if (KEY("anyway"))
            rc = ph_yaml_dup(vn, "runtimes.unnamed.anyway", &u->anyway, err);
        else
            ph_warn("%s:%d: unknown key `runtimes.unnamed.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
        if (rc < 0)
            return -1;
    }
    if (u->program.n == 0 || u->why == NULL || u->use == NULL)
        return ph_yaml_error(v, err, "`runtimes.unnamed` items need `program`, `why` and `use`: a refusal says "
                             "which runtime, why and what works");
    if (check_programs(v, "unnamed", &u->program, err) < 0)
        return -1;
    if (u->anyway != NULL && (u->anyway[0] == '\0' || u->anyway[strspn(u->anyway, "abcdefghijklmnopqrstuvwxyz0123456789-_")] != '\0'))
        return ph_yaml_error(v, err, "`runtimes.unnamed.anyway` is a mode's name or `none`, not `%s`", u->anyway);
    for (size_t i = 0; i < u->unless.n; i++)
        if (u->unless.v[i][strspn(u->unless.v[i], " \t")] == '\0')
            return ph_yaml_error(v, err, "`runtimes.unnamed.unless` items cannot be empty");
    for (size_t i = 0; i < u->if_any.n; i++)
        if (u->if_any.v[i][strspn(u->if_any.v[i], " \t")] == '\0')
            return ph_yaml_error(v, err, "`runtimes.unnamed.if` items cannot be empty");
    return 0;
}

static void
free_unnamed(ph_profile *p)
{
    for (size_t i = 0; i < p->n_unnamed; i++) {
        ph_strv_free(&p->unnamed[i].program);
        ph_strv_free(&p->unnamed[i].unless);
        ph_strv_free(&p->unnamed[i].if_any);
        free(p->unnamed[i].why);
        free(p->unnamed[i].use);
        free(p->unnamed[i].anyway);
    }
    free(p->unnamed);
    p->unnamed = NULL;
    p->n_unnamed = 0;
}

static int
read_rewrap(ph_profile_rewrap *w, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`runtimes.wrap` items must be mappings (program, wrap, why)");
    PH_YAML_FOREACH_PAIR(v, pair) {
        const ph_ynode *kn = pair->key, *vn = pair->value;
        const char *key = ph_yaml_key(pair);
        int rc = 0;

        if (KEY("program"))
            rc = ph_yaml_strv(vn, "runtimes.wrap.program", 1, 0, &w->program, err);
        else if (KEY("wrap"))
            rc = ph_yaml_strv(vn, "runtimes.wrap.wrap", 1, 0, &w->wrap, err);
        else if (KEY("why"))
            rc = ph_yaml_dup(vn, "runtimes.wrap.why", &w->why, err);
        else
            ph_warn("%s:%d: unknown key `runtimes.wrap.%s` (ignored)", ph_yaml_file(kn), kn->line, key);
        if (rc < 0)
            return -1;
    }
    if (w->program.n == 0 || w->wrap.n == 0 || w->why == NULL)
        return ph_yaml_error(v, err, "`runtimes.wrap` items need `program`, `wrap` and `why`: a start says which "
                             "runtime is recorded otherwise, and why");
    return check_programs(v, "wrap", &w->program, err);
}

static void
free_rewrap(ph_profile *p)
{
    for (size_t i = 0; i < p->n_rewrap; i++) {
        ph_strv_free(&p->rewrap[i].program);
        ph_strv_free(&p->rewrap[i].wrap);
        free(p->rewrap[i].why);
    }
    free(p->rewrap);
    p->rewrap = NULL;
    p->n_rewrap = 0;
}

int
ph_profile_read_runtimes(ph_profile *p, const ph_ynode *v, ph_error_t *err)
{
    if (v->kind != PH_Y_MAP)
        return ph_yaml_error(v, err, "`runtimes` must be a mapping (environment, refresh, after_exit, unnamed, wrap)");
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
        } else if (KEY("unnamed")) {
            if (vn->kind != PH_Y_SEQ)
                return ph_yaml_error(vn, err, "`runtimes.unnamed` must be a list of runtimes (program, why, use)");
            free_unnamed(p);
            if (vn->n > 0 && (p->unnamed = calloc(vn->n, sizeof *p->unnamed)) == NULL)
                return ph_fail(err, ENOMEM, "allocate");
            PH_YAML_FOREACH_ITEM(vn, item) {
                if (read_unnamed(&p->unnamed[p->n_unnamed++], *item, err) < 0)
                    return -1;
            }
        } else if (KEY("after_exit")) {
            if (vn->kind != PH_Y_SEQ)
                return ph_yaml_error(vn, err, "`runtimes.after_exit` must be a list (from, files, into, max_bytes)");
            free_after_exit(p);
            if (vn->n > 0 && (p->after_exit = calloc(vn->n, sizeof *p->after_exit)) == NULL)
                return ph_fail(err, ENOMEM, "allocate");
            PH_YAML_FOREACH_ITEM(vn, item) {
                if (read_exit_files(&p->after_exit[p->n_after_exit++], *item, err) < 0)
                    return -1;
            }
        } else if (KEY("wrap")) {
            if (vn->kind != PH_Y_SEQ)
                return ph_yaml_error(vn, err, "`runtimes.wrap` must be a list of runtimes (program, wrap, why)");
            free_rewrap(p);
            if (vn->n > 0 && (p->rewrap = calloc(vn->n, sizeof *p->rewrap)) == NULL)
                return ph_fail(err, ENOMEM, "allocate");
            PH_YAML_FOREACH_ITEM(vn, item) {
                if (read_rewrap(&p->rewrap[p->n_rewrap++], *item, err) < 0)
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
    free_unnamed(p);
    free_rewrap(p);
    free_after_exit(p);
}

int
ph_profile_exit_file(const ph_profile_exit_files *x, const char *name, unsigned type, uint64_t size)
{
    /* FNM_PERIOD: `*` takes no hidden file (a `.attach_pid` trigger) */
    if (type != S_IFREG || strchr(name, '/') != NULL || fnmatch(x->files, name, FNM_PERIOD) != 0)
        return PH_EXIT_FILE_PASS;
    return size > x->max_bytes ? PH_EXIT_FILE_OVER : PH_EXIT_FILE_TAKE;
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

/* Whether the words of W (spaces between) are consecutive words of S. */
static int
has_words(const char *s, const char *w)
{
    w += strspn(w, " \t");
    for (const char *p = s; *p;) {
        const char *a, *b;

        p += strspn(p, " \t");
        if (*p == '\0')
            break;
        for (a = p, b = w;;) {
            size_t ka = strcspn(a, " \t"), kb = strcspn(b, " \t");

            if (ka != kb || memcmp(a, b, ka) != 0)
                break;
            a += ka;
            b += kb;
            b += strspn(b, " \t");
            if (*b == '\0')
                return 1;
            a += strspn(a, " \t");
        }
        p += strcspn(p, " \t");
    }
    return 0;
}

/* The value of NAME (N bytes) in ENV, the last one; NULL. */
static const char *
env_value(const ph_strv *env, const char *name, size_t n)
{
    const char *v = NULL;

    for (size_t i = 0; env != NULL && i < env->n; i++)
        if (strncmp(env->v[i], name, n) == 0 && env->v[i][n] == '=')
            v = env->v[i] + n + 1;
    return v;
}

/* An `unless` (or `if`) item: `VAR=WORD` when it starts with a variable's
 * name. */
static int
unless_holds(const char *item, const char *args, const ph_strv *env)
{
    size_t n = strspn(item, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");

    if (n > 0 && item[n] == '=' && !(item[0] >= '0' && item[0] <= '9')) {
        const char *v = env_value(env, item, n);

        return v != NULL && has_words(v, item + n + 1);
    }
    return args != NULL && has_words(args, item);
}

/* Whether a glob of PROGRAMS matches PROGRAM. */
static int
program_matches(const ph_strv *programs, const char *program)
{
    for (size_t k = 0; k < programs->n; k++)
        if (fnmatch(programs->v[k], program, 0) == 0)
            return 1;
    return 0;
}

const ph_profile_unnamed *
ph_profile_unnamed_find(const ph_profile *p, int when, const char *program, const char *args, const ph_strv *env)
{
    if (program == NULL || program[0] == '\0')
        return NULL;
    for (size_t i = 0; i < p->n_unnamed; i++) {
        const ph_profile_unnamed *u = &p->unnamed[i];
        int hit;

        if (!(u->on & when))
            continue;
        hit = program_matches(&u->program, program);
        for (size_t k = 0; hit && k < u->unless.n; k++)
            hit = !unless_holds(u->unless.v[k], args, env);
        if (hit && u->if_any.n > 0) {
            size_t k = 0;

            while (k < u->if_any.n && !unless_holds(u->if_any.v[k], args, env))
                k++;
            hit = k < u->if_any.n;
        }
        if (hit)
            return u;
    }
    return NULL;
}

const ph_profile_rewrap *
ph_profile_rewrap_find(const ph_profile *p, const char *program)
{
    if (program == NULL || program[0] == '\0')
        return NULL;
    for (size_t i = 0; i < p->n_rewrap; i++)
        if (program_matches(&p->rewrap[i].program, program))
            return &p->rewrap[i];
    return NULL;
}

int
ph_profile_unnamed_any(const ph_profile *p, int when, int anyway_only)
{
    for (size_t i = 0; i < p->n_unnamed; i++)
        if ((p->unnamed[i].on & when) && (!anyway_only || p->unnamed[i].anyway != NULL))
            return 1;
    return 0;
}

int
ph_profile_attach_needs(const ph_profile *p, const char *program)
{
    return p->attach.needs.n == 0 || (program != NULL && program_matches(&p->attach.needs, program));
}
