// SPDX-License-Identifier: Apache-2.0
/*
 * procfs parsers. /proc/PID/stat is "pid (comm) state ppid ...": the comm
 * may itself hold ") " so the fields start after the LAST ')' (as proc(5)
 * advises); every number is parsed with strtoull and checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

/* Parse the unsigned decimal at *pp, then skip one space. */
static int next_u64(const char **pp, const char *end, uint64_t *ret)
{
	const char *p = *pp;
	uint64_t v = 0;

	if (p >= end || *p < '0' || *p > '9')
		return -EINVAL;
	while (p < end && *p >= '0' && *p <= '9') {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
			return -ERANGE;
		p++;
	}
	if (p < end && *p != ' ' && *p != '\n')
		return -EINVAL;
	if (p < end)
		p++;
	*pp = p;
	*ret = v;
	return 0;
}

/* Skip one field (signed numbers included), then one space. */
static int skip_field(const char **pp, const char *end)
{
	const char *p = *pp;

	if (p >= end || *p == ' ')
		return -EINVAL;
	while (p < end && *p != ' ' && *p != '\n')
		p++;
	if (p < end)
		p++;
	*pp = p;
	return 0;
}

int kepler_procfs_parse_pid_stat(const char *buf, size_t len, struct kepler_pid_stat *ret)
{
	const char *end = buf + len, *open, *close = NULL, *p;
	uint64_t v[52];
	size_t n;
	int r;

	open = memchr(buf, '(', len);
	for (const char *q = buf; q < end; q++)
		if (*q == ')')
			close = q;
	if (!open || !close || close < open || close + 2 >= end || close[1] != ' ')
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	p = buf;
	r = next_u64(&p, open, &v[0]);
	if (r < 0 || p != open || v[0] == 0 || v[0] > UINT32_MAX)
		return -EINVAL;
	ret->pid = (uint32_t)v[0];
	n = (size_t)(close - open - 1);
	if (n >= KEPLER_COMM_MAX)
		n = KEPLER_COMM_MAX - 1;
	memcpy(ret->comm, open + 1, n);
	ret->comm[n] = '\0';
	p = close + 2;
	ret->state = *p;
	if (skip_field(&p, end) < 0)
		return -EINVAL;
	/* fields 4.. (1-based): ppid pgrp session tty_nr tpgid flags minflt cminflt
	 * majflt cmajflt utime stime cutime cstime priority nice num_threads
	 * itrealvalue starttime */
	for (int f = 4; f <= 22; f++) {
		/* tty_nr, tpgid, cutime, cstime, priority, nice may be negative */
		if (f == 7 || f == 8 || (f >= 16 && f <= 19)) {
			r = skip_field(&p, end);
			v[f] = 0;
		} else {
			r = next_u64(&p, end, &v[f]);
		}
		if (r < 0)
			return r;
	}
	if (v[4] > UINT32_MAX || v[9] > UINT32_MAX)
		return -EINVAL;
	ret->ppid = (uint32_t)v[4];
	ret->flags = (uint32_t)v[9];
	ret->utime_ticks = v[14];
	ret->stime_ticks = v[15];
	ret->start_ticks = v[22];
	return 0;
}

static int parse_cpu_fields(const char *p, const char *end, struct kepler_cpu_stat *ret)
{
	uint64_t *f[] = { &ret->user,   &ret->nice, &ret->system,  &ret->idle,
			  &ret->iowait, &ret->irq,  &ret->softirq, &ret->steal };

	while (p < end && *p == ' ')
		p++;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		/* kernels before 2.6.11 have fewer columns: the rest stay 0 */
		if (p >= end || *p == '\n')
			return i >= 4 ? 0 : -EINVAL;
		if (next_u64(&p, end, f[i]) < 0)
			return -EINVAL;
	}
	return 0;
}

int kepler_procfs_parse_cpu_stat(const char *buf, size_t len, struct kepler_cpu_stat *ret)
{
	const char *p = buf, *end = buf + len;
	bool found = false;

	memset(ret, 0, sizeof(*ret));
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			eol = end;
		if (eol - p > 4 && !memcmp(p, "cpu ", 4)) {
			if (parse_cpu_fields(p + 4, eol, ret) < 0)
				return -EINVAL;
			found = true;
		} else if (eol - p > 3 && !memcmp(p, "cpu", 3) && p[3] >= '0' && p[3] <= '9') {
			ret->cpu_count++;
		}
		p = eol + 1;
	}
	return found ? 0 : -EINVAL;
}

/* The N of a "cpuN " line at @p (before @end); -1 if it is not one. */
static long cpu_number(const char *p, const char *end)
{
	long n = 0;

	if (end - p < 5 || memcmp(p, "cpu", 3) != 0 || p[3] < '0' || p[3] > '9')
		return -1;
	for (p += 3; p < end && *p >= '0' && *p <= '9'; p++) {
		n = n * 10 + (*p - '0');
		if (n > KEPLER_CPU_NUMBER_MAX)
			return -1;
	}
	return p < end && *p == ' ' ? n : -1;
}

int kepler_procfs_parse_cpu_busy(const char *buf, size_t len, uint64_t *busy, size_t max)
{
	const char *p = buf, *end = buf + len;
	int found = 0;

	for (size_t i = 0; i < max; i++)
		busy[i] = KEPLER_CPU_BUSY_UNKNOWN;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		struct kepler_cpu_stat cs = { 0 };
		long n;

		if (!eol)
			eol = end;
		n = cpu_number(p, eol);
		if (n >= 0 && (size_t)n < max && busy[n] == KEPLER_CPU_BUSY_UNKNOWN &&
		    parse_cpu_fields(memchr(p, ' ', (size_t)(eol - p)), eol, &cs) == 0 &&
		    kepler_cpu_stat_busy(&cs) !=
			    KEPLER_CPU_BUSY_UNKNOWN) { /* a line summing to it stays unknown */
			busy[n] = kepler_cpu_stat_busy(&cs);
			found++;
		}
		p = eol + 1;
	}
	return found;
}

uint64_t kepler_cpu_stat_total(const struct kepler_cpu_stat *s)
{
	return s->user + s->nice + s->system + s->idle + s->iowait + s->irq + s->softirq + s->steal;
}

uint64_t kepler_cpu_stat_busy(const struct kepler_cpu_stat *s)
{
	uint64_t total = kepler_cpu_stat_total(s), idle = s->idle + s->iowait;

	return total > idle ? total - idle : 0;
}

uint64_t kepler_ns_per_tick(void)
{
	static uint64_t ns;

	if (!ns) {
		long hz = sysconf(_SC_CLK_TCK);

		ns = 1000000000ULL / (uint64_t)(hz > 0 ? hz : 100);
	}
	return ns;
}

/* From @base (pread) or from where @fd is (read, when @base < 0). */
static ssize_t read_some(int fd, char *buf, size_t len, off_t base, size_t off)
{
	return base < 0 ? read(fd, buf, len) : pread(fd, buf, len, base + (off_t)off);
}

/*
 * With @short_is_end, a read that returns less than asked is the end: for
 * a procfs file generated whole at each read (a seq_file of one record,
 * as /proc/stat and /proc/PID/statm), the read that would confirm the end
 * makes the kernel generate the whole file again to find the offset.
 */
static int read_fd_from(int fd, off_t base, bool short_is_end, char *buf, size_t size, size_t *ret_len)
{
	size_t off = 0;

	while (off < size - 1) {
		ssize_t n = read_some(fd, buf + off, size - 1 - off, base, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		off += (size_t)n;
		if (short_is_end && (size_t)n < size - 1 - (off - (size_t)n))
			break;
	}
	buf[off] = '\0';
	*ret_len = off;
	if (off == size - 1) {
		char c;

		if (read_some(fd, &c, 1, base, off) == 1)
			return -EFBIG;
	}
	return 0;
}

static int read_fd(int fd, char *buf, size_t size, size_t *ret_len)
{
	return read_fd_from(fd, -1, false, buf, size, ret_len);
}

int kepler_read_file_at(int dirfd, const char *name, char *buf, size_t size, size_t *ret_len)
{
	int fd, r;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read_fd(fd, buf, size, ret_len);
	close(fd);
	return r;
}

int kepler_read_file_kept(int dirfd, const char *name, int *fd, char *buf, size_t size, size_t *ret_len)
{
	int r;

	if (*fd < 0) {
		*fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
		if (*fd < 0)
			return -errno;
	}
	r = read_fd_from(*fd, 0, true, buf, size, ret_len);
	if (r < 0 && r != -EFBIG) { /* opened again next time */
		close(*fd);
		*fd = -1;
	}
	return r;
}

int kepler_read_file(const char *path, char *buf, size_t size, size_t *ret_len)
{
	return kepler_read_file_at(AT_FDCWD, path, buf, size, ret_len);
}
