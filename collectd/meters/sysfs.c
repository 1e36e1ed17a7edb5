// SPDX-License-Identifier: Apache-2.0
/*
 * Reading the small files of sysfs: one number or one line each. Their
 * contents are not trusted: a driver bug, a fake tree or a race can leave
 * anything there, and every such case is an error naming the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meter_internal.h"

#define SYSFS_READ_MAX 128

/* Printable ASCII kept, the rest as \xNN, at most 32 source bytes. */
static void escape_contents(const char *in, size_t len, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < len && i < 32 && o + 5 < size; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
	}
	if (len > 32 && o + 4 < size)
		o += (size_t)snprintf(out + o, size - o, "...");
	out[o] = '\0';
}

static int read_small(const char *path, char *buf, size_t size, size_t *ret_len, struct kepler_error *err)
{
	ssize_t n;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		return kepler_error_set(err, r, "cannot open %s: %s", path, strerror(-r));
	}
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return kepler_error_set(err, r, "cannot read %s: %s", path, strerror(-r));
	buf[n] = '\0';
	*ret_len = (size_t)n;
	return 0;
}

int kepler_sysfs_parse_u64(const char *buf, size_t len, const char *path, uint64_t *ret,
			   struct kepler_error *err)
{
	char text[SYSFS_READ_MAX], shown[160];
	unsigned long long v;
	char *end;

	if (len >= sizeof(text))
		len = sizeof(text) - 1;
	memcpy(text, buf, len);
	text[len] = '\0';
	if (len > 0 && text[len - 1] == '\n')
		text[--len] = '\0';
	if (len == 0)
		return kepler_error_set(err, -EINVAL, "%s is empty, expected a number", path);
	if (strlen(text) != len || text[0] < '0' || text[0] > '9')
		goto out_garbage;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (*end)
		goto out_garbage;
	if (errno == ERANGE) {
		escape_contents(text, len, shown, sizeof(shown));
		return kepler_error_set(err, -ERANGE, "%s holds '%s', beyond 64 bits", path, shown);
	}
	*ret = v;
	return 0;

out_garbage:
	escape_contents(text, len, shown, sizeof(shown));
	return kepler_error_set(err, -EINVAL, "%s holds '%s', expected an unsigned number", path, shown);
}

int kepler_sysfs_read_u64(const char *path, uint64_t *ret, struct kepler_error *err)
{
	char buf[SYSFS_READ_MAX];
	size_t len = 0;
	int r;

	r = read_small(path, buf, sizeof(buf), &len, err);
	if (r < 0)
		return r;
	return kepler_sysfs_parse_u64(buf, len, path, ret, err);
}

static int held_open(const char *path, struct kepler_sysfs_held *h, struct kepler_error *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0) {
		r = -errno;
		if (r == -EACCES && h->fd_plus_one)
			return kepler_error_set(
				err, r,
				"cannot open %s again (it was replaced, and the collector "
				"no longer has the privilege to open it): restart kepler-collectd",
				path);
		return kepler_error_set(err, r, "cannot open %s: %s", path, strerror(-r));
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return kepler_error_set(err, r, "cannot stat %s: %s", path, strerror(-r));
	}
	kepler_sysfs_held_close(h);
	h->fd_plus_one = fd + 1;
	h->dev = st.st_dev;
	h->ino = st.st_ino;
	return 0;
}

int kepler_sysfs_read_held_u64(const char *path, struct kepler_sysfs_held *h, uint64_t *ret,
			       struct kepler_error *err)
{
	char buf[SYSFS_READ_MAX];
	struct stat st;
	ssize_t n;
	int r;

	/* the path as an open per read would see it: gone, or another file now */
	if (stat(path, &st) < 0) {
		r = -errno;
		if (!(r == -EACCES && h->fd_plus_one)) /* EACCES: the path, not the file, is closed to us */
			return kepler_error_set(err, r, "cannot open %s: %s", path, strerror(-r));
		st.st_dev = h->dev;
		st.st_ino = h->ino;
	}
	if (!h->fd_plus_one || st.st_dev != h->dev || st.st_ino != h->ino) {
		r = held_open(path, h, err);
		if (r < 0)
			return r;
	}
	do
		n = pread(h->fd_plus_one - 1, buf, sizeof(buf) - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		r = -errno;
		return kepler_error_set(err, r, "cannot read %s: %s", path, strerror(-r));
	}
	buf[n] = '\0';
	return kepler_sysfs_parse_u64(buf, (size_t)n, path, ret, err);
}

void kepler_sysfs_held_close(struct kepler_sysfs_held *h)
{
	if (h->fd_plus_one)
		close(h->fd_plus_one - 1);
	h->fd_plus_one = 0;
}

int kepler_sysfs_read_line(const char *path, char *buf, size_t size, struct kepler_error *err)
{
	char tmp[256];
	size_t len;
	int r;

	r = read_small(path, tmp, sizeof(tmp), &len, err);
	if (r < 0)
		return r;
	tmp[strcspn(tmp, "\n")] = '\0';
	snprintf(buf, size, "%s", tmp);
	return 0;
}

char *kepler_path_join(const char *a, const char *b)
{
	char *s;

	if (asprintf(&s, "%s/%s", a, b) < 0)
		return NULL;
	return s;
}
