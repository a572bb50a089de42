/* ph_sampler.h - the in-process sampling profiler (the `flamegraph` mode).
 *
 * Two ways in:
 *  - LD_PRELOAD=libphsampler.so with PH_SAMPLER_DIR set (without it the
 *    library is inert: no timer, no thread, no handler):
 *      PH_SAMPLER_DIR       output directory (created if missing)
 *      PH_SAMPLER_HZ        samples per CPU-second, default 150 (1..10000)
 *      PH_SAMPLER_INTERVAL  seconds between snapshots, default 120; 0: only
 *                           the final one
 *      PH_SAMPLER_TITLE     flamegraph title
 *      PH_SAMPLER_MODE      cumulative (default) or delta
 *      PH_SAMPLER_UNWIND    cfi (default: call frame information, frame
 *                           pointers where there is none) or fp
 *      PH_SAMPLER_CLOCK     cpu (default: CPU time, below) or wall: every
 *                           thread at PH_SAMPLER_HZ per second of wall time,
 *                           running or blocked; a blocked thread's stack
 *                           ends in an [off-cpu] frame under the call it
 *                           blocks in (ph_sampler_wall.c; the EINTR it
 *                           prevents and what it cannot:
 *                           ph_sampler_wait.c)
 *      PH_SAMPLER_DEBUGINFO 1 (default: source lines and inlined functions
 *                           through libdw.so.1 when it and debug info are
 *                           there) or 0 (symbol tables only)
 *      PH_SAMPLER_HEAP      the heap mode: sample allocations instead of CPU
 *                           time, one per this many bytes on average
 *                           (524288, 512K, 1M; a randomized interval);
 *                           unset: the CPU sampler (ph_sampler_heap.c)
 *      PH_SAMPLER_FOLLOW    which programs the service starts are profiled
 *                           too: auto (default: those a shell or an exec
 *                           wrapper that used no CPU of its own starts,
 *                           by exec or by fork and exec: `sh -c "echo;
 *                           exec app"`, `sh -c "echo; app"`), exec (every
 *                           program started), all (and forked children),
 *                           none, or a pattern for the programs to profile
 *                           (`python3*`, matched against the executable's
 *                           path and name); see ph_sampler_proc.c
 *      PH_SAMPLER_JAVA      1 (default: in a JVM that loads the library as
 *                           its agent, -agentpath, Java frames through
 *                           AsyncGetCallTrace, ph_sampler_java.c) or 0
 *                           (the agent does nothing: JIT frames from the
 *                           perf map only)
 *    At start the library removes its own entry from LD_PRELOAD and unsets
 *    PH_SAMPLER_*; the exec family and posix_spawn (interposed) give them
 *    back to a program that is followed.  A followed program writes files
 *    of its own, named with its pid.
 *  - linking it (libphsampler.a or .so) and calling ph_sampler_start();
 *    PH_SAMPLER_MODE is honoured there too, the environment is left alone.
 *
 * What it samples: CPU time of every thread, threads started later too
 * (up to 250 Hz a POSIX timer on the process's CPU clock sending
 * SIGRTMAX-7, on Linux 6.3 and later; before, SIGPROF from
 * setitimer(ITIMER_PROF); above 250 Hz, per-thread
 * perf_event_open cpu-clock events when the kernel allows them, signalling
 * SIGTRAP on Linux 6.1 and later, SIGPROF before; else the rate is capped
 * at 250 Hz and the cap is reported).  The delivered rate
 * is measured and written into every snapshot.  Stacks come from each
 * object's .eh_frame (x86-64; code without frame pointers keeps its
 * callers) or from frame pointers, at most 512 frames, each within the
 * thread's stack (or 8 MiB where its bounds are not known: a thread
 * started before the sampler, a stack of the service's own); a stack cut
 * there ends in a "[truncated]" frame and is counted.  No output holds
 * the sampler's own frames: its work on the service's threads (its
 * SIGTERM/SIGINT handler's wait, flushes, exec and exit, its malloc
 * bookkeeping) is counted as its own cost ("in the sampler's own work"),
 * and a stack through it (the service's handler run from ours) keeps
 * only the service's frames; a wall or heap sample ends in the call the
 * library interposes (`read;[off-cpu]`, `malloc`), as the service made
 * it.  Linked in (libphsampler.a) its code cannot be told by address:
 * only those sections are.
 *
 * What it writes into DIR, every interval, on ph_sampler_flush(), on
 * request (below), at exit or _exit(), before an exec and on
 * SIGTERM/SIGINT (before the service's own handler runs, or before the
 * default action kills it; waiting at most 5 s), when there are samples
 * (<pid> only in a followed program's names):
 *   stacks-<UTC>[-<pid>]-<n>.folded    `thread;outer;...;leaf COUNT`; a
 *                              function inlined into the one before is
 *                              `name (inlined)`; in a CPython 3.11 process
 *                              the eval loop's frames are replaced by the
 *                              Python functions they ran, `qualname
 *                              (file.py:line)_[p]` (ph_sampler_py.c)
 *   flamegraph-<UTC>[-<pid>]-<n>.svg
 *   offcpu-, oncpu-<UTC>[-<pid>]-<n>.folded  PH_SAMPLER_CLOCK=wall only:
 *                              the stacks ending in [off-cpu], the others
 *   profile-<UTC>[-<pid>]-<n>.pb.gz    pprof: samples/count and
 *                              cpu/nanoseconds (wall/nanoseconds on the
 *                              wall clock), a `thread` and `thread_id`
 *                              label per sample, source lines and inlined
 *                              functions when there is debug info
 * With PH_SAMPLER_HEAP, instead of those three (ph_sampler_heapout.c):
 *   <view>-<UTC>[-<pid>]-<n>.folded  `outer;...;leaf BYTES|OBJECTS` per view:
 *                              inuse_space, inuse_objects (now),
 *                              peak_inuse_space, peak_inuse_objects (at the
 *                              peak of the bytes in use), alloc_space,
 *                              alloc_objects (since start); unbiased
 *                              estimates, the leaf the allocation function
 *   <view>-<UTC>[-<pid>]-<n>.svg
 *   heap-<UTC>[-<pid>]-<n>.pb.gz   pprof: alloc_objects/count,
 *                              alloc_space/bytes, inuse_objects/count,
 *                              inuse_space/bytes, as Go's heap profile
 *   and the status's `samples` are the allocations sampled, its `heap`
 *   an object of the heap's figures.  The first final snapshot (SIGTERM,
 *   exit, exec) is the last: what the service frees on its way out is
 *   not "in use at the end".  No CPU timer runs in this mode.
 * each through a temporary name and a rename, and always
 *   sampler-status-<pid>.json  what the process got, or why nothing (below)
 *
 * For the harness (`collect` and `stop`); DIR is PH_SAMPLER_DIR as the
 * service sees it.  No signal is involved and no process is targeted:
 * the harness only writes and reads files in DIR.
 *
 * Snapshot on request.  Read DIR/.snapshot-request (missing: 0), then
 * write a bigger decimal number N and a newline into it, whole: through
 * a temporary name and a rename, or the Engine's archive PUT of a tar
 * holding `.snapshot-request`.  Every profiled process's writer reads the
 * file every tick (250 ms); when the number is bigger than the last it
 * served it writes a snapshot (only if it has samples) and then rewrites
 * its status with snapshot_request set to the number.  The snapshot is
 * complete when every status file whose state is "running" and whose
 * `updated` is less than 10 s old has snapshot_request >= N (>=: a
 * process that ends asks its children for a snapshot the same way, so
 * the number can move on by itself).  Processes in any other state wrote
 * their last files already; a status not updated for 10 s belongs to a
 * process that died without a word (SIGKILL).  A process that starts
 * after the request counts the number it finds as served.  Files in
 * last_snapshot are in place before the status names them.
 *
 * sampler-status-<pid>.json, one JSON object a line, rewritten through a
 * rename when sampling starts, at every snapshot, when a request is
 * served, every 5 s while running, before an exec, at the end and when
 * profiling turns off:
 *   pid, ppid, program     the process and its executable's path
 *   followed               true when a profiled process started it (the
 *                          service's own first process: false)
 *   state                  running; terminated (the SIGTERM/SIGINT
 *                          snapshot is written); exited; exec (replaced
 *                          by another program, see reason); disabled;
 *                          not-sampled (PH_SAMPLER_FOLLOW's pattern does
 *                          not match the program)
 *   samples, dropped       samples taken; lost to a full buffer
 *   truncated              stacks cut by the unwinder's bounds (more than
 *                          512 frames, or a frame over 8 MiB where the
 *                          thread's stack bounds are not known), each
 *                          ending in a "[truncated]" frame
 *   cpu_seconds            the process's CPU time less the writer's
 *   children_cpu_seconds   its reaped children's CPU time
 *   hz, timer              the rate set (after any cap); the source
 *                          of samples ("timer_create(CLOCK_PROCESS_CPUTIME_ID),
 *                          SIGRTMAX-7", "setitimer(ITIMER_PROF)", "perf_event
 *                          cpu-clock per thread, ...", either timer with
 *                          ", capped at 250 Hz: perf_event_open: <why>")
 *   snapshots, last_snapshot  how many written; the newest folded file's
 *                          name ("" if none)
 *   snapshot_request       the last request served
 *   reason                 "" when samples > 0; else why not, one of
 *                          "no CPU time used (X CPU-s while sampling,
 *                          less than one sample period)", "no sample
 *                          arrived in X CPU-s of sampling: SIGPROF|SIGTRAP|the
 *                          timer's signal blocked or ignored in the threads
 *                          that ran", "the service replaced
 *                          the sampler's SIGPROF handler: ..." (setitimer
 *                          only),
 *                          "profiling disabled: <why>", "replaced by
 *                          <program>, which got the settings
 *                          (PH_SAMPLER_FOLLOW)" or "... which is not
 *                          profiled (...)", "not sampled: <program> does
 *                          not match PH_SAMPLER_FOLLOW=<pattern>; ...";
 *                          with "; its child processes used X CPU-s
 *                          (PH_SAMPLER_FOLLOW=<value>)" added when the
 *                          CPU went to children not followed
 *   python                 "" (no CPython in the process), "Python
 *                          3.11.2: frames read", or "Python X.Y.Z: frames
 *                          not read (unknown version)" (no layout for
 *                          it: native frames only); also in the graph's
 *                          subtitle and the profile's comments
 *   java                   "" (no JVM), "Java: frames read through
 *                          AsyncGetCallTrace (samples of Java threads: N
 *                          with Java frames, M without[, the last code
 *                          C])", or "Java: frames not read (<why>): ..."
 *                          (no AsyncGetCallTrace, the agent not loaded or
 *                          refused, PH_SAMPLER_JAVA=0: the perf map's
 *                          names only; also said once on stderr); in the
 *                          subtitle and the comments as python
 *   updated                UTC, YYYYMMDDTHHMMSSZ
 * At `stop`: the run has samples when some status has samples > 0.  When
 * none has, the reasons to tell are those of the statuses with
 * followed false first, then the others.  No status file at all means the
 * library never started in the service: LD_PRELOAD did not reach it
 * (a static or setuid program, an entrypoint that clears the
 * environment) or PH_SAMPLER_DIR was not writable.
 *
 * Not covered: a forked child that does not exec is profiled only with
 * PH_SAMPLER_FOLLOW=all, so by default a service that daemonises by
 * forking is not profiled after the fork.  Programs started through
 * system(), popen() or a raw execve syscall are not followed.  SIGKILL
 * writes nothing.  Where setitimer is the timer (Linux before 6.3), a
 * service that uses SIGPROF or ITIMER_PROF itself conflicts with the
 * sampler (its status says so).  Above 250 Hz
 * with SIGTRAP, the service's own SIGTRAPs still reach its handler or its
 * default action, but a debugger attached sees every sample as a SIGTRAP.
 *
 * On any failure profiling turns off with one line on stderr
 * ("ph-sampler: ...; profiling disabled"); the service goes on.
 *
 * Async-signal-safety: none of the functions below may be called from a
 * signal handler.  The library's own handlers (SIGPROF, and the SIGTERM /
 * SIGINT handler standing in front of the service's) are
 * async-signal-safe.  The library interposes sigaction() and signal() to
 * keep the service's SIGTERM/SIGINT and timer signal (and, above 250 Hz,
 * SIGTRAP) handlers behind its own; both behave as libc's do.  A handler
 * installed without them (a raw system call: the Go runtime takes every
 * signal at its start) is put behind ours again by the writer within a
 * tick; ours hands it every signal that is not a sample.  It interposes the exec
 * family, posix_spawn and _exit as said above; they stay
 * async-signal-safe, and usable in a vfork child.
 */
#ifndef PH_SAMPLER_H
#define PH_SAMPLER_H

#ifdef __cplusplus
extern "C" {
#endif

/* Start sampling at HZ (1..10000), writing into DIR every INTERVAL_S
 * seconds (0: only at the end), titling graphs TITLE (may be NULL).
 * Returns 0, or -1 when already running or on failure (then one line was
 * printed on stderr).  Not async-signal-safe; call it once, from one
 * thread. */
int ph_sampler_start(const char *dir, int hz, int interval_s, const char *title);

/* Write a snapshot now and wait for it (at most 30 s).  0, or -1 when not
 * running.  Not async-signal-safe. */
int ph_sampler_flush(void);

/* Stop sampling and write the final snapshot (waiting at most 30 s).
 * No-op when not running.  Not async-signal-safe.  Called at exit() for
 * you. */
void ph_sampler_stop(void);

#ifdef __cplusplus
}
#endif

#endif
