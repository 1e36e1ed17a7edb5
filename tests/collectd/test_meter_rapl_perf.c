// SPDX-License-Identifier: Apache-2.0
/*
 * meter.source rapl-perf on a fake PMU tree (tools/fake-sysfs.sh
 * --perf-power: the kernel's bus/event_source/devices/power layout), with
 * the counters' open and read replaced (this machine has no PMU): the
 * parsing of events/, .scale, .unit and cpumask, the arithmetic (exact
 * joules from 2^-32 J counts, no drift, the 64-bit wrap), two sockets,
 * psys read once, rapl.zones, errors, and auto's order.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "meter.h"
#include "rapl_perf.h"

#define SEC 1000000000ULL
#define COUNTS_PER_J (1ULL << 32)

/* The counters: one per (cpu, event code), read by descriptor. */
struct fake_pmu {
	uint64_t count[16][8]; /* [cpu][config] */
	int fd_cpu[1024], fd_config[1024];
	int open_errno, read_errno, opened;
	int fail_cpu; /* read_errno only for this cpu (-1: all) */
};

static int fake_open(void *ctx, uint32_t type, uint64_t config, int cpu)
{
	struct fake_pmu *f = ctx;
	int fd;

	assert_int_equal(type, 24); /* the tree's type file */
	if (f->open_errno)
		return -f->open_errno;
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && fd < 1024 && cpu < 16 && config < 8);
	f->fd_cpu[fd] = cpu;
	f->fd_config[fd] = (int)config;
	f->opened++;
	return fd;
}

static int fake_read(void *ctx, int fd, uint64_t *count)
{
	struct fake_pmu *f = ctx;

	if (f->read_errno && (f->fail_cpu < 0 || f->fail_cpu == f->fd_cpu[fd]))
		return -f->read_errno;
	*count = f->count[f->fd_cpu[fd]][f->fd_config[fd]];
	return 0;
}

struct ctx {
	char dir[64];
	struct kepler_strlist zones;
	char *zone_items[4];
	struct kepler_meter_params p;
	struct kepler_meter *m;
	struct fake_pmu pmu;
	struct kepler_perf_io io;
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	snprintf(c->dir, sizeof(c->dir), "/tmp/kepler-perf-XXXXXX");
	if (!mkdtemp(c->dir))
		return -1;
	c->zones.items = c->zone_items;
	c->p = (struct kepler_meter_params){
		.source = KEPLER_METER_RAPL_PERF,
		.sysfs = c->dir,
		.rapl_zones = &c->zones,
		.model_file = "",
	};
	c->pmu.fail_cpu = -1;
	c->io = (struct kepler_perf_io){ fake_open, fake_read, &c->pmu };
	kepler_rapl_perf_set_io(&c->io);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	char cmd[128];

	kepler_meter_close(c->m);
	kepler_rapl_perf_set_io(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c->dir);
	if (system(cmd) != 0)
		return -1;
	free(c);
	return 0;
}

static void make_tree(struct ctx *c, const char *args)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s/tools/fake-sysfs.sh '%s' %s", KEPLER_SOURCE_DIR, c->dir, args);
	assert_int_equal(system(cmd), 0);
}

static void put(struct ctx *c, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", c->dir, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void open_ok(struct ctx *c)
{
	struct kepler_error err = { 0 };

	if (kepler_meter_open(&c->p, NULL, &c->m, &err) < 0)
		fail_msg("meter open: %s", err.msg);
}

static void read_ok(struct ctx *c, uint64_t t)
{
	struct kepler_meter_sample s = { .mono_ns = t, .cpu_usage_ratio = 0.5, .cpu_count = 8 };
	struct kepler_error err = { 0 };

	if (kepler_meter_read(c->m, &s, &err) < 0)
		fail_msg("meter read: %s", err.msg);
}

static const struct kepler_meter_zone *zone(struct ctx *c, const char *name)
{
	for (unsigned i = 0; i < kepler_meter_zone_count(c->m); i++)
		if (!strcmp(kepler_meter_zone(c->m, i)->name, name))
			return kepler_meter_zone(c->m, i);
	fail_msg("no zone %s", name);
	return NULL;
}

static void test_parse(void **state)
{
	uint64_t config;
	long double scale;
	int cpus[4];
	unsigned n;

	(void)state;
	assert_int_equal(kepler_perf_parse_event("event=0x02", &config), 0);
	assert_int_equal(config, 2);
	assert_int_equal(kepler_perf_parse_event("event=0x05\n", &config), 0);
	assert_int_equal(config, 5);
	{
		static const char *const bad[] = {
			"",         "event=",    "evnt=0x02", "event=0x1ff", "event=0x2,umask=0x1",
			"event=-1", "event=0xzz"
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			assert_int_equal(kepler_perf_parse_event(bad[i], &config), -EINVAL);
	}
	assert_int_equal(kepler_perf_parse_scale("2.3283064365386962890625e-10\n", &scale), 0);
	assert_true(scale == 1.0L / COUNTS_PER_J); /* exactly 2^-32 */
	{
		static const char *const bad[] = { "", "0", "-1e-10", "nan", "inf", "abc", "1e-10x", "2" };
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			assert_int_equal(kepler_perf_parse_scale(bad[i], &scale), -EINVAL);
	}
	assert_int_equal(kepler_perf_parse_cpulist("0,18\n", cpus, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(cpus[1], 18);
	assert_int_equal(kepler_perf_parse_cpulist("0-1,4", cpus, 4, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(cpus[2], 4);
	assert_int_equal(kepler_perf_parse_cpulist("0-7", cpus, 4, &n), -E2BIG);
	{
		static const char *const bad[] = { "", "a", "3-1", "1,0", "0,", "0-", "1,1", "-1" };
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			assert_int_equal(kepler_perf_parse_cpulist(bad[i], cpus, 4, &n), -EINVAL);
	}
}

/* Counts to microjoules: exact for whole joules, rounded down, saturating never below the range. */
static void test_arithmetic(void **state)
{
	long double s = 1.0L / COUNTS_PER_J;

	(void)state;
	assert_int_equal(kepler_perf_count_uj(COUNTS_PER_J, s), 1000000);
	assert_int_equal(kepler_perf_count_uj(1, s), 0);    /* 0.23 uJ */
	assert_int_equal(kepler_perf_count_uj(4295, s), 1); /* 1.00000 uJ */
	assert_int_equal(kepler_perf_count_uj(123 * COUNTS_PER_J + COUNTS_PER_J / 2, s), 123500000);
	/* the 64-bit total's range: 2^32 J */
	assert_int_equal(kepler_perf_count_uj(UINT64_MAX, s), 4294967295999999ULL);
}

/* Two sockets, dram and psys: a zone per event, a part per package, psys once; joules exact. */
static void test_two_sockets(void **state)
{
	struct ctx *c = *state;
	const struct kepler_meter_zone *pkg, *dram, *psys;

	make_tree(c, "--no-rapl --perf-power --sockets 2 --dram --psys");
	c->pmu.count[0][2] = 1000 * COUNTS_PER_J; /* package-0 at 1000 J */
	c->pmu.count[4][2] = 7;
	open_ok(c);
	assert_int_equal(kepler_meter_source(c->m), KEPLER_METER_RAPL_PERF);
	/* pkg and ram on cpu 0 and cpu 4 (the mask), psys on cpu 0 only */
	assert_int_equal(c->pmu.opened, 5);
	pkg = zone(c, "package");
	dram = zone(c, "dram");
	psys = zone(c, "psys");
	assert_int_equal(pkg->nparts, 2);
	assert_string_equal(pkg->parts[0].name, "package-0");
	assert_string_equal(pkg->parts[1].name, "package-1");
	assert_string_equal(dram->parts[1].name, "dram-1");
	assert_int_equal(psys->nparts, 1);
	assert_int_equal(pkg->source, KEPLER_SOURCE_RAPL);
	assert_non_null(strstr(pkg->parts[0].path, "/bus/event_source/devices/power/events/energy-pkg@cpu0"));
	assert_non_null(strstr(kepler_meter_describe(c->m), "rapl-perf: package (2 parts)"));
	read_ok(c, 0);
	assert_int_equal(pkg->delta_uj, 0);         /* primed */
	c->pmu.count[0][2] += 10 * COUNTS_PER_J;    /* 10 J */
	c->pmu.count[4][2] += 5 * COUNTS_PER_J / 2; /* 2.5 J */
	c->pmu.count[0][3] += 3 * COUNTS_PER_J;     /* dram-0 3 J */
	c->pmu.count[0][5] += 40 * COUNTS_PER_J;    /* psys 40 J */
	read_ok(c, SEC);
	assert_int_equal(pkg->parts[0].delta_uj, 10000000);
	assert_int_equal(pkg->parts[1].delta_uj, 2500000);
	assert_int_equal(pkg->delta_uj, 12500000);
	assert_int_equal(dram->delta_uj, 3000000);
	assert_int_equal(psys->delta_uj, 40000000);
}

/* A count of 0.23 uJ at each of 100,000 reads: the total is that of the counter, never lost to rounding. */
static void test_no_drift(void **state)
{
	struct ctx *c = *state;
	uint64_t sum = 0;

	make_tree(c, "--no-rapl --perf-power");
	open_ok(c);
	read_ok(c, 0);
	for (unsigned i = 1; i <= 100000; i++) {
		c->pmu.count[0][2] += 1;
		read_ok(c, i * 1000000ULL);
		sum += zone(c, "package")->delta_uj;
	}
	/* 100,000 counts of 2^-32 J = 23.28 uJ */
	assert_int_equal(sum, 23);
	assert_int_equal(zone(c, "package")->total_uj, 23);
}

/* The 64-bit total wraps after 2^32 J: counted across, within a microjoule. */
static void test_wrap(void **state)
{
	struct ctx *c = *state;
	const struct kepler_meter_zone *pkg;

	make_tree(c, "--no-rapl --perf-power");
	c->pmu.count[0][2] = UINT64_MAX - 2 * COUNTS_PER_J + 1; /* 2 J before the wrap */
	open_ok(c);
	read_ok(c, 0);
	c->pmu.count[0][2] += 5 * COUNTS_PER_J; /* wraps: 5 J later */
	read_ok(c, SEC);
	pkg = zone(c, "package");
	assert_int_equal(pkg->parts[0].event, KEPLER_COUNTER_WRAPPED);
	assert_int_equal(pkg->wraps, 1);
	assert_true(pkg->delta_uj >= 4999999 && pkg->delta_uj <= 5000001);
}

/* rapl.zones keeps the events asked for; none left is an error naming what was found. */
static void test_filter(void **state)
{
	struct ctx *c = *state;
	struct kepler_error err = { 0 };

	make_tree(c, "--no-rapl --perf-power --dram --core");
	c->zone_items[0] = "dram";
	c->zones.count = 1;
	open_ok(c);
	assert_int_equal(kepler_meter_zone_count(c->m), 1);
	assert_string_equal(kepler_meter_zone(c->m, 0)->name, "dram");
	kepler_meter_close(c->m);
	c->m = NULL;
	c->zone_items[0] = "uncore";
	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "found: package, core, dram"));
}

/* What the kernel refuses or a tree that is not the kernel's: errors that say what and where. */
static void test_errors(void **state)
{
	struct ctx *c = *state;
	struct kepler_error err = { 0 };

	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no RAPL PMU"));
	make_tree(c, "--no-rapl --perf-power --sockets 2");
	c->pmu.open_errno = EACCES;
	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -EACCES);
	assert_non_null(strstr(err.msg, "needs CAP_PERFMON"));
	c->pmu.open_errno = 0;
	put(c, "devices/power/events/energy-pkg.unit", "Watts\n");
	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "energy-pkg.unit holds 'Watts', not Joules"));
	put(c, "devices/power/events/energy-pkg.unit", "Joules\n");
	put(c, "devices/power/events/energy-pkg.scale", "-1\n");
	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "energy-pkg.scale holds '-1'"));
	put(c, "devices/power/events/energy-pkg.scale", "2.3283064365386962890625e-10\n");
	put(c, "devices/power/cpumask", "4,0\n");
	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "cpumask holds '4,0'"));
	put(c, "devices/power/cpumask", "0,4\n");
	/* a read that fails: that part keeps delta 0 and says so, the other socket is read */
	open_ok(c);
	read_ok(c, 0);
	c->pmu.read_errno = EIO;
	c->pmu.fail_cpu = 4;
	c->pmu.count[0][2] += COUNTS_PER_J;
	{
		struct kepler_meter_sample s = { .mono_ns = SEC, .cpu_usage_ratio = 0.5, .cpu_count = 8 };

		assert_int_equal(kepler_meter_read(c->m, &s, &err), -EIO);
	}
	assert_non_null(strstr(err.msg, "energy-pkg@cpu4"));
	assert_true(zone(c, "package")->parts[1].read_failed);
	assert_int_equal(zone(c, "package")->delta_uj, 1000000);
}

/* auto: powercap first where it is readable, else perf, and the reason recorded. */
static void test_auto_order(void **state)
{
	struct ctx *c = *state;
	struct kepler_meter_attempts att;
	struct kepler_error err = { 0 };

	make_tree(c, "--no-rapl --perf-power");
	c->p.source = KEPLER_METER_AUTO;
	KEPLER_OK(kepler_meter_open(&c->p, &att, &c->m, &err));
	assert_int_equal(kepler_meter_source(c->m), KEPLER_METER_RAPL_PERF);
	assert_int_equal(att.tried[0].source, KEPLER_METER_RAPL);
	assert_non_null(strstr(att.tried[0].err.msg, "does not exist"));
	kepler_meter_close(c->m);
	c->m = NULL;
	make_tree(c, "--perf-power");
	KEPLER_OK(kepler_meter_open(&c->p, &att, &c->m, &err));
	assert_int_equal(kepler_meter_source(c->m), KEPLER_METER_RAPL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_arithmetic),
		cmocka_unit_test_setup_teardown(test_two_sockets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_drift, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_auto_order, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
