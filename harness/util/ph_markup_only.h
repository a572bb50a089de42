/* ph_markup_only.h - included last by a file that writes HTML or SVG and
 * nothing else: stdio's writers cannot be called from it, so every byte
 * goes through a ph_mw (ph_markup.h), where artifact text is escaped.
 * snprintf into a buffer stays allowed: the buffer can only reach the
 * page through the writer's escaping functions. */
#ifndef PH_MARKUP_ONLY_H
#define PH_MARKUP_ONLY_H

#include "ph_markup.h"

#pragma GCC poison fprintf fputs fputc fwrite printf puts putc putchar vfprintf vprintf dprintf

#endif
