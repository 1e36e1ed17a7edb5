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
	free(s->labels);
	free(s->arena);
	memset(s, 0, sizeof(*s));
}

/* At least @need bytes in *@buf (its size *@cap); contents not kept. */
static int reserve(char **buf, size_t *cap, size_t need)
{
	char *b;

	if (*cap >= need)
		return 0;
	if (!(b = malloc(need)))
		return -ENOMEM;
	free(*buf);
	*buf = b;
	*cap = need;
	return 0;
}

/* The family of the last "# TYPE NAME counter" line, to mark its samples. */
struct family {
	const char *name;
	size_t len;
	bool counter;
};

/* A "# TYPE NAME TYPE" line: the family its samples belong to. */
static void type_line(const char *p, const char *end, struct family *f)
{
	const char *n, *q;

	if (end - p < 7 || memcmp(p, "# TYPE ", 7))
		return;
	n = q = p + 7;
	while (q < end && *q != ' ')
		q++;
	f->name = n;
	f->len = (size_t)(q - n);
	f->counter = end - q == 8 && !memcmp(q, " counter", 8);
}

/* Whether a sample named @v (@n bytes) is of @f's family: its name, or its name and "_total". */
static bool of_family(const char *v, size_t n, const struct family *f)
{
	return f->name && (n == f->len || (n == f->len + 6 && !memcmp(v + f->len, "_total", 6))) &&
	       !memcmp(v, f->name, f->len);
}

static bool name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

/* The parse's cursor: where the next string goes in the arena (offsets until the end). */
struct cursor {
	struct push_samples *s;
	size_t arena_used;
};

/* @n bytes of @p into the arena, NUL-terminated; its offset. */
static size_t put(struct cursor *c, const char *p, size_t n)
{
	size_t at = c->arena_used;

	memcpy(c->s->arena + at, p, n);
	c->s->arena[at + n] = 0;
	c->arena_used += n + 1;
	return at;
}

/* A label value between quotes at *@p (past the opening quote) into the arena, unescaped; SIZE_MAX if malformed. */
static size_t label_value(struct cursor *c, const char **p, const char *end)
{
	size_t at = c->arena_used, n = 0;
	char *v = c->s->arena + at;

	while (*p < end && **p != '"') {
		char ch = *(*p)++;

		if (ch == '\\' && *p < end) {
			ch = *(*p)++;
			ch = ch == 'n' ? '\n' : ch;
		}
		v[n++] = ch;
	}
	if (*p >= end)
		return SIZE_MAX;
	(*p)++; /* the closing quote */
	v[n] = 0;
	c->arena_used += n + 1;
	return at;
}

/* Labels are offsets (cast) until the parse ends. */
#define OFF(x) ((const char *)(uintptr_t)(x))
#define AT(x) ((size_t)(uintptr_t)(x))
#define NAME_LABEL SIZE_MAX /* "__name__", not copied */

/* One line: 0 a sample, 1 not a sample (nothing kept), -ENOMEM. */
static int parse_line(struct cursor *c, const char *p, const char *end, const struct family *f)
{
	struct push_samples *s = c->s;
	size_t arena0 = c->arena_used, labels0 = s->nlabels;
	const char *q = p;
	struct push_sample x = { 0 };
	char num[64], *stop;

	while (q < end && name_char(*q, q == p))
		q++;
	if (q == p)
		return 1;
	if (push_room((void **)&s->labels, s->nlabels, 1, &s->labels_cap, sizeof(*s->labels)) < 0)
		return -ENOMEM;
	x.counter = f->counter && of_family(p, (size_t)(q - p), f);
	s->labels[s->nlabels++] = (struct push_label){ OFF(NAME_LABEL), OFF(put(c, p, (size_t)(q - p))) };
	if (q < end && *q == '{') {
		q++;
		while (q < end && *q != '}') {
			const char *n0 = q;
			size_t name, value;

			while (q < end && name_char(*q, q == n0))
				q++;
			if (q == n0 || q + 1 >= end || q[0] != '=' || q[1] != '"' ||
			    s->nlabels - labels0 == PUSH_MAX_LABELS)
				goto not_sample;
			name = put(c, n0, (size_t)(q - n0));
			q += 2;
			if ((value = label_value(c, &q, end)) == SIZE_MAX)
				goto not_sample;
			if (push_room((void **)&s->labels, s->nlabels, 1, &s->labels_cap,
				      sizeof(*s->labels)) < 0)
				return -ENOMEM;
			s->labels[s->nlabels++] = (struct push_label){ OFF(name), OFF(value) };
			if (q < end && *q == ',')
				q++;
		}
		if (q >= end)
			goto not_sample;
		q++;
	}
	if (q >= end || *q != ' ' || end - q - 1 <= 0 || end - q - 1 >= (ptrdiff_t)sizeof(num))
		goto not_sample;
	memcpy(num, q + 1, (size_t)(end - q - 1));
	num[end - q - 1] = 0;
	x.value = strtod(num, &stop);
	if (stop == num || (*stop && *stop != ' ')) /* (a timestamp after the value is not ours: skipped) */
		goto not_sample;
	if (push_room((void **)&s->v, s->n, 1, &s->cap, sizeof(*s->v)) < 0)
		return -ENOMEM;
	x.label0 = labels0;
	x.nlabels = s->nlabels - labels0;
	x.key = OFF(p - s->text);
	x.key_len = (size_t)(q - p);
	s->v[s->n++] = x;
	return 0;
not_sample:
	c->arena_used = arena0;
	s->nlabels = labels0;
	return 1;
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

/* Offsets made pointers, labels sorted, __name__ found. */
static void resolve(struct push_samples *s)
{
	for (size_t i = 0; i < s->nlabels; i++) {
		s->labels[i].name =
			AT(s->labels[i].name) == NAME_LABEL ? "__name__" : s->arena + AT(s->labels[i].name);
		s->labels[i].value = s->arena + AT(s->labels[i].value);
	}
	for (size_t i = 0; i < s->n; i++) {
		struct push_sample *x = &s->v[i];

		x->labels = s->labels + x->label0;
		x->name = x->labels[0].value; /* __name__ is written first */
		x->key = s->text + AT(x->key);
		sort_labels(s->labels + x->label0, x->nlabels);
	}
}

int push_samples_parse(struct push_samples *s, const char *text, size_t len)
{
	struct cursor c = { s, 0 };
	const char *p, *end;
	struct family fam = { 0 };

	s->n = s->nlabels = s->skipped = 0;
	/* each label's name and value copied with a NUL: never more than the line they come from */
	if (reserve(&s->arena, &s->arena_cap, len + 64) < 0)
		return -ENOMEM;
	s->text = text;
	p = text;
	end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		int r = 0;

		if (eol > p && *p == '#')
			type_line(p, eol, &fam);
		else if (eol > p)
			r = parse_line(&c, p, eol, &fam);
		if (r < 0) {
			s->n = s->nlabels = 0;
			return r;
		}
		s->skipped += r == 1;
		p = nl ? nl + 1 : end;
	}
	resolve(s);
	return 0;
}
