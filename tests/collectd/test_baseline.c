// SPDX-License-Identifier: Apache-2.0
/*
 * The idle baseline learner (collectd/attribution/baseline.c): the lowest
 * power before a fit, an exact fit on a linear meter, a noisy meter, a
 * steady load that keeps the fit it had, fits it must not trust.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "baseline.h"

#define SEC 1000000000ULL

/* One 5 s interval of a meter drawing @watts at @usage. */
static void add(struct kepler_baseline_learner *l, const char *zone, double usage, double watts)
{
	assert_int_equal(kepler_baseline_learner_add(l, zone, usage, (uint64_t)llround(watts * 5e6), 5 * SEC),
			 0);
}

static struct kepler_baseline get(struct kepler_baseline_learner *l, const char *zone)
{
	struct kepler_baseline b;

	kepler_baseline_learner_get(l, zone, &b);
	return b;
}

/* 12 W + 28 W x usage, the meter: exact after KEPLER_BASELINE_MIN_FIT samples. */
static void test_linear_meter(void **state)
{
	struct kepler_baseline_learner *l;
	struct kepler_baseline b;

	(void)state;
	assert_int_equal(kepler_baseline_learner_new(60, &l, NULL), 0);
	assert_int_equal(get(l, "package").method, KEPLER_BASELINE_NONE);
	for (int i = 0; i < KEPLER_BASELINE_MIN_FIT - 1; i++) {
		add(l, "package", 0.5 + 0.05 * i, 12 + 28 * (0.5 + 0.05 * i));
		b = get(l, "package");
		assert_int_equal(b.method,
				 KEPLER_BASELINE_UNFITTED); /* split by usage ratio: no idle invented */
		assert_int_equal(b.idle_uw, 0);
	}
	add(l, "package", 0.9, 12 + 28 * 0.9);
	b = get(l, "package");
	assert_int_equal(b.method, KEPLER_BASELINE_FITTED);
	assert_true(llabs((long long)b.idle_uw - 12000000) <= 1);
	assert_true(b.quality_ppm >= 999999);
	assert_int_equal(b.samples, KEPLER_BASELINE_MIN_FIT);
	assert_int_equal(get(l, "dram").method, KEPLER_BASELINE_NONE);
	kepler_baseline_learner_free(l);
}

/* A noisy meter (+-1 W) over loads from 0 to 100 %: within 0.5 W of 12 W. */
static void test_noisy_meter(void **state)
{
	struct kepler_baseline_learner *l;
	struct kepler_baseline b;

	(void)state;
	srand(7);
	assert_int_equal(kepler_baseline_learner_new(720, &l, NULL), 0);
	for (int i = 0; i < 720; i++) {
		double u = (rand() % 1001) / 1000.0, noise = (rand() % 2001 - 1000) / 1000.0;

		add(l, "package", u, 12 + 28 * u + noise);
	}
	b = get(l, "package");
	assert_int_equal(b.method, KEPLER_BASELINE_FITTED);
	print_message("noisy meter: %.3f W, R^2 %.4f\n", b.idle_uw / 1e6, b.quality_ppm / 1e6);
	assert_true(fabs(b.idle_uw / 1e6 - 12) < 0.5);
	assert_true(b.quality_ppm > 990000 && b.quality_ppm < 1000000);
	kepler_baseline_learner_free(l);
}

/*
 * Hours at one steady load (noise only, no spread of usage) after a good
 * fit: the window forgets the varied samples, the fit stays.
 */
static void test_steady_load_keeps_fit(void **state)
{
	struct kepler_baseline_learner *l;
	struct kepler_baseline b;

	(void)state;
	srand(3);
	assert_int_equal(kepler_baseline_learner_new(20, &l, NULL), 0);
	for (int i = 0; i < 20; i++)
		add(l, "package", i / 19.0, 12 + 28 * i / 19.0);
	assert_int_equal(get(l, "package").method, KEPLER_BASELINE_FITTED);
	for (int i = 0; i < 200; i++)
		add(l, "package", 0.7 + (rand() % 3 - 1) / 1000.0,
		    12 + 28 * 0.7 + (rand() % 201 - 100) / 100.0);
	b = get(l, "package");
	assert_int_equal(b.method, KEPLER_BASELINE_FITTED);
	print_message("after 200 steady intervals: %.3f W (fit of %u samples)\n", b.idle_uw / 1e6, b.samples);
	assert_true(fabs(b.idle_uw / 1e6 - 12) < 0.5);
	kepler_baseline_learner_free(l);
}

/*
 * Fits not to trust: power that falls as usage rises (another load the
 * CPU does not see) and a steady load with noise: the lowest power stays.
 */
static void test_untrusted_fits(void **state)
{
	struct kepler_baseline_learner *l;
	struct kepler_baseline b;

	(void)state;
	srand(5);
	assert_int_equal(kepler_baseline_learner_new(60, &l, NULL), 0);
	for (int i = 0; i < 30; i++)
		add(l, "falls", i / 29.0, 40 - 10 * i / 29.0);
	b = get(l, "falls");
	assert_int_equal(b.method, KEPLER_BASELINE_UNFITTED);
	assert_int_equal(b.idle_uw, 0);
	for (int i = 0; i < 30; i++)
		add(l, "steady", 0.5 + (rand() % 3 - 1) / 1000.0, 26 + (rand() % 401 - 200) / 100.0);
	b = get(l, "steady");
	assert_int_equal(b.method, KEPLER_BASELINE_UNFITTED);
	kepler_baseline_learner_free(l);
}

/*
 * Started on a busy node: the usage stays between 0.9 and 1.0, and even an
 * exact meter (12 W + 28 W x usage) is not fitted from so little variation;
 * the lowest power seen (37.2 W) is never taken for the idle power. Once
 * the load varies, the fit is the meter's idle.
 */
static void test_busy_start(void **state)
{
	struct kepler_baseline_learner *l;
	struct kepler_baseline b;

	(void)state;
	assert_int_equal(kepler_baseline_learner_new(60, &l, NULL), 0);
	for (int i = 0; i < 40; i++) {
		double u = 0.9 + (i % 11) / 100.0;

		add(l, "package", u, 12 + 28 * u);
		b = get(l, "package");
		assert_int_equal(b.method, KEPLER_BASELINE_UNFITTED);
		assert_int_equal(b.idle_uw, 0);
	}
	add(l, "package", 0.5, 12 + 28 * 0.5);
	b = get(l, "package");
	assert_int_equal(b.method, KEPLER_BASELINE_FITTED);
	assert_true(llabs((long long)b.idle_uw - 12000000) <= 1);
	kepler_baseline_learner_free(l);
}

/* Intervals a failed meter leaves (no energy, no length, usage not a ratio) teach nothing. */
static void test_ignored_samples(void **state)
{
	struct kepler_baseline_learner *l;

	(void)state;
	assert_int_equal(kepler_baseline_learner_new(60, &l, NULL), 0);
	assert_int_equal(kepler_baseline_learner_add(l, "package", 0.5, 0, 5 * SEC), 0);
	assert_int_equal(kepler_baseline_learner_add(l, "package", 0.5, 1000, 0), 0);
	assert_int_equal(kepler_baseline_learner_add(l, "package", NAN, 1000, 5 * SEC), 0);
	assert_int_equal(kepler_baseline_learner_add(l, "package", 1.5, 1000, 5 * SEC), 0);
	assert_int_equal(get(l, "package").method, KEPLER_BASELINE_NONE);
	for (int z = 0; z < KEPLER_MAX_ZONES; z++) {
		char name[8] = { 'z', (char)('a' + z), 0 };

		add(l, name, 0.5, 20);
	}
	assert_int_equal(kepler_baseline_learner_add(l, "one-too-many", 0.5, 1000, 5 * SEC), -ENOSPC);
	kepler_baseline_learner_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear_meter),
		cmocka_unit_test(test_noisy_meter),
		cmocka_unit_test(test_steady_load_keeps_fit),
		cmocka_unit_test(test_untrusted_fits),
		cmocka_unit_test(test_busy_start),
		cmocka_unit_test(test_ignored_samples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
