// SPDX-License-Identifier: Apache-2.0
/*
 * The eBPF informer in the real kernel: CPU time of a running process and
 * of one that exits between two refreshes (within 5% of what the kernel's
 * rusage says), 500 short-lived processes in one interval all accounted,
 * the overflow counter when the map is too small. Skipped, with the reason
 * printed, without root or kernel BTF.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "informer.h"

static bool can_run_bpf(void)
{
	if (geteuid() != 0) {
		print_message("SKIP: the eBPF informer needs root (CAP_BPF, CAP_PERFMON)\n");
		return false;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		print_message("SKIP: no kernel BTF at /sys/kernel/btf/vmlinux\n");
		return false;
	}
	return true;
}

static uint64_t cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void burn_cpu_us(uint64_t us)
{
	uint64_t end = cpu_now_ns() + us * 1000;
	volatile unsigned long x = 0;

	while (cpu_now_ns() < end)
		for (int i = 0; i < 1000; i++)
			x += (unsigned long)i;
}

static uint64_t rusage_ns(const struct rusage *ru)
{
	return (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000ULL +
	       (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000ULL;
}

static struct kepler_informer *open_ebpf_opts(uint32_t max, bool sw_counters)
{
	struct kepler_informer_params p = { .kind = KEPLER_INFORMER_EBPF, .procfs = "/proc",
					    .bpf_max_processes = max,
					    .hw_counters_software = sw_counters };
	struct kepler_informer *inf = NULL;
	struct kepler_error err = { 0 };

	if (kepler_informer_open(&p, NULL, &inf, &err) < 0)
		fail_msg("open ebpf: %s", err.msg);
	return inf;
}

static struct kepler_informer *open_ebpf(uint32_t max)
{
	return open_ebpf_opts(max, false);
}

static void refresh(struct kepler_informer *inf)
{
	struct kepler_error err = { 0 };

	if (kepler_informer_refresh(inf, &err) < 0)
		fail_msg("refresh: %s", err.msg);
}

static const struct kepler_proc *find_pid(struct kepler_informer *inf, pid_t pid)
{
	for (size_t i = 0; i < kepler_informer_count(inf); i++)
		if (kepler_informer_proc(inf, i)->pid == (uint32_t)pid)
			return kepler_informer_proc(inf, i);
	return NULL;
}

/*
 * Refresh until @pid is reported terminated (wait4() can return before the
 * child's final context switch, which is what marks it done) and return it.
 */
static const struct kepler_proc *terminated_proc(struct kepler_informer *inf, pid_t pid)
{
	const struct kepler_proc *p = NULL;

	for (int i = 0; i < 100; i++) {
		refresh(inf);
		p = find_pid(inf, pid);
		assert_non_null(p);
		if (p->state == KEPLER_STATE_TERMINATED)
			break;
		usleep(10000);
	}
	return p;
}

static void assert_close(const char *what, uint64_t got, uint64_t want)
{
	print_message("%s: eBPF %.2f ms, rusage %.2f ms\n", what, got / 1e6, want / 1e6);
	if (got < want * 0.95 || got > want * 1.05)
		fail_msg("%s: %llu ns is not within 5%% of %llu ns", what, (unsigned long long)got,
			 (unsigned long long)want);
}

/* A running child: its delta over an interval matches its own CPU clock. */
static void test_running_process(void **state)
{
	struct kepler_informer *inf;
	const struct kepler_proc *p;
	int to_child[2], from_child[2], status;
	uint64_t child_cpu[2], one, before_end, first;
	pid_t pid;
	char go;

	(void)state;
	if (!can_run_bpf()) {
		skip();
		return;
	}
	inf = open_ebpf(0);
	assert_int_equal(kepler_informer_kind(inf), KEPLER_INFORMER_EBPF);
	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(from_child), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t t[2];

		burn_cpu_us(20000);
		t[0] = cpu_now_ns();
		if (write(from_child[1], &t[0], 8) != 8 || read(to_child[0], &go, 1) != 1)
			_exit(1);
		burn_cpu_us(300000);
		t[1] = cpu_now_ns();
		if (write(from_child[1], &t[1], 8) != 8 || read(to_child[0], &go, 1) != 1)
			_exit(1);
		_exit(0);
	}
	assert_int_equal(read(from_child[0], &child_cpu[0], 8), 8);
	refresh(inf);
	p = find_pid(inf, pid);
	first = p ? p->cpu_time_ns : 0;
	assert_int_equal(write(to_child[1], "g", 1), 1);
	assert_int_equal(read(from_child[0], &child_cpu[1], 8), 8);
	refresh(inf);
	p = find_pid(inf, pid);
	assert_non_null(p);
	assert_int_equal(p->state, KEPLER_STATE_RUNNING);
	assert_true(p->cpu_time_ns >= p->cpu_time_delta_ns);
	assert_int_equal(p->cycles, KEPLER_COUNTER_UNAVAILABLE);
	one = p->cpu_time_delta_ns;
	before_end = p->cpu_time_ns;
	/*
	 * The interval's delta is the child's CPU time in it. Time may come
	 * late (a switch racing the refresh can charge it to the next one),
	 * never twice and never lost: the delta is never more than the child
	 * used, and with the time reported at its end the sum matches.
	 */
	assert_int_equal(write(to_child[1], "g", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	p = terminated_proc(inf, pid);
	print_message("running child: %.2f ms at the first refresh (it had used %.2f ms), %.2f ms in its "
		      "interval, %.2f ms reported late\n", first / 1e6, child_cpu[0] / 1e6, one / 1e6,
		      (double)(p->cpu_time_ns - before_end) / 1e6);
	if (one > (child_cpu[1] - child_cpu[0]) * 1.05)
		fail_msg("%llu ns reported for an interval in which the child used %llu ns",
			 (unsigned long long)one, (unsigned long long)(child_cpu[1] - child_cpu[0]));
	/* what it used after child_cpu[1] (a read, then exit) is well under 5 % */
	assert_close("running child, interval and what came late", one + p->cpu_time_ns - before_end,
		     child_cpu[1] - child_cpu[0]);
	kepler_informer_close(inf);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * A process that keeps a CPU without ever being switched out is charged
 * as it runs, not in one lump at its next switch: no interval reports more
 * CPU time than the interval's length (one thread), and the total matches.
 */
static void test_hog_charged_as_it_runs(void **state)
{
	struct kepler_informer *inf;
	const struct kepler_proc *p;
	uint64_t t0, t1, sum = 0, worst = 0, start_cpu = 0;
	pid_t pid;
	int status;

	(void)state;
	if (!can_run_bpf()) {
		skip();
		return;
	}
	inf = open_ebpf(0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(1 % (int)sysconf(_SC_NPROCESSORS_ONLN), &set);
		sched_setaffinity(0, sizeof(set), &set);
		burn_cpu_us(3000000);
		_exit(0);
	}
	usleep(100000); /* so that it has been switched once and is in the map */
	refresh(inf);
	p = find_pid(inf, pid);
	if (p)
		start_cpu = p->cpu_time_ns;
	t0 = mono_ns();
	for (int i = 0; i < 8; i++) {
		usleep(150000);
		refresh(inf);
		t1 = mono_ns();
		p = find_pid(inf, pid);
		assert_non_null(p);
		sum += p->cpu_time_delta_ns;
		if (p->cpu_time_delta_ns > (t1 - t0) + 5000000 && p->cpu_time_delta_ns - (t1 - t0) > worst)
			worst = p->cpu_time_delta_ns - (t1 - t0);
		t0 = t1;
	}
	print_message("hog: %.1f ms over 8 refreshes, worst excess over the wall interval %.1f ms\n",
		      (double)sum / 1e6, (double)worst / 1e6);
	assert_int_equal(worst, 0);
	assert_true(p->cpu_time_ns - start_cpu == sum);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	kepler_informer_close(inf);
}

/* ~50 ms of CPU, started and ended between two refreshes: terminated, with its time. */
static void test_short_process(void **state)
{
	struct kepler_informer *inf;
	const struct kepler_proc *p;
	struct rusage ru;
	int status;
	pid_t pid;

	(void)state;
	if (!can_run_bpf()) {
		skip();
		return;
	}
	inf = open_ebpf(0);
	refresh(inf);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		burn_cpu_us(50000);
		_exit(0);
	}
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	p = terminated_proc(inf, pid);
	assert_int_equal(p->state, KEPLER_STATE_TERMINATED);
	assert_close("50 ms process", p->cpu_time_ns, rusage_ns(&ru));
	/* reported once, then forgotten */
	refresh(inf);
	assert_null(find_pid(inf, pid));
	kepler_informer_close(inf);
}

#define BURST 500

static void test_500_short_processes(void **state)
{
	struct kepler_informer *inf;
	static pid_t pids[BURST];
	uint64_t want = 0, got = 0;
	unsigned found = 0, terminated = 0;

	(void)state;
	if (!can_run_bpf()) {
		skip();
		return;
	}
	inf = open_ebpf(0);
	refresh(inf);
	for (int i = 0; i < BURST; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			burn_cpu_us(2000);
			_exit(0);
		}
	}
	for (int i = 0; i < BURST; i++) {
		struct rusage ru;
		int status;

		assert_int_equal(wait4(pids[i], &status, 0, &ru), pids[i]);
		want += rusage_ns(&ru);
	}
	/*
	 * Each reaped child is reported terminated once its final switch has
	 * come (at the first refresh for nearly all), exactly once, with all
	 * of its time.
	 */
	static unsigned times[BURST];
	unsigned first = 0;

	for (int round = 0; round < 50 && terminated < BURST; round++) {
		refresh(inf);
		for (int i = 0; i < BURST; i++) {
			const struct kepler_proc *p = find_pid(inf, pids[i]);

			if (round == 0)
				found += p != NULL;
			if (!p || p->state != KEPLER_STATE_TERMINATED)
				continue;
			first += round == 0;
			terminated++;
			times[i]++;
			got += p->cpu_time_ns;
		}
		usleep(10000);
	}
	print_message("%u of %d processes seen, %u terminated (%u at the first refresh), lost %u\n", found,
		      BURST, terminated, first, kepler_informer_stats(inf)->lost);
	for (int i = 0; i < BURST; i++)
		if (times[i] != 1)
			fail_msg("process %d reported terminated %u times", pids[i], times[i]);
	assert_int_equal(found, BURST);
	assert_int_equal(terminated, BURST);
	assert_close("sum of 500 short processes", got, want);
	kepler_informer_close(inf);
}

/* A map too small: the overflow is counted and reported, nothing crashes. */
static void test_overflow_reported(void **state)
{
	struct kepler_informer *inf;
	pid_t pids[200];

	(void)state;
	if (!can_run_bpf()) {
		skip();
		return;
	}
	inf = open_ebpf(64);
	refresh(inf);
	for (int i = 0; i < 200; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			/* sleep first, so that every child is alive when the map fills */
			usleep(100000);
			burn_cpu_us(500);
			_exit(0);
		}
	}
	for (int i = 0; i < 200; i++) {
		int status;

		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
	}
	refresh(inf);
	print_message("map of 64: %zu processes, %u lost\n", kepler_informer_count(inf),
		      kepler_informer_stats(inf)->lost);
	assert_true(kepler_informer_stats(inf)->lost > 0);
	assert_true(kepler_informer_count(inf) <= 64);
	/* the exited ones were deleted: the map has room again */
	refresh(inf);
	kepler_informer_close(inf);
}

/*
 * The counter path (perf events read at each switch, per-process deltas),
 * driven by software cpu-clock events because this machine has no hardware
 * counters: each "counter" then counts on-CPU nanoseconds.
 */
static void test_counters_path(void **state)
{
	struct kepler_informer *inf;
	const struct kepler_proc *p;
	struct rusage ru;
	int status;
	pid_t pid;

	(void)state;
	if (!can_run_bpf()) {
		skip();
		return;
	}
	inf = open_ebpf_opts(0, true);
	assert_true(kepler_informer_hw_counters(inf));
	print_message("%s\n", kepler_informer_describe(inf));
	refresh(inf);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		burn_cpu_us(100000);
		_exit(0);
	}
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	p = terminated_proc(inf, pid);
	assert_close("cpu-clock as cycles", p->cycles, rusage_ns(&ru));
	assert_close("cpu-clock as instructions", p->instructions, rusage_ns(&ru));
	assert_close("cpu-clock as cache misses", p->cache_misses, rusage_ns(&ru));
	kepler_informer_close(inf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_running_process),
		cmocka_unit_test(test_hog_charged_as_it_runs),
		cmocka_unit_test(test_short_process),
		cmocka_unit_test(test_500_short_processes),
		cmocka_unit_test(test_overflow_reported),
		cmocka_unit_test(test_counters_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
