/* ph_pyattach.c - a running CPython sampled from outside it (ph_pyattach.h).
 *
 * Modules: each file /proc/PID/maps maps (the program first), its lowest
 * and highest address, its symbols (.dynsym, then .symtab) read from the
 * file under /proc/PID/root (the service's own, through its mount
 * namespace; mapped read-only here, at most MAX_ELF bytes), its load bias
 * the mapping of file offset 0 less its first PT_LOAD's page.  These are
 * the phs_symbols functions the sampler's phs_py_detect asks; this
 * program links them in place of the sampler's in-process ones
 * (ph_sampler_out.c, which lists its own modules with dl_iterate_phdr).
 *
 * Threads: a thread state says its thread as a pthread_t, the address of
 * the C library's thread descriptor, which holds the kernel's thread id
 * at an offset of that library's own (glibc x86-64: 720; musl another).
 * The offset is found, once, as the first one (of the descriptor's first
 * 2 KiB) where every thread state's descriptor holds a distinct id of a
 * thread of the process (one thread: the process's own id), and checked
 * again at each sample: a state whose id has no /proc/PID/task/ID is "not
 * told".  Untold threads on the CPU clock: the GIL's holder is
 * taken as the one running.
 *
 * Counting: each sample's folded line (the thread's name from
 * /proc/PID/task/TID/comm, escaped as the sampler's frames are: `;` and
 * newlines are not the folded format's to carry) in an open-addressing
 * table of at most MAX_STACKS lines; past that a sample is dropped and
 * counted. */
#include "ph_pyattach.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ph_inroot.h"
#include "ph_stackset.h"
#include "ph_sampler_int.h"

#define MAX_MODS 1024
#define MAX_ELF (512u << 20)
#define MAX_THREADS 256
#define MAX_STACKS (1u << 18)
#define MAX_LINE 65536
#define TID_SPAN 2048 /* bytes of a thread descriptor looked at for its id */

/* ---- the target's modules: the phs_symbols the frame reader asks ---- */

typedef struct rmod {
    char path[PATH_MAX];
    uintptr_t lo, hi, off0; /* off0: the start of the mapping of file offset 0 (0: none) */
    int have_off0;
    const unsigned char *elf; /* mapped, or NULL */
    size_t size;
    uintptr_t bias;
    int loaded;
} rmod;

struct phs_symbols {
    pid_t pid;
    int root; /* /proc/PID/root: each module's path is resolved in it */
    rmod *mods;
    size_t n;
};

/* The in-process sampler's state (ph_sampler.c): phs_py_merge, linked in
 * with the reader but never called here, counts into it. */
phs_state phs;

int
phs_probe_mem(uintptr_t addr, size_t len)
{
    return 0; /* never asked: with a target set, every read is process_vm_readv */
}

static void
mod_load(phs_symbols *s, rmod *m)
{
    struct stat st;
    void *p;
    int fd;

    m->loaded = 1;
    /* as root, in the service's root: a symlink it planted (the program,
     * libpython) must not lead to this container's files
     * (ph_inroot.h) */
    if (s->root < 0 || (fd = ph_inroot_open(s->root, m->path, O_RDONLY, 0)) < 0)
        return;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (off_t)sizeof(Elf64_Ehdr) &&
        (uint64_t)st.st_size <= MAX_ELF && (p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) != MAP_FAILED) {
        const Elf64_Ehdr *eh = p;

        if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
            eh->e_phoff < (uint64_t)st.st_size && eh->e_phnum < 4096 &&
            eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) <= (uint64_t)st.st_size) {
            const Elf64_Phdr *ph = (const Elf64_Phdr *)((const unsigned char *)p + eh->e_phoff);

            m->elf = p;
            m->size = (size_t)st.st_size;
            for (int i = 0; i < eh->e_phnum; i++)
                if (ph[i].p_type == PT_LOAD) {
                    uint64_t align = ph[i].p_align > 1 ? ph[i].p_align : 4096;

                    /* ET_EXEC maps at its own addresses: no bias */
                    m->bias = eh->e_type == ET_DYN && m->have_off0 ? m->off0 - (uintptr_t)(ph[i].p_vaddr & ~(align - 1)) : 0;
                    break;
                }
        } else {
            munmap(p, (size_t)st.st_size);
        }
    }
    close(fd);
}

size_t
phs_symbols_count(phs_symbols *s, int relist)
{
    return s->n;
}

int
phs_module_info(phs_symbols *s, int i, uintptr_t *lo, uintptr_t *hi, uintptr_t *file_off, const char **path)
{
    if (i < 0 || (size_t)i >= s->n)
        return -1;
    *lo = s->mods[i].lo;
    *hi = s->mods[i].hi;
    *file_off = 0;
    *path = s->mods[i].path;
    return 0;
}

int
phs_symbol_addr(phs_symbols *s, int i, const char *name, uintptr_t *addr, uintptr_t *size)
{
    const Elf64_Ehdr *eh;
    const Elf64_Shdr *sh;
    rmod *m;

    if (i < 0 || (size_t)i >= s->n)
        return -1;
    m = &s->mods[i];
    if (!m->loaded)
        mod_load(s, m);
    if (m->elf == NULL)
        return -1;
    eh = (const Elf64_Ehdr *)m->elf;
    if (eh->e_shoff == 0 || eh->e_shoff >= m->size || eh->e_shentsize != sizeof *sh ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof *sh > m->size)
        return -1;
    sh = (const Elf64_Shdr *)(m->elf + eh->e_shoff);
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < eh->e_shnum; k++) {
            const Elf64_Sym *sym;
            const char *str;
            size_t n, strsize;

            if (sh[k].sh_type != (pass == 0 ? SHT_DYNSYM : SHT_SYMTAB) || sh[k].sh_link >= eh->e_shnum ||
                sh[k].sh_offset > m->size || sh[k].sh_size > m->size - sh[k].sh_offset ||
                sh[sh[k].sh_link].sh_offset > m->size || sh[sh[k].sh_link].sh_size > m->size - sh[sh[k].sh_link].sh_offset)
                continue;
            sym = (const Elf64_Sym *)(m->elf + sh[k].sh_offset);
            n = sh[k].sh_size / sizeof *sym;
            str = (const char *)m->elf + sh[sh[k].sh_link].sh_offset;
            strsize = sh[sh[k].sh_link].sh_size;
            for (size_t j = 0; j < n; j++) {
                if (sym[j].st_shndx == SHN_UNDEF || sym[j].st_value == 0 || sym[j].st_name >= strsize ||
                    strnlen(str + sym[j].st_name, strsize - sym[j].st_name) == strsize - sym[j].st_name ||
                    strcmp(str + sym[j].st_name, name) != 0)
                    continue;
                *addr = m->bias + (uintptr_t)sym[j].st_value;
                *size = (uintptr_t)sym[j].st_size;
                return 0;
            }
        }
    return -1;
}

static void
symbols_free(phs_symbols *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++)
        if (s->mods[i].elf != NULL)
            munmap((void *)s->mods[i].elf, s->mods[i].size);
    if (s->root >= 0)
        close(s->root);
    free(s->mods);
    free(s);
}

/* The modules process PID maps, its program first. */
static phs_symbols *
symbols_of(pid_t pid, ph_error_t *err)
{
    char path[64], exe[PATH_MAX] = "", line[PATH_MAX + 256];
    phs_symbols *s = calloc(1, sizeof *s);
    FILE *f = NULL;
    ssize_t n;

    if (s == NULL || (s->mods = calloc(MAX_MODS, sizeof *s->mods)) == NULL) {
        free(s);
        ph_fail(err, ENOMEM, "allocate");
        return NULL;
    }
    s->pid = pid;
    snprintf(path, sizeof path, "/proc/%d/root", (int)pid);
    if ((s->root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        ph_fail(err, errno, "open `%s`", path);
        s->root = -1;
        symbols_free(s);
        return NULL;
    }
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    if ((n = readlink(path, exe, sizeof exe - 1)) > 0)
        exe[n] = '\0';
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    if ((f = fopen(path, "re")) == NULL) {
        ph_fail(err, errno, "open `%s`", path);
        symbols_free(s);
        return NULL;
    }
    s->n = 1; /* the program's place, filled when it is seen */
    snprintf(s->mods[0].path, sizeof s->mods[0].path, "%s", exe);
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long lo, hi, off;
        char file[PATH_MAX];
        rmod *m = NULL;

        if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &lo, &hi, &off, file) != 4 || file[0] != '/' ||
            strstr(line, " (deleted)") != NULL)
            continue;
        for (size_t i = 0; i < s->n && m == NULL; i++)
            if (strcmp(s->mods[i].path, file) == 0)
                m = &s->mods[i];
        if (m == NULL) {
            if (s->n == MAX_MODS)
                continue;
            m = &s->mods[s->n++];
            snprintf(m->path, sizeof m->path, "%s", file);
        }
        if (m->hi == 0 || lo < m->lo)
            m->lo = lo;
        if (hi > m->hi)
            m->hi = hi;
        if (off == 0 && !m->have_off0) {
            m->off0 = lo;
            m->have_off0 = 1;
        }
    }
    fclose(f);
    return s;
}

/* ---- the target -------------------------------------------------------- */

typedef struct stack_ent {
    char *line; /* NULL: empty */
    uint64_t hash, count;
} stack_ent;

struct php_target {
    pid_t pid;
    phs_symbols *sym;
    phs_pytab *names;
    int tid_off;          /* the thread id's offset in a thread descriptor; -1: not found yet, -2: none */
    stack_ent *stacks;
    size_t n_stacks, cap_stacks;
    uint64_t samples, dropped;
    char desc[160];
};

php_target *
php_target_open(pid_t pid, ph_error_t *err)
{
    php_target *t = calloc(1, sizeof *t);

    if (t == NULL) {
        ph_fail(err, ENOMEM, "allocate");
        return NULL;
    }
    t->pid = pid;
    t->tid_off = -1;
    if ((t->sym = symbols_of(pid, err)) == NULL || (t->names = phs_pytab_new()) == NULL) {
        if (t->sym != NULL)
            ph_fail(err, ENOMEM, "allocate");
        php_target_close(t);
        return NULL;
    }
    phs_py_target(pid);
    phs_py_detect(t->sym);
    snprintf(t->desc, sizeof t->desc, "%s", phs_py_describe());
    if (!phs_py_active()) {
        ph_fail(err, 0, "process %d: %s", (int)pid,
                t->desc[0] ? t->desc : "no CPython in it (no _PyRuntime in its program or a libpython3)");
        php_target_close(t);
        return NULL;
    }
    return t;
}

void
php_target_close(php_target *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->cap_stacks; i++)
        free(t->stacks[i].line);
    free(t->stacks);
    phs_pytab_free(t->names);
    symbols_free(t->sym);
    free(t);
}

const char *
php_target_describe(const php_target *t)
{
    return t->desc;
}

uint64_t
php_samples(const php_target *t)
{
    return t->samples;
}

/* The process's thread ids into TIDS (at most MAX); how many, -1: gone. */
static int
list_tids(pid_t pid, pid_t *tids, int max)
{
    char path[64];
    DIR *d;
    struct dirent *e;
    int n = 0;

    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    if ((d = opendir(path)) == NULL)
        return -1;
    while ((e = readdir(d)) != NULL && n < max)
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
            tids[n++] = (pid_t)atoi(e->d_name);
    closedir(d);
    return n;
}

static int
has_tid(const pid_t *tids, int n, int32_t v)
{
    for (int i = 0; i < n; i++)
        if (tids[i] == v)
            return 1;
    return 0;
}

/* The offset of the thread id in the descriptors PT[0..N), or -2. */
static int
find_tid_off(pid_t pid, const uintptr_t *pt, size_t n, const pid_t *tids, int ntids)
{
    static int32_t buf[MAX_THREADS][TID_SPAN / 4];
    size_t got = 0;

    for (size_t i = 0; i < n && got < MAX_THREADS; i++) {
        struct iovec l = { buf[got], TID_SPAN }, r = { (void *)pt[i], TID_SPAN };

        if (pt[i] != 0 && process_vm_readv(pid, &l, 1, &r, 1, 0) == TID_SPAN)
            got++;
    }
    if (got == 0)
        return -2;
    for (int k = 0; k < TID_SPAN / 4; k++) {
        int ok = 1;

        for (size_t i = 0; i < got && ok; i++) {
            ok = buf[i][k] > 0 && has_tid(tids, ntids, buf[i][k]);
            for (size_t j = 0; j < i && ok; j++)
                ok = buf[j][k] != buf[i][k];
        }
        if (ok)
            return k * 4;
    }
    return -2;
}

/* Thread TID's state letter ('R' running) into *STATE and its name. */
static int
thread_stat(pid_t pid, pid_t tid, char *state, char *name, size_t len)
{
    char path[80], buf[512];
    const char *p;
    ssize_t n;
    int fd;

    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* "tid (comm) S ...": comm is the thread's own, anything but bounded at 16 */
    if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
        return -1;
    *state = p[2];
    {
        const char *o = strchr(buf, '(');
        size_t k = 0;

        for (o = o ? o + 1 : p; o < p && k + 1 < len; o++)
            name[k++] = *o == ';' ? ':' : (*o == '\n' || *o == '\r' || *o == ' ') ? '_' : *o;
        name[k] = '\0';
    }
    return 0;
}

static uint64_t
hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static int
count_line(php_target *t, const char *line)
{
    uint64_t h = hash_str(line);
    size_t k;

    if (t->n_stacks * 2 >= t->cap_stacks) {
        size_t cap = t->cap_stacks ? t->cap_stacks * 2 : 1024;
        stack_ent *nv;

        if (t->n_stacks >= MAX_STACKS || (nv = calloc(cap, sizeof *nv)) == NULL)
            goto lookup;
        for (size_t i = 0; i < t->cap_stacks; i++) {
            if (t->stacks[i].line == NULL)
                continue;
            for (k = t->stacks[i].hash & (cap - 1); nv[k].line; k = (k + 1) & (cap - 1))
                ;
            nv[k] = t->stacks[i];
        }
        free(t->stacks);
        t->stacks = nv;
        t->cap_stacks = cap;
    }
lookup:
    if (t->cap_stacks == 0)
        return -1;
    for (k = h & (t->cap_stacks - 1); t->stacks[k].line; k = (k + 1) & (t->cap_stacks - 1))
        if (t->stacks[k].hash == h && strcmp(t->stacks[k].line, line) == 0) {
            t->stacks[k].count++;
            return 0;
        }
    if (t->n_stacks * 2 >= t->cap_stacks || (t->stacks[k].line = strdup(line)) == NULL)
        return -1;
    t->stacks[k].hash = h;
    t->stacks[k].count = 1;
    t->n_stacks++;
    return 0;
}

/* Append S to LINE (LEN used of MAX_LINE), as a folded frame. */
static size_t
put(char *line, size_t len, const char *s)
{
    if (s == NULL) { /* the separator */
        if (len + 1 < MAX_LINE)
            line[len++] = ';';
        line[len] = '\0';
        return len;
    }
    for (; *s && len + 1 < MAX_LINE; s++)
        line[len++] = *s == ';' ? ':' : *s == '\n' ? ' ' : *s;
    line[len] = '\0';
    return len;
}

/* The folded line of thread NAME's frames W[0..N) (resolved, innermost
 * first), [off-cpu] at the end when OFF. */
static void
fold(php_target *t, const char *name, const uintptr_t *w, uint32_t n, int off, char *line)
{
    size_t len = put(line, 0, name);

    if (n == 0)
        len = put(line, put(line, len, NULL), "[no Python frame]");
    for (uint32_t k = n; k-- > 0;) {
        const phs_frame *f = phs_py_frame(t->names, w[k]);
        const char *base = f->file ? strrchr(f->file, '/') : NULL;
        char where[64];

        len = put(line, put(line, len, NULL), f->name);
        len = put(line, put(line, len, " ("), base ? base + 1 : f->file && f->file[0] ? f->file : "?");
        snprintf(where, sizeof where, ":%d)_[p]", f->line);
        len = put(line, len, where);
    }
    if (off)
        put(line, put(line, len, NULL), "[off-cpu]");
}

int
php_sample(php_target *t, int clock)
{
    static uintptr_t ts[MAX_THREADS], pt[MAX_THREADS], words[PHS_MAX_WORDS];
    static char line[MAX_LINE];
    pid_t tids[MAX_THREADS];
    uintptr_t holder = 0;
    size_t n = phs_py_threads(ts, MAX_THREADS, &holder);
    int counted = 0;

    if (n == 0 && kill(t->pid, 0) < 0 && errno == ESRCH)
        return -1;
    for (size_t i = 0; i < n; i++)
        pt[i] = phs_py_thread_id(ts[i]);
    if (t->tid_off == -1 && n > 0) {
        int ntids = list_tids(t->pid, tids, MAX_THREADS);

        if (ntids < 0)
            return -1;
        t->tid_off = find_tid_off(t->pid, pt, n, tids, ntids);
    }
    for (size_t i = 0; i < n; i++) {
        char state = '?', name[64] = "thread";
        int32_t tid = 0, told = 0, running;
        uint32_t depth;

        if (t->tid_off >= 0 && pt[i] != 0) {
            struct iovec l = { &tid, sizeof tid }, r = { (void *)(pt[i] + (uintptr_t)t->tid_off), sizeof tid };

            /* a thread of the process: its stat is under the process's task/ */
            told = process_vm_readv(t->pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof tid && tid > 0 &&
                   thread_stat(t->pid, tid, &state, name, sizeof name) == 0;
        }
        running = told ? state == 'R' : ts[i] == holder;
        if (clock == PHP_CLOCK_CPU && !running)
            continue;
        depth = phs_py_walk(ts[i], words, PHS_MAX_WORDS);
        depth = phs_py_resolve(t->names, words, depth);
        fold(t, name, words, depth, clock == PHP_CLOCK_WALL && !running, line);
        if (count_line(t, line) < 0)
            t->dropped++;
        else
            counted++;
    }
    t->samples++;
    return counted;
}

static int
cmp_ent(const void *a, const void *b)
{
    return strcmp(((const stack_ent *)a)->line, ((const stack_ent *)b)->line);
}

int
php_folded(const php_target *t, uint64_t scale, char **out, size_t *len, ph_error_t *err)
{
    stack_ent *v = malloc((t->n_stacks ? t->n_stacks : 1) * sizeof *v);
    size_t n = 0;
    FILE *f;

    *out = NULL;
    *len = 0;
    if (v == NULL || (f = open_memstream(out, len)) == NULL) {
        free(v);
        return ph_fail(err, ENOMEM, "allocate");
    }
    for (size_t i = 0; i < t->cap_stacks; i++)
        if (t->stacks[i].line != NULL)
            v[n++] = t->stacks[i];
    qsort(v, n, sizeof *v, cmp_ent);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s %llu\n", v[i].line, (unsigned long long)(v[i].count * scale));
    free(v);
    if (fclose(f) != 0) {
        free(*out);
        *out = NULL;
        return ph_fail(err, ENOMEM, "allocate");
    }
    return 0;
}

/* The snapshot's files of T's stacks in DIR (ph_stackset.h). */
static int
write_outputs(php_target *t, int hz, int clock, const char *dir, const char *title, double seconds, ph_error_t *err)
{
    char stamp[32], sub[256], *folded = NULL;
    size_t flen = 0;
    struct tm tm;
    time_t now = time(NULL);
    ph_stackset_opts so = { .stamp = stamp, .pid = t->pid, .wall = clock == PHP_CLOCK_WALL,
                            .period_ns = (uint64_t)(1000000000L / hz), .duration_ns = (int64_t)(seconds * 1e9),
                            .title = title, .subtitle = sub };
    int rc;

    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    if (php_folded(t, 1, &folded, &flen, err) < 0)
        return -1;
    if (flen == 0) {
        free(folded);
        return ph_fail(err, 0, "process %d: no sample in %.1f s (%s clock): nothing written", (int)t->pid, seconds,
                       clock == PHP_CLOCK_WALL ? "wall" : "CPU");
    }
    snprintf(sub, sizeof sub, "%s; attached from outside at %d Hz, %llu samples of %s; %s", t->desc, hz,
             (unsigned long long)t->samples, clock == PHP_CLOCK_WALL ? "every thread (wall clock)" : "running threads (CPU)",
             t->dropped ? "some stacks dropped (table full)" : "none dropped");
    rc = ph_stackset_write(dir, folded, flen, &so, err);
    free(folded);
    return rc;
}

int
php_run(php_target *t, int hz, int clock, const char *dir, const char *title, volatile sig_atomic_t *stop,
        ph_error_t *err)
{
    struct timespec next, start, end;
    long period = 1000000000L / (hz > 0 && hz <= 10000 ? hz : 100);

    clock_gettime(CLOCK_MONOTONIC, &start);
    next = start;
    while (!*stop) {
        if (php_sample(t, clock) < 0)
            break; /* the process ended: what it ran is written */
        next.tv_nsec += period;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        clock_gettime(CLOCK_MONOTONIC, &end);
        if (end.tv_sec > next.tv_sec + 1)
            next = end; /* fallen behind (the machine was busy): no burst to catch up */
        /* a signal ends the wait early (EINTR): the flag is looked at then */
        if (!*stop)
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    return write_outputs(t, hz, clock, dir, title,
                         (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9, err);
}
