/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/push/push_http.h: one destination's HTTP client (libcurl): its
 * URL, headers, credentials and TLS files, and what a receiver's answer
 * means for a batch.
 */
#ifndef KEPLER_PUSH_HTTP_H
#define KEPLER_PUSH_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct push_http_params {
	const char *url;
	long timeout_ms;
	const char *const *fixed_headers; /* the protocol's ("Content-Type: ..."), NULL-terminated */
	const char *const *headers;       /* push.headers, NULL-terminated */
	const char *bearer_token;         /* NULL or "": none */
	const char *basic_user;           /* NULL or "": no basic auth */
	const char *basic_password;
	/* PEM files; NULL or "": the system's CAs, no client certificate */
	const char *ca_file, *cert_file, *key_file;
};

enum push_result {
	PUSH_SENT,  /* 2xx */
	PUSH_RETRY, /* 5xx, 429, no answer: the same batch again later */
	PUSH_DROP,  /* another 4xx: the batch can never be taken */
};

/* What a receiver's answer means for one request. */
struct push_answer {
	enum push_result result;
	long status;            /* the HTTP status; 0: no answer */
	uint64_t retry_after_s; /* the receiver's Retry-After in seconds; 0: none */
	char why[256];          /* what went wrong, or "HTTP 200" */
};

/* A request's body; data NULL: no request on that handle this time. */
struct push_http_body {
	const void *data;
	size_t len;
};

/* A destination's client: @n handles (each its own connection, kept alive), one request each at a time. */
struct push_http;

/* NULL when libcurl fails to start. */
struct push_http *push_http_new(const struct push_http_params *p, unsigned n);
void push_http_free(struct push_http *h);
unsigned push_http_handles(const struct push_http *h);

/*
 * POST @bodies[i] on handle i, every one at once (libcurl's multi
 * interface, in this thread), until each is answered or times out;
 * @answers[i] says how it went (for a body with data). Each answer's body
 * (its first 64 KiB) is kept for push_http_answer_body().
 */
void push_http_post(struct push_http *h, const struct push_http_body *bodies, struct push_answer *answers);
/* Handle @i's last answer's body, its length in *@ret_len. */
const void *push_http_answer_body(const struct push_http *h, unsigned i, size_t *ret_len);

#endif
