// SPDX-License-Identifier: Apache-2.0
/*
 * The snappy block kepler-push writes from pieces (readers/push/push_snappy.c):
 * byte for byte what libsnappy's snappy_compress() makes of the whole input,
 * whatever the pieces' sizes (empty, one byte, across and exactly at the
 * 64 KiB fragments' ends) and whether they are copied or runs compressed
 * where they lie, for inputs that compress and inputs that do not,
 * empty, one fragment, many; and an input that is not the length announced
 * refused (-EIO), nothing handed out.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <snappy-c.h>

#include "kepler_test.h"

#include "push_snappy.h"

/* @n bytes: runs of a few letters (compressible) with noise in every third part of 300. */
static char *input(size_t n, unsigned seed, bool noisy)
{
	char *in = malloc(n ? n : 1);

	assert_non_null(in);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		in[i] = noisy || i % 300 >= 200 ? (char)(seed >> 24) : "kepler_joules"[(i / 7) % 13];
	}
	return in;
}

/*
 * @in given in pieces of the sizes in @cuts, in turn, by push_snappy_put()
 * or, where @runs has the piece's bit (of its number modulo 32), by
 * push_snappy_put_run(); the block against libsnappy's of the whole.
 */
static void check_runs(const char *in, size_t n, const size_t *cuts, size_t ncuts, uint32_t runs)
{
	struct push_snappy *z = calloc(1, sizeof(*z));
	size_t want_len = snappy_max_compressed_length(n), got_len = 0, at = 0, k = 0, raw_len;
	char *want = malloc(want_len), *raw;
	void *got = NULL;

	assert_non_null(z);
	assert_non_null(want);
	assert_int_equal(snappy_compress(in, n, want, &want_len), SNAPPY_OK);
	assert_int_equal(push_snappy_begin(z, n), 0);
	while (at < n) {
		size_t take = cuts[k++ % ncuts];

		if (take > n - at)
			take = n - at;
		if (runs >> (k % 32) & 1)
			push_snappy_put_run(z, in + at, take);
		else
			push_snappy_put(z, in + at, take);
		at += take;
	}
	assert_int_equal(push_snappy_end(z, &got, &got_len), 0);
	assert_int_equal(got_len, want_len);
	assert_memory_equal(got, want, want_len);
	/* and it is a block libsnappy reads back to the input */
	assert_int_equal(snappy_uncompressed_length(got, got_len, &raw_len), SNAPPY_OK);
	assert_int_equal(raw_len, n);
	raw = malloc(n ? n : 1);
	assert_int_equal(snappy_uncompress(got, got_len, raw, &raw_len), SNAPPY_OK);
	assert_memory_equal(raw, in, n);
	free(raw);
	free(got);
	free(want);
	free(z);
}

static void check(const char *in, size_t n, const size_t *cuts, size_t ncuts)
{
	check_runs(in, n, cuts, ncuts, 0);
	check_runs(in, n, cuts, ncuts, UINT32_MAX); /* every piece a run */
	check_runs(in, n, cuts, ncuts, 0x5a5a5a5a); /* runs and pieces mixed */
}

static void test_same_as_whole(void **state)
{
	static const size_t sizes[] = { 0, 1, 100, 65535, 65536, 65537, 131072, 1000003 };
	static const size_t odd[] = { 1, 7, 300, 65536, 0, 12345, 2 }, whole[] = { SIZE_MAX },
			    fragment[] = { 65536 }, around[] = { 65535, 2, 65534, 3 };

	(void)state;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int noisy = 0; noisy < 2; noisy++) {
			char *in = input(sizes[s], (unsigned)(s + 1), noisy);

			check(in, sizes[s], odd, sizeof(odd) / sizeof(odd[0]));
			check(in, sizes[s], whole, 1);
			check(in, sizes[s], fragment, 1);
			check(in, sizes[s], around, sizeof(around) / sizeof(around[0]));
			free(in);
		}
}

static void test_wrong_length(void **state)
{
	struct push_snappy *z = calloc(1, sizeof(*z));
	char *in = input(70000, 3, false);
	void *got = NULL;
	size_t len = 0;

	(void)state;
	assert_non_null(z);
	/* less than announced */
	assert_int_equal(push_snappy_begin(z, 70000), 0);
	push_snappy_put(z, in, 69999);
	assert_int_equal(push_snappy_end(z, &got, &len), -EIO);
	assert_null(got);
	assert_null(z->out);
	/* more than announced: refused as it comes */
	assert_int_equal(push_snappy_begin(z, 1000), 0);
	push_snappy_put(z, in, 1000);
	push_snappy_put(z, in, 1);
	assert_int_equal(push_snappy_end(z, &got, &len), -EIO);
	assert_null(got);
	/* a run of more than announced, too */
	assert_int_equal(push_snappy_begin(z, 1000), 0);
	push_snappy_put_run(z, in, 70000);
	assert_int_equal(push_snappy_end(z, &got, &len), -EIO);
	assert_null(got);
	/* begun and dropped: nothing kept (the sanitizers see any leak) */
	assert_int_equal(push_snappy_begin(z, 5), 0);
	push_snappy_drop(z);
	assert_null(z->out);
	free(in);
	free(z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_whole),
		cmocka_unit_test(test_wrong_length),
	};

	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
