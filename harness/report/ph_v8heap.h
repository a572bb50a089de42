/* ph_v8heap.h - V8's sampling heap profile (node --heap-prof's
 * .heapprofile, the inspector's HeapProfiler.stopSampling result) as
 * folded stacks: each call-tree node's selfSize (V8's estimate of the
 * bytes of its sampled objects still live when the profile was taken,
 * at the process's exit for the heap mode's preload and --heap-prof) on
 * the stack of JS frames from
 * the root, a frame `function (url:line)` as the language view names JS
 * frames (the line 1-based; `(anonymous)` for an unnamed function; V8's
 * own pseudo frames such as `(BYTECODE_COMPILER)` as they are).
 *
 * The profile is a container's: the caller caps its size; the tree is
 * walked to PH_V8HEAP_MAX_DEPTH - 1 frames (a node at the cap: its self
 * bytes go to its parent's frame, its subtree is not read, counted in
 * info->cut), names cut at PH_V8HEAP_MAX_NAME bytes, control characters
 * replaced.
 *
 * Pure: jansson, ph_folded and ph_error only; never exits. */
#ifndef PH_V8HEAP_H
#define PH_V8HEAP_H

#include <jansson.h>
#include <stddef.h>

#include "ph_error.h"
#include "ph_folded.h"

#define PH_V8HEAP_MAX_DEPTH 512
#define PH_V8HEAP_MAX_NAME 300

typedef struct ph_v8heap_info {
    double bytes;    /* the selfSize sum */
    size_t samples;  /* the profile's `samples` (objects sampled), 0 when it has none */
    size_t nodes;    /* call-tree nodes read */
    size_t cut;      /* nodes at the depth cap: their subtrees not read */
} ph_v8heap_info;

/* PROFILE's stacks added to INTO (counts of a stack it holds summed);
 * INFO filled.  -1 and *ERR when PROFILE is not a heap profile (no
 * `head` node) or on ENOMEM. */
int ph_v8heap_fold(const json_t *profile, ph_folded *into, ph_v8heap_info *info, ph_error_t *err);

#endif
