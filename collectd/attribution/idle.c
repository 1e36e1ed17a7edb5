// SPDX-License-Identifier: Apache-2.0
/*
 * The idle policies (attribution.idle): where each zone's idle energy goes
 * when it does not stay at the node. Every split is the largest-remainder
 * rule of split.h, so what the processes take adds up exactly, and what
 * none can take (no process ran, a GPU's unlisted processes) is the zone's
 * unattributed energy.
 *
 *   cpu   by the same weights as the zone's active energy: CPU time in the
 *         interval, or a device's own weights.
 *   size  in three steps, each exact: (1) between the containers and the
 *         rest, by the containers' total size against the node's capacity
 *         (1024 shares per CPU; containers first, the rest gets what they
 *         leave, nothing when they fill it); (2) among the containers by
 *         size, and among the other units (processes outside containers,
 *         grouped by cgroup) by size; (3) within a unit by CPU time in the
 *         interval, equally when none of its processes ran. Device zones
 *         as under cpu: a CPU size says nothing of who holds a GPU.
 */
#include <errno.h>
#include <string.h>

#include "kepler/array.h"
#include "ledger_internal.h"
#include "split.h"

#define SHARES_PER_CPU 1024

int ledger_reserve_idle(struct kepler_ledger *l, const struct kepler_ledger_input *in)
{
	size_t n = in->nprocs, nz = l->nzones ? l->nzones : in->nzones;

	if (!l->idle)
		return 0;
	if (kepler_array_reserve((void **)&l->idle_shares, &l->idle_shares_cap, (nz ? nz : 1) * n,
				 sizeof(*l->idle_shares)) < 0)
		return -ENOMEM;
	if (l->params.idle != KEPLER_IDLE_SIZE)
		return 0;
	if (kepler_array_reserve((void **)&l->unit_sums, &l->unit_sums_cap, 4 * in->nunits + 1,
				 sizeof(*l->unit_sums)) < 0 ||
	    kepler_array_reserve((void **)&l->unit_tmp, &l->unit_tmp_cap, 3 * n, sizeof(*l->unit_tmp)) < 0 ||
	    kepler_array_reserve((void **)&l->scratch, &l->scratch_cap, 2 * (n > in->nunits ? n : in->nunits),
				 sizeof(*l->scratch)) < 0)
		return -ENOMEM;
	return 0;
}

/* The unit of process @i, or SIZE_MAX when it has none (not counted under SIZE). */
static size_t unit_of(const struct kepler_ledger_input *in, size_t i)
{
	return in->units && in->procs[i].unit < in->nunits ? in->procs[i].unit : SIZE_MAX;
}

/*
 * Steps 1 and 2: @idle over the units, into @amount (nunits entries);
 * @weights and @side are scratch of nunits entries. Returns what the units took.
 */
static uint64_t split_over_units(struct kepler_ledger *l, const struct kepler_ledger_input *in, uint64_t idle,
				 uint64_t *amount, uint64_t *weights, uint64_t *side)
{
	uint64_t capacity = (uint64_t)(in->cpu_count ? in->cpu_count : 1) * SHARES_PER_CPU;
	uint64_t sizes[2] = { 0, 0 }, parts[2], two[2], tmp[4], taken = 0;
	bool has[2] = { false, false };

	for (size_t u = 0; u < in->nunits; u++) {
		int c = in->units[u].container ? 0 : 1;

		sizes[c] += in->units[u].size_shares;
		has[c] = true;
	}
	/* step 1: containers first, up to the capacity; the rest to the others */
	two[0] = has[0] ? sizes[0] : 0;
	two[1] = !has[1] ? 0 : sizes[0] < capacity ? capacity - sizes[0] : 0;
	if (kepler_split(idle, two, 2, parts, tmp) == 0)
		return 0;
	/* step 2: within each side by size */
	memset(amount, 0, in->nunits * sizeof(*amount));
	for (int c = 0; c < 2; c++) {
		for (size_t u = 0; u < in->nunits; u++)
			weights[u] = (in->units[u].container ? 0 : 1) == c ? in->units[u].size_shares : 0;
		if (!parts[c])
			continue;
		kepler_split(parts[c], weights, in->nunits, side, l->scratch);
		for (size_t u = 0; u < in->nunits; u++) {
			amount[u] += side[u];
			taken += side[u];
		}
	}
	return taken;
}

/*
 * Step 3: each unit's amount over its processes, by CPU time in the
 * interval, equally when none ran. @shares gets nprocs entries. Returns what
 * the processes took (less than the units' when a unit has no process).
 */
static uint64_t split_within_units(struct kepler_ledger *l, const struct kepler_ledger_input *in,
				   const uint64_t *amount, uint64_t *shares)
{
	size_t n = in->nprocs, nu = in->nunits;
	uint64_t *start = l->unit_sums + nu; /* nu + 1: where each unit's processes begin in order */
	uint64_t *order = l->unit_tmp, *w = l->unit_tmp + n, *out = l->unit_tmp + 2 * n, taken = 0;

	/* processes by unit: a counting sort into @order */
	memset(start, 0, (nu + 1) * sizeof(*start));
	for (size_t i = 0; i < n; i++)
		if (unit_of(in, i) != SIZE_MAX)
			start[unit_of(in, i) + 1]++;
	for (size_t u = 0; u < nu; u++)
		start[u + 1] += start[u];
	memset(shares, 0, n * sizeof(*shares));
	for (size_t i = 0; i < n; i++) {
		size_t u = unit_of(in, i);

		if (u == SIZE_MAX)
			continue;
		order[start[u]++] = i;
	}
	/* start[u] is now the end of unit u's run; its beginning is start[u - 1] (0 for the first) */
	for (size_t u = 0; u < nu; u++) {
		size_t b = u ? start[u - 1] : 0, e = start[u], m = e - b;
		uint64_t sum = 0;

		if (!m || !amount[u])
			continue;
		for (size_t k = 0; k < m; k++) {
			w[k] = in->procs[order[b + k]].cpu_time_delta_ns;
			sum += w[k];
		}
		if (!sum)
			for (size_t k = 0; k < m; k++)
				w[k] = 1;
		kepler_split(amount[u], w, m, out, l->scratch);
		for (size_t k = 0; k < m; k++) {
			shares[order[b + k]] = out[k];
			taken += out[k];
		}
	}
	return taken;
}

static uint64_t split_by_size(struct kepler_ledger *l, const struct kepler_ledger_input *in, uint64_t idle,
			      uint64_t *shares)
{
	/* unit_sums: amount, start (nunits + 1, step 3), weights, side */
	size_t nu = in->nunits;
	uint64_t *amount = l->unit_sums, *weights = l->unit_sums + 2 * nu + 1, *side = weights + nu;

	memset(shares, 0, in->nprocs * sizeof(*shares));
	if (!nu || !in->nprocs || !idle)
		return 0;
	if (!split_over_units(l, in, idle, amount, weights, side))
		return 0;
	return split_within_units(l, in, amount, shares);
}

void ledger_split_idle(struct kepler_ledger *l, const struct kepler_ledger_input *in, unsigned z,
		       uint64_t idle)
{
	uint64_t *shares = &l->idle_shares[(size_t)z * in->nprocs], taken = 0;

	if (in->first || !idle) {
		memset(shares, 0, in->nprocs * sizeof(*shares));
	} else if (in->zones[z].device) {
		taken = ledger_split_device(l, in, z, idle, shares);
	} else if (l->params.idle == KEPLER_IDLE_SIZE) {
		taken = split_by_size(l, in, idle, shares);
	} else if (kepler_split(idle, l->weights, in->nprocs, shares, l->scratch)) {
		taken = idle;
	}
	ledger_account_unattributed(l, z, idle - taken);
}
