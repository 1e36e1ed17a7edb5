// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "push_state.h"

int push_state_load(const char *dir, const char *name, uint64_t *ret, struct kepler_error *err)
{
	char path[4096], buf[64];
	int fd;
	ssize_t n;
	char *end;

	*ret = 0;
	snprintf(path, sizeof(path), "%s/%s.state", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : kepler_error_set(err, -errno, "%s: %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return kepler_error_set(err, -EINVAL, "%s is empty", path);
	buf[n] = 0;
	*ret = strtoull(buf, &end, 10);
	if (end == buf || (*end != '\n' && *end != ' '))
		return *ret = 0, kepler_error_set(err, -EINVAL, "%s does not hold a sequence number", path);
	return 0;
}

int push_state_save(const char *dir, const char *name, uint64_t seq, struct kepler_error *err)
{
	char path[4096], tmp[4200], line[32];
	int fd, len, e = 0, dfd;

	snprintf(path, sizeof(path), "%s/%s.state", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	len = snprintf(line, sizeof(line), "%llu\n", (unsigned long long)seq);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return kepler_error_set(err, -errno, "%s: %s", tmp, strerror(errno));
	if (write(fd, line, (size_t)len) != len || fdatasync(fd) < 0)
		e = -errno ? -errno : -EIO;
	close(fd);
	if (!e && rename(tmp, path) < 0)
		e = -errno;
	if (e) {
		unlink(tmp);
		return kepler_error_set(err, e, "%s: %s", path, strerror(-e));
	}
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}
