// SPDX-License-Identifier: Apache-2.0
/*
 * The model source: when the machine has no meter (most VMs), each zone's
 * power is estimated from CPU use with a linear model (power_model.h) and
 * integrated over the elapsed time. Zones are marked source=model so that
 * no one mistakes an estimate for a measurement.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meter_internal.h"
#include "power_model.h"

struct model_meter {
	struct kepler_power_model model;
	struct kepler_estimate_clock clock;
	char text[1400];
};

static int model_read(struct kepler_meter *m, const struct kepler_meter_sample *s, struct kepler_error *err)
{
	struct model_meter *mm = m->priv;
	double x[KEPLER_FEATURE_COUNT], watts[KEPLER_MAX_ZONES];
	double ratio = kepler_meter_sample_ratio(s);

	(void)err;
	x[KEPLER_FEATURE_CPU_COUNT] = s->cpu_count;
	x[KEPLER_FEATURE_CPU_USAGE_RATIO] = ratio;
	x[KEPLER_FEATURE_CPU_BUSY] = ratio * s->cpu_count;
	for (unsigned z = 0; z < mm->model.nzones; z++)
		watts[z] = kepler_power_model_watts(&mm->model, z, x);
	kepler_meter_account_watts(m, &mm->clock, watts, s);
	return 0;
}

static const struct kepler_meter_ops model_ops = {
	.read = model_read,
	.close = kepler_meter_free_priv,
};

static int add_model_zones(struct kepler_meter *m, const struct kepler_power_model *model, const char *where,
			   struct kepler_error *err)
{
	for (unsigned i = 0; i < model->nzones; i++) {
		struct kepler_meter_zone *z;
		int r;

		z = kepler_meter_add_zone(m, model->zones[i].name, KEPLER_SOURCE_MODEL, 1, err);
		if (!z)
			return err ? err->code : -ENOMEM;
		snprintf(z->parts[0].name, sizeof(z->parts[0].name), "%s", model->zones[i].name);
		if (asprintf(&z->parts[0].path, "%s#%s", where, model->zones[i].name) < 0) {
			z->parts[0].path = NULL;
			return kepler_error_set(err, -ENOMEM, "out of memory");
		}
		m->states[i][0].kind = KEPLER_PART_NONE;
		m->states[i][0].source_index = i;
		r = kepler_meter_zone_finish(z, 0, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int kepler_meter_model_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			    struct kepler_error *err)
{
	struct model_meter *mm;
	char where[4200];
	int r;

	mm = calloc(1, sizeof(*mm));
	if (!mm)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	m->priv = mm;
	m->ops = &model_ops;
	if (p->model_file && *p->model_file) {
		r = kepler_power_model_load(p->model_file, &mm->model, err);
		snprintf(where, sizeof(where), "model:%s", p->model_file);
	} else {
		r = kepler_power_model_parse(kepler_default_model_yaml, strlen(kepler_default_model_yaml),
					     "built-in model", &mm->model, err);
		snprintf(where, sizeof(where), "model:builtin");
	}
	if (r < 0)
		return r;
	/* zone order is the model's; sorting happens after open, states follow */
	return add_model_zones(m, &mm->model, where, err);
}

const char *kepler_meter_provenance(const struct kepler_meter *m)
{
	const struct model_meter *mm = m->priv;

	if (m->source != KEPLER_METER_MODEL || !mm)
		return NULL;
	snprintf(((struct model_meter *)mm)->text, sizeof(mm->text), "model '%s' (%s)", mm->model.name,
		 mm->model.provenance[0] ? mm->model.provenance : "no provenance given");
	return mm->text;
}
