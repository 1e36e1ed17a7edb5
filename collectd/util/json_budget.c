// SPDX-License-Identifier: Apache-2.0
/* The memory json-c's tree of a document would take (json_budget.h). */
#include <stdbool.h>

#include "json_budget.h"

uint64_t kepler_json_tree_cost(const char *json, size_t len, uint64_t *ret_values)
{
	uint64_t objects = 0, arrays = 0, values = 1;
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		char c = json[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
			continue;
		}
		objects += c == '{';
		arrays += c == '[';
		values += c == ',' || c == ':';
		in_string = c == '"';
	}
	*ret_values = objects + arrays + values;
	return objects * 800 + arrays * 160 + values * 80 + len;
}
