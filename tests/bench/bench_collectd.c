// SPDX-License-Identifier: Apache-2.0
/*
 * bench_collectd: the collector's own cost (not a test).
 *   build/tests/bench_collectd [-r RUNS] [-a ARG]... [N ...]   (default: 1 run of 1000 and of 10000)
 * With N extra live processes (sleeping in 2 s loops, so that each runs
 * now and then), runs build/collectd/kepler-collectd with a 1 s interval
 * on the fake meter, and prints its CPU time per interval (its thread's
 * on-CPU ns from /proc/PID/schedstat over 20 intervals, after 10 s of start-up,
 * whose cost is printed apart: in all, and beyond what those 10 s would
 * have cost at the steady rate) and its peak RSS (VmHWM). With -r, each
 * count is run RUNS times and the medians printed after. Each -a adds an
 * argument to the collector's command line (-a --store.sync -a none). Needs
 * root for the eBPF informer (procfs otherwise).
 */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define INTERVALS 20
#define WARMUP 10 /* s: start-up resolves every process once */

static pid_t *spawn_sleepers(int n)
{
	pid_t *pids = calloc((size_t)n, sizeof(*pids));

	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			for (;;)
				sleep(2);
		if (pids[i] < 0) {
			fprintf(stderr, "fork %d: %s\n", i, strerror(errno));
			exit(1);
		}
	}
	return pids;
}

static void stop_all(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	free(pids);
}

/* On-CPU time of the (single-threaded) collector, ns: /proc/PID/schedstat. */
static double cpu_seconds(pid_t pid)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%llu", &ns) != 1)
		ns = 0;
	fclose(f);
	return (double)ns / 1e9;
}

static long vm_hwm_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

struct run {
	double startup_ms, interval_ms, extra_ms, rss_mib;
};

static const char *extra_args[16];
static int nextra;

static void bench(const char *bin, int n, struct run *ret)
{
	pid_t *pids = spawn_sleepers(n), c;
	char store[] = "/tmp/kepler-bench-XXXXXX", cmd[128];
	double t0, t1;
	long hwm;

	if (!mkdtemp(store))
		exit(1);
	sleep(1);
	c = fork();
	if (c == 0) {
		const char *argv[32] = { bin,   "--store.path",   store,  "--monitor.interval",
					 "1s",  "--meter.source", "fake", "--log.level",
					 "warn" };
		int k = 9;

		for (int i = 0; i < nextra; i++)
			argv[k++] = extra_args[i];
		argv[k] = NULL;
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	sleep(WARMUP);
	t0 = cpu_seconds(c);
	sleep(INTERVALS);
	t1 = cpu_seconds(c);
	hwm = vm_hwm_kib(c);
	kill(c, SIGTERM);
	waitpid(c, NULL, 0);
	ret->startup_ms = t0 * 1000.0;
	ret->interval_ms = (t1 - t0) * 1000.0 / INTERVALS;
	ret->extra_ms = ret->startup_ms - WARMUP * ret->interval_ms;
	ret->rss_mib = (double)hwm / 1024.0;
	printf("%5d extra processes: start-up %.0f ms CPU (first %d s; %.0f ms beyond %d intervals at the "
	       "steady rate); then %.2f ms CPU per interval (mean of %d); peak RSS %.1f MiB\n",
	       n, ret->startup_ms, WARMUP, ret->extra_ms, WARMUP, ret->interval_ms, INTERVALS, ret->rss_mib);
	fflush(stdout);
	stop_all(pids, n);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", store);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", store);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median_of(struct run *runs, int n, size_t field)
{
	double v[64];

	for (int i = 0; i < n; i++)
		v[i] = *(const double *)((const char *)&runs[i] + field);
	qsort(v, (size_t)n, sizeof(v[0]), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	char bin[4096];
	int counts[8] = { 1000, 10000 }, n = 2, runs = 1, first = 1;
	struct run r[64];

	snprintf(bin, sizeof(bin), "%s/collectd/kepler-collectd", KEPLER_BINARY_DIR);
	while (first < argc && argv[first][0] == '-') {
		if (first + 1 >= argc) {
			fprintf(stderr, "usage: bench_collectd [-r RUNS] [-a ARG]... [N ...]\n");
			return 2;
		} else if (strcmp(argv[first], "-r") == 0) {
			runs = atoi(argv[first + 1]);
			if (runs < 1 || runs > 64) {
				fprintf(stderr, "bench_collectd: -r takes 1 to 64 runs\n");
				return 2;
			}
		} else if (strcmp(argv[first], "-a") == 0 && nextra < 16) {
			extra_args[nextra++] = argv[first + 1];
		} else {
			fprintf(stderr, "usage: bench_collectd [-r RUNS] [-a ARG]... [N ...]\n");
			return 2;
		}
		first += 2;
	}
	if (argc > first) {
		n = 0;
		for (int i = first; i < argc && n < 8; i++)
			counts[n++] = atoi(argv[i]);
	}
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < runs; k++)
			bench(bin, counts[i], &r[k]);
		if (runs > 1)
			printf("%5d extra processes, median of %d runs: start-up %.0f ms CPU (%.0f ms beyond the "
			       "steady rate); %.2f ms CPU per interval; peak RSS %.1f MiB\n",
			       counts[i], runs, median_of(r, runs, offsetof(struct run, startup_ms)),
			       median_of(r, runs, offsetof(struct run, extra_ms)),
			       median_of(r, runs, offsetof(struct run, interval_ms)),
			       median_of(r, runs, offsetof(struct run, rss_mib)));
	}
	return 0;
}
