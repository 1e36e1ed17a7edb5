// SPDX-License-Identifier: Apache-2.0
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "push_http.h"

#define BODY_MAX 65536

struct push_http {
	CURL *c;
	struct curl_slist *headers;
	char *auth;
	uint64_t retry_after_s;
	char body[BODY_MAX];
	size_t body_len;
};

/* The answer's body: its first BODY_MAX bytes kept, the rest read and dropped. */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct push_http *h = arg;
	size_t len = size * n, room = BODY_MAX - h->body_len;

	memcpy(h->body + h->body_len, p, len < room ? len : room);
	h->body_len += len < room ? len : room;
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct push_http *h = arg;
	size_t len = size * n;

	if (len > 12 && !strncasecmp(p, "Retry-After:", 12)) {
		char buf[32];
		size_t k = len - 12 < sizeof(buf) - 1 ? len - 12 : sizeof(buf) - 1;

		memcpy(buf, p + 12, k);
		buf[k] = 0;
		h->retry_after_s =
			strtoull(buf, NULL, 10); /* seconds; an HTTP date reads 0: back-off of our own */
	}
	return len;
}

struct push_http *push_http_new(const struct push_http_params *p)
{
	struct push_http *h = calloc(1, sizeof(*h));

	if (!h || !(h->c = curl_easy_init())) {
		free(h);
		return NULL;
	}
	for (size_t i = 0; p->fixed_headers && p->fixed_headers[i]; i++)
		h->headers = curl_slist_append(h->headers, p->fixed_headers[i]);
	h->headers = curl_slist_append(h->headers, "User-Agent: kepler-push/0.1.0");
	for (size_t i = 0; p->headers && p->headers[i]; i++)
		h->headers = curl_slist_append(h->headers, p->headers[i]);
	if (p->bearer_token && *p->bearer_token) {
		size_t n = strlen(p->bearer_token) + 32;

		if ((h->auth = malloc(n))) {
			snprintf(h->auth, n, "Authorization: Bearer %s", p->bearer_token);
			h->headers = curl_slist_append(h->headers, h->auth);
		}
	}
	if (p->basic_user && *p->basic_user) {
		curl_easy_setopt(h->c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h->c, CURLOPT_USERNAME, p->basic_user);
		curl_easy_setopt(h->c, CURLOPT_PASSWORD, p->basic_password ? p->basic_password : "");
	}
	if (p->ca_file && *p->ca_file)
		curl_easy_setopt(h->c, CURLOPT_CAINFO, p->ca_file);
	if (p->cert_file && *p->cert_file) {
		curl_easy_setopt(h->c, CURLOPT_SSLCERT, p->cert_file);
		curl_easy_setopt(h->c, CURLOPT_SSLKEY, p->key_file);
	}
	curl_easy_setopt(h->c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(h->c, CURLOPT_URL, p->url);
	curl_easy_setopt(h->c, CURLOPT_HTTPHEADER, h->headers);
	curl_easy_setopt(h->c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->c, CURLOPT_TIMEOUT_MS, p->timeout_ms);
	curl_easy_setopt(h->c, CURLOPT_CONNECTTIMEOUT_MS, p->timeout_ms < 10000 ? p->timeout_ms : 10000L);
	curl_easy_setopt(h->c, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(h->c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h->c, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(h->c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h->c, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(h->c, CURLOPT_POST, 1L);
	return h;
}

void push_http_free(struct push_http *h)
{
	if (!h)
		return;
	curl_easy_cleanup(h->c);
	curl_slist_free_all(h->headers);
	if (h->auth)
		memset(h->auth, 0, strlen(h->auth));
	free(h->auth);
	free(h);
}

enum push_result push_http_post(struct push_http *h, const void *body, size_t len, long *ret_status,
				uint64_t *ret_retry_after_s, char *why, size_t why_size)
{
	CURLcode rc;
	long status = 0;

	h->retry_after_s = 0;
	h->body_len = 0;
	curl_easy_setopt(h->c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	rc = curl_easy_perform(h->c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &status);
	*ret_status = status;
	*ret_retry_after_s = h->retry_after_s;
	if (rc != CURLE_OK) {
		snprintf(why, why_size, "%s", curl_easy_strerror(rc));
		return PUSH_RETRY;
	}
	snprintf(why, why_size, "HTTP %ld", status);
	if (status >= 200 && status < 300)
		return PUSH_SENT;
	if (status == 429 || status >= 500)
		return PUSH_RETRY;
	return PUSH_DROP;
}

const void *push_http_body(const struct push_http *h, size_t *ret_len)
{
	*ret_len = h->body_len;
	return h->body;
}
