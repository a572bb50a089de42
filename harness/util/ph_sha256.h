/* ph_sha256.h - SHA-256 (FIPS 180-4): the pages' Content-Security-Policy
 * hashes of their own inline scripts, the names of the Docker context
 * store's directories.  Small, pure, thread-safe: nothing linked offers
 * it without a new library. */
#ifndef PH_SHA256_H
#define PH_SHA256_H

#include <stddef.h>

#define PH_SHA256_LEN 32

/* The digest of the N bytes at P into OUT. */
void ph_sha256(const void *p, size_t n, unsigned char out[PH_SHA256_LEN]);

#endif
