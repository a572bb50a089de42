/* sampler_fakepy310.c - a program that looks like a CPython 3.10 to the
 * sampler, its structs laid out as 3.10's (fakepy_layouts.h): no
 * Py_Version (3.11 added it), the version only in its PY_VERSION string
 * ("3.10.12"), _PyRuntime.gilstate.tstate_current a thread state of the
 * main thread whose frame chain (PyFrameObject: f_back, f_code, f_lasti)
 * is hot_fake (fake310.py, first line 10, running line 12 by its 3.10
 * co_linetable) called by main (fake310.py:20), each frame run by an eval
 * loop call of its own, as before 3.11.  Built with FAKE_MINOR 8
 * (sampler_fakepy38.c) it is a 3.8: 3.8's _PyRuntimeState, thread state
 * and frames, and a co_lnotab; with FAKE_MINOR 7 (sampler_fakepy37.c) a
 * 3.7, a version that is not read; with FAKE_VERSION_CLAIMED
 * (sampler_fakepy310_as39.c) a 3.10 that says it is another version.
 * Argument: CPU-seconds to spend. */
#include <pthread.h>
#include <stdlib.h>
#include "fakepy_eval.h"
#include "fakepy_layouts.h"

#ifndef FAKE_MINOR
#define FAKE_MINOR 10
#endif

#if FAKE_MINOR == 10
#define FAKE_VERSION "3.10.12"
#define FAKE_FILE "fake310.py"
typedef struct fruntime310 fruntime;
typedef struct fts310 fts;
typedef struct fframe310 fframe;
#else
#if FAKE_MINOR == 8
#define FAKE_VERSION "3.8.18"
#define FAKE_FILE "fake38.py"
#else
#define FAKE_VERSION "3.7.3"
#define FAKE_FILE "fake37.py"
#endif
typedef struct fruntime38 fruntime;
typedef struct fts38 fts;
typedef struct fframe38 fframe;
#endif

#ifdef FAKE_VERSION_CLAIMED
#undef FAKE_VERSION
#define FAKE_VERSION FAKE_VERSION_CLAIMED
#endif

/* PY_VERSION as Py_GetVersion() formats it in: a string of its own */
__attribute__((used)) const char fake_py_version[] = "\0" FAKE_VERSION;
__attribute__((used, aligned(64))) struct ftype PyCode_Type = { .tp_basicsize = sizeof(struct fcode38) },
                                                PyFrame_Type = { .tp_basicsize = sizeof(fframe) },
                                                PyUnicode_Type, PyBytes_Type;
__attribute__((used, aligned(64))) fruntime _PyRuntime;

/* compact ASCII: kind 1 (bits 2-4), compact (5), ascii (6), ready (7) */
#define STR(s) { { 1, &PyUnicode_Type }, sizeof(s) - 1, -1, (1u << 2) | (1u << 5) | (1u << 6) | (1u << 7), 0, s }

static struct fstr38 file = STR(FAKE_FILE), hot_name = STR("hot_fake"), main_name = STR("main");
/* hot_fake's line table, from its first line 10.  3.10's co_linetable:
 * (bytes, line delta) pairs, -128 for none; a pair of no bytes still
 * moves the line.  Bytes 0-3 line 10, 4-9 line 12, 10-11 none, 12-15
 * line 14.  3.8's co_lnotab: (bytes, line delta) pairs, each delta taken
 * once its bytes are passed: bytes 0-3 line 10, 4-5 line 11, 6-11 line
 * 12, 12- line 14. */
#if FAKE_MINOR == 10
static struct fbytes hot_lines = { { 1, &PyBytes_Type, 8 }, -1, { 4, 0, 0, 1, 6, 1, 2, 0x80 } };
#else
static struct fbytes hot_lines = { { 1, &PyBytes_Type, 6 }, -1, { 4, 1, 2, 1, 6, 2 } };
#endif
static struct fbytes no_lines = { { 1, &PyBytes_Type, 0 }, -1, { 0 } };
static struct fcode38 hot_code = { .ob = { 1, &PyCode_Type }, .co_firstlineno = 10, .co_filename = &file,
                                   .co_name = &hot_name, .co_lnotab = &hot_lines };
static struct fcode38 main_code = { .ob = { 1, &PyCode_Type }, .co_firstlineno = 20, .co_filename = &file,
                                    .co_name = &main_name, .co_lnotab = &no_lines };
/* f_lasti: 3.10 counts instructions (3: byte 6), 3.8 bytes (6, the first
 * byte of line 12's pair: a pair's start has its own line, not the one
 * before's) */
static fframe main_frame = { .ob = { 1, &PyFrame_Type, 0 }, .f_code = &main_code, .f_lasti = 0 };
static fframe hot_frame = { .ob = { 1, &PyFrame_Type, 0 }, .f_back = &main_frame, .f_code = &hot_code,
                            .f_lasti = FAKE_MINOR == 10 ? 3 : 6 };
static fts tstate = { .frame = &hot_frame };
#ifdef FAKE_PREALLOC
/* the child's state, made by this thread (sampler_fakepy310_prealloc.c),
 * ahead of ours in the main interpreter's list (struct _is: next,
 * tstate_head) */
static fts child = { .next = &tstate };
static struct { void *next, *tstate_head; } interp = { NULL, &child };
#endif

int
main(int argc, char **argv)
{
    tstate.thread_id = (unsigned long)pthread_self();
#ifdef FAKE_PREALLOC
    child.thread_id = tstate.thread_id;
    _PyRuntime.interpreters.main = &interp;
#else
    _PyRuntime.gilstate.tstate_current = &tstate;
#endif
    _PyEval_EvalFrameDefault(argc > 1 ? atof(argv[1]) : 1.0, 1); /* main's loop, then hot_fake's */
    return 0;
}
