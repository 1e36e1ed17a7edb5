// SPDX-License-Identifier: Apache-2.0
/*
 * The exporter's web configuration file (readers/exporter/webconfig.c):
 * what the exporter toolkit's format allows is read, what it does not
 * implement is an error naming the file, line and key, and basic auth
 * checks bcrypt hashes, remembering the logins that succeeded.
 */
#include <crypt.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"
#include "webconfig.h"

#define PEM_CERT "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
#define PEM_KEY "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"

static char dir[] = "/tmp/kepler-webconfig-XXXXXX";

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0600),
			 0); /* the web config and keys are secret files: closed to others */
}

/* Load @text as web.yml; the return code, @c filled on success. */
static int load(const char *text, struct kepler_web_config *c, struct kepler_error *err)
{
	char path[256];

	put("web.yml", text);
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	return kepler_web_config_load(path, geteuid(), c, err);
}

/* A bcrypt hash of @password at the lowest cost (the exporter accepts any cost). */
static void bcrypt(const char *password, char *out, size_t size)
{
	char salt[CRYPT_GENSALT_OUTPUT_SIZE];
	struct crypt_data cd;

	memset(&cd, 0, sizeof(cd));
	assert_non_null(crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof(salt)));
	assert_non_null(crypt_rn(password, salt, &cd, sizeof(cd)));
	assert_int_equal(strncmp(cd.output, "$2b$", 4), 0);
	snprintf(out, size, "%s", cd.output);
}

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	put("server.crt", PEM_CERT);
	put("server.key", PEM_KEY);
	put("ca.crt", PEM_CERT);
	put("not-a-cert", "hello\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_none(void **state)
{
	struct kepler_web_config c;
	struct kepler_error err = { 0 };

	(void)state;
	KEPLER_OK(kepler_web_config_load(NULL, geteuid(), &c, &err));
	assert_false(kepler_web_config_tls(&c));
	assert_int_equal(c.nusers, 0);
	kepler_web_config_done(&c);
	KEPLER_OK(load("", &c, &err)); /* an empty file configures nothing */
	assert_false(kepler_web_config_tls(&c));
	kepler_web_config_done(&c);
}

static void test_tls(void **state)
{
	struct kepler_web_config c;
	struct kepler_error err = { 0 };
	char want[300];

	(void)state;
	/* relative file names are the configuration file's directory's */
	KEPLER_OK(load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n", &c, &err));
	assert_true(kepler_web_config_tls(&c));
	snprintf(want, sizeof(want), "%s/server.crt", dir);
	assert_string_equal(c.cert_file, want);
	assert_string_equal(c.cert_pem, PEM_CERT);
	assert_int_equal(c.min_version, 2); /* TLS 1.2 unless told */
	assert_int_equal(c.max_version, 3);
	assert_string_equal(c.priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2");
	assert_int_equal(c.client_auth, KEPLER_CLIENT_NONE);
	kepler_web_config_done(&c);

	KEPLER_OK(load("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		       "  min_version: TLS13\n  client_auth_type: RequireAndVerifyClientCert\n"
		       "  client_ca_file: ca.crt\n",
		       &c, &err));
	assert_string_equal(c.priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3");
	assert_int_equal(c.client_auth, KEPLER_CLIENT_REQUIRE_VERIFY);
	assert_non_null(c.client_ca_pem);
	kepler_web_config_done(&c);
}

/* Each bad file: its error code and a part of the message an operator acts on. */
static void test_errors(void **state)
{
	static const struct {
		const char *text;
		int code;
		const char *says;
	} cases[] = {
		{ "tls_server_config:\n  cert_file: server.crt\n", -EINVAL,
		  "needs both cert_file and key_file" },
		{ "tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n", -ENOENT,
		  "missing.crt" },
		{ "tls_server_config:\n  cert_file: not-a-cert\n  key_file: server.key\n", -EINVAL,
		  "not a PEM certificate" },
		{ "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS13\n"
		  "  max_version: TLS12\n",
		  -EINVAL, "min_version is above max_version" },
		{ "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: SSL3\n",
		  -EINVAL, "web.yml:4" },
		{ "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		  "  client_auth_type: RequireAndVerifyClientCert\n",
		  -EINVAL, "needs client_ca_file" },
		{ "tls_server_config:\n  client_ca_file: ca.crt\n", -EINVAL, "client certificates need TLS" },
		{ "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		  "  cipher_suites: [TLS_NO_SUCH_SUITE]\n",
		  -EINVAL, "TLS_NO_SUCH_SUITE" },
		{ "tls_server_config:\n  curve_preferences: [X25519]\n", -EINVAL,
		  "tls_server_config.curve_preferences is not supported" },
		{ "rate_limit:\n  interval: 1s\n", -EINVAL, "web.yml:1: rate_limit is not supported" },
		{ "basic_auth_users:\n  alice: s3cret\n", -EINVAL, "alice" },
		{ "http_server_config:\n  headers:\n    Set-Cookie: a=b\n", -EINVAL, "Set-Cookie" },
		{ "tls_server_config: [1, 2]\n", -EINVAL, "must be a mapping" },
		{ "\nfoo: 1\n", -EINVAL, "web.yml:2: unknown key 'foo'" },
		{ "a: [\n", -EINVAL, "web.yml:" },
		{ "- a\n- b\n", -EINVAL, "expected a mapping" },
	};
	struct kepler_web_config c;
	struct kepler_error err;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r;

		memset(&err, 0, sizeof(err));
		r = load(cases[i].text, &c, &err);
		if (r == 0)
			kepler_web_config_done(&c);
		if (r != cases[i].code || !strstr(err.msg, cases[i].says))
			fail_msg("case %zu (%s): returned %d, not %d; message '%s' lacks '%s'", i,
				 cases[i].text, r, cases[i].code, err.msg, cases[i].says);
	}
}

static void test_unreadable(void **state)
{
	struct kepler_web_config c;
	struct kepler_error err = { 0 };
	char path[300];

	(void)state;
	snprintf(path, sizeof(path), "%s/absent.yml", dir);
	KEPLER_FAILS(kepler_web_config_load(path, geteuid(), &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "absent.yml"));
}

/* The web config and the TLS key are secret files: a link, or a file others may read, is refused. */
static void test_secret_rules(void **state)
{
	struct kepler_web_config c;
	struct kepler_error err = { 0 };
	char path[300], link[300];

	(void)state;
	put("users.yml",
	    "basic_auth_users:\n  bob: $2y$10$abcdefghijklmnopqrstuuJ8cFQk1tV0sZ6Y6Xc8oY0bS3xq5N6aW\n");
	snprintf(path, sizeof(path), "%s/users.yml", dir);
	snprintf(link, sizeof(link), "%s/linked.yml", dir);
	assert_int_equal(symlink(path, link), 0);
	KEPLER_FAILS(kepler_web_config_load(link, geteuid(), &c, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "linked.yml is a symbolic link"));
	assert_int_equal(chmod(path, 0644), 0);
	KEPLER_FAILS(kepler_web_config_load(path, geteuid(), &c, &err), -EPERM);
	assert_non_null(strstr(err.msg, "may be read by others"));
	put("tls.yml", "tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n");
	put("c.pem", "-----BEGIN CERTIFICATE-----\n");
	put("k.pem", "-----BEGIN PRIVATE KEY-----\n");
	snprintf(path, sizeof(path), "%s/k.pem", dir);
	assert_int_equal(chmod(path, 0604), 0);
	snprintf(path, sizeof(path), "%s/tls.yml", dir);
	KEPLER_FAILS(kepler_web_config_load(path, geteuid(), &c, &err), -EPERM);
	assert_non_null(strstr(err.msg, "tls_server_config.key_file"));
}

static void test_headers(void **state)
{
	struct kepler_web_config c;
	struct kepler_error err = { 0 };

	(void)state;
	KEPLER_OK(load("http_server_config:\n  headers:\n    Strict-Transport-Security: max-age=31536000\n"
		       "    X-Frame-Options: deny\n",
		       &c, &err));
	assert_int_equal(c.nheaders, 2);
	assert_string_equal(c.headers[0].name, "Strict-Transport-Security");
	assert_string_equal(c.headers[0].value, "max-age=31536000");
	assert_string_equal(c.headers[1].value, "deny");
	kepler_web_config_done(&c);
}

static void test_basic_auth(void **state)
{
	struct kepler_web_config c;
	struct kepler_error err = { 0 };
	char hash[128], text[400];

	(void)state;
	bcrypt("s3cret!", hash, sizeof(hash));
	snprintf(text, sizeof(text), "basic_auth_users:\n  alice: %s\n  bob: %s\n", hash, hash);
	KEPLER_OK(load(text, &c, &err));
	assert_int_equal(c.nusers, 2);
	assert_non_null(strstr(c.dummy_hash, "$2b$")); /* unknown users cost a bcrypt too */

	assert_false(kepler_web_config_known(&c, "alice", "s3cret!")); /* no login yet */
	assert_false(kepler_web_config_check(&c, "alice", "wrong"));
	assert_false(kepler_web_config_check(&c, "alice", "s3cret"));
	assert_false(kepler_web_config_check(&c, "mallory", "s3cret!"));
	assert_false(kepler_web_config_check(&c, "", ""));
	assert_true(kepler_web_config_check(&c, "alice", "s3cret!"));
	/* remembered: the next login of alice runs no bcrypt; bob's is not alice's */
	assert_true(kepler_web_config_known(&c, "alice", "s3cret!"));
	assert_false(kepler_web_config_known(&c, "bob", "s3cret!"));
	assert_false(kepler_web_config_known(&c, "alice", "s3cret!!"));
	assert_true(kepler_web_config_check(&c, "bob", "s3cret!"));
	assert_true(kepler_web_config_known(&c, "bob", "s3cret!"));
	kepler_web_config_done(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none),         cmocka_unit_test(test_tls),
		cmocka_unit_test(test_errors),       cmocka_unit_test(test_unreadable),
		cmocka_unit_test(test_headers),      cmocka_unit_test(test_basic_auth),
		cmocka_unit_test(test_secret_rules),
	};

	return kepler_test_exit(cmocka_run_group_tests(tests, setup, teardown));
}
