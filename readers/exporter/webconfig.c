// SPDX-License-Identifier: Apache-2.0
/* The exporter's web configuration file: see webconfig.h. */
#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <yaml.h>

#include "kepler/secret.h"
#include "webconfig.h"

#define PEM_MAX (1024 * 1024)

struct walk {
	struct kepler_web_config *c;
	yaml_document_t *doc;
	const char *path;
	struct kepler_error *err;
};

static size_t line_of(const yaml_node_t *n)
{
	return n->start_mark.line + 1;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* Read a whole (small) file, NUL-terminated. */
static int read_all(const char *path, char **ret, struct kepler_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;
	size_t len = 0;
	struct stat st;
	char *buf = NULL;

	if (fd < 0)
		return kepler_error_set(err, -errno, "cannot read %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_size > PEM_MAX) {
		r = kepler_error_set(err, -EFBIG, "%s: not a file of at most 1 MiB", path);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		r = kepler_error_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

		if (n <= 0) {
			r = kepler_error_set(err, n < 0 ? -errno : -EIO, "cannot read %s: %s", path,
					     n < 0 ? strerror(errno) : "file shrank");
			goto out;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret = buf;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return r;
}

/* @file relative to the directory of the config file, as exporter-toolkit does. */
static char *resolve(const char *config_path, const char *file)
{
	char *dir, *copy, *out;

	if (file[0] == '/')
		return strdup(file);
	copy = strdup(config_path);
	if (!copy)
		return NULL;
	dir = dirname(copy);
	if (asprintf(&out, "%s/%s", dir, file) < 0)
		out = NULL;
	free(copy);
	return out;
}

static int tls_version(struct walk *w, const yaml_node_t *k, const char *val, int *ret)
{
	static const char *const names[] = { "TLS10", "TLS11", "TLS12", "TLS13" };

	for (int i = 0; i < 4; i++)
		if (val && !strcmp(val, names[i])) {
			*ret = i;
			return 0;
		}
	return kepler_error_set(w->err, -EINVAL,
				"%s:%zu: tls_server_config.%s must be TLS10, TLS11, TLS12 or TLS13", w->path,
				line_of(k), scalar(k));
}

static int client_auth(struct walk *w, const yaml_node_t *k, const char *val)
{
	static const char *const names[] = { "NoClientCert", "RequestClientCert", "RequireAnyClientCert",
					     "VerifyClientCertIfGiven", "RequireAndVerifyClientCert" };

	for (int i = 0; i < 5; i++)
		if (val && !strcmp(val, names[i])) {
			w->c->client_auth = (enum kepler_client_auth)i;
			return 0;
		}
	return kepler_error_set(w->err, -EINVAL,
				"%s:%zu: tls_server_config.client_auth_type must be NoClientCert, "
				"RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven or "
				"RequireAndVerifyClientCert",
				w->path, line_of(k));
}

const struct kepler_web_suite kepler_web_suites[] = {
	{ "TLS_RSA_WITH_AES_128_CBC_SHA", "RSA", "AES-128-CBC", "SHA1" },
	{ "TLS_RSA_WITH_AES_256_CBC_SHA", "RSA", "AES-256-CBC", "SHA1" },
	{ "TLS_RSA_WITH_AES_128_GCM_SHA256", "RSA", "AES-128-GCM", "AEAD" },
	{ "TLS_RSA_WITH_AES_256_GCM_SHA384", "RSA", "AES-256-GCM", "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA", "AES-128-CBC", "SHA1" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA", "AES-256-CBC", "SHA1" },
	{ "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA", "AES-128-CBC", "SHA1" },
	{ "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA", "AES-256-CBC", "SHA1" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA", "AES-128-GCM", "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA", "AES-256-GCM", "AEAD" },
	{ "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA", "AES-128-GCM", "AEAD" },
	{ "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA", "AES-256-GCM", "AEAD" },
	{ "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD" },
	{ "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD" },
};
const size_t kepler_web_nsuites = sizeof(kepler_web_suites) / sizeof(kepler_web_suites[0]);

/* TLS 1.3's suites: accepted in the list, as Go does, and always on with TLS 1.3 */
static const char *const tls13_suites[] = { "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
					    "TLS_CHACHA20_POLY1305_SHA256" };

static int suite_index(const char *name)
{
	for (size_t i = 0; name && i < kepler_web_nsuites; i++)
		if (!strcmp(name, kepler_web_suites[i].name))
			return (int)i;
	for (size_t i = 0; name && i < sizeof(tls13_suites) / sizeof(tls13_suites[0]); i++)
		if (!strcmp(name, tls13_suites[i]))
			return -2;
	return -1;
}

/* tls_server_config.cipher_suites: a list of Go's (IANA) names of TLS 1.2 suites. */
static int cipher_suites(struct walk *w, const yaml_node_t *k, const yaml_node_t *v)
{
	if (v->type != YAML_SEQUENCE_NODE)
		return kepler_error_set(w->err, -EINVAL,
					"%s:%zu: tls_server_config.cipher_suites must be a list of names",
					w->path, line_of(k));
	w->c->nsuites = 0;
	for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
		const yaml_node_t *n = yaml_document_get_node(w->doc, *it);
		const char *name = scalar(n);
		int i = suite_index(name);

		if (i == -1)
			return kepler_error_set(w->err, -EINVAL,
						"%s:%zu: cipher suite '%s' is unknown or insecure (the TLS "
						"1.2 suites with forward secrecy or AES, by their Go names: "
						"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...)",
						w->path, line_of(n), name ? name : "");
		if (i == -2)
			continue; /* a TLS 1.3 suite: not configurable, always on with TLS 1.3 */
		if (w->c->nsuites == sizeof(w->c->suites))
			return kepler_error_set(w->err, -EINVAL, "%s:%zu: too many cipher suites", w->path,
						line_of(n));
		w->c->suites[w->c->nsuites++] = (unsigned char)i;
	}
	return 0;
}

static bool has_part(const struct kepler_web_config *c, size_t field, const char *part)
{
	for (size_t i = 0; i < c->nsuites; i++) {
		const struct kepler_web_suite *s = &kepler_web_suites[c->suites[i]];

		if (!strcmp(field == 0 ? s->kx : field == 1 ? s->cipher : s->mac, part))
			return true;
	}
	return false;
}

void kepler_web_suites_extra(const struct kepler_web_config *c, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; c->nsuites && i < kepler_web_nsuites; i++) {
		const struct kepler_web_suite *s = &kepler_web_suites[i];
		bool listed = false;

		for (size_t j = 0; j < c->nsuites; j++)
			listed |= c->suites[j] == i;
		if (!listed && has_part(c, 0, s->kx) && has_part(c, 1, s->cipher) && has_part(c, 2, s->mac) &&
		    n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", s->name);
	}
}

/* "+NAME" for each part of the listed suites, once each */
static size_t add_parts(char *buf, size_t size, size_t n, const struct kepler_web_config *c, size_t field)
{
	for (size_t i = 0; i < c->nsuites; i++) {
		const struct kepler_web_suite *s = &kepler_web_suites[c->suites[i]];
		const char *part = field == 0 ? s->kx : field == 1 ? s->cipher : s->mac;
		char item[64];

		snprintf(item, sizeof(item), ":+%s", part);
		if (!strstr(buf, item) && n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s", item);
	}
	return n;
}

static int tls_section(struct walk *w, const yaml_node_t *map)
{
	if (map->type != YAML_MAPPING_NODE)
		return kepler_error_set(w->err, -EINVAL, "%s:%zu: tls_server_config must be a mapping",
					w->path, line_of(map));
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
		const char *key = scalar(k), *val = scalar(v);
		char **slot;

		if (!key)
			return kepler_error_set(w->err, -EINVAL, "%s:%zu: keys must be plain names", w->path,
						line_of(k));
		if (!strcmp(key, "min_version") || !strcmp(key, "max_version")) {
			int r = tls_version(w, k, val,
					    key[1] == 'i' ? &w->c->min_version : &w->c->max_version);

			if (r < 0)
				return r;
			continue;
		}
		if (!strcmp(key, "cipher_suites")) {
			int r = cipher_suites(w, k, v);

			if (r < 0)
				return r;
			continue;
		}
		if (!strcmp(key, "client_auth_type")) {
			int r = client_auth(w, k, val);

			if (r < 0)
				return r;
			continue;
		}
		if (!strcmp(key, "cert_file"))
			slot = &w->c->cert_file;
		else if (!strcmp(key, "key_file"))
			slot = &w->c->key_file;
		else if (!strcmp(key, "client_ca_file"))
			slot = &w->c->client_ca_file;
		else
			return kepler_error_set(
				w->err, -EINVAL,
				"%s:%zu: tls_server_config.%s is not supported by "
				"kepler-exporter (cert_file, key_file, min_version, max_version, "
				"cipher_suites, client_auth_type, client_ca_file are)",
				w->path, line_of(k), key);
		if (!val || !*val)
			return kepler_error_set(w->err, -EINVAL,
						"%s:%zu: tls_server_config.%s needs a "
						"file name",
						w->path, line_of(v), key);
		free(*slot);
		*slot = resolve(w->path, val);
		if (!*slot)
			return kepler_error_set(w->err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* http_server_config.headers: the security headers the exporter toolkit allows, on every response. */
static int headers_section(struct walk *w, const yaml_node_t *map)
{
	static const char *const allowed[] = { "Strict-Transport-Security", "X-Content-Type-Options",
					       "X-Frame-Options", "X-XSS-Protection",
					       "Content-Security-Policy" };

	if (map->type != YAML_MAPPING_NODE)
		return kepler_error_set(w->err, -EINVAL,
					"%s:%zu: http_server_config.headers must be a mapping", w->path,
					line_of(map));
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
		const char *key = scalar(k), *val = scalar(yaml_document_get_node(w->doc, p->value));
		bool ok = false;

		for (size_t i = 0; key && i < sizeof(allowed) / sizeof(allowed[0]); i++)
			ok |= !strcasecmp(key, allowed[i]);
		if (!ok)
			return kepler_error_set(
				w->err, -EINVAL,
				"%s:%zu: header '%s' cannot be set (Strict-Transport-Security, "
				"X-Content-Type-Options, X-Frame-Options, X-XSS-Protection, "
				"Content-Security-Policy can)",
				w->path, line_of(k), key ? key : "?");
		if (!val || strpbrk(val, "\r\n") || w->c->nheaders == KEPLER_WEB_HEADERS)
			return kepler_error_set(w->err, -EINVAL, "%s:%zu: header '%s' needs a one-line value",
						w->path, line_of(k), key);
		w->c->headers[w->c->nheaders].name = strdup(key);
		w->c->headers[w->c->nheaders].value = strdup(val);
		if (!w->c->headers[w->c->nheaders++].value || !w->c->headers[w->c->nheaders - 1].name)
			return kepler_error_set(w->err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int http_section(struct walk *w, const yaml_node_t *map)
{
	if (map->type != YAML_MAPPING_NODE)
		return kepler_error_set(w->err, -EINVAL, "%s:%zu: http_server_config must be a mapping",
					w->path, line_of(map));
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
		const char *key = scalar(k);

		if (!key || strcmp(key, "headers"))
			return kepler_error_set(
				w->err, -EINVAL,
				"%s:%zu: http_server_config.%s is not supported by kepler-exporter "
				"(headers is)",
				w->path, line_of(k), key ? key : "?");
		int r = headers_section(w, yaml_document_get_node(w->doc, p->value));

		if (r < 0)
			return r;
	}
	return 0;
}

static bool is_bcrypt(const char *h)
{
	return (!strncmp(h, "$2a$", 4) || !strncmp(h, "$2b$", 4) || !strncmp(h, "$2y$", 4)) &&
	       strlen(h) == 60;
}

static int users_section(struct walk *w, const yaml_node_t *map)
{
	size_t n;

	if (map->type != YAML_MAPPING_NODE)
		return kepler_error_set(w->err, -EINVAL,
					"%s:%zu: basic_auth_users must be a mapping "
					"of user names to bcrypt hashes",
					w->path, line_of(map));
	n = (size_t)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
	w->c->users = calloc(n ? n : 1, sizeof(*w->c->users));
	if (!w->c->users)
		return kepler_error_set(w->err, -ENOMEM, "out of memory");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
		const char *user = scalar(k), *hash = scalar(v);
		struct kepler_web_user *u = &w->c->users[w->c->nusers];

		if (!user || !*user || strchr(user, ':'))
			return kepler_error_set(w->err, -EINVAL,
						"%s:%zu: a user name must be a non-empty "
						"plain name without ':'",
						w->path, line_of(k));
		if (!hash || !is_bcrypt(hash))
			return kepler_error_set(w->err, -EINVAL,
						"%s:%zu: the password of user '%s' must "
						"be a bcrypt hash ($2y$..., e.g. from htpasswd -nBC 10 %s)",
						w->path, line_of(v), user, user);
		for (size_t i = 0; i < w->c->nusers; i++)
			if (!strcmp(w->c->users[i].name, user))
				return kepler_error_set(w->err, -EINVAL, "%s:%zu: user '%s' appears twice",
							w->path, line_of(k), user);
		u->name = strdup(user);
		u->hash = strdup(hash);
		w->c->nusers++;
		if (!u->name || !u->hash)
			return kepler_error_set(w->err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int walk_root(struct walk *w, const yaml_node_t *root)
{
	if (!root || (root->type == YAML_SCALAR_NODE && !*scalar(root)))
		return 0; /* an empty file: nothing configured */
	if (root->type != YAML_MAPPING_NODE)
		return kepler_error_set(w->err, -EINVAL,
					"%s:%zu: expected a mapping (tls_server_config, "
					"basic_auth_users)",
					w->path, line_of(root));
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(w->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(w->doc, p->value);
		const char *key = scalar(k);
		int r;

		if (!key)
			return kepler_error_set(w->err, -EINVAL, "%s:%zu: keys must be plain names", w->path,
						line_of(k));
		if (!strcmp(key, "tls_server_config"))
			r = tls_section(w, v);
		else if (!strcmp(key, "basic_auth_users"))
			r = users_section(w, v);
		else if (!strcmp(key, "http_server_config"))
			r = http_section(w, v);
		else if (!strcmp(key, "rate_limit"))
			r = kepler_error_set(w->err, -EINVAL,
					     "%s:%zu: %s is not supported by "
					     "kepler-exporter",
					     w->path, line_of(k), key);
		else
			r = kepler_error_set(w->err, -EINVAL,
					     "%s:%zu: unknown key '%s' (known: "
					     "tls_server_config, basic_auth_users)",
					     w->path, line_of(k), key);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse(struct kepler_web_config *c, const char *path, const char *text, struct kepler_error *err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct walk w = { .c = c, .doc = &doc, .path = path, .err = err };
	int r;

	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
	if (!yaml_parser_load(&parser, &doc)) {
		r = kepler_error_set(err, -EINVAL, "%s:%zu: %s", path, parser.problem_mark.line + 1,
				     parser.problem ? parser.problem : "invalid YAML");
		yaml_parser_delete(&parser);
		return r;
	}
	r = walk_root(&w, yaml_document_get_root_node(&doc));
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return r;
}

static int load_pems(struct kepler_web_config *c, const char *path, uid_t owner, struct kepler_error *err)
{
	size_t len;
	int r;

	if (!c->cert_file && !c->key_file)
		return c->client_ca_file || c->client_auth
			       ? kepler_error_set(err, -EINVAL,
						  "%s: client certificates need TLS (cert_file, key_file)",
						  path)
			       : 0;
	if (!c->cert_file || !c->key_file)
		return kepler_error_set(err, -EINVAL,
					"%s: tls_server_config needs both cert_file and "
					"key_file",
					path);
	r = read_all(c->cert_file, &c->cert_pem, err);
	if (r == 0)
		r = kepler_secret_read("tls_server_config.key_file", c->key_file, owner, PEM_MAX, &c->key_pem,
				       &len, err);
	if (r == 0 && !strstr(c->cert_pem, "-----BEGIN CERTIFICATE-----"))
		r = kepler_error_set(err, -EINVAL, "%s: not a PEM certificate", c->cert_file);
	if (r == 0 && !strstr(c->key_pem, "PRIVATE KEY-----"))
		r = kepler_error_set(err, -EINVAL, "%s: not a PEM private key", c->key_file);
	if (r == 0 && c->client_ca_file)
		r = read_all(c->client_ca_file, &c->client_ca_pem, err);
	if (r == 0 && c->client_ca_pem && !strstr(c->client_ca_pem, "-----BEGIN CERTIFICATE-----"))
		r = kepler_error_set(err, -EINVAL, "%s: not a PEM certificate", c->client_ca_file);
	if (r == 0 && c->client_auth != KEPLER_CLIENT_NONE && !c->client_ca_pem)
		r = kepler_error_set(err, -EINVAL,
				     "%s: client_auth_type other than NoClientCert needs client_ca_file (the "
				     "CA the clients' certificates are verified against; the exporter asks "
				     "for client certificates only with one)",
				     path);
	if (r == 0 && c->min_version > c->max_version)
		r = kepler_error_set(err, -EINVAL, "%s: min_version is above max_version", path);
	if (r == 0) { /* GnuTLS: the versions from min to max; with cipher_suites, their parts */
		size_t n = (size_t)snprintf(c->priorities, sizeof(c->priorities), "NORMAL:-VERS-ALL");

		for (int v = c->max_version; v >= c->min_version; v--)
			n += (size_t)snprintf(c->priorities + n, sizeof(c->priorities) - n, ":+VERS-TLS1.%d",
					      v);
		if (c->nsuites) {
			n += (size_t)snprintf(c->priorities + n, sizeof(c->priorities) - n,
					      ":-KX-ALL:-CIPHER-ALL:-MAC-ALL");
			for (size_t f = 0; f < 3; f++)
				n = add_parts(c->priorities, sizeof(c->priorities), n, c, f);
		}
		if (n >= sizeof(c->priorities))
			r = kepler_error_set(err, -EINVAL, "%s: too many cipher suites", path);
	}
	return r;
}

/* A bcrypt hash of a random password, for unknown users. */
static void make_dummy(struct kepler_web_config *c)
{
	char salt[CRYPT_GENSALT_OUTPUT_SIZE], pass[33];
	struct crypt_data cd;
	unsigned char rnd[16];

	memset(&cd, 0, sizeof(cd));
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		memset(rnd, 0x5a, sizeof(rnd));
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(pass + 2 * i, 3, "%02x", rnd[i]);
	if (crypt_gensalt_rn("$2b$", 10, NULL, 0, salt, sizeof(salt)) &&
	    crypt_rn(pass, salt, &cd, sizeof(cd)) && cd.output[0] != '*')
		snprintf(c->dummy_hash, sizeof(c->dummy_hash), "%s", cd.output);
}

int kepler_web_config_load(const char *path, uid_t owner, struct kepler_web_config *c,
			   struct kepler_error *err)
{
	size_t len;
	char *text = NULL;
	int r;

	memset(c, 0, sizeof(*c));
	c->min_version = 2; /* TLS 1.2, as the exporter toolkit */
	c->max_version = 3;
	pthread_mutex_init(&c->lock, NULL);
	if (getrandom(&c->seed, sizeof(c->seed), 0) != (ssize_t)sizeof(c->seed))
		c->seed = (uint64_t)(unsigned)getpid() * 0x9E3779B97F4A7C15ULL;
	if (!path || !*path)
		return 0;
	/* it names the users and their hashes: a secret file */
	r = kepler_secret_read("web.config-file", path, owner, PEM_MAX, &text, &len, err);
	if (r == -ENODATA) { /* an empty file configures nothing, as the exporter toolkit's */
		kepler_error_clear(err);
		r = (text = strdup("")) ? 0 : kepler_error_set(err, -ENOMEM, "out of memory");
	}
	if (r == 0)
		r = parse(c, path, text, err);
	if (r == 0)
		r = load_pems(c, path, owner, err);
	if (r == 0 && c->nusers)
		make_dummy(c);
	free(text);
	if (r < 0)
		kepler_web_config_done(c);
	return r;
}

void kepler_web_config_done(struct kepler_web_config *c)
{
	for (size_t i = 0; i < c->nusers; i++) {
		free(c->users[i].name);
		free(c->users[i].hash);
	}
	free(c->users);
	free(c->cert_file);
	free(c->key_file);
	free(c->cert_pem);
	free(c->client_ca_file);
	free(c->client_ca_pem);
	for (size_t i = 0; i < c->nheaders; i++) {
		free(c->headers[i].name);
		free(c->headers[i].value);
	}
	if (c->key_pem)
		explicit_bzero(c->key_pem, strlen(c->key_pem));
	free(c->key_pem);
	pthread_mutex_destroy(&c->lock);
	memset(c, 0, sizeof(*c));
}

static XXH128_hash_t login_key(const struct kepler_web_config *c, const char *user, const char *password)
{
	XXH3_state_t *st = XXH3_createState();
	XXH128_hash_t h = { 0, 0 }; /* never a cached key: entries are set from real digests */

	if (!st)
		return h;
	XXH3_128bits_reset_withSeed(st, c->seed);
	XXH3_128bits_update(st, user, strlen(user) + 1);
	XXH3_128bits_update(st, password, strlen(password));
	h = XXH3_128bits_digest(st);
	XXH3_freeState(st);
	return h;
}

static bool hash_matches(const char *password, const char *hash)
{
	struct crypt_data cd;
	unsigned char diff = 0;
	size_t n = strlen(hash);

	memset(&cd, 0, sizeof(cd));
	if (!crypt_rn(password, hash, &cd, sizeof(cd)) || strlen(cd.output) != n)
		return false;
	for (size_t i = 0; i < n; i++) /* constant time */
		diff |= (unsigned char)(cd.output[i] ^ hash[i]);
	return diff == 0;
}

static bool cached(struct kepler_web_config *c, XXH128_hash_t key)
{
	bool ok = false;

	if (!key.low64 && !key.high64)
		return false;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->nok && !ok; i++)
		ok = c->ok[i].lo == key.low64 && c->ok[i].hi == key.high64;
	pthread_mutex_unlock(&c->lock);
	return ok;
}

bool kepler_web_config_known(struct kepler_web_config *c, const char *user, const char *password)
{
	return cached(c, login_key(c, user, password));
}

bool kepler_web_config_check(struct kepler_web_config *c, const char *user, const char *password)
{
	XXH128_hash_t key = login_key(c, user, password);
	const char *hash = NULL;
	bool cacheable = key.low64 || key.high64;

	if (cached(c, key))
		return true;
	for (size_t i = 0; i < c->nusers; i++)
		if (!strcmp(c->users[i].name, user))
			hash = c->users[i].hash;
	if (!hash) {
		if (c->dummy_hash[0])
			hash_matches(password, c->dummy_hash); /* same cost as a known user */
		return false;
	}
	if (!hash_matches(password, hash))
		return false;
	if (!cacheable)
		return true;
	pthread_mutex_lock(&c->lock);
	c->ok[c->next_ok].lo = key.low64;
	c->ok[c->next_ok].hi = key.high64;
	c->next_ok = (c->next_ok + 1) % KEPLER_AUTH_CACHE;
	if (c->nok < KEPLER_AUTH_CACHE)
		c->nok++;
	pthread_mutex_unlock(&c->lock);
	return true;
}
