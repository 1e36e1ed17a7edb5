/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/carbon.h: the carbon intensity file that carbon.intensity-file
 * names (docs/history.md, "Carbon"), and an intensity given as a value.
 */
#ifndef KEPLER_CARBON_H
#define KEPLER_CARBON_H

#include <stddef.h>
#include <stdint.h>

#include "kepler/error.h"

/*
 * What a value of the file is (its optional third column; kepler-carbon
 * writes one on every line): measured by the grid operator, estimated by the
 * provider where measurements lack, a forecast, a fallback (the provider
 * answered nothing usable: the last good value kept), or static (a yearly
 * figure from a table).
 */
enum kepler_carbon_kind {
	KEPLER_CARBON_KIND_MEASURED = 0, /* also: no third column */
	KEPLER_CARBON_KIND_ESTIMATED,
	KEPLER_CARBON_KIND_FORECAST,
	KEPLER_CARBON_KIND_FALLBACK,
	KEPLER_CARBON_KIND_STATIC,
	KEPLER_CARBON_KIND_COUNT,
};
/* "measured", "estimated", "forecast", "fallback", "static". */
const char *kepler_carbon_kind_name(enum kepler_carbon_kind k);

/*
 * Carbon intensity: "RFC3339,gco2e_per_kwh[,kind]" lines (the intensity from
 * that time on), '#' comments and blank lines allowed, times ascending. A
 * parsed schedule; kepler_carbon_at() gives the intensity in force at a time.
 */
struct kepler_carbon_point {
	uint64_t from_ns;
	uint32_t mg_kwh;
	enum kepler_carbon_kind kind;
};
struct kepler_carbon {
	struct kepler_carbon_point *points;
	size_t n;
};
/* Parse @text (@len bytes). -EINVAL with the line and what is wrong; -ENOMEM. */
int kepler_carbon_parse(const char *text, size_t len, struct kepler_carbon *ret, struct kepler_error *err);
/* The intensity in force at @wall_ns, mg CO₂e per kWh; 0 before the first line. */
uint32_t kepler_carbon_at(const struct kepler_carbon *c, uint64_t wall_ns);
void kepler_carbon_free(struct kepler_carbon *c);
/* "420.5" (g per kWh) as mg per kWh; -EINVAL unless 0 < value <= 100000 g. */
int kepler_carbon_parse_value(const char *s, uint32_t *ret_mg_kwh);

#endif /* KEPLER_CARBON_H */
