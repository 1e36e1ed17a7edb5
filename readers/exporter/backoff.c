// SPDX-License-Identifier: Apache-2.0
/* Back-off of failed logins per client address: see backoff.h. */
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"

#define SLOTS 4096
#define FIRST_WAIT_NS (100ULL * 1000000ULL)
#define MAX_WAIT_NS (30ULL * 1000000000ULL)

struct slot {
	unsigned char addr[16]; /* IPv4 mapped into the last 4 bytes */
	bool used;
	unsigned fails;
	uint64_t until_ns;
};

struct kepler_backoff {
	pthread_mutex_t lock;
	struct slot slots[SLOTS];
};

struct kepler_backoff *kepler_backoff_new(void)
{
	struct kepler_backoff *b = calloc(1, sizeof(*b));

	if (b)
		pthread_mutex_init(&b->lock, NULL);
	return b;
}

void kepler_backoff_free(struct kepler_backoff *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/*
 * An IPv4 address is a client; an IPv6 one is its /64, the least a host
 * is given (one machine can use 2^64 addresses): IPv4 mapped into IPv6
 * (a dual-stack socket's) counts as IPv4.
 */
static bool key_of(const struct sockaddr *sa, unsigned char key[16])
{
	memset(key, 0, 16);
	if (sa && sa->sa_family == AF_INET) {
		memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a))
			memcpy(key + 12, a->s6_addr + 12, 4);
		else
			memcpy(key, a->s6_addr, 8);
		return true;
	}
	return false;
}

/* The slot of @key, or NULL; with @make, a free one or the one whose wait ends first. */
static struct slot *find(struct kepler_backoff *b, const unsigned char key[16], bool make)
{
	struct slot *victim = &b->slots[0];

	for (size_t i = 0; i < SLOTS; i++) {
		struct slot *s = &b->slots[i];

		if (s->used && !memcmp(s->addr, key, 16))
			return s;
		if (!s->used || (victim->used && s->until_ns < victim->until_ns))
			victim = s;
	}
	if (!make)
		return NULL;
	memset(victim, 0, sizeof(*victim));
	memcpy(victim->addr, key, 16);
	victim->used = true;
	return victim;
}

uint64_t kepler_backoff_wait_ms(struct kepler_backoff *b, const struct sockaddr *addr, uint64_t now_ns)
{
	unsigned char key[16];
	uint64_t wait = 0;
	struct slot *s;

	if (!b || !key_of(addr, key))
		return 0;
	pthread_mutex_lock(&b->lock);
	s = find(b, key, false);
	if (s && s->until_ns > now_ns)
		wait = (s->until_ns - now_ns + 999999) / 1000000;
	pthread_mutex_unlock(&b->lock);
	return wait;
}

unsigned kepler_backoff_failed(struct kepler_backoff *b, const struct sockaddr *addr, uint64_t now_ns)
{
	unsigned char key[16];
	unsigned fails;
	uint64_t wait = FIRST_WAIT_NS;
	struct slot *s;

	if (!b || !key_of(addr, key))
		return 0;
	pthread_mutex_lock(&b->lock);
	s = find(b, key, true);
	fails = ++s->fails;
	for (unsigned i = 1; i < fails && wait < MAX_WAIT_NS; i++)
		wait *= 2;
	s->until_ns = now_ns + (wait < MAX_WAIT_NS ? wait : MAX_WAIT_NS);
	pthread_mutex_unlock(&b->lock);
	return fails;
}

void kepler_backoff_succeeded(struct kepler_backoff *b, const struct sockaddr *addr)
{
	unsigned char key[16];
	struct slot *s;

	if (!b || !key_of(addr, key))
		return;
	pthread_mutex_lock(&b->lock);
	s = find(b, key, false);
	if (s)
		s->used = false;
	pthread_mutex_unlock(&b->lock);
}
