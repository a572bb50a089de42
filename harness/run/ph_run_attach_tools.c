/* ph_run_attach_tools.c - the tools container an attach makes beside a
 * running service (ph-init, then ph-attach with the mode's attach
 * command, in the service's PID namespace), and what a stop says of it
 * once collected.  Below attach on one Engine (ph_run_attach.c), attach
 * on a stack's nodes (ph_run_placed_attach.c) and collect, which all call
 * it; it calls none of them.
 */
#include "ph_run_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_log.h"
#include "ph_signal.h"
#include "ph_tar.h"
#include "ph_util.h"

/* How long a tools container has to say it has joined the service (a
 * JVM's agent load and a Node's inspector take seconds), and to stay up
 * after: a profiler that cannot open its target (perf without its
 * events, a reader refused by the process) exits within the second. */
#define ATTACH_READY_S 60L
#define ATTACH_SETTLE_S 1L
#define ATTACH_LOG_MAX (64u << 10)         /* of its output kept: the newest, for the text and the last lines */
#define ATTACH_LOG_READ_MAX (16ull << 20)  /* of its output read at one look */
#define ATTACH_TAIL_LINES 4

/* ph-init, then ph-attach with the mode's attach command, onto ARGV.
 * The files it copies are held to what the run's collection will take
 * (the profile's max_bytes, else the default: attach has no limit flags,
 * stop does). */
static int
attach_argv(const ph_profile *p, const char *service, const char *out, const char *run_id, ph_strv *argv)
{
    const ph_profile_attach *a = &p->attach;

    if (ph_run_shim_argv(p, "wrapper", a->signal, out, argv) < 0 ||
        ph_strv_push(argv, "/opt/profharness/bin/ph-attach") < 0)
        return -1;
    if (a->copy_mapped) {
        char dir[PATH_MAX], max[32];
        uint64_t m = p->collect.max_bytes ? p->collect.max_bytes : PH_TAR_DEFAULT_MAX_BYTES;

        snprintf(dir, sizeof dir, "%s/%s", out, a->copy_mapped);
        snprintf(max, sizeof max, "%" PRIu64, m == PH_TAR_NO_LIMIT ? (uint64_t)INT64_MAX : m);
        if (ph_strv_push(argv, "--copy-mapped") < 0 || ph_strv_push(argv, dir) < 0 ||
            ph_strv_push(argv, "--copy-max") < 0 || ph_strv_push(argv, max) < 0)
            return -1;
    }
    if (ph_strv_push(argv, "--") < 0)
        return -1;
    for (size_t i = 0; i < a->command.n; i++) {
        char *w = ph_profile_expand(a->command.v[i], out, service, p->name, run_id);
        int rc = w == NULL ? -1 : ph_strv_push(argv, w);

        free(w);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* What a tools container said: the newest ATTACH_LOG_MAX bytes of it
 * (older ones dropped half a buffer at a time), and whether READY was in
 * what was read, dropped or kept (looked for in the whole buffer before
 * each drop, so a text across the cut is found). */
typedef struct attach_log {
    const char *ready;
    int said;
    unsigned long long read;
    size_t len;
    char buf[ATTACH_LOG_MAX];
} attach_log;

static void
attach_log_reset(attach_log *l)
{
    l->said = 0;
    l->read = 0;
    l->len = 0;
    l->buf[0] = '\0';
}

static int
attach_log_cb(void *ud, const char *data, size_t len)
{
    attach_log *l = ud;

    l->read += len;
    while (len > 0) {
        size_t room = sizeof l->buf - 1 - l->len, take = len < room ? len : room;

        if (room == 0) {
            size_t drop = l->len - sizeof l->buf / 2;

            l->said |= l->ready != NULL && strstr(l->buf, l->ready) != NULL;
            memmove(l->buf, l->buf + drop, l->len - drop);
            l->len -= drop;
            l->buf[l->len] = '\0';
            continue;
        }
        memcpy(l->buf + l->len, data, take);
        l->len += take;
        l->buf[l->len] = '\0';
        data += take;
        len -= take;
    }
    return l->read >= ATTACH_LOG_READ_MAX ? PH_BACKEND_DATA_ENOUGH : 0;
}

/* The last ATTACH_TAIL_LINES lines of L, each without the timestamp the
 * backend leads it with, joined by " | " into OUT. */
static void
attach_log_tail(const attach_log *l, char *out, size_t size)
{
    const char *end = l->buf + l->len, *from;
    size_t used = 0;
    int lines = 0;

    while (end > l->buf && end[-1] == '\n')
        end--;
    for (from = end; from > l->buf; from--)
        if (from[-1] == '\n' && ++lines == ATTACH_TAIL_LINES)
            break;
    out[0] = '\0';
    while (from < end && used + 4 < size) {
        const char *nl = memchr(from, '\n', (size_t)(end - from)), *sp;
        const char *stop = nl ? nl : end;

        /* "2026-12-03T05:59:01.123456789Z text": the text */
        if ((sp = memchr(from, ' ', (size_t)(stop - from))) != NULL && sp - from >= 20 && sp[-1] == 'Z' &&
            from[4] == '-')
            from = sp + 1;
        used += (size_t)snprintf(out + used, size - used, "%s%.*s", used ? " | " : "", (int)(stop - from), from);
        if (used >= size)
            used = size - 1;
        from = stop + 1;
    }
}

/* Wait until the tools container ID (just started on B) has joined: the
 * profile's `attach.ready` text is in its output (no such key: at once),
 * and it is still up ATTACH_SETTLE_S after.  A container that exits
 * first has refused: -1, *err with its code and last lines, the
 * container removed (it joined nothing, so it holds nothing).  Still
 * silent at ATTACH_READY_S: said, 0 (it runs, and `stop` collects). */
static int
attach_joined(ph_backend *b, const char *id, const ph_profile *p, const char *service, ph_error_t *err)
{
    const char *ready = p->attach.ready;
    attach_log *l = calloc(1, sizeof *l);
    char tail[1024];
    long code = -1, waited = 0;
    int said = ready == NULL, timed_out = 1, rc = -1;

    if (l == NULL)
        return ph_fail(err, ENOMEM, "allocate");
    l->ready = ready;
    ph_interrupt_begin();
    for (;;) {
        if (!said) {
            attach_log_reset(l);
            if (b->ops->log_all(b, id, attach_log_cb, l, err) < 0)
                goto out;
            said = l->said || strstr(l->buf, ready) != NULL;
        }
        if (b->ops->wait(b, id, ATTACH_SETTLE_S, &code, &timed_out, err) < 0)
            goto out;
        if (!timed_out || ph_interrupted())
            break;
        if (said) {
            rc = 0;
            goto out;
        }
        if ((waited += ATTACH_SETTLE_S) >= ATTACH_READY_S) {
            ph_warn("%s: %s has not said it joined the service within %ld s (its output has no `%s`); it keeps "
                    "running: `profharness logs %s` shows what it says, `profharness stop %s` detaches and "
                    "collects", service, p->name, ATTACH_READY_S, ready, service, service);
            rc = 0;
            goto out;
        }
    }
    if (timed_out) { /* interrupted, the tools container up: stop collects it */
        ph_interrupt_fail(err, ph_interrupted());
        ph_error_hint(err, "%s is attached already, or about to be: `profharness stop %s` detaches and collects",
                      p->name, service);
        goto out;
    }
    attach_log_reset(l);
    if (b->ops->log_all(b, id, attach_log_cb, l, err) < 0)
        goto out;
    attach_log_tail(l, tail, sizeof tail);
    ph_bad_input(err, "%s ended (exit %ld) before it joined the service%s%s", p->name, code, tail[0] ? ": " : "",
                 tail);
    {
        ph_error_t rerr = NULL;

        if (b->ops->remove(b, id, 1, &rerr) < 0) {
            ph_error_hint(err, "the service was not touched; its ended tools container %.12s is left: %s", id,
                          rerr ? rerr->msg : "?");
            ph_error_free(&rerr);
        } else {
            ph_error_hint(err, "the service was not touched, and its tools container is removed");
        }
    }
out:
    ph_interrupt_end();
    free(l);
    return rc;
}

int
ph_run_attach_make(ph_run *r, ph_backend *b, const ph_run_attach_to *to, ph_error_t *err)
{
    const ph_service *s = to->service;
    const ph_profile *p = to->profile;
    ph_workload_spec spec = PH_WORKLOAD_SPEC_INIT;
    char *rec = NULL, *id = NULL, started[32], out[PATH_MAX];
    int rc = -1;

    ph_run_utc_iso(started, sizeof started);
    snprintf(out, sizeof out, "%s/%s", PH_CONTAINER_OUT, s->name);
    rec = ph_rundir_profile_record(p);
    /* No network: the profiler reads the service's processes, nothing
     * else (unless the mode joins the service's own, for what listens on
     * its loopback: `attach.network: service`).  The stop timeout outlasts the shim's protocol, as for a
     * profiled workload. */
    spec.name = to->name; /* the spec's name, image, pid_of and net_of are the caller's */
    spec.image = to->tools;
    spec.set_entrypoint = spec.set_cmd = 1;
    spec.stop_signal = strdup("SIGTERM");
    spec.stop_grace_s = ph_run_stop_budget_s(p);
    spec.pid_of = to->target;
    spec.network_none = 1;
    if (p->attach.network_service) /* the profile's `attach.network: service` */
        spec.net_of = to->target;
    spec.no_restart = 1;
    if (spec.stop_signal == NULL || attach_argv(p, s->name, out, to->run_id, &spec.entrypoint) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_PROJECT, r->compose->project) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_SERVICE, s->name) < 0 || ph_kvv_set(&spec.labels, PH_LABEL_MODE, p->name) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_RUN, to->run_id) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_STARTED, started) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_OUTDIR, to->host_dir) < 0 ||
        ph_kvv_set(&spec.labels, PH_LABEL_ATTACHED, to->target) < 0 ||
        (rec != NULL && ph_kvv_set(&spec.labels, PH_LABEL_PROFILE, rec) < 0))
        goto nomem;
    for (size_t i = 0; to->labels != NULL && i < to->labels->n; i++)
        if (ph_kvv_set(&spec.labels, to->labels->v[i].key, to->labels->v[i].value) < 0)
            goto nomem;
    for (size_t i = 0; i < p->attach.cap_add.n; i++)
        if (ph_strv_push(&spec.cap_add, p->attach.cap_add.v[i]) < 0)
            goto nomem;
    for (size_t i = 0; i < p->attach.security_opt.n; i++)
        if (ph_strv_push(&spec.security_opt, p->attach.security_opt.v[i]) < 0)
            goto nomem;
    for (size_t i = 0; i < p->attach.cap_add_if_known.n; i++)
        if (ph_strv_push(&spec.cap_add_if_known, p->attach.cap_add_if_known.v[i]) < 0)
            goto nomem;
    if (b->ops->run(b, &spec, &id, err) < 0 || attach_joined(b, id, p, s->name, err) < 0) {
        ph_error_wrap(err, "attach %s to `%s`", p->name, s->name);
        goto out;
    }
    rc = 0;
    goto out;
nomem:
    ph_fail(err, ENOMEM, "build the tools container's spec");
out:
    ph_workload_spec_clear(&spec);
    free(rec);
    free(id);
    return rc;
}

void
ph_run_attach_describe(ph_run *r, const ph_workload *c, json_t *record)
{
    const char *target = c->attached;
    const char *service = c->service, *mode = c->mode;
    ph_workload info;
    ph_backend *b;
    ph_error_t err = NULL;
    int found = 0, running;

    if (target == NULL || (record != NULL && json_is_true(json_object_get(record, "stop_requested"))))
        return; /* not attached, or detached by stop as it should be */
    if (ph_run_backend(r, &b, &err) < 0 || b->ops->inspect(b, target, &info, &found, &err) < 0) {
        ph_error_free(&err);
        return;
    }
    running = found && (ph_workload_running(&info) || info.state == PH_WL_PAUSED);
    ph_workload_clear(&info);
    if (running)
        return;
    if (record == NULL)
        ph_warn("%s: the service exited while %s was attached: the kernel ends every process of a PID namespace "
                "when its first process exits, so %s was killed with it, before it could write its end; what it "
                "wrote until then is collected, its last lines may be missing", service, mode, mode);
    else
        ph_info("%s: the service exited while %s was attached; %s ended with it and wrote its end", service, mode,
                mode);
}
