// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "samples.h"

static void sample_free(struct push_sample *s)
{
	for (size_t i = 0; i < s->nlabels; i++) {
		free(s->labels[i].name);
		free(s->labels[i].value);
	}
	free(s->key);
	memset(s, 0, sizeof(*s));
}

void push_samples_free(struct push_sample *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		sample_free(&s[i]);
	free(s);
}

static char *dup_n(const char *p, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, p, n);
		d[n] = 0;
	}
	return d;
}

/* A label value between quotes at *@p (past the opening quote), unescaped; NULL if malformed. */
static char *label_value(const char **p, const char *end)
{
	char *v = malloc((size_t)(end - *p) + 1);
	size_t n = 0;

	if (!v)
		return NULL;
	while (*p < end && **p != '"') {
		char c = *(*p)++;

		if (c == '\\' && *p < end) {
			c = *(*p)++;
			c = c == 'n' ? '\n' : c;
		}
		v[n++] = c;
	}
	if (*p >= end) {
		free(v);
		return NULL;
	}
	(*p)++; /* the closing quote */
	v[n] = 0;
	return v;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct push_label *)a)->name, ((const struct push_label *)b)->name);
}

static bool name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

/* One line: 0 a sample in *@s, 1 not a sample, -ENOMEM. */
static int parse_line(const char *p, const char *end, struct push_sample *s)
{
	const char *q = p;
	size_t keylen = 0;
	char *num, *stop;

	memset(s, 0, sizeof(*s));
	while (q < end && name_char(*q, q == p))
		q++;
	if (q == p)
		return 1;
	s->labels[0].name = strdup("__name__");
	s->labels[0].value = dup_n(p, (size_t)(q - p));
	s->nlabels = 1;
	if (!s->labels[0].name || !s->labels[0].value)
		return -ENOMEM;
	if (q < end && *q == '{') {
		q++;
		while (q < end && *q != '}') {
			const char *n0 = q;

			while (q < end && name_char(*q, q == n0))
				q++;
			if (q == n0 || q + 1 >= end || q[0] != '=' || q[1] != '"' ||
			    s->nlabels == PUSH_MAX_LABELS)
				return 1;
			s->labels[s->nlabels].name = dup_n(n0, (size_t)(q - n0));
			q += 2;
			s->labels[s->nlabels].value = label_value(&q, end);
			if (!s->labels[s->nlabels].name || !s->labels[s->nlabels].value) {
				s->nlabels++;
				return s->labels[s->nlabels - 1].name ? 1 : -ENOMEM;
			}
			s->nlabels++;
			if (q < end && *q == ',')
				q++;
		}
		if (q >= end)
			return 1;
		q++;
	}
	if (q >= end || *q != ' ')
		return 1;
	num = dup_n(q + 1, (size_t)(end - q - 1));
	if (!num)
		return -ENOMEM;
	s->value = strtod(num, &stop);
	if (stop == num || (*stop && *stop != ' ')) { /* (a timestamp after the value is not ours: skipped) */
		free(num);
		return 1;
	}
	free(num);
	qsort(s->labels, s->nlabels, sizeof(s->labels[0]), by_name);
	for (size_t i = 0; i < s->nlabels; i++)
		keylen += strlen(s->labels[i].name) + strlen(s->labels[i].value) + 2;
	if (!(s->key = malloc(keylen + 1)))
		return -ENOMEM;
	s->key[0] = 0;
	for (size_t i = 0, o = 0; i < s->nlabels; i++) {
		size_t a = strlen(s->labels[i].name), b = strlen(s->labels[i].value);

		memcpy(s->key + o, s->labels[i].name, a);
		s->key[o + a] = '\x1f';
		memcpy(s->key + o + a + 1, s->labels[i].value, b);
		s->key[o + a + 1 + b] = '\x1e';
		o += a + b + 2;
		s->key[o] = 0;
	}
	return 0;
}

int push_samples_parse(const char *text, size_t len, struct push_sample **ret, size_t *ret_n,
		       size_t *ret_skipped)
{
	const char *p = text, *end = text + len;
	struct push_sample *v = NULL;
	size_t n = 0, cap = 0, skipped = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		int r;

		if (eol > p && *p != '#') {
			if (n == cap) {
				struct push_sample *nv;

				cap = cap ? 2 * cap : 256;
				if (!(nv = realloc(v, cap * sizeof(*v)))) {
					push_samples_free(v, n);
					return -ENOMEM;
				}
				v = nv;
			}
			r = parse_line(p, eol, &v[n]);
			if (r < 0) {
				sample_free(&v[n]);
				push_samples_free(v, n);
				return r;
			}
			if (r == 0)
				n++;
			else {
				sample_free(&v[n]);
				skipped++;
			}
		}
		p = nl ? nl + 1 : end;
	}
	*ret = v;
	*ret_n = n;
	*ret_skipped = skipped;
	return 0;
}
