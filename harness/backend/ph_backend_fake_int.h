/* ph_backend_fake_int.h - what the files of the fake backend share (not
 * for the tests, which use ph_backend_fake.h):
 *
 *   ph_backend_fake.c        the world: images, workloads and their life,
 *                            exec rules, faults, the calls and hooks
 *   ph_backend_fake_files.c  files, and the tars of them
 *   ph_backend_fake_ops.c    the table of operations over the world
 */
#ifndef PH_BACKEND_FAKE_INT_H
#define PH_BACKEND_FAKE_INT_H

#include <archive.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ph_backend_fake.h"

#define FAKE_MTIME 1767225600      /* 2026-01-01T00:00:00Z: every file's time */
#define PUT_MAX (64u << 20)

typedef struct fake_file {
    char *path;   /* absolute */
    char *data;
    size_t len;
    unsigned mode; /* permissions, or S_IFDIR | permissions */
    char *link;   /* a symlink's target, or NULL */
} fake_file;

typedef struct fake_files {
    fake_file *v;
    size_t n;
} fake_files;

struct ph_fake_image {
    char *glob;
    ph_image_config cfg;
    fake_files files;
};

struct ph_fake_wl {
    char id[65];
    char *name, *image, *node, *glob; /* GLOB: a template's */
    ph_kvv labels;
    ph_workload_state state;
    long exit_code;
    int oom_killed;
    long long created;
    char started_at[32], finished_at[32];
    ph_fake_end end;
    int asked;      /* asked to stop: ends when POLLS_LEFT runs out */
    int polls_left;
    int gone;       /* removed */
    fake_files files, end_files;
    char *log;
    ph_proc_table top;
};

typedef struct exec_rule {
    char *name_glob, *argv0_glob, *output;
    long code;
} exec_rule;

typedef struct fault {
    char op[24];
    char *glob;
    ph_fake_fault_kind kind;
    size_t after;
    int times;
} fault;

typedef struct hook {
    char op[24];
    ph_fake_hook_cb cb;
    void *ud;
} hook;

/* A service of a stack: the run its spec is under (its labels; none: as
 * deployed). */
typedef struct fake_service {
    char *project, *service;
    ph_kvv run;
} fake_service;

struct ph_fake {
    pthread_mutex_t lock;
    int stack;              /* its backend places services (the service_* operations) */
    fake_service *svcs;
    size_t n_svcs;
    ph_strv down;           /* nodes that are down */
    ph_fake_image **images;
    size_t n_images;
    ph_fake_wl **wls, **templates;
    size_t n_wls, n_templates;
    exec_rule *rules;
    size_t n_rules;
    fault *faults;
    size_t n_faults;
    hook *hooks;
    size_t n_hooks;
    ph_fake_call **calls;
    size_t n_calls;
    size_t chunk;
    unsigned long serial;
};

typedef struct fake_backend {
    ph_backend base;
    ph_fake *f;
    char *node; /* a stack's node's Engine (ops.reach): its workloads only; NULL: the whole */
} fake_backend;

#define F(b) (((fake_backend *)(b))->f)
#define GROW(arr, n) ph_fake_grow((void **)&(arr), (n), sizeof *(arr))

typedef struct membuf {
    char *p;
    size_t n, cap;
    int bad;
} membuf;

static inline int
ph_fake_grow(void **arr, size_t n, size_t size)
{
    void *v = realloc(*arr, (n + 1) * size);

    if (v == NULL)
        return -1;
    *arr = v;
    return 0;
}

static inline char *
ph_fake_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static inline void
ph_fake_lock(ph_fake *f)
{
    pthread_mutex_lock(&f->lock);
}

static inline void
ph_fake_unlock(ph_fake *f)
{
    pthread_mutex_unlock(&f->lock);
}

/* ph_backend_fake_files.c: a workload's or an image's files, and the tars
 * of them the archive endpoint gives and takes. */
void ph_fake_fs_clear(fake_files *fs);
/* PATH (made absolute, no trailing '/') set in FS, replacing one there;
 * LINK: a symlink to it.  -1 on ENOMEM. */
int ph_fake_fs_set(fake_files *fs, const char *path, const void *data, size_t len, unsigned mode, const char *link);
int ph_fake_fs_copy(fake_files *dst, const fake_files *src);
/* FILE is PATH or below it. */
int ph_fake_fs_under(const char *file, const char *path);
/* PATH is in FS: a file, or a directory some file is under. */
int ph_fake_fs_has(const fake_files *fs, const char *path);
/* The tar of PATH in FS as the Engine's archive endpoint gives it. */
int ph_fake_fs_tar(const fake_files *fs, const char *path, membuf *out);
/* A tar unpacked into FS under PATH. */
int ph_fake_fs_untar(fake_files *fs, const char *path, const char *data, size_t len, ph_error_t *err);
/* LEN bytes of BUF appended to the buffer UD (a membuf): libarchive's write callback. */
la_ssize_t ph_fake_mem_write(struct archive *a, void *ud, const void *buf, size_t len);

/* ph_backend_fake.c: the world, for the operations (under its lock). */
ph_fake_wl *ph_fake_wl_new(const char *name, const char *image);
void ph_fake_wl_free(ph_fake_wl *w);
/* W added to the world, given an id and a creation time. */
int ph_fake_wl_add(ph_fake *f, ph_fake_wl *w);
ph_fake_wl *ph_fake_wl_find(ph_fake *f, const char *id_or_name);
/* W as inspect gives it, into OUT.  -1 on ENOMEM. */
int ph_fake_wl_record(const ph_fake_wl *w, ph_workload *out);
/* The life of a workload: started; ended with CODE (its end files
 * written); one look at it (time passes); asked to stop; waited for (1:
 * it ended, 0: no end is coming). */
void ph_fake_wl_started(ph_fake *f, ph_fake_wl *w);
void ph_fake_wl_finish(ph_fake *f, ph_fake_wl *w, long code, int oom);
void ph_fake_wl_observe(ph_fake *f, ph_fake_wl *w);
void ph_fake_wl_ask(ph_fake *f, ph_fake_wl *w);
int ph_fake_wl_wait(ph_fake *f, ph_fake_wl *w);
int ph_fake_table_copy(ph_proc_table *dst, const ph_proc_table *src);
/* The image NAME (a glob's match, or an id), or NULL. */
ph_fake_image *ph_fake_image_find(ph_fake *f, const char *name);
/* The fault due for OP on the workload NAME, taken (one time fewer), or NULL. */
const fault *ph_fake_fault_take(ph_fake *f, const char *op, const char *name);
/* A call of OP recorded (TARGET: an id or name; ARG its argument as text;
 * NUM a number of it), or NULL on ENOMEM; then its hooks run. */
ph_fake_call *ph_fake_call_begin(ph_fake *f, const char *op, const char *target, const char *arg, long num);
void ph_fake_call_hooks(ph_fake *f, const ph_fake_call *c);
/* A deep copy of SRC (its own strings; service and compose the caller's). */
int ph_fake_spec_copy(ph_workload_spec *dst, const ph_workload_spec *src);

#endif
