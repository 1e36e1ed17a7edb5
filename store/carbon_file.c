// SPDX-License-Identifier: Apache-2.0
/*
 * The carbon intensity file (kepler/carbon.h): "RFC3339,gco2e_per_kwh[,kind]"
 * lines, parsed into a schedule; any bytes refused with the line named.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/carbon.h"
#include "kepler/config.h"

static const char *const kind_names[KEPLER_CARBON_KIND_COUNT] = { "measured", "estimated", "forecast",
								  "fallback", "static" };

const char *kepler_carbon_kind_name(enum kepler_carbon_kind k)
{
	return (unsigned)k < KEPLER_CARBON_KIND_COUNT ? kind_names[k] : "?";
}

int kepler_carbon_parse_value(const char *s, uint32_t *ret_mg_kwh)
{
	char *end;
	double g;

	errno = 0;
	g = strtod(s, &end);
	while (*end == ' ' || *end == '\t' || *end == '\r')
		end++;
	if (errno || end == s || *end || !(g > 0) || g > 100000)
		return -EINVAL;
	*ret_mg_kwh = (uint32_t)(g * 1000 + 0.5);
	return *ret_mg_kwh ? 0 : -EINVAL;
}

/* An RFC 3339 time of @n bytes as ns since the epoch (kepler_parse_time(), no "-DURATION"). */
static int parse_time(const char *s, size_t n, uint64_t *ret)
{
	char buf[64];

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n >= sizeof(buf) || !n || s[0] == '-')
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	if (!strcmp(buf, "now"))
		return -EINVAL;
	return kepler_parse_time(buf, 0, ret);
}

int kepler_carbon_parse(const char *text, size_t len, struct kepler_carbon *ret, struct kepler_error *err)
{
	struct kepler_carbon c = { 0 };
	size_t cap = 0, line = 0;
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end, *comma;
		char val[48], *k;
		enum kepler_carbon_kind kind;
		uint64_t t;
		uint32_t mg;

		line++;
		while (p < eol && (*p == ' ' || *p == '\t'))
			p++;
		if (p == eol || *p == '#' || (eol - p == 1 && *p == '\r')) {
			p = nl ? nl + 1 : end;
			continue;
		}
		comma = memchr(p, ',', (size_t)(eol - p));
		if (!comma || parse_time(p, (size_t)(comma - p), &t) < 0 ||
		    (size_t)(eol - comma - 1) >= sizeof(val)) {
			free(c.points);
			return kepler_error_set(err, -EINVAL, "line %zu: want RFC3339,gco2e_per_kwh[,kind]",
						line);
		}
		memcpy(val, comma + 1, (size_t)(eol - comma - 1));
		val[eol - comma - 1] = 0;
		kind = KEPLER_CARBON_KIND_MEASURED;
		if ((k = strchr(val, ',')) != NULL) { /* the kind */
			*k++ = 0;
			k[strcspn(k, " \t\r")] = 0;
			for (kind = 0; kind < KEPLER_CARBON_KIND_COUNT && strcmp(k, kind_names[kind]); kind++)
				;
			if (kind == KEPLER_CARBON_KIND_COUNT) {
				free(c.points);
				return kepler_error_set(
					err, -EINVAL,
					"line %zu: '%.16s' is not a kind (measured, estimated, forecast, fallback, static)",
					line, k);
			}
		}
		if (kepler_carbon_parse_value(val, &mg) < 0) {
			free(c.points);
			return kepler_error_set(
				err, -EINVAL,
				"line %zu: '%s' is not an intensity (g CO2e per kWh, 0 to 100000)", line,
				val);
		}
		if (c.n && t <= c.points[c.n - 1].from_ns) {
			free(c.points);
			return kepler_error_set(err, -EINVAL, "line %zu: times must ascend", line);
		}
		if (c.n == cap) {
			struct kepler_carbon_point *np;

			cap = cap ? 2 * cap : 64;
			if (cap > 10000000 || !(np = realloc(c.points, cap * sizeof(*np)))) {
				free(c.points);
				return kepler_error_set(err, -ENOMEM, "line %zu: too many lines", line);
			}
			c.points = np;
		}
		c.points[c.n++] = (struct kepler_carbon_point){ t, mg, kind };
		p = nl ? nl + 1 : end;
	}
	*ret = c;
	return 0;
}

uint32_t kepler_carbon_at(const struct kepler_carbon *c, uint64_t wall_ns)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) { /* the first point after wall_ns */
		size_t mid = lo + (hi - lo) / 2;

		if (c->points[mid].from_ns <= wall_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? c->points[lo - 1].mg_kwh : 0;
}

void kepler_carbon_free(struct kepler_carbon *c)
{
	free(c->points);
	c->points = NULL;
	c->n = 0;
}
