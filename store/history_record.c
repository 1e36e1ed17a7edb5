// SPDX-License-Identifier: Apache-2.0
/*
 * The history ledger's tier record codec (kepler/history.h).
 *
 * A tier record, little-endian:
 *   "KHIS", u16 major, u16 minor, u32 flags, u32 period_s, u64 boundary_ns,
 *   u64 payload length, u64 XXH3-64 checksum, then the zstd frame of the
 *   payload:
 *   u64 seq, u64 wall_ns, u32 intensity (mg/kWh), u32 zones, each zone's
 *   name (u16 length, bytes), u32 rows, and each row: u8 kind, eight string
 *   slots (u16 length, bytes), u64 first_ns, last_ns, cpu_time_ns, then per
 *   zone u64 energy_uj, co2e_mg, co2e_rem. The slots are id, name, ns,
 *   pod_id, runtime, exe, container_id, vm_id, each kind using its own
 *   (kepler/history.h); a pod, which has no runtime, exe nor container,
 *   keeps its owner_kind, owner_name and labels in those three slots. So a
 *   record of pods with owners is still format 1.1: a reader that knows
 *   nothing of owners reads it as before (a pod's unused slots are never
 *   keys nor shown), and this one reads older records' pods as having none.
 * The checksum covers the whole record, header included (its own field
 * read as 0), from format 1.1 on; a 1.0 record's covers the frame only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>
#include <zstd.h>

#include "history_internal.h"

#define HISTORY_MAGIC "KHIS"
#define HISTORY_HEAD 40
#define HISTORY_SUM_AT 32
#define HISTORY_MAX_PAYLOAD (UINT64_C(256) << 20) /* 256 MiB: 10 times a record of 100,000 identities */
#define HISTORY_MAX_STRING 4096
#define HISTORY_SLOTS 8 /* a row's string slots in a record */

/*
 * The row field (history_row_str()'s index) that a record's slot @i holds
 * for kind @k; @i from HISTORY_SLOTS on: the fields of no slot, in turn.
 * A pod's runtime, exe and container_id slots hold its owner_kind,
 * owner_name and labels.
 */
static int slot_field(enum kepler_history_kind k, int i)
{
	static const int pod[HISTORY_NSTR] = { 0, 1, 2, 3, 8, 9, 10, 7, 4, 5, 6 };

	return k == KEPLER_HISTORY_POD ? pod[i] : i;
}

/*
 * The checksum of the record @p of @len bytes (at least the header): from
 * format 1.1 on, of the header with its checksum field read as 0 and the
 * frame; of the frame alone before.
 */
static uint64_t record_sum(const unsigned char *p, size_t len, uint32_t minor)
{
	static const unsigned char zero[8];
	XXH3_state_t st;

	if (minor < 1)
		return XXH3_64bits(p + HISTORY_HEAD, len - HISTORY_HEAD);
	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, p, HISTORY_SUM_AT);
	XXH3_64bits_update(&st, zero, sizeof(zero));
	XXH3_64bits_update(&st, p + HISTORY_HEAD, len - HISTORY_HEAD);
	return XXH3_64bits_digest(&st);
}

/* ---- encoding ---- */

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

static void put(struct wbuf *w, const void *v, size_t n)
{
	if (w->err)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		unsigned char *p;

		while (cap < w->len + n)
			cap *= 2;
		if (!(p = realloc(w->p, cap))) {
			w->err = -ENOMEM;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	memcpy(w->p + w->len, v, n);
	w->len += n;
}

static void put_le(struct wbuf *w, uint64_t v, int bytes)
{
	unsigned char b[8];

	for (int i = 0; i < bytes; i++, v >>= 8)
		b[i] = (unsigned char)(v & 0xff);
	put(w, b, (size_t)bytes);
}

static void put_str(struct wbuf *w, const char *s)
{
	size_t n = strlen(s);

	if (n > HISTORY_MAX_STRING)
		n = HISTORY_MAX_STRING;
	put_le(w, n, 2);
	put(w, s, n);
}

static void encode_payload(const struct kepler_history *h, uint64_t since_ns, struct wbuf *w)
{
	uint32_t n = 0;
	size_t at;

	put_le(w, h->seq, 8);
	put_le(w, h->wall_ns, 8);
	put_le(w, h->intensity, 4);
	put_le(w, h->nzones, 4);
	for (size_t z = 0; z < h->nzones; z++)
		put_str(w, h->zones[z]);
	at = w->len;
	put_le(w, 0, 4);
	for (size_t i = 0; i < h->nrows; i++) {
		const struct kepler_history_row *r = h->rows[i];

		if (r->kind != KEPLER_HISTORY_NODE && r->last_ns < since_ns)
			continue;
		n++;
		put_le(w, (uint64_t)r->kind, 1);
		for (int s = 0; s < HISTORY_SLOTS; s++)
			put_str(w, history_row_cstr(r, slot_field(r->kind, s)));
		put_le(w, r->first_ns, 8);
		put_le(w, r->last_ns, 8);
		put_le(w, r->cpu_time_ns, 8);
		for (size_t z = 0; z < h->nzones; z++) {
			put_le(w, r->energy_uj[z], 8);
			put_le(w, r->co2e_mg[z], 8);
			put_le(w, r->co2e_rem[z], 8);
		}
	}
	if (!w->err)
		for (int b = 0; b < 4; b++)
			w->p[at + (size_t)b] = (unsigned char)(n >> (8 * b));
}

int kepler_history_encode(const struct kepler_history *h, const struct kepler_history_header *hdr,
			  uint64_t since_ns, void **ret, size_t *ret_len, struct kepler_error *err)
{
	struct wbuf pay = { 0 }, out = { 0 };
	size_t bound, clen;

	encode_payload(h, since_ns, &pay);
	if (pay.err)
		return kepler_error_set(err, -ENOMEM, "encoding a tier record: out of memory");
	put(&out, HISTORY_MAGIC, 4);
	put_le(&out, KEPLER_HISTORY_FORMAT_MAJOR, 2);
	put_le(&out, KEPLER_HISTORY_FORMAT_MINOR, 2);
	put_le(&out, hdr->flags, 4);
	put_le(&out, hdr->period_s, 4);
	put_le(&out, hdr->boundary_ns, 8);
	put_le(&out, pay.len, 8);
	put_le(&out, 0, 8); /* the checksum, below */
	bound = ZSTD_compressBound(pay.len);
	if (!out.err && out.cap < HISTORY_HEAD + bound) {
		unsigned char *p = realloc(out.p, HISTORY_HEAD + bound);

		if (!p)
			out.err = -ENOMEM;
		else
			out.p = p, out.cap = HISTORY_HEAD + bound;
	}
	if (out.err) {
		free(pay.p);
		free(out.p);
		return kepler_error_set(err, -ENOMEM, "encoding a tier record: out of memory");
	}
	clen = ZSTD_compress(out.p + HISTORY_HEAD, bound, pay.p, pay.len, 1);
	free(pay.p);
	if (ZSTD_isError(clen)) {
		free(out.p);
		return kepler_error_set(err, -EINVAL, "compressing a tier record: %s",
					ZSTD_getErrorName(clen));
	}
	uint64_t sum = record_sum(out.p, HISTORY_HEAD + clen, KEPLER_HISTORY_FORMAT_MINOR);

	for (int b = 0; b < 8; b++)
		out.p[HISTORY_SUM_AT + b] = (unsigned char)(sum >> (8 * b));
	*ret = out.p;
	*ret_len = HISTORY_HEAD + clen;
	return 0;
}

/* ---- decoding: any bytes ---- */

struct rbuf {
	const unsigned char *p;
	size_t len, at;
	bool bad;
};

static uint64_t get_le(struct rbuf *r, int bytes)
{
	uint64_t v = 0;

	if (r->bad || r->len - r->at < (size_t)bytes) {
		r->bad = true;
		return 0;
	}
	for (int i = bytes - 1; i >= 0; i--)
		v = (v << 8) | r->p[r->at + (size_t)i];
	r->at += (size_t)bytes;
	return v;
}

static char *get_str(struct rbuf *r)
{
	size_t n = (size_t)get_le(r, 2);
	char *s;

	if (r->bad || n > HISTORY_MAX_STRING || r->len - r->at < n || memchr(r->p + r->at, 0, n)) {
		r->bad = true;
		return NULL;
	}
	if (!(s = malloc(n + 1)))
		return NULL;
	memcpy(s, r->p + r->at, n);
	s[n] = 0;
	r->at += n;
	return s;
}

static int decode_row(struct kepler_history *h, struct rbuf *in, struct kepler_error *err)
{
	struct kepler_history_row *r = calloc(1, sizeof(*r));
	uint64_t kind = get_le(in, 1);

	if (!r)
		return kepler_error_set(err, -ENOMEM, "decoding a tier record: out of memory");
	r->kind = (enum kepler_history_kind)kind;
	for (int i = HISTORY_SLOTS; i < HISTORY_NSTR; i++) /* fields in no slot of this kind: "" */
		if (!(*history_row_str(r, slot_field(r->kind, i)) = strdup(""))) {
			history_row_free(r);
			return kepler_error_set(err, -ENOMEM, "decoding a tier record: out of memory");
		}
	for (int i = 0; i < HISTORY_SLOTS; i++)
		if (!(*history_row_str(r, slot_field(r->kind, i)) = get_str(in))) {
			bool bad = in->bad;

			history_row_free(r);
			return bad ? kepler_error_set(err, -EPROTO,
						      "tier record: a row's string is cut short or holds NUL")
				   : kepler_error_set(err, -ENOMEM, "decoding a tier record: out of memory");
		}
	r->first_ns = get_le(in, 8);
	r->last_ns = get_le(in, 8);
	r->cpu_time_ns = get_le(in, 8);
	if (history_row_zones(r, 0, h->nzones) < 0) {
		history_row_free(r);
		return kepler_error_set(err, -ENOMEM, "decoding a tier record: out of memory");
	}
	for (size_t z = 0; z < h->nzones; z++) {
		r->energy_uj[z] = get_le(in, 8);
		r->co2e_mg[z] = get_le(in, 8);
		r->co2e_rem[z] = get_le(in, 8);
		if (r->co2e_rem[z] >= KEPLER_UJ_PER_KWH)
			in->bad = true;
	}
	if (in->bad || kind >= KEPLER_HISTORY_KIND_COUNT || r->first_ns > r->last_ns) {
		history_row_free(r);
		return kepler_error_set(err, -EPROTO, "tier record: row %zu is cut short or out of range",
					h->nrows);
	}
	if (kepler_history_find(h, r)) {
		history_row_free(r);
		return kepler_error_set(err, -EPROTO, "tier record: row %zu repeats an identity", h->nrows);
	}
	return history_insert(h, r) < 0
		       ? kepler_error_set(err, -ENOMEM, "decoding a tier record: out of memory")
		       : 0;
}

static int decode_payload(struct kepler_history *h, struct rbuf *in, struct kepler_error *err)
{
	uint64_t nz, nrows;
	int e;

	h->seq = get_le(in, 8);
	h->wall_ns = get_le(in, 8);
	h->intensity = (uint32_t)get_le(in, 4);
	nz = get_le(in, 4);
	if (in->bad || nz > KEPLER_MAX_ZONES)
		return kepler_error_set(err, -EPROTO, "tier record: %llu zones (at most %d)",
					(unsigned long long)nz, KEPLER_MAX_ZONES);
	for (size_t z = 0; z < nz; z++) {
		if (!(h->zones[z] = get_str(in)))
			return kepler_error_set(err, in->bad ? -EPROTO : -ENOMEM,
						"tier record: zone %zu unreadable", z);
		h->nzones++;
		for (size_t y = 0; y < z; y++)
			if (!strcmp(h->zones[y], h->zones[z]))
				return kepler_error_set(err, -EPROTO, "tier record: zone '%s' twice",
							h->zones[z]);
	}
	nrows = get_le(in, 4);
	/* each row takes at least 41 bytes: no count the payload cannot hold */
	if (in->bad || nrows > (in->len - in->at) / 41)
		return kepler_error_set(err, -EPROTO, "tier record: %llu rows cannot fit in %zu bytes",
					(unsigned long long)nrows, in->len - in->at);
	for (uint64_t i = 0; i < nrows; i++)
		if ((e = decode_row(h, in, err)) < 0)
			return e;
	if (in->at != in->len)
		return kepler_error_set(err, -EPROTO, "tier record: %zu bytes after the last row",
					in->len - in->at);
	return 0;
}

int kepler_history_decode(const void *blob, size_t len, struct kepler_history **ret,
			  struct kepler_history_header *ret_hdr, struct kepler_error *err)
{
	struct rbuf hd = { blob, len, 0, false };
	uint64_t plen, sum;
	unsigned long long fsize;
	void *pay = NULL;
	struct kepler_history *h;
	int e;

	if (len < HISTORY_HEAD || memcmp(blob, HISTORY_MAGIC, 4))
		return kepler_error_set(err, -EPROTO, "not a tier record (%zu bytes)", len);
	hd.at = 4;
	ret_hdr->format_major = (uint32_t)get_le(&hd, 2);
	ret_hdr->format_minor = (uint32_t)get_le(&hd, 2);
	ret_hdr->flags = (uint32_t)get_le(&hd, 4);
	ret_hdr->period_s = (uint32_t)get_le(&hd, 4);
	ret_hdr->boundary_ns = get_le(&hd, 8);
	plen = get_le(&hd, 8);
	sum = get_le(&hd, 8);
	if (ret_hdr->format_major > KEPLER_HISTORY_FORMAT_MAJOR)
		return kepler_error_set(err, -EPROTONOSUPPORT, "tier record format %u.%u is newer than %d.%d",
					ret_hdr->format_major, ret_hdr->format_minor,
					KEPLER_HISTORY_FORMAT_MAJOR, KEPLER_HISTORY_FORMAT_MINOR);
	if (record_sum(blob, len, ret_hdr->format_minor) != sum)
		return kepler_error_set(err, -EPROTO, "tier record: checksum mismatch");
	if (ret_hdr->flags & ~(uint32_t)KEPLER_HISTORY_MISSED)
		return kepler_error_set(err, -EPROTO, "tier record: unknown flags 0x%x", ret_hdr->flags);
	if (!ret_hdr->period_s)
		return kepler_error_set(err, -EPROTO, "tier record: a tier of 0 s");
	fsize = ZSTD_getFrameContentSize((const unsigned char *)blob + HISTORY_HEAD, len - HISTORY_HEAD);
	if (plen > HISTORY_MAX_PAYLOAD || fsize != plen)
		return kepler_error_set(err, -EPROTO, "tier record: payload of %llu bytes (frame says %llu)",
					(unsigned long long)plen, fsize);
	if (!(pay = malloc(plen ? plen : 1)) || !(h = kepler_history_new())) {
		free(pay);
		return kepler_error_set(err, -ENOMEM, "decoding a tier record: out of memory");
	}
	size_t got =
		ZSTD_decompress(pay, plen, (const unsigned char *)blob + HISTORY_HEAD, len - HISTORY_HEAD);

	if (ZSTD_isError(got) || got != plen) {
		e = kepler_error_set(err, -EPROTO, "tier record: the payload does not decompress: %s",
				     ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short");
	} else {
		struct rbuf in = { pay, plen, 0, false };

		e = decode_payload(h, &in, err);
	}
	free(pay);
	if (e < 0) {
		kepler_history_free(h);
		return e;
	}
	*ret = h;
	return 0;
}
