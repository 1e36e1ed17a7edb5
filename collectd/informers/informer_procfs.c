// SPDX-License-Identifier: Apache-2.0
/*
 * The procfs informer: at each refresh, /proc/PID/stat of every process
 * (utime + stime, USER_HZ resolution). Works without privileges for CPU
 * time; exe and some cgroups need root or CAP_SYS_PTRACE. Processes that
 * start and end between two refreshes are not seen at all: the ebpf
 * informer exists for them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "informer_internal.h"

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static int sample_pid(struct kepler_informer *inf, const char *name)
{
	struct kepler_proc_sample *s;
	uint64_t tick = kepler_ns_per_tick();
	char path[300], buf[1024];
	size_t len;
	int r;

	snprintf(path, sizeof(path), "%s/stat", name);
	r = kepler_read_file_at(inf->procfd, path, buf, sizeof(buf), &len);
	if (r == -ENOENT || r == -ESRCH)
		return 0; /* exited since readdir */
	s = kepler_informer_add_sample(inf);
	if (!s)
		return -ENOMEM;
	if (r < 0 || kepler_procfs_parse_pid_stat(buf, len, &s->stat) < 0 ||
	    (unsigned long)s->stat.pid != strtoul(name, NULL, 10)) {
		/* unreadable or garbage: keep what we knew, count it */
		s->pid = (uint32_t)strtoul(name, NULL, 10);
		s->unreadable = true;
		inf->stats.skipped++;
		return 0;
	}
	s->has_stat = true;
	s->pid = s->stat.pid;
	s->start_time_ns = s->stat.start_ticks * tick;
	memcpy(s->comm, s->stat.comm, sizeof(s->comm));
	s->cpu_ns = (s->stat.utime_ticks + s->stat.stime_ticks) * tick;
	s->kthread = s->stat.flags & KEPLER_PF_KTHREAD;
	return 0;
}

static int procfs_collect(struct kepler_informer *inf, struct kepler_error *err)
{
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	/* a new descriptor: readdir of the same one would continue, not restart */
	fd = openat(inf->procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return kepler_error_set(err, r, "cannot list %s: %s", inf->procfs, strerror(-r));
	}
	while (r == 0 && (de = readdir(d)))
		if (all_digits(de->d_name))
			r = sample_pid(inf, de->d_name);
	closedir(d);
	if (r < 0)
		return kepler_error_set(err, r, "out of memory");
	return 0;
}

static const struct kepler_informer_ops procfs_ops = {
	.collect = procfs_collect,
	.reports_all_live = true,
};

int kepler_informer_procfs_open(struct kepler_informer *inf, const struct kepler_informer_params *p,
				struct kepler_error *err)
{
	char buf[4096];
	size_t len;
	int r;

	(void)p;
	inf->ops = &procfs_ops;
	r = kepler_read_file_at(inf->procfd, "stat", buf, sizeof(buf), &len);
	if (r < 0 && r != -EFBIG)
		return kepler_error_set(err, r, "%s/stat is not readable: %s (is %s a procfs?)", inf->procfs,
					strerror(-r), inf->procfs);
	snprintf(inf->describe, sizeof(inf->describe),
		 "procfs (%s/PID/stat each interval; processes shorter than an interval are not seen; "
		 "hardware counters unavailable)",
		 inf->procfs);
	return 0;
}
