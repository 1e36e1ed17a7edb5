// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "push_arena.h"
#include "push_series.h"
#include "push_snappy.h"
#include "remote_write.h"
#include "remote_write.pb-c.h"

/* A sample's packed size at most: value (tag, 8 bytes), timestamp (tag, varint), its own tag and length. */
#define SAMPLE_MAX 24

/* Wire tags (field number << 3 | wire type) of the fields packed here by hand. */
#define TAG_WR_SERIES 0x0a    /* WriteRequest.timeseries = 1, length-delimited */
#define TAG_TS_SAMPLES 0x12   /* TimeSeries.samples = 2, length-delimited */
#define TAG_SAMPLE_VALUE 0x09 /* Sample.value = 1, 64-bit */
#define TAG_SAMPLE_TIME 0x10  /* Sample.timestamp = 2, varint */

/*
 * The room kept after each series' labels for a request's one sample of it
 * (push_series_tail()): tag and length, a value that is not 0 and a
 * timestamp of 6 varint bytes (the milliseconds of 1971 to 2109), 18 bytes.
 */
#define SLOT 18
#define SLOT_TIME_MIN (INT64_C(1) << 35)
#define SLOT_TIME_END (INT64_C(1) << 42)
#define RUN_MAX (1u << 20) /* a run of records given to snappy at once: while in cache */
#define PREFETCH 16        /* series ahead whose entry is fetched (their slot: half as far) */

struct sample {
	size_t series;
	int64_t ts_ms;
	double value;
};

/*
 * A batch: its series, in the order first added, and its samples (series,
 * time, value) in the order added. The series and their labels' bytes are
 * kept from one batch to the next (push_series.h); the rest of the memory
 * too, so that a request in the steady state allocates only its body.
 */
struct push_request {
	struct push_series table;
	size_t *order;
	size_t norder, order_cap;
	struct sample *samples;
	size_t nsamples, samples_cap;
	size_t skipped;
	size_t total; /* the packed WriteRequest's length, kept as samples are added */
	/* encoding */
	struct sample *laid; /* the samples, each series' together */
	size_t laid_cap;
	struct push_snappy z; /* the WriteRequest, compressed as it is written */
};

static uint8_t *put_varint(uint8_t *to, uint64_t v)
{
	while (v >= 0x80) {
		*to++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*to++ = (uint8_t)v;
	return to;
}

/*
 * A series' labels as the start of a packed TimeSeries (push_encode_fn),
 * after its head: the WriteRequest's field 1 as it is when the series has
 * one sample that fits its SLOT (a caught-up request's), so that its
 * record (head, labels, sample) is sent as it lies in the table.
 * A label whose value is empty is left out: the specification says a label
 * set MUST NOT hold one, and to Prometheus it is a label not set (which is
 * what Prometheus keeps of such a label when it scrapes the exporter).
 */
static int encode_labels(void *ctx, const struct push_label *l, size_t n, struct push_arena *out)
{
	Prometheus__Label lab[PUSH_MAX_LABELS], *ptr[PUSH_MAX_LABELS];
	Prometheus__TimeSeries ts = PROMETHEUS__TIME_SERIES__INIT;
	size_t size, kept = 0;
	uint8_t *head;
	void *to;

	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		if (!l[i].value[0])
			continue;
		prometheus__label__init(&lab[kept]);
		lab[kept].name = (char *)l[i].name;
		lab[kept].value = (char *)l[i].value;
		ptr[kept] = &lab[kept];
		kept++;
	}
	ts.labels = ptr;
	ts.n_labels = kept;
	size = prometheus__time_series__get_packed_size(&ts);
	if (!(to = push_arena_room(out, size + 8)))
		return -ENOMEM;
	/* the head: the WriteRequest's field of this series, its length with one sample in SLOT */
	head = (uint8_t *)to;
	*head++ = TAG_WR_SERIES;
	head = put_varint(head, size + SLOT);
	out->len += (size_t)(head - (uint8_t *)to);
	out->len += prometheus__time_series__pack(&ts, head);
	return (int)(head - (uint8_t *)to);
}

struct push_request *push_request_new(void)
{
	struct push_request *r = calloc(1, sizeof(struct push_request));

	if (r)
		push_series_init(&r->table, encode_labels, NULL, SLOT);
	return r;
}

void push_request_reset(struct push_request *r)
{
	r->norder = r->nsamples = r->skipped = r->total = 0;
	(void)push_series_begin(&r->table); /* (out of memory: what is stale stays, no harm) */
}

void push_request_free(struct push_request *r)
{
	if (!r)
		return;
	push_series_free(&r->table);
	free(r->order);
	free(r->samples);
	free(r->laid);
	push_snappy_drop(&r->z);
	free(r);
}

size_t push_request_series(const struct push_request *r)
{
	return r->norder;
}

size_t push_request_samples(const struct push_request *r)
{
	return r->nsamples;
}

size_t push_request_skipped(const struct push_request *r)
{
	return r->skipped;
}

static size_t varint_len(uint64_t v);
static size_t sample_len(const struct sample *s);

/* A packed TimeSeries field of @len bytes: its tag, its length's varint and the bytes. */
static size_t field_len(size_t len)
{
	return 1 + varint_len(len) + len;
}

int push_request_add(struct push_request *r, const struct push_sample *s, size_t n, int64_t ts_ms)
{
	if (push_room((void **)&r->samples, r->nsamples, n, &r->samples_cap, sizeof(*r->samples)) < 0 ||
	    push_room((void **)&r->order, r->norder, n, &r->order_cap, sizeof(*r->order)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t at;
		unsigned flags;
		int e = push_series_find(&r->table, &s[i], &at, &flags);
		struct push_series_entry *x;
		struct sample *sample;

		if (e < 0)
			return e;
		x = &r->table.v[at];
		sample = &r->samples[r->nsamples];
		if (flags & PUSH_SERIES_FIRST)
			x->count = 0;
		if (e == 1) { /* not a key: skipped, and said once per batch by the caller */
			r->skipped++;
			continue;
		}
		if (flags & PUSH_SERIES_FIRST) {
			r->order[r->norder++] = at;
			x->wire = x->enc_len;
		} else {
			r->total -= field_len(x->wire);
		}
		*sample = (struct sample){ at, ts_ms, s[i].value };
		x->count++;
		x->wire += sample_len(sample);
		r->total += field_len(x->wire);
		r->nsamples++;
	}
	return 0;
}

/*
 * Each series' samples together, oldest first: as added when each series
 * has one (a caught-up request: one snapshot), else laid out in r->laid.
 * -ENOMEM.
 */
static int lay_out_samples(struct push_request *r, const struct sample **ret)
{
	size_t next = 0;

	*ret = r->samples;
	if (r->nsamples == r->norder) /* (each series once: in the order first added) */
		return 0;
	if (push_room((void **)&r->laid, 0, r->nsamples, &r->laid_cap, sizeof(*r->laid)) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < r->norder; k++) {
		struct push_series_entry *e = &r->table.v[r->order[k]];

		e->next = next;
		next += e->count;
	}
	for (size_t i = 0; i < r->nsamples; i++)
		r->laid[r->table.v[r->samples[i].series].next++] = r->samples[i];
	*ret = r->laid;
	return 0;
}

/*
 * @n samples as a TimeSeries' samples field (at most n * SAMPLE_MAX
 * bytes): what protobuf-c packs for them, written here since a Sample is
 * two scalars and this is a request's hottest loop (70,000 samples a
 * snapshot at 10,000 processes). As proto3 says, a field at its default
 * (0) is not written. The end of what was written.
 */
static uint8_t *put_samples(uint8_t *to, const struct sample *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t *len = to + 1;
		uint64_t bits;

		*to = TAG_TS_SAMPLES;
		to += 2; /* (a Sample is at most 20 bytes: its length one byte) */
		memcpy(&bits, &s[i].value, sizeof(bits));
		if (bits) {
			*to++ = TAG_SAMPLE_VALUE;
			for (int b = 0; b < 8; b++) /* little-endian, whatever the host */
				*to++ = (uint8_t)(bits >> (8 * b));
		}
		if (s[i].ts_ms) {
			*to++ = TAG_SAMPLE_TIME;
			to = put_varint(to, (uint64_t)s[i].ts_ms);
		}
		*len = (uint8_t)(to - len - 1);
	}
	return to;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A sample's packed size (put_samples()'s). */
static size_t sample_len(const struct sample *s)
{
	uint64_t bits;

	memcpy(&bits, &s->value, sizeof(bits));
	return 2 + (bits ? 9u : 0u) + (s->ts_ms ? 1 + varint_len((uint64_t)s->ts_ms) : 0u);
}

/* Whether sample @s fits its series' SLOT: a value that is not 0, a timestamp of 6 varint bytes. */
static bool fits_slot(const struct sample *s)
{
	uint64_t bits;

	memcpy(&bits, &s->value, sizeof(bits));
	return bits && s->ts_ms >= SLOT_TIME_MIN && s->ts_ms < SLOT_TIME_END;
}

/* The run of records given so far, if any, into the block. */
static void put_run(struct push_request *r, const char **run, size_t *len)
{
	if (*len)
		push_snappy_put_run(&r->z, *run, *len);
	*run = NULL;
	*len = 0;
}

/*
 * The WriteRequest written straight into the snappy block, series by
 * series: each a length-delimited field 1 (what protobuf-c packs for a
 * TimeSeries), its labels' bytes as kept, then its samples. The request's
 * bytes are never held whole, and each series' labels are read once. A
 * series of one sample that fits its SLOT (a caught-up request: each
 * series once) has its sample written there, and its record joins the run
 * of those before it when it lies right after them: snappy compresses a
 * run's whole fragments where they lie (14 MB at 10,000 processes, not
 * copied).
 */
int push_request_encode(struct push_request *r, void **ret, size_t *ret_len)
{
	const struct sample *laid;
	size_t next = 0, run_len = 0;
	const char *run = NULL;
	bool each_once = r->nsamples == r->norder;
	int e;

	if ((e = lay_out_samples(r, &laid)) < 0)
		return e;
	if ((e = push_snappy_begin(&r->z, r->total)) < 0)
		return e;
	for (size_t k = 0; k < r->norder; k++) {
		const struct push_series_entry *x = &r->table.v[r->order[k]];
		uint8_t buf[16 + 64 * SAMPLE_MAX], *to = buf;
		size_t llen;
		const void *labels = push_series_labels(&r->table, r->order[k], &llen);

		if (k + PREFETCH <
		    r->norder) { /* (the records are 14 MB at 10,000 processes: out of cache) */
			__builtin_prefetch(&r->table.v[r->order[k + PREFETCH]]);
			__builtin_prefetch(push_series_tail(&r->table, r->order[k + PREFETCH / 2]), 1);
		}
		if (each_once && fits_slot(&laid[next])) {
			char *rec = push_series_record(&r->table, r->order[k], &llen);
			uint8_t *slot = (uint8_t *)rec + llen - SLOT;
			uint64_t bits;

			memcpy(&bits, &laid[next].value, sizeof(bits));
			*slot++ = TAG_TS_SAMPLES;
			*slot++ = SLOT - 2;
			*slot++ = TAG_SAMPLE_VALUE;
			for (int b = 0; b < 8; b++) /* little-endian, whatever the host */
				*slot++ = (uint8_t)(bits >> (8 * b));
			*slot++ = TAG_SAMPLE_TIME;
			put_varint(slot, (uint64_t)laid[next].ts_ms);
			if (run_len && (run + run_len != rec || run_len >= RUN_MAX))
				put_run(r, &run, &run_len);
			if (!run_len)
				run = rec;
			run_len += llen;
			next++;
			continue;
		}
		put_run(r, &run, &run_len);
		*to++ = TAG_WR_SERIES;
		to = put_varint(to, x->wire);
		push_snappy_put(&r->z, buf, (size_t)(to - buf));
		push_snappy_put(&r->z, labels, llen);
		for (size_t i = 0; i < x->count; i += 64) { /* (a backlog's series: many samples) */
			size_t n = x->count - i < 64 ? x->count - i : 64;

			to = put_samples(buf, &laid[next + i], n);
			push_snappy_put(&r->z, buf, (size_t)(to - buf));
		}
		next += x->count;
	}
	put_run(r, &run, &run_len);
	return push_snappy_end(&r->z, ret, ret_len);
}
