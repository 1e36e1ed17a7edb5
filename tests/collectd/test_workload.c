// SPDX-License-Identifier: Apache-2.0
/*
 * Container, pod and VM identity from real-world /proc/PID/cgroup lines
 * and hypervisor command lines, and the procfs parsers (stat, pid stat).
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "cpu_size.h"
#include "procfs.h"
#include "workload.h"

#define ID1 "2a7d6c3b9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70819aab"
#define ID2 "f00dbabe0123456789abcdef0123456789abcdef0123456789abcdef01234567"
#define UID "8d6f1b0e-3c2a-4e57-9a1d-0b2c3d4e5f60"
#define UIDU "8d6f1b0e_3c2a_4e57_9a1d_0b2c3d4e5f60"

static void test_cgroup_table(void **state)
{
	static const struct {
		const char *text, *id, *runtime, *pod;
	} rows[] = {
		/* docker: cgroupfs v1, systemd v1 and v2 */
		{ "12:pids:/docker/" ID1 "\n11:cpu,cpuacct:/docker/" ID1 "\n", ID1, "docker", "" },
		{ "0::/system.slice/docker-" ID1 ".scope\n", ID1, "docker", "" },
		{ "4:cpu,cpuacct:/system.slice/docker-" ID1 ".scope\n1:name=systemd:/system.slice/docker-" ID1
		  ".scope\n",
		  ID1, "docker", "" },
		{ "0::/docker/" ID1 "\n", ID1, "docker", "" },
		/* containerd standalone */
		{ "0::/system.slice/containerd-" ID1 ".scope\n", ID1, "containerd", "" },
		{ "0::/containerd/" ID1 "\n", ID1, "containerd", "" },
		/* kubepods, systemd driver, cgroup v2: every QoS class and runtime */
		{ "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
		  ".slice/cri-containerd-" ID1 ".scope\n",
		  ID1, "containerd", UID },
		{ "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU
		  ".slice/cri-containerd-" ID1 ".scope\n",
		  ID1, "containerd", UID },
		{ "0::/kubepods.slice/kubepods-pod" UIDU ".slice/cri-containerd-" ID1 ".scope\n", ID1,
		  "containerd", UID },
		{ "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU ".slice/crio-" ID1
		  ".scope\n",
		  ID1, "crio", UID },
		{ "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU
		  ".slice/crio-" ID1 ".scope\n",
		  ID1, "crio", UID },
		{ "0::/kubepods.slice/kubepods-pod" UIDU ".slice/crio-" ID1 ".scope\n", ID1, "crio", UID },
		{ "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
		  ".slice/docker-" ID1 ".scope\n",
		  ID1, "docker", UID },
		/*
		 * a collector in a pod with a private cgroup namespace sees other
		 * pods' paths relative to its own cgroup: both drivers, each QoS
		 * class, the kubepods segment above what it sees or not
		 */
		{ "0::/../../kubepods-besteffort-pod" UIDU ".slice/cri-containerd-" ID1 ".scope\n", ID1,
		  "containerd", UID },
		{ "0::/../../../kubepods-burstable.slice/kubepods-burstable-pod" UIDU ".slice/crio-" ID1
		  ".scope\n",
		  ID1, "crio", UID },
		{ "0::/../../../kubepods-pod" UIDU ".slice/docker-" ID1 ".scope\n", ID1, "docker", UID },
		{ "0::/../../pod" UID "/" ID1 "\n", ID1, "kubernetes", UID },
		{ "0::/../../../besteffort/pod" UID "/" ID1 "\n", ID1, "kubernetes", UID },
		{ "0::/../../../../kubepods/burstable/pod" UID "/" ID1 "\n", ID1, "kubernetes", UID },
		{ "0::/../pod" UID "/crio-" ID1 "\n", ID1, "crio", UID },
		/* kubepods, systemd driver, cgroup v1 */
		{ "11:cpu,cpuacct:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
		  ".slice/cri-containerd-" ID1 ".scope\n",
		  ID1, "containerd", UID },
		{ "3:memory:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU
		  ".slice:cri-containerd:" ID1 "\n",
		  ID1, "containerd", "" },
		/* kubepods, cgroupfs driver: every QoS class */
		{ "0::/kubepods/burstable/pod" UID "/" ID1 "\n", ID1, "kubernetes", UID },
		{ "0::/kubepods/besteffort/pod" UID "/" ID1 "\n", ID1, "kubernetes", UID },
		{ "0::/kubepods/pod" UID "/" ID1 "\n", ID1, "kubernetes", UID },
		{ "11:cpu,cpuacct:/kubepods/burstable/pod" UID "/" ID1 "\n10:pids:/kubepods/burstable/pod" UID
		  "/" ID1 "\n",
		  ID1, "kubernetes", UID },
		{ "0::/kubepods/burstable/pod" UID "/crio-" ID1 "\n", ID1, "crio", UID },
		/* kind / nested kubelet */
		{ "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" UIDU
		  ".slice/cri-containerd-" ID1 ".scope\n",
		  ID1, "containerd", UID },
		/* docker in docker: the deepest wins */
		{ "0::/docker/" ID2 "/docker/" ID1 "\n", ID1, "docker", "" },
		{ "0::/system.slice/docker-" ID2 ".scope/kubepods/besteffort/pod" UID "/" ID1 "\n", ID1,
		  "kubernetes", UID },
		/* podman rootful, rootless, cgroupfs, payload */
		{ "0::/machine.slice/libpod-" ID1 ".scope\n", ID1, "podman", "" },
		{ "0::/machine.slice/libpod-" ID1 ".scope/container\n", ID1, "podman", "" },
		{ "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID1 ".scope\n", ID1,
		  "podman", "" },
		{ "1:name=systemd:/libpod_parent/libpod-" ID1 "\n", ID1, "podman", "" },
		{ "0::/machine.slice/libpod-payload-" ID1 "\n", ID1, "podman", "" },
		/* not containers */
		{ "0::/machine.slice/libpod-conmon-" ID1 ".scope\n", NULL, NULL, NULL },
		{ "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
		  ".slice/crio-conmon-" ID1 ".scope\n",
		  NULL, NULL, NULL },
		{ "0::/user.slice/user-1000.slice/session-2.scope\n", NULL, NULL, NULL },
		{ "0::/system.slice/sshd.service\n", NULL, NULL, NULL },
		{ "0::/\n", NULL, NULL, NULL },
		{ "0::/docker/"
		  "2a7d6c3b9e0f1a2b"
		  "\n",
		  NULL, NULL, NULL },                          /* short id */
		{ "0::/docker/" ID1 "x\n", NULL, NULL, NULL }, /* 65 chars */
		{ "0::/DOCKER/" ID1 "\n", NULL, NULL, NULL },
		{ "", NULL, NULL, NULL },
		{ "garbage without colons", NULL, NULL, NULL },
		{ "0::/docker-" ID1 ".scope.evil\n", NULL, NULL, NULL },
	};
	(void)state;
	assert_true(sizeof(rows) / sizeof(rows[0]) >= 30);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct kepler_container_ref c;
		bool found = kepler_cgroup_container(rows[i].text, strlen(rows[i].text), &c);

		if (found != (rows[i].id != NULL))
			fail_msg("row %zu: found=%d for %s", i, found, rows[i].text);
		if (!found)
			continue;
		if (strcmp(c.id, rows[i].id) || strcmp(c.runtime, rows[i].runtime) ||
		    strcmp(c.pod_uid, rows[i].pod))
			fail_msg("row %zu: got %s %s pod '%s'", i, c.id, c.runtime, c.pod_uid);
	}
}

static void test_cgroup_path(void **state)
{
	static const struct {
		const char *text, *path;
	} rows[] = {
		{ "0::/system.slice/sshd.service\n", "/system.slice/sshd.service" },
		{ "12:pids:/a\n11:cpu,cpuacct:/b\n1:name=systemd:/c\n0::/d\n", "/d" },
		{ "12:pids:/a\n11:cpu,cpuacct:/b\n1:name=systemd:/c\n", "/b" },
		{ "12:pids:/a\n11:cpuset:/b\n", "/a" },
		{ "", "" },
		{ "junk", "" },
	};
	char buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		kepler_cgroup_path(rows[i].text, strlen(rows[i].text), buf, sizeof(buf));
		if (strcmp(buf, rows[i].path))
			fail_msg("row %zu: '%s'", i, buf);
	}
}

static void test_vm_cmdlines(void **state)
{
#define Q(s) s, sizeof(s) - 1
	static const struct {
		const char *cmd;
		size_t len;
		const char *id, *name, *hyp;
	} rows[] = {
		{ Q("/usr/bin/qemu-system-x86_64\0-name\0guest=vm1,debug-threads=on\0-uuid\0"
		    "3f2504e0-4f89-11d3-9a0c-0305e82c3301\0-m\0"
		    "2048\0"),
		  "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "vm1", "kvm" },
		{ Q("/usr/libexec/qemu-kvm\0-name\0instance-00000001\0-uuid\0abc\0"), "abc",
		  "instance-00000001", "kvm" },
		{ Q("qemu-system-aarch64\0-name=arm-guest\0"), "arm-guest", "arm-guest", "kvm" },
		{ Q("/usr/bin/kvm\0-name\0k\0-xen-domid\0"
		    "7\0"),
		  "k", "k", "xen" },
		{ Q("/usr/bin/qemu-system-x86_64\0-m\0"
		    "512\0"),
		  "2f7573722f62696e", "kvm-2f757372", "kvm" },
		{ Q("/usr/bin/qemu-system-x86_64\0-name\0evil\nname\0"), "evil_name", "evil_name", "kvm" },
		{ Q("/usr/bin/qemu-img\0convert\0"), NULL, NULL, NULL },
		{ Q("/bin/bash\0-c\0qemu-system-x86_64 -name x\0"), NULL, NULL, NULL },
		{ Q(""), NULL, NULL, NULL },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct kepler_vm_ref vm;
		bool found = kepler_cmdline_vm(rows[i].cmd, rows[i].len, &vm);

		if (found != (rows[i].id != NULL))
			fail_msg("row %zu: found=%d", i, found);
		if (found && (strcmp(vm.id, rows[i].id) || strcmp(vm.name, rows[i].name) ||
			      strcmp(vm.hypervisor, rows[i].hyp)))
			fail_msg("row %zu: got id '%s' name '%s' %s", i, vm.id, vm.name, vm.hypervisor);
	}
}

static void test_pid_stat(void **state)
{
	static const char normal[] =
		"1234 (bash) S 1 1234 1234 34816 5678 4194304 1000 0 0 0 150 25 0 0 20 0 1 0 98765 "
		"10000000 500 18446744073709551615 1 1 0 0 0 0 65536 3670020 1266777851 0 0 0 17 1 0 0 0 0 0\n";
	static const char hostile[] =
		"77 (a) (b\n) S) R 1 77 77 -1 -1 2097216 0 0 0 0 3 4 -1 -2 -20 -5 1 0 555 0 0\n";
	struct kepler_pid_stat st;

	(void)state;
	assert_int_equal(kepler_procfs_parse_pid_stat(normal, strlen(normal), &st), 0);
	assert_int_equal(st.pid, 1234);
	assert_string_equal(st.comm, "bash");
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 1);
	assert_int_equal(st.utime_ticks, 150);
	assert_int_equal(st.stime_ticks, 25);
	assert_int_equal(st.start_ticks, 98765);
	assert_int_equal(st.flags, 4194304);
	/* a comm with parentheses, a newline and ") S" inside: the LAST ')' ends it */
	assert_int_equal(kepler_procfs_parse_pid_stat(hostile, strlen(hostile), &st), 0);
	assert_int_equal(st.pid, 77);
	assert_memory_equal(st.comm, "a) (b\n) S", 10);
	assert_int_equal(st.state, 'R');
	assert_true(st.flags & KEPLER_PF_KTHREAD);
	assert_int_equal(st.utime_ticks, 3);
	assert_int_equal(st.start_ticks, 555);
	/* garbage */
	static const char *const bad[] = {
		"",
		"1234",
		"1234 (bash",
		"x (bash) S 1",
		"1234 (bash) S",
		"1234 (bash) S 1 2 3",
		"1234 (bash) S 1 1 1 0 0 abc 0 0 0 0 1 1 0 0 0 0 1 0 5\n",
		"1234 (bash) S 1 1 1 0 0 0 0 0 0 0 99999999999999999999999 1 0 0 0 0 1 0 5\n",
		"0 (zero) S 1 1 1 0 0 0 0 0 0 0 1 1 0 0 0 0 1 0 5\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (kepler_procfs_parse_pid_stat(bad[i], strlen(bad[i]), &st) == 0)
			fail_msg("bad[%zu] parsed", i);
}

static void test_cpu_stat(void **state)
{
	static const char text[] = "cpu  100 5 50 800 20 3 2 10 0 0\n"
				   "cpu0 50 2 25 400 10 1 1 5 0 0\n"
				   "cpu1 50 3 25 400 10 2 1 5 0 0\n"
				   "intr 12345 0 0\nctxt 999\nbtime 1700000000\n";
	struct kepler_cpu_stat cs;

	(void)state;
	assert_int_equal(kepler_procfs_parse_cpu_stat(text, strlen(text), &cs), 0);
	assert_int_equal(cs.cpu_count, 2);
	assert_int_equal(cs.user, 100);
	assert_int_equal(cs.steal, 10);
	assert_int_equal(kepler_cpu_stat_total(&cs), 990);
	assert_int_equal(kepler_cpu_stat_busy(&cs), 170);
	assert_int_equal(kepler_procfs_parse_cpu_stat("intr 1\n", 7, &cs), -EINVAL);
	assert_int_equal(kepler_procfs_parse_cpu_stat("cpu  1 2 x\n", 11, &cs), -EINVAL);
	assert_int_equal(kepler_procfs_parse_cpu_stat("cpu  1 2\n", 9, &cs), -EINVAL);
}

/* Each CPU's busy ticks; what is missing, malformed, repeated or out of range stays unknown. */
static void test_cpu_busy(void **state)
{
	static const char text[] = "cpu  100 5 50 800 20 3 2 10 0 0\n"
				   "cpu0 50 2 25 400 10 1 1 5 0 0\n"
				   "cpu2 7 0 0 400 10 0 0 0 0 0\n"
				   "cpu2 99 0 0 1 1 0 0 0 0 0\n"
				   "cpu3 1 x\n"
				   "cpu4 1 2 3 4\n"
				   "cpu99999999999999999999 1 2 3 4 5 6 7 8\n"
				   "cpu7 1 2 3 4 5 6 7 8 0 0\n"
				   "cpux 1 2 3 4\ncpu\ncpu5\nintr 12345 0 0\n";
	uint64_t busy[6];

	(void)state;
	assert_int_equal(kepler_procfs_parse_cpu_busy(text, strlen(text), busy, 6), 3);
	assert_int_equal(busy[0], 84); /* 50 + 2 + 25 + 1 + 1 + 5: all but idle and iowait */
	assert_true(busy[1] == KEPLER_CPU_BUSY_UNKNOWN);
	assert_int_equal(busy[2], 7); /* the first line of a number counts */
	assert_true(busy[3] == KEPLER_CPU_BUSY_UNKNOWN);
	assert_int_equal(busy[4], 6); /* an old kernel's four columns */
	assert_true(busy[5] == KEPLER_CPU_BUSY_UNKNOWN);
	assert_int_equal(kepler_procfs_parse_cpu_busy(text, strlen(text), busy, 0), 0);
	assert_int_equal(kepler_procfs_parse_cpu_busy("", 0, busy, 6), 0);
	assert_true(busy[0] == KEPLER_CPU_BUSY_UNKNOWN);
}

/* Write @text to @dir/@name, making @dir first. */
static void put(const char *dir, const char *name, const char *text)
{
	char cmd[4200], path[4200];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Spin until this thread has run @ms of CPU time (as the kernel counts it). */
static void spin_cpu_ms(long ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L < ms);
}

/*
 * A file read every interval through a descriptor kept open: the real
 * /proc/self/stat read twice through one fd shows the CPU time spent in
 * between (procfs regenerates it at each read from offset 0); a file
 * rewritten in place reads anew; one too big says -EFBIG and keeps its fd;
 * a missing one fails with no fd left open, and is opened once it exists.
 */
static void test_read_file_kept(void **state)
{
	char buf[4096], path[64], dir[] = "/tmp/kepler-kept-XXXXXX";
	struct kepler_pid_stat a, b;
	size_t len;
	int fd = -1, procfd = open("/proc", O_RDONLY | O_DIRECTORY);
	FILE *f;

	(void)state;
	assert_true(procfd >= 0);
	snprintf(path, sizeof(path), "%d/stat", (int)getpid());
	assert_int_equal(kepler_read_file_kept(procfd, path, &fd, buf, sizeof(buf), &len), 0);
	assert_true(fd >= 0);
	assert_int_equal(kepler_procfs_parse_pid_stat(buf, len, &a), 0);
	spin_cpu_ms(50);
	assert_int_equal(kepler_read_file_kept(procfd, path, &fd, buf, sizeof(buf), &len), 0);
	assert_int_equal(kepler_procfs_parse_pid_stat(buf, len, &b), 0);
	print_message("one fd, two reads 50 ms of CPU apart: utime + stime %llu -> %llu ticks\n",
		      (unsigned long long)(a.utime_ticks + a.stime_ticks),
		      (unsigned long long)(b.utime_ticks + b.stime_ticks));
	assert_true(b.utime_ticks + b.stime_ticks > a.utime_ticks + a.stime_ticks);
	close(fd);
	close(procfd);

	/* one pread takes /proc/stat whole (its last line is softirq); too small a buffer is -EFBIG */
	fd = -1;
	assert_int_equal(kepler_read_file_kept(AT_FDCWD, "/proc/stat", &fd, buf, sizeof(buf), &len), 0);
	assert_true(len > 0 && buf[len - 1] == '\n' && strstr(buf, "\nsoftirq ") != NULL);
	assert_int_equal(kepler_read_file_kept(AT_FDCWD, "/proc/stat", &fd, buf, 64, &len), -EFBIG);
	close(fd);

	assert_non_null(mkdtemp(dir));
	fd = -1;
	assert_int_equal(kepler_read_file_kept(AT_FDCWD, "/nonexistent/kepler", &fd, buf, sizeof(buf), &len),
			 -ENOENT);
	assert_int_equal(fd, -1);
	snprintf(path, sizeof(path), "%s/stat", dir);
	assert_int_equal(kepler_read_file_kept(AT_FDCWD, path, &fd, buf, sizeof(buf), &len), -ENOENT);
	put(dir, "stat", "cpu  1 2 3 4 5 6 7 8 0 0\n");
	assert_int_equal(kepler_read_file_kept(AT_FDCWD, path, &fd, buf, sizeof(buf), &len), 0);
	assert_string_equal(buf, "cpu  1 2 3 4 5 6 7 8 0 0\n");
	f = fopen(path, "w"); /* in place, as a test's fake tree does */
	assert_non_null(f);
	fputs("cpu  9 9\n", f);
	fclose(f);
	assert_int_equal(kepler_read_file_kept(AT_FDCWD, path, &fd, buf, sizeof(buf), &len), 0);
	assert_string_equal(buf, "cpu  9 9\n");
	assert_int_equal(kepler_read_file_kept(AT_FDCWD, path, &fd, buf, 5, &len), -EFBIG);
	assert_true(fd >= 0);
	assert_int_equal(kepler_read_file_kept(AT_FDCWD, path, &fd, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 9);
	close(fd);
	unlink(path);
	rmdir(dir);
}

/*
 * Sizes for attribution.idle size, through fake trees: cgroup v2
 * (cpu.weight x 1024 / 100) and v1 (cpu.shares); a container's CPU request
 * first (x 1024 / 1000, at least 2); units by container, else by cgroup;
 * unreadable, garbage and escaping paths count as 1024.
 */
static void test_cpu_sizes(void **state)
{
	char root[] = "/tmp/kepler-cpu-size-XXXXXX", dir[4200], cmd[4300];
	struct kepler_cpu_sizes *s;
	struct kepler_error err;
	const struct kepler_ledger_unit *u;
	uint32_t a, b, c, d, e, f, g;
	size_t n;

	(void)state;
	assert_non_null(mkdtemp(root));
	/* v2: the cpu controller is listed */
	snprintf(dir, sizeof(dir), "%s/v2/fs/cgroup", root);
	put(dir, "cgroup.controllers", "cpuset cpu io memory pids\n");
	snprintf(dir, sizeof(dir), "%s/v2/fs/cgroup/kubepods/pod1/cri-containerd-aa.scope", root);
	put(dir, "cpu.weight", "200\n");
	snprintf(dir, sizeof(dir), "%s/v2/fs/cgroup/system.slice/cron.service", root);
	put(dir, "cpu.weight", "50\n");
	snprintf(dir, sizeof(dir), "%s/v2/fs/cgroup/system.slice/bad.service", root);
	put(dir, "cpu.weight", "lots\n");
	snprintf(dir, sizeof(dir), "%s/v2", root);
	KEPLER_OK(kepler_cpu_sizes_open(dir, &s, &err));
	assert_non_null(strstr(kepler_cpu_sizes_describe(s), "cpu.weight"));
	kepler_cpu_sizes_begin(s, 1);
	assert_int_equal(kepler_cpu_sizes_unit(s, "aa", "/kubepods/pod1/cri-containerd-aa.scope", 0, &a), 0);
	assert_int_equal(kepler_cpu_sizes_unit(s, "aa", "/kubepods/pod1/cri-containerd-aa.scope", 0, &b), 0);
	assert_int_equal(kepler_cpu_sizes_unit(s, "", "/system.slice/cron.service", 0, &c), 0);
	assert_int_equal(kepler_cpu_sizes_unit(s, "", "/system.slice/bad.service", 0, &d), 0);
	assert_int_equal(kepler_cpu_sizes_unit(s, "", "/system.slice/../../../etc", 0, &e), 0);
	assert_int_equal(kepler_cpu_sizes_unit(s, "bb", "/gone", 250, &f), 0);
	assert_int_equal(kepler_cpu_sizes_unit(s, "cc", "/gone", 1, &g), 0);
	u = kepler_cpu_sizes_units(s, &n);
	assert_int_equal(n, 6);
	assert_int_equal(a, b);
	assert_int_equal(u[a].size_shares, 2048);
	assert_true(u[a].container);
	assert_int_equal(u[c].size_shares, 512);
	assert_false(u[c].container);
	assert_int_equal(u[d].size_shares, 1024); /* garbage */
	assert_int_equal(u[e].size_shares, 1024); /* out of the hierarchy */
	assert_int_equal(u[f].size_shares, 256);  /* 250m, as the kubelet converts it */
	assert_int_equal(u[g].size_shares, 2);    /* the kubelet's minimum */
	assert_int_equal(kepler_cpu_sizes_unreadable(s), 2);
	kepler_cpu_sizes_begin(s, 2); /* a new interval: no unit yet, weights cached */
	kepler_cpu_sizes_units(s, &n);
	assert_int_equal(n, 0);
	kepler_cpu_sizes_close(s);
	/* v1: the cpu controller's own mount */
	snprintf(dir, sizeof(dir), "%s/v1/fs/cgroup/cpu/docker/x", root);
	put(dir, "cpu.shares", "700\n");
	snprintf(dir, sizeof(dir), "%s/v1/fs/cgroup/cpu", root);
	put(dir, "cpu.shares", "1024\n");
	snprintf(dir, sizeof(dir), "%s/v1", root);
	KEPLER_OK(kepler_cpu_sizes_open(dir, &s, &err));
	assert_non_null(strstr(kepler_cpu_sizes_describe(s), "cpu.shares"));
	kepler_cpu_sizes_begin(s, 1);
	assert_int_equal(kepler_cpu_sizes_unit(s, "x", "/docker/x", 0, &a), 0);
	assert_int_equal(kepler_cpu_sizes_unit(s, "", "/", 0, &b), 0);
	u = kepler_cpu_sizes_units(s, &n);
	assert_int_equal(u[a].size_shares, 700);
	assert_int_equal(u[b].size_shares, 1024);
	kepler_cpu_sizes_close(s);
	/* no hierarchy at all: said, every unit 1024 */
	snprintf(dir, sizeof(dir), "%s/none", root);
	KEPLER_OK(kepler_cpu_sizes_open(dir, &s, &err));
	assert_non_null(strstr(kepler_cpu_sizes_describe(s), "no cpu controller"));
	kepler_cpu_sizes_begin(s, 1);
	assert_int_equal(kepler_cpu_sizes_unit(s, "", "/a", 0, &a), 0);
	assert_int_equal(kepler_cpu_sizes_units(s, &n)[a].size_shares, 1024);
	kepler_cpu_sizes_close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

/* The cpu controller's path: the v1 cpu line first (hybrid hosts), else v2. */
static void test_cgroup_cpu_path(void **state)
{
	static const char hybrid[] = "12:cpu,cpuacct:/docker/abc\n0::/system.slice/docker.service\n";
	static const char unified[] = "0::/kubepods/pod1/x.scope\n";
	char buf[256];

	(void)state;
	kepler_cgroup_cpu_path(hybrid, sizeof(hybrid) - 1, buf, sizeof(buf));
	assert_string_equal(buf, "/docker/abc");
	kepler_cgroup_path(hybrid, sizeof(hybrid) - 1, buf, sizeof(buf));
	assert_string_equal(buf, "/system.slice/docker.service");
	kepler_cgroup_cpu_path(unified, sizeof(unified) - 1, buf, sizeof(buf));
	assert_string_equal(buf, "/kubepods/pod1/x.scope");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cgroup_table),   cmocka_unit_test(test_cgroup_path),
		cmocka_unit_test(test_vm_cmdlines),    cmocka_unit_test(test_pid_stat),
		cmocka_unit_test(test_cpu_stat),       cmocka_unit_test(test_cpu_busy),
		cmocka_unit_test(test_cpu_sizes),      cmocka_unit_test(test_cgroup_cpu_path),
		cmocka_unit_test(test_read_file_kept),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
