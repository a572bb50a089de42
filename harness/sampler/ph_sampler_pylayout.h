/* ph_sampler_pylayout.h - where CPython keeps what the sampler reads, one
 * row per minor version (x86-64 and aarch64: LP64, default build, not the
 * free-threaded one).
 *
 * Each offset comes from CPython's own headers of that version, named in
 * the comment beside it; tests/unit/test_sampler_py.c checks the 3.11 row
 * with offsetof against the installed headers (python3.11-dev,
 * /usr/include/python3.11) when they are there.  A version without a row
 * is not read: the status says "Python X.Y: frames not read (unknown
 * version)" rather than guess.
 *
 * Adding a version is adding a row, plus what its frames do differently:
 *  - 3.12: the current thread state is no longer _PyRuntime.gilstate's
 *    (_PyRuntime.tstate_current, or the _Py_tss_tstate thread-local);
 *    the frame that marks an eval loop's entry is a shim frame
 *    (owner FRAME_OWNED_BY_CSTACK) instead of is_entry: entry_owner.
 *  - 3.13 and later publish these offsets themselves in _Py_DebugOffsets
 *    at the start of _PyRuntime (cookie "xdebugpy"): a row filled from
 *    there at run time.
 * Neither is done yet. */
#ifndef PH_SAMPLER_PYLAYOUT_H
#define PH_SAMPLER_PYLAYOUT_H

#include <stdint.h>

typedef struct phs_py_layout {
    unsigned minor;             /* 3.<minor> */
    /* _PyRuntimeState */
    uint16_t rt_tstate_current; /* the thread state holding the GIL */
    /* PyThreadState, _PyCFrame */
    uint16_t ts_thread_id;      /* pthread_self() of its thread */
    uint16_t ts_cframe;
    uint16_t cf_current_frame;
    /* _PyInterpreterFrame */
    uint16_t fr_code, fr_previous, fr_prev_instr;
    uint16_t fr_is_entry;       /* a bool; 0xffff: none (see entry_owner) */
    uint16_t fr_owner;          /* a char */
    int16_t entry_owner;        /* the owner that marks an entry frame; -1: is_entry does */
    /* PyCodeObject */
    uint16_t co_filename, co_qualname, co_firstlineno, co_linetable, co_code;
    /* PyASCIIObject / PyCompactUnicodeObject */
    uint16_t u_length, u_state, u_ascii_data, u_compact_data;
    /* PyBytesObject */
    uint16_t b_size, b_data;
} phs_py_layout;

#define PHS_PY_OB_TYPE 8 /* PyObject.ob_type: after ob_refcnt, every version */

static const phs_py_layout phs_py_layouts[] = {
    {
        .minor = 11,
        /* Include/internal/pycore_runtime.h: _PyRuntimeState.gilstate
         * (struct _gilstate_runtime_state, same header).tstate_current */
        .rt_tstate_current = 576,
        /* Include/cpython/pystate.h: PyThreadState.cframe, .thread_id;
         * _PyCFrame.current_frame (after uint8_t use_tracing) */
        .ts_thread_id = 152,
        .ts_cframe = 56,
        .cf_current_frame = 8,
        /* Include/internal/pycore_frame.h: _PyInterpreterFrame: f_func,
         * f_globals, f_builtins, f_locals, f_code, frame_obj, previous,
         * prev_instr, stacktop, is_entry, owner */
        .fr_code = 32,
        .fr_previous = 48,
        .fr_prev_instr = 56,
        .fr_is_entry = 68,
        .fr_owner = 69,
        .entry_owner = -1,
        /* Include/cpython/code.h: _PyCode_DEF(): co_firstlineno,
         * co_filename, co_qualname, co_linetable, co_code_adaptive
         * (_PyCode_CODE: the instructions) */
        .co_filename = 112,
        .co_qualname = 128,
        .co_firstlineno = 72,
        .co_linetable = 136,
        .co_code = 184,
        /* Include/cpython/unicodeobject.h: PyASCIIObject.length, .state
         * (interned:2 kind:3 compact:1 ascii:1 ready:1), data after
         * sizeof(PyASCIIObject) (ascii) or sizeof(PyCompactUnicodeObject) */
        .u_length = 16,
        .u_state = 32,
        .u_ascii_data = 48,
        .u_compact_data = 72,
        /* Include/cpython/bytesobject.h: ob_size (PyVarObject), ob_sval */
        .b_size = 16,
        .b_data = 32,
    },
};

#endif
