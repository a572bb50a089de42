/* ph_engine.h - a Docker Engine API client over libcurl.
 *
 * Talks to the Engine the docker CLI would talk to: DOCKER_HOST (unix://,
 * tcp://) with TLS from DOCKER_TLS_VERIFY / DOCKER_TLS / DOCKER_CERT_PATH,
 * or the Docker context chosen by --context (ph_engine_set_context),
 * DOCKER_CONTEXT or config.json's currentContext; the rules are in
 * ph_engine_endpoint.h.  The API version is negotiated from /_ping (the
 * lower of the server's and PH_ENGINE_MAX_API).  Every response body is
 * bounded (PH_ENGINE_MAX_BODY) except the streaming calls, which hand data
 * to a callback as it arrives.  On an HTTP error the Engine's JSON `message`
 * becomes the error text; on a transport error, curl's, translated: a TLS
 * failure names the certificate file and where the material came from, and
 * the hint says what to set.
 *
 * Not thread-safe: one ph_engine per thread.
 */
#ifndef PH_ENGINE_H
#define PH_ENGINE_H

#include <stddef.h>
#include <sys/types.h>
#include <jansson.h>
#include "ph_error.h"

#define PH_ENGINE_MAX_API "1.41"
#define PH_ENGINE_MAX_BODY (16u << 20)

typedef struct ph_engine ph_engine;

/* Connect lazily: resolves the endpoint (environment, context store, TLS
 * files present and sane) and contacts nothing.  The first call pings. */
ph_engine *ph_engine_new(ph_error_t *err);
/* The same for the Docker context CONTEXT (NULL: as ph_engine_new): an
 * Engine beside the current one, such as a swarm node's (ph_engine_swarm.h). */
ph_engine *ph_engine_new_context(const char *context, ph_error_t *err);

/* The Docker context every later ph_engine_new uses, as the docker CLI's
 * --context: it wins over DOCKER_HOST, DOCKER_CONTEXT and currentContext.
 * NULL restores the default resolution.  Call before starting threads. */
void ph_engine_set_context(const char *name);

/* A stalled Engine.  Every transfer ends with an error ("the Docker Engine
 * at X stalled: less than a byte a second for N s during <what>") once
 * fewer than N bytes moved either way in N seconds, N being
 * PH_ENGINE_STALL_DEFAULT_S, PH_ENGINE_STALL in the environment, or the
 * value set here (--engine-stall), which wins.  Requests where the Engine
 * works before it answers (wait, stop, remove, exec, build, pull) are
 * bounded by their own timeouts instead.  And every transfer, those too,
 * ends within about a second of a signal caught in a deferred-interrupt
 * section (ph_signal.h), with the error ph_interrupt_fail makes. */
#define PH_ENGINE_STALL_DEFAULT_S 60L
#define PH_ENGINE_STALL_MAX_S 86400L
/* "30", "30s", "1m30s" (a compose duration, whole seconds, 1 s up to a day). */
int ph_engine_stall_parse(const char *s, long *seconds, ph_error_t *err);
/* For every later ph_engine_new; 0 goes back to the environment's.  Call
 * before starting threads. */
void ph_engine_set_stall(long seconds);

/* Where E talks to, for messages: "tcp://h:2376 (context `x`, TLS)". */
const char *ph_engine_describe(ph_engine *e);
void ph_engine_free(ph_engine *e);

/* GET /_ping and negotiate the API version.  Fails with a clear message and
 * a hint when no Engine answers. */
int ph_engine_ping(ph_engine *e, ph_error_t *err);
const char *ph_engine_api_version(ph_engine *e); /* "1.41" after ping */
/* Whether the API version V ("1.44") is MAJOR.MINOR or later: 1, else 0
 * (and for what is no version).  Pure. */
int ph_engine_version_at_least(const char *v, int major, int minor);

/* Generic JSON request.  METHOD "GET"/"POST"/"DELETE"; PATH without the
 * version prefix ("/containers/json?all=1"); BODY may be NULL.  On 2xx
 * returns 0 and *resp (NULL for an empty body; caller json_decref's), and
 * *http_status.  On non-2xx returns -1 with the Engine's message, and
 * *http_status set so callers can treat 304/404 specially. */
int ph_engine_request(ph_engine *e, const char *method, const char *path, json_t *body,
                      json_t **resp, long *http_status, ph_error_t *err);

/* Same, with a timeout in seconds for this request (0 = none). */
int ph_engine_request_timeout(ph_engine *e, const char *method, const char *path, json_t *body,
                              long timeout_s, json_t **resp, long *http_status, ph_error_t *err);

/* Streaming request body and/or response: body_read_cb supplies the request
 * body (NULL for none; content_type names it), data_cb receives the response
 * body as it arrives (return 0 to go on, -1 to abort, PH_ENGINE_DATA_ENOUGH
 * to end the transfer there and succeed: the connection is closed and the
 * rest never read).  For /build and
 * /images/create the Engine streams JSON lines; see ph_engine_build. */
typedef ssize_t (*ph_engine_read_cb)(void *ud, char *buf, size_t len);
/* A request body from memory, for BODY_READ_CB. */
typedef struct ph_engine_mem {
    const char *data;
    size_t len, off;
} ph_engine_mem;
ssize_t ph_engine_mem_read_cb(void *ud, char *buf, size_t len);
typedef int (*ph_engine_data_cb)(void *ud, const char *data, size_t len);
#define PH_ENGINE_DATA_ENOUGH 1
int ph_engine_stream(ph_engine *e, const char *method, const char *path,
                     const char *content_type, ph_engine_read_cb body_read_cb, void *body_ud,
                     long long body_len, ph_engine_data_cb data_cb, void *data_ud,
                     long timeout_s, long *http_status, ph_error_t *err);

/* What a build tells as it goes (WATCH, may be NULL; either callback
 * too): each line of the builder's text ("stream", and a pull's status
 * lines without their bars) to LINE_CB, one line a call, without its
 * newline; and the context's bytes as the Engine takes them, SENT of
 * TOTAL, to SENT_CB. */
typedef void (*ph_engine_line_cb)(void *ud, const char *line);
typedef void (*ph_engine_sent_cb)(void *ud, unsigned long long sent, unsigned long long total);
typedef struct ph_engine_build_watch {
    ph_engine_line_cb line_cb;
    ph_engine_sent_cb sent_cb;
    void *ud;
} ph_engine_build_watch;

/* POST /build with an in-memory tar context, tagged TAG.  An "error" line
 * fails the build with that text.  buildargs/labels are JSON objects (may
 * be NULL).  Returns 0 and the image id in *image_id (malloc'd; IMAGE_ID
 * may be NULL). */
int ph_engine_build(ph_engine *e, const void *tar, size_t tar_len, const char *dockerfile,
                    const char *tag, json_t *buildargs, json_t *labels,
                    const ph_engine_build_watch *watch, char **image_id, ph_error_t *err);
/* The same for a caller that writes the builder's options itself: QUERY is
 * /build's query, encoded, naming TAG as `t` ("t=app&dockerfile=..."); TAR
 * NULL (TAR_LEN 0) sends no context, for one the Engine fetches
 * (`remote=`). */
int ph_engine_build_query(ph_engine *e, const char *query, const char *tag, const void *tar, size_t tar_len,
                          const ph_engine_build_watch *watch, char **image_id, ph_error_t *err);

/* GET /containers/{id}/archive?path=PATH streamed into data_cb (a tar). */
int ph_engine_archive_get(ph_engine *e, const char *id, const char *path,
                          ph_engine_data_cb data_cb, void *ud, ph_error_t *err);

/* HEAD /containers/{id}/archive?path=PATH: *found = 1 when PATH exists
 * in the container (a link counts, its target is not checked), 0 when it
 * does not.  Works on a container created and never started. */
int ph_engine_archive_stat(ph_engine *e, const char *id, const char *path, int *found, ph_error_t *err);

/* PUT /containers/{id}/archive?path=PATH: a tar read from read_cb (LEN
 * bytes, -1 when unknown) unpacked into the directory PATH, which must
 * exist.  Works on a stopped container. */
int ph_engine_archive_put(ph_engine *e, const char *id, const char *path, ph_engine_read_cb read_cb, void *ud,
                          long long len, ph_error_t *err);

/* Convenience wrappers; each returns 0 or -1 and *err. */
int ph_engine_image_inspect(ph_engine *e, const char *name, json_t **out, int *found, ph_error_t *err);
int ph_engine_container_create(ph_engine *e, const char *name, json_t *config, char **id, ph_error_t *err);
int ph_engine_container_start(ph_engine *e, const char *id, ph_error_t *err);
int ph_engine_container_kill(ph_engine *e, const char *id, const char *signal, ph_error_t *err);
int ph_engine_container_stop(ph_engine *e, const char *id, long timeout_s, ph_error_t *err);
/* POST /containers/{id}/wait; *timed_out set when timeout_s passes first. */
int ph_engine_container_wait(ph_engine *e, const char *id, long timeout_s, long *exit_code,
                             int *timed_out, ph_error_t *err);
int ph_engine_container_remove(ph_engine *e, const char *id, int force, ph_error_t *err);
int ph_engine_container_inspect(ph_engine *e, const char *id, json_t **out, int *found, ph_error_t *err);
/* GET /containers/{id}/top?ps_args=PS_ARGS (NULL: the Engine's -ef): the
 * container's processes as the Engine's host `ps` shows them, into *OUT
 * ({"Titles": [...], "Processes": [[...], ...]}; the last column's
 * spaces are single).  A container that does not run is an error. */
int ph_engine_container_top(ph_engine *e, const char *id, const char *ps_args, json_t **out, ph_error_t *err);
/* GET /containers/json?all=1&filters={"label":[...]}; labels are "k=v" or "k". */
int ph_engine_containers_by_label(ph_engine *e, const char *const *labels, size_t n,
                                  json_t **out_array, ph_error_t *err);
/* Create the network if absent (labels may be NULL). */
int ph_engine_network_ensure(ph_engine *e, const char *name, json_t *labels, ph_error_t *err);
int ph_engine_volume_ensure(ph_engine *e, const char *name, json_t *labels, ph_error_t *err);
/* GET /containers/{id}/logs, stdout+stderr demultiplexed, to FD. follow=1 follows. */
int ph_engine_container_logs(ph_engine *e, const char *id, int follow, long tail, int fd, ph_error_t *err);
/* The output of a container that has ended (or anything it printed so
 * far): GET /containers/{id}/logs of one stream, STREAM 1 (stdout) or 2
 * (stderr), demultiplexed, handed to DATA_CB as it arrives (its -1 aborts;
 * the error is then the callback's).  Needs a log driver that can be read
 * back (json-file, local). */
int ph_engine_container_output(ph_engine *e, const char *id, int stream, ph_engine_data_cb data_cb, void *ud,
                               ph_error_t *err);
/* GET /info: does this host refuse privileged? not knowable; see ph_run. */

/* ---- ph_engine_output.c, ph_engine_lists.c ------------------------------ */

/* Run ARGV (NULL-terminated) in the running container ID as its user
 * (exec), with ENV ("K=V", NULL-terminated; NULL: none) over the
 * container's environment, its stdout and stderr handed to DATA_CB as they come (NULL:
 * dropped), for at most TIMEOUT_S seconds (<= 0: no limit; on a timeout
 * the command may still run on).  0 and *exit_code once it ended. */
int ph_engine_exec(ph_engine *e, const char *id, const char *const *argv, const char *const *env, long timeout_s,
                   ph_engine_data_cb data_cb, void *ud, long *exit_code, ph_error_t *err);

/* Everything container ID printed so far, stdout and stderr in the order
 * the Engine has them, each line led by its timestamp as the Engine gives
 * it ("2026-11-22T10:15:00.123456789Z "), to DATA_CB.  Works on a stopped
 * container; needs a log driver that can be read back.  DATA_CB's
 * PH_ENGINE_DATA_ENOUGH ends the reading there (a cap reached), with 0. */
int ph_engine_container_log_all(ph_engine *e, const char *id, ph_engine_data_cb data_cb, void *ud, ph_error_t *err);

/* GET /containers/json (ALL: stopped ones too): every container, whoever
 * made it.  *OUT is an array. */
int ph_engine_containers_all(ph_engine *e, int all, json_t **out, ph_error_t *err);

/* GET /images/json?filters=FILTERS (a JSON object such as
 * {"label": ["k"], "dangling": ["true"]}; NULL: every image). */
int ph_engine_images_list(ph_engine *e, json_t *filters, json_t **out, ph_error_t *err);
/* GET /volumes?filters=FILTERS: the "Volumes" array (empty for none). */
int ph_engine_volumes_list(ph_engine *e, json_t *filters, json_t **out, ph_error_t *err);

/* ---- additions ----------------------------------------------------------
 *
 * Notes on the calls above, as implemented:
 *  - ph_engine_request bounds each call by 120 s; ph_engine_build by an
 *    hour; archive_get by an hour; logs by 10 min unless following.
 *  - Non-2xx errors read "<what was attempted>: <the Engine's message>"
 *    with status PH_EXIT_FAILURE; bad arguments are PH_EXIT_USAGE.
 *  - A data callback that returns -1 may make the error itself in the
 *    caller's err (passed through its user data); that error is kept.
 *  - archive_get: a missing path is "... : no such path in the container";
 *    a missing container keeps the Engine's "No such container" text.
 *  - container_start/stop treat 304 (already) as success; container_remove
 *    treats 404 as success and NULL id as a no-op; kill with signal NULL
 *    sends the Engine's default (SIGKILL).
 *  - container_wait: timeout_s <= 0 waits without limit.
 *  - tcp://HOST without a port means port 2375 (the docker CLI's rule).
 *
 * Race-free wait.  ph_engine_container_wait sends its request when called,
 * so "kill, then wait" can miss nothing (condition=not-running also matches
 * an exited container) but "wait, then kill" from one thread needs the wait
 * registered first.  _wait_begin sends POST /containers/{id}/wait on a second
 * easy handle of its own (curl multi) and returns once the Engine has
 * answered the headers, which it does only after registering the wait
 * (API >= 1.30); then send the signal, then _wait_end collects the exit code.
 * The ph_engine_wait must not outlive E; _wait_end frees it. */
typedef struct ph_engine_wait ph_engine_wait;
int ph_engine_container_wait_begin(ph_engine *e, const char *id, ph_engine_wait **out, ph_error_t *err);
/* timeout_s <= 0: no limit.  A timeout sets *timed_out = 1 and returns 0.
 * Always frees W (NULL is a no-op returning 0). */
int ph_engine_container_wait_end(ph_engine_wait *w, long timeout_s, long *exit_code, int *timed_out,
                                 ph_error_t *err);
/* Abandon a begun wait (NULL is a no-op). */
void ph_engine_wait_free(ph_engine_wait *w);

/* POST /images/{name}/tag: IMAGE also as REPO:TAG. */
int ph_engine_image_tag(ph_engine *e, const char *image, const char *repo, const char *tag, ph_error_t *err);
/* POST /images/{name}/push of REPO:TAG to the registry REPO names (no
 * credentials: a registry that wants them refuses, and its error is
 * ours); an error line in the Engine's answer fails it. */
int ph_engine_image_push(ph_engine *e, const char *repo, const char *tag, ph_error_t *err);

/* DELETE /images/{name}; a missing image is not an error. */
int ph_engine_image_remove(ph_engine *e, const char *name, int force, ph_error_t *err);

/* Bound on buffered (non-streaming) response bodies for E; 0 restores
 * PH_ENGINE_MAX_BODY.  For tests and for callers that expect small answers. */
void ph_engine_set_max_body(ph_engine *e, size_t max);

/* The log stream demultiplexer as a pure core: frames of an 8-byte header
 * (stream 0/1/2, three zero bytes, big-endian payload size) then the
 * payload, split anywhere across calls.  Payloads go to out_cb (its -1
 * aborts: the error is then the callback's to make; its
 * PH_ENGINE_DATA_ENOUGH stops the feed, which returns it).  A malformed header
 * fails with the offset of the frame. */
typedef struct ph_engine_demux {
    unsigned char hdr[8];
    size_t hdr_len;
    size_t remaining;    /* payload bytes still due for the current frame */
    int stream;          /* 1 stdout, 2 stderr (0 stdin) of the current frame */
    unsigned long long offset; /* bytes consumed, for error messages */
} ph_engine_demux;
int ph_engine_demux_feed(ph_engine_demux *d, const char *data, size_t len, ph_engine_data_cb out_cb, void *ud,
                         ph_error_t *err);
/* At the end of the stream: 0 if it ended on a frame boundary. */
int ph_engine_demux_finish(const ph_engine_demux *d, ph_error_t *err);

#endif
