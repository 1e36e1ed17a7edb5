// SPDX-License-Identifier: Apache-2.0
/*
 * bench_informer: prints the resource tracking figures (not a test; needs
 * root and BTF for the eBPF parts).
 *   build/tests/bench_informer [N ...]     (default: 1000 10000)
 * 1. eBPF cost per sched_switch event, from the kernel's own BPF stats
 *    (kernel.bpf_stats_enabled: run_time_ns / run_cnt) under a
 *    context-switch-heavy load (two processes ping-ponging over pipes),
 *    and the same for an empty program: the measurement's own floor.
 * 2. Informer refresh CPU time (this thread's CPU clock) with N live
 *    processes, eBPF vs procfs: median of 7 refreshes after 2 warm-ups.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench_floor.skel.h"
#include "cputime.skel.h"
#include "informer.h"

#define PINGPONGS 200000

static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int write_sysctl(const char *path, const char *v)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fputs(v, f);
	return fclose(f) == 0 ? 0 : -errno;
}

static void pingpong(int n)
{
	int a[2], b[2];
	char c = 'x';
	pid_t pid;

	if (pipe(a) < 0 || pipe(b) < 0)
		exit(1);
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < n; i++)
			if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	for (int i = 0; i < n; i++)
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			break;
	waitpid(pid, NULL, 0);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

/* ns per event of @prog under the ping-pong load; -1 on error */
static double event_ns(struct bpf_program *prog, unsigned long long *ret_events)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	pingpong(PINGPONGS);
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) < 0 || !info.run_cnt)
		return -1;
	*ret_events = info.run_cnt;
	return (double)info.run_time_ns / (double)info.run_cnt;
}

static void bench_event_cost(void)
{
	struct bench_floor *floor = NULL;
	struct cputime *skel = NULL;
	unsigned long long events = 0, floor_events = 0;
	double ns, floor_ns;

	if (write_sysctl("/proc/sys/kernel/bpf_stats_enabled", "1") < 0) {
		printf("event cost: cannot enable kernel.bpf_stats_enabled (%s)\n", strerror(errno));
		return;
	}
	floor = bench_floor__open_and_load();
	if (!floor || bench_floor__attach(floor) < 0) {
		printf("event cost: cannot load the empty program\n");
		goto out;
	}
	floor_ns = event_ns(floor->progs.kepler_bench_empty, &floor_events);
	bench_floor__destroy(floor);
	floor = NULL;
	skel = cputime__open_and_load();
	if (!skel || cputime__attach(skel) < 0) {
		printf("event cost: cannot load the eBPF program\n");
		goto out;
	}
	ns = event_ns(skel->progs.kepler_sched_switch, &events);
	printf("eBPF sched_switch: %.1f ns per event (run_time_ns / run_cnt over %llu events, "
	       "%d ping-pongs); an empty program measures %.1f ns here, so the program's own "
	       "cost is %.1f ns\n",
	       ns, events, PINGPONGS, floor_ns, ns - floor_ns);
out:
	bench_floor__destroy(floor);
	cputime__destroy(skel);
	write_sysctl("/proc/sys/kernel/bpf_stats_enabled", "0");
}

static pid_t *spawn_sleepers(int n)
{
	pid_t *pids = calloc((size_t)n, sizeof(*pids));

	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			/* wake every 2 s, so that each is seen running after the attach */
			for (;;)
				sleep(2);
		}
		if (pids[i] < 0) {
			fprintf(stderr, "fork %d: %s\n", i, strerror(errno));
			exit(1);
		}
	}
	return pids;
}

static void stop(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	free(pids);
}

static void bench_refresh(enum kepler_informer_kind kind, int n)
{
	struct kepler_informer_params p = { .kind = kind, .procfs = "/proc" };
	struct kepler_informer *inf = NULL;
	struct kepler_error err = { 0 };
	double ms[7];

	if (kepler_informer_open(&p, NULL, &inf, &err) < 0) {
		printf("%s: %s\n", kepler_informer_kind_name(kind), err.msg);
		return;
	}
	if (kind == KEPLER_INFORMER_EBPF)
		sleep(3); /* every sleeper runs once */
	for (int i = 0; i < 2; i++)
		kepler_informer_refresh(inf, &err);
	for (int i = 0; i < 7; i++) {
		double t0 = thread_cpu_ms();

		if (kepler_informer_refresh(inf, &err) < 0)
			printf("refresh: %s\n", err.msg);
		ms[i] = thread_cpu_ms() - t0;
		usleep(200000);
	}
	qsort(ms, 7, sizeof(ms[0]), cmp_double);
	printf("%-6s refresh with %5d live processes: %7.2f ms CPU (median of 7; min %.2f, max %.2f); %zu reported\n",
	       kepler_informer_kind_name(kind), n, ms[3], ms[0], ms[6], kepler_informer_count(inf));
	kepler_informer_close(inf);
}

int main(int argc, char **argv)
{
	int counts[8] = { 1000, 10000 }, ncounts = 2;

	if (argc > 1) {
		ncounts = 0;
		for (int i = 1; i < argc && ncounts < 8; i++)
			counts[ncounts++] = atoi(argv[i]);
	}
	if (geteuid() != 0)
		printf("not root: the eBPF figures will fail\n");
	libbpf_set_print(NULL);
	bench_event_cost();
	for (int i = 0; i < ncounts; i++) {
		pid_t *pids = spawn_sleepers(counts[i]);

		sleep(1);
		bench_refresh(KEPLER_INFORMER_EBPF, counts[i]);
		bench_refresh(KEPLER_INFORMER_PROCFS, counts[i]);
		stop(pids, counts[i]);
	}
	return 0;
}
