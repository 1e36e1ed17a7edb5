// SPDX-License-Identifier: Apache-2.0
/* UTF-8 validation for the formatters: see fmt_internal.h. */
#include "fmt_internal.h"

/* Length of the valid UTF-8 sequence at @p, or 0 (overlong, surrogate, > U+10FFFF, cut). */
size_t kepler_fmt_utf8_len(const unsigned char *p)
{
#define CONT(b) (((b)&0xC0) == 0x80)
	unsigned c = p[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		return CONT(p[1]) ? 2 : 0;
	if (c >= 0xE0 && c <= 0xEF) {
		if (!CONT(p[1]) || !CONT(p[2]) || (c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F))
			return 0;
		return 3;
	}
	if (c >= 0xF0 && c <= 0xF4) {
		if (!CONT(p[1]) || !CONT(p[2]) || !CONT(p[3]) || (c == 0xF0 && p[1] < 0x90) ||
		    (c == 0xF4 && p[1] > 0x8F))
			return 0;
		return 4;
	}
	return 0;
#undef CONT
}
