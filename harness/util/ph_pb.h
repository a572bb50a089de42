/* ph_pb.h - writing protocol buffers by hand: a growable buffer and the
 * wire format's varints, tags and length-delimited fields
 * (https://protobuf.dev/programming-guides/encoding/).  Enough for the
 * messages profharness writes itself (pprof's profile.proto); no schema,
 * no reflection, no reading.
 *
 * Errors are sticky: an allocation that fails sets `oom` and every later
 * call does nothing, so a writer checks once at the end.  Pure: libc
 * only, no global state. */
#ifndef PH_PB_H
#define PH_PB_H

#include <stddef.h>
#include <stdint.h>

typedef struct ph_pb {
    unsigned char *d;
    size_t len, cap;
    int oom;
} ph_pb;

void ph_pb_raw(ph_pb *b, const void *p, size_t n);
void ph_pb_varint(ph_pb *b, uint64_t v);
/* A varint field; 0 is the default and is left out, as protobuf does. */
void ph_pb_uint(ph_pb *b, unsigned field, uint64_t v);
/* A length-delimited field: bytes, a string, a packed list, a message. */
void ph_pb_bytes(ph_pb *b, unsigned field, const void *p, size_t n);
/* M as the message FIELD of B; M is emptied for reuse (its oom carries over). */
void ph_pb_msg(ph_pb *b, unsigned field, ph_pb *m);
void ph_pb_free(ph_pb *b);

#endif
