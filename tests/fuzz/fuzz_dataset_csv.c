// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for kepler-train's dataset reader (readers/train/dataset_csv.c):
 * the input is a CSV file from anywhere. Parsing may fail; it must never
 * crash, leak or read out of bounds, and what parses must be consistent:
 * every row has the header's field count, every field is a string inside
 * the parsed text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(const struct kepler_dataset *d, size_t len, const char *s)
{
	return s >= d->text && s + strlen(s) <= d->text + len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kepler_dataset d = { 0 };
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (kepler_dataset_parse(text, "fuzz.csv", &d, NULL) == 0) {
		if (d.ncols < 2 || d.ncols > KEPLER_DATASET_MAX_COLS)
			abort();
		for (size_t c = 0; c < d.ncols; c++)
			if (!inside(&d, size, d.cols[c]))
				abort();
		for (size_t r = 0; r < d.nrows; r++)
			for (size_t c = 0; c < d.ncols; c++)
				if (!d.rows[r][c] || !inside(&d, size, d.rows[r][c]))
					abort();
		if (kepler_dataset_column(&d, d.cols[0]) != 0)
			abort();
	}
	kepler_dataset_free(&d);
	return 0;
}
