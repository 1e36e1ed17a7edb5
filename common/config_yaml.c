// SPDX-License-Identifier: Apache-2.0
/*
 * The YAML configuration file, read with libyaml's document API so that
 * every key keeps its line for error messages. Nested mappings spell the
 * dotted keys of the option table: `monitor: {interval: 5s}` is
 * `monitor.interval`. Keys of other kepler-c binaries are accepted (one
 * file can serve them all) and checked all the same.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "config_internal.h"

#define KEY_MAX 128

struct yaml_walk {
	struct kepler_config *cfg;
	yaml_document_t *doc;
	const char *path;
	unsigned prog;
	bool seen[256]; /* by option index: duplicate keys are errors */
	struct kepler_error *err;
};

static size_t line_of(const yaml_node_t *n)
{
	return n->start_mark.line + 1;
}

static bool is_section(const char *key)
{
	size_t len = strlen(key);

	for (const struct kepler_option *o = kepler_options; o->key; o++)
		if (!(o->flags & KEPLER_OPT_FLAG_ONLY) && strncmp(o->key, key, len) == 0 &&
		    o->key[len] == '.')
			return true;
	return false;
}

static bool is_null_scalar(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;

	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static int set_sequence(struct yaml_walk *w, const struct kepler_option *o, const yaml_node_t *seq,
			const char *origin)
{
	size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
	const char **items = calloc(n ? n : 1, sizeof(*items));
	int r;

	if (!items)
		return kepler_error_set(w->err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *it = yaml_document_get_node(w->doc, seq->data.sequence.items.start[i]);

		if (!it || it->type != YAML_SCALAR_NODE) {
			free(items);
			return kepler_error_set(w->err, -EINVAL,
						"invalid value for %s: list items must be plain values",
						origin);
		}
		if (memchr(it->data.scalar.value, '\0', it->data.scalar.length)) {
			free(items);
			return kepler_error_set(w->err, -EINVAL,
						"invalid value for %s: it contains a NUL byte", origin);
		}
		items[i] = (const char *)it->data.scalar.value;
	}
	r = kepler_config_set_list(o, w->cfg, items, n, origin, w->err);
	free(items);
	return r;
}

static int set_option(struct yaml_walk *w, const struct kepler_option *o, const yaml_node_t *key,
		      const yaml_node_t *val)
{
	char origin[KEY_MAX + 300];
	size_t idx = (size_t)(o - kepler_options);

	snprintf(origin, sizeof(origin), "'%s' (%s:%zu)", o->key, w->path, line_of(key));
	if (idx < sizeof(w->seen) && w->seen[idx])
		return kepler_error_set(w->err, -EINVAL, "duplicate key %s", origin);
	if (idx < sizeof(w->seen))
		w->seen[idx] = true;

	switch (val->type) {
	case YAML_SCALAR_NODE:
		if (is_null_scalar(val))
			return kepler_error_set(w->err, -EINVAL, "missing value for %s", origin);
		if (memchr(val->data.scalar.value, '\0', val->data.scalar.length))
			return kepler_error_set(w->err, -EINVAL,
						"invalid value for %s: it contains a NUL byte", origin);
		return kepler_config_set_value(o, w->cfg, (const char *)val->data.scalar.value, origin,
					       w->err);
	case YAML_SEQUENCE_NODE:
		if (o->type == KEPLER_OPT_LIST)
			return set_sequence(w, o, val, origin);
		return kepler_error_set(w->err, -EINVAL,
					"invalid value for %s: expected a single value, not a list", origin);
	default:
		return kepler_error_set(w->err, -EINVAL,
					"invalid value for %s: expected a value, not a mapping", origin);
	}
}

static int walk_mapping(struct yaml_walk *w, const yaml_node_t *map, const char *prefix);

/* The scalar items of a sequence (borrowed), or NULL with an error. */
static const char **sequence_items(struct yaml_walk *w, const yaml_node_t *seq, const char *origin,
				   size_t *ret_n)
{
	size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
	const char **items = calloc(n ? n : 1, sizeof(*items));

	if (!items) {
		kepler_error_set(w->err, -ENOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *it = yaml_document_get_node(w->doc, seq->data.sequence.items.start[i]);

		if (!it || it->type != YAML_SCALAR_NODE ||
		    memchr(it->data.scalar.value, '\0', it->data.scalar.length)) {
			free(items);
			kepler_error_set(w->err, -EINVAL,
					 "invalid value for %s: list items must be plain values", origin);
			return NULL;
		}
		items[i] = (const char *)it->data.scalar.value;
	}
	*ret_n = n;
	return items;
}

/* A key of Kepler's ConfigMap: set its kepler-c option, or warn that it has none. */
static int kepler_key(struct yaml_walk *w, const struct kepler_compat *c, const yaml_node_t *key,
		      const yaml_node_t *val)
{
	char origin[KEY_MAX + 300], where[KEY_MAX + 100];
	const char **items;
	size_t n = 0;
	int r;

	snprintf(where, sizeof(where), "(%s:%zu)", w->path, line_of(key));
	snprintf(origin, sizeof(origin), "Kepler's '%s' %s", c->key, where);
	if (!c->target)
		return kepler_compat_ignored(w->cfg, c, "key", where, w->err);
	if (val->type == YAML_SCALAR_NODE) {
		if (memchr(val->data.scalar.value, '\0', val->data.scalar.length))
			return kepler_error_set(w->err, -EINVAL,
						"invalid value for %s: it contains a NUL byte", origin);
		return kepler_compat_set_scalar(w->cfg, c, (const char *)val->data.scalar.value, 0, origin,
						w->err);
	}
	if (val->type != YAML_SEQUENCE_NODE)
		return kepler_error_set(w->err, -EINVAL,
					"invalid value for %s: expected a value, not a mapping", origin);
	items = sequence_items(w, val, origin, &n);
	if (!items)
		return w->err->code;
	r = kepler_compat_set_list(w->cfg, c, items, n, 0, origin, w->err);
	free(items);
	return r;
}

static int walk_pair(struct yaml_walk *w, const yaml_node_t *key, const yaml_node_t *val, const char *prefix)
{
	const struct kepler_option *o;
	const char *hint;
	char name[KEY_MAX];

	if (key->type != YAML_SCALAR_NODE)
		return kepler_error_set(w->err, -EINVAL, "%s:%zu: keys must be plain names", w->path,
					line_of(key));
	if ((size_t)snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "",
			     (const char *)key->data.scalar.value) >= sizeof(name))
		return kepler_error_set(w->err, -EINVAL, "unknown key '%.100s...' (%s:%zu)", name, w->path,
					line_of(key));

	o = kepler_option_find(name, 0, true);
	if (o)
		return set_option(w, o, key, val);
	if (kepler_compat_find_key(name))
		return kepler_key(w, kepler_compat_find_key(name), key, val);
	if (is_section(name) || kepler_compat_is_section(name)) {
		if (val->type == YAML_MAPPING_NODE)
			return walk_mapping(w, val, name);
		return kepler_error_set(w->err, -EINVAL, "'%s' (%s:%zu) is a section: expected keys under it",
					name, w->path, line_of(key));
	}
	hint = kepler_option_suggest(name, 0, true);
	if (hint)
		return kepler_error_set(w->err, -EINVAL, "unknown key '%.100s' (%s:%zu); did you mean '%s'?",
					name, w->path, line_of(key), hint);
	return kepler_error_set(w->err, -EINVAL, "unknown key '%.100s' (%s:%zu)", name, w->path,
				line_of(key));
}

static int walk_mapping(struct yaml_walk *w, const yaml_node_t *map, const char *prefix)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
		int r;

		if (!k || !v)
			return kepler_error_set(w->err, -EINVAL, "%s: malformed YAML", w->path);
		r = walk_pair(w, k, v, prefix);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A configuration is a few KiB: anything larger, or nested deeper, is refused before it is loaded. */
#define CONFIG_MAX_BYTES (1 << 20)
#define CONFIG_MAX_DEPTH 32

static void set_parse_error(yaml_parser_t *parser, const char *path, struct kepler_error *err)
{
	kepler_error_set(err, -EINVAL, "malformed YAML (%s:%zu:%zu): %s%s%s", path,
			 parser->problem_mark.line + 1, parser->problem_mark.column + 1,
			 parser->problem ? parser->problem : "parse error", parser->context ? " " : "",
			 parser->context ? parser->context : "");
}

/*
 * Walk the events once, counting nesting: 100,000 '[' are refused at the
 * 33rd, instead of being loaded (which took 52 s) and then rejected.
 */
static int check_depth(const unsigned char *text, size_t len, const char *path, struct kepler_error *err)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0, r = 0;

	if (!yaml_parser_initialize(&parser))
		return kepler_error_set(err, -ENOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, text, len);
	for (;;) {
		if (!yaml_parser_parse(&parser, &ev)) {
			set_parse_error(&parser, path, err);
			r = -EINVAL;
			break;
		}
		if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT)
			depth++;
		else if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT)
			depth--;
		if (depth > CONFIG_MAX_DEPTH) {
			r = kepler_error_set(err, -EINVAL, "%s:%zu: nested more than %d levels deep", path,
					     ev.start_mark.line + 1, CONFIG_MAX_DEPTH);
			yaml_event_delete(&ev);
			break;
		}
		if (ev.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return r;
}

static int load_document(const unsigned char *text, size_t len, const char *path, yaml_document_t *doc,
			 struct kepler_error *err)
{
	yaml_parser_t parser;
	int r = check_depth(text, len, path, err);

	if (r < 0)
		return r;
	if (!yaml_parser_initialize(&parser))
		return kepler_error_set(err, -ENOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, text, len);
	if (!yaml_parser_load(&parser, doc)) {
		set_parse_error(&parser, path, err);
		r = -EINVAL;
	}
	yaml_parser_delete(&parser);
	return r;
}

/* The whole file, if it is a regular file of at most CONFIG_MAX_BYTES. */
static int read_config(FILE *f, const char *path, unsigned char **ret, size_t *ret_len,
		       struct kepler_error *err)
{
	struct stat st;
	unsigned char *buf;
	size_t n;

	if (fstat(fileno(f), &st) < 0)
		return kepler_error_set(err, -errno, "cannot read config file '%s': %s", path,
					strerror(errno));
	if (S_ISDIR(st.st_mode))
		return kepler_error_set(err, -EISDIR, "config file '%s' is a directory", path);
	if (!S_ISREG(st.st_mode))
		return kepler_error_set(err, -EINVAL, "config file '%s' is not a regular file", path);
	if (st.st_size > CONFIG_MAX_BYTES)
		return kepler_error_set(err, -EFBIG,
					"config file '%s' is %lld bytes: more than the %d allowed", path,
					(long long)st.st_size, CONFIG_MAX_BYTES);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	n = fread(buf, 1, (size_t)st.st_size + 1, f);
	if (ferror(f) || n > (size_t)st.st_size) {
		free(buf);
		return kepler_error_set(err, -EIO, "cannot read config file '%s' (changed while read?)",
					path);
	}
	*ret = buf;
	*ret_len = n;
	return 0;
}

int kepler_config_load_file(struct kepler_config *cfg, const char *path, unsigned prog,
			    struct kepler_error *err)
{
	struct yaml_walk w = { .cfg = cfg, .path = path, .prog = prog, .err = err };
	yaml_document_t doc;
	yaml_node_t *root;
	unsigned char *text = NULL;
	size_t len = 0;
	FILE *f;
	int fd, r;

	/* O_NONBLOCK: a FIFO does not block the open; read_config refuses what is not a regular file */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return kepler_error_set(err, -errno, "cannot read config file '%s': %s", path,
					strerror(errno));
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	r = read_config(f, path, &text, &len, err);
	fclose(f);
	if (r < 0)
		return r;
	r = load_document(text, len, path, &doc, err);
	free(text);
	if (r < 0)
		return r;
	w.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	if (!root) /* empty file: nothing to set */
		goto out;
	if (root->type == YAML_SCALAR_NODE && is_null_scalar(root))
		goto out;
	if (root->type != YAML_MAPPING_NODE) {
		r = kepler_error_set(err, -EINVAL, "%s:%zu: expected a mapping of keys at the top level",
				     path, line_of(root));
		goto out;
	}
	r = walk_mapping(&w, root, "");
out:
	yaml_document_delete(&doc);
	return r;
}
