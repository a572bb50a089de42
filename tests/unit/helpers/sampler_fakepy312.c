/* sampler_fakepy312.c - a program that looks like a CPython 3.12 to the
 * sampler, its structs laid out as 3.12's (fakepy_layouts.h): Py_Version
 * 3.12.4; _PyRuntime.interpreters.main's GIL (interp->ceval.gil, the
 * interpreter's own) locked and last held by a thread state of the main
 * thread, whose cframe->current_frame chain is hot_fake (fake312.py,
 * first line 10, running line 12 by its location table) called by main
 * (fake312.py:20), one eval loop call running both (as from 3.11 on),
 * above the entry frame that loop pushed (owned by the C stack, its code
 * the interpreter's trampoline), then <module> (fake312.py:30), run by
 * the outer eval loop call, above that one's entry frame.
 * Argument: CPU-seconds to spend. */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include "fakepy_eval.h"
#include "fakepy_layouts.h"

__attribute__((used)) const unsigned long Py_Version = 0x030c04f0; /* 3.12.4 final */
__attribute__((used, aligned(64))) struct ftype PyCode_Type = { .tp_basicsize = offsetof(struct fcode312, co_code_adaptive) },
                                                PyUnicode_Type, PyBytes_Type;
__attribute__((used, aligned(64))) struct fruntime312 _PyRuntime;

/* compact ASCII: kind 1 (bits 2-4), compact (5), ascii (6) */
#define STR(s) { { { 1, &PyUnicode_Type }, sizeof(s) - 1, -1, (1u << 2) | (1u << 5) | (1u << 6) }, s }

static struct fstr312 file = STR("fake312.py"), hot_name = STR("hot_fake"), main_name = STR("main"),
                      module_name = STR("<module>"), trampoline_name = STR("trampoline");
/* the location table (Objects/locations.md): one entry, no columns (code
 * 13), 2 code units, line delta +2 (varint 4) */
static struct fbytes hot_lines = { { 1, &PyBytes_Type, 2 }, -1, { 0x80 | 13 << 3 | 1, 4 } };
static struct fbytes no_lines = { { 1, &PyBytes_Type, 0 }, -1, { 0 } };
static struct fcode312 hot_code = { .ob = { 1, &PyCode_Type, 16 }, .co_firstlineno = 10, .co_filename = &file,
                                    .co_name = &hot_name, .co_qualname = &hot_name, .co_linetable = &hot_lines };
static struct fcode312 main_code = { .ob = { 1, &PyCode_Type, 16 }, .co_firstlineno = 20, .co_filename = &file,
                                     .co_name = &main_name, .co_qualname = &main_name, .co_linetable = &no_lines };
static struct fcode312 module_code = { .ob = { 1, &PyCode_Type, 16 }, .co_firstlineno = 30, .co_filename = &file,
                                       .co_name = &module_name, .co_qualname = &module_name,
                                       .co_linetable = &no_lines };
/* _PyEval_EvalFrameDefault's entry_frame: the trampoline's code, owned by
 * the C stack (FRAME_OWNED_BY_CSTACK, 3); a reader that did not stop at it
 * would name the trampoline */
static struct fcode312 trampoline_code = { .ob = { 1, &PyCode_Type, 16 }, .co_firstlineno = 1, .co_filename = &file,
                                           .co_name = &trampoline_name, .co_qualname = &trampoline_name,
                                           .co_linetable = &no_lines };
static struct fframe312 outer_entry = { .f_code = &trampoline_code, .owner = 3,
                                        .prev_instr = &trampoline_code.co_code_adaptive[0] };
static struct fframe312 module_frame = { .f_code = &module_code, .previous = &outer_entry,
                                         .prev_instr = &module_code.co_code_adaptive[0] };
static struct fframe312 entry = { .f_code = &trampoline_code, .previous = &module_frame, .owner = 3,
                                  .prev_instr = &trampoline_code.co_code_adaptive[0] };
static struct fframe312 main_frame = { .f_code = &main_code, .previous = &entry, .prev_instr = &main_code.co_code_adaptive[0] };
static struct fframe312 hot_frame = { .f_code = &hot_code, .previous = &main_frame,
                                      .prev_instr = &hot_code.co_code_adaptive[1] };
static struct fcframe312 cframe = { .current_frame = &hot_frame };
static struct fts312 tstate = { .cframe = &cframe, ._status = 1u << 4 /* active */ };
static struct fgil gil = { .last_holder = &tstate, .locked = 1 };
static struct finterp312 interp = { .ceval = { .gil = &gil, .own_gil = 1 } };

int
main(int argc, char **argv)
{
    tstate.thread_id = (unsigned long)pthread_self();
    _PyRuntime.interpreters.head = _PyRuntime.interpreters.main = &interp;
    _PyEval_EvalFrameDefault(argc > 1 ? atof(argv[1]) : 1.0, 1); /* <module>'s loop, then main's */
    return 0;
}
