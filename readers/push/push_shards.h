/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/push_shards.h: one destination's batch as up to
 * push.max-in-flight requests sent at once. Each sample goes to its
 * series' shard (a hash of its key), so that a series' samples are in one
 * request, oldest first; a batch is acknowledged once every shard was
 * taken, and the next batch begins only then: so each series' samples
 * reach the receiver in order, as remote-write requires, whatever order
 * the shards' answers come in. A shard taken is not sent again when the
 * batch is retried for another.
 */
#ifndef KEPLER_PUSH_SHARDS_H
#define KEPLER_PUSH_SHARDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "otlp.h"
#include "push_http.h"
#include "push_secrets.h"
#include "samples.h"

#define PUSH_SHARDS_MAX 64

struct push_shards_params {
	enum push_dest_kind kind;
	unsigned max; /* push.max-in-flight */
	bool gzip;    /* OTLP bodies gzip-compressed */
	const struct push_http_params *http;
};

/* How a batch's shards went this time. */
struct push_outcome {
	unsigned sent, dropped, retry; /* shards answered so this time */
	size_t bytes;                  /* the bodies sent this time */
	bool done;                     /* every shard of the batch taken (sent or dropped) */
	uint64_t retry_after_s;        /* the longest Retry-After of those to retry */
	char why[256];                 /* of a shard to retry, else of one dropped */
	int64_t rejected;              /* OTLP data points a receiver rejected in a partial success */
	char rejected_why[256];
};

struct push_shards;

/* NULL: out of memory, or libcurl failed to start. */
struct push_shards *push_shards_new(const struct push_shards_params *p);
void push_shards_free(struct push_shards *s);

/* A new batch in @n shards (1 to max): empty requests, none taken. */
void push_shards_begin(struct push_shards *s, unsigned n);
/* The same batch built again for a retry: its requests emptied, the shards taken still taken. */
void push_shards_again(struct push_shards *s);
unsigned push_shards_count(const struct push_shards *s);

/* One snapshot's samples, each to its series' shard, stamped @wall_ns. -ENOMEM. */
int push_shards_add(struct push_shards *s, const struct push_sample *v, size_t n, uint64_t wall_ns);
/* Samples to shard @k alone (kepler-push's own figures). -ENOMEM. */
int push_shards_add_to(struct push_shards *s, unsigned k, const struct push_sample *v, size_t n,
		       uint64_t wall_ns);
/* The samples (remote-write) or points (OTLP) of the fullest shard not yet taken. */
size_t push_shards_points(const struct push_shards *s);
/* Samples whose key is not one, skipped, in the batch. */
size_t push_shards_skipped(const struct push_shards *s);

/*
 * Every shard not yet taken encoded (OTLP: for @node) and POSTed at once;
 * *@ret says how it went. -ENOMEM or -EIO (nothing sent).
 */
int push_shards_send(struct push_shards *s, const struct push_otlp_node *node, struct push_outcome *ret);

#endif
