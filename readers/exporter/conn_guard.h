/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/exporter/conn_guard.h: every connection must bring a complete
 * request (its headers) within a deadline of opening, and a kept-alive one
 * its next request within a longer one of its previous response; and when
 * the server fills up, the connections that have been waiting longest
 * without a complete request go first. A slow-header flood (a header line
 * every few seconds, never finished) then holds its sockets for seconds,
 * not forever, and cannot fill the server: a legitimate client's request
 * is whole within milliseconds and is never what goes.
 * libmicrohttpd 0.9 has an idle timeout only (which a trickle of bytes
 * resets), so the guard tracks connections through its notification
 * callbacks and closes the ones it condemns with shutdown(2), which
 * libmicrohttpd then sees as a closed peer.
 */
#ifndef KEPLER_READERS_CONN_GUARD_H
#define KEPLER_READERS_CONN_GUARD_H

#include <stdbool.h>
#include <stdint.h>

struct kepler_conn_guard;

struct kepler_conn_guard_params {
	uint64_t deadline_ns;      /* a complete request within this of opening (10 s) */
	uint64_t idle_deadline_ns; /* kept alive: the next request within this of a response */
	unsigned high_water;       /* above this many connections, evict ... */
	unsigned low_water;        /* ... down to this many ... */
	uint64_t evict_after_ns;   /* ... of those waiting longer than this, oldest first */
};

/* Start the guard's thread. NULL if out of memory. */
struct kepler_conn_guard *kepler_conn_guard_new(const struct kepler_conn_guard_params *p);

/* Stop the thread and free; accepts NULL. Only after the server is stopped. */
void kepler_conn_guard_free(struct kepler_conn_guard *g);

/* A connection opened (@fd) or closed; @slot is the server's per-connection pointer. */
void kepler_conn_guard_opened(struct kepler_conn_guard *g, void **slot, int fd);
void kepler_conn_guard_closed(struct kepler_conn_guard *g, void **slot);

/* Its request is complete (the handler runs); its response is done (waiting again). */
void kepler_conn_guard_request(struct kepler_conn_guard *g, void *entry);
void kepler_conn_guard_response(struct kepler_conn_guard *g, void *entry);

/* Connections open now. */
unsigned kepler_conn_guard_open(struct kepler_conn_guard *g);

/* Connections closed so far: past the deadline, evicted when full. */
void kepler_conn_guard_counts(struct kepler_conn_guard *g, uint64_t *late, uint64_t *evicted);

#endif /* KEPLER_READERS_CONN_GUARD_H */
