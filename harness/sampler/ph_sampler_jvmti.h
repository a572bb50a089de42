/* ph_sampler_jvmti.h - the few pieces of the JNI invocation API, JNI and
 * JVMTI that ph_sampler_java.c calls, declared here so the sampler builds
 * without a JDK.  Each function table is an array of pointers; a function
 * is its slot, as numbered in the JDK's jni.h and jvmti.h (the JVMTI
 * specification's "function numbers" less one).  test_sampler_java checks
 * every slot, struct and constant here against the JDK's own headers
 * where a JDK is installed.  AsyncGetCallTrace is in no header: its types
 * are HotSpot's (forte.cpp), as every profiler that calls it declares
 * them.
 */
#ifndef PH_SAMPLER_JVMTI_H
#define PH_SAMPLER_JVMTI_H

#include <stdint.h>

typedef int32_t phj_int;
typedef void *phj_method;   /* jmethodID */
typedef void *phj_object;   /* jclass, jthread: JNI references */

/* A JavaVM *, JNIEnv * or jvmtiEnv * points to a pointer to its table of
 * functions. */
typedef void (*phj_fnptr)(void);
typedef const phj_fnptr *phj_table;
typedef phj_table *phj_vm;
typedef phj_table *phj_jni;
typedef phj_table *phj_ti;

#define PHJ_OK 0
#define PHJ_JNI_VERSION_1_6 0x00010006
#define PHJ_JVMTI_VERSION_1_2 0x30010200
#define PHJ_ENABLE 1

/* JavaVM (JNIInvokeInterface_) slots */
enum { PHJ_VM_DETACH = 5, PHJ_VM_GET_ENV = 6, PHJ_VM_ATTACH_DAEMON = 7 };
/* JNIEnv (JNINativeInterface_) slots */
enum { PHJ_JNI_EXCEPTION_CLEAR = 17, PHJ_JNI_DELETE_LOCAL_REF = 23 };
/* jvmtiEnv (jvmtiInterface_1_) slots */
enum {
    PHJ_TI_SET_EVENT_NOTIFICATION_MODE = 1,
    PHJ_TI_DEALLOCATE = 46,
    PHJ_TI_GET_CLASS_SIGNATURE = 47,
    PHJ_TI_GET_SOURCE_FILE_NAME = 49,
    PHJ_TI_GET_CLASS_METHODS = 51,
    PHJ_TI_GET_METHOD_NAME = 63,
    PHJ_TI_GET_METHOD_DECLARING_CLASS = 64,
    PHJ_TI_GET_LINE_NUMBER_TABLE = 69,
    PHJ_TI_GET_LOADED_CLASSES = 77,
    PHJ_TI_GET_STACK_TRACE = 103,
    PHJ_TI_GET_TAG = 105,
    PHJ_TI_SET_TAG = 106,
    PHJ_TI_SET_EVENT_CALLBACKS = 121,
    PHJ_TI_ADD_CAPABILITIES = 141,
    PHJ_TI_SET_HEAP_SAMPLING_INTERVAL = 155, /* JDK 11+ */
};

/* Events, and their callbacks' slots in jvmtiEventCallbacks (the event
 * number less 50). */
enum {
    PHJ_EV_VM_INIT = 50,
    PHJ_EV_VM_DEATH = 51,
    PHJ_EV_THREAD_START = 52,
    PHJ_EV_THREAD_END = 53,
    PHJ_EV_CLASS_LOAD = 55,
    PHJ_EV_CLASS_PREPARE = 56,
    PHJ_EV_OBJECT_FREE = 83,
    PHJ_EV_SAMPLED_OBJECT_ALLOC = 86, /* JDK 11+ */
};
#define PHJ_CALLBACKS 37 /* jvmtiEventCallbacks' size, in pointers (JDK 17) */

/* jvmtiCapabilities: 16 bytes of one-bit fields. */
typedef struct phj_caps {
    unsigned char b[16];
} phj_caps;
#define PHJ_CAN_GET_SOURCE_FILE_NAME_BYTE 1
#define PHJ_CAN_GET_SOURCE_FILE_NAME_BIT 0x08
#define PHJ_CAN_GET_LINE_NUMBERS_BYTE 1
#define PHJ_CAN_GET_LINE_NUMBERS_BIT 0x10
/* the heap mode's (ph_sampler_java.c) */
#define PHJ_CAN_TAG_OBJECTS_BYTE 0
#define PHJ_CAN_TAG_OBJECTS_BIT 0x01
#define PHJ_CAN_GENERATE_OBJECT_FREE_EVENTS_BYTE 4
#define PHJ_CAN_GENERATE_OBJECT_FREE_EVENTS_BIT 0x01
#define PHJ_CAN_GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS_BYTE 5
#define PHJ_CAN_GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS_BIT 0x08

typedef struct phj_line_entry { /* jvmtiLineNumberEntry */
    int64_t start_location;     /* jlocation: a bytecode index */
    phj_int line_number;
} phj_line_entry;

typedef struct phj_frame_info { /* jvmtiFrameInfo */
    phj_method method;
    int64_t location;           /* jlocation: the bytecode index; -1 in a native method */
} phj_frame_info;

typedef struct phj_attach_args { /* JavaVMAttachArgs */
    phj_int version;
    char *name;
    phj_object group;
} phj_attach_args;

/* AsyncGetCallTrace (HotSpot's forte.cpp) */
typedef struct phj_call_frame {
    phj_int lineno;             /* the bytecode index; -3: a native method */
    phj_method method_id;
} phj_call_frame;

typedef struct phj_call_trace {
    phj_jni env_id;             /* the sampled thread's own JNIEnv */
    phj_int num_frames;         /* < 1: no Java frames, or why not (an error code) */
    phj_call_frame *frames;     /* innermost first */
} phj_call_trace;

typedef void (*phj_asgct_fn)(phj_call_trace *trace, phj_int depth, void *ucontext);

/* The function in slot SLOT of ENV's table, as type T. */
#define PHJ_FN(T, env, slot) ((T)(*(env))[slot])

#endif
