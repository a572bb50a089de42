/* ph_engine_logs.c - GET /containers/{id}/logs, demultiplexed (see
 * ph_engine_container_logs and the ph_engine_demux pure core in
 * ph_engine.h). */
#include "ph_engine_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LOGS_TIMEOUT_S 600L

int
ph_engine_demux_feed(ph_engine_demux *d, const char *data, size_t len, ph_engine_data_cb out_cb, void *ud,
                     ph_error_t *err)
{
    if (d == NULL || (data == NULL && len > 0) || out_cb == NULL)
        return ph_bad_input(err, "demultiplex a log stream: missing argument");
    while (len > 0) {
        if (d->remaining == 0 && d->hdr_len < 8) {
            size_t take = 8 - d->hdr_len < len ? 8 - d->hdr_len : len;

            memcpy(d->hdr + d->hdr_len, data, take);
            d->hdr_len += take;
            data += take;
            len -= take;
            d->offset += take;
            if (d->hdr_len < 8)
                break;
            /* [stream, 0, 0, 0, size32be]: stream 0 stdin, 1 stdout, 2 stderr. */
            if (d->hdr[0] > 2 || d->hdr[1] || d->hdr[2] || d->hdr[3])
                return ph_fail(err, 0, "demultiplex a log stream: bad frame header at byte %llu "
                                       "(%02x %02x %02x %02x); is it a TTY stream?",
                               d->offset - 8, d->hdr[0], d->hdr[1], d->hdr[2], d->hdr[3]);
            d->stream = d->hdr[0];
            d->remaining = ((size_t)d->hdr[4] << 24) | ((size_t)d->hdr[5] << 16) | ((size_t)d->hdr[6] << 8) |
                           (size_t)d->hdr[7];
            if (d->remaining == 0)
                d->hdr_len = 0; /* an empty frame: next header */
            continue;
        }
        {
            size_t take = d->remaining < len ? d->remaining : len;
            int rc = out_cb(ud, data, take);

            if (rc < 0)
                return -1; /* the callback's error */
            data += take;
            len -= take;
            d->offset += take;
            d->remaining -= take;
            if (d->remaining == 0)
                d->hdr_len = 0;
            if (rc == PH_ENGINE_DATA_ENOUGH)
                return rc;
        }
    }
    return 0;
}

int
ph_engine_demux_finish(const ph_engine_demux *d, ph_error_t *err)
{
    if (d == NULL)
        return ph_bad_input(err, "demultiplex a log stream: missing argument");
    if (d->hdr_len != 0 || d->remaining != 0)
        return ph_fail(err, 0, "demultiplex a log stream: it ends inside a frame at byte %llu", d->offset);
    return 0;
}

typedef struct logs_ctx {
    int fd;
    int tty;
    ph_engine_demux demux;
    ph_engine_data_cb out;  /* where payloads go */
    void *out_ud;
    const char *what;
    ph_error_t *err;
} logs_ctx;

static int
write_all_cb(void *ud, const char *p, size_t n)
{
    logs_ctx *l = ud;

    while (n > 0) {
        ssize_t w = write(l->fd, p, n);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return ph_fail(l->err, errno, "%s: write to fd %d", l->what, l->fd);
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int
logs_cb(void *ud, const char *data, size_t len)
{
    logs_ctx *l = ud;

    if (l->tty)
        return l->out(l->out_ud, data, len);
    return ph_engine_demux_feed(&l->demux, data, len, l->out, l->out_ud, l->err);
}

/* GET /containers/{id}/logs of the streams asked (STREAMS: 1 stdout, 2
 * stderr, 3 both) into L->out. */
static int
logs_call(ph_engine *e, const char *id, int streams, int follow, long tail, logs_ctx *l, ph_error_t *err)
{
    char t[32];
    json_t *info = NULL;
    /* A followed stream lasts as long as the container: no timeout. */
    ph_engine_req r = { .what = l->what, .method = "GET", .path = "/containers/{id}/logs", .arg = { id },
                        .kind = "container id",
                        .query = { { "stdout", streams & 1 ? "1" : "0" }, { "stderr", streams & 2 ? "1" : "0" },
                                   { "follow", follow ? "1" : "0" }, { "tail", t } },
                        .data_cb = logs_cb, .data_ud = l,
                        .timeout_s = follow ? PH_ENGINE_NO_TIMEOUT : LOGS_TIMEOUT_S,
                        .quiet = follow /* a quiet service is no stalled Engine */ };
    int found = 0;

    /* The stream is framed unless the container has a TTY; the Engine's
     * 1.41 answer does not say which (1.42 has a Content-Type for it), so
     * ask rather than guess from the first byte. */
    if (ph_engine_container_inspect(e, id, &info, &found, err) < 0)
        return ph_error_wrap(err, "%s", l->what);
    if (!found)
        return ph_fail(err, 0, "%s: No such container", l->what);
    l->tty = json_is_true(json_object_get(json_object_get(info, "Config"), "Tty"));
    json_decref(info);
    if (tail >= 0)
        snprintf(t, sizeof t, "%ld", tail);
    else
        snprintf(t, sizeof t, "all");
    if (ph_engine_call(e, &r, err) < 0)
        return -1;
    if (!l->tty && ph_engine_demux_finish(&l->demux, err) < 0)
        return ph_error_wrap(err, "%s", l->what);
    return 0;
}

int
ph_engine_container_logs(ph_engine *e, const char *id, int follow, long tail, int fd, ph_error_t *err)
{
    char what[300];
    logs_ctx l = { .fd = fd, .err = err, .what = what, .out = write_all_cb };

    l.out_ud = &l;
    snprintf(what, sizeof what, "logs of container `%.200s`", id ? id : "");
    if (fd < 0)
        return ph_bad_input(err, "%s: bad file descriptor %d", what, fd);
    return logs_call(e, id, 3, follow, tail, &l, err);
}

int
ph_engine_container_output(ph_engine *e, const char *id, int stream, ph_engine_data_cb data_cb, void *ud,
                           ph_error_t *err)
{
    char what[300];
    logs_ctx l = { .fd = -1, .err = err, .what = what, .out = data_cb, .out_ud = ud };

    snprintf(what, sizeof what, "%s of container `%.200s`", stream == 2 ? "stderr" : "stdout", id ? id : "");
    if (data_cb == NULL || (stream != 1 && stream != 2))
        return ph_bad_input(err, "%s: needs a callback and stream 1 or 2", what);
    return logs_call(e, id, stream, 0, -1, &l, err);
}
