/* ph_sampler_pylayout.h - where CPython keeps what the sampler reads, one
 * row per minor version (x86-64 and aarch64: LP64, default build, not the
 * free-threaded one).
 *
 * 3.8 to 3.12: each offset comes from CPython's own headers of that
 * version, named in the comment beside it (Include/internal/
 * pycore_runtime.h, pycore_interp.h, pycore_frame.h, Include/cpython/
 * pystate.h, frameobject.h, code.h, unicodeobject.h at the version's tag),
 * worked out field by field.  tests/unit/test_sampler_py.c checks 3.11's
 * with offsetof against the installed headers (python3.11-dev), and 3.8
 * to 3.12's against structs that list those versions' fields in their
 * order (tests/unit/helpers/fakepy_layouts.h).  3.9's were also compared
 * with offsetof against Debian bullseye's python3.9-dev (3.9.2): all equal.
 * The sampler also checks, at detection, that PyCode_Type's (and before
 * 3.11 PyFrame_Type's) tp_basicsize is the row's.
 *
 * Before 3.11 each Python frame is a PyFrameObject (f_back, f_code,
 * f_lasti: a byte offset in 3.8 and 3.9, an instruction index in 3.10)
 * run by a call of the eval loop of its own, the thread state holding the
 * innermost (PyThreadState.frame); from 3.11 on they are
 * _PyInterpreterFrames, one eval loop running several.
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
 * frames not read (unknown version)" rather than guess.  3.7 and before
 * have none (no Debian release here ships them), nor 3.14, which changed
 * _Py_DebugOffsets and its frames (tagged stack references). */
#ifndef PH_SAMPLER_PYLAYOUT_H
#define PH_SAMPLER_PYLAYOUT_H

#include <stdint.h>

#define PHS_PY_NO_FIELD 0xffff

/* How the thread state holding the GIL is found. */
enum {
    PHS_PY_TS_RUNTIME,  /* _PyRuntime + rt_tstate_current (3.8 to 3.11) */
    PHS_PY_TS_GIL,      /* the main interpreter (_PyRuntime + rt_interp_head)'s
                         * GIL: the holder at is_gil_holder while the int at
                         * is_gil_locked is set (3.13) */
    PHS_PY_TS_GILPTR,   /* the same in the GIL the interpreter points to at
                         * is_gil (3.12) */
};

/* A code object's line table, and what the instruction index is. */
enum {
    PHS_PY_LINES_LOCATIONS, /* 3.11+: location table, code units */
    PHS_PY_LINES_LNOTAB,    /* 3.8, 3.9: co_lnotab, bytes */
    PHS_PY_LINES_310,       /* 3.10: co_linetable, code units (2 bytes each) */
};

typedef struct phs_py_layout {
    unsigned minor;             /* 3.<minor> */
    uint8_t ts_via;             /* PHS_PY_TS_* */
    uint8_t from_debug_offsets; /* the offsets below are filled from the process */
    /* _PyRuntimeState, PyInterpreterState */
    uint16_t rt_tstate_current; /* the thread state holding the GIL */
    uint16_t rt_interp_head, is_gil_locked, is_gil_holder;
    uint16_t is_gil;            /* PHS_PY_TS_GILPTR: the interpreter's pointer to its GIL */
    /* A thread not holding the GIL finds its own state in the list of
     * the main interpreter's threads: _PyRuntime + rt_interp, its list's
     * head at is_threads_head, the next state at ts_next. */
    uint16_t rt_interp, is_threads_head, ts_next;
    /* PyThreadState, _PyCFrame */
    uint16_t ts_thread_id;      /* pthread_self() of its thread */
    uint16_t ts_cframe;         /* PHS_PY_NO_FIELD: the thread state holds */
    uint16_t cf_current_frame;  /* current_frame itself, at cf_current_frame */
    /* _PyInterpreterFrame (3.13: f_executable, instr_ptr) */
    uint16_t fr_code, fr_previous, fr_prev_instr;
    uint16_t fr_is_entry;       /* a bool; 0xffff: none (see entry_owner) */
    uint16_t fr_owner;          /* a char */
    int16_t entry_owner;        /* the owner that marks an entry frame; -1: is_entry does */
    uint8_t each_eval;          /* every frame runs in an eval loop call of its own (before 3.11) */
    uint8_t lasti_int;          /* fr_prev_instr is an int index (f_lasti), not a pointer */
    uint8_t lines;              /* PHS_PY_LINES_* */
    /* PyCodeObject */
    uint16_t co_filename, co_qualname, co_firstlineno, co_linetable, co_code;
    /* PyASCIIObject / PyCompactUnicodeObject */
    uint16_t u_length, u_state, u_ascii_data, u_compact_data;
    /* PyBytesObject */
    uint16_t b_size, b_data;
    /* tp_basicsize of PyCode_Type and PyFrame_Type; 0: not checked */
    uint16_t code_size, frame_size;
} phs_py_layout;

#define PHS_PY_OB_TYPE 8 /* PyObject.ob_type: after ob_refcnt, every version */

/* 3.8 to 3.10 (PyFrameObject chains): what differs is the runtime
 * state's size before gilstate, where f_lasti is, the line table's format
 * and the frame object's size. */
#define PHS_PY_ROW_BEFORE_311(MINOR, TSTATE_CURRENT, LASTI, LINES, FRAME_SIZE)                                     \
    {                                                                                                              \
        .minor = MINOR, .ts_via = PHS_PY_TS_RUNTIME, .rt_tstate_current = TSTATE_CURRENT,                          \
        .rt_interp_head = PHS_PY_NO_FIELD, .is_gil_locked = PHS_PY_NO_FIELD, .is_gil_holder = PHS_PY_NO_FIELD,     \
        /* pycore_runtime.h (3.8: pycore_pystate.h): _PyRuntimeState: 4 ints, finalizing, interpreters           \
         * (mutex, head, main); pycore_interp.h (3.8: pycore_pystate.h): struct _is: next, tstate_head;          \
         * PyThreadState: prev, next */                                                                            \
        .rt_interp = 40, .is_threads_head = 8, .ts_next = 8,                                                      \
        /* Include/cpython/pystate.h: PyThreadState.frame (the innermost), .thread_id */                          \
        .ts_thread_id = 176, .ts_cframe = PHS_PY_NO_FIELD, .cf_current_frame = 24,                                \
        /* (cpython/)frameobject.h: PyFrameObject (a PyVarObject): f_back, f_code, ..., f_lasti */               \
        .fr_code = 32, .fr_previous = 24, .fr_prev_instr = LASTI, .fr_is_entry = PHS_PY_NO_FIELD,                 \
        .fr_owner = PHS_PY_NO_FIELD, .entry_owner = -1, .each_eval = 1, .lasti_int = 1, .lines = LINES,           \
        /* (cpython/)code.h: PyCodeObject: 7 ints from co_argcount to co_firstlineno, co_code ...                \
         * co_cell2arg, co_filename, co_name (no qualified name before 3.11), co_lnotab (3.10:                    \
         * co_linetable); co_code: its size, 176 (instructions are not inline before 3.11) */                     \
        .co_filename = 104, .co_qualname = 112, .co_firstlineno = 40, .co_linetable = 120, .co_code = 176,        \
        /* Include/cpython/unicodeobject.h, bytesobject.h: as 3.11's */                                          \
        .u_length = 16, .u_state = 32, .u_ascii_data = 48, .u_compact_data = 72, .b_size = 16, .b_data = 32,      \
        .code_size = 176, .frame_size = FRAME_SIZE,                                                                \
    }

static const phs_py_layout phs_py_layouts[] = {
    /* 3.8: Include/internal/pycore_pystate.h: _PyRuntimeState: 4 ints,
     * finalizing, interpreters (4 words), xidregistry (2), main_thread,
     * exitfuncs[32], nexitfuncs, gc (struct _gc_runtime_state,
     * pycore_pymem.h: 240 bytes), ceval (pycore_ceval.h: 4 ints,
     * _pending_calls of 544, signals_pending, the GIL, pycore_gil.h: 208),
     * then gilstate (check_enabled, tstate_current).  Include/
     * frameobject.h: f_lasti after f_gen (bytes), sizeof 368.  co_lnotab. */
    PHS_PY_ROW_BEFORE_311(8, 1368, 104, PHS_PY_LINES_LNOTAB, 368),
    /* 3.9: Include/internal/pycore_runtime.h: gc moved to the interpreter,
     * ceval is signals_pending and the GIL; the rest as 3.8's. */
    PHS_PY_ROW_BEFORE_311(9, 568, 104, PHS_PY_LINES_LNOTAB, 368),
    /* 3.10: the runtime state as 3.9's; Include/cpython/pystate.h: 4 ints
     * and cframe after frame, thread_id where it was; Include/cpython/
     * frameobject.h: f_stackdepth for f_stacktop, f_lasti (instructions)
     * after f_gen, sizeof 360; co_linetable. */
    PHS_PY_ROW_BEFORE_311(10, 568, 96, PHS_PY_LINES_310, 360),
    {
        .minor = 11,
        .ts_via = PHS_PY_TS_RUNTIME,
        .rt_interp_head = PHS_PY_NO_FIELD,
        .is_gil_locked = PHS_PY_NO_FIELD,
        .is_gil_holder = PHS_PY_NO_FIELD,
        /* Include/internal/pycore_runtime.h: _PyRuntimeState.gilstate
         * (struct _gilstate_runtime_state, same header).tstate_current */
        .rt_tstate_current = 576,
        /* _PyRuntimeState: 5 ints, _finalizing, interpreters (mutex, head,
         * main); Include/internal/pycore_interp.h: struct _is: next,
         * threads (next_unique_id, head); PyThreadState: prev, next */
        .rt_interp = 48,
        .is_threads_head = 16,
        .ts_next = 8,
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
        .minor = 12,
        .ts_via = PHS_PY_TS_GILPTR,
        .rt_tstate_current = PHS_PY_NO_FIELD, /* the current thread state is thread-local (_Py_tss_tstate) */
        /* Include/internal/pycore_runtime.h: _PyRuntimeState: 5 ints,
         * _finalizing, interpreters (mutex, head, main) */
        .rt_interp_head = 48, /* interpreters.main */
        /* ... threads (next_unique_id, head) after 2 uint64_t (see is_gil);
         * PyThreadState: prev, next */
        .rt_interp = 48,
        .is_threads_head = 72,
        .ts_next = 8,
        /* Include/internal/pycore_interp.h: struct _is: next, id,
         * id_refcount, requires_idref, id_mutex, 2 ints, 2 uint64_t,
         * threads (4 words), runtime, _finalizing, gc (240 bytes), sysdict,
         * builtins, ceval (pycore_ceval_state.h: 3 ints, then gil, the
         * GIL the interpreter uses) */
        .is_gil = 384,
        /* Include/internal/pycore_gil.h: interval, last_holder, locked */
        .is_gil_holder = 8,
        .is_gil_locked = 16,
        /* Include/cpython/pystate.h: PyThreadState: 3 pointers, _status, 6
         * ints, cframe ... thread_id; _PyCFrame.current_frame first */
        .ts_thread_id = 136,
        .ts_cframe = 56,
        .cf_current_frame = 0,
        /* Include/internal/pycore_frame.h: _PyInterpreterFrame: f_code,
         * previous, f_funcobj, f_globals, f_builtins, f_locals, frame_obj,
         * prev_instr, stacktop, return_offset, owner; the eval loop's entry
         * frame is owned by the C stack (FRAME_OWNED_BY_CSTACK) */
        .fr_code = 0,
        .fr_previous = 8,
        .fr_prev_instr = 56,
        .fr_is_entry = PHS_PY_NO_FIELD,
        .fr_owner = 70,
        .entry_owner = 3,
        /* Include/cpython/code.h: _PyCode_DEF(): co_firstlineno after 3
         * pointers and 6 ints, co_filename, co_name, co_qualname,
         * co_linetable, ... co_extra, co_code_adaptive (what tp_basicsize
         * ends at) */
        .co_filename = 112, .co_qualname = 128, .co_firstlineno = 68, .co_linetable = 136, .co_code = 192,
        /* Include/cpython/unicodeobject.h: PyASCIIObject lost wstr in 3.12
         * (state: interned:2 kind:3 compact:1 ascii:1 statically_allocated:1);
         * PyCompactUnicodeObject adds utf8_length, utf8 */
        .u_length = 16,
        .u_state = 32,
        .u_ascii_data = 40,
        .u_compact_data = 56,
        .b_size = 16,
        .b_data = 32,
        .code_size = 192,
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
    uint16_t interpreters_head, threads_head, gil_locked, gil_holder;
    uint16_t ts_size, ts_next, ts_current_frame, ts_thread_id;
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
    .threads_head = 72,      /* interpreter_state. */
    .gil_locked = 136,       /* interpreter_state.gil_runtime_state_locked */
    .gil_holder = 144,       /* interpreter_state.gil_runtime_state_holder */
    .ts_size = 152,          /* thread_state. */
    .ts_next = 168,
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
