// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <snappy-c.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "push_arena.h"
#include "push_index.h"
#include "remote_write.h"
#include "remote_write.pb-c.h"

/*
 * A batch: its series (each label pair kept once, however many carry it) and
 * its samples (series, time, value) in the order added; the protobuf-c
 * structures are laid out only when encoding, in a few arrays.
 */
struct series {
	size_t key, key_len; /* in the arena */
	size_t label0, nlabels;
	size_t count, next; /* its samples; (where its next goes, while encoding) */
};

struct sample {
	size_t series;
	int64_t ts_ms;
	double value;
};

struct push_request {
	struct series *series;
	size_t n, cap;
	size_t *labels; /* each series' labels, as numbers of pairs */
	size_t nlabels, labels_cap;
	struct push_pairs pairs;
	struct sample *samples;
	size_t nsamples, samples_cap;
	struct push_arena arena;
	struct push_index index;
};

static const char *key_of(const void *ctx, size_t i, size_t *len)
{
	const struct push_request *r = ctx;

	*len = r->series[i].key_len;
	return r->arena.data + r->series[i].key;
}

struct push_request *push_request_new(void)
{
	struct push_request *r = calloc(1, sizeof(struct push_request));

	if (r) {
		r->index.key_of = key_of;
		push_pairs_init(&r->pairs);
	}
	return r;
}

void push_request_reset(struct push_request *r)
{
	r->n = r->nlabels = r->nsamples = r->arena.len = 0;
	push_index_clear(&r->index);
	push_pairs_clear(&r->pairs);
}

void push_request_free(struct push_request *r)
{
	if (!r)
		return;
	free(r->series);
	free(r->labels);
	free(r->samples);
	free(r->arena.data);
	push_index_free(&r->index);
	push_pairs_free(&r->pairs);
	free(r);
}

size_t push_request_series(const struct push_request *r)
{
	return r->n;
}

size_t push_request_samples(const struct push_request *r)
{
	return r->nsamples;
}

/* The series of @s, new when the batch has none yet. SIZE_MAX: out of memory. */
static size_t series_of(struct push_request *r, const struct push_sample *s)
{
	struct series *x;
	size_t at;

	if (push_room((void **)&r->series, r->n, 1, &r->cap, sizeof(*r->series)) < 0 ||
	    push_room((void **)&r->labels, r->nlabels, s->nlabels, &r->labels_cap, sizeof(*r->labels)) < 0 ||
	    push_index_find(&r->index, r, r->n, s->key, s->key_len, &at) < 0)
		return SIZE_MAX;
	if (at < r->n)
		return at;
	x = &r->series[at];
	memset(x, 0, sizeof(*x));
	x->key = push_arena_put(&r->arena, s->key, s->key_len);
	x->key_len = s->key_len;
	x->label0 = r->nlabels;
	for (size_t i = 0; i < s->nlabels && x->key != SIZE_MAX; i++) {
		size_t pair = push_pairs_intern(&r->pairs, i, s->labels[i].name, s->labels[i].value);

		if (pair == SIZE_MAX)
			x->key = SIZE_MAX;
		r->labels[r->nlabels++] = pair;
	}
	x->nlabels = r->nlabels - x->label0;
	if (x->key == SIZE_MAX) { /* the batch is abandoned: keep the index consistent all the same */
		x->key = 0;
		x->key_len = 0;
		return SIZE_MAX;
	}
	r->n++;
	return at;
}

int push_request_add(struct push_request *r, const struct push_sample *s, size_t n, int64_t ts_ms)
{
	if (push_room((void **)&r->samples, r->nsamples, n, &r->samples_cap, sizeof(*r->samples)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t at = series_of(r, &s[i]);

		if (at == SIZE_MAX)
			return -ENOMEM;
		r->samples[r->nsamples++] = (struct sample){ at, ts_ms, s[i].value };
		r->series[at].count++;
	}
	return 0;
}

/* The protobuf-c structures of a batch, in a few arrays. */
struct layout {
	Prometheus__TimeSeries *ts, **ts_ptrs;
	Prometheus__Label *labels, **label_ptrs;
	Prometheus__Sample *samples, **sample_ptrs;
};

static void layout_free(struct layout *l)
{
	free(l->ts);
	free(l->ts_ptrs);
	free(l->labels);
	free(l->label_ptrs);
	free(l->samples);
	free(l->sample_ptrs);
}

static int lay_out(struct push_request *r, struct layout *l)
{
	size_t ns = r->n ? r->n : 1, nl = r->nlabels ? r->nlabels : 1, np = r->nsamples ? r->nsamples : 1;
	size_t npairs = r->pairs.n ? r->pairs.n : 1;
	size_t next = 0;

	l->ts = malloc(ns * sizeof(*l->ts));
	l->ts_ptrs = malloc(ns * sizeof(*l->ts_ptrs));
	l->labels = malloc(npairs * sizeof(*l->labels));
	l->label_ptrs = malloc(nl * sizeof(*l->label_ptrs));
	l->samples = malloc(np * sizeof(*l->samples));
	l->sample_ptrs = malloc(np * sizeof(*l->sample_ptrs));
	if (!l->ts || !l->ts_ptrs || !l->labels || !l->label_ptrs || !l->samples || !l->sample_ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < r->pairs.n; i++) { /* one Label per pair, shared by the series */
		prometheus__label__init(&l->labels[i]);
		l->labels[i].name = r->pairs.arena.data + r->pairs.v[i].name;
		l->labels[i].value = r->pairs.arena.data + r->pairs.v[i].value;
	}
	for (size_t i = 0; i < r->nlabels; i++)
		l->label_ptrs[i] = &l->labels[r->labels[i]];
	for (size_t i = 0; i < r->n; i++) { /* each series' samples together, oldest first */
		struct series *x = &r->series[i];

		prometheus__time_series__init(&l->ts[i]);
		l->ts[i].labels = &l->label_ptrs[x->label0];
		l->ts[i].n_labels = x->nlabels;
		l->ts[i].samples = &l->sample_ptrs[next];
		l->ts[i].n_samples = x->count;
		l->ts_ptrs[i] = &l->ts[i];
		x->next = next;
		next += x->count;
	}
	for (size_t i = 0; i < r->nsamples; i++) {
		struct sample *s = &r->samples[i];
		Prometheus__Sample *p = &l->samples[r->series[s->series].next];

		prometheus__sample__init(p);
		p->value = s->value;
		p->timestamp = s->ts_ms;
		l->sample_ptrs[r->series[s->series].next++] = p;
	}
	return 0;
}

int push_request_encode(struct push_request *r, void **ret, size_t *ret_len)
{
	Prometheus__WriteRequest wr = PROMETHEUS__WRITE_REQUEST__INIT;
	struct layout l = { 0 };
	uint8_t *raw = NULL;
	char *out = NULL;
	size_t len, olen;
	int e = -ENOMEM;

	if (lay_out(r, &l) < 0)
		goto out;
	wr.timeseries = l.ts_ptrs;
	wr.n_timeseries = r->n;
	len = prometheus__write_request__get_packed_size(&wr);
	olen = snappy_max_compressed_length(len);
	if (!(raw = malloc(len ? len : 1)) || !(out = malloc(olen)))
		goto out;
	prometheus__write_request__pack(&wr, raw);
	if (snappy_compress((const char *)raw, len, out, &olen) != SNAPPY_OK) {
		e = -EIO;
		goto out;
	}
	*ret = out;
	*ret_len = olen;
	out = NULL;
	e = 0;
out:
	free(out);
	free(raw);
	layout_free(&l);
	return e;
}
