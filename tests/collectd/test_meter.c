// SPDX-License-Identifier: Apache-2.0
/*
 * Energy sources on fake sysfs trees built by tools/fake-sysfs.sh (the real
 * powercap and hwmon layout): discovery, sockets, filters, wraparound,
 * resets, garbage, missing and unreadable files, hwmon integration, the
 * power model and the fake meter.
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "json_budget.h"
#include "meter.h"
#include "power_model.h"
#include "redfish.h"

#define SEC 1000000000ULL
#define J 1000000ULL /* uJ per joule */

struct ctx {
	char dir[64];
	struct kepler_strlist zones, chips, fake;
	char *zone_items[4], *chip_items[4];
	struct kepler_meter_params p;
	struct kepler_meter *m;
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	snprintf(c->dir, sizeof(c->dir), "/tmp/kepler-sysfs-XXXXXX");
	if (!mkdtemp(c->dir))
		return -1;
	chmod(c->dir, 0755);
	c->zones.items = c->zone_items;
	c->chips.items = c->chip_items;
	c->p = (struct kepler_meter_params){
		.source = KEPLER_METER_RAPL,
		.sysfs = c->dir,
		.rapl_zones = &c->zones,
		.hwmon_chips = &c->chips,
		.model_file = "",
		.fake_zones = &c->fake,
		.fake_watts = 40,
	};
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	char cmd[128];

	kepler_meter_close(c->m);
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

static void put_u64(struct ctx *c, const char *rel, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)v);
	put(c, rel, buf);
}

static void open_ok(struct ctx *c)
{
	struct kepler_error err = { 0 };

	if (kepler_meter_open(&c->p, NULL, &c->m, &err) < 0)
		fail_msg("meter open: %s", err.msg);
}

static int read_at(struct ctx *c, uint64_t t, struct kepler_error *err)
{
	struct kepler_meter_sample s = { .mono_ns = t, .cpu_usage_ratio = 0.5, .cpu_count = 4 };

	return kepler_meter_read(c->m, &s, err);
}

static void read_ok(struct ctx *c, uint64_t t)
{
	struct kepler_error err = { 0 };

	if (read_at(c, t, &err) < 0)
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

#define PKG0 "class/powercap/intel-rapl:0/energy_uj"
#define PKG1 "class/powercap/intel-rapl:1/energy_uj"

/* Kepler's calculateEnergyDelta table, plus the resets it does not have. */
static void test_counter_table(void **state)
{
	static const struct {
		uint64_t prev, cur, max, dt_ns, want;
		enum kepler_counter_event ev;
	} rows[] = {
		{ 20, 25, 100, 0, 5, KEPLER_COUNTER_OK },
		{ 90, 10, 100, 0, 20, KEPLER_COUNTER_WRAPPED },
		{ 0, 0, 100, 0, 0, KEPLER_COUNTER_OK },
		{ 8, 2, 10, 0, 4, KEPLER_COUNTER_WRAPPED },
		{ 90, 100, 100, 0, 10, KEPLER_COUNTER_OK },
		{ 100, 10, 100, 0, 10, KEPLER_COUNTER_WRAPPED },
		{ 100, 0, 100, 0, 0, KEPLER_COUNTER_WRAPPED },
		/* no range known: backwards is a reset */
		{ 50, 10, 0, 0, 0, KEPLER_COUNTER_RESET },
		/* a "wrap" of more than half the range is a reset */
		{ 40, 5, 100, 0, 0, KEPLER_COUNTER_RESET },
		/* 145 J -> 25 J across a 200 J range in 10 s: 80 J, 8 W */
		{ 145 * J, 25 * J, 200 * J, 10 * SEC, 80 * J, KEPLER_COUNTER_WRAPPED },
		/* a plausible-looking wrap needing 4.3 kW in 5 s: reset */
		{ 240427 * J, 2 * J, 262143 * J, 5 * SEC, 0, KEPLER_COUNTER_RESET },
		/* the same at 1.4 kW: a wrap (a reset there cannot be told apart) */
		{ 255145 * J, 2 * J, 262143 * J, 5 * SEC, 7000 * J, KEPLER_COUNTER_WRAPPED },
		/* a plausible-looking wrap needing 20 kW in 5 s: reset */
		{ 200000 * J, 1 * J, 262143 * J, 5 * SEC, 0, KEPLER_COUNTER_RESET },
		/* forward by 50 kJ in 1 s (50 kW): not energy, a reset */
		{ 1 * J, 50001 * J, 262143 * J, 1 * SEC, 0, KEPLER_COUNTER_RESET },
		/* forward 1 kJ in 1 s: fine */
		{ 1 * J, 1001 * J, 262143 * J, 1 * SEC, 1000 * J, KEPLER_COUNTER_OK },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct kepler_counter c = { .max_range_uj = rows[i].max };
		uint64_t d = 99;

		assert_int_equal(kepler_counter_update(&c, rows[i].prev, 1000, &d), KEPLER_COUNTER_PRIMED);
		assert_int_equal(d, 0);
		assert_int_equal(kepler_counter_update(&c, rows[i].cur, 1000 + rows[i].dt_ns, &d),
				 rows[i].ev);
		if (d != rows[i].want)
			fail_msg("row %zu: delta %llu, want %llu", i, (unsigned long long)d,
				 (unsigned long long)rows[i].want);
	}
}

static void test_rapl_discovery(void **state)
{
	struct ctx *c = *state;
	const struct kepler_meter_zone *z;

	make_tree(c, "--core --dram --psys");
	open_ok(c);
	assert_int_equal(kepler_meter_source(c->m), KEPLER_METER_RAPL);
	assert_int_equal(kepler_meter_zone_count(c->m), 4);
	assert_string_equal(kepler_meter_zone(c->m, 0)->name, "package");
	assert_string_equal(kepler_meter_zone(c->m, 1)->name, "core");
	assert_string_equal(kepler_meter_zone(c->m, 2)->name, "dram");
	assert_string_equal(kepler_meter_zone(c->m, 3)->name, "psys");
	z = zone(c, "package");
	assert_int_equal(z->source, KEPLER_SOURCE_RAPL);
	assert_int_equal(z->nparts, 1);
	assert_int_equal(z->index, 0);
	assert_string_equal(z->parts[0].name, "package-0");
	assert_non_null(strstr(z->path, "/class/powercap/intel-rapl:0"));
	assert_int_equal(z->max_range_uj, 262143328850ULL);
	/* first read primes: no energy yet */
	read_ok(c, 1 * SEC);
	assert_int_equal(z->delta_uj, 0);
	assert_int_equal(z->parts[0].event, KEPLER_COUNTER_PRIMED);
	put_u64(c, PKG0, 240422366267ULL + 30 * J);
	read_ok(c, 6 * SEC);
	assert_int_equal(z->delta_uj, 30 * J);
	assert_int_equal(z->total_uj, 30 * J);
	assert_int_equal(zone(c, "dram")->delta_uj, 0);
}

static void test_rapl_two_sockets(void **state)
{
	struct ctx *c = *state;
	const struct kepler_meter_zone *z;

	make_tree(c, "--sockets 2 --dram");
	open_ok(c);
	assert_int_equal(kepler_meter_zone_count(c->m), 2);
	z = zone(c, "package");
	assert_int_equal(z->nparts, 2);
	assert_int_equal(z->index, -1);
	assert_string_equal(z->path, "aggregated-package");
	assert_string_equal(z->parts[0].name, "package-0");
	assert_string_equal(z->parts[1].name, "package-1");
	assert_int_equal(z->max_range_uj, 2 * 262143328850ULL);
	assert_int_equal(zone(c, "dram")->nparts, 2);
	read_ok(c, 1 * SEC);
	put_u64(c, PKG0, 240422366267ULL + 10 * J);
	put_u64(c, PKG1, 239422366267ULL + 7 * J);
	read_ok(c, 6 * SEC);
	assert_int_equal(z->delta_uj, 17 * J);
	assert_int_equal(z->parts[0].delta_uj, 10 * J);
	assert_int_equal(z->parts[1].delta_uj, 7 * J);
	assert_int_equal(z->parts[1].total_uj, 7 * J);
	assert_int_equal(z->total_uj, 17 * J);
}

static void test_rapl_mmio(void **state)
{
	struct ctx *c = *state;
	const struct kepler_meter_zone *z;
	char cmd[256];

	make_tree(c, "--mmio");
	open_ok(c);
	z = zone(c, "package");
	assert_int_equal(z->nparts, 1); /* the MMIO twin is not counted twice */
	assert_non_null(strstr(z->path, "/intel-rapl:0"));
	kepler_meter_close(c->m);
	c->m = NULL;
	/* only MMIO: used */
	snprintf(cmd, sizeof(cmd), "rm '%s/class/powercap/intel-rapl:0'", c->dir);
	assert_int_equal(system(cmd), 0);
	open_ok(c);
	z = zone(c, "package");
	assert_int_equal(z->nparts, 1);
	assert_non_null(strstr(z->path, "/intel-rapl-mmio:0"));
}

static void test_rapl_filter(void **state)
{
	struct ctx *c = *state;
	struct kepler_error err = { 0 };

	make_tree(c, "--core --dram --psys");
	c->zone_items[0] = "DRAM";
	c->zone_items[1] = "psys";
	c->zones.count = 2;
	open_ok(c);
	assert_int_equal(kepler_meter_zone_count(c->m), 2);
	assert_string_equal(kepler_meter_zone(c->m, 0)->name, "dram");
	assert_string_equal(kepler_meter_zone(c->m, 1)->name, "psys");
	kepler_meter_close(c->m);
	c->m = NULL;
	c->zone_items[0] = "gpu";
	c->zones.count = 1;
	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no RAPL zones left after filtering"));
	assert_non_null(strstr(err.msg, "package, core, dram, psys"));
}

/* A 1 kJ range and 300 J per read: a wrap every few reads, total exact. */
static void test_rapl_wraparound(void **state)
{
	struct ctx *c = *state;
	const uint64_t range = 1000 * J, step = 300 * J;
	const struct kepler_meter_zone *z;
	uint64_t raw = 900 * J;

	make_tree(c, "");
	put_u64(c, "class/powercap/intel-rapl:0/max_energy_range_uj", range);
	put_u64(c, PKG0, raw);
	open_ok(c);
	z = zone(c, "package");
	read_ok(c, 0);
	for (int i = 1; i <= 20; i++) {
		raw = (raw + step) % range;
		put_u64(c, PKG0, raw);
		read_ok(c, (uint64_t)i * 5 * SEC);
		assert_int_equal(z->delta_uj, step);
	}
	assert_int_equal(z->total_uj, 20 * step);
	assert_int_equal(z->wraps, 6); /* 900 + 20 * 300 = 6900 J: 6 crossings */
	assert_int_equal(z->resets, 0);
}

static void test_rapl_reset(void **state)
{
	struct ctx *c = *state;
	const struct kepler_meter_zone *z;

	make_tree(c, "");
	open_ok(c);
	z = zone(c, "package");
	read_ok(c, 0);
	put_u64(c, PKG0, 240422366267ULL + 5 * J);
	read_ok(c, 5 * SEC);
	/* the driver was reloaded: the counter restarts near 0 */
	put_u64(c, PKG0, 2 * J);
	read_ok(c, 10 * SEC);
	assert_int_equal(z->delta_uj, 0);
	assert_int_equal(z->parts[0].event, KEPLER_COUNTER_RESET);
	assert_int_equal(z->resets, 1);
	put_u64(c, PKG0, 9 * J);
	read_ok(c, 15 * SEC);
	assert_int_equal(z->delta_uj, 7 * J);
	assert_int_equal(z->total_uj, 12 * J);
}

static void test_rapl_garbage(void **state)
{
	static const struct {
		const char *text;
		int code;
		const char *msg;
	} rows[] = {
		{ "abc\n", -EINVAL, "holds 'abc', expected an unsigned number" },
		{ "", -EINVAL, "is empty" },
		{ "\n", -EINVAL, "is empty" },
		{ "-5\n", -EINVAL, "holds '-5'" },
		{ " 12\n", -EINVAL, "holds ' 12'" },
		{ "12abc\n", -EINVAL, "holds '12abc'" },
		{ "99999999999999999999999\n", -ERANGE, "beyond 64 bits" },
		{ "300000000000\n", -EINVAL, "above its max_energy_range_uj" },
		{ "1\x01\xff\n", -EINVAL, "holds '1\\x01\\xff'" },
	};
	struct ctx *c = *state;
	const struct kepler_meter_zone *z, *dram;
	uint64_t base = 240422366267ULL;

	make_tree(c, "--dram");
	open_ok(c);
	z = zone(c, "package");
	dram = zone(c, "dram");
	read_ok(c, 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct kepler_error err = { 0 };

		put(c, PKG0, rows[i].text);
		put_u64(c, "class/powercap/intel-rapl:0/intel-rapl:0:0/energy_uj",
			20000000000ULL + (i + 1) * J);
		assert_int_equal(read_at(c, (i + 1) * SEC, &err), rows[i].code);
		if (!strstr(err.msg, rows[i].msg) || !strstr(err.msg, "intel-rapl:0/energy_uj"))
			fail_msg("row %zu: message '%s'", i, err.msg);
		assert_int_equal(z->delta_uj, 0); /* nothing invented */
		assert_true(z->parts[0].read_failed);
		assert_int_equal(dram->delta_uj, 1 * J); /* the other zone still read */
	}
	assert_int_equal(z->read_errors, 9);
	/* good again: the energy since the last good read is all there */
	put_u64(c, PKG0, base + 40 * J);
	read_ok(c, 20 * SEC);
	assert_int_equal(z->delta_uj, 40 * J);
	assert_int_equal(z->total_uj, 40 * J);
}

static void test_rapl_missing_files(void **state)
{
	struct ctx *c = *state;
	struct kepler_error err = { 0 };
	char path[256];

	make_tree(c, "");
	open_ok(c);
	read_ok(c, 0);
	snprintf(path, sizeof(path), "%s/%s", c->dir, PKG0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(read_at(c, 5 * SEC, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "cannot open"));
	assert_non_null(strstr(err.msg, "energy_uj"));
	kepler_meter_close(c->m);
	c->m = NULL;
	/* at discovery: missing or garbage range fails the source, naming the file */
	put_u64(c, PKG0, 5);
	snprintf(path, sizeof(path), "%s/class/powercap/intel-rapl:0/max_energy_range_uj", c->dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "max_energy_range_uj"));
	put(c, "class/powercap/intel-rapl:0/max_energy_range_uj", "lots\n");
	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "holds 'lots'"));
	/* no powercap at all */
	c->p.sysfs = "/nonexistent-sysfs";
	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no RAPL: /nonexistent-sysfs/class/powercap does not exist"));
}

/*
 * A bad first read is tried again for a while before the source is given
 * up: one torn write in a stand-in tree must not switch a restarting
 * collector to the power model. One that stays bad still fails, naming it.
 */
static void test_rapl_first_read_retried(void **state)
{
	struct ctx *c = *state;
	struct kepler_error err = { 0 };
	int status;
	pid_t pid;

	make_tree(c, "");
	put(c, PKG0, "");
	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "is empty"));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		usleep(30000);
		put_u64(c, PKG0, 7);
		_exit(0);
	}
	open_ok(c);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(zone(c, "package")->parts[0].read_failed, false);
}

/* A domain that appears after start is not measured, and is said once (a restart is needed). */
static void test_rapl_new_domain_after_start(void **state)
{
	struct ctx *c = *state;
	char path[512];

	make_tree(c, "");
	open_ok(c);
	read_ok(c, 1 * SEC);
	assert_int_equal(kepler_meter_new_domains(c->m), 0);
	snprintf(path, sizeof(path), "%s/class/powercap/intel-rapl:1", c->dir);
	assert_int_equal(mkdir(path, 0755), 0);
	put(c, "class/powercap/intel-rapl:1/name", "package-1\n");
	put_u64(c, "class/powercap/intel-rapl:1/energy_uj", 5);
	read_ok(c, 30 * SEC); /* looked at once a minute */
	assert_int_equal(kepler_meter_new_domains(c->m), 0);
	read_ok(c, 62 * SEC);
	assert_int_equal(kepler_meter_new_domains(c->m), 1);
	assert_int_equal(kepler_meter_zone_count(c->m), 1); /* still what was opened at start */
}

/* energy_uj is root-only since Linux 5.10: open as an unprivileged user. */
static void test_rapl_unreadable(void **state)
{
	struct ctx *c = *state;
	int fds[2], status;
	char msg[600] = "";
	char path[256];
	pid_t pid;

	if (geteuid() != 0)
		kepler_skip("needs root to create a root-only file and become another user");
	make_tree(c, "");
	snprintf(path, sizeof(path), "%s/%s", c->dir, PKG0);
	assert_int_equal(chmod(path, 0400), 0);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct kepler_meter *m = NULL;
		struct kepler_error err = { 0 };
		int r;

		close(fds[0]);
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		r = kepler_meter_open(&c->p, NULL, &m, &err);
		if (write(fds[1], err.msg, strlen(err.msg)) < 0)
			_exit(4);
		_exit(r == -EACCES ? 0 : 1);
	}
	close(fds[1]);
	if (read(fds[0], msg, sizeof(msg) - 1) < 0)
		msg[0] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("child status %d, message '%s'", status, msg);
	assert_non_null(strstr(msg, "permission denied reading"));
	assert_non_null(strstr(msg, "root-only since Linux 5.10"));
}

#define HW "class/hwmon/hwmon1/power1_average"

static void test_hwmon_integration(void **state)
{
	/* (time, microwatts) -> expected delta, trapezoids */
	static const struct {
		uint64_t t_ns, uw, want_uj;
	} seq[] = {
		{ 0, 250000000, 0 },
		{ 5 * SEC, 250000000, 1250 * J },          /* 250 W x 5 s */
		{ 10 * SEC, 100000000, 875 * J },          /* (250+100)/2 x 5 s */
		{ 10 * SEC + SEC / 2, 100000000, 50 * J }, /* 100 W x 0.5 s */
		{ 10 * SEC + SEC / 2 + 3, 1, 0 },          /* 3 ns: 0.15 uJ, carried */
		{ 12 * SEC, 1000001, 0 },                  /* see below */
	};
	struct ctx *c = *state;
	const struct kepler_meter_zone *z;
	uint64_t total = 0;

	make_tree(c, "--no-rapl --hwmon");
	c->p.source = KEPLER_METER_HWMON;
	open_ok(c);
	z = zone(c, "platform");
	assert_int_equal(z->source, KEPLER_SOURCE_HWMON);
	assert_int_equal(z->nparts, 1); /* coretemp has no power sensor and is not a meter */
	assert_string_equal(z->parts[0].name, "power_meter_power1");
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		put_u64(c, HW, seq[i].uw);
		read_ok(c, seq[i].t_ns);
		if (i < 5)
			assert_int_equal(z->delta_uj, seq[i].want_uj);
		total += z->delta_uj;
	}
	/*
	 * last step: (1 + 1000001)/2 uW x (1.5 s - 3 ns) + 0.15 uJ carried
	 * = 500001 x 1.499999997 + 0.15 = 750001.498... + 0.15 -> 750001 uJ
	 */
	assert_int_equal(z->delta_uj, 750001);
	assert_int_equal(total, z->total_uj);
}

static void test_hwmon_energy_and_chips(void **state)
{
	struct ctx *c = *state;
	struct kepler_error err = { 0 };
	const struct kepler_meter_zone *z;
	char path[256];

	make_tree(c, "--no-rapl --hwmon");
	c->p.source = KEPLER_METER_HWMON;
	/* a chip with an energy counter: used instead of its power sensor */
	put(c, "class/hwmon/hwmon1/energy1_input", "1000\n");
	put(c, "class/hwmon/hwmon1/energy1_label", "Node\n");
	open_ok(c);
	z = zone(c, "platform");
	assert_int_equal(z->nparts, 1);
	assert_string_equal(z->parts[0].name, "Node");
	read_ok(c, 0);
	put(c, "class/hwmon/hwmon1/energy1_input", "5001000\n");
	read_ok(c, 5 * SEC);
	assert_int_equal(z->delta_uj, 5 * J);
	kepler_meter_close(c->m);
	c->m = NULL;
	/* chips that are not meters are not used, and the error says what is there */
	c->chip_items[0] = "coretemp";
	c->chips.count = 1;
	assert_int_equal(kepler_meter_open(&c->p, NULL, &c->m, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "chips here: coretemp, power_meter"));
	/* garbage power */
	c->chips.count = 0;
	snprintf(path, sizeof(path), "%s/class/hwmon/hwmon1/energy1_input", c->dir);
	unlink(path);
	open_ok(c);
	read_ok(c, 0);
	put(c, HW, "-1\n");
	assert_int_equal(read_at(c, 5 * SEC, &err), -EINVAL);
	put(c, HW, "999999999999999\n");
	assert_int_equal(read_at(c, 6 * SEC, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not a plausible power"));
	assert_int_equal(zone(c, "platform")->total_uj, 0);
}

static void test_auto_falls_back_to_model(void **state)
{
	struct ctx *c = *state;
	struct kepler_meter_attempts att;
	struct kepler_error err = { 0 };

	/* an empty sysfs: no powercap, no hwmon */
	c->p.source = KEPLER_METER_RAPL;
	assert_int_equal(kepler_meter_open(&c->p, &att, &c->m, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no RAPL"));
	c->p.source = KEPLER_METER_AUTO;
	KEPLER_OK(kepler_meter_open(&c->p, &att, &c->m, &err));
	assert_int_equal(kepler_meter_source(c->m), KEPLER_METER_MODEL);
	assert_int_equal(att.count, 3);
	assert_int_equal(att.tried[0].source, KEPLER_METER_RAPL);
	assert_non_null(strstr(att.tried[0].err.msg, "does not exist"));
	assert_int_equal(att.tried[1].source, KEPLER_METER_RAPL_PERF);
	assert_non_null(strstr(att.tried[1].err.msg, "no RAPL PMU"));
	assert_int_equal(att.tried[2].source, KEPLER_METER_HWMON);
	assert_int_equal(zone(c, "package")->source, KEPLER_SOURCE_MODEL);
	assert_non_null(strstr(kepler_meter_provenance(c->m), "Cloud Carbon Footprint"));
	kepler_meter_close(c->m);
	c->m = NULL;
	/* with a meter, auto takes it; fake is never chosen by auto */
	make_tree(c, "--no-rapl --hwmon");
	KEPLER_OK(kepler_meter_open(&c->p, &att, &c->m, &err));
	assert_int_equal(kepler_meter_source(c->m), KEPLER_METER_HWMON);
	assert_int_equal(att.count, 2); /* rapl, rapl-perf */
}

/*
 * auto with RAPL and a platform meter: both read, each zone with its own
 * source; without a platform meter, RAPL alone and hwmon in the attempts;
 * meter.source rapl never reads hwmon.
 */
static void test_auto_reads_rapl_and_platform(void **state)
{
	struct ctx *c = *state;
	struct kepler_meter_attempts att;
	struct kepler_error err = { 0 };

	make_tree(c, "--dram --hwmon");
	c->p.source = KEPLER_METER_AUTO;
	KEPLER_OK(kepler_meter_open(&c->p, &att, &c->m, &err));
	assert_int_equal(kepler_meter_source(c->m), KEPLER_METER_RAPL);
	assert_true(kepler_meter_has_platform(c->m));
	assert_int_equal(kepler_meter_zone_count(c->m), 3);
	assert_int_equal(zone(c, "package")->source, KEPLER_SOURCE_RAPL);
	assert_int_equal(zone(c, "platform")->source, KEPLER_SOURCE_HWMON);
	assert_non_null(strstr(kepler_meter_describe(c->m), "; and the platform hwmon: platform"));
	read_ok(c, 0);
	put_u64(c, "class/hwmon/hwmon1/power1_average", 100000000); /* 100 W */
	read_ok(c, 2 * SEC);
	assert_true(zone(c, "platform")->delta_uj > 0);
	kepler_meter_close(c->m);
	c->m = NULL;
	c->p.source = KEPLER_METER_RAPL;
	KEPLER_OK(kepler_meter_open(&c->p, &att, &c->m, &err));
	assert_false(kepler_meter_has_platform(c->m));
	assert_int_equal(kepler_meter_zone_count(c->m), 2);
}

static void test_model_exact(void **state)
{
	static const char text[] =
		"kind: kepler-power-model\nversion: 1\nname: test\n"
		"provenance: {source: a test}\nfeatures: [cpu_count, cpu_busy]\n"
		"zones:\n  dram: {intercept: 0.25, coefficients: {cpu_count: 0, cpu_busy: 0.5}}\n"
		"  package: {intercept: 1.5, coefficients: {cpu_count: 0.5, cpu_busy: 2}}\n";
	struct ctx *c = *state;
	struct kepler_meter_sample s = { .cpu_count = 4, .cpu_usage_ratio = 0.25 };
	char path[128];

	snprintf(path, sizeof(path), "%s/model.yaml", c->dir);
	put(c, "model.yaml", text);
	c->p.source = KEPLER_METER_MODEL;
	c->p.model_file = path;
	open_ok(c);
	/* zones in the conventional order, whatever the file's */
	assert_string_equal(kepler_meter_zone(c->m, 0)->name, "package");
	assert_string_equal(kepler_meter_zone(c->m, 1)->name, "dram");
	assert_int_equal(kepler_meter_read(c->m, &s, NULL), 0);
	s.mono_ns = 5 * SEC;
	assert_int_equal(kepler_meter_read(c->m, &s, NULL), 0);
	/* package: 1.5 + 0.5 x 4 + 2 x (0.25 x 4) = 5.5 W x 5 s */
	assert_int_equal(zone(c, "package")->delta_uj, 27500000);
	/* dram: 0.25 + 0.5 x 1 = 0.75 W x 5 s */
	assert_int_equal(zone(c, "dram")->delta_uj, 3750000);
	/* fractions carried, not lost: 5.5 W x 1500 ns = 8.25 uJ, 4 times = 33 */
	for (int i = 1; i <= 4; i++) {
		s.mono_ns = 5 * SEC + (uint64_t)i * 1500;
		assert_int_equal(kepler_meter_read(c->m, &s, NULL), 0);
	}
	assert_int_equal(zone(c, "package")->total_uj, 27500000 + 33);
}

static void test_model_default(void **state)
{
	struct ctx *c = *state;
	struct kepler_meter_sample s = { .cpu_count = 4, .cpu_usage_ratio = 0.5 };

	c->p.source = KEPLER_METER_MODEL;
	open_ok(c);
	assert_int_equal(kepler_meter_read(c->m, &s, NULL), 0);
	s.mono_ns = 5 * SEC;
	assert_int_equal(kepler_meter_read(c->m, &s, NULL), 0);
	/* 0.74 x 4 + 2.76 x 2 = 8.48 W x 5 s */
	assert_int_equal(zone(c, "package")->delta_uj, 42400000);
	assert_string_equal(zone(c, "package")->path, "model:builtin#package");
}

static void test_model_errors(void **state)
{
	static const struct {
		const char *text, *msg;
	} rows[] = {
		{ "kind: [", "model.yaml:2: malformed YAML: did not find expected node content" },
		{ "", "empty model file" },
		{ "kind: other\nversion: 1\nfeatures: [cpu_count]\nzones: {}\n",
		  "model.yaml:1: kind must be" },
		{ "kind: kepler-power-model\nversion: 2\nfeatures: [cpu_count]\nzones: {}\n",
		  "model.yaml:2: model format version 2; this kepler-collectd reads version 1" },
		{ "kind: kepler-power-model\nversion: 1\nfeatures: [gpu_busy]\nzones: {}\n",
		  "model.yaml:3: unknown feature 'gpu_busy'" },
		{ "kind: kepler-power-model\nversion: 1\nfeatures: [cpu_busy, cpu_busy]\nzones: {}\n",
		  "model.yaml:3: feature listed twice" },
		{ "kind: kepler-power-model\nversion: 1\nfeatures: [cpu_busy]\nzones: {}\n",
		  "zones is empty" },
		{ "kind: kepler-power-model\nversion: 1\nfeatures: [cpu_busy]\nzones:\n  package:\n    intercept: 1\n",
		  "model.yaml:5: zone 'package' needs intercept and coefficients" },
		{ "kind: kepler-power-model\nversion: 1\nfeatures: [cpu_busy]\nzones:\n  package:\n    intercept: 1\n    coefficients: {cpu_count: 1}\n",
		  "model.yaml:7: coefficient for 'cpu_count', which is not in features" },
		{ "kind: kepler-power-model\nversion: 1\nfeatures: [cpu_busy, cpu_count]\nzones:\n  package:\n    intercept: 1\n    coefficients: {cpu_count: 1}\n",
		  "model.yaml:5: zone 'package' has no coefficient for 'cpu_busy'" },
		{ "kind: kepler-power-model\nversion: 1\nfeatures: [cpu_busy]\nzones:\n  package:\n    intercept: .nan\n    coefficients: {cpu_busy: 1}\n",
		  "model.yaml:6: '.nan' is not a finite number" },
		{ "kind: kepler-power-model\nversion: 1\nfeatures: [cpu_busy]\nzones:\n  package:\n    intercept: 1e999\n    coefficients: {cpu_busy: 1}\n",
		  "'1e999' is not a finite number" },
		{ "kind: kepler-power-model\nversion: 1\nfeatures: [cpu_busy]\nzones:\n  package:\n    intercept: 1\n    coefficients: {cpu_busy: -2e7}\n",
		  "model.yaml:7: -2e7 is out of range" },
		{ "kind: kepler-power-model\nversion: 1\nversion: 1\n",
		  "model.yaml:3: duplicate key 'version'" },
		{ "kind: kepler-power-model\nversion: 1\nwatts: 3\n", "model.yaml:3: unknown key 'watts'" },
		{ "- a\n- b\n", "the model must be a mapping" },
	};
	struct kepler_power_model m;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct kepler_error err = { 0 };

		assert_int_equal(
			kepler_power_model_parse(rows[i].text, strlen(rows[i].text), "model.yaml", &m, &err),
			-EINVAL);
		if (!strstr(err.msg, rows[i].msg))
			fail_msg("row %zu: '%s' lacks '%s'", i, err.msg, rows[i].msg);
	}
}

static void test_model_file_missing(void **state)
{
	struct ctx *c = *state;
	struct kepler_meter_attempts att;
	struct kepler_error err = { 0 };

	c->p.source = KEPLER_METER_AUTO;
	c->p.model_file = "/nonexistent/model.yaml";
	assert_int_equal(kepler_meter_open(&c->p, &att, &c->m, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "cannot open model file /nonexistent/model.yaml"));
	assert_int_equal(att.count, 4); /* rapl, rapl-perf, hwmon, model */
}

static void test_fake(void **state)
{
	struct ctx *c = *state;
	struct kepler_meter_sample s = { .cpu_count = 2, .cpu_usage_ratio = 1.0 };

	c->p.source = KEPLER_METER_FAKE;
	open_ok(c);
	assert_int_equal(kepler_meter_zone_count(c->m), 3);
	assert_int_equal(zone(c, "package")->source, KEPLER_SOURCE_FAKE);
	assert_int_equal(kepler_meter_read(c->m, &s, NULL), 0);
	s.mono_ns = 5 * SEC;
	assert_int_equal(kepler_meter_read(c->m, &s, NULL), 0);
	assert_int_equal(zone(c, "package")->delta_uj, 200 * J); /* 40 W x 5 s */
	assert_int_equal(zone(c, "core")->delta_uj, 140 * J);
	assert_int_equal(zone(c, "dram")->delta_uj, 30 * J);
	s.cpu_usage_ratio = 0;
	s.mono_ns = 10 * SEC;
	assert_int_equal(kepler_meter_read(c->m, &s, NULL), 0);
	assert_int_equal(zone(c, "package")->delta_uj, 60 * J); /* 30% at idle */
}

/*
 * A BMC's document of 1 MiB (what the client takes) shaped to cost json-c
 * the most ("{}," would be 270 MiB as a tree) is refused before a tree is
 * built; an ordinary one is read; the estimate counts nothing inside strings.
 */
static void test_redfish_document_budget(void **state)
{
	size_t size = 1u << 20, len = 0;
	char *doc = malloc(size + 64);
	struct kepler_error err = { 0 };
	const char *real = "{\"PowerWatts\": {\"Reading\": 312.5}, \"Note\": \"{{{[[[,,,:::\\\"{\"}";
	uint64_t mw = 0, values = 0;

	(void)state;
	assert_non_null(doc);
	len += (size_t)snprintf(doc, 64, "{\"a\": [");
	while (len + 8 < size) {
		memcpy(doc + len, "{},", 3);
		len += 3;
	}
	len += (size_t)snprintf(doc + len, 64, "{}]}");
	assert_int_equal(kepler_redfish_watts(doc, len, KEPLER_REDFISH_ENVIRONMENT, &mw, &err), -E2BIG);
	print_message("%s\n", err.msg);
	free(doc);
	assert_int_equal(kepler_redfish_watts(real, strlen(real), KEPLER_REDFISH_ENVIRONMENT, &mw, &err), 0);
	assert_int_equal(mw, 312500);
	kepler_json_tree_cost(real, strlen(real), &values);
	assert_int_equal(values,
			 2 + 5); /* 2 objects; the root, 3 colons and a comma (none inside the string) */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_table),
		cmocka_unit_test_setup_teardown(test_rapl_discovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rapl_two_sockets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rapl_mmio, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rapl_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rapl_wraparound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rapl_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rapl_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rapl_first_read_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rapl_new_domain_after_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rapl_missing_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rapl_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hwmon_integration, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hwmon_energy_and_chips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_auto_falls_back_to_model, setup, teardown),
		cmocka_unit_test_setup_teardown(test_auto_reads_rapl_and_platform, setup, teardown),
		cmocka_unit_test_setup_teardown(test_model_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_model_default, setup, teardown),
		cmocka_unit_test(test_model_errors),
		cmocka_unit_test(test_redfish_document_budget),
		cmocka_unit_test_setup_teardown(test_model_file_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fake, setup, teardown),
	};

	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
