// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-config-doc: prints the option reference generated from the option
 * table, or with --update FILE rewrites it between the markers of FILE
 * (docs/configuration.md; tests/common/test_config.c fails when the two differ);
 * --man NAME DATE prints program NAME's man page and --example-config the
 * commented configuration file (both made at build time and installed).
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

static int man(const char *name, const char *date)
{
	for (size_t i = 0; kepler_programs[i]; i++)
		if (strcmp(kepler_programs[i]->name, name) == 0) {
			kepler_config_write_man(stdout, kepler_programs[i], date);
			return fflush(stdout) == 0 ? 0 : 1;
		}
	fprintf(stderr, "kepler-config-doc: no program named '%s'\n", name);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--update") == 0)
		return update(argv[2]);
	if (argc == 4 && strcmp(argv[1], "--man") == 0)
		return man(argv[2], argv[3]);
	if (argc == 2 && strcmp(argv[1], "--example-config") == 0) {
		kepler_config_write_example(stdout);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (argc != 1) {
		fprintf(stderr,
			"usage: kepler-config-doc [--update docs/configuration.md | --man NAME DATE | "
			"--example-config]\n");
		return 2;
	}
	kepler_config_write_markdown(stdout);
	return 0;
}
