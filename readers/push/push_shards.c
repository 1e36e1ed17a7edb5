// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "push_arena.h"
#include "push_shards.h"
#include "remote_write.h"

struct part {
	struct push_sample *v;
	size_t n, cap;
};

struct push_shards {
	enum push_dest_kind kind;
	unsigned max, n;
	bool gzip;
	struct push_http *http;
	struct push_request *rw[PUSH_SHARDS_MAX];
	struct push_otlp *otlp[PUSH_SHARDS_MAX];
	bool taken[PUSH_SHARDS_MAX];
	struct part part[PUSH_SHARDS_MAX]; /* one snapshot's samples of each shard */
	struct libdeflate_compressor *gz;  /* made on first use */
	struct kepler_buf key;             /* a kept key, written to be hashed */
};

struct push_shards *push_shards_new(const struct push_shards_params *p)
{
	struct push_shards *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->kind = p->kind;
	s->max = p->max < 1 ? 1 : p->max > PUSH_SHARDS_MAX ? PUSH_SHARDS_MAX : p->max;
	s->n = 1;
	s->gzip = p->gzip;
	if (!(s->http = push_http_new(p->http, s->max)))
		goto fail;
	for (unsigned k = 0; k < s->max; k++)
		if (p->kind == PUSH_DEST_OTLP ? !(s->otlp[k] = push_otlp_new())
					      : !(s->rw[k] = push_request_new()))
			goto fail;
	return s;
fail:
	push_shards_free(s);
	return NULL;
}

void push_shards_free(struct push_shards *s)
{
	if (!s)
		return;
	for (unsigned k = 0; k < PUSH_SHARDS_MAX; k++) {
		push_request_free(s->rw[k]);
		push_otlp_free(s->otlp[k]);
		free(s->part[k].v);
	}
	push_http_free(s->http);
	kepler_buf_free(&s->key);
	if (s->gz)
		libdeflate_free_compressor(s->gz);
	free(s);
}

void push_shards_again(struct push_shards *s)
{
	for (unsigned k = 0; k < s->n; k++)
		if (s->kind == PUSH_DEST_OTLP)
			push_otlp_reset(s->otlp[k]);
		else
			push_request_reset(s->rw[k]);
}

void push_shards_begin(struct push_shards *s, unsigned n)
{
	s->n = n < 1 ? 1 : n > s->max ? s->max : n;
	memset(s->taken, 0, sizeof(s->taken));
	push_shards_again(s);
}

unsigned push_shards_count(const struct push_shards *s)
{
	return s->n;
}

int push_shards_add_to(struct push_shards *s, unsigned k, const struct push_sample *v, size_t n,
		       uint64_t wall_ns)
{
	if (k >= s->n || s->taken[k] || !n)
		return 0;
	if (s->kind == PUSH_DEST_OTLP)
		return push_otlp_add(s->otlp[k], v, n, wall_ns);
	return push_request_add(s->rw[k], v, n, (int64_t)(wall_ns / 1000000));
}

int push_shards_add(struct push_shards *s, const struct push_sample *v, size_t n, uint64_t wall_ns)
{
	int r = 0;

	if (s->n == 1)
		return push_shards_add_to(s, 0, v, n, wall_ns);
	for (unsigned k = 0; k < s->n; k++)
		s->part[k].n = 0;
	for (size_t i = 0; i < n; i++) {
		const char *key = push_sample_key(&v[i], &s->key);
		unsigned k;
		struct part *p;

		if (!key)
			return -ENOMEM;
		k = (unsigned)(XXH3_64bits(key, v[i].key_len) % s->n); /* (by key: its id may change) */
		p = &s->part[k];
		if (p->n == p->cap && push_room((void **)&p->v, p->n, 1, &p->cap, sizeof(*p->v)) < 0)
			return -ENOMEM;
		p->v[p->n++] = v[i];
	}
	for (unsigned k = 0; k < s->n && r == 0; k++)
		r = push_shards_add_to(s, k, s->part[k].v, s->part[k].n, wall_ns);
	return r;
}

static size_t points(const struct push_shards *s, unsigned k)
{
	return s->kind == PUSH_DEST_OTLP ? push_otlp_points(s->otlp[k]) : push_request_samples(s->rw[k]);
}

size_t push_shards_points(const struct push_shards *s)
{
	size_t most = 0;

	for (unsigned k = 0; k < s->n; k++)
		if (!s->taken[k] && points(s, k) > most)
			most = points(s, k);
	return most;
}

size_t push_shards_skipped(const struct push_shards *s)
{
	size_t n = 0;

	for (unsigned k = 0; k < s->n; k++)
		n += s->kind == PUSH_DEST_OTLP ? push_otlp_skipped(s->otlp[k])
					       : push_request_skipped(s->rw[k]);
	return n;
}

/*
 * @in (@len bytes) as a gzip member in *@ret (malloc'ed; @in freed), by
 * libdeflate: at level 1, 15 MB of OTLP in 16 ms where zlib takes 26, for
 * the same size. -ENOMEM, -EIO.
 */
static int gzip(struct push_shards *s, void *in, size_t len, void **ret, size_t *ret_len)
{
	size_t bound, n;
	void *out = NULL;
	int r = -ENOMEM;

	/* level 1: most of what gzip saves on this text-like protobuf, for a fraction of its CPU */
	if (!s->gz && !(s->gz = libdeflate_alloc_compressor(1)))
		goto out;
	bound = libdeflate_gzip_compress_bound(s->gz, len);
	if (!(out = malloc(bound)))
		goto out;
	if (!(n = libdeflate_gzip_compress(s->gz, in, len, out, bound))) {
		r = -EIO;
		goto out;
	}
	*ret = out;
	*ret_len = n;
	out = NULL;
	r = 0;
out:
	free(out);
	free(in);
	return r;
}

static int encode(struct push_shards *s, unsigned k, const struct push_otlp_node *node, void **body,
		  size_t *len)
{
	void *raw;
	size_t n;
	int r;

	if (s->kind != PUSH_DEST_OTLP)
		return push_request_encode(s->rw[k], body, len);
	r = push_otlp_encode(s->otlp[k], node, &raw, &n);
	if (r < 0 || !s->gzip) {
		*body = r < 0 ? NULL : raw;
		*len = n;
		return r;
	}
	return gzip(s, raw, n, body, len);
}

/* What shard @k's answer @a means: taken or not, said in @o. */
static void outcome_add(struct push_shards *s, unsigned k, const struct push_answer *a,
			struct push_outcome *o)
{
	if (a->result == PUSH_RETRY) {
		if (!o->retry++)
			snprintf(o->why, sizeof(o->why), "%s", a->why);
		if (a->retry_after_s > o->retry_after_s)
			o->retry_after_s = a->retry_after_s;
		return;
	}
	s->taken[k] = true;
	if (a->result == PUSH_DROP) {
		if (!o->dropped++ && !o->retry)
			snprintf(o->why, sizeof(o->why), "%s", a->why);
		return;
	}
	o->sent++;
	if (s->kind == PUSH_DEST_OTLP) { /* a partial success: the points it refused */
		size_t len;
		const void *body = push_http_answer_body(s->http, k, &len);
		char why[256];
		int64_t rejected = push_otlp_rejected(body, len, why, sizeof(why));

		if (rejected > 0 && !o->rejected)
			snprintf(o->rejected_why, sizeof(o->rejected_why), "%s", why);
		if (rejected > 0)
			o->rejected += rejected;
	}
}

int push_shards_send(struct push_shards *s, const struct push_otlp_node *node, struct push_outcome *ret)
{
	struct push_http_body bodies[PUSH_SHARDS_MAX] = { { 0 } };
	struct push_answer answers[PUSH_SHARDS_MAX];
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	for (unsigned k = 0; k < s->n && r == 0; k++) {
		void *body;

		if (s->taken[k])
			continue;
		if (!points(s, k)) { /* nothing of this shard: taken */
			s->taken[k] = true;
			continue;
		}
		if ((r = encode(s, k, node, &body, &bodies[k].len)) == 0) {
			bodies[k].data = body;
			ret->bytes += bodies[k].len;
		}
	}
	if (r == 0)
		push_http_post(s->http, bodies, answers);
	for (unsigned k = 0; k < s->n; k++) {
		if (r == 0 && bodies[k].data)
			outcome_add(s, k, &answers[k], ret);
		free((void *)bodies[k].data);
	}
	ret->done = true;
	for (unsigned k = 0; k < s->n; k++)
		ret->done = ret->done && s->taken[k];
	return r;
}
