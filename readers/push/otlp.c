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

/*
 * A batch: its series (each attribute pair kept once, however many carry it),
 * its metrics, and its points (series, time, value) in the order added; the
 * protobuf-c structures are laid out only when encoding, in a few arrays.
 */
struct oseries {
	size_t key, key_len; /* in the arena */
	size_t attr0, nattrs;
	size_t metric;
};

struct opoint {
	size_t series;
	uint64_t ts_ns;
	double value;
};

struct ometric {
	size_t name, name_len; /* in the arena */
	bool sum;              /* a counter: cumulative and monotonic */
	size_t count, next;    /* its points; (where its next goes, while encoding) */
};

struct push_otlp {
	struct oseries *series;
	size_t nseries, capseries;
	size_t *attrs; /* each series' attributes, as numbers of pairs */
	size_t nattrs, capattrs;
	struct push_pairs pairs;
	struct ometric *metrics;
	size_t nmetrics, capmetrics;
	struct opoint *points;
	size_t npoints, cappoints;
	struct push_arena arena;
	struct push_index sindex, mindex;
};

static const char *series_key(const void *ctx, size_t i, size_t *len)
{
	const struct push_otlp *o = ctx;

	*len = o->series[i].key_len;
	return o->arena.data + o->series[i].key;
}

static const char *metric_key(const void *ctx, size_t i, size_t *len)
{
	const struct push_otlp *o = ctx;

	*len = o->metrics[i].name_len;
	return o->arena.data + o->metrics[i].name;
}

struct push_otlp *push_otlp_new(void)
{
	struct push_otlp *o = calloc(1, sizeof(*o));

	if (o) {
		o->sindex.key_of = series_key;
		o->mindex.key_of = metric_key;
		push_pairs_init(&o->pairs);
	}
	return o;
}

void push_otlp_reset(struct push_otlp *o)
{
	o->nseries = o->nattrs = o->nmetrics = o->npoints = o->arena.len = 0;
	push_pairs_clear(&o->pairs);
	push_index_clear(&o->sindex);
	push_index_clear(&o->mindex);
}

void push_otlp_free(struct push_otlp *o)
{
	if (!o)
		return;
	free(o->series);
	free(o->attrs);
	push_pairs_free(&o->pairs);
	free(o->metrics);
	free(o->points);
	free(o->arena.data);
	push_index_free(&o->sindex);
	push_index_free(&o->mindex);
	free(o);
}

size_t push_otlp_points(const struct push_otlp *o)
{
	return o->npoints;
}

/* The metric named @name, new when the batch has none yet. SIZE_MAX: out of memory. */
static size_t metric_of(struct push_otlp *o, const char *name, bool sum)
{
	size_t at, len = strlen(name);

	if (push_room((void **)&o->metrics, o->nmetrics, 1, &o->capmetrics, sizeof(*o->metrics)) < 0 ||
	    push_index_find(&o->mindex, o, o->nmetrics, name, len, &at) < 0)
		return SIZE_MAX;
	if (at < o->nmetrics)
		return at;
	memset(&o->metrics[at], 0, sizeof(o->metrics[at]));
	if ((o->metrics[at].name = push_arena_put(&o->arena, name, len)) == SIZE_MAX) {
		o->metrics[at].name = 0; /* the batch is abandoned: keep the index consistent all the same */
		return SIZE_MAX;
	}
	o->metrics[at].name_len = len;
	o->metrics[at].sum = sum;
	o->nmetrics++;
	return at;
}

/* The series of @s, new when the batch has none yet. SIZE_MAX: out of memory. */
static size_t series_of(struct push_otlp *o, const struct push_sample *s)
{
	struct oseries *x;
	size_t at, m, key;

	if (push_room((void **)&o->series, o->nseries, 1, &o->capseries, sizeof(*o->series)) < 0 ||
	    push_room((void **)&o->attrs, o->nattrs, s->nlabels, &o->capattrs, sizeof(*o->attrs)) < 0 ||
	    push_index_find(&o->sindex, o, o->nseries, s->key, s->key_len, &at) < 0)
		return SIZE_MAX;
	if (at < o->nseries)
		return at;
	x = &o->series[at];
	memset(x, 0, sizeof(*x)); /* (key_len 0 until it is whole: an abandoned one matches nothing) */
	if ((m = metric_of(o, s->name, s->counter)) == SIZE_MAX ||
	    (key = push_arena_put(&o->arena, s->key, s->key_len)) == SIZE_MAX)
		return SIZE_MAX;
	x->attr0 = o->nattrs;
	for (size_t i = 0; i < s->nlabels; i++) {
		if (!strcmp(s->labels[i].name, "__name__"))
			continue;
		if ((o->attrs[o->nattrs] = push_pairs_intern(&o->pairs, i, s->labels[i].name,
							     s->labels[i].value)) == SIZE_MAX)
			return SIZE_MAX;
		o->nattrs++;
	}
	x->nattrs = o->nattrs - x->attr0;
	x->metric = m;
	x->key = key;
	x->key_len = s->key_len;
	o->nseries++;
	return at;
}

int push_otlp_add(struct push_otlp *o, const struct push_sample *s, size_t n, uint64_t ts_ns)
{
	if (push_room((void **)&o->points, o->npoints, n, &o->cappoints, sizeof(*o->points)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t at = series_of(o, &s[i]);

		if (at == SIZE_MAX)
			return -ENOMEM;
		o->points[o->npoints++] = (struct opoint){ at, ts_ns, s[i].value };
		o->metrics[o->series[at].metric].count++;
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
	return "";
}

/* The protobuf-c structures of a batch, in a few arrays. */
struct layout {
	Otlp__Metric *metrics, **metric_ptrs;
	Otlp__Sum *sums;
	Otlp__Gauge *gauges;
	Otlp__NumberDataPoint *pts, **pt_ptrs;
	Otlp__KeyValue *kv, **kv_ptrs;
	Otlp__AnyValue *av;
};

static void layout_free(struct layout *l)
{
	free(l->metrics);
	free(l->metric_ptrs);
	free(l->sums);
	free(l->gauges);
	free(l->pts);
	free(l->pt_ptrs);
	free(l->kv);
	free(l->kv_ptrs);
	free(l->av);
}

static void lay_metric(struct push_otlp *o, size_t i, struct layout *l, size_t *next)
{
	struct ometric *m = &o->metrics[i];
	Otlp__NumberDataPoint **dp = &l->pt_ptrs[*next];
	Otlp__Metric *x = &l->metrics[i];

	otlp__metric__init(x);
	x->name = o->arena.data + m->name;
	x->unit = (char *)unit_of(x->name);
	m->next = *next;
	*next += m->count;
	if (m->sum) {
		otlp__sum__init(&l->sums[i]);
		l->sums[i].data_points = dp;
		l->sums[i].n_data_points = m->count;
		l->sums[i].aggregation_temporality =
			OTLP__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE;
		l->sums[i].is_monotonic = true;
		x->data_case = OTLP__METRIC__DATA_SUM;
		x->sum = &l->sums[i];
	} else {
		otlp__gauge__init(&l->gauges[i]);
		l->gauges[i].data_points = dp;
		l->gauges[i].n_data_points = m->count;
		x->data_case = OTLP__METRIC__DATA_GAUGE;
		x->gauge = &l->gauges[i];
	}
	l->metric_ptrs[i] = x;
}

static int lay_out(struct push_otlp *o, struct layout *l)
{
	size_t nm = o->nmetrics ? o->nmetrics : 1, np = o->npoints ? o->npoints : 1,
	       na = o->nattrs ? o->nattrs : 1, npairs = o->pairs.n ? o->pairs.n : 1;
	size_t next = 0;

	l->metrics = malloc(nm * sizeof(*l->metrics));
	l->metric_ptrs = malloc(nm * sizeof(*l->metric_ptrs));
	l->sums = malloc(nm * sizeof(*l->sums));
	l->gauges = malloc(nm * sizeof(*l->gauges));
	l->pts = malloc(np * sizeof(*l->pts));
	l->pt_ptrs = malloc(np * sizeof(*l->pt_ptrs));
	l->kv = malloc(npairs * sizeof(*l->kv));
	l->kv_ptrs = malloc(na * sizeof(*l->kv_ptrs));
	l->av = malloc(npairs * sizeof(*l->av));
	if (!l->metrics || !l->metric_ptrs || !l->sums || !l->gauges || !l->pts || !l->pt_ptrs || !l->kv ||
	    !l->kv_ptrs || !l->av)
		return -ENOMEM;
	for (size_t i = 0; i < o->pairs.n; i++) { /* one KeyValue per pair, shared by the series */
		otlp__key_value__init(&l->kv[i]);
		otlp__any_value__init(&l->av[i]);
		l->av[i].value_case = OTLP__ANY_VALUE__VALUE_STRING_VALUE;
		l->av[i].string_value = o->pairs.arena.data + o->pairs.v[i].value;
		l->kv[i].key = o->pairs.arena.data + o->pairs.v[i].name;
		l->kv[i].value = &l->av[i];
	}
	for (size_t i = 0; i < o->nattrs; i++)
		l->kv_ptrs[i] = &l->kv[o->attrs[i]];
	for (size_t i = 0; i < o->nmetrics; i++)
		lay_metric(o, i, l, &next);
	for (size_t i = 0; i < o->npoints; i++) { /* each metric's points together, in the order added */
		const struct opoint *p = &o->points[i];
		const struct oseries *x = &o->series[p->series];
		struct ometric *m = &o->metrics[x->metric];
		Otlp__NumberDataPoint *d = &l->pts[m->next];

		otlp__number_data_point__init(d);
		d->time_unix_nano = p->ts_ns;
		d->value_case = OTLP__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
		d->as_double = p->value;
		d->attributes = &l->kv_ptrs[x->attr0];
		d->n_attributes = x->nattrs;
		l->pt_ptrs[m->next++] = d;
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
	Otlp__ExportMetricsServiceRequest req = OTLP__EXPORT_METRICS_SERVICE_REQUEST__INIT;
	Otlp__ResourceMetrics rm = OTLP__RESOURCE_METRICS__INIT, *rmp = &rm;
	Otlp__Resource res = OTLP__RESOURCE__INIT;
	Otlp__ScopeMetrics sm = OTLP__SCOPE_METRICS__INIT, *smp = &sm;
	Otlp__InstrumentationScope scope = OTLP__INSTRUMENTATION_SCOPE__INIT;
	Otlp__KeyValue kv[5], *kvp[5];
	Otlp__AnyValue av[5];
	struct layout l = { 0 };
	size_t na = 0, len;
	uint8_t *out;

	if (lay_out(o, &l) < 0) {
		layout_free(&l);
		return -ENOMEM;
	}
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
	sm.metrics = l.metric_ptrs;
	sm.n_metrics = o->nmetrics;
	rm.resource = &res;
	rm.scope_metrics = &smp;
	rm.n_scope_metrics = 1;
	req.resource_metrics = &rmp;
	req.n_resource_metrics = 1;
	len = otlp__export_metrics_service_request__get_packed_size(&req);
	if (!(out = malloc(len ? len : 1))) {
		layout_free(&l);
		return -ENOMEM;
	}
	otlp__export_metrics_service_request__pack(&req, out);
	layout_free(&l);
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
