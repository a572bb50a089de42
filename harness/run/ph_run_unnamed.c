/* ph_run_unnamed.c - a mode refused where it would name nothing of the
 * runtime it is about to profile (a profile's `runtimes.unnamed`,
 * ph_profile_runtimes.c), before anything is restarted or attached:
 *
 *   start    the service's program as its image runs it (ph_image_program:
 *            its links followed, `python3` -> python3.11), its command,
 *            and the environment the container will have: the image's,
 *            compose's, the mode's, the runtimes' extensions (so a node
 *            that `start` gives --perf-basic-prof is not refused).
 *   attach   each process of the running workload as the host's `ps`
 *            sees it (the backend's top: its arguments, then its
 *            arguments and initial environment), its program found in
 *            the workload's own files (the backend's archive).  No
 *            container is created for it and nothing runs in the service's.
 *
 * The refusal is one line: which program, why, and what works (the rule's
 * `use`); the hint names --allow-unnamed, which goes on anyway (the
 * native frames are still there).  A check that cannot run (an Engine
 * whose `ps` takes no such arguments) refuses nothing: it is said.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_escape.h"
#include "ph_image.h"
#include "ph_log.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* At most this many distinct programs of a container are looked at. */
#define ATTACH_PROGRAMS_MAX 32

/* TITLE: what the process shows instead of its program's name, or NULL.
 * ALLOWED (--allow-unnamed): only a rule whose `anyway` names another
 * mode (or none) refuses: going on under this one would be refused after
 * the attach, in the tools container. */
static int
refuse(const char *service, const ph_profile *p, int when, const char *program, const char *title, const char *args,
       const ph_strv *env, int allowed, ph_error_t *err)
{
    const char *base = program ? strrchr(program, '/') : NULL;
    const char *verb = when == PH_UNNAMED_ATTACH ? "attach" : "start";
    const ph_profile_unnamed *u;
    char esc[256], shown[512];

    base = base ? base + 1 : program;
    if ((u = ph_profile_unnamed_find(p, when, base, args, env)) == NULL || (allowed && u->anyway == NULL))
        return 0;
    ph_escape(esc, sizeof esc, base);
    if (title != NULL) {
        char t[128];
        snprintf(shown, sizeof shown, "%s (shown as `%s`: it set its title)", esc, ph_escape(t, sizeof t, title));
    } else {
        snprintf(shown, sizeof shown, "%s", esc);
    }
    ph_bad_input(err, "service `%s`, mode `%s`: %s %s; use %s", service, p->name, shown, u->why, u->use);
    if (u->anyway == NULL)
        return ph_error_hint(err, "to profile it under %s anyway, its native frames only: `profharness %s --mode %s "
                             "--allow-unnamed %s`", p->name, verb, p->name, service);
    if (strcmp(u->anyway, "none") == 0)
        return ph_error_hint(err, "--allow-unnamed does not go on under %s here: what the %s runs would refuse "
                             "it the same", p->name, verb);
    return ph_error_hint(err, "--allow-unnamed does not go on under %s here (what the %s runs would refuse it the "
                         "same); its native frames only: `profharness %s --mode %s --allow-unnamed %s`", p->name, verb,
                         verb, u->anyway, service);
}

int
ph_run_unnamed_refuse(const char *service, const ph_profile *p, int when, const char *program, const char *args,
                      const ph_strv *env, ph_error_t *err)
{
    return refuse(service, p, when, program, NULL, args, env, 0, err);
}

int
ph_run_unnamed_refuse_titled(const char *service, const ph_profile *p, int when, const char *program,
                             const char *title, const char *args, const ph_strv *env, ph_error_t *err)
{
    return refuse(service, p, when, program, title, args, env, 0, err);
}

int
ph_run_unnamed_program(const char *exe, const char *found, char *out, size_t len)
{
    static const char deleted[] = " (deleted)";
    const char *ours, *theirs;
    size_t n;

    if (len < 2)
        return 0;
    if (exe == NULL || exe[0] != '/') { /* no exe field, or "-": unreadable */
        snprintf(out, len, "%s", found ? found : "");
        return 0;
    }
    n = strlen(exe);
    if (n > sizeof deleted - 1 && strcmp(exe + n - (sizeof deleted - 1), deleted) == 0)
        n -= sizeof deleted - 1;
    snprintf(out, len, "%.*s", (int)n, exe);
    ours = strrchr(out, '/') + 1;
    theirs = found ? strrchr(found, '/') : NULL;
    theirs = theirs ? theirs + 1 : found;
    return theirs == NULL || theirs[0] == '\0' || strcmp(ours, theirs) != 0;
}

int
ph_run_ps_env(const char *args, const char *with_env, ph_strv *env)
{
    size_t n = strlen(args);
    char *cur = NULL;
    int rc = 0;

    if (strncmp(with_env, args, n) != 0 || (with_env[n] != ' ' && with_env[n] != '\0'))
        return 0;
    for (const char *t = with_env + n; rc == 0 && *t;) {
        size_t k, name;

        t += strspn(t, " ");
        if ((k = strcspn(t, " ")) == 0)
            break;
        name = strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
        if (name > 0 && name < k && t[name] == '=' && !(t[0] >= '0' && t[0] <= '9')) {
            if (cur != NULL)
                rc = ph_strv_push(env, cur);
            free(cur);
            cur = strndup(t, k);
            if (cur == NULL)
                rc = -1;
        } else if (cur != NULL) { /* a value's word: ps puts spaces between values too */
            size_t l = strlen(cur);
            char *more = realloc(cur, l + 1 + k + 1);

            if (more == NULL) {
                rc = -1;
            } else {
                cur = more;
                cur[l] = ' ';
                memcpy(cur + l + 1, t, k);
                cur[l + 1 + k] = '\0';
            }
        }
        t += k;
    }
    if (rc == 0 && cur != NULL)
        rc = ph_strv_push(env, cur);
    free(cur);
    return rc;
}

/* ---- start --------------------------------------------------------------- */

/* ENV's `K=V` strings pushed onto OUT. */
static int
push_env(ph_strv *out, const ph_strv *env)
{
    for (size_t i = 0; env != NULL && i < env->n; i++)
        if (strchr(env->v[i], '=') != NULL && ph_strv_push(out, env->v[i]) < 0)
            return -1;
    return 0;
}

/* FIRST (or nothing) and the words of A and B, joined with spaces; NULL
 * on ENOMEM. */
static char *
join_words(const char *first, const ph_strv *a, const ph_strv *b)
{
    const ph_strv *parts[2] = { a, b };
    size_t len = first ? strlen(first) + 1 : 1, o = 0;
    char *out;

    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; parts[k] != NULL && i < parts[k]->n; i++)
            len += strlen(parts[k]->v[i]) + 1;
    if ((out = malloc(len)) == NULL)
        return NULL;
    if (first != NULL)
        o += (size_t)snprintf(out, len, "%s", first);
    out[o] = '\0';
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; parts[k] != NULL && i < parts[k]->n; i++)
            o += (size_t)snprintf(out + o, len - o, "%s%s", o ? " " : "", parts[k]->v[i]);
    return out;
}

int
ph_run_unnamed_start(ph_run *r, const ph_service *s, const ph_profile *p, const char *program, const ph_strv *argv,
                     const ph_strv *image_env, ph_error_t *err)
{
    ph_strv env = { 0 }, all = { 0 };
    char *args = NULL;
    size_t i;
    int rc = -1;

    if (!ph_profile_unnamed_any(p, PH_UNNAMED_START, r->opts.allow_unnamed))
        return 0;
    /* the environment start gives the container (start_profiled's order) */
    for (i = 0; i < s->environment.n; i++) {
        const ph_kv *kv = &s->environment.v[i];
        char *line = NULL;

        if (kv->value != NULL && asprintf(&line, "%s=%s", kv->key, kv->value) >= 0 && ph_strv_push(&env, line) < 0) {
            free(line);
            goto nomem;
        }
        free(line);
    }
    for (i = 0; i < p->environment.n; i++) {
        char *line = NULL;

        if (asprintf(&line, "%s=%s", p->environment.v[i].key, p->environment.v[i].value ? p->environment.v[i].value
                                                                                        : "") >= 0 &&
            ph_strv_push(&env, line) < 0) {
            free(line);
            goto nomem;
        }
        free(line);
    }
    if (ph_run_env_extend(&env, image_env, &p->env_extend, err) < 0)
        goto out;
    if (push_env(&all, image_env) < 0 || push_env(&all, &env) < 0)
        goto nomem;
    if ((args = join_words(NULL, argv, NULL)) == NULL)
        goto nomem;
    rc = refuse(s->name, p, PH_UNNAMED_START, program, NULL, args, &all, r->opts.allow_unnamed, err);
    goto out;
nomem:
    ph_fail(err, ENOMEM, "allocate");
out:
    free(args);
    ph_strv_free(&all);
    ph_strv_free(&env);
    return rc;
}

/* ---- attach -------------------------------------------------------------- */

/* The column titled TITLE of TOP; -1. */
static int
top_column(const ph_proc_table *top, const char *title)
{
    for (size_t i = 0; i < top->titles.n; i++)
        if (strcmp(top->titles.v[i], title) == 0)
            return (int)i;
    return -1;
}

/* Column COL of ROW, or its last with COL -1; NULL. */
static const char *
top_cell(const ph_strv *row, int col)
{
    if (row->n == 0)
        return NULL;
    return col < 0 ? row->v[row->n - 1] : (size_t)col < row->n ? row->v[col] : NULL;
}

/* The arguments (the last column) of the process PID in TOP; NULL. */
static const char *
top_args(const ph_proc_table *top, const char *pid, int pid_col)
{
    for (size_t i = 0; i < top->n; i++) {
        const char *rp = top_cell(&top->rows[i], pid_col);

        if (rp != NULL && strcmp(rp, pid) == 0)
            return top_cell(&top->rows[i], -1);
    }
    return NULL;
}

/* Whether PROGRAM (a path) is one P's attach needs; its file name added
 * to RAN (escaped, comma-separated, once each; what does not fit is
 * `...`). */
static int
note_program(const ph_profile *p, const char *program, char *ran, size_t len)
{
    const char *base = strrchr(program, '/');
    char esc[128], item[136];
    size_t n = strlen(ran), k;
    int listed = 0;

    base = base ? base + 1 : program;
    if (base[0] == '\0')
        return 0;
    ph_escape(esc, sizeof esc, base);
    k = strlen(esc);
    for (const char *at = ran; !listed && (at = strstr(at, esc)) != NULL; at++)
        listed = (at == ran || at[-1] == ' ') && (at[k] == ',' || at[k] == '\0');
    snprintf(item, sizeof item, "%s%s", n ? ", " : "", esc);
    if (!listed && !strstr(ran, "...")) {
        if (n + strlen(item) + 6 < len)
            snprintf(ran + n, len - n, "%s", item);
        else if (n + 6 < len)
            snprintf(ran + n, len - n, "%s...", n ? ", " : "");
    }
    return ph_profile_attach_needs(p, base);
}

typedef struct seen_program {
    char *argv0, *path_var, *runs; /* runs: the program found ("" none) */
} seen_program;

int
ph_run_unnamed_attach(ph_run *r, ph_backend *b, const ph_service *s, const ph_profile *p, const char *id,
                      ph_error_t *err)
{
    ph_proc_table plain = { 0 }, with_env = { 0 }, exes = { 0 };
    ph_error_t sub = NULL;
    seen_program seen[ATTACH_PROGRAMS_MAX];
    char ran[256] = ""; /* the programs seen, for a refusal by attach.needs */
    size_t n_seen = 0, i;
    int pid_col, pid_col_env, pid_col_exe = -1, rc = -1, needed = 0, unseen = 0;

    if (!ph_profile_unnamed_any(p, PH_UNNAMED_ATTACH, r->opts.allow_unnamed) &&
        (r->opts.allow_unnamed || p->attach.needs.n == 0))
        return 0;
    if (b == NULL && ph_run_backend(r, &b, err) < 0)
        return -1;
    if (b->ops->top(b, id, "-ww -o pid,args", &plain, &sub) < 0 ||
        b->ops->top(b, id, "-ww -o pid,args e", &with_env, &sub) < 0 ||
        (pid_col = top_column(&plain, "PID")) < 0 || (pid_col_env = top_column(&with_env, "PID")) < 0) {
        ph_info("%s: cannot tell which runtimes run in container %.12s (%s); attaching %s without asking whether "
                "it names their functions", s->name, id, sub ? sub->msg : "the Engine's answer has no PID column",
                p->name);
        ph_error_free(&sub);
        rc = 0;
        goto out;
    }
    /* What each runs, as the kernel knows it (/proc/PID/exe): a process
     * that set its title (node's process.title) shows no program name in
     * its arguments.  A `ps` without the field (an older procps) is
     * no fault: the first argument is what there is. */
    if (b->ops->top(b, id, "-ww -o pid,exe", &exes, &sub) < 0 || (pid_col_exe = top_column(&exes, "PID")) < 0)
        ph_error_free(&sub);
    rc = 0;
    for (i = 0; i < plain.n; i++) {
        const char *pid = top_cell(&plain.rows[i], pid_col);
        const char *args = top_cell(&plain.rows[i], -1);
        const char *args_env, *path_var = NULL;
        char argv0[4096];
        char *words[1] = { argv0 };
        ph_strv env = { 0 };
        ph_image_program_t prog;
        size_t k;

        if (pid == NULL || args == NULL || (args_env = top_args(&with_env, pid, pid_col_env)) == NULL) {
            unseen++;
            continue;
        }
        if (ph_run_ps_env(args, args_env, &env) < 0) {
            ph_strv_free(&env);
            rc = ph_fail(err, ENOMEM, "allocate");
            break;
        }
        for (k = 0; k < env.n; k++)
            if (strncmp(env.v[k], "PATH=", 5) == 0)
                path_var = env.v[k] + 5;
        snprintf(argv0, sizeof argv0, "%.*s", (int)strcspn(args, " "), args);
        for (k = 0; k < n_seen; k++)
            if (strcmp(seen[k].argv0, argv0) == 0 && strcmp(seen[k].path_var, path_var ? path_var : "") == 0)
                break;
        if (argv0[0] == '\0' || (k == n_seen && n_seen == ATTACH_PROGRAMS_MAX)) {
            unseen++;
            ph_strv_free(&env);
            continue;
        }
        /* each program is looked for once; each process's arguments and
         * environment are read by the rules */
        if (k == n_seen) {
            if (ph_image_program_in(b, id, words, 1, path_var ? path_var : DEFAULT_PATH, "/", &prog, err) < 0) {
                ph_strv_free(&env);
                rc = -1;
                break;
            }
            if (prog.path_skipped > 0) {
                char esc_a[300], esc_p[300];

                ph_warn("%s: process %s's PATH has more than %d distinct directories: `%s` was looked for in the "
                        "first %d only (%zu entries skipped)", s->name, ph_escape(esc_p, sizeof esc_p, pid),
                        PH_IMAGE_PATH_DIRS, ph_escape(esc_a, sizeof esc_a, argv0), PH_IMAGE_PATH_DIRS,
                        prog.path_skipped);
            }
            seen[k].argv0 = strdup(argv0);
            seen[k].path_var = strdup(path_var ? path_var : "");
            seen[k].runs = strdup(prog.runs);
            n_seen++;
            if (seen[k].argv0 == NULL || seen[k].path_var == NULL || seen[k].runs == NULL) {
                ph_strv_free(&env);
                rc = ph_fail(err, ENOMEM, "allocate");
                break;
            }
        }
        {
            const char *exe = pid_col_exe >= 0 ? top_args(&exes, pid, pid_col_exe) : NULL;
            char program[4096], *more;

            int allowed = r->opts.allow_unnamed;

            if (!ph_run_unnamed_program(exe, seen[k].runs, program, sizeof program)) {
                rc = refuse(s->name, p, PH_UNNAMED_ATTACH, program, NULL, args, &env, allowed, err);
            } else if ((more = join_words(args, &s->entrypoint, &s->command)) == NULL) {
                rc = ph_fail(err, ENOMEM, "allocate");
            } else {
                /* its own arguments are gone: what compose started it with stands in */
                rc = refuse(s->name, p, PH_UNNAMED_ATTACH, program, argv0, more, &env, allowed, err);
                free(more);
            }
            if (rc == 0 && program[0] == '\0')
                unseen++; /* what it runs is not known: it may be a JVM */
            else if (rc == 0)
                needed |= note_program(p, program, ran, sizeof ran);
        }
        ph_strv_free(&env);
        if (rc < 0)
            break;
    }
    /* none of its processes runs what the attach command can join (a
     * process whose program could not be looked at may) */
    if (rc == 0 && !needed && !unseen && p->attach.needs.n > 0 && !r->opts.allow_unnamed && ran[0] != '\0') {
        ph_bad_input(err, "service `%s`, mode `%s`: its processes run %s, %s; use %s", s->name, p->name, ran,
                     p->attach.needs_why, p->attach.needs_use);
        rc = ph_error_hint(err, "if one of them runs such a runtime under another name (embedded: it maps libjvm.so "
                           "or a libpython3), `profharness attach --mode %s --allow-unnamed %s` lets the tools "
                           "container look", p->name, s->name);
    }
out:
    for (i = 0; i < n_seen; i++) {
        free(seen[i].argv0);
        free(seen[i].path_var);
        free(seen[i].runs);
    }
    ph_proc_table_clear(&plain);
    ph_proc_table_clear(&with_env);
    ph_proc_table_clear(&exes);
    return rc;
}
