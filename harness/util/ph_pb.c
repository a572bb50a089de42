/* ph_pb.c - writing protocol buffers by hand (see ph_pb.h). */
#include "ph_pb.h"

#include <stdlib.h>
#include <string.h>

void
ph_pb_raw(ph_pb *b, const void *p, size_t n)
{
    if (b->oom || n == 0)
        return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 256;
        unsigned char *nd;

        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->oom = 1;
                return;
            }
            cap *= 2;
        }
        if ((nd = realloc(b->d, cap)) == NULL) {
            b->oom = 1;
            return;
        }
        b->d = nd;
        b->cap = cap;
    }
    memcpy(b->d + b->len, p, n);
    b->len += n;
}

void
ph_pb_varint(ph_pb *b, uint64_t v)
{
    unsigned char t[10];
    size_t n = 0;

    do {
        t[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    ph_pb_raw(b, t, n);
}

void
ph_pb_uint(ph_pb *b, unsigned field, uint64_t v)
{
    if (v == 0)
        return;
    ph_pb_varint(b, (uint64_t)field << 3);
    ph_pb_varint(b, v);
}

void
ph_pb_bytes(ph_pb *b, unsigned field, const void *p, size_t n)
{
    ph_pb_varint(b, (uint64_t)field << 3 | 2);
    ph_pb_varint(b, n);
    ph_pb_raw(b, p, n);
}

void
ph_pb_msg(ph_pb *b, unsigned field, ph_pb *m)
{
    ph_pb_bytes(b, field, m->d, m->len);
    b->oom |= m->oom;
    m->len = 0;
}

void
ph_pb_free(ph_pb *b)
{
    free(b->d);
    memset(b, 0, sizeof *b);
}
