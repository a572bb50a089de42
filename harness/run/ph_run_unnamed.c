/* ph_run_unnamed.c - a mode refused where it would name nothing of the
 * runtime it is about to profile (a profile's `runtimes.unnamed`,
 * ph_profile_runtimes.c), before anything is restarted or attached:
 *
 *   start    the service's program as its image runs it (ph_image_program:
 *            its links followed, `python3` -> python3.11), its command,
 *            and the environment the container will have: the image's,
 *            compose's, the mode's, the runtimes' extensions (so a node
 *            that `start` gives --perf-basic-prof is not refused).
 *   attach   each process of the running container as the Engine's host
 *            `ps` sees it (GET /containers/{id}/top: its arguments, then
 *            its arguments and initial environment), its program found in
 *            the container's own files through the archive endpoint.  No
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

#include "ph_image.h"
#include "ph_log.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* At most this many distinct programs of a container are looked at. */
#define ATTACH_PROGRAMS_MAX 32

int
ph_run_unnamed_refuse(const char *service, const ph_profile *p, int when, const char *program, const char *args,
                      const ph_strv *env, ph_error_t *err)
{
    const char *base = program ? strrchr(program, '/') : NULL;
    const ph_profile_unnamed *u;

    base = base ? base + 1 : program;
    if ((u = ph_profile_unnamed_find(p, when, base, args, env)) == NULL)
        return 0;
    ph_bad_input(err, "service `%s`, mode `%s`: %s %s; use %s", service, p->name, base, u->why, u->use);
    return ph_error_hint(err, "to profile it under %s anyway, its native frames only: `profharness %s --mode %s "
                         "--allow-unnamed %s`", p->name, when == PH_UNNAMED_ATTACH ? "attach" : "start", p->name,
                         service);
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
push_env(ph_strv *out, json_t *env)
{
    size_t i;
    json_t *x;

    json_array_foreach(env, i, x) {
        const char *kv = json_string_value(x);

        if (kv != NULL && strchr(kv, '=') != NULL && ph_strv_push(out, kv) < 0)
            return -1;
    }
    return 0;
}

int
ph_run_unnamed_start(ph_run *r, const ph_service *s, const ph_profile *p, const char *program, json_t *argv,
                     json_t *image_env, ph_error_t *err)
{
    json_t *env = json_array(), *x;
    ph_strv all = { 0 };
    char *args = NULL;
    size_t i, len = 0;
    int rc = -1;

    if (r->opts.allow_unnamed || !ph_profile_unnamed_any(p, PH_UNNAMED_START)) {
        json_decref(env);
        return 0;
    }
    if (env == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    /* the environment start gives the container (start_profiled's order) */
    for (i = 0; i < s->environment.n; i++) {
        const ph_kv *kv = &s->environment.v[i];
        char *line = NULL;

        if (kv->value != NULL && asprintf(&line, "%s=%s", kv->key, kv->value) >= 0)
            json_array_append_new(env, json_string(line));
        free(line);
    }
    for (i = 0; i < p->environment.n; i++) {
        char *line = NULL;

        if (asprintf(&line, "%s=%s", p->environment.v[i].key, p->environment.v[i].value ? p->environment.v[i].value
                                                                                        : "") >= 0)
            json_array_append_new(env, json_string(line));
        free(line);
    }
    if (ph_run_env_extend(env, image_env, &p->env_extend, err) < 0)
        goto out;
    if (push_env(&all, image_env) < 0 || push_env(&all, env) < 0) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    json_array_foreach(argv, i, x) len += strlen(json_string_value(x) ? json_string_value(x) : "") + 1;
    if ((args = calloc(1, len + 1)) == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        goto out;
    }
    len = 0;
    json_array_foreach(argv, i, x) {
        const char *w = json_string_value(x) ? json_string_value(x) : "";
        size_t k = strlen(w);

        if (i > 0)
            args[len++] = ' ';
        memcpy(args + len, w, k);
        len += k;
    }
    args[len] = '\0';
    rc = ph_run_unnamed_refuse(s->name, p, PH_UNNAMED_START, program, args, &all, err);
out:
    free(args);
    ph_strv_free(&all);
    json_decref(env);
    return rc;
}

/* ---- attach -------------------------------------------------------------- */

/* The column titled TITLE of TOP's answer; -1. */
static int
top_column(json_t *top, const char *title)
{
    size_t i;
    json_t *x;

    json_array_foreach(json_object_get(top, "Titles"), i, x) {
        if (json_string_value(x) && strcmp(json_string_value(x), title) == 0)
            return (int)i;
    }
    return -1;
}

/* The arguments (the last column) of the process PID in TOP; NULL. */
static const char *
top_args(json_t *top, const char *pid, int pid_col)
{
    size_t i;
    json_t *row;

    json_array_foreach(json_object_get(top, "Processes"), i, row) {
        const char *rp = json_string_value(json_array_get(row, (size_t)pid_col));

        if (rp != NULL && strcmp(rp, pid) == 0)
            return json_string_value(json_array_get(row, json_array_size(row) - 1));
    }
    return NULL;
}

typedef struct seen_program {
    char *argv0, *path_var, *runs; /* runs: the program found ("" none) */
} seen_program;

int
ph_run_unnamed_attach(ph_run *r, const ph_service *s, const ph_profile *p, const char *id, ph_error_t *err)
{
    ph_engine *e;
    json_t *plain = NULL, *with_env = NULL, *row;
    ph_error_t sub = NULL;
    seen_program seen[ATTACH_PROGRAMS_MAX];
    size_t n_seen = 0, i;
    int pid_col, pid_col_env, rc = -1;

    if (r->opts.allow_unnamed || !ph_profile_unnamed_any(p, PH_UNNAMED_ATTACH))
        return 0;
    if (ph_run_engine(r, &e, err) < 0)
        return -1;
    if (ph_engine_container_top(e, id, "-ww -o pid,args", &plain, &sub) < 0 ||
        ph_engine_container_top(e, id, "-ww -o pid,args e", &with_env, &sub) < 0 ||
        (pid_col = top_column(plain, "PID")) < 0 || (pid_col_env = top_column(with_env, "PID")) < 0) {
        ph_info("%s: cannot tell which runtimes run in container %.12s (%s); attaching %s without asking whether "
                "it names their functions", s->name, id, sub ? sub->msg : "the Engine's answer has no PID column",
                p->name);
        ph_error_free(&sub);
        rc = 0;
        goto out;
    }
    rc = 0;
    json_array_foreach(json_object_get(plain, "Processes"), i, row) {
        const char *pid = json_string_value(json_array_get(row, (size_t)pid_col));
        const char *args = json_string_value(json_array_get(row, json_array_size(row) - 1));
        const char *args_env, *path_var = NULL;
        char argv0[4096];
        char *words[1] = { argv0 };
        ph_strv env = { 0 };
        ph_image_program_t prog;
        size_t k;

        if (pid == NULL || args == NULL || (args_env = top_args(with_env, pid, pid_col_env)) == NULL)
            continue;
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
            ph_strv_free(&env);
            continue;
        }
        /* each program is looked for once; each process's arguments and
         * environment are read by the rules */
        if (k == n_seen) {
            if (ph_image_program_in(e, id, words, 1, path_var ? path_var : DEFAULT_PATH, "/", &prog, err) < 0) {
                ph_strv_free(&env);
                rc = -1;
                break;
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
        rc = ph_run_unnamed_refuse(s->name, p, PH_UNNAMED_ATTACH, seen[k].runs, args, &env, err);
        ph_strv_free(&env);
        if (rc < 0)
            break;
    }
out:
    for (i = 0; i < n_seen; i++) {
        free(seen[i].argv0);
        free(seen[i].path_var);
        free(seen[i].runs);
    }
    json_decref(plain);
    json_decref(with_env);
    return rc;
}
