// SPDX-License-Identifier: Apache-2.0
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "push_http.h"

#define BODY_MAX 65536

/* One request at a time: its easy handle (its own connection, kept alive) and its answer. */
struct handle {
	CURL *c;
	struct curl_slist *headers;
	char *auth;
	uint64_t retry_after_s;
	char body[BODY_MAX];
	size_t body_len;
};

struct push_http {
	CURLM *multi;
	unsigned n;
	struct handle *h;
};

/* The answer's body: its first BODY_MAX bytes kept, the rest read and dropped. */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct handle *h = arg;
	size_t len = size * n, room = BODY_MAX - h->body_len;

	memcpy(h->body + h->body_len, p, len < room ? len : room);
	h->body_len += len < room ? len : room;
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct handle *h = arg;
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

static int handle_init(struct handle *h, const struct push_http_params *p)
{
	if (!(h->c = curl_easy_init()))
		return -1;
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
	curl_easy_setopt(h->c, CURLOPT_PRIVATE, h);
	return 0;
}

static void handle_free(struct handle *h)
{
	curl_easy_cleanup(h->c);
	curl_slist_free_all(h->headers);
	if (h->auth)
		memset(h->auth, 0, strlen(h->auth));
	free(h->auth);
}

struct push_http *push_http_new(const struct push_http_params *p, unsigned n)
{
	struct push_http *g = calloc(1, sizeof(*g));

	if (!g || !n || !(g->h = calloc(n, sizeof(*g->h))) || !(g->multi = curl_multi_init()))
		goto fail;
	g->n = n;
	for (unsigned i = 0; i < n; i++)
		if (handle_init(&g->h[i], p) < 0)
			goto fail;
	return g;
fail:
	push_http_free(g);
	return NULL;
}

void push_http_free(struct push_http *g)
{
	if (!g)
		return;
	for (unsigned i = 0; g->h && i < g->n; i++)
		handle_free(&g->h[i]);
	if (g->multi)
		curl_multi_cleanup(g->multi);
	free(g->h);
	free(g);
}

unsigned push_http_handles(const struct push_http *g)
{
	return g->n;
}

/* What an answer means for the request it answers. */
static void answer(struct handle *h, CURLcode rc, struct push_answer *a)
{
	long status = 0;

	if (rc == CURLE_OK)
		curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &status);
	a->status = status;
	a->retry_after_s = h->retry_after_s;
	if (rc != CURLE_OK) {
		snprintf(a->why, sizeof(a->why), "%s", curl_easy_strerror(rc));
		a->result = PUSH_RETRY;
		return;
	}
	snprintf(a->why, sizeof(a->why), "HTTP %ld", status);
	a->result = status >= 200 && status < 300    ? PUSH_SENT
		    : status == 429 || status >= 500 ? PUSH_RETRY
						     : PUSH_DROP;
}

void push_http_post(struct push_http *g, const struct push_http_body *bodies, struct push_answer *answers)
{
	unsigned running = 0, left;
	int queued, still = 0;
	CURLMsg *m;

	for (unsigned i = 0; i < g->n; i++) {
		struct handle *h = &g->h[i];

		if (!bodies[i].data)
			continue;
		h->retry_after_s = 0;
		h->body_len = 0;
		curl_easy_setopt(h->c, CURLOPT_POSTFIELDS, bodies[i].data);
		curl_easy_setopt(h->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)bodies[i].len);
		/* until its answer comes: what libcurl failing says */
		answers[i] = (struct push_answer){ .result = PUSH_RETRY, .why = "libcurl could not send it" };
		if (curl_multi_add_handle(g->multi, h->c) == CURLM_OK)
			running++;
	}
	/* every request at once, in this thread; each ends by its own timeout at the latest */
	for (left = running; left;) {
		if (curl_multi_perform(g->multi, &still) != CURLM_OK)
			break;
		while ((m = curl_multi_info_read(g->multi, &queued)))
			if (m->msg == CURLMSG_DONE) {
				struct handle *h = NULL;

				curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&h);
				answer(h, m->data.result, &answers[h - g->h]);
				curl_multi_remove_handle(g->multi, h->c);
				left--;
			}
		if (left && curl_multi_poll(g->multi, NULL, 0, 1000, NULL) != CURLM_OK)
			break;
	}
	for (unsigned i = 0; left && i < g->n; i++) /* the multi handle failed: what is left is retried */
		if (bodies[i].data)
			curl_multi_remove_handle(g->multi, g->h[i].c); /* (one already removed: a no-op) */
}

const void *push_http_answer_body(const struct push_http *g, unsigned i, size_t *ret_len)
{
	*ret_len = g->h[i].body_len;
	return g->h[i].body;
}
