/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/samples.h: the exporter's exposition text (kepler_fmt_prom())
 * read back as samples: so that kepler-push sends the same families,
 * labels, top-N cuts and folds as kepler-exporter without a second
 * renderer. A sample is its series' key (its line up to the value, as
 * written) and its value: labels are parsed only from a key not seen
 * before (push_key_labels(), by push_series.c), since a node's series are
 * mostly the same from one snapshot to the next. Only the text
 * kepler_fmt_prom() writes is expected (one sample a line, no timestamp,
 * label values escaped as the text format says, "# TYPE" before a
 * family's samples), but any text is read safely: a line that is not a
 * sample is skipped and counted.
 */
#ifndef KEPLER_PUSH_SAMPLES_H
#define KEPLER_PUSH_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>

#define PUSH_MAX_LABELS 32

/* One sample, pointing into the text it was read from. */
struct push_sample {
	const char *key; /* the series' identity: its line up to the value (not NUL-terminated) */
	size_t key_len;
	size_t name_len; /* its name: the key's first name_len bytes */
	double value;
	bool counter; /* its family's "# TYPE NAME counter" came before it: a cumulative sum */
};

struct push_samples {
	struct push_sample *v;
	size_t n, cap;
	size_t skipped; /* lines that are not samples */
};

#define PUSH_SAMPLES_INIT \
	{                 \
		0         \
	}

/*
 * Parse @text (@len bytes) into @s, replacing what it held; the samples
 * point into @text, which must outlive them. -ENOMEM (@s then empty).
 */
int push_samples_parse(struct push_samples *s, const char *text, size_t len);
void push_samples_free(struct push_samples *s);

/* NUL-terminated. */
struct push_label {
	const char *name, *value;
};

/* The scratch push_key_labels() needs for a key of @len bytes. */
#define PUSH_KEY_SCRATCH(len) ((len) + 2 * PUSH_MAX_LABELS + 16)

/*
 * A key's labels (__name__ among them), sorted by name, unescaped, into
 * @labels (PUSH_MAX_LABELS); their strings in @scratch
 * (PUSH_KEY_SCRATCH(@len) bytes). -EINVAL: not NAME or NAME{LABELS} as
 * the text format writes them, or more than PUSH_MAX_LABELS labels.
 */
int push_key_labels(const char *key, size_t len, struct push_label *labels, size_t *ret_n, char *scratch);

#endif
