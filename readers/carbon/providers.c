// SPDX-License-Identifier: Apache-2.0
/* kepler-carbon's providers: URLs and answers (see providers.h). */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers.h"

const char *carbon_default_base(enum kepler_carbon_provider p)
{
	switch (p) {
	case KEPLER_CARBON_ELECTRICITYMAPS: return "https://api.electricitymap.org";
	case KEPLER_CARBON_UK_GRID: return "https://api.carbonintensity.org.uk";
	case KEPLER_CARBON_WATTTIME: return "https://api.watttime.org";
	default: return "";
	}
}

/* A zone, region or signal safe in a URL as it is: letters, digits, '-', '_', '.'. */
static int plain(const char *what, const char *s, struct kepler_error *err)
{
	if (!*s)
		return kepler_error_set(err, -EINVAL, "%s is empty: the provider needs one", what);
	if (strlen(s) > 64 ||
	    s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")])
		return kepler_error_set(err, -EINVAL,
					"%s '%.64s' is not a zone (letters, digits, - _ . only)", what, s);
	return 0;
}

int carbon_url(const struct kepler_carbon_config *cfg, const char *base, int history, char *buf, size_t size,
	       struct kepler_error *err)
{
	const char *z = cfg->carbon_zone;
	size_t blen = strlen(base);
	int n = -1;

	while (blen && base[blen - 1] == '/')
		blen--;
	switch (cfg->carbon_provider) {
	case KEPLER_CARBON_ELECTRICITYMAPS:
		if (plain("carbon.zone", z, err) < 0)
			return -EINVAL;
		n = snprintf(buf, size, "%.*s/v3/carbon-intensity/%s?zone=%s", (int)blen, base,
			     history ? "history" : "latest", z);
		break;
	case KEPLER_CARBON_UK_GRID:
		if (!strcmp(z, "national")) {
			n = snprintf(buf, size, "%.*s/intensity", (int)blen, base);
			break;
		}
		if (strspn(z, "0123456789") != strlen(z) || !*z || atoi(z) < 1 || atoi(z) > 17)
			return kepler_error_set(
				err, -EINVAL,
				"carbon.zone '%.64s': the UK grid's zone is national or a region id 1 to 17",
				z);
		n = snprintf(buf, size, "%.*s/regional/regionid/%d", (int)blen, base, atoi(z));
		break;
	case KEPLER_CARBON_WATTTIME:
		if (plain("carbon.zone", z, err) < 0 ||
		    plain("carbon.watttime-signal", cfg->carbon_watttime_signal, err) < 0)
			return -EINVAL;
		n = snprintf(buf, size, "%.*s/v3/forecast?region=%s&signal_type=%s&horizon_hours=0",
			     (int)blen, base, z, cfg->carbon_watttime_signal);
		break;
	default: return kepler_error_set(err, -EINVAL, "the static provider has no URL");
	}
	if (n < 0 || (size_t)n >= size)
		return kepler_error_set(err, -ENAMETOOLONG, "carbon.url is too long");
	return 0;
}

static json_object *parse(const char *body, size_t len, struct kepler_error *err)
{
	struct json_tokener *tok = json_tokener_new_ex(32);
	json_object *o;

	if (!tok) {
		kepler_error_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	size_t end;

	o = len > (size_t)INT32_MAX ? NULL : json_tokener_parse_ex(tok, body, (int)len);
	end = o ? json_tokener_get_parse_end(tok) : 0;
	while (o && end < len &&
	       (body[end] == ' ' || body[end] == '\t' || body[end] == '\r' || body[end] == '\n'))
		end++;
	if (!o || json_tokener_get_error(tok) != json_tokener_success || end < len) {
		kepler_error_set(err, -EPROTO, "not JSON (%s)",
				 o ? "trailing bytes" : json_tokener_error_desc(json_tokener_get_error(tok)));
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

static json_object *member(json_object *o, const char *key, json_type type)
{
	json_object *v;

	return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v) &&
			       json_object_is_type(v, type)
		       ? v
		       : NULL;
}

/* A provider's time: RFC 3339, or without seconds ("2018-01-20T12:00Z", the UK API's). */
static int time_of(json_object *o, const char *key, uint64_t *ret)
{
	json_object *v = member(o, key, json_type_string);
	const char *s = v ? json_object_get_string(v) : NULL;
	char buf[64];

	if (!s || strlen(s) >= sizeof(buf) - 3)
		return -EPROTO;
	/* "YYYY-MM-DDTHH:MM" then no ':' : seconds added */
	if (strlen(s) >= 16 && s[13] == ':' && s[16] != ':') {
		snprintf(buf, sizeof(buf), "%.16s:00%s", s, s + 16);
		s = buf;
	}
	return kepler_parse_time(s, 0, ret) < 0 || s[0] == '-' || !strcmp(s, "now") ? -EPROTO : 0;
}

/* Add @g g/kWh from @t on; -EPROTO for what is not an intensity. */
static int add(struct carbon_values *out, uint64_t t, double g, enum kepler_carbon_kind kind)
{
	if (!isfinite(g) || !(g > 0) || g > 100000)
		return -EPROTO;
	if (out->n == CARBON_MAX_VALUES)
		return -E2BIG;
	out->v[out->n++] = (struct kepler_carbon_point){ t, (uint32_t)(g * 1000 + 0.5), kind };
	return out->v[out->n - 1].mg_kwh ? 0 : -EPROTO;
}

static int number(json_object *o, const char *key, double *ret)
{
	json_object *v;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
		return -EPROTO;
	*ret = json_object_get_double(v);
	return 0;
}

/* One Electricity Maps record: {"carbonIntensity": N, "datetime": T, "isEstimated": B, ...}. */
static int emaps_one(json_object *o, struct carbon_values *out, struct kepler_error *err)
{
	json_object *est = member(o, "isEstimated", json_type_boolean);
	uint64_t t;
	double g;
	int r;

	if (time_of(o, "datetime", &t) < 0)
		return kepler_error_set(err, -EPROTO, "no usable datetime");
	if (number(o, "carbonIntensity", &g) < 0)
		return kepler_error_set(err, -EPROTO, "no carbonIntensity (a number) at its datetime");
	r = add(out, t, g,
		est && json_object_get_boolean(est) ? KEPLER_CARBON_KIND_ESTIMATED
						    : KEPLER_CARBON_KIND_MEASURED);
	return r < 0 ? kepler_error_set(err, r, "carbonIntensity %g is not an intensity (0 to 100000 g/kWh)",
					g)
		     : 0;
}

int carbon_parse_electricitymaps(const char *body, size_t len, struct carbon_values *out,
				 struct kepler_error *err)
{
	json_object *o = parse(body, len, err), *h;
	int r = 0;

	if (!o)
		return err->code;
	if ((h = member(o, "history", json_type_array)) != NULL) {
		for (size_t i = 0; i < json_object_array_length(h) && r == 0; i++)
			r = emaps_one(json_object_array_get_idx(h, i), out, err);
		if (r == 0 && !json_object_array_length(h))
			r = kepler_error_set(err, -EPROTO, "an empty history");
	} else
		r = emaps_one(o, out, err);
	json_object_put(o);
	return r;
}

/* The UK API's data[] entries: {"from": T, "intensity": {"forecast": N, "actual": N|null}}. */
static int uk_entries(json_object *data, struct carbon_values *out, struct kepler_error *err)
{
	if (!data || !json_object_array_length(data))
		return kepler_error_set(err, -EPROTO, "no data");
	for (size_t i = 0; i < json_object_array_length(data); i++) {
		json_object *e = json_object_array_get_idx(data, i),
			    *in = member(e, "intensity", json_type_object);
		enum kepler_carbon_kind kind = KEPLER_CARBON_KIND_MEASURED;
		uint64_t t;
		double g;
		int r;

		if (time_of(e, "from", &t) < 0 || !in)
			return kepler_error_set(err, -EPROTO, "data[%zu]: no from or intensity", i);
		if (number(in, "actual", &g) < 0) { /* null until measured, absent in regions */
			kind = KEPLER_CARBON_KIND_FORECAST;
			if (number(in, "forecast", &g) < 0)
				return kepler_error_set(err, -EPROTO,
							"data[%zu]: neither actual nor forecast", i);
		}
		if ((r = add(out, t, g, kind)) < 0)
			return kepler_error_set(err, r, "data[%zu]: %g is not an intensity", i, g);
	}
	return 0;
}

int carbon_parse_uk_grid(const char *body, size_t len, struct carbon_values *out, struct kepler_error *err)
{
	json_object *o = parse(body, len, err), *data, *first;
	int r;

	if (!o)
		return err->code;
	data = member(o, "data", json_type_array);
	first = data && json_object_array_length(data) ? json_object_array_get_idx(data, 0) : NULL;
	/* regional: data[0] is the region, its own data[] the values */
	if (first && member(first, "regionid", json_type_int))
		r = uk_entries(member(first, "data", json_type_array), out, err);
	else
		r = uk_entries(data, out, err);
	json_object_put(o);
	return r;
}

int carbon_parse_watttime(const char *body, size_t len, struct carbon_values *out, struct kepler_error *err)
{
	json_object *o = parse(body, len, err), *data, *units;
	double k = 0, g = 0;
	uint64_t t = 0;
	int r = 0;

	if (!o)
		return err->code;
	data = member(o, "data", json_type_array);
	units = member(member(o, "meta", json_type_object), "units", json_type_string);
	if (!units)
		r = kepler_error_set(err, -EPROTO, "no meta.units");
	else if (!strcmp(json_object_get_string(units), "lbs_co2_per_mwh"))
		k = KEPLER_G_KWH_PER_LB_MWH;
	else if (!strcmp(json_object_get_string(units), "g_co2_per_kwh"))
		k = 1;
	else
		r = kepler_error_set(err, -EPROTO,
				     "meta.units '%.32s': not lbs_co2_per_mwh nor g_co2_per_kwh",
				     json_object_get_string(units));
	if (r == 0 && (!data || !json_object_array_length(data)))
		r = kepler_error_set(err, -EPROTO, "no data");
	if (r == 0 && (time_of(json_object_array_get_idx(data, 0), "point_time", &t) < 0 ||
		       number(json_object_array_get_idx(data, 0), "value", &g) < 0))
		r = kepler_error_set(err, -EPROTO, "data[0]: no point_time or value");
	if (r == 0 && (r = add(out, t, g * k, KEPLER_CARBON_KIND_FORECAST)) < 0)
		kepler_error_set(err, r, "data[0].value %g %s is not an intensity", g,
				 json_object_get_string(units));
	json_object_put(o);
	return r;
}

int carbon_parse_watttime_login(const char *body, size_t len, char **ret, struct kepler_error *err)
{
	json_object *o = parse(body, len, err), *t;
	const char *s;
	int r = 0;

	if (!o)
		return err->code;
	t = member(o, "token", json_type_string);
	s = t ? json_object_get_string(t) : "";
	/* a JWT: base64url and dots; nothing that could break a header */
	if (!*s || strlen(s) > 8192 ||
	    s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/")])
		r = kepler_error_set(err, -EPROTO, "no usable token");
	else if (!(*ret = strdup(s)))
		r = kepler_error_set(err, -ENOMEM, "out of memory");
	json_object_put(o);
	return r;
}

int carbon_static_lookup(const char *table, size_t len, const char *key, uint64_t now_ns,
			 struct carbon_values *out, char *source, size_t size, struct kepler_error *err)
{
	const char *p = table, *end = table + len;
	size_t klen = strlen(key), line = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		char buf[512], *f[4] = { 0 }, *save = NULL;
		size_t n = (size_t)(eol - p);

		line++;
		if (n && n < sizeof(buf) && *p != '#' && (size_t)(eol - p) > klen && !strncmp(p, key, klen) &&
		    p[klen] == ',') {
			memcpy(buf, p, n);
			buf[n] = 0;
			buf[strcspn(buf, "\r")] = 0;
			f[0] = strtok_r(buf, ",", &save);
			for (int i = 1; i < 4 && f[i - 1]; i++)
				f[i] = strtok_r(NULL, ",", &save);
			uint32_t mg;

			if (!f[3] || kepler_carbon_parse_value(f[1], &mg) < 0)
				return kepler_error_set(
					err, -EPROTO,
					"carbon.static-table line %zu: want KEY,g_per_kwh,source,year", line);
			snprintf(source, size, "%s, %s", f[2], f[3]);
			if (out->n == CARBON_MAX_VALUES)
				return kepler_error_set(err, -E2BIG, "too many values");
			out->v[out->n++] =
				(struct kepler_carbon_point){ now_ns, mg, KEPLER_CARBON_KIND_STATIC };
			return 0;
		}
		p = nl ? nl + 1 : end;
	}
	return kepler_error_set(err, -ENOENT, "carbon.zone '%.64s' is not in carbon.static-table", key);
}
