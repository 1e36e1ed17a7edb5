// SPDX-License-Identifier: Apache-2.0
/*
 * The real eBPF CPU-time program, loaded into the running kernel: a child
 * burns a known amount of CPU and exits; the kernel-side map must hold its
 * CPU time (within 5% of what wait4() reports) and mark it exited. And each
 * of this test's processes that lives through a window (the test, a helper,
 * and a PID namespace's init burning CPU) has in the map the CPU time the
 * kernel's schedstat gives its threads over that window; other jobs'
 * processes are not read.
 * Skipped, with the reason printed, without root or kernel BTF.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdlib.h>
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
_Static_assert(sizeof(struct kepler_cputime_value) == 104, "value layout shared with BPF");

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
	(void)x; /* read: the sum is the point, not its value */
}

/* Find the entry of @pid in the map (through its slot); returns 0 and fills @ret_val. */
static int find_pid(struct cputime *skel, pid_t pid, struct kepler_cputime_value *ret_val)
{
	int map_fd = bpf_map__fd(skel->maps.processes), slots_fd = bpf_map__fd(skel->maps.slots);
	struct kepler_cputime_key key, next;
	struct kepler_cputime_slot slot;
	void *prev = NULL;
	__u32 idx;

	while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
		if (next.tgid == (unsigned)pid) {
			if (bpf_map_lookup_elem(map_fd, &next, &idx) < 0 ||
			    bpf_map_lookup_elem(slots_fd, &idx, &slot) < 0)
				return -errno;
			if (slot.key.tgid != next.tgid || slot.key.start_time_ns != next.start_time_ns)
				return -ESTALE; /* the slot must hold the key that maps to it */
			*ret_val = slot.value;
			return 0;
		}
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
		assert_int_equal(find_pid(skel, pid, &val), 0);
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

#define MAXP \
	65536 /* processes sampled: more than a busy node runs (4096 missed PID 1 beside 10,000 others) */

/* Every process's threads' on-CPU time (schedstat, ns), with its start time and thread count. */
struct proc_times {
	size_t n;
	struct {
		pid_t pid;
		unsigned long long start, ns;
		int threads;
		bool runnable; /* a thread was in state R: it may be in a slice no switch has charged */
	} p[MAXP];
};

static unsigned long long start_of(pid_t pid)
{
	char path[64], buf[1024], *q;
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (fgets(buf, sizeof(buf), f) && (q = strrchr(buf, ')')))
		sscanf(q + 2,
		       "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		       &v);
	fclose(f);
	return v;
}

static bool thread_runnable(pid_t pid, const char *tid)
{
	char path[96], buf[512], *q;
	bool r = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid, tid);
	if ((f = fopen(path, "r"))) {
		r = fgets(buf, sizeof(buf), f) && (q = strrchr(buf, ')')) && q[1] == ' ' && q[2] == 'R';
		fclose(f);
	}
	return r;
}

/* The kernel's figures for @n processes @pids (this test's own: never other jobs'). */
static void sample_all(struct proc_times *t, const pid_t *pids, size_t n)
{
	DIR *td;
	struct dirent *te;

	t->n = 0;
	for (size_t k = 0; k < n && t->n < MAXP; k++) {
		pid_t pid = pids[k];
		char path[64];

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		if (!(td = opendir(path)))
			continue;
		t->p[t->n].pid = pid;
		t->p[t->n].ns = 0;
		t->p[t->n].threads = 0;
		t->p[t->n].runnable = false;
		while ((te = readdir(td))) {
			char sp[96];
			unsigned long long ns;
			FILE *f;

			if (te->d_name[0] == '.')
				continue;
			snprintf(sp, sizeof(sp), "/proc/%d/task/%s/schedstat", pid, te->d_name);
			if ((f = fopen(sp, "r"))) {
				if (fscanf(f, "%llu", &ns) == 1)
					t->p[t->n].ns += ns;
				fclose(f);
			}
			t->p[t->n].threads++;
			t->p[t->n].runnable |= thread_runnable(pid, te->d_name);
		}
		closedir(td);
		t->p[t->n].start = start_of(pid);
		t->n++;
	}
}

static int find_in(const struct proc_times *t, pid_t pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->p[i].pid == pid)
			return (int)i;
	return -1;
}

/*
 * A process that is PID 1 of its own PID namespace and burns CPU in bursts
 * (a helper child unshares the namespace and forks it) until *@ret_stop is
 * closed: it must outlive the test's samples, which take seconds on a node
 * with 10,000 processes. Returns the helper, which exits with the burner's
 * status; *@ret_init gets the burner's pid as this test sees it.
 */
static pid_t spawn_namespace_init(pid_t *ret_init, int *ret_stop)
{
	int fds[2], stop[2];
	pid_t helper;

	if (pipe(fds) < 0)
		return -1;
	if (pipe(stop) < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	helper = fork();
	if (helper == 0) {
		pid_t init;
		int status;

		close(fds[0]);
		close(stop[1]);
		if (unshare(CLONE_NEWPID) < 0)
			_exit(4);
		init = fork(); /* the first child of the new namespace is its PID 1 */
		if (init == 0) {
			struct pollfd p = { .fd = stop[0], .events = POLLIN };

			for (int i = 0; i < 600 && poll(&p, 1, 0) == 0; i++) { /* at most a minute */
				burn_cpu_ms(40);
				usleep(60000);
			}
			_exit(getpid() == 1 ? 0 : 3);
		}
		if (write(fds[1], &init, sizeof(init)) != sizeof(init) || waitpid(init, &status, 0) != init)
			_exit(5);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 6);
	}
	close(fds[1]);
	close(stop[0]);
	if (helper < 0 || read(fds[0], ret_init, sizeof(*ret_init)) != sizeof(*ret_init))
		*ret_init = -1;
	close(fds[0]);
	*ret_stop = stop[1];
	return helper;
}

static void test_every_live_process(void **state)
{
	static struct proc_times before, t0, t1, t2;
	static struct kepler_cputime_value vals[MAXP];
	struct cputime *skel;
	int checked = 0, status, stop = -1;
	bool init_checked = false;
	pid_t helper, init;

	(void)state;
	require_bpf();
	libbpf_set_print(quiet);
	helper = spawn_namespace_init(&init, &stop);
	assert_true(helper > 0);
	if (init < 0) {
		close(stop);
		waitpid(helper, &status, 0);
		kepler_skip("cannot create a PID namespace here (helper status %d)", WEXITSTATUS(status));
	}
	/* this test's own processes: itself, the helper, the namespace's init that burns */
	pid_t own[] = { getpid(), helper, init };
	size_t nown = sizeof(own) / sizeof(own[0]);

	sample_all(&before, own, nown);
	skel = cputime__open_and_load();
	assert_non_null(skel);
	assert_int_equal(cputime__attach(skel), 0);
	sample_all(&t0, own, nown);
	usleep(2000000); /* a window, not a deadline: the kernel's own figures bracket it */
	/* the kernel's figures just before and just after the map is read bracket the map's */
	sample_all(&t1, own, nown);
	for (size_t i = 0; i < t1.n; i++)
		if (find_pid(skel, t1.p[i].pid, &vals[i]) < 0)
			vals[i].cpu_ns = 0;
	sample_all(&t2, own, nown);
	for (size_t i = 0; i < t1.n; i++) {
		int a = find_in(&before, t1.p[i].pid), b = find_in(&t0, t1.p[i].pid),
		    c = find_in(&t2, t1.p[i].pid);
		unsigned long long grew, most, short_by;

		if (a < 0 || b < 0 || c < 0 || before.p[a].start != t1.p[i].start ||
		    t2.p[c].start != t1.p[i].start || before.p[a].threads != t1.p[i].threads ||
		    t0.p[b].threads != t1.p[i].threads || t2.p[c].threads != t1.p[i].threads)
			continue; /* not alive through the window, or threads came or went */
		if (t1.p[i].ns < t0.p[b].ns || t2.p[c].ns < before.p[a].ns)
			continue; /* the kernel's own figure went back (one thread replaced by another): no window */
		grew = t1.p[i].ns - t0.p[b].ns;
		most = t2.p[c].ns - before.p[a].ns;
		if (grew < 20000000ULL)
			continue; /* too little to compare */
		/*
		 * The map counts from the first switch-out seen after load, and
		 * a task's current slice is not in it yet: a process that was
		 * runnable at either end may be short by those slices (the
		 * burner's are at most 40 ms each), and one of each thread's
		 * may straddle the load; the map never holds more than the
		 * kernel.
		 */
		if (t1.p[i].pid == init)
			short_by = 15000000ULL + 2 * 40000000ULL;
		else if (before.p[a].runnable || t0.p[b].runnable || t1.p[i].runnable || t2.p[c].runnable)
			short_by = grew;
		else /* each thread's slice that straddled the load */
			short_by = 15000000ULL * (unsigned long long)t1.p[i].threads;
		print_message(
			"pid %d: kernel %.1f ms in the window (%.1f from before load to after the read), "
			"eBPF %.1f ms%s\n",
			t1.p[i].pid, grew / 1e6, most / 1e6, vals[i].cpu_ns / 1e6,
			short_by == grew ? " (runnable at an end: upper bound only)" : "");
		if (vals[i].cpu_ns + short_by < grew || vals[i].cpu_ns > most + 1000000ULL)
			fail_msg("pid %d: eBPF %.1f ms, kernel %.1f..%.1f ms", t1.p[i].pid,
				 vals[i].cpu_ns / 1e6, grew / 1e6, most / 1e6);
		checked++;
		init_checked |= t1.p[i].pid == init;
	}
	close(stop); /* the burner stops */
	assert_int_equal(waitpid(helper, &status, 0), helper);
	assert_true(WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0); /* the burner was PID 1 of its namespace */
	print_message("%d of this test's processes alive through the window compared\n", checked);
	assert_true(init_checked); /* the namespace's PID 1 at least */
	cputime__destroy(skel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exited_child_cpu_time),
		cmocka_unit_test(test_every_live_process),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
