/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/samples.h: the exporter's exposition text (kepler_fmt_prom())
 * read back as samples: so that kepler-push sends the same families,
 * labels, top-N cuts and folds as kepler-exporter without a second
 * renderer. Only the text kepler_fmt_prom() writes is expected (one sample
 * a line, label values escaped as the text format says, "# TYPE" before a
 * family's samples), but any text is read safely: a line that is not a
 * sample is skipped and counted. A set keeps its memory from one parse to
 * the next: its strings live in one arena, so a snapshot of 10,000
 * processes costs a handful of allocations, not one per label.
 */
#ifndef KEPLER_PUSH_SAMPLES_H
#define KEPLER_PUSH_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>

#define PUSH_MAX_LABELS 32

/* NUL-terminated, in the set's arena. */
struct push_label {
	const char *name, *value;
};

/* One sample: its labels sorted by name (__name__ among them) and its value. */
struct push_sample {
	const struct push_label *labels;
	size_t nlabels;
	const char *name; /* __name__'s value */
	double value;
	bool counter;    /* its family's "# TYPE NAME counter" came before it: a cumulative sum */
	const char *key; /* the series' identity: its line up to the value, as written (not NUL-terminated) */
	size_t key_len;
	size_t label0; /* (the first of its labels in the set's) */
};

struct push_samples {
	struct push_sample *v;
	size_t n, cap;
	struct push_label *labels;
	size_t nlabels, labels_cap;
	char *arena; /* label names and values, each NUL-terminated */
	size_t arena_cap;
	const char *text; /* the caller's text: the keys point into it */
	size_t skipped;
};

#define PUSH_SAMPLES_INIT \
	{                 \
		0         \
	}

/*
 * Parse @text (@len bytes) into @s, replacing what it held; the samples'
 * keys point into @text, which must outlive them. -ENOMEM (@s then empty).
 */
int push_samples_parse(struct push_samples *s, const char *text, size_t len);
void push_samples_free(struct push_samples *s);

#endif
