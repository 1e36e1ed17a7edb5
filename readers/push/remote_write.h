/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/remote_write.h: a Prometheus remote-write 1.0 request of
 * one or more snapshots' samples (protobuf by protoc-c, snappy), and its
 * POST: what the receiver's answer means for the batch.
 */
#ifndef KEPLER_PUSH_REMOTE_WRITE_H
#define KEPLER_PUSH_REMOTE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "samples.h"

struct push_request;

struct push_request *push_request_new(void);
void push_request_free(struct push_request *r);
/* Empty it for the next batch (its memory kept). */
void push_request_reset(struct push_request *r);

/* Add one snapshot's samples, stamped @ts_ms (snapshots oldest first). -ENOMEM. */
int push_request_add(struct push_request *r, const struct push_sample *s, size_t n, int64_t ts_ms);
size_t push_request_series(const struct push_request *r);
size_t push_request_samples(const struct push_request *r);

/* The request's body: the WriteRequest, snappy-compressed, in *@ret (malloc'ed). -ENOMEM, -EIO. */
int push_request_encode(const struct push_request *r, void **ret, size_t *ret_len);

enum push_result {
	PUSH_SENT,  /* 2xx */
	PUSH_RETRY, /* 5xx, 429, no answer: the same batch again later */
	PUSH_DROP,  /* another 4xx: the batch can never be taken */
};

struct push_http;

/*
 * A client of @url, each request limited to @timeout_ms, with @headers
 * ("Name: value", NULL-terminated) and an Authorization header of
 * @bearer_token (NULL: none). NULL when libcurl fails to start.
 */
struct push_http *push_http_new(const char *url, long timeout_ms, const char *const *headers,
				const char *bearer_token);
void push_http_free(struct push_http *h);

/*
 * POST @body. *@ret_status: the HTTP status (0: no answer), *@ret_retry_after_s:
 * the receiver's Retry-After in seconds (0: none), @why: what went wrong.
 */
enum push_result push_http_post(struct push_http *h, const void *body, size_t len, long *ret_status,
				uint64_t *ret_retry_after_s, char *why, size_t why_size);

#endif
