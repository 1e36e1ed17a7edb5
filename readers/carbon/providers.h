/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/carbon/providers.h: kepler-carbon's providers, each from its
 * public API documentation: what to ask (the URL) and how to read the
 * answer (any bytes: a hostile or broken answer is -EPROTO with what is
 * wrong, never a value). Parsers do no I/O, so that tests and the fuzz
 * target (tests/fuzz/fuzz_carbon.c) call them directly.
 *   Electricity Maps v3: GET /v3/carbon-intensity/latest?zone=Z and
 *     /history?zone=Z, header auth-token; carbonIntensity (g/kWh) at
 *     datetime, isEstimated.
 *   UK Carbon Intensity API: GET /intensity (national) or
 *     /regional/regionid/N; data[].from and intensity.actual (measured,
 *     national only) or intensity.forecast.
 *   WattTime v3: GET /login (basic auth) gives a token; GET
 *     /v3/forecast?region=R&signal_type=S&horizon_hours=0 with it (Bearer):
 *     data[0].point_time and value in meta.units (lbs_co2_per_mwh, converted:
 *     1 lb/MWh = 0.45359237 g/kWh).
 *   static: a table of KEY,g_per_kwh,source,year lines.
 */
#ifndef KEPLER_CARBON_PROVIDERS_H
#define KEPLER_CARBON_PROVIDERS_H

#include <stddef.h>
#include <stdint.h>

#include "kepler/carbon.h"
#include "kepler/config.h"
#include "kepler/error.h"

/* Grams CO2e per kWh in one pound per MWh (453.59237 g a lb, 1000 kWh a MWh). */
#define KEPLER_G_KWH_PER_LB_MWH 0.45359237

/* At most this many values from one answer (a day of 5-minute values and more). */
#define CARBON_MAX_VALUES 4096

struct carbon_values {
	struct kepler_carbon_point v[CARBON_MAX_VALUES];
	size_t n;
};

/* The provider's default base URL ("" for static). */
const char *carbon_default_base(enum kepler_carbon_provider p);

/*
 * The URL of the provider's current value (@history: Electricity Maps'
 * last 24 hours instead) under @base, for @cfg's zone, in @buf. -EINVAL
 * (a zone the provider cannot have, said), -ENAMETOOLONG.
 */
int carbon_url(const struct kepler_carbon_config *cfg, const char *base, int history, char *buf, size_t size,
	       struct kepler_error *err);

/* Answers, appended to @out (times as given; the caller sorts and merges). */
int carbon_parse_electricitymaps(const char *body, size_t len, struct carbon_values *out,
				 struct kepler_error *err);
int carbon_parse_uk_grid(const char *body, size_t len, struct carbon_values *out, struct kepler_error *err);
int carbon_parse_watttime(const char *body, size_t len, struct carbon_values *out, struct kepler_error *err);
/* WattTime's /login answer: its token, a new string in *@ret. */
int carbon_parse_watttime_login(const char *body, size_t len, char **ret, struct kepler_error *err);
/*
 * The static table's figure for @key, as a value from @now_ns on (kind
 * static); *@source (@size bytes): its source and year, for the log.
 */
int carbon_static_lookup(const char *table, size_t len, const char *key, uint64_t now_ns,
			 struct carbon_values *out, char *source, size_t size, struct kepler_error *err);

#endif /* KEPLER_CARBON_PROVIDERS_H */
