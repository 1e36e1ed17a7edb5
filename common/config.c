// SPDX-License-Identifier: Apache-2.0
/*
 * The configuration engine: defaults, values given as text, the command
 * line. The YAML file is read in config_yaml.c, help and docs are written
 * in config_help.c, the table itself is options.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_internal.h"

static void *field(struct kepler_config *cfg, const struct kepler_option *o)
{
	return (char *)cfg + o->offset;
}

static void strlist_clear(struct kepler_strlist *l)
{
	for (size_t i = 0; i < l->count; i++)
		free(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->count = 0;
}

bool kepler_strlist_contains(const struct kepler_strlist *list, const char *item)
{
	for (size_t i = 0; i < list->count; i++)
		if (strcmp(list->items[i], item) == 0)
			return true;
	return false;
}

static int choice_index(const struct kepler_option *o, const char *value)
{
	for (int i = 0; o->choices[i]; i++)
		if (strcasecmp(o->choices[i], value) == 0)
			return i;
	return -1;
}

static void join_choices(const struct kepler_option *o, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; o->choices[i] && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", o->choices[i]);
}

static int bad_value(const char *value, const char *origin, const char *expected, struct kepler_error *err)
{
	return kepler_error_set(err, -EINVAL, "invalid value '%.100s' for %s: %s", value, origin, expected);
}

static int out_of_range(const struct kepler_option *o, const char *value, const char *origin,
			struct kepler_error *err)
{
	char lo[32], hi[32];

	if (o->type == KEPLER_OPT_DURATION) {
		kepler_format_duration((uint64_t)o->min, lo, sizeof(lo));
		kepler_format_duration((uint64_t)o->max, hi, sizeof(hi));
	} else {
		snprintf(lo, sizeof(lo), "%" PRId64, o->min);
		snprintf(hi, sizeof(hi), "%" PRId64, o->max);
	}
	return kepler_error_set(err, -ERANGE, "value '%.100s' for %s is out of range: must be from %s to %s",
				value, origin, lo, hi);
}

static bool in_range(const struct kepler_option *o, int64_t v)
{
	if (o->min == 0 && o->max == 0)
		return true;
	return v >= o->min && v <= o->max;
}

/* A count (digits) within the option's range, or a duration from 1s to 366d. */
static int set_count_or_duration(const struct kepler_option *o, struct kepler_config *cfg, const char *value,
				 const char *origin, struct kepler_error *err)
{
	struct kepler_count_or_duration *f = field(cfg, o);
	int64_t i = 0;
	uint64_t u = 0;

	if (value[0] >= '0' && value[0] <= '9' && value[strspn(value, "0123456789")] == '\0') {
		if (kepler_parse_int(value, &i) < 0 || !in_range(o, i))
			return out_of_range(o, value, origin, err);
		f->count = i;
		f->ns = 0;
		return 0;
	}
	if (kepler_parse_duration(value, &u) == -EINVAL)
		return bad_value(value, origin, "expected a count such as 720 or a duration such as 6h", err);
	if (u < 1000000000ULL || u > 366ULL * 24 * 3600 * 1000000000ULL)
		return bad_value(value, origin, "a duration from 1s to 366d", err);
	f->count = 0;
	f->ns = u;
	return 0;
}

static int set_number(const struct kepler_option *o, struct kepler_config *cfg, const char *value,
		      const char *origin, struct kepler_error *err)
{
	uint64_t u = 0;
	int64_t i = 0;
	int r;

	if (o->type == KEPLER_OPT_COUNT_OR_DURATION)
		return set_count_or_duration(o, cfg, value, origin, err);
	switch (o->type) {
	case KEPLER_OPT_INT:
		r = kepler_parse_int(value, &i);
		if (r == -EINVAL)
			return bad_value(value, origin, "expected an integer", err);
		break;
	case KEPLER_OPT_DURATION:
		r = kepler_parse_duration(value, &u);
		if (r == -EINVAL)
			return bad_value(value, origin, "expected a duration such as 500ms, 5s, 1m or 1h30m",
					 err);
		break;
	default: /* KEPLER_OPT_SIZE */
		r = kepler_parse_size(value, &u);
		if (r == -EINVAL)
			return bad_value(value, origin, "expected a size such as 4096, 64MiB or 1GiB", err);
		break;
	}
	if (r < 0 || u > INT64_MAX)
		return out_of_range(o, value, origin, err);
	if (o->type != KEPLER_OPT_INT)
		i = (int64_t)u;
	if (!in_range(o, i))
		return out_of_range(o, value, origin, err);
	if (o->type == KEPLER_OPT_INT)
		*(int64_t *)field(cfg, o) = i;
	else
		*(uint64_t *)field(cfg, o) = (uint64_t)i;
	return 0;
}

static int set_enum(const struct kepler_option *o, struct kepler_config *cfg, const char *value,
		    const char *origin, struct kepler_error *err)
{
	char choices[256], expected[300];
	int idx = choice_index(o, value);

	if (idx < 0) {
		join_choices(o, choices, sizeof(choices));
		snprintf(expected, sizeof(expected), "expected one of %s", choices);
		return bad_value(value, origin, expected, err);
	}
	/* an option's enum is an int-sized field (see the assertion below), written by its index */
	*(int *)field(cfg, o) = idx;
	return 0;
}

/* @value's form, where @o has a check: 0, or the usage error. */
static int check_form(const struct kepler_option *o, const char *value, const char *origin,
		      struct kepler_error *err)
{
	char why[160];

	for (const struct kepler_option_check *c = kepler_option_checks; c->key; c++)
		if (!strcmp(c->key, o->key))
			return c->check(value, why, sizeof(why)) < 0 ? bad_value(value, origin, why, err) : 0;
	return 0;
}

static int set_string(const struct kepler_option *o, struct kepler_config *cfg, const char *value,
		      const char *origin, struct kepler_error *err)
{
	char **slot = field(cfg, o);
	char *copy;

	if (check_form(o, value, origin, err) < 0)
		return -EINVAL;
	copy = strdup(value);

	if (!copy)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	free(*slot);
	*slot = copy;
	return 0;
}

int kepler_config_set_list(const struct kepler_option *o, struct kepler_config *cfg, const char *const *items,
			   size_t n, const char *origin, struct kepler_error *err)
{
	struct kepler_strlist fresh = { 0 };
	char choices[256], expected[300];

	if (o->max > 0 && n > (uint64_t)o->max) {
		snprintf(expected, sizeof(expected), "expected at most %lld items, not %zu",
			 (long long)o->max, n);
		return bad_value(n ? items[n - 1] : "", origin, expected, err);
	}
	for (size_t i = 0; i < n; i++) {
		if (check_form(o, items[i], origin, err) < 0)
			return -EINVAL;
		if (o->choices && choice_index(o, items[i]) < 0) {
			join_choices(o, choices, sizeof(choices));
			snprintf(expected, sizeof(expected), "expected items from %s", choices);
			strlist_clear(&fresh);
			return bad_value(items[i], origin, expected, err);
		}
	}
	fresh.items = calloc(n ? n : 1, sizeof(char *));
	if (!fresh.items)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		int idx = o->choices ? choice_index(o, items[i]) : -1;

		fresh.items[i] = strdup(idx >= 0 ? o->choices[idx] : items[i]);
		if (!fresh.items[i]) {
			strlist_clear(&fresh);
			return kepler_error_set(err, -ENOMEM, "out of memory");
		}
		fresh.count++;
	}
	strlist_clear(field(cfg, o));
	*(struct kepler_strlist *)field(cfg, o) = fresh;
	return 0;
}

/* "a, b,c" -> items "a", "b", "c"; empty items are dropped. */
static int set_list_text(const struct kepler_option *o, struct kepler_config *cfg, const char *value,
			 const char *origin, struct kepler_error *err)
{
	char *copy = strdup(value), *save = NULL, *tok;
	const char **items = NULL;
	size_t n = 0;
	int r = -ENOMEM;

	if (!copy)
		goto out;
	items = calloc(strlen(value) / 2 + 2, sizeof(*items));
	if (!items)
		goto out;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ' || *tok == '\t')
			tok++;
		for (char *e = tok + strlen(tok); e > tok && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = '\0';
		if (*tok)
			items[n++] = tok;
	}
	r = kepler_config_set_list(o, cfg, items, n, origin, err);
out:
	if (r == -ENOMEM && err && !err->code)
		kepler_error_set(err, r, "out of memory");
	free(items);
	free(copy);
	return r;
}

int kepler_config_set_value(const struct kepler_option *o, struct kepler_config *cfg, const char *value,
			    const char *origin, struct kepler_error *err)
{
	bool b;

	switch (o->type) {
	case KEPLER_OPT_BOOL:
		if (kepler_parse_bool(value, &b) < 0)
			return bad_value(value, origin, "expected true or false", err);
		*(bool *)field(cfg, o) = b;
		return 0;
	case KEPLER_OPT_INT:
	case KEPLER_OPT_DURATION:
	case KEPLER_OPT_SIZE:
	case KEPLER_OPT_COUNT_OR_DURATION: return set_number(o, cfg, value, origin, err);
	case KEPLER_OPT_STRING: return set_string(o, cfg, value, origin, err);
	case KEPLER_OPT_ENUM: return set_enum(o, cfg, value, origin, err);
	case KEPLER_OPT_LIST: return set_list_text(o, cfg, value, origin, err);
	}
	return kepler_error_set(err, -EINVAL, "internal error: option type %d", (int)o->type);
}

const struct kepler_option *kepler_option_find(const char *key, unsigned prog, bool yaml)
{
	for (const struct kepler_option *o = kepler_options; o->key; o++) {
		if (strcmp(o->key, key) != 0)
			continue;
		if (yaml && (o->flags & KEPLER_OPT_FLAG_ONLY))
			continue;
		if (prog && !(o->progs & prog))
			continue;
		return o;
	}
	return NULL;
}

int kepler_config_init(struct kepler_config *cfg, struct kepler_error *err)
{
	char origin[128];
	int r;

	memset(cfg, 0, sizeof(*cfg));
	for (const struct kepler_option *o = kepler_options; o->key; o++) {
		snprintf(origin, sizeof(origin), "the default of '%s'", o->key);
		r = kepler_config_set_value(o, cfg, o->defval, origin, err);
		if (r < 0)
			return r;
	}
	return 0;
}

void kepler_config_done(struct kepler_config *cfg)
{
	if (!cfg)
		return;
	for (const struct kepler_option *o = kepler_options; o->key; o++) {
		if (o->type == KEPLER_OPT_STRING) {
			char **slot = field(cfg, o);

			free(*slot);
			*slot = NULL;
		} else if (o->type == KEPLER_OPT_LIST) {
			strlist_clear(field(cfg, o));
		}
	}
	free(cfg->args);
	cfg->args = NULL;
	cfg->nargs = 0;
	free(cfg->config_file);
	cfg->config_file = NULL;
	strlist_clear(&cfg->warnings);
}

int kepler_config_set(struct kepler_config *cfg, const char *key, const char *value, const char *origin,
		      unsigned prog, struct kepler_error *err)
{
	const struct kepler_option *o = kepler_option_find(key, prog, false);

	if (!o)
		return kepler_error_set(err, -EINVAL, "unknown key '%s'", key);
	return kepler_config_set_value(o, cfg, value, origin ? origin : key, err);
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(size_t));
	}
	return prev[lb];
}

/* The part of @key after its last '.' ("interval" of "monitor.interval"). */
static const char *last_part(const char *key)
{
	const char *dot = strrchr(key, '.');

	return dot ? dot + 1 : key;
}

/* Close enough to be the same word mistyped: one edit in a short word, up to three in a long one. */
static size_t edits_allowed(const char *key)
{
	size_t len = strlen(key);

	return len <= 4 ? 1 : len <= 8 ? 2 : 3;
}

bool kepler_option_close(const char *typed, const char *word)
{
	return edit_distance(typed, word) <= edits_allowed(typed);
}

const char *kepler_option_suggest(const char *key, unsigned prog, bool yaml)
{
	const char *best = NULL;
	size_t len = strlen(key), best_d = SIZE_MAX, allowed = edits_allowed(key);

	for (const struct kepler_option *o = kepler_options; o->key; o++) {
		const char *part = last_part(o->key);
		size_t d;

		if (yaml ? (o->flags & KEPLER_OPT_FLAG_ONLY) : (o->flags & KEPLER_OPT_YAML_ONLY))
			continue;
		if (prog && !(o->progs & prog))
			continue;
		/* the option without its section ("interval"), or its start ("listen" of listen-address) */
		if (!strcmp(key, part) || (len >= 4 && !strncmp(key, part, len) && part[len] == '-'))
			d = 0;
		else if ((d = edit_distance(key, o->key)) > allowed &&
			 (!strchr(key, '.') ? (d = edit_distance(key, part)) > allowed : true))
			continue;
		if (d < best_d) {
			best_d = d;
			best = o->key;
		}
	}
	return best;
}

/*
 * Enum fields are written as int (set_enum()): every option enum is
 * int-sized. Every one the option table writes, in kepler_options' order
 * (a new KEPLER_OPT_ENUM option adds its enum here).
 */
_Static_assert(sizeof(enum kepler_log_level) == sizeof(int) &&
		       sizeof(enum kepler_log_format) == sizeof(int) &&
		       sizeof(enum kepler_meter_source) == sizeof(int) &&
		       sizeof(enum kepler_informer_kind) == sizeof(int) &&
		       sizeof(enum kepler_kube_pod_source) == sizeof(int) &&
		       sizeof(enum kepler_active_split) == sizeof(int) &&
		       sizeof(enum kepler_idle_policy) == sizeof(int) &&
		       sizeof(enum kepler_gpu_enabled) == sizeof(int) &&
		       sizeof(enum kepler_store_sync) == sizeof(int) &&
		       sizeof(enum kepler_dataset_format) == sizeof(int) &&
		       sizeof(enum kepler_stdout_format) == sizeof(int) &&
		       sizeof(enum kepler_otlp_compression) == sizeof(int) &&
		       sizeof(enum kepler_carbon_provider) == sizeof(int) &&
		       sizeof(enum kepler_report_format) == sizeof(int) &&
		       sizeof(enum kepler_top_view) == sizeof(int),
	       "option enums are int-sized");
