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

/*
 * A plain decimal (digits, at most one point, at most 15 digits), as
 * kepler_fmt_prom() writes values, into *@ret: exactly what strtod() gives
 * (the digits and the power of ten are exact doubles, and a division is
 * correctly rounded), without its cost. false: anything else, for strtod().
 */
static bool plain_decimal(const char *p, const char *end, double *ret)
{
	static const double pow10[16] = { 1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
					  1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };
	uint64_t m = 0;
	int frac = -1, digits = 0;

	for (; p < end; p++) {
		if (*p >= '0' && *p <= '9') {
			m = m * 10 + (uint64_t)(*p - '0');
			frac += frac >= 0;
			if (++digits > 15)
				return false;
		} else if (*p == '.' && frac < 0) {
			frac = 0;
		} else {
			return false;
		}
	}
	if (!digits)
		return false;
	*ret = (double)m / pow10[frac < 0 ? 0 : frac];
	return true;
}

/* Whether the line at @p begins with the previous sample's name, then '{' or its end (*@q past the name). */
static bool prev_name(const struct push_samples *s, const char *p, const char *key_end, const char **q)
{
	const struct push_sample *x = &s->v[s->n - 1];

	if ((size_t)(key_end - p) < x->name_len || memcmp(p, x->key, x->name_len) ||
	    (p + x->name_len < key_end && p[x->name_len] != '{'))
		return false;
	*q = p + x->name_len;
	return true;
}

/*
 * One line, KEY VALUE: 0 a sample, 1 not one (nothing kept). The value is
 * after the last space (a label value may hold spaces, a value cannot); the
 * key's labels are checked only when its series is new (push_key_labels()).
 */
static int parse_line(struct push_samples *s, const char *p, const char *end, const struct family *f)
{
	const char *sp = end, *q = p, *key_end;
	struct push_sample x = { 0 };
	char num[64], *stop;

	while (sp > p && sp[-1] != ' ')
		sp--;
	if (sp == p || end == sp || end - sp >= (ptrdiff_t)sizeof(num))
		return 1;
	key_end = sp - 1;
	if (s->n && prev_name(s, p, key_end, &q)) /* a family's samples follow each other */
		;
	else
		while (q < key_end && name_char(*q, q == p))
			q++;
	if (q == p || (q < key_end && (*q != '{' || key_end[-1] != '}')))
		return 1;
	if (!plain_decimal(sp, end, &x.value)) {
		memcpy(num, sp, (size_t)(end - sp));
		num[end - sp] = 0;
		x.value = strtod(num, &stop);
		if (stop == num || *stop)
			return 1;
	}
	x.key = p;
	x.key_len = (size_t)(key_end - p);
	x.name_len = (size_t)(q - p);
	x.counter = f->counter && of_family(p, x.name_len, f);
	s->v[s->n++] = x;
	return 0;
}

int push_samples_parse(struct push_samples *s, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	struct family fam = { 0 };

	s->n = s->skipped = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;

		if (s->n == s->cap && push_room((void **)&s->v, s->n, 1, &s->cap, sizeof(*s->v)) < 0) {
			s->n = 0;
			return -ENOMEM;
		}
		if (eol > p && *p == '#')
			type_line(p, eol, &fam);
		else if (eol > p)
			s->skipped += (size_t)parse_line(s, p, eol, &fam);
		p = nl ? nl + 1 : end;
	}
	return 0;
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
