/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/host/procfs.h: parsers of the procfs files the informers read, and
 * small readers around them. The parsers work on buffers (so that they are
 * tested and fuzzed without a /proc) and trust nothing in them: a process
 * name may hold spaces, parentheses, newlines or invalid UTF-8.
 */
#ifndef KEPLER_COLLECTD_PROCFS_H
#define KEPLER_COLLECTD_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/error.h"

#define KEPLER_COMM_MAX 16 /* TASK_COMM_LEN, with the NUL */
#define KEPLER_PF_KTHREAD 0x00200000u

/* The fields of /proc/PID/stat that we use. */
struct kepler_pid_stat {
	uint32_t pid, ppid;
	char state;
	char comm[KEPLER_COMM_MAX]; /* raw bytes, NUL-terminated, may be invalid UTF-8 */
	uint32_t flags;             /* PF_* */
	uint64_t utime_ticks, stime_ticks;
	uint64_t start_ticks; /* since boot, in USER_HZ ticks */
};

/* The aggregate "cpu" line of /proc/stat, in USER_HZ ticks, and the CPU count. */
struct kepler_cpu_stat {
	uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
	unsigned cpu_count; /* "cpuN" lines: online CPUs */
};

/* Parse /proc/PID/stat. -EINVAL if malformed. */
int kepler_procfs_parse_pid_stat(const char *buf, size_t len, struct kepler_pid_stat *ret);

/* Parse /proc/stat. -EINVAL if it has no well-formed "cpu" line. */
int kepler_procfs_parse_cpu_stat(const char *buf, size_t len, struct kepler_cpu_stat *ret);

/* The largest CPU number a "cpuN" line may have (beyond: not a CPU line). */
#define KEPLER_CPU_NUMBER_MAX 65535
/* A CPU whose busy ticks are not known (no line, or a malformed one). */
#define KEPLER_CPU_BUSY_UNKNOWN UINT64_MAX

/*
 * Each CPU's busy ticks from /proc/stat's "cpuN" lines into @busy[N] for N
 * < @max (the first line of a number counts; others, and malformed lines,
 * leave KEPLER_CPU_BUSY_UNKNOWN). Returns the CPUs found.
 */
int kepler_procfs_parse_cpu_busy(const char *buf, size_t len, uint64_t *busy, size_t max);

/* busy = total - idle - iowait (Kepler's definition), total = sum of the 8 fields. */
uint64_t kepler_cpu_stat_total(const struct kepler_cpu_stat *s);
uint64_t kepler_cpu_stat_busy(const struct kepler_cpu_stat *s);

/* Nanoseconds per USER_HZ tick (10,000,000 with the usual USER_HZ of 100). */
uint64_t kepler_ns_per_tick(void);

/*
 * Read a whole small file (at most @size - 1 bytes, NUL-terminated) into
 * @buf; *ret_len gets the length. -ENOENT, -EACCES, -ESRCH... as errno,
 * -EFBIG if it did not fit.
 */
int kepler_read_file(const char *path, char *buf, size_t size, size_t *ret_len);

/* Same, relative to the directory fd @dirfd. */
int kepler_read_file_at(int dirfd, const char *name, char *buf, size_t size, size_t *ret_len);

/*
 * Same, through *@fd, kept open for the next read (opened relative to
 * @dirfd when it is -1; closed and set to -1 again after an error): a file
 * read every interval (/proc/stat, /proc/self/statm) costs a pread instead
 * of a path lookup, an open and a close. procfs regenerates such a file at
 * each read from offset 0, whole: a read that returns less than asked is
 * taken as the end (one pread an interval, not a second to confirm it,
 * which would make the kernel generate the file again).
 */
int kepler_read_file_kept(int dirfd, const char *name, int *fd, char *buf, size_t size, size_t *ret_len);

#endif /* KEPLER_COLLECTD_PROCFS_H */
