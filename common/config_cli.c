// SPDX-License-Identifier: Apache-2.0
/*
 * The command line: --help, --version, --config FILE, then every option as
 * --key=value or --key value (booleans also as a bare --key), positional
 * arguments, and "--" to end options. Flags are collected first and applied
 * after the YAML file so that flags > file > defaults.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "kepler/log.h"

struct pending_flag {
	const struct kepler_option *o;
	const char *value;
};

struct cli {
	struct kepler_config *cfg;
	const struct kepler_program *prog;
	struct pending_flag *flags;
	size_t nflags;
	char *metrics; /* Kepler's repeatable --metrics, joined with commas */
	struct kepler_error *err;
};

static const char *owner_names(unsigned progs, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned bit = 1; bit < KEPLER_PROG_ALL && used < len; bit <<= 1)
		if (progs & bit)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
						 kepler_prog_name(bit));
	return buf;
}

static int unknown_flag(const struct cli *c, const char *key)
{
	const struct kepler_option *any = kepler_option_find(key, 0, false);
	const char *hint;
	char owners[160];

	if (any && (any->flags & KEPLER_OPT_YAML_ONLY))
		return kepler_error_set(
			c->err, -EINVAL,
			"'%s' is a development setting; set it in the --config file, not as a flag", key);
	if (any)
		return kepler_error_set(c->err, -EINVAL, "--%s is not an option of %s (it is one of %s)", key,
					c->prog->name, owner_names(any->progs, owners, sizeof(owners)));
	hint = kepler_option_suggest(key, c->prog->prog, false);
	if (hint)
		return kepler_error_set(c->err, -EINVAL, "unknown option '--%.100s'; did you mean '--%s'?",
					key, hint);
	/* a value given as a flag ("--json", "--jsn"): the option it is a value of, the program's own first */
	for (int pass = 0; pass < 2; pass++)
		for (const struct kepler_option *o = kepler_options; o->key; o++) {
			if (!(o->progs & c->prog->prog) || o->type != KEPLER_OPT_ENUM ||
			    (o->flags & KEPLER_OPT_YAML_ONLY) || (pass == 0) == (o->progs == KEPLER_PROG_ALL))
				continue;
			for (const char *const *v = o->choices; v && *v; v++)
				if (kepler_option_close(key, *v))
					return kepler_error_set(
						c->err, -EINVAL,
						"unknown option '--%.100s'; did you mean '--%s %s'?", key,
						o->key, *v);
		}
	return kepler_error_set(c->err, -EINVAL, "unknown option '--%.100s'", key);
}

/*
 * One of Kepler's flags (its DaemonSet's arguments): --config.file is
 * --config; a flag with a counterpart is applied as it (after the file,
 * like every flag); one without is accepted, its value skipped, with one
 * warning. @key is not an option of this program.
 */
static int kepler_flag(struct cli *c, const struct kepler_compat *k, const char *key, const char *eq,
		       int argc, char *const argv[], int *i)
{
	const char *value;
	size_t n;
	char *m;

	if (eq)
		value = eq + 1;
	else if (!k->takes_value)
		value = "true";
	else if (*i + 1 < argc)
		value = argv[++*i];
	else
		return kepler_error_set(c->err, -EINVAL, "option '--%s' needs a value", key);
	if (!k->target)
		return kepler_compat_ignored(c->cfg, k, "flag", "", c->err);
	if (k->transform != KEPLER_COMPAT_LEVELS) { /* applied after the file, as every flag */
		const struct kepler_option *o = kepler_option_find(k->target, c->prog->prog, false);

		if (o) {
			c->flags[c->nflags].o = o;
			c->flags[c->nflags].value = value;
			c->nflags++;
		}
		return 0; /* (or another program's: understood, not this one's concern) */
	}
	n = (c->metrics ? strlen(c->metrics) + 1 : 0) + strlen(value) + 1;
	m = realloc(c->metrics, n);
	if (!m)
		return kepler_error_set(c->err, -ENOMEM, "out of memory");
	if (c->metrics)
		strcat(strcat(m, ","), value);
	else
		strcpy(m, value);
	c->metrics = m;
	return 0;
}

/* Handle argv[*i], an argument starting with "--" other than help/version. */
static int take_flag(struct cli *c, int argc, char *const argv[], int *i)
{
	const char *arg = argv[*i] + 2, *eq = strchr(arg, '='), *value;
	const struct kepler_option *o;
	char key[128];
	size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);

	if (klen == 0 || klen >= sizeof(key))
		return kepler_error_set(c->err, -EINVAL, "unknown option '%.100s'", argv[*i]);
	memcpy(key, arg, klen);
	key[klen] = '\0';

	if (!strcmp(key, "config.file")) /* Kepler's name for it */
		strcpy(key, "config");
	o = strcmp(key, "config") ? kepler_option_find(key, c->prog->prog, false) : NULL;
	/*
	 * Kepler's flags by Kepler's names; and --kube.node-name, which
	 * Kepler's DaemonSet passes with --config.file and --kube.enable, even
	 * to a kepler-c program that has no such option (the exporter): one
	 * container's arguments may serve both. Other kepler-c flags given to
	 * the wrong program stay errors.
	 */
	if (!o && strcmp(key, "config") && kepler_compat_find_flag(key) &&
	    (!kepler_option_find(key, 0, false) || !strcmp(key, "kube.node-name")))
		return kepler_flag(c, kepler_compat_find_flag(key), key, eq, argc, argv, i);
	if (strcmp(key, "config") && (!o || (o->flags & KEPLER_OPT_YAML_ONLY)))
		return unknown_flag(c, key);

	if (eq)
		value = eq + 1;
	else if (o && o->type == KEPLER_OPT_BOOL && *i + 1 < argc &&
		 (!strcmp(argv[*i + 1], "true") || !strcmp(argv[*i + 1], "false")))
		return kepler_error_set(c->err, -EINVAL,
					"--%s takes its value after '=': --%s=%s (alone, --%s means true)",
					key, key, argv[*i + 1], key);
	else if (o && o->type == KEPLER_OPT_BOOL)
		value = "true";
	else if (*i + 1 < argc)
		value = argv[++*i];
	else
		return kepler_error_set(c->err, -EINVAL, "option '--%s' needs a value", key);

	if (!o) { /* --config */
		free(c->cfg->config_file);
		c->cfg->config_file = strdup(value);
		return c->cfg->config_file ? 0 : kepler_error_set(c->err, -ENOMEM, "out of memory");
	}
	c->flags[c->nflags].o = o;
	c->flags[c->nflags].value = value;
	c->nflags++;
	return 0;
}

static int check_args(const struct cli *c)
{
	const struct kepler_program *p = c->prog;
	size_t n = c->cfg->nargs;

	if (n > p->max_args && p->max_args == 0)
		return kepler_error_set(c->err, -EINVAL, "unexpected argument '%.100s'", c->cfg->args[0]);
	if (n > p->max_args)
		return kepler_error_set(c->err, -EINVAL, "too many arguments (expected %s)", p->args);
	if (n < p->min_args)
		return kepler_error_set(c->err, -EINVAL, "missing argument %s", p->args);
	return 0;
}

/* First pass: sort argv into flags, positionals, help and version. */
static int scan_argv(struct cli *c, int argc, char *const argv[])
{
	bool only_args = false;
	int r;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (only_args || a[0] != '-' || strcmp(a, "-") == 0) {
			c->cfg->args[c->cfg->nargs++] = (char *)a;
		} else if (strcmp(a, "--") == 0) {
			only_args = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			return KEPLER_CONFIG_HELP;
		} else if (strcmp(a, "--version") == 0) {
			return KEPLER_CONFIG_VERSION;
		} else if (a[1] != '-') {
			return kepler_error_set(c->err, -EINVAL, "unknown option '%.100s'", a);
		} else {
			r = take_flag(c, argc, argv, &i);
			if (r < 0)
				return r;
		}
	}
	return KEPLER_CONFIG_RUN;
}

int kepler_config_parse(struct kepler_config *cfg, const struct kepler_program *prog, int argc,
			char *const argv[], struct kepler_error *err)
{
	struct cli c = { .cfg = cfg, .prog = prog, .err = err };
	char origin[160];
	int r;

	kepler_error_clear(err);
	r = kepler_config_init(cfg, err);
	if (r < 0)
		return r;
	c.flags = calloc((size_t)argc + 1, sizeof(*c.flags));
	cfg->args = calloc((size_t)argc + 1, sizeof(char *));
	if (!c.flags || !cfg->args) {
		r = kepler_error_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	r = scan_argv(&c, argc, argv);
	if (r != KEPLER_CONFIG_RUN)
		goto out;
	if (cfg->config_file) {
		r = kepler_config_load_file(cfg, cfg->config_file, prog->prog, err);
		if (r < 0)
			goto out;
	}
	for (size_t i = 0; i < c.nflags; i++) {
		snprintf(origin, sizeof(origin), "--%s", c.flags[i].o->key);
		r = kepler_config_set_value(c.flags[i].o, cfg, c.flags[i].value, origin, err);
		if (r < 0)
			goto out;
	}
	if (c.metrics) {
		r = kepler_compat_set_scalar(cfg, kepler_compat_find_flag("metrics"), c.metrics, prog->prog,
					     "Kepler's --metrics", err);
		if (r < 0)
			goto out;
	}
	r = check_args(&c);
out:
	free(c.flags);
	free(c.metrics);
	return r;
}

void kepler_config_parse_or_exit(struct kepler_config *cfg, const struct kepler_program *prog, int argc,
				 char *const argv[])
{
	struct kepler_error err;
	int r = kepler_config_parse(cfg, prog, argc, argv, &err);

	if (r == KEPLER_CONFIG_RUN) {
		kepler_log_setup(prog->name, (enum kepler_log_level)cfg->log_level,
				 (enum kepler_log_format)cfg->log_format);
		for (size_t i = 0; i < cfg->warnings.count; i++)
			kepler_warn("%s", cfg->warnings.items[i]);
		return;
	}
	if (r == KEPLER_CONFIG_HELP)
		kepler_config_print_help(stdout, prog);
	else if (r == KEPLER_CONFIG_VERSION)
		kepler_config_print_version(stdout, prog);
	else
		fprintf(stderr, "%s: %s\nTry '%s --help' for the options.\n", prog->name, err.msg,
			prog->name);
	kepler_config_done(cfg);
	exit(r < 0 ? 2 : 0);
}
