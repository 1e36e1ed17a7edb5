// SPDX-License-Identifier: Apache-2.0
/* The store's record of the node's CPUs: see kepler/cpuinfo.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/cpuinfo.h"

#define NFIELDS 5
#define VERSION_LINE "v1\n"

/* The fields of @c in their order on a line, with their sizes. */
static void fields(struct kepler_cpu *c, char *ret[NFIELDS], size_t sizes[NFIELDS])
{
	ret[0] = c->processor, sizes[0] = sizeof(c->processor);
	ret[1] = c->vendor_id, sizes[1] = sizeof(c->vendor_id);
	ret[2] = c->model_name, sizes[2] = sizeof(c->model_name);
	ret[3] = c->physical_id, sizes[3] = sizeof(c->physical_id);
	ret[4] = c->core_id, sizes[4] = sizeof(c->core_id);
}

char *kepler_cpuinfo_encode(const struct kepler_cpuinfo *ci)
{
	size_t cap = sizeof(VERSION_LINE) + ci->n * (sizeof(struct kepler_cpu) + NFIELDS);
	char *out = malloc(cap), *p;

	if (!out)
		return NULL;
	p = out + strlen(VERSION_LINE);
	memcpy(out, VERSION_LINE, strlen(VERSION_LINE));
	for (size_t i = 0; i < ci->n; i++) {
		struct kepler_cpu c = ci->cpus[i];
		char *f[NFIELDS];
		size_t sizes[NFIELDS];

		fields(&c, f, sizes);
		for (int k = 0; k < NFIELDS; k++) {
			size_t len = strnlen(f[k], sizes[k] - 1);

			for (size_t j = 0; j < len; j++)
				*p++ = f[k][j] == '\t' || f[k][j] == '\n' || f[k][j] == '\r' ? ' ' : f[k][j];
			*p++ = k == NFIELDS - 1 ? '\n' : '\t';
		}
	}
	*p = '\0';
	return out;
}

/* Fill @c from the tab-separated @line (no newline); -EBADMSG unless five fields. */
static int decode_line(const char *line, size_t len, struct kepler_cpu *c)
{
	const char *end = line + len;
	char *f[NFIELDS];
	size_t sizes[NFIELDS];

	memset(c, 0, sizeof(*c));
	fields(c, f, sizes);
	for (int k = 0; k < NFIELDS; k++) {
		const char *tab = memchr(line, '\t', (size_t)(end - line));
		const char *stop = tab ? tab : end;
		size_t n = (size_t)(stop - line);

		if ((k < NFIELDS - 1) != (tab != NULL))
			return -EBADMSG;
		if (n >= sizes[k])
			n = sizes[k] - 1;
		memcpy(f[k], line, n);
		f[k][n] = '\0';
		line = tab ? tab + 1 : end;
	}
	return 0;
}

int kepler_cpuinfo_decode(const char *text, size_t len, struct kepler_cpuinfo *ret)
{
	const char *p = text + strlen(VERSION_LINE), *end = text + len;
	size_t lines = 0;
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	if (len < strlen(VERSION_LINE) || memcmp(text, VERSION_LINE, strlen(VERSION_LINE)))
		return -EBADMSG;
	for (const char *q = p; q < end; q++)
		lines += *q == '\n';
	if (lines > KEPLER_CPUS_MAX || (len > 0 && text[len - 1] != '\n'))
		return -EBADMSG;
	if (!lines)
		return 0;
	ret->cpus = calloc(lines, sizeof(*ret->cpus));
	if (!ret->cpus)
		return -ENOMEM;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		r = decode_line(p, (size_t)(nl - p), &ret->cpus[ret->n]);
		if (r < 0) {
			kepler_cpuinfo_free(ret);
			return r;
		}
		ret->n++;
		p = nl + 1;
	}
	return 0;
}

void kepler_cpuinfo_free(struct kepler_cpuinfo *ci)
{
	free(ci->cpus);
	memset(ci, 0, sizeof(*ci));
}
