/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/exporter/webconfig.h: the web configuration file, in the
 * Prometheus exporter convention (exporter-toolkit):
 *
 *   tls_server_config:
 *     cert_file: server.crt      # relative paths: to the file's directory
 *     key_file: server.key
 *   basic_auth_users:
 *     alice: $2y$10$...          # bcrypt hashes (htpasswd -nBC 10 alice)
 *
 * Keys of that convention that kepler-exporter does not implement
 * (client certificates, TLS versions, ciphers, http_server_config,
 * rate_limit) are errors, not silently ignored: they change security.
 */
#ifndef KEPLER_EXPORTER_WEBCONFIG_H
#define KEPLER_EXPORTER_WEBCONFIG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/error.h"

struct kepler_web_user {
	char *name;
	char *hash;
};

#define KEPLER_AUTH_CACHE 16

struct kepler_web_config {
	char *cert_file, *key_file; /* resolved paths, or NULL */
	char *cert_pem, *key_pem;   /* their contents, NUL-terminated */
	struct kepler_web_user *users;
	size_t nusers;
	/* successful logins, remembered by a keyed hash so bcrypt runs once per password */
	pthread_mutex_t lock;
	uint64_t seed;
	struct {
		uint64_t lo, hi;
	} ok[KEPLER_AUTH_CACHE];
	unsigned nok, next_ok;
	char dummy_hash[128]; /* checked for unknown users: same timing */
};

/*
 * Load @path (NULL or "": no TLS, no auth). Errors name the file, line and
 * key: -ENOENT/-EACCES (file or a certificate unreadable), -EINVAL
 * (malformed YAML, an unknown or unsupported key, a hash that is not
 * bcrypt, a certificate without its key).
 */
int kepler_web_config_load(const char *path, struct kepler_web_config *ret, struct kepler_error *err);
void kepler_web_config_done(struct kepler_web_config *c);

static inline bool kepler_web_config_tls(const struct kepler_web_config *c)
{
	return c->cert_pem != NULL;
}

/* True if @user / @password is a configured user. Thread-safe. */
bool kepler_web_config_check(struct kepler_web_config *c, const char *user, const char *password);

#endif /* KEPLER_EXPORTER_WEBCONFIG_H */
