// SPDX-License-Identifier: Apache-2.0
/* The node's cgroup layout through host.sysfs: see cgroup_tree.h for the rules. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgroup_tree.h"

static bool exists(const char *dir, const char *name)
{
	char path[4200];

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return false;
	return access(path, F_OK) == 0;
}

/* A comma-separated list of controllers that names cpu ("cpu", "cpu,cpuacct", not "cpuset"). */
static bool names_cpu(const char *name)
{
	size_t n = strlen(name);

	for (const char *p = name; (p = strstr(p, "cpu")); p += 3)
		if ((p == name || p[-1] == ',') && (p + 3 == name + n || p[3] == ','))
			return true;
	return false;
}

/* The cpu controller's v1 hierarchy under @root into @buf; false if none. */
static bool find_v1_cpu(const char *root, char *buf, size_t size)
{
	struct dirent *e;
	bool found = false;
	DIR *d;

	if (snprintf(buf, size, "%s/cpu", root) < (int)size && exists(buf, "cpu.shares"))
		return true;
	d = opendir(root);
	if (!d)
		return false;
	while (!found && (e = readdir(d)))
		found = names_cpu(e->d_name) && snprintf(buf, size, "%s/%s", root, e->d_name) < (int)size &&
			exists(buf, "cpu.shares");
	closedir(d);
	return found;
}

void kepler_cgroup_tree_find(const char *sysfs, struct kepler_cgroup_tree *ret)
{
	char root[4096], unified[4200];
	bool has_unified;

	memset(ret, 0, sizeof(*ret));
	if (snprintf(root, sizeof(root), "%s/fs/cgroup", sysfs && *sysfs ? sysfs : "/sys") >=
	    (int)sizeof(root))
		return;
	if (exists(root, "cgroup.controllers")) {
		ret->layout = KEPLER_CGROUP_V2;
		snprintf(ret->path, sizeof(ret->path), "%s", root);
		return;
	}
	snprintf(unified, sizeof(unified), "%s/unified", root);
	has_unified = exists(unified, "cgroup.controllers");
	if (find_v1_cpu(root, ret->path, sizeof(ret->path))) {
		ret->layout = has_unified ? KEPLER_CGROUP_HYBRID : KEPLER_CGROUP_V1;
		ret->v1_cpu = true;
	} else if (has_unified && strlen(unified) < sizeof(ret->path)) {
		ret->layout = KEPLER_CGROUP_HYBRID;
		memcpy(ret->path, unified, strlen(unified) + 1);
	} else {
		ret->path[0] = '\0';
	}
}

const char *kepler_cgroup_layout_name(enum kepler_cgroup_layout layout)
{
	switch (layout) {
	case KEPLER_CGROUP_V2: return "v2";
	case KEPLER_CGROUP_V1: return "v1";
	case KEPLER_CGROUP_HYBRID: return "hybrid";
	case KEPLER_CGROUP_NONE: break;
	}
	return "none";
}
