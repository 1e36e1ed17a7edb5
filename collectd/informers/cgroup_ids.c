// SPDX-License-Identifier: Apache-2.0
/*
 * cgroup v2 ids to paths. The eBPF program records the cgroup id of each
 * charge (the inode number of the cgroup's directory in cgroup2fs); a
 * process that has ended can no longer be asked for /proc/PID/cgroup, so its
 * container is found from that id: the cgroup2 hierarchy is walked once
 * and again whenever an id is not in it (at most once per refresh).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "informer_internal.h"

#define MAX_CGROUPS 65536
#define MAX_DEPTH 16

static const char *cgroup2_root(void)
{
	static const char *const dirs[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
	struct statfs sf;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (statfs(dirs[i], &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
			return dirs[i];
	return NULL;
}

static int add(struct kepler_cgroup_ids *c, uint64_t id, const char *path)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		struct kepler_cgroup_id *items = realloc(c->items, cap * sizeof(*items));

		if (!items)
			return -ENOMEM;
		c->items = items;
		c->cap = cap;
	}
	c->items[c->n].path = strdup(path);
	if (!c->items[c->n].path)
		return -ENOMEM;
	c->items[c->n++].id = id;
	return 0;
}

/* @path (relative to the root, "" for the root) and every cgroup under it. */
static int walk(struct kepler_cgroup_ids *c, int dirfd, const char *path, int depth)
{
	struct stat st;
	struct dirent *e;
	DIR *d;
	int r = 0;

	if (fstat(dirfd, &st) < 0 || add(c, (uint64_t)st.st_ino, path[0] ? path : "/") < 0) {
		close(dirfd);
		return -ENOMEM;
	}
	d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return 0;
	}
	while (r == 0 && depth < MAX_DEPTH && c->n < MAX_CGROUPS && (e = readdir(d))) {
		char sub[4096];
		int fd;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= (int)sizeof(sub))
			continue;
		fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			r = walk(c, fd, sub, depth + 1);
	}
	closedir(d);
	return r;
}

void kepler_cgroup_ids_free(struct kepler_cgroup_ids *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->items[i].path);
	free(c->items);
	memset(c, 0, sizeof(*c));
}

static void rescan(struct kepler_cgroup_ids *c)
{
	const char *root = cgroup2_root();
	int fd;

	for (size_t i = 0; i < c->n; i++)
		free(c->items[i].path);
	c->n = 0;
	if (!root || (fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	walk(c, fd, "", 0);
}

const char *kepler_cgroup_ids_path(struct kepler_cgroup_ids *c, uint64_t id)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < c->n; i++)
			if (c->items[i].id == id)
				return c->items[i].path;
		if (pass || c->rescanned)
			break;
		rescan(c);
		c->rescanned = true;
	}
	return NULL;
}
