// SPDX-License-Identifier: Apache-2.0
/* The exporter's HTTP server: see server.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kepler/clock.h"
#include "kepler/log.h"
#include "kepler/version.h"

#include "backoff.h"
#include "conn_guard.h"
#include "listen.h"
#include "self.h"
#include "server.h"

/* libmicrohttpd changed the handler's return type in 0.9.71 */
#if MHD_VERSION >= 0x00097002
#define MHD_RESULT enum MHD_Result
#else
#define MHD_RESULT int
#endif

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define REALM "kepler-exporter"

/*
 * Connections one client address may hold (128): Prometheus needs one per
 * target (two for an HA pair); a flood from one address (slow headers, a
 * connection storm) fills its own share, not the whole server's 1000.
 */
#define PER_IP_CONNECTIONS 128

/*
 * Every connection brings a complete request within 10 s of opening, and a
 * kept-alive one its next within 120 s (a trickle of header bytes does not
 * reset either, as it does libmicrohttpd's idle timeout); above 800 connections of the
 * 1,000, those waiting longest for a request, over 250 ms, are closed
 * until 600 remain (a client's request is whole within milliseconds).
 */
#define REQUEST_DEADLINE_NS 10000000000ULL
/* a kept-alive connection: its next request within 2 minutes (a scrape interval), evicted first under load */
#define IDLE_DEADLINE_S 120
#define HIGH_WATER 800
#define LOW_WATER 600
#define EVICT_AFTER_NS 250000000ULL

/* HTTP keep-alive while at most this many connections are open (see add_headers) */
#define KEEPALIVE_MAX_OPEN 8

struct kepler_server {
	struct MHD_Daemon *daemon;
	struct kepler_web_config *web;
	struct kepler_backoff *backoff;  /* failed logins, per client address */
	atomic_uint checking;            /* passwords being checked (bcrypt) now */
	unsigned max_checking;           /* at most: half the CPUs, at least 1 */
	struct kepler_conn_guard *guard; /* slow requests */
	pthread_mutex_t log_lock;
	uint64_t last_fail_log_ns; /* failed logins are logged at most once a second */
	struct kepler_exporter_state *st;
	int fd;
	unsigned port;
};

void kepler_exporter_publish(struct kepler_exporter_state *st, struct kepler_exposition *e)
{
	struct kepler_exposition *old;

	pthread_mutex_lock(&st->lock);
	old = st->current;
	st->current = e;
	pthread_mutex_unlock(&st->lock);
	kepler_exposition_unref(old);
}

/* A scrape: the pending snapshot rendered first (waited for, at most 2 s), then the current. */
static void want_newest(struct kepler_exporter_state *st)
{
	struct timespec deadline;
	uint64_t one = 1;

	pthread_mutex_lock(&st->lock);
	if (st->pending_seq && st->wake_fd >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += 2;
		if (write(st->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			kepler_debug("cannot wake the main thread: %s", strerror(errno));
		while (st->pending_seq &&
		       pthread_cond_timedwait(&st->rendered, &st->lock, &deadline) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&st->lock);
}

static struct kepler_exposition *acquire(struct kepler_exporter_state *st, char *problem, size_t size,
					 uint64_t *staleness_ns)
{
	struct kepler_exposition *e;

	pthread_mutex_lock(&st->lock);
	e = st->current;
	kepler_exposition_ref(e);
	if (problem)
		snprintf(problem, size, "%s", st->problem);
	if (staleness_ns)
		*staleness_ns = st->staleness_ns;
	pthread_mutex_unlock(&st->lock);
	return e;
}

static double age_of(const struct kepler_exposition *e)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec - (double)e->wall_ns) / 1e9;
}

/*
 * http_server_config.headers, on every response; and Connection: close
 * when more than KEEPALIVE_MAX_OPEN connections are open. Kept alive under
 * a load of large responses (wrk, 64 connections, 10,000 processes),
 * libmicrohttpd serves the connections unfairly: 19 requests waited past
 * 10 s. Prometheus (one connection per target, two for an HA pair) keeps
 * its connection; a crowd reconnects, and waits in the accept queue in
 * order.
 */
static void add_headers(const struct kepler_server *s, struct MHD_Response *r)
{
	for (size_t i = 0; s->web && i < s->web->nheaders; i++)
		MHD_add_response_header(r, s->web->headers[i].name, s->web->headers[i].value);
	if (kepler_conn_guard_open(s->guard) > KEEPALIVE_MAX_OPEN)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
}

static MHD_RESULT send_text(const struct kepler_server *s, struct MHD_Connection *c, unsigned status,
			    const char *type, const char *text)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	MHD_RESULT ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	add_headers(s, r);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* What the request's headers say of its body's framing. */
struct framing {
	unsigned lengths; /* Content-Length headers */
	bool bad_length;  /* one that is not a plain decimal */
	bool chunked;     /* Transfer-Encoding given */
};

static MHD_RESULT count_framing(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct framing *f = cls;

	(void)kind;
	if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
		f->lengths++;
		f->bad_length |= !value || !*value || strspn(value, "0123456789") != strlen(value) ||
				 strlen(value) > 18;
	} else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
		f->chunked = true;
	}
	return MHD_YES;
}

/*
 * A request whose body's length two parts of the chain could read
 * differently (two Content-Length headers, Content-Length with
 * Transfer-Encoding, a malformed Content-Length) is how requests are
 * smuggled past a proxy: answered 400 and the connection closed, so that
 * its body is never read as a request of its own (RFC 9112, 6.3).
 */
static bool ambiguous_framing(struct MHD_Connection *c, const char **why)
{
	struct framing f = { 0 };

	MHD_get_connection_values(c, MHD_HEADER_KIND, count_framing, &f);
	*why = f.lengths > 1            ? "two Content-Length headers"
	       : f.bad_length           ? "a malformed Content-Length"
	       : f.lengths && f.chunked ? "Content-Length with Transfer-Encoding"
					: NULL;
	return *why != NULL;
}

static MHD_RESULT refuse_framing(const struct kepler_server *s, struct MHD_Connection *c, const char *why)
{
	char text[160];
	struct MHD_Response *r;
	MHD_RESULT ret;

	snprintf(text, sizeof(text), "400 Bad Request: %s (ambiguous framing); the connection is closed\n",
		 why);
	r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	add_headers(s, r);
	ret = MHD_queue_response(c, MHD_HTTP_BAD_REQUEST, r);
	MHD_destroy_response(r);
	return ret;
}

/* Does Accept-Encoding allow gzip (and not with q=0)? */
static bool accepts_gzip(struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);

	while (h && *h) {
		size_t n;

		h += strspn(h, " \t,");
		n = strcspn(h, ",");
		if (n >= 4 && !strncasecmp(h, "gzip", 4) && (n == 4 || h[4] == ';' || h[4] == ' ')) {
			const char *q = memchr(h, ';', n);

			if (!q)
				return true;
			q += 1 + strspn(q + 1, " ");
			return !(q[0] == 'q' && q[1] == '=' && strtod(q + 2, NULL) == 0.0);
		}
		h += n;
	}
	return false;
}

struct reply {
	struct kepler_exposition *e;
	struct kepler_buf head, trailer;
};

static void reply_free(void *cls)
{
	struct reply *rp = cls;

	kepler_exposition_unref(rp->e);
	kepler_buf_free(&rp->head);
	kepler_buf_free(&rp->trailer);
	free(rp);
}

/*
 * The newest snapshot's exposition, after this scrape's own figures (the
 * snapshot's age, the exporter's process): plain, or gzip from the
 * exposition's one compression (exposition.h).
 */
static MHD_RESULT serve_metrics(struct kepler_server *s, struct MHD_Connection *c)
{
	struct reply *rp = calloc(1, sizeof(*rp));
	struct kepler_buf head = KEPLER_BUF_INIT;
	struct kepler_process_stats self;
	struct MHD_IoVec iov[3];
	unsigned niov = 0;
	struct MHD_Response *r;
	bool gz = false;
	MHD_RESULT ret;

	if (!rp)
		return MHD_NO;
	want_newest(s->st);
	rp->e = acquire(s->st, NULL, 0, NULL);
	if (rp->e->seq)
		kepler_fmt_prom_age(&head, rp->e->node_name, age_of(rp->e));
	if (kepler_self_stats(&self) == 0)
		kepler_fmt_prom_process(&head, &self);
	if (accepts_gzip(c) && kepler_exposition_gzip(rp->e) == 0) {
		gz = true;
		kepler_exposition_gzip_head(head.data ? head.data : "", head.len, &rp->head);
		kepler_exposition_gzip_trailer(rp->e, head.data ? head.data : "", head.len, &rp->trailer);
		kepler_buf_free(&head);
		iov[niov++] = (struct MHD_IoVec){ rp->head.data, rp->head.len };
		iov[niov++] = (struct MHD_IoVec){ rp->e->gz.data, rp->e->gz.len };
		iov[niov++] = (struct MHD_IoVec){ rp->trailer.data, rp->trailer.len };
	} else {
		rp->head = head;
		if (rp->head.len)
			iov[niov++] = (struct MHD_IoVec){ rp->head.data, rp->head.len };
		iov[niov++] = (struct MHD_IoVec){ rp->e->text.data, rp->e->text.len };
	}
	if (head.error || rp->head.error || rp->trailer.error) {
		reply_free(rp);
		return MHD_NO;
	}
	r = MHD_create_response_from_iovec(iov, niov, reply_free, rp);
	if (!r) {
		reply_free(rp);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, PROM_CONTENT_TYPE);
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	if (gz)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	add_headers(s, r);
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static MHD_RESULT serve_health(struct kepler_server *s, struct MHD_Connection *c)
{
	char problem[512], msg[1024];
	uint64_t staleness_ns;
	struct kepler_exposition *e = acquire(s->st, problem, sizeof(problem), &staleness_ns);
	unsigned status = MHD_HTTP_SERVICE_UNAVAILABLE;
	double age = e->seq ? age_of(e) : 0;
	uint64_t pending_wall, seq = e->seq; /* the snapshot whose age is given */
	struct timespec now;

	pthread_mutex_lock(&s->st->lock);
	pending_wall = s->st->pending_seq ? s->st->pending_wall_ns : 0;
	if (pending_wall)
		seq = s->st->pending_seq;
	pthread_mutex_unlock(&s->st->lock);
	clock_gettime(CLOCK_REALTIME, &now);
	if (pending_wall) /* a newer snapshot, not rendered because nobody scraped: the collector is alive */
		age = ((double)now.tv_sec * 1e9 + (double)now.tv_nsec - (double)pending_wall) / 1e9;

	if (problem[0] && !e->seq)
		snprintf(msg, sizeof(msg), "unavailable: %s\n", problem);
	else if (!e->seq)
		snprintf(msg, sizeof(msg), "unavailable: no snapshot in the store yet\n");
	else if (age * 1e9 > (double)staleness_ns)
		snprintf(msg, sizeof(msg),
			 "stale: the newest snapshot (seq %llu) is %.1f s old, more "
			 "than %.1f s: is kepler-collectd running?%s%s\n",
			 (unsigned long long)seq, age, (double)staleness_ns / 1e9, problem[0] ? " " : "",
			 problem);
	else if (problem[0])
		snprintf(msg, sizeof(msg), "unavailable: %s (serving snapshot %llu)\n", problem,
			 (unsigned long long)e->seq);
	else {
		status = MHD_HTTP_OK;
		snprintf(msg, sizeof(msg), "ok: snapshot %llu is %.1f s old (stale after %.1f s)\n",
			 (unsigned long long)seq, age, (double)staleness_ns / 1e9);
	}
	kepler_exposition_unref(e);
	return send_text(s, c, status, "text/plain; charset=utf-8", msg);
}

static MHD_RESULT serve_index(const struct kepler_server *s, struct MHD_Connection *c)
{
	static const char page[] =
		"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kepler-exporter</title></head>\n"
		"<body><h1>kepler-exporter " KEPLER_VERSION "</h1>\n"
		"<p>Energy of this node and of its processes, containers, VMs and pods, from the "
		"kepler-c store.</p>\n<ul>\n<li><a href=\"metrics\">/metrics</a>: Prometheus metrics</li>\n"
		"<li><a href=\"healthz\">/healthz</a>: 200 while the collector's snapshots are fresh</li>\n"
		"</ul></body></html>\n";

	return send_text(s, c, MHD_HTTP_OK, "text/html; charset=utf-8", page);
}

enum auth { AUTH_OK, AUTH_DENIED, AUTH_WAIT };

static void log_failed_login(struct kepler_server *s, const char *user, unsigned fails, uint64_t now)
{
	bool say;

	pthread_mutex_lock(&s->log_lock);
	say = now - s->last_fail_log_ns >= 1000000000ULL || !s->last_fail_log_ns;
	if (say)
		s->last_fail_log_ns = now;
	pthread_mutex_unlock(&s->log_lock);
	if (say) /* the user name is the client's text: shown escaped and cut */
		kepler_warn(
			"failed login for user '%.64s' (%u in a row from that address; it now waits before "
			"its next try; at most one such line a second)",
			user ? user : "", fails);
}

/*
 * Basic auth, with failures costing the client: a login known good (the
 * cache) passes at once; an address that failed recently is told to wait
 * (429) without bcrypt running; so is any, for a second, while as many
 * passwords as half the CPUs are being checked (1,000 addresses guessing
 * at once cannot take every CPU from the logins known good); else the
 * password is checked, and a failure makes that address wait longer
 * (backoff.h).
 */
static enum auth authorized(struct kepler_server *s, struct MHD_Connection *c, uint64_t *wait_ms)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *addr = ci ? ci->client_addr : NULL;
	char *pass = NULL, *user;
	enum auth res = AUTH_DENIED;
	uint64_t now = kepler_mono_ns();

	if (!s->web || s->web->nusers == 0)
		return AUTH_OK;
	user = MHD_basic_auth_get_username_password(c, &pass);
	if (!user || !pass) {
		res = AUTH_DENIED; /* no credentials (a browser's first try): a challenge, not a failure */
	} else if (kepler_web_config_known(s->web, user, pass)) {
		res = AUTH_OK;
	} else if ((*wait_ms = kepler_backoff_wait_ms(s->backoff, addr, now)) > 0) {
		res = AUTH_WAIT;
	} else if (atomic_fetch_add(&s->checking, 1) >= s->max_checking) {
		atomic_fetch_sub(&s->checking, 1);
		*wait_ms = 1000;
		res = AUTH_WAIT;
	} else {
		bool right = kepler_web_config_check(s->web, user, pass);

		atomic_fetch_sub(&s->checking, 1);
		if (right) {
			kepler_backoff_succeeded(s->backoff, addr);
			res = AUTH_OK;
		} else {
			log_failed_login(s, user, kepler_backoff_failed(s->backoff, addr, now), now);
		}
	}
	if (pass) {
		explicit_bzero(pass, strlen(pass));
		MHD_free(pass);
	}
	if (user)
		MHD_free(user);
	return res;
}

/* 429 with Retry-After: a client that failed a login waits before the next is checked. */
static MHD_RESULT too_soon(const struct kepler_server *s, struct MHD_Connection *c, uint64_t wait_ms)
{
	static const char msg[] = "429 Too Many Requests: a failed login from this address; wait and retry\n";
	struct MHD_Response *r =
		MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
	char retry[32];
	MHD_RESULT ret;

	if (!r)
		return MHD_NO;
	snprintf(retry, sizeof(retry), "%llu", (unsigned long long)(wait_ms + 999) / 1000);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry);
	add_headers(s, r);
	ret = MHD_queue_response(c, MHD_HTTP_TOO_MANY_REQUESTS, r);
	MHD_destroy_response(r);
	return ret;
}

static MHD_RESULT deny(const struct kepler_server *s, struct MHD_Connection *c)
{
	static const char msg[] = "401 Unauthorized\n";
	struct MHD_Response *r =
		MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
	MHD_RESULT ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	add_headers(s, r);
	ret = MHD_queue_basic_auth_fail_response(c, REALM, r);
	MHD_destroy_response(r);
	return ret;
}

/*
 * tls_server_config.client_auth_type: MHD asks for a client certificate
 * when a client CA is configured, and leaves it to us to check: require
 * one (RequireAny..., RequireAndVerify...), and verify what is given
 * against the client CA (VerifyClientCertIfGiven, RequireAndVerify...).
 */
static bool client_cert_ok(const struct kepler_server *s, struct MHD_Connection *c)
{
	enum kepler_client_auth how = s->web ? s->web->client_auth : KEPLER_CLIENT_NONE;
	const union MHD_ConnectionInfo *ci;
	gnutls_session_t tls;
	unsigned status = 0, n = 0;
	bool given;
	int r;

	if (how == KEPLER_CLIENT_NONE || how == KEPLER_CLIENT_REQUEST)
		return true;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return false;
	tls = (gnutls_session_t)ci->tls_session;
	given = gnutls_certificate_get_peers(tls, &n) != NULL && n > 0;
	if (!given)
		return how == KEPLER_CLIENT_VERIFY_IF_GIVEN;
	if (how == KEPLER_CLIENT_REQUIRE_ANY)
		return true;
	r = gnutls_certificate_verify_peers2(tls, &status);
	return r == GNUTLS_E_SUCCESS && status == 0;
}

static void *socket_context_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Connections opened and closed: the guard's list. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct kepler_server *s = cls;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci)
			kepler_conn_guard_opened(s->guard, socket_context, ci->connect_fd);
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		kepler_conn_guard_closed(s->guard, socket_context);
	}
}

/* A request answered: the connection waits for the next one, under the deadline again. */
static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode code)
{
	struct kepler_server *s = cls;

	(void)req_cls;
	(void)code;
	kepler_conn_guard_response(s->guard, socket_context_of(c));
}

static MHD_RESULT on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			     const char *version, const char *upload, size_t *upload_size, void **req_cls)
{
	struct kepler_server *s = cls;
	uint64_t wait_ms = 0;

	(void)version;
	(void)upload;
	kepler_conn_guard_request(s->guard, socket_context_of(c));
	/*
	 * The first call has the headers only: answered then, libmicrohttpd
	 * closes the connection after the response (it cannot tell whether a
	 * body follows). Answered at the second call, the connection is kept
	 * alive for the client's next request (HTTP keep-alive).
	 */
	if (!*req_cls) {
		static int headers_seen;
		const char *why;

		if (ambiguous_framing(c, &why))
			return refuse_framing(s, c, why); /* answered now: libmicrohttpd then closes */
		*req_cls = &headers_seen;
		return MHD_YES;
	}
	if (*upload_size) { /* a GET with a body: ignore the body */
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return send_text(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
				 "405 Method Not Allowed: GET or HEAD only\n");
	if (!client_cert_ok(s, c))
		return MHD_NO; /* the TLS client did not prove who it is: close, say nothing */
	switch (authorized(s, c, &wait_ms)) {
	case AUTH_DENIED: return deny(s, c);
	case AUTH_WAIT: return too_soon(s, c, wait_ms);
	case AUTH_OK: break;
	}
	if (!strcmp(url, "/metrics"))
		return serve_metrics(s, c);
	if (!strcmp(url, "/healthz"))
		return serve_health(s, c);
	if (!strcmp(url, "/"))
		return serve_index(s, c);
	return send_text(s, c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8",
			 "404 Not Found: see / for what is served\n");
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	kepler_debug("libmicrohttpd: %s", msg);
}

int kepler_server_start(const char *listen_addr, struct kepler_web_config *web,
			struct kepler_exporter_state *st, struct kepler_server **ret,
			struct kepler_error *err)
{
	/* ITC: so that MHD_quiesce_daemon() works with internal threads */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_USE_ITC;
	bool tls = web && kepler_web_config_tls(web);
	struct kepler_server *s;

	if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		return kepler_error_set(err, -ENOTSUP, "this libmicrohttpd has no TLS support");
	s = calloc(1, sizeof(*s));
	if (!s)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	s->web = web;
	s->st = st;
	s->max_checking = (unsigned)(sysconf(_SC_NPROCESSORS_ONLN) / 2);
	if (s->max_checking < 1)
		s->max_checking = 1;
	s->backoff = kepler_backoff_new();
	s->guard = kepler_conn_guard_new(&(struct kepler_conn_guard_params){
		.deadline_ns = REQUEST_DEADLINE_NS,
		.idle_deadline_ns = IDLE_DEADLINE_S * 1000000000ULL,
		.high_water = HIGH_WATER,
		.low_water = LOW_WATER,
		.evict_after_ns = EVICT_AFTER_NS,
	});
	pthread_mutex_init(&s->log_lock, NULL);
	if (!s->backoff || !s->guard) {
		kepler_backoff_free(s->backoff);
		kepler_conn_guard_free(s->guard);
		free(s);
		return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	s->fd = kepler_listen_open(listen_addr, err);
	if (s->fd < 0) {
		int r = s->fd;

		kepler_backoff_free(s->backoff);
		kepler_conn_guard_free(s->guard);
		free(s);
		return r;
	}
	s->port = kepler_listen_port(s->fd);
	if (tls)
		flags |= MHD_USE_TLS;
	{
		/* TLS: the certificate, the versions (GnuTLS priorities), the client CA (mTLS) */
		struct MHD_OptionItem tls_opts[] = {
			{ MHD_OPTION_HTTPS_MEM_CERT, 0, tls ? web->cert_pem : NULL },
			{ MHD_OPTION_HTTPS_MEM_KEY, 0, tls ? web->key_pem : NULL },
			{ MHD_OPTION_HTTPS_PRIORITIES, 0, tls ? web->priorities : NULL },
			{ tls && web->client_ca_pem ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0,
			  tls ? web->client_ca_pem : NULL },
			{ MHD_OPTION_END, 0, NULL },
		};

		s->daemon = MHD_start_daemon(
			flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
			MHD_OPTION_LISTEN_SOCKET, s->fd, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)2,
			MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_DEADLINE_S, MHD_OPTION_CONNECTION_LIMIT,
			(unsigned)1000, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)PER_IP_CONNECTIONS,
			MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_NOTIFY_COMPLETED,
			on_completed, s, tls ? MHD_OPTION_ARRAY : MHD_OPTION_END, tls_opts, MHD_OPTION_END);
	}
	if (!s->daemon) {
		close(s->fd);
		kepler_backoff_free(s->backoff);
		kepler_conn_guard_free(s->guard);
		free(s);
		return kepler_error_set(err, -EIO, "cannot start the HTTP server on %s%s", listen_addr,
					tls ? " (is the key the certificate's, unencrypted PEM?)" : "");
	}
	*ret = s;
	return 0;
}

unsigned kepler_server_port(const struct kepler_server *s)
{
	return s->port;
}

void kepler_server_stop(struct kepler_server *s)
{
	if (!s)
		return;
	/* take the listening socket back first: MHD would close it, and it is ours */
	if (MHD_quiesce_daemon(s->daemon) == s->fd)
		close(s->fd);
	MHD_stop_daemon(s->daemon);
	kepler_conn_guard_free(s->guard);
	kepler_backoff_free(s->backoff);
	pthread_mutex_destroy(&s->log_lock);
	free(s);
}
