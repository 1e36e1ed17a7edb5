// SPDX-License-Identifier: Apache-2.0
/*
 * The real eBPF CPU-time program, loaded into the running kernel: a child
 * burns a known amount of CPU and exits; the kernel-side map must hold its
 * CPU time (within 5% of what wait4() reports) and mark it exited.
 * Skipped, with the reason printed, without root or kernel BTF.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cputime.h"
#include "cputime.skel.h"

_Static_assert(sizeof(struct kepler_cputime_key) == 16, "key layout shared with BPF");
_Static_assert(sizeof(struct kepler_cputime_value) == 64, "value layout shared with BPF");

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/* Why eBPF cannot run here, or NULL. */
static const char *bpf_missing(void)
{
	if (geteuid() != 0)
		return "eBPF test needs root (CAP_BPF, CAP_PERFMON)";
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		return "no kernel BTF at /sys/kernel/btf/vmlinux";
	return NULL;
}

/* Skip the case, visibly, when eBPF cannot run here. */
#define require_bpf()                             \
	do {                                      \
		const char *why_ = bpf_missing(); \
		if (why_)                         \
			kepler_skip("%s", why_);  \
	} while (0)

static void burn_cpu_ms(long ms)
{
	struct timespec ts;
	long long end, now;
	volatile unsigned long x = 0;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	end = ts.tv_sec * 1000000000LL + ts.tv_nsec + ms * 1000000LL;
	do {
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		now = ts.tv_sec * 1000000000LL + ts.tv_nsec;
	} while (now < end);
}

/* Find the entry of @pid in the map; returns 0 and fills @ret_val. */
static int find_pid(int map_fd, pid_t pid, struct kepler_cputime_value *ret_val)
{
	struct kepler_cputime_key key, next;
	void *prev = NULL;

	while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
		if (next.tgid == (unsigned)pid)
			return bpf_map_lookup_elem(map_fd, &next, ret_val) == 0 ? 0 : -errno;
		key = next;
		prev = &key;
	}
	return -ENOENT;
}

/* A per-CPU statistic of the program, summed over the CPUs. */
static unsigned long long stat_sum(int fd, __u32 key)
{
	unsigned long long vals[1024], sum = 0;
	int n = libbpf_num_possible_cpus();

	if (n <= 0 || n > 1024 || bpf_map_lookup_elem(fd, &key, vals) < 0)
		return 0;
	for (int i = 0; i < n; i++)
		sum += vals[i];
	return sum;
}

static void test_exited_child_cpu_time(void **state)
{
	struct cputime *skel;
	struct kepler_cputime_value val;
	struct rusage ru;
	double want_ns, got_ns;
	pid_t pid;
	int status;

	(void)state;
	require_bpf();
	libbpf_set_print(quiet);
	skel = cputime__open_and_load();
	assert_non_null(skel);
	assert_int_equal(cputime__attach(skel), 0);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		burn_cpu_ms(300);
		_exit(0);
	}
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	want_ns = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
		  (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;

	/*
	 * wait4() can return while the child is still on a CPU finishing its
	 * teardown: its last slice is charged at its final switch, which sets
	 * DEAD. On an idle machine that is microseconds away; give it 2 s.
	 */
	for (int i = 0; i < 200; i++) {
		assert_int_equal(find_pid(bpf_map__fd(skel->maps.processes), pid, &val), 0);
		if (val.flags & KEPLER_CPUTIME_DEAD)
			break;
		usleep(10000);
	}
	got_ns = (double)val.cpu_ns;
	print_message(
		"child %d: eBPF %.1f ms, rusage %.1f ms; unseen switch-ins %llu\n", pid, got_ns / 1e6,
		want_ns / 1e6,
		(unsigned long long)stat_sum(bpf_map__fd(skel->maps.stats), KEPLER_CPUTIME_STAT_UNSEEN));
	assert_true(val.flags & KEPLER_CPUTIME_EXITED);
	assert_true(val.flags & KEPLER_CPUTIME_DEAD);
	assert_true(got_ns > want_ns * 0.95 && got_ns < want_ns * 1.05);
	cputime__destroy(skel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exited_child_cpu_time),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
