// SPDX-License-Identifier: Apache-2.0
/* Rendered expositions and their gzip form: see exposition.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>
#include <zlib.h> /* crc32_combine() */

#include "exposition.h"

/*
 * libdeflate's level 1: measured on a 10,000-process page (9.4 MB), it is
 * both faster and smaller than zlib's level 3 that it replaced
 * (docs/performance.md, "gzip"; tests/bench/bench_gzip.c).
 */
#define GZIP_LEVEL 1

/*
 * The text buffer of the last freed exposition, reused by the next
 * rendering: a 15 MB rendering into fresh memory spends most of its time
 * in page faults, into touched memory it does not.
 */
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kepler_buf spare;

static void take_spare(struct kepler_buf *b)
{
	pthread_mutex_lock(&spare_lock);
	*b = spare;
	memset(&spare, 0, sizeof(spare));
	pthread_mutex_unlock(&spare_lock);
	kepler_buf_reset(b);
}

static void give_spare(struct kepler_buf *b)
{
	pthread_mutex_lock(&spare_lock);
	if (!spare.data || spare.cap < b->cap) {
		kepler_buf_free(&spare);
		spare = *b;
		memset(b, 0, sizeof(*b));
	}
	pthread_mutex_unlock(&spare_lock);
	kepler_buf_free(b);
}

int kepler_exposition_new(const struct kepler_snapshot *snap, const struct kepler_prom_options *opts,
			  struct kepler_exposition **ret, struct kepler_error *err)
{
	struct kepler_exposition *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	e->refs = 1;
	pthread_mutex_init(&e->gz_lock, NULL);
	take_spare(&e->text);
	snprintf(e->node_name, sizeof(e->node_name), "%s", opts->node_name ? opts->node_name : "");
	if (snap) {
		e->seq = snap->seq;
		e->wall_ns = snap->wall_ns;
		r = kepler_fmt_prom(snap, opts, &e->text);
	} else {
		kepler_buf_adds(&e->text, "# no snapshot in the store yet\n");
		kepler_fmt_prom_cpu_info(&e->text, opts->cpus);
		kepler_fmt_prom_build_info(&e->text);
		r = e->text.error;
	}
	if (r < 0) {
		kepler_exposition_unref(e);
		return kepler_error_set(err, r, "out of memory rendering the metrics");
	}
	*ret = e;
	return 0;
}

void kepler_exposition_ref(struct kepler_exposition *e)
{
	__atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
}

void kepler_exposition_unref(struct kepler_exposition *e)
{
	if (!e || __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	give_spare(&e->text);
	kepler_buf_free(&e->gz);
	pthread_mutex_destroy(&e->gz_lock);
	free(e);
}

/* Deflate the body into e->gz: raw deflate blocks, the last one final. */
static int compress_body(struct kepler_exposition *e)
{
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(GZIP_LEVEL);
	size_t n;

	if (!c)
		return -ENOMEM;
	if (kepler_buf_reserve(&e->gz, libdeflate_deflate_compress_bound(c, e->text.len)) < 0) {
		libdeflate_free_compressor(c);
		return -ENOMEM;
	}
	n = libdeflate_deflate_compress(c, e->text.data, e->text.len, e->gz.data, e->gz.cap);
	libdeflate_free_compressor(c);
	if (!n)
		return -EIO;
	e->gz.len = n;
	e->crc = (uint32_t)libdeflate_crc32(0, e->text.data, e->text.len);
	return 0;
}

int kepler_exposition_gzip(struct kepler_exposition *e)
{
	int r = 0;

	pthread_mutex_lock(&e->gz_lock);
	if (!e->gz_done) {
		r = compress_body(e);
		if (r == 0)
			e->gz_done = true;
		else
			kepler_buf_reset(&e->gz);
	}
	pthread_mutex_unlock(&e->gz_lock);
	return r;
}

static void put_le32(struct kepler_buf *out, uint32_t v)
{
	unsigned char b[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 24) };

	kepler_buf_add(out, b, 4);
}

void kepler_exposition_gzip_head(const char *head, size_t len, struct kepler_buf *out)
{
	/* ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=0 OS=255 (unknown), as zlib writes it */
	static const unsigned char gzip_header[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff };

	kepler_buf_add(out, gzip_header, sizeof(gzip_header));
	while (len) {
		size_t n = len > 65535 ? 65535 : len;
		/* a stored block, not final: BFINAL=0, BTYPE=00, padded to a byte; LEN, NLEN little-endian */
		unsigned char hdr[5] = { 0x00, (unsigned char)n, (unsigned char)(n >> 8), (unsigned char)~n,
					 (unsigned char)(~n >> 8) };

		kepler_buf_add(out, hdr, sizeof(hdr));
		kepler_buf_add(out, head, n);
		head += n, len -= n;
	}
}

void kepler_exposition_gzip_trailer(const struct kepler_exposition *e, const char *head, size_t len,
				    struct kepler_buf *out)
{
	uint32_t crc_head = (uint32_t)libdeflate_crc32(0, head, len);

	put_le32(out, (uint32_t)crc32_combine(crc_head, e->crc, (z_off_t)e->text.len));
	put_le32(out, (uint32_t)(len + e->text.len));
}
