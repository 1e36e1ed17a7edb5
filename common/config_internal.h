/* SPDX-License-Identifier: Apache-2.0 */
/* Shared between the files of the configuration engine; not public. */
#ifndef KEPLER_CONFIG_INTERNAL_H
#define KEPLER_CONFIG_INTERNAL_H

#include "kepler/config.h"

/*
 * The option named @key usable by @prog (0 = any binary); @yaml excludes
 * flag-only options. NULL when there is none.
 */
const struct kepler_option *kepler_option_find(const char *key, unsigned prog, bool yaml);

/* The closest option name to a misspelt @key, or NULL if none is close. */
const char *kepler_option_suggest(const char *key, unsigned prog, bool yaml);

/* Parse @value for @o into @cfg; @origin names the key and place for errors. */
int kepler_config_set_value(const struct kepler_option *o, struct kepler_config *cfg, const char *value,
			    const char *origin, struct kepler_error *err);

/* Replace the list @o with @items (a YAML sequence). */
int kepler_config_set_list(const struct kepler_option *o, struct kepler_config *cfg, const char *const *items,
			   size_t n, const char *origin, struct kepler_error *err);

/* The program name of a single enum kepler_prog bit ("kepler-exporter"). */
const char *kepler_prog_name(unsigned prog_bit);

/* What --help, the Markdown reference and the man pages say of an option's type, range and choices. */
const char *kepler_option_type_name(const struct kepler_option *o);
void kepler_option_range_text(const struct kepler_option *o, char *buf, size_t len);
void kepler_option_choices_text(const struct kepler_option *o, const char *sep, const char *quote, char *buf,
				size_t len);

#endif
