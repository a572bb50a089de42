/* ph_cdp.h - a running Node's own inspector, from outside it: the pure
 * parts of ph-nodeinsp (harness/nodeinsp/ph-nodeinsp.c), bytes in and
 * structs or bytes out, unit-tested on their own (tests/unit/test_cdp.c).
 *
 * The inspector (Node's src/inspector_socket*.cc, the DevTools protocol's
 * description at chromedevtools.github.io/devtools-protocol): HTTP
 * `GET /json/list` names each target's WebSocket URL
 * (`webSocketDebuggerUrl`); the session is RFC 6455 WebSocket, text
 * frames of one JSON object each: our commands `{"id":N,"method":...,
 * "params":{...}}`, its replies `{"id":N,"result":{...}}` or
 * `{"id":N,"error":{"message":...}}`, and events (`method` without id).
 * `Profiler.stop` answers with the V8 CPU profile: `nodes` (each an `id`,
 * a `callFrame` {functionName, url, lineNumber (0-based)}, `children` ids),
 * `samples` (the node id of each sample's leaf) and `timeDeltas`.
 *
 * Everything the inspector sends is the container's: every parser here is
 * bounded in what it reads, what it keeps and how deep it goes, and says
 * what it could not use rather than trusting it.  Nothing here makes a
 * system call but writing to the FILE it is given.
 */
#ifndef PH_CDP_H
#define PH_CDP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- WebSocket frames (RFC 6455 section 5) ----------------------------- */

#define PH_CDP_WS_TEXT 0x1
#define PH_CDP_WS_CLOSE 0x8
#define PH_CDP_WS_PING 0x9
#define PH_CDP_WS_PONG 0xA
#define PH_CDP_WS_CONT 0x0
#define PH_CDP_WS_HEADER_MAX 14 /* 2 + 8 (length) + 4 (mask) */

/* One client frame (FIN set, masked with MASK, as a client must) of
 * OPCODE and PAYLOAD[0..LEN) into OUT: its length, or -1 when it does not
 * fit in CAP bytes. */
ssize_t ph_cdp_ws_encode(int opcode, const void *payload, size_t len, const uint8_t mask[4], uint8_t *out, size_t cap);

typedef struct ph_cdp_ws_frame {
    int fin, opcode;
    size_t header;  /* bytes before the payload */
    size_t len;     /* the payload's */
} ph_cdp_ws_frame;

/* The frame at BUF[0..N): 1 with *F set when its header and whole payload
 * are there (a masked one is unmasked in place); 0 when more bytes are
 * needed; -1 with WHY when it is no frame a server may send or its
 * payload is longer than MAX. */
int ph_cdp_ws_decode(uint8_t *buf, size_t n, size_t max, ph_cdp_ws_frame *f, char *why, size_t why_len);

/* ---- JSON, as far as the session needs it ------------------------------ */

/* The WebSocket path (`/UUID`) of the first `webSocketDebuggerUrl` in a
 * /json/list BODY into OUT: 0, or -1 when there is none or it does not
 * fit (or holds a byte no request line may). */
int ph_cdp_ws_path(const char *body, size_t n, char *out, size_t cap);

/* A message's top-level `id` into *ID (-1 when it has none: an event) and
 * whether it is an error (*ERROR, its `error.message` into MSG): 0, or -1
 * when MSG[0..N) is no JSON object. */
int ph_cdp_reply(const char *msg, size_t n, long long *id, int *error, char *errmsg, size_t errmsg_len);

/* Where the value at the object key path KEYS (NULL-ended) starts in
 * JSON[0..N) and how long it is: 0, or -1 when it is not there. */
int ph_cdp_find(const char *json, size_t n, const char *const *keys, size_t *off, size_t *len);

/* ---- the CPU profile as folded stacks ----------------------------------- */

#define PH_CDP_DEPTH_MAX 1024     /* frames kept of one stack, the leaf's end */
#define PH_CDP_NAME_MAX 512       /* bytes kept of a function's name or url */
#define PH_CDP_NESTING_MAX 64     /* JSON nesting read (a profile is 4 deep) */

typedef struct ph_cdp_fold_opts {
    const char *root;   /* the first frame of every stack (the process) */
    int wall;           /* keep the idle samples, as `(idle);[off-cpu]` */
} ph_cdp_fold_opts;

typedef struct ph_cdp_fold_stats {
    size_t nodes, samples, kept;   /* samples written (without the idle ones under cpu) */
    size_t idle;                   /* samples of the thread waiting: (idle) */
    size_t bad_ids;                /* samples or children naming no node */
    size_t reparented;             /* children claimed by a second parent (the first kept) */
    size_t cut;                    /* stacks deeper than PH_CDP_DEPTH_MAX (or in a cycle), cut */
    size_t stacks;                 /* lines written */
} ph_cdp_fold_stats;

/* The profile PROFILE[0..N) (Profiler.stop's result.profile) as folded
 * stacks on OUT, the root first, each JavaScript frame named as V8's perf
 * map names it (`JS:name url:line_[j]`, line 1-based: the start mode's
 * frames, ph_langview.c), a function with no script (V8's own
 * `(program)`, `(garbage collector)`, a native binding's `writev`) by its
 * name alone: native, as the start mode has them.  The idle samples are left out
 * unless O->wall.  0 with *ST filled, or -1 with WHY. */
int ph_cdp_fold(const char *profile, size_t n, const ph_cdp_fold_opts *o, FILE *out, ph_cdp_fold_stats *st,
                char *why, size_t why_len);

#endif
