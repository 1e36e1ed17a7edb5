// SPDX-License-Identifier: Apache-2.0
/* /proc/cpuinfo: see cpuinfo.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuinfo.h"

/* Copy @len bytes of @v, trimmed, into @dst (cut to @size - 1). */
static void set_value(char *dst, size_t size, const char *v, size_t len)
{
	while (len && (*v == ' ' || *v == '\t'))
		v++, len--;
	while (len && (v[len - 1] == ' ' || v[len - 1] == '\t' || v[len - 1] == '\r'))
		len--;
	if (len >= size)
		len = size - 1;
	memcpy(dst, v, len);
	dst[len] = '\0';
}

/* The key of a "key<tabs>: value" line, compared with @name. */
static bool key_is(const char *line, size_t klen, const char *name)
{
	while (klen && (line[klen - 1] == ' ' || line[klen - 1] == '\t'))
		klen--;
	return klen == strlen(name) && !memcmp(line, name, klen);
}

static int add_cpu(struct kepler_cpuinfo *ci, size_t *cap)
{
	if (ci->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct kepler_cpu *c = realloc(ci->cpus, ncap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		ci->cpus = c;
		*cap = ncap;
	}
	memset(&ci->cpus[ci->n], 0, sizeof(ci->cpus[0]));
	ci->n++;
	return 0;
}

int kepler_cpuinfo_parse(const char *text, size_t len, struct kepler_cpuinfo *ret)
{
	const char *p = text, *end = text + len;
	struct kepler_cpu *cur = NULL;
	size_t cap = 0;

	memset(ret, 0, sizeof(*ret));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *colon = memchr(p, ':', (size_t)(eol - p));

		if (p == eol) {
			cur = NULL; /* a blank line ends a CPU's block */
		} else if (colon) {
			size_t klen = (size_t)(colon - p), vlen = (size_t)(eol - colon - 1);

			if (key_is(p, klen, "processor")) {
				if (add_cpu(ret, &cap) < 0) {
					kepler_cpuinfo_free(ret);
					return -ENOMEM;
				}
				cur = &ret->cpus[ret->n - 1];
				set_value(cur->processor, sizeof(cur->processor), colon + 1, vlen);
			} else if (cur && key_is(p, klen, "vendor_id")) {
				set_value(cur->vendor_id, sizeof(cur->vendor_id), colon + 1, vlen);
			} else if (cur && key_is(p, klen, "model name")) {
				set_value(cur->model_name, sizeof(cur->model_name), colon + 1, vlen);
			} else if (cur && key_is(p, klen, "physical id")) {
				set_value(cur->physical_id, sizeof(cur->physical_id), colon + 1, vlen);
			} else if (cur && key_is(p, klen, "core id")) {
				set_value(cur->core_id, sizeof(cur->core_id), colon + 1, vlen);
			}
		}
		p = nl ? nl + 1 : end;
	}
	return 0;
}

int kepler_cpuinfo_read(const char *procfs, struct kepler_cpuinfo *ret, struct kepler_error *err)
{
	char path[4096];
	size_t cap = 64 * 1024, len = 0, n;
	char *buf = NULL, *grown;
	FILE *f;
	int r;

	memset(ret, 0, sizeof(*ret));
	snprintf(path, sizeof(path), "%s/cpuinfo", procfs);
	f = fopen(path, "r");
	if (!f)
		return kepler_error_set(err, -errno, "cannot read %s: %s", path, strerror(errno));
	for (;;) {
		if (!buf || len == cap) {
			cap = buf ? cap * 2 : cap;
			if (cap > 64u << 20 || !(grown = realloc(buf, cap))) {
				r = kepler_error_set(err, -ENOMEM, "%s: too large or out of memory", path);
				goto out;
			}
			buf = grown;
		}
		n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	if (ferror(f)) {
		r = kepler_error_set(err, -EIO, "cannot read %s", path);
		goto out;
	}
	r = kepler_cpuinfo_parse(buf, len, ret);
	if (r < 0)
		kepler_error_set(err, r, "out of memory");
out:
	fclose(f);
	free(buf);
	return r;
}
