/* ph_markup_only.h - included last by a file that writes HTML or SVG and
 * nothing else: stdio's writers cannot be called from it, so every byte
 * goes through a ph_mw (ph_markup.h), where artifact text is escaped.
 * snprintf into a buffer stays allowed: the buffer can only reach the
 * page through the writer's escaping functions.  Markup itself comes from
 * string literals only (PH_MW_RAW, PH_MW_FMT). */
#ifndef PH_MARKUP_ONLY_H
#define PH_MARKUP_ONLY_H

#include "ph_markup.h"

#pragma GCC poison fprintf fputs fputc fwrite printf puts putc putchar vfprintf vprintf dprintf
/* The writer's unescaped entries are reached through PH_MW_RAW and
 * PH_MW_FMT alone, whose string literal is checked; a call by name (a
 * variable's text unescaped) does not build.  The macros, defined before
 * the poison, may still name them. */
#pragma GCC poison ph_mw_raw_ ph_mw_fmt_

#endif
