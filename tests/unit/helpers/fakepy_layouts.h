/* fakepy_layouts.h - the structs the sampler reads, laid out as CPython
 * 3.8, 3.10 and 3.12 lay theirs out (x86-64/aarch64, default build):
 * each struct lists the fields of that version's own declaration, in its
 * order and with types of the same size, up to the last field read, so
 * the compiler places them as CPython's compiler does.  The fake
 * interpreters (sampler_fakepy310.c, sampler_fakepy312.c) are built of
 * them, and test_sampler_py checks ph_sampler_pylayout.h's rows with
 * offsetof against them: the rows' numbers are worked out by hand from the
 * headers, these by the compiler from the same field lists.
 * Headers, at each version's tag: Include/internal/pycore_runtime.h
 * (3.10, 3.12; 3.8: pycore_pystate.h), pycore_ceval.h (3.8),
 * pycore_gil.h, pycore_gc.h (3.8: pycore_pymem.h), pycore_interp.h and
 * pycore_ceval_state.h (3.12), Include/cpython/pystate.h,
 * Include/cpython/frameobject.h (3.10; 3.8: Include/frameobject.h),
 * Include/cpython/code.h (3.8: Include/code.h), pycore_frame.h (3.12),
 * Include/cpython/unicodeobject.h. */
#ifndef FAKEPY_LAYOUTS_H
#define FAKEPY_LAYOUTS_H

#include <pthread.h>
#include <stdint.h>

typedef struct fobj { intptr_t refcnt; void *type; } fobj;                  /* PyObject */
typedef struct fvarobj { intptr_t refcnt; void *type; intptr_t size; } fvarobj; /* PyVarObject */

/* pycore_gil.h: struct _gil_runtime_state (FORCE_SWITCHING) */
struct fgil {
    unsigned long interval;
    void *last_holder;
    int locked;
    unsigned long switch_number;
    pthread_cond_t cond;
    pthread_mutex_t mutex;
    pthread_cond_t switch_cond;
    pthread_mutex_t switch_mutex;
};

/* pycore_gc.h (3.8: pycore_pymem.h): struct _gc_runtime_state, the same
 * fields 3.8 to 3.12 */
struct fgcgen { uintptr_t next, prev; int threshold, count; };
struct fgc {
    void *trash_delete_later;
    int trash_delete_nesting, enabled, debug;
    struct fgcgen generations[3];
    void *generation0;
    struct fgcgen permanent_generation;
    intptr_t generation_stats[3][3];
    int collecting;
    void *garbage, *callbacks;
    intptr_t long_lived_total, long_lived_pending;
};

struct finterps { void *mutex, *head, *main; int64_t next_id; }; /* struct pyinterpreters */

/* 3.8: pycore_pystate.h _PyRuntimeState up to gilstate, pycore_ceval.h's
 * struct _ceval_runtime_state and struct _pending_calls */
struct fruntime38 {
    int preinitializing, preinitialized, core_initialized, initialized;
    void *finalizing;
    struct finterps interpreters;
    struct { void *mutex, *head; } xidregistry;
    unsigned long main_thread;
    void (*exitfuncs[32])(void);
    int nexitfuncs;
    struct fgc gc;
    struct {
        int recursion_limit, tracing_possible, eval_breaker, gil_drop_request;
        struct {
            int finishing;
            void *lock;
            int calls_to_do, async_exc;
            struct { void *func, *arg; } calls[32];
            int first, last;
        } pending;
        int signals_pending;
        struct fgil gil;
    } ceval;
    struct { int check_enabled; void *tstate_current; } gilstate;
};

/* 3.10 (3.9 the same): pycore_runtime.h _PyRuntimeState up to gilstate */
struct fruntime310 {
    int preinitializing, preinitialized, core_initialized, initialized;
    void *_finalizing;
    struct finterps interpreters;
    struct { void *mutex, *head; } xidregistry;
    unsigned long main_thread;
    void (*exitfuncs[32])(void);
    int nexitfuncs;
    struct { int signals_pending; struct fgil gil; } ceval;
    struct { int check_enabled; void *tstate_current; } gilstate;
};

/* 3.8 (3.9 the same): Include/cpython/pystate.h PyThreadState up to thread_id */
struct fts38 {
    void *prev, *next, *interp, *frame;
    int recursion_depth;
    char overflowed, recursion_critical;
    int stackcheck_counter, tracing, use_tracing;
    void *c_profilefunc, *c_tracefunc, *c_profileobj, *c_traceobj;
    void *curexc_type, *curexc_value, *curexc_traceback;
    void *exc_state[4]; /* _PyErr_StackItem: exc_type, exc_value, exc_traceback, previous_item */
    void *exc_info, *dict;
    int gilstate_counter;
    void *async_exc;
    unsigned long thread_id;
};

/* 3.10: Include/cpython/pystate.h PyThreadState up to thread_id */
struct fts310 {
    void *prev, *next, *interp, *frame;
    int recursion_depth, recursion_headroom, stackcheck_counter, tracing;
    void *cframe;
    void *c_profilefunc, *c_tracefunc, *c_profileobj, *c_traceobj;
    void *curexc_type, *curexc_value, *curexc_traceback;
    void *exc_state[4];
    void *exc_info, *dict;
    int gilstate_counter;
    void *async_exc;
    unsigned long thread_id;
};

/* 3.8 (3.9 the same): Include/frameobject.h PyFrameObject */
struct fframe38 {
    fvarobj ob;
    void *f_back, *f_code, *f_builtins, *f_globals, *f_locals, **f_valuestack, **f_stacktop, *f_trace;
    char f_trace_lines, f_trace_opcodes;
    void *f_gen;
    int f_lasti, f_lineno, f_iblock;
    char f_executing;
    int f_blockstack[20][3]; /* PyTryBlock[CO_MAXBLOCKS] */
    void *f_localsplus[1];
};

/* 3.10: Include/cpython/frameobject.h PyFrameObject */
struct fframe310 {
    fvarobj ob;
    void *f_back, *f_code, *f_builtins, *f_globals, *f_locals, **f_valuestack, *f_trace;
    int f_stackdepth;
    char f_trace_lines, f_trace_opcodes;
    void *f_gen;
    int f_lasti, f_lineno, f_iblock;
    signed char f_state;
    int f_blockstack[20][3];
    void *f_localsplus[1];
};

/* 3.8 to 3.10: Include/cpython/code.h PyCodeObject (3.8/3.9: co_lnotab
 * where 3.10 has co_linetable) */
struct fcode38 {
    fobj ob;
    int co_argcount, co_posonlyargcount, co_kwonlyargcount, co_nlocals, co_stacksize, co_flags, co_firstlineno;
    void *co_code, *co_consts, *co_names, *co_varnames, *co_freevars, *co_cellvars, *co_cell2arg;
    void *co_filename, *co_name, *co_lnotab;
    void *co_zombieframe, *co_weakreflist, *co_extra, *co_opcache_map, *co_opcache;
    int co_opcache_flag;
    unsigned char co_opcache_size;
};

/* 3.8 to 3.11: Include/cpython/unicodeobject.h PyASCIIObject, then the
 * compact one's fields (utf8_length, utf8, wstr_length) */
struct fstr38 {
    fobj ob;
    intptr_t length, hash;
    uint32_t state;
    void *wstr;
    char data[40];
};

/* 3.12: Include/internal/pycore_runtime.h _PyRuntimeState up to interpreters */
struct fruntime312 {
    int _initialized, preinitializing, preinitialized, core_initialized, initialized;
    void *_finalizing;
    struct finterps interpreters;
};

/* 3.12: Include/internal/pycore_interp.h struct _is up to ceval, and
 * pycore_ceval_state.h's struct _ceval_state up to gil */
struct finterp312 {
    void *next;
    int64_t id, id_refcount;
    int requires_idref;
    void *id_mutex;
    int _initialized, finalizing;
    uint64_t monitoring_version, last_restart_version;
    struct { uint64_t next_unique_id; void *head; long count; size_t stacksize; } threads;
    void *runtime, *_finalizing;
    struct fgc gc;
    void *sysdict, *builtins;
    struct { int eval_breaker, gil_drop_request, recursion_limit; struct fgil *gil; int own_gil; } ceval;
};

/* 3.12: Include/cpython/pystate.h PyThreadState up to thread_id; _PyCFrame */
struct fts312 {
    void *prev, *next, *interp;
    uint32_t _status;
    int py_recursion_remaining, py_recursion_limit, c_recursion_remaining, recursion_headroom, tracing, what_event;
    void *cframe;
    void *c_profilefunc, *c_tracefunc, *c_profileobj, *c_traceobj;
    void *current_exception, *exc_info, *dict;
    int gilstate_counter;
    void *async_exc;
    unsigned long thread_id;
};
struct fcframe312 { void *current_frame, *previous; };

/* 3.12: Include/internal/pycore_frame.h _PyInterpreterFrame */
struct fframe312 {
    void *f_code, *previous, *f_funcobj, *f_globals, *f_builtins, *f_locals, *frame_obj;
    uint16_t *prev_instr;
    int stacktop;
    uint16_t return_offset;
    char owner;
    void *localsplus[1];
};

/* 3.12: Include/cpython/code.h _PyCode_DEF */
struct fcode312 {
    fvarobj ob;
    void *co_consts, *co_names, *co_exceptiontable;
    int co_flags, co_argcount, co_posonlyargcount, co_kwonlyargcount, co_stacksize, co_firstlineno;
    int co_nlocalsplus, co_framesize, co_nlocals, co_ncellvars, co_nfreevars;
    uint32_t co_version;
    void *co_localsplusnames, *co_localspluskinds, *co_filename, *co_name, *co_qualname, *co_linetable;
    void *co_weakreflist, *_co_cached;
    uint64_t _co_instrumentation_version;
    void *_co_monitoring;
    int _co_firsttraceable;
    void *co_extra;
    uint16_t co_code_adaptive[16];
};

/* 3.12: Include/cpython/unicodeobject.h PyASCIIObject (no wstr), an
 * ASCII str's data after it */
struct fascii312 {
    fobj ob;
    intptr_t length, hash;
    uint32_t state;
};
struct fstr312 {
    struct fascii312 a;
    char data[40];
};

/* Include/cpython/bytesobject.h PyBytesObject */
struct fbytes {
    fvarobj ob;
    intptr_t ob_shash;
    unsigned char ob_sval[64];
};

/* PyTypeObject up to tp_basicsize: the sampler checks code and frame
 * objects' sizes there */
struct ftype {
    fvarobj ob;
    const char *tp_name;
    intptr_t tp_basicsize, tp_itemsize;
    char rest[512];
};

#endif
