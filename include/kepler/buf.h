/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/buf.h: a growable byte buffer for the formatters. Appends never
 * fail visibly: the first allocation failure sets @error (-ENOMEM) and
 * later appends do nothing, so a formatter checks once at the end.
 */
#ifndef KEPLER_BUF_H
#define KEPLER_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct kepler_buf {
	char *data; /* not NUL-terminated unless kepler_buf_cstr() was called */
	size_t len, cap;
	int error; /* 0, or -ENOMEM after a failed growth */
};

#define KEPLER_BUF_INIT       \
	{                     \
		NULL, 0, 0, 0 \
	}

/* Make room for @extra more bytes. 0 or -ENOMEM (also stored in @error). */
int kepler_buf_reserve(struct kepler_buf *b, size_t extra);
/* The appends' slow paths: growing, or after an error. */
void kepler_buf_add_grow(struct kepler_buf *b, const void *p, size_t n);
void kepler_buf_addc_grow(struct kepler_buf *b, char c);

/* (inline: a formatter appends a few bytes at a time, hundreds of thousands of times a scrape) */
static inline void kepler_buf_add(struct kepler_buf *b, const void *p, size_t n)
{
	if (n && n <= b->cap - b->len && !b->error) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
	} else if (n) {
		kepler_buf_add_grow(b, p, n);
	}
}

static inline void kepler_buf_addc(struct kepler_buf *b, char c)
{
	if (b->len < b->cap && !b->error)
		b->data[b->len++] = c;
	else
		kepler_buf_addc_grow(b, c);
}

void kepler_buf_adds(struct kepler_buf *b, const char *s);
void kepler_buf_vprintf(struct kepler_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
void kepler_buf_printf(struct kepler_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* @v in decimal. */
void kepler_buf_u64(struct kepler_buf *b, uint64_t v);
/*
 * @v / 10^@digits in decimal, exactly, without trailing zeros in the
 * fraction: (1500000, 6) -> "1.5", (7, 6) -> "0.000007", (0, 6) -> "0".
 * @digits at most 19.
 */
void kepler_buf_fixed(struct kepler_buf *b, unsigned __int128 v, unsigned digits);
/* NUL-terminate (not counted in len) and return data, or NULL on error. */
const char *kepler_buf_cstr(struct kepler_buf *b);
/* Empty it, keeping the memory. */
void kepler_buf_reset(struct kepler_buf *b);
/* Free the memory and reset. Accepts a zeroed buffer. */
void kepler_buf_free(struct kepler_buf *b);

#endif /* KEPLER_BUF_H */
