// SPDX-License-Identifier: Apache-2.0
/*
 * The exporter's own figures for the process_* families, read from
 * /proc/self (this process's own files, never the host's) at each scrape (a few small reads): CPU time, memory, file
 * descriptors, start time, as the Prometheus client libraries report them.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "self.h"

/* The wall-clock time @since_boot_s after boot (no host file: the clocks alone). */
static double wall_at(double since_boot_s)
{
	struct timespec real, boot;

	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	return (double)real.tv_sec + (double)real.tv_nsec / 1e9 -
	       ((double)boot.tv_sec + (double)boot.tv_nsec / 1e9) + since_boot_s;
}

static unsigned long long count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned long long n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d) {
		closedir(d);
		n--; /* the directory's own descriptor */
	}
	return n;
}

int kepler_self_stats(struct kepler_process_stats *st)
{
	char buf[1024], *p;
	unsigned long long utime, stime, start, vsize;
	long long rss;
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	struct rlimit rl;
	size_t n;
	FILE *f = fopen("/proc/self/stat", "re");

	memset(st, 0, sizeof(*st));
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold anything: fields follow its last ')' */
	if (!p || tick <= 0 ||
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
		   &utime, &stime, &start, &vsize, &rss) != 5)
		return -1;
	st->cpu_seconds = (double)(utime + stime) / (double)tick;
	st->vsize_bytes = vsize;
	st->rss_bytes = rss > 0 ? (uint64_t)rss * (uint64_t)page : 0;
	st->start_time_seconds = wall_at((double)start / (double)tick);
	st->open_fds = count_fds();
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		st->max_fds = rl.rlim_cur == RLIM_INFINITY ? 0 : (uint64_t)rl.rlim_cur;
	return 0;
}
