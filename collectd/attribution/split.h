/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/attribution/split.h: the integer arithmetic of attribution, exact by
 * construction (DESIGN.md, "the ratio model, made exact").
 */
#ifndef KEPLER_COLLECTD_SPLIT_H
#define KEPLER_COLLECTD_SPLIT_H

#include <stddef.h>
#include <stdint.h>

/*
 * The active part of @delta_uj: delta x busy / total, rounded down
 * (0 when total is 0; busy above total counts as total).
 */
uint64_t kepler_active_uj(uint64_t delta_uj, uint64_t busy_ns, uint64_t total_ns);

/*
 * The active part of @delta_uj with an idle baseline: delta minus the
 * energy @idle_uw draws over @interval_ns (rounded down), never below 0.
 */
uint64_t kepler_active_above_uj(uint64_t delta_uj, uint64_t idle_uw, uint64_t interval_ns);

/*
 * Split @amount over @n shares in proportion to @weights, in integers:
 * each gets floor(amount x w / W) and the remainder goes one unit each to
 * the largest fractional parts (ties: lower index first), so that the sum
 * of @ret equals @amount exactly whenever W > 0. With W = 0 every share is
 * 0 (the caller decides where the amount goes). @scratch needs 2 x @n
 * entries. Linear time (no sort).
 * Returns W.
 */
uint64_t kepler_split(uint64_t amount, const uint64_t *weights, size_t n, uint64_t *ret, uint64_t *scratch);

#endif /* KEPLER_COLLECTD_SPLIT_H */
