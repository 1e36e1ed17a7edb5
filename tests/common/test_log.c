// SPDX-License-Identifier: Apache-2.0
/* Tests of the logger's line format: text and JSON, hostile messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "kepler/log.h"

#define TS 1795881600123456789LL /* 2026-11-28T16:00:00.123Z */

static void test_text_line(void **state)
{
	char buf[256];

	(void)state;
	kepler_log_format_line(buf, sizeof(buf), KEPLER_LOG_TEXT, "kepler-collectd", 42, KEPLER_LOG_WARN, TS,
			       "slow iteration: 7 ms");
	assert_string_equal(buf, "2026-11-28T16:00:00.123Z kepler-collectd[42] warn: slow iteration: 7 ms\n");
}

static void test_json_line_escapes(void **state)
{
	char buf[256];

	(void)state;
	kepler_log_format_line(buf, sizeof(buf), KEPLER_LOG_JSON, "kepler-exporter", 7, KEPLER_LOG_ERROR, TS,
			       "comm \"a\\b\"\nnext\x01 bad\xff end \xc3\xa9");
	assert_string_equal(buf, "{\"time\":\"2026-11-28T16:00:00.123Z\",\"level\":\"error\","
				 "\"program\":\"kepler-exporter\",\"pid\":7,\"msg\":\"comm "
				 "\\\"a\\\\b\\\"\\u000anext\\u0001 bad\xef\xbf\xbd end \xc3\xa9\"}\n");
}

static void test_text_escapes_newlines(void **state)
{
	char buf[256];

	(void)state;
	kepler_log_format_line(buf, sizeof(buf), KEPLER_LOG_TEXT, "k", 1, KEPLER_LOG_INFO, TS, "two\nlines");
	assert_non_null(strstr(buf, "two\\x0alines\n"));
	assert_int_equal(strchr(buf, '\n') - buf, (long)strlen(buf) - 1);
}

static void test_truncation_keeps_line_whole(void **state)
{
	char buf[64], msg[500];

	(void)state;
	memset(msg, 'x', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	kepler_log_format_line(buf, sizeof(buf), KEPLER_LOG_JSON, "k", 1, KEPLER_LOG_INFO, TS, msg);
	assert_true(strlen(buf) < sizeof(buf));
	assert_string_equal(buf + strlen(buf) - 3, "\"}\n");
}

static void test_levels(void **state)
{
	(void)state;
	kepler_log_setup("t", KEPLER_LOG_WARN, KEPLER_LOG_TEXT);
	assert_false(kepler_log_enabled(KEPLER_LOG_INFO));
	assert_true(kepler_log_enabled(KEPLER_LOG_ERROR));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_line),
		cmocka_unit_test(test_json_line_escapes),
		cmocka_unit_test(test_text_escapes_newlines),
		cmocka_unit_test(test_truncation_keeps_line_whole),
		cmocka_unit_test(test_levels),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
