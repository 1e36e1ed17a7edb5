// SPDX-License-Identifier: Apache-2.0
/*
 * --help, --version and the Markdown option reference, all generated from
 * the option table so they cannot disagree with it.
 */
#include <inttypes.h>
#include <string.h>

#include "config_internal.h"
#include "kepler/version.h"

#define HELP_WIDTH 80
#define FLAG_COLUMN 32

const char *kepler_prog_name(unsigned prog_bit)
{
	for (size_t i = 0; kepler_programs[i]; i++)
		if (kepler_programs[i]->prog == prog_bit)
			return kepler_programs[i]->name;
	return "?";
}

const char *kepler_option_type_name(const struct kepler_option *o)
{
	static const char *const names[] = {
		[KEPLER_OPT_BOOL] = "bool",         [KEPLER_OPT_INT] = "int",
		[KEPLER_OPT_DURATION] = "duration", [KEPLER_OPT_SIZE] = "size",
		[KEPLER_OPT_STRING] = "string",     [KEPLER_OPT_ENUM] = "enum",
		[KEPLER_OPT_LIST] = "list",         [KEPLER_OPT_COUNT_OR_DURATION] = "int or duration",
	};
	return names[o->type];
}

void kepler_option_range_text(const struct kepler_option *o, char *buf, size_t len)
{
	char lo[32], hi[32];

	buf[0] = '\0';
	if (o->min == 0 && o->max == 0)
		return;
	if (o->type == KEPLER_OPT_LIST) {
		snprintf(buf, len, "at most %" PRId64 " items", o->max);
		return;
	}
	if (o->type == KEPLER_OPT_DURATION) {
		kepler_format_duration((uint64_t)o->min, lo, sizeof(lo));
		kepler_format_duration((uint64_t)o->max, hi, sizeof(hi));
	} else if (o->type == KEPLER_OPT_SIZE && o->max % (1 << 20) == 0 && o->min % (1 << 20) == 0) {
		snprintf(lo, sizeof(lo), "%" PRId64 "MiB", o->min >> 20);
		snprintf(hi, sizeof(hi), "%" PRId64 "MiB", o->max >> 20);
	} else {
		snprintf(lo, sizeof(lo), "%" PRId64, o->min);
		if (o->max == INT64_MAX)
			snprintf(hi, sizeof(hi), "any");
		else
			snprintf(hi, sizeof(hi), "%" PRId64, o->max);
	}
	if (strcmp(hi, "any") == 0)
		snprintf(buf, len, "at least %s", lo);
	else
		snprintf(buf, len, "%s to %s", lo, hi);
}

void kepler_option_choices_text(const struct kepler_option *o, const char *sep, const char *quote, char *buf,
				size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; o->choices && o->choices[i] && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s%s%s", i ? sep : "", quote,
					 o->choices[i], quote);
}

/* Print @text wrapped to HELP_WIDTH, continuation lines at @indent. */
static void wrap(FILE *out, const char *text, size_t col, size_t indent)
{
	const char *p = text;

	while (*p) {
		size_t word = strcspn(p, " ");

		if (col > indent && col + 1 + word > HELP_WIDTH) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', out);
			col++;
		}
		fwrite(p, 1, word, out);
		col += word;
		p += word;
		while (*p == ' ')
			p++;
	}
	fputc('\n', out);
}

static void help_option(FILE *out, const struct kepler_option *o)
{
	char flag[160], text[768], choices[200], range[80];
	int n;

	if (o->type == KEPLER_OPT_BOOL)
		n = snprintf(flag, sizeof(flag), "  --%s", o->key);
	else
		n = snprintf(flag, sizeof(flag), "  --%s=%s", o->key, o->metavar);
	kepler_option_choices_text(o, "|", "", choices, sizeof(choices));
	kepler_option_range_text(o, range, sizeof(range));
	snprintf(text, sizeof(text), "%s%s%s%s%s%s%s Default: %s.", o->help, *choices ? " One of " : "",
		 choices, *choices ? "." : "", *range ? " Range " : "", range, *range ? "." : "",
		 *o->defval ? o->defval : "(empty)");
	fputs(flag, out);
	if (n + 2 > FLAG_COLUMN) {
		fprintf(out, "\n%*s", FLAG_COLUMN, "");
	} else {
		fprintf(out, "%*s", FLAG_COLUMN - n, "");
	}
	wrap(out, text, FLAG_COLUMN, FLAG_COLUMN);
}

void kepler_config_print_help(FILE *out, const struct kepler_program *prog)
{
	fprintf(out, "Usage: %s [OPTION]...%s%s\n", prog->name, *prog->args ? " " : "", prog->args);
	wrap(out, prog->summary, 0, 0);
	fputs("\nOptions (precedence: flags > --config FILE > defaults):\n", out);
	fprintf(out, "  --config=FILE%*sYAML file with any keys below, nested by dots\n", FLAG_COLUMN - 15,
		"");
	fprintf(out, "%*s(--monitor.interval=5s is monitor: {interval: 5s}).\n", FLAG_COLUMN, "");
	for (const struct kepler_option *o = kepler_options; o->key; o++)
		if ((o->progs & prog->prog) && !(o->flags & KEPLER_OPT_YAML_ONLY))
			help_option(out, o);
	fprintf(out, "  -h, --help%*sShow this help and exit.\n", FLAG_COLUMN - 12, "");
	fprintf(out, "  --version%*sShow the version and exit.\n", FLAG_COLUMN - 11, "");
	fputs("\nDevelopment settings (dev.*) exist only as YAML keys. Reference:\n"
	      "docs/configuration.md.\n",
	      out);
	wrap(out,
	     prog->exit_status
		     ? prog->exit_status
		     : "Exit status: 0 success, 1 failure (the reason is logged), 2 usage or configuration error.",
	     0, 0);
}

void kepler_config_print_version(FILE *out, const struct kepler_program *prog)
{
	fprintf(out, "%s %s (revision %s, %s)\n", prog->name, KEPLER_VERSION, KEPLER_REVISION,
		KEPLER_BUILD_TYPE);
}

static void md_progs(FILE *out, unsigned progs)
{
	bool first = true;

	if (progs == KEPLER_PROG_ALL) {
		fputs("all", out);
		return;
	}
	for (size_t i = 0; kepler_programs[i]; i++) {
		if (!(progs & kepler_programs[i]->prog))
			continue;
		fprintf(out, "%s%s", first ? "" : ", ", kepler_programs[i]->name);
		first = false;
	}
}

static void md_row(FILE *out, const struct kepler_option *o)
{
	char choices[200], range[80];

	kepler_option_choices_text(o, ", ", "`", choices, sizeof(choices));
	kepler_option_range_text(o, range, sizeof(range));
	fprintf(out, "| `%s` | %s%s%s%s%s | `%s` | ", o->key, kepler_option_type_name(o),
		*choices ? ": " : "", choices, *range ? ", " : "", range, o->defval);
	md_progs(out, o->progs);
	fprintf(out, " | %s |\n", o->help);
}

void kepler_config_write_markdown(FILE *out)
{
	static const struct {
		const char *title;
		unsigned want;
	} sections[] = {
		{ "Settings (YAML key and `--flag`)", 0 },
		{ "Development settings (YAML only)", KEPLER_OPT_YAML_ONLY },
		{ "Per-invocation flags (command line only)", KEPLER_OPT_FLAG_ONLY },
	};

	for (size_t s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
		fprintf(out, "%s### %s\n\n", s ? "\n" : "", sections[s].title);
		fputs("| Key | Type | Default | Used by | Meaning |\n|---|---|---|---|---|\n", out);
		for (const struct kepler_option *o = kepler_options; o->key; o++)
			if ((o->flags & (KEPLER_OPT_YAML_ONLY | KEPLER_OPT_FLAG_ONLY)) == sections[s].want)
				md_row(out, o);
	}
}
