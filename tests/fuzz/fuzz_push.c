// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for kepler-push's parsers: the first byte chooses. 0:
 * each line of the input is a sample's key, as the renderer gives keys
 * (kepler_fmt_prom_samples(): the name up to '{'), put into both a
 * remote-write and an OTLP request, both encoded (labels of any shape,
 * escapes, keys cut anywhere, series repeated; push_key_labels() parses
 * them); 1: the input is an OTLP receiver's answer
 * (ExportMetricsServiceResponse), a network peer's bytes.
 * Parsing may fail; it must never crash, leak or read out of bounds. Each
 * request built must decode with the real messages (WriteRequest,
 * ExportMetricsServiceRequest), though packed otherwise, with one sample
 * per series and snapshot, and remote-write's with no empty label value and
 * byte for byte what protobuf-c packs for what it decodes to: else it aborts.
 */
#include <snappy-c.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "otlp.h"
#include "otlp_metrics.pb-c.h"
#include "remote_write.h"
#include "remote_write.pb-c.h"
#include "samples.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A remote-write body decoded as the receiver would: @samples in all, @per per series and key (a key repeated in the text: more). */
static void check_rw(const void *body, size_t len, size_t samples, int per)
{
	size_t raw_len, got = 0;
	char *raw;
	uint8_t *again;
	Prometheus__WriteRequest *wr;

	if (snappy_uncompressed_length(body, len, &raw_len) != SNAPPY_OK || !(raw = malloc(raw_len + 1)))
		abort();
	if (snappy_uncompress(body, len, raw, &raw_len) != SNAPPY_OK ||
	    !(wr = prometheus__write_request__unpack(NULL, raw_len, (const uint8_t *)raw)))
		abort();
	for (size_t i = 0; i < wr->n_timeseries; i++) {
		if (wr->timeseries[i]->n_samples % (size_t)per || !wr->timeseries[i]->n_samples ||
		    !wr->timeseries[i]->n_labels)
			abort();
		for (size_t l = 0; l < wr->timeseries[i]->n_labels; l++)
			if (!wr->timeseries[i]->labels[l]->value[0])
				abort();
		got += wr->timeseries[i]->n_samples;
	}
	if (got != samples || prometheus__write_request__get_packed_size(wr) != raw_len)
		abort();
	again = malloc(raw_len + 1);
	if (!again || prometheus__write_request__pack(wr, again) != raw_len || memcmp(again, raw, raw_len))
		abort();
	free(again);
	prometheus__write_request__free_unpacked(wr, NULL);
	free(raw);
}

/* An OTLP body decoded as the receiver would: @points in all. */
static void check_otlp(const void *body, size_t len, size_t points)
{
	Otlp__ExportMetricsServiceRequest *r = otlp__export_metrics_service_request__unpack(NULL, len, body);
	size_t got = 0;

	if (!r || r->n_resource_metrics != 1 || r->resource_metrics[0]->n_scope_metrics != 1)
		abort();
	for (size_t i = 0; i < r->resource_metrics[0]->scope_metrics[0]->n_metrics; i++) {
		const Otlp__Metric *m = r->resource_metrics[0]->scope_metrics[0]->metrics[i];

		got += m->data_case == OTLP__METRIC__DATA_SUM ? m->sum->n_data_points
							      : m->gauge->n_data_points;
	}
	if (got != points)
		abort();
	otlp__export_metrics_service_request__free_unpacked(r, NULL);
}

/* One request of @snapshots copies of @set to each builder, encoded and decoded; any failure aborts (no input here runs out of memory). */
static void request(struct push_request *rw, struct push_otlp *o, const struct push_samples *set,
		    int snapshots)
{
	struct push_otlp_node node = { "host", "node", "" };
	void *body;
	size_t len;

	push_request_reset(rw);
	push_otlp_reset(o);
	for (int i = 0; i < snapshots; i++)
		if (push_request_add(rw, set->v, set->n, 1000 * (i + 1)) < 0 ||
		    push_otlp_add(o, set->v, set->n, 1000 * (uint64_t)(i + 1)) < 0)
			abort();
	if (push_request_encode(rw, &body, &len) < 0)
		abort();
	check_rw(body, len, push_request_samples(rw), snapshots);
	free(body);
	if (push_otlp_encode(o, &node, &body, &len) < 0)
		abort();
	check_otlp(body, len, push_otlp_points(o));
	free(body);
}

static void keys(const char *p, size_t n)
{
	struct push_samples set = PUSH_SAMPLES_INIT;
	struct push_request *rw = push_request_new();
	struct push_otlp *o = push_otlp_new();
	const char *end = p + n;
	size_t cap = 0;

	if (!rw || !o)
		abort();
	for (const char *q = p; q < end;) {
		const char *nl = memchr(q, '\n', (size_t)(end - q)), *eol = nl ? nl : end;
		const char *brace = memchr(q, '{', (size_t)(eol - q));

		if (set.n == cap && !(set.v = realloc(set.v, (cap = cap ? 2 * cap : 16) * sizeof(*set.v))))
			abort();
		set.v[set.n] = (struct push_sample){ .key = q,
						     .key_len = (size_t)(eol - q),
						     .name_len = (size_t)((brace ? brace : eol) - q),
						     .value = (double)(eol - q) / 7,
						     .counter = set.n % 2 };
		set.n++;
		q = nl ? nl + 1 : end;
	}
	/* two snapshots (a series' samples together, copied into the body), then one (packed after its labels) */
	request(rw, o, &set, 2);
	request(rw, o, &set, 1);
	free(set.v);
	push_request_free(rw);
	push_otlp_free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[256];

	if (!size)
		return 0;
	if (data[0] == 0)
		keys((const char *)data + 1, size - 1);
	else
		push_otlp_rejected(data + 1, size - 1, why, sizeof(why));
	return 0;
}
