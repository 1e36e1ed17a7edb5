/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/samples.h: the samples kepler-push sends, as the exporter's
 * renderer writes them (kepler_fmt_prom_samples(): the same families,
 * labels, top-N cuts and folds, from the same iteration, with no text read
 * back). A sample is its series' key (its exposition line up to the value)
 * and its value: labels are parsed only from a key not seen before
 * (push_key_labels(), by push_series.c), since a node's series are mostly
 * the same from one snapshot to the next. Keys are the renderer's (label
 * values escaped as the text format says), but any bytes are read safely:
 * a key that is not one is refused (and the sample skipped and counted).
 */
#ifndef KEPLER_PUSH_SAMPLES_H
#define KEPLER_PUSH_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/fmt.h"

#define PUSH_MAX_LABELS 32

/* One sample, pointing into the text it was read from. */
struct push_sample {
	/*
	 * The series' identity: its line up to the value (not NUL-terminated);
	 * NULL: a key the renderer kept and did not write (push_sample_key())
	 */
	const char *key;
	size_t key_len;
	size_t name_len; /* its name: the key's first name_len bytes */
	double value;
	bool counter; /* of a counter family: a cumulative sum */
	/*
	 * The renderer's id of its key (kepler_prom_sample.id: one id, one
	 * key, byte for byte): a series is known by it without its key
	 * read. 0: none.
	 */
	uint64_t id;
	const struct kepler_prom_samples *from; /* (a kept key's samples) */
	uint32_t proc;                          /* (and its process there) */
};

/*
 * @s's key: s->key, or a kept one written into @scratch (emptied first).
 * NULL: out of memory, or a kept key whose rendering is gone.
 */
const char *push_sample_key(const struct push_sample *s, struct kepler_buf *scratch);

struct push_samples {
	struct push_sample *v;
	size_t n, cap;
};

#define PUSH_SAMPLES_INIT \
	{                 \
		0         \
	}

/*
 * The renderer's samples @k, whose keys are in @text, into @s (replacing
 * what it held; they point into @text, which must outlive them). -ENOMEM.
 */
int push_samples_from(struct push_samples *s, const char *text, const struct kepler_prom_samples *k);
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
