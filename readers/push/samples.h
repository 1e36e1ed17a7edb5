/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/samples.h: the exporter's exposition text (kepler_fmt_prom())
 * read back as samples: so that kepler-push sends the same families,
 * labels, top-N cuts and folds as kepler-exporter without a second
 * renderer. Only the text kepler_fmt_prom() writes is expected (one sample
 * a line, label values escaped as the text format says), but any text is
 * read safely: a line that is not a sample is skipped and counted.
 */
#ifndef KEPLER_PUSH_SAMPLES_H
#define KEPLER_PUSH_SAMPLES_H

#include <stddef.h>

#define PUSH_MAX_LABELS 32

struct push_label {
	char *name, *value;
};

/* One sample: its labels sorted by name (__name__ among them) and its value. */
struct push_sample {
	struct push_label labels[PUSH_MAX_LABELS];
	size_t nlabels;
	double value;
	char *key; /* the series' identity: the labels joined, for grouping samples of several snapshots */
};

/*
 * Parse @text (@len bytes) into *@ret (malloc'ed, free with
 * push_samples_free()), the count in *@ret_n, the lines skipped in
 * *@ret_skipped. -ENOMEM.
 */
int push_samples_parse(const char *text, size_t len, struct push_sample **ret, size_t *ret_n,
		       size_t *ret_skipped);
void push_samples_free(struct push_sample *s, size_t n);

#endif
