// SPDX-License-Identifier: Apache-2.0
/* Tests of the informer's string pool: equal strings are one pointer, the last reference frees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "strpool.h"

static void test_equal_strings_share(void **state)
{
	struct kepler_strpool *pool = kepler_strpool_new();
	char copy[] = "/usr/bin/sleep";
	const char *a, *b, *c, *empty;

	(void)state;
	assert_non_null(pool);
	a = kepler_strpool_get(pool, "/usr/bin/sleep");
	b = kepler_strpool_get(pool, copy);
	c = kepler_strpool_get(pool, "/usr/bin/sleeps");
	empty = kepler_strpool_get(pool, "");
	assert_non_null(a);
	assert_ptr_equal(a, b);
	assert_ptr_not_equal(a, copy);
	assert_string_equal(a, "/usr/bin/sleep");
	assert_ptr_not_equal(a, c);
	assert_string_equal(c, "/usr/bin/sleeps");
	assert_string_equal(empty, "");
	assert_int_equal(kepler_strpool_count(pool), 3);
	kepler_strpool_put(a);
	assert_int_equal(kepler_strpool_count(pool), 3); /* b still holds it */
	assert_ptr_equal(kepler_strpool_ref(b), b);
	kepler_strpool_put(b);
	kepler_strpool_put(b);
	assert_int_equal(kepler_strpool_count(pool), 2);
	kepler_strpool_put(c);
	kepler_strpool_put(empty);
	kepler_strpool_put(NULL);
	assert_int_equal(kepler_strpool_count(pool), 0);
	kepler_strpool_free(pool);
}

/* Many strings (the table grows), given back in another order than taken. */
static void test_grow_and_put_in_any_order(void **state)
{
	enum { N = 5000 };
	static const char *got[N];
	struct kepler_strpool *pool = kepler_strpool_new();
	char name[32];

	(void)state;
	assert_non_null(pool);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "/proc/%d", i % (N / 2));
		got[i] = kepler_strpool_get(pool, name);
		assert_non_null(got[i]);
		assert_string_equal(got[i], name);
		if (i >= N / 2)
			assert_ptr_equal(got[i], got[i - N / 2]);
	}
	assert_int_equal(kepler_strpool_count(pool), N / 2);
	for (int i = N - 1; i >= 0; i -= 2)
		kepler_strpool_put(got[i]);
	for (int i = 0; i < N; i += 2)
		kepler_strpool_put(got[i]);
	assert_int_equal(kepler_strpool_count(pool), 0);
	got[0] = kepler_strpool_get(pool, "/proc/7");
	assert_string_equal(got[0], "/proc/7");
	assert_int_equal(kepler_strpool_count(pool), 1);
	kepler_strpool_put(got[0]);
	kepler_strpool_free(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_strings_share),
		cmocka_unit_test(test_grow_and_put_in_any_order),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
