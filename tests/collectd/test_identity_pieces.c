// SPDX-License-Identifier: Apache-2.0
/*
 * Changes of identity with the eBPF informer in the real kernel: the CPU
 * time a process runs as each program of an exec chain, and in each cgroup
 * it is moved between, goes to that program and that cgroup, whatever the
 * refreshes (bpf/cputime.bpf.c cuts a piece of its account at each change,
 * collectd/informers/pieces.c reports it as the identity it ran as).
 *
 * Truth is the kernel's own accounting of the same things: each program
 * reads its process's /proc/PID/schedstat (the on-CPU time the eBPF
 * program counts) first thing, the last runs to its exit (wait4); each cgroup's cpuacct.usage (v1) or
 * cpu.stat usage_usec (v2). Within 1 %, however loaded the machine: the
 * refreshes' timing changes where the intervals fall, not the sums.
 * Skipped (exit 77, the reason printed) without root or kernel BTF, or
 * without the hierarchy a case needs. KEPLER_TEST_VERBOSE=1 prints each
 * refresh's records of the process and the pieces read for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "cgroup_tree.h"
#include "informer.h"
#include "informer_internal.h"

static const char *bpf_missing(void)
{
	if (geteuid() != 0)
		return "the eBPF informer needs root (CAP_BPF, CAP_PERFMON)";
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		return "no kernel BTF at /sys/kernel/btf/vmlinux";
	return NULL;
}

#define require_bpf()                             \
	do {                                      \
		const char *why_ = bpf_missing(); \
		if (why_)                         \
			kepler_skip("%s", why_);  \
	} while (0)

/* What a case opened or started, undone by teardown() even when an assertion failed. */
static struct kepler_informer *opened;
static pid_t child_pid;
static char made_dirs[8][600];
static int nmade;
static char tmp_dir[64];

static int teardown(void **state)
{
	(void)state;
	if (child_pid > 0) {
		kill(child_pid, SIGKILL);
		waitpid(child_pid, NULL, 0);
		child_pid = 0;
	}
	kepler_informer_close(opened);
	opened = NULL;
	while (nmade > 0)
		rmdir(made_dirs[--nmade]); /* the last made first: children before parents */
	if (tmp_dir[0]) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", tmp_dir);
		tmp_dir[0] = '\0';
	}
	return 0;
}

static struct kepler_informer *open_ebpf(void)
{
	struct kepler_informer_params p = { .kind = KEPLER_INFORMER_EBPF, .procfs = "/proc" };
	struct kepler_error err = { 0 };

	if (kepler_informer_open(&p, NULL, &opened, &err) < 0)
		fail_msg("open ebpf: %s", err.msg);
	return opened;
}

/* Tallies of CPU time by a name (a comm, a container id). */
struct tally {
	char name[80];
	uint64_t ns;
	unsigned records, pieces;
};

#define TALLY_MAX 32

static struct tally *tally_of(struct tally *t, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	assert_true(*n < TALLY_MAX);
	memset(&t[*n], 0, sizeof(t[*n]));
	snprintf(t[*n].name, sizeof(t[*n].name), "%s", name);
	return &t[(*n)++];
}

/*
 * Refresh, and add the CPU time of this interval of each record of @pid
 * (its pieces and itself) to the tally of its comm, or of its container
 * (@by_container; "" for none). Whether @pid was reported terminated.
 */
static bool refresh_and_tally(struct kepler_informer *inf, pid_t pid, bool by_container, struct tally *t,
			      size_t *n)
{
	struct kepler_error err = { 0 };
	bool ended = false;

	if (kepler_informer_refresh(inf, &err) < 0)
		fail_msg("refresh: %s", err.msg);
	for (size_t i = 0; getenv("KEPLER_TEST_VERBOSE") && i < inf->npieces; i++)
		if (inf->pieces[i].pid == (uint32_t)pid)
			print_message("    ring: piece at %.2f ms, cgroup %llu, used %d, waited %d\n",
				      inf->pieces[i].cpu_ns / 1e6,
				      (unsigned long long)inf->pieces[i].cgroup_id, inf->pieces[i].used,
				      inf->pieces[i].waited);
	for (size_t i = 0; i < kepler_informer_count(inf); i++) {
		const struct kepler_proc *p = kepler_informer_proc(inf, i);
		struct tally *at;

		if (p->pid != (uint32_t)pid)
			continue;
		if (getenv("KEPLER_TEST_VERBOSE"))
			print_message(
				"    refresh %llu: %s%.4s %s %.2f ms, cumulative %.2f (late so far %llu)\n",
				(unsigned long long)kepler_informer_stats(inf)->refreshes,
				p->piece ? "piece " : "", p->id->container.id,
				p->state == KEPLER_STATE_TERMINATED ? "ended" : "running",
				p->cpu_time_delta_ns / 1e6, p->cpu_time_ns / 1e6,
				(unsigned long long)kepler_informer_stats(inf)->pieces_late_total);
		at = tally_of(t, n, by_container ? p->id->container.id : p->comm);
		at->ns += p->cpu_time_delta_ns;
		at->records++;
		at->pieces += p->piece;
		if (!p->piece && p->state == KEPLER_STATE_TERMINATED)
			ended = true;
	}
	return ended;
}

static void sleep_us(unsigned long us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void check_within_1pct(const char *what, uint64_t got, uint64_t want)
{
	double off = want ? ((double)got - (double)want) / (double)want * 100.0 : 0;

	print_message("  %-28s eBPF %9.2f ms, kernel %9.2f ms, %+.2f %%\n", what, got / 1e6, want / 1e6, off);
	if (!want || off < -1.0 || off > 1.0)
		fail_msg("%s: %llu ns is not within 1 %% of the kernel's %llu ns", what,
			 (unsigned long long)got, (unsigned long long)want);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	assert_true(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	assert_int_equal(close(out), 0);
}

#define STAGES 5

/*
 * An exec chain of five programs (copies of dash named kstage-1..5: each
 * its own comm and exe), each looping a different number of times (0.85
 * to 1.4 s of CPU), then
 * exec'ing the next: refreshed every 2 s of wall time, so that intervals
 * hold one, two or three programs each, however loaded the machine. Each
 * program's CPU time, its pieces and the process's own record summed by
 * comm, is within 1 % of what its process's schedstat grew from that
 * program's start to the next's.
 */
static void test_exec_chain(void **state)
{
	/*
	 * 0.85 to 1.4 s of CPU each: a program's last tick before its exec (4 ms
	 * at HZ=250) may go to the next (docs/attribution.md), 0.5 % of the least
	 */
	static const unsigned loops[STAGES] = { 1400000, 2000000, 1200000, 1700000, 1500000 };
	struct tally t[TALLY_MAX];
	size_t nt = 0;
	char path[128], script[128], log[128], line[128], name[32];
	uint64_t at[STAGES + 1] = { 0 };
	struct kepler_informer *inf;
	struct rusage ru;
	FILE *f;
	int status;
	bool ended = false;

	(void)state;
	require_bpf();
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/kepler-pieces-XXXXXX");
	assert_non_null(mkdtemp(tmp_dir));
	assert_int_equal(chmod(tmp_dir, 0755), 0);
	for (int k = 1; k <= STAGES; k++) {
		snprintf(path, sizeof(path), "%s/kstage-%d", tmp_dir, k);
		copy_file("/bin/dash", path);
	}
	snprintf(script, sizeof(script), "%s/stage.sh", tmp_dir);
	snprintf(log, sizeof(log), "%s/log", tmp_dir);
	f = fopen(script, "w");
	assert_non_null(f);
	/* schedstat's first field: the on-CPU time of the process's (only) thread, ns */
	fprintf(f,
		"k=$1\n"
		"read s r < /proc/$$/schedstat\n"
		"echo \"$k $s\" >> %s\n"
		"set -- %u %u %u %u %u\n"
		"eval n=\\${$k}\n"
		"i=0; while [ $i -lt $n ]; do i=$((i+1)); done\n"
		"[ $k -lt %d ] && exec %s/kstage-$((k+1)) %s $((k+1))\n"
		"exit 0\n",
		log, loops[0], loops[1], loops[2], loops[3], loops[4], STAGES, tmp_dir, script);
	assert_int_equal(fclose(f), 0);

	inf = open_ebpf();
	refresh_and_tally(inf, 0, false, t, &nt);
	nt = 0;
	child_pid = fork();
	assert_true(child_pid >= 0);
	if (child_pid == 0) {
		snprintf(path, sizeof(path), "%s/kstage-1", tmp_dir);
		execl(path, "kstage-1", script, "1", (char *)NULL);
		_exit(127);
	}
	for (;;) {
		pid_t w = wait4(child_pid, &status, WNOHANG, &ru);

		assert_true(w >= 0);
		if (w == child_pid)
			break;
		refresh_and_tally(inf, child_pid, false, t, &nt);
		sleep_us(2000000);
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* refreshed until its own record ends (its final switch may follow wait4) */
	for (int i = 0; i < 500 && !ended; i++) {
		ended = refresh_and_tally(inf, child_pid, false, t, &nt);
		if (!ended)
			sleep_us(10000);
	}
	assert_true(ended);
	f = fopen(log, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		int k;

		if (sscanf(line, "%d %llu", &k, &v) == 2 && k >= 1 && k <= STAGES)
			at[k - 1] = v;
	}
	fclose(f);
	/* the last program's time runs to its exit: the process's whole, as wait4 says */
	at[STAGES] = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
		     (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL;
	print_message(
		"exec chain of %d programs, pid %d (pieces on the host: %llu made, %llu late, %llu lost):\n",
		STAGES, (int)child_pid, (unsigned long long)kepler_informer_stats(inf)->pieces_total,
		(unsigned long long)kepler_informer_stats(inf)->pieces_late_total,
		(unsigned long long)kepler_informer_stats(inf)->pieces_lost_total);
	for (size_t i = 0; i < nt; i++)
		print_message("  %-16s %u records, %u pieces, %.2f ms\n", t[i].name, t[i].records,
			      t[i].pieces, t[i].ns / 1e6);
	for (int k = 0; k < STAGES; k++) {
		assert_true(at[k + 1] > at[k]);
		snprintf(name, sizeof(name), "kstage-%d", k + 1);
		check_within_1pct(name, tally_of(t, &nt, name)->ns, at[k + 1] - at[k]);
	}
	child_pid = 0; /* reaped */
	teardown(NULL);
}

/* The CPU time of cgroup @dir, ns: cpuacct.usage, or (@v2) cpu.stat's usage_usec. */
static uint64_t usage_ns(const char *dir, bool v2)
{
	char path[700], key[64];
	unsigned long long v = 0, got = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "cpu.stat" : "cpuacct.usage");
	f = fopen(path, "r");
	assert_non_null(f);
	if (!v2) {
		if (fscanf(f, "%llu", &got) != 1)
			got = 0;
	} else {
		while (fscanf(f, "%63s %llu", key, &v) == 2)
			if (!strcmp(key, "usage_usec"))
				got = v * 1000ULL;
	}
	fclose(f);
	return got;
}

static void make_dir(const char *path)
{
	if (mkdir(path, 0755) < 0)
		kepler_skip("cannot create cgroup %s: %s", path, strerror(errno));
	assert_true(nmade < 8);
	snprintf(made_dirs[nmade++], sizeof(made_dirs[0]), "%s", path);
}

static void move_to(const char *cg, pid_t pid)
{
	char procs[700];
	FILE *f;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	f = fopen(procs, "w");
	assert_non_null(f);
	fprintf(f, "%d\n", pid);
	assert_int_equal(fclose(f), 0);
}

/*
 * A burner moved between two containers' cgroups under @root every 2.5 s,
 * refreshed every 5 s, each refresh 1.25 s after a move (so each interval
 * holds a move each way). Where @acct is not NULL, the v1 cpuacct
 * hierarchy (mounted apart from cpu) gets the same cgroups and moves, for
 * its cpuacct.usage; else @root's cgroups say (cpu.stat where @v2, else
 * cpuacct.usage).
 * Each container's CPU time, from the burner's pieces and its own record,
 * is within 1 % of its cgroup's.
 */
static void burner_moved_between(const char *root, const char *acct, bool v2)
{
	char ids[2][65], top[2][256], cg[2][2][600];
	struct tally t[TALLY_MAX];
	size_t nt = 0, trees = acct ? 2 : 1;
	struct kepler_informer *inf;

	/* containers of this run's own: another run beside it never names the same */
	snprintf(ids[0], sizeof(ids[0]), "aaaa%048d%012x", 0, (unsigned)getpid());
	snprintf(ids[1], sizeof(ids[1]), "bbbb%048d%012x", 0, (unsigned)getpid());
	for (size_t h = 0; h < trees; h++) {
		snprintf(top[h], sizeof(top[h]), "%s/kepler-pieces-%d", h ? acct : root, (int)getpid());
		make_dir(top[h]);
		for (int c = 0; c < 2; c++) {
			snprintf(cg[h][c], sizeof(cg[h][c]), "%s/docker-%s.scope", top[h], ids[c]);
			make_dir(cg[h][c]);
		}
	}
	inf = open_ebpf();
	child_pid = fork();
	assert_true(child_pid >= 0);
	if (child_pid == 0) {
		volatile unsigned long x = 0;

		for (;;)
			x++;
	}
	for (size_t h = 0; h < trees; h++)
		move_to(top[h], child_pid); /* no container: the start */
	refresh_and_tally(inf, child_pid, true, t, &nt);
	nt = 0;
	for (int i = 0; i < 8; i++) {
		for (size_t h = 0; h < trees; h++)
			move_to(cg[h][i % 2], child_pid);
		sleep_us(1250000);
		if (i % 2 == 0)
			refresh_and_tally(inf, child_pid, true, t, &nt);
		sleep_us(1250000);
	}
	for (size_t h = 0; h < trees; h++)
		move_to(top[h], child_pid);
	refresh_and_tally(inf, child_pid, true, t, &nt);
	print_message("burner pid %d moved 8 times (pieces on the host: %llu made, %llu late, %llu lost):\n",
		      (int)child_pid, (unsigned long long)kepler_informer_stats(inf)->pieces_total,
		      (unsigned long long)kepler_informer_stats(inf)->pieces_late_total,
		      (unsigned long long)kepler_informer_stats(inf)->pieces_lost_total);
	for (size_t i = 0; i < nt; i++)
		print_message("  container '%.4s' %u records, %u pieces, %.2f ms\n", t[i].name, t[i].records,
			      t[i].pieces, t[i].ns / 1e6);
	for (int c = 0; c < 2; c++) {
		char what[64];

		snprintf(what, sizeof(what), "container %.4s", ids[c]);
		check_within_1pct(what, tally_of(t, &nt, ids[c])->ns, usage_ns(cg[trees - 1][c], v2));
	}
	kill(child_pid, SIGKILL);
	waitpid(child_pid, NULL, 0);
	child_pid = 0;
	teardown(NULL);
}

static bool is_cgroup2(const char *path)
{
	struct statfs fs;

	return statfs(path, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

/* The hierarchy where the informer finds containers: v1 cpu (hybrid, v1 hosts) or cgroup2. */
static void test_moves_in_cpu_hierarchy(void **state)
{
	static struct kepler_cgroup_tree tree;
	char probe[600];

	(void)state;
	require_bpf();
	kepler_cgroup_tree_find("/sys", &tree);
	if (!tree.path[0])
		kepler_skip("no cgroup hierarchy with the cpu controller here");
	snprintf(probe, sizeof(probe), "%s/cpuacct.usage", tree.path);
	if (is_cgroup2(tree.path))
		burner_moved_between(tree.path, NULL, true);
	else if (access(probe, R_OK) == 0) /* cpu,cpuacct mounted together */
		burner_moved_between(tree.path, NULL, false);
	else if (access("/sys/fs/cgroup/cpuacct/cpuacct.usage", R_OK) == 0)
		burner_moved_between(tree.path, "/sys/fs/cgroup/cpuacct", false);
	else
		kepler_skip("no cpuacct.usage with the cpu controller nor at /sys/fs/cgroup/cpuacct");
}

/* On a hybrid host, moves in the cgroup2 hierarchy alone (the v1 cpu cgroup stays). */
static void test_moves_in_v2_of_hybrid(void **state)
{
	(void)state;
	require_bpf();
	if (!is_cgroup2("/sys/fs/cgroup/unified") || is_cgroup2("/sys/fs/cgroup/cpu"))
		kepler_skip(
			"not a hybrid cgroup node (v1 cpu controller, cgroup2 at /sys/fs/cgroup/unified)");
	burner_moved_between("/sys/fs/cgroup/unified", NULL, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_exec_chain, teardown),
		cmocka_unit_test_teardown(test_moves_in_cpu_hierarchy, teardown),
		cmocka_unit_test_teardown(test_moves_in_v2_of_hybrid, teardown),
	};

	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
