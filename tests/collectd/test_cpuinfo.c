// SPDX-License-Identifier: Apache-2.0
/*
 * The node's CPU list: the collector's /proc/cpuinfo parser (x86, arm64,
 * odd input, as named cases), the store's record of it (round trip, and
 * malformed records refused), and a real store carrying it from writer to
 * reader.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "cpuinfo.h"
#include "kepler/store.h"

struct parse_case {
	const char *name;
	const char *text;
	size_t n;               /* CPUs expected */
	struct kepler_cpu last; /* the last CPU, field by field */
};

static const struct parse_case parse_cases[] = {
	{ "x86, two CPUs",
	  "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel name\t: AMD EPYC 7B13\n"
	  "physical id\t: 0\nsiblings\t: 2\ncore id\t\t: 0\nflags\t\t: fpu vme\n\n"
	  "processor\t: 1\nvendor_id\t: AuthenticAMD\nmodel name\t: Odd \"quoted\" \\ name  \n"
	  "physical id\t: 0\ncore id\t\t: 1\n\n",
	  2,
	  { "1", "AuthenticAMD", "Odd \"quoted\" \\ name", "0", "1" } },
	{ "arm64: no vendor or model; a block without processor is no CPU",
	  "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n\n"
	  "processor\t: 1\nBogoMIPS\t: 50.00\n\nHardware\t: some board\nmodel name\t: not a CPU\n",
	  2,
	  { "1", "", "", "", "" } },
	{ "empty", "", 0, { "", "", "", "", "" } },
	{ "no final newline, CRLF",
	  "processor : 3\r\nmodel name : Truncated\r\ncore id : 9",
	  1,
	  { "3", "", "Truncated", "", "9" } },
	{ "value longer than its field is cut",
	  "processor\t: 123456789012345678901234567890\n",
	  1,
	  { "123456789012345", "", "", "", "" } },
	{ "keys before any processor line are ignored",
	  "model name\t: orphan\nprocessor\t: 0\n",
	  1,
	  { "0", "", "", "", "" } },
};

static void check_cpu(const char *name, const struct kepler_cpu *got, const struct kepler_cpu *want)
{
	if (strcmp(got->processor, want->processor) || strcmp(got->vendor_id, want->vendor_id) ||
	    strcmp(got->model_name, want->model_name) || strcmp(got->physical_id, want->physical_id) ||
	    strcmp(got->core_id, want->core_id))
		fail_msg("case \"%s\": got {%s|%s|%s|%s|%s}, want {%s|%s|%s|%s|%s}", name, got->processor,
			 got->vendor_id, got->model_name, got->physical_id, got->core_id, want->processor,
			 want->vendor_id, want->model_name, want->physical_id, want->core_id);
}

static void test_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct kepler_cpuinfo ci;

		if (kepler_cpuinfo_parse(c->text, strlen(c->text), &ci) < 0)
			fail_msg("case \"%s\": parse failed", c->name);
		if (ci.n != c->n)
			fail_msg("case \"%s\": %zu CPUs, want %zu", c->name, ci.n, c->n);
		if (ci.n)
			check_cpu(c->name, &ci.cpus[ci.n - 1], &c->last);
		kepler_cpuinfo_free(&ci);
	}
}

/* Encoded, then decoded: the same CPUs, but for tabs and line breaks inside values. */
static void test_record_round_trip(void **state)
{
	struct kepler_cpu cpus[] = {
		{ "0", "GenuineIntel", "Intel(R) Xeon(R) \"Q\" \\", "0", "0" },
		{ "1", "", "tab\there\nnewline", "", "" },
	};
	struct kepler_cpuinfo ci = { cpus, 2 }, back;
	char *text = kepler_cpuinfo_encode(&ci);

	(void)state;
	assert_non_null(text);
	assert_int_equal(kepler_cpuinfo_decode(text, strlen(text), &back), 0);
	assert_int_equal(back.n, 2);
	check_cpu("round trip", &back.cpus[0], &cpus[0]);
	check_cpu("tabs and newlines become spaces", &back.cpus[1],
		  &(struct kepler_cpu){ "1", "", "tab here newline", "", "" });
	kepler_cpuinfo_free(&back);
	free(text);
	/* no CPU: a record of none */
	ci.n = 0;
	text = kepler_cpuinfo_encode(&ci);
	assert_int_equal(kepler_cpuinfo_decode(text, strlen(text), &back), 0);
	assert_int_equal(back.n, 0);
	free(text);
}

static void test_record_malformed(void **state)
{
	static const struct {
		const char *name, *text;
	} cases[] = {
		{ "no version", "0\ta\tb\tc\td\n" },
		{ "unknown version", "v2\n0\ta\tb\tc\td\n" },
		{ "four fields", "v1\n0\ta\tb\tc\n" },
		{ "six fields", "v1\n0\ta\tb\tc\td\te\n" },
		{ "last line unterminated", "v1\n0\ta\tb\tc\td" },
		{ "empty", "" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kepler_cpuinfo ci;
		int r = kepler_cpuinfo_decode(cases[i].text, strlen(cases[i].text), &ci);

		if (r != -EBADMSG)
			fail_msg("case \"%s\": %d, want -EBADMSG", cases[i].name, r);
		assert_null(ci.cpus);
	}
}

/* Writer to reader through a real LMDB store; a store without a list says so. */
static void test_store(void **state)
{
	char dir[] = "/tmp/kepler-test-cpus-XXXXXX";
	struct kepler_store_options o = { .map_size = 16ULL << 20,
					  .retention_snapshots = 5,
					  .retention_series_ns = 3600ULL * 1000000000ULL };
	struct kepler_cpu cpus[] = { { "0", "V", "M", "0", "0" }, { "1", "V", "M", "0", "1" } };
	struct kepler_store *w, *r;
	struct kepler_cpuinfo got;
	struct kepler_error err;
	struct kepler_store_meta meta = { .hostname = "h" };
	char cmd[128];

	(void)state;
	assert_non_null(mkdtemp(dir));
	o.path = dir;
	KEPLER_OK(kepler_store_open_writer(&o, &w, &err));
	KEPLER_OK(kepler_store_set_meta(w, &meta, &err));
	KEPLER_OK(kepler_store_open_reader(dir, &r, &err));
	assert_int_equal(kepler_store_get_cpus(r, &got, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no CPU list"));
	KEPLER_OK(kepler_store_set_cpus(w, &(struct kepler_cpuinfo){ cpus, 2 }, &err));
	KEPLER_OK(kepler_store_get_cpus(r, &got, &err));
	assert_int_equal(got.n, 2);
	check_cpu("from the store", &got.cpus[1], &cpus[1]);
	kepler_cpuinfo_free(&got);
	assert_int_equal(kepler_store_set_cpus(r, &(struct kepler_cpuinfo){ cpus, 2 }, &err), -EBADF);
	kepler_store_close(r);
	kepler_store_close(w);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_record_round_trip),
		cmocka_unit_test(test_record_malformed),
		cmocka_unit_test(test_store),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
