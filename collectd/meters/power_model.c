// SPDX-License-Identifier: Apache-2.0
/*
 * Model files, read with libyaml's document API so that every error names
 * its line. The file is configuration, but it is checked as strictly as
 * untrusted input: a wrong model silently produces wrong joules forever.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "power_model.h"

#define MODEL_FILE_MAX (1 << 20)

static const char *const feature_names[] = {
	[KEPLER_FEATURE_CPU_COUNT] = "cpu_count",
	[KEPLER_FEATURE_CPU_BUSY] = "cpu_busy",
	[KEPLER_FEATURE_CPU_USAGE_RATIO] = "cpu_usage_ratio",
};

struct model_parse {
	yaml_document_t *doc;
	const char *origin;
	struct kepler_power_model *m;
	struct kepler_error *err;
};

const char *kepler_model_feature_name(enum kepler_model_feature f)
{
	return (unsigned)f < KEPLER_FEATURE_COUNT ? feature_names[f] : "unknown";
}

static int feature_by_name(const char *s)
{
	for (int f = 0; f < KEPLER_FEATURE_COUNT; f++)
		if (!strcmp(feature_names[f], s))
			return f;
	return -1;
}

static unsigned line(const yaml_node_t *n)
{
	return (unsigned)n->start_mark.line + 1;
}

static int fail(struct model_parse *mp, const yaml_node_t *n, const char *what)
{
	return kepler_error_set(mp->err, -EINVAL, "%s:%u: %s", mp->origin, n ? line(n) : 0, what);
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int number(struct model_parse *mp, const yaml_node_t *n, double *ret)
{
	const char *s = scalar(n);
	char *end;
	double v;

	if (!s || !*s)
		return fail(mp, n, "expected a number");
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno == ERANGE || !isfinite(v))
		return kepler_error_set(mp->err, -EINVAL, "%s:%u: '%.40s' is not a finite number", mp->origin,
					line(n), s);
	if (fabs(v) > KEPLER_MODEL_MAX_WATTS)
		return kepler_error_set(mp->err, -EINVAL, "%s:%u: %.40s is out of range (at most %g in size)",
					mp->origin, line(n), s, KEPLER_MODEL_MAX_WATTS);
	*ret = v;
	return 0;
}

typedef int (*pair_fn)(struct model_parse *mp, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx);

/* Call @fn for each key of mapping @map; duplicate keys are errors. */
static int each_pair(struct model_parse *mp, yaml_node_t *map, const char *what, pair_fn fn, void *ctx)
{
	char msg[160];

	if (!map || map->type != YAML_MAPPING_NODE) {
		snprintf(msg, sizeof(msg), "%s must be a mapping", what);
		return fail(mp, map, msg);
	}
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(mp->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(mp->doc, p->value);
		const char *key = scalar(k);
		int r;

		if (!key)
			return fail(mp, k, "keys must be plain strings");
		for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
			const char *other = scalar(yaml_document_get_node(mp->doc, q->key));

			if (other && !strcmp(other, key)) {
				snprintf(msg, sizeof(msg), "duplicate key '%.60s'", key);
				return fail(mp, k, msg);
			}
		}
		r = fn(mp, key, k, v, ctx);
		if (r < 0)
			return r;
	}
	return 0;
}

static int provenance_pair(struct model_parse *mp, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
	struct kepler_power_model *m = mp->m;
	size_t o = strlen(m->provenance);
	const char *val = scalar(v);

	(void)ctx;
	if (!val)
		return fail(mp, k, "provenance values must be text");
	snprintf(m->provenance + o, sizeof(m->provenance) - o, "%s%s: %s", o ? "; " : "", key, val);
	return 0;
}

static int parse_features(struct model_parse *mp, yaml_node_t *seq)
{
	struct kepler_power_model *m = mp->m;
	char msg[160];

	if (!seq || seq->type != YAML_SEQUENCE_NODE)
		return fail(mp, seq, "features must be a list");
	for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; it++) {
		yaml_node_t *n = yaml_document_get_node(mp->doc, *it);
		const char *s = scalar(n);
		int f = s ? feature_by_name(s) : -1;

		if (f < 0) {
			snprintf(msg, sizeof(msg),
				 "unknown feature '%.40s' (known: cpu_count, cpu_busy, cpu_usage_ratio)",
				 s ? s : "");
			return fail(mp, n, msg);
		}
		for (unsigned i = 0; i < m->nfeatures; i++)
			if (m->features[i] == (enum kepler_model_feature)f)
				return fail(mp, n, "feature listed twice");
		m->features[m->nfeatures++] = (enum kepler_model_feature)f;
	}
	if (m->nfeatures == 0)
		return fail(mp, seq, "features is empty");
	return 0;
}

static bool listed(const struct kepler_power_model *m, int f)
{
	for (unsigned i = 0; i < m->nfeatures; i++)
		if ((int)m->features[i] == f)
			return true;
	return false;
}

static int coef_pair(struct model_parse *mp, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
	struct kepler_power_model_zone *z = ctx;
	int f = feature_by_name(key);
	char msg[160];

	if (f < 0 || !listed(mp->m, f)) {
		snprintf(msg, sizeof(msg), "coefficient for '%.40s', which is not in features", key);
		return fail(mp, k, msg);
	}
	return number(mp, v, &z->coef[f]);
}

struct zone_ctx {
	struct kepler_power_model_zone *z;
	bool has_intercept, has_coef;
};

static int zone_field(struct model_parse *mp, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
	struct zone_ctx *zc = ctx;
	char msg[160];

	if (!strcmp(key, "intercept")) {
		zc->has_intercept = true;
		return number(mp, v, &zc->z->intercept_w);
	}
	if (!strcmp(key, "coefficients")) {
		zc->has_coef = true;
		for (int f = 0; f < KEPLER_FEATURE_COUNT; f++)
			zc->z->coef[f] = NAN;
		return each_pair(mp, v, "coefficients", coef_pair, zc->z);
	}
	snprintf(msg, sizeof(msg), "unknown key '%.40s' in a zone (intercept, coefficients)", key);
	return fail(mp, k, msg);
}

static int zone_pair(struct model_parse *mp, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
	struct kepler_power_model *m = mp->m;
	struct zone_ctx zc = { 0 };
	char msg[160];
	int r;

	(void)ctx;
	if (m->nzones >= KEPLER_MAX_ZONES)
		return fail(mp, k, "too many zones");
	if (!*key || strlen(key) >= sizeof(m->zones[0].name) || strpbrk(key, " \t\"\\"))
		return fail(mp, k, "invalid zone name");
	zc.z = &m->zones[m->nzones];
	snprintf(zc.z->name, sizeof(zc.z->name), "%s", key);
	r = each_pair(mp, v, "a zone", zone_field, &zc);
	if (r < 0)
		return r;
	if (!zc.has_intercept || !zc.has_coef) {
		snprintf(msg, sizeof(msg), "zone '%.40s' needs intercept and coefficients", key);
		return fail(mp, k, msg);
	}
	for (unsigned i = 0; i < m->nfeatures; i++)
		if (isnan(zc.z->coef[m->features[i]])) {
			snprintf(msg, sizeof(msg), "zone '%.40s' has no coefficient for '%s'", key,
				 feature_names[m->features[i]]);
			return fail(mp, k, msg);
		}
	for (int f = 0; f < KEPLER_FEATURE_COUNT; f++)
		if (isnan(zc.z->coef[f]))
			zc.z->coef[f] = 0;
	m->nzones++;
	return 0;
}

struct top_ctx {
	yaml_node_t *features, *zones, *kind, *version;
};

static int top_pair(struct model_parse *mp, const char *key, yaml_node_t *k, yaml_node_t *v, void *ctx)
{
	struct top_ctx *t = ctx;
	char msg[160];

	if (!strcmp(key, "kind"))
		t->kind = v;
	else if (!strcmp(key, "version"))
		t->version = v;
	else if (!strcmp(key, "name") && scalar(v))
		snprintf(mp->m->name, sizeof(mp->m->name), "%s", scalar(v));
	else if (!strcmp(key, "provenance"))
		return each_pair(mp, v, "provenance", provenance_pair, NULL);
	else if (!strcmp(key, "features"))
		t->features = v;
	else if (!strcmp(key, "zones"))
		t->zones = v;
	else {
		snprintf(msg, sizeof(msg),
			 "unknown key '%.40s' (kind, version, name, provenance, features, zones)", key);
		return fail(mp, k, msg);
	}
	return 0;
}

static int check_header(struct model_parse *mp, yaml_node_t *root, const struct top_ctx *t)
{
	const char *kind = scalar(t->kind), *ver = scalar(t->version);
	char msg[160];

	if (!kind || strcmp(kind, "kepler-power-model"))
		return fail(mp, t->kind ? t->kind : root, "kind must be 'kepler-power-model'");
	if (!ver || strspn(ver, "0123456789") != strlen(ver) || !*ver)
		return fail(mp, t->version ? t->version : root, "version must be a whole number");
	if (atol(ver) > KEPLER_MODEL_VERSION || atol(ver) < 1) {
		snprintf(msg, sizeof(msg),
			 "model format version %.20s; this kepler-collectd reads version %d", ver,
			 KEPLER_MODEL_VERSION);
		return fail(mp, t->version, msg);
	}
	if (!t->features || !t->zones)
		return fail(mp, root, "a model needs features and zones");
	return 0;
}

int kepler_power_model_parse(const char *text, size_t len, const char *origin, struct kepler_power_model *ret,
			     struct kepler_error *err)
{
	struct model_parse mp = { .origin = origin, .err = err };
	struct kepler_power_model *m;
	struct top_ctx t = { 0 };
	yaml_document_t doc;
	yaml_parser_t parser;
	yaml_node_t *root;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m || !yaml_parser_initialize(&parser)) {
		free(m);
		return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		r = kepler_error_set(err, -EINVAL, "%s:%zu: malformed YAML: %s", origin,
				     parser.problem_mark.line + 1,
				     parser.problem ? parser.problem : "parse error");
		yaml_parser_delete(&parser);
		free(m);
		return r;
	}
	mp.doc = &doc;
	mp.m = m;
	root = yaml_document_get_root_node(&doc);
	if (!root)
		r = kepler_error_set(err, -EINVAL, "%s: empty model file", origin);
	else
		r = each_pair(&mp, root, "the model", top_pair, &t);
	if (r == 0)
		r = check_header(&mp, root, &t);
	if (r == 0)
		r = parse_features(&mp, t.features);
	if (r == 0)
		r = each_pair(&mp, t.zones, "zones", zone_pair, NULL);
	if (r == 0 && m->nzones == 0)
		r = fail(&mp, t.zones, "zones is empty");
	if (r == 0) {
		if (!m->name[0])
			snprintf(m->name, sizeof(m->name), "%s", origin);
		*ret = *m;
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	free(m);
	return r;
}

int kepler_power_model_load(const char *path, struct kepler_power_model *ret, struct kepler_error *err)
{
	char *buf;
	size_t n;
	FILE *f;
	int r;

	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		return kepler_error_set(err, r, "cannot open model file %s: %s", path, strerror(-r));
	}
	buf = malloc(MODEL_FILE_MAX + 1);
	if (!buf) {
		fclose(f);
		return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	errno = 0;
	n = fread(buf, 1, MODEL_FILE_MAX + 1, f);
	if (ferror(f))
		r = kepler_error_set(err, errno ? -errno : -EIO, "cannot read model file %s: %s", path,
				     errno == EISDIR ? "it is a directory" : strerror(errno ? errno : EIO));
	else if (n > MODEL_FILE_MAX)
		r = kepler_error_set(err, -EFBIG, "model file %s is over 1 MiB", path);
	else
		r = kepler_power_model_parse(buf, n, path, ret, err);
	fclose(f);
	free(buf);
	return r;
}

double kepler_power_model_watts(const struct kepler_power_model *m, unsigned zone,
				const double x[KEPLER_FEATURE_COUNT])
{
	const struct kepler_power_model_zone *z = &m->zones[zone];
	double w = z->intercept_w;

	for (unsigned i = 0; i < m->nfeatures; i++)
		w += z->coef[m->features[i]] * x[m->features[i]];
	return w > 0 && isfinite(w) ? w : 0;
}
