/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/train/dataset_csv.h: reading a kepler-dataset CSV file (RFC 4180: a
 * header, then rows of as many fields; quoted fields may hold commas,
 * quotes and newlines). Used by kepler-train; fuzzed (tests/fuzz).
 */
#ifndef KEPLER_DATASET_CSV_H
#define KEPLER_DATASET_CSV_H

#include <stddef.h>

#include "kepler/error.h"

#define KEPLER_DATASET_MAX_COLS 256

struct kepler_dataset {
	char *text;                          /* the file, unquoted in place */
	char *cols[KEPLER_DATASET_MAX_COLS]; /* header names */
	size_t ncols;
	char ***rows; /* rows[r][c], never NULL ("" when empty) */
	size_t nrows, cap;
};

/*
 * Parse @text (NUL-terminated, malloc'ed; @d owns it from now on, also on
 * failure). Blank lines are skipped. -EINVAL with a message naming @name
 * and the row on a missing header, JSON lines, more than
 * KEPLER_DATASET_MAX_COLS columns or a row whose field count differs from
 * the header's; -ENOMEM.
 */
int kepler_dataset_parse(char *text, const char *name, struct kepler_dataset *d, struct kepler_error *err);

/* Read the file at @path and parse it; errors as above, plus the open/read errno. */
int kepler_dataset_load(const char *path, struct kepler_dataset *d, struct kepler_error *err);

/* The index of column @name, or -1. */
int kepler_dataset_column(const struct kepler_dataset *d, const char *name);

/* Release what @d holds (a zeroed @d is fine). */
void kepler_dataset_free(struct kepler_dataset *d);

#endif /* KEPLER_DATASET_CSV_H */
