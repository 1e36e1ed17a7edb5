// SPDX-License-Identifier: Apache-2.0
/*
 * bench_history DIR [CONTAINERS PROCESS_GROUPS HOURS DAYS PROCESSES]: the store's
 * history at a node's scale (docs/performance.md, "History"). A ledger of
 * CONTAINERS containers (in pods of 10 namespaces) and PROCESS_GROUPS
 * process groups, 3 zones, whose counters move between records; a real
 * store in DIR receives HOURS records of the 1h tier and DAYS of the 1d
 * tier (a year of the defaults, 1h:35d,1d:400d: 840 and 365), each staged
 * and committed with a snapshot as the collector does. Prints the CPU of
 * one boundary (encoding the record and committing it), the record's size
 * and data.mdb's size, and the CPU of adding one snapshot of PROCESSES
 * processes (in those groups, one after another) to the ledger, which the
 * collector does at every snapshot. Defaults: 1000 5000 840 365 5000.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kepler/history.h"
#include "kepler/store.h"

#define NZ 3
#define HOUR 3600000000000ULL

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A snapshot naming every identity (processes by their group's names), each with energy deltas. */
struct scene {
	struct kepler_snapshot s;
	struct kepler_process *p;
	struct kepler_container *c;
	struct kepler_pod *pods;
	struct kepler_energy *e;
	char *names;
};

static void scene_build(struct scene *sc, size_t nc, size_t ng, size_t np)
{
	size_t npods = nc / 2 ? nc / 2 : 1, n = 0, k;
	char *s;

	memset(sc, 0, sizeof(*sc));
	sc->p = calloc(np, sizeof(*sc->p));
	sc->c = calloc(nc, sizeof(*sc->c));
	sc->pods = calloc(npods, sizeof(*sc->pods));
	sc->e = calloc((np + nc + npods) * NZ, sizeof(*sc->e));
	sc->names = s = calloc(ng + nc + npods, 200);
	sc->s.nzones = NZ;
	sc->s.zones[0].name = "package";
	sc->s.zones[1].name = "dram";
	sc->s.zones[2].name = "gpu0";
	for (k = 0; k < npods; k++, s += 200) {
		snprintf(s, 200, "%08zx-1f2d-4e3a-9b8c-7d6e5f4a3b21%c%s-%zu", k, 0, "web", k);
		sc->pods[k] = (struct kepler_pod){ .id = s,
						   .name = s + strlen(s) + 1,
						   .ns = k % 10 ? "shop" : "jobs" };
		sc->pods[k].usage.zones = &sc->e[NZ * n++];
	}
	for (k = 0; k < nc; k++, s += 200) {
		snprintf(s, 200, "%064zx", k * 2654435761u);
		sc->c[k] = (struct kepler_container){
			.id = s, .name = "nginx", .runtime = "containerd", .pod_id = sc->pods[k % npods].id
		};
		sc->c[k].usage.zones = &sc->e[NZ * n++];
	}
	for (k = 0; k < np; k++) {
		char *g = s + 200 * (k % ng); /* group k % ng's comm and exe */

		if (k < ng)
			snprintf(g, 200, "worker-%zu%c/usr/lib/app/bin/worker-%zu", k % 97, 0, k);
		sc->p[k] = (struct kepler_process){ .pid = (uint32_t)k + 1,
						    .comm = g,
						    .exe = g + strlen(g) + 1,
						    .container_id = sc->c[(k % ng) % nc].id,
						    .vm_id = "" };
		sc->p[k].usage.zones = &sc->e[NZ * n++];
	}
	sc->s.processes = sc->p, sc->s.nprocesses = np;
	sc->s.containers = sc->c, sc->s.ncontainers = nc;
	sc->s.pods = sc->pods, sc->s.npods = npods;
}

/* New deltas for an hour of the node's work. */
static void scene_step(struct scene *sc, uint64_t seq, uint64_t wall_ns, unsigned *rng)
{
	size_t n = sc->s.nprocesses + sc->s.ncontainers + sc->s.npods;

	sc->s.seq = seq;
	sc->s.wall_ns = wall_ns;
	for (size_t i = 0; i < n * NZ; i++)
		sc->e[i].delta_uj = (uint64_t)rand_r(rng) % 50000000000ULL;
	for (size_t z = 0; z < NZ; z++)
		sc->s.zones[z].energy.delta_uj = (uint64_t)rand_r(rng) * 1000;
	for (size_t i = 0; i < sc->s.nprocesses; i++)
		sc->p[i].usage.cpu_time_delta_ns = (uint64_t)rand_r(rng) * 100;
}

int main(int argc, char **argv)
{
	size_t nc = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000,
	       ng = argc > 3 ? strtoul(argv[3], NULL, 10) : 5000;
	size_t hours = argc > 4 ? strtoul(argv[4], NULL, 10) : 840,
	       days = argc > 5 ? strtoul(argv[5], NULL, 10) : 365;
	size_t np = argc > 6 ? strtoul(argv[6], NULL, 10) : ng;
	struct kepler_store_options o = { .path = argc > 1 ? argv[1] : NULL,
					  .map_size = 64ULL << 20,
					  .max_map_size = 8ULL << 30,
					  .retention_snapshots = 10,
					  .retention_series_ns = 400 * 24 * HOUR };
	struct kepler_store_tier_keep keep[2] = { { 3600, 35 * 24 * HOUR }, { 86400, 400 * 24 * HOUR } };
	struct kepler_history *h = kepler_history_new();
	struct kepler_error err = { 0 };
	struct kepler_store *w;
	struct scene sc;
	struct kepler_snapshot tiny = { .nzones = 0 };
	uint64_t *cost = calloc(hours + days + 1, sizeof(uint64_t)), now, t0, bytes = 0, add = 0;
	size_t total = hours + days, nc_done = 0;
	unsigned rng = 42;
	struct stat st;
	char path[4096];

	if (argc < 2 || !h || !cost) {
		fprintf(stderr,
			"usage: bench_history DIR [CONTAINERS PROCESS_GROUPS HOURS DAYS PROCESSES]\n");
		return 2;
	}
	if (kepler_store_open_writer(&o, &w, &err) < 0 || kepler_store_set_tiers(w, keep, 2) < 0) {
		fprintf(stderr, "bench_history: %s\n", err.msg);
		return 1;
	}
	if (!nc || !ng || np < ng) {
		fprintf(stderr,
			"bench_history: CONTAINERS and PROCESS_GROUPS > 0, PROCESSES >= PROCESS_GROUPS\n");
		return 2;
	}
	scene_build(&sc, nc, ng, np);
	now = (uint64_t)time(NULL) * 1000000000ULL;
	/* a year of boundaries in time order: DAYS daily ones, and the last HOURS hours' */
	for (size_t i = 0; i < total; i++) {
		bool daily = i < days;
		uint64_t boundary = daily ? now / (24 * HOUR) * (24 * HOUR) - (uint64_t)(days - i) * 24 * HOUR
					  : now / HOUR * HOUR - (uint64_t)(hours - (i - days)) * HOUR;
		struct kepler_history_header hdr = { .period_s = daily ? 86400 : 3600,
						     .boundary_ns = boundary };
		uint64_t keep_ns = daily ? keep[1].keep_ns : keep[0].keep_ns;
		void *blob;
		size_t len;

		scene_step(&sc, i + 1, boundary - 1000000000ULL, &rng);
		t0 = cpu_ns();
		kepler_history_add(h, &sc.s, 420000);
		add += cpu_ns() - t0;
		t0 = cpu_ns();
		if (kepler_history_encode(h, &hdr, boundary > keep_ns ? boundary - keep_ns : 0, &blob, &len,
					  &err) < 0 ||
		    kepler_store_stage_tier(w, hdr.period_s, boundary, blob, len) < 0) {
			fprintf(stderr, "bench_history: %s\n", err.msg);
			return 1;
		}
		tiny.wall_ns = boundary + 1000000000ULL;
		if (kepler_store_commit(w, &tiny, &err) < 0) {
			fprintf(stderr, "bench_history: commit: %s\n", err.msg);
			return 1;
		}
		cost[nc_done++] = cpu_ns() - t0;
		bytes += len;
	}
	qsort(cost, nc_done, sizeof(*cost), cmp_u64);
	snprintf(path, sizeof(path), "%s/data.mdb", argv[1]);
	stat(path, &st);
	printf("%zu containers, %zu process groups, %zu identities in the ledger, %d zones\n", nc, ng,
	       kepler_history_count(h), NZ);
	printf("a boundary (encode + commit): median %.2f ms, p90 %.2f ms, max %.2f ms of CPU\n",
	       (double)cost[nc_done / 2] / 1e6, (double)cost[nc_done * 9 / 10] / 1e6,
	       (double)cost[nc_done - 1] / 1e6);
	printf("a snapshot of %zu processes added to the ledger: %.2f ms of CPU (mean)\n", np,
	       (double)add / (double)total / 1e6);
	printf("%zu records (%zu daily, %zu hourly): %.1f MiB of records, %.0f KiB each; data.mdb %.1f MiB\n",
	       total, days, hours, (double)bytes / 1048576, (double)bytes / (double)total / 1024,
	       (double)st.st_size / 1048576);
	kepler_store_close(w);
	kepler_history_free(h);
	return 0;
}
