/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/exporter/webconfig.h: the web configuration file, in the
 * Prometheus exporter convention (exporter-toolkit):
 *
 *   tls_server_config:
 *     cert_file: server.crt      # relative paths: to the file's directory
 *     key_file: server.key
 *     min_version: TLS12         # the default; TLS10 .. TLS13
 *     max_version: TLS13
 *     client_auth_type: RequireAndVerifyClientCert   # mTLS (default NoClientCert)
 *     client_ca_file: clients-ca.crt
 *   http_server_config:
 *     headers:                   # added to every response
 *       Strict-Transport-Security: max-age=31536000
 *   basic_auth_users:
 *     alice: $2y$10$...          # bcrypt hashes (htpasswd -nBC 10 alice)
 *
 * Keys of that convention that kepler-exporter does not implement
 * (cipher_suites, curve_preferences, http2, rate_limit) are errors, not
 * silently ignored: they change security.
 */
#ifndef KEPLER_EXPORTER_WEBCONFIG_H
#define KEPLER_EXPORTER_WEBCONFIG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kepler/error.h"

struct kepler_web_user {
	char *name;
	char *hash;
};

#define KEPLER_AUTH_CACHE 16
#define KEPLER_WEB_HEADERS 8

/* tls_server_config.client_auth_type, as the exporter toolkit names them. */
enum kepler_client_auth {
	KEPLER_CLIENT_NONE = 0,        /* NoClientCert */
	KEPLER_CLIENT_REQUEST,         /* RequestClientCert: asked, not required, not verified */
	KEPLER_CLIENT_REQUIRE_ANY,     /* RequireAnyClientCert: required, not verified */
	KEPLER_CLIENT_VERIFY_IF_GIVEN, /* VerifyClientCertIfGiven */
	KEPLER_CLIENT_REQUIRE_VERIFY,  /* RequireAndVerifyClientCert */
};

struct kepler_web_config {
	char *cert_file, *key_file;   /* resolved paths, or NULL */
	char *cert_pem, *key_pem;     /* their contents, NUL-terminated */
	int min_version, max_version; /* TLS minor versions (TLS12 = 2): defaults 2 and 3 */
	enum kepler_client_auth client_auth;
	char *client_ca_file, *client_ca_pem;
	char priorities[512]; /* the GnuTLS priority string of the versions and cipher suites */
	/*
	 * cipher_suites (TLS 1.2 and before): indexes into kepler_web_suites,
	 * 0 suites = GnuTLS's own choice. A GnuTLS priority string names key
	 * exchanges, ciphers and MACs, so what is allowed is their cross
	 * product: where the listed suites' parts combine into others, the
	 * exporter says which at start (kepler_web_suites_extra). TLS 1.3 uses
	 * the listed AEAD ciphers.
	 */
	unsigned char suites[32];
	size_t nsuites;
	struct {
		char *name, *value;
	} headers[KEPLER_WEB_HEADERS];
	size_t nheaders;
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
/* A TLS 1.0-1.2 cipher suite: its Go (IANA) name and GnuTLS's names of its parts. */
struct kepler_web_suite {
	const char *name, *kx, *cipher, *mac;
};
extern const struct kepler_web_suite kepler_web_suites[];
extern const size_t kepler_web_nsuites;

/* The suites cipher_suites allows beyond its list (its parts combined), comma-separated, into @buf. */
void kepler_web_suites_extra(const struct kepler_web_config *c, char *buf, size_t size);

/*
 * Load the web config @path (NULL or "": none) and the files it names. The
 * config (it holds the users' hashes) and the TLS key are secret files
 * (kepler/secret.h): no link, root's or @owner's, closed to others.
 */
int kepler_web_config_load(const char *path, uid_t owner, struct kepler_web_config *ret,
			   struct kepler_error *err);
void kepler_web_config_done(struct kepler_web_config *c);

static inline bool kepler_web_config_tls(const struct kepler_web_config *c)
{
	return c->cert_pem != NULL;
}

/* True if @user / @password is a configured user. Thread-safe. */
bool kepler_web_config_check(struct kepler_web_config *c, const char *user, const char *password);

/* True if @user / @password logged in before (the login cache alone: no bcrypt). Thread-safe. */
bool kepler_web_config_known(struct kepler_web_config *c, const char *user, const char *password);

#endif /* KEPLER_EXPORTER_WEBCONFIG_H */
