// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "push_arena.h"
#include "samples.h"

void push_samples_free(struct push_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static bool name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

int push_samples_from(struct push_samples *s, const char *text, const struct kepler_prom_samples *k)
{
	s->n = 0;
	if (k->n > s->cap && push_room((void **)&s->v, 0, k->n, &s->cap, sizeof(*s->v)) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < k->n; i++) {
		const struct kepler_prom_sample *x = &k->v[i];

		s->v[i] = (struct push_sample){ .key = x->kept ? NULL : text + x->key_at,
						.key_len = x->key_len,
						.name_len = x->name_len,
						.value = x->value,
						.counter = x->counter,
						.id = x->id,
						.from = k,
						.proc = x->proc };
	}
	s->n = k->n;
	return 0;
}

const char *push_sample_key(const struct push_sample *s, struct kepler_buf *scratch)
{
	struct kepler_prom_sample x = { .key_len = s->key_len, .id = s->id, .kept = true, .proc = s->proc };

	if (s->key)
		return s->key;
	kepler_buf_reset(scratch);
	if (!s->from)
		return NULL;
	kepler_prom_sample_key(s->from, NULL, &x, scratch);
	return scratch->error || scratch->len != s->key_len ? NULL : scratch->data;
}

/* A label value after its opening quote at *@p, unescaped into @out; its length, or -1 if unterminated. */
static ptrdiff_t label_value(const char **p, const char *end, char *out)
{
	ptrdiff_t n = 0;

	while (*p < end && **p != '"') {
		char ch = *(*p)++;

		if (ch == '\\' && *p < end) {
			ch = *(*p)++;
			ch = ch == 'n' ? '\n' : ch;
		}
		out[n++] = ch;
	}
	if (*p >= end)
		return -1;
	(*p)++; /* the closing quote */
	out[n] = 0;
	return n;
}

static void sort_labels(struct push_label *l, size_t n)
{
	for (size_t i = 1; i < n; i++) /* insertion: the renderer writes them sorted, bar __name__ */
		for (size_t k = i; k > 0 && strcmp(l[k - 1].name, l[k].name) > 0; k--) {
			struct push_label t = l[k];

			l[k] = l[k - 1];
			l[k - 1] = t;
		}
}

int push_key_labels(const char *key, size_t len, struct push_label *labels, size_t *ret_n, char *scratch)
{
	const char *p = key, *end = key + len, *n0;
	char *out = scratch;
	size_t n = 0;
	ptrdiff_t vlen;

	while (p < end && name_char(*p, p == key))
		p++;
	if (p == key)
		return -EINVAL;
	memcpy(out, key, (size_t)(p - key));
	out[p - key] = 0;
	labels[n++] = (struct push_label){ "__name__", out };
	out += p - key + 1;
	if (p < end) {
		if (*p++ != '{')
			return -EINVAL;
		while (p < end && *p != '}') {
			n0 = p;
			while (p < end && name_char(*p, p == n0))
				p++;
			if (p == n0 || end - p < 2 || p[0] != '=' || p[1] != '"' || n == PUSH_MAX_LABELS)
				return -EINVAL;
			memcpy(out, n0, (size_t)(p - n0));
			out[p - n0] = 0;
			labels[n].name = out;
			out += p - n0 + 1;
			p += 2;
			if ((vlen = label_value(&p, end, out)) < 0)
				return -EINVAL;
			labels[n++].value = out;
			out += vlen + 1;
			if (p < end && *p == ',')
				p++;
		}
		if (p + 1 != end) /* the closing brace, last */
			return -EINVAL;
	}
	sort_labels(labels, n);
	*ret_n = n;
	return 0;
}
