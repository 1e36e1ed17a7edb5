// SPDX-License-Identifier: Apache-2.0
/*
 * The connection guard (conn_guard.h). Connections are kept in a list in
 * the order they began waiting for a request (the oldest first), under one
 * mutex. The close notification and the guard's shutdown(2) take the same
 * mutex, and libmicrohttpd notifies before it closes the descriptor, so a
 * descriptor the guard shuts down is always still the connection's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "conn_guard.h"
#include "kepler/clock.h"
#include "kepler/log.h"

/* The guard looks every 20 ms when over the high water mark, 250 ms with connections open, else 5 s. */
#define TICK_FULL_NS 20000000ULL
#define TICK_OPEN_NS 250000000ULL
#define TICK_IDLE_NS 5000000000ULL

struct conn {
	struct conn *prev, *next; /* the waiting list, oldest first, or not linked */
	int fd;
	uint64_t since_ns; /* waiting for a request since */
	bool waiting, linked, shut;
	bool kept; /* has had a response: waits for the next request (keep-alive) */
};

struct kepler_conn_guard {
	struct kepler_conn_guard_params p;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	struct conn *head, *tail; /* waiting connections, oldest first */
	unsigned open;            /* connections open */
	uint64_t late, evicted, said_late, said_evicted;
	uint64_t last_log_ns;
	bool stop;
};

static void unlink_conn(struct kepler_conn_guard *g, struct conn *c)
{
	if (!c->linked)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		g->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		g->tail = c->prev;
	c->prev = c->next = NULL;
	c->linked = false;
}

static void start_waiting(struct kepler_conn_guard *g, struct conn *c)
{
	unlink_conn(g, c);
	c->waiting = true;
	c->since_ns = kepler_mono_ns();
	c->prev = g->tail;
	if (g->tail)
		g->tail->next = c;
	else
		g->head = c;
	g->tail = c;
	c->linked = true;
}

static void condemn(struct kepler_conn_guard *g, struct conn *c, uint64_t *count)
{
	shutdown(c->fd, SHUT_RDWR);
	c->shut = true;
	unlink_conn(g, c);
	(*count)++;
}

/*
 * One look: every connection past the deadline goes; above the high water
 * mark, the oldest waiting (longer than evict_after) go until the low
 * water mark, so that what waits in the listen queue is accepted at once.
 */
static void sweep(struct kepler_conn_guard *g, uint64_t now)
{
	bool evicting = g->open > g->p.high_water;
	unsigned condemned = 0;
	struct conn *c, *next;

	for (c = g->head; c; c = next) {
		uint64_t waited = now - c->since_ns;

		next = c->next;
		if (waited > (c->kept ? g->p.idle_deadline_ns : g->p.deadline_ns)) {
			condemn(g, c, &g->late);
			condemned++;
		} else if (evicting && g->open - condemned > g->p.low_water && waited > g->p.evict_after_ns) {
			condemn(g, c, &g->evicted);
			condemned++;
		}
	}
}

static void say(struct kepler_conn_guard *g, uint64_t now)
{
	if (now - g->last_log_ns < 60000000000ULL ||
	    (g->late == g->said_late && g->evicted == g->said_evicted))
		return;
	kepler_warn("closed %llu connection(s) that sent no complete request within %.0f s, and %llu "
		    "waiting ones to make room (the server was full), in the last minute: a slow-header "
		    "flood?",
		    (unsigned long long)(g->late - g->said_late), (double)g->p.deadline_ns / 1e9,
		    (unsigned long long)(g->evicted - g->said_evicted));
	g->said_late = g->late;
	g->said_evicted = g->evicted;
	g->last_log_ns = now;
}

static void *guard_main(void *arg)
{
	struct kepler_conn_guard *g = arg;

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		struct timespec until;
		uint64_t now;

		uint64_t tick = g->open > g->p.high_water ? TICK_FULL_NS
				: g->open                 ? TICK_OPEN_NS
							  : TICK_IDLE_NS;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)(tick / 1000000000ULL);
		until.tv_nsec += (long)(tick % 1000000000ULL);
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&g->wake, &g->lock, &until);
		now = kepler_mono_ns();
		sweep(g, now);
		say(g, now);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

struct kepler_conn_guard *kepler_conn_guard_new(const struct kepler_conn_guard_params *p)
{
	struct kepler_conn_guard *g = calloc(1, sizeof(*g));
	pthread_condattr_t ca;

	if (!g)
		return NULL;
	g->p = *p;
	pthread_mutex_init(&g->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
		pthread_cond_destroy(&g->wake);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return NULL;
	}
	return g;
}

void kepler_conn_guard_free(struct kepler_conn_guard *g)
{
	struct conn *c, *next;

	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = true;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
	pthread_join(g->thread, NULL);
	for (c = g->head; c; c = next) { /* none left once the server is stopped */
		next = c->next;
		free(c);
	}
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

void kepler_conn_guard_opened(struct kepler_conn_guard *g, void **slot, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));

	*slot = c;
	if (!c)
		return; /* out of memory: this one goes unguarded */
	c->fd = fd;
	pthread_mutex_lock(&g->lock);
	g->open++;
	start_waiting(g, c);
	if (g->open == 1 || g->open == g->p.high_water + 1)
		pthread_cond_signal(&g->wake); /* look sooner */
	pthread_mutex_unlock(&g->lock);
}

void kepler_conn_guard_closed(struct kepler_conn_guard *g, void **slot)
{
	struct conn *c = *slot;

	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	unlink_conn(g, c);
	g->open--;
	pthread_mutex_unlock(&g->lock);
	free(c);
	*slot = NULL;
}

void kepler_conn_guard_request(struct kepler_conn_guard *g, void *entry)
{
	struct conn *c = entry;

	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	if (c->waiting && !c->shut) {
		c->waiting = false;
		unlink_conn(g, c);
	}
	pthread_mutex_unlock(&g->lock);
}

void kepler_conn_guard_response(struct kepler_conn_guard *g, void *entry)
{
	struct conn *c = entry;

	if (!c)
		return;
	pthread_mutex_lock(&g->lock);
	if (!c->shut) {
		c->kept = true;
		start_waiting(g, c);
	}
	pthread_mutex_unlock(&g->lock);
}

void kepler_conn_guard_counts(struct kepler_conn_guard *g, uint64_t *late, uint64_t *evicted)
{
	pthread_mutex_lock(&g->lock);
	*late = g->late;
	*evicted = g->evicted;
	pthread_mutex_unlock(&g->lock);
}

unsigned kepler_conn_guard_open(struct kepler_conn_guard *g)
{
	unsigned n;

	pthread_mutex_lock(&g->lock);
	n = g->open;
	pthread_mutex_unlock(&g->lock);
	return n;
}
