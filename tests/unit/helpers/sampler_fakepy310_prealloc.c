/* sampler_fakepy310_prealloc.c - sampler_fakepy310 caught while starting
 * a thread: up to 3.11, _thread.start_new_thread makes the new thread's
 * state in the parent (_PyThreadState_Prealloc), with the parent's
 * thread_id until the child runs, and puts it at the head of the
 * interpreter's list.  Nobody holds the GIL here (the parent waits for the
 * child), so the sampler finds the main thread's own state in that list:
 * the newest state with its thread_id is the child's, without a frame. */
#define FAKE_PREALLOC 1
#include "sampler_fakepy310.c"
