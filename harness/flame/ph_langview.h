/* ph_langview.h - a run's stacks at the level of its own language.
 *
 * The sampler and the perf conversion mark the frames of a language
 * runtime: Python `qualname (file.py:LINE)_[p]`, Java `Class.method_[j]`
 * (` (inlined)` after it when the JIT inlined it), and JIT code named
 * from a perf map `NAME_[j]` (V8's `LazyCompile:*readFile node:fs:383`,
 * HotSpot's methods and stubs).  The language view makes each stack its
 * language frames, as py-spy and async-profiler show them by default:
 *   - a frame is `function (file)`; a Python line is dropped (one function,
 *     one row), V8's tier marker too (`~` interpreted, `^` baseline,
 *     `+` maglev, `*` optimized: the tiers of a function are one row);
 *   - native frames above the innermost language frame are its self time;
 *     those between two language frames (the interpreter running the
 *     inner one) and below the outermost (the VM's start-up) are dropped;
 *   - a stack without any language frame stays as it is;
 *   - the thread (the root frame, when SKIP_ROOT) and an `[off-cpu]` leaf
 *     are kept.
 * V8's own code in its perf map (`Builtin:`, `Stub:`, `BytecodeHandler:`
 * ...) and HotSpot's stubs (`Interpreter`, `StubRoutines` ...) are the
 * runtime's, so native here.
 *
 * Pure: libc, ph_folded and ph_error only; never exits.
 */
#ifndef PH_LANGVIEW_H
#define PH_LANGVIEW_H

#include <stddef.h>
#include "ph_error.h"
#include "ph_folded.h"

typedef enum ph_lang {
    PH_LANG_NONE = 0, /* a native frame (or the runtime's own) */
    PH_LANG_PYTHON,
    PH_LANG_JAVA,
    PH_LANG_JS,
    PH_LANG_N
} ph_lang;

typedef struct ph_langview_info {
    ph_lang lang;       /* the language most samples' innermost language frame is in */
    double total;       /* samples of the stacks read */
    double with_lang;   /* of those, samples whose stack has a language frame */
    double per_lang[PH_LANG_N]; /* samples by the language of the innermost language frame */
} ph_langview_info;

/* The language of frame NAME[0..N) and, when it is one, its name in the
 * view (`readFile (node:fs:383)`) into OUT (CAP bytes, NUL-terminated,
 * cut at CAP).  PH_LANG_NONE for a native frame (OUT untouched). */
ph_lang ph_langview_frame(const char *name, size_t n, char *out, size_t cap);

/* "Python", "Java", "JavaScript"; "" for PH_LANG_NONE. */
const char *ph_langview_lang_name(ph_lang l);

/* The language view of FROM (SKIP_ROOT: each stack's first frame is its
 * thread, kept as is).  1 and *OUT (a new ph_folded) when FROM has
 * language frames; 0 and *OUT NULL when it has none, or is differential;
 * -1 only on ENOMEM.  INFO (may be NULL) is filled in either case. */
int ph_langview_build(const ph_folded *from, int skip_root, ph_folded **out, ph_langview_info *info,
                      ph_error_t *err);

#endif
