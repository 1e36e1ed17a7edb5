// SPDX-License-Identifier: Apache-2.0
/*
 * cgroup ids to paths. The eBPF program records the cgroup id of each
 * charge (the inode number of the cgroup's directory: in the cpu
 * controller's v1 hierarchy on v1 and hybrid nodes, else in cgroup2; see
 * cgroup_tree.h); a process that has ended can no longer be asked for
 * /proc/PID/cgroup, so its container is found from that id. The hierarchy,
 * opened at start through host.sysfs (in a pod, the host's: the pod's own
 * /sys/fs/cgroup holds its own cgroup alone), is walked once and again
 * whenever an id is not in it (at most once per refresh); the walk is
 * sorted by id and looked up by bisection.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "informer_internal.h"
#include "kepler/array.h"

#define MAX_CGROUPS 65536
#define MAX_DEPTH 16

int kepler_cgroup_ids_open(struct kepler_cgroup_ids *c, const char *sysfs)
{
	memset(c, 0, sizeof(*c));
	c->rootfd = -1;
	kepler_cgroup_tree_find(sysfs, &c->tree);
	if (!c->tree.path[0])
		return -ENOENT;
	c->rootfd = open(c->tree.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return c->rootfd < 0 ? -errno : 0;
}

int kepler_cgroup_ids_open_v2(struct kepler_cgroup_ids *c, const struct kepler_cgroup_ids *v1,
			      const char *sysfs)
{
	char path[4096];

	memset(c, 0, sizeof(*c));
	c->rootfd = -1;
	if (!v1->tree.v1_cpu || snprintf(path, sizeof(path), "%s/fs/cgroup/unified",
					 sysfs && *sysfs ? sysfs : "/sys") >= (int)sizeof(path))
		return -ENOENT;
	c->rootfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->rootfd < 0)
		return -errno;
	snprintf(c->tree.path, sizeof(c->tree.path), "%s", path);
	c->tree.v1_cpu = false;
	return 0;
}

static int add(struct kepler_cgroup_ids *c, uint64_t id, const char *path)
{
	char *copy;

	if (kepler_array_reserve((void **)&c->items, &c->cap, c->n + 1, sizeof(*c->items)) < 0 ||
	    !(copy = strdup(path)))
		return -ENOMEM;
	c->items[c->n].path = copy;
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
		fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
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
	if (c->rootfd >= 0)
		close(c->rootfd);
	memset(c, 0, sizeof(*c));
	c->rootfd = -1;
}

static int by_id(const void *a, const void *b)
{
	const struct kepler_cgroup_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void rescan(struct kepler_cgroup_ids *c)
{
	int fd;

	for (size_t i = 0; i < c->n; i++)
		free(c->items[i].path);
	c->n = 0;
	c->walks++;
	if (c->rootfd < 0 || (fd = openat(c->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	walk(c, fd, "", 0);
	qsort(c->items, c->n, sizeof(*c->items), by_id);
}

static const char *find(const struct kepler_cgroup_ids *c, uint64_t id)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->items[mid].id == id)
			return c->items[mid].path;
		if (c->items[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *kepler_cgroup_ids_path(struct kepler_cgroup_ids *c, uint64_t id)
{
	const char *path = find(c, id);

	if (path || c->rescanned)
		return path;
	rescan(c);
	c->rescanned = true;
	return find(c, id);
}
