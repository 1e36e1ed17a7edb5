// SPDX-License-Identifier: Apache-2.0
/*
 * The node's cgroup layout through host.sysfs (collectd/workloads/cgroup_tree.c)
 * and cgroup ids to paths (collectd/informers/cgroup_ids.c), on trees written
 * in place of sysfs as the kernel shows them: cgroup v2, v1 with the cpu
 * controller alone or co-mounted ("cpu,cpuacct"), hybrid, and none. An id
 * is the inode of the cgroup's directory, as the kernel's kernfs makes it;
 * here the fake tree's own inodes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "cgroup_tree.h"
#include "informer_internal.h"

struct fixture {
	char root[64]; /* the fake sysfs */
};

static void run(const char *fmt, const char *root)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), fmt, root, root, root, root);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	snprintf(f->root, sizeof(f->root), "/tmp/kepler-cgtree-XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	run("rm -rf %s", f->root);
	free(f);
	return 0;
}

static void test_v2(void **state)
{
	struct fixture *f = *state;
	struct kepler_cgroup_tree t;

	run("mkdir -p %s/fs/cgroup/kubepods.slice && echo 'cpuset cpu io memory pids' > %s/fs/cgroup/cgroup.controllers",
	    f->root);
	kepler_cgroup_tree_find(f->root, &t);
	assert_int_equal(t.layout, KEPLER_CGROUP_V2);
	assert_false(t.v1_cpu);
	assert_true(strstr(t.path, "/fs/cgroup") && !strstr(t.path, "unified"));
	assert_string_equal(kepler_cgroup_layout_name(t.layout), "v2");
}

static void test_v1_comounted(void **state)
{
	struct fixture *f = *state;
	struct kepler_cgroup_tree t;

	/* cpuset sorts before cpu,cpuacct and names "cpu" only as a prefix: not the cpu controller */
	run("mkdir -p %s/fs/cgroup/cpuset %s/fs/cgroup/cpu,cpuacct %s/fs/cgroup/memory && "
	    "touch %s/fs/cgroup/cpu,cpuacct/cpu.shares",
	    f->root);
	kepler_cgroup_tree_find(f->root, &t);
	assert_int_equal(t.layout, KEPLER_CGROUP_V1);
	assert_true(t.v1_cpu);
	assert_non_null(strstr(t.path, "/fs/cgroup/cpu,cpuacct"));
}

static void test_hybrid(void **state)
{
	struct fixture *f = *state;
	struct kepler_cgroup_tree t;

	run("mkdir -p %s/fs/cgroup/cpu %s/fs/cgroup/unified && touch %s/fs/cgroup/cpu/cpu.shares "
	    "%s/fs/cgroup/unified/cgroup.controllers",
	    f->root);
	kepler_cgroup_tree_find(f->root, &t);
	assert_int_equal(t.layout, KEPLER_CGROUP_HYBRID);
	assert_true(t.v1_cpu); /* containers are in the v1 hierarchies, systemd's units alone in unified */
	assert_non_null(strstr(t.path, "/fs/cgroup/cpu"));
	assert_string_equal(kepler_cgroup_layout_name(t.layout), "hybrid");
}

static void test_unified_alone(void **state)
{
	struct fixture *f = *state;
	struct kepler_cgroup_tree t;

	run("mkdir -p %s/fs/cgroup/unified %s/fs/cgroup/memory && touch %s/fs/cgroup/unified/cgroup.controllers",
	    f->root);
	kepler_cgroup_tree_find(f->root, &t);
	assert_int_equal(t.layout, KEPLER_CGROUP_HYBRID);
	assert_false(t.v1_cpu);
	assert_non_null(strstr(t.path, "/fs/cgroup/unified"));
}

static void test_none(void **state)
{
	struct fixture *f = *state;
	struct kepler_cgroup_tree t;
	struct kepler_cgroup_ids ids;

	run("mkdir -p %s/class/powercap", f->root); /* a fake sysfs with a meter and no cgroups */
	kepler_cgroup_tree_find(f->root, &t);
	assert_int_equal(t.layout, KEPLER_CGROUP_NONE);
	assert_string_equal(t.path, "");
	assert_int_equal(kepler_cgroup_ids_open(&ids, f->root), -ENOENT);
	assert_null(kepler_cgroup_ids_path(&ids, 1));
	kepler_cgroup_ids_free(&ids);
}

static uint64_t inode_of(const char *root, const char *rel)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_ino;
}

/* ids of a hierarchy's cgroups to their paths, new cgroups found by a walk on a miss, once per refresh */
static void test_ids_to_paths(void **state)
{
	struct fixture *f = *state;
	const char *ctr = "/kubepods/burstable/pod0b6e5f6c-2d5b-4b7e-9a51-111111111111/"
			  "4f2a9c0d1e3b5a7c9e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1c3d5e7f9a1b3c5d";
	struct kepler_cgroup_ids ids;
	char root[256], later[512];
	uint64_t id, id_later;

	run("mkdir -p %s/fs/cgroup/cpu/kubepods/burstable/pod0b6e5f6c-2d5b-4b7e-9a51-111111111111/"
	    "4f2a9c0d1e3b5a7c9e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1c3d5e7f9a1b3c5d && touch %s/fs/cgroup/cpu/cpu.shares",
	    f->root);
	snprintf(root, sizeof(root), "%s/fs/cgroup/cpu", f->root);
	assert_int_equal(kepler_cgroup_ids_open(&ids, f->root), 0);
	assert_true(ids.tree.v1_cpu);
	id = inode_of(root, ctr);
	assert_string_equal(kepler_cgroup_ids_path(&ids, id), ctr);
	assert_string_equal(kepler_cgroup_ids_path(&ids, inode_of(root, "")), "/");
	assert_int_equal(ids.walks, 1);
	/* a cgroup made after the walk: found at the next miss, which walks again */
	snprintf(later, sizeof(later), "mkdir -p %s/fs/cgroup/cpu/kubepods/besteffort/podx/late", f->root);
	assert_int_equal(system(later), 0);
	id_later = inode_of(root, "/kubepods/besteffort/podx/late");
	ids.rescanned = false; /* the next refresh */
	assert_string_equal(kepler_cgroup_ids_path(&ids, id_later), "/kubepods/besteffort/podx/late");
	assert_int_equal(ids.walks, 2);
	/* an unknown id: one more walk this refresh, then none */
	ids.rescanned = false;
	assert_null(kepler_cgroup_ids_path(&ids, 1));
	assert_null(kepler_cgroup_ids_path(&ids, 2));
	assert_int_equal(ids.walks, 3);
	/* the ids found earlier are still there, by bisection */
	assert_string_equal(kepler_cgroup_ids_path(&ids, id), ctr);
	kepler_cgroup_ids_free(&ids);
	assert_int_equal(ids.rootfd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v1_comounted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hybrid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unified_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ids_to_paths, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
