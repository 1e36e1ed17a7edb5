// SPDX-License-Identifier: Apache-2.0
/* Tests of the configuration module: value types, precedence, errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "config_internal.h"
#include "kepler/config.h"

#define NS_PER_S 1000000000ULL

static const struct kepler_program collectd = {
	"kepler-collectd",
	KEPLER_PROG_COLLECTD,
	"",
	"test collector",
	"Test collector.",
	0,
	0,
	NULL,
	1,
	NULL,
	NULL,
};
static const struct kepler_program exporter = {
	"kepler-exporter",
	KEPLER_PROG_EXPORTER,
	"",
	"test exporter",
	"Test exporter.",
	0,
	0,
	NULL,
	1,
	NULL,
	NULL,
};
static const struct kepler_program train = {
	"kepler-train", KEPLER_PROG_TRAIN, "DATASET", "test trainer", "Test trainer.", 1, 1, NULL, 1, NULL,
	NULL,
};

/* A YAML file in a temporary directory; returns its path (static buffer). */
static const char *yaml_file(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/kepler-test-XXXXXX.yaml");
	fd = mkstemps(path, 5);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

/* Parse argv (NULL-terminated) for @prog; returns the result, fills @err. */
static int parse(struct kepler_config *cfg, const struct kepler_program *prog, struct kepler_error *err, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = (char *)prog->name;
	va_start(ap, err);
	for (char *a = va_arg(ap, char *); a && argc < 31; a = va_arg(ap, char *))
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return kepler_config_parse(cfg, prog, argc, argv, err);
}

/* Parse a YAML text for the collector; expect failure with @needle in the message. */
static void expect_yaml_error(const char *text, const char *needle)
{
	struct kepler_config cfg;
	struct kepler_error err;
	const char *path = yaml_file(text);
	int r = parse(&cfg, &collectd, &err, "--config", path, NULL);

	if (r >= 0 || !strstr(err.msg, needle))
		fail_msg("YAML %s: got %d '%s', wanted an error containing '%s'", text, r, err.msg, needle);
	kepler_config_done(&cfg);
	unlink(path);
}

static void test_durations(void **state)
{
	static const struct {
		const char *in;
		int r;
		uint64_t ns;
	} cases[] = {
		{ "500ms", 0, 500000000ULL },
		{ "5s", 0, 5 * NS_PER_S },
		{ "1m", 0, 60 * NS_PER_S },
		{ "1h30m", 0, 5400 * NS_PER_S },
		{ "1.5s", 0, 1500000000ULL },
		{ "0", 0, 0 },
		{ "250us", 0, 250000ULL },
		{ "250\xc2\xb5s", 0, 250000ULL },
		{ "7ns", 0, 7 },
		{ "1d", 0, 86400 * NS_PER_S },
		{ "", -EINVAL, 0 },
		{ "5", -EINVAL, 0 },
		{ "5x", -EINVAL, 0 },
		{ "s", -EINVAL, 0 },
		{ "-1s", -EINVAL, 0 },
		{ "1.s", -EINVAL, 0 },
		{ "5s ", -EINVAL, 0 },
		{ "99999999999h", -ERANGE, 0 },
		{ "18446744073709551616ns", -ERANGE, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t ns = 12345;
		int r = kepler_parse_duration(cases[i].in, &ns);

		if (r != cases[i].r || (r == 0 && ns != cases[i].ns))
			fail_msg("duration '%s': got %d/%llu", cases[i].in, r, (unsigned long long)ns);
		if (r < 0)
			assert_int_equal(ns, 12345); /* output untouched on error */
	}
}

static void test_format_duration(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(kepler_format_duration(5 * NS_PER_S, buf, sizeof(buf)), "5s");
	assert_string_equal(kepler_format_duration(90 * NS_PER_S, buf, sizeof(buf)), "1m30s");
	assert_string_equal(kepler_format_duration(86400 * NS_PER_S, buf, sizeof(buf)), "24h");
	assert_string_equal(kepler_format_duration(100000000ULL, buf, sizeof(buf)), "100ms");
	assert_string_equal(kepler_format_duration(0, buf, sizeof(buf)), "0s");
}

static void test_sizes(void **state)
{
	static const struct {
		const char *in;
		int r;
		uint64_t bytes;
	} cases[] = {
		{ "4096", 0, 4096 },
		{ "64MiB", 0, 64ULL << 20 },
		{ "1GiB", 0, 1ULL << 30 },
		{ "10MB", 0, 10000000ULL },
		{ "3KiB", 0, 3072 },
		{ "2B", 0, 2 },
		{ "64 MiB", -EINVAL, 0 },
		{ "1.5GiB", -EINVAL, 0 },
		{ "MiB", -EINVAL, 0 },
		{ "64Mi", -EINVAL, 0 },
		{ "64MiBs", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "99999999999TiB", -ERANGE, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t b = 0;
		int r = kepler_parse_size(cases[i].in, &b);

		if (r != cases[i].r || (r == 0 && b != cases[i].bytes))
			fail_msg("size '%s': got %d/%llu", cases[i].in, r, (unsigned long long)b);
	}
}

static void test_bools_and_ints(void **state)
{
	bool b;
	int64_t v;

	(void)state;
	assert_int_equal(kepler_parse_bool("yes", &b), 0);
	assert_true(b);
	assert_int_equal(kepler_parse_bool("OFF", &b), 0);
	assert_false(b);
	assert_int_equal(kepler_parse_bool("maybe", &b), -EINVAL);
	assert_int_equal(kepler_parse_int("-1", &v), 0);
	assert_int_equal(v, -1);
	assert_int_equal(kepler_parse_int("12abc", &v), -EINVAL);
	assert_int_equal(kepler_parse_int(" 12", &v), -EINVAL);
	assert_int_equal(kepler_parse_int("99999999999999999999", &v), -ERANGE);
}

static void test_defaults(void **state)
{
	struct kepler_config cfg;
	struct kepler_error err;

	(void)state;
	KEPLER_OK(kepler_config_init(&cfg, &err));
	assert_int_equal(cfg.collectd.monitor_interval_ns, 5 * NS_PER_S);
	assert_int_equal(cfg.log_level, KEPLER_LOG_INFO);
	assert_int_equal(cfg.collectd.meter_source, KEPLER_METER_AUTO);
	assert_string_equal(cfg.store_path, "/var/lib/kepler/store");
	assert_int_equal(cfg.collectd.store_retention_snapshots.count, 720);
	assert_int_equal(cfg.collectd.store_retention_series_ns, 24 * 3600 * NS_PER_S);
	assert_int_equal(cfg.collectd.store_map_size, 256ULL << 20);
	assert_int_equal(cfg.metrics.metrics_level.count, 5);
	assert_int_equal(cfg.collectd.rapl_zones.count, 0);
	assert_int_equal(cfg.collectd.monitor_max_terminated, 500);
	assert_string_equal(cfg.exporter.web_listen_address, ":28282");
	kepler_config_done(&cfg);
	kepler_config_done(NULL);
}

static void test_table_is_consistent(void **state)
{
	size_t n = 0;

	(void)state;
	for (const struct kepler_option *o = kepler_options; o->key; o++, n++) {
		bool dev = strncmp(o->key, "dev.", 4) == 0;

		if (dev != !!(o->flags & KEPLER_OPT_YAML_ONLY))
			fail_msg("%s: dev.* keys and only they are YAML-only", o->key);
		if (o->type == KEPLER_OPT_ENUM && !o->choices)
			fail_msg("%s: enum without choices", o->key);
		if (!o->help || !*o->help || !o->progs)
			fail_msg("%s: needs help text and at least one program", o->key);
		for (const struct kepler_option *p = kepler_options; p < o; p++) {
			bool both_yaml =
				!(o->flags & KEPLER_OPT_FLAG_ONLY) && !(p->flags & KEPLER_OPT_FLAG_ONLY);

			if (strcmp(o->key, p->key) == 0 && (both_yaml || (o->progs & p->progs)))
				fail_msg("%s: defined twice for the same program", o->key);
		}
	}
	assert_true(n < 256); /* the YAML walker's duplicate-key bitmap */
}

static void test_precedence(void **state)
{
	struct kepler_config cfg;
	struct kepler_error err;
	const char *path = yaml_file("monitor:\n  interval: 10s\nlog:\n  level: debug\n");

	(void)state;
	assert_int_equal(parse(&cfg, &collectd, &err, "--config", path, NULL), 0);
	assert_int_equal(cfg.collectd.monitor_interval_ns, 10 * NS_PER_S);
	assert_int_equal(cfg.log_level, KEPLER_LOG_DEBUG);
	assert_int_equal(cfg.collectd.store_retention_snapshots.count, 720); /* default kept */
	kepler_config_done(&cfg);

	/* flags win over the file whatever their order on the command line */
	assert_int_equal(parse(&cfg, &collectd, &err, "--monitor.interval=2s", "--config", path, NULL), 0);
	assert_int_equal(cfg.collectd.monitor_interval_ns, 2 * NS_PER_S);
	assert_int_equal(cfg.log_level, KEPLER_LOG_DEBUG);
	kepler_config_done(&cfg);

	/* the last of two flags wins; --key value and --key=value both work */
	assert_int_equal(
		parse(&cfg, &collectd, &err, "--monitor.interval", "1s", "--monitor.interval=3s", NULL), 0);
	assert_int_equal(cfg.collectd.monitor_interval_ns, 3 * NS_PER_S);
	kepler_config_done(&cfg);
	unlink(path);
}

static void test_every_type_from_yaml(void **state)
{
	struct kepler_config cfg;
	struct kepler_error err;
	const char *path =
		yaml_file("# every type\n"
			  "store:\n  path: /tmp/s\n  map-size: 64MiB\n  retention:\n    snapshots: 10\n"
			  "    series: 1h\n"
			  "monitor: {interval: 500ms, max-terminated: -1}\n"
			  "meter:\n  source: FAKE\n"
			  "rapl:\n  zones: [package, dram]\n"
			  "metrics: {level: 'node, pod'}\n"
			  "dev:\n  fake-meter:\n    zones:\n      - package\n    watts: 99\n"
			  "web:\n  listen-address: \"127.0.0.1:9\"\n");

	(void)state;
	assert_int_equal(parse(&cfg, &collectd, &err, "--config", path, NULL), 0);
	assert_string_equal(cfg.store_path, "/tmp/s");
	assert_int_equal(cfg.collectd.store_map_size, 64ULL << 20);
	assert_int_equal(cfg.collectd.store_retention_snapshots.count, 10);
	assert_int_equal(cfg.collectd.store_retention_snapshots.ns, 0);
	assert_int_equal(cfg.collectd.store_retention_series_ns, 3600 * NS_PER_S);
	assert_int_equal(cfg.collectd.monitor_interval_ns, 500000000ULL);
	assert_int_equal(cfg.collectd.monitor_max_terminated, -1);
	assert_int_equal(cfg.collectd.meter_source, KEPLER_METER_FAKE);
	assert_int_equal(cfg.collectd.rapl_zones.count, 2);
	assert_string_equal(cfg.collectd.rapl_zones.items[1], "dram");
	assert_int_equal(cfg.metrics.metrics_level.count, 2);
	assert_string_equal(cfg.metrics.metrics_level.items[1], "pod");
	assert_int_equal(cfg.collectd.dev_fake_meter_zones.count, 1);
	assert_int_equal(cfg.collectd.dev_fake_meter_watts, 99);
	/* a key of another binary is accepted in a shared file */
	assert_string_equal(cfg.exporter.web_listen_address, "127.0.0.1:9");
	kepler_config_done(&cfg);
	unlink(path);
}

static void test_yaml_errors(void **state)
{
	(void)state;
	expect_yaml_error("monitor:\n  interval: 5s\n  intervl: 5s\n", "unknown key 'monitor.intervl' (");
	expect_yaml_error("monitor:\n  interval: 5s\n  intervl: 5s\n",
			  ":3); did you mean 'monitor.interval'?");
	expect_yaml_error("bogus: 1\n", "unknown key 'bogus' (");
	expect_yaml_error("monitor:\n  interval: abc\n", "invalid value 'abc' for 'monitor.interval' (");
	expect_yaml_error("monitor:\n  interval: abc\n", "expected a duration");
	expect_yaml_error("monitor:\n  interval: 1ms\n", "out of range: must be from 100ms to 1h");
	expect_yaml_error("store: {retention: {snapshots: 0}}\n", "'store.retention.snapshots' (");
	expect_yaml_error("store: {retention: {snapshots: 500ms}}\n", "a duration from 1s to 366d");
	expect_yaml_error("store: {retention: {snapshots: lots}}\n",
			  "expected a count such as 720 or a duration");
	expect_yaml_error("store: {map-size: lots}\n", "expected a size");
	expect_yaml_error("log: {level: loud}\n", "expected one of debug, info, warn, error");
	expect_yaml_error("metrics: {level: [node, cluster]}\n", "invalid value 'cluster'");
	expect_yaml_error("monitor:\n  interval: 5s\n  interval: 6s\n", "duplicate key 'monitor.interval' (");
	expect_yaml_error("monitor: {interval: [1s, 2s]}\n", "not a list");
	expect_yaml_error("monitor: {interval: {a: 1}}\n", "not a mapping");
	expect_yaml_error("monitor: 5s\n", "'monitor' (");
	expect_yaml_error("monitor: 5s\n", ":1) is a section");
	expect_yaml_error("monitor:\n  interval:\n", "missing value for 'monitor.interval'");
	expect_yaml_error("monitor: [a\n", "malformed YAML (");
	expect_yaml_error("- a\n- b\n", "expected a mapping of keys at the top level");
	expect_yaml_error("format: json\n", "unknown key 'format'"); /* flag-only */
	expect_yaml_error("informer: bpf\n", "expected one of auto, ebpf, procfs");
	expect_yaml_error("store: {path: \"/var/lib/kepler\\0/etc\"}\n", "contains a NUL byte");
	expect_yaml_error("rapl: {zones: [\"pack\\0age\"]}\n", "contains a NUL byte");
}

/*
 * Hostile files: a directory, a file over 1 MiB, and 100,000 '[' (52 s to
 * load before, then refused): each refused at once with what is wrong.
 */
static void test_yaml_bounds(void **state)
{
	struct kepler_config cfg;
	struct kepler_error err;
	char *text = malloc(2 << 20);
	struct timespec t0, t1;

	(void)state;
	assert_int_equal(parse(&cfg, &collectd, &err, "--config", "/tmp", NULL), -EISDIR);
	assert_non_null(strstr(err.msg, "config file '/tmp' is a directory"));
	kepler_config_done(&cfg);

	memset(text, '[', 100000);
	text[100000] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &t0);
	expect_yaml_error(text, "nested more than 32 levels deep");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	print_message("100,000 '[' refused in %.1f ms\n",
		      (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);

	memset(text, '#', (2 << 20) - 1);
	text[(2 << 20) - 1] = '\0';
	expect_yaml_error(text, "more than the 1048576 allowed");
	free(text);
}

static void test_yaml_empty_and_missing(void **state)
{
	struct kepler_config cfg;
	struct kepler_error err;
	const char *path = yaml_file("# nothing but a comment\n");

	(void)state;
	assert_int_equal(parse(&cfg, &collectd, &err, "--config", path, NULL), 0);
	kepler_config_done(&cfg);
	unlink(path);

	assert_int_equal(parse(&cfg, &collectd, &err, "--config", "/nonexistent/k.yaml", NULL), -ENOENT);
	assert_non_null(strstr(err.msg, "cannot read config file '/nonexistent/k.yaml'"));
	kepler_config_done(&cfg);
}

static void expect_flag_error(const struct kepler_program *p, const char *a1, const char *a2,
			      const char *needle)
{
	struct kepler_config cfg;
	struct kepler_error err;
	int r = parse(&cfg, p, &err, a1, a2, NULL);

	if (r >= 0 || !strstr(err.msg, needle))
		fail_msg("%s %s: got %d '%s', wanted '%s'", a1, a2 ? a2 : "", r, err.msg, needle);
	kepler_config_done(&cfg);
}

static void test_flag_errors(void **state)
{
	(void)state;
	expect_flag_error(&collectd, "--monitor.intervl=5s", NULL,
			  "unknown option '--monitor.intervl'; did you mean '--monitor.interval'?");
	expect_flag_error(&collectd, "--monitor.interval", NULL, "option '--monitor.interval' needs a value");
	expect_flag_error(&collectd, "--monitor.interval=fast", NULL,
			  "invalid value 'fast' for --monitor.interval");
	expect_flag_error(&collectd, "--monitor.max-terminated=-2", NULL, "out of range");
	expect_flag_error(&collectd, "--dev.fake-meter.watts=5", NULL,
			  "development setting; set it in the --config file");
	expect_flag_error(&collectd, "--web.listen-address=:1", NULL,
			  "not an option of kepler-collectd (it is one of kepler-exporter)");
	expect_flag_error(&collectd, "-x", NULL, "unknown option '-x'");
	expect_flag_error(&collectd, "stray", NULL, "unexpected argument 'stray'");
	expect_flag_error(&train, NULL, NULL, "missing argument DATASET");
	expect_flag_error(&train, "a", "b", "too many arguments");
	expect_flag_error(&collectd, "--config", NULL, "option '--config' needs a value");
}

static void test_flags(void **state)
{
	struct kepler_config cfg;
	struct kepler_error err;
	static const struct kepler_program stdout_prog = {
		"kepler-stdout", KEPLER_PROG_STDOUT, "", "x", "x", 0, 0, NULL, 1, NULL, NULL,
	};

	(void)state;
	assert_int_equal(parse(&cfg, &stdout_prog, &err, "--follow", "--count", "3", "--format=JSON",
			       "--level=node,process", NULL),
			 0);
	assert_true(cfg.out.stdout_follow);
	assert_int_equal(cfg.out.stdout_count, 3);
	assert_int_equal(cfg.out.stdout_format, KEPLER_STDOUT_JSON);
	assert_int_equal(cfg.out.stdout_level.count, 2);
	kepler_config_done(&cfg);

	assert_int_equal(parse(&cfg, &stdout_prog, &err, "--follow=false", NULL), 0);
	assert_false(cfg.out.stdout_follow);
	kepler_config_done(&cfg);

	/* store.retention.snapshots: a count, or a duration */
	assert_int_equal(parse(&cfg, &collectd, &err, "--store.retention.snapshots", "6h", NULL), 0);
	assert_int_equal(cfg.collectd.store_retention_snapshots.count, 0);
	assert_int_equal(cfg.collectd.store_retention_snapshots.ns, 6 * 3600 * NS_PER_S);
	kepler_config_done(&cfg);
	assert_int_equal(parse(&cfg, &collectd, &err, "--store.retention.snapshots=100", NULL), 0);
	assert_int_equal(cfg.collectd.store_retention_snapshots.count, 100);
	assert_int_equal(cfg.collectd.store_retention_snapshots.ns, 0);
	kepler_config_done(&cfg);

	assert_int_equal(parse(&cfg, &train, &err, "--lambda", "0.5", "--", "--data.csv", NULL), 0);
	assert_int_equal(cfg.nargs, 1);
	assert_string_equal(cfg.args[0], "--data.csv");
	assert_string_equal(cfg.train.train_lambda, "0.5");
	kepler_config_done(&cfg);

	assert_int_equal(parse(&cfg, &exporter, &err, "--metrics.zones=package", NULL), 0);
	assert_int_equal(cfg.metrics.metrics_zones.count, 1);
	assert_int_equal(cfg.collectd.rapl_zones.count, 0);
	kepler_config_done(&cfg);
	/* the collector's option is not the exporter's */
	assert_int_equal(parse(&cfg, &exporter, &err, "--rapl.zones=package", NULL), -EINVAL);
	kepler_config_done(&cfg);

	assert_int_equal(parse(&cfg, &collectd, &err, "--help", NULL), KEPLER_CONFIG_HELP);
	kepler_config_done(&cfg);
	assert_int_equal(parse(&cfg, &collectd, &err, "--version", NULL), KEPLER_CONFIG_VERSION);
	kepler_config_done(&cfg);
}

static char *capture_help(const struct kepler_program *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	kepler_config_print_help(f, p);
	fclose(f);
	return buf;
}

static void test_help_lists_own_options(void **state)
{
	char *help = capture_help(&collectd), needle[160];

	(void)state;
	for (const struct kepler_option *o = kepler_options; o->key; o++) {
		bool own = (o->progs & KEPLER_PROG_COLLECTD) && !(o->flags & KEPLER_OPT_YAML_ONLY);

		snprintf(needle, sizeof(needle), "  --%s%s", o->key, o->type == KEPLER_OPT_BOOL ? "" : "=");
		if (own != (strstr(help, needle) != NULL))
			fail_msg("--help of kepler-collectd %s %s", own ? "misses" : "shows", o->key);
	}
	assert_non_null(strstr(help, "Usage: kepler-collectd [OPTION]..."));
	assert_non_null(strstr(help, "--version"));
	assert_non_null(strstr(help, "Default: 5s."));
	free(help);
}

/* docs/configuration.md holds the generated reference between two markers. */
static void test_doc_matches_table(void **state)
{
	static const char begin[] = "<!-- BEGIN GENERATED OPTIONS -->\n";
	static const char end[] = "<!-- END GENERATED OPTIONS -->";
	char *doc = NULL, *gen = NULL, *b, *e;
	size_t doclen = 0, genlen = 0;
	FILE *f = fopen(KEPLER_SOURCE_DIR "/docs/configuration.md", "r");
	FILE *m = open_memstream(&gen, &genlen);

	(void)state;
	assert_non_null(f);
	assert_true(getdelim(&doc, &doclen, '\0', f) > 0);
	fclose(f);
	kepler_config_write_markdown(m);
	fclose(m);
	b = strstr(doc, begin);
	e = strstr(doc, end);
	assert_non_null(b);
	assert_non_null(e);
	b += strlen(begin);
	*e = '\0';
	if (strcmp(b, gen) != 0)
		fail_msg("docs/configuration.md is out of date with common/options.c; "
			 "regenerate it with build/tools/kepler-config-doc --update docs/configuration.md");
	free(doc);
	free(gen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_format_duration),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_bools_and_ints),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_table_is_consistent),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_every_type_from_yaml),
		cmocka_unit_test(test_yaml_errors),
		cmocka_unit_test(test_yaml_empty_and_missing),
		cmocka_unit_test(test_yaml_bounds),
		cmocka_unit_test(test_flag_errors),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_help_lists_own_options),
		cmocka_unit_test(test_doc_matches_table),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
