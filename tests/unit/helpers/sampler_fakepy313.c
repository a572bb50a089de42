/* sampler_fakepy313.c - a program that looks like a CPython 3.13 to the
 * sampler: Py_Version 3.13.5, and _PyRuntime starting with a
 * _Py_DebugOffsets (the 3.13 struct: CPython's Include/internal/
 * pycore_runtime.h) whose offsets are those of this program's own made-up
 * structs, none where CPython 3.13 has them.  Its main interpreter's GIL
 * is held by a thread state of the main thread, whose frame chain is
 * hot_fake (fake313.py:13) called by main (fake313.py:20), above the shim
 * frame an eval loop starts with; the CPU is spent in a function named
 * like the eval loop.  The sampler names those frames only by reading the
 * offsets from the process.  Built with FAKE_COOKIE set otherwise
 * (sampler_fakepy313_bad.c), the offsets are not CPython's: nothing may be
 * read.  Argument: CPU-seconds to spend. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "fakepy_eval.h"

#ifndef FAKE_COOKIE
#define FAKE_COOKIE "xdebugpy"
#endif

__attribute__((used)) const unsigned long Py_Version = 0x030d05f0; /* 3.13.5 final */
__attribute__((used, aligned(64))) char PyCode_Type[512], PyUnicode_Type[512], PyBytes_Type[512];

/* CPython 3.13's _Py_DebugOffsets: each sub-struct's uint64_t fields in
 * their order (the comments name the ones used). */
struct debug_offsets {
    char cookie[8];
    uint64_t version, free_threaded;
    uint64_t runtime_state[3];      /* size, finalizing, interpreters_head */
    uint64_t interpreter_state[13]; /* ..., [11] gil_runtime_state_locked, [12] _holder */
    uint64_t thread_state[9];       /* size, prev, next, interp, current_frame, thread_id, ... */
    uint64_t interpreter_frame[6];  /* size, previous, executable, instr_ptr, localsplus, owner */
    uint64_t code_object[10];       /* size, filename, name, qualname, linetable, firstlineno,
                                     * argcount, localsplusnames, localspluskinds, co_code_adaptive */
    uint64_t pyobject[2];           /* size, ob_type */
    uint64_t type_object[4], tuple_object[3], list_object[3], dict_object[3], float_object[2],
        long_object[3];
    uint64_t bytes_object[3];       /* size, ob_size, ob_sval */
    uint64_t unicode_object[4];     /* size, state, length, asciiobject_size */
    uint64_t gc[2];
};

/* Made-up layouts: every field somewhere else than in CPython 3.13. */
struct fstr {
    uint64_t refcnt;
    void *type;
    char pad[24];
    int64_t length;
    uint32_t state;
    char pad2[20];
    char data[32];
};
struct fbytes {
    uint64_t refcnt;
    void *type;
    char pad[16];
    int64_t size;
    char pad2[8];
    unsigned char data[8];
};
struct fcode {
    uint64_t refcnt;
    void *type;
    char pad[56];
    int32_t firstlineno;
    char pad2[28];
    void *linetable, *filename;
    char pad3[16];
    void *qualname;
    char pad4[40];
    uint16_t code[16];
};
struct fframe {
    char pad[24];
    void *executable;
    char pad2[8];
    void *instr_ptr;
    void *previous;
    char pad3[5];
    char owner;
    char pad4[10];
};
struct fts {
    char pad[40];
    unsigned long thread_id;
    char pad2[24];
    void *current_frame;
    char pad3[8];
};
struct finterp {
    char pad[88];
    void *holder;
    char pad2[12];
    int32_t locked;
};
struct fruntime {
    struct debug_offsets d;
    char pad[200];
    void *interpreters_head;
};

/* compact ASCII: kind 1 (bits 2-4), compact (5), ascii (6) */
#define STR(s) { 1, PyUnicode_Type, { 0 }, sizeof(s) - 1, (1u << 2) | (1u << 5) | (1u << 6), { 0 }, s }

static struct fstr file = STR("fake313.py"), hot_name = STR("hot_fake"), main_name = STR("main");
static struct fbytes no_lines = { 1, PyBytes_Type, { 0 }, 0, { 0 }, { 0 } };
/* hot_fake's location table (Objects/locations.md): two one-line entries
 * of 4 code units each, line 10 + 1 for units 0-3, then + 2 for 4-7.  Its
 * frame is at unit 4, the first of the second entry: line 13, not 11. */
static struct fbytes hot_lines = { 1, PyBytes_Type, { 0 }, 6, { 0 }, { 0x80 | 11 << 3 | 3, 1, 2, 0x80 | 12 << 3 | 3, 1, 2 } };
static struct fcode hot_code = { 1, PyCode_Type, { 0 }, 10, { 0 }, &hot_lines, &file, { 0 }, &hot_name, { 0 }, { 0 } };
static struct fcode main_code = { 1, PyCode_Type, { 0 }, 20, { 0 }, &no_lines, &file, { 0 }, &main_name, { 0 }, { 0 } };
static struct fframe shim = { .owner = 3 }; /* FRAME_OWNED_BY_CSTACK */
static struct fframe main_frame = { .executable = &main_code, .instr_ptr = &main_code.code[2], .previous = &shim };
static struct fframe hot_frame = { .executable = &hot_code, .instr_ptr = &hot_code.code[4], .previous = &main_frame };
static struct fts tstate = { .current_frame = &hot_frame };
static struct finterp interp = { .holder = &tstate, .locked = 1 };

#define SZ(t) sizeof(struct t)
#define AT(t, f) offsetof(struct t, f)

__attribute__((used, aligned(64))) struct fruntime _PyRuntime = {
    .d = {
        .cookie = FAKE_COOKIE,
        .version = 0x030d05f0,
        .runtime_state = { SZ(fruntime), 0, AT(fruntime, interpreters_head) },
        .interpreter_state = { SZ(finterp), [11] = AT(finterp, locked), [12] = AT(finterp, holder) },
        .thread_state = { SZ(fts), [4] = AT(fts, current_frame), [5] = AT(fts, thread_id) },
        .interpreter_frame = { SZ(fframe), AT(fframe, previous), AT(fframe, executable), AT(fframe, instr_ptr),
                               SZ(fframe), AT(fframe, owner) },
        .code_object = { SZ(fcode), AT(fcode, filename), 0, AT(fcode, qualname), AT(fcode, linetable),
                         AT(fcode, firstlineno), [9] = AT(fcode, code) },
        .pyobject = { 16, 8 },
        .bytes_object = { SZ(fbytes), AT(fbytes, size), AT(fbytes, data) },
        .unicode_object = { SZ(fstr), AT(fstr, state), AT(fstr, length), AT(fstr, data) },
    },
    .interpreters_head = &interp,
};

int
main(int argc, char **argv)
{
    tstate.thread_id = (unsigned long)pthread_self();
    _PyEval_EvalFrameDefault(argc > 1 ? atof(argv[1]) : 1.0, 0);
    return 0;
}
