// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-push's requests, decoded with the real messages (WriteRequest,
 * ExportMetricsServiceRequest) although packed otherwise (remote-write's
 * samples and framing by hand, straight into the snappy block, byte for
 * byte what protobuf-c packs; OTLP from the *Packed messages): labels
 * sorted and unescaped, empty ones left out of remote-write, values and
 * times, a series' samples together, more than one chunk of them; a
 * caught-up request's records sent as they lie in the table; an OTLP
 * series of one sample sent from the room after its attributes;
 * keys that are not keys skipped and counted; the series table
 * forgetting what the last request did not see, within bounds; series
 * known by the renderer's ids; and the keys the renderer kept (not
 * written) giving the request the written keys give.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <snappy-c.h>

#include "kepler_test.h"

#include "kepler/fmt.h"
#include "kepler/snapshot.h"

#include "otlp.h"
#include "otlp_metrics.pb-c.h"
#include "push_series.h"
#include "remote_write.h"
#include "remote_write.pb-c.h"
#include "samples.h"

/*
 * A label-less series first (its attributes are no bytes at all), escapes,
 * empty label values (left out of remote-write, as its specification says;
 * kept as OTLP attributes), a bad key, a value of 0.
 */
static const struct {
	const char *key;
	double value;
	bool counter;
} lines[] = {
	{ "kepler_info", 1, false },
	{ "kepler_node_cpu_joules_total{node_name=\"n\\\"1\",zone=\"package\"}", 12.5, true },
	{ "kepler_node_cpu_joules_total{node_name=\"n\\\"1\",zone=\"dram\"}", 0.000001, true },
	{ "kepler_process_cpu_watts{comm=\"a b} 7\",container_id=\"\",pid=\"3\",Zz=\"up\"}",
	  1234567.1234567891, false },
	{ "kepler_bad{x=\"unterminated}", 3, false },
	{ "kepler_zero{a=\"\"}", 0, false },
};

/* The samples of lines[], as the renderer gives them (name: up to '{'). */
static void samples(struct push_samples *set)
{
	size_t n = sizeof(lines) / sizeof(lines[0]);

	set->v = calloc(n, sizeof(*set->v));
	assert_non_null(set->v);
	for (size_t i = 0; i < n; i++) {
		const char *brace = strchr(lines[i].key, '{');

		set->v[i] = (struct push_sample){ .key = lines[i].key,
						  .key_len = strlen(lines[i].key),
						  .name_len = brace ? (size_t)(brace - lines[i].key)
								    : strlen(lines[i].key),
						  .value = lines[i].value,
						  .counter = lines[i].counter };
	}
	set->n = set->cap = n;
}

static Prometheus__WriteRequest *rw_decode(struct push_request *r)
{
	void *body;
	size_t len, raw_len;
	char *raw;
	uint8_t *again;
	Prometheus__WriteRequest *wr;

	assert_int_equal(push_request_encode(r, &body, &len), 0);
	assert_int_equal(snappy_uncompressed_length(body, len, &raw_len), SNAPPY_OK);
	raw = malloc(raw_len);
	assert_int_equal(snappy_uncompress(body, len, raw, &raw_len), SNAPPY_OK);
	wr = prometheus__write_request__unpack(NULL, raw_len, (const uint8_t *)raw);
	assert_non_null(wr);
	/* byte for byte what protobuf-c packs for the message it decodes to (samples are packed by hand) */
	assert_int_equal(prometheus__write_request__get_packed_size(wr), raw_len);
	again = malloc(raw_len);
	assert_int_equal(prometheus__write_request__pack(wr, again), raw_len);
	assert_memory_equal(again, raw, raw_len);
	free(again);
	free(raw);
	free(body);
	return wr;
}

static void check_series(const Prometheus__TimeSeries *t, const char *labels, size_t nsamples)
{
	char got[512] = "";

	for (size_t i = 0; i < t->n_labels; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s=%s", i ? "," : "",
			 t->labels[i]->name, t->labels[i]->value);
	assert_string_equal(got, labels);
	assert_int_equal(t->n_samples, nsamples);
}

static void test_remote_write(void **state)
{
	struct push_samples set = PUSH_SAMPLES_INIT;
	struct push_request *r = push_request_new();
	Prometheus__WriteRequest *wr;

	(void)state;
	samples(&set);
	for (int pass = 0; pass < 2; pass++) {
		int snapshots = pass ? 1 : 2; /* two: copied into the body; one: sent from after its labels */

		push_request_reset(r);
		for (int k = 0; k < snapshots; k++)
			assert_int_equal(push_request_add(r, set.v, set.n, 1000 * (k + 1)), 0);
		assert_int_equal(push_request_skipped(r), (size_t)snapshots); /* kepler_bad, each time */
		wr = rw_decode(r);
		assert_int_equal(wr->n_timeseries, 5);
		check_series(wr->timeseries[0], "__name__=kepler_info", (size_t)snapshots);
		check_series(wr->timeseries[1],
			     "__name__=kepler_node_cpu_joules_total,node_name=n\"1,zone=package",
			     (size_t)snapshots);
		check_series(wr->timeseries[3], "Zz=up,__name__=kepler_process_cpu_watts,comm=a b} 7,pid=3",
			     (size_t)snapshots);
		assert_true(wr->timeseries[1]->samples[0]->value == 12.5);
		assert_true(wr->timeseries[2]->samples[0]->value == 0.000001);
		assert_true(wr->timeseries[3]->samples[0]->value == 1234567.1234567891);
		check_series(wr->timeseries[4], "__name__=kepler_zero", (size_t)snapshots);
		assert_true(wr->timeseries[4]->samples[0]->value == 0);
		assert_int_equal(wr->timeseries[4]->samples[snapshots - 1]->timestamp, 1000 * snapshots);
		for (int k = 0; k < snapshots; k++)
			assert_int_equal(wr->timeseries[1]->samples[k]->timestamp, 1000 * (k + 1));
		prometheus__write_request__free_unpacked(wr, NULL);
	}
	/* nothing added (every key refused, say): an empty WriteRequest */
	push_request_reset(r);
	wr = rw_decode(r);
	assert_int_equal(wr->n_timeseries, 0);
	prometheus__write_request__free_unpacked(wr, NULL);
	/* a backlog's batch: a series of more samples than are packed at once (64), all in order */
	push_request_reset(r);
	for (int k = 0; k < 150; k++)
		assert_int_equal(push_request_add(r, set.v, set.n, 1000 * (k + 1)), 0);
	wr = rw_decode(r);
	assert_int_equal(wr->n_timeseries, 5);
	for (size_t t = 0; t < wr->n_timeseries; t++) {
		assert_int_equal(wr->timeseries[t]->n_samples, 150);
		for (int k = 0; k < 150; k++)
			assert_int_equal(wr->timeseries[t]->samples[k]->timestamp, 1000 * (k + 1));
	}
	prometheus__write_request__free_unpacked(wr, NULL);
	push_request_free(r);
	push_samples_free(&set);
}

/*
 * Request @r of @n series k{i="@from..",pad="..."} (100-byte labels), each
 * once, at @ts_ms; every @zero_every-th value 0 (its sample not in its slot).
 */
static void add_many(struct push_request *r, int from, int n, int64_t ts_ms, int zero_every)
{
	struct push_sample *v = calloc((size_t)n, sizeof(*v));
	char(*keys)[160] = calloc((size_t)n, sizeof(*keys));

	assert_true(v && keys);
	for (int i = 0; i < n; i++) {
		v[i].key = keys[i];
		v[i].key_len =
			(size_t)snprintf(keys[i], sizeof(keys[i]), "k{i=\"%d\",pad=\"%0100d\"}", from + i, i);
		v[i].name_len = 1;
		v[i].value = (from + i) % zero_every ? (double)(from + i) + 0.5 : 0;
	}
	assert_int_equal(push_request_add(r, v, (size_t)n, ts_ms), 0);
	free(keys);
	free(v);
}

/* Each series' one sample: its value and time, in order of i: from[0] .. from[0] + n[0] - 1, from[1] ... */
static void check_ranges(struct push_request *r, const int *from, const int *n, size_t nranges, int64_t ts_ms,
			 int zero_every)
{
	Prometheus__WriteRequest *wr = rw_decode(r);
	size_t at = 0;
	char want[32];

	for (size_t k = 0; k < nranges; k++)
		for (int i = from[k]; i < from[k] + n[k]; i++, at++) {
			const Prometheus__TimeSeries *t;

			assert_true(at < wr->n_timeseries);
			t = wr->timeseries[at];
			assert_int_equal(t->n_labels, 3);
			snprintf(want, sizeof(want), "%d", i);
			assert_string_equal(t->labels[1]->value, want);
			assert_int_equal(t->n_samples, 1);
			assert_true(t->samples[0]->value == (i % zero_every ? (double)i + 0.5 : 0));
			assert_int_equal(t->samples[0]->timestamp, ts_ms);
		}
	assert_int_equal(wr->n_timeseries, at);
	prometheus__write_request__free_unpacked(wr, NULL);
}

static void check_many(struct push_request *r, int from, int n, int64_t ts_ms, int zero_every)
{
	check_ranges(r, &from, &n, 1, ts_ms, zero_every);
}

/*
 * Caught-up requests (each series once, at a time of today): each series'
 * sample written after its labels in the table and runs of them compressed
 * where they lie (more than a fragment, more than a run); broken by zeros,
 * by new series between known ones, by times of other lengths, and by a
 * backlog's batch: the body byte for byte what protobuf-c packs each time.
 */
static void test_remote_write_in_place(void **state)
{
	struct push_request *r = push_request_new();
	const int64_t now = INT64_C(1796000000000); /* 2026-11 */
	Prometheus__WriteRequest *wr;

	(void)state;
	for (int pass = 0; pass < 3; pass++) { /* new, then known, then known again */
		push_request_reset(r);
		add_many(r, 0, 20000, now + pass, 1000);
		check_many(r, 0, 20000, now + pass, 1000);
	}
	push_request_reset(r); /* half of them gone, new ones among the rest */
	add_many(r, 10000, 5000, now + 3, 7);
	add_many(r, 50000, 300, now + 3, 7);
	add_many(r, 15000, 5000, now + 3, 7);
	check_ranges(r, (const int[]){ 10000, 50000, 15000 }, (const int[]){ 5000, 300, 5000 }, 3, now + 3,
		     7);
	push_request_reset(r); /* a time of 1 varint byte, of 7: not in the slots */
	add_many(r, 10000, 3000, 100, 1000);
	check_many(r, 10000, 3000, 100, 1000);
	push_request_reset(r);
	add_many(r, 10000, 3000, INT64_C(1) << 42, 1000);
	check_many(r, 10000, 3000, INT64_C(1) << 42, 1000);
	push_request_reset(r); /* two snapshots: a backlog's batch, not in the slots; then one again */
	add_many(r, 10000, 3000, now + 4, 1000);
	add_many(r, 10000, 3000, now + 5, 1000);
	wr = rw_decode(r);
	assert_int_equal(wr->n_timeseries, 3000);
	for (size_t t = 0; t < wr->n_timeseries; t++) {
		assert_int_equal(wr->timeseries[t]->n_samples, 2);
		assert_int_equal(wr->timeseries[t]->samples[0]->timestamp, now + 4);
		assert_int_equal(wr->timeseries[t]->samples[1]->timestamp, now + 5);
	}
	prometheus__write_request__free_unpacked(wr, NULL);
	push_request_reset(r);
	add_many(r, 10000, 3000, now + 6, 1000);
	check_many(r, 10000, 3000, now + 6, 1000);
	push_request_free(r);
}

static void test_otlp(void **state)
{
	struct push_samples set = PUSH_SAMPLES_INIT;
	struct push_otlp *o = push_otlp_new();
	struct push_otlp_node node = { "host", "node", "" };
	Otlp__ExportMetricsServiceRequest *req;
	const Otlp__ScopeMetrics *sm;
	void *body;
	size_t len;

	(void)state;
	samples(&set);
	for (int pass = 0; pass < 2; pass++) {
		int snapshots = pass ? 1 : 2;

		push_otlp_reset(o);
		for (int k = 0; k < snapshots; k++)
			assert_int_equal(push_otlp_add(o, set.v, set.n, 1000 * (uint64_t)(k + 1)), 0);
		assert_int_equal(push_otlp_skipped(o), (size_t)snapshots);
		assert_int_equal(push_otlp_encode(o, &node, &body, &len), 0);
		req = otlp__export_metrics_service_request__unpack(NULL, len, body);
		assert_non_null(req);
		sm = req->resource_metrics[0]->scope_metrics[0];
		assert_int_equal(sm->n_metrics, 4);
		assert_string_equal(sm->metrics[0]->name, "kepler_info");
		assert_int_equal(sm->metrics[0]->data_case, OTLP__METRIC__DATA_GAUGE);
		assert_int_equal(sm->metrics[0]->gauge->n_data_points, snapshots);
		assert_int_equal(sm->metrics[0]->gauge->data_points[0]->n_attributes, 0);
		assert_string_equal(sm->metrics[1]->name, "kepler_node_cpu_joules_total");
		assert_string_equal(sm->metrics[1]->unit, "J");
		assert_int_equal(sm->metrics[1]->data_case, OTLP__METRIC__DATA_SUM);
		assert_true(sm->metrics[1]->sum->is_monotonic);
		assert_int_equal(sm->metrics[1]->sum->n_data_points, 2 * snapshots);
		/* points in the order added: snapshot by snapshot */
		assert_string_equal(sm->metrics[1]->sum->data_points[0]->attributes[0]->value->string_value,
				    "n\"1");
		assert_string_equal(sm->metrics[1]->sum->data_points[1]->attributes[1]->value->string_value,
				    "dram");
		assert_int_equal(sm->metrics[1]->sum->data_points[2 * snapshots - 1]->time_unix_nano,
				 1000 * (uint64_t)snapshots);
		assert_true(sm->metrics[1]->sum->data_points[0]->as_double == 12.5);
		assert_string_equal(sm->metrics[2]->gauge->data_points[0]->attributes[0]->key, "Zz");
		assert_string_equal(sm->metrics[2]->gauge->data_points[0]->attributes[1]->value->string_value,
				    "a b} 7");
		assert_int_equal(sm->metrics[2]->gauge->data_points[0]->n_attributes, 4);
		assert_string_equal(sm->metrics[2]->gauge->data_points[0]->attributes[2]->key,
				    "container_id");
		assert_string_equal(sm->metrics[2]->gauge->data_points[0]->attributes[2]->value->string_value,
				    "");
		assert_string_equal(sm->metrics[3]->name, "kepler_zero");
		assert_int_equal(sm->metrics[3]->gauge->data_points[0]->n_attributes, 1);
		otlp__export_metrics_service_request__free_unpacked(req, NULL);
		free(body);
	}
	push_otlp_free(o);
	push_samples_free(&set);
}

/* The "encoding" of a test table: the labels' count, then the last label's value. */
static int encode_test(void *ctx, const struct push_label *l, size_t n, struct push_arena *out)
{
	char tmp[64];
	int len = snprintf(tmp, sizeof(tmp), "%zu:%s", n, l[n - 1].value);
	char *to = push_arena_room(out, (size_t)len);

	(void)ctx;
	if (!to)
		return -1;
	memcpy(to, tmp, (size_t)len);
	out->len += (size_t)len;
	return 0;
}

/* Request @req: series x{i="@from"} to x{i="@to"}, each found with its own bytes. */
static void find_range(struct push_series *c, int from, int to)
{
	char key[64], want[64];
	struct push_sample s = { 0 };
	size_t at, len;
	unsigned flags;

	assert_int_equal(push_series_begin(c), 0);
	for (int i = from; i < to; i++) {
		s.key = key;
		s.key_len = (size_t)snprintf(key, sizeof(key), "x{i=\"%d\"}", i);
		s.name_len = 1;
		assert_int_equal(push_series_find(c, &s, &at, &flags), 0);
		assert_true(flags & PUSH_SERIES_FIRST);
		snprintf(want, sizeof(want), "2:%d", i);
		const char *got = push_series_labels(c, at, &len);
		assert_int_equal(len, strlen(want));
		assert_memory_equal(got, want, len);
	}
}

static void test_series_forgotten(void **state)
{
	struct push_series c;

	(void)state;
	push_series_init(&c, encode_test, NULL, 8);
	find_range(&c, 0, 2000);
	find_range(&c, 0, 2000); /* found again, all of them */
	assert_int_equal(c.n, 2000);
	find_range(&c, 2000, 4000); /* the first 2,000 unseen in one request: kept, being half */
	assert_int_equal(c.n, 4000);
	find_range(&c, 4000, 6000);  /* 0..3999 stale, two thirds: forgotten at this begin */
	assert_int_equal(c.n, 4000); /* 2000..5999 */
	find_range(&c, 2000, 4000);  /* found again: nothing new */
	assert_int_equal(c.n, 4000);
	find_range(&c, 0, 100); /* forgotten ones come back as new; 4000..5999, stale and half, forgotten */
	assert_int_equal(c.n, 2100);
	/* every series new at every request: the table stays within four requests' worth */
	for (int r = 0; r < 20; r++) {
		find_range(&c, 10000 + r * 2000, 12000 + r * 2000);
		assert_true(c.n <= 4 * 2000 + 100);
	}
	push_series_free(&c);
}

/* @key with the renderer's id @id: found as @want (SIZE_MAX: new) */
static size_t find_id(struct push_series *c, const char *key, uint64_t id, size_t want)
{
	struct push_sample s = { .key = key, .key_len = strlen(key), .name_len = 1, .id = id };
	size_t at;
	unsigned flags;

	assert_int_equal(push_series_find(c, &s, &at, &flags), 0);
	if (want == SIZE_MAX)
		assert_true(flags & PUSH_SERIES_NEW);
	else
		assert_int_equal(at, want);
	return at;
}

/*
 * A series known by the renderer's id once its entry holds it: the one
 * after the last found is taken by id, its key not read (one id, one key:
 * kepler_prom_sample.id); a known key with a new id is found by the key,
 * and named by that id from then on.
 */
static void test_series_by_id(void **state)
{
	struct push_series c;
	size_t a, b;

	(void)state;
	push_series_init(&c, encode_test, NULL, 8);
	assert_int_equal(push_series_begin(&c), 0);
	a = find_id(&c, "x{i=\"1\"}", 10, SIZE_MAX);
	b = find_id(&c, "x{i=\"2\"}", 11, SIZE_MAX);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(push_series_begin(&c), 0);
		find_id(&c, "x{i=\"1\"}", 10, a);
		find_id(&c, "x{i=\"2\"}", 11, b);
	}
	assert_int_equal(push_series_begin(&c), 0);
	find_id(&c, "y{not=\"read\"}", 10, a); /* (taken by its id: the key is not read) */
	find_id(&c, "x{i=\"2\"}", 12, b);      /* a new id for a known key: by the key */
	find_id(&c, "x{i=\"3\"}", 13, SIZE_MAX);
	assert_int_equal(c.n, 3);
	assert_int_equal(push_series_begin(&c), 0);
	find_id(&c, "x{i=\"1\"}", 10, a);
	find_id(&c, "z{not=\"read\"}", 12, b); /* named by the new id now */
	assert_int_equal(c.n, 3);
	push_series_free(&c);
}

/* Two processes in one zone, as a snapshot gives them. */
struct tiny {
	struct kepler_snapshot s;
	struct kepler_process p[2];
	struct kepler_energy e[2];
};

static void tiny_build(struct tiny *t)
{
	memset(t, 0, sizeof(*t));
	t->s.interval_ns = 5000000000ULL;
	t->s.nzones = 1;
	t->s.zones[0] = (struct kepler_zone){ .name = "package", .source = KEPLER_SOURCE_RAPL };
	for (int i = 0; i < 2; i++) {
		t->e[i] = (struct kepler_energy){ 1000000ULL * (uint64_t)(i + 1), 5000 };
		t->p[i] = (struct kepler_process){ .pid = (uint32_t)(7 + i),
						   .start_time_ns = 1,
						   .comm = i ? "b \"q\"" : "a",
						   .exe = "/bin/x",
						   .container_id = "",
						   .vm_id = "",
						   .usage = { KEPLER_STATE_RUNNING, 1000, 10, &t->e[i],
							      NULL } };
	}
	t->s.nprocesses = 2;
	t->s.processes = t->p;
}

/* @snap's samples into @r (reset), rendered into @k (kept: with stable ids); the request, decoded. */
static Prometheus__WriteRequest *request_of(struct push_request *r, const struct kepler_snapshot *snap,
					    struct kepler_prom_samples *k, bool stable)
{
	struct kepler_prom_options o = { .levels = KEPLER_LEVEL_PROCESS, .node_name = "n" };
	struct kepler_buf text = KEPLER_BUF_INIT;
	struct push_samples set = PUSH_SAMPLES_INIT;
	Prometheus__WriteRequest *wr;
	size_t kept = 0;

	k->keys_only = true;
	k->stable_ids = stable;
	assert_int_equal(kepler_fmt_prom_samples(snap, &o, &text, k), 0);
	assert_int_equal(push_samples_from(&set, text.data, k), 0);
	for (size_t i = 0; i < set.n; i++)
		kept += !set.v[i].key;
	assert_true(stable ? kept == 2 * 3 : kept == 0); /* (joules, watts, seconds) */
	push_request_reset(r);
	assert_int_equal(push_request_add(r, set.v, set.n, INT64_C(1796000000000)), 0);
	wr = rw_decode(r);
	push_samples_free(&set);
	kepler_buf_free(&text);
	return wr;
}

/* Kept keys (not written by the renderer): the request is the one of the keys written, snapshot after snapshot. */
static void test_kept_keys(void **state)
{
	struct push_request *plain = push_request_new(), *ided = push_request_new();
	struct kepler_prom_samples a = { 0 }, b = { 0 };
	struct tiny t;

	(void)state;
	tiny_build(&t);
	for (int snap = 0; snap < 4; snap++) {
		Prometheus__WriteRequest *x, *y;
		uint8_t *px, *py;
		size_t nx;

		if (snap == 2)
			t.p[1].comm = "renamed"; /* (a new id for its series; the old series gone) */
		t.e[0].total_uj += 1000;
		x = request_of(plain, &t.s, &a, false);
		y = request_of(ided, &t.s, &b, true);
		nx = prometheus__write_request__get_packed_size(x);
		assert_int_equal(prometheus__write_request__get_packed_size(y), nx);
		px = malloc(nx);
		py = malloc(nx);
		prometheus__write_request__pack(x, px);
		prometheus__write_request__pack(y, py);
		assert_memory_equal(px, py, nx);
		assert_true(x->n_timeseries > 2 * 3); /* (and the snapshot's own families) */
		free(px);
		free(py);
		prometheus__write_request__free_unpacked(x, NULL);
		prometheus__write_request__free_unpacked(y, NULL);
	}
	kepler_prom_samples_free(&a);
	kepler_prom_samples_free(&b);
	push_request_free(plain);
	push_request_free(ided);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remote_write), cmocka_unit_test(test_remote_write_in_place),
		cmocka_unit_test(test_otlp),         cmocka_unit_test(test_series_forgotten),
		cmocka_unit_test(test_series_by_id), cmocka_unit_test(test_kept_keys),
	};

	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
