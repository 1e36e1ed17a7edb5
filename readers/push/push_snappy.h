/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/push_snappy.h: a snappy block (a remote-write body) written
 * from pieces, without the whole input ever held at once. Snappy
 * compresses its input as independent 64 KiB fragments (each its own hash
 * table: no match reaches into another), and a block is the input's length
 * as a varint, then each fragment's compressed elements. So each fragment
 * is filled from the pieces given, compressed by libsnappy as soon as it is
 * full, its own length prefix dropped: the block is byte for byte what
 * snappy_compress() makes of the whole input (tests/readers/test_push_snappy.c),
 * and a 14 MB WriteRequest (10,000 processes) goes through one 64 KiB
 * buffer that stays in cache instead of a copy of it all.
 */
#ifndef KEPLER_PUSH_SNAPPY_H
#define KEPLER_PUSH_SNAPPY_H

#include <stddef.h>
#include <string.h>

#define PUSH_SNAPPY_FRAGMENT 65536 /* snappy's block size (snappy::kBlockSize) */

struct push_snappy {
	char *out;         /* the block: malloc'ed, cap bytes */
	size_t len, cap;   /* written to out; its size (each fragment's bound: never reached) */
	size_t total, fed; /* the input's length, as announced; given so far */
	size_t flen;       /* in frag */
	int error;
	char frag[PUSH_SNAPPY_FRAGMENT];
};

/* A block of @total bytes of input begins (out allocated, the length written). -ENOMEM. */
int push_snappy_begin(struct push_snappy *z, size_t total);
/* @n more bytes of input (an error, or more than announced: said by push_snappy_end()). */
void push_snappy_put_slow(struct push_snappy *z, const void *p, size_t n);
/* (inline where they fit in the fragment without filling it: a request puts 200,000 pieces) */
static inline void push_snappy_put(struct push_snappy *z, const void *p, size_t n)
{
	if (n < PUSH_SNAPPY_FRAGMENT && z->flen + n < PUSH_SNAPPY_FRAGMENT && n <= z->total - z->fed &&
	    !z->error) {
		memcpy(z->frag + z->flen, p, n);
		z->flen += n;
		z->fed += n;
		return;
	}
	push_snappy_put_slow(z, p, n);
}
/*
 * @n more bytes of input that lie together: push_snappy_put()'s bytes, but
 * each whole fragment among them compressed where it lies, not copied.
 */
void push_snappy_put_run(struct push_snappy *z, const void *p, size_t n);
/*
 * The block, in *@ret (malloc'ed: the caller's to free), *@ret_len bytes.
 * -EIO: not the length announced, or libsnappy refused; -ENOMEM. Either
 * way @z holds nothing after.
 */
int push_snappy_end(struct push_snappy *z, void **ret, size_t *ret_len);
/* What a block begun and not ended holds freed. */
void push_snappy_drop(struct push_snappy *z);

#endif
