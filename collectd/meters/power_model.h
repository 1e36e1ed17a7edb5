/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/power_model.h: linear power models (the `model` meter source).
 *
 * A model file (YAML) estimates each zone's power in watts as
 *     intercept + sum(coefficient[f] * feature[f])
 * over a few node features, clamped at 0. kepler-train writes such files
 * from kepler-dataset output; a default for generic VMs is built in.
 *
 *     kind: kepler-power-model
 *     version: 1
 *     name: generic-vm
 *     provenance: {source: ..., url: ..., notes: ...}   # free text values
 *     features: [cpu_count, cpu_busy]
 *     zones:
 *       package: {intercept: 0, coefficients: {cpu_count: 0.74, cpu_busy: 2.76}}
 */
#ifndef KEPLER_COLLECTD_POWER_MODEL_H
#define KEPLER_COLLECTD_POWER_MODEL_H

#include <stddef.h>

#include "kepler/error.h"
#include "kepler/snapshot.h"

#define KEPLER_MODEL_VERSION 1
/* Bound on every intercept and coefficient: watts per unit of a feature. */
#define KEPLER_MODEL_MAX_WATTS 1e6

enum kepler_model_feature {
	KEPLER_FEATURE_CPU_COUNT,       /* online logical CPUs */
	KEPLER_FEATURE_CPU_BUSY,        /* busy CPUs on average: usage ratio x count */
	KEPLER_FEATURE_CPU_USAGE_RATIO, /* busy / total CPU time, 0..1 */
	KEPLER_FEATURE_COUNT,
};

struct kepler_power_model_zone {
	char name[64];
	double intercept_w;
	double coef[KEPLER_FEATURE_COUNT]; /* by enum kepler_model_feature */
};

struct kepler_power_model {
	char name[128];
	char provenance[1024]; /* "source: ...; url: ..." */
	unsigned nfeatures;
	enum kepler_model_feature features[KEPLER_FEATURE_COUNT];
	unsigned nzones;
	struct kepler_power_model_zone zones[KEPLER_MAX_ZONES];
};

/* "cpu_busy" for KEPLER_FEATURE_CPU_BUSY. */
const char *kepler_model_feature_name(enum kepler_model_feature f);

/*
 * Parse a model from @text (@len bytes); @origin names it in errors
 * ("model.yaml"). Errors (-EINVAL, with origin:line): malformed YAML, a
 * wrong kind, a newer version, unknown or repeated features, a zone without
 * a coefficient for each feature, a coefficient for an unlisted feature,
 * numbers that are not finite or beyond KEPLER_MODEL_MAX_WATTS, no zones or more than KEPLER_MAX_ZONES.
 */
int kepler_power_model_parse(const char *text, size_t len, const char *origin, struct kepler_power_model *ret,
			     struct kepler_error *err);

/* Read and parse the file @path (-ENOENT, -EACCES, or as above). */
int kepler_power_model_load(const char *path, struct kepler_power_model *ret, struct kepler_error *err);

/* The built-in default model's YAML text (NUL-terminated). */
extern const char kepler_default_model_yaml[];

/*
 * Zone @zone's power in watts for the feature values @x (indexed by enum
 * kepler_model_feature), never negative.
 */
double kepler_power_model_watts(const struct kepler_power_model *m, unsigned zone,
				const double x[KEPLER_FEATURE_COUNT]);

#endif /* KEPLER_COLLECTD_POWER_MODEL_H */
