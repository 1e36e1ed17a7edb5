// SPDX-License-Identifier: Apache-2.0
/*
 * Attribution and the ledger: exact integer splits, the sums every
 * snapshot must satisfy (over random intervals), the first interval,
 * idle-only intervals, terminated carry-forward (ttl, max, min energy),
 * short processes folded, and resuming totals after a restart.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "backlog.h"
#include "keymap.h"
#include "ledger.h"
#include "monotonic.h"
#include "split.h"
#include "snapshot_checks.h"

#define SEC 1000000000ULL
#define J 1000000ULL
#define NPROC 40

struct world {
	struct kepler_ledger_proc procs[NPROC];
	char comm[NPROC][16], pod[NPROC][40], vm_id[NPROC][16], vm_name[NPROC][16];
	char cids[4][65];
	size_t n;
};

static void world_init(struct world *w, size_t n)
{
	memset(w, 0, sizeof(*w));
	w->n = n;
	for (int c = 0; c < 4; c++)
		for (int k = 0; k < 64; k++)
			w->cids[c][k] = "0123456789abcdef"[(c * 7 + k) % 16];
	for (size_t i = 0; i < n; i++) {
		struct kepler_ledger_proc *p = &w->procs[i];

		p->pid = (uint32_t)(100 + i);
		p->start_time_ns = 1000 + i;
		snprintf(w->comm[i], sizeof(w->comm[i]), "p%zu", i);
		p->comm = w->comm[i];
		p->exe = "/bin/x";
		p->container_id = p->container_runtime = p->pod_uid = "";
		p->vm_id = p->vm_name = p->vm_hypervisor = "";
		if (i % 3 == 1) { /* a container per residue, two in a pod */
			p->container_id = w->cids[i % 4];
			p->container_runtime = "containerd";
			if (i % 4 < 2) {
				snprintf(w->pod[i], sizeof(w->pod[i]),
					 "8d6f1b0e-3c2a-4e57-9a1d-0b2c3d4e5f6%zu", i % 2);
				p->pod_uid = w->pod[i];
			}
			p->type = KEPLER_PROC_CONTAINER;
		}
		if (i % 7 == 3) {
			snprintf(w->vm_id[i], sizeof(w->vm_id[i]), "vm-%zu", i % 2);
			snprintf(w->vm_name[i], sizeof(w->vm_name[i]), "guest%zu", i % 2);
			p->vm_id = w->vm_id[i];
			p->vm_name = w->vm_name[i];
			p->vm_hypervisor = "kvm";
		}
		p->cycles = p->instructions = p->cache_misses = KEPLER_COUNTER_UNAVAILABLE;
	}
}

static struct kepler_ledger_input input(struct world *w, uint64_t t, bool first)
{
	struct kepler_ledger_input in = {
		.wall_ns = 1800000000 * SEC + t,
		.mono_ns = t,
		.interval_ns = 5 * SEC,
		.first = first,
		.nzones = 3,
		.busy_delta_ns = 3 * SEC,
		.total_delta_ns = 10 * SEC,
		.usage_ratio = 0.3,
		.procs = w->procs,
		.nprocs = w->n,
	};
	static const char *const names[] = { "package", "core", "dram" };

	for (unsigned z = 0; z < 3; z++)
		in.zones[z] = (struct kepler_ledger_zone_in){ .name = names[z],
							      .path = "p",
							      .source = KEPLER_SOURCE_RAPL };
	return in;
}

static const struct kepler_process *find(const struct kepler_snapshot *s, uint32_t pid);

static void check_sums(const struct kepler_snapshot *s)
{
	const char *why = snapshot_sums(s);

	if (why)
		fail_msg("%s", why);
}

static void test_split(void **state)
{
	uint64_t w[3] = { 1, 1, 1 }, out[3], scratch[6];
	uint64_t w2[4] = { 0, 5, 0, 5 }, out2[4], scratch2[8];

	(void)state;
	assert_int_equal(kepler_split(10, w, 3, out, scratch), 3);
	assert_int_equal(out[0], 4);
	assert_int_equal(out[1], 3);
	assert_int_equal(out[2], 3);
	kepler_split(7, w2, 4, out2, scratch2);
	assert_int_equal(out2[0] + out2[2], 0); /* no CPU, no energy */
	assert_int_equal(out2[1] + out2[3], 7);
	assert_int_equal(kepler_split(5, w2, 0, out2, scratch2), 0);
	/* 128-bit products */
	uint64_t big[2] = { UINT64_MAX / 2, UINT64_MAX / 2 }, ob[2], sb[4];
	kepler_split(UINT64_MAX - 1, big, 2, ob, sb);
	assert_int_equal(ob[0] + ob[1], UINT64_MAX - 1);
	assert_int_equal(kepler_active_uj(1000, 3, 10), 300);
	assert_int_equal(kepler_active_uj(1000, 30, 10), 1000);
	assert_int_equal(kepler_active_uj(1000, 3, 0), 0);
}

/* The largest-remainder rule the slow way: sort by fraction, then index. */
static void split_reference(uint64_t amount, const uint64_t *w, size_t n, uint64_t *ret)
{
	static uint64_t frac[4096];
	static bool got[4096];
	uint64_t total = 0, given = 0;

	memset(got, 0, n * sizeof(*got));

	for (size_t i = 0; i < n; i++)
		total += w[i];
	for (size_t i = 0; i < n; i++) {
		ret[i] = (uint64_t)((unsigned __int128)amount * w[i] / total);
		frac[i] = (uint64_t)((unsigned __int128)amount * w[i] % total);
		given += ret[i];
	}
	for (uint64_t left = amount - given; left; left--) {
		size_t best = n;

		for (size_t i = 0; i < n; i++)
			if (!got[i] && (best == n || frac[i] > frac[best]))
				best = i;
		got[best] = true;
		ret[best]++;
	}
}

/* kepler_split() of @amount over @w against the reference. */
static void check_split(int round, uint64_t amount, const uint64_t *w, size_t n)
{
	static uint64_t out[4096], ref[4096], scratch[2 * 4096];

	kepler_split(amount, w, n, out, scratch);
	split_reference(amount, w, n, ref);
	for (size_t i = 0; i < n; i++)
		if (out[i] != ref[i])
			fail_msg("round %d: share %zu of %zu is %llu, want %llu", round, i, n,
				 (unsigned long long)out[i], (unsigned long long)ref[i]);
}

static void test_split_matches_largest_remainder(void **state)
{
	uint64_t w[64];
	unsigned seed = 7;

	(void)state;
	for (int round = 0; round < 20000; round++) {
		size_t n = 1 + (size_t)(rand_r(&seed) % 64);
		uint64_t amount = (uint64_t)(rand_r(&seed) % 1000), total = 0;
		int range = 1 + rand_r(&seed) % (round % 2 ? 4 : 100000); /* many ties, or few */

		if (round % 4 == 2) /* products past 64 bits beside ones within: both divisions */
			amount = (uint64_t)rand_r(&seed) << 19 ^ (uint64_t)rand_r(&seed); /* < 2^50 */

		for (size_t i = 0; i < n; i++)
			total += w[i] = (uint64_t)(rand_r(&seed) % range);
		if (round % 8 == 5) /* mostly zero: the sparse split */
			for (size_t i = 0; i < n; i++)
				if (rand_r(&seed) % 8)
					total -= w[i], w[i] = 0;
		if (!total)
			w[0] = 1;
		check_split(round, amount, w, n);
	}
}

/*
 * Thousands of shares (the fractions spread over every bucket of the cut's
 * count, or crowd one); in half the rounds, 1 in 20 nonzero, as on a node
 * whose processes mostly sleep (the sparse split).
 */
static void test_split_many_matches_largest_remainder(void **state)
{
	enum { MAXN = 3000 };
	static uint64_t w[MAXN];
	unsigned seed = 11;

	(void)state;
	for (int round = 0; round < 80; round++) {
		size_t n = MAXN / 2 + (size_t)(rand_r(&seed) % (MAXN / 2));
		uint64_t amount = (uint64_t)rand_r(&seed) << 20 ^ (uint64_t)rand_r(&seed), total = 0;
		int range = round % 3 == 0 ? 3 : round % 3 == 1 ? 1000 : 1 << 30;
		bool sparse = round % 2;

		for (size_t i = 0; i < n; i++) {
			bool nonzero = sparse ? rand_r(&seed) % 20 == 0 : rand_r(&seed) % 3 != 0;

			total += w[i] = nonzero ? (uint64_t)(rand_r(&seed) % range) : 0;
		}
		if (!total)
			w[0] = 1;
		check_split(round, amount, w, n);
	}
}

static void test_random_intervals_sum_exactly(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 60 * SEC, .max_terminated = 500 };
	static struct world w;
	struct kepler_ledger *l;
	struct kepler_snapshot *s;
	struct kepler_error err;
	uint64_t node_total = 0;

	(void)state;
	srand(42);
	world_init(&w, NPROC);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	for (int k = 0; k < 200; k++) {
		struct kepler_ledger_input in = input(&w, (uint64_t)k * 5 * SEC, k == 0);

		for (size_t i = 0; i < w.n; i++) {
			w.procs[i].cpu_time_delta_ns = (uint64_t)(rand() % 4 ? rand() % 100000007 : 0);
			w.procs[i].cpu_time_ns += w.procs[i].cpu_time_delta_ns;
		}
		for (unsigned z = 0; z < 3; z++)
			in.zones[z].delta_uj = (uint64_t)rand() * 97 + (uint64_t)rand();
		in.busy_delta_ns = (uint64_t)(rand() % 1000);
		in.total_delta_ns = 1000;
		KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
		if (k == 0) {
			assert_true(s->flags & KEPLER_SNAP_FIRST);
			assert_int_equal(s->zones[0].energy.delta_uj, 0);
			for (size_t i = 0; i < s->nprocesses; i++)
				assert_int_equal(s->processes[i].usage.zones[0].delta_uj, 0);
		}
		node_total += s->zones[0].energy.delta_uj;
		assert_int_equal(s->zones[0].energy.total_uj, node_total);
		check_sums(s);
	}
	assert_true(s->ncontainers == 4 && s->npods == 2 && s->nvms == 2);
	kepler_ledger_free(l);
}

/*
 * The previous-index hint changes nothing: two ledgers, one given right,
 * wrong and out-of-range hints, the other none, build the same totals.
 */
static void test_hints_change_nothing(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 60 * SEC, .max_terminated = 500 };
	static struct world w;
	struct kepler_ledger *a, *b;
	struct kepler_snapshot *sa, *sb;
	struct kepler_error err;

	(void)state;
	srand(7);
	world_init(&w, NPROC);
	KEPLER_OK(kepler_ledger_new(&p, &a, &err));
	KEPLER_OK(kepler_ledger_new(&p, &b, &err));
	for (int k = 0; k < 50; k++) {
		struct kepler_ledger_input in = input(&w, (uint64_t)k * 5 * SEC, k == 0);

		for (size_t i = 0; i < w.n; i++) {
			w.procs[i].cpu_time_delta_ns = (uint64_t)(rand() % 4 ? rand() % 100000007 : 0);
			w.procs[i].cpu_time_ns += w.procs[i].cpu_time_delta_ns;
			w.procs[i].prev_index = 0;
		}
		for (unsigned z = 0; z < 3; z++)
			in.zones[z].delta_uj = (uint64_t)rand() * 97 + (uint64_t)rand();
		in.busy_delta_ns = 500;
		in.total_delta_ns = 1000;
		KEPLER_OK(kepler_ledger_build(b, &in, &sb, &err));
		for (size_t i = 0; i < w.n; i++) {
			int r = rand() % 10;

			w.procs[i].prev_index = k == 0  ? 0
						: r < 7 ? (uint32_t)i + 1                   /* right */
						: r < 9 ? (uint32_t)(rand() % (int)w.n) + 1 /* another's */
							: 100000;                           /* past the end */
		}
		KEPLER_OK(kepler_ledger_build(a, &in, &sa, &err));
		assert_int_equal(sa->nprocesses, sb->nprocesses);
		for (size_t i = 0; i < sa->nprocesses; i++) {
			assert_int_equal(sa->processes[i].pid, sb->processes[i].pid);
			for (unsigned z = 0; z < 3; z++)
				assert_int_equal(sa->processes[i].usage.zones[z].total_uj,
						 sb->processes[i].usage.zones[z].total_uj);
		}
		check_sums(sa);
	}
	kepler_ledger_free(a);
	kepler_ledger_free(b);
}

/*
 * CPU time no listed process accounts for (processes the informer did not
 * see, interrupts, steal) is shown, not spread: its share of the active
 * energy is the zone's unattributed energy, and the listed processes get
 * the energy of their own CPU time only.
 */
static void test_unseen_cpu_is_unattributed(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 60 * SEC, .max_terminated = 500 };
	static struct world w;
	struct kepler_ledger *l;
	struct kepler_snapshot *s;
	struct kepler_ledger_input in;
	struct kepler_error err;

	(void)state;
	world_init(&w, 5);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	in = input(&w, 0, true);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	/* the node 30 % busy (3 s of 10 s), no listed process ran: all of the active part unattributed */
	in = input(&w, 5 * SEC, false);
	in.zones[0].delta_uj = 1000;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(s->zones[0].active.delta_uj, 300);
	assert_int_equal(s->zones[0].idle.delta_uj, 700);
	assert_int_equal(s->zones[0].unattributed.delta_uj, 300);
	check_sums(s);
	/* the listed processes account for 1 s of the 3 s busy: they take a third, split by CPU time */
	w.procs[0].cpu_time_delta_ns = SEC / 4;
	w.procs[1].cpu_time_delta_ns = 3 * SEC / 4;
	in = input(&w, 10 * SEC, false);
	in.zones[0].delta_uj = 1000 * J;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(s->zones[0].active.delta_uj, 300 * J);
	assert_int_equal(find(s, 100)->usage.zones[0].delta_uj, 25 * J);
	assert_int_equal(find(s, 101)->usage.zones[0].delta_uj, 75 * J);
	assert_int_equal(s->zones[0].unattributed.delta_uj, 200 * J);
	assert_int_equal(s->zones[0].unattributed.total_uj, 200 * J + 300);
	check_sums(s);
	/* they account for more than /proc/stat's busy time (its ticks): all of the active part, none unattributed */
	w.procs[2].cpu_time_delta_ns = 3 * SEC;
	in = input(&w, 15 * SEC, false);
	in.zones[0].delta_uj = 1000 * J;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(s->zones[0].unattributed.delta_uj, 0);
	check_sums(s);
	kepler_ledger_free(l);
}

/*
 * The baseline split: active = delta - idle power x interval, never below
 * 0, the sums exact; the baseline is recorded in the snapshot's zone.
 */
static void test_baseline_split(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 60 * SEC, .max_terminated = 500 };
	static struct world w;
	struct kepler_ledger *l;
	struct kepler_snapshot *s;
	struct kepler_ledger_input in;
	struct kepler_error err;

	(void)state;
	world_init(&w, 5);
	for (size_t i = 0; i < w.n; i++)
		w.procs[i].cpu_time_delta_ns = (i + 1) * 1000000;
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	in = input(&w, 0, true);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	/* 5 s at 12 W idle is 60 J: of 100 J, 40 J are active; 50 J at 12 W: all idle */
	in = input(&w, 5 * SEC, false);
	in.zones[0].delta_uj = 100 * J;
	in.zones[0].baseline = (struct kepler_baseline){ 12 * J, KEPLER_BASELINE_FITTED, 999000, 30 };
	in.zones[1].delta_uj = 50 * J;
	in.zones[1].baseline = (struct kepler_baseline){ 12 * J, KEPLER_BASELINE_CONFIGURED, 0, 0 };
	in.zones[2].delta_uj = 100 * J; /* NONE: usage ratio 3/10 */
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(s->zones[0].active.delta_uj, 40 * J);
	assert_int_equal(s->zones[0].idle.delta_uj, 60 * J);
	assert_int_equal(s->zones[0].baseline.method, KEPLER_BASELINE_FITTED);
	assert_int_equal(s->zones[0].baseline.quality_ppm, 999000);
	assert_int_equal(s->zones[1].active.delta_uj, 0);
	assert_int_equal(s->zones[1].idle.delta_uj, 50 * J);
	assert_int_equal(s->zones[2].active.delta_uj, 30 * J);
	assert_int_equal(s->zones[2].baseline.method, KEPLER_BASELINE_NONE);
	check_sums(s);
	/* an odd interval: the idle energy rounds down, the sums stay exact */
	in = input(&w, 5 * SEC + 1234567, false);
	in.interval_ns = 1234567;
	in.zones[0].delta_uj = 1000003;
	in.zones[0].baseline = (struct kepler_baseline){ 333333, KEPLER_BASELINE_MINIMUM, 0, 3 };
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(s->zones[0].active.delta_uj, 1000003 - 411); /* 333333 uW x 1.234567 ms = 411.5 uJ */
	check_sums(s);
	assert_int_equal(kepler_active_above_uj(UINT64_MAX, UINT64_MAX, UINT64_MAX), 0);
	assert_int_equal(kepler_active_above_uj(10, 0, 5 * SEC), 10);
	kepler_ledger_free(l);
}

/*
 * The invariant check: 200 random intervals of the ledger pass it; a
 * process, a container forgotten and back, or a node zone whose total
 * goes down is caught and described.
 */
static void test_monotonic_check(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 60 * SEC, .max_terminated = 500 };
	static struct world w;
	struct kepler_monotonic *m;
	struct kepler_ledger *l;
	struct kepler_snapshot *s;
	struct kepler_error err;
	struct kepler_energy saved;
	char why[256];

	(void)state;
	srand(9);
	world_init(&w, NPROC);
	assert_int_equal(kepler_monotonic_new(&m), 0);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	for (int k = 0; k < 200; k++) {
		struct kepler_ledger_input in = input(&w, (uint64_t)k * 5 * SEC, k == 0);

		for (size_t i = 0; i < w.n; i++) {
			w.procs[i].cpu_time_delta_ns = (uint64_t)(rand() % 3 ? rand() % 100000007 : 0);
			w.procs[i].cpu_time_ns += w.procs[i].cpu_time_delta_ns;
		}
		for (unsigned z = 0; z < 3; z++)
			in.zones[z].delta_uj = (uint64_t)rand();
		KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
		assert_int_equal(kepler_monotonic_check(m, s, why, sizeof(why)), 0);
	}
	/* a process's energy goes down */
	saved = s->processes[3].usage.zones[1];
	s->processes[3].usage.zones[1].total_uj--;
	assert_int_equal(kepler_monotonic_check(m, s, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "process: counter 1 went from"));
	s->processes[3].usage.zones[1] = saved;
	assert_int_equal(kepler_monotonic_check(m, s, why, sizeof(why)), 0);
	/* a container's CPU time, a node zone's idle total */
	s->containers[0].usage.cpu_time_ns--;
	s->zones[0].idle.total_uj--;
	assert_int_equal(kepler_monotonic_check(m, s, why, sizeof(why)), 2);
	print_message("caught: %s\n", why);
	kepler_ledger_free(l);
	kepler_monotonic_free(m);
}

static const struct kepler_process *find(const struct kepler_snapshot *s, uint32_t pid)
{
	for (size_t i = 0; i < s->nprocesses; i++)
		if (s->processes[i].pid == pid && !(s->processes[i].flags & KEPLER_PROCESS_PIECE))
			return &s->processes[i];
	return NULL;
}

static const struct kepler_container *container_of(const struct kepler_snapshot *s, const char *id);

static const struct kepler_process *find_piece(const struct kepler_snapshot *s, uint32_t pid, uint64_t start)
{
	for (size_t i = 0; i < s->nprocesses; i++)
		if (s->processes[i].pid == pid && s->processes[i].start_time_ns == start)
			return &s->processes[i];
	return NULL;
}

/*
 * Pieces of a process's account (informer.h), right before the process in
 * the input: each is charged its own CPU time's energy, as the identity it
 * ran as (its container gets it), flagged; its totals are the process's at
 * the cut, the process's own record goes on from the last piece's: every
 * counter of the process goes up, the monotonic check holds, and the
 * snapshot's sums hold.
 */
static void test_pieces(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 60 * SEC, .max_terminated = 500 };
	static struct world w;
	static const char c_before[] = "c0ffee0000000000000000000000000000000000000000000000000000000001";
	struct kepler_monotonic *m;
	struct kepler_ledger *l;
	struct kepler_snapshot *s;
	struct kepler_ledger_input in;
	struct kepler_error err;
	const struct kepler_process *p1, *a, *b;
	uint64_t before, t = 0;
	char why[256];

	(void)state;
	world_init(&w, 3);
	assert_int_equal(kepler_monotonic_new(&m), 0);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	in = input(&w, t, true);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	for (size_t i = 0; i < 3; i++)
		w.procs[i].cpu_time_delta_ns = SEC;
	in = input(&w, t += 5 * SEC, false);
	in.zones[0].delta_uj = 30 * J;
	in.busy_delta_ns = in.total_delta_ns = 3 * SEC;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(kepler_monotonic_check(m, s, why, sizeof(why)), 0);
	before = find(s, 101)->usage.zones[0].total_uj;
	assert_int_equal(before, 10 * J);
	/*
	 * pid 101 ran 1 s in container c_before as "old", then 2 s as
	 * "middle" (no container), then moved and ran 3 s as itself
	 */
	w.n = 5;
	w.procs[4] = w.procs[2];
	w.procs[3] = w.procs[1];
	w.procs[1] = w.procs[3];
	w.procs[1].piece = true;
	w.procs[1].start_time_ns += 1;
	w.procs[1].comm = "old";
	w.procs[1].container_id = c_before;
	w.procs[1].container_runtime = "docker";
	w.procs[1].pod_uid = "";
	w.procs[1].state = KEPLER_STATE_TERMINATED;
	w.procs[1].cpu_time_delta_ns = SEC;
	w.procs[2] = w.procs[1];
	w.procs[2].start_time_ns += 1;
	w.procs[2].comm = "middle";
	w.procs[2].container_id = w.procs[2].container_runtime = "";
	w.procs[2].cpu_time_delta_ns = 2 * SEC;
	w.procs[3].cpu_time_delta_ns = 3 * SEC;
	w.procs[0].cpu_time_delta_ns = w.procs[4].cpu_time_delta_ns = 2 * SEC;
	in = input(&w, t += 5 * SEC, false);
	in.zones[0].delta_uj = 100 * J;
	in.busy_delta_ns = in.total_delta_ns = 10 * SEC;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	check_sums(s);
	assert_int_equal(kepler_monotonic_check(m, s, why, sizeof(why)), 0);
	a = find_piece(s, 101, 1002);
	b = find_piece(s, 101, 1003);
	p1 = find(s, 101);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(p1);
	assert_true(a->flags & KEPLER_PROCESS_PIECE);
	assert_false(p1->flags & KEPLER_PROCESS_PIECE);
	assert_int_equal(a->usage.state, KEPLER_STATE_TERMINATED);
	assert_int_equal(a->usage.zones[0].delta_uj, 10 * J);
	assert_int_equal(b->usage.zones[0].delta_uj, 20 * J);
	assert_int_equal(p1->usage.zones[0].delta_uj, 30 * J);
	assert_int_equal(a->usage.zones[0].total_uj, before + 10 * J);
	assert_int_equal(b->usage.zones[0].total_uj, before + 30 * J);
	assert_int_equal(p1->usage.zones[0].total_uj, before + 60 * J);
	assert_int_equal(container_of(s, c_before)->usage.zones[0].delta_uj, 10 * J);
	/* the next interval: the pieces are carried as ended processes, the process goes on */
	w.n = 3;
	w.procs[1] = w.procs[3];
	w.procs[2] = w.procs[4];
	for (size_t i = 0; i < 3; i++)
		w.procs[i].cpu_time_delta_ns = SEC;
	in = input(&w, t += 5 * SEC, false);
	in.zones[0].delta_uj = 30 * J;
	in.busy_delta_ns = in.total_delta_ns = 3 * SEC;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	check_sums(s);
	assert_int_equal(kepler_monotonic_check(m, s, why, sizeof(why)), 0);
	assert_int_equal(find(s, 101)->usage.zones[0].total_uj, before + 70 * J);
	assert_non_null(find_piece(s, 101, 1002));
	assert_int_equal(find_piece(s, 101, 1002)->usage.zones[0].delta_uj, 0);
	kepler_ledger_free(l);
	kepler_monotonic_free(m);
}

/*
 * The store refuses 11 commits in a row (held in a backlog) and takes the
 * 12th: the snapshot it takes has, per zone and per workload, the sum of
 * the deltas of all 12 intervals and the newest totals, the sums across
 * levels hold exactly, and processes that ended and were dropped by the
 * carry rules during the gap are in it with all their energy.
 */
static void test_backlog_covers_the_gap(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 10 * SEC, .max_terminated = 1 };
	static struct world w;
	static uint64_t want[NPROC][3], want_cpu[NPROC];
	uint64_t node[3][3] = { { 0 } }, first_refused = 0;
	struct kepler_ledger *l;
	struct kepler_backlog *b;
	struct kepler_snapshot *s, *m;
	struct kepler_error err;

	(void)state;
	srand(7);
	world_init(&w, NPROC);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	KEPLER_OK(kepler_backlog_new(1000, &b, &err));
	for (int k = 0; k <= 12; k++) {
		struct kepler_ledger_input in;

		if (k == 4)
			w.n = NPROC - 5; /* five ended in interval 3: gone from the informer */
		in = input(&w, (uint64_t)k * 5 * SEC, k == 0);
		for (size_t i = 0; i < w.n; i++) {
			w.procs[i].cpu_time_delta_ns = (uint64_t)(rand() % 4 ? rand() % 100000007 : 0);
			w.procs[i].cpu_time_ns += w.procs[i].cpu_time_delta_ns;
			w.procs[i].state =
				k == 3 && i >= NPROC - 5 ? KEPLER_STATE_TERMINATED : KEPLER_STATE_RUNNING;
		}
		for (unsigned z = 0; z < 3; z++)
			in.zones[z].delta_uj = (uint64_t)rand() * 97 + (uint64_t)rand();
		in.busy_delta_ns = (uint64_t)(rand() % 1000);
		in.total_delta_ns = 1000;
		KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
		if (k == 0) /* stored */
			continue;
		for (size_t i = 0; i < s->nprocesses; i++) {
			size_t at = s->processes[i].pid - 100;

			for (unsigned z = 0; z < 3; z++)
				want[at][z] += s->processes[i].usage.zones[z].delta_uj;
			want_cpu[at] += s->processes[i].usage.cpu_time_delta_ns;
		}
		for (unsigned z = 0; z < 3; z++) {
			node[z][0] += s->zones[z].energy.delta_uj;
			node[z][1] += s->zones[z].active.delta_uj;
			node[z][2] += s->zones[z].idle.delta_uj;
		}
		KEPLER_OK(kepler_backlog_merge(b, s, &m, &err));
		check_sums(m);
		if (k < 12) { /* refused */
			if (!first_refused)
				first_refused = m->mono_ns; /* unstored_ns is on the intervals' clock */
			KEPLER_OK(kepler_backlog_hold(b, m, m->wall_ns, &err));
			assert_int_equal(kepler_backlog_intervals(b), (unsigned)k);
		}
	}
	/* the 12th is stored: it covers all 12 intervals */
	assert_int_equal(m->unstored_intervals, 11);
	assert_int_equal(m->interval_ns, 12 * 5 * SEC);
	assert_int_equal(m->unstored_ns, m->mono_ns - first_refused);
	assert_true(m->unstored_ns < m->interval_ns);
	assert_false(m->flags & KEPLER_SNAP_FIRST);
	for (unsigned z = 0; z < 3; z++) {
		assert_int_equal(m->zones[z].energy.delta_uj, node[z][0]);
		assert_int_equal(m->zones[z].active.delta_uj, node[z][1]);
		assert_int_equal(m->zones[z].idle.delta_uj, node[z][2]);
		assert_int_equal(m->zones[z].energy.total_uj, s->zones[z].energy.total_uj);
	}
	assert_int_equal(m->nprocesses, NPROC); /* the five that ended are back, with their energy */
	assert_true(s->nprocesses < NPROC);
	for (size_t i = 0; i < m->nprocesses; i++) {
		size_t at = m->processes[i].pid - 100;

		for (unsigned z = 0; z < 3; z++)
			assert_int_equal(m->processes[i].usage.zones[z].delta_uj, want[at][z]);
		assert_int_equal(m->processes[i].usage.cpu_time_delta_ns, want_cpu[at]);
	}
	assert_int_equal(m->ncontainers, 4);
	kepler_backlog_clear(b);
	assert_int_equal(kepler_backlog_intervals(b), 0);
	kepler_backlog_free(b);
	kepler_ledger_free(l);
}

/*
 * A backlog keeps at most max_workloads workloads gone from view: the ones
 * with the least energy beyond that are dropped and counted as lost.
 */
static void test_backlog_is_bounded(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 1, .max_terminated = 0 };
	static struct world w;
	struct kepler_ledger *l;
	struct kepler_backlog *b;
	struct kepler_snapshot *s, *m;
	struct kepler_ledger_input in;
	struct kepler_error err;

	(void)state;
	world_init(&w, 10);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	KEPLER_OK(kepler_backlog_new(3, &b, &err));
	in = input(&w, 0, true);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	for (size_t i = 0; i < 10; i++) {
		w.procs[i].cpu_time_delta_ns = (i + 1) * SEC;
		w.procs[i].state = KEPLER_STATE_TERMINATED;
		w.procs[i].container_id = w.procs[i].pod_uid = w.procs[i].vm_id = ""; /* processes only */
		w.procs[i].type = KEPLER_PROC_REGULAR;
	}
	in = input(&w, 5 * SEC, false);
	in.zones[0].delta_uj = 100 * J;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	KEPLER_OK(kepler_backlog_merge(b, s, &m, &err));
	KEPLER_OK(kepler_backlog_hold(b, m, m->wall_ns, &err));
	w.n = 0; /* all ten gone, and not carried */
	in = input(&w, 10 * SEC, false);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(s->nprocesses, 0);
	KEPLER_OK(kepler_backlog_merge(b, s, &m, &err));
	assert_int_equal(m->nprocesses, 3); /* the three with the most energy */
	for (size_t i = 0; i < 3; i++)
		assert_true(m->processes[i].pid >= 107);
	assert_int_equal(m->lost_entries, 7);
	kepler_backlog_free(b);
	kepler_ledger_free(l);
}

static void test_terminated_carry(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 20 * SEC,
					  .max_terminated = 2,
					  .min_terminated_energy_uj = 10 * J };
	static struct world w;
	struct kepler_ledger *l;
	struct kepler_snapshot *s;
	struct kepler_ledger_input in;
	struct kepler_error err;
	uint64_t t = 0;

	(void)state;
	world_init(&w, 4);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	in = input(&w, t, true);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	/* CPU 1:2:3:4 of 100 J active: 10, 20, 30, 40 J; all end in this interval */
	for (size_t i = 0; i < 4; i++) {
		w.procs[i].cpu_time_delta_ns = (i + 1) * SEC;
		w.procs[i].state = KEPLER_STATE_TERMINATED;
	}
	in = input(&w, t += 5 * SEC, false);
	in.zones[0].delta_uj = 100 * J;
	in.busy_delta_ns = in.total_delta_ns = SEC;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(s->nprocesses, 4);
	assert_int_equal(find(s, 103)->usage.zones[0].delta_uj, 40 * J);
	assert_int_equal(find(s, 103)->usage.state, KEPLER_STATE_TERMINATED);
	check_sums(s);
	/* the informer forgets them; the two largest are carried with delta 0 */
	w.n = 0;
	in = input(&w, t += 5 * SEC, false);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(s->nprocesses, 2);
	assert_non_null(find(s, 103));
	assert_non_null(find(s, 102));
	assert_int_equal(find(s, 103)->usage.zones[0].delta_uj, 0);
	assert_int_equal(find(s, 103)->usage.zones[0].total_uj, 40 * J);
	assert_string_equal(find(s, 103)->comm, "p3"); /* strings owned by the ledger */
	check_sums(s);
	/* until the ttl (20 s after they ended) */
	for (int k = 0; k < 3; k++) {
		in = input(&w, t += 5 * SEC, false);
		KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
		assert_int_equal(s->nprocesses, 2);
	}
	in = input(&w, t += 5 * SEC, false);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(s->nprocesses, 0);
	/* containers follow their processes: terminated, then carried, then gone */
	assert_int_equal(s->ncontainers, 0);
	kepler_ledger_free(l);
}

static const struct kepler_fold *find_fold(const struct kepler_snapshot *s, const char *cid, const char *vm)
{
	for (size_t i = 0; i < s->nfolds; i++)
		if (!strcmp(s->folds[i].container_id, cid) && !strcmp(s->folds[i].vm_id, vm))
			return &s->folds[i];
	return NULL;
}

/*
 * Short processes folded: those that end below min_terminated_energy are
 * flagged and their deltas go to their container's, VM's or the node's
 * fold (snapshot_sums() checks every fold against its processes); a fold's
 * totals go on over intervals, it lives as long as its group, and a
 * restarted ledger continues it. A process that ends above the minimum is
 * not folded (it is carried).
 */
static void test_short_processes_folded(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 20 * SEC,
					  .max_terminated = 500,
					  .min_terminated_energy_uj = 10 * J };
	static const uint64_t cpu[6] = { 1, 20, 20, 1, 1, 20 };
	static struct world w;
	struct kepler_ledger *l, *l2;
	struct kepler_snapshot *s;
	struct kepler_ledger_input in;
	struct kepler_error err;
	const struct kepler_fold *f;

	(void)state;
	world_init(&w, 6); /* 0, 2, 5: the node's; 1, 4: containers 1 and 0; 3: VM vm-1 */
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	in = input(&w, 0, true);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(s->nfolds, 0);
	for (size_t i = 0; i < 6; i++) {
		w.procs[i].cpu_time_delta_ns = cpu[i] * SEC;
		w.procs[i].cpu_time_ns = cpu[i] * SEC;
		if (i == 0 || i == 1 || i == 3 || i == 4)
			w.procs[i].state = KEPLER_STATE_TERMINATED;
	}
	in = input(&w, 5 * SEC, false); /* 1 J a CPU-second */
	in.zones[0].delta_uj = 63 * J;
	in.busy_delta_ns = in.total_delta_ns = 63 * SEC;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	check_sums(s);
	assert_true(find(s, 100)->flags & KEPLER_PROCESS_FOLDED);
	assert_true(find(s, 103)->flags & KEPLER_PROCESS_FOLDED);
	assert_true(find(s, 104)->flags & KEPLER_PROCESS_FOLDED);
	assert_false(find(s, 101)->flags & KEPLER_PROCESS_FOLDED); /* 20 J: carried instead */
	assert_false(find(s, 102)->flags & KEPLER_PROCESS_FOLDED); /* running */
	assert_int_equal(s->nfolds, 3);
	assert_non_null(f = find_fold(s, "", ""));
	assert_int_equal(f->usage.zones[0].delta_uj, 1 * J);
	assert_int_equal(f->processes, 1);
	assert_non_null(f = find_fold(s, "", "vm-1"));
	assert_int_equal(f->usage.zones[0].total_uj, 1 * J);
	assert_non_null(f = find_fold(s, w.cids[0], ""));
	assert_int_equal(f->usage.cpu_time_delta_ns, 1 * SEC);
	/* next: a new short process of the node; 100, 103, 104 are gone, and so are their groups */
	w.procs[0].pid = 200;
	w.procs[0].start_time_ns = 5000;
	w.procs[0].cpu_time_delta_ns = w.procs[0].cpu_time_ns = 2 * SEC;
	w.procs[1] = w.procs[2];
	w.procs[2] = w.procs[5];
	w.procs[1].cpu_time_delta_ns = w.procs[2].cpu_time_delta_ns = 3 * SEC;
	w.n = 3;
	in = input(&w, 10 * SEC, false);
	in.zones[0].delta_uj = 8 * J;
	in.busy_delta_ns = in.total_delta_ns = 8 * SEC;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	check_sums(s);
	assert_int_equal(s->nfolds, 1);
	assert_non_null(f = find_fold(s, "", ""));
	assert_int_equal(f->usage.zones[0].delta_uj, 2 * J);
	assert_int_equal(f->usage.zones[0].total_uj, 3 * J);
	assert_int_equal(f->usage.cpu_time_ns, 3 * SEC);
	assert_int_equal(f->processes, 2);
	assert_int_equal(f->processes_delta, 1);
	assert_non_null(find(s, 101)); /* carried, with its container */
	/* an interval without short processes: the node's fold stays, delta 0 */
	w.n = 2;
	w.procs[0] = w.procs[1];
	w.procs[1] = w.procs[2];
	in = input(&w, 15 * SEC, false);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	check_sums(s);
	assert_non_null(f = find_fold(s, "", ""));
	assert_int_equal(f->usage.zones[0].delta_uj, 0);
	assert_int_equal(f->usage.zones[0].total_uj, 3 * J);
	/* a restarted collector continues it */
	KEPLER_OK(kepler_ledger_new(&p, &l2, &err));
	assert_int_equal(kepler_ledger_resume(l2, s, NULL, NULL), 0);
	w.procs[1].pid = 201;
	w.procs[1].start_time_ns = 6000;
	w.procs[1].state = KEPLER_STATE_TERMINATED;
	w.procs[1].cpu_time_delta_ns = w.procs[1].cpu_time_ns = 4 * SEC;
	w.procs[0].cpu_time_delta_ns = 0;
	in = input(&w, 100 * SEC, false);
	in.zones[0].delta_uj = 4 * J;
	in.busy_delta_ns = in.total_delta_ns = 4 * SEC;
	KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
	check_sums(s);
	assert_non_null(f = find_fold(s, "", ""));
	assert_int_equal(f->usage.zones[0].total_uj, 7 * J);
	assert_int_equal(f->processes, 3);
	/* new and running with 1 J: folded in its first interval, counted once when it then ends short */
	w.procs[1].pid = 202;
	w.procs[1].start_time_ns = 7000;
	w.procs[1].state = KEPLER_STATE_RUNNING;
	w.procs[1].cpu_time_delta_ns = w.procs[1].cpu_time_ns = 1 * SEC;
	in = input(&w, 105 * SEC, false);
	in.zones[0].delta_uj = 1 * J;
	in.busy_delta_ns = in.total_delta_ns = 1 * SEC;
	KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
	check_sums(s);
	assert_true(find(s, 202)->flags & KEPLER_PROCESS_FOLDED);
	assert_int_equal(find_fold(s, "", "")->processes, 4);
	w.procs[1].state = KEPLER_STATE_TERMINATED;
	w.procs[1].cpu_time_ns = 2 * SEC;
	in = input(&w, 110 * SEC, false);
	in.zones[0].delta_uj = 1 * J;
	in.busy_delta_ns = in.total_delta_ns = 1 * SEC;
	KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
	check_sums(s);
	assert_true(find(s, 202)->flags & KEPLER_PROCESS_FOLDED);
	assert_non_null(f = find_fold(s, "", ""));
	assert_int_equal(f->processes, 4);
	assert_int_equal(f->processes_delta, 0);
	assert_int_equal(f->usage.zones[0].total_uj, 9 * J);
	/* one that lives on is its own from its second interval */
	w.procs[1].pid = 203;
	w.procs[1].start_time_ns = 8000;
	w.procs[1].state = KEPLER_STATE_RUNNING;
	for (int k = 0; k < 2; k++) {
		in = input(&w, (115 + 5 * (uint64_t)k) * SEC, false);
		in.zones[0].delta_uj = 1 * J;
		in.busy_delta_ns = in.total_delta_ns = 1 * SEC;
		KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
		check_sums(s);
		assert_int_equal(!!(find(s, 203)->flags & KEPLER_PROCESS_FOLDED), k == 0);
	}
	kepler_ledger_free(l);
	kepler_ledger_free(l2);
}

/* Alive: every pid but 105 (it ended while the collector was down). */
static bool alive_but_105(void *arg, uint32_t pid, uint64_t start_time_ns)
{
	(void)start_time_ns;
	++*(int *)arg;
	return pid != 105;
}

/*
 * Processes asleep through a restart (the eBPF informer reports them only
 * once they run): those still alive are carried, running with delta 0 and
 * their totals, in every snapshot until they run, with their containers
 * and pods; so a second restart resumes them again, and they continue from
 * their totals when they wake. The one that ended meanwhile is not shown.
 */
static void test_resume_asleep(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 60 * SEC, .max_terminated = 500 };
	static struct world w;
	struct kepler_ledger *l, *l2, *l3;
	struct kepler_snapshot *s;
	struct kepler_ledger_input in;
	struct kepler_error err;
	uint64_t total104;
	int asked = 0;

	(void)state;
	world_init(&w, 6);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	in = input(&w, 0, true);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	for (size_t i = 0; i < 6; i++)
		w.procs[i].cpu_time_delta_ns = SEC;
	in = input(&w, 5 * SEC, false);
	in.zones[0].delta_uj = 600 * J;
	in.busy_delta_ns = in.total_delta_ns = SEC;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	total104 = find(s, 104)->usage.zones[0].total_uj;
	assert_int_equal(total104, 100 * J);
	/* restart: only 100-102 run */
	KEPLER_OK(kepler_ledger_new(&p, &l2, &err));
	assert_int_equal(kepler_ledger_resume(l2, s, alive_but_105, &asked), 0);
	assert_int_equal(asked, 6);
	kepler_ledger_free(l);
	w.n = 3;
	for (int k = 0; k < 3; k++) {
		in = input(&w, (100 + 5 * (uint64_t)k) * SEC, k == 0);
		in.zones[0].delta_uj = 30 * J;
		in.busy_delta_ns = in.total_delta_ns = SEC;
		for (size_t i = 0; i < 3; i++)
			w.procs[i].cpu_time_delta_ns = k ? SEC : 0;
		KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
		assert_int_equal(s->nprocesses, 5); /* 100-102 measured, 103-104 asleep, not 105 */
		assert_null(find(s, 105));
		assert_int_equal(find(s, 104)->usage.state, KEPLER_STATE_RUNNING);
		assert_int_equal(find(s, 104)->usage.zones[0].total_uj, total104);
		assert_int_equal(find(s, 104)->usage.zones[0].delta_uj, 0);
		assert_int_equal(find(s, 104)->usage.cpu_time_delta_ns, 0);
		assert_string_equal(find(s, 104)->comm, "p4");
		assert_string_equal(find(s, 104)->container_id, w.cids[0]); /* its container, shown */
		assert_true(s->ncontainers >= 2 && s->npods >= 2);
		check_sums(s);
	}
	/* a second restart resumes it again from the store's snapshot */
	KEPLER_OK(kepler_ledger_new(&p, &l3, &err));
	assert_int_equal(kepler_ledger_resume(l3, s, alive_but_105, &asked), 0);
	kepler_ledger_free(l2);
	w.n = 6;
	in = input(&w, 200 * SEC, true);
	KEPLER_OK(kepler_ledger_build(l3, &in, &s, &err));
	for (size_t i = 0; i < 6; i++)
		w.procs[i].cpu_time_delta_ns = SEC;
	in = input(&w, 205 * SEC, false);
	in.zones[0].delta_uj = 60 * J;
	in.busy_delta_ns = in.total_delta_ns = SEC;
	KEPLER_OK(kepler_ledger_build(l3, &in, &s, &err));
	assert_int_equal(find(s, 104)->usage.zones[0].total_uj, total104 + 10 * J); /* woke: goes on */
	check_sums(s);
	kepler_ledger_free(l3);
}

static const struct kepler_container *container_of(const struct kepler_snapshot *s, const char *id)
{
	for (size_t i = 0; i < s->ncontainers; i++)
		if (!strcmp(s->containers[i].id, id))
			return &s->containers[i];
	return NULL;
}

static bool alive_all(void *arg, uint32_t pid, uint64_t start_time_ns)
{
	(void)arg;
	(void)pid;
	(void)start_time_ns;
	return true;
}

/*
 * The memory of forgotten identities outlives a restart: a container that
 * ended and left the snapshots (a tombstone) is saved as text, loaded by a
 * restarted ledger, and a process back in that container continues its
 * totals. A container that ended while the collector was down (no process
 * of it alive at the resume) becomes a tombstone too. Malformed lines are
 * skipped and counted; zones other than the resumed snapshot's refuse it.
 */
static void test_memory_outlives_restart(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 5 * SEC, .max_terminated = 500 };
	static struct world w;
	struct kepler_ledger *l, *l2;
	struct kepler_snapshot *s;
	struct kepler_ledger_input in;
	struct kepler_error err;
	uint64_t gone_total, t = 0;
	size_t skipped;
	char *text, *bad;

	(void)state;
	world_init(&w, 6);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	in = input(&w, t, true);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	for (size_t i = 0; i < 6; i++)
		w.procs[i].cpu_time_delta_ns = SEC;
	in = input(&w, t += SEC, false);
	in.zones[0].delta_uj = 600 * J;
	in.busy_delta_ns = in.total_delta_ns = SEC;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	gone_total = container_of(s, w.cids[0])->usage.zones[0].total_uj; /* pid 104's */
	assert_true(gone_total > 0);
	assert_false(kepler_ledger_memory_changed(l));
	/* 104 ends; its container is carried for the ttl, then forgotten: a tombstone */
	w.procs[4].state = KEPLER_STATE_TERMINATED;
	for (size_t i = 0; i < 6; i++)
		w.procs[i].cpu_time_delta_ns = 0;
	in = input(&w, t += SEC, false);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	w.n = 4; /* the informer forgets 104 and 105 */
	for (int k = 0; k < 8; k++) {
		in = input(&w, t += SEC, false);
		KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	}
	assert_null(container_of(s, w.cids[0]));
	assert_true(kepler_ledger_memory_changed(l));
	KEPLER_OK(kepler_ledger_memory_save(l, &text));
	kepler_ledger_memory_saved(l);
	assert_false(kepler_ledger_memory_changed(l));
	print_message("memory:\n%s", text);
	assert_non_null(strstr(text, "kepler-memory 1 3 0\npackage\tcore\tdram\n"));
	assert_non_null(strstr(text, w.cids[0]));
	/* restart: resumed from the newest snapshot, the memory loaded */
	KEPLER_OK(kepler_ledger_new(&p, &l2, &err));
	assert_int_equal(kepler_ledger_resume(l2, s, alive_all, NULL), 0);
	bad = malloc(strlen(text) + 64);
	sprintf(bad, "%scontainer\tnot a number\tx\n\tpod\n", text);
	KEPLER_OK(kepler_ledger_memory_load(l2, bad, strlen(bad), &skipped, &err));
	assert_int_equal(skipped, 2);
	free(bad);
	kepler_ledger_free(l);
	/* a new process in that container: it goes on from the container's totals */
	w.n = 6;
	w.procs[4].state = KEPLER_STATE_RUNNING;
	w.procs[4].pid = 110;
	w.procs[4].start_time_ns = 5000;
	in = input(&w, 100 * SEC, true);
	KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
	assert_non_null(container_of(s, w.cids[0]));
	assert_int_equal(container_of(s, w.cids[0])->usage.zones[0].total_uj, gone_total);
	check_sums(s);
	kepler_ledger_free(l2);
	/* zones that are not the resumed snapshot's: refused whole */
	KEPLER_OK(kepler_ledger_new(&p, &l2, &err));
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	world_init(&w, 3);
	in = input(&w, 0, true);
	in.nzones = 2;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(kepler_ledger_resume(l2, s, alive_all, NULL), 0);
	assert_int_equal(kepler_ledger_memory_load(l2, text, strlen(text), &skipped, &err), -EBADMSG);
	print_message("%s\n", err.msg);
	free(text);
	kepler_ledger_free(l);
	kepler_ledger_free(l2);
}

static bool alive_all_ended(void *arg, uint32_t pid, uint64_t start_time_ns)
{
	(void)arg, (void)pid, (void)start_time_ns;
	return true;
}

/*
 * A process stored as terminated that the next collector finds alive: a
 * leader that exited while its other threads ran on (its final switch
 * ended the eBPF entry; the restarted collector's census finds the
 * process in /proc). It goes on from its stored totals, its CPU time not
 * below the stored one, rather than from 0 (the restart soak found 8 such
 * decreases in 312,339 readings under another job's tests).
 */
static void test_resume_ended_alive(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 60 * SEC, .max_terminated = 500 };
	static struct world w;
	struct kepler_ledger *l, *l2;
	struct kepler_snapshot *s;
	struct kepler_ledger_input in;
	struct kepler_error err;
	uint64_t total, idle_cpu;

	(void)state;
	world_init(&w, 3);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	in = input(&w, 0, true);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	for (size_t i = 0; i < 3; i++)
		w.procs[i].cpu_time_delta_ns = w.procs[i].cpu_time_ns = SEC;
	w.procs[2].state = KEPLER_STATE_TERMINATED;
	in = input(&w, 5 * SEC, false);
	in.zones[0].delta_uj = 300 * J;
	in.busy_delta_ns = in.total_delta_ns = SEC;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(find(s, 102)->usage.state, KEPLER_STATE_TERMINATED);
	total = find(s, 102)->usage.zones[0].total_uj;
	idle_cpu = find(s, 102)->usage.cpu_time_ns;
	assert_int_equal(total, 100 * J);
	/* restart: the census finds 102 alive, /proc giving less CPU than was stored */
	KEPLER_OK(kepler_ledger_new(&p, &l2, &err));
	assert_int_equal(kepler_ledger_resume(l2, s, alive_all_ended, NULL), 0);
	kepler_ledger_free(l);
	w.procs[2].state = KEPLER_STATE_RUNNING;
	for (size_t i = 0; i < 3; i++)
		w.procs[i].cpu_time_delta_ns = 0;
	w.procs[2].cpu_time_ns = SEC / 2;
	in = input(&w, 100 * SEC, true);
	KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
	assert_int_equal(find(s, 102)->usage.state, KEPLER_STATE_RUNNING);
	assert_int_equal(find(s, 102)->usage.zones[0].total_uj, total);
	assert_true(find(s, 102)->usage.cpu_time_ns >= idle_cpu);
	check_sums(s);
	for (size_t i = 0; i < 3; i++)
		w.procs[i].cpu_time_delta_ns = SEC;
	in = input(&w, 105 * SEC, false);
	in.zones[0].delta_uj = 30 * J;
	in.busy_delta_ns = in.total_delta_ns = SEC;
	KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
	assert_int_equal(find(s, 102)->usage.zones[0].total_uj, total + 10 * J); /* goes on */
	check_sums(s);
	kepler_ledger_free(l2);
}

static void test_resume(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 60 * SEC, .max_terminated = 500 };
	static struct world w;
	struct kepler_ledger *l, *l2;
	struct kepler_snapshot *s, copy;
	struct kepler_ledger_input in;
	struct kepler_error err;
	uint64_t proc_total, node_total, cont_total;

	(void)state;
	world_init(&w, 6);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	in = input(&w, 0, true);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	for (size_t i = 0; i < 6; i++)
		w.procs[i].cpu_time_delta_ns = SEC;
	in = input(&w, 5 * SEC, false);
	in.zones[0].delta_uj = 600 * J;
	in.zones[1].delta_uj = 60 * J;
	in.busy_delta_ns = in.total_delta_ns = SEC;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	proc_total = find(s, 101)->usage.zones[0].total_uj;
	node_total = s->zones[0].energy.total_uj;
	assert_int_equal(proc_total, 100 * J);
	cont_total = s->containers[0].usage.zones[0].total_uj;
	/* a new ledger (a restarted collector) resumes from that snapshot,
	 * even with its zones in another order */
	copy = *s;
	copy.zones[0] = s->zones[1];
	copy.zones[1] = s->zones[0];
	struct kepler_energy *swapped = calloc(s->nprocesses * 3, sizeof(*swapped));
	struct kepler_process *procs = calloc(s->nprocesses, sizeof(*procs));
	for (size_t i = 0; i < s->nprocesses; i++) {
		procs[i] = s->processes[i];
		procs[i].usage.zones = &swapped[i * 3];
		procs[i].usage.zones[0] = s->processes[i].usage.zones[1];
		procs[i].usage.zones[1] = s->processes[i].usage.zones[0];
		procs[i].usage.zones[2] = s->processes[i].usage.zones[2];
	}
	copy.processes = procs;
	copy.ncontainers = 0;
	copy.nvms = copy.npods = 0;
	KEPLER_OK(kepler_ledger_new(&p, &l2, &err));
	assert_int_equal(kepler_ledger_resume(l2, &copy, NULL, NULL), 0);
	free(procs);
	free(swapped);
	/* the informer reports only some processes at first (eBPF: those that ran) */
	w.n = 3;
	in = input(&w, 100 * SEC, true);
	KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
	assert_int_equal(s->zones[0].energy.total_uj, node_total);
	assert_int_equal(find(s, 101)->usage.zones[0].total_uj, proc_total);
	assert_null(find(s, 105));
	/* the others, when they run again, continue from their totals too */
	w.n = 6;
	in = input(&w, 102 * SEC, false);
	KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
	assert_int_equal(find(s, 105)->usage.zones[0].total_uj, 100 * J);
	in = input(&w, 105 * SEC, false);
	in.zones[0].delta_uj = 60 * J;
	in.busy_delta_ns = in.total_delta_ns = SEC;
	KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
	assert_int_equal(find(s, 101)->usage.zones[0].total_uj, proc_total + 10 * J);
	assert_true(s->containers[0].usage.zones[0].total_uj > 0);
	(void)cont_total;
	check_sums(s);
	kepler_ledger_free(l);
	kepler_ledger_free(l2);
}

/* Units for idle policy SIZE: a unit per container (sizes 100, 200, 300, 400), host processes in 3 cgroups. */
static size_t size_units(struct world *w, struct kepler_ledger_unit *units)
{
	for (size_t u = 0; u < 4; u++)
		units[u] = (struct kepler_ledger_unit){ .size_shares = 100 * (u + 1), .container = true };
	for (size_t u = 4; u < 7; u++)
		units[u] = (struct kepler_ledger_unit){ .size_shares = 1024 * (u - 3), .container = false };
	for (size_t i = 0; i < w->n; i++) {
		const char *cid = w->procs[i].container_id;

		w->procs[i].unit = cid[0] ? (uint32_t)((cid - w->cids[0]) / sizeof(w->cids[0]))
					  : (uint32_t)(4 + (i / 3) % 3);
	}
	return 7;
}

/*
 * attribution.idle cpu and size over random intervals: every snapshot's
 * sums hold exactly for active and idle energies (checks_groups), no
 * counter goes down, and the node's idle is all given (a process always
 * runs, or under size always exists). Under size with no CPU used, the
 * containers' part is LR(idle, [1000, capacity - 1000]) and among them
 * 1:2:3:4 by size; a restarted ledger continues the idle totals.
 */
static void test_idle_policies(void **state)
{
	static const enum kepler_idle_policy policies[] = { KEPLER_IDLE_CPU, KEPLER_IDLE_SIZE };
	static struct world w;
	struct kepler_ledger_unit units[8];
	struct kepler_error err;
	char why[256];

	(void)state;
	for (size_t pi = 0; pi < 2; pi++) {
		struct kepler_ledger_params p = { .terminated_ttl_ns = 60 * SEC,
						  .max_terminated = 500,
						  .idle = policies[pi] };
		struct kepler_monotonic *mono;
		struct kepler_ledger *l, *l2;
		struct kepler_snapshot *s;
		struct kepler_ledger_input in;
		uint64_t idle_total = 0;

		srand(7);
		world_init(&w, NPROC);
		KEPLER_OK(kepler_ledger_new(&p, &l, &err));
		assert_int_equal(kepler_monotonic_new(&mono), 0);
		for (int k = 0; k < 100; k++) {
			in = input(&w, (uint64_t)k * 5 * SEC, k == 0);
			for (size_t i = 0; i < w.n; i++) {
				w.procs[i].cpu_time_delta_ns =
					(uint64_t)(rand() % 4 ? rand() % 100000007 : 0);
				w.procs[i].cpu_time_ns += w.procs[i].cpu_time_delta_ns;
			}
			w.procs[0].cpu_time_delta_ns += 1; /* something ran: under cpu all idle is given */
			w.procs[0].cpu_time_ns += 1;
			if (policies[pi] == KEPLER_IDLE_SIZE) {
				in.units = units;
				in.nunits = size_units(&w, units);
			}
			for (unsigned z = 0; z < 3; z++)
				in.zones[z].delta_uj = (uint64_t)rand() * 97 + (uint64_t)rand();
			in.busy_delta_ns = (uint64_t)(rand() % 1000);
			in.total_delta_ns = 1000;
			in.cpu_count = 2;
			KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
			assert_int_equal(s->idle_policy, policies[pi]);
			assert_non_null(s->processes[0].usage.idle);
			check_sums(s);
			assert_int_equal(kepler_monotonic_check(mono, s, why, sizeof(why)), 0);
			if (s->zones[0].unattributed.delta_uj)
				fail_msg("%s k %d: unattributed %llu of idle %llu",
					 kepler_idle_policy_name(policies[pi]), k,
					 (unsigned long long)s->zones[0].unattributed.delta_uj,
					 (unsigned long long)s->zones[0].idle.delta_uj);
			idle_total += s->zones[0].idle.delta_uj;
		}
		{
			uint64_t given = 0;

			for (size_t i = 0; i < s->nprocesses; i++)
				given += s->processes[i].usage.idle[0].total_uj;
			assert_int_equal(given, idle_total);
		}
		if (policies[pi] == KEPLER_IDLE_SIZE) {
			/* an idle interval: sizes alone decide */
			in = input(&w, 1000 * SEC, false);
			for (size_t i = 0; i < w.n; i++)
				w.procs[i].cpu_time_delta_ns = 0;
			in.units = units;
			in.nunits = size_units(&w, units);
			in.zones[0].delta_uj = 1000003;
			in.busy_delta_ns = 0;
			in.cpu_count = 2;
			KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
			check_sums(s);
			uint64_t part = 0, by[4] = { 0 }, want[2], wts[2] = { 1000, 2048 - 1000 }, scratch[4];

			for (size_t c = 0; c < s->ncontainers; c++) {
				size_t u = (size_t)(strchr("0123456789abcdef", s->containers[c].id[0]) -
						    "0123456789abcdef");

				(void)u;
				part += s->containers[c].usage.idle[0].delta_uj;
				assert_int_equal(s->containers[c].size_shares % 100, 0);
				by[s->containers[c].size_shares / 100 - 1] =
					s->containers[c].usage.idle[0].delta_uj;
			}
			kepler_split(1000003, wts, 2, want, scratch);
			assert_int_equal(part, want[0]);
			for (size_t c = 0; c < 4; c++) /* 1:2:3:4 to the uJ (largest remainder) */
				assert_true(by[c] * 10 / (c + 1) >= part - 10 &&
					    by[c] * 10 / (c + 1) <= part + 10);
		}
		/* a restarted ledger continues the idle totals */
		KEPLER_OK(kepler_ledger_new(&p, &l2, &err));
		assert_int_equal(kepler_ledger_resume(l2, s, NULL, NULL), 0);
		{
			uint64_t before = s->processes[1].usage.idle[0].total_uj;
			uint32_t pid = s->processes[1].pid;

			in = input(&w, 2000 * SEC, true);
			if (policies[pi] == KEPLER_IDLE_SIZE) {
				in.units = units;
				in.nunits = size_units(&w, units);
			}
			KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
			assert_int_equal(find(s, pid)->usage.idle[0].total_uj, before);
			assert_int_equal(kepler_monotonic_check(mono, s, why, sizeof(why)), 0);
		}
		kepler_monotonic_free(mono);
		kepler_ledger_free(l);
		kepler_ledger_free(l2);
	}
}

/*
 * A device zone (a GPU): the meter's active part is split by its weights,
 * not by CPU time; the share of unlisted processes, and all of it when no
 * weight is given, is unattributed; Σ processes + unattributed == active
 * exactly, containers the sums of their processes; the unattributed total
 * is resumed by a restarted ledger.
 */
static void test_device_zone(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 60 * SEC, .max_terminated = 500 };
	static struct world w;
	struct kepler_ledger *l, *l2;
	struct kepler_snapshot *s;
	struct kepler_ledger_input in;
	struct kepler_error err;
	uint64_t weights[NPROC] = { 0 }, unattributed;

	(void)state;
	world_init(&w, 8);
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	in = input(&w, 0, true);
	in.nzones = 4;
	in.zones[3] = (struct kepler_ledger_zone_in){ .name = "gpu0",
						      .path = "GPU-x",
						      .source = KEPLER_SOURCE_NVML,
						      .device = true,
						      .info = { 0, "GPU-x", "Test GPU", "nvidia" } };
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	/* processes 1 (a container's) and 4 used the GPU 3:1, an unlisted PID as much as process 4 */
	weights[1] = 300;
	weights[4] = 100;
	in = input(&w, 5 * SEC, false);
	in.nzones = 4;
	in.zones[3] = (struct kepler_ledger_zone_in){ .name = "gpu0",
						      .path = "GPU-x",
						      .source = KEPLER_SOURCE_NVML,
						      .delta_uj = 1500 * J + 7,
						      .device = true,
						      .active_uj = 1000 * J + 7,
						      .weights = weights,
						      .unlisted_weight = 100,
						      .info = { 0, "GPU-x", "Test GPU", "nvidia" } };
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	check_sums(s);
	assert_true(kepler_zone_is_device(&s->zones[3]));
	assert_string_equal(s->zones[3].device.name, "Test GPU");
	assert_int_equal(s->zones[3].active.delta_uj, 1000 * J + 7);
	assert_int_equal(s->zones[3].idle.delta_uj, 500 * J);
	assert_int_equal(find(s, 101)->usage.zones[3].delta_uj, 600 * J + 4);
	assert_int_equal(find(s, 104)->usage.zones[3].delta_uj, 200 * J + 1);
	assert_int_equal(s->zones[3].unattributed.delta_uj, 200 * J + 2);
	assert_int_equal(find(s, 102)->usage.zones[3].delta_uj, 0);
	/* CPU zones are untouched by the GPU's weights: no unattributed part, no device */
	assert_int_equal(s->zones[0].unattributed.total_uj, 0);
	assert_string_equal(s->zones[0].device.uuid, "");
	/* no process ran: all of the active part is unattributed */
	in = input(&w, 10 * SEC, false);
	in.nzones = 4;
	in.zones[3] = (struct kepler_ledger_zone_in){ .name = "gpu0",
						      .path = "GPU-x",
						      .source = KEPLER_SOURCE_NVML,
						      .delta_uj = 90 * J,
						      .device = true,
						      .active_uj = 50 * J,
						      .info = { 0, "GPU-x", "Test GPU", "nvidia" } };
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	check_sums(s);
	assert_int_equal(s->zones[3].unattributed.delta_uj, 50 * J);
	unattributed = s->zones[3].unattributed.total_uj;
	assert_int_equal(unattributed, 250 * J + 2);
	/* a restarted collector continues the unattributed total */
	KEPLER_OK(kepler_ledger_new(&p, &l2, &err));
	assert_int_equal(kepler_ledger_resume(l2, s, NULL, NULL), 0);
	in = input(&w, 20 * SEC, true);
	in.nzones = 4;
	in.zones[3] = (struct kepler_ledger_zone_in){ .name = "gpu0",
						      .path = "GPU-x",
						      .source = KEPLER_SOURCE_NVML,
						      .device = true,
						      .info = { 0, "GPU-x", "Test GPU", "nvidia" } };
	KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
	assert_int_equal(s->zones[3].unattributed.total_uj, unattributed);
	kepler_ledger_free(l);
	kepler_ledger_free(l2);
}

/* A container that empties, is forgotten after its ttl, then runs again under the same id. */
static void test_container_comes_back(void **state)
{
	struct kepler_ledger_params p = { .terminated_ttl_ns = 10 * SEC, .max_terminated = 500 };
	static struct world w;
	struct kepler_ledger *l;
	struct kepler_snapshot *s;
	struct kepler_ledger_input in;
	struct kepler_error err;
	uint64_t t = 0, before = 0, cpu_before = 0;

	(void)state;
	world_init(&w, 2); /* process 1 is in a container, process 0 is not */
	KEPLER_OK(kepler_ledger_new(&p, &l, &err));
	in = input(&w, t, true);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	for (int k = 0; k < 3; k++) {
		w.procs[1].cpu_time_delta_ns = SEC;
		w.procs[1].cpu_time_ns += SEC;
		in = input(&w, t += 5 * SEC, false);
		in.zones[0].delta_uj = 100 * J;
		in.busy_delta_ns = in.total_delta_ns = SEC;
		KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	}
	assert_int_equal(s->ncontainers, 1);
	before = s->containers[0].usage.zones[0].total_uj;
	cpu_before = s->containers[0].usage.cpu_time_ns;
	assert_true(before > 0);
	/* its process ends; the container is carried for the ttl, then forgotten */
	w.procs[1].state = KEPLER_STATE_TERMINATED;
	w.procs[1].cpu_time_delta_ns = 0;
	in = input(&w, t += 5 * SEC, false);
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	w.n = 1;
	for (int k = 0; k < 4; k++) {
		in = input(&w, t += 5 * SEC, false);
		KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	}
	assert_int_equal(s->ncontainers, 0);
	/* a new process in the same container: its counters go on from where they were */
	w.n = 2;
	w.procs[1].pid = 900;
	w.procs[1].start_time_ns = 99999;
	w.procs[1].state = KEPLER_STATE_RUNNING;
	w.procs[1].cpu_time_ns = w.procs[1].cpu_time_delta_ns = SEC;
	in = input(&w, t += 5 * SEC, false);
	in.zones[0].delta_uj = 100 * J;
	in.busy_delta_ns = in.total_delta_ns = SEC;
	KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	assert_int_equal(s->ncontainers, 1);
	assert_int_equal(s->containers[0].usage.state, KEPLER_STATE_RUNNING);
	print_message("container: %llu uJ before it was forgotten, %llu uJ when it came back\n",
		      (unsigned long long)before,
		      (unsigned long long)s->containers[0].usage.zones[0].total_uj);
	assert_true(s->containers[0].usage.zones[0].total_uj >= before);
	assert_int_equal(s->containers[0].usage.zones[0].total_uj,
			 before + s->containers[0].usage.zones[0].delta_uj);
	assert_int_equal(s->containers[0].usage.cpu_time_ns, cpu_before + SEC);
	check_sums(s);
	kepler_ledger_free(l);
}

/* The key map: keys of every length up to the limit, misses, replacement, clearing, growth. */
static void test_keymap(void **state)
{
	struct kepler_keymap m = { 0 };
	char key[KEPLER_KEY_MAX + 1];
	const int n = 5000;

	(void)state;
	for (int round = 0; round < 2; round++) {
		if (round == 1)
			assert_int_equal(kepler_keymap_reserve(&m, (size_t)n), 0);
		for (int i = 0; i < n; i++) {
			size_t len = sizeof(int) + (size_t)i % (KEPLER_KEY_MAX - sizeof(int) + 1);

			memset(key, 'a' + i % 26, len);
			memcpy(key, &i, sizeof(i));
			assert_int_equal(kepler_keymap_put(&m, key, len, (uint32_t)i), 0);
		}
		assert_int_equal(m.count, (size_t)n);
		for (int i = 0; i < n; i++) {
			size_t len = sizeof(int) + (size_t)i % (KEPLER_KEY_MAX - sizeof(int) + 1);
			int64_t want = i;

			memset(key, 'a' + i % 26, len);
			memcpy(key, &i, sizeof(i));
			assert_int_equal(kepler_keymap_get(&m, key, len), want);
			assert_true(kepler_keymap_get(&m, key, len - 1) !=
				    want); /* a prefix is another key */
		}
		memset(key, 'z', sizeof(key));
		assert_int_equal(kepler_keymap_get(&m, key, 40), -1);
		assert_int_equal(kepler_keymap_put(&m, key, KEPLER_KEY_MAX + 1, 1), -E2BIG);
		assert_int_equal(kepler_keymap_put(&m, key, 40, 7), 0);
		assert_int_equal(kepler_keymap_put(&m, key, 40, 9), 0); /* replaced, not added */
		assert_int_equal(kepler_keymap_get(&m, key, 40), 9);
		kepler_keymap_clear(&m);
		assert_int_equal(m.count, 0);
		assert_int_equal(kepler_keymap_get(&m, key, 40), -1);
	}
	kepler_keymap_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keymap),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_split_matches_largest_remainder),
		cmocka_unit_test(test_split_many_matches_largest_remainder),
		cmocka_unit_test(test_random_intervals_sum_exactly),
		cmocka_unit_test(test_hints_change_nothing),
		cmocka_unit_test(test_backlog_covers_the_gap),
		cmocka_unit_test(test_backlog_is_bounded),
		cmocka_unit_test(test_unseen_cpu_is_unattributed),
		cmocka_unit_test(test_baseline_split),
		cmocka_unit_test(test_monotonic_check),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_terminated_carry),
		cmocka_unit_test(test_short_processes_folded),
		cmocka_unit_test(test_resume),
		cmocka_unit_test(test_resume_asleep),
		cmocka_unit_test(test_resume_ended_alive),
		cmocka_unit_test(test_memory_outlives_restart),
		cmocka_unit_test(test_container_comes_back),
		cmocka_unit_test(test_device_zone),
		cmocka_unit_test(test_idle_policies),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
