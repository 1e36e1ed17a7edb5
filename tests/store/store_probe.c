// SPDX-License-Identifier: Apache-2.0
/*
 * store_probe: a minimal store client for integration tests.
 *   store_probe write DIR N [GROUP [NPROCS [stable]]]   commit N fixture snapshots (of
 *                                    NPROCS processes, default 10; hostile names) and
 *                                    record three CPUs no real machine has (CPUS);
 *                                    "stable": each process keeps its state from one
 *                                    snapshot to the next (the fixture's own turn a
 *                                    seventh of them terminated in each, a new one each
 *                                    time: a node in churn)
 *   store_probe read DIR              read and check the newest; print its seq
 * Exit status 0 on success, 1 with the store's message on stderr otherwise.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/store.h"
#include "snapshot_fixture.h"

/* The CPU list recorded by `write`: hostile text in every label the exporter writes. */
static const struct kepler_cpu CPUS[] = {
	{ "0", "Probe\"Vendor", "Probe \"quoted\" \\ CPU 9000", "7", "0" },
	{ "1", "Probe\"Vendor", "Probe \"quoted\" \\ CPU 9000", "7", "1" },
	{ "2", "Probe\"Vendor", "Probe \"quoted\" \\ CPU 9000", "7", "2" },
};

static int do_write(const char *dir, int n, const char *group, size_t nprocs, bool stable)
{
	struct kepler_store_options o = {
		.path = dir,
		.group = group,
		.map_size = 64ULL << 20,
		.max_map_size = 4ULL << 30,
		.retention_snapshots = n > 100 ? (uint64_t)n : 100,
		.retention_series_ns = 3600ULL * 1000000000ULL,
	};
	struct kepler_store *w;
	struct kepler_error err;

	if (kepler_store_open_writer(&o, &w, &err) < 0) {
		fprintf(stderr, "store_probe: %s\n", err.msg);
		return 1;
	}
	if (kepler_store_warning(w))
		fprintf(stderr, "store_probe: warning: %s\n", kepler_store_warning(w));
	if (kepler_store_set_cpus(w, &(struct kepler_cpuinfo){ (struct kepler_cpu *)CPUS, 3 }, &err) < 0) {
		fprintf(stderr, "store_probe: %s\n", err.msg);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		struct fixture f;

		fixture_build(&f, nprocs, (uint64_t)i);
		for (size_t k = 0; stable && k < f.snap.nprocesses; k++)
			f.snap.processes[k].usage.state =
				k % 7 ? KEPLER_STATE_RUNNING : KEPLER_STATE_TERMINATED;
		if (kepler_store_commit(w, &f.snap, &err) < 0) {
			fprintf(stderr, "store_probe: %s\n", err.msg);
			return 1;
		}
		fixture_free(&f);
	}
	kepler_store_close(w);
	return 0;
}

static int do_read(const char *dir)
{
	struct kepler_store *r;
	struct kepler_snapshot *s;
	struct kepler_error err;

	if (kepler_store_open_reader(dir, &r, &err) < 0 || kepler_store_read(r, 0, &s, &err) < 0) {
		fprintf(stderr, "store_probe: %s\n", err.msg);
		return 1;
	}
	printf("%llu\n", (unsigned long long)s->seq);
	kepler_snapshot_free(s);
	kepler_store_close(r);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "write") == 0)
		return do_write(argv[2], atoi(argv[3]), argc > 4 ? argv[4] : "",
				argc > 5 ? (size_t)atol(argv[5]) : 10,
				argc > 6 && !strcmp(argv[6], "stable"));
	if (argc == 3 && strcmp(argv[1], "read") == 0)
		return do_read(argv[2]);
	fprintf(stderr, "usage: store_probe write DIR N [GROUP [NPROCS [stable]]] | read DIR\n");
	return 2;
}
