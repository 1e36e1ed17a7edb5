/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/kepler_test.h: what every cmocka test of kepler-c shares. Include
 * after <cmocka.h>.
 *
 * cmocka's skip() marks a case skipped but the program still exits 0, so
 * ctest would show a test that ran nothing (no root, no BTF) as "Passed".
 * kepler_skip() prints the reason and counts the skip; main() ends with
 * `return kepler_test_exit(cmocka_run_group_tests(...))`, which exits 77
 * (ctest's SKIP_RETURN_CODE, set by kepler_test() in tests/CMakeLists.txt)
 * when nothing failed but something was skipped, so ctest shows "Skipped".
 */
#ifndef KEPLER_TEST_H
#define KEPLER_TEST_H

#define KEPLER_TEST_SKIPPED 77

static unsigned kepler_test_skips;

/* Skip the current case: the reason on stdout, the skip counted. */
#define kepler_skip(...)                             \
	do {                                         \
		print_message("SKIP: " __VA_ARGS__); \
		print_message("\n");                 \
		kepler_test_skips++;                 \
		skip();                              \
	} while (0)

/* A check inside a case that cannot run here: reason printed, counted, the case goes on. */
#define kepler_skip_part(...)                             \
	do {                                              \
		print_message("SKIP part: " __VA_ARGS__); \
		print_message("\n");                      \
		kepler_test_skips++;                      \
	} while (0)

/*
 * Assert that @expr, a call that takes &err, succeeded (returned 0),
 * failing with the code and the message it gave: needs a
 * `struct kepler_error err` in scope.
 */
#define KEPLER_OK(expr)                                                                \
	do {                                                                           \
		long kepler_ok_r_ = (long)(expr);                                      \
		if (kepler_ok_r_ != 0)                                                 \
			fail_msg("%s returned %ld: %s", #expr, kepler_ok_r_, err.msg); \
	} while (0)

/* Assert that @expr, a call that takes &err, failed with @code (a negative errno); the message shown if not. */
#define KEPLER_FAILS(expr, code)                                                                         \
	do {                                                                                             \
		long kepler_fails_r_ = (long)(expr);                                                     \
		if (kepler_fails_r_ != (long)(code))                                                     \
			fail_msg("%s returned %ld, not %s: %s", #expr, kepler_fails_r_, #code, err.msg); \
	} while (0)

static inline int kepler_test_exit(int failed)
{
	if (failed)
		return failed > 125 ? 125 : failed;
	if (kepler_test_skips) {
		print_message("%u case(s) or check(s) skipped: exit %d (ctest shows Skipped)\n",
			      kepler_test_skips, KEPLER_TEST_SKIPPED);
		return KEPLER_TEST_SKIPPED;
	}
	return 0;
}

#endif /* KEPLER_TEST_H */
