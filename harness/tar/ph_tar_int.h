/* ph_tar_int.h - what the two halves of the tar module share: extraction
 * (ph_tar.c), its limits (ph_tar_limits.c) and build contexts
 * (ph_tar_context.c).  Not for other floors. */
#ifndef PH_TAR_INT_H
#define PH_TAR_INT_H

#include <stddef.h>
#include <stdint.h>

enum { PH_TAR_NAME_OK, PH_TAR_NAME_EMPTY, PH_TAR_NAME_UNSAFE, PH_TAR_NAME_LONG };

/* Normalise archive name NAME into OUT (OUTSZ bytes): drop empty and `.`
 * components, then STRIP leading ones.  PH_TAR_NAME_EMPTY when nothing is
 * left, PH_TAR_NAME_UNSAFE for an absolute name or any `..` component (even
 * one that would be stripped: such an archive is not what the Engine
 * sends), PH_TAR_NAME_LONG when the result does not fit OUT with its NUL
 * or a component is longer than NAME_MAX. */
int ph_tar_name_normalise(const char *name, int strip, char *out, size_t outsz);

/* V as "16 GiB" when exact in a binary unit, else in bytes; "unlimited"
 * for PH_TAR_NO_LIMIT.  Returns BUF. */
const char *ph_tar_size_text(uint64_t v, char buf[32]);

#endif
