// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <snappy-c.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "push_snappy.h"

int push_snappy_begin(struct push_snappy *z, size_t total)
{
	size_t v = total;

	push_snappy_drop(z);
	/* room for each fragment's bound (32 bytes more than the whole's each) and the length */
	z->cap = snappy_max_compressed_length(total) + 32 * (total / PUSH_SNAPPY_FRAGMENT + 1) + 16;
	if (!(z->out = malloc(z->cap)))
		return z->error = -ENOMEM;
	z->total = total;
	while (v >= 0x80) { /* the block's length: what each fragment's own would say, for them all */
		z->out[z->len++] = (char)(uint8_t)(v | 0x80);
		v >>= 7;
	}
	z->out[z->len++] = (char)(uint8_t)v;
	return 0;
}

/* A fragment's @n bytes at @from compressed onto the block, without the length libsnappy puts before it. */
static void compress_onto(struct push_snappy *z, const char *from, size_t n)
{
	size_t room, skip = 0;

	if (z->error || !n)
		return;
	room = snappy_max_compressed_length(n);
	/*
	 * libsnappy writes the fragment's length (1 to 3 bytes) first: it goes
	 * where the block's tail is, then the elements over it, moved back
	 */
	if (z->len + room > z->cap || snappy_compress(from, n, z->out + z->len, &room) != SNAPPY_OK) {
		z->error = -EIO;
		return;
	}
	while (skip < room && ((uint8_t)z->out[z->len + skip] & 0x80))
		skip++;
	skip++;
	memmove(z->out + z->len, z->out + z->len + skip, room - skip);
	z->len += room - skip;
}

static void flush(struct push_snappy *z)
{
	compress_onto(z, z->frag, z->flen);
	z->flen = 0;
}

void push_snappy_put_slow(struct push_snappy *z, const void *p, size_t n)
{
	const char *from = p;

	if (z->error)
		return;
	if (n > z->total - z->fed) {
		z->error = -EIO;
		return;
	}
	z->fed += n;
	while (n) {
		size_t take = PUSH_SNAPPY_FRAGMENT - z->flen;

		if (take > n)
			take = n;
		memcpy(z->frag + z->flen, from, take);
		z->flen += take;
		from += take;
		n -= take;
		if (z->flen == PUSH_SNAPPY_FRAGMENT)
			flush(z);
	}
}

void push_snappy_put_run(struct push_snappy *z, const void *p, size_t n)
{
	const char *from = p;

	if (z->error)
		return;
	if (n > z->total - z->fed) {
		z->error = -EIO;
		return;
	}
	if (z->flen) { /* the fragment begun filled first */
		size_t take = PUSH_SNAPPY_FRAGMENT - z->flen < n ? PUSH_SNAPPY_FRAGMENT - z->flen : n;

		push_snappy_put_slow(z, from, take);
		from += take;
		n -= take;
	}
	for (; n >= PUSH_SNAPPY_FRAGMENT && !z->error;
	     from += PUSH_SNAPPY_FRAGMENT, n -= PUSH_SNAPPY_FRAGMENT) {
		compress_onto(z, from, PUSH_SNAPPY_FRAGMENT);
		z->fed += PUSH_SNAPPY_FRAGMENT;
	}
	if (n)
		push_snappy_put_slow(z, from, n);
}

int push_snappy_end(struct push_snappy *z, void **ret, size_t *ret_len)
{
	int r;

	flush(z);
	if (!z->error && z->fed != z->total)
		z->error = -EIO;
	if ((r = z->error) == 0) {
		*ret = z->out;
		*ret_len = z->len;
		z->out = NULL;
	}
	push_snappy_drop(z);
	return r;
}

void push_snappy_drop(struct push_snappy *z)
{
	free(z->out);
	z->out = NULL;
	z->len = z->cap = z->total = z->fed = z->flen = 0;
	z->error = 0;
}
