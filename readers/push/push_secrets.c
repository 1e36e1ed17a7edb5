// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-push's credentials and TLS material (push_secrets.h): read before
 * root is dropped, tokens and passwords under the secret-file rules
 * (kepler/secret.h), the TLS files kept in memory files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kepler/log.h"
#include "kepler/secret.h"
#include "push_secrets.h"

#define SECRET_MAX 65536
#define SECRET_LINE_MAX 16384 /* a token or password: a service account token is 1-2 KiB */

/* A file of @what (a CA or a certificate: nothing secret) into a new buffer, at most SECRET_MAX bytes. */
static int read_file(const char *what, const char *path, char **ret, size_t *ret_len)
{
	struct stat st;
	char *buf = NULL;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), e = 0;

	if (fd < 0 || fstat(fd, &st) < 0) {
		e = -errno;
		kepler_err("%s %s: %s", what, path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		e = -EINVAL;
		kepler_err("%s %s is not a regular file", what, path);
		goto out;
	}
	if (!(buf = calloc(1, SECRET_MAX + 1))) {
		e = -ENOMEM;
		goto out;
	}
	n = read(fd, buf, SECRET_MAX + 1);
	if (n < 0 || n > SECRET_MAX) {
		e = n < 0 ? -errno : -EFBIG;
		kepler_err("%s %s: %s", what, path, n < 0 ? strerror(errno) : "larger than 64 KiB");
		goto out;
	}
	*ret_len = (size_t)n;
	*ret = buf;
	buf = NULL;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return e;
}

/* A one-line secret (a token, a password): the file's first line, under the secret-file rules. */
static int read_secret(const struct kepler_push_config *c, const char *what, const char *path, char **ret)
{
	struct kepler_error err = { 0 };
	int r = kepler_secret_read_line(what, path, kepler_secret_owner(c->push_user), SECRET_LINE_MAX, ret,
					&err);

	if (r < 0)
		kepler_err("%s", err.msg);
	return r;
}

static void secret_free(char *s, size_t n)
{
	if (s)
		memset(s, 0, n);
	free(s);
}

/* "Name:value" options, @shared's then @own's, as "Name: value" header lines (NULL-terminated, malloc'ed). */
static char **header_lines(const struct kepler_strlist *shared, const struct kepler_strlist *own,
			   const char *own_name)
{
	size_t n = shared->count + own->count, k = 0;
	char **h = calloc(n + 1, sizeof(*h));

	for (; h && k < n; k++) {
		const struct kepler_strlist *l = k < shared->count ? shared : own;
		const char *item = l->items[k < shared->count ? k : k - shared->count];
		const char *colon = strchr(item, ':');
		size_t len = strlen(item) + 2;

		if (!colon || colon == item || strpbrk(item, "\r\n")) {
			kepler_err("%s: '%s' is not NAME:VALUE", l == shared ? "push.headers" : own_name,
				   item);
			break;
		}
		if (!(h[k] = malloc(len)))
			break;
		snprintf(h[k], len, "%.*s: %s", (int)(colon - item), item, colon + 1);
	}
	if (h && k < n) {
		for (size_t i = 0; i < k; i++)
			free(h[i]);
		free(h);
		h = NULL;
	}
	return h;
}

/* @data in a memory file; its name to open in @path. -errno. */
static int memory_file(const char *name, const void *data, size_t len, int *fd, char *path, size_t size)
{
	*fd = (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC);
	if (*fd < 0 || write(*fd, data, len) != (ssize_t)len) {
		kepler_err("cannot keep %s in memory: %s", name, strerror(errno));
		return -errno;
	}
	snprintf(path, size, "/proc/self/fd/%d", *fd);
	return 0;
}

/*
 * Destination @kind's credentials and headers into @a: its own where any of
 * its credential options is set (push.remote-write.*, push.otlp.*), else
 * the shared ones (push.*): a destination with its own never gets the
 * other's.
 */
static int read_auth(const struct kepler_push_config *c, enum push_dest_kind kind, struct push_auth *a)
{
	bool rw = kind == PUSH_DEST_REMOTE_WRITE;
	const char *tf = rw ? c->push_remote_write_bearer_token_file : c->push_otlp_bearer_token_file;
	const char *user = rw ? c->push_remote_write_basic_auth_username : c->push_otlp_basic_auth_username;
	const char *pf =
		rw ? c->push_remote_write_basic_auth_password_file : c->push_otlp_basic_auth_password_file;
	const char *prefix = rw ? "push.remote-write." : "push.otlp.";
	char what[96];

	if (!*tf && !*user && !*pf) {
		tf = c->push_bearer_token_file;
		user = c->push_basic_auth_username;
		pf = c->push_basic_auth_password_file;
		prefix = "push.";
	}
	snprintf(what, sizeof(what), "%sbearer-token-file", prefix);
	if (*tf && read_secret(c, what, tf, &a->token))
		return -1;
	if (*user && !*pf) {
		kepler_err("%sbasic-auth.username is set without %sbasic-auth.password-file", prefix, prefix);
		return -1;
	}
	snprintf(what, sizeof(what), "%sbasic-auth.password-file", prefix);
	if (*pf && read_secret(c, what, pf, &a->password))
		return -1;
	a->user = user;
	snprintf(what, sizeof(what), "push.%s.headers", rw ? "remote-write" : "otlp");
	if (!(a->headers = header_lines(&c->push_headers,
					rw ? &c->push_remote_write_headers : &c->push_otlp_headers, what)))
		return -1;
	return 0;
}

int push_secrets_read(const struct kepler_push_config *c, struct push_secrets *s)
{
	if ((*c->push_remote_write_url &&
	     read_auth(c, PUSH_DEST_REMOTE_WRITE, &s->auth[PUSH_DEST_REMOTE_WRITE]) < 0) ||
	    (*c->push_otlp_url && read_auth(c, PUSH_DEST_OTLP, &s->auth[PUSH_DEST_OTLP]) < 0))
		return -1;
	if (!!*c->push_tls_cert_file != !!*c->push_tls_key_file) {
		kepler_err("a client certificate needs both push.tls.cert-file and push.tls.key-file");
		return -1;
	}
	if (*c->push_tls_ca_file && read_file("push.tls.ca-file", c->push_tls_ca_file, &s->ca, &s->ca_len))
		return -1;
	if (*c->push_tls_cert_file &&
	    read_file("push.tls.cert-file", c->push_tls_cert_file, &s->cert, &s->cert_len))
		return -1;
	if (*c->push_tls_key_file) {
		struct kepler_error err = { 0 };

		if (kepler_secret_read("push.tls.key-file", c->push_tls_key_file,
				       kepler_secret_owner(c->push_user), SECRET_MAX, &s->key, &s->key_len,
				       &err) < 0) {
			kepler_err("%s", err.msg);
			return -1;
		}
	}
	if ((s->ca && memory_file("push.tls.ca-file", s->ca, s->ca_len, &s->fds[0], s->paths[0], 64) < 0) ||
	    (s->cert &&
	     memory_file("push.tls.cert-file", s->cert, s->cert_len, &s->fds[1], s->paths[1], 64) < 0) ||
	    (s->key && memory_file("push.tls.key-file", s->key, s->key_len, &s->fds[2], s->paths[2], 64) < 0))
		return -1;
	return 0;
}

void push_secrets_free(struct push_secrets *s)
{
	for (size_t i = 0; i < 2; i++) {
		struct push_auth *a = &s->auth[i];

		secret_free(a->token, a->token ? strlen(a->token) : 0);
		secret_free(a->password, a->password ? strlen(a->password) : 0);
		a->token = a->password = NULL;
	}
	secret_free(s->key, s->key_len);
	free(s->ca);
	free(s->cert);
	s->key = s->ca = s->cert = NULL;
}

void push_secrets_close(struct push_secrets *s)
{
	for (size_t i = 0; i < 3; i++)
		if (s->fds[i] > 0)
			close(s->fds[i]);
}
