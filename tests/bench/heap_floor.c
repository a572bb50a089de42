/* heap_floor: what an interposer of malloc costs before it does any work,
 * for tests/bench/bench-heap.sh's rows "floor".  Preloaded into
 * heap_alloc only (it calls malloc, calloc, realloc and free, no aligned
 * allocator: this library does not interpose those).
 *
 * Built twice: plain, the call through to glibc's own functions and
 * nothing else; with -DHEADER, also a 16-byte header before each block
 * (the size asked), as the heap sampler's exact count keeps on glibc:
 * what those 16 bytes cost a program of small blocks (a larger chunk per
 * block, glibc's size classes moved), with none of the sampler's logic.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);
void *malloc(size_t n);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t n);
void free(void *p);

#ifdef HEADER
#define FRONT 16
#else
#define FRONT 0
#endif

static void *
front(char *r, size_t n)
{
    if (r == NULL)
        return NULL;
#ifdef HEADER
    memcpy(r, &n, sizeof n);
#else
    (void)n;
#endif
    return r + FRONT;
}

void *
malloc(size_t n)
{
    return n > SIZE_MAX - FRONT ? NULL : front(__libc_malloc(n + FRONT), n);
}

void *
calloc(size_t n, size_t size)
{
    size_t t;

    if (__builtin_mul_overflow(n, size, &t) || t > SIZE_MAX - FRONT)
        return NULL;
    return front(__libc_calloc(1, t + FRONT), t);
}

void *
realloc(void *p, size_t n)
{
    if (p == NULL)
        return malloc(n);
    if (n > SIZE_MAX - FRONT)
        return NULL;
    return front(__libc_realloc((char *)p - FRONT, n + FRONT), n);
}

void
free(void *p)
{
    if (p != NULL)
        __libc_free((char *)p - FRONT);
}
