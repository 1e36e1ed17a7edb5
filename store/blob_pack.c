// SPDX-License-Identifier: Apache-2.0
/*
 * Format 2.0: a 1.x-shaped image whose sections past the INFO record are
 * stored as one zstd frame (store/blob_format.h). Packing costs the
 * collector a few ms at 10,000 processes and makes the store about five
 * times smaller (docs/performance.md); unpacking writes the image straight
 * into the buffer the decoded snapshot owns, replacing the copy a 1.x blob
 * needs. A frame from a hostile or damaged store is bounded before it is
 * read: its declared content size must be the image's rest exactly, the
 * image at most BLOB_MAX_IMAGE, and zstd must produce exactly that many
 * bytes (fuzzed by tests/fuzz/fuzz_decode.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "blob_format.h"
#include "kepler/snapshot.h"

int kepler_blob_pack(const uint8_t *image, size_t len, int level, void **ret, size_t *ret_len)
{
	struct blob_pack p;
	struct blob_header *h;
	size_t bound, n;
	uint8_t *out;

	if (len < BLOB_PACKED_HEADER_SIZE)
		return -EINVAL;
	memcpy(&p, image + sizeof(struct blob_header), sizeof(p));
	if (p.packed_at < BLOB_PACKED_HEADER_SIZE || p.packed_at > len)
		return -EINVAL;
	bound = ZSTD_compressBound(len - p.packed_at);
	out = malloc(p.packed_at + bound);
	if (!out)
		return -ENOMEM;
	memcpy(out, image, p.packed_at);
	n = ZSTD_compress(out + p.packed_at, bound, image + p.packed_at, len - p.packed_at, level);
	if (ZSTD_isError(n)) {
		free(out);
		return ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? -ENOMEM : -EINVAL;
	}
	h = (struct blob_header *)out;
	h->checksum = 0;
	h->checksum = kepler_blob_checksum(out, p.packed_at + n);
	*ret = out;
	*ret_len = p.packed_at + n;
	return 0;
}

#define CORRUPT(err, ...) kepler_error_set((err), -EPROTO, "corrupt snapshot: " __VA_ARGS__)

int kepler_blob_unpack(const uint8_t *blob, size_t len, const struct blob_header *h, uint8_t **ret,
		       struct kepler_error *err)
{
	unsigned long long content;
	struct blob_pack p;
	uint8_t *image;
	size_t n;

	if (h->header_size < BLOB_PACKED_HEADER_SIZE || len < BLOB_PACKED_HEADER_SIZE)
		return CORRUPT(err, "a format %u.%u header of %u bytes, need %zu", h->major, h->minor,
			       h->header_size, BLOB_PACKED_HEADER_SIZE);
	memcpy(&p, blob + sizeof(*h), sizeof(p));
	if (h->total_size > BLOB_MAX_IMAGE || p.packed_at < BLOB_PACKED_HEADER_SIZE || p.packed_at > len ||
	    p.packed_at > h->total_size)
		return CORRUPT(err, "packed at %llu of %zu stored bytes, an image of %llu",
			       (unsigned long long)p.packed_at, len, (unsigned long long)h->total_size);
	content = ZSTD_getFrameContentSize(blob + p.packed_at, len - p.packed_at);
	if (content != h->total_size - p.packed_at)
		return CORRUPT(err, "the compressed sections claim %s, the header %llu bytes",
			       content == ZSTD_CONTENTSIZE_ERROR     ? "to be no zstd frame"
			       : content == ZSTD_CONTENTSIZE_UNKNOWN ? "no size"
								     : "another size",
			       (unsigned long long)(h->total_size - p.packed_at));
	image = malloc(h->total_size ? h->total_size : 1);
	if (!image)
		return kepler_error_set(err, -ENOMEM, "out of memory decoding a snapshot");
	memcpy(image, blob, p.packed_at);
	n = ZSTD_decompress(image + p.packed_at, h->total_size - p.packed_at, blob + p.packed_at,
			    len - p.packed_at);
	if (ZSTD_isError(n) || n != h->total_size - p.packed_at) {
		free(image);
		return CORRUPT(err, "the compressed sections do not unpack (%s)",
			       ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short");
	}
	*ret = image;
	return 0;
}
