// SPDX-License-Identifier: Apache-2.0
/*
 * rw_receiver PORT_FILE DELAY_MS [FAIL_EVERY]: a Prometheus remote-write 1.0 receiver
 * for tests/bench/bench_push_catchup.sh that takes DELAY_MS to answer each
 * request (a slow or distant receiver; requests on separate connections
 * are served at once, each on its own thread, as a real receiver's are)
 * and checks what it is sent: each request snappy-decoded and unpacked
 * with the real WriteRequest message; per series (its sorted labels), each
 * sample's timestamp must be later than the last one received (as
 * Prometheus requires: out of order or repeated is counted). It listens on
 * a free loopback port, written to PORT_FILE; GET /stats answers one JSON
 * object: requests, samples, series, out_of_order, repeated, and the
 * fewest and most samples a series received (kepler-push's own kepler_push_*
 * series aside, which come once a batch). With FAIL_EVERY, every
 * FAIL_EVERY-th request is answered 503 and not taken (the sender must send
 * it again, alone or not, without repeating what was taken).
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "remote_write.pb-c.h"

struct series {
	char *key; /* NULL: a free slot */
	int64_t last_ts;
	uint64_t count;
	bool own; /* kepler-push's own figures */
};

static struct {
	pthread_mutex_t lock;
	struct series *v;
	size_t n, cap; /* cap: a power of two */
	uint64_t requests, samples, out_of_order, repeated, bad, refused;
} st = { .lock = PTHREAD_MUTEX_INITIALIZER };

static unsigned delay_ms, fail_every;
static uint64_t arrived;

static struct series *find(const char *key)
{
	size_t i;

	if (2 * (st.n + 1) > st.cap) { /* grown at half full */
		struct series *old = st.v;
		size_t ocap = st.cap;

		st.cap = st.cap ? 2 * st.cap : 1 << 16;
		if (!(st.v = calloc(st.cap, sizeof(*st.v))))
			abort();
		for (size_t k = 0; k < ocap; k++)
			if (old[k].key) {
				for (i = XXH3_64bits(old[k].key, strlen(old[k].key)) & (st.cap - 1);
				     st.v[i].key; i = (i + 1) & (st.cap - 1))
					;
				st.v[i] = old[k];
			}
		free(old);
	}
	for (i = XXH3_64bits(key, strlen(key)) & (st.cap - 1); st.v[i].key; i = (i + 1) & (st.cap - 1))
		if (!strcmp(st.v[i].key, key))
			return &st.v[i];
	if (!(st.v[i].key = strdup(key)))
		abort();
	st.v[i].last_ts = INT64_MIN;
	st.n++;
	return &st.v[i];
}

/* One request's body: decoded and checked, under the lock. */
static void take(const char *body, size_t len)
{
	size_t raw_len, klen;
	char *raw, key[8192];
	Prometheus__WriteRequest *wr;

	if (snappy_uncompressed_length(body, len, &raw_len) != SNAPPY_OK || !(raw = malloc(raw_len + 1))) {
		st.bad++;
		return;
	}
	if (snappy_uncompress(body, len, raw, &raw_len) != SNAPPY_OK ||
	    !(wr = prometheus__write_request__unpack(NULL, raw_len, (const uint8_t *)raw))) {
		free(raw);
		st.bad++;
		return;
	}
	st.requests++;
	for (size_t i = 0; i < wr->n_timeseries; i++) {
		const Prometheus__TimeSeries *t = wr->timeseries[i];
		struct series *s;

		klen = 0;
		for (size_t l = 0; l < t->n_labels && klen < sizeof(key) - 1; l++)
			klen += (size_t)snprintf(key + klen, sizeof(key) - klen, "%s=%s,", t->labels[l]->name,
						 t->labels[l]->value);
		s = find(key);
		s->own = strstr(key, "__name__=kepler_push_") != NULL;
		for (size_t k = 0; k < t->n_samples; k++) {
			int64_t ts = t->samples[k]->timestamp;

			st.samples++;
			s->count++;
			if (ts == s->last_ts)
				st.repeated++;
			else if (ts < s->last_ts)
				st.out_of_order++;
			else
				s->last_ts = ts;
		}
	}
	prometheus__write_request__free_unpacked(wr, NULL);
	free(raw);
}

struct upload {
	char *data;
	size_t len, cap;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *text)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret = MHD_queue_response(c, code, r);

	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result stats(struct MHD_Connection *c)
{
	char out[512];
	uint64_t fewest = UINT64_MAX, most = 0;

	pthread_mutex_lock(&st.lock);
	for (size_t i = 0; i < st.cap; i++)
		if (st.v[i].key && !st.v[i].own) {
			fewest = st.v[i].count < fewest ? st.v[i].count : fewest;
			most = st.v[i].count > most ? st.v[i].count : most;
		}
	snprintf(out, sizeof(out),
		 "{\"requests\":%llu,\"samples\":%llu,\"series\":%zu,\"out_of_order\":%llu,\"repeated\":%llu,"
		 "\"bad\":%llu,\"refused\":%llu,\"fewest\":%llu,\"most\":%llu}\n",
		 (unsigned long long)st.requests, (unsigned long long)st.samples, st.n,
		 (unsigned long long)st.out_of_order, (unsigned long long)st.repeated,
		 (unsigned long long)st.bad, (unsigned long long)st.refused,
		 (unsigned long long)(fewest == UINT64_MAX ? 0 : fewest), (unsigned long long)most);
	pthread_mutex_unlock(&st.lock);
	return reply(c, 200, out);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *data, size_t *size, void **ctx)
{
	struct upload *u = *ctx;

	(void)cls;
	(void)version;
	if (!strcmp(method, "GET"))
		return !strcmp(url, "/stats") ? stats(c) : reply(c, 404, "");
	if (!u) {
		if (!(u = calloc(1, sizeof(*u))))
			return MHD_NO;
		*ctx = u;
		return MHD_YES;
	}
	if (*size) {
		if (u->len + *size > u->cap) {
			u->cap = (u->len + *size) * 2;
			if (!(u->data = realloc(u->data, u->cap)))
				abort();
		}
		memcpy(u->data + u->len, data, *size);
		u->len += *size;
		*size = 0;
		return MHD_YES;
	}
	if (delay_ms) {
		struct timespec ts = { delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&st.lock);
	if (fail_every && ++arrived % fail_every == 0) {
		st.refused++;
		pthread_mutex_unlock(&st.lock);
		u->len = 0;
		return reply(c, 503, "refused, as asked");
	}
	take(u->data, u->len);
	pthread_mutex_unlock(&st.lock);
	u->len = 0;
	return reply(c, 204, "");
}

static void done(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode why)
{
	struct upload *u = *ctx;

	(void)cls;
	(void)c;
	(void)why;
	if (u) {
		free(u->data);
		free(u);
	}
	*ctx = NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	FILE *f;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: rw_receiver PORT_FILE DELAY_MS [FAIL_EVERY]\n");
		return 2;
	}
	delay_ms = (unsigned)atoi(argv[2]);
	fail_every = argc == 4 ? (unsigned)atoi(argv[3]) : 0;
	d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
			     handle, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&lo,
			     MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
			     (unsigned)120, MHD_OPTION_END);
	if (!d || !(info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)) || !(f = fopen(argv[1], "w"))) {
		fprintf(stderr, "rw_receiver: cannot listen\n");
		return 1;
	}
	fprintf(f, "%u\n", (unsigned)info->port);
	fclose(f);
	for (;;)
		pause();
}
