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
/* Is @typed @word mistyped (a few edits, by its length)? */
bool kepler_option_close(const char *typed, const char *word);

/* Parse @value for @o into @cfg; @origin names the key and place for errors. */
int kepler_config_set_value(const struct kepler_option *o, struct kepler_config *cfg, const char *value,
			    const char *origin, struct kepler_error *err);

/* Replace the list @o with @items (a YAML sequence). */
int kepler_config_set_list(const struct kepler_option *o, struct kepler_config *cfg, const char *const *items,
			   size_t n, const char *origin, struct kepler_error *err);

/* The program name of a single enum kepler_prog bit ("kepler-exporter"). */
const char *kepler_prog_name(unsigned prog_bit);

/* ---- Kepler's keys and flags (config_kepler.c) ---- */

enum kepler_compat_transform {
	KEPLER_COMPAT_SAME,     /* the value as it is */
	KEPLER_COMPAT_LEVELS,   /* metricsLevel: "all" is every level */
	KEPLER_COMPAT_FIRST,    /* a list of which kepler-c takes the first (listen addresses) */
	KEPLER_COMPAT_FAKE,     /* dev.fake-cpu-meter.enabled: true is meter.source fake */
	KEPLER_COMPAT_POD_MODE, /* kube.podInformer.mode: kubelet maps, apiserver does not */
	KEPLER_COMPAT_NONEMPTY, /* a list whose [] means "the default" */
};

struct kepler_compat {
	const char *key;    /* Kepler's YAML key, dotted */
	const char *flag;   /* Kepler's flag without "--", or NULL */
	const char *target; /* the kepler-c option, or NULL: none */
	enum kepler_compat_transform transform;
	bool takes_value; /* the flag takes a value (else it is a bare boolean) */
	const char *why;  /* when there is no target: what to do instead */
};

const struct kepler_compat *kepler_compat_find_key(const char *key);
const struct kepler_compat *kepler_compat_find_flag(const char *flag);
/* @key is a section of Kepler's keys ("exporter.prometheus"). */
bool kepler_compat_is_section(const char *key);
/* Set @c's target from a value, or a list (@prog 0: whichever program owns it). -EINVAL, -ENOMEM. */
int kepler_compat_set_scalar(struct kepler_config *cfg, const struct kepler_compat *c, const char *value,
			     unsigned prog, const char *origin, struct kepler_error *err);
int kepler_compat_set_list(struct kepler_config *cfg, const struct kepler_compat *c, const char *const *items,
			   size_t n, unsigned prog, const char *origin, struct kepler_error *err);
/* Record the warning for a key (@as "key") or flag (@as "flag") with no counterpart. */
int kepler_compat_ignored(struct kepler_config *cfg, const struct kepler_compat *c, const char *as,
			  const char *where, struct kepler_error *err);
/* Add a warning to cfg->warnings, once per text. -ENOMEM. */
int kepler_config_warn(struct kepler_config *cfg, struct kepler_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* What --help, the Markdown reference and the man pages say of an option's type, range and choices. */
const char *kepler_option_type_name(const struct kepler_option *o);
void kepler_option_range_text(const struct kepler_option *o, char *buf, size_t len);
void kepler_option_choices_text(const struct kepler_option *o, const char *sep, const char *quote, char *buf,
				size_t len);

#endif
