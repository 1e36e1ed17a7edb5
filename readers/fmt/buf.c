// SPDX-License-Identifier: Apache-2.0
/* The formatters' growable buffer: see kepler/buf.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/buf.h"

int kepler_buf_reserve(struct kepler_buf *b, size_t extra)
{
	size_t cap;
	char *p;

	if (b->error)
		return b->error;
	if (b->len + extra <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + extra)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		return b->error = -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

void kepler_buf_add_grow(struct kepler_buf *b, const void *p, size_t n)
{
	if (n == 0 || kepler_buf_reserve(b, n) < 0)
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void kepler_buf_adds(struct kepler_buf *b, const char *s)
{
	kepler_buf_add(b, s, strlen(s));
}

void kepler_buf_addc_grow(struct kepler_buf *b, char c)
{
	if (kepler_buf_reserve(b, 1) == 0)
		b->data[b->len++] = c;
}

void kepler_buf_vprintf(struct kepler_buf *b, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	if (kepler_buf_reserve(b, 256) < 0)
		return;
	va_copy(again, ap);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	if (n >= 0 && (size_t)n >= b->cap - b->len) {
		if (kepler_buf_reserve(b, (size_t)n + 1) < 0)
			n = -1;
		else
			vsnprintf(b->data + b->len, b->cap - b->len, fmt, again);
	}
	va_end(again);
	if (n >= 0)
		b->len += (size_t)n;
}

void kepler_buf_printf(struct kepler_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kepler_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void kepler_buf_u64(struct kepler_buf *b, uint64_t v)
{
	char tmp[20];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	kepler_buf_add(b, tmp + i, sizeof(tmp) - i);
}

void kepler_buf_fixed(struct kepler_buf *b, unsigned __int128 v, unsigned digits)
{
	static const uint64_t pow10[20] = { 1ULL,
					    10ULL,
					    100ULL,
					    1000ULL,
					    10000ULL,
					    100000ULL,
					    1000000ULL,
					    10000000ULL,
					    100000000ULL,
					    1000000000ULL,
					    10000000000ULL,
					    100000000000ULL,
					    1000000000000ULL,
					    10000000000000ULL,
					    100000000000000ULL,
					    1000000000000000ULL,
					    10000000000000000ULL,
					    100000000000000000ULL,
					    1000000000000000000ULL,
					    10000000000000000000ULL };
	char tmp[64];
	size_t i = sizeof(tmp), end = sizeof(tmp);
	unsigned __int128 whole;
	uint64_t frac, w;

	if (digits > 19)
		digits = 19;
	/* one division, in 64 bits when @v fits (128-bit ones are a library call each) */
	if (v >> 64) {
		whole = v / pow10[digits];
		frac = (uint64_t)(v % pow10[digits]);
	} else {
		whole = (uint64_t)v / pow10[digits];
		frac = (uint64_t)v % pow10[digits];
	}
	/* the fraction, right to left; @end drops its trailing zeros */
	for (unsigned n = 0; n < digits; n++) {
		tmp[--i] = (char)('0' + frac % 10);
		frac /= 10;
	}
	while (end > i && tmp[end - 1] == '0')
		end--;
	if (end > i)
		tmp[--i] = '.';
	else
		end = i; /* a whole number */
	while (whole >> 64) {
		tmp[--i] = (char)('0' + (unsigned)(whole % 10));
		whole /= 10;
	}
	w = (uint64_t)whole;
	do {
		tmp[--i] = (char)('0' + w % 10);
		w /= 10;
	} while (w);
	kepler_buf_add(b, tmp + i, end - i);
}

const char *kepler_buf_cstr(struct kepler_buf *b)
{
	if (kepler_buf_reserve(b, 1) < 0)
		return NULL;
	b->data[b->len] = '\0';
	return b->data;
}

void kepler_buf_reset(struct kepler_buf *b)
{
	b->len = 0;
	b->error = 0;
}

void kepler_buf_free(struct kepler_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->error = 0;
}
