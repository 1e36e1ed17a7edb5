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

struct push_http;

/* NULL when libcurl fails to start. */
struct push_http *push_http_new(const struct push_http_params *p);
void push_http_free(struct push_http *h);

/*
 * POST @body. *@ret_status: the HTTP status (0: no answer),
 * *@ret_retry_after_s: the receiver's Retry-After in seconds (0: none),
 * @why: what went wrong. The answer's body (its first 64 KiB) is kept for
 * push_http_body().
 */
enum push_result push_http_post(struct push_http *h, const void *body, size_t len, long *ret_status,
				uint64_t *ret_retry_after_s, char *why, size_t why_size);
/* The last answer's body, its length in *@ret_len. */
const void *push_http_body(const struct push_http *h, size_t *ret_len);

#endif
