// SPDX-License-Identifier: Apache-2.0
#include <curl/curl.h>
#include <errno.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>

#include "remote_write.h"
#include "remote_write.pb-c.h"

struct series {
	char *key;
	Prometheus__TimeSeries ts;
	Prometheus__Label *labels;
	Prometheus__Label **label_ptrs;
	Prometheus__Sample *samples;
	Prometheus__Sample **sample_ptrs;
	size_t nsamples, cap;
};

struct push_request {
	struct series *series;
	size_t n, cap, samples;
	size_t *slots; /* series index + 1, open addressing on the key's hash */
	size_t nslots;
};

struct push_request *push_request_new(void)
{
	return calloc(1, sizeof(struct push_request));
}

static void series_free(struct series *s)
{
	for (size_t i = 0; i < s->ts.n_labels; i++) {
		free(s->labels[i].name);
		free(s->labels[i].value);
	}
	free(s->labels);
	free(s->label_ptrs);
	free(s->samples);
	free(s->sample_ptrs);
	free(s->key);
}

void push_request_reset(struct push_request *r)
{
	for (size_t i = 0; i < r->n; i++)
		series_free(&r->series[i]);
	r->n = 0;
	r->samples = 0;
	if (r->slots)
		memset(r->slots, 0, r->nslots * sizeof(*r->slots));
}

void push_request_free(struct push_request *r)
{
	if (!r)
		return;
	push_request_reset(r);
	free(r->series);
	free(r->slots);
	free(r);
}

size_t push_request_series(const struct push_request *r)
{
	return r->n;
}

size_t push_request_samples(const struct push_request *r)
{
	return r->samples;
}

static size_t *slot(struct push_request *r, const char *key)
{
	size_t mask = r->nslots - 1, i = (size_t)XXH3_64bits(key, strlen(key)) & mask;

	while (r->slots[i] && strcmp(r->series[r->slots[i] - 1].key, key))
		i = (i + 1) & mask;
	return &r->slots[i];
}

static int grow_slots(struct push_request *r)
{
	size_t n = r->nslots ? 2 * r->nslots : 1024;
	size_t *old = r->slots, oldn = r->nslots;

	if (!(r->slots = calloc(n, sizeof(*r->slots)))) {
		r->slots = old;
		return -ENOMEM;
	}
	r->nslots = n;
	for (size_t i = 0; i < r->n; i++)
		*slot(r, r->series[i].key) = i + 1;
	(void)oldn;
	free(old);
	return 0;
}

/* The series of @s, new when the batch has none yet. */
static struct series *series_of(struct push_request *r, const struct push_sample *s)
{
	struct series *x;
	size_t *sl;

	if ((r->n + 1) * 2 > r->nslots && grow_slots(r) < 0)
		return NULL;
	sl = slot(r, s->key);
	if (*sl)
		return &r->series[*sl - 1];
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		struct series *v = realloc(r->series, cap * sizeof(*v));

		if (!v)
			return NULL;
		r->series = v;
		r->cap = cap;
		for (size_t i = 0; i < r->n; i++) /* the pointers protobuf-c follows moved */
			r->series[i].ts.labels = r->series[i].label_ptrs;
	}
	x = &r->series[r->n];
	memset(x, 0, sizeof(*x));
	prometheus__time_series__init(&x->ts);
	x->key = strdup(s->key);
	x->labels = calloc(s->nlabels, sizeof(*x->labels));
	x->label_ptrs = calloc(s->nlabels, sizeof(*x->label_ptrs));
	if (!x->key || !x->labels || !x->label_ptrs) {
		series_free(x);
		return NULL;
	}
	for (size_t i = 0; i < s->nlabels; i++) {
		prometheus__label__init(&x->labels[i]);
		x->labels[i].name = strdup(s->labels[i].name);
		x->labels[i].value = strdup(s->labels[i].value);
		x->label_ptrs[i] = &x->labels[i];
		x->ts.n_labels = i + 1;
		if (!x->labels[i].name || !x->labels[i].value) {
			series_free(x);
			return NULL;
		}
	}
	x->ts.labels = x->label_ptrs;
	*sl = ++r->n;
	return x;
}

int push_request_add(struct push_request *r, const struct push_sample *s, size_t n, int64_t ts_ms)
{
	for (size_t i = 0; i < n; i++) {
		struct series *x = series_of(r, &s[i]);

		if (!x)
			return -ENOMEM;
		if (x->nsamples == x->cap) {
			size_t cap = x->cap ? 2 * x->cap : 4;
			Prometheus__Sample *v = realloc(x->samples, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			x->samples = v;
			x->cap = cap;
		}
		prometheus__sample__init(&x->samples[x->nsamples]);
		x->samples[x->nsamples].value = s[i].value;
		x->samples[x->nsamples].timestamp = ts_ms;
		x->nsamples++;
		r->samples++;
	}
	return 0;
}

int push_request_encode(const struct push_request *r, void **ret, size_t *ret_len)
{
	Prometheus__WriteRequest wr = PROMETHEUS__WRITE_REQUEST__INIT;
	Prometheus__TimeSeries **ts = calloc(r->n ? r->n : 1, sizeof(*ts));
	uint8_t *raw = NULL;
	char *out = NULL;
	size_t len, olen;
	int e = -ENOMEM;

	if (!ts)
		return -ENOMEM;
	for (size_t i = 0; i < r->n; i++) {
		struct series *x = &r->series[i];

		free(x->sample_ptrs);
		if (!(x->sample_ptrs = malloc((x->nsamples ? x->nsamples : 1) * sizeof(*x->sample_ptrs))))
			goto out;
		for (size_t k = 0; k < x->nsamples; k++)
			x->sample_ptrs[k] = &x->samples[k];
		x->ts.samples = x->sample_ptrs;
		x->ts.n_samples = x->nsamples;
		x->ts.labels = x->label_ptrs;
		ts[i] = &x->ts;
	}
	wr.timeseries = ts;
	wr.n_timeseries = r->n;
	len = prometheus__write_request__get_packed_size(&wr);
	olen = snappy_max_compressed_length(len);
	if (!(raw = malloc(len ? len : 1)) || !(out = malloc(olen)))
		goto out;
	prometheus__write_request__pack(&wr, raw);
	if (snappy_compress((const char *)raw, len, out, &olen) != SNAPPY_OK) {
		e = -EIO;
		goto out;
	}
	*ret = out;
	*ret_len = olen;
	out = NULL;
	e = 0;
out:
	free(out);
	free(raw);
	free(ts);
	return e;
}

/* ---- HTTP ---- */

struct push_http {
	CURL *c;
	struct curl_slist *headers;
	char *auth;
	uint64_t retry_after_s;
};

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p, (void)arg;
	return size * n;
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

struct push_http *push_http_new(const char *url, long timeout_ms, const char *const *headers,
				const char *bearer_token)
{
	struct push_http *h = calloc(1, sizeof(*h));
	static const char *const fixed[] = { "Content-Encoding: snappy",
					     "Content-Type: application/x-protobuf",
					     "User-Agent: kepler-push/0.1.0",
					     "X-Prometheus-Remote-Write-Version: 0.1.0" };

	if (!h || !(h->c = curl_easy_init())) {
		free(h);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		h->headers = curl_slist_append(h->headers, fixed[i]);
	for (size_t i = 0; headers && headers[i]; i++)
		h->headers = curl_slist_append(h->headers, headers[i]);
	if (bearer_token && *bearer_token) {
		size_t n = strlen(bearer_token) + 32;

		if ((h->auth = malloc(n))) {
			snprintf(h->auth, n, "Authorization: Bearer %s", bearer_token);
			h->headers = curl_slist_append(h->headers, h->auth);
		}
	}
	curl_easy_setopt(h->c, CURLOPT_URL, url);
	curl_easy_setopt(h->c, CURLOPT_HTTPHEADER, h->headers);
	curl_easy_setopt(h->c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h->c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h->c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
	curl_easy_setopt(h->c, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(h->c, CURLOPT_WRITEFUNCTION, discard);
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
