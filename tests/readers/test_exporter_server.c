// SPDX-License-Identifier: Apache-2.0
/*
 * The exporter's request handling (readers/exporter/server.c, exposition.c)
 * in one process: the real server on a loopback port, asked over a socket.
 * Paths and methods, /healthz's answers (no snapshot, fresh, stale, a
 * problem), gzip (the shared body after its per-scrape head), a snapshot
 * rendered on demand, and basic auth with its back-off. The exporter as a
 * whole (the binary, TLS, promtool, attacks) is test_exporter.sh's and
 * test_exporter_attack.sh's.
 */
#include <arpa/inet.h>
#include <crypt.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "exposition.h"
#include "kepler_test.h"
#include "server.h"
#include "snapshot_fixture.h"
#include "webconfig.h"

struct reply {
	int status;
	char headers[4096];
	char *body; /* NUL-terminated; may hold NULs (gzip): see len */
	size_t len;
};

static void reply_free(struct reply *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* One request on its own connection (Connection: close); @extra: more header lines, each ending \r\n. */
static void ask(unsigned port, const char *method, const char *path, const char *extra, struct reply *r)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	char req[1024];
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap), *end;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ssize_t got;

	assert_non_null(buf);
	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		fail_msg("connect to 127.0.0.1:%u: %s", port, strerror(errno));
	snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n", method,
		 path, extra ? extra : "");
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while ((got = read(fd, buf + n, cap - n - 1)) > 0) {
		n += (size_t)got;
		if (n + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	close(fd);
	buf[n] = '\0';
	memset(r, 0, sizeof(*r));
	if (sscanf(buf, "HTTP/1.1 %d", &r->status) != 1)
		fail_msg("no status line in: %.200s", buf);
	end = strstr(buf, "\r\n\r\n");
	assert_non_null(end);
	snprintf(r->headers, sizeof(r->headers), "%.*s", (int)(end - buf), buf);
	r->len = n - (size_t)(end + 4 - buf);
	r->body = malloc(r->len + 1);
	assert_non_null(r->body);
	memcpy(r->body, end + 4, r->len);
	r->body[r->len] = '\0';
	free(buf);
}

/* The value of header @name (case-insensitive) into @out, or false. */
static bool header(const struct reply *r, const char *name, char *out, size_t size)
{
	const char *p = r->headers;
	size_t len = strlen(name);

	while ((p = strstr(p, "\r\n"))) {
		p += 2;
		if (!strncasecmp(p, name, len) && p[len] == ':') {
			const char *v = p + len + 1, *e;

			v += strspn(v, " ");
			e = strstr(v, "\r\n");
			snprintf(out, size, "%.*s", (int)(e ? e - v : (ptrdiff_t)strlen(v)), v);
			return true;
		}
	}
	return false;
}

struct rig {
	struct kepler_exporter_state st;
	struct kepler_web_config web;
	struct kepler_server *server;
	struct fixture fx;
	unsigned port;
};

/* A rendered exposition of the fixture snapshot as of @seq, taken @age_s seconds ago. */
static struct kepler_exposition *render(struct rig *g, uint64_t seq, double age_s)
{
	struct kepler_prom_options opts = { .levels = ~0u, .node_name = "node-a" };
	struct kepler_exposition *e;
	struct kepler_error err = { 0 };

	g->fx.snap.seq = seq;
	g->fx.snap.wall_ns = now_ns() - (uint64_t)(age_s * 1e9);
	KEPLER_OK(kepler_exposition_new(&g->fx.snap, &opts, &e, &err));
	return e;
}

/* The server with web config @web_yml (NULL: none), serving the build info only. */
static struct rig *rig_start(const char *web_yml)
{
	struct rig *g = calloc(1, sizeof(*g));
	struct kepler_prom_options opts = { .levels = ~0u };
	struct kepler_exposition *e;
	struct kepler_error err = { 0 };
	char path[] = "/tmp/kepler-web-XXXXXX";
	pthread_condattr_t ca;

	assert_non_null(g);
	pthread_mutex_init(&g->st.lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(
		&ca, CLOCK_MONOTONIC); /* as the exporter's main: the server waits on that clock */
	pthread_cond_init(&g->st.rendered, &ca);
	pthread_condattr_destroy(&ca);
	g->st.staleness_ns = 15000000000ULL;
	g->st.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(g->st.wake_fd >= 0);
	if (web_yml) {
		int fd = mkstemp(path);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, web_yml, strlen(web_yml)), (ssize_t)strlen(web_yml));
		close(fd);
		KEPLER_OK(kepler_web_config_load(path, geteuid(), &g->web, &err));
		unlink(path);
	} else {
		KEPLER_OK(kepler_web_config_load(NULL, geteuid(), &g->web, &err));
	}
	KEPLER_OK(kepler_exposition_new(NULL, &opts, &e, &err));
	kepler_exporter_publish(&g->st, e);
	KEPLER_OK(kepler_server_start("127.0.0.1:0", &g->web, &g->st, &g->server, &err));
	g->port = kepler_server_port(g->server);
	assert_true(g->port > 0);
	fixture_build(&g->fx, 20, 7);
	return g;
}

static void rig_stop(struct rig *g)
{
	kepler_server_stop(g->server);
	kepler_exposition_unref(g->st.current);
	kepler_web_config_done(&g->web);
	close(g->st.wake_fd);
	fixture_free(&g->fx);
	free(g);
}

static void test_paths_and_methods(void **state)
{
	struct rig *g = rig_start(NULL);
	struct reply r;
	char v[256];

	(void)state;
	ask(g->port, "GET", "/metrics", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(header(&r, "Content-Type", v, sizeof(v)));
	assert_non_null(strstr(v, "text/plain; version=0.0.4"));
	assert_non_null(strstr(r.body, "kepler_build_info{"));
	assert_null(strstr(r.body, "kepler_node_cpu_joules_total")); /* no snapshot yet */
	reply_free(&r);

	ask(g->port, "HEAD", "/metrics", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, 0);
	reply_free(&r);

	ask(g->port, "GET", "/", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "href=\"metrics\""));
	reply_free(&r);

	ask(g->port, "POST", "/metrics", "Content-Length: 0\r\n", &r);
	assert_int_equal(r.status, 405);
	assert_true(header(&r, "Allow", v, sizeof(v)));
	assert_string_equal(v, "GET, HEAD");
	reply_free(&r);

	ask(g->port, "GET", "/metrics/../etc/passwd", NULL, &r);
	assert_int_equal(r.status, 404);
	reply_free(&r);
	ask(g->port, "GET", "/nope", NULL, &r);
	assert_int_equal(r.status, 404);
	reply_free(&r);
	rig_stop(g);
}

static void test_healthz(void **state)
{
	struct rig *g = rig_start(NULL);
	struct reply r;

	(void)state;
	ask(g->port, "GET", "/healthz", NULL, &r);
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "no snapshot in the store yet"));
	reply_free(&r);

	kepler_exporter_publish(&g->st, render(g, 41, 1));
	ask(g->port, "GET", "/healthz", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "ok: snapshot 41"));
	reply_free(&r);
	ask(g->port, "GET", "/metrics", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "kepler_node_cpu_joules_total{"));
	assert_non_null(strstr(r.body, "node_name=\"node-a\""));
	reply_free(&r);

	kepler_exporter_publish(&g->st, render(g, 42, 60)); /* a minute old: past 15 s */
	ask(g->port, "GET", "/healthz", NULL, &r);
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "stale: the newest snapshot (seq 42)"));
	reply_free(&r);

	kepler_exporter_publish(&g->st, render(g, 43, 1));
	pthread_mutex_lock(&g->st.lock);
	snprintf(g->st.problem, sizeof(g->st.problem), "the store was replaced");
	pthread_mutex_unlock(&g->st.lock);
	ask(g->port, "GET", "/healthz", NULL, &r);
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "the store was replaced (serving snapshot 43)"));
	reply_free(&r);
	rig_stop(g);
}

/* Inflate a whole gzip member; the text, NUL-terminated. */
static char *gunzip(const struct reply *r, size_t *out_len)
{
	z_stream z = { 0 };
	size_t cap = 4 << 20;
	char *out = malloc(cap);
	int rc;

	assert_non_null(out);
	assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
	z.next_in = (unsigned char *)r->body;
	z.avail_in = (uInt)r->len;
	z.next_out = (unsigned char *)out;
	z.avail_out = (uInt)cap - 1;
	rc = inflate(&z, Z_FINISH);
	if (rc != Z_STREAM_END) /* the CRC and length of head + body checked by zlib */
		fail_msg("gzip body: inflate returned %d (%s)", rc, z.msg ? z.msg : "");
	assert_int_equal(z.avail_in, 0);
	*out_len = z.total_out;
	out[z.total_out] = '\0';
	inflateEnd(&z);
	return out;
}

static void test_gzip(void **state)
{
	struct rig *g = rig_start(NULL);
	struct kepler_exposition *e = render(g, 7, 1);
	struct reply r;
	size_t len;
	char v[64], *text;

	(void)state;
	kepler_exposition_ref(e);
	kepler_exporter_publish(&g->st, e);
	for (int i = 0; i < 2; i++) { /* the second answer comes from the compressed body kept */
		ask(g->port, "GET", "/metrics", "Accept-Encoding: deflate, gzip;q=0.9\r\n", &r);
		assert_int_equal(r.status, 200);
		assert_true(header(&r, "Content-Encoding", v, sizeof(v)));
		assert_string_equal(v, "gzip");
		assert_true(header(&r, "Vary", v, sizeof(v)));
		text = gunzip(&r, &len);
		/* this scrape's head (the snapshot's age, the exporter's own figures), then the rendered body */
		assert_true(len > e->text.len);
		assert_memory_equal(text + len - e->text.len, e->text.data, e->text.len);
		assert_true(!strncmp(text, "# HELP kepler_snapshot_age_seconds ", 35));
		/* the compressed body is the exposition's one compression, sent as it is */
		assert_true(e->gz_done);
		assert_non_null(memmem(r.body, r.len, e->gz.data, e->gz.len));
		free(text);
		reply_free(&r);
	}
	ask(g->port, "GET", "/metrics", "Accept-Encoding: gzip;q=0\r\n", &r); /* refused: plain */
	assert_false(header(&r, "Content-Encoding", v, sizeof(v)));
	assert_true(r.len > e->text.len);
	assert_memory_equal(r.body + r.len - e->text.len, e->text.data, e->text.len);
	reply_free(&r);
	kepler_exposition_unref(e);
	rig_stop(g);
}

/* A head of any length before the compressed body: none, one stored block, several (65,535 bytes each at most). */
static void test_gzip_heads(void **state)
{
	struct rig *g = rig_start(NULL);
	struct kepler_exposition *e = render(g, 7, 1);
	static const size_t lens[] = { 0, 1, 65535, 65536, 200001 };

	(void)state;
	assert_int_equal(kepler_exposition_gzip(e), 0);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct kepler_buf body = KEPLER_BUF_INIT, trailer = KEPLER_BUF_INIT;
		char *head = malloc(lens[i] + 1), *text;
		struct reply r = { 0 };
		size_t len;

		assert_non_null(head);
		for (size_t k = 0; k < lens[i]; k++)
			head[k] = (char)('a' + k % 26);
		kepler_exposition_gzip_head(head, lens[i], &body);
		kepler_buf_add(&body, e->gz.data, e->gz.len);
		kepler_exposition_gzip_trailer(e, head, lens[i], &trailer);
		kepler_buf_add(&body, trailer.data, trailer.len);
		assert_int_equal(body.error, 0);
		r.body = body.data, r.len = body.len;
		text = gunzip(&r, &len);
		assert_int_equal(len, lens[i] + e->text.len);
		assert_memory_equal(text, head, lens[i]);
		assert_memory_equal(text + lens[i], e->text.data, e->text.len);
		free(text);
		free(head);
		kepler_buf_free(&body);
		kepler_buf_free(&trailer);
	}
	kepler_exposition_unref(e);
	rig_stop(g);
}

/* The main loop's part in rendering on demand: woken by a scrape, it publishes the pending snapshot. */
struct renderer {
	struct rig *g;
	int woken;
};

static void *renderer_main(void *arg)
{
	struct renderer *rd = arg;
	struct rig *g = rd->g;
	struct pollfd p = { .fd = g->st.wake_fd, .events = POLLIN };
	uint64_t n;

	if (poll(&p, 1, 30000) != 1 || read(g->st.wake_fd, &n, sizeof(n)) != sizeof(n))
		return NULL;
	rd->woken = 1;
	kepler_exporter_publish(&g->st, render(g, 9, 1));
	pthread_mutex_lock(&g->st.lock);
	g->st.pending_seq = 0;
	pthread_cond_broadcast(&g->st.rendered);
	pthread_mutex_unlock(&g->st.lock);
	return NULL;
}

static void test_render_on_demand(void **state)
{
	struct rig *g = rig_start(NULL);
	struct renderer rd = { .g = g };
	pthread_t t;
	struct reply r;

	(void)state;
	kepler_exporter_publish(&g->st, render(g, 8, 1));
	pthread_mutex_lock(&g->st.lock);
	g->st.pending_seq = 9; /* arrived, not rendered: nobody scraped 8 */
	g->st.pending_wall_ns = now_ns();
	pthread_mutex_unlock(&g->st.lock);
	assert_int_equal(pthread_create(&t, NULL, renderer_main, &rd), 0);
	ask(g->port, "GET", "/metrics", NULL, &r);
	pthread_join(t, NULL);
	assert_int_equal(rd.woken, 1);
	assert_int_equal(r.status, 200);
	if (!strstr(r.body, "kepler_snapshot_seq{node_name=\"node-a\"} 9"))
		fail_msg("not the pending snapshot: %.300s", strstr(r.body, "kepler_snapshot_seq{")
								     ? strstr(r.body, "kepler_snapshot_seq{")
								     : r.body);
	reply_free(&r);
	rig_stop(g);
}

static void test_basic_auth(void **state)
{
	char salt[CRYPT_GENSALT_OUTPUT_SIZE], yml[300], v[64];
	struct crypt_data cd;
	struct reply r;
	struct rig *g;
	int i;

	(void)state;
	memset(&cd, 0, sizeof(cd));
	assert_non_null(crypt_gensalt_rn("$2b$", 4, NULL, 0, salt, sizeof(salt)));
	assert_non_null(crypt_rn("s3cret!", salt, &cd, sizeof(cd)));
	snprintf(yml, sizeof(yml), "basic_auth_users:\n  alice: %s\n", cd.output);
	g = rig_start(yml);

	ask(g->port, "GET", "/metrics", NULL, &r); /* no credentials: a challenge */
	assert_int_equal(r.status, 401);
	assert_true(header(&r, "WWW-Authenticate", v, sizeof(v)));
	assert_non_null(strstr(v, "Basic realm="));
	reply_free(&r);
	/* alice:s3cret! */
	ask(g->port, "GET", "/metrics", "Authorization: Basic YWxpY2U6czNjcmV0IQ==\r\n", &r);
	assert_int_equal(r.status, 200);
	reply_free(&r);
	/*
	 * alice:wrong, until this address is told to wait: the first failure
	 * makes it wait 100 ms and each doubles it, so within 12 the wait is
	 * minutes, however slow this machine is.
	 */
	for (i = 0; i < 12; i++) {
		ask(g->port, "GET", "/metrics", "Authorization: Basic YWxpY2U6d3Jvbmc=\r\n", &r);
		if (r.status == 429)
			break;
		assert_int_equal(r.status, 401);
		reply_free(&r);
	}
	if (i == 12)
		fail_msg("12 wrong passwords in a row and never a 429");
	assert_true(header(&r, "Retry-After", v, sizeof(v)));
	assert_true(atoi(v) >= 1);
	reply_free(&r);
	/* a login known good passes during the back-off (no bcrypt for it) */
	ask(g->port, "GET", "/metrics", "Authorization: Basic YWxpY2U6czNjcmV0IQ==\r\n", &r);
	assert_int_equal(r.status, 200);
	reply_free(&r);
	/* /healthz and / are behind the same login */
	ask(g->port, "GET", "/healthz", NULL, &r);
	assert_int_equal(r.status, 401);
	reply_free(&r);
	rig_stop(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths_and_methods),
		cmocka_unit_test(test_healthz),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_gzip_heads),
		cmocka_unit_test(test_render_on_demand),
		cmocka_unit_test(test_basic_auth),
	};

	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
