// SPDX-License-Identifier: Apache-2.0
/*
 * bench_collectd: the collector's own cost (not a test).
 *   build/tests/bench_collectd [N ...]     (default: 1000 10000)
 * With N extra live processes (sleeping in 2 s loops, so that each runs
 * now and then), runs build/collectd/kepler-collectd with a 1 s interval
 * on the fake meter, and prints its CPU time per interval (its thread's
 * on-CPU ns from /proc/PID/schedstat over 20 intervals, after 10 s of start-up,
 * whose cost is printed apart) and its
 * peak RSS (VmHWM). Needs root for the eBPF informer (procfs otherwise).
 */
#include <errno.h>
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

static void bench(const char *bin, int n)
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
		execl(bin, bin, "--store.path", store, "--monitor.interval", "1s", "--meter.source", "fake",
		      "--log.level", "warn", (char *)NULL);
		_exit(127);
	}
	sleep(WARMUP);
	t0 = cpu_seconds(c);
	sleep(INTERVALS);
	t1 = cpu_seconds(c);
	hwm = vm_hwm_kib(c);
	kill(c, SIGTERM);
	waitpid(c, NULL, 0);
	printf("%5d extra processes: start-up %.0f ms CPU (first %d s); then %.2f ms CPU per "
	       "interval (mean of %d); peak RSS %.1f MiB\n",
	       n, t0 * 1000.0, WARMUP, (t1 - t0) * 1000.0 / INTERVALS, INTERVALS, (double)hwm / 1024.0);
	fflush(stdout);
	stop_all(pids, n);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", store);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", store);
}

int main(int argc, char **argv)
{
	char bin[4096];
	int counts[8] = { 1000, 10000 }, n = 2;

	snprintf(bin, sizeof(bin), "%s/collectd/kepler-collectd", KEPLER_BINARY_DIR);
	if (argc > 1) {
		n = 0;
		for (int i = 1; i < argc && n < 8; i++)
			counts[n++] = atoi(argv[i]);
	}
	for (int i = 0; i < n; i++)
		bench(bin, counts[i]);
	return 0;
}
