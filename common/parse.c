// SPDX-License-Identifier: Apache-2.0
/*
 * Parsers for configuration values: durations, sizes, booleans, integers.
 * They accept exactly the documented forms and reject everything else
 * (no silent truncation, no trailing garbage).
 */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kepler/config.h"
#include "kepler/log.h"

struct unit {
	const char *name;
	uint64_t factor;
};

/* Longest names first where one is a prefix of another ("ms" before "m"). */
static const struct unit duration_units[] = {
	{ "ns", 1ULL },
	{ "us", 1000ULL },
	{ "\xc2\xb5s", 1000ULL }, /* µs */
	{ "ms", 1000000ULL },
	{ "s", 1000000000ULL },
	{ "m", 60ULL * 1000000000ULL },
	{ "h", 3600ULL * 1000000000ULL },
	{ "d", 86400ULL * 1000000000ULL },
	{ NULL, 0 },
};

static const struct unit size_units[] = {
	{ "KiB", 1ULL << 10 }, { "MiB", 1ULL << 20 }, { "GiB", 1ULL << 30 },   { "TiB", 1ULL << 40 },
	{ "KB", 1000ULL },     { "MB", 1000000ULL },  { "GB", 1000000000ULL }, { "TB", 1000000000000ULL },
	{ "B", 1ULL },         { NULL, 0 },
};

/* a * b + c without overflow, or -ERANGE */
static int mul_add(uint64_t a, uint64_t b, uint64_t c, uint64_t *ret)
{
	uint64_t prod;

	if (__builtin_mul_overflow(a, b, &prod) || __builtin_add_overflow(prod, c, ret))
		return -ERANGE;
	return 0;
}

static const struct unit *match_unit(const struct unit *units, const char *p)
{
	for (const struct unit *u = units; u->name; u++)
		if (strncmp(p, u->name, strlen(u->name)) == 0)
			return u;
	return NULL;
}

/* Digits at *pp into *ret (advancing *pp); -EINVAL if none, -ERANGE. */
static int parse_digits(const char **pp, uint64_t *ret)
{
	const char *p = *pp;
	uint64_t v = 0;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++)
		if (mul_add(v, 10, (uint64_t)(*p - '0'), &v) < 0)
			return -ERANGE;
	*pp = p;
	*ret = v;
	return 0;
}

/* One "<number>[.<fraction>]<unit>" term of a duration. */
static int parse_duration_term(const char **pp, uint64_t *ret_ns)
{
	const char *p = *pp;
	uint64_t whole, frac = 0, scale = 1, ns;
	const struct unit *u;
	int r;

	r = parse_digits(&p, &whole);
	if (r < 0)
		return r;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++) {
			if (scale < 1000000000ULL) { /* finer than 1 ns is dropped */
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
			}
		}
	}
	u = match_unit(duration_units, p);
	if (!u)
		return -EINVAL;
	p += strlen(u->name);
	if (mul_add(whole, u->factor, frac * u->factor / scale, &ns) < 0)
		return -ERANGE;
	*pp = p;
	*ret_ns = ns;
	return 0;
}

int kepler_parse_duration(const char *s, uint64_t *ret_ns)
{
	uint64_t total = 0, term;
	const char *p = s;
	int r;

	if (!s || !*s)
		return -EINVAL;
	if (strcmp(s, "0") == 0) {
		*ret_ns = 0;
		return 0;
	}
	while (*p) {
		r = parse_duration_term(&p, &term);
		if (r < 0)
			return r;
		if (__builtin_add_overflow(total, term, &total))
			return -ERANGE;
	}
	*ret_ns = total;
	return 0;
}

int kepler_parse_size(const char *s, uint64_t *ret_bytes)
{
	const char *p = s;
	const struct unit *u = NULL;
	uint64_t n, bytes;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_digits(&p, &n);
	if (r < 0)
		return r;
	if (*p) {
		u = match_unit(size_units, p);
		if (!u || p[strlen(u->name)] != '\0')
			return -EINVAL;
	}
	if (mul_add(n, u ? u->factor : 1, 0, &bytes) < 0)
		return -ERANGE;
	*ret_bytes = bytes;
	return 0;
}

int kepler_parse_bool(const char *s, bool *ret_value)
{
	static const char *const yes[] = { "true", "yes", "on", "1", NULL };
	static const char *const no[] = { "false", "no", "off", "0", NULL };

	if (!s)
		return -EINVAL;
	for (size_t i = 0; yes[i]; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*ret_value = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*ret_value = false;
			return 0;
		}
	}
	return -EINVAL;
}

int kepler_parse_int(const char *s, int64_t *ret_value)
{
	char *end;
	long long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (end == s || *end != '\0')
		return -EINVAL;
	*ret_value = v;
	return 0;
}

const char *kepler_format_duration(uint64_t ns, char *buf, size_t len)
{
	static const struct unit parts[] = {
		{ "h", 3600ULL * 1000000000ULL },
		{ "m", 60ULL * 1000000000ULL },
		{ "s", 1000000000ULL },
		{ NULL, 0 },
	};
	size_t used = 0;

	if (ns == 0) {
		snprintf(buf, len, "0s");
		return buf;
	}
	if (ns % 1000000000ULL != 0) {
		if (ns % 1000000ULL == 0)
			snprintf(buf, len, "%" PRIu64 "ms", (uint64_t)(ns / 1000000ULL));
		else if (ns % 1000ULL == 0)
			snprintf(buf, len, "%" PRIu64 "us", (uint64_t)(ns / 1000ULL));
		else
			snprintf(buf, len, "%" PRIu64 "ns", ns);
		return buf;
	}
	buf[0] = '\0';
	for (const struct unit *u = parts; u->name && used < len; u++) {
		if (ns / u->factor == 0)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%" PRIu64 "%s", ns / u->factor, u->name);
		ns %= u->factor;
	}
	return buf;
}

/* "Z", "+HH:MM", "-HH:MM" (or HHMM): the offset east of UTC in seconds. */
static int parse_offset(const char *p, long *ret_s)
{
	int h, m;

	if (!strcmp(p, "Z") || !strcmp(p, "z")) {
		*ret_s = 0;
		return 0;
	}
	if ((p[0] != '+' && p[0] != '-') ||
	    (sscanf(p + 1, "%2d:%2d", &h, &m) != 2 && sscanf(p + 1, "%2d%2d", &h, &m) != 2) || h > 23 ||
	    m > 59 || (strlen(p) != 6 && strlen(p) != 5))
		return -EINVAL;
	*ret_s = (p[0] == '-' ? -1 : 1) * (h * 3600L + m * 60L);
	return 0;
}

int kepler_parse_time(const char *s, uint64_t now_ns, uint64_t *ret_wall_ns)
{
	struct tm tm;
	const char *p;
	uint64_t frac = 0, scale = 1, ago;
	long offset = 0;
	time_t t;

	if (!s || !*s)
		return -EINVAL;
	if (!strcmp(s, "now")) {
		*ret_wall_ns = now_ns;
		return 0;
	}
	if (s[0] == '-') {
		if (kepler_parse_duration(s + 1, &ago) < 0 || ago > now_ns)
			return -EINVAL;
		*ret_wall_ns = now_ns - ago;
		return 0;
	}
	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		p = strptime(s, "%Y-%m-%d %H:%M:%S", &tm);
	if (!p)
		return -EINVAL;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (scale < 1000000000ULL) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
			}
	}
	if (parse_offset(p, &offset) < 0)
		return -EINVAL;
	t = timegm(&tm);
	if (t == (time_t)-1 || t - offset < 0)
		return -EINVAL;
	*ret_wall_ns = (uint64_t)(t - offset) * 1000000000ULL + frac * (1000000000ULL / scale);
	return 0;
}

int kepler_parse_time_flag(const char *flag, const char *s, uint64_t now_ns, uint64_t *ret_wall_ns)
{
	if (kepler_parse_time(s, now_ns, ret_wall_ns) == 0)
		return 0;
	kepler_err("invalid --%s '%s': expected RFC 3339 (2026-11-22T10:00:00Z), -DURATION (-15m) or now",
		   flag, s);
	return -EINVAL;
}

/* @s (of @n bytes, or to its end when @n is -1) is a decimal number from @lo to @hi, nothing after it. */
static bool decimal_in(const char *s, double lo, double hi, bool above_lo)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	return !errno && end != s && !*end && !isspace((unsigned char)*s) && (above_lo ? v > lo : v >= lo) &&
	       v <= hi;
}

int kepler_check_watts(const char *value, char *why, size_t size)
{
	if (!*value || decimal_in(value, 0, 100000, false))
		return 0;
	snprintf(why, size, "expected a power in watts from 0 to 100000 (e.g. 35.5)");
	return -EINVAL;
}

int kepler_check_zone_watts(const char *value, char *why, size_t size)
{
	const char *eq = strchr(value, '=');

	if (eq && eq != value && eq - value < 64 && decimal_in(eq + 1, 0, 1e6, false))
		return 0;
	snprintf(why, size, "expected ZONE=WATTS (e.g. package=12.5), watts from 0 to 1000000");
	return -EINVAL;
}

int kepler_check_intensity(const char *value, char *why, size_t size)
{
	if (!*value || decimal_in(value, 0, 100000, true))
		return 0;
	snprintf(why, size, "expected g CO2e per kWh, above 0 and at most 100000 (e.g. 350)");
	return -EINVAL;
}

/* ---- Kubernetes label keys and values (kube.pod-labels, kepler-report --by label:KEY) ---- */

static bool label_char(char c, bool inner)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (inner && (c == '-' || c == '_' || c == '.'));
}

bool kepler_label_value_valid(const char *s, size_t n)
{
	if (n == 0)
		return true;
	if (n > KEPLER_LABEL_VALUE_MAX || !label_char(s[0], false) || !label_char(s[n - 1], false))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (!label_char(s[i], true))
			return false;
	return true;
}

/* A DNS-1123 subdomain: lowercase alphanumerics, '-' and '.', alphanumeric at both ends. */
static bool dns_subdomain(const char *s, size_t n)
{
	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool an = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9');

		if (!an && ((i == 0 || i + 1 == n) || (s[i] != '-' && s[i] != '.')))
			return false;
	}
	return true;
}

bool kepler_label_key_valid(const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n);
	const char *name = slash ? slash + 1 : s;
	size_t nlen = n - (size_t)(name - s);

	if (n > KEPLER_LABEL_KEY_MAX || (slash && !dns_subdomain(s, (size_t)(slash - s))))
		return false;
	return nlen > 0 && nlen <= 63 && kepler_label_value_valid(name, nlen);
}

int kepler_check_label_key(const char *value, char *why, size_t size)
{
	if (kepler_label_key_valid(value, strlen(value)))
		return 0;
	snprintf(
		why, size,
		"expected a Kubernetes label key (team, app.kubernetes.io/name: [prefix/]name, the name 1-63 "
		"of A-Z a-z 0-9 - _ . and alphanumeric at both ends), at most %d characters",
		KEPLER_LABEL_KEY_MAX);
	return -EINVAL;
}

int kepler_check_report_by(const char *value, char *why, size_t size)
{
	static const char *const kinds[] = { "auto",      "node", "namespace", "pod",
					     "container", "vm",   "process",   "owner" };

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(value, kinds[i]))
			return 0;
	if (!strncmp(value, "label:", 6) && kepler_label_key_valid(value + 6, strlen(value + 6)))
		return 0;
	snprintf(why, size,
		 "expected node, namespace, pod, container, vm, process, owner, label:KEY (KEY a pod label "
		 "that kube.pod-labels records) or auto");
	return -EINVAL;
}
