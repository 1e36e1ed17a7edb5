// SPDX-License-Identifier: Apache-2.0
/*
 * The exposition's lines (kepler/fmt.h's kepler_prom_writer): label
 * values escaped, families, values as exact decimals, and each sample
 * recorded for a second sink (kepler-push) as it is written, so that no
 * reader reads the text back.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_internal.h"
#include "kepler/fmt.h"

typedef unsigned __int128 u128;

void kepler_fmt_prom_label_value(struct kepler_buf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t plain = 0;

	/* fast path: nothing to escape or check */
	while (p[plain] && p[plain] < 0x80 && p[plain] != '\\' && p[plain] != '"' && p[plain] != '\n')
		plain++;
	kepler_buf_add(out, p, plain);
	for (p += plain; *p;) {
		size_t n;

		if (*p == '\\' || *p == '"') {
			kepler_buf_addc(out, '\\');
			kepler_buf_addc(out, (char)*p++);
		} else if (*p == '\n') {
			kepler_buf_add(out, "\\n", 2);
			p++;
		} else if ((n = kepler_fmt_utf8_len(p)) > 0) {
			kepler_buf_add(out, p, n);
			p += n;
		} else {
			kepler_buf_add(out, "\xEF\xBF\xBD", 3); /* U+FFFD for each bad byte */
			p++;
		}
	}
}

void prom_label(struct kepler_buf *out, const char *key, const char *value, bool first)
{
	if (!first)
		kepler_buf_addc(out, ',');
	kepler_buf_adds(out, key);
	kepler_buf_add(out, "=\"", 2);
	kepler_fmt_prom_label_value(out, value ? value : "");
	kepler_buf_addc(out, '"');
}

void kepler_prom_samples_free(struct kepler_prom_samples *s)
{
	if (s->memo) {
		prom_proc_text_free(&s->memo->t[0]);
		prom_proc_text_free(&s->memo->t[1]);
		free(s->memo);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static void family_done(struct kepler_prom_writer *w, const char *type)
{
	w->counter = !strcmp(type, "counter");
	w->line_at = w->out->len;
}

void kepler_prom_family(struct kepler_prom_writer *w, const char *name, const char *type, const char *help)
{
	kepler_buf_printf(w->out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	family_done(w, type);
}

void kepler_prom_familyf(struct kepler_prom_writer *w, const char *name, const char *type, const char *help,
			 ...)
{
	va_list ap;

	kepler_buf_printf(w->out, "# HELP %s ", name);
	va_start(ap, help);
	kepler_buf_vprintf(w->out, help, ap);
	va_end(ap);
	kepler_buf_printf(w->out, "\n# TYPE %s %s\n", name, type);
	family_done(w, type);
}

/* The value just written, as strtod() reads it (what any reader of the text gets). */
static double value_read(const struct kepler_prom_writer *w)
{
	char num[64];
	size_t n = w->out->len - w->value_at;

	if (w->out->error || n >= sizeof(num))
		return 0;
	memcpy(num, w->out->data + w->value_at, n);
	num[n] = 0;
	return strtod(num, NULL);
}

void kepler_prom_fixed(struct kepler_prom_writer *w, u128 v, unsigned digits)
{
	static const double pow10[20] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,
					  1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19 };

	w->value_at = w->out->len;
	/*
	 * Below 10^15 the integer and the power of ten are exact doubles and
	 * a division is correctly rounded: exactly strtod()'s double of the
	 * decimal written, without its cost
	 */
	if (w->samples && v < 1000000000000000ULL && digits < 20) {
		w->value = (double)(uint64_t)v / pow10[digits];
		if (!w->samples->keys_only)
			kepler_buf_fixed(w->out, v, digits);
		return;
	}
	kepler_buf_fixed(w->out, v, digits);
	if (w->samples)
		w->value = value_read(w);
}

void kepler_prom_u64(struct kepler_prom_writer *w, uint64_t v)
{
	kepler_prom_fixed(w, v, 0);
}

void kepler_prom_printf(struct kepler_prom_writer *w, const char *fmt, ...)
{
	va_list ap;

	w->value_at = w->out->len;
	va_start(ap, fmt);
	kepler_buf_vprintf(w->out, fmt, ap);
	va_end(ap);
	if (w->samples)
		w->value = value_read(w);
}

void kepler_prom_end(struct kepler_prom_writer *w)
{
	struct kepler_prom_samples *s = w->samples;

	kepler_buf_addc(w->out, '\n');
	if (s && !w->out->error && (w->kept || w->value_at > w->line_at)) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 1024;
			struct kepler_prom_sample *v = realloc(s->v, cap * sizeof(*v));

			if (!v) {
				w->out->error = -ENOMEM;
				return;
			}
			s->v = v;
			s->cap = cap;
		}
		if (w->kept) {
			s->v[s->n++] = (struct kepler_prom_sample){ .key_len = w->kept_key_len,
								    .name_len = w->kept_name_len,
								    .value = w->value,
								    .counter = w->counter,
								    .id = w->id,
								    .kept = true,
								    .proc = w->proc };
		} else {
			const char *key = w->out->data + w->line_at, *brace;
			size_t len = w->value_at - 1 -
				     w->line_at; /* the key, without the space before the value */

			brace = memchr(key, '{', len);
			s->v[s->n++] =
				(struct kepler_prom_sample){ .key_at = w->line_at,
							     .key_len = len,
							     .name_len = brace ? (size_t)(brace - key) : len,
							     .value = w->value,
							     .counter = w->counter,
							     .id = w->id };
		}
		/* (kept keys are not in the text: the samples' own bytes count too) */
		if (s->flush && (w->out->len >= s->flush_at || s->n * sizeof(*s->v) >= s->flush_at)) {
			int r = s->flush(s->flush_ctx, w->out->data, s);

			s->n = 0;
			w->out->len = 0;
			if (r < 0)
				w->out->error = r;
		}
	}
	w->line_at = w->out->len;
	w->id = 0;
	w->kept = false;
}

/* ---- Kepler's values ---- */

void prom_joules(struct kepler_prom_writer *w, uint64_t uj)
{
	kepler_prom_fixed(w, uj, 6);
}

/* Watts of @delta_uj over @interval_ns, to the picowatt (truncated). */
void prom_watts(struct kepler_prom_writer *w, uint64_t delta_uj, uint64_t interval_ns)
{
	u128 pw = interval_ns ? (u128)delta_uj * 1000000000000000ULL / interval_ns : 0;

	kepler_prom_fixed(w, pw, 12);
}

void prom_seconds(struct kepler_prom_writer *w, uint64_t ns)
{
	kepler_prom_fixed(w, ns, 9);
}
