// SPDX-License-Identifier: Apache-2.0
/*
 * Exact integer attribution. Products go through 128 bits: a delta of
 * 2^63 uJ times a weight of 2^63 ns still fits.
 */
#include <stdlib.h>

#include "split.h"

typedef unsigned __int128 u128;

uint64_t kepler_active_uj(uint64_t delta_uj, uint64_t busy_ns, uint64_t total_ns)
{
	if (total_ns == 0)
		return 0;
	if (busy_ns > total_ns)
		busy_ns = total_ns;
	return (uint64_t)((u128)delta_uj * busy_ns / total_ns);
}

uint64_t kepler_active_above_uj(uint64_t delta_uj, uint64_t idle_uw, uint64_t interval_ns)
{
	u128 idle = (u128)idle_uw * interval_ns / 1000000000u;

	return idle >= delta_uj ? 0 : delta_uj - (uint64_t)idle;
}

static void swap(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;

	*a = *b;
	*b = t;
}

/*
 * The k-th largest (k from 1) of v[0..n), by quickselect (median of three,
 * Lomuto partition by "greater than"); reorders v. Expected O(n).
 */
static uint64_t kth_largest(uint64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1, want = k - 1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2, store = lo;

		/* median of v[lo], v[mid], v[hi] into v[hi] as the pivot */
		if (v[mid] > v[lo])
			swap(&v[mid], &v[lo]);
		if (v[hi] > v[lo])
			swap(&v[hi], &v[lo]);
		if (v[mid] > v[hi])
			swap(&v[mid], &v[hi]);
		for (size_t i = lo; i < hi; i++)
			if (v[i] > v[hi])
				swap(&v[i], &v[store++]);
		swap(&v[store], &v[hi]);
		if (store == want)
			return v[store];
		if (store < want)
			lo = store + 1;
		else
			hi = store - 1;
	}
	return v[lo];
}

/* Bits to shift a fraction right for its bucket: the largest lands in the top one. */
#define CUT_BUCKETS 256

static unsigned bucket_shift(const uint64_t *frac, size_t n)
{
	uint64_t any = 0;
	unsigned bits;

	for (size_t i = 0; i < n; i++)
		any |= frac[i];
	bits = any ? 64 - (unsigned)__builtin_clzll(any) : 0;
	return bits > 8 ? bits - 8 : 0;
}

/*
 * The @left-th largest nonzero fraction (there are more than @left). The
 * fractions are counted by their top bits first; only those in the bucket
 * where the cut falls are selected among (a quickselect over all of them,
 * a mispredicted branch per swap, was most of a split's time).
 */
static uint64_t cut_of(uint64_t left, const uint64_t *frac, size_t n, uint64_t *tmp)
{
	size_t count[CUT_BUCKETS] = { 0 }, m = 0, above = 0;
	unsigned shift = bucket_shift(frac, n);
	int b;

	for (size_t i = 0; i < n; i++)
		count[frac[i] >> shift]++;
	for (b = CUT_BUCKETS - 1; b > 0 && above + count[b] < left; b--)
		above += count[b];
	for (size_t i = 0; i < n; i++)
		if (frac[i] && (frac[i] >> shift) == (uint64_t)b)
			tmp[m++] = frac[i];
	if (m == 0) /* cannot happen when the shares' sum is short: defensive */
		return UINT64_MAX;
	return kth_largest(tmp, m, left - above < m ? (size_t)(left - above) : m);
}

/*
 * Give @left extra units, one each, to the largest fractions (ties: lower
 * index first), without sorting: find the left-th largest fraction, give
 * to every larger one, then to equal ones in index order. Fraction i is
 * share @at[i]'s (@at in increasing order), or share i's when @at is NULL.
 */
static inline void give_remainder(uint64_t left, const uint64_t *frac, size_t n, const uint64_t *at,
				  uint64_t *ret, uint64_t *tmp)
{
	uint64_t cut = cut_of(left, frac, n, tmp);
	size_t above = 0;

	if (cut == UINT64_MAX)
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t more = frac[i] > cut;

		ret[at ? at[i] : i] += more;
		above += more;
	}
	left -= above;
	for (size_t i = 0; i < n && left; i++)
		if (frac[i] == cut) {
			ret[at ? at[i] : i]++;
			left--;
		}
}

/* One share and its remainder (a product that fits 64 bits is divided in 64 bits). */
static inline uint64_t share_of(uint64_t amount, uint64_t weight, uint64_t total, uint64_t *frac)
{
	u128 p = (u128)amount * weight;

	if (!(uint64_t)(p >> 64)) {
		*frac = (uint64_t)p % total;
		return (uint64_t)p / total;
	}
	*frac = (uint64_t)(p % total);
	return (uint64_t)(p / total);
}

/*
 * The split when few weights are nonzero (a node's processes mostly
 * sleep): the shares of the @k nonzero ones only, their indices in
 * @scratch, then their fractions and the cut's room (3 x k entries, fewer
 * than 2 x n); every other share is 0. The same result as the dense
 * split: the nonzero shares keep their order, so ties fall the same way.
 */
static void split_sparse(uint64_t amount, const uint64_t *weights, size_t n, size_t k, uint64_t total,
			 uint64_t *ret, uint64_t *scratch)
{
	uint64_t *at = scratch, *frac = scratch + k, given = 0;
	size_t j = 0;

	for (size_t i = 0; i < n; i++) {
		at[j] = i;
		j += weights[i] != 0;
		ret[i] = 0;
	}
	for (j = 0; j < k; j++) {
		uint64_t s = share_of(amount, weights[at[j]], total, &frac[j]);

		ret[at[j]] = s;
		given += s;
	}
	if (given != amount)
		give_remainder(amount - given, frac, k, at, ret, scratch + 2 * k); /* < k units */
}

/*
 * Each share and its remainder: a weight of 0 (an idle process) is 0, and
 * a product that fits 64 bits (any interval's energy times its CPU time on
 * a node of this decade) is divided in 64 bits, several times cheaper than
 * the 128-bit division that the rest takes.
 */
uint64_t kepler_split(uint64_t amount, const uint64_t *weights, size_t n, uint64_t *ret, uint64_t *scratch)
{
	uint64_t total = 0, given = 0;
	uint64_t *frac = scratch;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		total += weights[i];
		k += weights[i] != 0;
	}
	if (total && k < n && 3 * k <= 2 * n) { /* its scratch fits */
		split_sparse(amount, weights, n, k, total, ret, scratch);
		return total;
	}
	for (size_t i = 0; i < n; i++) {
		u128 p = (u128)amount * weights[i];

		if (!total || !weights[i]) {
			ret[i] = frac[i] = 0;
		} else if (!(uint64_t)(p >> 64)) {
			ret[i] = (uint64_t)p / total;
			frac[i] = (uint64_t)p % total;
		} else {
			ret[i] = (uint64_t)(p / total);
			frac[i] = (uint64_t)(p % total);
		}
		given += ret[i];
	}
	if (total && given != amount)
		give_remainder(amount - given, frac, n, NULL, ret, scratch + n); /* < n units */
	return total;
}
