/* SPDX-License-Identifier: Apache-2.0 */
/* readers/fmt/fmt_internal.h: helpers shared by the formatters. */
#ifndef KEPLER_FMT_INTERNAL_H
#define KEPLER_FMT_INTERNAL_H

#include <stddef.h>

/*
 * Length (1 to 4) of the valid UTF-8 sequence at @p (NUL-terminated), or
 * 0 when it is not one: a stray continuation byte, an overlong form, a
 * surrogate, a code point above U+10FFFF or a sequence cut short.
 */
size_t kepler_fmt_utf8_len(const unsigned char *p);

#endif /* KEPLER_FMT_INTERNAL_H */
