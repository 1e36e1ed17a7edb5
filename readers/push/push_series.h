/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/push_series.h: the series a destination sends, kept from
 * one request to the next. Each is found by its key (its exposition line
 * up to the value), or by the renderer's id of that key, and holds its
 * labels as protobuf bytes, parsed and
 * encoded once, when first seen (by the caller's function, with
 * protobuf-c), not at every snapshot: a node's series are mostly the same
 * from one snapshot to the next, and most of a request's bytes are labels.
 * Series come in the same order each snapshot, so the one after the last
 * found is tried before the hash. Room for one sample is kept after each
 * series' bytes, so that the caller packs a request's single sample of a
 * series there and sends labels and sample as they lie, without a copy.
 * Series not seen in the last request are forgotten once they are as many
 * as the others (the table is built again), so that processes that come
 * and go do not grow it: the table holds at most four times a request's
 * series, where every series would be new at every snapshot, and little
 * more than them on a node whose series change slowly.
 */
#ifndef KEPLER_PUSH_SERIES_H
#define KEPLER_PUSH_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "push_arena.h"
#include "push_index.h"
#include "samples.h"

struct push_series_entry {
	size_t key, key_len; /* in the table's keys */
	size_t enc, enc_len; /* its record in the table's enc: head bytes, then its labels (enc_len) */
	size_t head;         /* the bytes before its labels (the caller's: push_encode_fn's answer) */
	bool invalid;        /* a key that is not one: its samples are skipped */
	uint32_t seen;       /* the request it was last found in */
	size_t follower;     /* the entry found after it last time, + 1 (0: none) */
	uint64_t id;         /* the renderer's id of its key, last seen (push_sample.id); 0: none */
	/* the caller's */
	size_t metric;      /* (OTLP: its metric) */
	size_t count, next; /* its samples in the current request; (where its next goes, while encoding) */
	size_t wire;        /* its TimeSeries' packed length in the current request */
};

/*
 * Append the encoding of @n labels (sorted by name, __name__ among them)
 * to @out (push_arena_room(), then out->len moved), after as many bytes of
 * the caller's as it likes (a head: what goes before the labels on the
 * wire, kept with them). The head's length; -ENOMEM.
 */
typedef int (*push_encode_fn)(void *ctx, const struct push_label *labels, size_t n, struct push_arena *out);

struct push_series {
	struct push_series_entry *v;
	size_t n, cap;
	struct push_arena keys, enc;
	struct push_index index;
	uint32_t request; /* the current request's number */
	size_t found;     /* the entries found in it */
	size_t prev;      /* the entry found last, + 1 */
	push_encode_fn encode;
	void *ctx;
	size_t tail;   /* the room after each series' bytes */
	char *scratch; /* a key's labels, while parsed */
	size_t scratch_cap;
	struct kepler_buf key; /* a kept key, written to be looked up (push_sample_key()) */
};

/* Flags of push_series_find()'s answer. */
#define PUSH_SERIES_NEW 1u   /* not in the table before: its caller's fields to fill */
#define PUSH_SERIES_FIRST 2u /* the first time in the current request */

/* @tail: the room kept after each series' bytes (push_series_tail()). */
void push_series_init(struct push_series *c, push_encode_fn encode, void *ctx, size_t tail);
void push_series_free(struct push_series *c);
/*
 * A new request begins: the series not seen in the last one forgotten
 * when they are as many as the others. -ENOMEM (nothing forgotten then).
 */
int push_series_begin(struct push_series *c);
/*
 * The entry of @s's series into *@ret (added, its labels encoded, when new),
 * with PUSH_SERIES_* flags in *@flags. A sample with an id is its series'
 * when that series' entry holds the id (the one found after the last is
 * tried first, as with keys): its key is then not read. 1: a key that is
 * not one (the sample is to be skipped); -ENOMEM (or a kept key whose
 * rendering is gone).
 */
int push_series_find(struct push_series *c, const struct push_sample *s, size_t *ret, unsigned *flags);

static inline const void *push_series_labels(const struct push_series *c, size_t i, size_t *len)
{
	*len = c->v[i].enc_len;
	return c->enc.data + c->v[i].enc + c->v[i].head;
}

/* The room after series @i's bytes: the tail given to push_series_init(), for its caller to write in. */
static inline void *push_series_tail(const struct push_series *c, size_t i)
{
	return c->enc.data + c->v[i].enc + c->v[i].head + c->v[i].enc_len;
}

/*
 * Series @i's whole record: its head, labels and tail, *@len bytes. Records
 * lie in the order their series were first found, each right after the
 * one before (until the table is built again: in the same order then), so
 * that series found in that order are one run of bytes.
 */
static inline char *push_series_record(const struct push_series *c, size_t i, size_t *len)
{
	*len = c->v[i].head + c->v[i].enc_len + c->tail;
	return c->enc.data + c->v[i].enc;
}

#endif
