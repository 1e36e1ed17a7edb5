// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp.h"
#include "otlp_metrics.pb-c.h"
#include "push_arena.h"
#include "push_index.h"
#include "push_series.h"

/* A point's packed size at most: time (tag, 8 bytes), value (tag, 8 bytes). */
#define POINT_MAX 24

struct opoint {
	size_t series;
	uint64_t ts_ns;
	double value;
	bool tail;   /* its series' first in the batch: packed in the room after its attributes */
	size_t slot; /* (its place among its metric's, while encoding) */
};

/* A metric: a family's name and kind, kept from one batch to the next (there are a few dozen). */
struct ometric {
	size_t name, name_len; /* in names */
	bool sum;              /* a counter: cumulative and monotonic */
	uint32_t request;      /* the batch it was last in */
	size_t count, next;    /* its points in the batch; (where its next goes, while encoding) */
};

/*
 * A batch: its metrics, in the order first added, and its points (series,
 * time, value) in the order added. The series with their attributes'
 * bytes (push_series.h) and the metrics are kept from one batch to the
 * next; the rest of the memory too.
 */
struct push_otlp {
	struct push_series table;
	struct ometric *metrics;
	size_t nmetrics, capmetrics;
	struct push_arena names;
	struct push_index mindex;
	uint32_t request;
	size_t *order; /* the batch's metrics */
	size_t norder, order_cap;
	struct opoint *points;
	size_t npoints, cappoints;
	size_t skipped;
	/* encoding */
	ProtobufCBinaryData *dp;
	size_t dp_cap;
	Otlp__MetricPacked *pm, **pm_ptrs;
	Otlp__SumPacked *sums;
	Otlp__GaugePacked *gauges;
	size_t pm_cap, pm_ptrs_cap, sums_cap, gauges_cap;
	struct push_arena body; /* each point packed */
	struct kepler_buf key;  /* a kept key, written for its name (push_sample_key()) */
};

static const char *metric_key(const void *ctx, size_t i, size_t *len)
{
	const struct push_otlp *o = ctx;

	*len = o->metrics[i].name_len;
	return o->names.data + o->metrics[i].name;
}

/* A series' attributes (its labels but __name__) as the start of a packed NumberDataPoint (push_encode_fn). */
static int encode_attributes(void *ctx, const struct push_label *l, size_t n, struct push_arena *out)
{
	Otlp__KeyValue kv[PUSH_MAX_LABELS], *ptr[PUSH_MAX_LABELS];
	Otlp__AnyValue av[PUSH_MAX_LABELS];
	Otlp__NumberDataPoint d = OTLP__NUMBER_DATA_POINT__INIT;
	size_t na = 0, size;
	void *to;

	(void)ctx;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(l[i].name, "__name__"))
			continue;
		otlp__key_value__init(&kv[na]);
		otlp__any_value__init(&av[na]);
		av[na].value_case = OTLP__ANY_VALUE__VALUE_STRING_VALUE;
		av[na].string_value = (char *)l[i].value;
		kv[na].key = (char *)l[i].name;
		kv[na].value = &av[na];
		ptr[na] = &kv[na];
		na++;
	}
	d.attributes = ptr;
	d.n_attributes = na;
	size = otlp__number_data_point__get_packed_size(&d);
	if (!(to = push_arena_room(out, size)))
		return -ENOMEM;
	out->len += otlp__number_data_point__pack(&d, to);
	return 0; /* (no head) */
}

struct push_otlp *push_otlp_new(void)
{
	struct push_otlp *o = calloc(1, sizeof(*o));

	if (o) {
		push_series_init(&o->table, encode_attributes, NULL, POINT_MAX);
		o->mindex.key_of = metric_key;
		o->request = 1;
	}
	return o;
}

void push_otlp_reset(struct push_otlp *o)
{
	o->norder = o->npoints = o->skipped = 0;
	o->request++;
	(void)push_series_begin(&o->table); /* (out of memory: what is stale stays, no harm) */
}

void push_otlp_free(struct push_otlp *o)
{
	if (!o)
		return;
	push_series_free(&o->table);
	kepler_buf_free(&o->key);
	free(o->metrics);
	push_arena_free(&o->names);
	push_index_free(&o->mindex);
	free(o->order);
	free(o->points);
	free(o->dp);
	free(o->pm);
	free(o->pm_ptrs);
	free(o->sums);
	free(o->gauges);
	push_arena_free(&o->body);
	free(o);
}

size_t push_otlp_points(const struct push_otlp *o)
{
	return o->npoints;
}

size_t push_otlp_skipped(const struct push_otlp *o)
{
	return o->skipped;
}

/* The metric of @s's family, new when none yet. SIZE_MAX: out of memory. */
static size_t metric_of(struct push_otlp *o, const struct push_sample *s)
{
	const char *key = push_sample_key(s, &o->key);
	size_t at;
	struct ometric *m;

	if (!key ||
	    push_room((void **)&o->metrics, o->nmetrics, 1, &o->capmetrics, sizeof(*o->metrics)) < 0 ||
	    push_index_find(&o->mindex, o, o->nmetrics, key, s->name_len, &at) < 0)
		return SIZE_MAX;
	if (at < o->nmetrics)
		return at;
	m = &o->metrics[at];
	memset(m, 0, sizeof(*m)); /* (name_len 0 until whole: one abandoned matches nothing) */
	o->nmetrics++;
	if ((m->name = push_arena_put(&o->names, key, s->name_len)) == SIZE_MAX) {
		m->name = 0;
		return SIZE_MAX;
	}
	m->name_len = s->name_len;
	m->sum = s->counter;
	return at;
}

int push_otlp_add(struct push_otlp *o, const struct push_sample *s, size_t n, uint64_t ts_ns)
{
	if (push_room((void **)&o->points, o->npoints, n, &o->cappoints, sizeof(*o->points)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t at;
		unsigned flags;
		int e = push_series_find(&o->table, &s[i], &at, &flags);
		struct ometric *m;

		if (e < 0)
			return e;
		if (e == 1) { /* not a key: skipped, and said once per batch by the caller */
			o->skipped++;
			continue;
		}
		if ((flags & PUSH_SERIES_NEW) && (o->table.v[at].metric = metric_of(o, &s[i])) == SIZE_MAX) {
			o->table.v[at].invalid = true; /* (its metric is missing: never sent) */
			return -ENOMEM;
		}
		m = &o->metrics[o->table.v[at].metric];
		if (m->request != o->request) {
			if (push_room((void **)&o->order, o->norder, 1, &o->order_cap, sizeof(*o->order)) < 0)
				return -ENOMEM;
			m->request = o->request;
			m->count = 0;
			o->order[o->norder++] = o->table.v[at].metric;
		}
		m->count++;
		o->points[o->npoints++] =
			(struct opoint){ at, ts_ns, s[i].value, (flags & PUSH_SERIES_FIRST) != 0, 0 };
	}
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* UCUM, as OpenTelemetry writes units; "" where the name says none. */
static const char *unit_of(const char *name)
{
	if (ends_with(name, "_joules_total") || ends_with(name, "_joules"))
		return "J";
	if (ends_with(name, "_watts"))
		return "W";
	if (ends_with(name, "_seconds_total") || ends_with(name, "_seconds"))
		return "s";
	if (ends_with(name, "_grams_total")) /* CO2e */
		return "g";
	if (ends_with(name, "_grams_per_kwh")) /* carbon intensity */
		return "g/kW.h";
	return "";
}

/*
 * Each metric's points together, in the order added: their attributes'
 * bytes, kept, then time and value packed by protobuf-c. A series' first
 * point in the batch (its only one, once caught up) is packed in the room
 * kept after its attributes and sent from there; others are copied into
 * the body with them.
 */
static int pack_points(struct push_otlp *o)
{
	size_t next = 0;

	if (push_room((void **)&o->dp, 0, o->npoints, &o->dp_cap, sizeof(*o->dp)) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < o->norder; k++) {
		struct ometric *m = &o->metrics[o->order[k]];

		m->next = next;
		next += m->count;
	}
	o->body.len = 0;
	for (size_t i = 0; i < o->npoints; i++) {
		struct opoint *p = &o->points[i];
		Otlp__NumberDataPoint d = OTLP__NUMBER_DATA_POINT__INIT;
		size_t alen, at = o->body.len;
		const void *attrs = push_series_labels(&o->table, p->series, &alen);
		ProtobufCBinaryData *b;
		uint8_t *to;

		p->slot = o->metrics[o->table.v[p->series].metric].next++;
		b = &o->dp[p->slot];
		d.time_unix_nano = p->ts_ns;
		d.value_case = OTLP__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
		d.as_double = p->value;
		if (p->tail) {
			b->len = alen +
				 otlp__number_data_point__pack(&d, push_series_tail(&o->table, p->series));
			b->data = (uint8_t *)attrs;
			continue;
		}
		if (!(to = push_arena_room(&o->body, alen + POINT_MAX)))
			return -ENOMEM;
		memcpy(to, attrs, alen);
		o->body.len += alen + otlp__number_data_point__pack(&d, to + alen);
		b->len = o->body.len - at;
		b->data = (uint8_t *)(uintptr_t)at; /* an offset until the body stops moving */
	}
	for (size_t i = 0; i < o->npoints; i++)
		if (!o->points[i].tail)
			o->dp[o->points[i].slot].data =
				(uint8_t *)o->body.data + (uintptr_t)o->dp[o->points[i].slot].data;
	return 0;
}

static int lay_out_metrics(struct push_otlp *o)
{
	size_t n = o->norder;

	if (push_room((void **)&o->pm, 0, n, &o->pm_cap, sizeof(*o->pm)) < 0 ||
	    push_room((void **)&o->pm_ptrs, 0, n, &o->pm_ptrs_cap, sizeof(*o->pm_ptrs)) < 0 ||
	    push_room((void **)&o->sums, 0, n, &o->sums_cap, sizeof(*o->sums)) < 0 ||
	    push_room((void **)&o->gauges, 0, n, &o->gauges_cap, sizeof(*o->gauges)) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		const struct ometric *m = &o->metrics[o->order[k]];
		Otlp__MetricPacked *x = &o->pm[k];
		ProtobufCBinaryData *dp = &o->dp[m->next - m->count];

		otlp__metric_packed__init(x);
		x->name = o->names.data + m->name;
		x->unit = (char *)unit_of(x->name);
		if (m->sum) {
			otlp__sum_packed__init(&o->sums[k]);
			o->sums[k].data_points = dp;
			o->sums[k].n_data_points = m->count;
			o->sums[k].aggregation_temporality =
				OTLP__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE;
			o->sums[k].is_monotonic = true;
			x->data_case = OTLP__METRIC_PACKED__DATA_SUM;
			x->sum = &o->sums[k];
		} else {
			otlp__gauge_packed__init(&o->gauges[k]);
			o->gauges[k].data_points = dp;
			o->gauges[k].n_data_points = m->count;
			x->data_case = OTLP__METRIC_PACKED__DATA_GAUGE;
			x->gauge = &o->gauges[k];
		}
		o->pm_ptrs[k] = x;
	}
	return 0;
}

static void attr(Otlp__KeyValue *kv, Otlp__AnyValue *av, Otlp__KeyValue **ptr, const char *k, const char *v)
{
	otlp__key_value__init(kv);
	otlp__any_value__init(av);
	av->value_case = OTLP__ANY_VALUE__VALUE_STRING_VALUE;
	av->string_value = (char *)v;
	kv->key = (char *)k;
	kv->value = av;
	*ptr = kv;
}

int push_otlp_encode(struct push_otlp *o, const struct push_otlp_node *node, void **ret, size_t *ret_len)
{
	Otlp__ExportMetricsServiceRequestPacked req = OTLP__EXPORT_METRICS_SERVICE_REQUEST_PACKED__INIT;
	Otlp__ResourceMetricsPacked rm = OTLP__RESOURCE_METRICS_PACKED__INIT, *rmp = &rm;
	Otlp__Resource res = OTLP__RESOURCE__INIT;
	Otlp__ScopeMetricsPacked sm = OTLP__SCOPE_METRICS_PACKED__INIT, *smp = &sm;
	Otlp__InstrumentationScope scope = OTLP__INSTRUMENTATION_SCOPE__INIT;
	Otlp__KeyValue kv[5], *kvp[5];
	Otlp__AnyValue av[5];
	size_t na = 0, len;
	uint8_t *out;

	if (pack_points(o) < 0 || lay_out_metrics(o) < 0)
		return -ENOMEM;
	attr(&kv[na], &av[na], &kvp[na], "service.name", "kepler-c"), na++;
	attr(&kv[na], &av[na], &kvp[na], "service.version", "0.1.0"), na++;
	attr(&kv[na], &av[na], &kvp[na], "service.instance.id", node->node_name), na++;
	attr(&kv[na], &av[na], &kvp[na], "host.name", node->host_name), na++;
	if (node->machine_id && *node->machine_id)
		attr(&kv[na], &av[na], &kvp[na], "host.id", node->machine_id), na++;
	res.attributes = kvp;
	res.n_attributes = na;
	scope.name = "kepler-push";
	scope.version = "0.1.0";
	sm.scope = &scope;
	sm.metrics = o->pm_ptrs;
	sm.n_metrics = o->norder;
	rm.resource = &res;
	rm.scope_metrics = &smp;
	rm.n_scope_metrics = 1;
	req.resource_metrics = &rmp;
	req.n_resource_metrics = 1;
	len = otlp__export_metrics_service_request_packed__get_packed_size(&req);
	if (!(out = malloc(len ? len : 1)))
		return -ENOMEM;
	otlp__export_metrics_service_request_packed__pack(&req, out);
	*ret = out;
	*ret_len = len;
	return 0;
}

int64_t push_otlp_rejected(const void *body, size_t len, char *why, size_t why_size)
{
	Otlp__ExportMetricsServiceResponse *r;
	int64_t n = 0;

	why[0] = 0;
	if (!len || !(r = otlp__export_metrics_service_response__unpack(NULL, len, body)))
		return 0;
	if (r->partial_success) {
		n = r->partial_success->rejected_data_points;
		snprintf(why, why_size, "%s",
			 r->partial_success->error_message ? r->partial_success->error_message : "");
	}
	otlp__export_metrics_service_response__free_unpacked(r, NULL);
	return n;
}
