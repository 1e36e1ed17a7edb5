// SPDX-License-Identifier: Apache-2.0
/*
 * The fake source (meter.source: fake), for development and demos only:
 * deterministic synthetic energy that follows the CPU load. Zone z draws
 * watts(z) * (0.3 + 0.7 * cpu_usage_ratio), where watts(first zone) is
 * dev.fake-meter.watts and later zones a fixed share of it (core 70%,
 * uncore 10%, dram 15%, psys 130%, others 50%). Never chosen by auto;
 * marked source=fake.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meter_internal.h"

struct fake_meter {
	double watts[KEPLER_MAX_ZONES]; /* by source_index */
	struct kepler_estimate_clock clock;
};

static double share(const char *zone)
{
	static const struct {
		const char *name;
		double share;
	} shares[] = { { "core", 0.7 }, { "uncore", 0.1 }, { "dram", 0.15 }, { "psys", 1.3 } };

	for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++)
		if (!strcmp(shares[i].name, zone))
			return shares[i].share;
	return 0.5;
}

static int fake_read(struct kepler_meter *m, const struct kepler_meter_sample *s, struct kepler_error *err)
{
	struct fake_meter *fm = m->priv;
	double watts[KEPLER_MAX_ZONES], load = 0.3 + 0.7 * kepler_meter_sample_ratio(s);

	(void)err;
	for (unsigned z = 0; z < m->nzones; z++)
		watts[z] = fm->watts[z] * load;
	kepler_meter_account_watts(m, &fm->clock, watts, s);
	return 0;
}

static const struct kepler_meter_ops fake_ops = {
	.read = fake_read,
	.close = kepler_meter_free_priv,
};

int kepler_meter_fake_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			   struct kepler_error *err)
{
	static const char *const defaults[] = { KEPLER_ZONE_PACKAGE, KEPLER_ZONE_CORE, KEPLER_ZONE_DRAM };
	size_t n = p->fake_zones && p->fake_zones->count ? p->fake_zones->count : 3;
	struct fake_meter *fm;

	fm = calloc(1, sizeof(*fm));
	if (!fm)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	m->priv = fm;
	m->ops = &fake_ops;
	for (size_t i = 0; i < n; i++) {
		const char *name =
			p->fake_zones && p->fake_zones->count ? p->fake_zones->items[i] : defaults[i];
		struct kepler_meter_zone *z;
		int r;

		for (unsigned k = 0; k < m->nzones; k++)
			if (!strcmp(m->zones[k].name, name))
				return kepler_error_set(err, -EINVAL, "dev.fake-meter.zones lists '%s' twice",
							name);
		z = kepler_meter_add_zone(m, name, KEPLER_SOURCE_FAKE, 1, err);
		if (!z)
			return err ? err->code : -ENOMEM;
		fm->watts[i] = (double)(p->fake_watts > 0 ? p->fake_watts : 40) * (i ? share(name) : 1.0);
		snprintf(z->parts[0].name, sizeof(z->parts[0].name), "%s", name);
		if (asprintf(&z->parts[0].path, "fake:%s", name) < 0) {
			z->parts[0].path = NULL;
			return kepler_error_set(err, -ENOMEM, "out of memory");
		}
		m->states[i][0].kind = KEPLER_PART_NONE;
		m->states[i][0].source_index = (unsigned)i;
		r = kepler_meter_zone_finish(z, 0, err);
		if (r < 0)
			return r;
	}
	return 0;
}
