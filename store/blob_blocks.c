// SPDX-License-Identifier: Apache-2.0
/*
 * Format 4.x: a section of fixed-width records as bit-packed blocks of
 * differences (store/blob_format.h, docs/store.md "Blocks (4.0)").
 *
 * The first record goes as it is (w words of 8 bytes). The others go in
 * blocks of BLOB_BLOCK_ROWS records; within a block, word c of each record
 * is its difference from word c of the record before, and each column of
 * the block is one descriptor then its differences packed in as few bits
 * as the block's largest needs, least significant bit first, the column's
 * bytes rounded up to a whole byte:
 *
 *   descriptor < 0x80: that many bits (0..64) of each 64-bit difference,
 *     a signed (two's complement) number of that many bits;
 *   descriptor 0x80 | lo, then a byte hi (lo, hi <= 32): the two 32-bit
 *     halves apart, each difference modulo 2^32 as a signed number, the low
 *     half's in lo bits and the high half's in the hi bits above them.
 *
 * Widths by block follow what a column does where it is (the jump from
 * the processes' energies to the containers' costs one block, not the
 * whole section), and halves apart keep a word of two 32-bit fields (PID
 * and type, a string's offset and length) from being as wide as the
 * carry from one half into the other. Bits rather than bytes leave zstd
 * a little more than half as many bytes to produce, and its time to
 * unpack fell by more than that: fewer, longer matches (docs/performance.md).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "blob_format.h"

#define HALVES 0x80u

/*
 * The bits that hold, as signed (two's complement) numbers, every
 * difference whose magnitude64() or magnitude32() is OR-ed into @most;
 * 0 when they are all 0.
 */
static inline unsigned bits_signed64(uint64_t most)
{
	return most ? 64 - (unsigned)__builtin_clzll(most) : 0;
}

/* The part of a signed difference a width depends on: d ^ (d >> 63) shifted up one (0 -> 0, -1 -> 1, 1 -> 2). */
static inline uint64_t magnitude64(uint64_t d)
{
	return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static inline uint64_t magnitude32(uint32_t d)
{
	return (uint32_t)((d << 1) ^ (uint32_t)((int32_t)d >> 31));
}

static inline uint64_t bits_mask(unsigned bits)
{
	return bits >= 64 ? UINT64_MAX : (1ULL << bits) - 1;
}

/* The low @bits (1..64) of @x as a signed number. */
static inline uint64_t sign_extend(uint64_t x, unsigned bits)
{
	return (uint64_t)((int64_t)(x << (64 - bits)) >> (64 - bits));
}

static inline uint64_t packed_bytes(unsigned bits, uint64_t m)
{
	return (bits * m + 7) / 8;
}

/*
 * The low @bits of @m values, least significant first, at @out; returns the
 * end. Up to 56 bits and from 8 values on, without a branch per value: a
 * word stored at every value, the whole bytes stepped over (the columns'
 * widths are rarely a divisor of 64, and the old loop's test for a full
 * word was mispredicted every other value). Its last store reaches up to 7
 * bytes past the end, within the 8 bytes per value that @out has room for.
 */
static uint8_t *put_bits(uint8_t *out, const uint64_t *v, size_t m, unsigned bits)
{
	uint64_t mask = bits_mask(bits);
	unsigned __int128 acc = 0;
	unsigned fill = 0;

	if (!bits)
		return out;
	if (bits <= 56 && m >= 8) {
		uint64_t word = 0; /* bits not yet in a whole byte behind o: fewer than 8 */
		uint8_t *o = out;

		for (size_t i = 0; i < m; i++) {
			unsigned whole;

			word |= (v[i] & mask) << fill;
			blob_store64(o, word);
			fill += bits; /* at most 7 + 56 */
			whole = fill >> 3;
			o += whole;
			word >>= whole * 8;
			fill &= 7;
		}
		return out + packed_bytes(bits, m);
	}
	for (size_t i = 0; i < m; i++) {
		acc |= (unsigned __int128)(v[i] & mask) << fill;
		fill += bits;
		if (fill >= 64) {
			blob_store64(out, (uint64_t)acc);
			out += 8;
			acc >>= 64;
			fill -= 64;
		}
	}
	if (fill) {
		uint64_t last = (uint64_t)acc;

		memcpy(out, &last, (fill + 7) / 8);
		out += (fill + 7) / 8;
	}
	return out;
}

/*
 * Column @c of rows [from, from + m) as a descriptor and its bits; returns
 * the end. Halves can only be narrower when the whole difference needs
 * more than 32 bits (below, the low half's is the same number and the high
 * half's 0 or -1), so only then are they tried.
 */
static uint8_t *put_column(uint8_t *out, const uint8_t *rows, size_t stride, uint64_t from, size_t m,
			   size_t c)
{
	uint64_t full[BLOB_BLOCK_ROWS], halves[BLOB_BLOCK_ROWS], most = 0, most_lo = 0, most_hi = 0;
	const uint8_t *at = rows + from * stride + c * 8;
	uint64_t prev =
		blob_load64(at - stride); /* kept: to the compiler, a store to full[] may alias rows */
	unsigned bits, bits_lo, bits_hi;

	for (size_t i = 0; i < m; i++, at += stride) {
		uint64_t now = blob_load64(at);

		full[i] = now - prev;
		most |= magnitude64(full[i]);
		prev = now;
	}
	bits = bits_signed64(most);
	if (bits <= 32)
		goto whole;
	at = rows + from * stride + c * 8;
	for (size_t i = 0; i < m; i++, at += stride) {
		uint64_t now = blob_load64(at), before = blob_load64(at - stride);

		most_lo |= magnitude32((uint32_t)now - (uint32_t)before);
		most_hi |= magnitude32((uint32_t)(now >> 32) - (uint32_t)(before >> 32));
	}
	bits_lo = bits_signed64(most_lo);
	bits_hi = bits_signed64(most_hi);
	if (packed_bytes(bits_lo + bits_hi, m) + 1 >= packed_bytes(bits, m))
		goto whole;
	at = rows + from * stride + c * 8;
	for (size_t i = 0; i < m; i++, at += stride) {
		uint64_t now = blob_load64(at), before = blob_load64(at - stride);
		uint64_t lo = ((uint32_t)now - (uint32_t)before) & bits_mask(bits_lo);
		uint64_t hi = ((uint32_t)(now >> 32) - (uint32_t)(before >> 32)) & bits_mask(bits_hi);

		halves[i] = lo | hi << bits_lo;
	}
	*out++ = (uint8_t)(HALVES | bits_lo);
	*out++ = (uint8_t)bits_hi;
	return put_bits(out, halves, m, bits_lo + bits_hi);
whole:
	*out++ = (uint8_t)bits;
	return put_bits(out, full, m, bits);
}

uint8_t *kepler_blob_rows_to_blocks(uint8_t *out, const uint8_t *rows, uint64_t n, size_t w)
{
	size_t stride = w * 8;

	memcpy(out, rows, stride);
	out += stride;
	for (uint64_t from = 1; from < n; from += BLOB_BLOCK_ROWS) {
		size_t m = n - from < BLOB_BLOCK_ROWS ? (size_t)(n - from) : BLOB_BLOCK_ROWS;

		for (size_t c = 0; c < w; c++)
			out = put_column(out, rows, stride, from, m, c);
	}
	return out;
}

/*
 * The @bits (1..64) at bit @pos of @in. Reads up to 9 bytes from byte
 * pos / 8: the caller's buffer has room past its end.
 */
static inline uint64_t get_bits(const uint8_t *in, uint64_t pos, unsigned bits)
{
	const uint8_t *p = in + (pos >> 3);
	unsigned shift = pos & 7;
	uint64_t v = blob_load64(p) >> shift;

	if (bits + shift > 64)
		v |= (uint64_t)p[8] << (64 - shift);
	return v & bits_mask(bits);
}

/*
 * Groups of 8 differences of a constant @bits (1..57): a group is @bits
 * bytes, and each difference's place in it a constant, so that each is a
 * load, two shifts and an add. Inlined once for each width.
 */
static inline __attribute__((always_inline)) uint64_t sum_groups(uint8_t **at, size_t stride,
								 const uint8_t *in, size_t groups,
								 unsigned bits, uint64_t v)
{
	uint8_t *to = *at;

	for (size_t g = 0; g < groups; g++, in += bits)
		for (unsigned k = 0; k < 8; k++, to += stride) {
			unsigned pos = k * bits;

			v += (uint64_t)((int64_t)(blob_load64(in + pos / 8) << (64 - bits - pos % 8)) >>
					(64 - bits));
			blob_store64(to, v);
		}
	*at = to;
	return v;
}

#define GROUPS(b)                                               \
	case b:                                                 \
		v = sum_groups(&at, stride, in, m / 8, (b), v); \
		break;
#define GROUPS8(k)          \
	GROUPS(8 * (k) + 1) \
	GROUPS(8 * (k) + 2) \
	GROUPS(8 * (k) + 3) \
	GROUPS(8 * (k) + 4) GROUPS(8 * (k) + 5) GROUPS(8 * (k) + 6) GROUPS(8 * (k) + 7) GROUPS(8 * (k) + 8)

/* Running sums of @m signed 64-bit differences of @bits bits from @in, down a column at @at. */
static uint64_t sum_full(uint8_t *at, size_t stride, const uint8_t *in, size_t m, unsigned bits, uint64_t v)
{
	unsigned top = 64 - bits;
	uint64_t pos;
	size_t i;

	if (!bits) {
		for (i = 0; i < m; i++, at += stride)
			blob_store64(at, v);
		return v;
	}
	if (bits <= 57) { /* a value and its shift within one 8-byte load: shift it to the top, then down */
		switch (bits) {
			GROUPS8(0)
			GROUPS8(1)
			GROUPS8(2)
			GROUPS8(3)
			GROUPS8(4)
			GROUPS8(5)
			GROUPS8(6)
			GROUPS(57)
		}
		for (i = m / 8 * 8, pos = i * bits; i < m; i++, at += stride, pos += bits) {
			v += (uint64_t)((int64_t)(blob_load64(in + (pos >> 3)) << (top - (pos & 7))) >> top);
			blob_store64(at, v);
		}
		return v;
	}
	for (i = 0, pos = 0; i < m; i++, at += stride, pos += bits) {
		v += sign_extend(get_bits(in, pos, bits), bits);
		blob_store64(at, v);
	}
	return v;
}

/* The same for differences of each 32-bit half, @lo and @hi bits, the low half's first. */
static uint64_t sum_halves(uint8_t *at, size_t stride, const uint8_t *in, size_t m, unsigned lo, unsigned hi,
			   uint64_t v)
{
	uint32_t vlo = (uint32_t)v, vhi = (uint32_t)(v >> 32);
	unsigned bits = lo + hi;
	uint64_t pos = 0;

	if (lo && hi && bits <= 57) { /* both halves move, within one 8-byte load */
		for (size_t i = 0; i < m; i++, at += stride, pos += bits) {
			uint64_t x = blob_load64(in + (pos >> 3)) >> (pos & 7);

			vlo += (uint32_t)sign_extend(x, lo);
			vhi += (uint32_t)sign_extend(x >> lo, hi);
			blob_store64(at, (uint64_t)vhi << 32 | vlo);
		}
		return (uint64_t)vhi << 32 | vlo;
	}
	for (size_t i = 0; i < m; i++, at += stride, pos += bits) {
		uint64_t x = bits ? get_bits(in, pos, bits) : 0;

		if (lo)
			vlo += (uint32_t)sign_extend(x, lo);
		if (hi)
			vhi += (uint32_t)sign_extend(x >> lo, hi);
		blob_store64(at, (uint64_t)vhi << 32 | vlo);
	}
	return (uint64_t)vhi << 32 | vlo;
}

const uint8_t *kepler_blob_blocks_to_rows(uint8_t *rows, const uint8_t *in, uint64_t left, uint64_t n,
					  size_t w)
{
	const uint8_t *end = in + left;
	uint64_t sum[BLOB_BLOCK_MAX_WORDS];
	size_t stride = w * 8;

	if (w > BLOB_BLOCK_MAX_WORDS || stride > left)
		return NULL;
	for (size_t c = 0; c < w; c++)
		sum[c] = blob_load64(in + c * 8);
	memcpy(rows, in, stride);
	in += stride;
	for (uint64_t from = 1; from < n; from += BLOB_BLOCK_ROWS) {
		size_t m = n - from < BLOB_BLOCK_ROWS ? (size_t)(n - from) : BLOB_BLOCK_ROWS;
		uint8_t *at = rows + from * stride;

		for (size_t c = 0; c < w; c++, at += 8) {
			unsigned lo, hi = 0;
			uint64_t bytes;
			bool halves;

			if (in == end)
				return NULL;
			lo = *in++;
			halves = lo & HALVES;
			if (halves) {
				if (in == end)
					return NULL;
				lo &= ~(unsigned)HALVES;
				hi = *in++;
				if (lo > 32 || hi > 32)
					return NULL;
			} else if (lo > 64) {
				return NULL;
			}
			bytes = packed_bytes(lo + hi, m);
			if (bytes > (uint64_t)(end - in))
				return NULL;
			if (halves)
				sum[c] = sum_halves(at, stride, in, m, lo, hi, sum[c]);
			else
				sum[c] = sum_full(at, stride, in, m, lo, sum[c]);
			in += bytes;
		}
	}
	return in;
}
