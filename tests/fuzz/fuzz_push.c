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
 * 2: the input is processes of three snapshots (hostile names, pids that
 * repeat, types, states, processes that come and go), rendered one after
 * the other with the renderer's stable ids, as kepler-push renders: every
 * key, written or kept, must be the exposition's, and an id never name
 * two keys (kepler_prom_samples.stable_ids), else it aborts.
 */
#include <snappy-c.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/fmt.h"
#include "kepler/snapshot.h"
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

#define ID_PROCS 64

/* Each sample of @k (rendered from @snap) checked against the plain rendering's and the ids of the renderings before. */
static void check_ids(const struct kepler_snapshot *snap, const struct kepler_prom_samples *k,
		      const char *text, uint64_t *ids, char **named, size_t *nids)
{
	struct kepler_prom_options o = { .levels = KEPLER_LEVEL_PROCESS, .node_name = "n" };
	struct kepler_prom_samples ref = { 0 };
	struct kepler_buf plain = KEPLER_BUF_INIT, key = KEPLER_BUF_INIT;

	if (kepler_fmt_prom_samples(snap, &o, &plain, &ref) < 0 || ref.n != k->n)
		abort();
	for (size_t i = 0; i < k->n; i++) {
		size_t j = 0;

		kepler_buf_reset(&key);
		kepler_prom_sample_key(k, text, &k->v[i], &key);
		kepler_buf_addc(&key, 0);
		if (key.error || key.len - 1 != ref.v[i].key_len ||
		    memcmp(key.data, plain.data + ref.v[i].key_at, key.len - 1))
			abort();
		if (!k->v[i].id)
			continue;
		while (j < *nids && ids[j] != k->v[i].id)
			j++;
		if (j < *nids && strcmp(named[j], key.data))
			abort(); /* (one id, two keys) */
		if (j == *nids && j < 3 * 16 * ID_PROCS && (named[j] = strdup(key.data))) {
			ids[j] = k->v[i].id;
			(*nids)++;
		}
	}
	kepler_prom_samples_free(&ref);
	kepler_buf_free(&plain);
	kepler_buf_free(&key);
}

/* Lines: pid byte, flags byte (type, state, in which of three snapshots), comm, exe, container, VM (tab-separated). */
static void ids(const char *p, size_t n)
{
	static struct kepler_process procs[ID_PROCS], snap_procs[ID_PROCS];
	static struct kepler_energy e[2] = { { 1000000, 5 }, { 2000000, 7 } };
	static char strings[ID_PROCS][4][64];
	static uint64_t seen[3 * 16 * ID_PROCS];
	static char *named[3 * 16 * ID_PROCS];
	struct kepler_prom_options o = { .levels = KEPLER_LEVEL_PROCESS, .node_name = "n" };
	struct kepler_prom_samples k = { .keys_only = true, .stable_ids = true };
	struct kepler_snapshot snap = { .interval_ns = 5000000000ULL, .nzones = 2 };
	struct kepler_buf text = KEPLER_BUF_INIT;
	const char *end = p + n;
	size_t np = 0, nids = 0;

	snap.zones[0] = (struct kepler_zone){ .name = "package" };
	snap.zones[1] = (struct kepler_zone){ .name = "dram" };
	for (const char *q = p; q < end && np < ID_PROCS;) {
		const char *nl = memchr(q, '\n', (size_t)(end - q)), *eol = nl ? nl : end;
		struct kepler_process *x = &procs[np];

		memset(x, 0, sizeof(*x));
		x->pid = eol - q > 0 ? (uint8_t)q[0] % 16 : 0;
		x->flags = eol - q > 1 ? (uint8_t)q[1] : 0; /* (here: the input's flags, cleared below) */
		x->type = (enum kepler_process_type)(x->flags % 3);
		x->usage =
			(struct kepler_usage){ (enum kepler_state)((x->flags >> 2) % 2), 1000, 10, e, NULL };
		q = eol - q > 2 ? q + 2 : eol;
		for (int f = 0; f < 4; f++) {
			const char *tab = memchr(q, '\t', (size_t)(eol - q)), *fe = tab ? tab : eol;
			size_t len = (size_t)(fe - q) < 63 ? (size_t)(fe - q) : 63;

			memcpy(strings[np][f], q, len);
			strings[np][f][len] = 0;
			q = tab ? tab + 1 : eol;
		}
		x->comm = strings[np][0];
		x->exe = strings[np][1];
		x->container_id = strings[np][2];
		x->vm_id = strings[np][3];
		np++;
		q = nl ? nl + 1 : end;
	}
	for (int s = 0; s < 3; s++) {
		snap.nprocesses = 0;
		for (size_t i = 0; i < np; i++)
			if (!(procs[i].flags >> 3 & (1u << s))) {
				snap_procs[snap.nprocesses] = procs[i];
				snap_procs[snap.nprocesses++].flags = 0;
			}
		snap.processes = snap_procs;
		if (s == 2 && np && procs[0].flags & 0x80)
			snap.zones[1].name = "uncore"; /* (every id new) */
		kepler_buf_reset(&text);
		if (kepler_fmt_prom_samples(&snap, &o, &text, &k) < 0)
			abort();
		check_ids(&snap, &k, text.data, seen, named, &nids);
	}
	for (size_t i = 0; i < nids; i++)
		free(named[i]);
	kepler_prom_samples_free(&k);
	kepler_buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[256];

	if (!size)
		return 0;
	if (data[0] == 0)
		keys((const char *)data + 1, size - 1);
	else if (data[0] == 2)
		ids((const char *)data + 1, size - 1);
	else
		push_otlp_rejected(data + 1, size - 1, why, sizeof(why));
	return 0;
}
