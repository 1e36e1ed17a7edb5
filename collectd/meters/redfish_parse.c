// SPDX-License-Identifier: Apache-2.0
/*
 * Parsing a BMC's Redfish documents with json-c. Every document is
 * untrusted: any shape, size, type or value is an error, never a crash, and
 * only a finite number of watts within a server's range is believed.
 */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json_budget.h"
#include "redfish.h"

#define MAX_WATTS 100000.0
/* json-c's tree of one document at most (a BMC's are a few KiB; 1 MiB of "{}," would be 270 MiB) */
#define TREE_BUDGET (16u << 20)

static json_object *parse(const char *json, size_t len, struct kepler_error *err)
{
	json_tokener *tok;
	json_object *o;
	uint64_t values, cost = kepler_json_tree_cost(json, len, &values);

	if (len > (size_t)INT32_MAX) {
		kepler_error_set(err, -EPROTO, "a %zu-byte document", len);
		return NULL;
	}
	if (cost > TREE_BUDGET) {
		kepler_error_set(err, -E2BIG,
				 "a document of %llu values would take %llu MiB to parse: refused",
				 (unsigned long long)values, (unsigned long long)(cost >> 20));
		return NULL;
	}
	tok = json_tokener_new_ex(32);
	if (!tok) {
		kepler_error_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	o = json_tokener_parse_ex(tok, json, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(o, json_type_object)) {
		kepler_error_set(err, -EPROTO, "not a JSON object (%s)",
				 json_tokener_error_desc(json_tokener_get_error(tok)));
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* @o's member @key's "@odata.id", a Redfish path, into @ret. */
static int odata_id(json_object *o, const char *key, char *ret, size_t size)
{
	json_object *link, *id;
	const char *s;

	if (key && !json_object_object_get_ex(o, key, &link))
		return -ENOENT;
	if (!key)
		link = o;
	if (!json_object_is_type(link, json_type_object) ||
	    !json_object_object_get_ex(link, "@odata.id", &id) || !json_object_is_type(id, json_type_string))
		return -EPROTO;
	s = json_object_get_string(id);
	if (strncmp(s, "/redfish/v1/", 12) || strlen(s) >= size || strpbrk(s, " \"\\?#\r\n") ||
	    strstr(s, ".."))
		return -EPROTO;
	snprintf(ret, size, "%s", s);
	return 0;
}

int kepler_redfish_first_member(const char *json, size_t len, char *ret, size_t size,
				struct kepler_error *err)
{
	json_object *o = parse(json, len, err), *members;
	int r;

	if (!o)
		return err ? err->code : -EPROTO;
	if (!json_object_object_get_ex(o, "Members", &members) ||
	    !json_object_is_type(members, json_type_array) || json_object_array_length(members) == 0)
		r = kepler_error_set(err, -EPROTO, "no Members in the collection");
	else if (odata_id(json_object_array_get_idx(members, 0), NULL, ret, size) < 0)
		r = kepler_error_set(err, -EPROTO, "its first member has no valid @odata.id");
	else
		r = 0;
	json_object_put(o);
	return r;
}

int kepler_redfish_power_link(const char *json, size_t len, char *ret, size_t size,
			      enum kepler_redfish_form *ret_form, struct kepler_error *err)
{
	json_object *o = parse(json, len, err);
	int r;

	if (!o)
		return err ? err->code : -EPROTO;
	r = odata_id(o, "EnvironmentMetrics", ret, size);
	if (r == 0) {
		*ret_form = KEPLER_REDFISH_ENVIRONMENT;
	} else {
		r = odata_id(o, "Power", ret, size);
		if (r == 0)
			*ret_form = KEPLER_REDFISH_POWER;
		else
			r = kepler_error_set(err, r == -ENOENT ? -ENOENT : -EPROTO,
					     "the chassis links neither EnvironmentMetrics nor Power");
	}
	json_object_put(o);
	return r;
}

/* A watts value: -ENODATA for null, -EPROTO for anything but a number within range. */
static int watts_of(json_object *v, uint64_t *ret_mw)
{
	double w;

	if (!v || json_object_is_type(v, json_type_null))
		return -ENODATA;
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return -EPROTO;
	w = json_object_get_double(v);
	if (!isfinite(w) || w < 0 || w > MAX_WATTS)
		return -EPROTO;
	*ret_mw = (uint64_t)llround(w * 1000.0);
	return 0;
}

int kepler_redfish_watts(const char *json, size_t len, enum kepler_redfish_form form, uint64_t *ret_mw,
			 struct kepler_error *err)
{
	json_object *o = parse(json, len, err), *a = NULL, *v = NULL;
	int r;

	if (!o)
		return err ? err->code : -EPROTO;
	if (form == KEPLER_REDFISH_ENVIRONMENT) {
		if (json_object_object_get_ex(o, "PowerWatts", &a) &&
		    json_object_is_type(a, json_type_object))
			json_object_object_get_ex(a, "Reading", &v);
	} else if (json_object_object_get_ex(o, "PowerControl", &a) &&
		   json_object_is_type(a, json_type_array) && json_object_array_length(a) > 0) {
		json_object *first = json_object_array_get_idx(a, 0);

		if (json_object_is_type(first, json_type_object))
			json_object_object_get_ex(first, "PowerConsumedWatts", &v);
	}
	r = watts_of(v, ret_mw);
	if (r == -ENODATA)
		r = kepler_error_set(err, r, "no reading (%s is null or absent)",
				     form == KEPLER_REDFISH_ENVIRONMENT
					     ? "PowerWatts.Reading"
					     : "PowerControl[0].PowerConsumedWatts");
	else if (r < 0)
		r = kepler_error_set(err, r, "%s is not a number of watts from 0 to 100000",
				     form == KEPLER_REDFISH_ENVIRONMENT
					     ? "PowerWatts.Reading"
					     : "PowerControl[0].PowerConsumedWatts");
	json_object_put(o);
	return r;
}

int kepler_redfish_json_string(const char *s, char *ret, size_t size)
{
	json_object *o = json_object_new_string(s);
	const char *j = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : NULL;
	int r = j && strlen(j) < size ? 0 : -EINVAL;

	if (r == 0)
		snprintf(ret, size, "%s", j);
	json_object_put(o);
	return r;
}
