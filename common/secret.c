// SPDX-License-Identifier: Apache-2.0
/*
 * Secret files under one set of rules (kepler/secret.h): no link followed
 * but a Kubernetes volume's, a regular file of root or of the dropped user,
 * closed to others, bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kepler/secret.h"

#define OPEN_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

static bool trusted_owner(uid_t uid, uid_t owner)
{
	return uid == 0 || (owner != KEPLER_SECRET_ROOT_ONLY && uid == owner);
}

/*
 * @path is a link: open what it points to only in a Kubernetes volume's
 * layout (NAME -> ..data/NAME, ..data -> ..TIMESTAMP), where the kubelet
 * made both links and no one else can have replaced them.
 */
static int open_kubernetes_volume(const char *what, const char *path, uid_t owner, struct kepler_error *err)
{
	char target[PATH_MAX], dir[PATH_MAX], data[PATH_MAX + 8], inner[PATH_MAX * 2];
	const char *base = strrchr(path, '/');
	struct stat link, dlink, d;
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	int fd;

	if (n < 0)
		return kepler_error_set(err, -errno, "%s %s: %s", what, path, strerror(errno));
	target[n] = '\0';
	base = base ? base + 1 : path;
	if (base == path) /* a name in the working folder */
		snprintf(dir, sizeof(dir), ".");
	else if (base - path == 1) /* a name in / */
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(base - path - 1), path);
	snprintf(data, sizeof(data), "%s/..data", dir);
	if (strncmp(target, "..data/", 7) || strcmp(target + 7, base) || lstat(path, &link) < 0 ||
	    !trusted_owner(link.st_uid, owner) || lstat(data, &dlink) < 0 || !S_ISLNK(dlink.st_mode) ||
	    !trusted_owner(dlink.st_uid, owner) || stat(dir, &d) < 0 || !trusted_owner(d.st_uid, owner) ||
	    ((d.st_mode & 0022) && !(d.st_mode & S_ISVTX)))
		return kepler_error_set(
			err, -ELOOP,
			"%s %s is a symbolic link (to %s): refused (a link is followed only in a "
			"Kubernetes Secret's volume); name the file itself",
			what, path, target);
	snprintf(inner, sizeof(inner), "%s/%s", data, base);
	fd = open(inner, OPEN_FLAGS);
	if (fd < 0)
		return kepler_error_set(err, -errno, "%s %s (%s): %s", what, path, inner, strerror(errno));
	return fd;
}

int kepler_secret_read(const char *what, const char *path, uid_t owner, size_t max, char **ret,
		       size_t *ret_len, struct kepler_error *err)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd = open(path, OPEN_FLAGS), r = 0;

	if (fd < 0 && errno == ELOOP)
		fd = open_kubernetes_volume(what, path, owner, err);
	else if (fd < 0)
		fd = kepler_error_set(err, -errno, "%s %s: %s", what, path, strerror(errno));
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		r = kepler_error_set(err, -errno, "%s %s: %s", what, path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = kepler_error_set(err, -EINVAL, "%s %s is not a regular file: refused", what, path);
		goto out;
	}
	if (!trusted_owner(st.st_uid, owner)) {
		if (owner == KEPLER_SECRET_ROOT_ONLY || owner == 0)
			r = kepler_error_set(err, -EPERM,
					     "%s %s is owned by uid %u: refused (only root may own it)", what,
					     path, (unsigned)st.st_uid);
		else
			r = kepler_error_set(
				err, -EPERM,
				"%s %s is owned by uid %u: refused (only root or uid %u, the user this "
				"process runs as, may own it)",
				what, path, (unsigned)st.st_uid, (unsigned)owner);
		goto out;
	}
	if (st.st_mode & 0007) {
		r = kepler_error_set(err, -EPERM,
				     "%s %s may be read by others (mode %04o): refused; chmod o-rwx it", what,
				     path, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	if ((uint64_t)st.st_size > max) {
		r = kepler_error_set(err, -EFBIG, "%s %s is larger than %zu bytes: refused", what, path, max);
		goto out;
	}
	if (!(buf = malloc(max + 1))) {
		r = kepler_error_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (;;) { /* to the end: the size may have changed since fstat */
		ssize_t n = read(fd, buf + len, max + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = kepler_error_set(err, -errno, "%s %s: %s", what, path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			r = kepler_error_set(err, -EFBIG, "%s %s is larger than %zu bytes: refused", what,
					     path, max);
			goto out;
		}
	}
	if (!len) {
		r = kepler_error_set(err, -ENODATA, "%s %s is empty: refused", what, path);
		goto out;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return r;
}

int kepler_secret_read_line(const char *what, const char *path, uid_t owner, size_t max, char **ret,
			    struct kepler_error *err)
{
	size_t len = 0, line;
	char *buf = NULL, *nl;
	/* a first line of @max bytes may be followed by more lines: read a bounded amount past it */
	int r = kepler_secret_read(what, path, owner, max + 65536, &buf, &len, err);

	if (r < 0)
		return r;
	nl = memchr(buf, '\n', len);
	line = nl ? (size_t)(nl - buf) : len;
	if (line && buf[line - 1] == '\r')
		line--;
	if (memchr(buf, '\0', line)) {
		r = kepler_error_set(err, -EINVAL, "%s %s: its first line holds a NUL byte: refused", what,
				     path);
		goto fail;
	}
	buf[line] = '\0';
	if (!line) {
		r = kepler_error_set(err, -ENODATA, "%s %s: its first line is empty: refused", what, path);
		goto fail;
	}
	if (line > max) {
		r = kepler_error_set(err, -E2BIG, "%s %s: its first line is longer than %zu bytes: refused",
				     what, path, max);
		goto fail;
	}
	*ret = buf;
	return 0;
fail:
	free(buf);
	return r;
}

uid_t kepler_secret_owner(const char *drop_user)
{
	struct passwd *pw;

	if (geteuid() != 0)
		return geteuid();
	pw = drop_user && *drop_user ? getpwnam(drop_user) : NULL;
	return pw ? pw->pw_uid : KEPLER_SECRET_ROOT_ONLY;
}
