// SPDX-License-Identifier: Apache-2.0
/*
 * Reading kepler-dataset CSV files: see dataset_csv.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_csv.h"

/*
 * Split one record at @p into fields, unquoting in place. Stores up to
 * @max field starts in @fields and the true count in *@n; returns the start
 * of the next record.
 */
static char *split_record(char *p, char **fields, size_t *n, size_t max)
{
	char *out = p, *next;

	*n = 0;
	for (;;) {
		char *start = out;

		if (*p == '"') {
			for (p++; *p; p++) {
				if (*p == '"' && p[1] == '"')
					*out++ = *p++;
				else if (*p == '"')
					break;
				else
					*out++ = *p;
			}
			if (*p == '"')
				p++;
		}
		while (*p && *p != ',' && *p != '\n' && *p != '\r')
			*out++ = *p++;
		if (*p == '\r')
			p++;
		if (*n < max)
			fields[*n] = start;
		(*n)++;
		if (*p != ',')
			break;
		p++;
		*out++ = '\0';
	}
	next = *p == '\n' ? p + 1 : p;
	*out = '\0'; /* at or before the record's end: @next is saved */
	return next;
}

static int add_row(struct kepler_dataset *d, char **fields, size_t n)
{
	char **row;

	if (d->nrows == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 256;
		char ***rows = realloc(d->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		d->rows = rows;
		d->cap = cap;
	}
	row = malloc(n * sizeof(*row));
	if (!row)
		return -ENOMEM;
	memcpy(row, fields, n * sizeof(*row));
	d->rows[d->nrows++] = row;
	return 0;
}

int kepler_dataset_parse(char *text, const char *name, struct kepler_dataset *d, struct kepler_error *err)
{
	char *p, *fields[KEPLER_DATASET_MAX_COLS];
	size_t n, line = 1;

	d->text = text;
	if (text[0] == '{')
		return kepler_error_set(err, -EINVAL,
					"%s looks like JSON lines: kepler-train reads CSV "
					"(kepler-dataset --format csv)",
					name);
	p = split_record(text, d->cols, &d->ncols, KEPLER_DATASET_MAX_COLS);
	if (d->ncols > KEPLER_DATASET_MAX_COLS)
		return kepler_error_set(err, -EINVAL, "%s: %zu columns, at most %d are read", name, d->ncols,
					KEPLER_DATASET_MAX_COLS);
	if (d->ncols < 2)
		return kepler_error_set(err, -EINVAL, "%s: no CSV header (is it a kepler-dataset file?)",
					name);
	while (*p) {
		p = split_record(p, fields, &n, KEPLER_DATASET_MAX_COLS);
		line++;
		if (n == 1 && !fields[0][0])
			continue; /* a blank line */
		if (n != d->ncols)
			return kepler_error_set(err, -EINVAL, "%s: record %zu has %zu fields, the header %zu",
						name, line, n, d->ncols);
		if (add_row(d, fields, n) < 0)
			return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

int kepler_dataset_load(const char *path, struct kepler_dataset *d, struct kepler_error *err)
{
	FILE *f = fopen(path, "r");
	size_t cap = 1 << 20, len = 0, n;
	char *buf = NULL, *grown;
	int r;

	if (!f)
		return kepler_error_set(err, -errno, "cannot read %s: %s", path, strerror(errno));
	for (;;) {
		if (!buf || len + 1 == cap) {
			cap = buf ? cap * 2 : cap;
			grown = realloc(buf, cap);
			if (!grown) {
				r = kepler_error_set(err, -ENOMEM, "out of memory reading %s", path);
				goto fail;
			}
			buf = grown;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		if (n == 0)
			break;
		len += n;
	}
	if (ferror(f)) {
		r = kepler_error_set(err, -EIO, "cannot read %s", path);
		goto fail;
	}
	fclose(f);
	buf[len] = '\0';
	return kepler_dataset_parse(buf, path, d, err);
fail:
	fclose(f);
	free(buf);
	return r;
}

int kepler_dataset_column(const struct kepler_dataset *d, const char *name)
{
	for (size_t c = 0; c < d->ncols && c < KEPLER_DATASET_MAX_COLS; c++)
		if (!strcmp(d->cols[c], name))
			return (int)c;
	return -1;
}

void kepler_dataset_free(struct kepler_dataset *d)
{
	for (size_t r = 0; r < d->nrows; r++)
		free(d->rows[r]);
	free(d->rows);
	free(d->text);
	memset(d, 0, sizeof(*d));
}
