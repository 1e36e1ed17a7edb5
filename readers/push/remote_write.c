// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <snappy-c.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "push_arena.h"
#include "push_series.h"
#include "remote_write.h"
#include "remote_write.pb-c.h"

/* A sample's packed size at most: value (tag, 8 bytes), timestamp (tag, varint), its own tag and length. */
#define SAMPLE_MAX 24

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
	/* encoding */
	Prometheus__Sample *pb, **pb_ptrs;
	size_t pb_cap, pb_ptrs_cap;
	ProtobufCBinaryData *ts;
	size_t ts_cap;
	struct push_arena body; /* each TimeSeries packed */
	struct push_arena raw;  /* the WriteRequest packed */
};

/* A series' labels as the start of a packed TimeSeries (push_encode_fn). */
static int encode_labels(void *ctx, const struct push_label *l, size_t n, struct push_arena *out)
{
	Prometheus__Label lab[PUSH_MAX_LABELS], *ptr[PUSH_MAX_LABELS];
	Prometheus__TimeSeries ts = PROMETHEUS__TIME_SERIES__INIT;
	size_t size;
	void *to;

	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		prometheus__label__init(&lab[i]);
		lab[i].name = (char *)l[i].name;
		lab[i].value = (char *)l[i].value;
		ptr[i] = &lab[i];
	}
	ts.labels = ptr;
	ts.n_labels = n;
	size = prometheus__time_series__get_packed_size(&ts);
	if (!(to = push_arena_room(out, size)))
		return -ENOMEM;
	out->len += prometheus__time_series__pack(&ts, to);
	return 0;
}

struct push_request *push_request_new(void)
{
	struct push_request *r = calloc(1, sizeof(struct push_request));

	if (r)
		push_series_init(&r->table, encode_labels, NULL, SAMPLE_MAX);
	return r;
}

void push_request_reset(struct push_request *r)
{
	r->norder = r->nsamples = r->skipped = 0;
	(void)push_series_begin(&r->table); /* (out of memory: what is stale stays, no harm) */
}

void push_request_free(struct push_request *r)
{
	if (!r)
		return;
	push_series_free(&r->table);
	free(r->order);
	free(r->samples);
	free(r->pb);
	free(r->pb_ptrs);
	free(r->ts);
	push_arena_free(&r->body);
	push_arena_free(&r->raw);
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

int push_request_add(struct push_request *r, const struct push_sample *s, size_t n, int64_t ts_ms)
{
	if (push_room((void **)&r->samples, r->nsamples, n, &r->samples_cap, sizeof(*r->samples)) < 0 ||
	    push_room((void **)&r->order, r->norder, n, &r->order_cap, sizeof(*r->order)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t at;
		unsigned flags;
		int e = push_series_find(&r->table, &s[i], &at, &flags);

		if (e < 0)
			return e;
		if (flags & PUSH_SERIES_FIRST)
			r->table.v[at].count = 0;
		if (e == 1) { /* not a key: skipped, and said once per batch by the caller */
			r->skipped++;
			continue;
		}
		if (flags & PUSH_SERIES_FIRST)
			r->order[r->norder++] = at;
		r->table.v[at].count++;
		r->samples[r->nsamples++] = (struct sample){ at, ts_ms, s[i].value };
	}
	return 0;
}

/* Each series' samples together, oldest first, as protobuf-c structures. */
static int lay_out_samples(struct push_request *r)
{
	size_t next = 0;

	if (push_room((void **)&r->pb, 0, r->nsamples, &r->pb_cap, sizeof(*r->pb)) < 0 ||
	    push_room((void **)&r->pb_ptrs, 0, r->nsamples, &r->pb_ptrs_cap, sizeof(*r->pb_ptrs)) < 0 ||
	    push_room((void **)&r->ts, 0, r->norder, &r->ts_cap, sizeof(*r->ts)) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < r->norder; k++) {
		struct push_series_entry *e = &r->table.v[r->order[k]];

		e->next = next;
		next += e->count;
	}
	for (size_t i = 0; i < r->nsamples; i++) {
		const struct sample *s = &r->samples[i];
		size_t at = r->table.v[s->series].next++;

		prometheus__sample__init(&r->pb[at]);
		r->pb[at].value = s->value;
		r->pb[at].timestamp = s->ts_ms;
		r->pb_ptrs[at] = &r->pb[at];
	}
	return 0;
}

/*
 * Each series packed: its labels' bytes, kept, then its samples packed by
 * protobuf-c. A series of one sample (each, once caught up) has it packed
 * in the room kept after its labels, and is sent from there; one of more
 * is copied into the body with them.
 */
static int pack_series(struct push_request *r)
{
	size_t next = 0;

	r->body.len = 0;
	for (size_t k = 0; k < r->norder; k++) {
		const struct push_series_entry *e = &r->table.v[r->order[k]];
		Prometheus__TimeSeries t = PROMETHEUS__TIME_SERIES__INIT;
		size_t llen, at = r->body.len;
		const void *labels = push_series_labels(&r->table, r->order[k], &llen);
		uint8_t *to;

		t.samples = &r->pb_ptrs[next];
		t.n_samples = e->count;
		next += e->count;
		if (e->count == 1) { /* (its place once the body stops moving, below) */
			r->ts[k].len = llen + prometheus__time_series__pack(
						      &t, push_series_tail(&r->table, r->order[k]));
			continue;
		}
		if (!(to = push_arena_room(&r->body, llen + e->count * SAMPLE_MAX + 16)))
			return -ENOMEM;
		memcpy(to, labels, llen);
		r->body.len += llen + prometheus__time_series__pack(&t, to + llen);
		r->ts[k].len = r->body.len - at;
		r->ts[k].data = (uint8_t *)(uintptr_t)at; /* an offset until the body stops moving */
	}
	for (size_t k = 0; k < r->norder; k++) {
		size_t llen;
		const void *labels = push_series_labels(&r->table, r->order[k], &llen);

		r->ts[k].data = r->table.v[r->order[k]].count == 1
					? (uint8_t *)labels
					: (uint8_t *)r->body.data + (uintptr_t)r->ts[k].data;
	}
	return 0;
}

int push_request_encode(struct push_request *r, void **ret, size_t *ret_len)
{
	Prometheus__WriteRequestPacked wr = PROMETHEUS__WRITE_REQUEST_PACKED__INIT;
	char *out = NULL;
	size_t len, olen;

	if (lay_out_samples(r) < 0 || pack_series(r) < 0)
		return -ENOMEM;
	wr.timeseries = r->ts;
	wr.n_timeseries = r->norder;
	len = prometheus__write_request_packed__get_packed_size(&wr);
	r->raw.len = 0;
	olen = snappy_max_compressed_length(len);
	if (!push_arena_room(&r->raw, len + 1) || !(out = malloc(olen)))
		return -ENOMEM;
	prometheus__write_request_packed__pack(&wr, (uint8_t *)r->raw.data);
	if (snappy_compress(r->raw.data, len, out, &olen) != SNAPPY_OK) {
		free(out);
		return -EIO;
	}
	*ret = out;
	*ret_len = olen;
	return 0;
}
