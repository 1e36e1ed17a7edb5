/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/otlp.h: an OTLP/HTTP metrics request (protobuf by
 * protoc-c) of one or more snapshots' samples. A family whose exposition
 * says "counter" is a cumulative, monotonic Sum (joules, seconds), any
 * other a Gauge (watts, info); each sample's labels but __name__ are its
 * data point's attributes, so a receiver sees the exporter's names and
 * labels; the node is the resource (service.name kepler-c, host.name,
 * service.instance.id the node's name).
 */
#ifndef KEPLER_PUSH_OTLP_H
#define KEPLER_PUSH_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "samples.h"

struct push_otlp;

/* The resource: the node the store is of. */
struct push_otlp_node {
	const char *host_name;  /* the store's hostname */
	const char *node_name;  /* kube.node-name or the host name */
	const char *machine_id; /* "" when unknown */
};

struct push_otlp *push_otlp_new(void);
void push_otlp_free(struct push_otlp *o);
/* Empty it for the next batch (its memory kept). */
void push_otlp_reset(struct push_otlp *o);

/* Add one snapshot's samples, taken at @ts_ns (snapshots oldest first). -ENOMEM. */
int push_otlp_add(struct push_otlp *o, const struct push_sample *s, size_t n, uint64_t ts_ns);
size_t push_otlp_points(const struct push_otlp *o);
/* Samples of the batch whose key is not one (push_key_labels()): skipped. */
size_t push_otlp_skipped(const struct push_otlp *o);

/* The request's body (ExportMetricsServiceRequest) in *@ret (malloc'ed). -ENOMEM. */
int push_otlp_encode(struct push_otlp *o, const struct push_otlp_node *node, void **ret, size_t *ret_len);

/*
 * An answer's ExportMetricsServiceResponse: the data points the receiver
 * rejected (its partial_success), its message in @why. 0: none, or an
 * answer that is not one (ignored).
 */
int64_t push_otlp_rejected(const void *body, size_t len, char *why, size_t why_size);

#endif
