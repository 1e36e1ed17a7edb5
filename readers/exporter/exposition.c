// SPDX-License-Identifier: Apache-2.0
/* Rendered expositions and their gzip form: see exposition.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "exposition.h"

/* Fast rather than small: the body is mostly repeated label text. */
#define GZIP_LEVEL 3

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

/* Deflate the body into e->gz with a gzip header, ending on a sync flush. */
static int compress_body(struct kepler_exposition *e)
{
	z_stream z;
	int zr;

	memset(&z, 0, sizeof(z));
	/* 15 + 16: a gzip wrapper; we write the trailer ourselves, per scrape */
	if (deflateInit2(&z, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	if (kepler_buf_reserve(&e->gz, deflateBound(&z, e->text.len) + 64) < 0) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)e->text.data;
	z.avail_in = (uInt)e->text.len;
	z.next_out = (Bytef *)e->gz.data;
	z.avail_out = (uInt)e->gz.cap;
	zr = deflate(&z, Z_SYNC_FLUSH);
	e->gz.len = e->gz.cap - z.avail_out;
	deflateEnd(&z);
	e->crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)e->text.data, (uInt)e->text.len);
	return zr == Z_OK && z.avail_in == 0 ? 0 : -EIO;
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

void kepler_exposition_gzip_tail(const struct kepler_exposition *e, const char *tail, size_t len,
				 struct kepler_buf *out)
{
	uint32_t crc_tail = (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)tail, (uInt)len);
	/* a stored block: BFINAL=1, BTYPE=00, padded to a byte; LEN, NLEN little-endian */
	unsigned char hdr[5] = { 0x01, (unsigned char)len, (unsigned char)(len >> 8), (unsigned char)~len,
				 (unsigned char)(~len >> 8) };

	kepler_buf_add(out, hdr, sizeof(hdr));
	kepler_buf_add(out, tail, len);
	put_le32(out, (uint32_t)crc32_combine(e->crc, crc_tail, (z_off_t)len));
	put_le32(out, (uint32_t)(e->text.len + len));
}
