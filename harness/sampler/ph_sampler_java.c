/* ph_sampler_java.c - Java's own frames in the sampler's stacks: the
 * methods a JVM runs, interpreted, compiled or inlined, by their class
 * and method names, where the native stack shows only the JIT's code (named
 * from the perf map, compiled methods only) and the `Interpreter`.
 *
 * How (async-profiler's way):
 * - The sampler library is also a JVMTI agent: the flamegraph profile
 *   adds `-agentpath:<this library>` to JAVA_TOOL_OPTIONS, and the JVM,
 *   finding the library already loaded (LD_PRELOAD), calls Agent_OnLoad
 *   in it.  In a process the sampler does not sample the agent does
 *   nothing.  It never fails the JVM: whatever goes wrong leaves the
 *   process as it would be without the agent, said in the status.
 * - At load: a jvmtiEnv; the capabilities to read source files and line
 *   tables; ClassLoad and ClassPrepare events (AsyncGetCallTrace refuses
 *   to walk while nobody listens to class loads, and a frame of a method
 *   without a jmethodID comes back nameless: every prepared class's
 *   methods get theirs through GetClassMethods, the classes loaded before
 *   the agent at VMInit); ThreadStart/ThreadEnd, which keep each Java
 *   thread's JNIEnv in a thread-local the signal path reads; and
 *   AsyncGetCallTrace itself, found with dlsym in the libjvm that holds
 *   the JavaVM's functions.
 * - The signal path (phs_java_merge), after the native unwind, on a
 *   thread with a JNIEnv: AsyncGetCallTrace with the interrupted context
 *   (made for signal handlers: it neither allocates nor locks), and the
 *   (bci, jmethodID) pairs appended to the native words after a mark.
 *   Nothing is named there.
 * - The writer's drain (phs_java_resolve), within a tick of the sample:
 *   the Java frames take the place of the native frames in the JVM's
 *   code (those outside every loaded object: the code cache's compiled
 *   methods, interpreter and stubs); native frames inside (a JNI
 *   method's, the VM's runtime calls) and outside (call_stub's callers,
 *   the thread's start) stay.  Each jmethodID is named once through
 *   JVMTI (GetMethodDeclaringClass, GetClassSignature, GetMethodName,
 *   GetSourceFileName, GetLineNumberTable for the bci's line), for which
 *   the writer attaches itself to the JVM as a daemon thread.  JVMTI
 *   refuses an unloaded class's method (a stale jmethodID): "[java:
 *   method unloaded]", never a wrong name.  After VMDeath nothing calls
 *   into the JVM again: a call racing the VM's exit would wait forever
 *   at its last safepoint (VMDeath waits for a call in flight).
 * - Not read: threads the JVM started before VMInit (no ThreadStart for
 *   them: the reference handler, finalizer, signal dispatcher) keep their
 *   native frames.  Where AsyncGetCallTrace is missing, the agent was not
 *   loaded or cannot work, the frames are as without it (the perf map's
 *   names) and the status says why, as stderr does once.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ph_intern.h"
#include "ph_sampler.h"
#include "ph_sampler_attach.h"
#include "ph_sampler_int.h"
#include "ph_sampler_jvmti.h"

#define MAX_METHODS (1u << 20) /* jmethodIDs named; past it "[java: too many methods]" */
#define MAX_NAME 1024
#define NOAGENT_AFTER_S 3      /* libjvm loaded this long and no agent: it was not loaded */
#define DEATH_WAIT_MS 2000

/* Java frames one sample takes at most: the room left in a stack's words
 * beside a full native stack. */
#define MAX_FRAMES ((PHS_MAX_WORDS - PHS_MAX_DEPTH - 1) / 2)

enum { J_NONE, J_LOADED, J_READING, J_FALLBACK, J_NOAGENT, J_DEAD };

static struct {
    _Atomic int state;          /* J_*; the signal path calls AsyncGetCallTrace only in J_READING */
    phj_vm vm;
    phj_ti ti;
    phj_asgct_fn asgct;
    int lines, sources;         /* capabilities granted */
    _Atomic int dead;           /* VMDeath: no call into the JVM from here on */
    _Atomic int live;           /* loaded into a running VM (Agent_OnAttach): threads it had have no ThreadStart */
    _Atomic int busy;           /* the writer is inside a JVMTI call */
    _Atomic uint64_t with, without; /* samples of Java threads with / without Java frames */
    _Atomic int last_error;     /* AsyncGetCallTrace's last code below 1 */
    double jvm_seen;            /* when the writer first saw libjvm (no agent yet) */
    time_t looked_at;
    _Atomic int said;
    char why[240];              /* the fallback's reason */
    char desc[400];
    /* writer */
    phj_jni env;                /* the writer's own, once attached */
    int attach_failed;
    ph_u64map by_method;        /* jmethodID -> method index */
    ph_u64map by_frame;         /* method index << 32 | line -> frame id */
    ph_u64map by_key;           /* jmethodID << 16 | bci -> frame id */
    struct jmethod {
        const char *name, *file, *system; /* name: a placeholder when not named; system, file: NULL */
        phj_line_entry *lines;
        int n_lines;
    } *methods;
    size_t n_methods, cap_methods;
    phs_frame *frames;
    size_t n_frames, cap_frames;
} J;

/* The heap mode's (see below) */
#define JH_FRAMES 128                  /* Java frames kept of an allocation's stack */
#define JH_CLASSES (1u << 16)          /* classes named; past it "[java: too many classes]" */
#define JH_CLASS ((uintptr_t)1 << 60)  /* a heap stack's first word: PHS_JAVA_TAG | JH_CLASS | class index */
#define JH_CLASS_TAG ((int64_t)1 << 62) /* a class object's tag: | its index (objects' tags are below) */

enum { JH_OFF, JH_ON, JH_REFUSED };

static void class_name(const char *sig, char *out, size_t cap);

static struct {
    _Atomic int state;             /* JH_* */
    char why[200];                 /* JH_REFUSED's reason */
    pthread_mutex_t lock;          /* naming a class (a sampled thread's, never the signal path's) */
    char *names[JH_CLASSES];       /* "new java.lang.String" */
    _Atomic uint32_t n_names;
    _Atomic uint64_t seq;          /* objects tagged */
    _Atomic uint64_t samples, untagged;
    _Atomic uint64_t want, done;   /* VMDeath's request for a naming pass, the writer's last one */
    /* writer */
    uint32_t named;                /* heap stacks named so far */
    ph_u64map by_class;            /* class index -> frame id */
} JH = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The JNIEnv of this thread, when it is a Java thread (set at its start).
 * initial-exec, as ph_sampler.c's: read in the signal handler. */
static __thread phj_jni tls_jni __attribute__((tls_model("initial-exec")));

int
phs_java_active(void)
{
    return atomic_load_explicit(&J.state, memory_order_acquire) == J_READING;
}

/* ---- the signal path ---------------------------------------------------- */

uint32_t
phs_java_merge(const void *ctx, const uintptr_t *native, uint32_t n, uintptr_t *out, uint32_t max)
{
    phj_call_frame frames[MAX_FRAMES];
    phj_call_trace t;
    phj_jni env = tls_jni;
    uint32_t room, o;

    if (n > max)
        n = max;
    memcpy(out, native, n * sizeof *native);
    if (env == NULL && atomic_load_explicit(&J.live, memory_order_relaxed) && phs_java_active()) {
        /* A thread the VM had before the agent came: its JNIEnv from
         * GetEnv, which only reads the thread's pointer (no lock, no
         * allocation: async-profiler calls it from its handler too). */
        if (PHJ_FN(int (*)(phj_vm, void **, phj_int), J.vm, PHJ_VM_GET_ENV)(J.vm, (void **)&env,
                                                                            PHJ_JNI_VERSION_1_6) == PHJ_OK &&
            env != NULL)
            tls_jni = env;
        else
            env = NULL;
    }
    if (env == NULL || !phs_java_active() || max - n < 3)
        return n;
    room = (max - n - 1) / 2;
    if (room > MAX_FRAMES)
        room = MAX_FRAMES;
    t.env_id = env;
    t.num_frames = 0;
    t.frames = frames;
    J.asgct(&t, (phj_int)room, (void *)(uintptr_t)ctx);
    if (t.num_frames <= 0 || (uint32_t)t.num_frames > room) {
        atomic_fetch_add_explicit(&J.without, 1, memory_order_relaxed);
        atomic_store_explicit(&J.last_error, t.num_frames, memory_order_relaxed);
        return n;
    }
    atomic_fetch_add_explicit(&J.with, 1, memory_order_relaxed);
    o = n;
    /* All the room taken: the outermost frames may be cut. */
    out[o++] = PHS_JAVA_MARK | (uint32_t)t.num_frames | ((uint32_t)t.num_frames == room ? PHS_JAVA_CUT : 0);
    for (phj_int i = 0; i < t.num_frames; i++) {
        out[o++] = PHS_JAVA_TAG | (uint32_t)frames[i].lineno;
        out[o++] = (uintptr_t)frames[i].method_id;
    }
    return o;
}

/* ---- the agent ------------------------------------------------------------ */

/* Give up on Java frames: the native ones stay, as without the agent. */
static void
fall_back(int state, const char *why)
{
    snprintf(J.why, sizeof J.why, "%s", why);
    atomic_store(&J.state, state);
}

static int
ti_deallocate(void *p)
{
    return p == NULL ? 0 : PHJ_FN(int (*)(phj_ti, void *), J.ti, PHJ_TI_DEALLOCATE)(J.ti, p);
}

/* Give CLASS's methods their jmethodIDs now (a class not prepared yet
 * refuses: its ClassPrepare comes later). */
static void
load_methods(phj_object cls)
{
    phj_int n = 0;
    phj_method *m = NULL;

    if (PHJ_FN(int (*)(phj_ti, phj_object, phj_int *, phj_method **), J.ti, PHJ_TI_GET_CLASS_METHODS)(J.ti, cls, &n,
                                                                                                       &m) == PHJ_OK)
        ti_deallocate(m);
}

static void
on_class_load(phj_ti ti, phj_jni jni, phj_object thread, phj_object cls)
{
    /* Enabled for AsyncGetCallTrace's sake (see above); nothing to do. */
}

/* (The agent's callbacks run on the JVM's threads: the sampler's work,
 * in phs_own sections.) */
static void
on_class_prepare(phj_ti ti, phj_jni jni, phj_object thread, phj_object cls)
{
    phs_own_begin();
    load_methods(cls);
    phs_own_end();
}

static void
load_all_methods(void)
{
    phj_int n = 0;
    phj_object *classes = NULL;

    if (PHJ_FN(int (*)(phj_ti, phj_int *, phj_object **), J.ti, PHJ_TI_GET_LOADED_CLASSES)(J.ti, &n, &classes) !=
        PHJ_OK)
        return;
    for (phj_int i = 0; i < n; i++)
        load_methods(classes[i]);
    ti_deallocate(classes);
}

static void
on_thread_start(phj_ti ti, phj_jni jni, phj_object thread)
{
    tls_jni = jni;
}

static void
on_thread_end(phj_ti ti, phj_jni jni, phj_object thread)
{
    tls_jni = NULL;
}

/* The VM is live: the thread that created it (it runs main) and the
 * classes loaded so far. */
static void
on_vm_init(phj_ti ti, phj_jni jni, phj_object thread)
{
    phs_own_begin();
    tls_jni = jni;
    /* (AsyncGetCallTrace's need: the heap mode's GetStackTrace makes the
     * jmethodIDs it gives) */
    if (!phs_heap_wanted())
        load_all_methods();
    if (atomic_load(&J.state) == J_LOADED)
        atomic_store_explicit(&J.state, J_READING, memory_order_release);
    phs_own_end();
}

/* No call into the JVM from here on; wait for one in flight. */
static void
on_vm_death(phj_ti ti, phj_jni jni)
{
    struct timespec ms = { 0, 1000 * 1000 };

    phs_own_begin();
    if (atomic_load(&JH.state) == JH_ON && atomic_load(&J.state) == J_READING) {
        /* The heap stacks' methods named while they can be: the writer's
         * next tick does it. */
        uint64_t want = atomic_fetch_add(&JH.want, 1) + 1;

        for (int i = 0; i < DEATH_WAIT_MS && atomic_load(&JH.done) < want; i++)
            phs_nap(&ms);
    }
    atomic_store(&J.dead, 1);
    if (atomic_load(&J.state) == J_READING)
        atomic_store(&J.state, J_DEAD);
    for (int i = 0; i < DEATH_WAIT_MS && atomic_load(&J.busy) > 0; i++)
        phs_nap(&ms);
    phs_own_end();
}

/* The libjvm that holds the JavaVM's functions: its AsyncGetCallTrace. */
static phj_asgct_fn
find_asgct(phj_vm vm)
{
    Dl_info info;
    void *h, *sym = NULL;
    phj_asgct_fn fn;

    if (dladdr((const void *)(uintptr_t)(*vm)[PHJ_VM_GET_ENV], &info) != 0 && info.dli_fname != NULL &&
        (h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) != NULL) {
        sym = dlsym(h, "AsyncGetCallTrace");
        dlclose(h);
    }
    if (sym == NULL)
        return NULL;
    memcpy(&fn, &sym, sizeof fn);
    return fn;
}

static int
enable(phj_ti ti, int event)
{
    return PHJ_FN(int (*)(phj_ti, int, int, phj_object), ti, PHJ_TI_SET_EVENT_NOTIFICATION_MODE)(ti, PHJ_ENABLE,
                                                                                              event, NULL);
}

/* ---- the heap mode: the JVM's own sampled objects --------------------- */


int
phs_java_heap_word(uintptr_t w)
{
    return phs_is_java(w) && !phs_is_java_mark(w) && (w & JH_CLASS) != 0;
}

/* A class signature as Java writes the type: "[[I" -> "int[][]",
 * "Lpkg/A$B;" -> "pkg.A$B", after "new ". */
static void
type_name(const char *sig, char *out, size_t cap)
{
    static const char prim[] = "ZBCSIJFD", *const prim_name[] = { "boolean", "byte", "char", "short",
                                                                 "int", "long", "float", "double" };
    int dims = 0;
    size_t o;

    snprintf(out, cap, "new ");
    o = strlen(out);
    while (*sig == '[') {
        dims++;
        sig++;
    }
    if (*sig == 'L') {
        class_name(sig, out + o, cap - o);
    } else {
        const char *p = *sig ? strchr(prim, *sig) : NULL;

        snprintf(out + o, cap - o, "%s", p ? prim_name[p - prim] : "?");
    }
    for (o = strlen(out); dims-- > 0 && o + 2 < cap; o += 2)
        memcpy(out + o, "[]", 3);
}

/* The index of KLASS's name, named and tagged the first time; UINT32_MAX
 * when it cannot be. */
static uint32_t
class_index(phj_ti ti, phj_object klass)
{
    int64_t tag = 0;
    char *sig = NULL, name[MAX_NAME];
    uint32_t i = UINT32_MAX;

    if (PHJ_FN(int (*)(phj_ti, phj_object, int64_t *), ti, PHJ_TI_GET_TAG)(ti, klass, &tag) != PHJ_OK)
        return UINT32_MAX;
    if (tag & JH_CLASS_TAG)
        return (uint32_t)(tag & 0xffffffff);
    if (PHJ_FN(int (*)(phj_ti, phj_object, char **, char **), ti, PHJ_TI_GET_CLASS_SIGNATURE)(ti, klass, &sig,
                                                                                               NULL) != PHJ_OK)
        return UINT32_MAX;
    type_name(sig, name, sizeof name);
    ti_deallocate(sig);
    /* Two threads naming one class at once: two indices, one name
     * (merged by text when written). */
    pthread_mutex_lock(&JH.lock);
    if (atomic_load(&JH.n_names) < JH_CLASSES && (JH.names[atomic_load(&JH.n_names)] = strdup(name)) != NULL) {
        i = atomic_load(&JH.n_names);
        atomic_store_explicit(&JH.n_names, i + 1, memory_order_release);
    }
    pthread_mutex_unlock(&JH.lock);
    if (i != UINT32_MAX)
        PHJ_FN(int (*)(phj_ti, phj_object, int64_t), ti, PHJ_TI_SET_TAG)(ti, klass, JH_CLASS_TAG | i);
    return i;
}

/* SampledObjectAlloc: on the allocating thread, after the object is
 * made (HotSpot's sampler, one per SetHeapSamplingInterval bytes on
 * average, the same exponential interval as the malloc sampler's).  Its
 * stack and class into the heap table, the object tagged so its
 * ObjectFree takes it out of what is in use. */
static void
on_sampled_alloc(phj_ti ti, phj_jni jni, phj_object thread, phj_object obj, phj_object klass, int64_t size)
{
    phj_frame_info fi[JH_FRAMES];
    uintptr_t w[2 + 2 * JH_FRAMES];
    phj_int n = 0;
    uint32_t ci, d = 0;
    uintptr_t key;

    if (atomic_load(&J.dead) || !phs_heap_on() || size <= 0)
        return;
    phs_own_begin();
    if ((ci = class_index(ti, klass)) != UINT32_MAX &&
        PHJ_FN(int (*)(phj_ti, phj_object, phj_int, phj_int, phj_frame_info *, phj_int *), ti,
               PHJ_TI_GET_STACK_TRACE)(ti, NULL, 0, JH_FRAMES, fi, &n) == PHJ_OK &&
        n > 0) {
        w[d++] = PHS_JAVA_TAG | JH_CLASS | ci;
        w[d++] = PHS_JAVA_MARK | (uint32_t)n | (n == JH_FRAMES ? PHS_JAVA_CUT : 0);
        for (phj_int i = 0; i < n; i++) {
            w[d++] = PHS_JAVA_TAG | (uint32_t)(int32_t)(fi[i].location > INT32_MAX ? -1 : fi[i].location);
            w[d++] = (uintptr_t)fi[i].method;
        }
        key = (uintptr_t)(atomic_fetch_add(&JH.seq, 1) + 1) << 4 | 8;
        atomic_fetch_add(&JH.samples, 1);
        /* Untagged, an object is allocated and never freed as far as we
         * know: not kept in use. */
        if (PHJ_FN(int (*)(phj_ti, phj_object, int64_t), ti, PHJ_TI_SET_TAG)(ti, obj, (int64_t)key) != PHJ_OK) {
            atomic_fetch_add(&JH.untagged, 1);
            if (phs_heap_record(key, (size_t)size, w, d) == 0)
                phs_heap_release(key);
        } else {
            phs_heap_record(key, (size_t)size, w, d);
        }
    }
    phs_own_end();
}

/* ObjectFree: a tagged object collected (in the GC: atomics only). */
static void
on_object_free(phj_ti ti, int64_t tag)
{
    if (!(tag & JH_CLASS_TAG))
        phs_heap_release((uintptr_t)tag);
}

/* The heap mode: sampled objects, when this JVM can (JDK 11+).  Without,
 * the malloc samples stay, and JH.why says why. */
static void
heap_start(phj_ti ti, phj_fnptr *cb)
{
    phj_caps caps;
    double mean = phs_heap_mean();
    int r;

    memset(&caps, 0, sizeof caps);
    caps.b[PHJ_CAN_TAG_OBJECTS_BYTE] |= PHJ_CAN_TAG_OBJECTS_BIT;
    caps.b[PHJ_CAN_GENERATE_OBJECT_FREE_EVENTS_BYTE] |= PHJ_CAN_GENERATE_OBJECT_FREE_EVENTS_BIT;
    caps.b[PHJ_CAN_GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS_BYTE] |= PHJ_CAN_GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS_BIT;
    if ((r = PHJ_FN(int (*)(phj_ti, const phj_caps *), ti, PHJ_TI_ADD_CAPABILITIES)(ti, &caps)) != PHJ_OK) {
        snprintf(JH.why, sizeof JH.why, "the JVM refused the capabilities to sample its objects (error %d: JDK 11 "
                                        "or later needed)", r);
        atomic_store(&JH.state, JH_REFUSED);
        return;
    }
    if ((r = PHJ_FN(int (*)(phj_ti, phj_int), ti, PHJ_TI_SET_HEAP_SAMPLING_INTERVAL)(
             ti, (phj_int)(mean > INT32_MAX ? INT32_MAX : mean))) != PHJ_OK) {
        snprintf(JH.why, sizeof JH.why, "the JVM refused the sampling interval (error %d)", r);
        atomic_store(&JH.state, JH_REFUSED);
        return;
    }
    cb[PHJ_EV_SAMPLED_OBJECT_ALLOC - 50] = (phj_fnptr)on_sampled_alloc;
    cb[PHJ_EV_OBJECT_FREE - 50] = (phj_fnptr)on_object_free;
    atomic_store(&JH.state, JH_ON);
}

/* After SetEventCallbacks: the heap mode's events on. */
static void
heap_enable(phj_ti ti)
{
    if (atomic_load(&JH.state) != JH_ON)
        return;
    if (enable(ti, PHJ_EV_OBJECT_FREE) != PHJ_OK || enable(ti, PHJ_EV_SAMPLED_OBJECT_ALLOC) != PHJ_OK) {
        snprintf(JH.why, sizeof JH.why, "the JVM refused the sampled allocation events");
        atomic_store(&JH.state, JH_REFUSED);
    }
}

/* Agent_OnLoad and Agent_OnAttach (ph_sampler_agent.c): 0 whatever
 * happens (an agent's error would stop the JVM). */
int
phs_java_agent_start(void *vmp, int live)
{
    phj_vm vm = vmp;
    phj_fnptr cb[PHJ_CALLBACKS];
    phj_caps caps;
    phj_ti ti = NULL;
    const char *off = getenv("PH_SAMPLER_JAVA");
    int r;

    if (!atomic_load(&phs.on) || atomic_load(&J.state) != J_NONE)
        return 0; /* not sampled here, or loaded already */
    if (off != NULL && strcmp(off, "0") == 0) {
        fall_back(J_FALLBACK, "turned off (PH_SAMPLER_JAVA=0)");
        return 0;
    }
    J.vm = vm;
    if ((r = PHJ_FN(int (*)(phj_vm, void **, int), vm, PHJ_VM_GET_ENV)(vm, (void **)&ti, PHJ_JVMTI_VERSION_1_2)) !=
            PHJ_OK ||
        ti == NULL) {
        char why[80];

        snprintf(why, sizeof why, "the JVM gave no JVMTI 1.2 environment (GetEnv: %d)", r);
        fall_back(J_FALLBACK, why);
        return 0;
    }
    J.ti = ti;
    if ((J.asgct = find_asgct(vm)) == NULL) {
        fall_back(J_FALLBACK, "this JVM has no AsyncGetCallTrace");
        return 0;
    }
    /* Lines and source files: named without them if refused. */
    memset(&caps, 0, sizeof caps);
    caps.b[PHJ_CAN_GET_SOURCE_FILE_NAME_BYTE] |= PHJ_CAN_GET_SOURCE_FILE_NAME_BIT;
    caps.b[PHJ_CAN_GET_LINE_NUMBERS_BYTE] |= PHJ_CAN_GET_LINE_NUMBERS_BIT;
    if (PHJ_FN(int (*)(phj_ti, const phj_caps *), ti, PHJ_TI_ADD_CAPABILITIES)(ti, &caps) == PHJ_OK)
        J.lines = J.sources = 1;
    memset(cb, 0, sizeof cb);
    cb[PHJ_EV_VM_INIT - 50] = (phj_fnptr)on_vm_init;
    cb[PHJ_EV_VM_DEATH - 50] = (phj_fnptr)on_vm_death;
    cb[PHJ_EV_THREAD_START - 50] = (phj_fnptr)on_thread_start;
    cb[PHJ_EV_THREAD_END - 50] = (phj_fnptr)on_thread_end;
    cb[PHJ_EV_CLASS_LOAD - 50] = (phj_fnptr)on_class_load;
    cb[PHJ_EV_CLASS_PREPARE - 50] = (phj_fnptr)on_class_prepare;
    if (phs_heap_wanted())
        heap_start(ti, cb);
    if (PHJ_FN(int (*)(phj_ti, const phj_fnptr *, phj_int), ti, PHJ_TI_SET_EVENT_CALLBACKS)(
            ti, cb, (phj_int)sizeof cb) != PHJ_OK ||
        enable(ti, PHJ_EV_VM_INIT) != PHJ_OK || enable(ti, PHJ_EV_VM_DEATH) != PHJ_OK ||
        enable(ti, PHJ_EV_THREAD_START) != PHJ_OK || enable(ti, PHJ_EV_THREAD_END) != PHJ_OK ||
        (!phs_heap_wanted() && (enable(ti, PHJ_EV_CLASS_LOAD) != PHJ_OK || enable(ti, PHJ_EV_CLASS_PREPARE) != PHJ_OK))) {
        fall_back(J_FALLBACK, "the JVM refused the agent's events");
        return 0;
    }
    heap_enable(ti);
    atomic_store(&J.state, J_LOADED);
    if (live) {
        /* Attached to a running VM: its classes now; only threads it
         * starts from now on have their JNIEnv known. */
        load_all_methods();
        atomic_store_explicit(&J.state, J_READING, memory_order_release);
    }
    return 0;
}

/* Loaded into a running VM: threads it had have no ThreadStart. */
void
phs_java_set_live(void)
{
    atomic_store(&J.live, 1);
}

int
phs_java_live(void)
{
    return atomic_load(&J.live);
}

/* The writer is ending (the sampler stopped in a VM that runs on): its
 * thread leaves the VM, and the next writer attaches its own. */
void
phs_java_writer_end(void)
{
    if (J.env != NULL && !atomic_load(&J.dead))
        PHJ_FN(int (*)(phj_vm), J.vm, PHJ_VM_DETACH)(J.vm);
    J.env = NULL;
    J.attach_failed = 0;
}

/* ---- the writer ------------------------------------------------------------ */

const char *
phs_java_describe(void)
{
    int st = atomic_load(&J.state);

    switch (st) {
    case J_NONE:
        J.desc[0] = '\0';
        break;
    case J_LOADED:
        snprintf(J.desc, sizeof J.desc, "Java: agent loaded, the VM not started yet");
        break;
    case J_READING:
    case J_DEAD: {
        char last[40] = "";
        uint64_t without = atomic_load(&J.without);

        if (without > 0)
            snprintf(last, sizeof last, ", the last code %d", atomic_load(&J.last_error));
        snprintf(J.desc, sizeof J.desc,
                 "Java: frames read through AsyncGetCallTrace (samples of Java threads: %llu with Java frames, "
                 "%llu without%s)",
                 (unsigned long long)atomic_load(&J.with), (unsigned long long)without, last);
        break;
    }
    default:
        snprintf(J.desc, sizeof J.desc,
                 "Java: frames not read (%s): compiled methods are named from the perf map, interpreted ones show "
                 "as Interpreter",
                 J.why);
        break;
    }
    return J.desc;
}

/* Writer: notice a JVM that has not loaded the agent, and say a fallback
 * once on stderr. */
void
phs_java_detect(phs_symbols *s)
{
    int st = atomic_load(&J.state);
    struct timespec now;

    if (st == J_NONE && time(NULL) != J.looked_at) {
        size_t n = phs_symbols_count(s, 0); /* listed again each second by the Python detection */

        J.looked_at = time(NULL);
        for (size_t i = 0; i < n; i++) {
            uintptr_t lo, hi, off;
            const char *path, *base;

            if (phs_module_info(s, (int)i, &lo, &hi, &off, &path) < 0)
                continue;
            base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
            if (strcmp(base, "libjvm.so") != 0)
                continue;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (J.jvm_seen == 0)
                J.jvm_seen = (double)now.tv_sec + 1;
            else if ((double)now.tv_sec + 1 - J.jvm_seen >= NOAGENT_AFTER_S)
                fall_back(J_NOAGENT, "the JVM did not load the sampler as its agent: -agentpath is not in "
                                     "JAVA_TOOL_OPTIONS");
            break;
        }
        st = atomic_load(&J.state);
    }
    if ((st == J_FALLBACK || st == J_NOAGENT) && !atomic_exchange(&J.said, 1)) {
        char line[600];
        ssize_t w;

        snprintf(line, sizeof line, "ph-sampler: %s\n", phs_java_describe());
        w = write(2, line, strlen(line));
        (void)w;
    }
    phs_java_heap_name(s);
}

/* The writer's JNIEnv: attached to the JVM as a daemon thread the first
 * time, NULL when it cannot be.  Its signal mask is made ours again:
 * HotSpot unblocks the shutdown signals on a thread it attaches, and a
 * SIGTERM on the writer would wait for the writer's own snapshot. */
static phj_jni
writer_env(void)
{
    phj_attach_args a = { PHJ_JNI_VERSION_1_6, "ph-sampler writer", NULL };
    phj_jni env = NULL;
    sigset_t mask;

    if (J.env != NULL || J.attach_failed)
        return J.env;
    if (PHJ_FN(int (*)(phj_vm, void **, void *), J.vm, PHJ_VM_ATTACH_DAEMON)(J.vm, (void **)&env, &a) != PHJ_OK ||
        env == NULL) {
        J.attach_failed = 1;
        return NULL;
    }
    sigfillset(&mask);
    /* Faults stay the JVM's to handle; SIGPROF is the writer's own cost. */
    sigdelset(&mask, SIGSEGV);
    sigdelset(&mask, SIGBUS);
    sigdelset(&mask, SIGILL);
    sigdelset(&mask, SIGFPE);
    sigdelset(&mask, SIGPROF);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    J.env = env;
    return env;
}

/* "Lpkg/Outer$Inner;" -> "pkg.Outer$Inner" into OUT. */
static void
class_name(const char *sig, char *out, size_t cap)
{
    size_t o = 0;

    if (*sig == 'L')
        sig++;
    for (; *sig && *sig != ';' && o + 1 < cap; sig++)
        out[o++] = *sig == '/' ? '.' : *sig;
    out[o] = '\0';
}

/* Name method MID through JVMTI into M.  A method that cannot be named
 * gets a placeholder that says why, kept like a name: each reason lasts
 * (a stale jmethodID stays stale, a VM gone stays gone). */
static void
name_method(uintptr_t mid, struct jmethod *m)
{
    char *cname = NULL, *mname = NULL, *msig = NULL, *src = NULL, buf[MAX_NAME], cls_buf[MAX_NAME];
    phj_object cls = NULL;
    phj_line_entry *lines = NULL;
    phj_int n_lines = 0;
    phj_jni env = mid ? writer_env() : NULL;
    int ok = 0;

    memset(m, 0, sizeof *m);
    m->name = mid == 0 ? "[java: no method id]" : "[java: not named, no JVM to ask]";
    if (env == NULL)
        return;
    atomic_fetch_add(&J.busy, 1);
    if (!atomic_load(&J.dead) &&
        PHJ_FN(int (*)(phj_ti, phj_method, phj_object *), J.ti, PHJ_TI_GET_METHOD_DECLARING_CLASS)(
            J.ti, (phj_method)mid, &cls) == PHJ_OK &&
        PHJ_FN(int (*)(phj_ti, phj_object, char **, char **), J.ti, PHJ_TI_GET_CLASS_SIGNATURE)(J.ti, cls, &cname,
                                                                                                 NULL) == PHJ_OK &&
        PHJ_FN(int (*)(phj_ti, phj_method, char **, char **, char **), J.ti, PHJ_TI_GET_METHOD_NAME)(
            J.ti, (phj_method)mid, &mname, &msig, NULL) == PHJ_OK) {
        if (J.sources &&
            PHJ_FN(int (*)(phj_ti, phj_object, char **), J.ti, PHJ_TI_GET_SOURCE_FILE_NAME)(J.ti, cls, &src) != PHJ_OK)
            src = NULL;
        if (J.lines && PHJ_FN(int (*)(phj_ti, phj_method, phj_int *, phj_line_entry **), J.ti,
                              PHJ_TI_GET_LINE_NUMBER_TABLE)(J.ti, (phj_method)mid, &n_lines, &lines) != PHJ_OK) {
            lines = NULL;
            n_lines = 0;
        }
        ok = 1;
    } else if (!atomic_load(&J.dead)) {
        m->name = "[java: method unloaded]";
    }
    if (cls != NULL)
        PHJ_FN(void (*)(phj_jni, phj_object), env, PHJ_JNI_DELETE_LOCAL_REF)(env, cls);
    atomic_fetch_sub(&J.busy, 1);
    if (ok) {
        char *name, *system, *file;

        class_name(cname, cls_buf, sizeof cls_buf);
        snprintf(buf, sizeof buf, "%s.%s", cls_buf, mname);
        name = strdup(buf);
        snprintf(buf, sizeof buf, "%s.%s%s", cls_buf, mname, msig ? msig : "");
        system = strdup(buf);
        file = src ? strdup(src) : NULL;
        if (name != NULL && system != NULL && (file != NULL || src == NULL)) {
            m->name = name;
            m->system = system;
            m->file = file;
            if (n_lines > 0 && (m->lines = malloc((size_t)n_lines * sizeof *m->lines)) != NULL) {
                memcpy(m->lines, lines, (size_t)n_lines * sizeof *lines);
                m->n_lines = n_lines;
            }
        } else {
            free(name);
            free(system);
            free(file);
            m->name = "[java: out of memory]";
        }
    }
    ti_deallocate(cname);
    ti_deallocate(mname);
    ti_deallocate(msig);
    ti_deallocate(src);
    ti_deallocate(lines);
}

/* The line of BCI in M, 0 when unknown. */
static int
line_of(const struct jmethod *m, int32_t bci)
{
    int64_t best = -1;
    int line = 0;

    for (int i = 0; bci >= 0 && i < m->n_lines; i++)
        if (m->lines[i].start_location <= bci && m->lines[i].start_location > best) {
            best = m->lines[i].start_location;
            line = m->lines[i].line_number;
        }
    return line;
}

/* Room for one more element of SIZE bytes in *V (*N used of *CAP); 0 or -1. */
static int
room_for(void **v, size_t n, size_t *cap, size_t size)
{
    void *nv;
    size_t c;

    if (n < *cap)
        return 0;
    c = *cap ? *cap * 2 : 256;
    if ((nv = realloc(*v, c * size)) == NULL)
        return -1;
    *v = nv;
    *cap = c;
    return 0;
}

/* The frame id of (MID, BCI), named now if new; UINT32_MAX when it
 * cannot be kept (out of memory, MAX_METHODS). */
static uint32_t
frame_of(uintptr_t mid, int32_t bci)
{
    uint64_t key = ((uint64_t)mid << 16) | (uint16_t)(bci < 0 ? 0xffff : bci);
    uint32_t id = ph_u64map_get(&J.by_key, key), mi, fid;
    const struct jmethod *m;
    int line;

    if (id != UINT32_MAX)
        return id;
    mi = ph_u64map_get(&J.by_method, mid);
    if (mi == UINT32_MAX) {
        if (J.n_methods >= MAX_METHODS || room_for((void **)&J.methods, J.n_methods, &J.cap_methods,
                                                   sizeof *J.methods) < 0)
            return UINT32_MAX;
        name_method(mid, &J.methods[J.n_methods]);
        if (ph_u64map_put(&J.by_method, mid, (uint32_t)J.n_methods) < 0)
            return UINT32_MAX;
        mi = (uint32_t)J.n_methods++;
    }
    m = &J.methods[mi];
    line = line_of(m, bci);
    fid = ph_u64map_get(&J.by_frame, (uint64_t)mi << 32 | (uint32_t)line);
    if (fid == UINT32_MAX) {
        if (room_for((void **)&J.frames, J.n_frames, &J.cap_frames, sizeof *J.frames) < 0)
            return UINT32_MAX;
        J.frames[J.n_frames] = (phs_frame){ m->name, m->file, line, 0, PHS_KIND_JAVA, m->system };
        fid = (uint32_t)J.n_frames;
        if (ph_u64map_put(&J.by_frame, (uint64_t)mi << 32 | (uint32_t)line, fid) < 0)
            return UINT32_MAX;
        J.n_frames++;
    }
    return ph_u64map_put(&J.by_key, key, fid) < 0 ? UINT32_MAX : fid;
}

uint32_t
phs_java_resolve(phs_symbols *s, uintptr_t *w, uint32_t depth)
{
    uintptr_t java[MAX_FRAMES];
    uint32_t n = 0, nf, first, last, o, k = 0;
    int cut;

    while (n < depth && !phs_is_java_mark(w[n]))
        n++;
    if (n == depth)
        return depth;
    nf = (uint32_t)(w[n] & 0xffffffffu);
    cut = (w[n] & PHS_JAVA_CUT) != 0;
    if (nf > MAX_FRAMES || n + 1 + 2 * nf > depth)
        return n; /* cannot happen: the signal path writes whole groups */
    for (uint32_t i = 0; i < nf; i++) {
        uint32_t id = frame_of(w[n + 2 + 2 * i], (int32_t)(uint32_t)(w[n + 1 + 2 * i] & 0xffffffffu));

        if (id != UINT32_MAX)
            java[k++] = PHS_JAVA_TAG | id;
    }
    /* The native frames in the JVM's code: outside every loaded object. */
    first = last = n;
    for (uint32_t i = 0; i < n; i++) {
        if (w[i] == PHS_TRUNCATED || phs_is_tagged(w[i]) || phs_module_of(s, phs_call_pc(w, i)) >= 0)
            continue;
        if (first == n)
            first = i;
        last = i;
    }
    if (first == n)
        last = n - 1; /* none: the Java frames go outermost */
    /* natives [0, first), Java, natives (last, n) */
    o = first;
    if (cut) {
        memcpy(w + o, java, k * sizeof *java);
        o += k;
        w[o++] = PHS_TRUNCATED;
        return o;
    }
    {
        uintptr_t outer[PHS_MAX_DEPTH];
        uint32_t no = n - (last + 1);

        if (no > PHS_MAX_DEPTH)
            no = PHS_MAX_DEPTH;
        memcpy(outer, w + last + 1, no * sizeof *w);
        memcpy(w + o, java, k * sizeof *java);
        o += k;
        memcpy(w + o, outer, no * sizeof *w);
        o += no;
    }
    return o;
}

const phs_frame *
phs_java_frame(uintptr_t word)
{
    static const phs_frame none = { "[java]", NULL, 0, 0, PHS_KIND_JAVA, NULL };
    uintptr_t id = word & ~PHS_JAVA_TAG;

    return id < J.n_frames ? &J.frames[id] : &none;
}

/* ---- the writer: the heap mode's stacks ---------------------------------- */

/* The frame id of class I's `new <class>`; UINT32_MAX when it cannot be kept. */
static uint32_t
class_frame(uint32_t i)
{
    uint32_t fid = ph_u64map_get(&JH.by_class, i);

    if (fid != UINT32_MAX)
        return fid;
    if (room_for((void **)&J.frames, J.n_frames, &J.cap_frames, sizeof *J.frames) < 0)
        return UINT32_MAX;
    J.frames[J.n_frames] = (phs_frame){ i < atomic_load_explicit(&JH.n_names, memory_order_acquire) ? JH.names[i]
                                                                                                      : "[java: too many classes]",
                                        NULL, 0, 0, PHS_KIND_JAVA, NULL };
    if (ph_u64map_put(&JH.by_class, i, (uint32_t)J.n_frames) < 0)
        return UINT32_MAX;
    return (uint32_t)J.n_frames++;
}

uint32_t
phs_java_heap_resolve(phs_symbols *s, const uintptr_t *raw, uint32_t depth, uintptr_t *out)
{
    uint32_t fid;

    memcpy(out, raw, depth * sizeof *raw);
    if (depth == 0 || !phs_java_heap_word(raw[0]))
        return depth;
    fid = class_frame((uint32_t)(raw[0] & 0xffffffffu));
    out[0] = PHS_JAVA_TAG | (fid == UINT32_MAX ? 0xffffffffu : fid);
    /* the class word is a tagged "native" frame before the mark: it stays innermost */
    return phs_java_resolve(s, out, depth);
}

void
phs_java_heap_name(phs_symbols *s)
{
    uintptr_t out[2 + 2 * JH_FRAMES];
    uint64_t want = atomic_load(&JH.want);
    uint32_t n;

    if (atomic_load(&JH.state) != JH_ON || atomic_load(&J.state) != J_READING || atomic_load(&J.dead))
        return;
    for (n = phs_heap_n_stacks(); JH.named < n; JH.named++) {
        const uintptr_t *w = NULL;
        uint32_t d = phs_heap_stack(JH.named, &w);

        if (d > 0 && d <= sizeof out / sizeof *out && phs_java_heap_word(w[0]))
            phs_java_heap_resolve(s, w, d, out);
    }
    atomic_store(&JH.done, want);
}

const char *
phs_java_heap_describe(void)
{
    static char d[600];
    int st = atomic_load(&J.state), hs = atomic_load(&JH.state);

    if (st == J_NONE)
        return "";
    if (hs == JH_ON)
        snprintf(d, sizeof d,
                 "the JVM's heap is not malloc: its Java objects are sampled through JVMTI (SampledObjectAlloc, %llu "
                 "samples) and shown as `new <class>` under their Java stacks; the other stacks are the JVM's own "
                 "native allocations",
                 (unsigned long long)atomic_load(&JH.samples));
    else
        snprintf(d, sizeof d,
                 "the JVM's heap is not malloc: these are the JVM's own native allocations; its Java objects are not "
                 "seen (%s)",
                 hs == JH_REFUSED ? JH.why : J.why[0] ? J.why : "the agent did not start");
    return d;
}
