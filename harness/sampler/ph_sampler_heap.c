/* ph_sampler_heap.c - the heap sampler's allocation path: malloc and its
 * family interposed, one sample per PH_SAMPLER_HEAP bytes on average
 * (ph_sampler_heapmath.h), the stack of each sampled block kept, its
 * release tracked.  The snapshot files are ph_sampler_heapout.c's.
 *
 * What runs where:
 * - Every thread, inside malloc, calloc, realloc, reallocarray, free,
 *   posix_memalign, aligned_alloc, memalign, valloc, pvalloc (C++'s new
 *   and delete reach them through libstdc++): the real function (the
 *   next definition, dlsym(RTLD_NEXT): glibc's, or a jemalloc/tcmalloc
 *   library the service links), then, while sampling, a countdown in
 *   thread-local storage.  Most calls stop there.  A sampled one walks
 *   its own stack with the CPU sampler's unwinder (from the registers of
 *   the interposer's frame, so the leaf is `malloc`, `calloc`...),
 *   finds or adds the stack in a preallocated table, adds the block to
 *   a preallocated table of live sampled blocks, and adds its weight to
 *   the stack's counters.  No lock, no allocation, no system call but
 *   the unwinder's probes (write/read on a pipe) off the thread's stack:
 *   this runs inside the service's allocator, and may run in a signal
 *   handler that allocates, or in a child after fork.  Everything is
 *   atomic claims (CAS) and counters; a table that is full drops the
 *   sample (counted), the stack table's overflow goes to one
 *   "[truncated]" stack so the totals stay right.
 * - The bytes in use, exactly (not sampled): each block carries the size
 *   the service asked.  On glibc's allocator (TAG_FRONT) in a 16-byte
 *   header before it (front()): malloc, calloc and realloc ask 16 bytes
 *   more and give the service the block past the header; free reads the
 *   header from the line of glibc's chunk header, which glibc's free reads
 *   next, so knowing the size costs no cache miss.  A sealed word tells a
 *   header from what else may be there, and a flag in it says the block
 *   was sampled: only then does free look it up in the live table.  The
 *   aligned allocators, and every block on another allocator (musl's,
 *   jemalloc's: TAG_TAIL), carry a tag past the end instead (tag(): one
 *   byte more asked, read back through the usable size), which free
 *   reads from a line nothing else touches then: a miss when the service
 *   has not read the block's end since.  Their sampled records are found
 *   through a Bloom filter of the live sampled blocks' addresses (two
 *   bits per address, 8 KiB, static, a counting filter: a bit goes with
 *   its last block), one load for nearly every free; only when both bits
 *   are set is the live table searched (false positives about
 *   (2n/65536)^2 of the frees for n live samples).  Records go before the
 *   real free: the address cannot be handed out again while its record
 *   is still there.  Each thread sums its changes in TLS and adds them to
 *   one counter every 16 KiB either way (and at its exit); a flush whose
 *   highest point tops the peak raises it.  So the peak is exact for one
 *   thread and within 16 KiB per other thread, at any interval; when it
 *   tops the last copy by max(T, peak/64) every stack's in-use counters
 *   are copied as the peak's (one thread at a time: a flag, no waiting;
 *   the writer does the same at a snapshot while in use is at its
 *   highest).  The views' bytes are scaled to the exact totals, their
 *   shares the samples' (unless a runtime's objects are sampled too:
 *   those are estimates, the exact malloc figures beside them).  Without
 *   malloc_usable_size (and not glibc's) the peak is the estimate's.
 * - Why the header is safe: realloc moves it with the bytes and seals it
 *   anew (its flags cleared: the old record went first); posix_memalign,
 *   memalign, aligned_alloc, valloc and pvalloc keep the tail's way (a
 *   header would cost the alignment in bytes), and free and realloc tell
 *   their blocks by the seal; calloc's zeroes are the service's bytes
 *   past the header; a block freed on another thread carries its size
 *   with it (the count is per thread, their sum exact); a block from
 *   before the sampler started (the loader's, constructors' that ran
 *   first, all those of a program that calls ph_sampler_start) has no
 *   seal, before it nor at its end (the aligned allocators' tail is
 *   sealed too on glibc's heap): it goes to the real free as it is,
 *   uncounted, and malloc_usable_size says the allocator's size.  (On
 *   another allocator the tail's one byte cannot be sealed: such a block
 *   gives some size within it.)  The cost: 16 bytes a
 *   block (the tail's one byte costs 16 only when the size asked was
 *   already the usable size).
 * - Re-entry: a thread-local flag; the writer thread sets it for good (its
 *   allocations are the sampler's, never sampled).  What the sampler
 *   allocates on a service thread (inside a phs_own section: a new
 *   thread's stack noted, pthread_create's note, its start) is neither
 *   counted nor sampled, and a sample's bookkeeping is such a section
 *   itself: no CPU sample of it is the service's (ph_sampler_int.h).
 * - Bootstrapping: the first call resolves the real functions with
 *   dlsym, which may itself allocate; those allocations come from a small
 *   static arena (never freed, ignored by free).
 * - Not seen: a program linked with its own malloc (statically: the
 *   executable's definition comes first), allocations through mmap or
 *   brk directly, and libc's internal calls that do not go through the
 *   PLT (none for the functions above in glibc).  A block realloc fails
 *   to move is forgotten (counted as freed).
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ph_sampler_heapmath.h"
#include "ph_sampler_int.h"

#ifndef __GLIBC__
void *pvalloc(size_t n); /* glibc's; musl has none, so R.pvalloc stays NULL */
#endif

#define HEAP_STACKS (1u << 15)  /* distinct stacks */
#define HEAP_INDEX_K 16
#define HEAP_INDEX (1u << HEAP_INDEX_K) /* their hash index */
#define HEAP_ARENA (1u << 21)   /* their pcs */
#define HEAP_LIVE_K 18
#define HEAP_LIVE (1u << HEAP_LIVE_K) /* sampled blocks alive at once */
/* The index and the live table are each a row of hash tables of 2^K
 * slots, K from HEAP_MIN_K, the one of 2^K at slot 2^K (so the row of
 * tables up to 2^MAX takes 2^(MAX+1) slots), filled from the smallest:
 * new entries go into the table in use (H.index_k, H.live_k), the next
 * one once the entries count half of its slots; an entry stays in the
 * table it went into, and a lookup looks in each down to the smallest.
 * A hash table's entries land on pages at random, so one used whole from
 * its first entry costs a page of memory per entry until every page is
 * touched (a live table of 2^18 slots: 8 MiB; node's hundred-odd live
 * samples 400 KiB), and one of 2^10 slots 8 pages (32 KiB).  (Used as the
 * first 2^K slots of one table instead, the first slots would hold every
 * size's share of the entries that stay: full, after a few doublings.) */
#define HEAP_MIN_K 10
/* Buckets of the live blocks' addresses, two per address: a count each
 * (H.filter) and a bit each (live_bits, what every free reads: 8 KiB).
 * (Reading the 128 KiB of counts instead cost a benchmark's free a cache
 * miss: 85 % of the interposer's time; 4 MiB of them twice the loop's
 * time.  One bit per address left the false positives' probes of the
 * live table at 3 % of that loop's time.) */
#define HEAP_FILTER (1u << 16)
#define HEAP_PROBES 64
#define BOOT_ARENA (64u * 1024u)
#define TOMB ((uintptr_t)1)

typedef struct heap_stack {
    uint64_t hash;
    uint32_t depth, off;
    _Atomic uint32_t ready;
    _Atomic uint64_t alloc_n;                 /* samples */
    _Atomic uint64_t alloc_bytes, alloc_objs; /* estimates; objects in PHS_HEAP_OBJ units */
    _Atomic int64_t inuse_bytes, inuse_objs;
    _Atomic int64_t peak_bytes, peak_objs;    /* at the last copy of the peak */
} heap_stack;

typedef struct live {
    _Atomic uintptr_t key;  /* the block; 0 never used, TOMB freed */
    uint32_t id;
    int64_t bytes, objs;
} live;

static struct {
    _Atomic int on;
    double mean;                  /* T, bytes; 0: not configured */
    heap_stack *stacks;
    _Atomic uint32_t *index;
    uintptr_t *arena;
    live *live;
    _Atomic uint16_t *filter;
    /* written by samples: a cache line away from what every call reads */
    _Alignas(64) _Atomic uint32_t n_stacks, arena_used;
    _Atomic int64_t inuse, peak_copied;
    _Atomic int peak_busy;
    _Atomic uint64_t samples, dropped, live_n;
    _Atomic uint32_t index_k, live_k; /* log2 of the slots in use (HEAP_MIN_K..) */
} H;

static _Alignas(64) _Atomic uint64_t live_bits[HEAP_FILTER / 64];

/* The exact count of what is in use (every block's requested bytes, not
 * sampled): each thread's change since its last flush in TLS, the sum of
 * the flushed changes here.  (A thread flushes when its change reaches
 * FLUSH_AT either way, so the sum is within FLUSH_AT bytes per thread of
 * the truth, and a thread's highest point since its flush is exact.) */
#define FLUSH_AT ((int64_t)16384)
/* How a new block carries its size (set once, by phs_heap_prepare):
 * TAG_TAIL, a tag in its last usable byte (tag()); TAG_FRONT, on glibc's
 * allocator, a header before it for malloc, calloc and realloc (front()),
 * the tail's way for the aligned allocators. */
enum { TAG_NONE, TAG_TAIL, TAG_FRONT };
static struct {
    int on;                           /* TAG_*: blocks carry their size */
    _Alignas(64) _Atomic int64_t live;
    _Atomic int64_t peak;             /* the highest live seen while sampling */
    _Atomic int64_t peak_at_copy;     /* exact live when the peak's stacks were copied */
    _Atomic int runtime;              /* samples not of malloc's (JVM, CPython objects) */
} X;
#define FRONT 16
static uint64_t seal_key;

static uint64_t
new_seal_key(void)
{
    uint64_t k = 0;
    struct timespec t;

    if (syscall(SYS_getrandom, &k, sizeof k, 1 /* GRND_NONBLOCK */) != (long)sizeof k) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        k = ((uint64_t)t.tv_nsec << 32 ^ (uint64_t)t.tv_sec ^ (uint64_t)getpid() << 16 ^ (uint64_t)(uintptr_t)&k) *
            0x9E3779B97F4A7C15ULL;
    }
    /* (0: no key yet; the top bit: never a chunk's size word, which is
     * what the front header's seal is checked against on a block without
     * one) */
    return k | 1 | (uint64_t)1 << 63;
}

static int glibc_heap; /* R.malloc is glibc's own: its chunk header read here (usable()) */
/* The thread's own state, in one block so that every field is an offset
 * from one address (an initial-exec variable of a library costs a load of
 * its offset first: one for all of them). */
static __thread struct {
    int64_t left;      /* bytes to the next sampled byte */
    int64_t pend;      /* the exact count's change since the last flush */
    int64_t pmax;      /* its highest since then */
    uint64_t rng;
    int guard;         /* the sampler's own thread, or inside a sample */
    int py;            /* inside CPython's allocator, for our hook */
    int keyed;         /* its exit flushes (exit_key) */
    int seeded;
    int inner;         /* musl: inside one of its functions that calls ours */
} T __attribute__((tls_model("initial-exec")));
/* A thread's last change flushed when it exits (a key's destructor). */
static pthread_key_t exit_key;
static int exit_key_made;
static void on_thread_exit(void *unused);

#ifdef __GLIBC__
#define INNER(call) (call)
#define IN_INNER 0
#else
/* musl's allocator calls its own public functions, which are ours: calloc
 * and realloc malloc, posix_memalign and memalign aligned_alloc.  The
 * block is the outer call's, noted once by it: what a real function
 * allocates inside is not counted.  (glibc's calls its internals.) */
#define INNER(call) __extension__({ __typeof__(call) r_; T.inner++; r_ = (call); T.inner--; r_; })
/* (CALL's arguments are evaluated inside, where TAGGING is false: what is
 * asked, ask(n), is computed before, or the tag lands in the caller's
 * last bytes) */
#define IN_INNER T.inner
#endif

/* ---- the real functions and the bootstrap arena --------------------------- */

static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*usable)(void *);
} R;

static _Alignas(64) char boot[BOOT_ARENA];
static _Atomic size_t boot_used;

static int
boot_owns(const void *p)
{
    return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

/* N bytes aligned to ALIGN (a power of two, at least 16) from the arena,
 * its size in the 16 bytes before it; NULL when the arena is spent. */
static void *
boot_alloc(size_t n, size_t align)
{
    size_t at, start;

    if (align < 16)
        align = 16;
    if (n > sizeof boot || align > 4096)
        return NULL;
    at = atomic_fetch_add(&boot_used, n + align + 16);
    start = (at + 16 + align - 1) & ~(align - 1);
    if (start + n > sizeof boot)
        return NULL;
    memcpy(boot + start - 16, &n, sizeof n);
    return boot + start;
}

static size_t
boot_size(const void *p)
{
    size_t n;

    memcpy(&n, (const char *)p - 16, sizeof n);
    return n;
}

/* volatile: the compiler sees no way for dlsym to reach calloc, and
 * dropped both stores around it (the guard then never held: glibc 2.31's
 * dlsym allocates, and the first calloc recursed until the stack ran out) */
static __thread volatile int tls_resolving __attribute__((tls_model("initial-exec")));

#define NEXT(name) dlsym(RTLD_NEXT, name)

/* dlsym may allocate (its error state): those calls, on this thread, are
 * served from the arena meanwhile. */
static int
resolve(void)
{
    if (tls_resolving)
        return -1;
    tls_resolving = 1;
    *(void **)&R.free = NEXT("free");
    *(void **)&R.calloc = NEXT("calloc");
    *(void **)&R.realloc = NEXT("realloc");
    *(void **)&R.posix_memalign = NEXT("posix_memalign");
    *(void **)&R.aligned_alloc = NEXT("aligned_alloc");
    *(void **)&R.memalign = NEXT("memalign");
    *(void **)&R.valloc = NEXT("valloc");
    *(void **)&R.pvalloc = NEXT("pvalloc");
    *(void **)&R.usable = NEXT("malloc_usable_size");
    *(void **)&R.malloc = NEXT("malloc"); /* last: the sign that all are there */
    tls_resolving = 0;
    return R.malloc != NULL && R.free != NULL && R.calloc != NULL && R.realloc != NULL ? 0 : -1;
}

static inline int
ready(void)
{
    return __builtin_expect(R.malloc != NULL, 1) || resolve() == 0;
}

/* ---- the tables ----------------------------------------------------------- */

static void *
map_lazy(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    return p == MAP_FAILED ? NULL : p;
}

static void
unmap_all(void)
{
    if (H.stacks)
        munmap(H.stacks, HEAP_STACKS * sizeof *H.stacks);
    if (H.index)
        munmap((void *)H.index, 2 * HEAP_INDEX * sizeof *H.index);
    if (H.arena)
        munmap(H.arena, HEAP_ARENA * sizeof *H.arena);
    if (H.live)
        munmap(H.live, 2 * HEAP_LIVE * sizeof *H.live);
    if (H.filter)
        munmap((void *)H.filter, HEAP_FILTER * sizeof *H.filter);
    H.stacks = NULL;
    H.index = NULL;
    H.arena = NULL;
    H.live = NULL;
    H.filter = NULL;
}

int
phs_heap_configure(const char *value, char *bad, size_t len)
{
    char *end;
    double v;

    H.mean = 0;
    if (value == NULL || *value == '\0')
        return 0;
    errno = 0;
    v = strtod(value, &end);
    if (end == value || errno != 0 || !(v >= 1 && v <= 1e12) ||
        (*end != '\0' && strcmp(end, "k") != 0 && strcmp(end, "K") != 0 && strcmp(end, "M") != 0)) {
        snprintf(bad, len, "PH_SAMPLER_HEAP=%.40s: want the mean bytes between samples (e.g. 524288 or 512K)", value);
        return -1;
    }
    if (*end == 'k' || *end == 'K')
        v *= 1024;
    else if (*end == 'M')
        v *= 1024 * 1024;
    H.mean = v;
    return 0;
}

int
phs_heap_wanted(void)
{
    return H.mean > 0;
}

double
phs_heap_mean(void)
{
    return H.mean;
}

/* Stack 0: where the samples go when the stack table is full. */
static void
reserve_overflow(void)
{
    heap_stack *s = &H.stacks[0];

    H.arena[0] = PHS_TRUNCATED;
    s->depth = 1;
    s->off = 0;
    atomic_store(&H.arena_used, 1);
    atomic_store(&H.n_stacks, 1);
    atomic_store(&s->ready, 1);
}

/* glibc's allocator, not a jemalloc or tcmalloc the service links: its
 * headers are known.  Set once, before any thread reads it: by
 * phs_heap_prepare, or by the writer as it starts (free_own, every mode). */
static void
detect_glibc(void)
{
#ifdef __GLIBC__
    void *libc;

    if (glibc_heap || (libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY)) == NULL)
        return;
    if (dlsym(libc, "malloc_usable_size") == *(void **)&R.usable && dlsym(libc, "malloc") == *(void **)&R.malloc)
        glibc_heap = 1;
    dlclose(libc);
#endif
}

int
phs_heap_prepare(void)
{
    if (!phs_heap_wanted())
        return 0;
    if (!ready())
        return -1;
    if (H.stacks == NULL) {
        H.stacks = map_lazy(HEAP_STACKS * sizeof *H.stacks);
        H.index = map_lazy(2 * HEAP_INDEX * sizeof *H.index);
        H.arena = map_lazy(HEAP_ARENA * sizeof *H.arena);
        H.live = map_lazy(2 * HEAP_LIVE * sizeof *H.live);
        H.filter = map_lazy(HEAP_FILTER * sizeof *H.filter);
        if (H.stacks == NULL || H.index == NULL || H.arena == NULL || H.live == NULL || H.filter == NULL) {
            unmap_all();
            return -1;
        }
        atomic_store(&H.index_k, HEAP_MIN_K);
        atomic_store(&H.live_k, HEAP_MIN_K);
        reserve_overflow();
    }
    /* From here on every block carries its size (tag()); for good: a tag
     * is read at the block's free whenever that comes.  (The few blocks
     * allocated before, the loader's and the constructors' that ran
     * first, carry none: theirs frees read some size within them.) */
    if (!exit_key_made)
        exit_key_made = pthread_key_create(&exit_key, on_thread_exit) == 0;
    detect_glibc();
    if (seal_key == 0)
        seal_key = new_seal_key();
    /* one store: a thread sees no mode or the whole of one */
    X.on = R.usable == NULL ? TAG_NONE : glibc_heap ? TAG_FRONT : TAG_TAIL;
    return 0;
}

void
phs_heap_enable(void)
{
    if (phs_heap_wanted() && H.stacks != NULL)
        atomic_store(&H.on, 1);
}

void
phs_heap_disable(void)
{
    atomic_store(&H.on, 0);
}

void
phs_heap_writer_thread(void)
{
    T.guard = 1;
    if (ready())
        detect_glibc();
}

void
phs_heap_forked(int keep)
{
    /* The parent's blocks are the child's too, but its profile starts
     * afresh: new tables (the copies stay mapped, unused: another thread
     * of the parent may have been inside them). */
    atomic_store(&H.on, 0);
    if (!keep)
        return;
    H.stacks = NULL;
    H.index = NULL;
    H.arena = NULL;
    H.live = NULL;
    H.filter = NULL;
    memset((void *)live_bits, 0, sizeof live_bits);
    atomic_store(&H.inuse, 0);
    atomic_store(&H.peak_copied, 0);
    atomic_store(&H.peak_busy, 0);
    atomic_store(&H.samples, 0);
    atomic_store(&H.dropped, 0);
    atomic_store(&H.live_n, 0);
    atomic_store(&X.peak, atomic_load(&X.live));
    atomic_store(&X.peak_at_copy, 0);
    atomic_store(&X.runtime, 0);
    if (phs_heap_prepare() < 0)
        H.mean = 0;
}

uint64_t
phs_heap_samples(void)
{
    return atomic_load(&H.samples);
}

/* ---- the sample path ------------------------------------------------------ */

static inline uint64_t
hash_pcs(const uintptr_t *pcs, uint32_t depth)
{
    uint64_t h = 1469598103934665603ULL;

    for (uint32_t i = 0; i < depth; i++) {
        h ^= pcs[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static inline uint64_t
hash_addr(uintptr_t p)
{
    return (uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ULL;
}

/* The filter's two buckets of an address of hash H (its best-mixed bits). */
static inline uint32_t
bucket(uint64_t h)
{
    return (uint32_t)(h >> 32) & (HEAP_FILTER - 1);
}

static inline uint32_t
bucket2(uint64_t h)
{
    return (uint32_t)(h >> 48) & (HEAP_FILTER - 1);
}

static inline int
bit_set(uint32_t b)
{
    return (atomic_load_explicit(&live_bits[b / 64], memory_order_relaxed) >> (b % 64)) & 1;
}

/* Count a live block in bucket B: its count first, then its bit. */
static void
filter_add(uint32_t b)
{
    atomic_fetch_add(&H.filter[b], 1);
    atomic_fetch_or(&live_bits[b / 64], 1ull << (b % 64));
}

/* Uncount one: the bit goes with the last block, and comes back when a
 * block came in meanwhile (its add set the bit before this cleared it). */
static void
filter_remove(uint32_t b)
{
    if (atomic_fetch_sub(&H.filter[b], 1) != 1)
        return;
    atomic_fetch_and(&live_bits[b / 64], ~(1ull << (b % 64)));
    if (atomic_load(&H.filter[b]) != 0)
        atomic_fetch_or(&live_bits[b / 64], 1ull << (b % 64));
}

/* The size in use of a growing table: K, or K + 1 once N entries fill
 * half of 2^K (one thread's CAS grows it; the others see it grown). */
static uint32_t
grown(_Atomic uint32_t *k, uint64_t n, uint32_t max)
{
    uint32_t cur = atomic_load_explicit(k, memory_order_acquire);

    if (cur < max && n >= (1ull << cur) / 2 && atomic_compare_exchange_strong(k, &cur, cur + 1))
        cur++;
    return cur;
}

/* Probe P for hash H in the index's table of 2^K slots. */
static inline _Atomic uint32_t *
index_slot(uint64_t h, uint32_t k, uint32_t p)
{
    return &H.index[(1u << k) + ((h + p) & ((1u << k) - 1))];
}

/* The stack of id V - 1 is PCS[0..DEPTH) of hash H? */
static inline int
stack_is(uint32_t v, uint64_t h, const uintptr_t *pcs, uint32_t depth)
{
    const heap_stack *s = &H.stacks[v - 1];

    return s->hash == h && s->depth == depth && memcmp(&H.arena[s->off], pcs, depth * sizeof *pcs) == 0;
}

/* The first free slot of H's probes in the index's table of 2^K slots,
 * or NULL. */
static _Atomic uint32_t *
index_free(uint64_t h, uint32_t k)
{
    for (uint32_t p = 0; p < HEAP_PROBES; p++) {
        _Atomic uint32_t *at = index_slot(h, k, p);

        if (atomic_load_explicit(at, memory_order_acquire) == 0)
            return at;
    }
    return NULL;
}

/* The id of the stack PCS[0..DEPTH), added if new; 0 (the overflow
 * stack) when there is no room.  Two threads adding one stack at once may
 * both add it: two ids, both counted, merged by name when written. */
static uint32_t
stack_id(const uintptr_t *pcs, uint32_t depth)
{
    uint64_t h = hash_pcs(pcs, depth);
    uint32_t k = grown(&H.index_k, atomic_load(&H.n_stacks), HEAP_INDEX_K), id, off, zero = 0;
    _Atomic uint32_t *slot;
    heap_stack *s;

    /* in each table, from the one in use down to the smallest: a stack
     * went into the first free slot of its probes there */
    for (uint32_t j = k + 1; j-- > HEAP_MIN_K;)
        for (uint32_t p = 0; p < HEAP_PROBES; p++) {
            uint32_t v = atomic_load_explicit(index_slot(h, j, p), memory_order_acquire);

            if (v == 0)
                break;
            if (stack_is(v, h, pcs, depth))
                return v - 1;
        }
    slot = index_free(h, k);
    if (slot == NULL && k < HEAP_INDEX_K) {
        /* every probe taken in the one in use: the next, once */
        atomic_compare_exchange_strong(&H.index_k, &k, k + 1);
        slot = index_free(h, atomic_load(&H.index_k));
    }
    if (slot == NULL)
        return 0;
    id = atomic_fetch_add(&H.n_stacks, 1);
    if (id >= HEAP_STACKS)
        return 0;
    off = atomic_fetch_add(&H.arena_used, depth);
    if (off > HEAP_ARENA - depth || off + depth > HEAP_ARENA)
        return 0; /* (the id stays unready: skipped when written) */
    s = &H.stacks[id];
    memcpy(&H.arena[off], pcs, depth * sizeof *pcs);
    s->hash = h;
    s->depth = depth;
    s->off = off;
    atomic_store_explicit(&s->ready, 1, memory_order_release);
    atomic_compare_exchange_strong(slot, &zero, id + 1); /* lost: a duplicate, unindexed */
    return id;
}

/* Copy every stack's in-use counters as the peak's; the one thread that
 * holds the flag does it, the others go on. */
static void
copy_peak(int64_t exact)
{
    uint32_t n = atomic_load(&H.n_stacks);
    int64_t sum = 0;

    if (H.stacks == NULL || atomic_exchange(&H.peak_busy, 1))
        return;
    if (n > HEAP_STACKS)
        n = HEAP_STACKS;
    /* No sampled block in use: no composition to keep (the last one
     * stays, and the next raise tries again) */
    if (exact != 0 && atomic_load(&H.inuse) <= 0) {
        atomic_store(&H.peak_busy, 0);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        heap_stack *s = &H.stacks[i];
        int64_t b = atomic_load_explicit(&s->inuse_bytes, memory_order_relaxed);

        atomic_store_explicit(&s->peak_bytes, b, memory_order_relaxed);
        atomic_store_explicit(&s->peak_objs, atomic_load_explicit(&s->inuse_objs, memory_order_relaxed),
                              memory_order_relaxed);
        sum += b;
    }
    atomic_store(&H.peak_copied, sum);
    atomic_store(&X.peak_at_copy, exact);
    atomic_store(&H.peak_busy, 0);
}

/* ---- the exact count -------------------------------------------------- */

/* A thread's change into the sum; its highest point since the last flush
 * a candidate for the peak.  A peak above the last copy's by max(T,
 * peak/64) copies the stacks' in-use counters again (as the sampled
 * estimate did before: so the copies are few, O(64 log) of the growth). */
static __attribute__((noinline)) void
flush(void)
{
    int64_t before = atomic_fetch_add_explicit(&X.live, T.pend, memory_order_relaxed), top = before + T.pmax;
    int64_t peak, at;

    T.pend = 0;
    T.pmax = 0;
    if (!atomic_load_explicit(&H.on, memory_order_relaxed))
        return;
    peak = atomic_load_explicit(&X.peak, memory_order_relaxed);
    while (top > peak && !atomic_compare_exchange_weak(&X.peak, &peak, top))
        ;
    if (top <= peak)
        return;
    at = atomic_load_explicit(&X.peak_at_copy, memory_order_relaxed);
    if (top >= at + (at / 64 > (int64_t)H.mean ? at / 64 : (int64_t)H.mean))
        copy_peak(top);
}

static void
on_thread_exit(void *unused)
{
    if (T.pend != 0 || T.pmax != 0)
        flush();
}

/* Once per thread: its flush at exit (a key below PTHREAD_KEYS_MAX's
 * first block: glibc stores its value in the thread, no allocation). */
static __attribute__((noinline)) void
keyed(void)
{
    T.keyed = 1;
    if (exit_key_made)
        pthread_setspecific(exit_key, &T.keyed);
}

/* count_add's rare turns, out of line (so its callers keep few
 * registers): the thread's first block, a change to flush. */
static __attribute__((noinline)) void
count_slow(void)
{
    if (!T.keyed)
        keyed();
    if (T.pend >= FLUSH_AT)
        flush();
}

/* N bytes more in use on this thread.  The highest point without a
 * branch: whether V tops it follows the service's frees, at random, and
 * V waits on the free before's load of its header, often a cache miss;
 * a mispredicted branch on it serialised that miss with the loop's next
 * one.  The rare turns (a flush due, the thread's first block) are
 * predicted.  (A change at FLUSH_AT is always a new highest point: the
 * flush resets both.) */
static inline void
count_add(size_t n)
{
    int64_t v = T.pend + (int64_t)n, m = T.pmax;

    T.pend = v;
    T.pmax = v > m ? v : m;
    if (__builtin_expect(v >= FLUSH_AT || !T.keyed, 0))
        count_slow();
}

static inline void
count_sub(size_t n)
{
    int64_t v = T.pend - (int64_t)n;

    if (__builtin_expect(!T.keyed, 0))
        keyed();

    T.pend = v;
    if (__builtin_expect(v <= -FLUSH_AT, 0))
        flush();
}

/* The size tag.  A block is asked of the allocator one byte longer than
 * the service asked, so its usable size U (malloc_usable_size: the
 * allocator's own header, read by its free anyway) exceeds the request N:
 * the last usable byte holds U - N when that is 1..255, else 0 and N in
 * the 8 bytes before it (U - N >= 256 leaves room).  So free learns N from
 * the block itself: no table, no lock, from any thread; realloc reads the
 * old tag and writes a new one; the aligned allocators keep their
 * alignment (only the length grows); calloc's zeroes are the N bytes'.
 * Our malloc_usable_size says N, so a service never writes the tag.  The
 * byte costs memory only when N was already the usable size.  The
 * sampler's own blocks (OWN()) are asked 9 bytes longer and tagged
 * the long way with OWN_BIT: never counted, wherever they are freed. */
#define OWN_BIT ((size_t)1 << 63)


/* The usable size of P: glibc's from the chunk header before it (the
 * line its malloc and free touch anyway: malloc_usable_size also reads
 * the next chunk's, a cache miss), else the allocator's answer. */
static inline size_t
usable(const void *p)
{
    if (glibc_heap) {
        size_t h;

        memcpy(&h, (const char *)p - sizeof h, sizeof h);
        return (h & ~(size_t)7) - (h & 2 ? 2 : 1) * sizeof h; /* IS_MMAPPED: no next chunk's prev_size */
    }
    return R.usable((void *)p);
}
/* The sampler's own blocks: the writer's, and a service thread's inside
 * a phs_own section (its start, its notes) but for the interpreter's
 * allocator our CPython hook calls (T.py: the service's objects). */
#define OWN() (T.guard || (phs_tls_own && !T.py))

/* On glibc's heap (TAG_FRONT) a block the tail's way carries 16 bytes at
 * the end of its usable size: the size asked (OWN_BIT: the sampler's),
 * sealed by the key salted and tied to the block and the word (without a
 * tail those bytes are the service's, any value), so a block from before
 * the sampler started, with no seal, is told apart: uncounted, its usable
 * size the allocator's. */
#define TAIL_SALT 0x7461696c7461696cULL

static inline uint64_t
tail_seal(const void *p, uint64_t w)
{
    return seal_key ^ TAIL_SALT ^ (uintptr_t)p ^ w;
}

static inline void
tag(void *p, size_t n)
{
    unsigned char *q = p;
    size_t u = usable(p), s = u - n, own = OWN() ? OWN_BIT : 0;

    if (X.on == TAG_FRONT) {
        uint64_t h[2] = { n | own, 0 };

        h[1] = tail_seal(p, h[0]);
        memcpy(q + u - sizeof h, h, sizeof h);
        if (!own)
            count_add(n);
        return;
    }
    if (s < 256 && !own) {
        q[u - 1] = (unsigned char)s;
        count_add(n);
    } else {
        size_t w = n | own;

        q[u - 1] = 0;
        memcpy(q + u - 9, &w, sizeof w);
        if (!own)
            count_add(n);
    }
}

/* The size a block's tag says, bounded by its usable size (a block from
 * before the sampler, which carries no tag, gives some size within it;
 * on glibc's heap its usable size, *OWN set: not counted); *OWN: the
 * writer's. */
static inline size_t
tag_size(const void *p, int *own)
{
    const unsigned char *q = p;
    size_t u = usable(p), n;

    *own = 0;
    if (X.on == TAG_FRONT) {
        uint64_t h[2];

        if (u < sizeof h) {
            *own = 1;
            return u;
        }
        memcpy(h, q + u - sizeof h, sizeof h);
        if (h[1] != tail_seal(p, h[0])) {
            *own = 1;
            return u;
        }
        *own = (h[0] & OWN_BIT) != 0;
        return h[0] & ~OWN_BIT;
    }
    if (u == 0)
        return 0;
    if (q[u - 1] != 0)
        return q[u - 1] <= u ? u - q[u - 1] : 0;
    if (u < 9)
        return 0;
    memcpy(&n, q + u - 9, sizeof n);
    *own = (n & OWN_BIT) != 0;
    n &= ~OWN_BIT;
    return n < u ? n : 0;
}

static inline void
untag(const void *p)
{
    int own;
    size_t n = tag_size(p, &own);

    if (!own)
        count_sub(n);
}

/* ---- the front header (TAG_FRONT) ---------------------------------------
 * The block Q the service gets is 16 bytes into the allocator's R: R's
 * first word is the size asked (OWN_BIT for the sampler's own), its
 * second seals it: the key.  free reads the 16 bytes
 * before Q: on glibc's heap the line of the chunk header its own free
 * reads next (and of the list links it writes at R), so the count costs
 * no cache miss; the tail's tag (TAG_TAIL) is in a line nothing else
 * touches at free, a miss per block the service has not read since.
 * A block without the header (from before phs_heap_prepare, or an
 * aligned allocator's, tail-tagged) has glibc's chunk header there
 * (prev_size, size: readable), and its size word, in the seal's place,
 * never has the top bit the key has (the bootstrap arena's blocks, whose
 * 8 bytes before are the dlsym's data before them, are freed after this
 * check fails: the key is random and never leaves the library, about
 * once in 2^63).  The seal was key ^ Q ^ the first word: checking that
 * cost heap_split's loop 7 % against the key alone, whose compare waits
 * only on its own word's load.  Only on glibc's allocator: another's
 * bytes before a block it did not give us may not be mapped.  16 bytes
 * keep malloc's alignment; the aligned allocators keep the tail (a
 * header there would cost the alignment in bytes). */
/* Does Q carry a front header?  *W its first word. */
static inline int
front_of(const void *q, uint64_t *w)
{
    uint64_t h[2];

    memcpy(h, (const char *)q - FRONT, sizeof h);
    *w = h[0];
    return h[1] == seal_key;
}

/* The header into R, the block the allocator gave for N bytes; the
 * service's block, counted unless it is the sampler's (OWN). */
static inline void *
front(void *r, size_t n, int own)
{
    char *q = (char *)r + FRONT;
    uint64_t h[2];

    h[0] = n | (own ? OWN_BIT : 0);
    h[1] = seal_key;
    memcpy(r, h, sizeof h);
    if (!own)
        count_add(n);
    return q;
}

/* Q was sampled: its header says so, and free looks it up in the live
 * table (the other blocks' frees look nowhere: no filter to read). */
#define SAMPLED_BIT ((uint64_t)1 << 62)
static void
front_mark(void *q)
{
    uint64_t w;

    memcpy(&w, (char *)q - FRONT, sizeof w);
    w |= SAMPLED_BIT;
    memcpy((char *)q - FRONT, &w, sizeof w);
}

/* The size word W of a header without its flags. */
#define FRONT_SIZE(w) ((w) & ~(OWN_BIT | SAMPLED_BIT))

/* What the allocator is asked for N with a header (SIZE_MAX, refused,
 * when that overflows, as N would be). */
static inline size_t
ask_front(size_t n)
{
    return n > SIZE_MAX - FRONT ? SIZE_MAX : n + FRONT;
}

/* What the allocator is asked for N: one byte more when tagging (0 when
 * that overflows, which the allocator refuses as the service's N would). */
#define TAGGING (X.on && !IN_INNER)
static inline size_t
ask(size_t n)
{
    size_t more = X.on == TAG_FRONT ? 16 : OWN() ? 9 : 1;

    return !TAGGING ? n : n + more < n ? SIZE_MAX : n + more;
}

/* Probe I for hash H in the live table of 2^K slots: from the hash's
 * top K bits (its best-mixed). */
static inline live *
live_slot(uint64_t h, uint32_t k, uint32_t i)
{
    return &H.live[(1u << k) + (((h >> (64 - k)) + i) & ((1u << k) - 1))];
}

/* Take the block P out of the live table, and its weight off its stack.
 * 0, or -1 when it is not there. */
static int
forget(uintptr_t p)
{
    uint64_t h = hash_addr(p);

    /* at each size it was used at, from the largest: remember() put P at
     * its first free probe of the size then in use */
    for (uint32_t k = atomic_load_explicit(&H.live_k, memory_order_acquire); k >= HEAP_MIN_K; k--)
        for (uint32_t i = 0; i < HEAP_PROBES; i++) {
            live *e = live_slot(h, k, i);
            uintptr_t key = atomic_load_explicit(&e->key, memory_order_acquire);
            uint32_t id;
            int64_t b, o;

            if (key == 0)
                break;
            if (key != p)
                continue;
            id = e->id;
            b = e->bytes;
            o = e->objs;
            if (!atomic_compare_exchange_strong(&e->key, &key, TOMB))
                return -1;
            filter_remove(bucket(h));
            filter_remove(bucket2(h));
            atomic_fetch_sub(&H.live_n, 1);
            atomic_fetch_sub_explicit(&H.stacks[id].inuse_bytes, b, memory_order_relaxed);
            atomic_fetch_sub_explicit(&H.stacks[id].inuse_objs, o, memory_order_relaxed);
            atomic_fetch_sub(&H.inuse, b);
            return 0;
        }
    return -1;
}

/* May P be a live sampled block?  What every free asks: one bit.  (A
 * block sampled on another thread reached this one through the program's
 * own synchronisation, which orders the bit's setting before this load.) */
static inline int
maybe_live(uintptr_t p)
{
    uint64_t h = hash_addr(p);

    return __builtin_expect(bit_set(bucket(h)), 0) && bit_set(bucket2(h));
}

static int
remember(uintptr_t p, uint32_t id, int64_t b, int64_t o)
{
    uint64_t h = hash_addr(p);
    uint32_t k = grown(&H.live_k, atomic_load(&H.live_n), HEAP_LIVE_K);

    for (;;) {
        for (uint32_t i = 0; i < HEAP_PROBES; i++) {
            live *e = live_slot(h, k, i);
            uintptr_t key = atomic_load_explicit(&e->key, memory_order_relaxed);

            if ((key == 0 || key == TOMB) && atomic_compare_exchange_strong(&e->key, &key, p)) {
                e->id = id;
                e->bytes = b;
                e->objs = o;
                filter_add(bucket(h));
                filter_add(bucket2(h));
                atomic_fetch_add(&H.live_n, 1);
                return 0;
            }
        }
        if (k >= HEAP_LIVE_K)
            return -1;
        /* every probe taken at this size: the next */
        atomic_compare_exchange_strong(&H.live_k, &k, k + 1);
        k = atomic_load(&H.live_k);
    }
}

/* A sampled block P of N bytes; PCS[0..DEPTH) its stack.  0 when it is
 * in the live table, -1 when that was full (dropped). */
static int
sampled(void *p, size_t n, const uintptr_t *pcs, uint32_t depth)
{
    uint32_t id = stack_id(pcs, depth);
    double w = phs_heap_weight((double)n, H.mean);
    int64_t b = (int64_t)llround(w * (double)n), o = (int64_t)llround(w * PHS_HEAP_OBJ);
    heap_stack *s = &H.stacks[id];

    atomic_fetch_add_explicit(&s->alloc_n, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->alloc_bytes, (uint64_t)b, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->alloc_objs, (uint64_t)o, memory_order_relaxed);
    atomic_fetch_add(&H.samples, 1);
    /* A record of this address left by a free we did not see is stale:
     * the allocator handed the address out again. */
    if (maybe_live((uintptr_t)p))
        forget((uintptr_t)p);
    if (remember((uintptr_t)p, id, b, o) == 0) {
        int64_t now, copied;

        atomic_fetch_add_explicit(&s->inuse_bytes, b, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->inuse_objs, o, memory_order_relaxed);
        now = atomic_fetch_add(&H.inuse, b) + b;
        copied = atomic_load(&H.peak_copied);
        if (!X.on && now >= copied + (copied / 64 > (int64_t)H.mean ? copied / 64 : (int64_t)H.mean))
            copy_peak(0);
        return 0;
    }
    atomic_fetch_add(&H.dropped, 1);
    return -1;
}

/* Registers of the calling frame, for the walk. */
#if defined(__x86_64__)
#define HERE(pc, sp, fp) __asm__ volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2" \
                                          : "=r"(pc), "=r"(sp), "=r"(fp))
#elif defined(__aarch64__)
#define HERE(pc, sp, fp) __asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29" : "=r"(pc), "=r"(sp), "=r"(fp))
#else
#error "the heap sampler knows x86-64 and aarch64 only"
#endif

/* The countdown reached the block P of N bytes (phs_heap_step decides,
 * seeding the thread's generator first).  Called straight from an
 * interposer and never inlined: the walk starts here, and this frame is
 * dropped, so the leaf is the function the service called (malloc,
 * calloc...); the library's frames under the service's are cut (its
 * handler run from ours, an allocation an interposer of ours makes). */
enum { NOTE_TAIL, NOTE_PY, NOTE_FRONT }; /* what the block is: note_slow's KIND */

static __attribute__((noinline)) void
note_slow(void *p, size_t n, int kind)
{
    int py = kind == NOTE_PY;

    uintptr_t pcs[PHS_MAX_DEPTH], pc, sp, fp;
    uint32_t depth;

    if (T.guard)
        return;
    if (__builtin_expect(!T.seeded, 0)) {
        T.rng = (uint64_t)syscall(SYS_gettid) * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uintptr_t)&T.rng ^
                  (uint64_t)time(NULL);
        if (T.rng == 0)
            T.rng = 1;
        T.left = phs_heap_interval(&T.rng, H.mean);
        T.seeded = 1;
    }
    if (!phs_heap_step(&T.left, &T.rng, H.mean, n))
        return;
    T.guard = 1;
    phs_own_begin();
    HERE(pc, sp, fp);
    depth = phs_unwind_regs(pc, sp, fp, pcs);
    if (depth > 1) {
        depth = phs_own_cut(pcs + 1, 1, depth - 1);
        if (py && depth > 1) {
            /* CPython's object allocator: its caller holds the GIL, and
             * its eval loops become the Python frames they run; the leaf
             * is the interpreter's function that asked (our hook left out) */
            uintptr_t words[PHS_MAX_WORDS];

            atomic_store_explicit(&X.runtime, 1, memory_order_relaxed);

            sampled(p, n, words, phs_py_merge(pcs + 2, depth - 1, words, PHS_MAX_WORDS));
        } else if (!py && sampled(p, n, pcs + 1, depth) == 0 && kind == NOTE_FRONT) {
            front_mark(p); /* its free finds its record by this */
        }
    }
    phs_own_end();
    T.guard = 0;
}

/* The countdown, inlined into each interposer: N bytes off this thread's
 * distance to the next sampled byte (phs_heap_step's first branch); the
 * rest out of line.  What the sampler allocates for itself on a service
 * thread (inside a phs_own section) is not counted. */
#define COUNTDOWN(p, n, kind)                                                                      \
    do {                                                                                           \
        if (atomic_load_explicit(&H.on, memory_order_relaxed)) {                                   \
            int64_t left_ = T.left;                                                                \
            if (__builtin_expect(left_ > 0 && (uint64_t)left_ > (n), 1))                           \
                T.left = left_ - (int64_t)(n);                                                     \
            else                                                                                   \
                note_slow((p), (n), (kind));                                                       \
        }                                                                                          \
    } while (0)
#define NOTE_(p, n, kind)                                                                          \
    do {                                                                                           \
        if ((p) != NULL && !phs_tls_own && !IN_INNER)                                              \
            COUNTDOWN(p, n, kind);                                                                 \
    } while (0)
#define NOTE(p, n) NOTE_(p, n, NOTE_TAIL)

static inline void
release(void *p)
{
    if (maybe_live((uintptr_t)p))
        forget((uintptr_t)p);
}

/* ---- samples taken by a runtime (the JVM's, ph_sampler_java.c) ---------- */

int
phs_heap_on(void)
{
    return atomic_load_explicit(&H.on, memory_order_relaxed);
}

int
phs_heap_record(uintptr_t key, size_t n, const uintptr_t *words, uint32_t depth)
{
    uint64_t dropped;

    if (!phs_heap_on() || depth == 0 || key <= TOMB)
        return -1;
    atomic_store_explicit(&X.runtime, 1, memory_order_relaxed);
    dropped = atomic_load(&H.dropped);
    sampled((void *)key, n, words, depth);
    return atomic_load(&H.dropped) == dropped ? 0 : -1;
}

void
phs_heap_release(uintptr_t key)
{
    release((void *)key);
}

uint32_t
phs_heap_stack(uint32_t i, const uintptr_t **words)
{
    heap_stack *s;

    if (H.stacks == NULL || i >= atomic_load(&H.n_stacks) || i >= HEAP_STACKS)
        return 0;
    s = &H.stacks[i];
    if (!atomic_load_explicit(&s->ready, memory_order_acquire))
        return 0;
    *words = &H.arena[s->off];
    return s->depth;
}

uint32_t
phs_heap_n_stacks(void)
{
    uint32_t n = H.stacks ? atomic_load(&H.n_stacks) : 0;

    return n > HEAP_STACKS ? HEAP_STACKS : n;
}

/* ---- CPython's object allocator ------------------------------------------- */

/* PyMemAllocatorEx (Python 3.5 and later) */
typedef struct py_allocator {
    void *ctx;
    void *(*malloc)(void *ctx, size_t n);
    void *(*calloc)(void *ctx, size_t n, size_t size);
    void *(*realloc)(void *ctx, void *p, size_t n);
    void (*free)(void *ctx, void *p);
} py_allocator;
#define PYMEM_DOMAIN_OBJ 2

enum { PYH_NONE, PYH_ON, PYH_FAILED };
static struct {
    py_allocator orig;       /* the interpreter's own, which ours call */
    _Atomic int state;       /* PYH_* */
    char why[160];
} PYH;

/* The interpreter's own call, its mallocs not sampled again (a block
 * over 512 bytes is PyMem_RawMalloc's, malloc's). */
#define PY_ORIG(call) (T.py++, phs_own_begin(), (call))
#define PY_END() (phs_own_end(), T.py--)

static void *
py_malloc(void *ctx, size_t n)
{
    void *p = PY_ORIG(PYH.orig.malloc(PYH.orig.ctx, n));

    PY_END();
    NOTE_(p, n, NOTE_PY);
    return p;
}

static void *
py_calloc(void *ctx, size_t n, size_t size)
{
    void *p = PY_ORIG(PYH.orig.calloc(PYH.orig.ctx, n, size));
    size_t total;

    PY_END();
    if (!__builtin_mul_overflow(n, size, &total))
        NOTE_(p, total, NOTE_PY);
    return p;
}

static void *
py_realloc(void *ctx, void *old, size_t n)
{
    void *p;

    if (old != NULL)
        release(old);
    p = PY_ORIG(PYH.orig.realloc(PYH.orig.ctx, old, n));
    PY_END();
    NOTE_(p, n, NOTE_PY);
    return p;
}

static void
py_free(void *ctx, void *p)
{
    if (p != NULL)
        release(p);
    PY_ORIG(PYH.orig.free(PYH.orig.ctx, p));
    PY_END();
}

#define PY_SYM(name) dlsym(RTLD_DEFAULT, name)

void
phs_heap_py_hook(void)
{
    int (*initialized)(void), (*finalizing)(void), (*ensure)(void);
    void (*gil_release)(int), (*get)(int, py_allocator *), (*set)(int, py_allocator *);
    py_allocator ours = { NULL, py_malloc, py_calloc, py_realloc, py_free };
    int g;

    if (atomic_load(&PYH.state) != PYH_NONE || !phs_heap_wanted() || !phs_py_active())
        return;
    *(void **)&initialized = PY_SYM("Py_IsInitialized");
    *(void **)&finalizing = PY_SYM("Py_IsFinalizing"); /* 3.13 */
    if (finalizing == NULL)
        *(void **)&finalizing = PY_SYM("_Py_IsFinalizing");
    *(void **)&ensure = PY_SYM("PyGILState_Ensure");
    *(void **)&gil_release = PY_SYM("PyGILState_Release");
    *(void **)&get = PY_SYM("PyMem_GetAllocator");
    *(void **)&set = PY_SYM("PyMem_SetAllocator");
    if (initialized == NULL || ensure == NULL || gil_release == NULL || get == NULL || set == NULL) {
        snprintf(PYH.why, sizeof PYH.why, "the interpreter's C API is not exported to the sampler (dlsym)");
        atomic_store(&PYH.state, PYH_FAILED);
        return;
    }
    if (!initialized() || (finalizing != NULL && finalizing()))
        return; /* not yet, or no longer: the next tick looks again */
    /* As tracemalloc does: swapped with the GIL held, the old one kept
     * and called.  (The writer waits here while a thread holds the GIL
     * in a long C call.) */
    g = ensure();
    get(PYMEM_DOMAIN_OBJ, &PYH.orig);
    if (PYH.orig.malloc != NULL && PYH.orig.free != NULL && PYH.orig.calloc != NULL && PYH.orig.realloc != NULL) {
        set(PYMEM_DOMAIN_OBJ, &ours);
        atomic_store(&PYH.state, PYH_ON);
    } else {
        snprintf(PYH.why, sizeof PYH.why, "the object allocator the interpreter gave back is incomplete");
        atomic_store(&PYH.state, PYH_FAILED);
    }
    gil_release(g);
}

int
phs_heap_py_state(const char **why)
{
    *why = PYH.why;
    return atomic_load(&PYH.state) == PYH_ON ? 1 : atomic_load(&PYH.state) == PYH_FAILED ? -1 : 0;
}

/* ---- the interposers ------------------------------------------------------ */

/* The header of a block the sampler allocates (inside a phs_own
 * section but for CPython's objects, which are counted; T.guard: the
 * writer, a sample's bookkeeping): not sampled. */
static __attribute__((noinline)) void *
front_own(void *r, size_t n, int own)
{
    return front(r, n, T.guard || (own && !T.py));
}

void *phs_malloc(size_t n) PHS_LIBC(malloc);
void *
phs_malloc(size_t n)
{
    void *p;

    if (__builtin_expect(X.on == TAG_FRONT, 1)) {
        /* The common path, on glibc's allocator: the call through (16
         * bytes more), the header (the exact count's add into the
         * thread's change), the countdown to the next sample.  What the
         * sampler allocates (phs_tls_own, volatile: read once; T.guard)
         * is neither counted nor sampled: out of line.
         * Where its cost goes (docs/testing.md, "The common path,
         * measured"): on 16-79 B blocks the header's 16 bytes alone
         * (bench-heap's floor rows) cost about half of it; counting
         * glibc's usable size instead (no header) would cost less but
         * says 16 % more than was asked of such blocks, so the peak
         * would leave massif's 1 %. */
        size_t want;
        int own;

        if (__builtin_expect(__builtin_add_overflow(n, FRONT, &want), 0))
            want = SIZE_MAX; /* refused, as N would be */
        p = R.malloc(want);
        if (__builtin_expect(p == NULL, 0))
            return NULL;
        own = phs_tls_own;
        if (__builtin_expect(own | T.guard, 0))
            return front_own(p, n, own);
        p = front(p, n, 0);
        COUNTDOWN(p, n, NOTE_FRONT);
        return p;
    }
    if (!ready())
        return boot_alloc(n, 16);
    p = R.malloc(ask(n));
    if (p != NULL && TAGGING)
        tag(p, n);
    NOTE(p, n);
    return p;
}

/* Free R, the allocator's block of one of the sampler's own (OWN_BIT).
 * glibc's free of a block it had mapped by itself (IS_MMAPPED) larger
 * than its mmap threshold raises the threshold to that size, and the trim
 * threshold to twice it, for the whole process: after libdw's 5.8 MB
 * section buffer the writer's next blocks up to that size came from its
 * arena, which then never shrank (Python 3.11: 12.3 MB of arena, 1.3 MB
 * in use, 4-6 MB of it resident), and the service's own large blocks
 * stayed in its heap too.  Shrunk first (realloc of a mapped block is an
 * mremap, threshold untouched), the block is a page when freed: below
 * any threshold, unmapped, glibc's counts kept. */
static void
free_own(void *r)
{
    size_t h = 0;

    if (glibc_heap)
        memcpy(&h, (const char *)r - sizeof h, sizeof h);
    if ((h & 2) && (h & ~(size_t)7) > 4096) {
        void *s = R.realloc(r, 1);

        if (s != NULL)
            r = s;
    }
    R.free(r);
}

/* free of a block with a header off the common path: the sampler's or
 * sampled, or a change to flush, or the thread's first free. */
static __attribute__((noinline)) void
free_front(void *p, uint64_t w)
{
    if (w & SAMPLED_BIT)
        forget((uintptr_t)p);
    if (w & OWN_BIT) {
        free_own((char *)p - FRONT);
        return;
    }
    count_sub(FRONT_SIZE(w));
    R.free((char *)p - FRONT);
}

/* free of a block without a header (the tail's way, from before the
 * sampler started, the bootstrap arena's). */
static __attribute__((noinline)) void
free_other(void *p)
{
    if (p == NULL || boot_owns(p))
        return;
    if (!ready())
        return; /* cannot happen: a block came from somewhere */
    if (TAGGING)
        untag(p);
    release(p);
    if (T.guard) /* the writer's (no header to say so outside the heap mode) */
        free_own(p);
    else
        R.free(p);
}

void phs_free(void *p) PHS_LIBC(free);
void
phs_free(void *p)
{
    uint64_t w;
    int64_t v;

    /* The common path: a block with a header (read from the line of
     * glibc's chunk header, which its free reads next), neither sampled
     * (no lookup) nor the sampler's, its size off the thread's change,
     * the call through; no call but that one, so nothing to save. */
    if (__builtin_expect(X.on == TAG_FRONT, 1) && p != NULL && front_of(p, &w)) {
        v = T.pend - (int64_t)w;
        if (__builtin_expect(!(w & (OWN_BIT | SAMPLED_BIT)) && v > -FLUSH_AT && T.keyed, 1)) {
            T.pend = v;
            R.free((char *)p - FRONT);
        } else {
            free_front(p, w);
        }
        return;
    }
    free_other(p);
}

void *phs_calloc(size_t n, size_t size) PHS_LIBC(calloc);
void *
phs_calloc(size_t n, size_t size)
{
    void *p;
    size_t total, want;

    if (!ready()) {
        if (__builtin_mul_overflow(n, size, &total))
            return NULL;
        return boot_alloc(total, 16); /* static: zeroed */
    }
    if (__builtin_mul_overflow(n, size, &total) || !TAGGING)
        return INNER(R.calloc(n, size)); /* (refused when it overflows) */
    if (X.on == TAG_FRONT) {
        int own;

        p = R.calloc(1, ask_front(total));
        if (p == NULL)
            return NULL;
        own = phs_tls_own;
        p = front(p, total, T.guard || (own && !T.py)); /* (the service's bytes zero) */
        if (!own)
            COUNTDOWN(p, total, NOTE_FRONT);
        return p;
    }
    want = ask(total);
    p = INNER(R.calloc(1, want));
    if (p != NULL) {
        tag(p, total);
        NOTE(p, total);
    }
    return p;
}

void *phs_realloc(void *old, size_t n) PHS_LIBC(realloc);
void *
phs_realloc(void *old, size_t n)
{
    void *p;

    if (old != NULL && boot_owns(old)) {
        size_t had = boot_size(old);

        p = malloc(n);
        if (p != NULL)
            memcpy(p, old, had < n ? had : n);
        return p;
    }
    if (!ready())
        return old == NULL ? boot_alloc(n, 16) : NULL;
    if (old != NULL)
        release(old);
    if (X.on == TAG_FRONT) {
        uint64_t w;

        if (old == NULL)
            return malloc(n);
        if (front_of(old, &w)) {
            void *r = (char *)old - FRONT;
            int own;

            if (n == 0) {
                if (w & OWN_BIT) {
                    free_own(r);
                    return NULL; /* as glibc's realloc (r, 0) */
                }
                count_sub(FRONT_SIZE(w));
                return R.realloc(r, 0); /* glibc frees it (and gives NULL) */
            }
            p = R.realloc(r, ask_front(n));
            if (p == NULL)
                return NULL; /* OLD stays, its header with it */
            if (!(w & OWN_BIT))
                count_sub(FRONT_SIZE(w));
            /* the header moved with the bytes: sealed anew, unsampled
             * (its record went with release() above) */
            own = phs_tls_own;
            p = front(p, n, T.guard || (own && !T.py));
            if (!own)
                COUNTDOWN(p, n, NOTE_FRONT);
            return p;
        }
        /* an aligned allocator's or from before: the tail's way */
    }
    if (!TAGGING && old != NULL && n == 0 && T.guard) {
        free_own(old); /* as glibc's realloc (OLD, 0) would, the threshold kept */
        return NULL;
    } else if (!TAGGING) {
        p = INNER(R.realloc(old, n));
    } else if (old != NULL && n == 0) {
        untag(old); /* glibc frees it (and gives NULL) */
        return INNER(R.realloc(old, 0));
    } else {
        int own = 0;
        size_t had = old != NULL ? tag_size(old, &own) : 0, want = ask(n);

        p = INNER(R.realloc(old, want));
        if (p == NULL)
            return NULL; /* OLD stays, its tag with it */
        if (!own)
            count_sub(had);
        tag(p, n);
    }
    NOTE(p, n);
    return p;
}

void *phs_reallocarray(void *old, size_t n, size_t size) PHS_LIBC(reallocarray);
void *
phs_reallocarray(void *old, size_t n, size_t size)
{
    size_t total;

    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(old, total);
}

int phs_posix_memalign(void **out, size_t align, size_t n) PHS_LIBC(posix_memalign);
int
phs_posix_memalign(void **out, size_t align, size_t n)
{
    size_t want;
    int r;

    if (!ready()) {
        *out = boot_alloc(n, align);
        return *out ? 0 : ENOMEM;
    }
    want = ask(n);
    r = INNER(R.posix_memalign(out, align, want));
    if (r == 0 && TAGGING)
        tag(*out, n);
    if (r == 0)
        NOTE(*out, n);
    return r;
}

void *phs_aligned_alloc(size_t align, size_t n) PHS_LIBC(aligned_alloc);
void *
phs_aligned_alloc(size_t align, size_t n)
{
    void *p;
    size_t want;

    if (!ready())
        return boot_alloc(n, align);
    want = ask(n);
    p = INNER(R.aligned_alloc(align, want));
    if (p != NULL && TAGGING)
        tag(p, n);
    NOTE(p, n);
    return p;
}

void *phs_memalign(size_t align, size_t n) PHS_LIBC(memalign);
void *
phs_memalign(size_t align, size_t n)
{
    void *p;
    size_t want;

    if (!ready())
        return boot_alloc(n, align);
    want = ask(n);
    p = INNER(R.memalign(align, want));
    if (p != NULL && TAGGING)
        tag(p, n);
    NOTE(p, n);
    return p;
}

void *phs_valloc(size_t n) PHS_LIBC(valloc);
void *
phs_valloc(size_t n)
{
    void *p;
    size_t want;

    if (!ready())
        return boot_alloc(n, 4096);
    want = ask(n);
    p = INNER(R.valloc(want));
    if (p != NULL && TAGGING)
        tag(p, n);
    NOTE(p, n);
    return p;
}

void *phs_pvalloc(size_t n) PHS_LIBC(pvalloc);
void *
phs_pvalloc(size_t n)
{
    void *p;
    size_t want;

    if (!ready() || R.pvalloc == NULL)
        return boot_alloc((n + 4095) & ~(size_t)4095, 4096);
    want = ask(n);
    p = INNER(R.pvalloc(want));
    if (p != NULL && TAGGING)
        tag(p, n);
    NOTE(p, n);
    return p;
}

size_t phs_malloc_usable_size(void *p) PHS_LIBC(malloc_usable_size);
size_t
phs_malloc_usable_size(void *p)
{
    if (p == NULL)
        return 0;
    if (boot_owns(p))
        return boot_size(p);
    if (!ready() || R.usable == NULL)
        return 0;
    if (X.on) {
        int own;
        uint64_t w;

        if (X.on == TAG_FRONT && front_of(p, &w))
            return FRONT_SIZE(w);
        return tag_size(p, &own); /* the tag's bytes are not the service's */
    }
    return R.usable(p);
}

/* ---- for the writer ------------------------------------------------------- */

/* kB of LEN bytes mapped at P that are resident (mincore, a page
 * vector's worth at a time). */
static uint64_t
resident_kb(const void *p, size_t len)
{
    unsigned char vec[1024];
    size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = 0;

    if (p == NULL || page == 0)
        return 0;
    for (size_t off = 0; off < len; off += sizeof vec * page) {
        size_t n = len - off < sizeof vec * page ? len - off : sizeof vec * page;

        if (mincore((char *)p + off, n, vec) != 0)
            return 0;
        for (size_t i = 0; i < (n + page - 1) / page; i++)
            pages += vec[i] & 1;
    }
    return (uint64_t)(pages * page / 1024);
}

size_t
phs_heap_rows(phs_heap_row *rows, size_t max, phs_heap_totals *t)
{
    uint32_t n = atomic_load(&H.n_stacks);
    size_t k = 0;
    int64_t now_live = 0, peak = 0;
    double k_in = 1, k_pk = 1;

    memset(t, 0, sizeof *t);
    if (H.stacks == NULL)
        return 0;
    t->tables_kb = resident_kb(H.stacks, HEAP_STACKS * sizeof *H.stacks) +
                   resident_kb((const void *)H.index, 2 * HEAP_INDEX * sizeof *H.index) +
                   resident_kb(H.arena, HEAP_ARENA * sizeof *H.arena) +
                   resident_kb(H.live, 2 * HEAP_LIVE * sizeof *H.live) +
                   resident_kb((const void *)H.filter, HEAP_FILTER * sizeof *H.filter);
    if (X.on) {
        /* the exact count: in use at its highest now, the peak is now */
        now_live = atomic_load(&X.live);
        peak = atomic_load(&X.peak);
        if (now_live >= peak) {
            atomic_store(&X.peak, now_live);
            peak = now_live;
            copy_peak(now_live);
        } else if (atomic_load(&H.peak_copied) <= 0) {
            copy_peak(now_live); /* none kept at the peak: the composition now's */
        }
        /* The views' bytes sum to the exact figures, their shares the
         * samples' (a runtime's objects, not malloc's, are estimates
         * only: then the rows stay estimates, the exact count beside). */
        if (!atomic_load(&X.runtime)) {
            int64_t si = atomic_load(&H.inuse), sp = atomic_load(&H.peak_copied);

            k_in = si > 0 && now_live > 0 ? (double)now_live / (double)si : 1;
            k_pk = sp > 0 && peak > 0 ? (double)peak / (double)sp : 1;
        }
    } else if (atomic_load(&H.inuse) > atomic_load(&H.peak_copied)) {
        copy_peak(0); /* in use at its highest now: the peak is now */
    }
    if (n > HEAP_STACKS)
        n = HEAP_STACKS;
    for (uint32_t i = 0; i < n; i++) {
        heap_stack *s = &H.stacks[i];
        phs_heap_row one, *r = k < max ? &rows[k] : &one;
        int64_t ib, io, pb, po;

        if (!atomic_load_explicit(&s->ready, memory_order_acquire) || atomic_load(&s->alloc_n) == 0)
            continue;
        ib = atomic_load(&s->inuse_bytes);
        io = atomic_load(&s->inuse_objs);
        pb = atomic_load(&s->peak_bytes);
        po = atomic_load(&s->peak_objs);
        r->pcs = &H.arena[s->off];
        r->depth = s->depth;
        r->samples = atomic_load(&s->alloc_n);
        r->v[PHS_HEAP_ALLOC_OBJECTS] = (int64_t)llround((double)atomic_load(&s->alloc_objs) / PHS_HEAP_OBJ);
        r->v[PHS_HEAP_ALLOC_SPACE] = (int64_t)atomic_load(&s->alloc_bytes);
        r->v[PHS_HEAP_INUSE_OBJECTS] = io > 0 ? (int64_t)llround((double)io / PHS_HEAP_OBJ) : 0;
        r->v[PHS_HEAP_INUSE_SPACE] = ib > 0 ? (int64_t)llround((double)ib * k_in) : 0;
        r->v[PHS_HEAP_PEAK_OBJECTS] = po > 0 ? (int64_t)llround((double)po / PHS_HEAP_OBJ) : 0;
        r->v[PHS_HEAP_PEAK_SPACE] = pb > 0 ? (int64_t)llround((double)pb * k_pk) : 0;
        for (int v = 0; v < PHS_HEAP_VIEWS; v++)
            t->v[v] += r->v[v];
        t->samples += r->samples;
        if (r != &one)
            k++;
    }
    t->dropped = atomic_load(&H.dropped);
    t->stacks = n;
    t->live = atomic_load(&H.live_n);
    t->mean = H.mean;
    if (X.on && !atomic_load(&X.runtime)) {
        /* the totals are the exact count's even where no sample stands
         * for its bytes (no sampled block in use: no row, not nothing) */
        t->v[PHS_HEAP_INUSE_SPACE] = now_live;
        t->v[PHS_HEAP_PEAK_SPACE] = peak;
    }
    t->exact = X.on;
    t->exact_live = now_live;
    t->exact_peak = peak;
    return k;
}

void
phs_heap_describe(char *buf, size_t len)
{
    snprintf(buf, len, "malloc sampling, one sample per %.0f bytes allocated on average", H.mean);
}
