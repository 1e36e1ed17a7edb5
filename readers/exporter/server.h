/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/exporter/server.h: the HTTP side of kepler-exporter
 * (libmicrohttpd): `/metrics`, `/healthz` and `/`, GET and HEAD only,
 * optional TLS and basic auth from the web config file. Scrapes are
 * answered from the current exposition (see exposition.h); nothing is
 * read from the store on a request. A newer snapshot waits unrendered
 * until a scrape asks the main thread to render it (wake_fd) and waits for
 * it, at most 2 s; scrapes that ask meanwhile wait for the same rendering.
 */
#ifndef KEPLER_EXPORTER_SERVER_H
#define KEPLER_EXPORTER_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exposition.h"
#include "kepler/error.h"
#include "webconfig.h"

/* What the requests see; written by the main loop, read by the server's threads. */
struct kepler_exporter_state {
	pthread_mutex_t lock;
	struct kepler_exposition *current; /* never NULL once started */
	char problem[512];                 /* why there is no fresh data ("" when the store reads fine) */
	uint64_t staleness_ns;             /* /healthz: newest snapshot older than this is stale */
	/* Render on demand: a new snapshot waits (pending_seq) until a scrape asks for it. */
	uint64_t pending_seq;     /* a newer snapshot not rendered yet; 0: none */
	uint64_t pending_wall_ns; /* its time (for /healthz) */
	int wake_fd;              /* eventfd: a scrape wants pending_seq rendered */
	pthread_cond_t rendered;  /* signalled when pending_seq is rendered */
};

/* Replace the current exposition (takes over the caller's reference). */
void kepler_exporter_publish(struct kepler_exporter_state *st, struct kepler_exposition *e);

struct kepler_server;

/*
 * Listen on @listen ("HOST:PORT", ":PORT" for every address, "[V6]:PORT")
 * and serve @st in background threads. @web must outlive the server.
 * Errors: -EINVAL (bad address), -EADDRINUSE and other socket errors,
 * -ENOTSUP (TLS asked but libmicrohttpd lacks it).
 */
int kepler_server_start(const char *listen, struct kepler_web_config *web, struct kepler_exporter_state *st,
			struct kepler_server **ret, struct kepler_error *err);
/* The port actually bound (for ":0"). */
unsigned kepler_server_port(const struct kepler_server *s);

/* -EINVAL, with the forms accepted, unless @addr is HOST:PORT, :PORT or [IPV6]:PORT. */
int kepler_server_check_address(const char *addr, struct kepler_error *err);

/*
 * The URL of /metrics for a server listening on @addr at @port, one a
 * browser can open: "localhost" (and a note) for every address.
 */
void kepler_server_url(const char *addr, bool tls, unsigned port, char *buf, size_t size);
/* Stop serving and free. Accepts NULL. */
void kepler_server_stop(struct kepler_server *s);

#endif /* KEPLER_EXPORTER_SERVER_H */
