/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/exporter/backoff.h: failed logins cost the client, not the
 * server. After a wrong password from an address (an IPv6 client's /64),
 * that address must wait
 * (100 ms, doubling with each failure, at most 30 s) before its next
 * password is checked; until then it is answered 429 at once, without
 * running bcrypt, so a password-guessing flood cannot keep the serving
 * threads busy. A client whose login is already known good (the login
 * cache) is never held back.
 */
#ifndef KEPLER_EXPORTER_BACKOFF_H
#define KEPLER_EXPORTER_BACKOFF_H

#include <stdint.h>
#include <sys/socket.h>

struct kepler_backoff;

struct kepler_backoff *kepler_backoff_new(void);
void kepler_backoff_free(struct kepler_backoff *b);

/* Milliseconds @addr must still wait before a password of its is checked; 0: now. */
uint64_t kepler_backoff_wait_ms(struct kepler_backoff *b, const struct sockaddr *addr, uint64_t now_ns);

/* A wrong password from @addr: its wait doubles. Returns the failures in a row. */
unsigned kepler_backoff_failed(struct kepler_backoff *b, const struct sockaddr *addr, uint64_t now_ns);

/* A right one: @addr is forgotten. */
void kepler_backoff_succeeded(struct kepler_backoff *b, const struct sockaddr *addr);

#endif /* KEPLER_EXPORTER_BACKOFF_H */
