// SPDX-License-Identifier: Apache-2.0
/*
 * Exact integer attribution. Products go through 128 bits: a delta of
 * 2^63 uJ times a weight of 2^63 ns still fits.
 */
#include <stdlib.h>

#include "attribution.h"

typedef unsigned __int128 u128;

uint64_t kepler_active_uj(uint64_t delta_uj, uint64_t busy_ns, uint64_t total_ns)
{
	if (total_ns == 0)
		return 0;
	if (busy_ns > total_ns)
		busy_ns = total_ns;
	return (uint64_t)((u128)delta_uj * busy_ns / total_ns);
}

/* Order of indexes by fractional part (amount x w mod W), in @ctx. */
static int by_fraction(const void *a, const void *b, void *ctx)
{
	const uint64_t *frac_base = ctx;
	uint64_t i = *(const uint64_t *)a, j = *(const uint64_t *)b;

	/* larger fraction first, then lower index */
	if (frac_base[i] != frac_base[j])
		return frac_base[i] < frac_base[j] ? 1 : -1;
	return i < j ? -1 : (i > j);
}

uint64_t kepler_split(uint64_t amount, const uint64_t *weights, size_t n, uint64_t *ret,
		      uint64_t *scratch)
{
	uint64_t total = 0, given = 0, left, *order;
	uint64_t *frac = scratch;

	for (size_t i = 0; i < n; i++)
		total += weights[i];
	for (size_t i = 0; i < n; i++) {
		u128 p = total ? (u128)amount * weights[i] : 0;

		ret[i] = total ? (uint64_t)(p / total) : 0;
		frac[i] = total ? (uint64_t)(p % total) : 0;
		given += ret[i];
	}
	if (!total || given == amount)
		return total;
	left = amount - given; /* < n */
	order = malloc(n * sizeof(*order));
	if (!order) {
		/* no memory for the fair order: give the rest from the front */
		for (size_t i = 0; i < n && left; i++)
			if (weights[i]) {
				ret[i]++;
				left--;
			}
		return total;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), by_fraction, frac);
	for (size_t k = 0; k < n && left; k++, left--)
		ret[order[k]]++;
	free(order);
	return total;
}
