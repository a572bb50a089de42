/* ph_engine_output.c - what runs in a container says: a command run in it
 * (exec) with its output and exit status, and a container's whole log
 * with the Engine's timestamps (see ph_engine.h). */
#include "ph_engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define SERVICE_LOG_TIMEOUT_S 600L

typedef struct out_ctx {
    ph_engine_demux demux;
    int tty;
    int enough; /* the callback had enough: the stream ends where it stopped */
    ph_engine_data_cb cb;
    void *ud;
    ph_error_t *err;
} out_ctx;

static int
out_cb(void *ud, const char *data, size_t len)
{
    out_ctx *o = ud;
    int rc = o->tty ? o->cb(o->ud, data, len) : ph_engine_demux_feed(&o->demux, data, len, o->cb, o->ud, o->err);

    if (rc == PH_ENGINE_DATA_ENOUGH)
        o->enough = 1;
    return rc;
}

int
ph_engine_exec(ph_engine *e, const char *id, const char *const *argv, const char *const *env, long timeout_s,
               ph_engine_data_cb data_cb, void *ud, long *exit_code, ph_error_t *err)
{
    char what[300];
    json_t *cmd = json_array(), *body = NULL, *resp = NULL, *info = NULL, *start = NULL;
    const char *exec_id;
    out_ctx o = { .cb = data_cb ? data_cb : ph_engine_discard_cb, .ud = ud, .err = err };
    ph_engine_req create = { .what = what, .method = "POST", .path = "/containers/{id}/exec", .arg = { id },
                             .kind = "container id", .resp = &resp };
    int rc = -1;

    snprintf(what, sizeof what, "run `%.100s` in container `%.100s`", argv && argv[0] ? argv[0] : "",
             id ? id : "");
    if (ph_engine_check(e, what, err) < 0)
        goto out;
    if (argv == NULL || argv[0] == NULL || exit_code == NULL || cmd == NULL) {
        ph_bad_input(err, "%s: no command", what);
        goto out;
    }
    for (size_t i = 0; argv[i] != NULL; i++)
        if (json_array_append_new(cmd, json_string(argv[i])) < 0) {
            ph_bad_input(err, "%s: argument %zu is not UTF-8", what, i);
            goto out;
        }
    body = json_pack("{s:O, s:b, s:b, s:b}", "Cmd", cmd, "AttachStdout", 1, "AttachStderr", 1, "Tty", 0);
    for (size_t i = 0; body != NULL && env != NULL && env[i] != NULL; i++) {
        json_t *ev = json_object_get(body, "Env");

        if (ev == NULL)
            json_object_set_new(body, "Env", ev = json_array());
        json_array_append_new(ev, json_string(env[i]));
    }
    create.body = body;
    if (body == NULL || ph_engine_call(e, &create, err) < 0)
        goto out;
    exec_id = json_string_value(json_object_get(resp, "Id"));
    if (exec_id == NULL) {
        ph_fail(err, 0, "%s: the Engine gave no exec id", what);
        goto out;
    }
    {
        /* Not upgraded: the Engine writes the framed output and closes
         * when the command ends. */
        ph_engine_req run = { .what = what, .method = "POST", .path = "/exec/{id}/start", .arg = { exec_id },
                              .kind = "exec id", .data_cb = out_cb, .data_ud = &o,
                              .timeout_s = timeout_s > 0 ? timeout_s : PH_ENGINE_NO_TIMEOUT,
                              .quiet = 1 /* the command may work in silence */ };
        ph_engine_req look = { .what = what, .method = "GET", .path = "/exec/{id}/json", .arg = { exec_id },
                               .kind = "exec id", .resp = &info };
        json_t *code;

        start = json_pack("{s:b, s:b}", "Detach", 0, "Tty", 0);
        run.body = start;
        if (start == NULL || ph_engine_call(e, &run, err) < 0 || ph_engine_demux_finish(&o.demux, err) < 0 ||
            ph_engine_call(e, &look, err) < 0)
            goto out;
        code = json_object_get(info, "ExitCode");
        if (json_is_true(json_object_get(info, "Running")) || !json_is_integer(code)) {
            ph_fail(err, 0, "%s: it is still running", what);
            goto out;
        }
        *exit_code = (long)json_integer_value(code);
    }
    rc = 0;
out:
    json_decref(cmd);
    json_decref(body);
    json_decref(start);
    json_decref(resp);
    json_decref(info);
    return rc;
}

int
ph_engine_container_log_all(ph_engine *e, const char *id, ph_engine_data_cb data_cb, void *ud, ph_error_t *err)
{
    char what[300];
    json_t *info = NULL;
    out_ctx o = { .cb = data_cb, .ud = ud, .err = err };
    ph_engine_req r = { .what = what, .method = "GET", .path = "/containers/{id}/logs", .arg = { id },
                        .kind = "container id",
                        .query = { { "stdout", "1" }, { "stderr", "1" }, { "timestamps", "1" } },
                        .data_cb = out_cb, .data_ud = &o, .timeout_s = SERVICE_LOG_TIMEOUT_S };
    int found = 0;

    snprintf(what, sizeof what, "the log of container `%.200s`", id ? id : "");
    if (data_cb == NULL)
        return ph_bad_input(err, "%s: no callback", what);
    if (ph_engine_container_inspect(e, id, &info, &found, err) < 0)
        return ph_error_wrap(err, "%s", what);
    if (!found)
        return ph_fail(err, 0, "%s: No such container", what);
    o.tty = json_is_true(json_object_get(json_object_get(info, "Config"), "Tty"));
    json_decref(info);
    if (ph_engine_call(e, &r, err) < 0)
        return -1;
    return o.tty || o.enough ? 0 : ph_engine_demux_finish(&o.demux, err);
}
