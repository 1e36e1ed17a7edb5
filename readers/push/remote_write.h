/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/remote_write.h: a Prometheus remote-write 1.0 request of
 * one or more snapshots' samples (protobuf by protoc-c, snappy).
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
/* Samples of the batch whose key is not one (push_key_labels()): skipped. */
size_t push_request_skipped(const struct push_request *r);

/* The request's body: the WriteRequest, snappy-compressed, in *@ret (malloc'ed). -ENOMEM, -EIO. */
int push_request_encode(struct push_request *r, void **ret, size_t *ret_len);

#endif
