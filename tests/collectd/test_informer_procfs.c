// SPDX-License-Identifier: Apache-2.0
/*
 * The procfs informer on a fake /proc tree with the real layout
 * (<dir>/stat, <dir>/PID/{stat,cgroup,cmdline,exe}): baseline, deltas,
 * new and vanished processes, pid reuse, unreadable entries, kernel
 * threads, containers, VMs; then a smoke run on the real /proc.
 */
#include <errno.h>
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

#include "informer.h"
#include "informer_internal.h"

#define TICK 10000000ULL /* ns per tick at USER_HZ 100 */
#define CID "2a7d6c3b9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70819aab"

struct ctx {
	char dir[64];
	struct kepler_informer *inf;
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	snprintf(c->dir, sizeof(c->dir), "/tmp/kepler-proc-XXXXXX");
	if (!mkdtemp(c->dir))
		return -1;
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	char cmd[128];

	kepler_informer_close(c->inf);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c->dir);
	if (system(cmd) != 0)
		return -1;
	free(c);
	return 0;
}

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void node_stat(struct ctx *c, unsigned busy, unsigned idle)
{
	char path[128], text[256];

	snprintf(path, sizeof(path), "%s/stat", c->dir);
	snprintf(text, sizeof(text),
		 "cpu  %u 0 0 %u 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0 0 0\n", busy,
		 idle);
	write_file(path, text, strlen(text));
}

/* A process: stat with utime/stime/start ticks and flags; optional cgroup, exe, cmdline. */
static void proc(struct ctx *c, unsigned pid, const char *comm, unsigned utime, unsigned stime,
		 unsigned start, unsigned flags, const char *cgroup, const char *exe, const char *cmdline,
		 size_t cmdline_len)
{
	char path[160], text[512];

	snprintf(path, sizeof(path), "%s/%u", c->dir, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/stat", c->dir, pid);
	snprintf(text, sizeof(text),
		 "%u (%s) S 1 %u %u 0 -1 %u 0 0 0 0 %u %u 0 0 20 0 1 0 %u 1000 10 18446744073709551615\n",
		 pid, comm, pid, pid, flags, utime, stime, start);
	write_file(path, text, strlen(text));
	snprintf(path, sizeof(path), "%s/%u/cgroup", c->dir, pid);
	write_file(path, cgroup ? cgroup : "0::/user.slice\n", strlen(cgroup ? cgroup : "0::/user.slice\n"));
	if (exe) {
		snprintf(path, sizeof(path), "%s/%u/exe", c->dir, pid);
		unlink(path);
		assert_int_equal(symlink(exe, path), 0);
	}
	if (cmdline) {
		snprintf(path, sizeof(path), "%s/%u/cmdline", c->dir, pid);
		write_file(path, cmdline, cmdline_len);
	}
}

static void rm_proc(struct ctx *c, unsigned pid)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%u'", c->dir, pid);
	assert_int_equal(system(cmd), 0);
}

static void open_procfs(struct ctx *c)
{
	struct kepler_informer_params p = { .kind = KEPLER_INFORMER_PROCFS, .procfs = c->dir };
	struct kepler_error err = { 0 };

	if (kepler_informer_open(&p, NULL, &c->inf, &err) < 0)
		fail_msg("open: %s", err.msg);
}

static void refresh(struct ctx *c)
{
	struct kepler_error err = { 0 };

	if (kepler_informer_refresh(c->inf, &err) < 0)
		fail_msg("refresh: %s", err.msg);
}

static const struct kepler_proc *find(struct ctx *c, unsigned pid, unsigned start)
{
	for (size_t i = 0; i < kepler_informer_count(c->inf); i++) {
		const struct kepler_proc *p = kepler_informer_proc(c->inf, i);

		if (p->pid == pid && p->start_time_ns == start * TICK)
			return p;
	}
	return NULL;
}

static void test_baseline_and_deltas(void **state)
{
	struct ctx *c = *state;
	const struct kepler_proc *p;
	const struct kepler_node_cpu *n;

	node_stat(c, 100, 900);
	proc(c, 10, "worker", 100, 50, 1000, 0, NULL, "/usr/bin/worker", NULL, 0);
	open_procfs(c);
	refresh(c);
	n = kepler_informer_node(c->inf);
	assert_int_equal(n->cpu_count, 2);
	assert_int_equal(n->busy_delta_ns, 0);
	assert_true(n->usage_ratio == 0);
	p = find(c, 10, 1000);
	assert_non_null(p);
	assert_int_equal(p->cpu_time_ns, 150 * TICK); /* lifetime */
	assert_int_equal(p->cpu_time_delta_ns, 0);    /* first refresh: baseline */
	assert_string_equal(p->comm, "worker");
	assert_string_equal(p->id->exe, "/usr/bin/worker");
	assert_int_equal(p->id->type, KEPLER_PROC_REGULAR);
	assert_int_equal(p->cycles, KEPLER_COUNTER_UNAVAILABLE);

	node_stat(c, 250, 1350); /* +150 busy, +450 idle */
	proc(c, 10, "worker", 180, 70, 1000, 0, NULL, NULL, NULL, 0);
	refresh(c);
	n = kepler_informer_node(c->inf);
	assert_int_equal(n->busy_delta_ns, 150 * TICK);
	assert_int_equal(n->total_delta_ns, 600 * TICK);
	assert_true(n->usage_ratio == 0.25);
	p = find(c, 10, 1000);
	assert_int_equal(p->cpu_time_delta_ns, 100 * TICK);
	assert_int_equal(p->cpu_time_ns, 250 * TICK);
	assert_int_equal(p->state, KEPLER_STATE_RUNNING);
}

static void test_new_vanished_and_reuse(void **state)
{
	struct ctx *c = *state;
	const struct kepler_proc *p;

	node_stat(c, 0, 0);
	proc(c, 10, "old", 10, 0, 1000, 0, NULL, NULL, NULL, 0);
	proc(c, 11, "gone", 30, 5, 1001, 0, NULL, NULL, NULL, 0);
	open_procfs(c);
	refresh(c);
	/* 12 starts, 11 exits, 10 exits and its pid is reused by a new process */
	proc(c, 12, "new", 7, 1, 1500, 0, NULL, NULL, NULL, 0);
	rm_proc(c, 11);
	rm_proc(c, 10);
	proc(c, 10, "reuse", 2, 0, 1600, 0, NULL, NULL, NULL, 0);
	refresh(c);
	p = find(c, 12, 1500);
	assert_non_null(p);
	assert_int_equal(p->cpu_time_delta_ns, 8 * TICK); /* started in the interval: all of it */
	p = find(c, 11, 1001);
	assert_non_null(p);
	assert_int_equal(p->state, KEPLER_STATE_TERMINATED);
	assert_int_equal(p->cpu_time_ns, 35 * TICK); /* the CPU time last seen */
	assert_int_equal(p->cpu_time_delta_ns, 0);
	p = find(c, 10, 1000);
	assert_non_null(p);
	assert_int_equal(p->state, KEPLER_STATE_TERMINATED);
	assert_string_equal(p->comm, "old");
	p = find(c, 10, 1600);
	assert_non_null(p);
	assert_int_equal(p->state, KEPLER_STATE_RUNNING);
	assert_string_equal(p->comm, "reuse"); /* never mixed with the old pid 10 */
	assert_int_equal(p->cpu_time_delta_ns, 2 * TICK);
	assert_int_equal(kepler_informer_count(c->inf), 4);
	/* terminated ones are reported once */
	refresh(c);
	assert_null(find(c, 11, 1001));
	assert_null(find(c, 10, 1000));
	assert_int_equal(kepler_informer_count(c->inf), 2);
}

static void test_unreadable_and_kinds(void **state)
{
	static const char qemu[] = "/usr/bin/qemu-system-x86_64\0-name\0guest=web,debug-threads=on\0"
				   "-uuid\0"
				   "3f2504e0-4f89-11d3-9a0c-0305e82c3301\0";
	struct ctx *c = *state;
	const struct kepler_proc *p;
	char path[160];

	node_stat(c, 0, 0);
	proc(c, 2, "kthreadd", 0, 1, 0, 0x00208040, NULL, NULL, NULL, 0);
	proc(c, 20, "nginx", 5, 5, 2000, 0, "0::/system.slice/docker-" CID ".scope\n", "/usr/sbin/nginx",
	     NULL, 0);
	proc(c, 30, "qemu-system-x86", 50, 50, 3000, 0, NULL, "/usr/bin/qemu-system-x86_64", qemu,
	     sizeof(qemu) - 1);
	proc(c, 40, "odd) (name", 1, 1, 4000, 0, NULL, NULL, NULL, 0);
	open_procfs(c);
	refresh(c);
	p = find(c, 2, 0);
	assert_int_equal(p->id->type, KEPLER_PROC_KERNEL);
	assert_string_equal(p->id->exe, "");
	p = find(c, 20, 2000);
	assert_int_equal(p->id->type, KEPLER_PROC_CONTAINER);
	assert_string_equal(p->id->container.id, CID);
	assert_string_equal(p->id->container.runtime, "docker");
	assert_string_equal(p->id->cgroup, "/system.slice/docker-" CID ".scope");
	p = find(c, 30, 3000);
	assert_int_equal(p->id->type, KEPLER_PROC_VM);
	assert_string_equal(p->id->vm.id, "3f2504e0-4f89-11d3-9a0c-0305e82c3301");
	assert_string_equal(p->id->vm.name, "web");
	assert_string_equal(p->id->vm.hypervisor, "kvm");
	p = find(c, 40, 4000);
	assert_string_equal(p->comm, "odd) (name");
	/* garbage in one stat: carried unchanged and counted, not terminated, not fatal */
	snprintf(path, sizeof(path), "%s/20/stat", c->dir);
	write_file(path, "20 (nginx) S garbage\n", 21);
	refresh(c);
	assert_int_equal(kepler_informer_stats(c->inf)->skipped, 1);
	p = find(c, 20, 2000);
	assert_non_null(p);
	assert_int_equal(p->state, KEPLER_STATE_RUNNING);
	assert_int_equal(p->cpu_time_ns, 10 * TICK);
	/* readable again: no double counting */
	proc(c, 20, "nginx", 6, 5, 2000, 0, NULL, NULL, NULL, 0);
	refresh(c);
	p = find(c, 20, 2000);
	assert_int_equal(p->cpu_time_delta_ns, 1 * TICK);
	assert_string_equal(p->id->container.id, CID); /* identity cached */
}

/*
 * Identity follows the process under procfs too: an exec to another
 * program (runc init becoming the container's entrypoint: a new name) is
 * identified again at once; a process that runs and is moved into a
 * container's cgroup without a new name is, within 16 refreshes.
 */
static void test_identity_follows(void **state)
{
	struct ctx *c = *state;
	const struct kepler_proc *p;
	const char *docker = "0::/system.slice/docker-" CID ".scope\n";
	int moved_at = -1;

	node_stat(c, 100, 100);
	proc(c, 30, "runc:[2:INIT]", 1, 1, 3000, 0, "0::/user.slice\n", "/usr/bin/runc", NULL, 0);
	proc(c, 31, "worker", 1, 1, 3100, 0, "0::/user.slice\n", "/usr/bin/worker", NULL, 0);
	open_procfs(c);
	refresh(c);
	p = find(c, 30, 3000);
	assert_non_null(p);
	assert_string_equal(p->id->exe, "/usr/bin/runc");
	/* exec: a new name, a new executable, the container's cgroup */
	proc(c, 30, "nginx", 3, 1, 3000, 0, docker, "/usr/sbin/nginx", NULL, 0);
	refresh(c);
	p = find(c, 30, 3000);
	assert_non_null(p);
	assert_string_equal(p->comm, "nginx");
	assert_string_equal(p->id->exe, "/usr/sbin/nginx");
	assert_string_equal(p->id->container.id, CID);
	assert_int_equal(p->cpu_time_delta_ns, 2 * TICK); /* the same record goes on */
	/* moved, same name, running */
	proc(c, 31, "worker", 1, 1, 3100, 0, docker, NULL, NULL, 0);
	for (int i = 0; i < 16 && moved_at < 0; i++) {
		proc(c, 31, "worker", 2 + (unsigned)i, 1, 3100, 0, docker, NULL, NULL, 0);
		refresh(c);
		p = find(c, 31, 3100);
		assert_non_null(p);
		if (!strcmp(p->id->container.id, CID))
			moved_at = i + 1;
	}
	print_message("moved into the container: seen at refresh %d after the move\n", moved_at);
	assert_true(moved_at >= 1);
}

static void test_errors(void **state)
{
	struct ctx *c = *state;
	struct kepler_informer_params p = { .kind = KEPLER_INFORMER_PROCFS, .procfs = "/nonexistent" };
	struct kepler_error err = { 0 };
	char path[128];

	assert_int_equal(kepler_informer_open(&p, NULL, &c->inf, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "cannot open /nonexistent"));
	/* a directory that is no procfs */
	p.procfs = c->dir;
	assert_int_equal(kepler_informer_open(&p, NULL, &c->inf, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "is not readable"));
	/* a stat without a cpu line: the refresh fails, naming it */
	snprintf(path, sizeof(path), "%s/stat", c->dir);
	write_file(path, "intr 0\n", 7);
	open_procfs(c);
	assert_int_equal(kepler_informer_refresh(c->inf, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "has no valid 'cpu' line"));
}

/* The real /proc: this process is there, with CPU time and its exe. */
static void test_real_proc(void **state)
{
	struct ctx *c = *state;
	struct kepler_informer_params p = { .kind = KEPLER_INFORMER_PROCFS, .procfs = "/proc" };
	struct kepler_error err = { 0 };
	const struct kepler_proc *me = NULL;
	volatile unsigned long x = 0;

	KEPLER_OK(kepler_informer_open(&p, NULL, &c->inf, &err));
	refresh(c);
	for (unsigned long i = 0; i < 200000000UL; i++)
		x += i;
	refresh(c);
	for (size_t i = 0; i < kepler_informer_count(c->inf); i++)
		if (kepler_informer_proc(c->inf, i)->pid == (uint32_t)getpid())
			me = kepler_informer_proc(c->inf, i);
	assert_non_null(me);
	assert_true(me->cpu_time_delta_ns > 0);
	assert_non_null(strstr(me->id->exe, "test_informer_procfs"));
	assert_true(kepler_informer_node(c->inf)->usage_ratio > 0);
	print_message("real /proc: %zu processes, %u unreadable entries skipped\n",
		      kepler_informer_count(c->inf), kepler_informer_stats(c->inf)->skipped);
	(void)x; /* read: the sum is the point, not its value */
}

/*
 * Each CPU's busy ticks between the last two samples (what lets the eBPF
 * informer skip asking an idle CPU): idle only with none, and only known.
 */
static void test_cpu_was_idle(void **state)
{
	static const char *const stats[] = {
		"cpu  30 0 0 200 0 0 0 0 0 0\ncpu0 10 0 0 100 0 0 0 0 0 0\ncpu1 20 0 0 100 0 0 0 0 0 0\n",
		/* cpu0: only idle and iowait grew; cpu1: a tick of user */
		"cpu  31 0 0 300 3 0 0 0 0 0\ncpu0 10 0 0 150 3 0 0 0 0 0\ncpu1 21 0 0 150 0 0 0 0 0 0\n",
		/* cpu0: a tick of system; cpu1: garbage */
		"cpu  32 0 0 300 3 0 0 0 0 0\ncpu0 10 0 1 150 3 0 0 0 0 0\ncpu1 x\n",
		/* cpu0: no busy tick (but known only since the line before); cpu1: back, from unknown */
		"cpu  32 0 0 400 3 0 0 0 0 0\ncpu0 10 0 1 200 3 0 0 0 0 0\ncpu1 21 0 0 200 0 0 0 0 0 0\n",
		/* cpu0: went backwards (a hotplugged CPU starts again); cpu1: none again */
		"cpu  32 0 0 500 3 0 0 0 0 0\ncpu0 1 0 0 250 3 0 0 0 0 0\ncpu1 21 0 0 250 0 0 0 0 0 0\n",
	};
	static const bool want[][2] = {
		{ false, false }, { true, false }, { false, false }, { true, false }, { false, true }
	};
	struct ctx *c = *state;
	char path[128];

	snprintf(path, sizeof(path), "%s/stat", c->dir);
	write_file(path, stats[0], strlen(stats[0]));
	open_procfs(c);
	for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++) {
		write_file(path, stats[i], strlen(stats[i]));
		refresh(c);
		for (unsigned cpu = 0; cpu < 2; cpu++)
			if (c->inf->ncpu_busy > cpu &&
			    kepler_informer_cpu_was_idle(c->inf, cpu) != want[i][cpu])
				fail_msg("sample %zu, cpu%u: idle %d, want %d", i, cpu, !want[i][cpu],
					 want[i][cpu]);
	}
	assert_false(kepler_informer_cpu_was_idle(c->inf, 1u << 20)); /* no such CPU */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_baseline_and_deltas, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpu_was_idle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_vanished_and_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreadable_and_kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_identity_follows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_real_proc, setup, teardown),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
