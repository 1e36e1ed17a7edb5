// SPDX-License-Identifier: Apache-2.0
/*
 * The exporter's back-off of failed logins (readers/exporter/backoff.c):
 * per IPv4 address, per IPv6 /64 (one host may use all of it), IPv4 mapped
 * into IPv6 as IPv4; the wait doubles from 100 ms to 30 s; a success forgets
 * the address.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "backoff.h"

#define MS 1000000ULL

static struct sockaddr_in v4(const char *a)
{
	struct sockaddr_in s = { .sin_family = AF_INET };

	assert_int_equal(inet_pton(AF_INET, a, &s.sin_addr), 1);
	return s;
}

static struct sockaddr_in6 v6(const char *a)
{
	struct sockaddr_in6 s = { .sin6_family = AF_INET6 };

	assert_int_equal(inet_pton(AF_INET6, a, &s.sin6_addr), 1);
	return s;
}

static uint64_t wait_ms(struct kepler_backoff *b, const void *sa, uint64_t now)
{
	return kepler_backoff_wait_ms(b, (const struct sockaddr *)sa, now);
}

static void test_wait_doubles_per_address(void **state)
{
	struct kepler_backoff *b = kepler_backoff_new();
	struct sockaddr_in a = v4("192.0.2.7"), other = v4("192.0.2.8");
	uint64_t now = 1000 * MS;

	(void)state;
	assert_int_equal(wait_ms(b, &a, now), 0);
	assert_int_equal(kepler_backoff_failed(b, (struct sockaddr *)&a, now), 1);
	assert_int_equal(wait_ms(b, &a, now), 100);
	assert_int_equal(wait_ms(b, &other, now), 0);
	assert_int_equal(kepler_backoff_failed(b, (struct sockaddr *)&a, now), 2);
	assert_int_equal(wait_ms(b, &a, now), 200);
	for (int i = 0; i < 20; i++)
		kepler_backoff_failed(b, (struct sockaddr *)&a, now);
	assert_int_equal(wait_ms(b, &a, now), 30000);
	assert_int_equal(wait_ms(b, &a, now + 30000 * MS), 0);
	kepler_backoff_failed(b, (struct sockaddr *)&a, now);
	kepler_backoff_succeeded(b, (struct sockaddr *)&a);
	assert_int_equal(wait_ms(b, &a, now), 0);
	kepler_backoff_free(b);
}

static void test_ipv6_by_64(void **state)
{
	struct kepler_backoff *b = kepler_backoff_new();
	struct sockaddr_in6 a = v6("2001:db8:1:2::1"), same64 = v6("2001:db8:1:2:ffff:1234:5678:9abc"),
			    next64 = v6("2001:db8:1:3::1"), mapped = v6("::ffff:192.0.2.7");
	struct sockaddr_in plain = v4("192.0.2.7");
	uint64_t now = 1000 * MS;

	(void)state;
	kepler_backoff_failed(b, (struct sockaddr *)&a, now);
	assert_int_equal(wait_ms(b, &same64, now), 100); /* another address of the same /64 waits too */
	assert_int_equal(wait_ms(b, &next64, now), 0);
	kepler_backoff_failed(b, (struct sockaddr *)&mapped, now);
	assert_int_equal(wait_ms(b, &plain, now), 100); /* IPv4 mapped is that IPv4 address */
	kepler_backoff_free(b);
}

/* 5,000 addresses guessing: the table keeps the 4,096 whose waits end last, and never grows. */
static void test_many_addresses(void **state)
{
	struct kepler_backoff *b = kepler_backoff_new();
	uint64_t now = 1000 * MS;
	unsigned held = 0;

	(void)state;
	for (unsigned i = 0; i < 5000; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0a000000u + i) };

		kepler_backoff_failed(b, (struct sockaddr *)&a, now + i * MS);
	}
	for (unsigned i = 0; i < 5000; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0a000000u + i) };

		held += wait_ms(b, &a, now + 5000 * MS) > 0 || wait_ms(b, &a, now) > 0;
	}
	assert_true(held >= 4000 && held <= 4096);
	kepler_backoff_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_doubles_per_address),
		cmocka_unit_test(test_ipv6_by_64),
		cmocka_unit_test(test_many_addresses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
