// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-config-doc: prints the option reference generated from the option
 * table, or with --update FILE rewrites it between the markers of FILE
 * (docs/configuration.md). tests/test_config.c fails when the two differ.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/config.h"

static const char begin[] = "<!-- BEGIN GENERATED OPTIONS -->\n";
static const char end[] = "<!-- END GENERATED OPTIONS -->";

static int update(const char *path)
{
	char *doc = NULL, *b, *e;
	size_t len = 0;
	FILE *f = fopen(path, "r");

	if (!f || getdelim(&doc, &len, '\0', f) < 0) {
		perror(path);
		return 1;
	}
	fclose(f);
	b = strstr(doc, begin);
	e = b ? strstr(b, end) : NULL;
	if (!b || !e) {
		fprintf(stderr, "%s: markers not found\n", path);
		return 1;
	}
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	fwrite(doc, 1, (size_t)(b - doc) + strlen(begin), f);
	kepler_config_write_markdown(f);
	fputs(e, f);
	free(doc);
	return fclose(f) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--update") == 0)
		return update(argv[2]);
	if (argc != 1) {
		fprintf(stderr, "usage: kepler-config-doc [--update docs/configuration.md]\n");
		return 2;
	}
	kepler_config_write_markdown(stdout);
	return 0;
}
