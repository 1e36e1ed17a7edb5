// SPDX-License-Identifier: Apache-2.0
/*
 * Formats 2.x, 3.x and 4.x: a 1.x-shaped image whose sections past the INFO
 * record are stored as one zstd frame (store/blob_format.h). Format 3.0
 * first turns every section of fixed-width records (record_size a multiple
 * of 8) into columns: word c of record i is stored in column c as its
 * difference from word c of record i - 1, in as few bytes as that column
 * needs. Counters that grow together,
 * ascending offsets into the string table, PIDs listed in order and runs of
 * idle processes become small or zero differences, which zstd stores in a
 * few bits: a 10,000-process snapshot is several times smaller than as 2.x
 * and unpacks faster (docs/performance.md). The string table and anything
 * else stays as it is. Format 4.0 packs the differences in bits instead,
 * by blocks of 64 records (store/blob_blocks.c): zstd has half the bytes
 * to make, and unpacking takes half the time.
 *
 * A frame from a hostile or damaged store is bounded before it is read:
 * its declared content size must be the image's rest exactly, the image at
 * most BLOB_MAX_IMAGE, zstd must produce exactly that many bytes, and the
 * sections turned back into rows must lie within the image without
 * overlapping (fuzzed by tests/fuzz/fuzz_decode.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "blob_format.h"
#include "kepler/snapshot.h"

#define CORRUPT(err, ...) kepler_error_set((err), -EPROTO, "corrupt snapshot: " __VA_ARGS__)

/*
 * The sections 3.x and 4.x store as columns (4.x: records of at most
 * BLOB_BLOCK_MAX_WORDS words), by offset; -EPROTO if two overlap.
 */
static int columnar_sections(const uint8_t *image, uint64_t packed_at, uint64_t total,
			     struct blob_section *ret, size_t *ret_n)
{
	struct blob_header h;
	size_t n = 0;

	memcpy(&h, image, sizeof(h));
	if (h.nsections > BLOB_MAX_SECTIONS || h.section_size < sizeof(struct blob_section) ||
	    (uint64_t)h.header_size + (uint64_t)h.nsections * h.section_size > packed_at)
		return -EPROTO;
	for (uint32_t i = 0; i < h.nsections; i++) {
		struct blob_section s;
		uint64_t bytes;
		size_t k;

		memcpy(&s, image + h.header_size + (size_t)i * h.section_size, sizeof(s));
		if (s.record_size == 0 || s.record_size % 8 || s.count < 2 || s.offset < packed_at ||
		    (h.major >= BLOB_BLOCKS_MAJOR && s.record_size / 8 > BLOB_BLOCK_MAX_WORDS) ||
		    s.offset > total || __builtin_mul_overflow(s.count, (uint64_t)s.record_size, &bytes) ||
		    bytes > total - s.offset)
			continue; /* stored as it is */
		for (k = n; k > 0 && ret[k - 1].offset > s.offset; k--)
			ret[k] = ret[k - 1];
		ret[k] = s;
		n++;
	}
	for (size_t k = 1; k < n; k++)
		if (ret[k - 1].offset + ret[k - 1].count * ret[k - 1].record_size > ret[k].offset)
			return -EPROTO;
	*ret_n = n;
	return 0;
}

/*
 * One zstd context of each kind per thread, kept: making one per call
 * costs more than unpacking a 10,000-process snapshot (its tables are
 * allocated and cleared each time). Freed when the thread ends.
 */
static pthread_key_t cctx_key, dctx_key;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;
static bool keys_ok;

static void free_cctx(void *c)
{
	ZSTD_freeCCtx(c);
}

static void free_dctx(void *c)
{
	ZSTD_freeDCtx(c);
}

static void make_keys(void)
{
	keys_ok = pthread_key_create(&cctx_key, free_cctx) == 0 &&
		  pthread_key_create(&dctx_key, free_dctx) == 0;
}

/* This thread's compression context, NULL without memory. */
static ZSTD_CCtx *thread_cctx(void)
{
	ZSTD_CCtx *c;

	pthread_once(&keys_once, make_keys);
	if (!keys_ok)
		return NULL;
	c = pthread_getspecific(cctx_key);
	if (!c && (c = ZSTD_createCCtx()) && pthread_setspecific(cctx_key, c) != 0) {
		ZSTD_freeCCtx(c);
		c = NULL;
	}
	return c;
}

static ZSTD_DCtx *thread_dctx(void)
{
	ZSTD_DCtx *c;

	pthread_once(&keys_once, make_keys);
	if (!keys_ok)
		return NULL;
	c = pthread_getspecific(dctx_key);
	if (!c && (c = ZSTD_createDCtx()) && pthread_setspecific(dctx_key, c) != 0) {
		ZSTD_freeDCtx(c);
		c = NULL;
	}
	return c;
}

/* Signed differences as unsigned, small either way: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ... */
static inline uint64_t zigzag(uint64_t d)
{
	return (d << 1) ^ (uint64_t) - (int64_t)(d >> 63);
}

static inline uint64_t unzigzag(uint64_t z)
{
	return (z >> 1) ^ (uint64_t) - (int64_t)(z & 1);
}

static unsigned bytes_for(uint64_t v)
{
	return v ? (unsigned)(71 - __builtin_clzll(v)) / 8 : 0;
}

/* The difference between word @c of row @i and of row @i - 1, zigzagged. */
static inline uint64_t step_of(const uint8_t *rows, uint64_t i, size_t w, size_t c)
{
	return zigzag(blob_load64(rows + (i * w + c) * 8) - blob_load64(rows + ((i - 1) * w + c) * 8));
}

/* rows_to_columns() for records of any width, a column at a time. */
static uint8_t *rows_to_columns_any(uint8_t *out, const uint8_t *rows, uint64_t n, size_t w)
{
	uint8_t *widths = out;

	out += w;
	for (size_t c = 0; c < w; c++) {
		uint64_t most = 0;

		for (uint64_t i = 1; i < n; i++)
			most |= step_of(rows, i, w, c);
		widths[c] = (uint8_t)bytes_for(most);
	}
	for (size_t c = 0; c < w; c++) {
		blob_store64(out, blob_load64(rows + c * 8));
		out += 8;
		for (uint64_t i = 1; i < n; i++) {
			uint64_t z = step_of(rows, i, w, c);

			memcpy(out, &z, widths[c]);
			out += widths[c];
		}
	}
	return out;
}

#define ROW_WORDS 32
#define ROW_BLOCK 64

/*
 * One section of @n rows of @w words as columns: @w width bytes, then for
 * each column its first word (8 bytes) and the n - 1 differences from one
 * row to the next, zigzagged, in that column's width (the fewest bytes that
 * hold the largest; 0 when the column never changes). Returns the end.
 * (Columns of 32-bit lanes made 10,000 processes' columns 11 % smaller but
 * took 27 % longer to unpack: twice the values to sum.)
 *
 * The widths come from one pass over the rows in order; the differences
 * are then written a block of rows at a time (in L1), column by column
 * within it, each as a whole 8-byte word of which the column's width
 * counts: the bytes past it are overwritten by the next difference, or by
 * the next column's first word, written last, or lie past the end (the
 * output has room: columns_bound()).
 */
static uint8_t *rows_to_columns(uint8_t *out, const uint8_t *rows, uint64_t n, size_t w)
{
	uint64_t most[ROW_WORDS] = { 0 };
	uint8_t *widths = out, *col[ROW_WORDS], *head[ROW_WORDS];
	size_t stride = w * 8;

	if (w > ROW_WORDS)
		return rows_to_columns_any(out, rows, n, w);
	for (uint64_t i = 1; i < n; i++) {
		const uint8_t *r = rows + i * stride;

		for (size_t c = 0; c < w; c++)
			most[c] |= zigzag(blob_load64(r + c * 8) - blob_load64(r - stride + c * 8));
	}
	out += w;
	for (size_t c = 0; c < w; c++) {
		widths[c] = (uint8_t)bytes_for(most[c]);
		head[c] = out;
		col[c] = out + 8;
		out += 8 + (n ? n - 1 : 0) * widths[c];
	}
	for (uint64_t from = 1; from < n; from += ROW_BLOCK) {
		uint64_t to = n - from < ROW_BLOCK ? n : from + ROW_BLOCK;

		for (size_t c = 0; c < w; c++) {
			const uint8_t *at = rows + from * stride + c * 8;
			uint8_t *dst = col[c];
			size_t wd = widths[c];

			for (uint64_t i = from; i < to; i++, at += stride, dst += wd)
				blob_store64(dst, zigzag(blob_load64(at) - blob_load64(at - stride)));
			col[c] = dst;
		}
	}
	for (size_t c = 0; c < w; c++)
		blob_store64(head[c], blob_load64(rows + c * 8));
	return out;
}

static inline uint64_t word_mask(uint8_t width)
{
	return width >= 8 ? UINT64_MAX : (1ULL << (8 * width)) - 1;
}

/*
 * columns_to_rows() for records of at most ROW_WORDS words: a block of
 * rows at a time (in L1), column by column within it, each column's
 * running sum in a register.
 */
static void rows_from(uint8_t *rows, const uint8_t *in, uint64_t n, size_t w, const uint8_t *widths)
{
	const uint8_t *col[ROW_WORDS];
	uint64_t mask[ROW_WORDS], sum[ROW_WORDS];
	size_t stride = w * 8;

	for (size_t c = 0; c < w; c++) {
		col[c] = in + 8;
		mask[c] = word_mask(widths[c]);
		sum[c] = blob_load64(in);
		blob_store64(rows + c * 8, sum[c]);
		in += 8 + (n - 1) * widths[c];
	}
	for (uint64_t from = 1; from < n; from += ROW_BLOCK) {
		uint64_t to = n - from < ROW_BLOCK ? n : from + ROW_BLOCK;

		for (size_t c = 0; c < w; c++) {
			const uint8_t *src = col[c];
			uint64_t v = sum[c], m = mask[c];
			uint8_t *at = rows + from * stride + c * 8;
			size_t wd = widths[c];

			for (uint64_t i = from; i < to; i++, at += stride, src += wd) {
				v += unzigzag(blob_load64(src) & m);
				blob_store64(at, v);
			}
			col[c] = src;
			sum[c] = v;
		}
	}
}

/*
 * The inverse, from @in (@left bytes, readable 8 bytes past them) into
 * @rows: running sums of each column. NULL if the columns claim more bytes
 * than there are or a width over 8.
 */
static const uint8_t *columns_to_rows(uint8_t *rows, const uint8_t *in, uint64_t left, uint64_t n, size_t w)
{
	const uint8_t *widths = in;
	uint64_t need = w;

	if (w > left)
		return NULL;
	for (size_t c = 0; c < w; c++) {
		if (widths[c] > 8)
			return NULL;
		need += 8 + (n - 1) * widths[c]; /* n, w and widths bounded by the image: no overflow */
		if (need > left)
			return NULL;
	}
	in += w;
	if (w <= ROW_WORDS) {
		rows_from(rows, in, n, w, widths);
		return in + (need - w);
	}
	for (size_t c = 0; c < w; c++) { /* a record wider than any this version writes: column by column */
		uint64_t v = blob_load64(in), mask = word_mask(widths[c]);
		uint8_t *at = rows + c * 8;

		in += 8;
		blob_store64(at, v);
		for (uint64_t i = 1; i < n; i++) {
			v += unzigzag(blob_load64(in) & mask);
			in += widths[c];
			at += w * 8;
			blob_store64(at, v);
		}
	}
	return in;
}

/* The image's packed part @content (@len bytes from @base) with sections @sec as columns, into @out. */
static size_t to_columns(uint8_t *out, const uint8_t *content, uint64_t base, uint64_t len,
			 const struct blob_section *sec, size_t n, bool blocks)
{
	uint8_t *o = out;
	uint64_t at = base;

	for (size_t k = 0; k < n; k++) {
		memcpy(o, content + (at - base), sec[k].offset - at);
		o += sec[k].offset - at;
		o = (blocks ? kepler_blob_rows_to_blocks : rows_to_columns)(
			o, content + (sec[k].offset - base), sec[k].count, sec[k].record_size / 8);
		at = sec[k].offset + sec[k].count * sec[k].record_size;
	}
	memcpy(o, content + (at - base), base + len - at);
	return (size_t)(o - out) + (base + len - at);
}

/* The most a 3.x frame may hold for a packed part of @len bytes: a width byte per word of a row, at most. */
static uint64_t columns_bound(uint64_t len)
{
	return len + len / 8 + 16;
}

/*
 * Level KEPLER_PACK_STORED: a zstd frame that holds the bytes as they are
 * (RFC 8878 section 3.1.1: the magic number; a header that gives a window
 * of 128 KiB and the content size in 8 bytes; then raw blocks of at most
 * the window, behind a 3-byte header each, the last one marked). Every
 * zstd decoder reads it: a reader cannot tell it from a compressed frame
 * but by its size. Returns the frame's length; @out has room for
 * stored_frame_bound(@size).
 */
#define RAW_BLOCK_MAX (128u * 1024)
#define FRAME_HEADER_SIZE (4 + 1 + 1 + 8)

static size_t stored_frame_bound(size_t size)
{
	return FRAME_HEADER_SIZE + 3 * (size / RAW_BLOCK_MAX + 1) + size;
}

static uint8_t *put_le(uint8_t *o, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		*o++ = (uint8_t)(v >> (8 * i));
	return o;
}

static size_t stored_frame(uint8_t *out, const uint8_t *in, size_t size)
{
	uint8_t *o = put_le(out, ZSTD_MAGICNUMBER, 4);

	*o++ = 3 << 6; /* Frame_Header_Descriptor: Frame_Content_Size_Flag 3 (8 bytes), nothing else */
	*o++ = 7 << 3; /* Window_Descriptor: Exponent 7 (1 << (10 + 7) bytes), Mantissa 0 */
	o = put_le(o, size, 8);
	do {
		size_t n = size < RAW_BLOCK_MAX ? size : RAW_BLOCK_MAX;

		/* Last_Block in bit 0, Block_Type 0 (Raw_Block) in bits 1-2, Block_Size above */
		o = put_le(o, (uint64_t)n << 3 | (n == size), 3);
		memcpy(o, in, n);
		o += n;
		in += n;
		size -= n;
	} while (size);
	return (size_t)(o - out);
}

int kepler_blob_pack_tail(const uint8_t *image, size_t len, const uint8_t *tail, size_t tail_len, int level,
			  void **ret, size_t *ret_len)
{
	struct blob_section sec[BLOB_MAX_SECTIONS];
	uint8_t *out, *content = NULL;
	const uint8_t *in;
	struct blob_header *h;
	struct blob_pack p;
	size_t bound, n, size, nsec = 0;
	ZSTD_CCtx *cctx;

	if (len < BLOB_PACKED_HEADER_SIZE)
		return -EINVAL;
	memcpy(&p, image + sizeof(struct blob_header), sizeof(p));
	if (p.packed_at < BLOB_PACKED_HEADER_SIZE || p.packed_at > len)
		return -EINVAL;
	size = len - p.packed_at;
	if (((const struct blob_header *)image)->major >= BLOB_COLUMNS_MAJOR) {
		/* columns only from @image: a section reaching into the tail stays as it is */
		if (columnar_sections(image, p.packed_at, len, sec, &nsec) < 0)
			return -EINVAL;
		content = malloc(columns_bound(size) + tail_len);
		if (!content)
			return -ENOMEM;
		size = to_columns(content, image + p.packed_at, p.packed_at, size, sec, nsec,
				  ((const struct blob_header *)image)->major >= BLOB_BLOCKS_MAJOR);
	} else if (tail_len) {
		content = malloc(size + tail_len);
		if (!content)
			return -ENOMEM;
		memcpy(content, image + p.packed_at, size);
	}
	if (tail_len)
		memcpy(content + size, tail, tail_len);
	size += tail_len;
	in = content ? content : image + p.packed_at;
	if (level == KEPLER_PACK_AUTO)
		level = size < KEPLER_PACK_STORED_BELOW ? KEPLER_PACK_STORED : 1;
	cctx = level == KEPLER_PACK_STORED ? NULL : thread_cctx();
	bound = level == KEPLER_PACK_STORED ? stored_frame_bound(size) : ZSTD_compressBound(size);
	out = malloc(p.packed_at + bound);
	if (!out || (!cctx && level != KEPLER_PACK_STORED)) {
		free(out);
		free(content);
		return -ENOMEM;
	}
	memcpy(out, image, p.packed_at);
	if (level == KEPLER_PACK_STORED)
		n = stored_frame(out + p.packed_at, in, size);
	else
		n = ZSTD_compressCCtx(cctx, out + p.packed_at, bound, in, size, level);
	free(content);
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

int kepler_blob_pack(const uint8_t *image, size_t len, int level, void **ret, size_t *ret_len)
{
	return kepler_blob_pack_tail(image, len, NULL, 0, level, ret, ret_len);
}

/* Decompress the frame at @blob's @packed_at into @dst, exactly @size bytes. */
static int inflate(uint8_t *dst, size_t size, const uint8_t *blob, size_t len, uint64_t packed_at,
		   struct kepler_error *err)
{
	ZSTD_DCtx *dctx = thread_dctx();
	size_t n;

	if (!dctx)
		return kepler_error_set(err, -ENOMEM, "out of memory decoding a snapshot");
	n = ZSTD_decompressDCtx(dctx, dst, size, blob + packed_at, len - packed_at);
	if (ZSTD_isError(n) || n != size)
		return CORRUPT(err, "the compressed sections do not unpack (%s)",
			       ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short");
	return 0;
}

/* The inverse of to_columns(): @in (@size bytes) into the image's packed part @dst (@len bytes from @base). */
static int from_columns(uint8_t *dst, const uint8_t *in, uint64_t size, uint64_t base, uint64_t len,
			const struct blob_section *sec, size_t n, bool blocks, struct kepler_error *err)
{
	const uint8_t *end = in + size;
	uint64_t at = base;

	for (size_t k = 0; k < n; k++) {
		uint64_t gap = sec[k].offset - at;

		if (gap > (uint64_t)(end - in))
			return CORRUPT(err, "the columns of section %u are short", sec[k].id);
		memcpy(dst + (at - base), in, gap);
		in = (blocks ? kepler_blob_blocks_to_rows : columns_to_rows)(
			dst + (sec[k].offset - base), in + gap, (uint64_t)(end - in) - gap, sec[k].count,
			sec[k].record_size / 8);
		if (!in)
			return CORRUPT(err, "the columns of section %u are short or too wide", sec[k].id);
		at = sec[k].offset + sec[k].count * sec[k].record_size;
	}
	if ((uint64_t)(end - in) != base + len - at)
		return CORRUPT(err, "the columns hold %llu bytes more or less than the image",
			       (unsigned long long)(end - in));
	memcpy(dst + (at - base), in, base + len - at);
	return 0;
}

/* Formats 3.x and 4.x: the frame holds columns: unpack them aside, then write the rows into @image. */
static int inflate_columns(uint8_t *image, const uint8_t *blob, size_t len, const struct blob_header *h,
			   uint64_t packed_at, uint64_t content, struct kepler_error *err)
{
	struct blob_section sec[BLOB_MAX_SECTIONS];
	uint64_t size = h->total_size - packed_at;
	uint8_t *columns;
	size_t nsec;
	int r;

	if (columnar_sections(image, packed_at, h->total_size, sec, &nsec) < 0)
		return CORRUPT(err, "a bad section table or sections that overlap");
	columns = malloc(content + 8);
	if (!columns)
		return kepler_error_set(err, -ENOMEM, "out of memory decoding a snapshot");
	memset(columns + content, 0, 8); /* differences are read 8 bytes at a time */
	r = inflate(columns, content, blob, len, packed_at, err);
	if (!r)
		r = from_columns(image + packed_at, columns, content, packed_at, size, sec, nsec,
				 h->major >= BLOB_BLOCKS_MAJOR, err);
	free(columns);
	return r;
}

int kepler_blob_unpack(const uint8_t *blob, size_t len, const struct blob_header *h, uint8_t **ret,
		       struct kepler_error *err)
{
	unsigned long long content;
	struct blob_pack p;
	uint8_t *image;
	uint64_t size;
	bool columns = h->major >= BLOB_COLUMNS_MAJOR;
	int r;

	if (h->header_size < BLOB_PACKED_HEADER_SIZE || len < BLOB_PACKED_HEADER_SIZE)
		return CORRUPT(err, "a format %u.%u header of %u bytes, need %zu", h->major, h->minor,
			       h->header_size, BLOB_PACKED_HEADER_SIZE);
	memcpy(&p, blob + sizeof(*h), sizeof(p));
	if (h->total_size > BLOB_MAX_IMAGE || p.packed_at < BLOB_PACKED_HEADER_SIZE || p.packed_at > len ||
	    p.packed_at > h->total_size)
		return CORRUPT(err, "packed at %llu of %zu stored bytes, an image of %llu",
			       (unsigned long long)p.packed_at, len, (unsigned long long)h->total_size);
	size = h->total_size - p.packed_at;
	content = ZSTD_getFrameContentSize(blob + p.packed_at, len - p.packed_at);
	if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN ||
	    (columns ? content > columns_bound(size) : content != size))
		return CORRUPT(err, "the compressed sections claim %s, the header %llu bytes",
			       content == ZSTD_CONTENTSIZE_ERROR     ? "to be no zstd frame"
			       : content == ZSTD_CONTENTSIZE_UNKNOWN ? "no size"
								     : "another size",
			       (unsigned long long)size);
	image = malloc(h->total_size ? h->total_size : 1);
	if (!image)
		return kepler_error_set(err, -ENOMEM, "out of memory decoding a snapshot");
	memcpy(image, blob, p.packed_at);
	if (columns)
		r = inflate_columns(image, blob, len, h, p.packed_at, content, err);
	else
		r = inflate(image + p.packed_at, size, blob, len, p.packed_at, err);
	if (r < 0) {
		free(image);
		return r;
	}
	*ret = image;
	return 0;
}
