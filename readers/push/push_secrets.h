/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/push_secrets.h: kepler-push's credentials and TLS material,
 * read before root is dropped. libcurl (with GnuTLS) reads PEM files at
 * each handshake, by name: the TLS files are kept in memory files (memfd)
 * it reads as /proc/self/fd/N, which this process alone may open (no
 * other, not even one of the same user: it is not dumpable once root is
 * dropped), so nothing needs reading from disk after the drop. Tokens and
 * passwords are secret files (kepler/secret.h): the first line, no link,
 * root's or push.user's, closed to others.
 */
#ifndef KEPLER_PUSH_SECRETS_H
#define KEPLER_PUSH_SECRETS_H

#include <stddef.h>

#include "kepler/config.h"

enum push_dest_kind { PUSH_DEST_REMOTE_WRITE, PUSH_DEST_OTLP };

/* One destination's credentials and headers. */
struct push_auth {
	char *token, *password; /* NULL: none */
	const char *user;
	char **headers; /* push.headers, then the destination's own */
};

struct push_secrets {
	struct push_auth auth[2]; /* by enum push_dest_kind */
	char *ca, *cert, *key;
	size_t ca_len, cert_len, key_len;
	int fds[3];
	char paths[3][64]; /* the memory files of the CA, the certificate and the key */
};

/*
 * Every destination's credentials and headers (its own where any of its
 * credential options is set, else the shared ones), and the TLS files.
 * -1 (said) on any refusal: a secret file against the rules, a header
 * that is not NAME:VALUE, a certificate without its key.
 */
int push_secrets_read(const struct kepler_push_config *c, struct push_secrets *s);

/* The tokens, passwords and key wiped and freed (once libcurl has its copies). */
void push_secrets_free(struct push_secrets *s);

/* The memory files closed, once no request can be made any more. */
void push_secrets_close(struct push_secrets *s);

#endif
