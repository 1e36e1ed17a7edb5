// SPDX-License-Identifier: Apache-2.0
/* The growable array (common/array.c): room as asked, contents kept, a bound and overflow refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "kepler/array.h"

static void test_appends_keep_contents(void **state)
{
	uint64_t *items = NULL;
	size_t cap = 0, n = 0;

	(void)state;
	for (uint64_t i = 0; i < 10000; i++) {
		assert_int_equal(kepler_array_reserve((void **)&items, &cap, n + 1, sizeof(*items)), 0);
		assert_true(cap >= n + 1);
		items[n++] = i * 3;
	}
	for (size_t i = 0; i < n; i++)
		assert_int_equal(items[i], i * 3);
	assert_true(cap < 2 * n); /* doubling: never more than twice what is used */
	free(items);
}

static void test_empty_is_not_null(void **state)
{
	int *items = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(kepler_array_reserve((void **)&items, &cap, 0, sizeof(*items)), 0);
	assert_non_null(items);
	assert_true(cap >= 1);
	free(items);
}

static void test_room_already_there_keeps_pointer(void **state)
{
	int *items = NULL, *was;
	size_t cap = 0;

	(void)state;
	assert_int_equal(kepler_array_reserve((void **)&items, &cap, 100, sizeof(*items)), 0);
	was = items;
	assert_int_equal(kepler_array_reserve((void **)&items, &cap, 50, sizeof(*items)), 0);
	assert_ptr_equal(items, was);
	free(items);
}

static void test_bound_and_overflow(void **state)
{
	int *items = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(kepler_array_reserve_max((void **)&items, &cap, 10, sizeof(*items), 10), 0);
	assert_true(cap <= 10);
	assert_int_equal(kepler_array_reserve_max((void **)&items, &cap, 11, sizeof(*items), 10), -E2BIG);
	assert_non_null(items); /* unchanged, still valid */
	assert_int_equal(kepler_array_reserve((void **)&items, &cap, SIZE_MAX / 2, sizeof(*items)), -ENOMEM);
	assert_non_null(items);
	free(items);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_appends_keep_contents),
		cmocka_unit_test(test_empty_is_not_null),
		cmocka_unit_test(test_room_already_there_keeps_pointer),
		cmocka_unit_test(test_bound_and_overflow),
	};

	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
