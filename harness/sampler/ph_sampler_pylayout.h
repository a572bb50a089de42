/* ph_sampler_pylayout.h - where CPython keeps what the sampler reads, one
 * row per minor version (x86-64 and aarch64: LP64, default build, not the
 * free-threaded one).
 *
 * 3.11: each offset comes from CPython's own headers of that version,
 * named in the comment beside it; tests/unit/test_sampler_py.c checks the
 * row with offsetof against the installed headers (python3.11-dev,
 * /usr/include/python3.11) when they are there.
 *
 * 3.13: CPython publishes the offsets itself, in _Py_DebugOffsets at the
 * start of _PyRuntime (cookie "xdebugpy", Include/internal/
 * pycore_runtime.h), for out-of-process readers like this one: the row
 * holds only what the struct does not say (the entry frame's owner, the
 * str state's bits, where a compact str's data starts past the ASCII
 * header) and where in _Py_DebugOffsets each needed offset is
 * (phs_py_dbg313, from the 3.13.5 headers; the struct is stable within a
 * minor version from 3.13.0 final on, not across minors).  The offsets
 * themselves are read from the process (ph_sampler_py.c), and refused
 * when they do not fit the structs' sizes it reports.
 *
 * A version without a row is not read: the status says "Python X.Y:
 * frames not read (unknown version)" rather than guess.  3.12 (no
 * _Py_DebugOffsets, its own layout) has no row: no Debian release ships
 * it, so a row could not be tested here.  3.14 changed _Py_DebugOffsets
 * and its frames (tagged stack references): no row either. */
#ifndef PH_SAMPLER_PYLAYOUT_H
#define PH_SAMPLER_PYLAYOUT_H

#include <stdint.h>

#define PHS_PY_NO_FIELD 0xffff

/* How the thread state holding the GIL is found. */
enum {
    PHS_PY_TS_RUNTIME,  /* _PyRuntime + rt_tstate_current (3.11) */
    PHS_PY_TS_GIL,      /* the main interpreter (_PyRuntime + rt_interp_head)'s
                         * GIL: the holder at is_gil_holder while the int at
                         * is_gil_locked is set (3.13) */
};

typedef struct phs_py_layout {
    unsigned minor;             /* 3.<minor> */
    uint8_t ts_via;             /* PHS_PY_TS_* */
    uint8_t from_debug_offsets; /* the offsets below are filled from the process */
    /* _PyRuntimeState, PyInterpreterState */
    uint16_t rt_tstate_current; /* the thread state holding the GIL */
    uint16_t rt_interp_head, is_gil_locked, is_gil_holder;
    /* PyThreadState, _PyCFrame */
    uint16_t ts_thread_id;      /* pthread_self() of its thread */
    uint16_t ts_cframe;         /* PHS_PY_NO_FIELD: the thread state holds */
    uint16_t cf_current_frame;  /* current_frame itself, at cf_current_frame */
    /* _PyInterpreterFrame (3.13: f_executable, instr_ptr) */
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
        .ts_via = PHS_PY_TS_RUNTIME,
        .rt_interp_head = PHS_PY_NO_FIELD,
        .is_gil_locked = PHS_PY_NO_FIELD,
        .is_gil_holder = PHS_PY_NO_FIELD,
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
    {
        .minor = 13,
        .ts_via = PHS_PY_TS_GIL,
        .from_debug_offsets = 1,
        .rt_tstate_current = PHS_PY_NO_FIELD,
        .ts_cframe = PHS_PY_NO_FIELD, /* PyThreadState.current_frame */
        .fr_is_entry = PHS_PY_NO_FIELD,
        /* Include/internal/pycore_frame.h: the shim frame an eval loop
         * starts with is owned by the C stack */
        .entry_owner = 3, /* FRAME_OWNED_BY_CSTACK */
        /* Include/cpython/unicodeobject.h: PyCompactUnicodeObject is the
         * ASCII header + utf8_length + utf8; the rest from the process */
        .u_compact_data = 16, /* added to asciiobject_size */
    },
};

/* Where in CPython 3.13's _Py_DebugOffsets (Include/internal/
 * pycore_runtime.h) each offset the sampler needs is: offsetof(
 * _Py_DebugOffsets, ...) with the 3.13.5 headers.  Each is a uint64_t. */
typedef struct phs_py_dbg {
    uint16_t size;              /* sizeof(_Py_DebugOffsets) */
    uint16_t version, free_threaded;
    uint16_t interpreters_head, gil_locked, gil_holder;
    uint16_t ts_size, ts_current_frame, ts_thread_id;
    uint16_t fr_size, fr_previous, fr_executable, fr_instr_ptr, fr_owner;
    uint16_t co_size, co_filename, co_qualname, co_linetable, co_firstlineno, co_code_adaptive;
    uint16_t ob_type;
    uint16_t b_size, b_ob_size, b_ob_sval;
    uint16_t u_size, u_state, u_length, u_asciiobject_size;
} phs_py_dbg;

static const phs_py_dbg phs_py_dbg313 = {
    .size = 584,
    .version = 8,
    .free_threaded = 16,
    .interpreters_head = 40, /* runtime_state. */
    .gil_locked = 136,       /* interpreter_state.gil_runtime_state_locked */
    .gil_holder = 144,       /* interpreter_state.gil_runtime_state_holder */
    .ts_size = 152,          /* thread_state. */
    .ts_current_frame = 184,
    .ts_thread_id = 192,
    .fr_size = 224,          /* interpreter_frame. */
    .fr_previous = 232,
    .fr_executable = 240,
    .fr_instr_ptr = 248,
    .fr_owner = 264,
    .co_size = 272,          /* code_object. */
    .co_filename = 280,
    .co_qualname = 296,
    .co_linetable = 304,
    .co_firstlineno = 312,
    .co_code_adaptive = 344,
    .ob_type = 360,          /* pyobject. */
    .b_size = 512,           /* bytes_object. */
    .b_ob_size = 520,
    .b_ob_sval = 528,
    .u_size = 536,           /* unicode_object. */
    .u_state = 544,
    .u_length = 552,
    .u_asciiobject_size = 560,
};

#endif
